/* prof_cuda.h - GPU regions for prof.h on CUDA. MIT licence (see prof.h).

   Include it instead of prof.h where CUDA work is launched, as prof.h is
   (PROF_IMPLEMENTATION in one file, -DPROF_ENABLE to compile it in). It binds
   prof.h's PROF_GPU_* macros (>>api-gpu) to libcudart, which the engine links
   already, and adds prof_cudaMalloc / prof_cudaFree: cudaMalloc and cudaFree
   that also record. Stream ids need CUDA 12.0, a stream's device 12.8. */
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
    PROF__GPU_PROPS(o, p);
    o->regs_per_sm = p.regsPerMultiprocessor;
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
