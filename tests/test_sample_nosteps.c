/* PROF_SAMPLE in a run with no schedule and no PROF_STEP: the one window
   records from init to shutdown, and is sampled from init on. A region that
   spins 200 ms of its CPU time at 1 kHz holds about 200 samples (at least
   100 here, as the kernel's task-clock sampling is of CPU time, whatever
   the machine's load). Exit 77 where perf_event_open is refused
   (test_sample_refused covers that). */
#define _POSIX_C_SOURCE 200809L
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "../prof.h"
#include "check.h"

#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static int64_t cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(void) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.sample_hz = 1000;
    cfg.output = "nosteps.json";
    PROF_INIT(&cfg);
    {
        PROF_SCOPE("work");
        int64_t end = cpu_ns() + 200000000;
        while (cpu_ns() < end)
            for (int i = 0; i < 100000; i++) sink += (uint64_t)i * 7;
    }
    PROF_SHUTDOWN();
    prof_stats st;
    prof_get_stats(&st);
    char *js = check_slurp("nosteps.json");
    CHECK(js != NULL);
    if (js && strstr(js, "\"refused\": 1")) {
        printf("SKIP: perf_event_open is refused here\n");
        return 77;
    }
    printf("%llu samples of the 200 ms region\n", (unsigned long long)st.samples);
    CHECK(st.samples >= 100);
    CHECK(st.samples_lost == 0);
    return failures ? 1 : 0;
}
