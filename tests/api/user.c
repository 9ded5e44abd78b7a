/* An engine's use of prof.h's public types and functions, with no #if
   around it: a config, a trace-ready handler that prints the cycle's table
   and writes its trace, the statistics and leaks read at the end. check.sh
   builds it as C11 and C++17, with PROF_ENABLE defined, =1, =0 and absent,
   and runs it: enabled it must write its trace (argv[1]), disabled nothing.

   It prints one line the check reads: "cycles C events E leaks L". */
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *trace_path = "api_trace.json";
static int cycles_seen, write_failed;

/* What an engine does with a finished cycle: its table, and its trace
   written where the engine wants it (the handler replaces cfg.output). */
static void engine_trace_ready(const prof_cycle *c, void *user_data) {
    (void)user_data;
    prof_table t;
    if (prof_cycle_table(c, PROF_SORT_SELF_CPU, PROF_GROUP_ARGS, &t)) prof_table_print(&t, stderr, 10);
    prof_table_free(&t);
    if (!prof_cycle_write_trace(c, trace_path)) write_failed = 1;
    cycles_seen++;
}

static double matmul(const double *a, const double *b, double *out, int n) {
    PROF_SCOPE("matmul");
    PROF_ARG_INT("n", n);
    PROF_FLOPS(2 * n * n * n);
    double sum = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int k = 0; k < n; k++) acc += a[i * n + k] * b[k * n + j];
            out[i * n + j] = acc;
            sum += acc;
        }
    return sum;
}

int main(int argc, char **argv) {
    if (argc > 1) trace_path = argv[1];
#ifdef __cplusplus
    prof_config cfg{};                  /* designated initialisers are C++20 */
    cfg.output = "unused_{cycle}.json";
    cfg.quiet = 1;
    cfg.schedule.wait = 1;
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    cfg.on_trace_ready = engine_trace_ready;
#else
    prof_config cfg = {
        .output = "unused_{cycle}.json",  /* not written: the handler writes */
        .quiet = 1,
        .schedule = { .wait = 1, .active = 2, .repeat = 1 },
        .on_trace_ready = engine_trace_ready,
    };
#endif
    PROF_INIT(&cfg);

    enum { N = 24 };
    static double a[N * N], b[N * N], out[N * N];
    for (int i = 0; i < N * N; i++) {
        a[i] = i % 7;
        b[i] = i % 5;
    }
    double sum = 0;
    for (int step = 0; step < 4; step++) {
        {
            PROF_SCOPE("train_step");
            void *scratch = malloc(4096);
            if (!scratch) return 2;
            PROF_ALLOC(scratch, 4096);
            sum += matmul(a, b, out, N);
            PROF_COUNTER("sum", sum);
            PROF_FREE(scratch);
            free(scratch);
        }
        PROF_STEP();
    }

    prof_stats st;
    if (!prof_flush()) return 3;        /* the saved cycle is written: its events are in the stats */
    prof_get_stats(&st);
    prof_leak leaks[4];
    size_t nleaks = prof_leaks(leaks, 4);
    int64_t live = prof_mem_allocated(-1);
    PROF_SHUTDOWN();
    printf("cycles %d events %" PRIu64 " leaks %zu live %" PRId64 " (sum %.0f)\n", cycles_seen, st.events,
           nleaks, live, sum);
    return write_failed ? 1 : 0;
}
