/* prof_hip.h - GPU regions for prof.h on HIP (ROCm). MIT licence (see prof.h).

   Include this instead of prof.h in code that launches HIP work; define
   PROF_IMPLEMENTATION in one file as for prof.h. Link the HIP runtime the
   engine already links (libamdhip64). Build with -DPROF_ENABLE to compile it
   in. hipcc defines the platform; a plain C or C++ compiler gets AMD's.

     PROF_GPU_SCOPE(name, stream)   a CPU region plus a GPU region on stream,
                                    timed by a hipEvent pair, to block end
     PROF_GPU_BEGIN(name, stream)   the same, explicit; last in, first out
     PROF_GPU_END(stream)             per thread
     PROF_GPU_ALLOC(ptr, bytes)     device memory events (current device)
     PROF_GPU_FREE(ptr)
     prof_hipMalloc / prof_hipFree    hipMalloc / hipFree that also record

   Events come from a pool and are resolved with hipEventQuery at steps; the
   engine's stream is never synchronised. Without a usable device (no GPU, a
   driver older than the runtime, a failing event call) prof.h says so once,
   GPU timing goes off and CPU regions are still recorded. */
#ifndef PROF_HIP_H
#define PROF_HIP_H

#include "prof.h"

#if PROF__ENABLED
#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__) && !defined(__HIP_PLATFORM_HCC__)
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

/* What differs from CUDA: the properties struct, and no stream ids. */
static int prof__hip_device_props(int d, prof_gpu_props *o) {
    hipDeviceProp_t p;
    hipError_t e = hipGetDeviceProperties(&p, d);
    if (e != hipSuccess) return PROF__SCAST(int, e);
    snprintf(o->name, sizeof o->name, "%s", p.name);
    o->total_mem = PROF__SCAST(int64_t, p.totalGlobalMem);
    o->major = p.major;
    o->minor = p.minor;
    o->sms = p.multiProcessorCount;
    o->warp_size = p.warpSize;
    o->max_threads_per_block = p.maxThreadsPerBlock;
    o->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    o->regs_per_block = p.regsPerBlock;
    o->regs_per_sm = 0;                 /* not in hipDeviceProp_t */
    o->smem_per_block = PROF__SCAST(int64_t, p.sharedMemPerBlock);
    o->smem_per_sm = PROF__SCAST(int64_t, p.maxSharedMemoryPerMultiProcessor);
    o->smem_per_block_optin = 0;
    return 0;
}

/* HIP has no stream ids: prof.h numbers streams itself. */
static int prof__hip_stream_info(void *s, int *dev, long long *id) {
    (void)s;
    *id = -1;
    return PROF__SCAST(int, hipGetDevice(dev));
}

PROF__GPU_RUNTIME(hip, "HIP", hipError_t, hipStream_t, hipEvent_t)
#define PROF__GPU_API      prof__hip_api
#define PROF__GPU_DEVICE() prof__hip_device()

#else /* disabled: the macros are prof.h's, the wrappers the runtime's calls */

#define prof_hipMalloc(ptr, bytes) hipMalloc((ptr), (bytes))
#define prof_hipFree(ptr)          hipFree(ptr)

#endif /* PROF__ENABLED */
#endif /* PROF_HIP_H */
