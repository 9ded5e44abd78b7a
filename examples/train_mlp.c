/* train_mlp.c - a small MLP trained with SGD, annotated with prof.h.

   The shape to copy into an engine: regions around data loading, each layer's
   forward and backward, the loss and the optimizer step; shapes and FLOPs on
   the matmuls; loss and learning rate as counters; memory events from the
   allocator wrapper; a second thread that names itself; and PROF_STEP() once
   per step, after every region of that step has closed. The model, data and
   loader are in mlp.h, shared with train_mlp_mpi.c (the same training,
   data-parallel across MPI ranks).

   Build and run (from examples/):
       cc -std=c11 -O2 -I.. train_mlp.c -o train_mlp -lm -pthread
       cc -std=c11 -O2 -I.. -DPROF_ENABLE train_mlp.c -o train_mlp -lm -pthread
       ./train_mlp [steps]                        (default 60)
   The first build compiles the profiler out; the second records everything and
   writes the trace at exit to $PROF_OUTPUT, by default prof_trace_{pid}.json in
   the current directory. Open it in https://ui.perfetto.dev. Try also
       PROF_SCHEDULE=skip_first=10,wait=5,warmup=2,active=5 ./train_mlp 100
       PROF_TABLE=sort=self_cpu,rows=15 ./train_mlp
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROF_IMPLEMENTATION /* exactly one file of the program defines this */
#include "prof.h"
#include "mlp.h"            /* the model, the data and the loader thread */

/* TRAIN_MLP_SLOW_SGD=<us>: the optimizer step takes that much longer, a
   regression made on purpose for `prof diff` to find (docs/tables.md:
   Tables of saved traces, and comparing two runs). The results do not change. */
static void slowed_on_purpose(void) {
    static long us = -1;
    if (us < 0) {
        const char *e = getenv("TRAIN_MLP_SLOW_SGD");
        us = e ? atol(e) : 0;
    }
    for (double end = now_s() + 1e-6 * (double)us; us > 0 && now_s() < end;) {}
}

static float train_step(MLP *net, const Batch *b, float lr) {
    float loss = compute_gradients(net, b);
    {
        PROF_SCOPE("optimizer_step");
        sgd_step(net, lr);
        slowed_on_purpose();
    }
    return loss;
}

int main(int argc, char **argv) {
    /* Record two representative cycles of 5 steps after start-up, print the
       table for each; PROF_* environment variables override all of this. */
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "train_mlp_trace.json";           /* .1.json, .2.json: a file per cycle */
    cfg.schedule.skip_first = 5;
    cfg.schedule.wait = 5;
    cfg.schedule.warmup = 2;
    cfg.schedule.active = 5;
    cfg.schedule.repeat = 2;
    cfg.table = "sort=self_cpu,rows=12,group=thread"; /* a row per region and thread */
    PROF_INIT(&cfg);
    PROF_THREAD_NAME("main");
    int steps = argc > 1 ? atoi(argv[1]) : 60;
    if (steps < 1) { fprintf(stderr, "usage: %s [steps > 0]\n", argv[0]); return 2; }
    double t0 = now_s();

    Dataset train, test;
    make_datasets(&train, &test, 42);
    MLP net;
    mlp_init(&net, 7);
    /* an engine would write checkpoints to disk; this one keeps the best in memory */
    float *ckpt = falloc(net.n), best_acc = -1.0f, acc = 0.0f;

    Loader *L = loader_start(&train, steps, 1234);

    double window = 0;
    for (int step = 0; step < steps; step++) {
        const Batch *b = loader_acquire(L, step);
        float lr = lr_at(step, steps);
        float loss = train_step(&net, b, lr);
        slot_set(L, step, 0);  /* the loader may refill this slot now */
        PROF_COUNTER("loss", loss);
        PROF_COUNTER("lr", lr);

        window += loss;
        if (is_print_step(step)) { print_loss(step, window, 1, lr); window = 0; }
        if ((step + 1) % EVAL_EVERY == 0 || step + 1 == steps) {
            acc = (float)evaluate(&net, &test) / (float)test.n;
            printf("           test accuracy %.1f%%\n", 100.0 * acc);
            if (acc > best_acc) {
                PROF_INSTANT("checkpoint");
                memcpy(ckpt, net.params, net.n * sizeof(float));
                best_acc = acc;
            }
        }
        PROF_STEP();  /* last in the step: every region above has closed */
    }

    loader_join(L);
    printf("%d steps in %.3f s, final test accuracy %.1f%% (best %.1f%%)\n",
           steps, now_s() - t0, 100.0 * acc, 100.0 * best_acc);

    xfree(ckpt);
    mlp_free(&net);
    dataset_free(&train);
    dataset_free(&test);
    PROF_SHUTDOWN();  /* writes the trace; also runs at exit if omitted */
    return 0;
}
