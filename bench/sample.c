/* PROF_SAMPLE's cost (bench/sample.sh): the same loop of regions with
   sampling off and at the rate given, in one window; prints the engine
   thread's CPU time per region, the profiler's thread's CPU time, the
   samples taken and lost, the trace's size, and the process's CPU time
   at its end (what a profiler outside it, perf record, spent is its own
   time less this).
     sample HZ REGIONS OUT.json   (HZ 0: off) */
#define _POSIX_C_SOURCE 200809L
#define PROF_IMPLEMENTATION
#include "../prof.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static void work(long n) {
    uint64_t x = sink;
    for (long i = 0; i < n; i++) x = x * 31 + (uint64_t)i;
    sink = x;
}

static double cpu_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.sample_hz = atoi(argv[1]);
    cfg.output = argv[3];
    cfg.quiet = 1;
    long regions = atol(argv[2]);
    PROF_INIT(&cfg);
    PROF_STEP();                        /* the profiler's thread has opened this one's event */
    struct timespec d = { 0, 50000000 };
    nanosleep(&d, NULL);
    double t0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    for (long r = 0; r < regions; r++) {
        PROF_SCOPE("region");
        work(2000);
        if (r % 10000 == 9999) PROF_STEP();
    }
    double engine = cpu_s(CLOCK_THREAD_CPUTIME_ID) - t0;
    clockid_t wc;
    double worker = -1;
    if (pthread_getcpuclockid(prof__wk.thread, &wc) == 0) worker = cpu_s(wc);
    PROF_SHUTDOWN();
    prof_stats st;
    prof_get_stats(&st);
    struct stat sb;
    long long bytes = stat(argv[3], &sb) == 0 ? (long long)sb.st_size : -1;
    printf("hz %s engine_ns_per_region %.1f engine_s %.4f worker_s %.4f samples %llu lost %llu bytes %lld "
           "proc_s %.4f\n", argv[1], engine * 1e9 / (double)regions, engine, worker, (unsigned long long)st.samples,
           (unsigned long long)st.samples_lost, bytes, cpu_s(CLOCK_PROCESS_CPUTIME_ID));
    return 0;
}
