/* gpu_launch.cu - gpu_launch.cuh's loop as a shared object, for
   bench/gpu_torch.py (ctypes): the loop prof.h's benchmark times, timed
   under torch.profiler in the same run.
   nvcc -O2 -shared -Xcompiler -fPIC bench/gpu_launch.cu -o libgpu_launch.so */
#include "gpu_launch.cuh"

static cudaStream_t g_stream;

/* ns of host time per launch, over n launches of the empty kernel. */
extern "C" double gpu_launch_run(int n) {
    if (!g_stream) gpu_launch_check(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    return gpu_launch_batch(g_stream, n);
}
