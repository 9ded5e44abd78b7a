/* merge_ranks RANK ROUNDS: one rank of a two-rank run, for test_merge.py's
   "real" case. Each round does some work (more on rank 1, so the ranks reach
   the barrier at different times), says "ready K" on stdout and waits for a
   line on stdin: test_merge.py answers both ranks only when both are ready,
   which makes a barrier, and PROF_SYNC() follows it as in a real engine. */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static void work(long n) {
    PROF_SCOPE("work");
    double s = 0;
    for (long i = 0; i < n; i++) s += (double)i * 0.5;
    sink = s;
}

int main(int argc, char **argv) {
    int rank = argc > 1 ? atoi(argv[1]) : 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    char line[64];
    PROF_SET_RANK(rank, 2);
    PROF_THREAD_NAME("main");
    for (int k = 0; k < rounds; k++) {
        work(200000L * (rank + 1));
        PROF_INSTANT("arrive");
        printf("ready %d\n", k);
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin)) return 1;
        PROF_SYNC();
        PROF_COUNTER("round", k);
    }
    PROF_SHUTDOWN();
    return 0;
}
