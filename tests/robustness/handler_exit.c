/* A trace-ready handler that waits for the writer (prof_flush) and ends
   the process (exit(3) from the handler of the first cycle), on the
   profiler's thread or, with AT_STEP set, on the stepping thread inside
   PROF_STEP: prof_flush says it cannot wait there, the process ends with
   that status, the profiler's exit-time shutdown saying the cycles after it
   are not written, and nothing waits on itself. */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>

static void quit(const prof_cycle *c, void *user) {
    (void)user;
    printf("handler: cycle %d, prof_flush %d, exit(3)\n", prof_cycle_index(c), prof_flush());
    fflush(stdout);
    exit(3);
}

int main(void) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.schedule.active = 2;
    cfg.on_trace_ready = quit;
    cfg.trace_ready_at_step = getenv("AT_STEP") != NULL;
    PROF_INIT(&cfg);
    for (int s = 0; s < 10; s++) {
        { PROF_SCOPE("work"); }
        PROF_STEP();
    }
    for (;;) {                          /* the engine goes on until the handler ends it */
        { PROF_SCOPE("idle"); }
    }
}
