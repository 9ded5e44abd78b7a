/* gpu_capture.cu - what a launch and a GPU region cost the host on a real
   GPU, inside a recording window and outside one, with kernel capture
   (PROF_CUPTI=1) or without.

   The schedule records 2 steps of every 5 after a warm-up step (wait 2,
   warmup 1, active 2, repeating). Each step launches an empty kernel
   GPU_LAUNCH_BATCH times three ways: bare, inside PROF_SCOPE (the CPU
   region alone) and inside PROF_GPU_SCOPE; each batch's host time per
   launch is kept by the step's place in the schedule (outside a window,
   warm-up, recording). Prints, per place and way, the median and the best
   of the batches, in ns per launch, one line each:
       capture 1 outside bare median 4210.3 best 4010.2
   Built by tests/gpu/run_on_device.sh twice: with -DPROF_ENABLE, run with
   and without PROF_CUPTI=1, and without it (the profiler compiled out). */
#define PROF_IMPLEMENTATION
#include "prof_cuda.h"

#include <stdlib.h>
#include <string.h>

#include "gpu_launch.cuh"

#define CYCLES 12
#define STEPS (5 * CYCLES)

static const char *const g_place[3] = { "outside", "warmup", "inside" };
static const char *const g_way[3] = { "bare", "cpu_scope", "gpu_scope" };
static double g_ns[3][3][STEPS];        /* place, way, batch */
static int g_n[3][3];

static int cmp_double(const void *a, const void *b) {
    double x = *static_cast<const double *>(a), y = *static_cast<const double *>(b);
    return (x > y) - (x < y);
}

static double batch(int way, cudaStream_t s) {
    if (way == 0) return gpu_launch_batch(s, GPU_LAUNCH_BATCH);
    if (way == 1)
        return gpu_launch_timed(s, GPU_LAUNCH_BATCH, [s](int) {
            PROF_SCOPE("launch");
            gpu_launch_empty<<<1, 1, 0, s>>>();
        });
    return gpu_launch_timed(s, GPU_LAUNCH_BATCH, [s](int) {
        PROF_GPU_SCOPE("launch", s);
        gpu_launch_empty<<<1, 1, 0, s>>>();
    });
}

int main(void) {
    const char *capture = getenv("PROF_CUPTI");
#if PROF__ENABLED
    setenv("PROF_SCHEDULE", "wait=2,warmup=1,active=2", 1);
    const char *mode = capture && !strcmp(capture, "1") ? "1" : "0";
#else
    const char *mode = "off";           /* the profiler compiled out */
#endif
    cudaStream_t s;
    gpu_launch_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int w = 0; w < 3; w++) batch(w, s);        /* module load, pools, first faults (step 0, waiting) */
    for (int step = 0; step < STEPS; step++) {
        int m = step % 5, place = m < 2 ? 0 : m == 2 ? 1 : 2;
        for (int w = 0; w < 3; w++) g_ns[place][w][g_n[place][w]++] = batch(w, s);
        PROF_STEP();
    }
    for (int p = 0; p < 3; p++)
        for (int w = 0; w < 3; w++) {
            qsort(g_ns[p][w], static_cast<size_t>(g_n[p][w]), sizeof(double), cmp_double);
            printf("capture %s %s %s median %.1f best %.1f\n", mode, g_place[p], g_way[w],
                   g_ns[p][w][g_n[p][w] / 2], g_ns[p][w][0]);
        }
    cudaStreamDestroy(s);
    PROF_SHUTDOWN();
    return 0;
}
