/* The HIP kernel-capture case compiled as C++17: kernel names are
   demangled (libstdc++ is loaded), PROF_GPU_SCOPE is a destructor. */
#include "rocprof_test.c"
