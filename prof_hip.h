/* prof_hip.h - GPU regions for prof.h on HIP (ROCm). MIT licence (see prof.h).

   The HIP twin of prof_cuda.h, used the same way: prof.h's PROF_GPU_* macros
   (>>api-gpu) on libamdhip64, plus prof_hipMalloc / prof_hipFree. hipcc
   defines the platform; a plain C or C++ compiler gets AMD's. HIP has no
   stream ids, so prof.h numbers the streams it sees. */
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
    PROF__GPU_PROPS(o, p);
    o->regs_per_sm = 0;                 /* not in hipDeviceProp_t */
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

/* No kernel capture: roctracer is not packaged where prof.h is tested. */
PROF__GPU_RUNTIME(hip, "HIP", hipError_t, hipStream_t, hipEvent_t, PROF__NULLPTR)
#define PROF__GPU_API      prof__hip_api
#define PROF__GPU_DEVICE() prof__hip_device()

#else /* disabled: the macros are prof.h's, the wrappers the runtime's calls */

#define prof_hipMalloc(ptr, bytes) hipMalloc((ptr), (bytes))
#define prof_hipFree(ptr)          hipFree(ptr)

#endif /* PROF__ENABLED */
#endif /* PROF_HIP_H */
