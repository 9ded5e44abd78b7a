/* prof.h as the project's own binaries see it: the macros of their one
   copy of the implementation (tools/impl_private.c), for the files that
   link it (libprof_nvtx.so's prof_nvtx.c, the prof tool's prof_link.c, the
   fuzzers, the suite's private plugin) to include instead of prof.h, so
   that every side agrees. Private (-DPROF_PRIVATE: no symbol exported, no
   note for the NVTX tool to find), general-dynamic TLS (a dlopen()ed
   library holds it), with the internals (PROF_INTERNALS: prof__tool, the
   writers, the parsers). */
#ifndef PROF_IMPL_PRIVATE_H
#define PROF_IMPL_PRIVATE_H
#define PROF_ENABLE 1
#define PROF_PRIVATE
#define PROF_TLS_DYNAMIC
#define PROF_INTERNALS
#include "prof.h"
#endif
