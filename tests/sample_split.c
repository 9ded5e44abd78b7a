/* A program whose hot function's share of the CPU time is its argument,
   for prof diff group=function (tests/test_sample_readers.py): one window
   of one step whose region "work" runs hot() for PCT% of MS ms of CPU time
   and cold() for the rest, sampled at 1 kHz (PROF_SAMPLE=1000), its JSON
   trace written to OUT. It prints the CPU time each function took, as
   measured on the thread's clock, for the checker to hold the samples'
   shares against.
     sample_split PCT MS OUT
   Built with -O1 -fno-omit-frame-pointer -fno-inline (tests/CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L
#include "prof.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t sink;

/* Their loops touch no memory, so that a sanitizer's calls are not the
   innermost frames. */
__attribute__((noinline)) static void hot(long n) {
    uint64_t x = sink;
    for (long i = 0; i < n; i++) x = x * 31 + (uint64_t)i + 1;
    sink = x;
}
__attribute__((noinline)) static void cold(long n) {
    uint64_t x = sink;
    for (long i = 0; i < n; i++) x = x * 31 + (uint64_t)i + 2;
    sink = x;
}

static int64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One function for ns of CPU time, in calls of CHUNK iterations with the
   clock read between them (a visit lasts several sampling periods). */
#define CHUNK 50000
static int64_t spent[2];
static void run(int which, int64_t ns) {
    int64_t t = cpu_ns(), end = t + ns, u;
    do {
        if (which == 0) hot(CHUNK);
        else cold(CHUNK);
    } while ((u = cpu_ns()) < end);
    spent[which] += u - t;
}

static const char *g_out;
static void on_ready(const prof_cycle *c, void *user) {
    (void)user;
    if (!prof_cycle_write_trace(c, g_out)) fprintf(stderr, "sample_split: cannot write %s\n", g_out);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: sample_split PCT MS OUT\n");
        return 2;
    }
    int64_t pct = atoll(argv[1]), ms = atoll(argv[2]);
    g_out = argv[3];
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.sample_hz = 1000;
    cfg.on_trace_ready = on_ready;
    cfg.schedule.wait = 1;
    cfg.schedule.active = 1;
    cfg.schedule.repeat = 1;
    PROF_INIT(&cfg);
    PROF_STEP();                        /* step 0 waits: the window is step 1 */
    {
        PROF_SCOPE("work");
        int64_t end = cpu_ns() + ms * 1000000;
        uint32_t r = 4321;
        while (cpu_ns() < end) {        /* rounds of 8 to 24 ms of random length: no beat with the period */
            r = r * 1103515245u + 12345u;
            int64_t unit = 80000 + (int64_t)((r >> 8) % 160000);
            run(0, pct * unit);
            run(1, (100 - pct) * unit);
        }
    }
    PROF_STEP();
    PROF_SHUTDOWN();
    printf("hot %lld cold %lld\n", (long long)spent[0], (long long)spent[1]);
    return 0;
}
