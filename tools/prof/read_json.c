/* read_json.c - JSON traces: a strict validating parser over a file held in
   memory (values are spans of the file's text: nothing is copied, so every
   field the merge does not rewrite is written back exactly as it was read),
   a trace's header, its events one by one, and its CPU regions read into
   the model for prof table and prof diff. */
#include "tool.h"

#include <string.h>

#define MAX_DEPTH 1000      /* JSON nesting: keeps the recursive parser far from the stack limit */

/* ---- the parser --------------------------------------------------------- */

static _Noreturn void bad_json(const doc *d, const char *at) {
    die("%s: not valid JSON at byte %zu", d->path, (size_t)(at - d->buf));
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

static const char *parse_value(const doc *d, const char *p, int depth);

void cur_begin(cursor *c, const doc *d, const char *p, int depth) {
    if (depth > MAX_DEPTH)
        die("%s: JSON nested deeper than %d levels at byte %zu", d->path, MAX_DEPTH, (size_t)(p - d->buf));
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

/* Validates the whole file and reads the header. */
void json_load(trace *t) {
    doc *d = &t->d;
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
        if (x > MAX_RANK) die("%s: rank %" PRId64 ": prof merge numbers ranks 0 to %d", t->path, x, MAX_RANK);
        t->rank = (int)x;
    }
    if (!span_int(dropped, &t->dropped) || t->dropped < 0) t->dropped = 0;
}

static event g_ev;      /* the event being read: global, so that die() leaves it reachable */

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
void for_each_event(trace *t, void (*fn)(trace *, const event *, void *), void *ctx) {
    const doc *d = &t->d;
    const char *p = ws(t->events.p + 1, d->end);
    if (*p == ']') return;
    for (size_t i = 0;; i++) {
        if (*p != '{') die("%s: not a trace: traceEvents[%zu] is not an object", t->path, i);
        p = scan_event(d, p, &g_ev);
        fn(t, &g_ev, ctx);
        p = ws(p, d->end);
        if (*p == ']') return;
        p = ws(p + 1, d->end);      /* past the comma */
    }
}

void json_free(void) {
    free(g_ev.m);
    memset(&g_ev, 0, sizeof g_ev);
}

int span_same(span a, span b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

int is_meta(const event *ev) { return is_str(ev->f[F_PH], "M"); }

/* An X event of this category is a GPU's (Kineto's categories). */
int is_gpu_cat(span cat) {
    return is_str(cat, "gpu_user_annotation") || is_str(cat, "kernel") || is_str(cat, "gpu_memcpy") ||
           is_str(cat, "gpu_memset");
}

/* The absolute time in ns of an event with this ts, when ts is a number
   (metadata events are left out by the callers: their ts means nothing). */
int event_time(const trace *t, span ts, const char *at, int64_t *abs_ns) {
    int64_t ns;
    if (!ts.n || (ts.p[0] != '-' && !is_digit(ts.p[0]))) return 0;
    if (!span_scaled(ts, 3, &ns))
        die("%s: event at byte %zu: ts %.*s is out of range", t->path, (size_t)(at - t->d.buf), (int)ts.n, ts.p);
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

/* Its CPU regions (X events off the GPUs) are the model's regions, per
   thread, with their arguments (prof.h's own keys left out); a step
   (ProfilerStep#N) is a step; thread_name events name the threads. */
static void model_event(trace *t, const event *ev, void *ctx) {
    prof_cycle *c = ctx;
    int64_t tid, ts, dur;
    if (!span_int(ev->f[F_TID], &tid)) return;
    span name = ev->f[F_NAME], cat = ev->f[F_CAT];
    if (is_meta(ev)) {
        span nm = obj_find(&t->d, ev->f[F_ARGS], "\"name\"");
        if (is_str(name, "thread_name") && nm.n && nm.p[0] == '"') prof_model_thread(c, (long)tid, json_text(nm));
        return;
    }
    if (!is_str(ev->f[F_PH], "X") || !name.n || name.p[0] != '"' || is_gpu_cat(cat)) return;
    if (!event_time(t, ev->f[F_TS], ev->at, &ts) || !span_scaled(ev->f[F_DUR], 3, &dur) || dur < 0 || ts < 0) return;
    int th = prof_model_thread(c, (long)tid, NULL);
    const char *text = json_text(name);
    if (!strncmp(text, "ProfilerStep#", 13)) {  /* prof.h's JSON ends a step 1 ns early */
        prof_model_step(c, th, (int64_t)strtoul(text + 13, NULL, 10), ts, ts + dur + 1);
        return;
    }
    prof_model_region(c, th, text, ts, ts + dur);
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
