/* Every macro and wrapper of prof_cuda.h (prof_hip.h with -DWARN_HIP), as an
   engine's host code writes them; tests/warnings/check.sh compiles it with
   the same warning sets as every_macro.c, against the real runtime headers. */
#include <stddef.h>
#ifdef WARN_HIP
#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>            /* the engine's own include */
#include "prof_hip.h"
#define RT(name) hip##name
#define RT_MALLOC prof_hipMalloc
#define RT_FREE prof_hipFree
#else
#include <cuda_runtime_api.h>
#include "prof_cuda.h"
#define RT(name) cuda##name
#define RT_MALLOC prof_cudaMalloc
#define RT_FREE prof_cudaFree
#endif

int every_gpu_macro(RT(Stream_t) stream, size_t n);
int every_gpu_macro(RT(Stream_t) stream, size_t n) {
#ifdef __cplusplus
    void *buf = nullptr;
#else
    void *buf = NULL;
#endif
    size_t bytes = n * sizeof(float);
    if (RT_MALLOC(&buf, bytes) != RT(Success)) return 1;
    PROF_GPU_ALLOC(buf, bytes);
    {
        PROF_GPU_SCOPE("step", stream);
        if (n > 1) PROF_GPU_BEGIN("inner", stream);
        else PROF_GPU_BEGIN("other", stream);
        PROF_GPU_END(stream);
    }
    PROF_GPU_FREE(buf);
    return RT_FREE(buf) == RT(Success) ? 0 : 1;
}
