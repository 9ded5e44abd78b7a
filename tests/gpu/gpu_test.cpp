/* The GPU cases compiled as C++17: PROF_GPU_SCOPE is then a destructor. */
#include "gpu_test.c"
