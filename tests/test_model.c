/* The public model (>>api-model): a cycle made from outside, as the prof
   tool's readers make one from a saved trace, with only the public API.
   Threads and spans are added out of order and with their arguments; the
   finished cycle must hold the records in the recorder's order (a region
   when it ends, its arguments before it), and the table, the events and the
   trace written from it must have exactly the times that were given. */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const prof_row *row(const prof_table *t, const char *name) {
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].name, name)) return &t->rows[i];
    return NULL;
}

int main(void) {
    prof_cycle *c = prof_model_new();
    CHECK(c != NULL);

    /* the worker is met before it is named; main is named at once */
    int worker = prof_model_thread(c, 202, NULL);
    int main_th = prof_model_thread(c, 101, "main");
    CHECK_EQ(worker, 0);
    CHECK_EQ(main_th, 1);
    CHECK_EQ(prof_model_thread(c, 202, "loader"), worker);

    /* main: step 7 [0, 10000) holding forward [1000, 6000) with matmul
       [2000, 3000) (M=64, flops) and relu [4000, 4500); added parent first */
    CHECK(prof_model_step(c, main_th, 7, 0, 10000));
    CHECK(prof_model_region(c, main_th, "forward", 1000, 6000));
    CHECK(prof_model_arg_str(c, "phase", "train"));
    CHECK(prof_model_region(c, main_th, "relu", 4000, 4500));
    CHECK(prof_model_region(c, main_th, "matmul", 2000, 3000));
    CHECK(prof_model_arg_int(c, "M", 64));
    CHECK(prof_model_arg_int(c, "flops", 2000000));
    /* the worker: two loads, the second first */
    CHECK(prof_model_region(c, worker, "load", 5000, 9000));
    CHECK(prof_model_region(c, worker, "load", 500, 1500));

    /* what is not a span, or has no span to belong to, is refused */
    CHECK(!prof_model_region(c, 5, "no such thread", 0, 1));
    CHECK(!prof_model_region(c, main_th, "ends before it begins", 10, 5));
    CHECK(!prof_model_region(c, main_th, "before the origin", -1, 5));
    CHECK(!prof_model_arg_int(c, "orphan", 1));  /* the refused span's */
    CHECK(!prof_model_step(c, main_th, -1, 0, 1));

    CHECK(prof_model_finish(c));
    CHECK(!prof_model_region(c, main_th, "after the finish", 0, 1));   /* finished: nothing more */
    CHECK_EQ(prof_model_thread(c, 303, "late"), -1);

    /* the recorder's order: per thread, a span when it ends, the inner one
       first at one end, its arguments right before it */
    static const struct { prof_event_kind kind; const char *name; long tid; int64_t ts, dur; } want[] = {
        { PROF_EVENT_REGION, "load", 202, 500, 1000 },
        { PROF_EVENT_REGION, "load", 202, 5000, 4000 },
        { PROF_EVENT_REGION, "matmul", 101, 2000, 1000 },
        { PROF_EVENT_REGION, "relu", 101, 4000, 500 },
        { PROF_EVENT_REGION, "forward", 101, 1000, 5000 },
        { PROF_EVENT_STEP, "ProfilerStep", 101, 0, 10000 },
    };
    size_t k = 0, args = 0;
    for (size_t i = 0; i < prof_cycle_event_count(c); i++) {
        prof_event e;
        if (!prof_cycle_event(c, i, &e)) { args++; continue; }   /* an argument's slot */
        if (k >= sizeof want / sizeof want[0]) { CHECK(!"more events than were added"); break; }
        CHECK_EQ(e.kind, want[k].kind);
        CHECK_STR(e.name, want[k].name);
        CHECK_EQ(e.tid, want[k].tid);
        CHECK_EQ(e.ts_ns, want[k].ts);
        CHECK_EQ(e.dur_ns, want[k].dur);
        k++;
    }
    CHECK_EQ(k, 6);
    CHECK_EQ(args, 3);

    /* the table: self times of the nesting, arguments summed or shown */
    prof_table t;
    CHECK(prof_cycle_table(c, PROF_SORT_NAME, PROF_GROUP_ARGS, &t));
    CHECK_EQ(t.n, 5);
    CHECK_EQ(t.threads, 2);
    const prof_row *r = row(&t, "ProfilerStep*");
    CHECK(r && r->calls == 1 && r->total_ns == 10000 && r->self_ns == 5000);
    r = row(&t, "forward");
    CHECK(r && r->total_ns == 5000 && r->self_ns == 3500);
    CHECK_STR(r ? r->args : NULL, "phase=train");
    r = row(&t, "matmul");
    CHECK(r && r->total_ns == 1000 && r->self_ns == 1000 && r->flops == 2000000);
    CHECK_STR(r ? r->args : NULL, "M=64");
    r = row(&t, "load");
    CHECK(r && r->calls == 2 && r->total_ns == 5000 && r->min_ns == 1000 && r->max_ns == 4000);
    prof_table_free(&t);

    /* the table spec PROF_TABLE takes, public */
    prof_sort sort;
    size_t rows;
    int group;
    CHECK(prof_table_spec("sort=cpu_total,rows=3,group=thread,percentiles", &sort, &rows, &group));
    CHECK(sort == PROF_SORT_CPU_TOTAL && rows == 3 && group == (PROF_GROUP_THREAD | PROF_TABLE_PERCENTILES));
    CHECK(!prof_table_spec("sort=nonsense", &sort, &rows, &group));

    /* a trace written from it: the model's times, from its origin */
    CHECK(prof_cycle_write_trace(c, "model.json"));
    FILE *f = fopen("model.json", "rb");
    char buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    CHECK(strstr(buf, "\"name\":\"ProfilerStep#7\",\"pid\":") != NULL);
    CHECK(strstr(buf, "\"name\":\"matmul\",\"pid\":") && strstr(buf, "\"ts\":2.000,\"dur\":1.000,\"args\":{\"M\":64,\"flops\":2000000}"));
    CHECK(strstr(buf, "\"args\":{\"name\":\"loader\"}") != NULL);

    prof_cycle_free(c);
    prof_cycle_free(NULL);              /* nothing: not a model */
    if (failures) fprintf(stderr, "%d check(s) failed\n", failures);
    else printf("model: ok\n");
    return failures != 0;
}
