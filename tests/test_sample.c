/* PROF_SAMPLE: a window's CPU samples of every thread (>>sample). Three leaf
   functions take 60/30/10% of the main thread's CPU time in the window: the
   samples' innermost frames give those shares; each thread's samples match
   its task-clock at the rate asked, and belongs to the innermost region
   open on its thread then and to its step; a region that sleeps half its
   time has samples for its time on the CPU only; a thread that exits
   inside the window is sampled, then its event is closed; a fork's child
   leaves the parent's sampling as it was; nothing is sampled between
   windows.
   Built with -O1 -fno-omit-frame-pointer (tests/CMakeLists.txt). Exit 77
   where the kernel refuses perf_event_open (test_sample_refused covers the
   line that says so). */
#define _POSIX_C_SOURCE 200809L
#define PROF_INTERNALS                  /* prof__smp; the suite's implementation */
#include "../prof.h"
#include "check.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HZ 1000

static volatile uint64_t sink;

/* The leaves, in this order, and one after them: a sample's innermost
   address belongs to the last of them at or below it. Their loops touch no
   memory, so that a sanitizer's calls are not the innermost frames, and
   cost the same per iteration. */
__attribute__((noinline, aligned(64))) static void leaf60(long n) {
    uint64_t x = sink;
    for (long i = 0; i < n; i++) x = x * 31 + (uint64_t)i + 1;
    sink = x;
}
__attribute__((noinline, aligned(64))) static void leaf30(long n) {
    uint64_t x = sink;
    for (long i = 0; i < n; i++) x = x * 31 + (uint64_t)i + 2;
    sink = x;
}
__attribute__((noinline, aligned(64))) static void leaf10(long n) {
    uint64_t x = sink;
    for (long i = 0; i < n; i++) x = x * 31 + (uint64_t)i + 3;
    sink = x;
}
__attribute__((noinline, aligned(64))) static void leaf_end(void) { sink++; }
__attribute__((noinline, aligned(64))) static void busy(long n) {
    uint64_t x = sink;
    for (long i = 0; i < n; i++) x = x * 31 + (uint64_t)i + 4;
    sink = x;
}

static int64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The thread's task-clock as perf counts it, in ns: the clock the samples
   are taken on. It runs while the thread is scheduled in, so it also holds
   the time a hypervisor steals from a running thread and the interrupts
   taken on it, which CLOCK_THREAD_CPUTIME_ID leaves out: a loaded host's
   samples are counted against it. CPU time where perf refuses (the test
   then skips). */
static int64_t task_clock_ns(void) {
    static __thread int fd = -2;
    if (fd == -2) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0UL);
    }
    uint64_t v;
    if (fd < 0 || read(fd, &v, sizeof v) != (ssize_t)sizeof v) return cpu_ns();
    return (int64_t)v;
}

/* Rounds of 6:3:1 of CPU time until this thread has spent ms of it; each
   leaf's CPU time measured, the shares the samples must give. A visit to a
   leaf lasts several sampling periods (its round's unit u is 2 to 6 ms of
   random length, no beat against the period), so that a leaf's count is
   off by less than one sample a visit, not by a coin's toss a visit as
   visits shorter than the period would be. The leaves run in calls of
   CHUNK iterations with the clock read between them: reading it is a
   system call, and time in the kernel is not sampled. */
#define CHUNK 50000
static int64_t leaf_ns[3];
static void run_leaf(int which, int64_t ns) {
    int64_t t = cpu_ns(), end = t + ns, u;
    do {
        if (which == 0) leaf60(CHUNK);
        else if (which == 1) leaf30(CHUNK);
        else leaf10(CHUNK);
    } while ((u = cpu_ns()) < end);
    leaf_ns[which] += u - t;
}
static void spin_shares(int64_t ms) {
    int64_t end = cpu_ns() + ms * 1000000;
    uint32_t r = 12345;
    while (cpu_ns() < end) {
        r = r * 1103515245u + 12345u;
        int64_t unit = 2000000 + (int64_t)((r >> 8) % 4000000);
        run_leaf(0, 6 * unit);
        run_leaf(1, 3 * unit);
        run_leaf(2, unit);
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
    int64_t t0 = task_clock_ns();
    { PROF_SCOPE("short_work"); spin(300); }
    exit_cpu_ms = (task_clock_ns() - t0) / 1000000;
    return NULL;
}

/* Half of each 10 ms on the CPU, half asleep. */
static int64_t asleep_cpu_ms;
static void half_asleep(void) {
    PROF_SCOPE("half_asleep");
    int64_t t0 = task_clock_ns();
    for (int i = 0; i < 30; i++) {
        spin(5);
        struct timespec d = { 0, 5000000 };
        nanosleep(&d, NULL);
    }
    asleep_cpu_ms = (task_clock_ns() - t0) / 1000000;
}

static long main_tid;
static int cycles;
static long main_samples, exit_samples, in_leaf[3], in_none;
static long by_region[4], by_step[3], no_step;   /* shares, short_work, half_asleep, other; steps 1, 2, other */
static int64_t asleep_wall_ms;
static int exit_still_open, refused;

static size_t saved_samples;
static void on_ready(const prof_cycle *c, void *user) {
    (void)user;
    const prof__cycle *cy = c;
    cycles++;
    if (!cy->smp) return;
    saved_samples = cy->smp->n;
    CHECK(prof_cycle_write_trace(c, "sample.json"));
    CHECK(prof_cycle_write_stacks(c, "sample.folded"));
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
        const char *r = s->region == PROF__NO_EVENT ? "" : cy->ev[s->region].name;
        int ri = !strcmp(r, "shares") ? 0 : !strcmp(r, "short_work") ? 1 : !strcmp(r, "half_asleep") ? 2 : 3;
        by_region[ri]++;
        CHECK(ri != 1 || tid == exit_tid);
        CHECK(ri != 3 || (s->region != PROF__NO_EVENT && cy->ev[s->region].kind == PROF__K_STEP) ||
              s->region == PROF__NO_EVENT);
        if (s->step == PROF__NO_EVENT) no_step++;
        else if (cy->ev[s->step].aux == 1 || cy->ev[s->step].aux == 2) by_step[cy->ev[s->step].aux - 1]++;
        else by_step[2]++;
        if (ri == 2 && !asleep_wall_ms)
            asleep_wall_ms = (prof__tick_ns(cy->ev[s->region].t1) - prof__tick_ns(cy->ev[s->region].t0)) / 1000000;
        if (tid != main_tid || ri == 2) continue;
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
          (uintptr_t)leaf10 < (uintptr_t)leaf_end && (uintptr_t)leaf_end < (uintptr_t)busy);
    /* (the attribution below rests on that order) */
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
    int64_t t0 = task_clock_ns();
    { PROF_SCOPE("shares"); spin_shares(600); }
    pthread_t th;
    CHECK(pthread_create(&th, NULL, short_lived, NULL) == 0);
    pthread_join(th, NULL);
    PROF_STEP();
    pid_t child = fork();               /* the child samples nothing, and leaves the parent's events on */
    if (child == 0) {
        spin(50);
        _exit(0);
    }
    CHECK(child > 0);
    int status = -1;
    CHECK(child < 0 || (waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0));
    { PROF_SCOPE("shares"); spin_shares(600); }
    int64_t window_ms = (task_clock_ns() - t0) / 1000000;
    half_asleep();
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
        double all = (double)(leaf_ns[0] + leaf_ns[1] + leaf_ns[2]), m60 = (double)leaf_ns[0] / all,
               m30 = (double)leaf_ns[1] / all, m10 = (double)leaf_ns[2] / all;
        printf("shares: %.3f %.3f %.3f; measured: %.3f %.3f %.3f\n", s60, s30, s10, m60, m30, m10);
        CHECK(m60 > 0.5 && m60 < 0.7 && m10 > 0.05 && m10 < 0.15);   /* about 60/30/10 */
        CHECK(s60 > m60 - 0.03 && s60 < m60 + 0.03);
        CHECK(s30 > m30 - 0.03 && s30 < m30 + 0.03);
        CHECK(s10 > m10 - 0.03 && s10 < m10 + 0.03);
    }
    CHECK(exit_samples >= exit_cpu_ms * HZ / 1000 / 2 && exit_samples <= exit_cpu_ms * HZ / 1000 * 105 / 100);
    CHECK(!exit_still_open);
    printf("regions: shares %ld, short_work %ld, half_asleep %ld (%lld ms of CPU in %lld ms), other %ld; "
           "steps: %ld %ld, other %ld, none %ld\n", by_region[0], by_region[1], by_region[2],
           (long long)asleep_cpu_ms, (long long)asleep_wall_ms, by_region[3], by_step[0], by_step[1], by_step[2],
           no_step);
    CHECK(by_region[0] >= main_samples * 97 / 100);   /* the leaves run inside "shares" */
    CHECK(by_region[1] <= exit_samples && by_region[1] >= exit_samples - 5);  /* its few lines outside it */
    CHECK(by_region[3] <= 10);
    CHECK(by_region[2] >= asleep_cpu_ms * 85 / 100 && by_region[2] <= asleep_cpu_ms * 105 / 100);
    CHECK(by_region[2] * 1000 / HZ <= asleep_wall_ms * 6 / 10);   /* off the CPU half its time */
    CHECK(by_step[0] >= (main_samples + exit_samples) / 2 * 80 / 100);  /* 600 + 300 ms in step 1 */
    CHECK(by_step[1] >= (main_samples + exit_samples) / 3 * 80 / 100);  /* 600 ms + half_asleep in step 2 */
    CHECK_EQ(by_step[2], 0);
    CHECK_EQ(no_step, 0);
    /* the JSON's prof_samples: every sample, and this program's mapping with its build id */
    static char js[64 << 20];
    FILE *f = fopen("sample.json", "rb");
    CHECK(f != NULL);
    size_t n = f ? fread(js, 1, sizeof js - 1, f) : 0;
    if (f) fclose(f);
    js[n] = 0;
    CHECK(strstr(js, "\"prof_samples\": {\"period_ns\": 1000000, \"lost\": 0, \"refused\": 0") != NULL);
    size_t lines = 0;
    for (const char *p = strstr(js, "\"samples\": ["); p && (p = strstr(p, "\n      [")) != NULL; p++) lines++;
    CHECK_EQ(lines, saved_samples);
    char exe[4096], want[4096 + 64];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(len > 0);
    exe[len > 0 ? len : 0] = 0;
    snprintf(want, sizeof want, "{\"path\": \"%s\", \"start\": \"0x", exe);
    const char *m = strstr(js, want);
    CHECK(m != NULL);
    if (m) {
        const char *b = strstr(m, "\"build_id\": \"");
        CHECK(b && b[14] != '"');         /* the linker's build id, read from the file */
    }
    /* the folded stacks: the samples of "shares" under it, this program's frames inside */
    f = fopen("sample.folded", "r");
    CHECK(f != NULL);
    char line[8192];
    long long shares_us = 0, shares_all = 0, asleep_us = 0, asleep_self = -1;
    while (f && fgets(line, sizeof line, f)) {
        char *sp = strrchr(line, ' ');
        long long v = sp ? atoll(sp + 1) : 0;
        CHECK(v > 0);
        if (!strncmp(line, "ProfilerStep*;shares;", 21)) shares_all += v;
        if (!strncmp(line, "ProfilerStep*;shares;", 21) && strstr(line, ";test_sample+0x")) shares_us += v;
        if (!strncmp(line, "ProfilerStep*;half_asleep;", 26) && strstr(line, ";test_sample+0x")) asleep_us += v;
        if (sp && sp - line > 12 && !strncmp(sp - 12, ";half_asleep", 12)) asleep_self = v;
    }
    if (f) fclose(f);
    printf("folded: shares %lld us, half_asleep %lld us sampled and %lld us not\n", shares_us, asleep_us,
           asleep_self);
    CHECK_EQ(shares_all, by_region[0] * 1000);
    CHECK(shares_us >= shares_all * 97 / 100);   /* inside this program's code */
    CHECK(asleep_us >= by_region[2] * 1000 * 97 / 100 && asleep_us <= by_region[2] * 1000);
    CHECK(asleep_self > 0);                   /* its time off the CPU is its own */
    /* prof table group=function: the three leaves by name, from the ELF symbols, with their shares */
    const char *tool = getenv("PROF_TEST_TOOL");
    if (tool && tool[0]) {
        char cmd[4096 + 64];
        snprintf(cmd, sizeof cmd, "'%s' table sample.json group=function", tool);
        FILE *pf = popen(cmd, "r");
        CHECK(pf != NULL);
        int named = 0;
        long total = 0;
        while (pf && fgets(line, sizeof line, pf)) {
            char region[64], fn[1024];     /* a sanitizer's C++ names run long, with spaces */
            long cnt;
            double share;
            int at = 0, end;
            fputs(line, stdout);
            if (sscanf(line, "%63s %n", region, &at) != 1 || !at) continue;
            char *sp = strrchr(line, ' ');             /* the share, then the count before it */
            while (sp && sp > line && sp[-1] == ' ') sp--;
            char *cp = sp ? sp : line;
            while (cp > line + at && cp[-1] != ' ') cp--;
            if (!sp || cp <= line + at || sscanf(cp, "%ld %lf%%", &cnt, &share) != 2) continue;
            for (end = (int)(cp - line); end > at && line[end - 1] == ' '; end--) {}
            snprintf(fn, sizeof fn, "%.*s", end - at, line + at);
            if (!strcmp(region, "shares") && !strncmp(fn, "leaf", 4)) {
                int k = !strcmp(fn, "leaf60") ? 0 : !strcmp(fn, "leaf30") ? 1 : !strcmp(fn, "leaf10") ? 2 : -1;
                CHECK(k >= 0);
                if (k >= 0) { CHECK_EQ(cnt, in_leaf[k]); named++; }
            }
            if (!strcmp(region, "half_asleep") && !strcmp(fn, "busy")) CHECK(share > 95);
            total += cnt;
        }
        CHECK(pf && pclose(pf) == 0);
        CHECK_EQ(named, 3);
        CHECK_EQ(total, (long)saved_samples);
    } else {
        printf("prof table group=function: not checked (no prof tool in this build)\n");
    }
    prof_stats st;
    prof_get_stats(&st);
    CHECK_EQ(st.samples_lost, 0);
    CHECK((long)st.samples >= main_samples + exit_samples);
    return failures != 0;
}
