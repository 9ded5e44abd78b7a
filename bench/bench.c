/* Micro-benchmarks of prof.h's hot path and writer.

     bench MODE N     MODE: region | floor | off | write | threads | mem | mem_off

   Prints ns per operation (best of 5 runs of N). bench/run.sh runs every mode
   and adds instruction counts from callgrind, which are exact and repeatable
   on a shared machine where nanoseconds are not. */
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC 1
extern int clock_gettime(int, struct timespec *);
#endif

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static volatile uint64_t sink;

/* The floor: the two timestamp reads every region needs, nothing else. */
__attribute__((noinline)) static void loop_floor(long n) {
    for (long i = 0; i < n; i++) {
        uint64_t a = prof__ticks();
        uint64_t b = prof__ticks();
        sink = b - a;
    }
}

__attribute__((noinline)) static void loop_region(long n) {
    for (long i = 0; i < n; i++) { PROF_SCOPE("region"); }
}

/* One PROF_ALLOC / PROF_FREE pair, as an allocator's hot path makes them:
   the map insert and erase, the totals, and inside a window two memory
   events. 1024 distinct addresses keep the map's shards warm but not trivial. */
static char mem_blocks[1024][64];

__attribute__((noinline)) static void loop_mem(long n) {
    for (long i = 0; i < n; i++) {
        void *p = mem_blocks[i & 1023];
        PROF_ALLOC(p, 64);
        PROF_FREE(p);
    }
}

static void *thread_loop(void *arg) {
    loop_region((long)(intptr_t)arg);
    return NULL;
}

/* Hands every recorded chunk back to the pool, as each saved cycle does in an
   engine: the runs after the first measure the steady state. */
static void recycle(void) {
    pthread_mutex_lock(&prof__lock);
    prof__collect_locked(NULL, 0, (uint64_t)-1);
    pthread_mutex_unlock(&prof__lock);
}

static void two_threads(long n) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, thread_loop, (void *)(intptr_t)n);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}

static void quiet_init(int active_now) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.quiet = 1;
    cfg.output = "bench_trace.json";
    cfg.buffer_mb = 1024;
    if (!active_now) { cfg.schedule.wait = 1; cfg.schedule.active = 1; }  /* step 0: outside */
    PROF_INIT(&cfg);
}

/* Best of 5 runs after a warm-up: on a shared machine the minimum is the
   honest figure. */
static double best_of(void (*fn)(long), long n) {
    double best = 1e300;
    fn(n);
    for (int r = 0; r < 5; r++) {
        recycle();
        double t0 = now_ns();
        fn(n);
        double t = now_ns() - t0;
        if (t < best) best = t;
    }
    return best / n;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s region|floor|off|write|threads|mem|mem_off N\n", argv[0]); return 2; }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    if (!strcmp(mode, "floor")) {
        printf("floor %.2f ns per two timestamp reads\n", best_of(loop_floor, n));
    } else if (!strcmp(mode, "region")) {
        quiet_init(1);
        printf("region %.2f ns per recorded PROF_SCOPE\n", best_of(loop_region, n));
    } else if (!strcmp(mode, "off")) {
        quiet_init(0);
        printf("off %.3f ns per PROF_SCOPE outside a recording window\n", best_of(loop_region, n));
    } else if (!strcmp(mode, "write")) {
        quiet_init(1);
        loop_region(n);
        double t0 = now_ns();
        PROF_SHUTDOWN();
        double t = now_ns() - t0;
        struct stat st;
        stat("bench_trace.json", &st);
        printf("write %.1f ns per event, %.1f bytes per event, %.2f M events/s\n", t / n,
               (double)st.st_size / n, n / t * 1e3);
        return 0;
    } else if (!strcmp(mode, "threads")) {
        quiet_init(1);
        printf("threads %.2f ns per region per thread, 2 threads at once\n", best_of(two_threads, n));
    } else if (!strcmp(mode, "mem")) {
        quiet_init(1);
        printf("mem %.2f ns per recorded PROF_ALLOC/PROF_FREE pair\n", best_of(loop_mem, n));
    } else if (!strcmp(mode, "mem_off")) {
        quiet_init(0);
        printf("mem_off %.2f ns per PROF_ALLOC/PROF_FREE pair outside a recording window\n", best_of(loop_mem, n));
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.disable = 1;                            /* no trace for timing runs */
    cfg.quiet = 1;
    PROF_INIT(&cfg);
    PROF_SHUTDOWN();
    return 0;
}
