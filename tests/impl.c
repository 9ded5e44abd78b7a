/* prof.h's implementation for the test programs and examples that use only
   its API: an engine's own .c file that defines PROF_IMPLEMENTATION,
   compiled once per flavour (tests/CMakeLists.txt: prof_test_impl) and
   linked into each, instead of once per program. With -DPROF_TEST_IMPL_CUDA (_HIP) it is prof_cuda.h's
   (prof_hip.h's), which holds prof.h's. Built as C++ by impl.cpp. */
#define PROF_IMPLEMENTATION
#if defined(PROF_TEST_IMPL_CUDA)
#include "prof_cuda.h"
#elif defined(PROF_TEST_IMPL_HIP)
#include "prof_hip.h"
#else
#include "prof.h"
#endif
