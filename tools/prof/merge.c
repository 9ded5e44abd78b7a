/* merge.c - prof merge: merges the per-rank traces of a distributed run
   into one trace.

   prof.h writes one Chrome trace per rank (and per cycle). Each rank stamps
   its events with its own host's clock, so the traces of different hosts
   disagree by unknown offsets. prof merge reads them, moves every rank onto
   the clock of the lowest rank using the sync points PROF_SYNC() records, and
   writes one trace in which Perfetto UI and chrome://tracing show one group of
   processes per rank.

   USAGE
     prof merge [-o merged.json] [--quiet] [--ranks LIST] rank0.json rank1.json ...
     prof merge [-o merged.pftrace] [--quiet] rank0.pftrace rank1.pftrace ...

     The traces may come in any order: a trace's rank is its
     distributedInfo.rank, or its position among the arguments (from 0) when
     it has none. Two traces of one rank are an error. -o - writes to standard
     output. --ranks 0-7,37 merges the traces of those ranks only (the
     others' headers are read, not their events). Exit status: 0 when merged (warnings included), 2 on any error,
     with one line on stderr saying why. Its messages begin "prof merge: "
     (the program's name before `prof`), and so does --help's usage.

   ALIGNMENT
     Every rank calls PROF_SYNC() right after the same barriers, so the K-th
     sync point of every rank marks the same real moment, up to how far apart
     the ranks leave the barrier. A trace's absolute time of an event is
     baseTimeNanoseconds + ts, in integer nanoseconds (ts is parsed exactly
     from its decimal text). For each rank r the offset added to its times is
     the median, over the sync numbers K that r and the reference both have,
     of t_ref[K] - t_r[K]: one straggler at one barrier does not move it. A
     rank that shares no sync point with the reference keeps its wall clock
     (offset 0), with a warning. Per rank, stderr shows the offset, the number
     of sync points it rests on and the residual, the largest
     |t_ref[K] - (t_r[K] + offset)|: how far apart the barrier exits were.

   OUTPUT
     One JSON object shaped like prof.h's: baseTimeNanoseconds of the
     reference (moved back by whole seconds if an aligned event would
     otherwise come before it), deviceProperties of every rank (each with
     "prof_rank"), "prof_merged_ranks" and "prof_merge_offsets_ns" instead of
     distributedInfo, then every event of every rank, ranks in order. In each
     event only these change; every other field is copied byte for byte:
       ts     the aligned time, 3 decimals (metadata events keep theirs)
       pid    the CPU processes of rank r become pid r; GPU device d of rank r
              becomes pid 1000 + 100 r + d. A pid is a GPU's when a
              process_labels event labels it "GPU..." or when an X event on it
              has cat gpu_user_annotation, kernel, gpu_memcpy, gpu_memset or
              cuda_sync.
       id     flow events (s, t, f) and async events (b, n, e, S, T, p, F)
              with an integer id get id * 1000 + r, unique across ranks; the
              last three digits say the rank.
       args   of process_name: "rank r (<old name>)", or "rank r GPU d"; of
              process_sort_index: the new pid, so Perfetto lists rank 0's
              processes first. A process without these events gets them.

   PERFETTO TRACES
     Traces in Perfetto's format (.pftrace, from PROF_OUTPUT=*.pftrace) merge
     into one, aligned the same way (a trace's rank is its "rank" trace
     attribute); the section "Perfetto traces" below says what changes. A
     file cut short (a run killed while streaming) is read up to its last
     whole packet, with a warning. Inputs of both formats at once are
     refused, and so is a JSON name for a merge of Perfetto traces:
     prof merge does not convert.

   MEMORY
     The output is every event of rank 0, then every event of rank 1, ...
     each rank's in the order of its file (time order is the viewers'
     business: Perfetto sorts). So the merge reads each trace twice, one at
     a time, front to back through a window (trace.c): pass 1 for its rank,
     sync points and processes, pass 2 to write it. What it holds is one
     window (1 MiB read at a time; one event or packet at most 16 MiB) and,
     per rank, its sync points, processes and deviceProperties: tens of MB
     for a thousand ranks, whatever their traces' sizes. A gzipped trace is
     inflated as it is read. A pipe is read whole into memory (it cannot be
     read twice).

   LIMITS
     Ranks 0 to 999 and devices 0 to 99 (the pids above must not meet);
     ranks 0 to 510 for Perfetto traces.
*/
#include "tool.h"

#include <errno.h>
#include <string.h>

#define MAX_DEVICE 99
#define ID_MUL     1000   /* merged flow id = id * ID_MUL + rank */
#define PF_ID_BITS 22     /* Perfetto pids and tids: (rank + 1) << PF_ID_BITS | id */

const char merge_usage[] =
    "usage: prof merge [-o merged.json] [--quiet] [--ranks LIST] rank0.json rank1.json ...\n"
    "       prof table TRACE [sort=self_cpu,rows=N,group=args|thread,percentiles]\n"
    "       prof diff BASE NEW [--min-change PCT] [--fail-over PCT]\n"
    "\n"
    "Merges the per-rank Chrome traces prof.h writes into one trace, with every\n"
    "rank moved onto the clock of the lowest rank by the median offset of the\n"
    "PROF_SYNC() points the ranks share (wall clock, with a warning, when a rank\n"
    "shares none).\n"
    "\n"
    "  -o FILE      write the merged trace to FILE (default merged.json, or merged.pftrace\n"
    "               for Perfetto traces; - is stdout)\n"
    "  --ranks LIST only the traces of these ranks: 0-7,37\n"
    "  -q, --quiet  no report of offsets on stderr (warnings and errors remain)\n"
    "  -h, --help   this text\n"
    "\n"
    "A trace's rank is its distributedInfo.rank, else its position among the\n"
    "arguments. In the merged trace rank r's CPU process is pid r and its GPU d\n"
    "is pid 1000 + 100*r + d; flow ids become id*1000 + r.\n"
    "Perfetto traces (.pftrace) merge into one: the same alignment; sequences,\n"
    "track uuids, flow ids, pids and tids made unique per rank (ranks 0 to 510).\n"
    "Gzipped traces (.json.gz, .pftrace.gz) are read as they are.\n"
    "Exit status: 0 merged, 2 error.\n";

const char *g_partial;          /* output file being written, removed by die() */
static char *g_part;            /* its name, global so that die() leaves it reachable */

/* ======================================================================== */
/*  Pass 1 and the alignment                                                */
/* ======================================================================== */

static proc *proc_of(trace *t, span pid) {
    if (t->nproc && span_same(t->procs[t->last].raw, pid)) return &t->procs[t->last];
    for (size_t i = 0; i < t->nproc; i++)
        if (span_same(t->procs[i].raw, pid)) return &t->procs[t->last = i];
    t->procs = xrealloc(t->procs, (t->nproc + 1) * sizeof *t->procs);
    proc *pr = &t->procs[t->last = t->nproc++];
    memset(pr, 0, sizeof *pr);
    char *copy = xrealloc(NULL, pid.n);     /* the window moves on */
    memcpy(copy, pid.p, pid.n);
    pr->raw = (span){ copy, pid.n };
    return pr;
}

/* Events whose id pairs them with events of the same id (flows, async). */
static int has_paired_id(const event *ev) {
    span ph = ev->f[F_PH];
    return ph.n == 3 && ph.p[0] == '"' && ph.p[1] && strchr("stfbneSTpF", ph.p[1]) != NULL;
}

/* Pass 1 of a JSON trace: which pids are GPUs, which processes are named,
   the sync points, the earliest time. */
static void collect(trace *t, const event *ev, void *ctx) {
    (void)ctx;
    span ph = ev->f[F_PH], cat = ev->f[F_CAT], name = ev->f[F_NAME];
    int64_t at, id;
    /* Every pid and every id, should one be repeated: pass 2 rewrites each.
       (Checking only the last id let {"id":9223372036854775807,"id":1}
       overflow id * ID_MUL there.) */
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->m[i].f == F_PID) proc_of(t, ev->m[i].val);
        if (ev->m[i].f == F_ID && has_paired_id(ev) && span_int(ev->m[i].val, &id) &&
            (id > INT64_MAX / ID_MUL - 1 || id < INT64_MIN / ID_MUL + 1))
            die("%s: event at byte %" PRIu64 ": id %" PRId64 " is too large to make unique", t->path,
                doc_pos(&t->d, ev->at), id);
    }
    proc *pr = ev->f[F_PID].n ? proc_of(t, ev->f[F_PID]) : NULL;
    if (is_meta(ev)) {
        if (!pr) return;
        if (is_str(name, "process_labels")) {
            if (str_starts(obj_find(&t->d, ev->f[F_ARGS], "\"labels\""), "GPU")) pr->gpu = 1;
        } else if (is_str(name, "process_name")) {
            pr->named = 1;
        } else if (is_str(name, "process_sort_index")) {
            pr->sorted = 1;
        }
        return;
    }
    if (pr && is_str(ph, "X") && is_gpu_cat(cat)) pr->gpu = 1;
    if (!event_time(t, ev->f[F_TS], ev->at, &at)) return;
    if (!t->timed || at < t->tmin) t->tmin = at;
    t->timed = 1;
    if (is_str(ph, "i") && is_str(cat, "prof_sync")) {
        int64_t k;
        if (span_int(obj_find(&t->d, ev->f[F_ARGS], "\"sync\""), &k) && k >= 0) {
            t->syncs = xrealloc(t->syncs, (t->nsync + 1) * sizeof *t->syncs);
            t->syncs[t->nsync] = (sync_pt){ k, at, t->nsync };
            t->nsync++;
        }
    }
}

static int cmp_sync(const void *a, const void *b) {
    const sync_pt *x = a, *y = b;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_rank(const void *a, const void *b) {
    const trace *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->arg < y->arg ? -1 : x->arg > y->arg;
}

/* After pass 1: merged pids, and the sync points in order, one per number. */
static void settle(trace *t) {
    for (size_t i = 0; i < t->nproc; i++) {
        proc *pr = &t->procs[i];
        int64_t dev;
        if (!pr->gpu) {
            pr->out = t->rank;
            continue;
        }
        if (!span_int(pr->raw, &dev) || dev < 0 || dev > MAX_DEVICE)
            die("%s: GPU process %.*s: prof merge needs a device index 0 to %d as its pid", t->path,
                (int)pr->raw.n, pr->raw.p, MAX_DEVICE);
        pr->out = 1000 + 100 * (int64_t)t->rank + dev;
    }
    if (t->nsync) qsort(t->syncs, t->nsync, sizeof *t->syncs, cmp_sync);   /* qsort(NULL, 0) is UB */
    size_t n = 0, repeated = 0;
    for (size_t i = 0; i < t->nsync; i++) {
        if (n && t->syncs[i].k == t->syncs[n - 1].k) { repeated++; continue; }
        t->syncs[n++] = t->syncs[i];
    }
    t->nsync = n;
    if (repeated)
        note("warning: rank %d (%s): %zu sync numbers appear more than once; using the first of each",
             t->rank, t->path, repeated);
}

/* Offset of t onto the reference's clock: the median of t_ref[K] - t[K]. */
static void align(const trace *ref, trace *t) {
    size_t i = 0, j = 0, n = 0;
    t->diff = xrealloc(NULL, (t->nsync < ref->nsync ? t->nsync : ref->nsync) * sizeof *t->diff);
    while (i < ref->nsync && j < t->nsync) {
        if (ref->syncs[i].k < t->syncs[j].k) i++;
        else if (ref->syncs[i].k > t->syncs[j].k) j++;
        else t->diff[n++] = sub_ck(ref->syncs[i++].t, t->syncs[j++].t);
    }
    t->used = n;
    if (!n) return;                 /* wall clock: offset 0 */
    qsort(t->diff, n, sizeof *t->diff, cmp_i64);
    int64_t a = t->diff[(n - 1) / 2], b = t->diff[n / 2];
    /* floor((a + b) / 2) without overflow: b >= a */
    t->offset = a + (int64_t)(((uint64_t)b - (uint64_t)a) / 2);
    for (i = 0; i < n; i++) {
        uint64_t r = t->diff[i] >= t->offset ? (uint64_t)t->diff[i] - (uint64_t)t->offset
                                             : (uint64_t)t->offset - (uint64_t)t->diff[i];
        if (r > t->resid) t->resid = r;
    }
}
/* ======================================================================== */
/*  Writing the merged trace                                                */
/* ======================================================================== */

/* The output is written with prof.h's trace writer: one buffer (a merged
   trace is millions of small pieces, stdio's per-call cost would dominate),
   its number and microsecond formatting, its JSON string escaping. */
static tool_out *g_out;
static int64_t g_base;          /* baseTimeNanoseconds of the merged trace */
static size_t g_written;        /* events written */

static void put_n(const char *s, size_t n) { tool_out_put(g_out, s, n); }
static void put(const char *s) { put_n(s, strlen(s)); }
static void put_c(char c) { put_n(&c, 1); }
static void put_span(span s) { put_n(s.p, s.n); }
static void put_i64(int64_t v) { tool_out_i64(g_out, v); }
static void put_us(int64_t ns) { tool_out_us(g_out, ns); }
/* A C string as a JSON string; bytes that are not UTF-8 become U+FFFD. */
static void put_json_str(const char *s) { tool_out_json_str(g_out, s); }

static void putf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void putf(const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put_n(tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void begin_event(void) { put(g_written++ ? ",\n" : "\n"); }

/* args of a process_name event: "rank r (<old name>)", "rank r GPU d". */
static void put_name_args(const trace *t, const proc *pr, span args) {
    putf("{\"name\":\"rank %d", t->rank);
    if (pr->gpu) {
        putf(" GPU %" PRId64, pr->out - 1000 - 100 * (int64_t)t->rank);
    } else {
        span old = obj_find(&t->d, args, "\"name\"");
        if (old.n && old.p[0] == '"') {             /* its escaped text stays valid inside ours */
            put(" (");
            put_n(old.p + 1, old.n - 2);
            put(")");
        }
    }
    put("\"}");
}

/* Pass 2: one event with ts, pid, id and the process metadata rewritten. */
static void write_event(trace *t, const event *ev, void *ctx) {
    (void)ctx;
    proc *pr = ev->f[F_PID].n ? proc_of(t, ev->f[F_PID]) : NULL;
    int meta = is_meta(ev);
    int64_t at, id;
    begin_event();
    put_c('{');
    for (size_t i = 0; i < ev->n; i++) {
        const member *m = &ev->m[i];
        if (i) put_c(',');
        put_span(m->key);
        put_c(':');
        if (m->f == F_PID) {
            put_i64(proc_of(t, m->val)->out);
        } else if (m->f == F_TS && !meta && event_time(t, m->val, ev->at, &at)) {
            put_us(sub_ck(add_ck(at, t->offset), g_base));
        } else if (m->f == F_ID && has_paired_id(ev) && span_int(m->val, &id)) {
            put_i64(id * ID_MUL + t->rank);
        } else if (m->f == F_ARGS && meta && pr && is_str(ev->f[F_NAME], "process_name")) {
            put_name_args(t, pr, m->val);
        } else if (m->f == F_ARGS && meta && pr && is_str(ev->f[F_NAME], "process_sort_index")) {
            put("{\"sort_index\":");
            put_i64(pr->out);
            put("}");
        } else {
            put_span(m->val);
        }
    }
    put_c('}');
}

static void put_meta(const trace *t, const proc *pr, const char *what) {
    begin_event();
    putf("{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":0,\"ts\":0.000,\"args\":", what, pr->out);
    if (strcmp(what, "process_name") == 0) put_name_args(t, pr, (span){ NULL, 0 });
    else putf("{\"sort_index\":%" PRId64 "}", pr->out);
    put_c('}');
}

/* Names and sort indices for the processes whose trace had none: without
   them Perfetto would list "Process 1100" somewhere among the ranks. */
static void write_missing_meta(const trace *t) {
    const proc *cpu = NULL;
    int cpu_named = 0, cpu_sorted = 0;
    for (size_t i = 0; i < t->nproc; i++) {
        const proc *pr = &t->procs[i];
        if (pr->gpu) {
            if (!pr->named) put_meta(t, pr, "process_name");
            if (!pr->sorted) put_meta(t, pr, "process_sort_index");
        } else {
            cpu = cpu ? cpu : pr;
            cpu_named |= pr->named;
            cpu_sorted |= pr->sorted;
        }
    }
    if (cpu && !cpu_named) put_meta(t, cpu, "process_name");
    if (cpu && !cpu_sorted) put_meta(t, cpu, "process_sort_index");
}

static void write_header(const char *name) {
    int64_t dropped = 0;
    put("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
    size_t ndev = 0;
    for (size_t i = 0; i < g_ntr; i++) {
        const trace *t = &g_tr[i];
        cursor c;
        span v;
        dropped = t->dropped > INT64_MAX - dropped ? INT64_MAX : dropped + t->dropped;
        if (!t->devprops.n || t->devprops.p[0] != '[') continue;
        doc d = { t->path, t->devprops.p, t->devprops.p + t->devprops.n, 0 };     /* pass 1's copy */
        arr_begin(&c, &d, t->devprops.p, 1);
        while (arr_next(&c, &v)) {
            put(ndev++ ? ", " : "");
            if (v.p[0] != '{') { put_span(v); continue; }
            putf("{\"prof_rank\": %d", t->rank);
            const char *rest = ws(v.p + 1, v.p + v.n);
            if (*rest != '}') put(",");
            put_n(v.p + 1, v.n - 1);
        }
    }
    put("],\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
    put_i64(g_base);
    put(",\n  \"traceName\": ");
    put_json_str(name);
    put(",\n  \"prof_merged_ranks\": [");
    for (size_t i = 0; i < g_ntr; i++) putf("%s%d", i ? ", " : "", g_tr[i].rank);
    put("],\n  \"prof_merge_offsets_ns\": {");
    for (size_t i = 0; i < g_ntr; i++)
        putf("%s\"%d\": %" PRId64, i ? ", " : "", g_tr[i].rank, g_tr[i].offset);
    put("},\n  \"prof_dropped_events\": ");
    put_i64(dropped);
    put(",\n  \"traceEvents\": [");
}
/* ======================================================================== */
/*  Perfetto traces: packets read, and rewritten field by field             */
/* ======================================================================== */
/* A .pftrace is a run of Trace.packet fields (tag 0x0A, varint length,
   TracePacket bytes). Merging one rank's packets into the merged trace
   rewrites only what would clash with other ranks or carries a time:
     trusted_packet_sequence_id   moved past the sequences of lower ranks
     timestamps on REALTIME       + the rank's offset: clock snapshots' REALTIME
                                  readings (a sequence's own clock is defined
                                  against one, so its deltas follow), and
                                  packets stamped with REALTIME itself; other
                                  clocks' readings (MONOTONIC: each host has
                                  its own) are dropped from the snapshots
     track uuids, flow ids        XORed with a hash of the rank
     pids and tids                (rank + 1) * 2^22 + the id: every Linux id is
                                  below 2^22, and ranks' ids must not meet
     process names                "rank r (<old name>)"
     trace attributes             one packet for the merged trace, each
                                  rank's keys under "rank<r>."
   Every other field is copied byte for byte. */

/* ---- pass 2: the rewriting --------------------------------------------- */

/* Messages are built with prof.h's protobuf writer (tool_pb_*); what it
   lacks is a field copied as it was read. */
static void out_field(tool_pb *o, const pbfield *f) { tool_pb_raw(o, f->start, (size_t)(f->stop - f->start)); }

/* Scratch messages, one per nesting level (a packet holds at most three;
   the fourth: the merged attributes), a packet, and a name: global, so that
   die() leaves them reachable. */
static tool_pb *g_lvl[4], *g_pk;
static char *g_name;
static size_t g_name_cap;

/* The packet in p as a Trace.packet field of the merged trace. */
static void pf_put_packet(const tool_pb *p) {
    if (tool_pb_failed(p)) die("out of memory");
    tool_out_pb(g_out, 1, p);
}

typedef struct {
    const trace *t;
    uint64_t mix;                       /* XORed into uuids and flow ids */
    uint32_t seq_base;
} pfctx;

static uint64_t pf_id(const pfctx *c, uint64_t id) { return (uint64_t)(c->t->rank + 1) << PF_ID_BITS | (id & ((1u << PF_ID_BITS) - 1)); }

/* A ProcessDescriptor (3) or ThreadDescriptor (4) of a TrackDescriptor. */
static void pf_rw_desc(const pfctx *c, const pbfield *f, tool_pb *o) {
    pbin in = pb_sub(f);
    pbfield g;
    tool_pb *m = g_lvl[2];
    int named = 0;
    tool_pb_clear(m);
    while (pb_next(&in, &g)) {
        if (g.wt == 0 && (g.id == 1 || (f->id == 4 && g.id == 2))) {  /* pid, tid */
            tool_pb_uint(m, g.id, pf_id(c, g.v));
        } else if (f->id == 3 && g.id == 6 && g.wt == 2) {  /* process_name */
            size_t k = (size_t)snprintf(NULL, 0, "rank %d (", c->t->rank), n = k + g.n + 1;
            if (n > g_name_cap) g_name = xrealloc(g_name, g_name_cap = n);
            snprintf(g_name, n, "rank %d (", c->t->rank);
            memcpy(g_name + k, g.data, g.n);
            g_name[k + g.n] = ')';
            tool_pb_bytes(m, 6, g_name, n);
            named = 1;
        } else {
            out_field(m, &g);
        }
    }
    if (f->id == 3 && !named) {
        char name[32];
        int k = snprintf(name, sizeof name, "rank %d", c->t->rank);
        tool_pb_bytes(m, 6, name, (size_t)k);
    }
    tool_pb_sub(o, f->id, m);
}

/* Fields that hold track uuids or flow ids: XORed with the rank's hash.
   TrackDescriptor: uuid 1, parent_uuid 5 (its process 3 and thread 4
   rewritten by pf_rw_desc). TrackEvent: track_uuid 11, extra counter tracks
   31 and 45, flow_ids 47 and terminating_flow_ids 48 (fixed64).
   TrackEventDefaults: track_uuid 11, extra counter tracks 31 and 45. */
enum { PF_DESC, PF_EVENT, PF_EVENT_DEFAULTS };

static int pf_is_uuid(int kind, const pbfield *g) {
    if (kind == PF_DESC) return g->wt == 0 && (g->id == 1 || g->id == 5);
    if (g->wt == 1) return kind == PF_EVENT && (g->id == 47 || g->id == 48);
    return g->wt == 0 && (g->id == 11 || g->id == 31 || g->id == 45);
}

static void pf_rw_uuids(const pfctx *c, const pbfield *f, tool_pb *o, int level, int kind) {
    pbin in = pb_sub(f);
    pbfield g;
    tool_pb *m = g_lvl[level];
    tool_pb_clear(m);
    while (pb_next(&in, &g)) {
        if (pf_is_uuid(kind, &g) && g.wt == 1) tool_pb_fixed64(m, g.id, g.v ^ c->mix);
        else if (pf_is_uuid(kind, &g)) tool_pb_uint(m, g.id, g.v ^ c->mix);
        else if (kind == PF_DESC && g.wt == 2 && (g.id == 3 || g.id == 4)) pf_rw_desc(c, &g, m);
        else out_field(m, &g);
    }
    tool_pb_sub(o, f->id, m);
}

/* TracePacketDefaults: its track_event_defaults' uuids. */
static void pf_rw_defaults(const pfctx *c, const pbfield *f, tool_pb *o) {
    pbin in = pb_sub(f);
    pbfield g;
    tool_pb *m = g_lvl[0];
    tool_pb_clear(m);
    while (pb_next(&in, &g)) {
        if (g.id == 11 && g.wt == 2) pf_rw_uuids(c, &g, m, 1, PF_EVENT_DEFAULTS);
        else out_field(m, &g);
    }
    tool_pb_sub(o, f->id, m);
}

/* A ClockSnapshot: REALTIME readings moved by the offset, sequence-scoped
   clocks kept, the other clocks (this host's) left out. */
static void pf_rw_clocks(const pfctx *c, const pbfield *f, tool_pb *o) {
    pbin in = pb_sub(f), sub;
    pbfield g, h;
    tool_pb *m = g_lvl[1], *k = g_lvl[2];
    tool_pb_clear(m);
    while (pb_next(&in, &g)) {
        if (g.id != 1 || g.wt != 2) { out_field(m, &g); continue; }
        uint64_t cid = 0;
        sub = pb_sub(&g);
        while (pb_next(&sub, &h))
            if (h.id == 1 && h.wt == 0) cid = h.v;
        if (cid != 1 && (cid < 64 || cid >= 128)) continue;
        tool_pb_clear(k);
        sub = pb_sub(&g);
        while (pb_next(&sub, &h)) {
            if (cid == 1 && h.id == 2 && h.wt == 0) tool_pb_uint(k, 2, (uint64_t)add_ck((int64_t)(h.v & INT64_MAX), c->t->offset));
            else out_field(k, &h);
        }
        tool_pb_sub(m, 1, k);
    }
    tool_pb_sub(o, f->id, m);
}

/* One packet of rank c->t, rewritten into o (left empty when it holds
   nothing but its sequence: a rank's trace attributes). Its timestamp is
   moved when it is on REALTIME: its own clock, else its sequence's default
   (pf_read keeps those). */
static void pf_rw_packet(const pfctx *c, const pfpacket *pk, tool_pb *o) {
    pbin in = { pk->at, pk->at + pk->n };
    pbfield f;
    int kept = 0;
    tool_pb_clear(o);
    while (pb_next(&in, &f)) {
        if (f.id == 126) continue;              /* the merged trace has its own attributes */
        kept |= f.id != 10;
        if (f.id == 10 && f.wt == 0) tool_pb_uint(o, 10, f.v + c->seq_base);
        else if (f.id == 8 && f.wt == 0 && (pk->clock == 0 || pk->clock == 1))
            tool_pb_uint(o, 8, (uint64_t)add_ck((int64_t)(f.v & INT64_MAX), c->t->offset));
        else if (f.id == 6 && f.wt == 2) pf_rw_clocks(c, &f, o);
        else if (f.id == 60 && f.wt == 2) pf_rw_uuids(c, &f, o, 0, PF_DESC);
        else if (f.id == 11 && f.wt == 2) pf_rw_uuids(c, &f, o, 0, PF_EVENT);
        else if (f.id == 59 && f.wt == 2) pf_rw_defaults(c, &f, o);
        else out_field(o, &f);
    }
    if (!kept) tool_pb_clear(o);
}

/* One TraceAttributes.Attribute: key, and a number or a string. */
static void pf_attr(tool_pb *o, const char *key, int64_t v, const char *s, size_t sn) {
    tool_pb *a = g_lvl[1];
    tool_pb_clear(a);
    tool_pb_bytes(a, 1, key, strlen(key));
    if (s) tool_pb_bytes(a, 3, s, sn);
    else tool_pb_uint(a, 2, (uint64_t)v);
    tool_pb_sub(o, 1, a);
}

/* The merged trace's attributes: its name, the ranks and their offsets, the
   drops of all, and each rank's own attributes under "rank<r>.". */
static void pf_write_attributes(const char *name, uint32_t seq) {
    tool_pb *o = g_lvl[3], *p = g_pk;
    char key[300], ranks[16 * (PF_MAX_RANK + 1)];
    size_t rl = 0;
    int64_t dropped = 0;
    tool_pb_clear(o);
    tool_pb_clear(p);
    pf_attr(o, "traceName", 0, name, strlen(name));
    for (size_t i = 0; i < g_ntr; i++) {
        const trace *t = &g_tr[i];
        rl += (size_t)snprintf(ranks + rl, sizeof ranks - rl, "%s%d", i ? "," : "", t->rank);
        dropped = t->dropped > INT64_MAX - dropped ? INT64_MAX : dropped + t->dropped;
        snprintf(key, sizeof key, "rank%d.prof_merge_offset_ns", t->rank);
        pf_attr(o, key, t->offset, NULL, 0);
        pbin sub2 = { t->attrs, t->attrs ? t->attrs + t->nattrs : NULL }, sub3;   /* each attribute, its key prefixed */
        pbfield g, h;
        while (pb_next(&sub2, &g)) {
            tool_pb *a = g_lvl[1];
            tool_pb_clear(a);
            sub3 = pb_sub(&g);
            while (pb_next(&sub3, &h)) {
                if (h.id == 1 && h.wt == 2) {
                    int k = snprintf(key, sizeof key, "rank%d.%.*s", t->rank, (int)(h.n < 256 ? h.n : 256),
                                     (const char *)h.data);
                    tool_pb_bytes(a, 1, key, (size_t)k);
                } else {
                    out_field(a, &h);
                }
            }
            tool_pb_sub(o, 1, a);
        }
    }
    pf_attr(o, "prof_merged_ranks", 0, ranks, rl);
    pf_attr(o, "prof_dropped_events", dropped, NULL, 0);
    tool_pb_uint(p, 10, seq);
    tool_pb_sub(p, 126, o);
    pf_put_packet(p);
}

/* Pass 2 for Perfetto traces: the attributes, then every rank's packets. */
static void pf_write_merged(const char *name) {
    uint32_t seq_base = 0;
    for (int i = 0; i < 4; i++)
        if (!g_lvl[i]) g_lvl[i] = tool_pb_new();
    if (!g_pk) g_pk = tool_pb_new();
    for (size_t i = 0; i < g_ntr; i++) {
        seq_base += g_tr[i].max_seq;
        if (seq_base < g_tr[i].max_seq) die("more sequences than a Perfetto trace can number");
    }
    pf_write_attributes(name, seq_base + 1);
    seq_base = 0;
    for (size_t i = 0; i < g_ntr; i++) {
        trace *t = &g_tr[i];
        pfctx c = { t, t->rank ? (t->rank * UINT64_C(0x9E3779B97F4A7C15)) & ~UINT64_C(0xFFFFFFFF) : 0, seq_base };
        pfpacket pk;
        trace_rewind(t);
        pf_start();                     /* its sequences' default clocks, from none */
        while (pf_read(t, &pk)) {
            pf_rw_packet(&c, &pk, g_pk);
            if (!tool_pb_len(g_pk) && !tool_pb_failed(g_pk)) continue;
            pf_put_packet(g_pk);
            g_written++;
        }
        trace_close(t);
        seq_base += t->max_seq;
    }
}

/* ======================================================================== */
/*  The merge: cmd_merge's steps, which the fuzz driver runs too            */
/* ======================================================================== */

/* Pass 1 of one trace, a read of its own: JSON, its header and collect();
   Perfetto, pf_scan. Times are the trace's absolute ones, its
   baseTimeNanoseconds wherever the header has it. */
void merge_scan(trace *t) {
    t->nsync = t->nproc = 0;
    t->timed = 0;
    trace_rewind(t);
    if (t->pf) {
        pf_scan(t);
        return;
    }
    int64_t base = t->base;             /* the pass's times rest on it */
    json_walk(t, collect, NULL);
    int64_t shift = sub_ck(t->base, base);
    t->tmin = add_ck(t->tmin, shift);
    for (size_t i = 0; i < t->nsync; i++) t->syncs[i].t = add_ck(t->syncs[i].t, shift);
}

/* After pass 1 of every trace of g_tr: ranks in order, and every rank onto
   the reference's clock; the merged base moves back by whole seconds if an
   aligned event would come before it. */
void merge_align(void) {
    qsort(g_tr, g_ntr, sizeof *g_tr, cmp_rank);
    for (size_t i = 1; i < g_ntr; i++)
        if (g_tr[i].rank == g_tr[i - 1].rank)
            die("%s and %s are both rank %d", g_tr[i - 1].path, g_tr[i].path, g_tr[i].rank);
    for (size_t i = 0; i < g_ntr; i++) {
        trace *t = &g_tr[i];
        if (t->pf != g_tr[0].pf)
            die("%s is a %s trace and %s a %s one: prof merge merges traces of one format", g_tr[0].path,
                g_tr[0].pf ? "Perfetto" : "JSON", t->path, t->pf ? "Perfetto" : "JSON");
        if (t->pf && t->rank > PF_MAX_RANK)
            die("%s: rank %d: prof merge numbers the ranks of Perfetto traces 0 to %d", t->path, t->rank, PF_MAX_RANK);
        settle(t);
    }

    const trace *ref = &g_tr[0];
    int64_t lo = 0;
    int any = 0;
    for (size_t i = 0; i < g_ntr; i++) {
        trace *t = &g_tr[i];
        if (i) align(ref, t);
        if (t->timed) {
            int64_t at = add_ck(t->tmin, t->offset);
            if (!any || at < lo) lo = at;
            any = 1;
        }
    }
    g_base = ref->base;                 /* a Perfetto trace has none: 0 */
    if (any && lo < g_base && !ref->pf) {
        int64_t r = lo % NS_PER_S;
        g_base = sub_ck(lo, r < 0 ? r + NS_PER_S : r);  /* checked: lo may be a second from INT64_MIN */
    }
}

/* Pass 2: the merged trace, named `name`, into f; 0 if a write failed (the
   caller closes f). */
int merge_write(FILE *f, const char *name) {
    g_out = tool_out_new(f);
    if (g_ntr && g_tr[0].pf) {
        pf_write_merged(name);
        return tool_out_flush(g_out);
    }
    write_header(name);
    for (size_t i = 0; i < g_ntr; i++) {
        for_each_event(&g_tr[i], write_event, NULL);
        write_missing_meta(&g_tr[i]);
    }
    put("\n  ]\n}\n");
    return tool_out_flush(g_out);
}

int64_t merge_base(void) { return g_base; }
size_t merge_written(void) { return g_written; }

/* Frees what the merge holds, leaving the globals as before the first trace. */
void merge_free(void) {
    traces_free();
    for (int i = 0; i < 4; i++) {
        tool_pb_free(g_lvl[i]);
        g_lvl[i] = NULL;
    }
    tool_pb_free(g_pk);
    g_pk = NULL;
    free(g_name);
    g_name = NULL;
    g_name_cap = 0;
    tool_out_free(g_out);
    g_out = NULL;
    g_written = 0;
}

/* ======================================================================== */
/*  prof merge                                                              */
/* ======================================================================== */

/* --ranks: only the traces of those ranks, told by their headers (a JSON
   trace's distributedInfo before its events: the rest is not read now), or
   by a pass over the trace when the header does not say. */
static void ranks_pick(const char *list) {
    size_t k = 0;
    for (size_t i = 0; i < g_ntr; i++) {
        trace *t = &g_tr[i];
        if (!trace_rank(t)) merge_scan(t);
        if (!rank_listed(list, t->rank)) {
            trace_free(t);
            continue;
        }
        g_tr[k++] = *t;
    }
    g_ntr = k;
    if (!g_ntr) die("no trace is of a rank in --ranks %s", list);
    if ((size_t)MAX_RANK < g_ntr - 1) die("more than %d traces", MAX_RANK + 1);
}

int cmd_merge(int argc, char **argv) {
    const char *out = NULL, *subset = NULL;
    int quiet = 0, options = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && a[0] == '-' && a[1]) {
            if (strcmp(a, "--") == 0) options = 0;
            else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) quiet = 1;
            else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(merge_usage, stdout); traces_free(); return 0; }
            else if (strcmp(a, "-o") == 0) {
                if (i + 1 >= argc) die("-o needs a file name");
                out = argv[++i];
            } else if (strcmp(a, "--ranks") == 0) {
                if (i + 1 >= argc || !rank_listed(argv[i + 1], -1)) die("--ranks needs a list of ranks: 0-7,37");
                subset = argv[++i];
            } else die("unknown option '%s' (prof merge --help shows the usage)", a);
            continue;
        }
        trace_add(a, (int)g_ntr);
    }
    if (!g_ntr) die("no traces to merge (usage: prof merge [-o merged.json] [--quiet] rank0.json ...)");
    if ((size_t)MAX_RANK < g_ntr - 1 && !subset) die("more than %d traces", MAX_RANK + 1);

    if (subset) ranks_pick(subset);
    for (size_t i = 0; i < g_ntr; i++) merge_scan(&g_tr[i]);
    merge_align();
    /* the merged trace is in the inputs' format, and its name must say so */
    int pf = g_tr[0].pf;
    size_t ol = out ? strlen(out) : 0;
    int says_pf = (ol > 8 && !strcmp(out + ol - 8, ".pftrace")) || (ol > 15 && !strcmp(out + ol - 15, ".perfetto-trace"));
    int says_json = (ol > 5 && !strcmp(out + ol - 5, ".json")) || (ol > 8 && !strcmp(out + ol - 8, ".json.gz"));
    if (!out) out = pf ? "merged.pftrace" : "merged.json";
    else if (pf ? says_json : says_pf)
        die("%s: the inputs are %s traces and so is the merged trace: name it %s", out, pf ? "Perfetto" : "JSON",
            pf ? ".pftrace" : ".json");
    const trace *ref = &g_tr[0];

    FILE *f = stdout;
    if (strcmp(out, "-") != 0) {
        /* written aside, renamed when complete: never a half-written trace */
        g_part = xrealloc(NULL, strlen(out) + sizeof ".part");
        strcpy(g_part, out);
        strcat(g_part, ".part");
        f = fopen(g_part, "wb");
        if (!f) die("%s: cannot write: %s", out, strerror(errno));
        g_partial = g_part;
    }
    int ok = merge_write(f, f == stdout ? "merged" : out);
    if (f == stdout) {
        if (fflush(stdout) != 0 || !ok) die("cannot write the merged trace: %s", strerror(errno));
    } else {
        if (fclose(f) != 0 || !ok) die("%s: cannot write: %s", out, strerror(errno));
        if (rename(g_part, out) != 0) die("%s: cannot write: %s", out, strerror(errno));
        g_partial = NULL;
    }

    for (size_t i = 0; i < g_ntr; i++) {
        const trace *t = &g_tr[i];
        if (i == 0) {
            if (!quiet)
                note("rank %d (%s): reference clock, %zu sync points", t->rank, t->path, t->nsync);
        } else if (!t->used) {
            note("warning: rank %d (%s) shares no sync point with rank %d; aligned by wall clock (offset 0)",
                 t->rank, t->path, ref->rank);
        } else if (!quiet) {
            uint64_t a = t->offset < 0 ? 0 - (uint64_t)t->offset : (uint64_t)t->offset;
            note("rank %d (%s): offset %c%" PRIu64 ".%03u us from %zu sync points, residual %" PRIu64 ".%03u us",
                 t->rank, t->path, t->offset < 0 ? '-' : '+', a / 1000, (unsigned)(a % 1000), t->used,
                 t->resid / 1000, (unsigned)(t->resid % 1000));
        }
    }
    if (!quiet) note("wrote %s: %zu ranks, %zu %s", out, g_ntr, g_written, pf ? "packets" : "events");

    merge_free();
    free(g_part);
    g_part = NULL;
    return 0;
}
