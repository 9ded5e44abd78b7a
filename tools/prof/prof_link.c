/* prof_link.c - the one file of `prof` that reaches into prof.h's
   implementation (tools/impl_private.c, linked in, never started: the tool
   records nothing). The model the
   readers rebuild a trace into and the table are prof.h's public API
   (>>api-model, >>api-cycle); what the merge and diff share with prof.h's
   writers beyond it (the time and name formats of its table, its buffered
   writer, its protobuf encoder) is named here as tool.h's tool_* functions,
   the only use of prof.h's private names in the tool. */
#include "../impl_private.h"

#include "tool.h"

#include <string.h>

/* ---- the table's helpers -------------------------------------------------- */

void tool_fmt_time(char *o, size_t cap, double ns) { prof__fmt_time(o, cap, ns); }

const char *tool_cut(char *buf, const char *s, size_t max) { return prof__cut(buf, s, max); }

/* The table's cells as prof_table_print prints them (prof report shows the
   very text of prof table): each row printed by the table's own line
   function into a scratch file, read back and cut at the columns' widths. A
   number wider than its column pushes the rest right, as on a terminal:
   read up to the space after it. */
int tool_table_cells(const prof_table *t, tool_cells *out) {
    prof__cols c;
    memset(out, 0, sizeof *out);
    if (!t->n) return 1;
    prof__table_cols(t, &c);
    out->ncols = c.n;
    for (int k = 0; k < c.n; k++) snprintf(out->head[k], sizeof out->head[k], "%s", c.head[k]);
    FILE *f = tmpfile();
    if (!f) return 0;
    for (size_t i = 0; i < t->n; i++) prof__table_line(t, &c, &t->rows[i], f);
    rewind(f);
    out->cell = (char(*)[TOOL_CELL])calloc(t->n * (size_t)c.n, TOOL_CELL);
    char line[4096];
    for (size_t i = 0; out->cell && i < t->n && fgets(line, sizeof line, f); i++) {
        size_t pos = 0, len = strlen(line);
        for (int k = 0; k < c.n && pos < len; k++) {
            size_t w = (size_t)c.width[k], e = pos + w;
            if (e > len) e = len;
            while (e < len && line[e] != ' ' && line[e] != '\n') e++;   /* wider than its column */
            size_t b = pos;
            while (b < e && line[b] == ' ') b++;
            size_t n = e - b < TOOL_CELL - 1 ? e - b : TOOL_CELL - 1;
            memcpy(out->cell[i * (size_t)c.n + (size_t)k], line + b, n);
            pos = e + 2;
        }
    }
    int ok = out->cell && !ferror(f);
    fclose(f);
    if (!ok) tool_cells_free(out);
    return ok;
}

void tool_cells_free(tool_cells *c) {
    free(c->cell);
    memset(c, 0, sizeof *c);
}

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
    char us[64];                        /* prof__fmt_us copies whole words: room behind */
    prof__w_put(&o->w, us, (size_t)(prof__fmt_us(us, ns) - us));
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
