/* prof_merge - merges the per-rank traces of a distributed run into one trace.

   prof.h writes one Chrome trace per rank (and per cycle). Each rank stamps
   its events with its own host's clock, so the traces of different hosts
   disagree by unknown offsets. prof_merge reads them, moves every rank onto
   the clock of the lowest rank using the sync points PROF_SYNC() records, and
   writes one trace in which Perfetto UI and chrome://tracing show one group of
   processes per rank.

   USAGE
     prof_merge [-o merged.json] [--quiet] rank0.json rank1.json ...
     prof merge ... (the same: `prof` is this program's new name)
     prof table TRACE [SPEC]       the summary table of a saved JSON trace,
                                   SPEC as PROF_TABLE's (see "prof table")
     prof diff BASE NEW [--min-change PCT] [--fail-over PCT]
     prof_merge [-o merged.pftrace] [--quiet] rank0.pftrace rank1.pftrace ...

     The traces may come in any order: a trace's rank is its
     distributedInfo.rank, or its position among the arguments (from 0) when
     it has none. Two traces of one rank are an error. -o - writes to standard
     output. Exit status: 0 when merged (warnings included), 2 on any error,
     with one line on stderr saying why.

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
              has cat gpu_user_annotation, kernel, gpu_memcpy or gpu_memset.
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
     prof_merge does not convert.

   LIMITS
     Ranks 0 to 999 and devices 0 to 99 (the pids above must not meet);
     ranks 0 to 510 for Perfetto traces.
     Each input is held in memory while merging (a gzipped one, .json.gz,
     inflated).

   Build: cc -std=c11 -O2 -o prof_merge prof_merge.c   (libc only)
*/
/* prof.h's implementation, for its trace writer (compiled in, never started:
   this program records nothing). */
#define PROF_ENABLE 1
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PROF_MERGE_FUZZ
/* Built into tests/fuzz/fuzz_merge.c, whose main is libFuzzer's: there is no
   main here, die() jumps back to the driver's setjmp(g_fuzz_die) instead of
   exiting, and messages are printed only when the driver sets g_fuzz_notes
   (a fuzzer makes millions of them). */
#include <setjmp.h>
static jmp_buf g_fuzz_die;
static int g_fuzz_notes;
#endif

#define MAX_DEPTH  1000   /* JSON nesting: keeps the recursive parser far from the stack limit */
#define MAX_RANK   999    /* pid r of a CPU must stay below 1000 + 100 r' + d of a GPU */
#define MAX_DEVICE 99
#define ID_MUL     1000   /* merged flow id = id * ID_MUL + rank */
#define NS_PER_S   INT64_C(1000000000)

static const char usage_text[] =
    "usage: prof_merge [-o merged.json] [--quiet] rank0.json rank1.json ...\n"
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

/* ======================================================================== */
/*  Messages                                                                */
/* ======================================================================== */

static const char *g_partial;   /* output file being written, removed on error */
static const char *g_prog = "prof_merge";   /* or the subcommand: "prof table", "prof diff" */

/* One line on stderr, "prof_merge: ..." (or "prof table: ...") */
static void vnote(const char *fmt, va_list ap) {
#ifdef PROF_MERGE_FUZZ
    if (!g_fuzz_notes) return;
#endif
    fputs(g_prog, stderr);
    fputs(": ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(fmt, ap);
    va_end(ap);
}

/* A message, then exit 2, removing the output file half written (under
   PROF_MERGE_FUZZ: back to the driver, which frees everything). */
static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(fmt, ap);
    va_end(ap);
    if (g_partial) remove(g_partial);
#ifdef PROF_MERGE_FUZZ
    longjmp(g_fuzz_die, 1);
#else
    exit(2);
#endif
}

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) die("out of memory");
    return p;
}

/* Checked int64 arithmetic: absurd inputs must give a message, not UB. */
static int64_t add_ck(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) die("times out of range (%" PRId64 " + %" PRId64 " ns)", a, b);
    return r;
}
static int64_t sub_ck(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) die("times out of range (%" PRId64 " - %" PRId64 " ns)", a, b);
    return r;
}

/* ======================================================================== */
/*  JSON: a strict validating parser over a file held in memory             */
/* ======================================================================== */
/* Nothing is copied: values are spans of the file's text, so every field the
   merge does not rewrite is written back exactly as it was read. */

typedef struct { const char *p; size_t n; } span;   /* raw JSON text; n == 0: absent */

typedef struct {
    const char *path;
    const char *buf, *end;
} doc;

static _Noreturn void bad_json(const doc *d, const char *at) {
    die("%s: not valid JSON at byte %zu", d->path, (size_t)(at - d->buf));
}

static const char *ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

/* Length of the UTF-8 sequence at s (1 to 4), 0 when it is not one: overlong
   forms, surrogates and code points past U+10FFFF are refused, as Python's
   decoder refuses them. */
static size_t utf8_len(const unsigned char *s, size_t left) {
    unsigned c = s[0], cp, min;
    size_t n;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000, cp = c & 0x07;
    else return 0;
    if (left < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static int is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* p at the opening quote; returns the byte after the closing one. */
static const char *parse_string(const doc *d, const char *p) {
    const char *end = d->end;
    p++;
    for (;;) {
        if (p >= end) bad_json(d, p);
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {     /* most bytes */
            p++;
            continue;
        }
        if (c == '"') return p + 1;
        if (c == '\\') {
            if (p + 1 >= end) bad_json(d, p + 1);
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                break;
            case 'u':
                for (int i = 2; i < 6; i++)
                    if (p + i >= end || !is_hex(p[i])) bad_json(d, p + i);
                p += 6;
                break;
            default:
                bad_json(d, p + 1);
            }
        } else if (c < 0x20) {
            bad_json(d, p);
        } else {
            size_t n = utf8_len((const unsigned char *)p, (size_t)(end - p));
            if (!n) bad_json(d, p);
            p += n;
        }
    }
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static const char *parse_number(const doc *d, const char *p) {
    const char *end = d->end;
    if (p < end && *p == '-') p++;
    if (p >= end || !is_digit(*p)) bad_json(d, p);
    if (*p == '0') p++;
    else while (p < end && is_digit(*p)) p++;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p)) bad_json(d, p);
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !is_digit(*p)) bad_json(d, p);
        while (p < end && is_digit(*p)) p++;
    }
    return p;
}

static const char *parse_literal(const doc *d, const char *p, const char *lit) {
    for (; *lit; lit++, p++)
        if (p >= d->end || *p != *lit) bad_json(d, p);
    return p;
}

/* Walks the members of an object or the elements of an array, validating
   each value as it passes: obj_begin/arr_begin at the bracket, then
   obj_next/arr_next until they return 0; c.p is then past the closing one. */
typedef struct {
    const doc *d;
    const char *p;
    int depth;
    size_t n;           /* members or elements so far */
} cursor;

static const char *parse_value(const doc *d, const char *p, int depth);

static void cur_begin(cursor *c, const doc *d, const char *p, int depth) {
    if (depth > MAX_DEPTH)
        die("%s: JSON nested deeper than %d levels at byte %zu", d->path, MAX_DEPTH, (size_t)(p - d->buf));
    c->d = d;
    c->p = p + 1;
    c->depth = depth;
    c->n = 0;
}
#define obj_begin cur_begin
#define arr_begin cur_begin

/* Past the separator before the next item, or 0 at the closing bracket. */
static int cur_step(cursor *c, char close) {
    const char *p = ws(c->p, c->d->end);
    if (p < c->d->end && *p == close) {
        c->p = p + 1;
        return 0;
    }
    if (c->n) {
        if (p >= c->d->end || *p != ',') bad_json(c->d, p);
        p = ws(p + 1, c->d->end);
    }
    c->p = p;
    return 1;
}

static int obj_next(cursor *c, span *key, span *val) {
    const doc *d = c->d;
    if (!cur_step(c, '}')) return 0;
    const char *p = c->p;
    if (p >= d->end || *p != '"') bad_json(d, p);
    key->p = p;
    p = parse_string(d, p);
    key->n = (size_t)(p - key->p);
    p = ws(p, d->end);
    if (p >= d->end || *p != ':') bad_json(d, p);
    p = ws(p + 1, d->end);
    val->p = p;
    p = parse_value(d, p, c->depth);
    val->n = (size_t)(p - val->p);
    c->p = p;
    c->n++;
    return 1;
}

static int arr_next(cursor *c, span *val) {
    if (!cur_step(c, ']')) return 0;
    val->p = c->p;
    c->p = parse_value(c->d, c->p, c->depth);
    val->n = (size_t)(c->p - val->p);
    c->n++;
    return 1;
}

/* p at the first byte of a value (no whitespace); returns the byte after it. */
static const char *parse_value(const doc *d, const char *p, int depth) {
    cursor c;
    span k, v;
    if (p >= d->end) bad_json(d, p);
    switch (*p) {
    case '{':
        obj_begin(&c, d, p, depth + 1);
        while (obj_next(&c, &k, &v)) {}
        return c.p;
    case '[':
        arr_begin(&c, d, p, depth + 1);
        while (arr_next(&c, &v)) {}
        return c.p;
    case '"': return parse_string(d, p);
    case 't': return parse_literal(d, p, "true");
    case 'f': return parse_literal(d, p, "false");
    case 'n': return parse_literal(d, p, "null");
    default:  return parse_number(d, p);
    }
}

/* ---- reading values --------------------------------------------------------- */

static int span_eq(span s, const char *lit) {
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

/* Whether s is the JSON string "<str>" (written without escapes). */
static int is_str(span s, const char *str) {
    size_t n = strlen(str);
    return s.n == n + 2 && s.p[0] == '"' && memcmp(s.p + 1, str, n) == 0;
}

static int str_starts(span s, const char *prefix) {
    size_t n = strlen(prefix);
    return s.n >= n + 2 && s.p[0] == '"' && memcmp(s.p + 1, prefix, n) == 0;
}

/* The value of member `key` (quotes included, as "\"name\"") of the object
   obj, which has been validated; absent when obj is not an object. */
static span obj_find(const doc *d, span obj, const char *key) {
    span none = { NULL, 0 }, k, v;
    cursor c;
    if (!obj.n || obj.p[0] != '{') return none;
    obj_begin(&c, d, obj.p, 1);
    while (obj_next(&c, &k, &v))
        if (span_eq(k, key)) return v;
    return none;
}

/* A number written as a plain integer (no fraction, no exponent). */
static int span_int(span s, int64_t *out) {
    size_t i = 0;
    int neg = 0;
    uint64_t a = 0;
    if (i < s.n && s.p[i] == '-') neg = 1, i++;
    if (i == s.n) return 0;
    for (; i < s.n; i++) {
        if (!is_digit(s.p[i]) || a > (UINT64_MAX - 9) / 10) return 0;
        a = a * 10 + (uint64_t)(s.p[i] - '0');
    }
    if (a > (uint64_t)INT64_MAX) return 0;
    *out = neg ? -(int64_t)a : (int64_t)a;
    return 1;
}

/* The number s times 10^shift, rounded half away from zero, computed from its
   decimal digits: exact where a double is not (a ts of 1.7e12 us in ns needs
   more than 53 bits). 0 when s is not a number or the result is not an int64. */
static int span_scaled(span s, int shift, int64_t *out) {
    if (!s.n) return 0;                     /* a field not there: no pointer to add to */
    const char *p = s.p, *end = s.p + s.n;
    int neg = 0;
    if (p < end && *p == '-') neg = 1, p++;
    const char *ip = p;
    while (p < end && is_digit(*p)) p++;
    size_t ni = (size_t)(p - ip);
    const char *fp = p;
    if (p < end && *p == '.') fp = ++p;
    while (p < end && is_digit(*p)) p++;
    size_t nf = (size_t)(p - fp);
    if (!ni) return 0;
    long exp10 = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        int eneg = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p >= end) return 0;
        for (; p < end && is_digit(*p); p++)
            if (exp10 < 1000000) exp10 = exp10 * 10 + (*p - '0');
        if (eneg) exp10 = -exp10;
    }
    if (p != end) return 0;
    /* digits d[0..nd) with the decimal point after `point` of them */
    size_t nd = ni + nf, z = 0;
#define DIGIT(i) ((i) < ni ? ip[i] - '0' : fp[(i) - ni] - '0')
    while (z < nd && DIGIT(z) == 0) z++;
    if (z == nd) { *out = 0; return 1; }
    long point = (long)ni + exp10 + shift;
    if (point - (long)z > 19) return 0;                 /* >= 1e19 */
    uint64_t a = 0;
    for (long i = (long)z; i < point; i++) {
        unsigned dg = (size_t)i < nd ? (unsigned)DIGIT((size_t)i) : 0;
        if (a > (UINT64_MAX - dg) / 10) return 0;
        a = a * 10 + dg;
    }
    if (point >= 0 && (size_t)point < nd && DIGIT((size_t)point) >= 5) a++;
#undef DIGIT
    if (a > (uint64_t)INT64_MAX) return 0;
    *out = neg ? -(int64_t)a : (int64_t)a;
    return 1;
}

/* ======================================================================== */
/*  One rank's trace                                                        */
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
    proc *procs;
    size_t nproc, last;             /* last: the proc found last (events come grouped) */
    int64_t tmin;                   /* earliest absolute time of a timed event */
    int timed;
    int64_t *diff;                  /* t_ref[K] - t[K] over the common K */
    size_t used;                    /* sync points the offset rests on */
    int64_t offset;
    uint64_t resid;
    int pf;                         /* a Perfetto trace (.pftrace), not JSON */
    uint32_t max_seq;               /* Perfetto: its highest sequence id */
    size_t npackets;                /*   its timed events */
    int cut;                        /*   its last packet is cut short */
} trace;

/* Globals, so that everything is still reachable when die() exits. */
static trace *g_tr;
static size_t g_ntr;

typedef enum { F_OTHER, F_PH, F_CAT, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ID, F_ARGS, F_COUNT } field;
typedef struct { span key, val; field f; } member;
typedef struct {
    member *m;
    size_t n, cap;
    span f[F_COUNT];     /* values of the fields the merge reads */
    const char *at;
} event;
static event g_ev;

static void read_file(trace *t) {
    FILE *f = fopen(t->path, "rb");
    if (!f) die("%s: cannot open: %s", t->path, strerror(errno));
    size_t cap = (size_t)1 << 20;       /* doubled as needed: pipes (<(zcat ...)) have no size */
    t->buf = xrealloc(NULL, cap);
    for (;;) {
        t->len += fread(t->buf + t->len, 1, cap - t->len, f);
        if (t->len < cap) break;
        cap *= 2;
        t->buf = xrealloc(t->buf, cap);
    }
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        die("%s: cannot read: %s", t->path, strerror(e));
    }
    fclose(f);
}

/* ======================================================================== */
/*  gzip: a .json.gz trace is inflated in memory before it is read           */
/* ======================================================================== */
/* RFC 1951 inflate in the way of zlib's puff.c: canonical Huffman codes
   decoded a bit at a time (simple, fast enough for a tool that runs once).
   RFC 1952's wrapper around it, members one after another, each CRC-32
   checked. Malformed input is one line and exit 2, never a read past the
   input or a write past the output. */

typedef struct {
    const uint8_t *p, *end;
    uint32_t bits, nbits;
    uint8_t *out;
    size_t n, cap;
    const char *path;
} inf;

typedef struct { uint16_t count[16], symbol[288]; } huff;

static _Noreturn void bad_gz(const inf *s, const char *what) {
    die("%s: not a valid gzip file: %s", s->path, what);
}

static uint32_t inf_bits(inf *s, unsigned need) {
    uint32_t v = s->bits;
    while (s->nbits < need) {
        if (s->p >= s->end) bad_gz(s, "it ends inside a block");
        v |= (uint32_t)*s->p++ << s->nbits;
        s->nbits += 8;
    }
    s->bits = (uint32_t)((uint64_t)v >> need);
    s->nbits -= need;
    return v & (uint32_t)((1ull << need) - 1);
}

static uint8_t *g_inflating;            /* reachable from free_all if die() cuts it short */

static void inf_put(inf *s, uint8_t c) {
    if (s->n == s->cap) {
        if (s->cap > ((size_t)1 << 40)) bad_gz(s, "it inflates past 1 TiB");
        s->cap = s->cap ? 2 * s->cap : (size_t)1 << 20;
        s->out = g_inflating = xrealloc(s->out, s->cap);
    }
    s->out[s->n++] = c;
}

/* Canonical code from code lengths; 0 if the lengths over-subscribe. */
static int inf_build(huff *h, const uint8_t *len, unsigned n) {
    uint16_t offs[16];
    memset(h->count, 0, sizeof h->count);
    for (unsigned i = 0; i < n; i++) h->count[len[i]]++;
    int left = 1;
    for (unsigned b = 1; b < 16; b++) {
        left = 2 * left - h->count[b];
        if (left < 0) return 0;
    }
    offs[1] = 0;
    for (unsigned b = 1; b < 15; b++) offs[b + 1] = (uint16_t)(offs[b] + h->count[b]);
    for (unsigned i = 0; i < n; i++)
        if (len[i]) h->symbol[offs[len[i]]++] = (uint16_t)i;
    return 1;
}

static unsigned inf_decode(inf *s, const huff *h) {
    int code = 0, first = 0, index = 0;
    for (unsigned b = 1; b < 16; b++) {
        code |= (int)inf_bits(s, 1);
        int count = h->count[b];
        if (code - count < first) return h->symbol[index + (code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    bad_gz(s, "a code no table has");
}

static void inf_codes(inf *s, const huff *lit, const huff *dist) {
    static const uint16_t lbase[29] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                        35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
    static const uint8_t lext[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
    static const uint16_t dbase[30] = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
                                        1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577 };
    static const uint8_t dext[30] = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };
    for (;;) {
        unsigned sym = inf_decode(s, lit);
        if (sym < 256) { inf_put(s, (uint8_t)sym); continue; }
        if (sym == 256) return;
        sym -= 257;
        if (sym >= 29) bad_gz(s, "a length symbol past 285");
        size_t len = lbase[sym] + inf_bits(s, lext[sym]);
        unsigned d = inf_decode(s, dist);
        if (d >= 30) bad_gz(s, "a distance symbol past 29");
        size_t back = dbase[d] + inf_bits(s, dext[d]);
        if (back > s->n) bad_gz(s, "a distance back past the start");
        while (len--) inf_put(s, s->out[s->n - back]);
    }
}

static void inf_dynamic(inf *s) {
    static const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    uint8_t len[320];
    huff lit, dist;
    unsigned nlen = inf_bits(s, 5) + 257, ndist = inf_bits(s, 5) + 1, ncode = inf_bits(s, 4) + 4;
    if (nlen > 286 || ndist > 30) bad_gz(s, "too many codes");
    memset(len, 0, sizeof len);
    for (unsigned i = 0; i < ncode; i++) len[order[i]] = (uint8_t)inf_bits(s, 3);
    if (!inf_build(&lit, len, 19)) bad_gz(s, "a bad code-length code");
    for (unsigned i = 0; i < nlen + ndist;) {
        unsigned sym = inf_decode(s, &lit), rep, v = 0;
        if (sym < 16) { len[i++] = (uint8_t)sym; continue; }
        if (sym == 16) {
            if (!i) bad_gz(s, "a repeat with nothing before it");
            v = len[i - 1];
            rep = 3 + inf_bits(s, 2);
        } else {
            rep = sym == 17 ? 3 + inf_bits(s, 3) : 11 + inf_bits(s, 7);
        }
        if (i + rep > nlen + ndist) bad_gz(s, "code lengths past their count");
        while (rep--) len[i++] = (uint8_t)v;
    }
    if (!len[256]) bad_gz(s, "no end-of-block code");
    if (!inf_build(&lit, len, nlen) || !inf_build(&dist, len + nlen, ndist)) bad_gz(s, "over-subscribed codes");
    inf_codes(s, &lit, &dist);
}

static void inf_fixed(inf *s) {
    uint8_t len[320];
    huff lit, dist;
    unsigned i = 0;
    for (; i < 144; i++) len[i] = 8;
    for (; i < 256; i++) len[i] = 9;
    for (; i < 280; i++) len[i] = 7;
    for (; i < 288; i++) len[i] = 8;
    for (; i < 318; i++) len[i] = 5;
    inf_build(&lit, len, 288);
    inf_build(&dist, len + 288, 30);
    inf_codes(s, &lit, &dist);
}

static uint32_t crc32_of(const uint8_t *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
    }
    return ~crc;
}

/* Replaces t's gzip bytes by what they inflate to. */
static void gunzip_trace(trace *t) {
    inf s = { (const uint8_t *)t->buf, (const uint8_t *)t->buf + t->len, 0, 0, NULL, 0, 0, t->path };
    while (s.p < s.end) {
        if (s.end - s.p < 18 || s.p[0] != 0x1F || s.p[1] != 0x8B || s.p[2] != 8) bad_gz(&s, "a bad member header");
        unsigned flg = s.p[3];
        s.p += 10;
        if (flg & 4) {                          /* FEXTRA */
            if (s.end - s.p < 2) bad_gz(&s, "a cut header");
            size_t x = s.p[0] | (size_t)s.p[1] << 8;
            if ((size_t)(s.end - s.p) < x + 2) bad_gz(&s, "a cut header");
            s.p += 2 + x;
        }
        for (unsigned f = 8; f <= 16; f <<= 1)  /* FNAME, FCOMMENT: NUL-terminated */
            if (flg & f) {
                while (s.p < s.end && *s.p) s.p++;
                if (s.p++ >= s.end) bad_gz(&s, "a cut header");
            }
        if (flg & 2) {                          /* FHCRC */
            if (s.end - s.p < 2) bad_gz(&s, "a cut header");
            s.p += 2;
        }
        size_t start = s.n;
        s.bits = s.nbits = 0;
        for (unsigned last = 0; !last;) {
            last = inf_bits(&s, 1);
            unsigned type = inf_bits(&s, 2);
            if (type == 0) {                    /* stored */
                s.bits = s.nbits = 0;
                if (s.end - s.p < 4) bad_gz(&s, "a cut stored block");
                size_t len = s.p[0] | (size_t)s.p[1] << 8;
                if ((s.p[2] | (size_t)s.p[3] << 8) != (~len & 0xFFFF)) bad_gz(&s, "a stored block's length and its complement differ");
                s.p += 4;
                if ((size_t)(s.end - s.p) < len) bad_gz(&s, "a cut stored block");
                while (len--) inf_put(&s, *s.p++);
            } else if (type == 1) {
                inf_fixed(&s);
            } else if (type == 2) {
                inf_dynamic(&s);
            } else {
                bad_gz(&s, "a block of type 3");
            }
        }
        s.bits = s.nbits = 0;                   /* the trailer is byte-aligned */
        if (s.end - s.p < 8) bad_gz(&s, "a cut trailer");
        uint32_t crc = s.p[0] | (uint32_t)s.p[1] << 8 | (uint32_t)s.p[2] << 16 | (uint32_t)s.p[3] << 24;
        uint32_t size = s.p[4] | (uint32_t)s.p[5] << 8 | (uint32_t)s.p[6] << 16 | (uint32_t)s.p[7] << 24;
        s.p += 8;
        /* an empty member inflates to nothing: s.out may still be NULL */
        if ((s.n > start ? crc32_of(s.out + start, s.n - start) : 0) != crc) bad_gz(&s, "its CRC-32 does not match");
        if ((uint32_t)(s.n - start) != size) bad_gz(&s, "its size does not match");
    }
    if (!s.out) s.out = xrealloc(NULL, 1);  /* nothing inflated: an empty trace, never a NULL one */
    free(t->buf);
    t->buf = (char *)s.out;
    t->len = s.n;
    g_inflating = NULL;
}

typedef struct { const uint8_t *p, *end; } pbin;
typedef struct {
    uint32_t id, wt;                    /* field number, wire type */
    uint64_t v;                         /* varint or fixed value */
    const uint8_t *data;                /* length-delimited: its bytes */
    size_t n;
    const uint8_t *start, *stop;        /* the whole field, tag included */
} pbfield;
static void pf_collect(trace *t);

/* Validates the whole file and reads the header (a Perfetto trace: checks
   its packets' framing; pass 1 reads the rest). */
static void load(trace *t) {
    doc *d = &t->d;
    if (t->len >= 2 && (uint8_t)t->buf[0] == 0x1F && (uint8_t)t->buf[1] == 0x8B) gunzip_trace(t);
    if (t->len && (uint8_t)t->buf[0] == 0x0A) {     /* Trace.packet: a Perfetto trace */
        t->pf = 1;
        pf_collect(t);                  /* pass 1 now: the rank is in the attributes */
        return;
    }
    d->path = t->path;
    d->buf = t->buf;
    d->end = t->buf + t->len;
    const char *p = ws(d->buf, d->end);
    if (p < d->end && *p != '{') {
        p = ws(parse_value(d, p, 0), d->end);
        if (p != d->end) bad_json(d, p);
        die("%s: not a trace: the top level is not an object", t->path);
    }
    if (p >= d->end) bad_json(d, p);
    span k, v, dist = { NULL, 0 }, base = { NULL, 0 }, dropped = { NULL, 0 };
    cursor c;
    obj_begin(&c, d, p, 1);
    while (obj_next(&c, &k, &v)) {
        if (span_eq(k, "\"traceEvents\"")) t->events = v;
        else if (span_eq(k, "\"deviceProperties\"")) t->devprops = v;
        else if (span_eq(k, "\"distributedInfo\"")) dist = v;
        else if (span_eq(k, "\"baseTimeNanoseconds\"")) base = v;
        else if (span_eq(k, "\"prof_dropped_events\"")) dropped = v;
    }
    p = ws(c.p, d->end);
    if (p != d->end) bad_json(d, p);

    if (!t->events.n || t->events.p[0] != '[') die("%s: not a trace: no traceEvents array", t->path);
    if (base.n && !span_scaled(base, 0, &t->base))
        die("%s: baseTimeNanoseconds %.*s is not a time in nanoseconds", t->path, (int)base.n, base.p);
    span r = obj_find(d, dist, "\"rank\"");
    if (r.n) {
        int64_t x;
        if (!span_int(r, &x) || x < 0) die("%s: distributedInfo.rank %.*s is not a rank", t->path, (int)r.n, r.p);
        if (x > MAX_RANK) die("%s: rank %" PRId64 ": prof_merge numbers ranks 0 to %d", t->path, x, MAX_RANK);
        t->rank = (int)x;
    }
    if (!span_int(dropped, &t->dropped) || t->dropped < 0) t->dropped = 0;
}

/* The field a key names, from its text with the quotes (a key spelled with
   escapes is another field: no writer does that). */
static field key_field(span k) {
#define IS(lit) (memcmp(k.p, lit, sizeof lit - 1) == 0)
    switch (k.n) {
    case 4: return IS("\"ph\"") ? F_PH : IS("\"ts\"") ? F_TS : IS("\"id\"") ? F_ID : F_OTHER;
    case 5: return IS("\"pid\"") ? F_PID : IS("\"cat\"") ? F_CAT : IS("\"tid\"") ? F_TID : IS("\"dur\"") ? F_DUR : F_OTHER;
    case 6: return IS("\"name\"") ? F_NAME : IS("\"args\"") ? F_ARGS : F_OTHER;
    default: return F_OTHER;
    }
#undef IS
}

static const char *scan_event(const doc *d, const char *p, event *ev) {
    cursor c;
    span k, v;
    ev->n = 0;
    memset(ev->f, 0, sizeof ev->f);
    ev->at = p;
    obj_begin(&c, d, p, 1);
    while (obj_next(&c, &k, &v)) {
        field f = key_field(k);
        if (ev->n == ev->cap) {
            ev->cap = ev->cap ? 2 * ev->cap : 16;
            ev->m = xrealloc(ev->m, ev->cap * sizeof *ev->m);
        }
        ev->m[ev->n].key = k;
        ev->m[ev->n].val = v;
        ev->m[ev->n].f = f;
        ev->n++;
        if (f) ev->f[f] = v;
    }
    return c.p;
}

/* Calls fn for every event of the (validated) traceEvents array. */
static void for_each_event(trace *t, void (*fn)(trace *, const event *)) {
    const doc *d = &t->d;
    const char *p = ws(t->events.p + 1, d->end);
    if (*p == ']') return;
    for (size_t i = 0;; i++) {
        if (*p != '{') die("%s: not a trace: traceEvents[%zu] is not an object", t->path, i);
        p = scan_event(d, p, &g_ev);
        fn(t, &g_ev);
        p = ws(p, d->end);
        if (*p == ']') return;
        p = ws(p + 1, d->end);      /* past the comma */
    }
}

static int span_same(span a, span b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

static proc *proc_of(trace *t, span pid) {
    if (t->nproc && span_same(t->procs[t->last].raw, pid)) return &t->procs[t->last];
    for (size_t i = 0; i < t->nproc; i++)
        if (span_same(t->procs[i].raw, pid)) return &t->procs[t->last = i];
    t->procs = xrealloc(t->procs, (t->nproc + 1) * sizeof *t->procs);
    proc *pr = &t->procs[t->last = t->nproc++];
    memset(pr, 0, sizeof *pr);
    pr->raw = pid;
    return pr;
}

static int is_meta(const event *ev) { return is_str(ev->f[F_PH], "M"); }

/* An X event of this category is a GPU's (Kineto's categories). */
static int is_gpu_cat(span cat) {
    return is_str(cat, "gpu_user_annotation") || is_str(cat, "kernel") || is_str(cat, "gpu_memcpy") ||
           is_str(cat, "gpu_memset");
}

/* Events whose id pairs them with events of the same id (flows, async). */
static int has_paired_id(const event *ev) {
    span ph = ev->f[F_PH];
    return ph.n == 3 && ph.p[0] == '"' && ph.p[1] && strchr("stfbneSTpF", ph.p[1]) != NULL;
}

/* The absolute time in ns of an event with this ts, when ts is a number
   (metadata events are left out by the callers: their ts means nothing). */
static int event_time(const trace *t, span ts, const char *at, int64_t *abs_ns) {
    int64_t ns;
    if (!ts.n || (ts.p[0] != '-' && !is_digit(ts.p[0]))) return 0;
    if (!span_scaled(ts, 3, &ns))
        die("%s: event at byte %zu: ts %.*s is out of range", t->path, (size_t)(at - t->d.buf), (int)ts.n, ts.p);
    *abs_ns = add_ck(t->base, ns);
    return 1;
}

/* Pass 1: which pids are GPUs, which processes are named, the sync points,
   the earliest time. */
static void collect(trace *t, const event *ev) {
    span ph = ev->f[F_PH], cat = ev->f[F_CAT], name = ev->f[F_NAME];
    int64_t at, id;
    /* Every pid and every id, should one be repeated: pass 2 rewrites each.
       (Checking only the last id let {"id":9223372036854775807,"id":1}
       overflow id * ID_MUL there.) */
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->m[i].f == F_PID) proc_of(t, ev->m[i].val);
        if (ev->m[i].f == F_ID && has_paired_id(ev) && span_int(ev->m[i].val, &id) &&
            (id > INT64_MAX / ID_MUL - 1 || id < INT64_MIN / ID_MUL + 1))
            die("%s: event at byte %zu: id %" PRId64 " is too large to make unique", t->path,
                (size_t)(ev->at - t->d.buf), id);
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
            die("%s: GPU process %.*s: prof_merge needs a device index 0 to %d as its pid", t->path,
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
static prof__w g_w;
static int64_t g_base;          /* baseTimeNanoseconds of the merged trace */
static size_t g_written;        /* events written */

static void put_n(const char *s, size_t n) { prof__w_put(&g_w, s, n); }
static void put(const char *s) { put_n(s, strlen(s)); }
static void put_c(char c) { put_n(&c, 1); }
static void put_span(span s) { put_n(s.p, s.n); }
static void put_i64(int64_t v) { prof__w_i64(&g_w, v); }
static void put_us(int64_t ns) { g_w.n = (size_t)(prof__fmt_us(prof__w_room(&g_w, 32), ns) - g_w.buf); }
/* A C string as a JSON string; bytes that are not UTF-8 become U+FFFD. */
static void put_json_str(const char *s) { prof__w_str(&g_w, s); }

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
static void write_event(trace *t, const event *ev) {
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
        arr_begin(&c, &t->d, t->devprops.p, 1);
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

#define PF_MAX_RANK 510                 /* (rank + 1) << 22 stays an int32 pid */
#define PF_ID_BITS  22

static const trace *g_pf_t;             /* the trace being read, for messages */
static const uint8_t *g_pf_at;          /* the packet being read */

static _Noreturn void bad_pf(const char *what) {
    die("%s: not a Perfetto trace: %s in the packet at byte %zu", g_pf_t->path, what,
        (size_t)(g_pf_at - (const uint8_t *)g_pf_t->buf));
}

static int pb_varint(pbin *in, uint64_t *v) {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (in->p >= in->end) return 0;
        uint8_t b = *in->p++;
        x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) { *v = x; return 1; }
    }
    return 0;
}

/* The next field of a message; 0 at its end. Malformed bytes: bad_pf. */
static int pb_next(pbin *in, pbfield *f) {
    uint64_t tag;
    if (in->p >= in->end) return 0;
    f->start = in->p;
    if (!pb_varint(in, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1FFFFFFF) bad_pf("a bad field tag");
    f->id = (uint32_t)(tag >> 3);
    f->wt = (uint32_t)(tag & 7);
    f->data = NULL;
    f->n = 0;
    f->v = 0;
    switch (f->wt) {
    case 0:
        if (!pb_varint(in, &f->v)) bad_pf("a varint cut short");
        break;
    case 1:
    case 5: {
        size_t k = f->wt == 1 ? 8 : 4;
        if ((size_t)(in->end - in->p) < k) bad_pf("a fixed field cut short");
        for (size_t i = 0; i < k; i++) f->v |= (uint64_t)in->p[i] << (8 * i);
        in->p += k;
        break;
    }
    case 2: {
        uint64_t n;
        if (!pb_varint(in, &n) || n > (uint64_t)(in->end - in->p)) bad_pf("a length past the packet's end");
        f->data = in->p;
        f->n = (size_t)n;
        in->p += n;
        break;
    }
    default:
        bad_pf("a wire type protobuf does not have");
    }
    f->stop = in->p;
    return 1;
}

static pbin pb_sub(const pbfield *f) { return (pbin){ f->data, f->data + f->n }; }

static int pb_is(const pbfield *f, const char *s) { return f->wt == 2 && f->n == strlen(s) && !memcmp(f->data, s, f->n); }

/* The packets of a file: *at and *n of the next; 0 at the end. A last packet
   cut short (a killed run's file) ends it with a warning. */
static int pf_packet(trace *t, size_t *pos, const uint8_t **at, size_t *n) {
    pbin in = { (const uint8_t *)t->buf + *pos, (const uint8_t *)t->buf + t->len };
    uint64_t len;
    if (in.p >= in.end) return 0;
    g_pf_t = t;
    g_pf_at = in.p;
    if (*in.p++ != 0x0A) bad_pf("not a Trace.packet field");
    if (!pb_varint(&in, &len) || len > (uint64_t)(in.end - in.p)) {
        if (!t->cut) note("warning: %s: its last %zu bytes are a packet cut short (a run killed while writing?); "
                          "left out", t->path, t->len - *pos);
        t->cut = 1;
        return 0;
    }
    *at = in.p;
    *n = (size_t)len;
    *pos = (size_t)(in.p - (const uint8_t *)t->buf) + (size_t)len;
    return 1;
}

/* What pass 1 keeps per sequence of a trace. */
typedef struct {
    uint32_t id;
    uint32_t clock_id;                  /* TracePacketDefaults.timestamp_clock_id */
    uint32_t seq_clock;                 /* its own clock (64..127), 0: none */
    int incremental;
    int64_t last, to_real;              /* the clock's last reading; + to_real: REALTIME */
    uint64_t sync_iid, key_iid;         /* interned "prof_sync", "sync"; 0: not seen */
    uint64_t track;                     /* TrackEventDefaults.track_uuid (prof table) */
} pfseq;

static pfseq *g_pfseq;                  /* pass 1's, global so that die() leaves it reachable */
static size_t g_npfseq;

/* The state of sequence id, added if new. A sequence's packets mostly come
   together: the last one found is tried first. */
static pfseq *pf_seq(pfseq **v, size_t *n, uint32_t id) {
    static size_t last;
    if (last < *n && (*v)[last].id == id) return &(*v)[last];
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].id == id) return &(*v)[last = i];
    *v = xrealloc(*v, (*n + 1) * sizeof **v);
    pfseq *s = &(*v)[last = (*n)++];
    memset(s, 0, sizeof *s);
    s->id = id;
    return s;
}

/* A packet's timestamp as REALTIME ns; 0 if it has none or it is on a clock
   prof_merge does not know. */
static int pf_time(pfseq *s, int has_ts, uint64_t ts, uint32_t clock, int64_t *abs_ns) {
    if (!has_ts) return 0;
    if (!clock) clock = s->clock_id;
    if (clock >= 64 && clock == s->seq_clock) {
        int64_t v = s->incremental ? add_ck(s->last, (int64_t)(ts & INT64_MAX)) : (int64_t)(ts & INT64_MAX);
        s->last = v;
        *abs_ns = add_ck(v, s->to_real);
        return 1;
    }
    if (clock == 0 || clock == 1) {      /* the trace's clock, REALTIME: prof.h's */
        *abs_ns = (int64_t)(ts & INT64_MAX);
        return 1;
    }
    return 0;
}

/* A clock snapshot: the sequence's own clock, its reading and REALTIME's. */
static void pf_snapshot(pfseq *s, const pbfield *f) {
    pbin sub = pb_sub(f), sub2;
    pbfield g, h;
    int64_t seq_v = 0, real_v = 0;
    int has_seq = 0, has_real = 0, inc = 0;
    uint32_t seq_id = 0;
    while (pb_next(&sub, &g)) {
        if (g.id != 1 || g.wt != 2) continue;
        uint64_t cid = 0, v = 0, incr = 0;
        sub2 = pb_sub(&g);
        while (pb_next(&sub2, &h)) {
            if (h.id == 1 && h.wt == 0) cid = h.v;
            if (h.id == 2 && h.wt == 0) v = h.v;
            if (h.id == 3 && h.wt == 0) incr = h.v;
        }
        if (cid >= 64 && cid < 128) { seq_id = (uint32_t)cid; seq_v = (int64_t)(v & INT64_MAX); inc = incr != 0; has_seq = 1; }
        if (cid == 1) { real_v = (int64_t)(v & INT64_MAX); has_real = 1; }
    }
    if (has_seq) {
        s->seq_clock = seq_id;
        s->incremental = inc;
        s->last = seq_v;
        s->to_real = has_real ? sub_ck(real_v, seq_v) : 0;
    }
}

/* Pass 1 over a Perfetto trace: its rank and drops (trace attributes), the
   sync points (instants named prof_sync with a "sync" annotation), the
   earliest time, its highest sequence id. */
static void pf_collect(trace *t) {
    size_t pos = 0, n;
    const uint8_t *at;
    while (pf_packet(t, &pos, &at, &n)) {
        pbin in = { at, at + n }, sub, sub2;
        pbfield f, g, h;
        uint32_t seq = 0, clock = 0;
        uint64_t ts = 0, type = 0, name_iid = 0, key = 0;
        int has_ts = 0, is_event = 0;
        int64_t sync = -1;
        g_pf_at = at;
        while (pb_next(&in, &f))        /* the sequence first: fields may come in any order */
            if (f.id == 10 && f.wt == 0) seq = (uint32_t)f.v;
        if (seq > t->max_seq) t->max_seq = seq;
        pfseq *s = pf_seq(&g_pfseq, &g_npfseq, seq);
        in = (pbin){ at, at + n };
        while (pb_next(&in, &f)) {
            if (f.id == 13 && f.wt == 0 && (f.v & 1)) {  /* incremental state cleared */
                s->sync_iid = s->key_iid = 0;
            } else if (f.id == 8 && f.wt == 0) {
                ts = f.v;
                has_ts = 1;
            } else if (f.id == 58 && f.wt == 0) {
                clock = (uint32_t)f.v;
            } else if (f.id == 59 && f.wt == 2) {        /* defaults: the sequence's clock */
                sub = pb_sub(&f);
                while (pb_next(&sub, &g))
                    if (g.id == 58 && g.wt == 0) s->clock_id = (uint32_t)g.v;
            } else if (f.id == 12 && f.wt == 2) {        /* interned names: which iids matter */
                sub = pb_sub(&f);
                while (pb_next(&sub, &g)) {
                    if ((g.id != 2 && g.id != 3) || g.wt != 2) continue;
                    uint64_t iid = 0;
                    int match = 0;
                    sub2 = pb_sub(&g);
                    while (pb_next(&sub2, &h)) {
                        if (h.id == 1 && h.wt == 0) iid = h.v;
                        if (h.id == 2) match = pb_is(&h, g.id == 2 ? "prof_sync" : "sync");
                    }
                    if (match && g.id == 2) s->sync_iid = iid;
                    if (match && g.id == 3) s->key_iid = iid;
                }
            } else if (f.id == 6 && f.wt == 2) {
                pf_snapshot(s, &f);
            } else if (f.id == 11 && f.wt == 2) {        /* a track event */
                is_event = 1;
                sub = pb_sub(&f);
                while (pb_next(&sub, &g)) {
                    if (g.id == 9 && g.wt == 0) type = g.v;
                    if (g.id == 10 && g.wt == 0) name_iid = g.v;
                    if (g.id != 4 || g.wt != 2) continue;
                    uint64_t k = 0, v = 0;
                    int has_v = 0;
                    sub2 = pb_sub(&g);
                    while (pb_next(&sub2, &h)) {
                        if (h.id == 1 && h.wt == 0) k = h.v;
                        if (h.id == 4 && h.wt == 0) { v = h.v; has_v = 1; }
                    }
                    if (has_v) { key = k; sync = (int64_t)v; }
                }
            } else if (f.id == 126 && f.wt == 2) {       /* trace attributes: rank, drops */
                sub = pb_sub(&f);
                while (pb_next(&sub, &g)) {
                    if (g.id != 1 || g.wt != 2) continue;
                    int rank = 0, dropped = 0;
                    sub2 = pb_sub(&g);
                    while (pb_next(&sub2, &h)) {
                        if (h.id == 1) { rank = pb_is(&h, "rank"); dropped = pb_is(&h, "prof_dropped_events"); }
                        if (h.id == 2 && h.wt == 0 && rank) {
                            if ((int64_t)h.v < 0 || (int64_t)h.v > PF_MAX_RANK)
                                die("%s: rank %" PRId64 ": prof_merge numbers the ranks of Perfetto traces 0 to %d",
                                    t->path, (int64_t)h.v, PF_MAX_RANK);
                            t->rank = (int)h.v;
                        }
                        if (h.id == 2 && h.wt == 0 && dropped && (int64_t)h.v >= 0) t->dropped = (int64_t)h.v;
                    }
                }
            }
        }
        int64_t abs_ns;
        if (!is_event || !pf_time(s, has_ts, ts, clock, &abs_ns)) continue;
        if (!t->timed || abs_ns < t->tmin) t->tmin = abs_ns;
        t->timed = 1;
        t->npackets++;
        if (type == 3 && name_iid && name_iid == s->sync_iid && key && key == s->key_iid && sync >= 0) {
            t->syncs = xrealloc(t->syncs, (t->nsync + 1) * sizeof *t->syncs);
            t->syncs[t->nsync] = (sync_pt){ sync, abs_ns, t->nsync };
            t->nsync++;
        }
    }
    g_npfseq = 0;                       /* the next trace's sequences are others */
}

/* ---- pass 2: the rewriting --------------------------------------------- */

/* Messages are built with prof.h's writer of them (prof__pb: fields as
   prof__pb_uint, prof__pb_fixed64, prof__pb_bytes, a message as prof__pb_sub);
   what it lacks is a field copied as it was read. */
static void out_field(prof__pb *o, const pbfield *f) {
    size_t n = (size_t)(f->stop - f->start);
    unsigned char *q = prof__pb_room(o, n);
    if (!q) return;
    memcpy(q, f->start, n);
    o->n += n;
}

/* Scratch messages, one per nesting level (a packet holds at most three;
   the fourth: the merged attributes), and a packet: global, so that die()
   leaves them reachable. */
static prof__pb g_lvl[4], g_pk;

/* The packet in p as a Trace.packet field of the merged trace. */
static void pf_put_packet(prof__pb *p) {
    unsigned char len[16];
    if (p->err) die("out of memory");
    size_t n = (size_t)(prof__pb_varint(len, p->n) - len);
    put_n("\x0A", 1);
    put_n((const char *)len, n);
    put_n((const char *)p->b, p->n);
}

typedef struct {
    const trace *t;
    uint64_t mix;                       /* XORed into uuids and flow ids */
    uint32_t seq_base;
} pfctx;

static uint64_t pf_id(const pfctx *c, uint64_t id) { return (uint64_t)(c->t->rank + 1) << PF_ID_BITS | (id & ((1u << PF_ID_BITS) - 1)); }

/* A ProcessDescriptor (3) or ThreadDescriptor (4) of a TrackDescriptor. */
static void pf_rw_desc(const pfctx *c, const pbfield *f, prof__pb *o) {
    pbin in = pb_sub(f);
    pbfield g;
    prof__pb *m = &g_lvl[2];
    int named = 0;
    m->n = 0;
    while (pb_next(&in, &g)) {
        if (g.wt == 0 && (g.id == 1 || (f->id == 4 && g.id == 2))) {  /* pid, tid */
            prof__pb_uint(m, g.id, pf_id(c, g.v));
        } else if (f->id == 3 && g.id == 6 && g.wt == 2) {  /* process_name */
            char head[32];
            int k = snprintf(head, sizeof head, "rank %d (", c->t->rank);
            unsigned char *q = prof__pb_room(m, (size_t)k + g.n + 24);
            if (q) {
                q = prof__pb_varint(prof__pb_varint(q, PROF__PB_TAG(6, PROF__PB_LEN)), (size_t)k + g.n + 1);
                memcpy(q, head, (size_t)k);
                memcpy(q + k, g.data, g.n);
                q[(size_t)k + g.n] = ')';
                m->n = (size_t)(q + (size_t)k + g.n + 1 - m->b);
            }
            named = 1;
        } else {
            out_field(m, &g);
        }
    }
    if (f->id == 3 && !named) {
        char name[32];
        int k = snprintf(name, sizeof name, "rank %d", c->t->rank);
        prof__pb_bytes(m, 6, name, (size_t)k);
    }
    prof__pb_sub(o, f->id, m);
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

static void pf_rw_uuids(const pfctx *c, const pbfield *f, prof__pb *o, int level, int kind) {
    pbin in = pb_sub(f);
    pbfield g;
    prof__pb *m = &g_lvl[level];
    m->n = 0;
    while (pb_next(&in, &g)) {
        if (pf_is_uuid(kind, &g) && g.wt == 1) prof__pb_fixed64(m, g.id, g.v ^ c->mix);
        else if (pf_is_uuid(kind, &g)) prof__pb_uint(m, g.id, g.v ^ c->mix);
        else if (kind == PF_DESC && g.wt == 2 && (g.id == 3 || g.id == 4)) pf_rw_desc(c, &g, m);
        else out_field(m, &g);
    }
    prof__pb_sub(o, f->id, m);
}

/* TracePacketDefaults: its track_event_defaults' uuids. */
static void pf_rw_defaults(const pfctx *c, const pbfield *f, prof__pb *o) {
    pbin in = pb_sub(f);
    pbfield g;
    prof__pb *m = &g_lvl[0];
    m->n = 0;
    while (pb_next(&in, &g)) {
        if (g.id == 11 && g.wt == 2) pf_rw_uuids(c, &g, m, 1, PF_EVENT_DEFAULTS);
        else out_field(m, &g);
    }
    prof__pb_sub(o, f->id, m);
}

/* A ClockSnapshot: REALTIME readings moved by the offset, sequence-scoped
   clocks kept, the other clocks (this host's) left out. */
static void pf_rw_clocks(const pfctx *c, const pbfield *f, prof__pb *o) {
    pbin in = pb_sub(f), sub;
    pbfield g, h;
    prof__pb *m = &g_lvl[1], *k = &g_lvl[2];
    m->n = 0;
    while (pb_next(&in, &g)) {
        if (g.id != 1 || g.wt != 2) { out_field(m, &g); continue; }
        uint64_t cid = 0;
        sub = pb_sub(&g);
        while (pb_next(&sub, &h))
            if (h.id == 1 && h.wt == 0) cid = h.v;
        if (cid != 1 && (cid < 64 || cid >= 128)) continue;
        k->n = 0;
        sub = pb_sub(&g);
        while (pb_next(&sub, &h)) {
            if (cid == 1 && h.id == 2 && h.wt == 0) prof__pb_uint(k, 2, (uint64_t)add_ck((int64_t)(h.v & INT64_MAX), c->t->offset));
            else out_field(k, &h);
        }
        prof__pb_sub(m, 1, k);
    }
    prof__pb_sub(o, f->id, m);
}

/* One packet of rank c->t, rewritten into o (left empty when it holds
   nothing but its sequence: a rank's trace attributes). *seq_clock: the
   default clock of each sequence is kept in g_pfseq (TracePacketDefaults). */
static void pf_rw_packet(const pfctx *c, const uint8_t *at, size_t n, prof__pb *o) {
    pbin in = { at, at + n };
    pbfield f, g;
    uint32_t clock = 0, seq = 0;
    int kept = 0;
    while (pb_next(&in, &f)) {
        if (f.id == 58 && f.wt == 0) clock = (uint32_t)f.v;
        if (f.id == 10 && f.wt == 0) seq = (uint32_t)f.v;
    }
    pfseq *s = pf_seq(&g_pfseq, &g_npfseq, seq);
    in = (pbin){ at, at + n };
    while (pb_next(&in, &f)) {
        if (f.id == 59 && f.wt == 2) {          /* the sequence's default clock, from this packet on */
            pbin sub = pb_sub(&f);
            while (pb_next(&sub, &g))
                if (g.id == 58 && g.wt == 0) s->clock_id = (uint32_t)g.v;
        }
    }
    if (!clock) clock = s->clock_id;
    o->n = 0;
    in = (pbin){ at, at + n };
    while (pb_next(&in, &f)) {
        if (f.id == 126) continue;              /* the merged trace has its own attributes */
        kept |= f.id != 10;
        if (f.id == 10 && f.wt == 0) prof__pb_uint(o, 10, f.v + c->seq_base);
        else if (f.id == 8 && f.wt == 0 && (clock == 0 || clock == 1))
            prof__pb_uint(o, 8, (uint64_t)add_ck((int64_t)(f.v & INT64_MAX), c->t->offset));
        else if (f.id == 6 && f.wt == 2) pf_rw_clocks(c, &f, o);
        else if (f.id == 60 && f.wt == 2) pf_rw_uuids(c, &f, o, 0, PF_DESC);
        else if (f.id == 11 && f.wt == 2) pf_rw_uuids(c, &f, o, 0, PF_EVENT);
        else if (f.id == 59 && f.wt == 2) pf_rw_defaults(c, &f, o);
        else out_field(o, &f);
    }
    if (!kept) o->n = 0;
}

/* One TraceAttributes.Attribute: key, and a number or a string. */
static void pf_attr(prof__pb *o, const char *key, int64_t v, const char *s, size_t sn) {
    prof__pb *a = &g_lvl[1];
    a->n = 0;
    prof__pb_bytes(a, 1, key, strlen(key));
    if (s) prof__pb_bytes(a, 3, s, sn);
    else prof__pb_uint(a, 2, (uint64_t)v);
    prof__pb_sub(o, 1, a);
}

/* The merged trace's attributes: its name, the ranks and their offsets, the
   drops of all, and each rank's own attributes under "rank<r>.". */
static void pf_write_attributes(const char *name, uint32_t seq) {
    prof__pb *o = &g_lvl[3], *p = &g_pk;
    char key[300], ranks[16 * (PF_MAX_RANK + 1)];
    size_t rl = 0;
    int64_t dropped = 0;
    o->n = p->n = 0;
    pf_attr(o, "traceName", 0, name, strlen(name));
    for (size_t i = 0; i < g_ntr; i++) {
        const trace *t = &g_tr[i];
        rl += (size_t)snprintf(ranks + rl, sizeof ranks - rl, "%s%d", i ? "," : "", t->rank);
        dropped = t->dropped > INT64_MAX - dropped ? INT64_MAX : dropped + t->dropped;
        snprintf(key, sizeof key, "rank%d.prof_merge_offset_ns", t->rank);
        pf_attr(o, key, t->offset, NULL, 0);
        size_t pos = 0, n;
        const uint8_t *at;
        trace *tw = &g_tr[i];
        while (pf_packet(tw, &pos, &at, &n)) {
            pbin in = { at, at + n }, sub, sub2;
            pbfield f, g, h;
            g_pf_at = at;
            while (pb_next(&in, &f)) {
                if (f.id != 126 || f.wt != 2) continue;
                sub = pb_sub(&f);
                while (pb_next(&sub, &g)) {             /* each attribute, its key prefixed */
                    if (g.id != 1 || g.wt != 2) continue;
                    prof__pb *a = &g_lvl[1];
                    a->n = 0;
                    sub2 = pb_sub(&g);
                    while (pb_next(&sub2, &h)) {
                        if (h.id == 1 && h.wt == 2) {
                            int k = snprintf(key, sizeof key, "rank%d.%.*s", t->rank, (int)(h.n < 256 ? h.n : 256),
                                             (const char *)h.data);
                            prof__pb_bytes(a, 1, key, (size_t)k);
                        } else {
                            out_field(a, &h);
                        }
                    }
                    prof__pb_sub(o, 1, a);
                }
            }
        }
    }
    pf_attr(o, "prof_merged_ranks", 0, ranks, rl);
    pf_attr(o, "prof_dropped_events", dropped, NULL, 0);
    prof__pb_uint(p, 10, seq);
    prof__pb_sub(p, 126, o);
    pf_put_packet(p);
}

/* Pass 2 for Perfetto traces: the attributes, then every rank's packets. */
static void pf_write_merged(const char *name) {
    uint32_t seq_base = 0;
    for (size_t i = 0; i < g_ntr; i++) {
        seq_base += g_tr[i].max_seq;
        if (seq_base < g_tr[i].max_seq) die("more sequences than a Perfetto trace can number");
    }
    pf_write_attributes(name, seq_base + 1);
    seq_base = 0;
    for (size_t i = 0; i < g_ntr; i++) {
        trace *t = &g_tr[i];
        pfctx c = { t, t->rank ? (t->rank * UINT64_C(0x9E3779B97F4A7C15)) & ~UINT64_C(0xFFFFFFFF) : 0, seq_base };
        g_npfseq = 0;                   /* its sequences' default clocks, from none */
        size_t pos = 0, n;
        const uint8_t *at;
        while (pf_packet(t, &pos, &at, &n)) {
            g_pf_at = at;
            pf_rw_packet(&c, at, n, &g_pk);
            if (!g_pk.n && !g_pk.err) continue;
            pf_put_packet(&g_pk);
            g_written++;
        }
        seq_base += t->max_seq;
    }
}

/* ======================================================================== */
/*  The merge: main's steps, which the fuzz driver runs too                 */
/* ======================================================================== */

/* After every trace of g_tr is loaded: ranks in order, pass 1, and every rank
   onto the reference's clock; the merged base moves back by whole seconds if
   an aligned event would come before it. */
static void align_ranks(void) {
    qsort(g_tr, g_ntr, sizeof *g_tr, cmp_rank);
    for (size_t i = 1; i < g_ntr; i++)
        if (g_tr[i].rank == g_tr[i - 1].rank)
            die("%s and %s are both rank %d", g_tr[i - 1].path, g_tr[i].path, g_tr[i].rank);
    for (size_t i = 0; i < g_ntr; i++) {
        trace *t = &g_tr[i];
        if (t->pf != g_tr[0].pf)
            die("%s is a %s trace and %s a %s one: prof_merge merges traces of one format", g_tr[0].path,
                g_tr[0].pf ? "Perfetto" : "JSON", t->path, t->pf ? "Perfetto" : "JSON");
        if (t->pf && t->rank > PF_MAX_RANK)
            die("%s: rank %d: prof_merge numbers the ranks of Perfetto traces 0 to %d", t->path, t->rank, PF_MAX_RANK);
        if (!t->pf) for_each_event(t, collect);         /* a Perfetto trace's pass 1 came with load */
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

/* Pass 2: the merged trace, named `name`, into g_w.f (set by the caller, who
   checks g_w.err and closes it). */
static void write_merged(const char *name) {
    g_w.buf = xrealloc(NULL, PROF__WBUF + PROF__SLACK);
    if (g_ntr && g_tr[0].pf) {
        pf_write_merged(name);
        prof__w_flush(&g_w);
        return;
    }
    write_header(name);
    for (size_t i = 0; i < g_ntr; i++) {
        for_each_event(&g_tr[i], write_event);
        write_missing_meta(&g_tr[i]);
    }
    put("\n  ]\n}\n");
    prof__w_flush(&g_w);
}

/* Frees what the merge holds, leaving the globals as before the first trace. */
static void free_all(void) {
    for (size_t i = 0; i < g_ntr; i++) {
        free(g_tr[i].buf);
        free(g_tr[i].syncs);
        free(g_tr[i].procs);
        free(g_tr[i].diff);
    }
    free(g_tr);
    g_tr = NULL;
    g_ntr = 0;
    free(g_pfseq);
    g_pfseq = NULL;
    free(g_inflating);
    g_inflating = NULL;
    g_npfseq = 0;
    for (int i = 0; i < 4; i++) free(g_lvl[i].b);
    free(g_pk.b);
    memset(g_lvl, 0, sizeof g_lvl);
    memset(&g_pk, 0, sizeof g_pk);
    free(g_ev.m);
    memset(&g_ev, 0, sizeof g_ev);
    prof__w_free(&g_w);
    memset(&g_w, 0, sizeof g_w);
    g_written = 0;
}

/* ======================================================================== */
/*  prof table, prof diff: the summary table of a saved trace, or of two     */
/* ======================================================================== */
/* A JSON trace's CPU regions (X events off the GPUs) become prof.h's
   records again, in a cycle whose clock is 1 tick = 1 ns, and prof.h's own
   table code reads it: the rows, self times and arguments of the table the
   run would have printed. Per thread, the records go in the order the
   recorder writes them: a region when it ends (at one end, the inner one
   first), its arguments right before it. A step (ProfilerStep#N) is a step. */

typedef struct {                        /* a region with its arguments: ev[first, last] */
    uint32_t th;
    uint64_t t0, t1;
    size_t first, last;
} cli_unit;

typedef struct {
    prof__ev *ev;
    size_t n, cap;
    cli_unit *unit;
    size_t nunit, unitcap;
    struct prof__tinfo *th;
    size_t nth, thcap;
} cli_trace;

static cli_trace g_cli[2];
static cli_trace *g_cli_cur;

static unsigned cli_hex4(const char *p) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) v = v << 4 | (unsigned)(p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
    return v;
}

/* A JSON string (validated) as the text it stands for, interned. */
static const char *cli_text(span s) {
    char *buf = xrealloc(NULL, s.n + 1);
    size_t o = 0;
    for (size_t i = 1; i + 1 < s.n; i++) {
        if (s.p[i] != '\\') { buf[o++] = s.p[i]; continue; }
        char c = s.p[++i];
        if (c != 'u') {
            buf[o++] = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : c;
            continue;
        }
        unsigned cp = cli_hex4(s.p + i + 1);
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < s.n && s.p[i + 1] == '\\' && s.p[i + 2] == 'u') {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (cli_hex4(s.p + i + 3) - 0xDC00);
            i += 6;
        }
        int len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        static const unsigned char lead[5] = { 0, 0, 0xC0, 0xE0, 0xF0 };
        for (int k = len - 1; k > 0; k--) buf[o + (size_t)k] = (char)(0x80 | (cp & 63)), cp >>= 6;
        buf[o] = (char)(len == 1 ? cp : (lead[len] | cp));
        o += (size_t)len;
    }
    const char *text = prof_intern(buf, o);
    free(buf);
    return text;
}

static uint32_t cli_thread(cli_trace *c, int64_t tid) {
    for (size_t i = 0; i < c->nth; i++)
        if (c->th[i].tid == (long)tid) return (uint32_t)i;
    if (c->nth == c->thcap) {
        c->thcap = c->thcap ? 2 * c->thcap : 16;
        c->th = xrealloc(c->th, c->thcap * sizeof *c->th);
    }
    c->th[c->nth].tid = (long)tid;
    c->th[c->nth].name = NULL;
    return (uint32_t)c->nth++;
}

static void cli_record(cli_trace *c, uint32_t kind, const char *name, uint64_t t0, uint64_t t1, uint32_t aux,
                       uint32_t th) {
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        c->ev = xrealloc(c->ev, c->cap * sizeof *c->ev);
    }
    prof__ev *e = &c->ev[c->n++];
    e->name = name;
    e->t0 = t0;
    e->t1 = t1;
    e->kind = kind & 15u;
    e->aux = aux;
    e->th = th & 0xFFFFFFFu;
}

/* A region (or step) and its arguments, records first..c->n - 1. */
static void cli_unit_add(cli_trace *c, uint32_t th, uint64_t t0, uint64_t t1, size_t first) {
    if (c->nunit == c->unitcap) {
        c->unitcap = c->unitcap ? 2 * c->unitcap : 1024;
        c->unit = xrealloc(c->unit, c->unitcap * sizeof *c->unit);
    }
    c->unit[c->nunit++] = (cli_unit){ th, t0, t1, first, c->n - 1 };
}

static void cli_collect(trace *t, const event *ev) {
    cli_trace *c = g_cli_cur;
    int64_t tid, ts, dur;
    if (!span_int(ev->f[F_TID], &tid)) return;
    span name = ev->f[F_NAME], cat = ev->f[F_CAT];
    if (is_meta(ev)) {
        span nm = obj_find(&t->d, ev->f[F_ARGS], "\"name\"");
        if (is_str(name, "thread_name") && nm.n && nm.p[0] == '"') {
            uint32_t k = cli_thread(c, tid);    /* (which may move c->th) */
            c->th[k].name = cli_text(nm);
        }
        return;
    }
    if (!is_str(ev->f[F_PH], "X") || !name.n || name.p[0] != '"' || is_gpu_cat(cat)) return;
    if (!event_time(t, ev->f[F_TS], ev->at, &ts) || !span_scaled(ev->f[F_DUR], 3, &dur) || dur < 0 || ts < 0) return;
    uint32_t th = cli_thread(c, tid);
    const char *text = cli_text(name);
    uint64_t t0 = (uint64_t)ts + 1, t1 = t0 + (uint64_t)dur;    /* + 1: a tick is never 0 */
    size_t first = c->n;
    if (!strncmp(text, "ProfilerStep#", 13)) {  /* prof.h's JSON ends a step 1 ns early */
        cli_record(c, PROF__K_STEP, NULL, t0, ++t1, (uint32_t)strtoul(text + 13, NULL, 10), th);
    } else {
        cursor cur;
        span k, v;
        if (ev->f[F_ARGS].n && ev->f[F_ARGS].p[0] == '{') {
            obj_begin(&cur, &t->d, ev->f[F_ARGS].p, 1);
            while (obj_next(&cur, &k, &v)) {    /* prof.h's own keys are not arguments */
                int64_t x;
                if (span_eq(k, "\"correlation\"") || span_eq(k, "\"os_tid\"") || span_eq(k, "\"clipped\"")) continue;
                if (span_int(v, &x)) cli_record(c, PROF__K_ARG_INT, cli_text(k), t0, (uint64_t)x, 0, th);
                else if (v.p[0] == '"') cli_record(c, PROF__K_ARG_STR, cli_text(k), t0, (uint64_t)(uintptr_t)cli_text(v), 0, th);
            }
        }
        cli_record(c, PROF__K_REGION, text, t0, t1, 0, th);
    }
    cli_unit_add(c, th, t0, t1, first);
}

static int cli_unit_cmp(const void *pa, const void *pb) {
    const cli_unit *a = (const cli_unit *)pa, *b = (const cli_unit *)pb;
    if (a->th != b->th) return a->th < b->th ? -1 : 1;
    if (a->t1 != b->t1) return a->t1 < b->t1 ? -1 : 1;
    if (a->t0 != b->t0) return a->t0 > b->t0 ? -1 : 1;   /* the inner one ends first */
    return a->first < b->first ? -1 : a->first > b->first;
}

/* ---- prof table and prof diff of a Perfetto trace -------------------------
   Its CPU regions are the BEGIN/END slices of thread tracks (a thread's own,
   or an overlap lane under it), paired per track as the trace processor
   pairs them, with the names and argument keys each sequence interned and
   the arguments on the END, as prof.h writes them. GPU, counter and memory
   tracks are left out, as the JSON path leaves GPU events out. */
typedef struct { uint64_t uuid, parent; int64_t tid; int has_tid; } cli_pftrack;
typedef struct { uint64_t track; const char *name; uint64_t t0; } cli_pfopen;

static struct {
    uint64_t *key;                      /* (sequence, table, iid) + 1; 0: empty */
    const char **val;
    size_t cap, n;
    cli_pftrack *tr;
    size_t ntr;
    cli_pfopen *open;
    size_t nopen, opencap;
} g_pfc;

static uint64_t cli_pfkey(uint32_t seq, unsigned table, uint64_t iid) {
    return ((uint64_t)seq << 32 | (uint64_t)table << 30 | (iid & 0x3FFFFFFFu)) + 1;
}

static size_t cli_pfslot(uint64_t key) {
    size_t j = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (g_pfc.cap - 1);
    while (g_pfc.key[j] && g_pfc.key[j] != key) j = (j + 1) & (g_pfc.cap - 1);
    return j;
}

static void cli_pfname_put(uint64_t key, const char *v) {
    if (2 * (g_pfc.n + 1) > g_pfc.cap) {        /* grow: rehash into twice the room */
        uint64_t *ok = g_pfc.key;
        const char **ov = g_pfc.val;
        size_t oc = g_pfc.cap;
        g_pfc.cap = oc ? 2 * oc : 1024;
        g_pfc.key = xrealloc(NULL, g_pfc.cap * sizeof *g_pfc.key);
        g_pfc.val = xrealloc(NULL, g_pfc.cap * sizeof *g_pfc.val);
        memset(g_pfc.key, 0, g_pfc.cap * sizeof *g_pfc.key);
        for (size_t i = 0; i < oc; i++)
            if (ok[i]) {
                size_t j = cli_pfslot(ok[i]);
                g_pfc.key[j] = ok[i];
                g_pfc.val[j] = ov[i];
            }
        free(ok);
        free(ov);
    }
    size_t j = cli_pfslot(key);
    if (!g_pfc.key[j]) g_pfc.n++;
    g_pfc.key[j] = key;
    g_pfc.val[j] = v;
}

static const char *cli_pfname(uint64_t key) {
    if (!g_pfc.cap) return NULL;
    size_t j = cli_pfslot(key);
    return g_pfc.key[j] ? g_pfc.val[j] : NULL;
}

static const char *cli_pfstr(const pbfield *f) { return prof_intern((const char *)f->data, f->n); }

static cli_pftrack *cli_pftrack_of(uint64_t uuid) {
    for (size_t i = 0; i < g_pfc.ntr; i++)
        if (g_pfc.tr[i].uuid == uuid) return &g_pfc.tr[i];
    return NULL;
}

/* The thread a track's slices belong to: its own, or its parent's (lanes). */
static int cli_pftid(uint64_t uuid, int64_t *tid) {
    for (int depth = 0; depth < 4; depth++) {
        const cli_pftrack *k = cli_pftrack_of(uuid);
        if (!k) return 0;
        if (k->has_tid) { *tid = k->tid; return 1; }
        uuid = k->parent;
    }
    return 0;
}

/* A track descriptor: its uuid, parent, and thread (with its name). */
static void cli_pfdesc(cli_trace *c, const pbfield *f) {
    pbin in = pb_sub(f), sub;
    pbfield g, h;
    cli_pftrack k = { 0, 0, 0, 0 };
    const char *tname = NULL;
    while (pb_next(&in, &g)) {
        if (g.id == 1 && g.wt == 0) k.uuid = g.v;
        if (g.id == 5 && g.wt == 0) k.parent = g.v;
        if (g.id != 4 || g.wt != 2) continue;   /* ThreadDescriptor */
        sub = pb_sub(&g);
        while (pb_next(&sub, &h)) {
            if (h.id == 2 && h.wt == 0) { k.tid = (int64_t)(int32_t)h.v; k.has_tid = 1; }
            if (h.id == 5 && h.wt == 2) tname = cli_pfstr(&h);
        }
    }
    cli_pftrack *o = cli_pftrack_of(k.uuid);
    if (!o) {
        g_pfc.tr = xrealloc(g_pfc.tr, (g_pfc.ntr + 1) * sizeof *g_pfc.tr);
        o = &g_pfc.tr[g_pfc.ntr++];
    }
    *o = k;
    if (k.has_tid && tname) {
        uint32_t i = cli_thread(c, k.tid);      /* (which may move c->th) */
        c->th[i].name = tname;
    }
}

/* Interned event names (table 2) and argument keys (table 3) of a sequence. */
static void cli_pfinterned(uint32_t seq, const pbfield *f) {
    pbin in = pb_sub(f), sub;
    pbfield g, h;
    while (pb_next(&in, &g)) {
        if ((g.id != 2 && g.id != 3) || g.wt != 2) continue;
        uint64_t iid = 0;
        const char *name = NULL;
        sub = pb_sub(&g);
        while (pb_next(&sub, &h)) {
            if (h.id == 1 && h.wt == 0) iid = h.v;
            if (h.id == 2 && h.wt == 2) name = cli_pfstr(&h);
        }
        if (name) cli_pfname_put(cli_pfkey(seq, (unsigned)g.id, iid), name);
    }
}

/* One TrackEvent of sequence s at time ts (ns, > 0). */
static void cli_pfevent(cli_trace *c, pfseq *s, const pbfield *f, uint64_t ts) {
    pbin in = pb_sub(f), sub;
    pbfield g, h;
    uint64_t type = 0, track = s->track, name_iid = 0;
    const char *name = NULL;
    size_t nargs = 0;
    struct { const char *key; int is_str; int64_t v; const char *str; } args[16];
    while (pb_next(&in, &g)) {
        if (g.id == 9 && g.wt == 0) type = g.v;
        if (g.id == 10 && g.wt == 0) name_iid = g.v;
        if (g.id == 23 && g.wt == 2) name = cli_pfstr(&g);
        if (g.id == 11 && g.wt == 0) track = g.v;
        if (g.id != 4 || g.wt != 2 || nargs == 16) continue;
        const char *key = NULL;
        int has = 0;
        sub = pb_sub(&g);
        while (pb_next(&sub, &h)) {
            if (h.id == 1 && h.wt == 0) key = cli_pfname(cli_pfkey(s->id, 3, h.v));
            if (h.id == 10 && h.wt == 2) key = cli_pfstr(&h);
            if (h.id == 4 && h.wt == 0) { args[nargs].is_str = 0; args[nargs].v = (int64_t)h.v; has = 1; }
            if (h.id == 6 && h.wt == 2) { args[nargs].is_str = 1; args[nargs].str = cli_pfstr(&h); has = 1; }
        }
        if (key && has && strcmp(key, "correlation") && strcmp(key, "os_tid") && strcmp(key, "clipped"))
            args[nargs++].key = key;
    }
    if (type == 1) {                            /* SLICE_BEGIN */
        if (!name && name_iid) name = cli_pfname(cli_pfkey(s->id, 2, name_iid));
        if (g_pfc.nopen == g_pfc.opencap) {
            g_pfc.opencap = g_pfc.opencap ? 2 * g_pfc.opencap : 64;
            g_pfc.open = xrealloc(g_pfc.open, g_pfc.opencap * sizeof *g_pfc.open);
        }
        g_pfc.open[g_pfc.nopen++] = (cli_pfopen){ track, name ? name : "(unnamed)", ts };
        return;
    }
    if (type != 2) return;                      /* SLICE_END: the track's last open slice */
    size_t i = g_pfc.nopen;
    while (i && g_pfc.open[i - 1].track != track) i--;
    if (!i) return;
    cli_pfopen o = g_pfc.open[i - 1];
    memmove(&g_pfc.open[i - 1], &g_pfc.open[i], (g_pfc.nopen - i) * sizeof *g_pfc.open);
    g_pfc.nopen--;
    int64_t tid;
    if (!cli_pftid(track, &tid)) return;        /* not a thread's: GPU, counters */
    uint32_t th = cli_thread(c, tid);
    uint64_t t0 = o.t0, t1 = ts;
    size_t first = c->n;
    if (!strncmp(o.name, "ProfilerStep#", 13)) {    /* whole here, unlike the JSON's */
        cli_record(c, PROF__K_STEP, NULL, t0, t1, (uint32_t)strtoul(o.name + 13, NULL, 10), th);
    } else {
        for (size_t k = 0; k < nargs; k++)
            cli_record(c, args[k].is_str ? PROF__K_ARG_STR : PROF__K_ARG_INT, args[k].key, t0,
                       args[k].is_str ? (uint64_t)(uintptr_t)args[k].str : (uint64_t)args[k].v, 0, th);
        cli_record(c, PROF__K_REGION, o.name, t0, t1, 0, th);
    }
    cli_unit_add(c, th, t0, t1, first);
}

/* Every packet of a Perfetto trace, in order, into c. */
static void cli_collect_pf(trace *t, cli_trace *c) {
    size_t pos = 0, n;
    const uint8_t *at;
    g_npfseq = 0;
    while (pf_packet(t, &pos, &at, &n)) {
        pbin in = { at, at + n }, sub, sub2;
        pbfield f, g, h;
        uint32_t seq = 0, clock = 0;
        uint64_t ts = 0;
        int has_ts = 0;
        const uint8_t *ev_at = NULL;
        pbfield ev;
        memset(&ev, 0, sizeof ev);
        g_pf_at = at;
        while (pb_next(&in, &f))
            if (f.id == 10 && f.wt == 0) seq = (uint32_t)f.v;
        pfseq *s = pf_seq(&g_pfseq, &g_npfseq, seq);
        in = (pbin){ at, at + n };
        while (pb_next(&in, &f)) {
            if (f.id == 8 && f.wt == 0) { ts = f.v; has_ts = 1; }
            else if (f.id == 58 && f.wt == 0) clock = (uint32_t)f.v;
            else if (f.id == 60 && f.wt == 2) cli_pfdesc(c, &f);
            else if (f.id == 12 && f.wt == 2) cli_pfinterned(seq, &f);
            else if (f.id == 11 && f.wt == 2) { ev = f; ev_at = f.data; }
            else if (f.id == 59 && f.wt == 2) {         /* defaults: clock, track */
                sub = pb_sub(&f);
                while (pb_next(&sub, &g)) {
                    if (g.id == 58 && g.wt == 0) s->clock_id = (uint32_t)g.v;
                    if (g.id != 11 || g.wt != 2) continue;
                    sub2 = pb_sub(&g);
                    while (pb_next(&sub2, &h))
                        if (h.id == 11 && h.wt == 0) s->track = h.v;
                }
            } else if (f.id == 6 && f.wt == 2) {
                pf_snapshot(s, &f);
            }
        }
        int64_t abs_ns;
        if (ev_at && pf_time(s, has_ts, ts, clock, &abs_ns) && abs_ns >= t->tmin)
            cli_pfevent(c, s, &ev, (uint64_t)(abs_ns - t->tmin) + 1);
    }
    g_npfseq = 0;
    free(g_pfc.key);
    free(g_pfc.val);
    free(g_pfc.tr);
    free(g_pfc.open);
    memset(&g_pfc, 0, sizeof g_pfc);
}

/* Trace t (JSON or Perfetto) as a cycle of prof.h's, analysed, into *cy. */
static void cli_cycle(trace *t, cli_trace *c, prof__cycle *cy) {
    g_cli_cur = c;
    if (t->pf) cli_collect_pf(t, c);
    else for_each_event(t, cli_collect);
    if (c->nunit) qsort(c->unit, c->nunit, sizeof *c->unit, cli_unit_cmp);
    prof__ev *sorted = xrealloc(NULL, (c->n + 1) * sizeof *sorted);
    size_t o = 0;
    for (size_t u = 0; u < c->nunit; u++)
        for (size_t i = c->unit[u].first; i <= c->unit[u].last; i++) sorted[o++] = c->ev[i];
    free(c->ev);
    c->ev = sorted;
    c->n = c->cap = o;
    memset(cy, 0, sizeof *cy);
    cy->ev = c->ev;
    cy->n = c->n;
    cy->cap = c->n;
    cy->th = c->th;
    cy->nth = c->nth;
    cy->index = 1;
    if (!prof__analyse(cy)) die("%s: out of memory", t->path);
}

/* The clock of a trace's cycle: a tick is a nanosecond. */
static void cli_clock(void) {
    prof__g.clk.tick0 = 0;
    prof__g.clk.mono0 = 0;
    prof__g.clk.ns_per_tick = 1.0;
    prof__g.clk.ns_per_tick_q32 = (uint64_t)1 << 32;
}

/* A trace from a path, read and checked as the merge reads one. */
static trace *cli_load(const char *path, int arg) {
    trace *t = &g_tr[g_ntr++];
    memset(t, 0, sizeof *t);
    t->path = path;
    t->arg = arg;
    read_file(t);
    load(t);
    return t;
}

static void cli_free(void) {
    for (int i = 0; i < 2; i++) {
        free(g_cli[i].ev);
        free(g_cli[i].unit);
        free(g_cli[i].th);
        memset(&g_cli[i], 0, sizeof g_cli[i]);
    }
}

#ifndef PROF_MERGE_FUZZ             /* the commands; fuzz_merge drives the reader above */
/* prof table TRACE [SPEC]: SPEC as PROF_TABLE's (sort=..., rows=N, group=...,
   percentiles); by default every row, by self CPU time. */
static int cmd_table(int argc, char **argv) {
    prof_sort sort;
    size_t rows;
    int group;
    if (argc < 1 || argc > 2) die("usage: prof table TRACE [sort=self_cpu,rows=N,group=args|thread,percentiles]");
    if (!prof__parse_table_spec(argc > 1 ? argv[1] : "sort=self_cpu", &sort, &rows, &group, NULL))
        die("'%s' is not a table spec as PROF_TABLE takes (sort=...,rows=N,group=...,percentiles)", argv[1]);
    g_tr = xrealloc(NULL, sizeof *g_tr);
    cli_clock();
    prof__cycle cy;
    cli_cycle(cli_load(argv[0], 0), &g_cli[0], &cy);
    prof_table tab;
    if (!prof_cycle_table(&cy, sort, group, &tab)) die("%s: out of memory", argv[0]);
    prof_table_print(&tab, stdout, rows);
    prof_table_free(&tab);
    free(cy.parent);
    free(cy.track);
    return 0;
}

/* prof diff: the rows of two tables by name. */
typedef struct {
    const char *name;
    const prof_row *a, *b;              /* base's, new's; NULL: not in it */
    int64_t dself, dtotal;
} cli_delta;

static double cli_pct(int64_t d, int64_t base) { return base ? 100.0 * (double)d / (double)base : 0.0; }
static double cli_abs(double v) { return v < 0 ? -v : v; }

static int cli_delta_cmp(const void *pa, const void *pb) {
    const cli_delta *a = (const cli_delta *)pa, *b = (const cli_delta *)pb;
    if (a->dself != b->dself) return a->dself > b->dself ? -1 : 1;    /* where the time went first */
    if (a->dtotal != b->dtotal) return a->dtotal > b->dtotal ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int cli_pct_arg(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end && strcmp(end, "%")) || !(v >= 0)) return 0;
    *out = v;
    return 1;
}

/* prof diff BASE NEW [--min-change PCT] [--fail-over PCT]: per region (by
   name), calls, self and total time in both, their change, the rows sorted
   by the change of self time (where the time went). A row that changed less
   than --min-change (default 5%) in both self and total time is left out.
   With --fail-over, exit status 1 when a region of both traces grew in
   total time by more than that, each named on stderr. */
static int cmd_diff(int argc, char **argv) {
    double min_change = 5.0, fail_over = -1.0;
    const char *path[2] = { NULL, NULL };
    int np = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--min-change") && i + 1 < argc) {
            if (!cli_pct_arg(argv[++i], &min_change)) die("--min-change '%s' is not a percentage", argv[i]);
        } else if (!strcmp(argv[i], "--fail-over") && i + 1 < argc) {
            if (!cli_pct_arg(argv[++i], &fail_over)) die("--fail-over '%s' is not a percentage", argv[i]);
        } else if (argv[i][0] == '-' || np == 2) {
            die("usage: prof diff BASE NEW [--min-change PCT] [--fail-over PCT]");
        } else {
            path[np++] = argv[i];
        }
    }
    if (np != 2) die("usage: prof diff BASE NEW [--min-change PCT] [--fail-over PCT]");
    g_tr = xrealloc(NULL, 2 * sizeof *g_tr);
    cli_clock();
    prof_table tab[2];
    prof__cycle cy[2];
    for (int k = 0; k < 2; k++) {
        cli_cycle(cli_load(path[k], k), &g_cli[k], &cy[k]);
        if (!prof_cycle_table(&cy[k], PROF_SORT_NAME, 0, &tab[k])) die("%s: out of memory", path[k]);
    }
    cli_delta *d = xrealloc(NULL, (tab[0].n + tab[1].n + 1) * sizeof *d);
    size_t nd = 0, i = 0, j = 0;
    while (i < tab[0].n || j < tab[1].n) {      /* both sorted by name: a merge */
        const prof_row *a = i < tab[0].n ? &tab[0].rows[i] : NULL, *b = j < tab[1].n ? &tab[1].rows[j] : NULL;
        int c = !a ? 1 : !b ? -1 : strcmp(a->name, b->name);
        if (c < 0) b = NULL;
        if (c > 0) a = NULL;
        i += a != NULL;
        j += b != NULL;
        d[nd++] = (cli_delta){ a ? a->name : b->name, a, b, (b ? b->self_ns : 0) - (a ? a->self_ns : 0),
                               (b ? b->total_ns : 0) - (a ? a->total_ns : 0) };
    }
    qsort(d, nd, sizeof *d, cli_delta_cmp);
    printf("%-40s  %9s  %9s  %12s  %12s  %12s  %9s  %12s  %12s  %9s\n", "Name", "Calls", "New calls", "Self base",
           "Self new", "Self change", "Self %", "Total base", "Total new", "Total %");
    int failed = 0;
    size_t hidden = 0;
    for (size_t k = 0; k < nd; k++) {
        const cli_delta *x = &d[k];
        double ps = cli_pct(x->dself, x->a ? x->a->self_ns : 0), pt = cli_pct(x->dtotal, x->a ? x->a->total_ns : 0);
        if (x->a && x->b && cli_abs(ps) < min_change && cli_abs(pt) < min_change) { hidden++; continue; }
        char sb[32], sn[32], sd[32], tb[32], tn[32], cut[48];
        prof__fmt_time(sb, sizeof sb, x->a ? (double)x->a->self_ns : 0.0);
        prof__fmt_time(sn, sizeof sn, x->b ? (double)x->b->self_ns : 0.0);
        prof__fmt_time(sd + 1, sizeof sd - 1, cli_abs((double)x->dself));
        sd[0] = x->dself < 0 ? '-' : '+';
        prof__fmt_time(tb, sizeof tb, x->a ? (double)x->a->total_ns : 0.0);
        prof__fmt_time(tn, sizeof tn, x->b ? (double)x->b->total_ns : 0.0);
        char pss[16], pts[16];
        if (x->a && x->b) {
            snprintf(pss, sizeof pss, "%+.2f%%", ps);
            snprintf(pts, sizeof pts, "%+.2f%%", pt);
        } else {
            snprintf(pss, sizeof pss, "%s", x->a ? "gone" : "new");
            snprintf(pts, sizeof pts, "%s", pss);
        }
        printf("%-40s  %9llu  %9llu  %12s  %12s  %12s  %9s  %12s  %12s  %9s\n", prof__cut(cut, x->name, 40),
               (unsigned long long)(x->a ? x->a->calls : 0), (unsigned long long)(x->b ? x->b->calls : 0), sb, sn,
               sd, pss, tb, tn, pts);
        if (fail_over >= 0 && x->a && x->b && pt > fail_over) {
            note("'%s' slowed by %.2f%% in total time (%s to %s), over %.2f%%", x->name, pt, tb, tn, fail_over);
            failed = 1;
        }
    }
    if (hidden) printf("(%zu region%s changed by less than %.2f%%: left out; --min-change 0 shows all)\n", hidden,
                       hidden == 1 ? "" : "s", min_change);
    free(d);
    for (int k = 0; k < 2; k++) {
        prof_table_free(&tab[k]);
        free(cy[k].parent);
        free(cy[k].track);
    }
    return failed;
}
#endif /* PROF_MERGE_FUZZ */

/* ======================================================================== */
/*  main                                                                    */
/* ======================================================================== */

#ifndef PROF_MERGE_FUZZ
int main(int argc, char **argv) {
    const char *out = NULL;
    int quiet = 0, options = 1;
    if (argc > 1 && (!strcmp(argv[1], "table") || !strcmp(argv[1], "diff"))) {
        g_prog = !strcmp(argv[1], "table") ? "prof table" : "prof diff";
        int rc = !strcmp(argv[1], "table") ? cmd_table(argc - 2, argv + 2) : cmd_diff(argc - 2, argv + 2);
        cli_free();
        free_all();
        return rc;
    }
    if (argc > 1 && !strcmp(argv[1], "merge")) {    /* prof merge ...: prof_merge ... */
        argc--;
        argv++;
    }

    g_tr = xrealloc(NULL, (size_t)argc * sizeof *g_tr);
    memset(g_tr, 0, (size_t)argc * sizeof *g_tr);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options && a[0] == '-' && a[1]) {
            if (strcmp(a, "--") == 0) options = 0;
            else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) quiet = 1;
            else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { fputs(usage_text, stdout); free(g_tr); return 0; }
            else if (strcmp(a, "-o") == 0) {
                if (i + 1 >= argc) die("-o needs a file name");
                out = argv[++i];
            } else die("unknown option '%s' (prof_merge --help shows the usage)", a);
            continue;
        }
        g_tr[g_ntr].path = a;
        g_tr[g_ntr].arg = (int)g_ntr;
        g_tr[g_ntr].rank = (int)g_ntr;      /* unless its distributedInfo says */
        g_ntr++;
    }
    if (!g_ntr) die("no traces to merge (usage: prof_merge [-o merged.json] [--quiet] rank0.json ...)");
    if ((size_t)MAX_RANK < g_ntr - 1) die("more than %d traces", MAX_RANK + 1);

    for (size_t i = 0; i < g_ntr; i++) {
        read_file(&g_tr[i]);
        load(&g_tr[i]);
    }
    align_ranks();
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

    char *partial = NULL;
    if (strcmp(out, "-") == 0) {
        g_w.f = stdout;
    } else {
        /* written aside, renamed when complete: never a half-written trace */
        partial = xrealloc(NULL, strlen(out) + sizeof ".part");
        strcpy(partial, out);
        strcat(partial, ".part");
        g_w.f = fopen(partial, "wb");
        if (!g_w.f) die("%s: cannot write: %s", out, strerror(errno));
        g_partial = partial;
    }
    write_merged(strcmp(out, "-") == 0 ? "merged" : out);
    if (g_w.f == stdout) {
        if (fflush(stdout) != 0 || g_w.err) die("cannot write the merged trace: %s", strerror(errno));
    } else {
        if (fclose(g_w.f) != 0 || g_w.err) die("%s: cannot write: %s", out, strerror(errno));
        if (rename(partial, out) != 0) die("%s: cannot write: %s", out, strerror(errno));
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

    free_all();
    free(partial);
    return 0;
}
#endif
