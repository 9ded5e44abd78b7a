/* functions.c - prof table TRACE group=function: where a run's CPU time went
   inside its regions, from the samples PROF_SAMPLE kept (a JSON trace's
   prof_samples key, prof.h's >>sample): per region, the samples whose
   innermost frame is each function (its self samples) and their share of
   the region's, the functions named from the ELF files' symbols
   (symbols.c). */
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char *path, *build_id; uint64_t start, end, offset; elf_file *elf; } fmap;
typedef struct { const char *region, *function; long n; } frow;

static uint64_t hex(const doc *d, span s) {
    const char *t = json_text(s);
    char *end;
    unsigned long long v = t ? strtoull(t, &end, 16) : 0;
    if (!t || end == t || *end) die("%s: prof_samples: %.*s is not an address", d->path, (int)s.n, s.p);
    return (uint64_t)v;
}

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

/* The name of address a: its function, else file+0xoffset, else its hex. */
static const char *name_of(fmap *m, size_t nm, uint64_t a) {
    static char buf[4096 + 32];
    for (size_t i = 0; i < nm; i++) {
        if (a < m[i].start || a >= m[i].end) continue;
        if (!m[i].elf) m[i].elf = elf_get(m[i].path, m[i].build_id);
        uint64_t off = a - m[i].start + m[i].offset;
        const char *f = elf_function(m[i].elf, off);
        if (f) return f;
        const char *base = strrchr(m[i].path, '/');
        snprintf(buf, sizeof buf, "%s+0x%llx", base ? base + 1 : m[i].path, (unsigned long long)off);
        return buf;
    }
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)a);
    return buf;
}

static int row_cmp(const void *a, const void *b) {
    const frow *x = (const frow *)a, *y = (const frow *)b;
    int r = strcmp(x->region, y->region);
    if (r) return r;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return strcmp(x->function, y->function);
}

static void add(frow **rows, size_t *nr, const char *region, const char *function) {
    for (size_t i = 0; i < *nr; i++)
        if (!strcmp((*rows)[i].region, region) && !strcmp((*rows)[i].function, function)) {
            (*rows)[i].n++;
            return;
        }
    *rows = xrealloc(*rows, (*nr + 1) * sizeof **rows);
    (*rows)[*nr].region = region;
    (*rows)[*nr].function = dup(function);
    (*rows)[*nr].n = 1;
    (*nr)++;
}

int table_functions(const char *path, size_t limit) {
    trace *t = trace_add(path, 0);
    trace_read(t);
    if (t->len >= 2 && (unsigned char)t->buf[0] == 0x1f && (unsigned char)t->buf[1] == 0x8b)
        die("%s: group=function reads a .json trace (gunzip it first)", path);
    doc d = { path, t->buf, t->buf + t->len, 0 };
    const char *p = ws(d.buf, d.end);
    if (p == d.end || *p != '{') die("%s: group=function reads a JSON trace written by prof.h", path);
    cursor c;
    span k, v, ps = { NULL, 0 };
    obj_begin(&c, &d, p, 0);
    while (obj_next(&c, &k, &v))
        if (span_eq(k, "\"prof_samples\"")) ps = v;
    if (!ps.n) die("%s: no samples in this trace (it was recorded without PROF_SAMPLE)", path);
    fmap *m = NULL;
    size_t nm = 0, nr = 0;
    frow *rows = NULL;
    span maps = obj_find(&d, ps, "\"mappings\""), samples = obj_find(&d, ps, "\"samples\"");
    if (!maps.n || !samples.n) die("%s: prof_samples has no mappings or samples", path);
    cursor mc, sc;
    arr_begin(&mc, &d, maps.p, 1);
    while (arr_next(&mc, &v)) {
        m = xrealloc(m, (nm + 1) * sizeof *m);
        const char *mp = json_text(obj_find(&d, v, "\"path\"")), *id = json_text(obj_find(&d, v, "\"build_id\""));
        m[nm].path = dup(mp ? mp : "");
        m[nm].build_id = dup(id ? id : "");
        m[nm].start = hex(&d, obj_find(&d, v, "\"start\""));
        m[nm].end = hex(&d, obj_find(&d, v, "\"end\""));
        m[nm].offset = hex(&d, obj_find(&d, v, "\"offset\""));
        m[nm].elf = NULL;
        nm++;
    }
    long all = 0;
    arr_begin(&sc, &d, samples.p, 1);
    while (arr_next(&sc, &v)) {         /* [tid, ts, step, region, [addresses]] */
        cursor e;
        span f[5];
        int n = 0;
        arr_begin(&e, &d, v.p, 2);
        while (n < 5 && arr_next(&e, &f[n])) n++;
        if (n != 5 || f[4].p[0] != '[')
            die("%s: a sample of prof_samples is not [tid, ts, step, region, [addresses]]", path);
        const char *region = span_eq(f[3], "null") ? "(none)" : json_text(f[3]);
        cursor a;
        span ip;
        arr_begin(&a, &d, f[4].p, 3);
        if (!arr_next(&a, &ip)) continue;
        add(&rows, &nr, region ? region : "(none)", name_of(m, nm, hex(&d, ip)));
        all++;
    }
    qsort(rows, nr, sizeof *rows, row_cmp);
    printf("%-32s %-40s %10s %8s\n", "region", "function (self)", "samples", "share");
    for (size_t i = 0, shown = 0; i < nr; i++) {
        long total = 0;
        for (size_t j = 0; j < nr; j++) total += !strcmp(rows[j].region, rows[i].region) ? rows[j].n : 0;
        if (i && strcmp(rows[i].region, rows[i - 1].region)) shown = 0;
        if (limit && shown++ >= limit) continue;
        printf("%-32s %-40s %10ld %7.1f%%\n", rows[i].region, rows[i].function, rows[i].n,
               100.0 * (double)rows[i].n / (double)total);
    }
    printf("%ld samples\n", all);
    for (size_t i = 0; i < nr; i++) free((char *)(uintptr_t)rows[i].function);
    free(rows);
    for (size_t i = 0; i < nm; i++) {
        free(m[i].path);
        free(m[i].build_id);
    }
    free(m);
    elf_free();
    traces_free();
    return 0;
}
