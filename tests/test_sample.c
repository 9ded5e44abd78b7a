/* PROF_SAMPLE: a window's CPU samples of every thread (>>sample). Three leaf
   functions take 60/30/10% of the main thread's CPU time in the window: the
   samples' innermost frames give those shares; each thread's samples match
   its CPU time at the rate asked; a thread that exits inside the window is
   sampled, then its event is closed; nothing is sampled between windows.
   Built with -O1 -fno-omit-frame-pointer (tests/CMakeLists.txt). Exit 77
   where the kernel refuses perf_event_open (test_sample_refused covers the
   line that says so). */
#define _POSIX_C_SOURCE 200809L
#define PROF_IMPLEMENTATION
#include "../prof.h"
#include "check.h"

#include <pthread.h>
#include <time.h>

#define HZ 1000

static volatile uint64_t sink;

/* The leaves, in this order, and one after them: a sample's innermost
   address belongs to the last of them at or below it. */
__attribute__((noinline)) static void leaf60(long n) { for (long i = 0; i < n; i++) sink = sink * 31 + (uint64_t)i; }
__attribute__((noinline)) static void leaf30(long n) { for (long i = 0; i < n; i++) sink = sink * 37 + (uint64_t)i; }
__attribute__((noinline)) static void leaf10(long n) { for (long i = 0; i < n; i++) sink = sink * 41 + (uint64_t)i; }
__attribute__((noinline)) static void leaf_end(void) { sink++; }
__attribute__((noinline)) static void busy(long n) { for (long i = 0; i < n; i++) sink = sink * 43 + (uint64_t)i; }

static int64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Rounds of 6:3:1 iterations until this thread has spent ms of CPU. */
static void spin_shares(int64_t ms) {
    int64_t end = cpu_ns() + ms * 1000000;
    while (cpu_ns() < end) {
        leaf60(60000);
        leaf30(30000);
        leaf10(10000);
    }
}

/* Reading the thread's CPU time is a system call, and time in the kernel
   is not sampled: it is read every 100000 iterations. */
static void spin(int64_t ms) {
    int64_t end = cpu_ns() + ms * 1000000;
    while (cpu_ns() < end) busy(100000);
}

static long exit_tid;
static int64_t exit_cpu_ms;
static void *short_lived(void *arg) {
    (void)arg;
    exit_tid = (long)syscall(SYS_gettid);
    PROF_THREAD_NAME("short_lived");
    int64_t t0 = cpu_ns();
    { PROF_SCOPE("short_work"); spin(300); }
    exit_cpu_ms = (cpu_ns() - t0) / 1000000;
    return NULL;
}

static long main_tid;
static int cycles;
static long main_samples, exit_samples, in_leaf[3], in_none;
static int exit_still_open, refused;

static void on_ready(const prof_cycle *c, void *user) {
    (void)user;
    const prof__cycle *cy = c;
    cycles++;
    if (!cy->smp) return;
    refused = cy->smp->refused;
    CHECK_EQ(cy->smp->lost, 0);
    CHECK_EQ(cy->smp->period_ns, 1000000000 / HZ);
    uintptr_t a[4] = { (uintptr_t)leaf60, (uintptr_t)leaf30, (uintptr_t)leaf10, (uintptr_t)leaf_end };
    pthread_mutex_lock(&prof__lock);
    for (size_t i = 0; i < cy->smp->n; i++) {
        const prof__sample *s = &cy->smp->s[i];
        long tid = prof__g.rec.tinfo[s->th].tid;
        CHECK(s->nip >= 1);
        if (tid == exit_tid) exit_samples++;
        if (tid != main_tid) continue;
        main_samples++;
        uintptr_t ip = (uintptr_t)cy->smp->ip[s->ip];
        int k = -1;
        for (int f = 0; f < 4; f++)
            if (ip >= a[f] && (k < 0 || a[f] > a[k])) k = f;
        if (k >= 0 && k < 3) in_leaf[k]++;
        else in_none++;
    }
    pthread_mutex_unlock(&prof__lock);
    pthread_mutex_lock(&prof__smp.lock);
    for (size_t i = 0; i < prof__smp.nt; i++) exit_still_open |= prof__smp.t[i].tid == exit_tid;
    pthread_mutex_unlock(&prof__smp.lock);
}

int main(void) {
    main_tid = (long)syscall(SYS_gettid);
    CHECK((uintptr_t)leaf60 < (uintptr_t)leaf30 && (uintptr_t)leaf30 < (uintptr_t)leaf10 &&
          (uintptr_t)leaf10 < (uintptr_t)leaf_end && (uintptr_t)leaf_end < (uintptr_t)busy);   /* the attribution below rests on it */
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.sample_hz = HZ;
    cfg.on_trace_ready = on_ready;
    cfg.schedule.wait = 1;
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    PROF_INIT(&cfg);
    { PROF_SCOPE("before"); spin(150); }      /* step 0 waits: not sampled */
    PROF_STEP();
    int64_t t0 = cpu_ns();
    { PROF_SCOPE("shares"); spin_shares(600); }
    pthread_t th;
    CHECK(pthread_create(&th, NULL, short_lived, NULL) == 0);
    pthread_join(th, NULL);
    PROF_STEP();
    { PROF_SCOPE("shares"); spin_shares(600); }
    int64_t window_ms = (cpu_ns() - t0) / 1000000;
    PROF_STEP();                              /* the window closes, its cycle is saved */
    prof_flush();
    { PROF_SCOPE("after"); spin(200); }       /* between windows: not sampled */
    pthread_mutex_lock(&prof__smp.lock);
    prof__smp_drain_all();
    size_t after = prof__smp.ns;
    pthread_mutex_unlock(&prof__smp.lock);
    PROF_SHUTDOWN();

    if (refused) {
        printf("SKIP: perf_event_open is refused here\n");
        return 77;
    }
    CHECK_EQ(cycles, 1);
    CHECK(after <= 2);                        /* at most those of the closing step's last moment */
    long leaves = in_leaf[0] + in_leaf[1] + in_leaf[2];
    printf("window: %lld ms of main's CPU, %ld samples (%ld in the leaves: %ld %ld %ld; %ld elsewhere); "
           "short_lived: %lld ms, %ld samples; %zu after the window\n", (long long)window_ms, main_samples,
           leaves, in_leaf[0], in_leaf[1], in_leaf[2], in_none, (long long)exit_cpu_ms, exit_samples, after);
    CHECK(main_samples >= window_ms * HZ / 1000 * 85 / 100 && main_samples <= window_ms * HZ / 1000 * 105 / 100);
    CHECK(leaves >= main_samples * 95 / 100);
    if (leaves > 0) {
        double s60 = (double)in_leaf[0] / (double)leaves, s30 = (double)in_leaf[1] / (double)leaves,
               s10 = (double)in_leaf[2] / (double)leaves;
        printf("shares: %.3f %.3f %.3f\n", s60, s30, s10);
        CHECK(s60 > 0.56 && s60 < 0.64);
        CHECK(s30 > 0.26 && s30 < 0.34);
        CHECK(s10 > 0.07 && s10 < 0.13);
    }
    CHECK(exit_samples >= exit_cpu_ms * HZ / 1000 / 2 && exit_samples <= exit_cpu_ms * HZ / 1000 * 105 / 100);
    CHECK(!exit_still_open);
    prof_stats st;
    prof_get_stats(&st);
    CHECK_EQ(st.samples_lost, 0);
    CHECK((long)st.samples >= main_samples + exit_samples);
    return failures != 0;
}
