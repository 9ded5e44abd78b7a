/* Smoke test (placeholder): the implementation builds in a strict C11
   translation unit, every basic macro runs, and the trace it writes is JSON
   that Python reads back with traceEvents in it. */
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>

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
             "\"%s\" -c \"import json; assert json.load(open('smoke.json'))['traceEvents']\"",
             py);
    if (system(cmd) != 0) return fail("smoke.json is not a trace Python reads");
    return 0;
}
