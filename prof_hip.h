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

static int prof__hip_device_count(int *n) { return (int)hipGetDeviceCount(n); }
static int prof__hip_get_device(int *d) { return (int)hipGetDevice(d); }
static int prof__hip_set_device(int d) { return (int)hipSetDevice(d); }

static int prof__hip_device_props(int d, prof_gpu_props *o) {
    hipDeviceProp_t p;
    hipError_t e = hipGetDeviceProperties(&p, d);
    if (e != hipSuccess) return (int)e;
    snprintf(o->name, sizeof o->name, "%s", p.name);
    o->total_mem = (int64_t)p.totalGlobalMem;
    o->major = p.major;
    o->minor = p.minor;
    o->sms = p.multiProcessorCount;
    o->warp_size = p.warpSize;
    o->max_threads_per_block = p.maxThreadsPerBlock;
    o->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    o->regs_per_block = p.regsPerBlock;
    o->regs_per_sm = 0;                 /* not in hipDeviceProp_t */
    o->smem_per_block = (int64_t)p.sharedMemPerBlock;
    o->smem_per_sm = (int64_t)p.maxSharedMemoryPerMultiProcessor;
    o->smem_per_block_optin = 0;
    return 0;
}

/* HIP has no stream ids: prof.h numbers streams itself. */
static int prof__hip_stream_info(void *s, int *dev, long long *id) {
    (void)s;
    *id = -1;
    return (int)hipGetDevice(dev);
}

static int prof__hip_stream_create(void **s) {
    return (int)hipStreamCreateWithFlags((hipStream_t *)s, hipStreamNonBlocking);
}
static int prof__hip_stream_destroy(void *s) { return (int)hipStreamDestroy((hipStream_t)s); }
static int prof__hip_event_create(void **ev) { return (int)hipEventCreate((hipEvent_t *)ev); }
static int prof__hip_event_destroy(void *ev) { return (int)hipEventDestroy((hipEvent_t)ev); }
static int prof__hip_event_record(void *ev, void *s) { return (int)hipEventRecord((hipEvent_t)ev, (hipStream_t)s); }
static int prof__hip_event_query(void *ev) { return (int)hipEventQuery((hipEvent_t)ev); }
static int prof__hip_event_sync(void *ev) { return (int)hipEventSynchronize((hipEvent_t)ev); }
static int prof__hip_elapsed(float *ms, void *a, void *b) {
    return (int)hipEventElapsedTime(ms, (hipEvent_t)a, (hipEvent_t)b);
}
static const char *prof__hip_error_name(int e) { return hipGetErrorName((hipError_t)e); }
static const char *prof__hip_error_string(int e) { return hipGetErrorString((hipError_t)e); }

static const prof_gpu_api prof__hip_api = {
    "HIP", (int)hipErrorNotReady,
    prof__hip_device_count, prof__hip_get_device, prof__hip_set_device, prof__hip_device_props,
    prof__hip_stream_info, prof__hip_stream_create, prof__hip_stream_destroy,
    prof__hip_event_create, prof__hip_event_destroy, prof__hip_event_record,
    prof__hip_event_query, prof__hip_event_sync, prof__hip_elapsed,
    prof__hip_error_name, prof__hip_error_string,
};

static inline int prof__hip_device(void) {
    int d = 0;
    return hipGetDevice(&d) == hipSuccess ? d : 0;
}

#define PROF_GPU_SCOPE(name, stream) \
    PROF__GPU_SCOPE_DECL(PROF__VAR(prof__gpu_scope_), &prof__hip_api, name, stream)
#define PROF_GPU_BEGIN(name, stream) prof_gpu_begin(&prof__hip_api, (name), (void *)(stream))
#define PROF_GPU_END(stream)         prof_gpu_end(&prof__hip_api, (void *)(stream))
#define PROF_GPU_ALLOC(ptr, bytes)   prof_mem_alloc((ptr), (size_t)(bytes), prof__hip_device())
#define PROF_GPU_FREE(ptr)           prof_mem_free(ptr)

/* hipMalloc / hipFree that also record the allocation. */
static inline hipError_t prof_hipMalloc(void **ptr, size_t bytes) {
    hipError_t e = hipMalloc(ptr, bytes);
    if (e == hipSuccess) PROF_GPU_ALLOC(*ptr, bytes);
    return e;
}
static inline hipError_t prof_hipFree(void *ptr) {
    if (ptr) PROF_GPU_FREE(ptr);
    return hipFree(ptr);
}

#else /* disabled: nothing at all */

#define PROF_GPU_SCOPE(name, stream)
#define PROF_GPU_BEGIN(name, stream)
#define PROF_GPU_END(stream)
#define PROF_GPU_ALLOC(ptr, bytes)
#define PROF_GPU_FREE(ptr)
#define prof_hipMalloc(ptr, bytes) hipMalloc((ptr), (bytes))
#define prof_hipFree(ptr)          hipFree(ptr)

#endif /* PROF__ENABLED */
#endif /* PROF_HIP_H */
