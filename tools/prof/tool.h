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
   exit 2, or a jump to *g_die_jump when a driver set one. */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern const char *g_prog;
extern int g_quiet;
extern jmp_buf *g_die_jump;

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
int str_starts(span s, const char *prefix);
/* The value of member `key` (quotes included, as "\"name\"") of the
   validated object obj; absent when obj is not an object. */
span obj_find(const doc *d, span obj, const char *key);
int span_int(span s, int64_t *out);         /* a plain integer */
/* The number s times 10^shift, exactly, rounded half away from zero. */
int span_scaled(span s, int shift, int64_t *out);
/* A JSON string (validated) as the text it stands for, interned. */
const char *json_text(span s);

/* ======================================================================== */
/*  One trace (trace.c): a file read whole, inflated, its format told       */
/* ======================================================================== */

typedef struct { int64_t k, t; size_t seq; } sync_pt;    /* number, absolute ns, order in the file */

typedef struct {
    span raw;           /* the pid as written: 1234, 0, "Spans" */
    int gpu;            /* a device's process: raw is the device index */
    int named, sorted;  /* has process_name / process_sort_index events */
    int64_t out;        /* its pid in the merged trace */
} proc;

typedef struct {
    const char *path;
    int arg;                        /* position among the arguments */
    char *buf;
    size_t len;
    doc d;
    int rank;
    span events, devprops;          /* traceEvents, deviceProperties */
    int64_t base, dropped;          /* baseTimeNanoseconds, prof_dropped_events */
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
} trace;

/* The traces of this run; global, so that everything is still reachable
   when die() exits. */
extern trace *g_tr;
extern size_t g_ntr;

trace *trace_add(const char *path, int arg);    /* a new g_tr[arg], rank arg unless it says */
void trace_read(trace *t);                      /* the file into t->buf */
/* Validates the whole trace and reads its header: a gzipped one inflated
   first; a Perfetto one checked packet by packet and read for its rank,
   drops, sync points and earliest time (pf_scan). */
void trace_load(trace *t);
trace *trace_open(const char *path, int arg);   /* added, read and loaded */
void traces_free(void);                         /* g_tr and every reader's state */

/* gzip (inflate.c): t's gzip bytes replaced by what they inflate to. */
void gunzip_trace(trace *t);
void gunzip_free(void);

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

/* Calls fn(t, event, ctx) for every event of the (validated) traceEvents. */
void for_each_event(trace *t, void (*fn)(trace *, const event *, void *), void *ctx);
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

/* The packets of a file: *at and *n of the next; 0 at the end. A last
   packet cut short (a killed run's file) ends it with a warning. */
int pf_packet(trace *t, size_t *pos, const uint8_t **at, size_t *n);
/* The next packet decoded, in order (the sequences' state starts afresh
   with pf_start); 0 at the end. */
void pf_start(void);
int pf_read(trace *t, size_t *pos, pfpacket *pk);
/* The trace's rank and drops (trace attributes), sync points, earliest
   time, highest sequence id. */
void pf_scan(trace *t);
/* A slice or an instant of any track, as pf_to_model decodes it: times in
   the model's ns; its thread when its track is (or is under) a thread's;
   its debug annotations (their keys interned). */
#define PF_ARGS 16
typedef struct { const char *key; int is_str; int64_t v; const char *str; } pf_arg;
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
   names into c; also (when not NULL) sees every slice and instant. */
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
int cmd_diff(int argc, char **argv);    /* argv: after "diff" */
int cmd_report(int argc, char **argv);  /* argv: after "report" */
/* prof diff's rows of two traces as JSON (its own table's, the U test's p),
   for prof report --diff. */
void diff_json(tool_out *o, trace *base, trace *new_);
extern const char merge_usage[];

/* The merge's steps, which the fuzz driver runs too: after g_tr is loaded,
   ranks in order and aligned; the merged trace into f (1: no write failed);
   everything freed, the traces and the readers' state too. */
void merge_align(void);
int merge_write(FILE *f, const char *name);
int64_t merge_base(void);               /* its baseTimeNanoseconds */
size_t merge_written(void);             /* its events (packets) */
void merge_free(void);

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
