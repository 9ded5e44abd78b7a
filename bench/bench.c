/* Micro-benchmarks of prof.h's hot path and writer.

     bench MODE N     MODE: region | floor | off | write | threads | mem | mem_off |
                            gpu_floor | gpu_region | gpu_resolve
     bench dyn N            PROF_SCOPE_DYN of 48 names made at run time
     bench fresh N          region, recording into new memory (one long cycle)
                            instead of recycled chunks
     bench write N PATH     the trace written to PATH (.json, .json.gz, .pftrace)
     bench run N PATH       N regions in 1000 steps, no schedule, 1 GiB cap: the
                            whole run's time and peak RSS (a streamed .pftrace
                            against a trace written at the end)
     bench steps R PATH     60 steps of R regions, the mode as the environment
                            sets it (PROF_SCHEDULE, PROF_FLIGHT; PATH's
                            extension picks the format): what the engine's
                            thread pays, each PROF_STEP() call's time (p50,
                            p99, max) and its whole time per region

   Prints ns per operation (best of 5 runs of N). bench/run.sh runs every mode
   and adds instruction counts from callgrind, which are exact and repeatable
   on a shared machine where nanoseconds are not. */
#define _GNU_SOURCE                    /* RUSAGE_THREAD: page faults of the recording thread */
#ifdef PROF_TEST_SHARED_IMPL           /* in the suite: its implementation, entered from here */
#define PROF_INTERNALS
#else
#define PROF_IMPLEMENTATION
#endif
#include "prof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/* Names made at run time, as an engine names its layers: 48 of them. */
static char dyn_names[48][24];

__attribute__((noinline)) static void loop_dyn(long n) {
    for (long i = 0; i < n; i++) { PROF_SCOPE_DYN(dyn_names[i % 48]); }
}

/* A GPU runtime that does nothing: what is left of a GPU region is the
   profiler's own host cost, beyond the two event records an engine would
   pay for anyway (gpu_floor). */
static int null_count(int *n) { *n = 1; return 0; }
static int null_dev(int *d) { *d = 0; return 0; }
static int null_set(int d) { (void)d; return 0; }
static int null_props(int d, prof_gpu_props *p) { (void)d; memset(p, 0, sizeof *p); return 0; }
static int null_stream_info(void *s, int *d, long long *id) { (void)s; *d = 0; *id = 7; return 0; }
static int null_create(void **x) { static char obj; *x = &obj; return 0; }
static int null_destroy(void *x) { (void)x; return 0; }
__attribute__((noinline)) static int null_record(void *ev, void *s) { (void)ev; (void)s; sink++; return 0; }
static int null_query(void *ev) { (void)ev; return 0; }
static int null_elapsed(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0.001f; return 0; }
static const char *null_str(int e) { (void)e; return "none"; }
static const prof_gpu_api null_api = {
    "null", 600, null_count, null_dev, null_set, null_props, null_stream_info, null_create, null_destroy,
    null_create, null_destroy, null_record, null_query, null_destroy, null_elapsed, null_str, null_str, NULL, NULL, NULL,
    NULL, NULL, NULL,
};
#define GPU_BATCH 50000L                /* regions between resolutions */

__attribute__((noinline)) static void loop_gpu_floor(long n) {
    for (long i = 0; i < n; i++) {
        null_api.event_record(NULL, NULL);
        null_api.event_record(NULL, NULL);
    }
}

__attribute__((noinline)) static void loop_gpu_region(long n) {
    for (long i = 0; i < n; i++) {
        prof_gpu_begin(&null_api, "gpu", NULL);
        prof_gpu_end(&null_api, NULL);
    }
}

/* Fills the ring's slots that the 7 rounds of n regions after it will use
   (the whole ring at most), so that every one has its events (made once). */
__attribute__((noinline)) static void warm_gpu(long n) {
    for (long i = 0; i < 7 * n && i < 65536; i++) {
        prof_gpu_begin(&null_api, "gpu", NULL);
        prof_gpu_end(&null_api, NULL);
    }
}

/* Resolution, as a step's job does it on the profiler's thread: query, two
   elapsed times per pair. */
__attribute__((noinline)) static void gpu_resolve(void) {
    pthread_mutex_lock(&prof__wk_lock);
    prof__gpu_drain(__atomic_load_n(&prof__gpu.gen, __ATOMIC_ACQUIRE), 0, UINT64_MAX);
    pthread_mutex_unlock(&prof__wk_lock);
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
    pthread_mutex_lock(&prof__wk_lock);     /* as the profiler's thread collects */
    prof__collect(NULL, 0, (uint64_t)-1);
    prof__gpu.nres = 0;                     /* the GPU results, the profiler's thread's too */
    pthread_mutex_unlock(&prof__wk_lock);
}

static void two_threads(long n) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, thread_loop, (void *)(intptr_t)n);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}

static const char *out_path = "bench_trace.json";

static unsigned long long stats_dropped(void) {
    prof_stats st;
    prof_get_stats(&st);
    return (unsigned long long)st.dropped;
}

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* What the engine's thread pays in a mode: R regions a step for 60 steps,
   each PROF_STEP() timed on this thread, and the whole loop's time. */
static void steps_mode(long r) {
    enum { STEPS = 60 };
    double call[STEPS], t0 = now_ns();
    for (int s = 0; s < STEPS; s++) {
        loop_region(r);
        double c0 = now_ns();
        PROF_STEP();
        call[s] = now_ns() - c0;
    }
    double total = now_ns() - t0;
    PROF_SHUTDOWN();                    /* not the engine's time: after its loop */
    qsort(call, STEPS, sizeof call[0], dbl_cmp);
    printf("steps %ld regions/step: step call p50 %.3f ms p99 %.3f ms max %.3f ms, engine %.2f ns per region, "
           "%llu dropped\n", r, call[STEPS / 2] / 1e6, call[STEPS * 99 / 100] / 1e6, call[STEPS - 1] / 1e6,
           total / ((double)r * STEPS), stats_dropped());
}

static void quiet_init(int active_now) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.quiet = 1;
    cfg.output = out_path;
    cfg.buffer_mb = 1024;
    if (!active_now) { cfg.schedule.wait = 1; cfg.schedule.active = 1; }  /* step 0: outside */
    PROF_INIT(&cfg);
}

static long faults_here(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt;
}

static double faults_per_k;             /* page faults in the timed loops, per 1000 iterations */

/* Best of 5 runs after a warm-up: on a shared machine the minimum is the
   honest figure. fresh: the records go to new memory every run (one long
   cycle), not to chunks the last run filled and the collector gave back. */
static double best_of_mode(void (*fn)(long), long n, int fresh) {
    double best = 1e300;
    long faults = 0;
    fn(n);
    for (int r = 0; r < 5; r++) {
        if (!fresh) recycle();
        long f0 = faults_here();
        double t0 = now_ns();
        fn(n);
        double t = now_ns() - t0;
        faults += faults_here() - f0;
        if (t < best) best = t;
    }
    faults_per_k = faults * 1000.0 / (5.0 * n);
    return best / n;
}

static double best_of(void (*fn)(long), long n) { return best_of_mode(fn, n, 0); }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s region|floor|off|write|threads|mem|mem_off N\n", argv[0]); return 2; }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    if (argc > 3) out_path = argv[3];  /* write: the trace's path, whose extension is its format */
    if (!strcmp(mode, "floor")) {
        printf("floor %.2f ns per two timestamp reads\n", best_of(loop_floor, n));
    } else if (!strcmp(mode, "region") || !strcmp(mode, "fresh")) {
        quiet_init(1);
        double t = best_of_mode(loop_region, n, !strcmp(mode, "fresh"));
        printf("%s %.2f ns per recorded PROF_SCOPE, %.3f page faults per 1000 in the loop\n", mode, t, faults_per_k);
    } else if (!strcmp(mode, "dyn")) {
        for (int i = 0; i < 48; i++) snprintf(dyn_names[i], sizeof dyn_names[i], "layer.%d.attn", i);
        quiet_init(1);
        printf("dyn %.2f ns per recorded PROF_SCOPE_DYN\n", best_of(loop_dyn, n));
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
        stat(out_path, &st);
        printf("write %.1f ns per event, %.1f bytes per event, %.2f M events/s\n", t / n,
               (double)st.st_size / n, n / t * 1e3);
        return 0;
    } else if (!strcmp(mode, "steps")) {
        quiet_init(1);
        steps_mode(n);
        return 0;
    } else if (!strcmp(mode, "run")) {
        quiet_init(1);
        double t0 = now_ns();
        for (int s = 0; s < 1000; s++) {
            loop_region(n / 1000);
            PROF_STEP();
        }
        PROF_SHUTDOWN();
        double t = now_ns() - t0;
        struct stat st;
        struct rusage ru;
        stat(out_path, &st);
        getrusage(RUSAGE_SELF, &ru);
        printf("run %.2f s, peak RSS %ld MB, %.1f bytes per region, %llu dropped\n", t / 1e9, ru.ru_maxrss / 1024,
               (double)st.st_size / n, (unsigned long long)stats_dropped());
        return 0;
    } else if (!strcmp(mode, "gpu_floor")) {
        printf("gpu_floor %.2f ns per two event records (null runtime)\n", best_of(loop_gpu_floor, n));
    } else if (!strcmp(mode, "gpu_region")) {
        quiet_init(1);
        if (n > GPU_BATCH) n = GPU_BATCH;   /* a ring's worth between resolutions */
        warm_gpu(n);
        double t = 1e300;
        for (int r = 0; r < 6; r++) {
            recycle();
            gpu_resolve();
            double t0 = now_ns();
            loop_gpu_region(n);
            double d = now_ns() - t0;
            if (d < t) t = d;
        }
        printf("gpu_region %.2f ns per recorded GPU region (null runtime)\n", t / n);
    } else if (!strcmp(mode, "gpu_resolve")) {
        quiet_init(1);
        double t = 1e300;
        if (n > GPU_BATCH) n = GPU_BATCH;
        warm_gpu(n);
        for (int r = 0; r < 6; r++) {
            recycle();
            gpu_resolve();
            loop_gpu_region(n);
            double t0 = now_ns();
            gpu_resolve();
            double d = now_ns() - t0;
            if (d < t) t = d;
        }
        printf("gpu_resolve %.2f ns per GPU region resolved at a step (null runtime)\n", t / n);
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
