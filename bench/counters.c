/* PROF_COUNTERS's cost on the engine's thread: STEPS steps of one empty
   region and a 1 ms sleep each (the profiler's thread waits between them,
   as it does between an engine's steps), in one window, with the counters
   set or not (the environment decides); the time per PROF_STEP (median of
   the steps' calls, CLOCK_MONOTONIC around each) and the profiler's
   thread's CPU time over the run, per step, printed as
     counters: <PROF_COUNTERS or off>  <ns per step call> ... <profiler's thread per step>
   Under callgrind (--toggle-collect=prof_step) the same program gives the
   step's instructions.
     counters STEPS */
#define _POSIX_C_SOURCE 200809L
#define PROF_IMPLEMENTATION
#include "prof.h"
#include <time.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 1000;
    int64_t *t = (int64_t *)malloc((size_t)steps * sizeof *t);
    if (!t || steps < 1) return 1;
    PROF_INIT(NULL);
    for (int s = 0; s < steps; s++) {
        { PROF_SCOPE("region"); }
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
        int64_t t0 = now_ns();
        PROF_STEP();
        t[s] = now_ns() - t0;
    }
    clockid_t wk;                       /* the profiler's thread's CPU time, before it is joined */
    int64_t wk_ns = 0;
    if (__atomic_load_n(&prof__wk.running, __ATOMIC_ACQUIRE) && pthread_getcpuclockid(prof__wk.thread, &wk) == 0) {
        struct timespec ts;
        clock_gettime(wk, &ts);
        wk_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    PROF_SHUTDOWN();
    qsort(t, (size_t)steps, sizeof *t, cmp);
    const char *c = getenv("PROF_COUNTERS");
    printf("counters: %s  %lld ns per step call (median of %d); profiler's thread %.0f ns of CPU per step\n",
           c && *c ? c : "off", (long long)t[steps / 2], steps, (double)wk_ns / steps);
    free(t);
    return 0;
}
