/* Scenario programs for the test suite: each writes a trace (or doesn't) the
   way an engine would; tests/run_case.py runs one and checks what it wrote.
   The table at the end names every case, for CMake and run_case.py too.
   The same source is compiled as C11 and as C++17, so both PROF_SCOPE forms
   (cleanup attribute, destructor) are exercised. */
#define _POSIX_C_SOURCE 200809L        /* nanosleep, for the trigger case's wait */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof.h"
#include "robustness/sanitized.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>          /* getrusage: flight_long's memory */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>                 /* the flight case's look for its dump */
#include <unistd.h>

#define THREADS 4
#define OUTER 100
#define INNER 3

static void leaf(void) { PROF_FUNCTION(); }

static void *nested_worker(void *arg) {
    static const char *names[THREADS] = { "worker-0", "worker-1", "worker-2", "worker-3" };
    PROF_THREAD_NAME(names[(size_t)arg]);
    for (int i = 0; i < OUTER; i++) {
        PROF_SCOPE("outer");
        for (int j = 0; j < INNER; j++) {
            PROF_SCOPE("inner");
            leaf();
        }
        PROF_BEGIN("explicit");
        PROF_END();
    }
    return NULL;
}

/* 4 threads x 100 outer x (3 inner x 1 leaf + 1 explicit); the threads exit
   before the trace is written. */
static int regions(void) {
    pthread_t t[THREADS];
    PROF_INIT(NULL);
    PROF_THREAD_NAME("main");
    for (size_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, nested_worker, (void *)i);
    for (size_t i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    { PROF_SCOPE("main_only"); }
    PROF_SHUTDOWN();
    return 0;
}

/* Names no JSON writer should trust. */
static int hostile(void) {
    static const char *names[] = {
        "quote\"back\\slash",
        "ctl\x01\x02\x1f\n\t\r",
        ("lone\x80" "continuation"),
        "overlong\xc0\xaf",
        "surrogate\xed\xa0\x80",
        "truncated\xe2\x82",
        "too-big\xf4\x90\x80\x80",
        "utf8 \xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5",
        "",
    };
    PROF_INIT(NULL);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        PROF_SCOPE(names[i]);
        PROF_ARG_STR(names[i], names[i]);
    }
    { PROF_SCOPE((const char *)NULL); }
    PROF_INSTANT("instant\"\x7f");
    PROF_SHUTDOWN();
    return 0;
}

static int counters(void) {
    PROF_INIT(NULL);
    PROF_COUNTER("loss", 2.5);
    PROF_COUNTER("loss", -0.125);
    PROF_COUNTER("lr", 1e-300);
    PROF_COUNTER("queue", 42);
    PROF_COUNTER("bad", strtod("nan", NULL));
    PROF_INSTANT("checkpoint");
    PROF_INSTANT("checkpoint");
    PROF_SHUTDOWN();
    return 0;
}

/* An argument belongs to the innermost region open when it was attached. */
static int args(void) {
    PROF_INIT(NULL);
    {
        PROF_SCOPE("parent");
        PROF_ARG_INT("before_child", 1);
        {
            PROF_SCOPE("child");
            PROF_ARG_INT("M", 64);
            PROF_ARG_STR("dtype", "f32");
            PROF_FLOPS(1000);
        }
        PROF_ARG_INT("after_child", -7);
        PROF_BEGIN("explicit");
        PROF_ARG_INT("x", 3);
        PROF_END();
    }
    {
        PROF_SCOPE("no_args");
    }
    PROF_SHUTDOWN();
    return 0;
}

/* ---- args_formats: every argument of every region, in every format --------
   Three named threads: main steps 12 times, two workers record regions with
   arguments, and each holds one `outer` region open across every step of
   main's (worker-0 a PROF_SCOPE with a child, worker-1 a PROF_BEGIN), with
   its arguments attached before the step: main steps while they wait at a
   barrier, then waits for the step's work to be done (prof_flush: a
   streamed .pftrace has written the part) before letting them close it.
   worker-0 also keeps `long` open over steps 4 to 6. Nothing depends on
   speed: the region is open when its part is written, every time. After
   the run, what each thread recorded (thread, region, its arguments) is
   printed, a line per region, for run_case.py to compare with the trace. */
#define ARGF_STEPS 12
#define ARGF_REGIONS 128                    /* regions a thread records, at most */
typedef struct { const char *region; char args[96]; } af_rec;
static af_rec af_recs[3][ARGF_REGIONS];
static int af_n[3];
static pthread_barrier_t af_at_step, af_stepped;
static const char *af_names[3] = { "main", "worker-0", "worker-1" };

static void af_note(int t, const char *region, const char *args) {
    af_rec *r = &af_recs[t][af_n[t]++];
    r->region = region;
    snprintf(r->args, sizeof r->args, "%s", args);
}

/* A region of worker t with its arguments iter and who, and a child with j. */
static void af_closed(int t, int iter) {
    char a[96];
    PROF_SCOPE("outer");
    PROF_ARG_INT("iter", iter);
    {
        PROF_SCOPE("inner");
        PROF_ARG_INT("j", 1000 + iter);
        snprintf(a, sizeof a, "j=%d", 1000 + iter);
        af_note(t, "inner", a);
    }
    PROF_ARG_STR("who", af_names[t]);   /* after the child: still outer's */
    snprintf(a, sizeof a, "iter=%d who=%s", iter, af_names[t]);
    af_note(t, "outer", a);
}

static void *af_worker(void *arg) {
    int t = (int)(size_t)arg;
    char a[96];
    PROF_THREAD_NAME(af_names[t]);
    for (int s = 0; s < ARGF_STEPS; s++) {
        int iter = 100 * s;
        if (t == 1 && s == 4) {
            PROF_BEGIN("long");
            PROF_ARG_INT("from", s);
        }
        for (int i = 0; i < 3; i++) af_closed(t, iter++);
        if (t == 1) {                   /* a PROF_SCOPE, a child closed before the step */
            PROF_SCOPE("outer");
            PROF_ARG_INT("iter", iter);
            {
                PROF_SCOPE("inner");
                PROF_ARG_INT("j", 1000 + iter);
            }
            PROF_ARG_STR("who", af_names[t]);
            pthread_barrier_wait(&af_at_step);
            pthread_barrier_wait(&af_stepped);
            snprintf(a, sizeof a, "j=%d", 1000 + iter);
            af_note(t, "inner", a);
        } else {                        /* a PROF_BEGIN */
            PROF_BEGIN("outer");
            PROF_ARG_INT("iter", iter);
            PROF_ARG_STR("who", af_names[t]);
            pthread_barrier_wait(&af_at_step);
            pthread_barrier_wait(&af_stepped);
            PROF_END();
        }
        snprintf(a, sizeof a, "iter=%d who=%s", iter, af_names[t]);
        af_note(t, "outer", a);
        if (t == 1 && s == 6) {
            PROF_ARG_INT("until", s);
            PROF_END();
            af_note(t, "long", "from=4 until=6");
        }
    }
    return NULL;
}

static int args_formats(void) {
    pthread_t w[2];
    char a[96];
    PROF_INIT(NULL);
    PROF_THREAD_NAME(af_names[0]);
    pthread_barrier_init(&af_at_step, NULL, 3);
    pthread_barrier_init(&af_stepped, NULL, 3);
    for (size_t i = 0; i < 2; i++) pthread_create(&w[i], NULL, af_worker, (void *)(i + 1));
    for (int s = 0; s < ARGF_STEPS; s++) {
        {
            PROF_SCOPE("main_work");
            PROF_ARG_INT("step", s);
            snprintf(a, sizeof a, "step=%d", s);
            af_note(0, "main_work", a);
        }
        pthread_barrier_wait(&af_at_step);  /* the workers' `outer` is open, its arguments given */
        PROF_STEP();
        prof_flush();                   /* this step's part is written */
        pthread_barrier_wait(&af_stepped);
    }
    for (size_t i = 0; i < 2; i++) pthread_join(w[i], NULL);
    pthread_barrier_destroy(&af_at_step);
    pthread_barrier_destroy(&af_stepped);
    PROF_SHUTDOWN();
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < af_n[t]; i++) printf("%s|%s|%s\n", af_names[t], af_recs[t][i].region, af_recs[t][i].args);
    return 0;
}

/* More regions than PROF_BUFFER_MB holds: the excess is counted, not lost silently. */
static int cap(void) {
    PROF_INIT(NULL);
    for (int i = 0; i < 100000; i++) { PROF_SCOPE("r"); }
    prof_stats st;
    prof_get_stats(&st);
    printf("dropped-before-write %llu\n", (unsigned long long)st.dropped);
    PROF_SHUTDOWN();
    prof_get_stats(&st);
    printf("events %llu dropped %llu traces %llu\n", (unsigned long long)st.events,
           (unsigned long long)st.dropped, (unsigned long long)st.traces_written);
    return 0;
}

/* No PROF_INIT, no PROF_SHUTDOWN: the first macro starts the profiler and
   exit() writes the trace. */
static void *lazy_worker(void *arg) {
    (void)arg;
    PROF_SCOPE("lazy_thread");
    return NULL;
}

static int lazy(void) {
    pthread_t t;
    { PROF_SCOPE("before_anything"); }
    PROF_INSTANT("instant");
    pthread_create(&t, NULL, lazy_worker, NULL);
    pthread_join(t, NULL);
    return 0;
}

/* No PROF_INIT, as in an engine annotated in place: a region begins, then a
   worker names itself (the profiler starts there) and records, the region
   ends; then two steps. ProfilerStep#0 must hold all of step 0. */
static void *naming_worker(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("worker");
    { PROF_SCOPE("worker_region"); }
    return NULL;
}

static int lazy_steps(void) {
    pthread_t t;
    {
        PROF_SCOPE("decode");
        pthread_create(&t, NULL, naming_worker, NULL);
        pthread_join(t, NULL);
    }
    PROF_INSTANT("after_decode");
    PROF_STEP();
    { PROF_SCOPE("decode"); }
    PROF_STEP();
    PROF_SHUTDOWN();
    return 0;
}

/* A pool that starts a new thread for every graph (ggml without OpenMP):
   100 threads one after another, all named "pool-worker", 3 regions each;
   then two alike-named threads that run at the same time. */
static int pair_arrived;

static void *short_worker(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("pool-worker");
    for (int i = 0; i < 3; i++) { PROF_SCOPE("node"); }
    return NULL;
}

static void *pair_worker(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("pair");
    PROF_SCOPE("overlap");
    __atomic_fetch_add(&pair_arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&pair_arrived, __ATOMIC_ACQUIRE) < 2) sched_yield();  /* both open here */
    return NULL;
}

static int short_threads(void) {
    pthread_t t[2];
    PROF_INIT(NULL);
    for (int i = 0; i < 100; i++) {
        pthread_create(&t[0], NULL, short_worker, NULL);
        pthread_join(t[0], NULL);
    }
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, pair_worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    PROF_SHUTDOWN();
    return 0;
}

/* Names longer than the writer's 1 MiB buffer, and one that is all
   characters JSON escapes (6 bytes each once escaped), among short ones. */
static int long_names(void) {
    size_t n = (size_t)3 << 20;
    char *big = (char *)malloc(n + 1), *quotes = (char *)malloc(n / 4 + 1);
    if (!big || !quotes) return 1;
    for (size_t i = 0; i < n; i++) big[i] = (char)('a' + i % 26);
    big[n] = 0;
    memset(quotes, '\x01', n / 4);
    quotes[n / 4] = 0;
    PROF_INIT(NULL);
    for (int i = 0; i < 3; i++) {
        { PROF_SCOPE("short"); }
        { PROF_SCOPE(big); PROF_ARG_STR("arg", big); }
        { PROF_SCOPE(quotes); }
    }
    PROF_SHUTDOWN();
    free(big);
    free(quotes);
    return 0;
}

/* torch.profiler.schedule over 40 steps, from PROF_SCHEDULE. */
static int schedule(void) {
    PROF_INIT(NULL);
    for (int s = 0; s < 40; s++) {
        {
            PROF_SCOPE("step_work");
            PROF_COUNTER("step", s);
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* SCHED_STEPS steps of one region each under PROF_SCHEDULE, then 3 regions
   after the loop; run_case.py's schedule_torch runs it over 500 schedules. */
static int schedule_steps(void) {
    const char *n = getenv("SCHED_STEPS");
    int steps = n ? atoi(n) : 0;
    PROF_INIT(NULL);
    for (int s = 0; s < steps; s++) {
        { PROF_SCOPE("step_work"); }
        PROF_STEP();
    }
    for (int i = 0; i < 3; i++) { PROF_SCOPE("after_loop"); }
    PROF_SHUTDOWN();
    return 0;
}

/* A worker thread records in every step, across cycle boundaries: exactly
   WORKER_REGIONS regions per step, inside it (the main thread hands each
   step over and waits for it), so a cycle holds a known number. */
enum { WORKER_STEPS = 12, WORKER_REGIONS = 100 };
static int worker_go, worker_done;      /* the step handed over / finished, from 1 */

static void wait_for(int *flag, int value) {
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != value) sched_yield();
}

static void *busy_worker(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("busy");
    for (int s = 1; s <= WORKER_STEPS; s++) {
        wait_for(&worker_go, s);
        for (int i = 0; i < WORKER_REGIONS; i++) { PROF_SCOPE("busy_region"); }
        __atomic_store_n(&worker_done, s, __ATOMIC_RELEASE);
    }
    return NULL;
}

static int cycles_threads(void) {
    pthread_t t;
    PROF_INIT(NULL);
    pthread_create(&t, NULL, busy_worker, NULL);
    for (int s = 1; s <= WORKER_STEPS; s++) {
        {
            PROF_SCOPE("main_work");
            __atomic_store_n(&worker_go, s, __ATOMIC_RELEASE);
            wait_for(&worker_done, s);
        }
        PROF_STEP();
    }
    pthread_join(t, NULL);
    PROF_SHUTDOWN();
    return 0;
}

/* Config from code; the environment overrides it. */
static int config(void) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "from_config.json";
    cfg.schedule.active = 2;
    cfg.schedule.wait = 1;
    cfg.schedule.repeat = 1;
    PROF_INIT(&cfg);
    for (int s = 0; s < 5; s++) {
        { PROF_SCOPE("cfg_work"); }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* A trace-ready handler reads each cycle as data instead of a file. */
static pthread_t stepping_thread;

static void on_ready(const prof_cycle *c, void *user) {
    int *calls = (int *)user;
    size_t regions = 0, steps = 0, counters = 0;
    int64_t work_ns = 0;
    for (size_t i = 0; i < prof_cycle_event_count(c); i++) {
        prof_event e;
        if (!prof_cycle_event(c, i, &e)) continue;
        if (e.kind == PROF_EVENT_REGION && !strcmp(e.name, "handled")) { regions++; work_ns += e.dur_ns; }
        if (e.kind == PROF_EVENT_STEP) steps++;
        if (e.kind == PROF_EVENT_COUNTER) counters++;
    }
    prof_table t;
    if (!prof_cycle_table(c, PROF_SORT_CALLS, 0, &t)) return;
    const prof_row *row = NULL;
    for (size_t i = 0; i < t.n; i++)
        if (!strcmp(t.rows[i].name, "handled")) row = &t.rows[i];
    printf("cycle %d regions %zu steps %zu counters %zu row_calls %llu row_total_matches %d dropped %llu "
           "on %s\n", prof_cycle_index(c), regions, steps, counters, row ? (unsigned long long)row->calls : 0ULL,
           row && row->total_ns == work_ns, (unsigned long long)prof_cycle_dropped(c),
           pthread_equal(pthread_self(), stepping_thread) ? "the stepping thread" : "the profiler's thread");
    prof_table_free(&t);
    (*calls)++;
}

/* A trace-ready handler that writes every cycle twice, as <stem><N><ext>
   for each of two extensions (the format each one asks for). */
typedef struct two_files { const char *stem, *ext[2]; } two_files;

static void write_twice(const prof_cycle *c, void *user) {
    const two_files *w = (const two_files *)user;
    char path[64];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s%d%s", w->stem, prof_cycle_index(c), w->ext[i]);
        prof_cycle_write_trace(c, path);
    }
}

/* gzip: every cycle written twice, as t<N>.json and t<N>.json.gz, which must
   hold the same bytes; 10,000 regions a cycle with args, counters and
   instants, a hostile name among them. */
static two_files json_and_gzip = { "t", { ".json", ".json.gz" } };

static int gzip(void) {
    static const char *names[] = { "forward", "backward", "matmul", "attention \"q\"\n\x01", "optimizer" };
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.on_trace_ready = write_twice;
    cfg.user_data = &json_and_gzip;
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 2;
    PROF_INIT(&cfg);
    for (int s = 0; s < 4; s++) {
        for (int i = 0; i < 5000; i++) {
            PROF_SCOPE(names[i % 5]);
            if (i % 7 == 0) PROF_ARG_INT("i", i);
            if (i % 100 == 0) PROF_COUNTER("loss", 1.0 / (i + 1));
            if (i % 1000 == 0) PROF_INSTANT("checkpoint");
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* ---- Perfetto's format ----------------------------------------------------
   Every kind of event the CPU side writes, and trees of regions, each cycle
   saved twice, as
   p<N>.json and p<N>.pftrace: run_case.py decodes both and finds them the
   same, event for event. */
static two_files json_and_perfetto = { "p", { ".json", ".pftrace" } };

static void *pf_worker(void *arg) {
    PROF_THREAD_NAME("pf-worker");              /* alike-named, never overlapping: one track */
    PROF_SCOPE("work");
    PROF_ARG_INT("job", (int64_t)(size_t)arg);
    { PROF_SCOPE("inner"); }
    return NULL;
}

/* Two more alike-named threads on one track, the one known to the profiler
   first recording last: the track is the early one's, yet the walk comes
   to the late one's records first. */
static pthread_mutex_t pf_late_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pf_late_cv = PTHREAD_COND_INITIALIZER;
static int pf_late_stage;                       /* 1: the late one is known; 2: the early one is done */

static void pf_late_at(int stage) {
    pthread_mutex_lock(&pf_late_lock);
    pf_late_stage = stage;
    pthread_cond_broadcast(&pf_late_cv);
    pthread_mutex_unlock(&pf_late_lock);
}

static void pf_late_until(int stage) {
    pthread_mutex_lock(&pf_late_lock);
    while (pf_late_stage < stage) pthread_cond_wait(&pf_late_cv, &pf_late_lock);
    pthread_mutex_unlock(&pf_late_lock);
}

static void *pf_late(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("pf-pair");
    pf_late_at(1);
    pf_late_until(2);
    PROF_SCOPE("late work");
    return NULL;
}

static void *pf_early(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("pf-pair");
    PROF_SCOPE("early work");
    return NULL;
}

/* A tree of regions drawn from *rs: up to 3 children a level, 5 levels, an
   argument now and then first in its region; deep chains of first children
   (each begins where its parent does, in the protobuf's BEGIN order). */
static void pf_tree(uint32_t *rs, int depth) {
    static const char *names[] = { "t0", "t1", "t2", "t3" };
    *rs = *rs * 1103515245u + 12345u;
    uint32_t r = *rs >> 16;
    PROF_SCOPE(names[r % 4]);
    if (r % 5 == 0) PROF_ARG_INT("depth", depth);
    for (uint32_t k = 0; depth < 5 && k < (r >> 4) % 4; k++) pf_tree(rs, depth + 1);
}

static int perfetto(void) {
    static const char *names[] = { "forward", "backward", "matmul", "attention \"q\"\n\x01", "bad\xc0\xaf utf8" };
    uint32_t rs = 7;
    static char buf[4][256];
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.on_trace_ready = write_twice;
    cfg.user_data = &json_and_perfetto;
    cfg.schedule.warmup = 1;                   /* steps 0 and 3 */
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 2;
    PROF_SET_RANK(1, 2);
    PROF_INIT(&cfg);
    PROF_THREAD_NAME("main");
    PROF_BEGIN("spans a step");                 /* begins in warmup: clipped */
    for (int s = 0; s < 6; s++) {
        if (s == 1) PROF_END();
        for (int i = 0; i < 300; i++) {
            PROF_SCOPE(names[i % 5]);
            if (i % 7 == 0) PROF_ARG_INT("i", i - 150);
            if (i % 11 == 0) PROF_ARG_STR("shape", i % 2 ? "[64, 128]" : "h\xc3\xa9llo");
            if (i % 50 == 0) PROF_COUNTER("loss", 1.0 / (i + 1));
            if (i % 60 == 0) PROF_INSTANT("checkpoint");
            if (i % 30 == 0) {
                PROF_ALLOC(buf[i % 4], 256);
                PROF_FREE(buf[i % 4]);
                prof_mem_alloc(buf[(i + 1) % 4], 4096, 0);     /* device 0's memory */
                prof_mem_free(buf[(i + 1) % 4]);
            }
            { PROF_SCOPE("leaf"); }
        }
        for (int k = 0; k < 20; k++) pf_tree(&rs, 0);
        if (s == 2) {
            pthread_t t;
            for (size_t k = 0; k < 3; k++) {
                pthread_create(&t, NULL, pf_worker, (void *)k);
                pthread_join(t, NULL);
            }
            pthread_t late, early;
            pthread_create(&late, NULL, pf_late, NULL);
            pf_late_until(1);
            pthread_create(&early, NULL, pf_early, NULL);
            pthread_join(early, NULL);
            pf_late_at(2);
            pthread_join(late, NULL);
            PROF_SYNC();
        }
        if (s == 4) PROF_BEGIN("overlaps the step");    /* partly over ProfilerStep#4 and #5 */
        if (s == 5) PROF_END();
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* 40 steps of 1000 regions each holding a leaf, inside a region around the
   whole loop: far more than the 1 MiB cap run_case.py gives it holds at
   once. In Perfetto's format each step's records are appended at the step
   and their memory reused: nothing is dropped. */
static int stream(void) {
    PROF_INIT(NULL);
    PROF_SCOPE("train");
    for (int s = 0; s < 40; s++) {
        for (int i = 0; i < 1000; i++) {
            PROF_SCOPE("op");
            { PROF_SCOPE("leaf"); }
        }
        PROF_STEP();
        prof_flush();                   /* the step's part is written: a step of real work gives the
                                           profiler's thread this time, here it is waited for */
    }
    return 0;                           /* "train" ends here, exit() writes the rest */
}

/* ---- dynamic names --------------------------------------------------------
   48 layer names made in one reused buffer, 5 steps; prof_intern's promises
   printed for run_case.py: one pointer per text, the text cut at n and
   terminated, the same pointers from 4 threads at once, and the 16 MiB
   bound (1 MiB names: 15 kept, the rest "(names full)", counted). */
static const char *interned[4][200];

static void *intern_worker(void *arg) {
    char buf[32];
    for (int i = 0; i < 200; i++) {
        snprintf(buf, sizeof buf, "op.%d", i);
        interned[(size_t)arg][i] = prof_intern(buf, strlen(buf));
    }
    return NULL;
}

static int dynamic(void) {
    char buf[64];
    PROF_INIT(NULL);
    for (int s = 0; s < 5; s++) {
        for (int l = 0; l < 48; l++) {
            snprintf(buf, sizeof buf, "layer.%d.attn", l);
            PROF_SCOPE_DYN(buf);
        }
        PROF_STEP();
    }
    const char *a = prof_intern("matmul", 6), *b = prof_intern("matmul_nn", 6), *c = prof_intern("matmul_nn", 9);
    printf("same %d other %d cut %s\n", a == b, a != c, b);
    pthread_t t[4];
    for (size_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, intern_worker, (void *)i);
    for (size_t i = 0; i < 4; i++) pthread_join(t[i], NULL);
    int agree = 1;
    for (int i = 0; i < 200; i++)
        for (int k = 1; k < 4; k++) agree &= interned[k][i] == interned[0][i];
    printf("threads agree %d\n", agree);
    size_t big = (size_t)1 << 20;
    char *name = (char *)malloc(big);
    if (!name) return 1;
    int kept = 0;
    for (int i = 0; i < 20; i++) {
        memset(name, 'a' + i, big);
        kept += strcmp(prof_intern(name, big), "(names full)") != 0;
    }
    free(name);
    prof_stats st;
    prof_get_stats(&st);
    printf("kept %d refused %llu\n", kept, (unsigned long long)st.names_refused);
    PROF_SHUTDOWN();
    return 0;
}

/* ---- tracing on demand --------------------------------------------------
   30 steps of one region each; SIGUSR2 raised in step 8 (PROF_TRIGGER=signal),
   or the file "go.trigger" made in step 20 (file:go.trigger) (then a 1.1 s wait: the file is looked for
   once a second at most). run_case.py runs it with PROF_TRIGGER=signal and
   file:go.trigger and checks which steps each trace holds. */
static volatile sig_atomic_t engine_usr2;
static void on_engine_usr2(int sig) { (void)sig; engine_usr2 = 1; }

static int trigger(void) {
    const char *how = getenv("PROF_TRIGGER");
    if (getenv("ENGINE_USR2")) signal(SIGUSR2, on_engine_usr2);     /* the engine's own use of it */
    int by_signal = how && !strcmp(how, "signal"), by_file = how && !strncmp(how, "file:", 5);
    PROF_INIT(NULL);
    for (int s = 0; s < 30; s++) {
        { PROF_SCOPE("work"); }
        if (s == 8 && by_signal) raise(SIGUSR2);
        if (s == 20 && by_file) {       /* TRIGGER_TEXT: what the file says ("step=27") */
            FILE *f = fopen("go.trigger", "w");
            if (f) {
                if (getenv("TRIGGER_TEXT")) fputs(getenv("TRIGGER_TEXT"), f);
                fclose(f);
            }
            struct timespec d = { 1, 100000000 };
            nanosleep(&d, NULL);
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    if (engine_usr2) printf("the engine's handler ran\n");
    return 0;
}

/* ---- the flight recorder -----------------------------------------------
   1000 steps (FLIGHT_STEPS) of a fixed length (a sleep until the step's end
   on CLOCK_MONOTONIC, FLIGHT_STEP_US each, default 2000: at least that long
   however loaded the machine, and no CPU taken from the tests beside it),
   each with an outer region and two inner ones; step 500 (FLIGHT_SLOW_AT)
   is 20x (FLIGHT_SLOW_X) as long. Run with PROF_FLIGHT; FLIGHT_TRIGGER_AT=N
   makes the file go.trigger in step N, holding FLIGHT_TRIGGER_TEXT;
   FLIGHT_WAIT_AT=N waits in step N until go.trigger is there (another
   rank's, as at a collective); FLIGHT_UNTIL=PREFIX goes on stepping after
   the last step until a file named PREFIX... is there (a dump). */
static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1000000000LL * t.tv_sec + t.tv_nsec;
}

static void sleep_until_ns(long long end) {
    struct timespec t = { (time_t)(end / 1000000000LL), (long)(end % 1000000000LL) };
    while (now_ns() < end) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);  /* again after a signal */
}

/* Whether a file in the working directory has a name that begins with prefix. */
static int file_named(const char *prefix) {
    DIR *d = opendir(".");
    int found = 0;
    if (!d) return 0;
    for (struct dirent *f; !found && (f = readdir(d));) found = !strncmp(f->d_name, prefix, strlen(prefix));
    closedir(d);
    return found;
}

static int flight(void) {
    const char *e = getenv("FLIGHT_STEPS"), *u = getenv("FLIGHT_STEP_US"), *tr = getenv("FLIGHT_TRIGGER_AT");
    const char *x = getenv("FLIGHT_SLOW_X"), *at = getenv("FLIGHT_SLOW_AT");  /* the slow step, this many long */
    const char *wait = getenv("FLIGHT_WAIT_AT"), *until = getenv("FLIGHT_UNTIL");
    long steps = e ? atol(e) : 1000, us = u ? atol(u) : 2000, trigger_at = tr ? atol(tr) : -1;
    long slow_x = x ? atol(x) : 20, slow_at = at ? atol(at) : 500, wait_at = wait ? atol(wait) : -1;
    PROF_INIT(NULL);
    for (long s = 0; s < steps || (until && !file_named(until)); s++) {
        if (s == wait_at) {
            struct timespec ms = { 0, 1000000 };
            while (access("go.trigger", F_OK) != 0) nanosleep(&ms, NULL);
        }
        long long end = now_ns() + 1000LL * (s == slow_at ? slow_x * us : us);
        {
            PROF_SCOPE("step_work");
            { PROF_SCOPE("inner_a"); }
            { PROF_SCOPE("inner_b"); }
            sleep_until_ns(end);
        }
        if (s == trigger_at) {          /* FLIGHT_TRIGGER_TEXT: what the file says, there at once whole */
            FILE *f = fopen("go.trigger.tmp", "w");
            if (f) {
                if (getenv("FLIGHT_TRIGGER_TEXT")) fputs(getenv("FLIGHT_TRIGGER_TEXT"), f);
                if (fclose(f) == 0) rename("go.trigger.tmp", "go.trigger");
            }
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* A million steps of three regions in flight mode: what the process holds
   at the end (peak RSS, KiB) against the memory cap. */
static int flight_long(void) {
    const char *e = getenv("FLIGHT_STEPS");
    long steps = e ? atol(e) : 1000000;
    PROF_INIT(NULL);
    struct rusage ru;
    long rss_early = 0;
    for (long s = 0; s < steps; s++) {
        {
            PROF_SCOPE("step_work");
            { PROF_SCOPE("inner_a"); }
            { PROF_SCOPE("inner_b"); }
        }
        PROF_STEP();
        if (s == 1000 && getrusage(RUSAGE_SELF, &ru) == 0) rss_early = ru.ru_maxrss;
    }
    PROF_SHUTDOWN();
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 1;
    printf("steps %ld rss_after_1000_kib %ld peak_rss_kib %ld\n", steps, rss_early, (long)ru.ru_maxrss);
    return 0;
}

static int handler(void) {
    static int calls;
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.on_trace_ready = on_ready;
    cfg.user_data = &calls;
    cfg.schedule.wait = 1;
    cfg.schedule.active = 3;
    cfg.stacks = "stacks_{cycle}.txt";
    cfg.trace_ready_at_step = getenv("HANDLER_AT_STEP") != NULL;
    stepping_thread = pthread_self();
    PROF_INIT(&cfg);
    for (int s = 0; s < 8; s++) {
        {
            PROF_SCOPE("handled");
            PROF_COUNTER("s", s);
            for (volatile int spin = 0; spin < 100000; spin++) {}  /* tens of us: visible in the stacks */
        }
        /* the step's own time outside the region, microseconds whatever the
           machine's speed: its stack line is never rounded away */
        for (volatile int spin = 0; spin < 20000; spin++) {}
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    printf("handler calls %d\n", calls);
    return 0;
}

/* A rank given by the engine wins over the launcher's environment. */
static int rank(void) {
    PROF_SET_RANK(2, 4);
    PROF_SET_RANK(5, 4);                        /* refused: rank >= world size */
    PROF_INIT(NULL);
    { PROF_SCOPE("ranked"); }
    PROF_SHUTDOWN();
    return 0;
}

static int one_region(void) {
    { PROF_SCOPE("ranked"); }
    return 0;
}


/* ---- the hand-off: what a step costs the engine ----------------------------
   HANDOFF_REGIONS "op" regions a step (default 25,000; 2,500 under a
   sanitizer, which runs them ten times slower) inside "step_work", for 60
   steps. Each PROF_STEP() call is timed on this thread and its p50, p99 and
   max printed with the peak RSS, for the reader: speed is bench/'s (which
   runs 100,000 a step), not a test's. HANDOFF_TRIGGER=<file>: made in the
   last step (a flight dump), which then outlasts the trigger's
   once-a-second look. */
#define HANDOFF_REGIONS (SANITIZED ? 2500 : 25000)

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int handoff(void) {
    enum { STEPS = 60 };
    const char *e = getenv("HANDOFF_REGIONS"), *trigger = getenv("HANDOFF_TRIGGER");
    long regions = e ? atol(e) : HANDOFF_REGIONS;
    double call_us[STEPS];
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_ready_at_step = getenv("HANDOFF_AT_STEP") != NULL;    /* the steps run the jobs: counted */
    PROF_INIT(&cfg);
    for (int s = 0; s < STEPS; s++) {
        {
            PROF_SCOPE("step_work");
            for (long i = 0; i < regions; i++) { PROF_SCOPE("op"); }
        }
        if (trigger && s == STEPS - 1) {
            fclose(fopen(trigger, "w"));
            struct timespec t = { 1, 100000000 };
            nanosleep(&t, NULL);
        }
        long long t0 = now_ns();
        PROF_STEP();
        call_us[s] = 1e-3 * (double)(now_ns() - t0);
    }
    unsigned long off = __atomic_load_n(&prof__jobs_off_thread, __ATOMIC_RELAXED);  /* by the steps */
    PROF_SHUTDOWN();
    qsort(call_us, STEPS, sizeof *call_us, cmp_double);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("handoff: regions %ld steps %d step_call_us p50 %.1f p99 %.1f max %.1f peak_rss_kib %ld "
           "jobs_at_steps %lu\n", regions, STEPS, call_us[STEPS / 2], call_us[STEPS * 99 / 100], call_us[STEPS - 1],
           (long)ru.ru_maxrss, off);
    return 0;
}

/* ---- memory ------------------------------------------------------------- */

/* 64 allocations of 1-64 KiB in one region, every other one freed in
   another; the 32 left are the leak report. Prints each address for the
   checker, then what prof_leaks() says after shutdown. */
static int mem_basic(void) {
    enum { N = 64 };
    char *p[N];
    PROF_INIT(NULL);
    {
        PROF_SCOPE("alloc_phase");
        for (int i = 0; i < N; i++) {
            size_t bytes = (size_t)(i + 1) * 1024;
            p[i] = (char *)malloc(bytes);
            if (!p[i]) return 1;
            PROF_ALLOC(p[i], bytes);
            printf("alloc %p %zu\n", (void *)p[i], bytes);
        }
    }
    {
        PROF_SCOPE("free_phase");
        for (int i = 1; i < N; i += 2) {
            printf("free %p\n", (void *)p[i]);
            PROF_FREE(p[i]);
            free(p[i]);
        }
    }
    printf("allocated %lld\n", (long long)prof_mem_allocated(-1));
    PROF_SHUTDOWN();
    prof_leak leaks[40];
    size_t n = prof_leaks(leaks, 40);
    printf("leaks %zu\n", n);
    for (size_t i = 0; i < n && i < 40; i++)
        printf("leak %p %lld %d %s\n", leaks[i].ptr, (long long)leaks[i].bytes, leaks[i].device, leaks[i].region);
    printf("leaks-capped %zu\n", prof_leaks(leaks, 3));
    for (int i = 0; i < N; i += 2) free(p[i]);
    return 0;
}

/* Threads allocating and freeing at once, and freeing each other's. */
enum { MT_THREADS = 4, MT_BATCH = 100, MT_PAIRS = 10000, MT_CROSS = 500 };
static char *mt_cross[MT_THREADS][MT_CROSS];
static pthread_mutex_t mt_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mt_cv = PTHREAD_COND_INITIALIZER;
static int mt_arrived;

static void *mem_worker(void *arg) {
    size_t t = (size_t)arg;
    char *batch[MT_BATCH];
    PROF_SCOPE("mem_worker");
    for (int r = 0; r < MT_PAIRS / MT_BATCH; r++) {
        for (int i = 0; i < MT_BATCH; i++) {
            size_t bytes = 1000 + (t * 7 + (size_t)i * 13) % 1000; /* above the cross sizes */
            batch[i] = (char *)malloc(bytes);
            PROF_ALLOC(batch[i], bytes);
        }
        for (int i = 0; i < MT_BATCH; i++) {
            PROF_FREE(batch[i]);
            free(batch[i]);
        }
    }
    for (int i = 0; i < MT_CROSS; i++) {
        size_t bytes = 1 + (size_t)i;
        mt_cross[t][i] = (char *)malloc(bytes);
        PROF_ALLOC(mt_cross[t][i], bytes);
    }
    pthread_mutex_lock(&mt_mu);                 /* everyone's cross allocations are made */
    if (++mt_arrived == MT_THREADS) pthread_cond_broadcast(&mt_cv);
    while (mt_arrived < MT_THREADS) pthread_cond_wait(&mt_cv, &mt_mu);
    pthread_mutex_unlock(&mt_mu);
    char **theirs = mt_cross[(t + 1) % MT_THREADS];
    for (int i = 0; i < MT_CROSS; i++) {
        PROF_FREE(theirs[i]);
        free(theirs[i]);
    }
    return NULL;
}

static int mem_threads(void) {
    pthread_t t[MT_THREADS];
    PROF_INIT(NULL);
    char *keep = (char *)malloc(12345);
    PROF_ALLOC(keep, 12345);
    for (size_t i = 0; i < MT_THREADS; i++) pthread_create(&t[i], NULL, mem_worker, (void *)i);
    for (size_t i = 0; i < MT_THREADS; i++) pthread_join(t[i], NULL);
    prof_stats st;
    prof_get_stats(&st);
    printf("allocated %lld unknown %llu reused %llu\n", (long long)prof_mem_allocated(-1),
           (unsigned long long)st.unknown_frees, (unsigned long long)st.reused_live);
    PROF_FREE(keep);
    free(keep);
    printf("allocated %lld\n", (long long)prof_mem_allocated(-1));
    PROF_SHUTDOWN();
    return 0;
}

/* Every misuse at once: counted, never an event or a wrong total. */
static int mem_bad(void) {
    char *a = (char *)malloc(100), *b = (char *)malloc(200);
    PROF_INIT(NULL);
    {
        PROF_SCOPE("bad");
        PROF_FREE(NULL);                        /* ignored */
        PROF_ALLOC(NULL, 10);                   /* ignored */
        PROF_FREE(b);                           /* never allocated */
        PROF_ALLOC(a, 100);
        PROF_FREE(a);
        PROF_FREE(a);                           /* double free */
        PROF_ALLOC(b, 200);
        PROF_ALLOC(b, 50);                      /* still live: freed first */
        prof_mem_alloc(a, 10, 64);              /* no such device: one message */
        prof_mem_alloc(a, 10, -2);
        prof_mem_alloc(a, 4096, 3);             /* GPU 3 */
        printf("gpu3 %lld host %lld\n", (long long)prof_mem_allocated(3), (long long)prof_mem_allocated(-1));
        PROF_FREE(a);
        PROF_FREE(b);
    }
    prof_stats st;
    prof_get_stats(&st);
    printf("unknown %llu reused %llu host %lld gpu3 %lld\n", (unsigned long long)st.unknown_frees,
           (unsigned long long)st.reused_live, (long long)prof_mem_allocated(-1), (long long)prof_mem_allocated(3));
    PROF_SHUTDOWN();
    free(a);
    free(b);
    return 0;
}

/* Allocations before and between recording windows count in the totals
   that the window's events carry; those made outside any window, or in the
   warm-up (recorded, thrown away), leak as "(not recorded)". */
static int mem_window(void) {
    enum { STEPS = 6 };
    char *p[STEPS];
    PROF_INIT(NULL);
    for (int s = 0; s < STEPS; s++) {
        {
            PROF_SCOPE("work");
            size_t bytes = (size_t)(s + 1) * 1000;
            p[s] = (char *)malloc(bytes);
            PROF_ALLOC(p[s], bytes);
        }
        PROF_STEP();
    }
    for (int s = 3; s < STEPS; s++) {           /* after the window: no events */
        PROF_FREE(p[s]);
        free(p[s]);
    }
    printf("allocated %lld\n", (long long)prof_mem_allocated(-1));
    PROF_SHUTDOWN();
    for (int s = 0; s < 3; s++) free(p[s]);
    return 0;
}

/* The peak happens in a known region; the table and the cycle API say so. */
static void mem_peak_ready(const prof_cycle *c, void *user) {
    (void)user;
    for (int dev = -1; dev <= 1; dev++) {
        int64_t peak = -1;
        const char *region = NULL;
        int ok = prof_cycle_memory_peak(c, dev, &peak, &region);
        printf("peak %d %d %lld %s\n", dev, ok, (long long)peak, region ? region : "-");
    }
    prof_table t;
    if (!prof_cycle_table(c, PROF_SORT_SELF_CPU_MEM, 0, &t)) return;
    for (size_t i = 0; i < t.n; i++)
        printf("row %s %lld %lld %lld %lld\n", t.rows[i].name, (long long)t.rows[i].cpu_mem,
               (long long)t.rows[i].self_cpu_mem, (long long)t.rows[i].gpu_mem, (long long)t.rows[i].self_gpu_mem);
    prof_table_free(&t);
    prof_cycle_write_trace(c, "peak.json");
}

static int mem_peak(void) {
    static char gpu_heap[64];                   /* stands for device addresses */
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.on_trace_ready = mem_peak_ready;
    cfg.table = "sort=cpu_mem";
    cfg.schedule.wait = 1;
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    PROF_INIT(&cfg);
    for (int s = 0; s < 4; s++) {
        char *a, *b;
        void *g = gpu_heap + s;
        {
            PROF_SCOPE("forward");
            a = (char *)malloc(1 << 20);
            PROF_ALLOC(a, 1 << 20);
            {
                PROF_SCOPE("layer");
                b = (char *)malloc((2 << 20) + (256 << 10));
                PROF_ALLOC(b, (2 << 20) + (256 << 10));   /* 3.25 MiB live: the peak */
                prof_mem_alloc(g, 4096, 0);
            }
        }
        {
            PROF_SCOPE("backward");
            PROF_FREE(b);
            free(b);
            PROF_FREE(a);
            free(a);
            prof_mem_free(g);
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* PROF_ALLOC before anything starts the profiler; PROF_INIT later keeps the
   map; exit() writes the trace and reports the leak. */
static int mem_lazy(void) {
    char *x = (char *)malloc(3000), *y = (char *)malloc(5000);
    PROF_ALLOC(x, 3000);
    PROF_INIT(NULL);
    PROF_FREE(x);
    {
        PROF_SCOPE("lazy_leak");
        PROF_ALLOC(y, 5000);
    }
    printf("allocated %lld\n", (long long)prof_mem_allocated(-1));
    free(x);
    exit(0);                                    /* y leaks, on purpose */
}

/* ---- the table ----------------------------------------------------------- */

/* Every scenario, one line each, in this one place: tests/CMakeLists.txt
   reads these lines at configure time and registers scenario_c_NAME and
   scenario_cpp_NAME for each CASE and CHECK; tests/run_case.py checks each
   with its function case_NAME, which runs programs of this table by name;
   `scenarios_c --list` prints the table, and the test scenario_table finds
   the three agreeing. The kinds:
     CASE(name)     a test, and its program: `scenarios_c name`
     CHECK(name)    a test whose check runs other entries' programs under
                    other settings (PROF_DISABLE=1, PROF_CLOCK, ...)
     PROGRAM(name)  a program that other cases' checks run; no test of its own
   The function of a CASE or a PROGRAM has the entry's name. Write an entry
   as `    KIND(name),` alone on its line: CMake reads no other form. */
typedef struct { const char *name, *kind; int (*run)(void); } scenario;
#define CASE(name)    { #name, "CASE", name }
#define CHECK(name)   { #name, "CHECK", NULL }
#define PROGRAM(name) { #name, "PROGRAM", name }
static const scenario scenarios[] = {
    CASE(regions),
    CASE(hostile),
    CASE(counters),
    CASE(args),
    CASE(args_formats),
    CHECK(disable),             /* regions, PROF_DISABLE=1 and a bad value */
    CASE(cap),
    CHECK(unwritable),          /* regions, writing where it cannot */
    CHECK(long_paths),          /* regions and schedule, paths too long */
    CASE(long_names),
    CASE(lazy),
    CASE(lazy_steps),
    CASE(short_threads),
    CASE(gzip),
    CASE(perfetto),
    CASE(stream),
    CASE(dynamic),
    CASE(trigger),
    CASE(flight),
    CASE(flight_long),
    CASE(handoff),
    CASE(schedule),
    CHECK(schedule_torch),      /* schedule_steps over 500 schedules, against torch's */
    PROGRAM(schedule_steps),
    CASE(cycles_threads),
    CASE(config),
    CHECK(monotonic),           /* regions, PROF_CLOCK=monotonic */
    CASE(handler),
    CASE(rank),
    PROGRAM(one_region),        /* rank's check, under each launcher's variables */
    CASE(mem_basic),
    CASE(mem_threads),
    CASE(mem_bad),
    CASE(mem_window),
    CASE(mem_peak),
    CASE(mem_lazy),
    CHECK(mem_tb),              /* mem_basic and mem_peak, read by TensorBoard */
    CHECK(energy_cpu),          /* lazy_steps, PROF_ENERGY=1 with no GPU runtime bound */
};
#undef CASE
#undef CHECK
#undef PROGRAM

int main(int argc, char **argv) {
    size_t n = sizeof scenarios / sizeof scenarios[0];
    if (argc > 1 && !strcmp(argv[1], "--list")) {   /* KIND NAME, a line each */
        for (size_t i = 0; i < n; i++) printf("%s %s\n", scenarios[i].kind, scenarios[i].name);
        return 0;
    }
    for (size_t i = 0; argc > 1 && i < n; i++) {
        if (strcmp(argv[1], scenarios[i].name)) continue;
        if (scenarios[i].run) return scenarios[i].run();
        fprintf(stderr, "%s: %s is a check of other programs (run_case.py %s), no program\n",
                argv[0], argv[1], argv[1]);
        return 2;
    }
    fprintf(stderr, "usage: %s CASE|--list\n", argv[0]);
    return 2;
}
