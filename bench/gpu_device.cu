/* gpu_device.cu - what a GPU region costs the host on a real GPU.

   A launch of an empty kernel, N times on one stream, three ways:
     bare     the launch alone
     events   the launch between two cudaEventRecord calls (a pool of event
              pairs, as an engine timing by hand would keep)
     region   the launch inside PROF_GPU_SCOPE, in a recording window
   Each way runs in batches of BATCH launches followed by one
   cudaStreamSynchronize (outside the timed part), best of 5. The cost of a
   region is region - bare; of a hand-made event pair, events - bare.

   Built by tests/gpu/run_on_device.sh (nvcc -O2 -DPROF_ENABLE), which
   checks that the trace (argv[1], default gpu_device.json) holds every one of
   the (ROUNDS + 1) * BATCH regions. */
#define PROF_IMPLEMENTATION
#include "prof_cuda.h"

#include <string.h>

#include "gpu_launch.cuh"

#define BATCH GPU_LAUNCH_BATCH
#define ROUNDS 20

static cudaEvent_t g_ev[2 * BATCH];

/* One batch one way; the host time of its launches, in ns per launch. */
static double batch(int way, cudaStream_t s) {
    if (way == 0) return gpu_launch_batch(s, BATCH);
    if (way == 1)
        return gpu_launch_timed(s, BATCH, [s](int i) {
            cudaEventRecord(g_ev[2 * i], s);
            gpu_launch_empty<<<1, 1, 0, s>>>();
            cudaEventRecord(g_ev[2 * i + 1], s);
        });
    return gpu_launch_timed(s, BATCH, [s](int) {
        PROF_GPU_SCOPE("launch", s);
        gpu_launch_empty<<<1, 1, 0, s>>>();
    });
}

int main(int argc, char **argv) {
    const char *names[3] = { "bare", "events", "region" };
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = argc > 1 ? argv[1] : "gpu_device.json";
    cfg.quiet = 1;
    PROF_INIT(&cfg);
    cudaStream_t s;
    gpu_launch_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int i = 0; i < 2 * BATCH; i++) gpu_launch_check(cudaEventCreate(&g_ev[i]), "cudaEventCreate");
    for (int w = 0; w < 3; w++) batch(w, s);        /* module load, pools, first faults */
    double best[3] = { 1e30, 1e30, 1e30 };
    for (int r = 0; r < ROUNDS; r++)
        for (int w = 0; w < 3; w++) {
            double t = batch(w, s);
            if (t < best[w]) best[w] = t;
            if (w == 2) PROF_STEP();                /* GPU regions resolve at steps */
        }
    for (int w = 0; w < 3; w++) printf("%-7s %8.1f ns per launch\n", names[w], best[w]);
    printf("event pair by hand: %.1f ns; PROF_GPU_SCOPE: %.1f ns (host time over a bare launch)\n",
           best[1] - best[0], best[2] - best[0]);
    for (int i = 0; i < 2 * BATCH; i++) cudaEventDestroy(g_ev[i]);
    cudaStreamDestroy(s);
    PROF_SHUTDOWN();
    return 0;
}
