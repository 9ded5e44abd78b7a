/* prof_cuda.h - GPU regions for prof.h on CUDA. MIT licence (see prof.h).

   Include this instead of prof.h in code that launches CUDA work; define
   PROF_IMPLEMENTATION in one file as for prof.h. Link the CUDA runtime the
   engine already links (libcudart). Build with -DPROF_ENABLE to compile it in.

     PROF_GPU_SCOPE(name, stream)   a CPU region plus a GPU region on stream,
                                    timed by a cudaEvent pair, to block end
     PROF_GPU_BEGIN(name, stream)   the same, explicit; last in, first out
     PROF_GPU_END(stream)             per thread
     PROF_GPU_ALLOC(ptr, bytes)     device memory events (current device)
     PROF_GPU_FREE(ptr)
     prof_cudaMalloc / prof_cudaFree  cudaMalloc / cudaFree that also record

   Events come from a pool and are resolved with cudaEventQuery at steps; the
   engine's stream is never synchronised. Without a usable device (no GPU, a
   driver older than the runtime, a failing event call) prof.h says so once,
   GPU timing goes off and CPU regions are still recorded. */
#ifndef PROF_CUDA_H
#define PROF_CUDA_H

#include "prof.h"

#if PROF__ENABLED
#include <cuda_runtime_api.h>

/* What differs from HIP: the properties struct and stream identity. */
static int prof__cuda_device_props(int d, prof_gpu_props *o) {
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, d);
    if (e != cudaSuccess) return PROF__SCAST(int, e);
    snprintf(o->name, sizeof o->name, "%s", p.name);
    o->total_mem = PROF__SCAST(int64_t, p.totalGlobalMem);
    o->major = p.major;
    o->minor = p.minor;
    o->sms = p.multiProcessorCount;
    o->warp_size = p.warpSize;
    o->max_threads_per_block = p.maxThreadsPerBlock;
    o->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    o->regs_per_block = p.regsPerBlock;
    o->regs_per_sm = p.regsPerMultiprocessor;
    o->smem_per_block = PROF__SCAST(int64_t, p.sharedMemPerBlock);
    o->smem_per_sm = PROF__SCAST(int64_t, p.sharedMemPerMultiprocessor);
    o->smem_per_block_optin = PROF__SCAST(int64_t, p.sharedMemPerBlockOptin);
    return 0;
}

/* A stream's device (CUDA 12.8+; the current device before) and id (12.0+). */
static int prof__cuda_stream_info(void *s, int *dev, long long *id) {
    cudaError_t e;
#if CUDART_VERSION >= 12080
    e = cudaStreamGetDevice(PROF__SCAST(cudaStream_t, s), dev);
#else
    e = cudaGetDevice(dev);
#endif
    if (e != cudaSuccess) return PROF__SCAST(int, e);
#if CUDART_VERSION >= 12000
    unsigned long long sid;
    e = cudaStreamGetId(PROF__SCAST(cudaStream_t, s), &sid);
    *id = e == cudaSuccess ? PROF__SCAST(long long, sid) : -1;
    return PROF__SCAST(int, e);
#else
    (void)s;
    *id = -1;
    return 0;
#endif
}

PROF__GPU_RUNTIME(cuda, "CUDA", cudaError_t, cudaStream_t, cudaEvent_t)
#define PROF__GPU_API      prof__cuda_api
#define PROF__GPU_DEVICE() prof__cuda_device()

#else /* disabled: the macros are prof.h's, the wrappers the runtime's calls */

#define prof_cudaMalloc(ptr, bytes) cudaMalloc((ptr), (bytes))
#define prof_cudaFree(ptr)          cudaFree(ptr)

#endif /* PROF__ENABLED */
#endif /* PROF_CUDA_H */
