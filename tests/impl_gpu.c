/* A GPU binding's part of the implementation alone, for the test programs
   of its flavour: PROF_GPU_IMPLEMENTATION in an engine's one file that
   includes prof_cuda.h (-DPROF_TEST_IMPL_CUDA) or prof_hip.h
   (-DPROF_TEST_IMPL_HIP), prof.h's implementation linked from the C
   flavour's tests/impl.c (tests/CMakeLists.txt: prof_test_impl's CORE). */
#define PROF_GPU_IMPLEMENTATION
#if defined(PROF_TEST_IMPL_CUDA)
#include "prof_cuda.h"
#elif defined(PROF_TEST_IMPL_HIP)
#include "prof_hip.h"
#else
#error "tests/impl_gpu.c: -DPROF_TEST_IMPL_CUDA or -DPROF_TEST_IMPL_HIP"
#endif
