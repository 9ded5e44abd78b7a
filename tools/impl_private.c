/* prof.h's implementation as the project's own binaries hold it: private
   to the object that links it (-DPROF_PRIVATE: no symbol exported, no note
   for the NVTX tool to find), general-dynamic TLS (a dlopen()ed library
   holds it), with the internals the prof tool writes with
   (PROF_INTERNALS). CMake compiles it once, position-independent (the
   object library prof_impl_private), for libprof_nvtx.so, for `prof`, and
   for the suite's private plugin; their own files define the same macros
   but PROF_IMPLEMENTATION. */
#define _GNU_SOURCE                     /* as prof_nvtx.c, which dl_iterate_phdr needs */
#define PROF_ENABLE 1
#define PROF_IMPLEMENTATION
#define PROF_PRIVATE
#define PROF_TLS_DYNAMIC
#define PROF_INTERNALS
#include "prof.h"
