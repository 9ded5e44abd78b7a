/* train_mlp_cuda.cu - the MLP of mlp.h trained on a CUDA GPU, annotated with
   prof_cuda.h. The program is train_mlp_gpu.h, written once for CUDA and HIP;
   this file says how CUDA spells what it needs.

   Build and run (from examples/):
       nvcc -std=c++17 -O2 -arch=sm_90 -I.. -DPROF_ENABLE train_mlp_cuda.cu -o train_mlp_cuda
       ./train_mlp_cuda [steps]                          (default 40)
   It writes train_mlp_cuda_trace.1.json (steps 4-6) and prints the summary
   table; open the trace in https://ui.perfetto.dev. PROF_* environment
   variables override the schedule and the output, as for train_mlp.
*/
#include <cstdio>

#include <cuda_runtime.h>

#define PROF_IMPLEMENTATION /* exactly one file of the program defines this */
#include "prof_cuda.h"

/* What train_mlp_gpu.h needs, as CUDA spells it (its opening comment lists it). */
#define GPU(name) cuda##name            /* GPU(Malloc) is cudaMalloc */
#define GPU_PROF(name) prof_cuda##name  /* GPU_PROF(Malloc) is prof_cudaMalloc */
#define GPU_API "CUDA"
#define GPU_COMPILER "nvcc"
#define GPU_TRACE "train_mlp_cuda_trace.json"

/* pinned host memory, for the asynchronous copies */
static cudaError_t pinned_alloc(void **p, size_t bytes) { return cudaMallocHost(p, bytes); }
static cudaError_t pinned_free(void *p) { return cudaFreeHost(p); }

/* the device named on stdout: the properties differ between the runtimes */
static cudaError_t print_device(int dev) {
    cudaDeviceProp prop;
    cudaError_t err = cudaGetDeviceProperties(&prop, dev);
    if (err == cudaSuccess)
        printf("CUDA device %d: %s (compute capability %d.%d, %d SMs)\n", dev, prop.name, prop.major, prop.minor,
               prop.multiProcessorCount);
    return err;
}

#include "train_mlp_gpu.h"
