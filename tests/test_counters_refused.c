/* PROF_COUNTERS where perf_event_open is refused: a seccomp filter
   installed here answers it EPERM, as a container's profile does. One line
   says so (and how to allow it), no counter is in the cycle, and the trace
   is written whole. */
#define _POSIX_C_SOURCE 200809L
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "../prof.h"
#include "check.h"

#include "refuse_perf.h"

#include <stdlib.h>

static volatile uint64_t sink;

static size_t counters_seen;
static void ready(const prof_cycle *c, void *user) {
    (void)user;
    for (size_t i = 0; i < prof_cycle_event_count(c); i++) {
        prof_event e;
        if (prof_cycle_event(c, i, &e) && e.kind == PROF_EVENT_COUNTER) counters_seen++;
    }
    CHECK(prof_cycle_write_trace(c, "refused.json"));
}

int main(void) {
    if (!refuse_perf_event_open()) {
        printf("SKIP: no seccomp filter here\n");
        return 77;
    }
    remove("refused.log");
    remove("refused.json");
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.counters = "task-clock,context-switches,page-faults,cycles,instructions";
    cfg.on_trace_ready = ready;
    setenv("PROF_LOG", "refused.log", 1);
    PROF_INIT(&cfg);
    for (int s = 0; s < 3; s++) {
        PROF_SCOPE("work");
        for (long i = 0; i < 2000000; i++) sink = sink * 31 + (uint64_t)i;
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    CHECK_EQ(counters_seen, 0);
    check_refusal_said("refused.log", "PROF_COUNTERS");
    char *js = check_whole_json("refused.json");
    if (js) {
        CHECK_EQ(strstr(js, "\"ProfilerStep#2\"") != NULL, 1);
        CHECK(strstr(js, "task-clock") == NULL);
    }
    return failures != 0;
}
