/* prof_link.c - the one file of `prof` that holds prof.h's implementation
   (compiled in, never started: the tool records nothing) and the one that
   uses prof.h's private names. It defines tool.h's tool_* functions on top
   of them: the model a saved trace is rebuilt into (prof.h's records of a
   cycle, then its analysis), prof.h's table helpers, its buffered writer and
   its protobuf encoder. When prof.h declares a public model interface, this
   file becomes a thin caller of it. */
#define PROF_ENABLE 1
#define PROF_IMPLEMENTATION
#include "prof.h"

#include "tool.h"

#include <string.h>

/* ======================================================================== */
/*  The model: a cycle of prof.h's records                                  */
/* ======================================================================== */
/* The clock is 1 tick = 1 ns, and a time t in ns is tick t + 1 (tick 0 is
   never a time). A region or step is a unit: its record, then its
   arguments'; tool_cycle_finish puts every thread's units in the order the
   recorder writes them (a region when it ends; at one end, the inner one
   first; its arguments right before it). */

typedef struct {
    uint32_t th;
    uint64_t t0, t1;                    /* ticks */
    size_t first, last;                 /* ev[first]: the region; ev[first + 1 .. last]: its arguments */
} unit;

struct tool_cycle {
    prof__ev *ev;
    size_t n, cap;
    unit *unit;
    size_t nunit, unitcap;
    struct prof__tinfo *th;
    size_t nth, thcap;
    prof__cycle cy;
};

tool_cycle *tool_cycle_new(void) {
    tool_cycle *c = xrealloc(NULL, sizeof *c);
    memset(c, 0, sizeof *c);
    return c;
}

uint32_t tool_thread(tool_cycle *c, long tid, const char *name) {
    size_t i = 0;
    while (i < c->nth && c->th[i].tid != tid) i++;
    if (i == c->nth) {
        if (c->nth == c->thcap) {
            c->thcap = c->thcap ? 2 * c->thcap : 16;
            c->th = xrealloc(c->th, c->thcap * sizeof *c->th);
        }
        memset(&c->th[i], 0, sizeof c->th[i]);
        c->th[i].tid = tid;
        c->nth++;
    }
    if (name) c->th[i].name = name;
    return (uint32_t)i;
}

static void record(tool_cycle *c, uint32_t kind, const char *name, uint64_t t0, uint64_t t1, uint32_t aux,
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

static void unit_add(tool_cycle *c, uint32_t kind, const char *name, uint32_t aux, uint32_t th, uint64_t t0,
                     uint64_t t1) {
    if (c->nunit == c->unitcap) {
        c->unitcap = c->unitcap ? 2 * c->unitcap : 1024;
        c->unit = xrealloc(c->unit, c->unitcap * sizeof *c->unit);
    }
    c->unit[c->nunit++] = (unit){ th, t0 + 1, t1 + 1, c->n, c->n };
    record(c, kind, name, t0 + 1, t1 + 1, aux, th);
}

void tool_region(tool_cycle *c, uint32_t th, const char *name, uint64_t t0, uint64_t t1) {
    unit_add(c, PROF__K_REGION, name, 0, th, t0, t1);
}

void tool_step(tool_cycle *c, uint32_t th, uint32_t number, uint64_t t0, uint64_t t1) {
    unit_add(c, PROF__K_STEP, NULL, number, th, t0, t1);
}

static void arg(tool_cycle *c, uint32_t kind, const char *key, uint64_t v) {
    if (!c->nunit) return;
    unit *u = &c->unit[c->nunit - 1];
    record(c, kind, key, u->t0, v, 0, u->th);
    u->last = c->n - 1;
}

void tool_arg_int(tool_cycle *c, const char *key, int64_t v) { arg(c, PROF__K_ARG_INT, key, (uint64_t)v); }
void tool_arg_str(tool_cycle *c, const char *key, const char *v) {
    arg(c, PROF__K_ARG_STR, key, (uint64_t)(uintptr_t)v);
}

static int unit_cmp(const void *pa, const void *pb) {
    const unit *a = (const unit *)pa, *b = (const unit *)pb;
    if (a->th != b->th) return a->th < b->th ? -1 : 1;
    if (a->t1 != b->t1) return a->t1 < b->t1 ? -1 : 1;
    if (a->t0 != b->t0) return a->t0 > b->t0 ? -1 : 1;   /* the inner one ends first */
    return a->first < b->first ? -1 : a->first > b->first;
}

const prof_cycle *tool_cycle_finish(tool_cycle *c) {
    if (c->nunit) qsort(c->unit, c->nunit, sizeof *c->unit, unit_cmp);
    prof__ev *sorted = xrealloc(NULL, (c->n + 1) * sizeof *sorted);
    size_t o = 0;
    for (size_t u = 0; u < c->nunit; u++) {
        for (size_t i = c->unit[u].first + 1; i <= c->unit[u].last; i++) sorted[o++] = c->ev[i];
        sorted[o++] = c->ev[c->unit[u].first];
    }
    free(c->ev);
    c->ev = sorted;
    c->n = c->cap = o;
    memset(&c->cy, 0, sizeof c->cy);
    c->cy.ev = c->ev;
    c->cy.n = c->n;
    c->cy.cap = c->n;
    c->cy.th = c->th;
    c->cy.nth = c->nth;
    c->cy.index = 1;
    prof__g.clk.tick0 = 0;              /* the clock the table reads: a tick is a nanosecond */
    prof__g.clk.mono0 = 0;
    prof__g.clk.ns_per_tick = 1.0;
    prof__g.clk.ns_per_tick_q32 = (uint64_t)1 << 32;
    return prof__analyse(&c->cy) ? &c->cy : NULL;
}

void tool_cycle_free(tool_cycle *c) {
    if (!c) return;
    free(c->ev);
    free(c->unit);
    free(c->th);
    free(c->cy.parent);
    free(c->cy.track);
    free(c);
}

/* ---- the table's helpers -------------------------------------------------- */

int tool_table_spec(const char *spec, prof_sort *sort, size_t *rows, int *group) {
    return prof__parse_table_spec(spec, sort, rows, group, NULL);
}

void tool_fmt_time(char *o, size_t cap, double ns) { prof__fmt_time(o, cap, ns); }

const char *tool_cut(char *buf, const char *s, size_t max) { return prof__cut(buf, s, max); }

/* ======================================================================== */
/*  Writers                                                                 */
/* ======================================================================== */

struct tool_pb { prof__pb pb; };

tool_pb *tool_pb_new(void) {
    tool_pb *m = xrealloc(NULL, sizeof *m);
    memset(m, 0, sizeof *m);
    return m;
}

void tool_pb_clear(tool_pb *m) { m->pb.n = 0; }
size_t tool_pb_len(const tool_pb *m) { return m->pb.n; }
int tool_pb_failed(const tool_pb *m) { return m->pb.err; }
void tool_pb_uint(tool_pb *m, uint32_t field, uint64_t v) { prof__pb_uint(&m->pb, field, v); }
void tool_pb_fixed64(tool_pb *m, uint32_t field, uint64_t v) { prof__pb_fixed64(&m->pb, field, v); }
void tool_pb_bytes(tool_pb *m, uint32_t field, const void *p, size_t n) { prof__pb_bytes(&m->pb, field, p, n); }
void tool_pb_sub(tool_pb *m, uint32_t field, tool_pb *sub) { prof__pb_sub(&m->pb, field, &sub->pb); }

void tool_pb_raw(tool_pb *m, const void *p, size_t n) {
    unsigned char *q = prof__pb_room(&m->pb, n);
    if (!q) return;
    memcpy(q, p, n);
    m->pb.n += n;
}

void tool_pb_free(tool_pb *m) {
    if (!m) return;
    free(m->pb.b);
    free(m);
}

/* One buffer (a merged trace is millions of small pieces: stdio's per-call
   cost would dominate), prof.h's number and microsecond formatting, its JSON
   string escaping. */
struct tool_out { prof__w w; };

tool_out *tool_out_new(FILE *f) {
    tool_out *o = malloc(sizeof *o);
    char *buf = malloc(PROF__WBUF + PROF__SLACK);
    if (!o || !buf) {
        free(o);
        free(buf);
        die("out of memory");
    }
    memset(o, 0, sizeof *o);
    o->w.f = f;
    o->w.buf = buf;
    return o;
}

void tool_out_put(tool_out *o, const void *s, size_t n) { prof__w_put(&o->w, (const char *)s, n); }
void tool_out_i64(tool_out *o, int64_t v) { prof__w_i64(&o->w, v); }
void tool_out_us(tool_out *o, int64_t ns) {
    o->w.n = (size_t)(prof__fmt_us(prof__w_room(&o->w, 32), ns) - o->w.buf);
}
void tool_out_json_str(tool_out *o, const char *s) { prof__w_str(&o->w, s); }

void tool_out_pb(tool_out *o, uint32_t field, const tool_pb *m) {
    unsigned char head[24];
    unsigned char *q = prof__pb_varint(prof__pb_varint(head, PROF__PB_TAG(field, PROF__PB_LEN)), m->pb.n);
    prof__w_put(&o->w, (const char *)head, (size_t)(q - head));
    prof__w_put(&o->w, (const char *)m->pb.b, m->pb.n);
}

int tool_out_flush(tool_out *o) {
    prof__w_flush(&o->w);
    return !o->w.err;
}

void tool_out_free(tool_out *o) {
    if (!o) return;
    prof__w_free(&o->w);
    free(o);
}
