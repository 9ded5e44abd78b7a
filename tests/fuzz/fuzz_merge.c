/* fuzz_merge: a libFuzzer target for the trace readers of the prof tool
   (tools/prof), which read traces that may come from anywhere (another
   version, another tool, a cut file), and for prof merge and prof table on
   top of them.

   The input is one trace, or two when it holds a NUL byte (which no JSON
   text holds; a Perfetto trace split there is two broken ones, and a trace
   without a NUL is still one): the bytes before the first NUL are the trace of argument 0,
   those after it the trace of argument 1, so that the merge itself (ranks,
   sync points, offsets, pids, flow ids) runs too. Each goes the way
   prof merge takes a file: merge_scan (pass 1, through the window: gzip
   inflated as read, the validating JSON parser, the header and collect, or
   the Perfetto packets), merge_align (settle, align), merge_write (pass 2),
   here into memory; the first also the way `prof table` reads one
   (table_cycle: its regions, JSON or Perfetto, into the model) into a
   table, and the way `prof ranks` reads a rank (ranks_fuzz: its steps,
   top-level regions, sync points, open regions). Each trace is held in a buffer
   of exactly its size, as in no file, so that AddressSanitizer sees a read
   past the end.

   It is built from every file of tools/prof but main.c (whose main is the
   program's): here die() jumps back to the driver (g_die_jump) instead of
   exit(2), so a refused trace is an ordinary run, and the tool is quiet
   (g_quiet) unless PROF_FUZZ_VERBOSE is set (a fuzzer makes millions of
   messages); everything is freed on both paths (LeakSanitizer is on).

   Besides crashes, undefined behaviour and leaks, one promise is checked: the
   merged trace is one prof merge reads back, with the same
   baseTimeNanoseconds and as many events as it wrote. A broken promise is an
   abort().

   Build (tests/fuzz/CMakeLists.txt does this under PROF_SANITIZE=address,...):
     clang -g -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_merge.c \
       $(ls tools/prof/[a-z]*.c | grep -v main.c) -lpthread */
#define _POSIX_C_SOURCE 200809L   /* open_memstream under -std=c11 */
#include "../../tools/prof/tool.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the tool's messages, as this driver takes them: quiet unless
   PROF_FUZZ_VERBOSE, and die() jumps back here instead of exiting -------- */

static jmp_buf g_fuzz_die;

/* ---- the run ------------------------------------------------------------ */

/* The merged trace: a memory stream while written, then read back. */
static FILE *g_sink;
static char *g_sink_buf;
static size_t g_sink_len;
static trace g_back;            /* the merged trace, as prof merge reads it */
static int g_reading_back;      /* die() now means a broken promise */

/* A trace of n bytes in a buffer of exactly n. */
static void trace_from(trace *t, const uint8_t *p, size_t n) {
    t->buf = xrealloc(NULL, n);
    if (n) memcpy(t->buf, p, n);
    t->len = n;
}

static void count_event(trace *t, const event *ev, void *n) {
    (void)t;
    (void)ev;
    ++*(size_t *)n;
}

/* The merged trace has been written: prof merge must take it as a trace. */
static void read_back(void) {
    int quiet = g_quiet;
    g_reading_back = 1;
    g_quiet = 0;                /* so that die() says why before the abort */
    trace_init(&g_back, "the merged trace", 0);
    trace_from(&g_back, (const uint8_t *)g_sink_buf, g_sink_len);
    trace_load(&g_back);
    if (g_back.base != merge_base()) {
        fprintf(stderr, "fuzz_merge: the merged trace's base is %" PRId64 ", not %" PRId64 "\n", g_back.base,
                merge_base());
        abort();
    }
    size_t n = 0;
    if (g_back.pf) {            /* Perfetto: its packets, the attributes' one besides */
        size_t len;
        const uint8_t *at;
        trace_rewind(&g_back);
        while (pf_packet(&g_back, &at, &len)) n++;
        trace_close(&g_back);
        n--;
    } else {
        json_walk(&g_back, count_event, &n);
    }
    if (n != merge_written()) {
        fprintf(stderr, "fuzz_merge: the merged trace has %zu events, not the %zu written\n", n, merge_written());
        abort();
    }
    g_reading_back = 0;
    g_quiet = quiet;
}

/* Everything one run holds, on success and after die() alike. */
static void free_run(void) {
    table_free();
    ranks_fuzz_free();
    merge_free();                           /* and the traces, and the readers' state */
    if (g_sink) fclose(g_sink);             /* sets g_sink_buf, ours to free */
    g_sink = NULL;
    free(g_sink_buf);
    g_sink_buf = NULL;
    g_sink_len = 0;
    trace_free(&g_back);
}

/* `prof table`'s reading of trace t (JSON or Perfetto) and its table. */
static void table_of(trace *t) {
    prof_table tab;
    const prof_cycle *cy = table_cycle(0, t);
    if (prof_cycle_table(cy, PROF_SORT_SELF_CPU, PROF_GROUP_ARGS | PROF_GROUP_THREAD | PROF_TABLE_PERCENTILES, &tab))
        prof_table_free(&tab);
    table_free();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    g_quiet = getenv("PROF_FUZZ_VERBOSE") == NULL;
    g_die_jump = &g_fuzz_die;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = (const uint8_t *)memchr(data, 0, size);
    size_t n0 = nul ? (size_t)(nul - data) : size;

    /* Only globals change between here and a longjmp back: no local needs to
       be volatile. */
    if (setjmp(g_fuzz_die) == 0) {
        trace_from(trace_add("rank_a.json", 0), data, n0);
        if (nul) trace_from(trace_add("rank_b.json", 1), nul + 1, size - n0 - 1);
        for (size_t i = 0; i < g_ntr; i++) merge_scan(&g_tr[i]);
        table_of(&g_tr[0]);
        ranks_fuzz(&g_tr[0]);               /* prof ranks's reading of it */
        merge_align();
        g_sink = open_memstream(&g_sink_buf, &g_sink_len);
        if (!g_sink) abort();
        if (!merge_write(g_sink, "merged.json") || fflush(g_sink) != 0) abort();   /* memory does not fill up here */
        read_back();
    } else if (g_reading_back) {
        fprintf(stderr, "fuzz_merge: prof merge refuses its own merged trace:\n%.*s\n", (int)g_sink_len,
                g_sink_buf);
        abort();
    }
    free_run();
    return 0;
}
