/* train_mlp_mpi.c - train_mlp.c's MLP trained data-parallel across MPI ranks,
   each rank writing its own trace.

   Every rank holds the whole model and trains on its shard of the data; after
   each backward pass one MPI_Allreduce averages the gradients, so every rank
   applies the same update and the weights stay identical (checked at the
   end). What it shows about profiling a multi-process run:
     - PROF_SET_RANK from MPI_Comm_rank (any launcher), {rank} in the output
       path: one trace per rank and cycle, train_mlp_mpi_rank<r>.<cycle>.json,
       each with Kineto's distributedInfo, so HTA reads a directory of them
       as one multi-rank run;
     - every collective inside a region named after it, with its size, so the
       time a rank waits for the others is visible and the table sums it;
     - MPI_Barrier then PROF_SYNC() at the start of every step: a moment all
       ranks share, which prof merge (tools/prof) uses to align the ranks' clocks
       when it merges their traces into one (one process per rank).

   Build and run (from examples/, Open MPI or MPICH):
       mpicc -std=c11 -O2 -I.. -DPROF_ENABLE train_mlp_mpi.c -o train_mlp_mpi -lm -pthread
       mpirun -n 4 ./train_mlp_mpi [steps]               (default 40)
   (Open MPI wants --oversubscribe for more ranks than cores, and
   --allow-run-as-root as root.)
   Rank 0 prints the loss, the accuracy and, for each of the two recorded
   cycles, the summary table of its own regions (PROF_TABLE=...,ranks=all:
   every rank's). Then
       prof merge -o merged.json train_mlp_mpi_rank*.1.json
   gives one trace of all ranks for https://ui.perfetto.dev. PROF_RANKS=0
   records rank 0 only; the other PROF_* variables work as in train_mlp.c.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#define PROF_IMPLEMENTATION /* exactly one file of the program defines this */
#include "prof.h"
#include "mlp.h"            /* the model, the data and the loader thread */

/* Rank r's contiguous share of d: a view, nothing copied. In an engine each
   rank would read only its own shard from disk. */
static Dataset shard_of(const Dataset *d, int rank, int world) {
    int lo = (int)((int64_t)d->n * rank / world), hi = (int)((int64_t)d->n * (rank + 1) / world);
    Dataset s = { d->x + (size_t)lo * IN, d->y + lo, hi - lo };
    return s;
}

/* Data parallelism's one collective per step: the gradients of all ranks
   summed in place, then divided by the number of ranks. Every rank gets the
   mean gradient of the global batch (BATCH examples from each rank). */
static void allreduce_mean(float *grads, size_t n, int world) {
    PROF_SCOPE("allreduce");
    PROF_ARG_INT("bytes", n * sizeof *grads);
    MPI_Allreduce(MPI_IN_PLACE, grads, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (size_t i = 0; i < n; i++) grads[i] /= (float)world;
}

/* FNV-1a, continued from h over more bytes: equal weights, equal checksums. */
static uint64_t fnv1a(uint64_t h, const void *p, size_t bytes) {
    const unsigned char *b = p;
    for (size_t i = 0; i < bytes; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

int main(int argc, char **argv) {
    /* The data loader is a second thread, but only this one calls MPI. */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int steps = argc > 1 ? atoi(argv[1]) : 40;
    if (steps < 1 || provided < MPI_THREAD_FUNNELED || NTRAIN / world < BATCH) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -n N %s [steps > 0] (N at most %d; MPI with threads)\n",
                    argv[0], NTRAIN / BATCH);
        MPI_Finalize();
        return 2;
    }

    /* The launcher's environment names the rank too (Open MPI, MPICH, Slurm,
       torchrun), but MPI itself knows it under any launcher. Set before
       PROF_INIT, it decides the file names and which ranks record. */
    PROF_SET_RANK(rank, world);
    /* The schedule of train_mlp.c, shorter: steps 6-8 and 12-14 recorded, as
       train_mlp_mpi_rank<r>.1.json and .2.json. */
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "train_mlp_mpi_rank{rank}.json";
    cfg.schedule.skip_first = 3;
    cfg.schedule.wait = 2;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = 3;
    cfg.schedule.repeat = 2;
    cfg.table = "sort=self_cpu,rows=12";  /* printed by rank 0 only */
    PROF_INIT(&cfg);
    PROF_THREAD_NAME("main");
    double t0 = now_s();

    /* Every rank makes the same data (same seed) and trains on its shard; the
       test set is split too, and the ranks' counts are summed. */
    Dataset train, test;
    make_datasets(&train, &test, 42);
    Dataset my_train = shard_of(&train, rank, world), my_test = shard_of(&test, rank, world);
    MLP net;
    mlp_init(&net, 7);
    {   /* rank 0's initial weights everywhere, as DDP does at construction */
        PROF_SCOPE("bcast");
        PROF_ARG_INT("bytes", net.n * sizeof(float));
        MPI_Bcast(net.params, (int)net.n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    }
    Loader *L = loader_start(&my_train, steps, 1234 + (uint64_t)rank);

    double window = 0;
    float acc = 0.0f;
    for (int step = 0; step < steps; step++) {
        /* Sync point K = step K. All ranks leave a barrier at nearly the same
           moment, so the K-th PROF_SYNC of every rank marks one instant. Each
           step, so that every recorded cycle has some; the wait in "barrier"
           is the ranks' imbalance of the step before. */
        { PROF_SCOPE("barrier"); MPI_Barrier(MPI_COMM_WORLD); }
        PROF_SYNC();

        const Batch *b = loader_acquire(L, step);
        float lr = lr_at(step, steps);
        float loss = compute_gradients(&net, b);
        slot_set(L, step, 0);  /* the batch is done with: the loader may refill it */
        allreduce_mean(net.grads, net.n, world);
        { PROF_SCOPE("optimizer_step"); sgd_step(&net, lr); }
        PROF_COUNTER("loss", loss);  /* this rank's; rank 0 prints the mean */
        PROF_COUNTER("lr", lr);

        window += loss;
        if (is_print_step(step)) {
            double sum = 0;
            { PROF_SCOPE("reduce"); MPI_Reduce(&window, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); }
            if (rank == 0) print_loss(step, sum, world, lr);
            window = 0;
        }
        if ((step + 1) % EVAL_EVERY == 0 || step + 1 == steps) {
            int correct = evaluate(&net, &my_test), total = 0;
            { PROF_SCOPE("reduce"); MPI_Reduce(&correct, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); }
            acc = (float)total / (float)test.n;
            if (rank == 0) printf("           test accuracy %.1f%%\n", 100.0 * acc);
        }
        PROF_STEP();  /* last in the step: every region above has closed */
    }
    loader_join(L);

    /* The point of averaging: one model. Every rank started from rank 0's
       weights and applied the same mean gradients, so the parameters and the
       momentum must agree bit for bit; if the checksums' minimum and maximum
       over the ranks differ, some rank diverged. */
    uint64_t h = fnv1a(0xcbf29ce484222325ull, net.params, net.n * sizeof(float));
    h = fnv1a(h, net.momentum, net.n * sizeof(float));
    uint64_t lo, hi;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    int ok = lo == hi;
    if (!ok)
        fprintf(stderr, "rank %d: weights differ between ranks (checksum %016" PRIx64 ", range %016"
                PRIx64 "..%016" PRIx64 ")\n", rank, h, lo, hi);
    else if (rank == 0)
        printf("%d ranks, %d steps in %.3f s, final test accuracy %.1f%%, weights identical on every rank "
               "(checksum %016" PRIx64 ")\n", world, steps, now_s() - t0, 100.0 * acc, h);

    mlp_free(&net);
    dataset_free(&train);
    dataset_free(&test);
    PROF_SHUTDOWN();  /* also runs at exit if omitted */
    MPI_Finalize();
    return ok ? 0 : 1;
}
