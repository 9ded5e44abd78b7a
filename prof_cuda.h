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

static int prof__cu_device_count(int *n) { return (int)cudaGetDeviceCount(n); }
static int prof__cu_get_device(int *d) { return (int)cudaGetDevice(d); }
static int prof__cu_set_device(int d) { return (int)cudaSetDevice(d); }

static int prof__cu_device_props(int d, prof_gpu_props *o) {
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, d);
    if (e != cudaSuccess) return (int)e;
    snprintf(o->name, sizeof o->name, "%s", p.name);
    o->total_mem = (int64_t)p.totalGlobalMem;
    o->major = p.major;
    o->minor = p.minor;
    o->sms = p.multiProcessorCount;
    o->warp_size = p.warpSize;
    o->max_threads_per_block = p.maxThreadsPerBlock;
    o->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    o->regs_per_block = p.regsPerBlock;
    o->regs_per_sm = p.regsPerMultiprocessor;
    o->smem_per_block = (int64_t)p.sharedMemPerBlock;
    o->smem_per_sm = (int64_t)p.sharedMemPerMultiprocessor;
    o->smem_per_block_optin = (int64_t)p.sharedMemPerBlockOptin;
    return 0;
}

static int prof__cu_stream_info(void *s, int *dev, long long *id) {
    cudaError_t e;
#if CUDART_VERSION >= 12080
    e = cudaStreamGetDevice((cudaStream_t)s, dev);
#else
    e = cudaGetDevice(dev);
#endif
    if (e != cudaSuccess) return (int)e;
#if CUDART_VERSION >= 12000
    unsigned long long sid;
    e = cudaStreamGetId((cudaStream_t)s, &sid);
    *id = e == cudaSuccess ? (long long)sid : -1;
    return (int)e;
#else
    *id = -1;
    return 0;
#endif
}

static int prof__cu_stream_create(void **s) {
    return (int)cudaStreamCreateWithFlags((cudaStream_t *)s, cudaStreamNonBlocking);
}
static int prof__cu_stream_destroy(void *s) { return (int)cudaStreamDestroy((cudaStream_t)s); }
static int prof__cu_event_create(void **ev) { return (int)cudaEventCreate((cudaEvent_t *)ev); }
static int prof__cu_event_destroy(void *ev) { return (int)cudaEventDestroy((cudaEvent_t)ev); }
static int prof__cu_event_record(void *ev, void *s) { return (int)cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)s); }
static int prof__cu_event_query(void *ev) { return (int)cudaEventQuery((cudaEvent_t)ev); }
static int prof__cu_event_sync(void *ev) { return (int)cudaEventSynchronize((cudaEvent_t)ev); }
static int prof__cu_elapsed(float *ms, void *a, void *b) {
    return (int)cudaEventElapsedTime(ms, (cudaEvent_t)a, (cudaEvent_t)b);
}
static const char *prof__cu_error_name(int e) { return cudaGetErrorName((cudaError_t)e); }
static const char *prof__cu_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }

static const prof_gpu_api prof__cuda_api = {
    "CUDA", (int)cudaErrorNotReady,
    prof__cu_device_count, prof__cu_get_device, prof__cu_set_device, prof__cu_device_props,
    prof__cu_stream_info, prof__cu_stream_create, prof__cu_stream_destroy,
    prof__cu_event_create, prof__cu_event_destroy, prof__cu_event_record,
    prof__cu_event_query, prof__cu_event_sync, prof__cu_elapsed,
    prof__cu_error_name, prof__cu_error_string,
};

static inline int prof__cuda_device(void) {
    int d = 0;
    return cudaGetDevice(&d) == cudaSuccess ? d : 0;
}

#define PROF_GPU_SCOPE(name, stream) \
    PROF__GPU_SCOPE_DECL(PROF__VAR(prof__gpu_scope_), &prof__cuda_api, name, stream)
#define PROF_GPU_BEGIN(name, stream) prof_gpu_begin(&prof__cuda_api, (name), (void *)(stream))
#define PROF_GPU_END(stream)         prof_gpu_end(&prof__cuda_api, (void *)(stream))
#define PROF_GPU_ALLOC(ptr, bytes)   prof_mem_alloc((ptr), (size_t)(bytes), prof__cuda_device())
#define PROF_GPU_FREE(ptr)           prof_mem_free(ptr)

/* cudaMalloc / cudaFree that also record the allocation. */
static inline cudaError_t prof_cudaMalloc(void **ptr, size_t bytes) {
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (e == cudaSuccess) PROF_GPU_ALLOC(*ptr, bytes);
    return e;
}
static inline cudaError_t prof_cudaFree(void *ptr) {
    if (ptr) PROF_GPU_FREE(ptr);
    return cudaFree(ptr);
}

#else /* disabled: nothing at all */

#define PROF_GPU_SCOPE(name, stream)
#define PROF_GPU_BEGIN(name, stream)
#define PROF_GPU_END(stream)
#define PROF_GPU_ALLOC(ptr, bytes)
#define PROF_GPU_FREE(ptr)
#define prof_cudaMalloc(ptr, bytes) cudaMalloc((ptr), (bytes))
#define prof_cudaFree(ptr)          cudaFree(ptr)

#endif /* PROF__ENABLED */
#endif /* PROF_CUDA_H */
