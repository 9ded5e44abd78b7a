/* table.c - prof table: the summary table of a saved trace (JSON, gzipped
   JSON or Perfetto), the table the run would have printed. The trace's CPU
   regions (JSON: X events off the GPUs; Perfetto: the BEGIN/END slices of
   thread tracks), their arguments and its steps (ProfilerStep#N) become the
   model (prof.h's public model, >>api-model: its records again, as the
   recorder would have kept them), and prof.h's own table code reads it: the rows, self times
   and arguments of PROF_TABLE's table. Its GPU records go into the model
   too (prof_model_gpu_region, _gpu, _activity): runtime and driver calls,
   kernels, copies, fills and GPU regions, so the GPU columns are the run's
   own: with kernels, a region's GPU total is the time of those launched
   inside it on its thread and its self GPU those launched in no child
   (torch's key_averages()), a row per kernel name; without, its GPU
   region's time. Runtime calls are not rows, as in the run's table. Memory
   columns are not rebuilt. prof diff (diff.c) reads its two traces the
   same way. */
#include "tool.h"

/* The cycles of the run (prof diff's two): global, so that die() leaves
   them reachable. */
static prof_cycle *g_cycle[2];

const prof_cycle *table_cycle(int k, trace *t) { return table_cycle_also(k, t, NULL); }

const prof_cycle *table_cycle_also(int k, trace *t, const model_also *also) {
    prof_cycle_free(g_cycle[k]);
    if (!(g_cycle[k] = prof_model_new())) die("%s: out of memory", t->path);
    if (t->pf) pf_to_model(t, g_cycle[k], also ? also->pf : NULL, also ? also->ctx : NULL);
    else json_to_model(t, g_cycle[k], also ? also->json : NULL, also ? also->ctx : NULL);
    if (!prof_model_finish(g_cycle[k])) die("%s: out of memory", t->path);
    return g_cycle[k];
}

void table_free(void) {
    for (int k = 0; k < 2; k++) {
        prof_cycle_free(g_cycle[k]);
        g_cycle[k] = NULL;
    }
}

/* prof table TRACE [SPEC]: SPEC as PROF_TABLE's (sort=..., rows=N, group=...,
   percentiles); by default every row, by self CPU time. */
int cmd_table(int argc, char **argv) {
    prof_sort sort;
    size_t rows;
    int group;
    if (argc < 1 || argc > 2)
        die("usage: prof table TRACE [sort=self_cpu,rows=N,group=args|thread|domain|capture|function,percentiles]");
    const char *spec = argc > 1 ? argv[1] : "sort=self_cpu";
    if (!strncmp(spec, "--", 2)) spec += 2;        /* --group=domain: the spec's group=domain */
    if (strstr(spec, "group=function")) {       /* PROF_SAMPLE's samples by function (functions.c) */
        const char *r = strstr(spec, "rows=");
        return table_functions(argv[0], r ? (size_t)strtoul(r + 5, NULL, 10) : 0);
    }
    if (!prof_table_spec(spec, &sort, &rows, &group))
        die("'%s' is not a table spec as PROF_TABLE takes (sort=...,rows=N,group=...,percentiles)", argv[1]);
    const prof_cycle *cy = table_cycle(0, trace_open(argv[0], 0));
    prof_table tab;
    if (!prof_cycle_table(cy, sort, group, &tab)) die("%s: out of memory", argv[0]);
    prof_table_print(&tab, stdout, rows);
    prof_table_free(&tab);
    table_free();
    traces_free();
    return 0;
}
