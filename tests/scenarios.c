/* Scenario programs for the test suite: each writes a trace (or doesn't) the
   way an engine would; tests/run_case.py runs one and checks what it wrote.
   The same source is compiled as C11 and as C++17, so both PROF_SCOPE forms
   (cleanup attribute, destructor) are exercised. */
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A worker thread keeps recording across cycle boundaries. */
static int stop_worker;
static unsigned long worker_iterations;

static void *busy_worker(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("busy");
    while (!__atomic_load_n(&stop_worker, __ATOMIC_RELAXED)) {
        PROF_SCOPE("busy_region");
        __atomic_fetch_add(&worker_iterations, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static int cycles_threads(void) {
    pthread_t t;
    PROF_INIT(NULL);
    pthread_create(&t, NULL, busy_worker, NULL);
    for (int s = 0; s < 12; s++) {
        {
            PROF_SCOPE("main_work");
            /* each step lasts until the worker has recorded some regions */
            unsigned long start = __atomic_load_n(&worker_iterations, __ATOMIC_RELAXED);
            while (__atomic_load_n(&worker_iterations, __ATOMIC_RELAXED) < start + 100) {}
        }
        PROF_STEP();
    }
    __atomic_store_n(&stop_worker, 1, __ATOMIC_RELAXED);
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
    printf("cycle %d regions %zu steps %zu counters %zu row_calls %llu row_total_matches %d dropped %llu\n",
           prof_cycle_index(c), regions, steps, counters, row ? (unsigned long long)row->calls : 0ULL,
           row && row->total_ns == work_ns, (unsigned long long)prof_cycle_dropped(c));
    prof_table_free(&t);
    (*calls)++;
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
    PROF_INIT(&cfg);
    for (int s = 0; s < 8; s++) {
        {
            PROF_SCOPE("handled");
            PROF_COUNTER("s", s);
            for (volatile int spin = 0; spin < 100000; spin++) {}  /* tens of us: visible in the stacks */
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    printf("handler calls %d\n", calls);
    return 0;
}

/* A rank given by the engine wins over the launcher's environment. */
static int set_rank(void) {
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

int main(int argc, char **argv) {
    static const struct { const char *name; int (*run)(void); } cases[] = {
        { "regions", regions }, { "hostile", hostile }, { "counters", counters },
        { "args", args },       { "cap", cap },         { "lazy", lazy },
        { "schedule", schedule }, { "cycles_threads", cycles_threads }, { "config", config },
        { "handler", handler }, { "set_rank", set_rank }, { "one_region", one_region },
    };
    for (size_t i = 0; argc > 1 && i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(argv[1], cases[i].name)) return cases[i].run();
    fprintf(stderr, "usage: %s CASE\n", argv[0]);
    return 2;
}
