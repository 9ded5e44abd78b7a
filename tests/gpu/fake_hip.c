/* fake_hip.c - a test double of the HIP runtime calls prof_hip.h makes,
   compiled against the real hip_runtime_api.h (AMD platform) and linked
   instead of libamdhip64. The functions are in fake_runtime_api.h, shared
   with the CUDA double; the device they drive is simulated in fake_gpu.c. */
#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__)
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

#define RT(name) hip##name
typedef hipError_t rt_error;
typedef hipEvent_t rt_event;
typedef hipStream_t rt_stream;
typedef hipDeviceProp_t rt_props;
#define RT_PROPS_MORE(p) ((p)->maxSharedMemoryPerMultiProcessor = 64 << 10)

#include "fake_runtime_api.h"
