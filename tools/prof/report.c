/* report.c - prof report: one self-contained HTML page of a run, offline
   (no network, no CDN: the page's style and script are inline, and its data
   is one JSON object in a <script type="application/json"> element).

   What the page shows comes from the same model prof table reads (its rows,
   self and total times, percentiles: the very cells prof table prints) and
   from the trace's GPU and memory events, which the model's own pass over
   the trace hands here (JSON events, Perfetto slices):
     steps      each ProfilerStep's time split by its top-level regions and,
                with GPU events, by the GPU's kernels, copies and idle time
     operators  prof table's rows (by name, and by name and thread)
     flame      the regions merged by call path, per thread (an icicle)
     gpu        kernels by time, kernel time per CPU region, launch delays,
                copies by direction; with kernel capture why each stream
                sat idle, per step, NCCL's kernels against compute, each
                step's critical path (prof table's footer:
                prof_cycle_gpu_idle, prof_cycle_gpu_path)
     memory     allocated bytes over time per device, the peak and the
                region at it, what was allocated and not freed
     ranks      given several traces, each rank's step times
   Sizes stay bounded by what is distinct (names, call paths, steps), never
   by the events: a curve of memory is cut to MEM_POINTS points. The page's
   files (report.html, report.css, report.js) are built into the program:
   see report_page.c. prof report --diff BASE NEW makes a page of prof diff. */
#include "tool.h"

#include <errno.h>
#include <string.h>

#define TOP_PARTS   8       /* a step's parts: its top-level regions this many, then "other regions" */
#define MEM_POINTS  2000    /* a device's memory curve, at most */
#define TOP_KERNELS 50
#define TOP_LEAKS   20

/* ---- JSON into the page ------------------------------------------------- */

static tool_out *g_o;
static int g_beside;                    /* the page is written beside the traces: link them by name */

static void put(const char *s) { tool_out_put(g_o, s, strlen(s)); }
static void put_i(int64_t v) { tool_out_i64(g_o, v); }
static void put_s(const char *s) { tool_out_json_str(g_o, s ? s : ""); }
static void put_d(double v) {
    char b[32];
    snprintf(b, sizeof b, "%.6g", v == v ? v : 0.0);
    put(b);
}
static void put_ints(const int64_t *v, size_t n) {     /* ,v0,v1,... */
    for (size_t i = 0; i < n; i++) {
        put(",");
        put_i(v[i]);
    }
}
static void key(const char *k, int first) {     /* ,"k": */
    if (!first) put(",");
    put_s(k);
    put(":");
}

/* qsort, which takes no null array, even of none */
static void sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    if (n) qsort(v, n, size, cmp);
}

/* ---- a trace's regions, nested ------------------------------------------ */

typedef struct {
    const char *name;
    long tid;
    int64_t t0, t1;
    int64_t step;                       /* a step's number; -1: a region */
    int parent;                         /* the enclosing region on its thread, -1: none */
    int frame;                          /* its frame in the flame graph */
    size_t ev;                          /* its event in the cycle */
} reg;

typedef struct {
    const char *name;                   /* NULL: a thread's root */
    int parent;
    long tid;
    int64_t total, calls;
    int64_t samples;                    /* PROF_SAMPLE's samples on this path (in it and under it) */
    int native;                         /* a function of the samples' stacks, not a region */
} frame;

typedef struct {
    reg *r;
    size_t n;
    frame *f;
    size_t nf, capf;
    int *slot;                          /* frames by (parent, name): open addressing */
    size_t nslot;
} nest;

static int reg_cmp(const void *pa, const void *pb) {
    const reg *a = pa, *b = pb;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->t0 != b->t0) return a->t0 < b->t0 ? -1 : 1;
    if (a->t1 != b->t1) return a->t1 > b->t1 ? -1 : 1;     /* the outer first */
    return 0;
}

static int frame_of(nest *s, int parent, const char *name, long tid, int native) {
    if (2 * (s->nf + 1) > s->nslot) {
        size_t n = s->nslot ? 2 * s->nslot : 1024;
        free(s->slot);
        s->slot = xrealloc(NULL, n * sizeof *s->slot);
        memset(s->slot, 0xff, n * sizeof *s->slot);
        s->nslot = n;
        for (size_t i = 0; i < s->nf; i++) {    /* rehash */
            uint64_t h = ((uint64_t)(uintptr_t)s->f[i].name * 0x9E3779B97F4A7C15u) ^ (uint64_t)(s->f[i].parent + 1);
            size_t k = (size_t)(h * 0x9E3779B97F4A7C15u >> 20) & (n - 1);
            while (s->slot[k] >= 0) k = (k + 1) & (n - 1);
            s->slot[k] = (int)i;
        }
    }
    uint64_t h = ((uint64_t)(uintptr_t)name * 0x9E3779B97F4A7C15u) ^ (uint64_t)(parent + 1);
    size_t k = (size_t)(h * 0x9E3779B97F4A7C15u >> 20) & (s->nslot - 1);
    for (; s->slot[k] >= 0; k = (k + 1) & (s->nslot - 1)) {
        const frame *f = &s->f[s->slot[k]];
        if (f->parent == parent && f->name == name && f->tid == tid && f->native == native) return s->slot[k];
    }
    if (s->nf == s->capf) {
        s->capf = s->capf ? 2 * s->capf : 256;
        s->f = xrealloc(s->f, s->capf * sizeof *s->f);
    }
    s->f[s->nf] = (frame){ name, parent, tid, 0, 0, 0, native };
    s->slot[k] = (int)s->nf;
    return (int)s->nf++;
}

/* The cycle's regions and steps, each with the region that holds it on its
   thread, and the flame graph's frames: one per call path of each thread,
   a step's path under "ProfilerStep*" (the table's row for steps). */
static void nest_build(nest *s, const prof_cycle *cy) {
    memset(s, 0, sizeof *s);
    size_t n = prof_cycle_event_count(cy), cap = 0;
    for (size_t i = 0; i < n; i++) {
        prof_event e;
        if (!prof_cycle_event(cy, i, &e) || (e.kind != PROF_EVENT_REGION && e.kind != PROF_EVENT_STEP)) continue;
        if (s->n == cap) {
            cap = cap ? 2 * cap : 1024;
            s->r = xrealloc(s->r, cap * sizeof *s->r);
        }
        int step = e.kind == PROF_EVENT_STEP;
        s->r[s->n++] = (reg){ step ? "ProfilerStep*" : e.name, e.tid, e.ts_ns, e.ts_ns + e.dur_ns,
                              step ? (int64_t)e.value : -1, -1, -1, i };
    }
    sort(s->r, s->n, sizeof *s->r, reg_cmp);
    int *stack = xrealloc(NULL, (s->n + 1) * sizeof *stack);
    size_t depth = 0;
    int root = -1;
    for (size_t i = 0; i < s->n; i++) {
        reg *r = &s->r[i];
        if (i == 0 || r->tid != s->r[i - 1].tid) {
            depth = 0;
            root = frame_of(s, -1, NULL, r->tid, 0);
        }
        while (depth && s->r[stack[depth - 1]].t1 < r->t1) depth--;    /* ended, or overlaps partly */
        r->parent = depth ? stack[depth - 1] : -1;
        r->frame = frame_of(s, depth ? s->r[r->parent].frame : root, r->name, r->tid, 0);
        s->f[r->frame].total += r->t1 - r->t0;
        s->f[r->frame].calls++;
        s->f[root].total += depth ? 0 : r->t1 - r->t0;
        stack[depth++] = (int)i;
    }
    free(stack);
}

static void nest_free(nest *s) {
    free(s->r);
    free(s->f);
    free(s->slot);
    memset(s, 0, sizeof *s);
}

/* The innermost region open at time t on thread tid (regions sorted by
   thread, then start); -1: none. */
static int region_at(const nest *s, long tid, int64_t t) {
    size_t lo = 0, hi = s->n;
    while (lo < hi) {                   /* the first past (tid, t) */
        size_t m = (lo + hi) / 2;
        const reg *r = &s->r[m];
        if (r->tid < tid || (r->tid == tid && r->t0 <= t)) lo = m + 1;
        else hi = m;
    }
    if (!lo || s->r[lo - 1].tid != tid) return -1;
    for (int i = (int)lo - 1; i >= 0; i = s->r[i].parent)
        if (s->r[i].t1 >= t) return i;
    return -1;
}

/* PROF_SAMPLE's samples (samples.c) into the flame graph: each sample's
   frames, outermost first, under the frames of the region open on its
   thread at its time (its thread's root when none), worth the sampling
   period each; the sample counted on every frame of its path. */
typedef struct { nest *s; int64_t base; } nest_smp;

static void nest_sample(const tool_sample *sm, void *ctx) {
    nest_smp *x = ctx;
    nest *s = x->s;
    int r = region_at(s, (long)sm->tid, x->base + sm->ts);
    const char *want = !sm->region ? NULL : strncmp(sm->region, "ProfilerStep#", 13) ? sm->region : "ProfilerStep*";
    for (int a = r; want && a >= 0; a = s->r[a].parent)     /* the sample's own region, where they differ */
        if (!strcmp(s->r[a].name, want)) {                   /* at its edge */
            r = a;
            break;
        }
    int f = r >= 0 ? s->r[r].frame : frame_of(s, -1, NULL, (long)sm->tid, 0);
    for (int a = f; a >= 0; a = s->f[a].parent) {
        s->f[a].samples++;
        if (s->f[a].parent < 0 && r < 0) s->f[a].total += sm->period_ns;     /* a root's time: its regions' and these */
    }
    for (size_t k = sm->n; k-- > 0;) {
        f = frame_of(s, f, sm->frame[k], (long)sm->tid, 1);
        s->f[f].total += sm->period_ns;
        s->f[f].samples++;
    }
}

static void nest_samples(nest *s, trace *t) {
    nest_smp x = { s, t->base };        /* the model's times are the trace's base plus its ts */
    samples_each(t, nest_sample, &x);
}

static const char *region_name(const nest *s, long tid, int64_t t) {
    if (tid < 0) return "(not known: no thread in the trace)";     /* a .pftrace's memory events */
    int i = region_at(s, tid, t);
    return i < 0 ? "(no region)" : s->r[i].name;
}

/* ---- GPU and memory events ---------------------------------------------- */

enum { G_KERNEL, G_COPY, G_FILL, G_REGION };

typedef struct { const char *name; int kind; int64_t t0, t1, bytes; int64_t corr; } gpu_ev;
typedef struct { long tid; int64_t t0, t1, corr; } rt_call;
typedef struct { int dev; long tid; int64_t t, addr, bytes, total; } mem_ev;

typedef struct {
    gpu_ev *g;
    size_t ng, capg;
    rt_call *rt;
    size_t nrt, caprt;
    mem_ev *m;
    size_t nm, capm;
} extra;

#define GROW(p, n, cap) ((n) == (cap) ? (void)((p) = xrealloc((p), ((cap) = (cap) ? 2 * (cap) : 256) * sizeof *(p))) : (void)0)

static void add_mem(extra *x, mem_ev m) {
    GROW(x->m, x->nm, x->capm);
    x->m[x->nm++] = m;
}
static void add_rt(extra *x, rt_call c) {
    GROW(x->rt, x->nrt, x->caprt);
    x->rt[x->nrt++] = c;
}
static void add_gpu(extra *x, gpu_ev g) {
    GROW(x->g, x->ng, x->capg);
    x->g[x->ng++] = g;
}

/* A JSON event's argument k (quoted) as an integer; -1: none. */
static int64_t arg_int(const trace *t, const event *ev, const char *k) {
    int64_t v;
    span s = obj_find(&t->d, ev->f[F_ARGS], k);
    return s.n && span_int(s, &v) ? v : -1;
}

/* A JSON trace's [memory] instants, runtime calls, and GPU events
   (Kineto's categories). */
static void extra_event(trace *t, const event *ev, void *ctx) {
    extra *x = ctx;
    span cat = ev->f[F_CAT], ph = ev->f[F_PH];
    int64_t ts, dur = 0, tid;
    if (is_meta(ev) || !event_time(t, ev->f[F_TS], ev->at, &ts)) return;
    if (!span_int(ev->f[F_TID], &tid)) tid = 0;
    if (is_str(ph, "i") && is_str(ev->f[F_NAME], "[memory]")) {
        int64_t bytes;
        if (!span_int(obj_find(&t->d, ev->f[F_ARGS], "\"Bytes\""), &bytes)) bytes = 0;
        add_mem(x, (mem_ev){ arg_int(t, ev, "\"Device Type\"") == 0 ? -1 : (int)arg_int(t, ev, "\"Device Id\""),
                             (long)tid, ts, arg_int(t, ev, "\"Addr\""), bytes, arg_int(t, ev, "\"Total Allocated\"") });
        return;
    }
    if (!is_str(ph, "X") || !span_scaled(ev->f[F_DUR], 3, &dur) || dur < 0) return;
    if (is_str(cat, "cuda_runtime") || is_str(cat, "cuda_driver") || is_str(cat, "hip_runtime")) {
        add_rt(x, (rt_call){ (long)tid, ts, ts + dur, arg_int(t, ev, "\"correlation\"") });
        return;
    }
    if (!is_gpu_cat(cat) || is_str(cat, "cuda_sync") || !ev->f[F_NAME].n || ev->f[F_NAME].p[0] != '"') return;
    int kind = is_str(cat, "kernel") ? G_KERNEL : is_str(cat, "gpu_memcpy") ? G_COPY
             : is_str(cat, "gpu_memset") ? G_FILL : G_REGION;
    add_gpu(x, (gpu_ev){ json_text(ev->f[F_NAME]), kind, ts, ts + dur, arg_int(t, ev, "\"bytes\""),
                         arg_int(t, ev, "\"correlation\"") });
}

/* A Perfetto slice's argument k as an integer; -1: none. */
static int64_t pf_arg_int(const pf_slice *sl, const char *k) {
    for (size_t i = 0; i < sl->nargs; i++)
        if (!sl->args[i].is_str && !strcmp(sl->args[i].key, k)) return sl->args[i].v;
    return -1;
}
static int pf_has(const pf_slice *sl, const char *k) {
    for (size_t i = 0; i < sl->nargs; i++)
        if (!strcmp(sl->args[i].key, k)) return 1;
    return 0;
}

/* The same of a Perfetto trace, as prof.h writes them there: "[memory]"
   instants on a device's memory track (no thread: their region is not
   known), runtime calls (a "cbid") on a thread's track, and off the
   threads' tracks kernels (a "grid"), fills ("Memset ..."), copies (their
   "bytes") and GPU regions (a "correlation"; a synchronisation, with its
   "cuda_sync_kind", is none of them). */
static void extra_slice(trace *t, const pf_slice *sl, void *ctx) {
    extra *x = ctx;
    (void)t;
    if (sl->instant) {
        if (!strcmp(sl->name, "[memory]"))
            add_mem(x, (mem_ev){ pf_arg_int(sl, "Device Type") == 0 ? -1 : (int)pf_arg_int(sl, "Device Id"), -1, sl->t0,
                                 pf_arg_int(sl, "Addr"), pf_arg_int(sl, "Bytes"), pf_arg_int(sl, "Total Allocated") });
        return;
    }
    if (sl->has_tid) {
        if (pf_has(sl, "cbid")) add_rt(x, (rt_call){ (long)sl->tid, sl->t0, sl->t1, pf_arg_int(sl, "correlation") });
        return;
    }
    int kind = pf_has(sl, "cuda_sync_kind") ? -1 : pf_has(sl, "grid") ? G_KERNEL    /* a sync is no GPU work */
             : !strncmp(sl->name, "Memset", 6) ? G_FILL : pf_has(sl, "bytes") ? G_COPY
             : pf_has(sl, "correlation") ? G_REGION : -1;
    if (kind >= 0) add_gpu(x, (gpu_ev){ sl->name, kind, sl->t0, sl->t1, pf_arg_int(sl, "bytes"), pf_arg_int(sl, "correlation") });
}

static void extra_free(extra *x) {
    free(x->g);
    free(x->rt);
    free(x->m);
    memset(x, 0, sizeof *x);
}

/* ---- aggregation by name ------------------------------------------------ */

typedef struct { const char *name; int64_t n, total, max, bytes, a, b; } agg;   /* a, b: sums of two more figures */

static agg *agg_add(agg **v, size_t *n, size_t *cap, const char *name) {
    for (size_t i = *n; i-- > 0;)       /* few distinct names: kernels, regions, directions */
        if ((*v)[i].name == name || !strcmp((*v)[i].name, name)) return &(*v)[i];
    GROW(*v, *n, *cap);
    (*v)[*n] = (agg){ name, 0, 0, 0, 0, 0, 0 };
    return &(*v)[(*n)++];
}

static int agg_cmp(const void *pa, const void *pb) {
    const agg *a = pa, *b = pb;
    if (a->total != b->total) return a->total > b->total ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void put_aggs(agg *v, size_t n, size_t max) {
    sort(v, n, sizeof *v, agg_cmp);
    put("[");
    for (size_t i = 0; i < n && i < max; i++) {
        put(i ? ",[" : "[");
        put_s(v[i].name);
        put_ints((const int64_t[]){ v[i].n, v[i].total, v[i].max, v[i].bytes, v[i].a, v[i].b }, 6);
        put("]");
    }
    put("]");
}

/* ---- the page's sections ------------------------------------------------ */

static const char *short_path(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The header's keys the page shows, as the JSON names them (a Perfetto
   trace's attributes have the same names) and as the page does; texts
   first. */
static const char *const header_keys[][2] = {
    { "prof_dump_reason", "reason" }, { "world_size", "world" }, { "prof_dump_step", "dump_step" },
    { "prof_dump_first_step", "dump_first" }, { "prof_clipped_regions", "clipped" },
    { "prof_gpu_dropped_activities", "gpu_dropped" },
};
#define HEADER_TEXTS 1                  /* the first is a text, the rest numbers */
#define HEADER_WORLD 1                  /* JSON: in distributedInfo */
#define HEADER_KEYS (sizeof header_keys / sizeof *header_keys)

/* A Perfetto trace's attributes (TracePacket.trace_attributes, 126, as
   pf_scan keeps them in t->attrs, in order): the header's keys among them
   (a later packet's value wins, as in Perfetto). */
static void pf_header(const trace *t, const char *text[HEADER_KEYS], int64_t num[HEADER_KEYS], int has[HEADER_KEYS]) {
    pbin in = { t->attrs, t->nattrs ? t->attrs + t->nattrs : t->attrs }, attr;
    pbfield g, h;
    while (pb_next(&in, &g)) {
        if (g.id != 1 || g.wt != 2) continue;
        size_t k = HEADER_KEYS;
        attr = pb_sub(&g);
        while (pb_next(&attr, &h)) {
            if (h.id == 1)
                for (k = 0; k < HEADER_KEYS && !pb_is(&h, header_keys[k][0]); k++) {}
            else if (k < HEADER_KEYS && h.id == 2 && h.wt == 0 && k >= HEADER_TEXTS)
                num[k] = (int64_t)h.v, has[k] = 1;
            else if (k < HEADER_KEYS && h.id == 3 && h.wt == 2 && k < HEADER_TEXTS)
                text[k] = prof_intern((const char *)h.data, h.n), has[k] = 1;
        }
    }
}

/* The trace's identity: rank, world, devices, drops, a flight dump's reason. */
static doc copy_doc(const trace *t, const char *p, size_t n) {     /* json_load's copies (NULL: none) */
    doc d = { t->path, p, n ? p + n : p, 0 };
    return d;
}

static void put_identity(trace *t) {
    const doc head = copy_doc(t, t->head, t->nhead), dev = copy_doc(t, t->devprops.p, t->devprops.n);
    key("path", 1);
    put_s(t->path);
    key("file", 0);
    put_s(short_path(t->path));
    key("href", 0);
    put_s(g_beside ? short_path(t->path) : t->path);
    key("format", 0);
    put_s(t->pf ? "Perfetto (.pftrace)" : "Chrome trace JSON");
    key("rank", 0);
    put_i(t->rank);
    key("dropped", 0);
    put_i(t->dropped);
    const char *text[HEADER_KEYS] = { NULL };
    int64_t num[HEADER_KEYS] = { 0 };
    int has[HEADER_KEYS] = { 0 };
    if (t->pf) {
        pf_header(t, text, num, has);
    } else {
        span top = { t->head, t->nhead };
        for (size_t k = 0; k < HEADER_KEYS; k++) {
            char q[64];
            snprintf(q, sizeof q, "\"%s\"", header_keys[k][0]);
            span v = obj_find(&head, k == HEADER_WORLD ? obj_find(&head, top, "\"distributedInfo\"") : top, q);
            if (k < HEADER_TEXTS && v.n && v.p[0] == '"') text[k] = json_text(v), has[k] = 1;
            if (k >= HEADER_TEXTS && span_int(v, &num[k])) has[k] = 1;
        }
    }
    for (size_t k = 0; k < HEADER_KEYS; k++) {
        if (!has[k]) continue;
        key(header_keys[k][1], 0);
        if (k < HEADER_TEXTS) put_s(text[k]);
        else put_i(num[k]);
    }
    if (t->pf) return;
    key("devices", 0);
    put("[");
    if (t->devprops.n && t->devprops.p[0] == '[') {
        cursor c;
        span e;
        int k = 0;
        arr_begin(&c, &dev, t->devprops.p, 1);
        while (arr_next(&c, &e)) {
            span nm = obj_find(&dev, e, "\"name\"");
            if (k++) put(",");
            put_s(nm.n && nm.p[0] == '"' ? json_text(nm) : "GPU");
        }
    }
    put("]");
}

/* prof table's rows, and its printed cells. */
static void put_table(const prof_table *tab, const char *path) {
    tool_cells cells;
    if (!tool_table_cells(tab, &cells)) die("%s: out of memory", path);
    put("{\"heads\":[");
    for (int k = 0; k < cells.ncols; k++) {
        if (k) put(",");
        put_s(cells.head[k]);
    }
    put("],\"rows\":[");
    for (size_t i = 0; i < tab->n; i++) {
        const prof_row *r = &tab->rows[i];
        put(i ? ",{" : "{");
        key("name", 1);
        put_s(r->name);
        if (r->thread) {
            key("thread", 0);
            put_s(r->thread);
        }
        if (r->args) {
            key("args", 0);
            put_s(r->args);
        }
        key("cells", 0);                /* as prof table prints them; the page sorts by their text */
        put("[");
        for (int k = 0; k < cells.ncols; k++) {
            if (k) put(",");
            const char *h = cells.head[k];
            put_s(!strcmp(h, "Name") ? r->name : !strcmp(h, "Thread") ? r->thread : !strcmp(h, "Args") ? r->args
                                              : cells.cell[i * (size_t)cells.ncols + (size_t)k]);
        }
        put("]}");
    }
    put("]}");
    tool_cells_free(&cells);
}

/* Thread names by tid, from the table grouped by thread. */
typedef struct { long tid; const char *name; } tname;

static const char *thread_name(const tname *v, size_t n, long tid) {
    for (size_t i = 0; i < n; i++)
        if (v[i].tid == tid) return v[i].name;
    return "thread";
}

/* The flame graph's frames; threads named by the table grouped by thread. */
static void put_flame(const nest *s, const prof_table *tab) {
    tname *tn = xrealloc(NULL, (tab->n + 1) * sizeof *tn);
    size_t ntn = 0;
    for (size_t i = 0; i < tab->n; i++)
        if (tab->rows[i].thread && !strcmp(thread_name(tn, ntn, tab->rows[i].tid), "thread"))
            tn[ntn++] = (tname){ tab->rows[i].tid, tab->rows[i].thread };
    /* frames: [parent, name, total ns, calls], then, on a path that holds
       PROF_SAMPLE's samples, [..., samples, native]; a root's name is its
       thread's; a native frame's total is its samples' CPU time */
    put("[");
    for (size_t i = 0; i < s->nf; i++) {
        const frame *f = &s->f[i];
        put(i ? ",[" : "[");
        put_i(f->parent);
        put(",");
        char tl[96];
        if (!f->name) snprintf(tl, sizeof tl, "%s (tid %ld)", thread_name(tn, ntn, f->tid), f->tid);
        put_s(f->name ? f->name : tl);
        put_ints((const int64_t[]){ f->total, f->calls, f->samples, f->native }, f->samples ? 4 : 2);
        put("]");
    }
    put("]");
    free(tn);
}

/* Step's parts: its top-level regions by name (the TOP_PARTS largest over
   the run, the rest as "other regions"), and the time in none. */
static void put_steps(const nest *s, const extra *x, const prof_cycle *cy, const prof_table *tab) {
    agg *tops = NULL;
    size_t ntop = 0, captop = 0;
    for (size_t i = 0; i < s->n; i++) {
        const reg *r = &s->r[i];
        if (r->parent >= 0 && s->r[r->parent].step >= 0) agg_add(&tops, &ntop, &captop, r->name)->total += r->t1 - r->t0;
    }
    sort(tops, ntop, sizeof *tops, agg_cmp);
    size_t np = ntop < TOP_PARTS ? ntop : TOP_PARTS;
    put("{\"parts\":[");
    for (size_t k = 0; k < np; k++) {
        if (k) put(",");
        put_s(tops[k].name);
    }
    put(ntop > np ? ",\"other regions\"" : "");
    put("],\"rows\":[");
    int64_t *part = xrealloc(NULL, (np + 2) * sizeof *part);
    /* GPU intervals by start, for the time each step's GPU was busy */
    gpu_ev *g = xrealloc(NULL, (x->ng + 1) * sizeof *g);
    size_t ng = 0;
    int kernels = 0;
    for (size_t i = 0; i < x->ng; i++) kernels |= x->g[i].kind != G_REGION;
    for (size_t i = 0; i < x->ng; i++)
        if (!kernels || x->g[i].kind != G_REGION) g[ng++] = x->g[i];
    int first = 1;
    for (size_t i = 0; i < s->n; i++) {
        const reg *st = &s->r[i];
        if (st->step < 0) continue;
        memset(part, 0, (np + 2) * sizeof *part);
        for (size_t j = i + 1; j < s->n && s->r[j].tid == st->tid && s->r[j].t0 < st->t1; j++) {
            const reg *r = &s->r[j];
            if (r->parent != (int)i) continue;
            size_t k = 0;
            while (k < np && strcmp(tops[k].name, r->name)) k++;
            part[k] += r->t1 - r->t0;
        }
        put(first ? "{" : ",{");
        first = 0;
        key("n", 1);
        put_i(st->step);
        key("t0", 0);
        put_i(st->t0);
        key("dur", 0);
        put_i(st->t1 - st->t0);
        key("parts", 0);
        put("[");
        for (size_t k = 0; k < np + (ntop > np); k++) {
            if (k) put(",");
            put_i(part[k]);
        }
        put("]");
        if (tab->energy_devs) {         /* PROF_ENERGY: its joules per device (null: not known) */
            key("j", 0);
            put("[");
            for (int d = 0; d < tab->energy_devs; d++) {
                double j;
                int how = prof_cycle_step_energy(cy, st->ev, tab->energy[d].device, &j);
                char b[40];
                snprintf(b, sizeof b, "%.3f", j);       /* the trace's mJ */
                if (d) put(",");
                put(how ? b : "null");
            }
            put("]");
        }
        if (ng) {                       /* union of GPU busy time in the step: kernels, then the rest */
            int64_t busy[2] = { 0, 0 };
            for (int pass = 0; pass < 2; pass++) {
                int64_t end = st->t0;
                for (size_t j = 0; j < ng; j++) {
                    if (pass == 0 && g[j].kind != G_KERNEL && kernels) continue;
                    int64_t a = g[j].t0 > end ? g[j].t0 : end, b = g[j].t1 < st->t1 ? g[j].t1 : st->t1;
                    if (b > a) {
                        busy[pass] += b - a;
                        end = b;
                    }
                }
            }
            key("gpu", 0);
            put("[");
            put_i(busy[0]);
            put_ints((const int64_t[]){ busy[1] - busy[0], st->t1 - st->t0 - busy[1] }, 2);
            put("]");
        }
        put("}");
    }
    put("]}");
    free(g);
    free(part);
    free(tops);
}

static int gpu_cmp(const void *pa, const void *pb) {
    const gpu_ev *a = pa, *b = pb;
    return a->t0 < b->t0 ? -1 : a->t0 > b->t0;
}
static int rt_cmp(const void *pa, const void *pb) {
    const rt_call *a = pa, *b = pb;
    return a->corr < b->corr ? -1 : a->corr > b->corr;
}

static const rt_call *rt_find(const extra *x, int64_t corr) {
    size_t lo = 0, hi = x->nrt;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (x->rt[m].corr < corr) lo = m + 1;
        else hi = m;
    }
    return lo < x->nrt && x->rt[lo].corr == corr ? &x->rt[lo] : NULL;
}

/* Kernels by time, kernel time per CPU region, launches, copies. Without
   kernel capture the GPU regions stand for kernels (as HTA takes them). */
static void put_gpu(const nest *s, extra *x) {
    int kernels = 0;
    for (size_t i = 0; i < x->ng; i++) kernels |= x->g[i].kind != G_REGION;
    sort(x->rt, x->nrt, sizeof *x->rt, rt_cmp);
    agg *k = NULL, *reg_t = NULL, *launch = NULL, *copy = NULL;
    size_t nk = 0, capk = 0, nr = 0, capr = 0, nl = 0, capl = 0, nc = 0, capc = 0;
    for (size_t i = 0; i < x->ng; i++) {
        const gpu_ev *e = &x->g[i];
        if (kernels && e->kind == G_REGION) continue;
        int64_t d = e->t1 - e->t0;
        agg *a = agg_add(&k, &nk, &capk, e->name);
        a->n++;
        a->total += d;
        if (d > a->max) a->max = d;
        if (e->bytes > 0) a->bytes += e->bytes;
        const rt_call *c = e->corr >= 0 ? rt_find(x, e->corr) : NULL;
        if (c) {                        /* launched from: the region around the runtime call */
            int at = region_at(s, c->tid, c->t0);
            if (at >= 0 && s->r[at].t0 == c->t0 && s->r[at].t1 == c->t1) at = s->r[at].parent;    /* the call's own */
            agg *r = agg_add(&reg_t, &nr, &capr, at < 0 ? "(no region)" : s->r[at].name);
            r->n++;
            r->total += d;
            agg *l = agg_add(&launch, &nl, &capl, e->name);     /* a: call's time, b: call to start */
            l->n++;
            l->a += c->t1 - c->t0;
            l->b += e->t0 - c->t0;
            l->total += e->t0 - c->t0;
            if (e->t0 - c->t0 > l->max) l->max = e->t0 - c->t0;
        } else if (e->kind == G_REGION) {
            agg *r = agg_add(&reg_t, &nr, &capr, e->name);
            r->n++;
            r->total += d;
        }
        if (e->kind == G_COPY || e->kind == G_FILL) {
            char dir[64];
            const char *p = e->name;
            size_t n = 0;
            while (p[n] && p[n] != ' ') n++;
            if (p[n] == ' ') {          /* "Memcpy HtoD (Pageable -> Device)": HtoD */
                size_t m = n + 1;
                while (p[m] && p[m] != ' ') m++;
                n = m;
            }
            snprintf(dir, sizeof dir, "%.*s", (int)(n < 63 ? n : 63), p);
            agg *c2 = agg_add(&copy, &nc, &capc, prof_intern(dir, strlen(dir)));
            c2->n++;
            c2->total += d;
            if (d > c2->max) c2->max = d;
            if (e->bytes > 0) c2->bytes += e->bytes;
        }
    }
    key("kernels_captured", 1);
    put_i(kernels);
    key("top", 0);
    put_aggs(k, nk, TOP_KERNELS);
    key("kernels", 0);
    put_i((int64_t)nk);
    key("by_region", 0);
    put_aggs(reg_t, nr, TOP_KERNELS);
    key("launch", 0);
    put_aggs(launch, nl, TOP_KERNELS);
    key("copies", 0);
    put_aggs(copy, nc, TOP_KERNELS);
    free(k);
    free(reg_t);
    free(launch);
    free(copy);
}

/* Kernel capture's idle time, prof table's (prof_cycle_gpu_idle: the
   analysis of the same model): each stream's and device's rows, per step
   and for the whole trace (step -2), as [step, device, stream, work, busy,
   host, sync, wait, launch, other, comm, comp, overlap]. */
static void put_idle(const prof_cycle *cy) {
    key("idle", 0);
    put("[");
    for (size_t i = 0; i < prof_cycle_gpu_idle_count(cy); i++) {
        prof_gpu_idle r;
        prof_cycle_gpu_idle(cy, i, &r);
        const int64_t v[13] = { r.step, r.device, r.stream, (int64_t)r.work, r.busy_ns, r.host_ns, r.sync_ns,
                                r.wait_ns, r.launch_ns, r.other_ns, r.comm_ns, r.comp_ns, r.overlap_ns };
        put(i ? ",[" : "[");
        put_i(v[0]);
        put_ints(v + 1, 12);
        put("]");
    }
    put("]");
    key("path", 0);                     /* each step's critical path: [step, work, host, launch, gpu, other] */
    put("[");
    for (size_t i = 0; i < prof_cycle_gpu_path_count(cy); i++) {
        prof_gpu_path r;
        prof_cycle_gpu_path(cy, i, &r);
        const int64_t v[6] = { r.step, (int64_t)r.work, r.host_ns, r.launch_ns, r.gpu_ns, r.other_ns };
        put(i ? ",[" : "[");
        put_i(v[0]);
        put_ints(v + 1, 5);
        put("]");
    }
    put("]");
}

static int mem_cmp(const void *pa, const void *pb) {
    const mem_ev *a = pa, *b = pb;
    if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
    return a->t < b->t ? -1 : a->t > b->t;
}
static int leak_cmp(const void *pa, const void *pb) {
    const mem_ev *a = pa, *b = pb;
    if (a->addr != b->addr) return a->addr < b->addr ? -1 : 1;
    return a->t < b->t ? -1 : a->t > b->t;
}
static int bytes_cmp(const void *pa, const void *pb) {
    const mem_ev *a = pa, *b = pb;
    if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Per device: the curve (at most MEM_POINTS points: each stretch's highest),
   the peak and the region open at it; then what was allocated and not
   freed in the trace, largest first. */
static void put_memory(const nest *s, extra *x) {
    sort(x->m, x->nm, sizeof *x->m, mem_cmp);
    put("{\"devices\":[");
    for (size_t i = 0; i < x->nm;) {
        size_t j = i;
        while (j < x->nm && x->m[j].dev == x->m[i].dev) j++;
        size_t peak = i;
        for (size_t q = i; q < j; q++)
            if (x->m[q].total > x->m[peak].total) peak = q;
        put(i ? ",{" : "{");
        key("dev", 1);
        put_i(x->m[i].dev);
        key("events", 0);
        put_i((int64_t)(j - i));
        key("peak", 0);
        put_i(x->m[peak].total);
        key("peak_t", 0);
        put_i(x->m[peak].t);
        key("peak_region", 0);
        put_s(region_name(s, x->m[peak].tid, x->m[peak].t));
        key("points", 0);
        put("[");
        size_t per = (j - i + MEM_POINTS - 1) / MEM_POINTS;
        for (size_t q = i; q < j; q += per) {
            size_t e = q + per < j ? q + per : j, hi = q;
            for (size_t r = q; r < e; r++)
                if (x->m[r].total > x->m[hi].total) hi = r;
            put(q > i ? ",[" : "[");
            put_i(x->m[hi].t);
            put_ints(&x->m[hi].total, 1);
            put("]");
        }
        put("]}");
        i = j;
    }
    put("],\"leaks\":");
    /* by address, in time: an allocation whose next event is not its free */
    sort(x->m, x->nm, sizeof *x->m, leak_cmp);
    size_t nl = 0;
    int64_t lbytes = 0;
    for (size_t i = 0; i < x->nm; i++)
        if (x->m[i].bytes > 0 && (i + 1 == x->nm || x->m[i + 1].addr != x->m[i].addr || x->m[i + 1].bytes >= 0)) {
            lbytes += x->m[i].bytes;
            x->m[nl++] = x->m[i];
        }
    sort(x->m, nl, sizeof *x->m, bytes_cmp);
    put("{\"count\":");
    put_i((int64_t)nl);
    put(",\"bytes\":");
    put_i(lbytes);
    put(",\"top\":[");
    for (size_t i = 0; i < nl && i < TOP_LEAKS; i++) {
        put(i ? ",[" : "[");
        put_i(x->m[i].bytes);
        put_ints((const int64_t[]){ x->m[i].dev, x->m[i].addr }, 2);
        put(",");
        put_s(region_name(s, x->m[i].tid, x->m[i].t));
        put("]");
    }
    put("]}}");
}

/* Every trace's step times, by step number (the ranks' heatmap). */
static void put_rank_steps(const prof_cycle *cy) {
    put("[");
    size_t n = prof_cycle_event_count(cy);
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        prof_event e;
        if (!prof_cycle_event(cy, i, &e) || e.kind != PROF_EVENT_STEP) continue;
        put(first ? "[" : ",[");
        first = 0;
        put_d(e.value);
        put(",");
        put_i(e.dur_ns);
        put("]");
    }
    put("]");
}

/* ---- the page ------------------------------------------------------------ */

/* The page's files, built into the program (report_page.c). */
extern const char report_html[], report_css[], report_js[];

/* out: the template with its markers replaced by the style, the data (every
   '<' of it escaped, so that no name can end the script element) and the
   script. */
static void write_page(FILE *out, FILE *data, const char *title) {
    const char *p = report_html;
    for (;;) {
        const char *m = strstr(p, "<!--@");
        if (!m) {
            fputs(p, out);
            return;
        }
        fwrite(p, 1, (size_t)(m - p), out);
        const char *e = strstr(m, "-->");
        if (!e) die("the page's template is broken");
        if (!strncmp(m, "<!--@style-->", 13)) fputs(report_css, out);
        else if (!strncmp(m, "<!--@script-->", 14)) fputs(report_js, out);
        else if (!strncmp(m, "<!--@title-->", 13)) {
            for (const char *c = title; *c; c++)
                if (*c == '<') fputs("&lt;", out);
                else if (*c == '&') fputs("&amp;", out);
                else fputc(*c, out);
        } else if (!strncmp(m, "<!--@data-->", 12)) {
            rewind(data);
            int c;
            while ((c = getc(data)) != EOF)
                if (c == '<') fputs("\\u003c", out);
                else putc(c, out);
        }
        p = e + 3;
    }
}

/* The default output: the first trace's path, its extension(s) made .html. */
static char *default_out(const char *path) {
    size_t n = strlen(path);
    static const char *const ext[] = { ".json.gz", ".pftrace.gz", ".json", ".pftrace", ".perfetto-trace", ".gz" };
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t e = strlen(ext[i]);
        if (n > e && !strcmp(path + n - e, ext[i])) {
            n -= e;
            break;
        }
    }
    char *o = xrealloc(NULL, n + 6);
    memcpy(o, path, n);
    memcpy(o + n, ".html", 6);
    return o;
}

static const char report_usage[] = "usage: prof report TRACE... [-o FILE.html]  |  prof report --diff BASE NEW [-o FILE.html]";

int cmd_report(int argc, char **argv) {
    const char *outp = NULL;
    const char **paths = xrealloc(NULL, ((size_t)argc + 1) * sizeof *paths);
    int np = 0, diff = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) outp = argv[++i];
        else if (!strcmp(argv[i], "--diff")) diff = 1;
        else if (argv[i][0] == '-' && argv[i][1]) die("%s", report_usage);
        else paths[np++] = argv[i];
    }
    if (!np || (diff && np != 2)) die("%s", report_usage);
    char *defp = outp ? NULL : default_out(paths[diff]);
    if (!outp) outp = defp;
    g_beside = defp != NULL;

    FILE *data = tmpfile();
    if (!data) die("no scratch file for the page's data");
    g_o = tool_out_new(data);
    put("{\"tool\":\"prof report\",\"traces\":[");
    if (diff) {
        for (int k = 0; k < 2; k++) trace_open(paths[k], k);
        for (int k = 0; k < 2; k++) {
            put(k ? ",{" : "{");
            put_identity(&g_tr[k]);
            put("}");
        }
        put("],\"diff\":");
        diff_json(g_o, &g_tr[0], &g_tr[1]);
    } else {
        /* the first trace in full; the others (ranks) for their steps */
        trace *t = trace_open(paths[0], 0);
        extra x;
        memset(&x, 0, sizeof x);
        const model_also also = { extra_event, extra_slice, &x };
        const prof_cycle *cy = table_cycle_also(0, t, &also);
        nest s;
        nest_build(&s, cy);
        nest_samples(&s, t);
        sort(x.g, x.ng, sizeof *x.g, gpu_cmp);
        put("{");
        put_identity(t);
        key("regions", 0);
        put_i((int64_t)s.n);
        put("}");
        for (int k = 1; k < np; k++) {
            trace *u = trace_open(paths[k], k);
            put(",{");
            put_identity(u);
            put("}");
        }
        t = &g_tr[0];                   /* g_tr moved as the others were added */
        prof_table tab[2];              /* prof table's, by name and by name and thread */
        for (int k = 0; k < 2; k++)
            if (!prof_cycle_table(cy, PROF_SORT_SELF_CPU, (k ? PROF_GROUP_THREAD : 0) | PROF_TABLE_PERCENTILES, &tab[k]))
                die("%s: out of memory", t->path);
        put("],\"steps\":");
        put_steps(&s, &x, cy, &tab[0]);
        if (tab[0].energy_devs) {       /* PROF_ENERGY: the table's footer, per device */
            put(",\"energy\":[");
            for (int d = 0; d < tab[0].energy_devs; d++) {
                const prof_energy *e = &tab[0].energy[d];
                put(d ? ",{" : "{");
                key("device", 1);
                put_i(e->device);
                key("p50", 0);
                put_d(e->j_p50);
                key("p90", 0);
                put_d(e->j_p90);
                key("watts", 0);
                put_d(e->watts);
                key("per_token", 0);
                put_d(e->j_per_token);
                key("per_sample", 0);
                put_d(e->j_per_sample);
                key("steps", 0);
                put_i((int64_t)e->steps);
                put("}");
            }
            put("]");
        }
        put(",\"ops\":");
        put_table(&tab[0], t->path);
        put(",\"ops_thread\":");
        put_table(&tab[1], t->path);
        put(",\"flame\":");
        put_flame(&s, &tab[1]);
        prof_table_free(&tab[0]);
        prof_table_free(&tab[1]);
        if (x.ng) {
            put(",\"gpu\":{");
            put_gpu(&s, &x);
            put_idle(cy);
            put("}");
        }
        if (x.nm) {
            put(",\"memory\":");
            put_memory(&s, &x);
        }
        nest_free(&s);
        extra_free(&x);
        put(",\"ranks\":[{\"rank\":");
        put_i(t->rank);
        put(",\"steps\":");
        put_rank_steps(cy);
        put("}");
        for (int k = 1; k < np; k++) {
            const prof_cycle *c1 = table_cycle(1, &g_tr[k]);
            put(",{\"rank\":");
            put_i(g_tr[k].rank);
            put(",\"steps\":");
            put_rank_steps(c1);
            put("}");
        }
        put("]");
    }
    put("}\n");
    if (!tool_out_flush(g_o)) die("cannot write the page's data to a scratch file");
    tool_out_free(g_o);
    g_o = NULL;

    FILE *out = fopen(outp, "wb");
    if (!out) die("%s: cannot write: %s", outp, strerror(errno));
    g_partial = outp;
    write_page(out, data, short_path(paths[0]));
    fclose(data);
    if (ferror(out) | fclose(out)) die("%s: cannot write", outp);
    g_partial = NULL;
    note("%s", outp);
    free(defp);
    free(paths);
    table_free();
    traces_free();
    return 0;
}
