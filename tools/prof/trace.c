/* trace.c - the traces of a run (g_tr): each file read whole into memory
   (pipes too), a gzipped one inflated, its format told by its first byte and
   handed to that format's reader; and everything the readers hold, freed. */
#include "tool.h"

#include <errno.h>
#include <string.h>

trace *g_tr;
size_t g_ntr;

trace *trace_add(const char *path, int arg) {
    g_tr = xrealloc(g_tr, (g_ntr + 1) * sizeof *g_tr);
    trace *t = &g_tr[g_ntr++];
    memset(t, 0, sizeof *t);
    t->path = path;
    t->arg = arg;
    t->rank = arg;                      /* unless its distributedInfo says */
    return t;
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
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        die("%s: cannot read: %s", t->path, strerror(e));
    }
    fclose(f);
}

void trace_load(trace *t) {
    if (t->len >= 2 && (uint8_t)t->buf[0] == 0x1F && (uint8_t)t->buf[1] == 0x8B) gunzip_trace(t);
    if (t->len && (uint8_t)t->buf[0] == 0x0A) {     /* Trace.packet: a Perfetto trace */
        t->pf = 1;
        pf_scan(t);                     /* now: the rank is in the attributes */
        return;
    }
    json_load(t);
}

trace *trace_open(const char *path, int arg) {
    trace *t = trace_add(path, arg);
    trace_read(t);
    trace_load(t);
    return t;
}

void traces_free(void) {
    for (size_t i = 0; i < g_ntr; i++) {
        free(g_tr[i].buf);
        free(g_tr[i].syncs);
        free(g_tr[i].procs);
        free(g_tr[i].diff);
    }
    free(g_tr);
    g_tr = NULL;
    g_ntr = 0;
    json_free();
    pf_free();
    gunzip_free();
}
