/* fake_cuda.c - a test double of the CUDA runtime calls prof_cuda.h makes,
   compiled against the real cuda_runtime_api.h and linked instead of
   libcudart. The functions are in fake_runtime_api.h, shared with the HIP
   double; the device they drive is simulated in fake_gpu.c. */
#include <cuda_runtime_api.h>

#define RT(name) cuda##name
typedef cudaError_t rt_error;
typedef cudaEvent_t rt_event;
typedef cudaStream_t rt_stream;
typedef struct cudaDeviceProp rt_props;
#define RT_PROPS_MORE(p)                          \
    do {                                          \
        (p)->regsPerMultiprocessor = 65536;       \
        (p)->sharedMemPerMultiprocessor = 228 << 10; \
        (p)->sharedMemPerBlockOptin = 227 << 10;  \
    } while (0)

#include "fake_runtime_api.h"

/* Only CUDA has these: the stream's own device and its id. */
cudaError_t cudaStreamGetDevice(cudaStream_t s, int *dev) {
    unsigned long long id;
    return rt_err(fake_stream_info(s, dev, &id));
}

cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long *id) {
    int dev;
    return rt_err(fake_stream_info(s, &dev, id));
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *status, unsigned long long *id,
                                     cudaGraph_t *graph, const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                     size_t *ndeps) {
    int st = 0;
    unsigned long long cid = 0;
    cudaError_t e = rt_err(fake_capture_status(s, &st, &cid));
    if (e != cudaSuccess) return e;
    *status = st == FAKE_CAPTURE_ACTIVE ? cudaStreamCaptureStatusActive
            : st == FAKE_CAPTURE_BROKEN ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusNone;
    if (id) *id = cid;
    if (graph) *graph = NULL;           /* the simulation's graph is not a cudaGraph_t to be built on */
    if (deps) *deps = NULL;
    if (edges) *edges = NULL;
    if (ndeps) *ndeps = 0;
    return cudaSuccess;
}
