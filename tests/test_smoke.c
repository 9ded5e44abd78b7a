/* Smoke test: the implementation builds in a strict C11 translation unit,
   the basic macros run, the version macros agree, and the trace holds
   exactly what was recorded: 3 steps of one step region, one work region and
   10 inner regions each, and 3 counter samples, read back by Python's json. */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "test_smoke: %s\n", what);
    return 1;
}

static long work(int n) {
    PROF_FUNCTION();
    long s = 0;
    for (int i = 0; i < n; i++) {
        PROF_SCOPE("inner");
        s += i;
    }
    return s;
}

int main(void) {
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", PROF_VERSION_MAJOR, PROF_VERSION_MINOR, PROF_VERSION_PATCH);
    if (strcmp(version, PROF_VERSION) != 0) return fail("PROF_VERSION does not match its parts");
    if (PROF_VERSION_NUM != PROF_VERSION_MAJOR * 10000 + PROF_VERSION_MINOR * 100 + PROF_VERSION_PATCH)
        return fail("PROF_VERSION_NUM does not match its parts");
    prof_config cfg = {0};
    cfg.output = "smoke.json";
    cfg.quiet = 1;
    PROF_INIT(&cfg);
    PROF_THREAD_NAME("main");
    long s = 0;
    for (int step = 0; step < 3; step++) {
        {
            PROF_SCOPE("step");
            s += work(10);
            PROF_COUNTER("sum", s);
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();

    prof_stats st;
    prof_get_stats(&st);
    if (st.traces_written < 1) return fail("no trace written");
    if (st.dropped != 0) return fail("events dropped");

    const char *py = getenv("PROF_TEST_PY");
    if (!py) return fail("PROF_TEST_PY is not set");
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "\"%s\" -c \"import json, collections; ev = json.load(open('smoke.json'))['traceEvents']; "
             "n = collections.Counter((e['ph'], e['name'].split('#')[0]) for e in ev if e['ph'] in 'XC'); "
             "want = {('X', 'ProfilerStep'): 3, ('X', 'step'): 3, ('X', 'work'): 3, ('X', 'inner'): 30, "
             "('C', 'sum'): 3}; assert n == want, n\"",
             py);
    if (system(cmd) != 0) return fail("smoke.json is not a trace Python reads");
    return 0;
}
