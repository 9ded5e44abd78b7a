/* Every sink's output of one fixed cycle, byte for byte: the JSON trace
   (and TensorBoard's copy, and gzipped), the Perfetto trace, folded stacks,
   the table in three groupings with the memory peaks, the events of the
   cycle API, each with alike-named threads merged and kept apart; two
   variants, the second a flight dump of a distributed run with GPU regions
   and kernel capture. The cycle has every kind of record, arguments,
   memory events, a clipped and an open region, overlapping regions, an
   unnamed thread and names that need escaping. The expected files are in
   tests/golden/: a writer that changes one byte fails here, saying which
   file and where. A deliberate change of format regenerates them:
       GOLDEN_UPDATE=1 ./test_writers    (from its scratch directory)
   The pid and the clock are fixed; the process name is the test's. */
#define PROF_INTERNALS                  /* prof__cycle, the writers; the suite's implementation */
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static prof__ev EV[256];
static size_t NEV;
static void R(uint32_t kind, uint32_t th, const char *name, uint64_t t0, uint64_t t1, uint32_t aux) {
    prof__ev *e = &EV[NEV++];
    e->name = name; e->t0 = t0; e->t1 = t1; e->kind = kind; e->aux = aux; e->th = th;
}
/* PROF_BYTES's key, as an engine's file holds it: its own pointer, never
   the implementation's literal "bytes" (which names a copy's bytes), in
   every build (a linker may merge two literals, never an array) */
static const char BYTES[] = "bytes";
static uint64_t dbl(double v) { uint64_t u; memcpy(&u, &v, 8); return u; }

static void build(prof__cycle *cy, int gpu) {
    /* the workers in the order a collection may find them: the later one first */
    static struct prof__tinfo th[4] = { { 100, "main", 0 }, { 102, "worker", 0 }, { 101, "worker", 0 }, { 103, NULL, 0 } };
    NEV = 0;
    /* main: step 0 [1000, 50000) holding fwd > matmul(args) ; bwd ; mem ; instant ; counter ; sync */
    R(PROF__K_ARG_INT, 0, "M", 2100, 64, 0);
    R(PROF__K_ARG_STR, 0, "dtype", 2200, (uint64_t)(uintptr_t)"f32", 0);
    R(PROF__K_ARG_INT, 0, "flops", 2300, 1000000, 0);
    R(PROF__K_ARG_INT, 0, BYTES, 2300, 4096, 0);
    R(PROF__K_MEM, 0, (const char *)(uintptr_t)0x1000, 2400, 4096, 0);
    R(PROF__K_MEM_TOTAL, 0, NULL, 2400, 4096, 0);
    R(PROF__K_REGION, 0, "matmul", 2000, 9000, 0);
    R(PROF__K_INSTANT, 0, "checkpoint \"q\"", 9500, 0, 0);
    R(PROF__K_REGION, 0, "relu", 9600, 9700, 0);
    R(PROF__K_REGION, 0, "forward", 1500, 10000, 0);
    R(PROF__K_GPU_REGION, 0, "layer", 11000, 15000, 7);
    R(PROF__K_GPU_REGION, 0, "lost_gpu", 15500, 16000, 9);
    R(PROF__K_MEM, 0, (const char *)(uintptr_t)0x1000, 17000, (uint64_t)-4096, 0);
    R(PROF__K_MEM_TOTAL, 0, NULL, 17000, 0, 0);
    R(PROF__K_MEM, 0, (const char *)(uintptr_t)0x2000, 17500, 1 << 20, 1);
    R(PROF__K_MEM_TOTAL, 0, NULL, 17500, 1 << 20, 1);
    R(PROF__K_REGION, 0, "backward", 10500, 18000, 0);
    R(PROF__K_COUNTER, 0, "loss", 19000, dbl(2.5), 0);
    R(PROF__K_SYNC, 0, NULL, 19500, 0, 0);
    R(PROF__K_STEP, 0, NULL, 1000, 20000, 0);
    R(PROF__K_CLIPPED, 0, "spans_steps", 20000, 21000, 0);
    R(PROF__K_REGION, 0, "ctl\x01name;x", 21500, 22000, 0);
    R(PROF__K_REGION, 0, "forward", 20500, 30000, 0);
    R(PROF__K_COUNTER, 0, "loss", 31000, dbl(1.25), 0);
    R(PROF__K_OPEN, 0, "still_open", 32000, 40000, 0);
    R(PROF__K_STEP, 0, NULL, 20000, 40000, 1);
    /* worker 102 (index 1): one load; worker 101 (index 2, the same name,
       earlier: its track is theirs): two loads with args */
    R(PROF__K_REGION, 1, "load", 9000, 12000, 0);
    R(PROF__K_ARG_STR, 1, "file", 9100, (uint64_t)(uintptr_t)"a\"b", 0);
    R(PROF__K_REGION, 1, "read", 9050, 9900, 0);
    R(PROF__K_ARG_INT, 2, "batch", 3000, 5, 0);
    R(PROF__K_REGION, 2, "read", 3100, 4000, 0);
    R(PROF__K_REGION, 2, "load", 3000, 5000, 0);
    R(PROF__K_REGION, 2, "load", 6000, 8000, 0);
    /* unnamed thread: overlapping partly */
    R(PROF__K_REGION, 3, "a", 1000, 3000, 0);
    R(PROF__K_REGION, 3, "b", 2000, 5000, 0);
    R(PROF__K_INSTANT, 3, "ping", 6000, 0, 0);
    memset(cy, 0, sizeof *cy);
    cy->ev = EV; cy->n = cy->cap = NEV;
    cy->th = th; cy->nth = 4;
    cy->index = 2;
    cy->pid = 4242;                     /* the pid its traces name */
    cy->dropped = 3;
    cy->clipped = 1;
    cy->until = 40000;
    if (gpu) {
        static prof__gev g[3];
        static struct prof__gdev_info dev;
        static prof__gact act[6];
        g[0] = (prof__gev){ "layer", 11500, 14500, 7, 0, 13, 0 };
        g[1] = (prof__gev){ "inner", 12000, 13000, 8, 0, 13, 0 };
        g[2] = (prof__gev){ "other", 12500, 16500, 11, 0, 14, 0 };
        cy->gpu = g; cy->ngpu = 3;
        memset(&dev, 0, sizeof dev);
        strcpy(dev.props.name, "NVIDIA H100 80GB HBM3");
        dev.props.total_mem = 80LL << 30; dev.props.major = 9; dev.props.sms = 132; dev.props.warp_size = 32;
        dev.unc_ns = 750; dev.drift_ns = 12;
        cy->gdev = &dev; cy->ngdev = 1;
        cy->gpu_dropped = 1;
        memset(act, 0, sizeof act);
        act[0].a.kind = PROF_GPU_RUNTIME; act[0].a.name = "cudaLaunchKernel"; act[0].a.correlation = 501; act[0].a.cbid = 211;
        act[0].a.device = -1; act[0].t0 = 11100; act[0].t1 = 11300; act[0].tid = 100;
        act[1].a.kind = PROF_GPU_RUNTIME; act[1].a.name = "cudaMemcpyAsync"; act[1].a.correlation = 502; act[1].a.cbid = 41;
        act[1].a.device = -1; act[1].t0 = 11400; act[1].t1 = 11600; act[1].tid = 100;
        act[2].a.kind = PROF_GPU_RUNTIME; act[2].a.name = "cudaLaunchKernel"; act[2].a.correlation = 503; act[2].a.cbid = 211;
        act[2].a.device = -1; act[2].t0 = 3200; act[2].t1 = 3300; act[2].tid = 103;
        act[3].a.kind = PROF_GPU_KERNEL; act[3].a.name = "gemm_kernel"; act[3].a.correlation = 501; act[3].a.device = 0;
        act[3].a.stream = 13; act[3].t0 = 12100; act[3].t1 = 12900;
        act[3].a.grid[0] = 4; act[3].a.grid[1] = 2; act[3].a.grid[2] = 1; act[3].a.block[0] = 128; act[3].a.block[1] = 1; act[3].a.block[2] = 1;
        act[3].a.regs = 32; act[3].a.smem = 1024;
        act[4].a.kind = PROF_GPU_MEMCPY; act[4].a.name = "Memcpy HtoD"; act[4].a.correlation = 502; act[4].a.device = 0;
        act[4].a.stream = 13; act[4].t0 = 13100; act[4].t1 = 13400; act[4].a.bytes = 65536;
        act[5].a.kind = PROF_GPU_KERNEL; act[5].a.name = "orphan"; act[5].a.correlation = 999; act[5].a.device = 0;
        act[5].a.stream = 14; act[5].t0 = 14000; act[5].t1 = 14200;
        cy->act = act; cy->nact = 6; cy->nact_api = 3; cy->act_lost = 2;
        cy->reason = "slow_step"; cy->reason_step = 1; cy->first_step = 0;
    }
}

static void dump_table(const prof__cycle *cy, const char *path, int group, prof_sort sort) {
    prof_table t;
    FILE *f = fopen(path, "w");
    if (!prof_cycle_table(cy, sort, group, &t)) { fprintf(f, "table failed\n"); fclose(f); return; }
    prof_table_print(&t, f, 0);
    prof_table_free(&t);
    prof__mem_print_peaks(cy, f);
    for (size_t i = 0; i < prof_cycle_event_count(cy); i++) {
        prof_event e;
        if (prof_cycle_event(cy, i, &e)) fprintf(f, "ev %zu %d %s %ld %lld %lld %g\n", i, (int)e.kind, e.name ? e.name : "-", e.tid, (long long)e.ts_ns, (long long)e.dur_ns, e.value);
    }
    for (size_t i = 0; i < prof_cycle_gpu_count(cy); i++) {
        prof_gpu_event g;
        prof_cycle_gpu_event(cy, i, &g);
        fprintf(f, "gpu %s %d %lld %u %lld %lld\n", g.name, g.device, g.stream, g.correlation, (long long)g.ts_ns, (long long)g.dur_ns);
    }
    int64_t peak; const char *reg;
    if (prof_cycle_memory_peak(cy, -1, &peak, &reg)) fprintf(f, "peak host %lld %s\n", (long long)peak, reg);
    fclose(f);
}


static int failures;

/* Compares the file just written with tests/golden/NAME (or makes it). */
static void same(const char *name) {
    const char *src = getenv("PROF_TEST_SRC");
    char want_path[1024];
    snprintf(want_path, sizeof want_path, "%s/golden/%s", src ? src : ".", name);
    FILE *a = fopen(name, "rb"), *b = fopen(want_path, getenv("GOLDEN_UPDATE") ? "wb" : "rb");
    if (!a || !b) {
        fprintf(stderr, "FAIL: %s: cannot open %s\n", name, a ? want_path : name);
        failures++;
    } else if (getenv("GOLDEN_UPDATE")) {
        int c;
        while ((c = fgetc(a)) != EOF) fputc(c, b);
    } else {
        long at = 0;
        int x, y;
        do {
            x = fgetc(a);
            y = fgetc(b);
            at++;
        } while (x == y && x != EOF);
        if (x != y) {
            fprintf(stderr, "FAIL: %s differs from %s at byte %ld\n", name, want_path, at - 1);
            failures++;
        }
    }
    if (a) fclose(a);
    if (b) fclose(b);
}

int main(void) {
    char p[64];
    prof__g.clk.tick0 = 0;
    prof__g.clk.mono0 = 0;
    prof__g.clk.ns_per_tick = 1.0;
    prof__g.clk.ns_per_tick_q32 = (uint64_t)1 << 32;
    prof__g.clk.wall0 = 1700000000123456789LL;
    for (int variant = 0; variant < 2; variant++) {
        prof__cycle cy;
        prof__g.who.rank = variant ? 3 : -1;
        prof__g.who.world = variant ? 8 : 0;
        prof__g.conf.separate_threads = 0;
        build(&cy, variant);
        prof__cycle_clock(&cy);
        if (!prof__analyse(&cy)) return 1;
#define OUT(ext) (snprintf(p, sizeof p, "v%d.%s", variant, ext), p)
        prof__write_trace_fmt(&cy, OUT("json"), PROF__FMT_JSON, 0, NULL), same(p);
        prof__write_trace_fmt(&cy, OUT("ops.json"), PROF__FMT_JSON, 1, NULL), same(p);
        prof__write_trace_fmt(&cy, OUT("json.gz"), PROF__FMT_GZ, 0, NULL), same(p);
        prof__write_trace_fmt(&cy, OUT("pftrace"), PROF__FMT_PERFETTO, 0, NULL), same(p);
        prof_cycle_write_stacks(&cy, OUT("stacks")), same(p);
        dump_table(&cy, OUT("table"), 0, PROF_SORT_SELF_CPU), same(p);
        dump_table(&cy, OUT("table_args"), PROF_GROUP_ARGS | PROF_TABLE_PERCENTILES, PROF_SORT_CPU_TOTAL), same(p);
        dump_table(&cy, OUT("table_thread"), PROF_GROUP_THREAD, PROF_SORT_NAME), same(p);
        prof__g.conf.separate_threads = 1;
        if (!prof__analyse(&cy)) return 1;
        prof__write_trace_fmt(&cy, OUT("sep.json"), PROF__FMT_JSON, 0, NULL), same(p);
        prof__write_trace_fmt(&cy, OUT("sep.pftrace"), PROF__FMT_PERFETTO, 0, NULL), same(p);
        prof__analysis_free(&cy);
    }
    if (failures) fprintf(stderr, "%d file(s) differ\n", failures);
    else printf("writers: 20 files %s\n", getenv("GOLDEN_UPDATE") ? "written to tests/golden/" : "as expected");
    return failures != 0;
}
