/* tool.h - what the files of `prof` (tools/prof/) share: messages, the
   traces as read (JSON and Perfetto readers, gzip), the model a trace is
   rebuilt into for prof table and prof diff, the output writers, and each
   command's entry point. Internal: nothing here is prof.h's API.

   Only prof_link.c includes prof.h's implementation and touches its private
   names (prof__*); every other file uses prof.h's public API and the tool_*
   functions below, which prof_link.c defines on top of prof.h. */
#ifndef PROF_TOOL_H
#define PROF_TOOL_H

/* prof.h's public API, enabled: prof_intern, prof_cycle_table and the table
   types are the real functions (prof_link.c defines them), not the no-op
   stubs of a disabled build. */
#ifndef PROF_ENABLE
#define PROF_ENABLE 1
#endif
#include "prof.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_RANK    999     /* pid r of a CPU must stay below 1000 + 100 r' + d of a GPU */
#define PF_MAX_RANK 510     /* (rank + 1) << 22 stays an int32 pid */
#define NS_PER_S    INT64_C(1000000000)

/* ======================================================================== */
/*  Messages (say.c)                                                        */
/* ======================================================================== */

/* One line on stderr, "<command>: ...", g_prog naming the command (main.c
   sets "prof merge", "prof table", "prof diff"); nothing when g_quiet. */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A message, then the output file half written removed (g_partial), then
   exit 2, or a jump to *g_die_jump when a driver set one (per thread: prof
   ranks's readers catch their own, their message kept in g_die_text, for
   the main thread to say once the others have stopped). */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern const char *g_prog;
extern int g_quiet;
#define DIE_TEXT 1024
extern _Thread_local jmp_buf *g_die_jump;
extern _Thread_local char *g_die_text;

extern const char *g_partial;   /* merge.c: output file being written, removed by die() */

static inline void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) die("out of memory");
    return p;
}

/* Checked int64 arithmetic: absurd inputs must give a message, not UB. */
static inline int64_t add_ck(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) die("times out of range (%" PRId64 " + %" PRId64 " ns)", a, b);
    return r;
}
static inline int64_t sub_ck(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) die("times out of range (%" PRId64 " - %" PRId64 " ns)", a, b);
    return r;
}


/* ======================================================================== */
/*  JSON (read_json.c): a strict validating parser over a file in memory    */
/* ======================================================================== */
/* Nothing is copied: values are spans of the file's text, so every field the
   merge does not rewrite is written back exactly as it was read. */

typedef struct { const char *p; size_t n; } span;   /* raw JSON text; n == 0: absent */

typedef struct {
    const char *path;
    const char *buf, *end;
    uint64_t off;       /* where buf is in the trace (its window's place) */
} doc;

/* Walks the members of an object or the elements of an array, validating
   each value as it passes: obj_begin/arr_begin at the bracket, then
   obj_next/arr_next until they return 0; c.p is then past the closing one. */
typedef struct {
    const doc *d;
    const char *p;
    int depth;
    size_t n;           /* members or elements so far */
} cursor;

void cur_begin(cursor *c, const doc *d, const char *p, int depth);
#define obj_begin cur_begin
#define arr_begin cur_begin
int obj_next(cursor *c, span *key, span *val);
int arr_next(cursor *c, span *val);

const char *ws(const char *p, const char *end);
int span_eq(span s, const char *lit);       /* s is exactly lit */
int span_same(span a, span b);
int is_str(span s, const char *str);        /* s is the JSON string "<str>" (no escapes) */
int sync_kind(const char *name);            /* PROF_GPU_SYNC_* of Kineto's cuda_sync name; 0: unknown */
int str_starts(span s, const char *prefix);
/* The value of member `key` (quotes included, as "\"name\"") of the
   validated object obj; absent when obj is not an object. */
span obj_find(const doc *d, span obj, const char *key);
int span_int(span s, int64_t *out);         /* a plain integer */
uint64_t doc_pos(const doc *d, const char *at);    /* at's byte in the trace */
/* The number s times 10^shift, exactly, rounded half away from zero. */
int span_scaled(span s, int shift, int64_t *out);
/* A JSON string (validated) as the text it stands for, interned. */
const char *json_text(span s);

/* ======================================================================== */
/*  One trace (trace.c): read through a bounded window, its format told     */
/* ======================================================================== */
/* A trace is read front to back through a window of its bytes (a gzipped
   one inflated as it goes), as many times as a command needs: each pass
   starts with trace_rewind and ends with trace_close. What a pass keeps
   beyond the window (sync points, processes, the header's values) is
   copied. A trace in memory (t->buf, t->len: a pipe read whole, the
   fuzzer's input) is read the same way, its window the whole of it. */

#define WIN_CHUNK ((size_t)1 << 20)     /* read at a time */
#define WIN_MAX   ((size_t)16 << 20)    /* one JSON value (an event), one packet, at most */

typedef struct gz gz;                   /* inflate.c: gzip inflated as it is read */

typedef struct {
    FILE *f;                            /* NULL: the bytes are t->buf */
    gz *z;                              /* a gzipped trace: inflated from f or t->buf */
    char *buf;                          /* the window: bytes [off, off + n) of the trace */
    size_t n, cap;
    uint64_t off;
    int eof, owned;                     /* no more to read; buf is ours */
} window;

typedef struct { int64_t k, t; size_t seq; } sync_pt;    /* number, absolute ns, order in the file */

typedef struct {
    span raw;           /* the pid as written: 1234, 0, "Spans" (its own copy) */
    int gpu;            /* a device's process: raw is the device index */
    int named, sorted;  /* has process_name / process_sort_index events */
    int64_t out;        /* its pid in the merged trace */
} proc;

typedef struct {
    const char *path;
    int arg;                        /* position among the arguments */
    char *buf;                      /* the trace in memory (a pipe, the fuzzer's); NULL: read from path */
    size_t len;
    window w;
    doc d;                          /* JSON: the window as a document */
    int rank;
    span devprops;                  /* deviceProperties (its own copy) */
    char *head;                     /* JSON: the other members of its header but traceEvents, */
    size_t nhead;                   /*   as one object's text (its own copy; nhead 0: none) */
    int64_t base, dropped;          /* baseTimeNanoseconds, prof_dropped_events */
    int hang;                       /* a watchdog's dump (prof_dump_reason "hang") */
    int64_t dump_step;              /*   prof_dump_step; -1: none */
    sync_pt *syncs;
    size_t nsync;
    proc *procs;                    /* (the merge's) */
    size_t nproc, last;             /* last: the proc found last (events come grouped) */
    int64_t tmin;                   /* earliest absolute time of a timed event */
    int timed;
    int64_t *diff;                  /* (the merge's) t_ref[K] - t[K] over the common K */
    size_t used;                    /* sync points the offset rests on */
    int64_t offset;
    uint64_t resid;
    int pf;                         /* a Perfetto trace (.pftrace), not JSON */
    uint32_t max_seq;               /* Perfetto: its highest sequence id */
    size_t npackets;                /*   its timed events */
    int cut;                        /*   its last packet is cut short */
    uint64_t next;                  /*   where its next packet is */
    uint8_t *attrs;                 /*   its trace attributes (Attribute messages, each a field 1) */
    size_t nattrs;
} trace;

/* The traces of this run; global, so that everything is still reachable
   when die() exits. */
extern trace *g_tr;
extern size_t g_ntr;

trace *trace_add(const char *path, int arg);    /* a new g_tr[arg], rank arg unless it says */
void trace_init(trace *t, const char *path, int arg);   /* the same, for a trace of the caller's */
void trace_read(trace *t);                      /* the file into t->buf, whole (what cannot be read twice) */
/* Reads the trace once, validating it whole, for its format and header: a
   Perfetto one's rank, drops, sync points and earliest time (pf_scan), a
   JSON one's header (json_load). */
void trace_load(trace *t);
trace *trace_open(const char *path, int arg);   /* added and loaded */
/* A pass: from the first byte (the format told), then the window refilled
   past bytes no longer needed, then its resources given back. */
void trace_rewind(trace *t);
/* Moves the window on: the bytes before buf + keep are let go, more are
   read after the rest. 0 at the trace's end. The window grows to WIN_MAX
   when a value needs it; past that, die(). */
size_t trace_more(trace *t, size_t keep);
void trace_close(trace *t);
/* Its rank from the header alone (a JSON trace's members before its
   events): 1 when it says it, 0 when only a pass can tell. */
int trace_rank(trace *t);
/* Whether rank is in a list as --ranks takes it (0-7,37); rank -1: whether
   the list is one. */
int rank_listed(const char *list, int rank);
void trace_free(trace *t);                      /* what one trace holds */
void traces_free(void);                         /* g_tr and every reader's state */

/* gzip (inflate.c): a reader of a gzip file, from f (from its current
   place) or from the bytes [p, p + n). gz_read: up to cap inflated bytes;
   0 at the end of the last member. Malformed input: die(). */
gz *gz_open(const char *path, FILE *f, const uint8_t *p, size_t n);
size_t gz_read(gz *z, uint8_t *dst, size_t cap);
void gz_close(gz *z);

/* ======================================================================== */
/*  JSON traces (read_json.c)                                               */
/* ======================================================================== */

void json_load(trace *t);           /* the header; the whole file validated */

typedef enum { F_OTHER, F_PH, F_CAT, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ID, F_ARGS, F_COUNT } field;
typedef struct { span key, val; field f; } member;
typedef struct {
    member *m;
    size_t n, cap;
    span f[F_COUNT];     /* values of the fields the tool reads */
    const char *at;
} event;

/* One pass over a JSON trace: every event to fn (NULL: none), the whole
   file validated, the header's values into t at its end (the header may
   come after traceEvents: a pass's times rest on t->base as it was when it
   began). */
void json_walk(trace *t, void (*fn)(trace *, const event *, void *), void *ctx);
#define for_each_event json_walk
int is_meta(const event *ev);
int is_gpu_cat(span cat);           /* an X event of this category is a GPU's */
/* The absolute time in ns of an event with this ts, when ts is a number. */
int event_time(const trace *t, span ts, const char *at, int64_t *abs_ns);
/* Its CPU regions (X events off the GPUs), steps and thread names into c;
   also (when not NULL) sees every event of the same pass. */
void json_to_model(trace *t, prof_cycle *c, void (*also)(trace *, const event *, void *), void *ctx);
void json_free(void);

/* ======================================================================== */
/*  Perfetto traces (read_pftrace.c)                                        */
/* ======================================================================== */

typedef struct { const uint8_t *p, *end; } pbin;
typedef struct {
    uint32_t id, wt;                    /* field number, wire type */
    uint64_t v;                         /* varint or fixed value */
    const uint8_t *data;                /* length-delimited: its bytes */
    size_t n;
    const uint8_t *start, *stop;        /* the whole field, tag included */
} pbfield;

/* The next field of a message; 0 at its end. Malformed bytes: die(). */
int pb_next(pbin *in, pbfield *f);
pbin pb_sub(const pbfield *f);          /* a length-delimited field's bytes */
int pb_is(const pbfield *f, const char *s);

typedef struct pfseq pfseq;             /* what the readers keep per sequence */

/* One packet, decoded as far as every reader needs it: its sequence's
   state brought up to date (defaults, clock snapshot), its timestamp. */
typedef struct {
    const uint8_t *at;                  /* the TracePacket's bytes */
    size_t n;
    uint32_t seq;                       /* trusted_packet_sequence_id */
    pfseq *s;                           /* that sequence's state */
    int cleared;                        /* SEQ_INCREMENTAL_STATE_CLEARED */
    uint32_t clock;                     /* its timestamp's clock: its own, else the sequence's */
    int has_event;                      /* holds a TrackEvent */
    int timed;                          /* and its time is known: */
    int64_t abs_ns;                     /*   REALTIME ns */
} pfpacket;

/* The packets of a trace, after trace_rewind: *at and *n of the next,
   valid until the next call; 0 at the end. A last packet cut short (a
   killed run's file) ends it with a warning. */
int pf_packet(trace *t, const uint8_t **at, size_t *n);
/* The next packet decoded, in order (the sequences' state starts afresh
   with pf_start); 0 at the end. */
void pf_start(void);
int pf_read(trace *t, pfpacket *pk);
/* The trace's rank, drops, a dump's reason and step (trace attributes, kept
   in t->attrs), sync points, earliest time, highest sequence id: a pass of
   its own. */
void pf_scan(trace *t);
/* A slice or an instant of any track, as pf_to_model decodes it: times in
   the model's ns; its thread when its track is (or is under) a thread's;
   its debug annotations (their keys interned). */
#define PF_ARGS 16
typedef struct { const char *key; int is_str; int64_t v; const char *str; int is_dbl; double d; } pf_arg;
typedef struct {
    const char *name;
    int64_t t0, t1;
    int instant;
    int has_tid;
    int64_t tid;
    size_t nargs;
    const pf_arg *args;
} pf_slice;
/* Its CPU regions (BEGIN/END slices of thread tracks), steps and thread
   names into c (NULL: no model); also (when not NULL) sees every slice as
   it ends (steps too, named ProfilerStep#N) and every instant, in the same
   pass. After pf_scan (t->tmin). */
void pf_to_model(trace *t, prof_cycle *c, void (*also)(trace *, const pf_slice *, void *), void *ctx);
void pf_free(void);

/* ======================================================================== */
/*  The model: a trace read back as a cycle of prof.h's (>>api-model)       */
/* ======================================================================== */
/* The readers add what they find to a cycle from prof_model_new, times in
   ns from the trace's first: threads, their regions and steps, each
   region's arguments right after it; names interned (prof_intern). No
   counters, syncs, memory or GPU events: the tables of saved traces leave
   those columns out. prof_model_finish, then prof_cycle_table. */

/* prof.h's table helpers, for prof diff to look like the table. */
void tool_fmt_time(char *o, size_t cap, double ns);    /* torch's: us below 1 ms, ms below 1 s, else s */
const char *tool_cut(char *buf, const char *s, size_t max);    /* s cut to max bytes with "..." */
/* prof_table_print's text of every cell, row by row (prof report). */
#define TOOL_CELL 96
typedef struct {
    int ncols;
    char head[32][24];                  /* the columns' heads */
    char (*cell)[TOOL_CELL];            /* row i, column k: cell[i * ncols + k] */
} tool_cells;
int tool_table_cells(const prof_table *t, tool_cells *out);    /* 0: out of memory or no scratch file */
void tool_cells_free(tool_cells *c);

/* ======================================================================== */
/*  Writers (prof_link.c): prof.h's buffered trace writer, its protobuf     */
/* ======================================================================== */

typedef struct tool_pb tool_pb;         /* a protobuf message being built */

tool_pb *tool_pb_new(void);
void tool_pb_clear(tool_pb *m);
size_t tool_pb_len(const tool_pb *m);
int tool_pb_failed(const tool_pb *m);                  /* ran out of memory */
void tool_pb_uint(tool_pb *m, uint32_t field, uint64_t v);
void tool_pb_fixed64(tool_pb *m, uint32_t field, uint64_t v);
void tool_pb_bytes(tool_pb *m, uint32_t field, const void *p, size_t n);
void tool_pb_sub(tool_pb *m, uint32_t field, tool_pb *sub);   /* sub as a field, sub emptied */
void tool_pb_raw(tool_pb *m, const void *p, size_t n);       /* bytes as they are (a field read) */
void tool_pb_free(tool_pb *m);

typedef struct tool_out tool_out;       /* one output file, written in large blocks */

tool_out *tool_out_new(FILE *f);
void tool_out_put(tool_out *o, const void *s, size_t n);
void tool_out_i64(tool_out *o, int64_t v);
void tool_out_us(tool_out *o, int64_t ns);             /* ns as us, 3 decimals, exact */
void tool_out_json_str(tool_out *o, const char *s);    /* escaped; not UTF-8: U+FFFD */
void tool_out_pb(tool_out *o, uint32_t field, const tool_pb *m);  /* m as a length-delimited field */
int tool_out_flush(tool_out *o);                       /* 0: a write failed, now or before */
void tool_out_free(tool_out *o);

/* ======================================================================== */
/*  The commands                                                            */
/* ======================================================================== */

int cmd_merge(int argc, char **argv);   /* argv[0]: "merge" */
int cmd_table(int argc, char **argv);   /* argv: after "table" */
/* prof table TRACE group=function (functions.c): self samples per function,
   per region; rows: per region at most (0: all). */
int table_functions(const char *path, size_t rows);
/* ELF symbols (symbols.c): a file by path, checked against the run's build
   id ("" unknown), once; the function holding a file offset, or NULL. */
typedef struct elf_file elf_file;
elf_file *elf_get(const char *path, const char *build_id);
const char *elf_function(const elf_file *e, uint64_t off);
void elf_free(void);
int cmd_diff(int argc, char **argv);    /* argv: after "diff" */
int cmd_ranks(int argc, char **argv);   /* argv: after "ranks" */
int cmd_report(int argc, char **argv);  /* argv: after "report" */
int cmd_run(int argc, char **argv);     /* argv: after "run" */
/* prof diff's rows of two traces as JSON (its own table's, the U test's p),
   for prof report --diff. */
void diff_json(tool_out *o, trace *base, trace *new_);
extern const char merge_usage[], ranks_usage[];

/* The merge's steps, which the fuzz driver runs too: pass 1 of each trace
   of g_tr; ranks in order and aligned; the merged trace into f (1: no write
   failed); everything freed, the traces and the readers' state too. */
void merge_scan(trace *t);
void merge_align(void);
int merge_write(FILE *f, const char *name);
int64_t merge_base(void);               /* its baseTimeNanoseconds */
size_t merge_written(void);             /* its events (packets) */
void merge_free(void);

/* prof ranks's reading of one rank's trace (in memory), for the fuzzer;
   ranks_fuzz_free frees it, after die() too. */
void ranks_fuzz(const trace *t);
void ranks_fuzz_free(void);

/* prof table's reading (table.c): trace t as cycle k (0 or 1) of the run,
   finished; table_free frees both. */
const prof_cycle *table_cycle(int k, trace *t);
/* The same, a JSON trace's events also handed to json(t, event, ctx), a
   Perfetto trace's slices and instants to pf(t, slice, ctx). */
typedef struct {
    void (*json)(trace *, const event *, void *);
    void (*pf)(trace *, const pf_slice *, void *);
    void *ctx;
} model_also;
const prof_cycle *table_cycle_also(int k, trace *t, const model_also *also);
void table_free(void);

#endif /* PROF_TOOL_H */
