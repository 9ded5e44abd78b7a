/* PROF_SAMPLE's samples in Perfetto's format, C++ names, and a library
   closed before its samples are saved (tests/sample/check.py runs it, with
   PROF_SAMPLE=1000):
     native whole LIB   one window of two steps, saved by on_trace_ready as
                        native.json and native.pftrace. Step 0: two C++ hot
                        functions on the main thread and one on a thread
                        named "worker"; step 1: LIB's function (dlopen), then
                        LIB closed (dlclose) before the window's save.
     native stream      the whole run one window, streamed to PROF_OUTPUT
                        (a .pftrace) at each of its three steps.
   Each prints "samples N" (prof_stats.samples) and "lost N", or exits 77
   where perf_event_open is refused. Built with -O1
   -fno-omit-frame-pointer -fno-inline (tests/CMakeLists.txt). */
#define PROF_INTERNALS                  /* prof__smp; the suite's implementation */
#include "../../prof.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static thread_local volatile long sink;   /* each thread its own: no race */

static long cpu_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

namespace hot {
template <typename T> struct Kernel {
    __attribute__((noinline)) static T run(long n) {   /* (unsigned: no overflow) */
        unsigned long x = (unsigned long)sink;
        for (long i = 0; i < n; i++) x = x * 31 + (unsigned long)i + 1;
        return (T)(x & 0x7fffffff);
    }
};
__attribute__((noinline)) long mix(long n, int salt) {
    unsigned long x = (unsigned long)sink;
    for (long i = 0; i < n; i++) x = x * 17 + (unsigned long)(i + salt);
    return (long)(x & 0x7fffffff);
}
}  // namespace hot

/* ms of this thread's CPU time in Kernel<long>::run and as much in mix, in
   turns of 10 ms each: a sampler that starts on this thread late (it opens
   a thread's event at its next look) misses as much of one as of the other */
static void spin_cxx(long ms) {
    for (long done = 0; done < ms; done += 10) {
        long end = cpu_ns() + 10 * 1000000L;
        while (cpu_ns() < end) sink = hot::Kernel<long>::run(50000);
        end = cpu_ns() + 10 * 1000000L;
        while (cpu_ns() < end) sink = hot::mix(50000, 3);
    }
}

/* Whether the profiler's thread samples this thread yet (it opens a new
   thread's event at its next look, a few ms after the thread registers). */
static int sampled_now() {
    long tid = (long)syscall(SYS_gettid);
    int found = 0;
    pthread_mutex_lock(&prof__smp.lock);
    for (size_t i = 0; i < prof__smp.nt; i++) found |= prof__smp.t[i].tid == tid;
    pthread_mutex_unlock(&prof__smp.lock);
    return found;
}

static void *worker(void *) {
    PROF_THREAD_NAME("worker");
    for (int i = 0; i < 10000 && !sampled_now() && __atomic_load_n(&prof__smp.state, __ATOMIC_RELAXED) >= 0; i++) {
        struct timespec d = { 0, 1000000 };     /* until then (bounded: 10 s) */
        nanosleep(&d, NULL);
    }
    PROF_SCOPE("worker_spin");
    long end = cpu_ns() + 150 * 1000000L;
    while (cpu_ns() < end) sink = hot::Kernel<int>::run(50000);
    return NULL;
}

static void on_ready(const prof_cycle *c, void *) {
    if (!prof_cycle_write_trace(c, "native.json") || !prof_cycle_write_trace(c, "native.pftrace"))
        fprintf(stderr, "FAIL: the traces were not written\n");
}

/* Whether the profiler's thread knows a mapping of path (its drains read
   /proc/self/maps again on meeting an address in no mapping it knows). */
static int mapped_known(const char *path) {
    int found = 0;
    pthread_mutex_lock(&prof__smp.lock);
    for (size_t i = 0; i < prof__smp.nmap; i++) found |= strstr(prof__smp.map[i].path, path) != NULL;
    pthread_mutex_unlock(&prof__smp.lock);
    return found;
}

static int mapped_now(const char *path) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096 + 256];
    int found = 0;
    while (f && fgets(line, sizeof line, f)) found |= strstr(line, path) != NULL;
    if (f) fclose(f);
    return found;
}

static int whole(const char *lib) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.on_trace_ready = on_ready;
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    PROF_INIT(&cfg);
    {
        PROF_SCOPE("cxx");
        pthread_t th;
        if (pthread_create(&th, NULL, worker, NULL) != 0) return 1;
        spin_cxx(150);
        pthread_join(th, NULL);
    }
    PROF_STEP();
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: dlopen %s: %s\n", lib, dlerror());
        return 1;
    }
    long (*spin)(long);
    void *sym = dlsym(h, "sample_lib_spin");
    memcpy(&spin, &sym, sizeof spin);
    const char *base = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
    {
        PROF_SCOPE("in_lib");
        /* 200 ms of its CPU, then more until the profiler's thread has seen the
           library's mapping (bounded: 20 s) */
        int i = 0;
        do sink = spin(200);
        while (++i < 100 && !mapped_known(base) && __atomic_load_n(&prof__smp.state, __ATOMIC_RELAXED) >= 0);
    }
    int known = mapped_known(base);
    dlclose(h);
    int gone = !mapped_now(base);
    printf("library: known to the sampler %d, unmapped after dlclose %d\n", known, gone);
    PROF_STEP();                        /* the window closes: saved, the library gone */
    prof_flush();
    PROF_SHUTDOWN();
    return known && gone ? 0 : 1;
}

static int stream() {
    PROF_INIT(NULL);
    for (int s = 0; s < 3; s++) {
        { PROF_SCOPE("cxx"); spin_cxx(60); }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int rc = !strcmp(argv[1], "whole") && argc > 2 ? whole(argv[2]) : !strcmp(argv[1], "stream") ? stream() : 2;
    prof_stats st;
    prof_get_stats(&st);
    if (!st.samples) {
        printf("SKIP: no samples (perf_event_open refused here?)\n");
        return 77;
    }
    printf("samples %llu\nlost %llu\n", (unsigned long long)st.samples, (unsigned long long)st.samples_lost);
    return rc;
}
