/* A plugin with its own copy of prof.h, private (-DPROF_PRIVATE: its
   symbols stay its own; the project's copy, tools/impl_private.c), loaded
   by dlclose.c and plugins.c. */
#include "../../tools/impl_private.h"

void plugin_work(int n);

__attribute__((visibility("default"))) void plugin_work(int n) {
    for (int i = 0; i < n; i++) {
        PROF_SCOPE("plugin_work");
    }
}
