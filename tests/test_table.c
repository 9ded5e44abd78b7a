/* Summary table, events and folded stacks of a cycle built by hand, with
   known durations: every row field, the sort orders, grouping by arguments,
   the printed table's text and the folded stack lines are checked exactly.
   The clock is set to 1 tick = 1 ns, so the records' ticks are nanoseconds. */
#define PROF_ENABLE 1
#define PROF_INTERNALS                  /* prof__cycle, the table's parts; the suite's implementation */
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ---- building a cycle ---------------------------------------------------- */

static prof__ev evs[256];
static size_t nev;

static void add(uint32_t th, uint32_t kind, const char *name, uint64_t t0, uint64_t t1, uint32_t aux) {
    prof__ev *e = &evs[nev++];
    e->name = name;
    e->t0 = t0;
    e->t1 = t1;
    e->kind = kind;
    e->aux = aux;
    e->th = th;
}

#define U 1000u                         /* the main cycle counts in microseconds */
static void reg(uint32_t th, const char *name, uint64_t t0, uint64_t t1) { add(th, PROF__K_REGION, name, t0, t1, 0); }
static void step(uint32_t th, uint32_t n, uint64_t t0, uint64_t t1) { add(th, PROF__K_STEP, NULL, t0, t1, n); }
static void arg_int(uint32_t th, const char *key, uint64_t t, int64_t v) { add(th, PROF__K_ARG_INT, key, t, (uint64_t)v, 0); }
static void arg_str(uint32_t th, const char *key, uint64_t t, const char *s) {
    add(th, PROF__K_ARG_STR, key, t, (uint64_t)(uintptr_t)s, 0);
}

static struct prof__tinfo threads[2];

/* The cycle of the events added so far, analysed as a saved cycle is (the
   previous one's analysis is freed: one cycle is in use at a time). */
static prof__cycle last;                /* the last cycle made: its analysis is freed with the next */

static prof__cycle make_cycle(void) {
    prof__cycle c;
    memset(&c, 0, sizeof c);
    c.ev = evs;
    c.n = nev;
    c.cap = nev;
    c.th = threads;
    c.nth = 2;
    c.index = 3;
    c.dropped = 5;
    prof__cycle_clock(&c);
    prof__analysis_free(&last);
    if (!prof__analyse(&c)) abort();
    last = c;
    return c;
}

/* Thread 0: two steps; in step 0 a forward and a backward pass with matmuls
   and kernels three deep, arguments and flops. Thread 1: a loader. Records
   are in post-order, as the recorder writes them (a region when it ends). */
static prof__cycle main_cycle(void) {
    nev = 0;
    arg_str(0, "phase", 110 * U, "train");             /* fwd's: before matmul began */
    arg_int(0, "M", 160 * U, 64);                        /* matmul #1's */
    arg_str(0, "dtype", 161 * U, "f32");
    arg_int(0, "flops", 162 * U, 1000);
    reg(0, "kernel", 200 * U, 250 * U);
    reg(0, "matmul", 150 * U, 300 * U);
    arg_int(0, "M", 360 * U, 128);                       /* matmul #2's */
    arg_int(0, "flops", 361 * U, 3000);
    reg(0, "kernel", 400 * U, 420 * U);
    reg(0, "matmul", 350 * U, 500 * U);
    reg(0, "relu", 520 * U, 560 * U);
    arg_int(0, "late", 570 * U, 7);                      /* fwd's: after relu closed */
    reg(0, "fwd", 100 * U, 600 * U);
    arg_int(0, "M", 705 * U, 64);                        /* matmul #3's */
    arg_str(0, "dtype", 706 * U, "f32");
    arg_int(0, "flops", 707 * U, 2000);
    reg(0, "kernel", 710 * U, 800 * U);
    reg(0, "matmul", 700 * U, 900 * U);
    reg(0, "bwd", 650 * U, 950 * U);
    add(0, PROF__K_INSTANT, "mark", 960 * U, 0, 0);
    {
        double v = 2.5;
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        add(0, PROF__K_COUNTER, "loss", 970 * U, bits, 0);
    }
    step(0, 0, 1 * U, 1000 * U);
    reg(0, "fwd", 1100 * U, 1400 * U);
    step(0, 1, 1000 * U, 1500 * U);
    /* thread 1: if the stack were not reset between threads, "load" would
       adopt thread 0's leftover step 1 (it began later) as a child */
    reg(1, "decode", 60 * U, 200 * U);
    reg(1, "kernel", 300 * U, 350 * U);
    reg(1, "decode", 210 * U, 400 * U);
    reg(1, "tiny", 410 * U, 410 * U + 400);
    reg(1, "load", 50 * U, 450 * U);
    return make_cycle();
}

static const prof_row *find(const prof_table *t, const char *name, const char *args) {
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].name, name) && (!args || (t->rows[i].args && !strcmp(t->rows[i].args, args))))
            return &t->rows[i];
    fprintf(stderr, "no row %s [%s]\n", name, args ? args : "");
    failures++;
    return NULL;
}

static void check_row(const prof_table *t, const char *name, const char *args, uint64_t calls, int64_t self,
                      int64_t total, int64_t mn, int64_t mx, int64_t flops) {
    const prof_row *r = find(t, name, args);
    if (!r) return;
    CHECK_EQ(r->calls, calls);
    CHECK_EQ(r->self_ns, self);
    CHECK_EQ(r->total_ns, total);
    CHECK_EQ(r->min_ns, mn);
    CHECK_EQ(r->max_ns, mx);
    CHECK_EQ(r->flops, flops);
    CHECK(r->self_pct == 100.0 * (double)self / (double)t->self_sum_ns);
    CHECK(r->total_pct == 100.0 * (double)total / (double)t->self_sum_ns);
    if (!args) CHECK(r->args == NULL);
}

static void check_order(prof__cycle *c, prof_sort s, const char *const *names, size_t n) {
    prof_table t;
    CHECK(prof_cycle_table(c, s, 0, &t));
    CHECK_EQ(t.n, n);
    for (size_t i = 0; i < n && i < t.n; i++) {
        if (strcmp(t.rows[i].name, names[i])) {
            fprintf(stderr, "sort %d, row %zu: %s, expected %s\n", (int)s, i, t.rows[i].name, names[i]);
            failures++;
        }
    }
    prof_table_free(&t);
}

static void test_table(void) {
    prof__cycle c = main_cycle();
    prof_table t;
    CHECK(prof_cycle_table(&c, PROF_SORT_SELF_CPU, 0, &t));
    CHECK_EQ(t.n, 9);
    /* roots: step 0 (999) + step 1 (500) on thread 0, load (400) on thread 1 */
    CHECK_EQ(t.self_sum_ns, 1899 * U);
    /*              name             calls  self            total          min          max       flops */
    check_row(&t, "kernel",        NULL, 4, 210 * U,        210 * U,       20 * U,      90 * U,   0);
    check_row(&t, "matmul",        NULL, 3, 340 * U,        500 * U,       150 * U,     200 * U,  6000);
    check_row(&t, "relu",          NULL, 1, 40 * U,         40 * U,        40 * U,      40 * U,   0);
    check_row(&t, "fwd",           NULL, 2, 460 * U,        800 * U,       300 * U,     500 * U,  0);
    check_row(&t, "bwd",           NULL, 1, 100 * U,        300 * U,       300 * U,     300 * U,  0);
    check_row(&t, "ProfilerStep*", NULL, 2, 399 * U,        1499 * U,      500 * U,     999 * U,  0);
    check_row(&t, "decode",        NULL, 2, 280 * U,        330 * U,       140 * U,     190 * U,  0);
    check_row(&t, "tiny",          NULL, 1, 400,            400,           400,         400,      0);
    check_row(&t, "load",          NULL, 1, 70 * U - 400,   400 * U,       400 * U,     400 * U,  0);
    prof_table_free(&t);
    CHECK(t.rows == NULL && t.n == 0);

    static const char *const by_self[] = { "fwd", "ProfilerStep*", "matmul", "decode", "kernel", "bwd", "load", "relu", "tiny" };
    static const char *const by_total[] = { "ProfilerStep*", "fwd", "matmul", "load", "decode", "bwd", "kernel", "relu", "tiny" };
    /* avg: 749.5, 400 (fwd and load: name decides), 300, 166.7, 165, 52.5, 40, 0.4 */
    static const char *const by_avg[] = { "ProfilerStep*", "fwd", "load", "bwd", "matmul", "decode", "kernel", "relu", "tiny" };
    static const char *const by_min[] = { "ProfilerStep*", "load", "bwd", "fwd", "matmul", "decode", "relu", "kernel", "tiny" };
    static const char *const by_max[] = { "ProfilerStep*", "fwd", "load", "bwd", "matmul", "decode", "kernel", "relu", "tiny" };
    static const char *const by_calls[] = { "kernel", "matmul", "ProfilerStep*", "decode", "fwd", "bwd", "load", "relu", "tiny" };
    static const char *const by_flops[] = { "matmul", "ProfilerStep*", "bwd", "decode", "fwd", "kernel", "load", "relu", "tiny" };
    static const char *const by_name[] = { "ProfilerStep*", "bwd", "decode", "fwd", "kernel", "load", "matmul", "relu", "tiny" };
    check_order(&c, PROF_SORT_SELF_CPU, by_self, 9);
    check_order(&c, PROF_SORT_CPU_TOTAL, by_total, 9);
    check_order(&c, PROF_SORT_CPU_AVG, by_avg, 9);
    check_order(&c, PROF_SORT_CPU_MIN, by_min, 9);
    check_order(&c, PROF_SORT_CPU_MAX, by_max, 9);
    check_order(&c, PROF_SORT_CALLS, by_calls, 9);
    check_order(&c, PROF_SORT_FLOPS, by_flops, 9);
    check_order(&c, PROF_SORT_NAME, by_name, 9);

    /* grouped by arguments: flops are summed, not part of the key */
    CHECK(prof_cycle_table(&c, PROF_SORT_NAME, 1, &t));
    CHECK_EQ(t.n, 11);
    CHECK_EQ(t.self_sum_ns, 1899 * U);
    check_row(&t, "matmul", "M=64, dtype=f32", 2, 210 * U, 350 * U, 150 * U, 200 * U, 3000);
    check_row(&t, "matmul", "M=128",           1, 130 * U, 150 * U, 150 * U, 150 * U, 3000);
    check_row(&t, "fwd",    "phase=train, late=7", 1, 160 * U, 500 * U, 500 * U, 500 * U, 0);
    check_row(&t, "fwd",    "",                1, 300 * U, 300 * U, 300 * U, 300 * U, 0);
    check_row(&t, "kernel", "",                4, 210 * U, 210 * U, 20 * U, 90 * U, 0);
    check_row(&t, "ProfilerStep*", "",         2, 399 * U, 1499 * U, 500 * U, 999 * U, 0);
    static const char *const gnames[] = { "ProfilerStep*", "bwd", "decode", "fwd", "fwd", "kernel", "load",
                                          "matmul", "matmul", "relu", "tiny" };
    static const char *const gargs[] = { "", "", "", "", "phase=train, late=7", "", "",
                                         "M=128", "M=64, dtype=f32", "", "" };
    for (size_t i = 0; i < 11 && i < t.n; i++) {
        CHECK_STR(t.rows[i].name, gnames[i]);
        CHECK_STR(t.rows[i].args, gargs[i]);
    }
    prof_table_free(&t);

    /* an empty cycle: no rows, success */
    prof__cycle e;
    memset(&e, 0, sizeof e);
    CHECK(prof_cycle_table(&e, PROF_SORT_SELF_CPU, 0, &t));
    CHECK(t.n == 0 && t.rows == NULL && t.self_sum_ns == 0);
    prof_table_print(&t, stdout, 0);    /* prints nothing */
    prof_table_free(&t);
}

static void test_events(void) {
    prof__cycle c = main_cycle();
    prof_event ev;
    CHECK_EQ(prof_cycle_index(&c), 3);
    CHECK_EQ(prof_cycle_dropped(&c), 5);
    CHECK_EQ(prof_cycle_event_count(&c), nev);
    /* wall0 5.123456789 s: baseTimeNanoseconds 5 s, so ts = tick + 123456789 */
    const int64_t shift = 123456789;
    CHECK(!prof_cycle_event(&c, 0, &ev));                    /* an argument */
    CHECK(prof_cycle_event(&c, 4, &ev));
    CHECK(ev.kind == PROF_EVENT_REGION);
    CHECK_STR(ev.name, "kernel");
    CHECK_EQ(ev.tid, 100);
    CHECK_EQ(ev.ts_ns, 200 * U + shift);
    CHECK_EQ(ev.dur_ns, 50 * U);
    CHECK(prof_cycle_event(&c, 19, &ev));
    CHECK(ev.kind == PROF_EVENT_INSTANT);
    CHECK_STR(ev.name, "mark");
    CHECK_EQ(ev.ts_ns, 960 * U + shift);
    CHECK(prof_cycle_event(&c, 20, &ev));
    CHECK(ev.kind == PROF_EVENT_COUNTER);
    CHECK_STR(ev.name, "loss");
    CHECK(ev.value == 2.5);
    CHECK(prof_cycle_event(&c, 23, &ev));
    CHECK(ev.kind == PROF_EVENT_STEP);
    CHECK_STR(ev.name, "ProfilerStep");
    CHECK(ev.value == 1.0);
    CHECK_EQ(ev.ts_ns, 1000 * U + shift);
    CHECK_EQ(ev.dur_ns, 500 * U);
    CHECK(prof_cycle_event(&c, nev - 1, &ev));
    CHECK_STR(ev.name, "load");
    CHECK_EQ(ev.tid, 200);
    CHECK(!prof_cycle_event(&c, nev, &ev));
}

/* ---- text outputs ------------------------------------------------------- */

static char *slurp(FILE *f) {
    static char buf[16384];
    size_t n;
    rewind(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    return buf;
}

static char *slurp_path(const char *path) {
    FILE *f = fopen(path, "rb");
    char *s;
    if (!f) return NULL;
    s = slurp(f);
    fclose(f);
    return s;
}

/* What prof_table_print writes, or NULL if no temporary file. */
static char *printed(const prof_table *t, size_t max_rows) {
    FILE *f = tmpfile();
    char *s;
    if (!f) return NULL;
    prof_table_print(t, f, max_rows);
    s = slurp(f);
    fclose(f);
    return s;
}

static void expect_text(const char *what, const char *got, const char *want) {
    if (!got || strcmp(got, want)) {
        fprintf(stderr, "%s differs.\n--- got:\n%s--- expected:\n%s---\n", what, got ? got : "(none)", want);
        failures++;
    }
}

/* Two threads: a 2 s load; a 1.5 ms step with two 500 us gemms of 2 MFLOP
   each and a 13 ns region whose name is too long for the column. */
static const char long_name[] = "a_region_name_that_is_far_too_long_for_the_name_column_of_it";

static void test_print(void) {
    nev = 0;
    arg_int(0, "flops", 2500, 2000000);
    reg(0, "gemm", 2000, 502000);
    arg_int(0, "flops", 600500, 2000000);
    reg(0, "gemm", 600000, 1100000);
    reg(0, long_name, 1200000, 1200013);
    reg(0, "step", 1000, 1501000);
    reg(1, "load", 1, 2000000001);
    prof__cycle c = make_cycle();
    prof_table t;
    CHECK(prof_cycle_table(&c, PROF_SORT_CPU_TOTAL, 0, &t));
    expect_text("table",
        printed(&t, 0),
        "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU min       CPU max    # of Calls  Total MFLOPs        GFLOPS  \n"
        "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "                                                   load        99.93%        2.000s        99.93%        2.000s        2.000s        2.000s        2.000s             1            --            --  \n"
        "                                                   step         0.02%     499.987us         0.07%       1.500ms       1.500ms       1.500ms       1.500ms             1            --            --  \n"
        "                                                   gemm         0.05%       1.000ms         0.05%       1.000ms     500.000us     500.000us     500.000us             2         4.000         4.000  \n"
        "a_region_name_that_is_far_too_long_for_the_name_colu...         0.00%       0.013us         0.00%       0.013us       0.013us       0.013us       0.013us             1            --            --  \n"
        "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "Self CPU time total: 2.002s\n"
        "Rows sum over the 2 threads that recorded regions, as torch's key_averages() does "
        "(a thread's waiting counts as its self time); group=thread gives a row per thread.\n");
    prof_table_free(&t);

    /* a row per region and thread: the Thread column, no note; widths are
       those of all rows, printed or not */
    CHECK(prof_cycle_table(&c, PROF_SORT_CPU_TOTAL, PROF_GROUP_THREAD, &t));
    CHECK_EQ(t.threads, 2);
    CHECK(t.by_thread && t.rows[0].tid == 200 && !strcmp(t.rows[0].thread, "loader"));
    expect_text("table by thread",
        printed(&t, 2),
        "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ----------  ------------  ------------  \n"
        "                                                   Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU min       CPU max    # of Calls      Thread  Total MFLOPs        GFLOPS  \n"
        "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ----------  ------------  ------------  \n"
        "                                                   load        99.93%        2.000s        99.93%        2.000s        2.000s        2.000s        2.000s             1      loader            --            --  \n"
        "                                                   step         0.02%     499.987us         0.07%       1.500ms       1.500ms       1.500ms       1.500ms             1        main            --            --  \n"
        "... 2 more rows (rows=2; rows=0 prints all)\n"
        "-------------------------------------------------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ----------  ------------  ------------  \n"
        "Self CPU time total: 2.002s\n");
    prof_table_free(&t);

    /* the same name on two threads: two rows, by thread id */
    nev = 0;
    reg(0, "op", 100, 300);
    reg(1, "op", 100, 200);
    reg(0, "op", 400, 500);
    c = make_cycle();
    CHECK(prof_cycle_table(&c, PROF_SORT_NAME, PROF_GROUP_THREAD, &t));
    CHECK_EQ(t.n, 2);
    if (t.n == 2) {
        CHECK(t.rows[0].tid == 100 && t.rows[0].calls == 2 && t.rows[0].total_ns == 300);
        CHECK(t.rows[1].tid == 200 && t.rows[1].calls == 1 && t.rows[1].total_ns == 100);
    }
    prof_table_free(&t);
    CHECK(prof_cycle_table(&c, PROF_SORT_NAME, 0, &t));
    CHECK(t.n == 1 && t.rows[0].calls == 3 && t.rows[0].thread == NULL && t.threads == 2 && !t.by_thread);
    prof_table_free(&t);

    /* max_rows, and the Args column when grouped (no FLOPs here) */
    nev = 0;
    arg_int(0, "N", 150, 8);
    reg(0, "op", 100, 1100);
    reg(0, "op", 2000, 2500);
    c = make_cycle();
    CHECK(prof_cycle_table(&c, PROF_SORT_SELF_CPU, PROF_GROUP_ARGS, &t));
    expect_text("grouped table",
        printed(&t, 1),
        "------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  -------  \n"
        "  Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU min       CPU max    # of Calls     Args  \n"
        "------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  -------  \n"
        "    op        66.67%       1.000us        66.67%       1.000us       1.000us       1.000us       1.000us             1      N=8  \n"
        "... 1 more row (rows=1; rows=0 prints all)\n"
        "------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  -------  \n"
        "Self CPU time total: 1.500us\n");
    prof_table_free(&t);
}

static void test_stacks(void) {
    prof__cycle c = main_cycle();
    const char *path = "test_table_stacks.txt";
    CHECK(prof_cycle_write_stacks(&c, path));
    /* merged per stack, whole microseconds; tiny (0.4 us) rounds to nothing
       and load's 69.6 us to 70 */
    expect_text("stacks", slurp_path(path),
        "ProfilerStep* 399\n"
        "ProfilerStep*;bwd 100\n"
        "ProfilerStep*;bwd;matmul 110\n"
        "ProfilerStep*;bwd;matmul;kernel 90\n"
        "ProfilerStep*;fwd 460\n"
        "ProfilerStep*;fwd;matmul 230\n"
        "ProfilerStep*;fwd;matmul;kernel 70\n"
        "ProfilerStep*;fwd;relu 40\n"
        "load 70\n"
        "load;decode 280\n"
        "load;decode;kernel 50\n");

    /* frame names cannot break the format */
    nev = 0;
    reg(0, "c\td\ne", 1500, 2100);
    reg(0, "z", 2200, 2600);
    reg(0, "a;b", 1000, 3000);
    c = make_cycle();
    CHECK(prof_cycle_write_stacks(&c, path));
    expect_text("sanitised stacks", slurp_path(path), "a:b 1\na:b;c d e 1\n");
    remove(path);

    fprintf(stderr, "(an expected message follows)\n");
    CHECK(!prof_cycle_write_stacks(&c, "/nonexistent-dir/stacks.txt"));
}

static void test_trace(void) {
    prof__cycle c = main_cycle();
    const char *path = "test_table_trace.json";
    CHECK(prof_cycle_write_trace(&c, path));
    const char *s = slurp_path(path);
    CHECK(s && strstr(s, "\"name\":\"ProfilerStep#1\""));
    CHECK(s && strstr(s, "\"args\":{\"phase\":\"train\",\"late\":7}"));
    remove(path);
}

/* Percentiles, exact: "r" 100 times with every length from 1 to 100 us, in a
   scrambled order, and "s" 7 times (10..70 us): nearest rank, so p50 is the
   50th and 4th smallest, p90 the 90th and 7th (ceil(6.3)), p99 the 99th and
   7th. Without the flag they stay 0 and the table has no such columns. */
static void test_percentiles(void) {
    nev = 0;
    uint64_t t = 1000 * U;
    for (uint64_t i = 0; i < 100; i++) {
        uint64_t len = (i * 37 % 100 + 1) * U;         /* 37 and 100 coprime: each length once */
        reg(0, "r", t, t + len);
        t += len + U;
    }
    for (uint64_t i = 0; i < 7; i++) {
        uint64_t len = ((i * 3) % 7 + 1) * 10 * U;
        reg(0, "s", t, t + len);
        t += len + U;
    }
    prof__cycle c = make_cycle();
    prof_table tab;
    CHECK(prof_cycle_table(&c, PROF_SORT_NAME, PROF_TABLE_PERCENTILES, &tab));
    CHECK_EQ(tab.n, 2);
    CHECK(tab.has_pct);
    const prof_row *r = &tab.rows[0], *q = &tab.rows[1];
    CHECK_STR(r->name, "r");
    CHECK_EQ(r->p50_ns, 50 * U);
    CHECK_EQ(r->p90_ns, 90 * U);
    CHECK_EQ(r->p99_ns, 99 * U);
    CHECK_EQ(r->max_ns, 100 * U);
    CHECK_STR(q->name, "s");
    CHECK_EQ(q->p50_ns, 40 * U);
    CHECK_EQ(q->p90_ns, 70 * U);
    CHECK_EQ(q->p99_ns, 70 * U);
    const char *text = printed(&tab, 0);
    CHECK(text && strstr(text, "CPU max       CPU p50       CPU p90       CPU p99    # of Calls"));
    CHECK(text && strstr(text, "100.000us      50.000us      90.000us      99.000us"));
    prof_table_free(&tab);
    CHECK(prof_cycle_table(&c, PROF_SORT_NAME, 0, &tab));
    CHECK(!tab.has_pct && tab.rows[0].p50_ns == 0);
    prof_table_free(&tab);
}

/* Achieved rates and the share of a peak: "gemm" twice in 1 ms with 4 GFLOP
   and 2 GB moved is 4000 GFLOP/s and 2000 GB/s, half of an 8 TFLOP/s and
   4000 GB/s device; "copy" moves 1 GB in 250 us, the whole bandwidth. The
   peaks of a GPU by its name; the config's first. */
static void test_throughput(void) {
    nev = 0;
    arg_int(0, "flops", 1500 * U, 2000000000);
    arg_int(0, "bytes", 1500 * U, 1000000000);
    reg(0, "gemm", 1000 * U, 1500 * U);
    arg_int(0, "flops", 2500 * U, 2000000000);
    arg_int(0, "bytes", 2500 * U, 1000000000);
    reg(0, "gemm", 2000 * U, 2500 * U);
    arg_int(0, "bytes", 3100 * U, 1000000000);
    reg(0, "copy", 3000 * U, 3250 * U);
    prof__cycle c = make_cycle();
    prof_table tab;
    prof__g.conf.peak_tflops = 8.0;
    prof__g.conf.peak_gbps = 4000.0;
    CHECK(prof_cycle_table(&c, PROF_SORT_NAME, PROF_GROUP_ARGS, &tab));
    CHECK_EQ(tab.n, 2);
    CHECK_STR(tab.rows[1].name, "gemm");
    CHECK_EQ(tab.rows[1].flops, 4000000000LL);
    CHECK_EQ(tab.rows[1].bytes, 2000000000LL);
    CHECK_STR(tab.rows[1].args, "");            /* summed, not shown as arguments */
    CHECK(tab.peak_tflops == 8.0 && tab.peak_gbps == 4000.0);
    const char *text = printed(&tab, 0);
    CHECK(text && strstr(text, "Total GFLOPs        GFLOPS  % peak FLOPs   Total bytes          GB/s     % peak BW"));
    CHECK(text && strstr(text, "       4.000      4000.000        50.00%       1.86 Gb      2000.000        50.00%"));
    CHECK(text && strstr(text, "          --            --            --     953.67 Mb      4000.000       100.00%"));
    prof_table_free(&tab);
    prof__g.conf.peak_tflops = prof__g.conf.peak_gbps = 0;

    struct prof__gdev_info dev;
    memset(&dev, 0, sizeof dev);
    c.gdev = &dev;
    c.ngdev = 1;
    static const struct { const char *name; double tflops, gbps; } gpus[] = {
        { "NVIDIA H100 80GB HBM3", 989.0, 3350.0 }, { "NVIDIA H100 PCIe", 756.0, 2000.0 },
        { "NVIDIA H200", 989.0, 4800.0 }, { "NVIDIA A100-SXM4-80GB", 312.0, 2039.0 },
        { "AMD Instinct MI300X", 1307.0, 5300.0 }, { "Fake GPU 0", 0.0, 0.0 },
    };
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
        snprintf(dev.props.name, sizeof dev.props.name, "%s", gpus[i].name);
        memset(&tab, 0, sizeof tab);
        prof__table_peaks(&c, &tab);
        CHECK(tab.peak_tflops == gpus[i].tflops && tab.peak_gbps == gpus[i].gbps);
    }
    prof__g.conf.peak_tflops = 100.0;           /* the config wins over the list */
    snprintf(dev.props.name, sizeof dev.props.name, "NVIDIA H100 80GB HBM3");
    prof__table_peaks(&c, &tab);
    CHECK(tab.peak_tflops == 100.0 && tab.peak_gbps == 3350.0);
    prof__g.conf.peak_tflops = 0;
}

static void test_spec(void) {
    prof_sort s = PROF_SORT_NAME;
    size_t rows = 99;
    int g = 7;
    CHECK(prof__parse_table_spec("sort=self_cpu,rows=10", &s, &rows, &g, NULL));
    CHECK(s == PROF_SORT_SELF_CPU && rows == 10 && g == 0);
    CHECK(prof__parse_table_spec("group=args,sort=cpu_time_total", &s, &rows, &g, NULL));
    CHECK(s == PROF_SORT_CPU_TOTAL && rows == 0 && g == 1);
    CHECK(prof__parse_table_spec("group=thread", &s, &rows, &g, NULL));
    CHECK(s == PROF_SORT_SELF_CPU && rows == 0 && g == PROF_GROUP_THREAD);
    CHECK(prof__parse_table_spec("rows=4,group=args+thread", &s, &rows, &g, NULL));
    CHECK(rows == 4 && g == (PROF_GROUP_ARGS | PROF_GROUP_THREAD));
    CHECK(prof__parse_table_spec("1", &s, &rows, &g, NULL));
    CHECK(s == PROF_SORT_SELF_CPU && rows == 0 && g == 0);
    CHECK(prof__parse_table_spec("sort=cpu_max,rows=5,percentiles,group=thread", &s, &rows, &g, NULL));
    CHECK(s == PROF_SORT_CPU_MAX && rows == 5 && g == (PROF_GROUP_THREAD | PROF_TABLE_PERCENTILES));
    CHECK(!prof__parse_table_spec("rows=5,percentile", &s, &rows, &g, NULL));
    CHECK(!prof__parse_table_spec("rows=5,,percentiles", &s, &rows, &g, NULL));
    static const char *const names[] = { "self_cpu", "self_cpu_time_total", "cpu_total", "cpu_time_total",
                                         "cpu_avg", "cpu_time", "cpu_min", "cpu_max", "calls", "count",
                                         "flops", "name" };
    static const prof_sort sorts[] = { PROF_SORT_SELF_CPU, PROF_SORT_SELF_CPU, PROF_SORT_CPU_TOTAL,
                                       PROF_SORT_CPU_TOTAL, PROF_SORT_CPU_AVG, PROF_SORT_CPU_AVG,
                                       PROF_SORT_CPU_MIN, PROF_SORT_CPU_MAX, PROF_SORT_CALLS, PROF_SORT_CALLS,
                                       PROF_SORT_FLOPS, PROF_SORT_NAME };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char spec[64];
        snprintf(spec, sizeof spec, "sort=%s,rows=3,group=name", names[i]);
        CHECK(prof__parse_table_spec(spec, &s, &rows, &g, NULL));
        CHECK(s == sorts[i] && rows == 3 && g == 0);
    }
    static const char *const bad[] = { "", "sort", "sort=bogus", "rows=-1", "rows=x", "rows=", "group=x",
                                       "foo=1", "sort=self_cpu,", "sort=self_cpu;rows=1" };
    s = PROF_SORT_FLOPS;
    rows = 42;
    g = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (prof__parse_table_spec(bad[i], &s, &rows, &g, NULL)) {
            fprintf(stderr, "spec '%s' accepted\n", bad[i]);
            failures++;
        }
    CHECK(s == PROF_SORT_FLOPS && rows == 42 && g == 1);     /* untouched on failure */

    /* PROF_SCHEDULE, through the same tokenizer */
    prof_schedule sc = { 9, 9, 9, 9, 9 };
    CHECK(prof__parse_schedule("skip_first=3,wait=5,warmup=1,active=3,repeat=2", &sc));
    CHECK(sc.skip_first == 3 && sc.wait == 5 && sc.warmup == 1 && sc.active == 3 && sc.repeat == 2);
    CHECK(prof__parse_schedule("active=1", &sc) && sc.wait == 0 && sc.active == 1);
    static const char *const bad_sched[] = { "", "active=0", "wait=1", "active=3,", "=3", "active", "active=-1",
                                             "bogus=1,active=1", "wait=1,warmup=2147483647,active=1" };
    for (size_t i = 0; i < sizeof bad_sched / sizeof bad_sched[0]; i++)
        if (prof__parse_schedule(bad_sched[i], &sc)) {
            fprintf(stderr, "schedule '%s' accepted\n", bad_sched[i]);
            failures++;
        }
}

/* ---- memory ------------------------------------------------------------- */

/* One memory event: its record and its total, adjacent, as the recorder
   writes them. code: 0 host, 1 + d GPU d. */
static void mem(uint32_t th, uint64_t t, uintptr_t addr, int64_t bytes, uint32_t code, int64_t total) {
    add(th, PROF__K_MEM, (const char *)addr, t, (uint64_t)bytes, code);
    add(th, PROF__K_MEM_TOTAL, NULL, t, (uint64_t)total, code);
}

/* Thread 0: a step with fwd (a matmul with a kernel inside, a relu) and bwd
   (a matmul), host memory throughout and GPU 0 memory in bwd; thread 1: a
   load with a decode inside, and an event outside any region. Host totals
   run in time order across both threads. Plus what readers must skip: a lone
   total (a chunk's padding) and an event whose total was lost. */
static prof__cycle mem_cycle(void) {
    nev = 0;
    add(0, PROF__K_MEM_TOTAL, NULL, 5 * U, 0, 0);         /* padding */
    mem(0, 110 * U, 0x1000, 1000, 0, 1800);                 /* fwd's */
    mem(0, 160 * U, 0x2000, 4000, 0, 5800);                 /* matmul #1's */
    mem(0, 210 * U, 0x3000, 500, 0, 6300);                  /* kernel's: the host peak */
    mem(0, 240 * U, 0x3000, -500, 0, 5800);
    reg(0, "kernel", 200 * U, 250 * U);
    reg(0, "matmul", 150 * U, 300 * U);
    mem(0, 310 * U, 0x2000, -4000, 0, 1800);                /* fwd's */
    mem(0, 530 * U, 0x4000, 2000, 0, 3864);                 /* relu's */
    reg(0, "relu", 520 * U, 560 * U);
    reg(0, "fwd", 100 * U, 600 * U);
    mem(0, 610 * U, 0x5000, 300, 0, 4164);                  /* the step's own */
    add(0, PROF__K_MEM, (const char *)0x9999000, 620 * U, 77777777, 0); /* its total lost */
    mem(0, 660 * U, 0x1000, -1000, 0, 3164);                /* bwd's */
    mem(0, 690 * U, 0xa000, 8192, 1, 8192);                 /* bwd's, GPU 0 */
    mem(0, 710 * U, 0xb000, 2048, 1, 10240);                /* matmul #2's: the GPU peak */
    reg(0, "matmul", 700 * U, 900 * U);
    mem(0, 920 * U, 0xa000, -8192, 1, 2048);                /* bwd's */
    reg(0, "bwd", 650 * U, 950 * U);
    step(0, 4, 1 * U, 1000 * U);
    mem(1, 55 * U, 0x6000, 700, 0, 700);                    /* load's */
    mem(1, 70 * U, 0x7000, 100, 0, 800);                    /* decode's */
    reg(1, "decode", 60 * U, 200 * U);
    reg(1, "load", 50 * U, 450 * U);
    mem(1, 500 * U, 0x8000, 64, 0, 1864);                   /* no region */
    return make_cycle();
}

static void check_mem_row(const prof_table *t, const char *name, int64_t cpu, int64_t self_cpu, int64_t gpu,
                          int64_t self_gpu) {
    const prof_row *r = find(t, name, NULL);
    if (!r) return;
    CHECK_EQ(r->cpu_mem, cpu);
    CHECK_EQ(r->self_cpu_mem, self_cpu);
    CHECK_EQ(r->gpu_mem, gpu);
    CHECK_EQ(r->self_gpu_mem, self_gpu);
}

static void test_mem_table(void) {
    prof__cycle c = mem_cycle();
    prof_table t;
    CHECK(prof_cycle_table(&c, PROF_SORT_NAME, 0, &t));
    CHECK_EQ(t.n, 8);
    CHECK(t.has_mem && t.has_gpu_mem);
    /* total = self + the children's totals; the step owns what no region
       inside it does; events outside every region count nowhere */
    /*                              cpu    self    gpu   self gpu */
    check_mem_row(&t, "kernel",        0,     0,     0,     0);
    check_mem_row(&t, "matmul",     4000,  4000,  2048,  2048);
    check_mem_row(&t, "relu",       2000,  2000,     0,     0);
    check_mem_row(&t, "fwd",        3000, -3000,     0,     0);
    check_mem_row(&t, "bwd",       -1000, -1000,  2048,     0);
    check_mem_row(&t, "ProfilerStep*", 2300, 300, 2048,     0);
    check_mem_row(&t, "decode",      100,   100,     0,     0);
    check_mem_row(&t, "load",        800,   700,     0,     0);
    /* the memory records change no time figure */
    check_row(&t, "matmul", NULL, 2, 300 * U, 350 * U, 150 * U, 200 * U, 0);
    check_row(&t, "fwd", NULL, 1, 310 * U, 500 * U, 500 * U, 500 * U, 0);
    prof_table_free(&t);

    static const char *const by_cpu[] = { "matmul", "fwd", "ProfilerStep*", "relu", "load", "decode", "kernel", "bwd" };
    static const char *const by_self_cpu[] = { "matmul", "relu", "load", "ProfilerStep*", "decode", "kernel", "bwd", "fwd" };
    static const char *const by_gpu[] = { "ProfilerStep*", "bwd", "matmul", "decode", "fwd", "kernel", "load", "relu" };
    static const char *const by_self_gpu[] = { "matmul", "ProfilerStep*", "bwd", "decode", "fwd", "kernel", "load", "relu" };
    check_order(&c, PROF_SORT_CPU_MEM, by_cpu, 8);
    check_order(&c, PROF_SORT_SELF_CPU_MEM, by_self_cpu, 8);
    check_order(&c, PROF_SORT_GPU_MEM, by_gpu, 8);
    check_order(&c, PROF_SORT_SELF_GPU_MEM, by_self_gpu, 8);

    /* grouped by arguments: the same figures per group */
    CHECK(prof_cycle_table(&c, PROF_SORT_NAME, 1, &t));
    check_mem_row(&t, "matmul", 4000, 4000, 2048, 2048);
    check_mem_row(&t, "load", 800, 700, 0, 0);
    prof_table_free(&t);

    /* the PROF_TABLE spellings, torch's too */
    static const char *const names[] = { "cpu_mem", "cpu_memory_usage", "self_cpu_mem", "self_cpu_memory_usage",
                                         "gpu_mem", "cuda_memory_usage", "self_gpu_mem", "self_cuda_memory_usage" };
    static const prof_sort sorts[] = { PROF_SORT_CPU_MEM, PROF_SORT_CPU_MEM, PROF_SORT_SELF_CPU_MEM,
                                       PROF_SORT_SELF_CPU_MEM, PROF_SORT_GPU_MEM, PROF_SORT_GPU_MEM,
                                       PROF_SORT_SELF_GPU_MEM, PROF_SORT_SELF_GPU_MEM };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char spec[64];
        prof_sort s = PROF_SORT_NAME;
        size_t rows = 0;
        int g = 1;
        snprintf(spec, sizeof spec, "rows=2,sort=%s", names[i]);
        CHECK(prof__parse_table_spec(spec, &s, &rows, &g, NULL));
        CHECK(s == sorts[i] && rows == 2 && g == 0);
    }

    /* no memory events: no memory columns, all zero */
    c = main_cycle();
    CHECK(prof_cycle_table(&c, PROF_SORT_CPU_MEM, 0, &t));
    CHECK(!t.has_mem && !t.has_gpu_mem);
    for (size_t i = 0; i < t.n; i++)
        CHECK(!t.rows[i].cpu_mem && !t.rows[i].self_cpu_mem && !t.rows[i].gpu_mem && !t.rows[i].self_gpu_mem);
    prof_table_free(&t);
}

static void test_mem_peak(void) {
    prof__cycle c = mem_cycle();
    int64_t peak = -1;
    const char *region = NULL;
    CHECK(prof_cycle_memory_peak(&c, -1, &peak, &region));
    CHECK_EQ(peak, 6300);
    CHECK_STR(region, "kernel");
    CHECK(prof_cycle_memory_peak(&c, 0, &peak, &region));
    CHECK_EQ(peak, 10240);
    CHECK_STR(region, "matmul");
    CHECK(!prof_cycle_memory_peak(&c, 1, &peak, &region));
    CHECK(peak == 0 && region == NULL);
    CHECK(!prof_cycle_memory_peak(&c, 64, &peak, &region));
    CHECK(!prof_cycle_memory_peak(&c, -2, NULL, NULL));

    /* a peak owned by a step, one outside every region, and the earliest of
       equal peaks */
    nev = 0;
    mem(0, 10, 0x10, 64, 0, 64);
    reg(0, "r", 20, 30);
    step(0, 7, 5, 100);
    mem(1, 50, 0x20, 32, 0, 64);                            /* equal, later */
    mem(1, 60, 0x30, 4096, 1, 4096);
    c = make_cycle();
    CHECK(prof_cycle_memory_peak(&c, -1, &peak, &region));
    CHECK_EQ(peak, 64);
    CHECK_STR(region, "ProfilerStep*");
    CHECK(prof_cycle_memory_peak(&c, 0, &peak, &region));
    CHECK_STR(region, "(no region)");
    FILE *f = tmpfile();
    if (f) {
        prof__mem_print_peaks(&c, f);
        expect_text("peak lines", slurp(f),
            "prof: cycle 3 peak CPU memory 64 b at 'ProfilerStep*' (step 7)\n"
            "prof: cycle 3 peak GPU 0 memory 4.00 Kb at '(no region)' (step 7)\n");
        fclose(f);
    }
    c = main_cycle();
    CHECK(!prof_cycle_memory_peak(&c, -1, &peak, &region));
}

static void test_mem_print(void) {
    /* torch's _format_memory: 1024-based, two decimals, "b" below 1 Kb */
    static const struct { int64_t b; const char *s; } fm[] = {
        { 0, "0 b" }, { 1023, "1023 b" }, { -1023, "-1023 b" }, { 1024, "1.00 Kb" }, { 1536, "1.50 Kb" },
        { -1536, "-1.50 Kb" }, { 1048575, "1024.00 Kb" }, { 1048576, "1.00 Mb" }, { 3407872, "3.25 Mb" },
        { 1073741824, "1.00 Gb" }, { 5368709120LL, "5.00 Gb" }, { -2147483648LL, "-2.00 Gb" },
    };
    for (size_t i = 0; i < sizeof fm / sizeof fm[0]; i++) {
        char o[32];
        prof__fmt_mem(o, sizeof o, fm[i].b);
        CHECK_STR(o, fm[i].s);
    }

    /* host memory only: CPU Mem and Self CPU Mem before # of Calls */
    nev = 0;
    mem(0, 1100, 0x10, 3407872, 0, 3407872);
    mem(0, 1300, 0x20, 1536, 0, 3409408);
    mem(0, 1400, 0x20, -2048, 0, 3407360);
    reg(0, "small", 1200, 1500);
    reg(0, "big", 1000, 2000);
    prof__cycle c = make_cycle();
    prof_table t;
    CHECK(prof_cycle_table(&c, PROF_SORT_CPU_MEM, 0, &t));
    expect_text("memory table", printed(&t, 0),
        "---------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "     Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU min       CPU max       CPU Mem  Self CPU Mem    # of Calls  \n"
        "---------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "      big        70.00%       0.700us       100.00%       1.000us       1.000us       1.000us       1.000us       3.25 Mb       3.25 Mb             1  \n"
        "    small        30.00%       0.300us        30.00%       0.300us       0.300us       0.300us       0.300us        -512 b        -512 b             1  \n"
        "---------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  \n"
        "Self CPU time total: 1.000us\n");
    prof_table_free(&t);

    /* with GPU memory: its pair too, then # of Calls, Args and FLOPs */
    nev = 0;
    arg_int(0, "flops", 1001, 2000);
    arg_str(0, "dtype", 1001, "f16");
    mem(0, 1002, 0x30, 2147483648LL, 1, 2147483648LL);
    reg(0, "op", 1000, 2000);
    c = make_cycle();
    CHECK(prof_cycle_table(&c, PROF_SORT_SELF_CPU, 1, &t));
    expect_text("GPU memory table", printed(&t, 0),
        "------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  -------------  ------------  ------------  \n"
        "  Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU min       CPU max       CPU Mem  Self CPU Mem       GPU Mem  Self GPU Mem    # of Calls           Args  Total KFLOPs        GFLOPS  \n"
        "------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  -------------  ------------  ------------  \n"
        "    op       100.00%       1.000us       100.00%       1.000us       1.000us       1.000us       1.000us           0 b           0 b       2.00 Gb       2.00 Gb             1      dtype=f16         2.000         2.000  \n"
        "------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  ------------  -------------  ------------  ------------  \n"
        "Self CPU time total: 1.000us\n");
    prof_table_free(&t);
}

/* The writer: a [memory] event as Kineto writes one and a counter sample per
   event; the padding and the event without its total are skipped. */
static void test_mem_trace(void) {
    prof__cycle c = mem_cycle();
    const char *path = "test_table_mem.json";
    CHECK(prof_cycle_write_trace(&c, path));
    const char *s = slurp_path(path);
    CHECK(s && strstr(s,
        "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\",\"pid\":"));
    CHECK(s && strstr(s, ",\"tid\":100,\"ts\":123566.789,\"args\":{\"Device Type\":0,\"Device Id\":-1,"
                         "\"Addr\":4096,\"Bytes\":1000,\"Total Allocated\":1800,\"Total Reserved\":1800}}"));
    CHECK(s && strstr(s, ",\"tid\":100,\"ts\":123696.789,\"args\":{\"Device Type\":0,\"Device Id\":-1,"
                         "\"Addr\":12288,\"Bytes\":-500,\"Total Allocated\":5800,\"Total Reserved\":5800}}"));
    CHECK(s && strstr(s, ",\"tid\":100,\"ts\":124146.789,\"args\":{\"Device Type\":1,\"Device Id\":0,"
                         "\"Addr\":40960,\"Bytes\":8192,\"Total Allocated\":8192,\"Total Reserved\":8192}}"));
    CHECK(s && strstr(s, "{\"ph\":\"C\",\"name\":\"Memory (CPU)\",\"pid\":"));
    CHECK(s && strstr(s, ",\"tid\":200,\"ts\":123956.789,\"args\":{\"Allocated\":1864}}"));
    CHECK(s && strstr(s, "{\"ph\":\"C\",\"name\":\"Memory (GPU 0)\",\"pid\":"));
    CHECK(s && strstr(s, ",\"tid\":100,\"ts\":124166.789,\"args\":{\"Allocated\":10240}}"));
    size_t nmem = 0, ncnt = 0;
    for (const char *p = s; p && (p = strstr(p, "\"name\":\"[memory]\"")); p++) nmem++;
    for (const char *p = s; p && (p = strstr(p, "\"name\":\"Memory (")); p++) ncnt++;
    CHECK_EQ(nmem, 14);
    CHECK_EQ(ncnt, 14);
    CHECK(s && !strstr(s, "77777777") && !strstr(s, "161058816"));  /* the lost half's Bytes and Addr */
    remove(path);
}

int main(void) {
    /* 1 tick = 1 ns from 0; the wall clock read at init was 5.123456789 s */
    prof__g.clk.tick0 = 0;
    prof__g.clk.mono0 = 0;
    prof__g.clk.wall0 = 5123456789;
    prof__g.clk.ns_per_tick = 1.0;
    prof__g.clk.ns_per_tick_q32 = 1ull << 32;
    threads[0].tid = 100;
    threads[0].name = "main";
    threads[1].tid = 200;
    threads[1].name = "loader";

    test_table();
    test_events();
    test_print();
    test_stacks();
    test_trace();
    test_spec();
    test_percentiles();
    test_throughput();
    test_mem_table();
    test_mem_peak();
    test_mem_print();
    test_mem_trace();
    prof__analysis_free(&last);
    if (failures) {
        fprintf(stderr, "test_table: %d failures\n", failures);
        return 1;
    }
    printf("test_table: ok\n");
    return 0;
}
