/* PROF_SAMPLE where perf_event_open is refused: a seccomp filter installed
   here answers it EPERM, as a container's profile does. One line says so
   (and how to allow it), no sample is taken, and the trace is written
   whole. */
#define _POSIX_C_SOURCE 200809L
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "../prof.h"
#include "check.h"

#include "refuse_perf.h"

#include <stdlib.h>

static volatile uint64_t sink;

int main(void) {
    if (!refuse_perf_event_open()) {
        printf("SKIP: no seccomp filter here\n");
        return 77;
    }
    remove("refused.log");
    remove("refused.json");
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.sample_hz = 1000;
    cfg.output = "refused.json";
    setenv("PROF_LOG", "refused.log", 1);
    PROF_INIT(&cfg);
    for (int s = 0; s < 3; s++) {
        PROF_SCOPE("work");
        for (long i = 0; i < 20000000; i++) sink = sink * 31 + (uint64_t)i;
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    prof_stats st;
    prof_get_stats(&st);
    CHECK_EQ(st.samples, 0);
    CHECK_EQ(st.samples_lost, 0);
    CHECK_EQ(st.traces_written, 1);
    check_refusal_said("refused.log", "PROF_SAMPLE");
    char *js = check_whole_json("refused.json");
    if (js) CHECK(strstr(js, "\"work\"") != NULL);
    return failures != 0;
}
