/* samples.c - a JSON trace's PROF_SAMPLE samples read back (its
   prof_samples key, prof.h's >>sample): the process's executable mappings,
   then each sample with its frames named offline, innermost first: the
   function from the ELF file's symbols (symbols.c), else file+0xoffset,
   else the address in hex. Names are interned (prof_intern): one text, one
   pointer, across traces too. prof table group=function, prof diff
   group=function and prof report's flame graph read the samples so. Each
   trace is named from its own mappings: the ELF files read for one are let
   go before the next. A pass of its own reads them (json_samples), a
   sample at a time: their number is bounded by nothing but the file. */
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char *path, *build_id; uint64_t start, end, offset; elf_file *elf; } smap;

#define NAME_CACHE 4096                 /* addresses named, direct-mapped (samples repeat them) */

/* One reading's state: global, so that die() leaves it reachable. */
static struct {
    smap *m;
    size_t nm;
    const char **frame;                 /* one sample's names */
    size_t cap;
    struct { uint64_t a; const char *name; } cache[NAME_CACHE];
} g_s;

static uint64_t hex(const doc *d, span s) {      /* "0x..." */
    const char *t = s.n && s.p[0] == '"' ? json_text(s) : NULL;
    char *end = NULL;
    unsigned long long v = t ? strtoull(t, &end, 16) : 0;
    if (!t || end == t || *end) die("%s: prof_samples: %.*s is not an address", d->path, (int)s.n, s.p);
    return (uint64_t)v;
}

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

/* The name of address a: its function, else file+0xoffset, else its hex. */
static const char *name_of(uint64_t a) {
    size_t h = (size_t)((a * 0x9E3779B97F4A7C15u) >> 52) & (NAME_CACHE - 1);
    if (g_s.cache[h].name && g_s.cache[h].a == a) return g_s.cache[h].name;
    char buf[4096 + 32];
    const char *f = NULL;
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)a);
    for (size_t i = 0; i < g_s.nm; i++) {
        smap *m = &g_s.m[i];
        if (a < m->start || a >= m->end) continue;
        if (!m->elf) m->elf = elf_get(m->path, m->build_id);
        uint64_t off = a - m->start + m->offset;
        if (!(f = elf_function(m->elf, off))) {
            const char *base = strrchr(m->path, '/');
            snprintf(buf, sizeof buf, "%s+0x%llx", base ? base + 1 : m->path, (unsigned long long)off);
        }
        break;
    }
    if (!f) f = buf;
    g_s.cache[h].a = a;
    g_s.cache[h].name = prof_intern(f, strlen(f));
    return g_s.cache[h].name;
}

static void samples_free(void) {
    for (size_t i = 0; i < g_s.nm; i++) {
        free(g_s.m[i].path);
        free(g_s.m[i].build_id);
    }
    free(g_s.m);
    free(g_s.frame);
    memset(&g_s, 0, sizeof g_s);
    elf_free();
}

static void read_mappings(const doc *d, span maps) {
    cursor c;
    span v;
    arr_begin(&c, d, maps.p, 1);
    while (arr_next(&c, &v)) {
        g_s.m = xrealloc(g_s.m, (g_s.nm + 1) * sizeof *g_s.m);
        smap *m = &g_s.m[g_s.nm++];
        const char *mp = json_text(obj_find(d, v, "\"path\"")), *id = json_text(obj_find(d, v, "\"build_id\""));
        m->path = dup(mp ? mp : "");
        m->build_id = dup(id ? id : "");
        m->start = hex(d, obj_find(d, v, "\"start\""));
        m->end = hex(d, obj_find(d, v, "\"end\""));
        m->offset = hex(d, obj_find(d, v, "\"offset\""));
        m->elf = NULL;
    }
}

typedef struct {
    void (*fn)(const tool_sample *, void *);
    void *ctx;
    int64_t period;
    int seen, mapped;
} pass;

static void on_member(trace *t, span k, span v, void *ctx) {
    pass *x = ctx;
    x->seen = 1;
    if (span_eq(k, "\"period_ns\"") && (!span_int(v, &x->period) || x->period <= 0))
        die("%s: prof_samples: period_ns %.*s is not a period in ns", t->path, (int)v.n, v.p);
    if (span_eq(k, "\"mappings\"")) {
        if (v.p[0] != '[') die("%s: prof_samples: mappings is not an array", t->path);
        read_mappings(&t->d, v);
        x->mapped = 1;
    }
}

static void on_sample(trace *t, span v, void *ctx) {     /* [tid, ts, step, region, [addresses]] */
    pass *x = ctx;
    const doc *d = &t->d;
    if (!x->period || !x->mapped) die("%s: prof_samples: samples before its period_ns and mappings", t->path);
    cursor e, a;
    span f[5], ip;
    int n = 0;
    tool_sample s;
    if (v.p[0] == '[') {
        arr_begin(&e, d, v.p, 3);
        while (n < 5 && arr_next(&e, &f[n])) n++;
    }
    if (n != 5 || f[4].p[0] != '[' || !span_int(f[0], &s.tid) || !span_int(f[1], &s.ts) || !span_int(f[2], &s.step))
        die("%s: a sample of prof_samples is not [tid, ts, step, region, [addresses]]", t->path);
    s.period_ns = x->period;
    s.region = span_eq(f[3], "null") ? NULL : json_text(f[3]);
    s.n = 0;
    arr_begin(&a, d, f[4].p, 4);
    while (arr_next(&a, &ip)) {
        if (s.n == g_s.cap) g_s.frame = xrealloc(g_s.frame, (g_s.cap = g_s.cap ? 2 * g_s.cap : 64) * sizeof *g_s.frame);
        g_s.frame[s.n++] = name_of(hex(d, ip));
    }
    s.frame = g_s.frame;
    x->fn(&s, x->ctx);
}

int64_t samples_each(trace *t, void (*fn)(const tool_sample *, void *), void *ctx) {
    samples_free();
    if (t->pf) return 0;
    pass x = { fn, ctx, 0, 0, 0 };
    const json_samples_fn hook = { on_member, on_sample, &x };
    json_samples(t, &hook);
    if (x.seen && !x.period) die("%s: prof_samples has no period_ns", t->path);
    samples_free();
    return x.seen ? x.period : 0;
}
