/* PROF_COUNTERS: each thread's CPU counters per recorded step
   (>>counters), for real, with no double. The main thread's steps each
   hold a region that spins SPIN_MS of its CPU time then sleeps SLEEP_MS,
   SLEEPS times: its task-clock per window is its CPU time as the thread
   measures it (within 10% and 5 ms). The reads are made at the steps'
   hand-off, on the profiler's thread, as late as a loaded machine runs it:
   so the main thread waits in prof_flush where a window opens (its first
   read made) and after its last step (the last read made, the window
   saved), and what it counts does not depend on the machine's speed. Its
   waiting (the steps' wall time minus
   task-clock) at least 80% of its sleeps, and, with this machine's load,
   on-CPU against wall time the ratio the thread measures (within 0.1). Its
   context switches are at least its sleeps (those of the steps after the
   first: the window's first read starts as late as the hand-off). A second
   thread touches PAGES fresh pages in each step: its page faults, each
   step, are at least that; so are those of a thread that lives inside one
   step (its one value, read after it exited). A fork's child leaves the
   parent's counters as they were. A second window counts from its own
   start: the 200 ms of CPU the main thread spends in the step between the
   windows are in neither. The values are counter tracks of their thread in
   both formats and the table's footer; a name prof.h does not know is one
   line and the others go on; a counter the machine lacks (no PMU here:
   cycles, instructions) is one line each. `prof table` reads both traces
   back with the same footer. Exit 77 where the kernel refuses
   perf_event_open (test_counters_refused covers the line that says so). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE                 /* MAP_ANONYMOUS */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "../prof.h"
#include "check.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ACTIVE   4
#define SLEEPS   5
#define SPIN_MS  8
#define SLEEP_MS 8
#define PAGES    64

static volatile uint64_t sink;

static int64_t clock_of(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void half_asleep(void) {
    PROF_SCOPE("half_asleep");
    for (int i = 0; i < SLEEPS; i++) {
        int64_t end = clock_of(CLOCK_THREAD_CPUTIME_ID) + SPIN_MS * 1000000;
        while (clock_of(CLOCK_THREAD_CPUTIME_ID) < end) sink = sink * 31 + 1;
        struct timespec ts = { 0, SLEEP_MS * 1000000 };
        nanosleep(&ts, NULL);
    }
}

/* The toucher: a region per step, when the main thread says so. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, done, quit;
static long toucher_tid;

static void *toucher(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("toucher");
    pthread_mutex_lock(&mu);
    toucher_tid = (long)syscall(SYS_gettid);
    pthread_cond_broadcast(&cv);
    for (;;) {
        while (!go && !quit) pthread_cond_wait(&cv, &mu);
        if (quit) break;
        go = 0;
        pthread_mutex_unlock(&mu);
        {
            PROF_SCOPE("touch");
            long page = sysconf(_SC_PAGESIZE);
            char *p = (char *)mmap(NULL, (size_t)(PAGES * page), PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) {
                for (long i = 0; i < PAGES; i++) p[i * page] = (char)i;
                munmap(p, (size_t)(PAGES * page));
            }
        }
        pthread_mutex_lock(&mu);
        done = 1;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* A thread inside one step: it waits for the profiler's thread to open its
   counters (prof_flush: they open when it registers), touches PAGES pages
   and exits. */
static long short_tid;
static void *short_lived(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("short_lived");
    short_tid = (long)syscall(SYS_gettid);
    CHECK(prof_flush());
    PROF_SCOPE("touch");
    long page = sysconf(_SC_PAGESIZE);
    char *p = (char *)mmap(NULL, (size_t)(PAGES * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        for (long i = 0; i < PAGES; i++) p[i * page] = (char)i;
        munmap(p, (size_t)(PAGES * page));
    }
    return NULL;
}

/* The main thread's CPU and wall time over the recorded steps. */
static int64_t cpu_in, wall_in, cpu_second;
static double on_second;                /* the second window's main task-clock (ms) */
static int n_second;
static long main_tid;

typedef struct { double v[5]; int n[5]; double per_step[5][ACTIVE + 2]; } counts;
static counts of_main, of_toucher, of_short;
static int saved, ipc_shown;
static size_t table_threads;
static double table_on_cpu;
static int64_t table_wall;

static int counter_of(const char *name, long *tid) {
    static const char *const k[5] = { "task-clock (ms)", "context-switches", "page-faults", "cycles",
                                      "instructions" };
    int at = 0;
    if (strncmp(name, "tid ", 4) || sscanf(name + 4, "%ld %n", tid, &at) != 1) return -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(name + 4 + at, k[i])) return i;
    return -1;
}

static int has_bytes(const char *path, const char *s) {
    FILE *f = fopen(path, "rb");
    static char buf[1 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0, m = strlen(s);
    if (f) fclose(f);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(buf + i, s, m)) return 1;
    return 0;
}

/* A saved window, on the profiler's thread: its counters' values, its
   table and its traces (the second window: the main thread's task-clock). */
static void ready_cycle(const prof_cycle *c) {
    if (prof_cycle_index(c) == 2) {     /* the second window: the main thread's task-clock */
        char name[64];
        snprintf(name, sizeof name, "tid %ld task-clock (ms)", main_tid);
        for (size_t i = 0; i < prof_cycle_event_count(c); i++) {
            prof_event e;
            if (prof_cycle_event(c, i, &e) && e.kind == PROF_EVENT_COUNTER && !strcmp(e.name, name)) {
                on_second += e.value;
                n_second++;
            }
        }
        return;
    }
    size_t n = prof_cycle_event_count(c);
    for (size_t i = 0; i < n; i++) {
        prof_event e;
        long tid;
        if (!prof_cycle_event(c, i, &e) || e.kind != PROF_EVENT_COUNTER) continue;
        int k = counter_of(e.name, &tid);
        CHECK(k >= 0);
        if (k < 0) continue;
        CHECK_EQ(e.tid, tid);           /* on its thread's track */
        counts *o = tid == main_tid ? &of_main : tid == toucher_tid ? &of_toucher : tid == short_tid ? &of_short : NULL;
        CHECK(o != NULL);
        if (!o || o->n[k] >= ACTIVE + 2) continue;
        o->per_step[k][o->n[k]++] = e.value;
        o->v[k] += e.value;
    }
    prof_table t;
    CHECK(prof_cycle_table(c, PROF_SORT_SELF_CPU, 0, &t));
    prof_table_print(&t, stdout, 0);
    table_threads = t.ncpu;
    for (size_t i = 0; i < t.ncpu; i++)
        if (t.cpu[i].tid == main_tid) {
            table_on_cpu = t.cpu[i].v[0];
            table_wall = t.cpu[i].wall_ns;
            ipc_shown = t.cpu[i].v[3] > 0 && t.cpu[i].v[4] > 0;
        }
    prof_table_free(&t);
    char name[64];
    snprintf(name, sizeof name, "tid %ld task-clock (ms)", main_tid);
    CHECK(prof_cycle_write_trace(c, "counters.json"));
    CHECK(prof_cycle_write_trace(c, "counters.pftrace"));
    CHECK(has_bytes("counters.json", name));
    CHECK(has_bytes("counters.pftrace", name));
}

static void ready(const prof_cycle *c, void *user) {
    (void)user;
    ready_cycle(c);
    saved++;                            /* the main thread reads it after prof_flush */
}

static int lines_with(const char *log, const char *s) {
    int n = 0;
    for (const char *p = log; (p = strstr(p, s)) != NULL; p++) n++;
    return n;
}

int main(void) {
    remove("counters.log");
    setenv("PROF_LOG", "counters.log", 1);
    setenv("PROF_COUNTERS", "task-clock,context-switches,page-faults,bogus,cycles,instructions", 1);
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.schedule.wait = 1;
    cfg.schedule.active = ACTIVE;
    cfg.schedule.repeat = 2;
    cfg.on_trace_ready = ready;
    main_tid = (long)syscall(SYS_gettid);
    PROF_INIT(&cfg);
    pthread_t th;
    pthread_create(&th, NULL, toucher, NULL);
    pthread_mutex_lock(&mu);
    while (!toucher_tid) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    int64_t cpu0 = 0, wall0 = 0;
    for (int s = 0; s <= 2 * ACTIVE + 1; s++) {
        if (s == ACTIVE + 1) {          /* between the windows: CPU time no window holds */
            int64_t end = clock_of(CLOCK_THREAD_CPUTIME_ID) + 200000000;
            while (clock_of(CLOCK_THREAD_CPUTIME_ID) < end) sink = sink * 31 + 1;
            PROF_STEP();
            continue;
        }
        if (s == 1 || s == ACTIVE + 2) {    /* a window's first step: from its first read */
            CHECK(prof_flush());
            cpu0 = clock_of(CLOCK_THREAD_CPUTIME_ID);
            wall0 = clock_of(CLOCK_MONOTONIC);
        }
        half_asleep();
        pthread_mutex_lock(&mu);
        go = 1;
        done = 0;
        pthread_cond_broadcast(&cv);
        while (!done) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        if (s == 2) {                   /* a thread that lives inside this step */
            pthread_t sh;
            CHECK(pthread_create(&sh, NULL, short_lived, NULL) == 0);
            pthread_join(sh, NULL);
        }
        if (s == 3) {                   /* a fork's child: the parent's counters go on */
            pid_t child = fork();
            if (child == 0) _exit(0);
            CHECK(child > 0);
            int st = 0;
            waitpid(child, &st, 0);
        }
        if (s == ACTIVE) {              /* the window's last step */
            cpu_in = clock_of(CLOCK_THREAD_CPUTIME_ID) - cpu0;
            wall_in = clock_of(CLOCK_MONOTONIC) - wall0;
        }
        if (s == 2 * ACTIVE + 1) cpu_second = clock_of(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        PROF_STEP();
        if (s == ACTIVE || s == 2 * ACTIVE + 1) CHECK(prof_flush());   /* to its last read: saved */
    }
    pthread_mutex_lock(&mu);
    quit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(th, NULL);
    PROF_SHUTDOWN();

    char *log = check_slurp("counters.log");
    CHECK(log != NULL);
    if (!log) return 1;
    fputs(log, stdout);
    if (strstr(log, "PROF_COUNTERS: perf_event_open is refused")) {
        printf("SKIP: perf_event_open is refused here\n");
        return 77;
    }
    CHECK_EQ(saved, 2);
    printf("second window: main task-clock %.3f ms, its CPU time %.3f ms\n", on_second, (double)cpu_second / 1e6);
    CHECK_EQ(n_second, ACTIVE);
    CHECK(on_second > (double)cpu_second / 1e6 * 0.9 - 5 && on_second < (double)cpu_second / 1e6 * 1.1 + 5);
    CHECK_EQ(lines_with(log, "PROF_COUNTERS: 'bogus': no such counter"), 1);
    int no_cycles = lines_with(log, "PROF_COUNTERS: cycles: this machine has no such counter");
    int no_insns = lines_with(log, "PROF_COUNTERS: instructions: this machine has no such counter");
    int no_cs = lines_with(log, "PROF_COUNTERS: context-switches are counted in the kernel's code");
    CHECK(no_cycles <= 1 && no_insns <= 1 && no_cs <= 1);
    /* one value per recorded step and thread, for each counter counted */
    CHECK_EQ(of_main.n[0], ACTIVE);
    CHECK_EQ(of_toucher.n[0], ACTIVE);
    CHECK_EQ(of_main.n[2], ACTIVE);
    CHECK_EQ(of_toucher.n[2], ACTIVE);
    CHECK_EQ(of_main.n[1], no_cs ? 0 : ACTIVE);
    CHECK_EQ(of_main.n[3], no_cycles ? 0 : ACTIVE);
    CHECK_EQ(of_main.n[4], no_insns ? 0 : ACTIVE);
    CHECK_EQ(ipc_shown, !no_cycles && !no_insns);

    double on_ms = of_main.v[0], cpu_ms = (double)cpu_in / 1e6, wall_ms = (double)wall_in / 1e6;
    double sleep_ms = (double)(ACTIVE * SLEEPS * SLEEP_MS);
    printf("main: task-clock %.3f ms, its CPU time %.3f ms, wall %.3f ms, sleeps %.0f ms; table: on-CPU %.3f ms "
           "of %.3f ms\n", on_ms, cpu_ms, wall_ms, sleep_ms, table_on_cpu / 1e6, (double)table_wall / 1e6);
    CHECK(on_ms > cpu_ms * 0.9 - 5 && on_ms < cpu_ms * 1.1 + 5);
    CHECK(wall_ms - on_ms >= 0.8 * sleep_ms);
    CHECK(on_ms / wall_ms > cpu_ms / wall_ms - 0.1 && on_ms / wall_ms < cpu_ms / wall_ms + 0.1);
    CHECK(table_threads >= 2);
    CHECK(table_on_cpu > on_ms * 1e6 * 0.999 && table_on_cpu < on_ms * 1e6 * 1.001);
    CHECK(table_wall > 0 && (double)table_wall / 1e6 > wall_ms * 0.8);
    if (!no_cs) {
        printf("main: %.0f context switches (%d sleeps)\n", of_main.v[1], ACTIVE * SLEEPS);
        CHECK(of_main.v[1] >= (ACTIVE - 1) * SLEEPS);
    }
    const char *tool = getenv("PROF_TEST_TOOL");  /* the traces read back: the same footer */
    for (int f = 0; tool && *tool && f < 2; f++) {
        char cmd[4200], out[8192];
        snprintf(cmd, sizeof cmd, "'%s' table %s", tool, f ? "counters.pftrace" : "counters.json");
        FILE *pf = popen(cmd, "r");
        size_t n = pf ? fread(out, 1, sizeof out - 1, pf) : 0;
        out[n] = 0;
        CHECK(pf && pclose(pf) == 0);
        CHECK(strstr(out, "CPU counters per thread") != NULL);
        CHECK(strstr(out, "toucher (") != NULL);
    }
    CHECK_EQ(of_short.n[0], 1);
    CHECK_EQ(of_short.n[2], 1);
    printf("short_lived: %.0f page faults\n", of_short.v[2]);
    CHECK(of_short.v[2] >= PAGES);
    for (int i = 0; i < of_toucher.n[2]; i++) {
        printf("toucher: step %d: %.0f page faults\n", i, of_toucher.per_step[2][i]);
        CHECK(of_toucher.per_step[2][i] >= PAGES);
    }
    return failures != 0;
}
