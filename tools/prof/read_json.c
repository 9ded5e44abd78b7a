/* read_json.c - JSON traces: a strict validating parser over the text in a
   trace's window (values are spans of the text: nothing is copied, so every
   field the merge does not rewrite is written back exactly as it was read),
   a pass over a trace that moves the window on from event to event (the
   header's members and each event whole in it, one at a time), and its CPU
   regions read into the model for prof table and prof diff. */
#include "tool.h"

#include <setjmp.h>
#include <string.h>

#define MAX_DEPTH 1000      /* JSON nesting: keeps the recursive parser far from the stack limit */

/* ---- the parser --------------------------------------------------------- */

uint64_t doc_pos(const doc *d, const char *at) { return d->off + (uint64_t)(at - d->buf); }

/* Set while an event is parsed in a window the trace goes on past: the
   parser reaching the window's end means "read on and parse it again". */
static _Thread_local jmp_buf *g_more;

static _Noreturn void bad_json(const doc *d, const char *at) {
    if (g_more && at >= d->end) longjmp(*g_more, 1);
    die("%s: not valid JSON at byte %" PRIu64, d->path, doc_pos(d, at));
}

const char *ws(const char *p, const char *end) {
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

/* Whether the bytes at s (left of them) are the start of a UTF-8 sequence
   that goes on past them. */
static int utf8_cut(const unsigned char *s, size_t left) {
    size_t n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 ? 2 : 1;
    if (left >= n) return 0;
    for (size_t i = 1; i < left; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return 1;
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
            if (!n) bad_json(d, utf8_cut((const unsigned char *)p, (size_t)(end - p)) ? end : p);
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

static const char *parse_value(const doc *d, const char *p, int depth);

void cur_begin(cursor *c, const doc *d, const char *p, int depth) {
    if (depth > MAX_DEPTH)
        die("%s: JSON nested deeper than %d levels at byte %" PRIu64, d->path, MAX_DEPTH, doc_pos(d, p));
    c->d = d;
    c->p = p + 1;
    c->depth = depth;
    c->n = 0;
}

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

int obj_next(cursor *c, span *key, span *val) {
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

int arr_next(cursor *c, span *val) {
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

int span_eq(span s, const char *lit) {
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

/* Whether s is the JSON string "<str>" (written without escapes). */
int is_str(span s, const char *str) {
    size_t n = strlen(str);
    return s.n == n + 2 && s.p[0] == '"' && memcmp(s.p + 1, str, n) == 0;
}

int str_starts(span s, const char *prefix) {
    size_t n = strlen(prefix);
    return s.n >= n + 2 && s.p[0] == '"' && memcmp(s.p + 1, prefix, n) == 0;
}

/* The value of member `key` (quotes included, as "\"name\"") of the object
   obj, which has been validated; absent when obj is not an object. */
span obj_find(const doc *d, span obj, const char *key) {
    span none = { NULL, 0 }, k, v;
    cursor c;
    if (!obj.n || obj.p[0] != '{') return none;
    obj_begin(&c, d, obj.p, 1);
    while (obj_next(&c, &k, &v))
        if (span_eq(k, key)) return v;
    return none;
}

/* A number written as a plain integer (no fraction, no exponent). */
int span_int(span s, int64_t *out) {
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
int span_scaled(span s, int shift, int64_t *out) {
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

/* ---- a trace: its header and its events ------------------------------- */

static _Thread_local event g_ev;    /* the event being read: global, so that die() leaves it reachable;
                                      one per thread (prof ranks reads several traces at once) */

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

/* ---- a pass over a trace, its window moved on as it goes ---------------- */

/* Reads more of the trace, keeping everything from *p on: *p's new place;
   0 at the trace's end. */
static int more(trace *t, const char **p) {
    uint64_t at = doc_pos(&t->d, *p);
    size_t got = trace_more(t, (size_t)(*p - t->d.buf));
    *p = t->d.buf + (size_t)(at - t->d.off);
    return got > 0;
}

/* Past white space, reading on as needed. */
static const char *ws_more(trace *t, const char *p) {
    for (;;) {
        p = ws(p, t->d.end);
        if (p < t->d.end || !more(t, &p)) return p;
    }
}

/* Where the value at p ends, by its brackets and strings alone (the parser
   validates it); NULL when the window ends first. */
static const char *value_end(const char *p, const char *end) {
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            for (p++;; p++) {
                const char *q = memchr(p, '"', (size_t)(end - p));
                if (!q) return NULL;
                size_t bs = 0;                      /* backslashes before it: odd escapes it */
                while (q - bs > p && q[-1 - (ptrdiff_t)bs] == '\\') bs++;
                p = q;
                if (!(bs & 1)) break;
            }
            p++;
            if (!depth) return p;
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') {
            if (--depth <= 0) return p + 1;
        } else if (!depth && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
            return p;
        }
        p++;
    }
    return NULL;
}

/* The value at p whole in the window (as far as the trace has it): p's place. */
static const char *need(trace *t, const char *p) {
    while (!value_end(p, t->d.end) && more(t, &p)) {}
    return p;
}

/* The header's members prof reads. */
typedef struct {
    int64_t base, dropped, rank, dump_step;
    int has_base, has_dropped, has_rank, hang, events;
    size_t not_object;      /* traceEvents[not_object - 1] is not an object */
    span rank_text, base_text;
    char text[64];          /* rank_text, base_text: their copies (they are short when valid) */
} header;

static span keep_short(header *h, span v, size_t at) {
    size_t n = v.n < 31 ? v.n : 31;
    memcpy(h->text + at, v.p, n);
    return (span){ h->text + at, n };
}

enum { H_OTHER, H_EVENTS, H_DEVPROPS, H_DIST, H_BASE, H_DROPPED, H_REASON, H_STEP, H_SAMPLES };

static int header_key(span k) {
    return span_eq(k, "\"traceEvents\"")          ? H_EVENTS
         : span_eq(k, "\"deviceProperties\"")     ? H_DEVPROPS
         : span_eq(k, "\"distributedInfo\"")      ? H_DIST
         : span_eq(k, "\"baseTimeNanoseconds\"")  ? H_BASE
         : span_eq(k, "\"prof_dropped_events\"")  ? H_DROPPED
         : span_eq(k, "\"prof_dump_reason\"")     ? H_REASON
         : span_eq(k, "\"prof_dump_step\"")       ? H_STEP
         : span_eq(k, "\"prof_samples\"")         ? H_SAMPLES
                                                   : H_OTHER;
}

static void header_member(trace *t, header *h, int k, span v) {
    if (k == H_DEVPROPS) {
        free((char *)t->devprops.p);
        char *copy = xrealloc(NULL, v.n);
        memcpy(copy, v.p, v.n);
        t->devprops = (span){ copy, v.n };
    } else if (k == H_DIST) {
        span r = obj_find(&t->d, v, "\"rank\"");
        h->has_rank = r.n != 0;
        if (r.n) h->rank_text = keep_short(h, r, 0);
    } else if (k == H_BASE) {
        h->has_base = 1;
        h->base_text = keep_short(h, v, 32);
    } else if (k == H_DROPPED) {
        h->has_dropped = span_int(v, &h->dropped);
    } else if (k == H_REASON) {
        h->hang = is_str(v, "hang");
    } else if (k == H_STEP) {
        if (!span_int(v, &h->dump_step)) h->dump_step = -1;
    }
}

/* The header's members but traceEvents and deviceProperties, kept in
   t->head as one object's text (prof report shows its values): the key as
   it is read (the window may move on past it before its value is whole),
   then the value. */
static void head_put(trace *t, const char *p, size_t n, char last) {
    size_t at = t->nhead;
    if (at + n + 1 > WIN_MAX)
        die("%s: a header (the members besides traceEvents) of more than %zu MiB: too large to read in a bounded "
            "window", t->path, WIN_MAX >> 20);
    t->head = xrealloc(t->head, at + n + 1);
    memcpy(t->head + at, p, n);
    t->head[at + n] = last;
    t->nhead = at + n + 1;
}

static void head_key(trace *t, span k) {
    if (t->nhead) t->head[t->nhead - 1] = ',';     /* was the closing '}' */
    else head_put(t, "", 0, '{');                /* the opening brace */
    head_put(t, k.p, k.n, ':');
}

static void head_value(trace *t, span v) { head_put(t, v.p, v.n, '}'); }

/* The header's values into t, once the whole trace is read and valid. */
static void header_done(trace *t, header *h) {
    if (!h->events) die("%s: not a trace: no traceEvents array", t->path);
    if (h->has_base && !span_scaled(h->base_text, 0, &t->base))
        die("%s: baseTimeNanoseconds %.*s is not a time in nanoseconds", t->path, (int)h->base_text.n,
            h->base_text.p);
    if (h->has_rank) {
        int64_t x;
        span r = h->rank_text;
        if (!span_int(r, &x) || x < 0) die("%s: distributedInfo.rank %.*s is not a rank", t->path, (int)r.n, r.p);
        if (x > MAX_RANK) die("%s: rank %" PRId64 ": prof merge numbers ranks 0 to %d", t->path, x, MAX_RANK);
        t->rank = (int)x;
    }
    t->dropped = h->has_dropped && h->dropped >= 0 ? h->dropped : 0;
    t->hang = h->hang;
    t->dump_step = h->dump_step;
    if (h->not_object) die("%s: not a trace: traceEvents[%zu] is not an object", t->path, h->not_object - 1);
}

/* The event at *p read whole into g_ev, the window moved on as far as it
   needs (*p its new place): parsed where it is, and again after reading on
   when the window ends inside it (no scan ahead for its end: most events
   are whole in the window). Returns the byte after it. */
static const char *event_whole(trace *t, const char **p) {
    jmp_buf again;
    for (;;) {
        if (t->w.eof) return scan_event(&t->d, *p, &g_ev);     /* its end is the trace's */
        if (!setjmp(again)) {
            g_more = &again;
            const char *next = scan_event(&t->d, *p, &g_ev);
            g_more = NULL;
            return next;
        }
        g_more = NULL;
        more(t, p);
    }
}

/* A streamed object's n-th member's key (0-based; *p after the '{' or the
   member before): *p past the separator and the key, its span in *k; 0 at
   the object's end, *p at its '}'. The window may move on past k. */
static int stream_key(trace *t, const char **pp, size_t n, span *k) {
    const doc *d = &t->d;
    const char *p = ws_more(t, *pp);
    *pp = p;
    if (p < d->end && *p == '}') return 0;
    if (n) {
        if (p >= d->end || *p != ',') bad_json(d, p);
        p = ws_more(t, p + 1);
    }
    if (p >= d->end || *p != '"') bad_json(d, p);
    p = need(t, p);
    k->p = p;
    p = parse_string(d, p);
    k->n = (size_t)(p - k->p);
    *pp = p;
    return 1;
}

/* PROF_SAMPLE's samples (prof_samples, an object), streamed: its samples
   may be more than the window holds. Each member but "samples" whole to
   the hook's member(), then each of samples' elements to its sample(); p
   at the '{', returns the byte after its '}'. */
static _Thread_local const json_samples_fn *g_smp;

static const char *walk_samples(trace *t, const char *p) {
    const doc *d = &t->d;
    p++;
    span k;
    for (size_t n = 0; stream_key(t, &p, n, &k); n++) {
        int list = span_eq(k, "\"samples\"");
        p = ws_more(t, p);
        if (p >= d->end || *p != ':') bad_json(d, p);
        p = ws_more(t, p + 1);
        if (list && p < d->end && *p == '[') {
            p++;
            for (size_t i = 0;; i++) {
                p = ws_more(t, p);
                if (p < d->end && *p == ']') break;
                if (i) {
                    if (p >= d->end || *p != ',') bad_json(d, p);
                    p = ws_more(t, p + 1);
                }
                p = need(t, p);
                span v = { p, 0 };
                p = parse_value(d, p, 3);
                v.n = (size_t)(p - v.p);
                if (g_smp && g_smp->sample) g_smp->sample(t, v, g_smp->ctx);
            }
            p++;
            continue;
        }
        p = need(t, p);
        span v = { p, 0 };
        p = parse_value(d, p, 2);
        v.n = (size_t)(p - v.p);
        if (g_smp && g_smp->member) g_smp->member(t, k, v, g_smp->ctx);
    }
    return p + 1;
}

/* The events of traceEvents, p past its '['; returns the byte after ']'. */
static const char *walk_events(trace *t, header *h, const char *p, void (*fn)(trace *, const event *, void *),
                               void *ctx) {
    for (size_t i = 0;; i++) {
        p = ws_more(t, p);
        if (p >= t->d.end) bad_json(&t->d, p);
        if (*p == ']') return p + 1;
        if (i) {
            if (*p != ',') bad_json(&t->d, p);
            p = ws_more(t, p + 1);
        }
        if (p >= t->d.end) bad_json(&t->d, p);
        if (*p != '{') {                    /* said once the whole file is known to be JSON */
            p = need(t, p);
            if (!h->not_object) h->not_object = i + 1;
            p = parse_value(&t->d, p, 1);
            continue;
        }
        const char *next = event_whole(t, &p);
        if (fn) fn(t, &g_ev, ctx);
        p = next;
    }
}

/* The pass; with head, only the members before traceEvents, for the
   rank: 1 when they say it. */
static int walk(trace *t, void (*fn)(trace *, const event *, void *), void *ctx, int head) {
    header h;
    memset(&h, 0, sizeof h);
    h.dump_step = -1;
    t->nhead = 0;
    trace_rewind(t);
    const doc *d = &t->d;
    const char *p = ws_more(t, d->buf);
    if (p < d->end && *p != '{') {
        p = need(t, p);
        p = ws_more(t, parse_value(d, p, 0));
        if (p != d->end) bad_json(d, p);
        die("%s: not a trace: the top level is not an object", t->path);
    }
    if (p >= d->end) bad_json(d, p);
    p++;
    span k;
    for (size_t n = 0; stream_key(t, &p, n, &k); n++) {
        int key = header_key(k);            /* now: the window may move on past k */
        int kept = key != H_EVENTS && key != H_DEVPROPS && key != H_SAMPLES;
        if (kept) head_key(t, k);
        p = ws_more(t, p);
        if (p >= d->end || *p != ':') bad_json(d, p);
        p = ws_more(t, p + 1);
        if (key == H_EVENTS && p < d->end && *p == '[') {
            if (head) {
                trace_close(t);
                if (!h.has_rank) return 0;
                h.events = 1;
                header_done(t, &h);
                return 1;
            }
            if (h.events) die("%s: not a trace: traceEvents twice", t->path);
            h.events = 1;
            p = walk_events(t, &h, p + 1, fn, ctx);
            continue;
        }
        if (key == H_SAMPLES && p < d->end && *p == '{') {
            p = walk_samples(t, p);
            continue;
        }
        p = need(t, p);
        if (key == H_EVENTS) h.events = 0;  /* not an array: the last member of a name counts */
        span v = { p, 0 };
        p = parse_value(d, p, 1);
        v.n = (size_t)(p - v.p);
        if (kept) head_value(t, v);
        header_member(t, &h, key, v);
    }
    p = ws_more(t, p + 1);
    if (p != d->end) bad_json(d, p);
    header_done(t, &h);
    trace_close(t);
    return 1;
}

void json_walk(trace *t, void (*fn)(trace *, const event *, void *), void *ctx) { walk(t, fn, ctx, 0); }

/* Validates the whole file and reads the header. */
void json_load(trace *t) { walk(t, NULL, NULL, 0); }

void json_samples(trace *t, const json_samples_fn *fn) {
    g_smp = fn;
    walk(t, NULL, NULL, 0);
    g_smp = NULL;
}

int trace_rank(trace *t) {
    trace_rewind(t);
    if (t->pf) {
        trace_close(t);
        return 0;
    }
    return walk(t, NULL, NULL, 1);
}

void json_free(void) {
    free(g_ev.m);
    memset(&g_ev, 0, sizeof g_ev);
}

int span_same(span a, span b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

int is_meta(const event *ev) { return is_str(ev->f[F_PH], "M"); }

/* An X event of this category is a GPU's (Kineto's categories; a
   synchronisation, cuda_sync, is drawn on its device). */
int is_gpu_cat(span cat) {
    return is_str(cat, "gpu_user_annotation") || is_str(cat, "kernel") || is_str(cat, "gpu_memcpy") ||
           is_str(cat, "gpu_memset") || is_str(cat, "cuda_sync");
}

/* The absolute time in ns of an event with this ts, when ts is a number
   (metadata events are left out by the callers: their ts means nothing). */
int event_time(const trace *t, span ts, const char *at, int64_t *abs_ns) {
    int64_t ns;
    if (!ts.n || (ts.p[0] != '-' && !is_digit(ts.p[0]))) return 0;
    if (!span_scaled(ts, 3, &ns))
        die("%s: event at byte %" PRIu64 ": ts %.*s is out of range", t->path, doc_pos(&t->d, at), (int)ts.n, ts.p);
    *abs_ns = add_ck(t->base, ns);
    return 1;
}

/* ---- prof table's reading: the model ------------------------------------ */

static unsigned hex4(const char *p) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) v = v << 4 | (unsigned)(p[i] <= '9' ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
    return v;
}

/* A JSON string (validated) as the text it stands for, interned. */
const char *json_text(span s) {
    char *buf = xrealloc(NULL, s.n + 1);
    size_t o = 0;
    for (size_t i = 1; i + 1 < s.n; i++) {
        if (s.p[i] != '\\') { buf[o++] = s.p[i]; continue; }
        char c = s.p[++i];
        if (c != 'u') {
            buf[o++] = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : c;
            continue;
        }
        unsigned cp = hex4(s.p + i + 1);
        i += 4;
        if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < s.n && s.p[i + 1] == '\\' && s.p[i + 2] == 'u') {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(s.p + i + 3) - 0xDC00);
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

/* An integer argument k (quoted) of ev; dflt if it has none. */
static int64_t arg_or(const trace *t, const event *ev, const char *k, int64_t dflt) {
    int64_t v;
    return span_int(obj_find(&t->d, ev->f[F_ARGS], k), &v) ? v : dflt;
}

/* A synchronisation's kind (PROF_GPU_SYNC_*) by Kineto's name of it; 0: unknown. */
int sync_kind(const char *name) {
    static const char *const n[] = { "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync" };
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, n[i])) return i + 1;
    return 0;
}

/* Its GPU records (Kineto's categories) into the model: runtime and driver
   calls on the CPU threads, kernels, copies, fills and synchronisations
   (cuda_sync), GPU regions' GPU sides (on pid = device, tid = stream where
   args say nothing). 0: not one. */
static int model_gpu(trace *t, const event *ev, prof_cycle *c, int64_t tid, int64_t ts, int64_t dur) {
    span cat = ev->f[F_CAT];
    int runtime = is_str(cat, "cuda_runtime") || is_str(cat, "cuda_driver") || is_str(cat, "hip_runtime");
    int sync = is_str(cat, "cuda_sync");
    if (!runtime && !is_gpu_cat(cat)) return 0;
    int64_t corr = arg_or(t, ev, "\"correlation\"", -1), pid;
    if (corr < 0 || corr > UINT32_MAX) return 1;    /* nothing to tie it to its launch */
    if (!span_int(ev->f[F_PID], &pid)) pid = 0;
    const char *name = json_text(ev->f[F_NAME]);
    if (is_str(cat, "gpu_user_annotation")) {
        prof_gpu_event g = { name, (int)arg_or(t, ev, "\"device\"", pid), arg_or(t, ev, "\"stream\"", tid),
                             (uint32_t)corr, ts, dur };
        prof_model_gpu(c, &g);
        return 1;
    }
    prof_gpu_activity a;
    memset(&a, 0, sizeof a);
    a.kind = runtime ? PROF_GPU_RUNTIME : sync ? PROF_GPU_SYNC : is_str(cat, "kernel") ? PROF_GPU_KERNEL
           : is_str(cat, "gpu_memcpy") ? PROF_GPU_MEMCPY : PROF_GPU_MEMSET;
    a.name = name;
    a.driver = is_str(cat, "cuda_driver");
    a.device = runtime ? -1 : (int)arg_or(t, ev, "\"device\"", pid);
    a.stream = runtime ? 0 : arg_or(t, ev, "\"stream\"", tid);
    if (sync) {                         /* Kineto's args; its tid is a row of its own, not a stream */
        a.sync = sync_kind(name);
        a.stream = arg_or(t, ev, "\"stream\"", -1);
        a.event = arg_or(t, ev, "\"wait_on_cuda_event_id\"", -1);
        a.wait_stream = arg_or(t, ev, "\"wait_on_stream\"", -1);
        a.wait_corr = arg_or(t, ev, "\"wait_on_cuda_event_record_corr_id\"", -1);
    }
    a.correlation = (uint32_t)corr;
    a.t0_ns = ts;
    a.t1_ns = ts + dur;
    a.thread = (uint64_t)tid;
    span region = obj_find(&t->d, ev->f[F_ARGS], "\"capture_region\"");
    if (!runtime && region.n && region.p[0] == '"') a.capture_region = json_text(region);
    prof_model_activity(c, &a);
    return 1;
}

/* PROF_ENERGY: a step's "GPU d energy (J)" arguments, and "energy" when it
   is a share of one counter interval, to the model. */
static void step_energy(trace *t, const event *ev, prof_cycle *c) {
    if (!ev->f[F_ARGS].n || ev->f[F_ARGS].p[0] != '{') return;
    cursor cur;
    span k, v;
    int share = obj_find(&t->d, ev->f[F_ARGS], "\"energy\"").n > 0;
    obj_begin(&cur, &t->d, ev->f[F_ARGS].p, 1);
    while (obj_next(&cur, &k, &v)) {
        char key[64], num[64], tail;
        int dev;
        if (k.n < 2 || k.n - 2 >= sizeof key || !v.n || v.n >= sizeof num || v.p[0] == '"') continue;
        memcpy(key, k.p + 1, k.n - 2);
        key[k.n - 2] = 0;
        memcpy(num, v.p, v.n);
        num[v.n] = 0;
        if (sscanf(key, "GPU %d energy (J%c", &dev, &tail) == 2 && tail == ')')
            prof_model_step_energy(c, dev, strtod(num, NULL), share);
    }
}

/* Its CPU regions (X events off the GPUs) are the model's regions, per
   thread, with their arguments (prof.h's own keys left out); a region with
   a correlation is a GPU region's CPU side; a step (ProfilerStep#N) is a
   step; thread_name events name the threads; GPU records go to model_gpu. */
static void model_event(trace *t, const event *ev, void *ctx) {
    prof_cycle *c = ctx;
    int64_t tid, ts, dur;
    if (!span_int(ev->f[F_TID], &tid)) return;
    span name = ev->f[F_NAME];
    if (is_meta(ev)) {
        span nm = obj_find(&t->d, ev->f[F_ARGS], "\"name\"");
        if (is_str(name, "thread_name") && nm.n && nm.p[0] == '"') prof_model_thread(c, (long)tid, json_text(nm));
        return;
    }
    if (is_str(ev->f[F_PH], "C") && (is_str(name, "tokens") || is_str(name, "samples") ||
                                     (name.n > 5 && !memcmp(name.p, "\"tid ", 5) && name.n < 96))) {
        int64_t at;                             /* PROF_COUNTER's: the table's J/token, J/sample; */
        char key[96];                           /* PROF_COUNTERS's: its CPU counters per thread */
        memcpy(key, name.p, name.n);
        key[name.n] = 0;
        span v = obj_find(&t->d, ev->f[F_ARGS], key);
        char num[64];
        if (v.n && v.n < sizeof num && event_time(t, ev->f[F_TS], ev->at, &at) && at >= 0) {
            memcpy(num, v.p, v.n);
            num[v.n] = 0;
            prof_model_count(c, json_text(name), at, strtod(num, NULL));
        }
        return;
    }
    if (!is_str(ev->f[F_PH], "X") || !name.n || name.p[0] != '"') return;
    if (!event_time(t, ev->f[F_TS], ev->at, &ts) || !span_scaled(ev->f[F_DUR], 3, &dur) || dur < 0 || ts < 0) return;
    if (model_gpu(t, ev, c, tid, ts, dur)) return;
    int th = prof_model_thread(c, (long)tid, NULL);
    const char *text = json_text(name);
    if (!strncmp(text, "ProfilerStep#", 13)) {  /* prof.h's JSON ends a step 1 ns early */
        prof_model_step(c, th, (int64_t)strtoul(text + 13, NULL, 10), ts, ts + dur + 1);
        step_energy(t, ev, c);
        return;
    }
    int64_t corr = arg_or(t, ev, "\"correlation\"", 0);
    if (corr > 0 && corr <= UINT32_MAX) prof_model_gpu_region(c, th, text, (uint32_t)corr, ts, ts + dur);
    else prof_model_region(c, th, text, ts, ts + dur);
    if (!ev->f[F_ARGS].n || ev->f[F_ARGS].p[0] != '{') return;
    cursor cur;
    span k, v;
    obj_begin(&cur, &t->d, ev->f[F_ARGS].p, 1);
    while (obj_next(&cur, &k, &v)) {            /* prof.h's own keys are not arguments */
        int64_t x;
        if (span_eq(k, "\"correlation\"") || span_eq(k, "\"os_tid\"") || span_eq(k, "\"clipped\"")) continue;
        if (span_int(v, &x)) prof_model_arg_int(c, json_text(k), x);
        else if (v.p[0] == '"') prof_model_arg_str(c, json_text(k), json_text(v));
    }
}

/* One pass: each event to the model, then to also (prof report's GPU and
   memory events), when given. */
typedef struct {
    prof_cycle *c;
    void (*also)(trace *, const event *, void *);
    void *ctx;
} model_pass;

static void model_and(trace *t, const event *ev, void *ctx) {
    const model_pass *m = ctx;
    model_event(t, ev, m->c);
    if (m->also) m->also(t, ev, m->ctx);
}

void json_to_model(trace *t, prof_cycle *c, void (*also)(trace *, const event *, void *), void *ctx) {
    model_pass m = { c, also, ctx };
    for_each_event(t, model_and, &m);
}
