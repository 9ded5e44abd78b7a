/* nvtx_regions: regions of every kind, built with -DPROF_NVTX. check.sh runs
   it under tests/nvtx/fake_tool (an NVTX tool, as Nsight is one) and without
   a tool: each region is an NVTX range in the domain "prof", one push and
   one pop, whether prof.h records it or not, and the trace is the same. */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof.h"

#include <pthread.h>
#include <stdio.h>

static void *worker(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("worker");
    for (int i = 0; i < 20; i++) { PROF_SCOPE("work"); }
    return NULL;
}

int main(void) {
    char name[32];
    pthread_t t;
    prof_config cfg = { 0 };
    cfg.schedule.wait = 1;              /* step 0 is not recorded: NVTX ranges all the same */
    cfg.schedule.active = 1;
    cfg.schedule.repeat = 1;
    PROF_INIT(&cfg);
    pthread_create(&t, NULL, worker, NULL);
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < 5; i++) {
            PROF_SCOPE("outer");
            for (int j = 0; j < 3; j++) { PROF_SCOPE("inner"); }
            PROF_BEGIN("explicit");
            PROF_END();
            snprintf(name, sizeof name, "dyn.%d", i % 2);
            PROF_SCOPE_DYN(name);
        }
        PROF_STEP();
    }
    pthread_join(t, NULL);
    PROF_SHUTDOWN();
    return 0;
}
