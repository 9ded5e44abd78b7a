/* train_mlp_hip.cpp - the MLP of mlp.h trained on an AMD GPU with HIP,
   annotated with prof_hip.h. The program is train_mlp_gpu.h, written once
   for CUDA and HIP; this file says how HIP spells what it needs.

   hipcc builds it with its kernels. A plain C++ compiler builds it too, with
   HIP's headers and runtime but no device code: that build always trains on
   the CPU reference, and still uses every macro.

   Build and run (from examples/):
       hipcc -std=c++17 -O2 --offload-arch=gfx90a -I.. -DPROF_ENABLE train_mlp_hip.cpp -o train_mlp_hip
       g++ -std=c++17 -O2 -I.. -DPROF_ENABLE train_mlp_hip.cpp -o train_mlp_hip_host -lamdhip64
       ./train_mlp_hip [steps]                          (default 40)
   It writes train_mlp_hip_trace.1.json (steps 4-6) and prints the summary
   table; open the trace in https://ui.perfetto.dev. PROF_* environment
   variables override the schedule and the output, as for train_mlp.
   PROF_KERNELS=1 ./train_mlp_hip adds every kernel and copy, with the HIP
   calls that launched them (rocprofiler-sdk, ROCm 6.2 or later; linking with
   -Wl,--export-dynamic-symbol=rocprofiler_configure lets ROCm's HIP find
   prof.h's tracer when it starts, as CMake's build does).
*/
#include <cstdio>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else /* a host compiler: the runtime API only, on AMD's platform */
#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__)
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#endif

#define PROF_IMPLEMENTATION /* exactly one file of the program defines this */
#include "prof_hip.h"

/* What train_mlp_gpu.h needs, as HIP spells it (its opening comment lists it). */
#define GPU(name) hip##name            /* GPU(Malloc) is hipMalloc */
#define GPU_PROF(name) prof_hip##name  /* GPU_PROF(Malloc) is prof_hipMalloc */
#define GPU_API "HIP"
#define GPU_COMPILER "hipcc"
#define GPU_TRACE "train_mlp_hip_trace.json"

/* pinned host memory, for the asynchronous copies */
static hipError_t pinned_alloc(void **p, size_t bytes) { return hipHostMalloc(p, bytes, hipHostMallocDefault); }
static hipError_t pinned_free(void *p) { return hipHostFree(p); }

/* the device named on stdout: the properties differ between the runtimes */
static hipError_t print_device(int dev) {
    hipDeviceProp_t prop;
    hipError_t err = hipGetDeviceProperties(&prop, dev);
    if (err == hipSuccess)
        printf("HIP device %d: %s (%s, %d compute units)\n", dev, prop.name, prop.gcnArchName,
               prop.multiProcessorCount);
    return err;
}

#include "train_mlp_gpu.h"
