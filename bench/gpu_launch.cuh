/* gpu_launch.cuh - the launch loop the GPU benchmarks time: BATCH launches
   of an empty kernel on one stream, host time only (the stream is
   synchronised after the clock stops). bench/gpu_capture.cu times it under
   prof.h, bench/gpu_torch.py under torch.profiler (through gpu_launch.cu,
   the same loop in a shared object), so that both measure one loop. */
#ifndef GPU_LAUNCH_CUH
#define GPU_LAUNCH_CUH

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define GPU_LAUNCH_BATCH 1000

__global__ void gpu_launch_empty(void) {}

static double gpu_launch_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e9 * static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec);
}

static void gpu_launch_check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        fprintf(stderr, "gpu_launch: %s: %s\n", what, cudaGetErrorString(e));
        exit(2);
    }
}

/* launch(i) for i in 0..n-1, each launching on s; ns of host time per
   launch, the stream synchronised after the clock stops. */
template <class Launch> static double gpu_launch_timed(cudaStream_t s, int n, Launch launch) {
    double t0 = gpu_launch_now_ns();
    for (int i = 0; i < n; i++) launch(i);
    double t = (gpu_launch_now_ns() - t0) / n;
    gpu_launch_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return t;
}

/* n bare launches on s; ns of host time per launch. */
static double gpu_launch_batch(cudaStream_t s, int n) {
    return gpu_launch_timed(s, n, [s](int) { gpu_launch_empty<<<1, 1, 0, s>>>(); });
}

#endif /* GPU_LAUNCH_CUH */
