/* nvtx_plugin: a library with prof.h inside (a public copy, as a Python
   extension holds one), calling fake_nccl inside its region. nvtx_host
   loads it RTLD_LOCAL: libprof_nvtx.so finds its prof.h by its note. The
   copy is the suite's C one (prof_impl_c), position-independent. */
#include "prof.h"

#include <stddef.h>

void fake_nccl_setup(void);
void fake_nccl_all_reduce(size_t bytes, int max);

__attribute__((visibility("default"))) void plugin_run(void);
void plugin_run(void) {
    fake_nccl_setup();
    PROF_SCOPE("plugin_step");
    fake_nccl_all_reduce(256, 0);
}
