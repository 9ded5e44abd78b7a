/* prof.h's implementation as the project's own binaries hold it (the
   macros: impl_private.h). CMake compiles it once, position-independent
   (the object library prof_impl_private), for libprof_nvtx.so, for `prof`,
   for the fuzzers and for the suite's private plugin. */
#define _GNU_SOURCE                     /* as prof_nvtx.c, which dl_iterate_phdr needs */
#define PROF_IMPLEMENTATION
#include "impl_private.h"
