/* fuzz_merge: a libFuzzer target for tools/prof_merge.c, which reads traces
   that may come from anywhere (another version, another tool, a cut file).

   The input is one trace, or two when it holds a NUL byte (which no JSON
   text holds; a Perfetto trace split there is two broken ones, and a trace
   without a NUL is still one): the bytes before the first NUL are the trace of argument 0,
   those after it the trace of argument 1, so that the merge itself (ranks,
   sync points, offsets, pids, flow ids) runs too. Each goes the way
   prof_merge's main takes a file: load (the validating JSON parser and the
   header), align_ranks (pass 1: collect, settle, align), write_merged
   (pass 2), here into memory; the first also the way `prof table` reads
   one (cli_cycle: its regions, JSON or Perfetto) into a table. Each trace is held in a buffer of exactly its
   size, as in no file, so that AddressSanitizer sees a read past the end.

   prof_merge is built with PROF_MERGE_FUZZ: it has no main, and its die()
   longjmps back here instead of exit(2), so a refused trace is an ordinary
   run; everything is freed on both paths (LeakSanitizer is on).

   Besides crashes, undefined behaviour and leaks, one promise is checked: the
   merged trace is one prof_merge reads back, with the same
   baseTimeNanoseconds and as many events as it wrote. A broken promise is an
   abort().

   Build (tests/fuzz/CMakeLists.txt does this under PROF_SANITIZE=address,...):
     clang -g -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_merge.c -lpthread
   prof_merge's messages are printed when PROF_FUZZ_VERBOSE is set. */
#define _POSIX_C_SOURCE 200809L   /* open_memstream under -std=c11 */
#define PROF_MERGE_FUZZ 1
#include "../../tools/prof_merge.c"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The merged trace: a memory stream while written, then read back. */
static FILE *g_sink;
static char *g_sink_buf;
static size_t g_sink_len;
static trace g_back;            /* the merged trace, as prof_merge reads it */
static int g_reading_back;      /* die() now means a broken promise */

/* Trace `arg` of the run: a copy of n bytes in a buffer of exactly n. */
static void trace_from(trace *t, const char *path, int arg, const uint8_t *p, size_t n) {
    t->path = path;
    t->arg = arg;
    t->rank = arg;              /* unless its distributedInfo says */
    t->buf = xrealloc(NULL, n);
    if (n) memcpy(t->buf, p, n);
    t->len = n;
}

/* The merged trace has been written: prof_merge must take it as a trace. */
static void read_back(void) {
    int notes = g_fuzz_notes;
    g_reading_back = 1;
    g_fuzz_notes = 1;           /* so that die() says why before the abort */
    trace_from(&g_back, "the merged trace", 0, (const uint8_t *)g_sink_buf, g_sink_len);
    load(&g_back);
    if (g_back.base != g_base) {
        fprintf(stderr, "fuzz_merge: the merged trace's base is %" PRId64 ", not %" PRId64 "\n", g_back.base,
                g_base);
        abort();
    }
    size_t n = 0;
    if (g_back.pf) {            /* Perfetto: its packets, the attributes' one besides */
        size_t pos = 0, len;
        const uint8_t *at;
        while (pf_packet(&g_back, &pos, &at, &len)) n++;
        n--;
    } else {
        cursor c;
        span v;
        arr_begin(&c, &g_back.d, g_back.events.p, 1);
        while (arr_next(&c, &v)) n++;
    }
    if (n != g_written) {
        fprintf(stderr, "fuzz_merge: the merged trace has %zu events, not the %zu written\n", n, g_written);
        abort();
    }
    g_reading_back = 0;
    g_fuzz_notes = notes;
}

static prof__cycle g_cy;                /* table_of's cycle */

static void free_run_table(void) {
    cli_free();
    free(g_cy.parent);
    free(g_cy.track);
    memset(&g_cy, 0, sizeof g_cy);
}

/* Everything one run holds, on success and after die() alike. */
static void free_run(void) {
    free_all();
    if (g_sink) fclose(g_sink);             /* sets g_sink_buf, ours to free */
    g_sink = NULL;
    free(g_sink_buf);
    g_sink_buf = NULL;
    g_sink_len = 0;
    free(g_back.buf);
    free(g_back.syncs);
    memset(&g_back, 0, sizeof g_back);
    free_run_table();
}

/* `prof table`'s reading of trace t (JSON or Perfetto) and its table, on a
   clock of its own: the merge's is put back. */
static void table_of(trace *t) {
    unsigned char clk[sizeof prof__g.clk];
    prof_table tab;
    memcpy(clk, &prof__g.clk, sizeof clk);
    cli_clock();
    cli_cycle(t, &g_cli[0], &g_cy);
    if (prof_cycle_table(&g_cy, PROF_SORT_SELF_CPU, PROF_GROUP_ARGS | PROF_GROUP_THREAD | PROF_TABLE_PERCENTILES, &tab))
        prof_table_free(&tab);
    memcpy(&prof__g.clk, clk, sizeof clk);
    free_run_table();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    (void)read_file;            /* main's: files, not memory */
    (void)cli_load;             /* prof table's: likewise */
    (void)usage_text;
    g_fuzz_notes = getenv("PROF_FUZZ_VERBOSE") != NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = (const uint8_t *)memchr(data, 0, size);
    size_t n0 = nul ? (size_t)(nul - data) : size;

    /* Only globals change between here and a longjmp back: no local needs to
       be volatile. */
    if (setjmp(g_fuzz_die) == 0) {
        g_tr = xrealloc(NULL, 2 * sizeof *g_tr);
        memset(g_tr, 0, 2 * sizeof *g_tr);
        g_ntr = nul ? 2 : 1;
        trace_from(&g_tr[0], "rank_a.json", 0, data, n0);
        if (nul) trace_from(&g_tr[1], "rank_b.json", 1, nul + 1, size - n0 - 1);
        for (size_t i = 0; i < g_ntr; i++) load(&g_tr[i]);
        table_of(&g_tr[0]);
        align_ranks();
        g_sink = open_memstream(&g_sink_buf, &g_sink_len);
        if (!g_sink) abort();
        g_w.f = g_sink;
        write_merged("merged.json");
        if (g_w.err || fflush(g_sink) != 0) abort();     /* memory does not fill up here */
        read_back();
    } else if (g_reading_back) {
        fprintf(stderr, "fuzz_merge: prof_merge refuses its own merged trace:\n%.*s\n", (int)g_sink_len,
                g_sink_buf);
        abort();
    }
    free_run();
    return 0;
}
