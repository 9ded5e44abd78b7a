/* trace.c - the traces of a run (g_tr): each read front to back through a
   bounded window (a gzipped one inflated as it goes), as many passes as a
   command needs; its format told by its first byte and handed to that
   format's reader; and everything the readers hold, freed. A file that
   cannot be read twice (a pipe: <(zcat ...)) is read whole into memory
   first, and read from there. */
#include "tool.h"

#include <errno.h>
#include <string.h>

trace *g_tr;
size_t g_ntr;

void trace_init(trace *t, const char *path, int arg) {
    memset(t, 0, sizeof *t);
    t->path = path;
    t->arg = arg;
    t->rank = arg;                      /* unless its distributedInfo says */
    t->dump_step = -1;
}

trace *trace_add(const char *path, int arg) {
    g_tr = xrealloc(g_tr, (g_ntr + 1) * sizeof *g_tr);
    trace *t = &g_tr[g_ntr++];
    trace_init(t, path, arg);
    return t;
}

static _Noreturn void cannot_read(const trace *t, FILE *f) {
    int e = errno;
    if (f) fclose(f);
    die("%s: cannot read: %s", t->path, strerror(e));
}

static _Noreturn void window_failed(trace *t) {     /* its file closed once, here */
    FILE *f = t->w.f;
    t->w.f = NULL;
    cannot_read(t, f);
}

void trace_read(trace *t) {
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
    if (ferror(f)) cannot_read(t, f);
    fclose(f);
}

/* ---- the window ---------------------------------------------------------- */

/* More bytes of the trace (inflated when gzipped) at dst; 0 at its end. */
static size_t source_read(trace *t, char *dst, size_t cap) {
    window *w = &t->w;
    if (w->z) return gz_read(w->z, (uint8_t *)dst, cap);
    size_t n = fread(dst, 1, cap, w->f);
    if (!n && ferror(w->f)) window_failed(t);
    return n;
}

/* Reads up to want bytes more into the window. */
static size_t fill(trace *t, size_t want) {
    window *w = &t->w;
    size_t got = 0;
    while (got < want) {                    /* gz_read and a pipe may give less */
        size_t k = source_read(t, w->buf + w->n + got, want - got);
        if (!k) { w->eof = 1; break; }
        got += k;
    }
    w->n += got;
    t->d.buf = w->buf;
    t->d.end = w->buf + w->n;
    t->d.off = w->off;
    return got;
}

size_t trace_more(trace *t, size_t keep) {
    window *w = &t->w;
    if (w->eof) return 0;
    if (keep > w->n) keep = w->n;
    memmove(w->buf, w->buf + keep, w->n - keep);
    w->n -= keep;
    w->off += keep;
    if (w->cap - w->n < WIN_CHUNK / 2) {   /* what is kept fills it: a long value */
        if (w->cap >= WIN_MAX)
            die("%s: a value of more than %zu MiB at byte %" PRIu64 ": too large to read in a bounded window",
                t->path, WIN_MAX >> 20, w->off);
        w->cap *= 2;
        w->buf = xrealloc(w->buf, w->cap);
    }
    return fill(t, w->cap - w->n < WIN_CHUNK ? w->cap - w->n : WIN_CHUNK);
}

void trace_close(trace *t) {
    window *w = &t->w;
    if (w->z) gz_close(w->z);
    if (w->f) fclose(w->f);
    if (w->owned) free(w->buf);
    memset(w, 0, sizeof *w);
}

void trace_rewind(trace *t) {
    trace_close(t);
    window *w = &t->w;
    t->d.path = t->path;
    const uint8_t *mem = (const uint8_t *)t->buf;
    if (!mem) {
        FILE *f = fopen(t->path, "rb");
        if (!f) die("%s: cannot open: %s", t->path, strerror(errno));
        if (fseek(f, 0, SEEK_SET) != 0) {   /* a pipe: read it whole, once */
            fclose(f);
            trace_read(t);
            trace_rewind(t);
            return;
        }
        setvbuf(f, NULL, _IONBF, 0);        /* the window is the buffer */
        w->f = f;
    }
    uint8_t magic[2];
    size_t nm = mem ? (t->len < 2 ? t->len : 2) : fread(magic, 1, 2, w->f);
    if (mem && nm) memcpy(magic, mem, nm);
    if (!mem && ferror(w->f)) window_failed(t);
    int gzipped = nm == 2 && magic[0] == 0x1F && magic[1] == 0x8B;
    if (!mem && fseek(w->f, 0, SEEK_SET) != 0) window_failed(t);
    if (mem && !gzipped) {                  /* the window is the whole of it */
        w->buf = t->buf;
        w->n = t->len;
        w->eof = 1;
    } else {
        if (gzipped) w->z = gz_open(t->path, w->f, mem, t->len);
        w->buf = xrealloc(NULL, w->cap = 2 * WIN_CHUNK);
        w->owned = 1;
        fill(t, 64 << 10);                  /* the header (and the format) first: --ranks may need no more */
    }
    t->d.buf = w->buf;
    t->d.end = w->buf + w->n;
    t->d.off = 0;
    t->next = 0;
    t->pf = w->n && (uint8_t)w->buf[0] == 0x0A;    /* Trace.packet: a Perfetto trace */
}

/* ---- a trace ----------------------------------------------------------- */

int rank_listed(const char *list, int rank) {
    const char *p = list;
    for (;;) {
        char *e;
        if (*p < '0' || *p > '9') return 0;
        long a = strtol(p, &e, 10), b = a;
        if (*e == '-') {
            p = e + 1;
            if (*p < '0' || *p > '9') return 0;
            b = strtol(p, &e, 10);
        }
        if (a > b) return 0;
        if (rank >= 0 && rank >= a && rank <= b) return 1;
        if (!*e) return rank < 0;       /* rank -1: the list is well formed */
        if (*e != ',') return 0;
        p = e + 1;
    }
}

void trace_load(trace *t) {
    trace_rewind(t);
    if (t->pf) pf_scan(t);              /* now: the rank is in the attributes */
    else json_load(t);
    trace_close(t);
}

trace *trace_open(const char *path, int arg) {
    trace *t = trace_add(path, arg);
    trace_load(t);
    return t;
}

void trace_free(trace *t) {
    trace_close(t);
    free(t->buf);
    free(t->syncs);
    for (size_t i = 0; i < t->nproc; i++) free((char *)t->procs[i].raw.p);
    free(t->procs);
    free(t->diff);
    free((char *)t->devprops.p);
    free(t->head);
    free(t->attrs);
    memset(t, 0, sizeof *t);
}

void traces_free(void) {
    for (size_t i = 0; i < g_ntr; i++) trace_free(&g_tr[i]);
    free(g_tr);
    g_tr = NULL;
    g_ntr = 0;
    json_free();
    pf_free();
}
