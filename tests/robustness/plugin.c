/* A plugin with its own copy of prof.h (PROF_IMPLEMENTATION, built with
   -DPROF_PRIVATE so its symbols stay its own), loaded by dlclose.c. */
#define PROF_IMPLEMENTATION
#include "prof.h"

void plugin_work(int n);

__attribute__((visibility("default"))) void plugin_work(int n) {
    for (int i = 0; i < n; i++) {
        PROF_SCOPE("plugin_work");
    }
}
