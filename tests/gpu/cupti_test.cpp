/* The kernel-capture cases compiled as C++17: kernel names are demangled
   (libstdc++ is loaded), PROF_GPU_SCOPE is a destructor. */
#include "cupti_test.c"
