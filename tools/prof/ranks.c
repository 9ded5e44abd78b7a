/* ranks.c - prof ranks: the questions a distributed run asks first, from
   the ranks' traces, without merging them.

   USAGE
     prof ranks [--min-lag MS] [--table-out DIR] [--ranks LIST] [-j N] TRACE... | DIR

     TRACE: a rank's trace as prof.h writes it (.json, .json.gz, .pftrace);
     DIR: every such file in it. Each trace is read once, front to back
     through a bounded window (trace.c), N at a time on N threads (default:
     the cores, at most 8). What is kept per rank is a few numbers per step
     and top-level region, never its events: memory grows with ranks x
     steps x regions, not with the traces' sizes.

   WHAT IT SAYS
     Per step: each rank's step time (its ProfilerStep#N) and its time in
     each top-level region (a region with no other around it on its
     thread; every call in the step summed), and one line that names the
     straggler and the step, or says there was none:
       step 5: straggler rank 37: work 130.4 ms, 30.1 ms over the median of 64 ranks (100.3 ms); the others waited in allreduce
     A rank's work in a step is the time from the step's start to its
     last sync point in the step (PROF_SYNC(), called after a barrier)
     less the wait: the last top-level region on the stepping thread that
     began before that sync point, the collective it waited in. The
     straggler is the rank whose work ran longest, named when it ran at
     least --min-lag over the ranks' median (default: 1 ms or a tenth of
     the median step time, whichever is more). A step without a sync point
     counts its whole time as work. Where the traces hold NCCL's NVTX
     ranges (args.domain "NCCL": `prof run`, libprof_nvtx.so), the line
     also names the collective inside the region they waited in:
       ...; the others waited in allreduce (NCCL: ncclAllReduce)
     Then a summary: the persistent stragglers (named at two steps or more,
     and at a quarter of the steps or more), and per top-level region the
     spread across the ranks of their mean time per step (p50, p99, max and
     its rank) with the outliers (further from the median than five
     times the median absolute deviation, and than a tenth of the median).
     With 16 ranks or fewer, each step lists every rank; with more, the
     spread of each region.
   HANGS
     The dumps a watchdog writes on every rank (prof_dump_reason "hang",
     or regions marked "open") are grouped by what the rank is inside: the
     path of open regions of its thread stuck longest, as one line per
     group, the largest first:
       hang at step 20: 63 ranks in allreduce > wait_peer for 312 s (ranks 0-36,38-63)
       hang at step 20: rank 37 in data_load for 315 s
   --table-out DIR
     Also writes DIR/rank<r>.csv per rank, one row per step and top-level
     region: rank,step,step_ns,work_ns,wait_ns,region,region_ns,calls (a
     step without a region has one row, region empty). DuckDB, pandas,
     Spark and Dask read the directory as it is (README: the straggler
     query in DuckDB).
   Exit status 0, or 2 with one line on stderr. */
#define _POSIX_C_SOURCE 200809L   /* opendir, sysconf, mkdir */
#include "tool.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_JOBS    8
#define ALL_RANKS   16      /* up to this many ranks, each step lists every rank */

/* ======================================================================== */
/*  One rank: its trace read into a few numbers per step                    */
/* ======================================================================== */

typedef struct { const char *name; int64_t ns, calls; } rk_cell;     /* a top-level region in a step */
typedef struct {
    int64_t step, t0, t1, dur, work, wait;
    const char *wait_in;            /* the region it waited in; NULL: none */
    const char *wait_coll;          /* the NCCL range in it (libprof_nvtx's); NULL: none */
    long tid;
    size_t cell, ncell;             /* its cells */
} rk_step;
typedef struct { long tid; const char *name; int64_t t0, t1; size_t seq; } rk_reg;   /* seq: the open list's order */

/* A region as a reader finds it: thread tid, from t0 to t1 in absolute ns,
   its name interned (prof_intern); open: still running when the trace was
   written (a watchdog's dump marks those). */
typedef struct { long tid; const char *name; int64_t t0, t1; int open, nccl; } region;   /* nccl: an NVTX
   range of NCCL's (args.domain "NCCL", as libprof_nvtx records them) */

typedef struct {
    trace t;
    rk_step *steps;
    size_t nsteps;
    rk_cell *cells;
    size_t ncells;
    rk_reg *top;                    /* regions with none around them yet, by (tid, t0) */
    size_t ntop, captop;
    rk_reg *open;                   /* regions still running (a dump's) */
    size_t nopen;
    rk_reg *coll;                   /* NCCL's ranges (its collectives), by time after the read */
    size_t ncoll;
    int64_t *syncs;                 /* its sync points' times, JSON (Perfetto: t.syncs) */
    size_t nsyncs;
    int dump;                       /* a hang dump */
    int skip;                       /* not of a rank in --ranks, by its header */
    char *error;                    /* why its reading stopped */
    const char *hang_path;          /* what it is inside; interned */
    int64_t hang_ns;                /*   for how long */
} rank_data;

static double dmax(double a, double b) { return a > b ? a : b; }
static double dabs(double a) { return a < 0 ? -a : a; }

static int step_number(const char *name, int64_t *step) {
    if (strncmp(name, "ProfilerStep#", 13) != 0) return 0;
    char *e;
    *step = (int64_t)strtoll(name + 13, &e, 10);
    return *e == 0 && e != name + 13;
}

/* Where (tid, t0) goes among the top-level regions. */
static size_t top_at(const rank_data *r, long tid, int64_t t0) {
    size_t lo = 0, hi = r->ntop;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const rk_reg *m = &r->top[mid];
        if (m->tid < tid || (m->tid == tid && m->t0 <= t0)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* A region as it comes: prof.h writes a thread's regions as they end
   (children before their parent), other writers as they begin: a region
   inside one already kept is left out, the ones inside it are dropped. Of
   two with the same span the later is the parent (prof.h's order). */
static void on_region(void *ctx, const region *g) {
    rank_data *r = ctx;
    int64_t step;
    if (g->nccl) {
        r->coll = xrealloc(r->coll, (r->ncoll + 1) * sizeof *r->coll);
        r->coll[r->ncoll++] = (rk_reg){ g->tid, g->name, g->t0, g->t1, 0 };
    }
    if (g->open) {
        r->dump = 1;
        r->open = xrealloc(r->open, (r->nopen + 1) * sizeof *r->open);
        r->open[r->nopen] = (rk_reg){ g->tid, g->name, g->t0, g->t1, r->nopen };
        r->nopen++;
    }
    if (step_number(g->name, &step)) {
        r->steps = xrealloc(r->steps, (r->nsteps + 1) * sizeof *r->steps);
        memset(&r->steps[r->nsteps], 0, sizeof *r->steps);
        r->steps[r->nsteps].step = step;
        r->steps[r->nsteps].t0 = g->t0;
        r->steps[r->nsteps].t1 = g->t1;
        r->steps[r->nsteps++].tid = g->tid;
        return;
    }
    size_t i = top_at(r, g->tid, g->t0), lo = i, hi = i;
    if (i > 0) {
        const rk_reg *p = &r->top[i - 1];
        if (p->tid == g->tid && p->t0 <= g->t0 && p->t1 >= g->t1 && !(p->t0 == g->t0 && p->t1 == g->t1)) return;
    }
    while (lo > 0 && r->top[lo - 1].tid == g->tid && r->top[lo - 1].t0 >= g->t0 && r->top[lo - 1].t1 <= g->t1) lo--;
    while (hi < r->ntop && r->top[hi].tid == g->tid && r->top[hi].t0 >= g->t0 && r->top[hi].t1 <= g->t1) hi++;
    if (r->ntop - (hi - lo) + 1 > r->captop) {
        r->captop = r->captop ? 2 * r->captop : 256;
        r->top = xrealloc(r->top, r->captop * sizeof *r->top);
    }
    memmove(&r->top[lo + 1], &r->top[hi], (r->ntop - hi) * sizeof *r->top);
    r->ntop = r->ntop - (hi - lo) + 1;
    i = lo;
    r->top[i] = (rk_reg){ g->tid, g->name, g->t0, g->t1, 0 };
}

/* A JSON event: its CPU regions (X events off the GPUs), sync points. */
static const char *json_name(span s) {
    if (s.n < 2 || s.p[0] != '"') return NULL;
    if (!memchr(s.p, '\\', s.n)) return prof_intern(s.p + 1, s.n - 2);
    return json_text(s);
}

static void on_json_event(trace *t, const event *ev, void *ctx) {
    rank_data *r = ctx;
    span ph = ev->f[F_PH];
    int64_t ts, dur, tid;
    if (is_str(ph, "i") && is_str(ev->f[F_CAT], "prof_sync")) {
        int64_t k;
        if (event_time(t, ev->f[F_TS], ev->at, &ts) && span_int(obj_find(&t->d, ev->f[F_ARGS], "\"sync\""), &k)) {
            r->syncs = xrealloc(r->syncs, (r->nsyncs + 1) * sizeof *r->syncs);
            r->syncs[r->nsyncs++] = ts;
        }
        return;
    }
    if (!is_str(ph, "X") || is_gpu_cat(ev->f[F_CAT]) || !span_int(ev->f[F_TID], &tid)) return;
    if (!event_time(t, ev->f[F_TS], ev->at, &ts) || !span_scaled(ev->f[F_DUR], 3, &dur) || dur < 0) return;
    const char *name = json_name(ev->f[F_NAME]);
    if (!name) return;
    int64_t step;
    if (step_number(name, &step)) dur = add_ck(dur, 1);   /* prof.h's JSON ends a step 1 ns early */
    region g = { (long)tid, name, ts, add_ck(ts, dur), obj_find(&t->d, ev->f[F_ARGS], "\"open\"").n != 0,
                 is_str(obj_find(&t->d, ev->f[F_ARGS], "\"domain\""), "NCCL") };
    on_region(r, &g);
}

/* A Perfetto slice as pf_to_model's pass hands it: a thread's (steps
   too), times from the trace's earliest (t->tmin, pf_scan's). */
static void on_pf_slice(trace *t, const pf_slice *sl, void *ctx) {
    if (sl->instant || !sl->has_tid) return;
    int open = 0, nccl = 0;
    for (size_t k = 0; k < sl->nargs; k++) {
        if (sl->args[k].is_str && !strcmp(sl->args[k].key, "open")) open = 1;
        if (sl->args[k].is_str && !strcmp(sl->args[k].key, "domain") && sl->args[k].str && !strcmp(sl->args[k].str, "NCCL"))
            nccl = 1;
    }
    region g = { (long)sl->tid, sl->name, add_ck(t->tmin, sl->t0), add_ck(t->tmin, sl->t1), open, nccl };
    on_region(ctx, &g);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_step(const void *a, const void *b) {
    const rk_step *x = a, *y = b;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int cmp_reg(const void *a, const void *b) {         /* by time */
    const rk_reg *x = a, *y = b;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* By thread, outer first. Two regions begun in the same nanosecond and
   open to the dump have the same span: the later to come is the parent
   (on_region's rule), so that order decides, not qsort's. */
static int cmp_open(const void *a, const void *b) {
    const rk_reg *x = a, *y = b;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1) return x->t1 > y->t1 ? -1 : 1;
    return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/* A dump: the open path of the thread whose innermost open region has run
   longest ("allreduce > wait_peer"). */
static void hang_path(rank_data *r) {
    if (!r->nopen) return;
    qsort(r->open, r->nopen, sizeof *r->open, cmp_open);
    size_t best = 0, best_end = 0;
    int64_t best_ns = -1;
    for (size_t i = 0, j; i < r->nopen; i = j) {
        size_t last = SIZE_MAX;
        for (j = i; j < r->nopen && r->open[j].tid == r->open[i].tid; j++) {
            int64_t s;
            if (!step_number(r->open[j].name, &s)) last = j;
        }
        if (last == SIZE_MAX) continue;
        int64_t ns = sub_ck(r->open[last].t1, r->open[last].t0);
        if (ns > best_ns) best_ns = ns, best = i, best_end = j;
    }
    if (best_ns < 0) return;
    size_t len = 0;
    char *path = NULL;
    for (size_t k = best; k < best_end; k++) {
        int64_t s;
        if (step_number(r->open[k].name, &s)) continue;
        size_t n = strlen(r->open[k].name);
        path = xrealloc(path, len + n + 4);
        if (len) memcpy(path + len, " > ", 3), len += 3;
        memcpy(path + len, r->open[k].name, n);
        len += n;
    }
    r->hang_path = prof_intern(path, len);
    r->hang_ns = best_ns;
    free(path);
}

/* The first of NCCL's ranges inside region e on its thread: the collective
   a wait was in. r->coll by time. */
static const char *coll_in(const rank_data *r, const rk_reg *e) {
    size_t lo = 0, hi = r->ncoll;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->coll[mid].t0 < e->t0) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < r->ncoll && r->coll[lo].t0 <= e->t1; lo++)
        if (r->coll[lo].tid == e->tid && r->coll[lo].t1 <= e->t1) return r->coll[lo].name;
    return NULL;
}

/* After the read: per step its work, wait and top-level regions. */
static void settle_rank(rank_data *r) {
    trace *t = &r->t;
    int64_t *sy = r->syncs;
    size_t nsy = r->nsyncs;
    if (t->pf) {                        /* pf_scan's: sorted by number; times wanted */
        sy = xrealloc(NULL, (t->nsync + 1) * sizeof *sy);
        for (size_t i = 0; i < t->nsync; i++) sy[i] = t->syncs[i].t;
        nsy = t->nsync;
    }
    if (nsy) qsort(sy, nsy, sizeof *sy, cmp_i64);
    if (r->nsteps) qsort(r->steps, r->nsteps, sizeof *r->steps, cmp_step);
    /* each top-level region into the step it begins in (the steps do not
       overlap: one thread steps), both in order of time */
    if (r->ntop) qsort(r->top, r->ntop, sizeof *r->top, cmp_reg);
    if (r->ncoll) qsort(r->coll, r->ncoll, sizeof *r->coll, cmp_reg);
    size_t cap = 0, g = 0;
    rk_cell *cells = NULL;
    for (size_t k = 0; k < r->nsteps; k++) {
        rk_step *s = &r->steps[k];
        s->dur = sub_ck(s->t1, s->t0);
        s->cell = r->ncells;
        /* its sync point: the last in it */
        size_t lo = 0, hi = nsy;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (sy[mid] <= s->t1) lo = mid + 1;
            else hi = mid;
        }
        int has_sync = lo > 0 && sy[lo - 1] >= s->t0;
        int64_t sync = has_sync ? sy[lo - 1] : s->t1, arrive = sync;
        while (g < r->ntop && r->top[g].t0 < s->t0) g++;
        for (; g < r->ntop && r->top[g].t0 < s->t1; g++) {
            const rk_reg *e = &r->top[g];
            if (has_sync && e->tid == s->tid && e->t0 <= sync) {   /* the last one before it: the wait */
                arrive = e->t0;
                s->wait_in = e->name;
                s->wait_coll = coll_in(r, e);
            }
            size_t c = s->cell;
            while (c < r->ncells && cells[c].name != e->name) c++;
            if (c == r->ncells) {
                if (r->ncells == cap) cells = xrealloc(cells, (cap = cap ? 2 * cap : 64) * sizeof *cells);
                cells[r->ncells++] = (rk_cell){ e->name, 0, 0 };
            }
            cells[c].ns = add_ck(cells[c].ns, sub_ck(e->t1, e->t0));
            cells[c].calls++;
        }
        s->work = sub_ck(arrive, s->t0);
        s->wait = sub_ck(sync, arrive);
        s->ncell = r->ncells - s->cell;
    }
    r->cells = cells;
    hang_path(r);
    if (sy != r->syncs) free(sy);
    free(r->syncs);
    r->syncs = NULL;
    free(r->top);
    r->top = NULL;
    r->ntop = r->captop = 0;
    free(r->open);
    r->open = NULL;
    free(r->coll);
    r->coll = NULL;
    r->ncoll = 0;
}

static void read_rank(rank_data *r) {
    trace *t = &r->t;
    trace_rewind(t);
    if (t->pf) {
        pf_scan(t);                     /* rank, sync points, earliest time */
        pf_to_model(t, NULL, on_pf_slice, r);
    } else {
        json_walk(t, on_json_event, r); /* times rest on the base: a header after the events moves them */
        int64_t b = t->base;
        if (b) {
            for (size_t i = 0; i < r->nsteps; i++) r->steps[i].t0 = add_ck(r->steps[i].t0, b), r->steps[i].t1 = add_ck(r->steps[i].t1, b);
            for (size_t i = 0; i < r->ntop; i++) r->top[i].t0 = add_ck(r->top[i].t0, b), r->top[i].t1 = add_ck(r->top[i].t1, b);
            for (size_t i = 0; i < r->nopen; i++) r->open[i].t0 = add_ck(r->open[i].t0, b), r->open[i].t1 = add_ck(r->open[i].t1, b);
            for (size_t i = 0; i < r->ncoll; i++) r->coll[i].t0 = add_ck(r->coll[i].t0, b), r->coll[i].t1 = add_ck(r->coll[i].t1, b);
            for (size_t i = 0; i < r->nsyncs; i++) r->syncs[i] = add_ck(r->syncs[i], b);
        }
    }
    r->dump |= t->hang;
    settle_rank(r);
    trace_close(t);
}

static void rank_free(rank_data *r) {
    free(r->steps);
    free(r->cells);
    free(r->top);
    free(r->open);
    free(r->coll);
    free(r->syncs);
    free(r->error);
    trace_free(&r->t);
    memset(r, 0, sizeof *r);
}

/* For the fuzzer: trace t (in memory) read as prof ranks reads a rank;
   ranks_fuzz_free frees what that holds, after die() too. */
static rank_data g_fuzz;

void ranks_fuzz(const trace *t) {
    trace_init(&g_fuzz.t, t->path, 0);
    g_fuzz.t.buf = t->buf;              /* t's: let go before it is freed */
    g_fuzz.t.len = t->len;
    read_rank(&g_fuzz);
}

void ranks_fuzz_free(void) {
    g_fuzz.t.buf = NULL;
    rank_free(&g_fuzz);
}

/* ======================================================================== */
/*  The ranks, read in parallel                                             */
/* ======================================================================== */

static rank_data *g_rk;         /* global, so that die() leaves them reachable */
static size_t g_nrk;
static size_t g_next;           /* the next rank to read (atomic) */
static int g_failed;            /* a reader stopped on an error: the others take no more (atomic) */

/* A reader: the next trace not yet taken, until none is left or one
   failed. An error ends its thread, not the program: its line is kept with
   its rank for cmd_ranks to say once every reader has stopped. */
static void *reader(void *arg) {
    (void)arg;
    jmp_buf failed;
    char text[DIE_TEXT];
    volatile size_t i = SIZE_MAX;
    g_die_jump = &failed;
    g_die_text = text;
    if (setjmp(failed)) {
        size_t n = strlen(text) + 1;
        g_rk[i].error = memcpy(xrealloc(NULL, n), text, n);
        __atomic_store_n(&g_failed, 1, __ATOMIC_RELAXED);
    } else {
        while (!__atomic_load_n(&g_failed, __ATOMIC_RELAXED)) {
            i = __atomic_fetch_add(&g_next, 1, __ATOMIC_RELAXED);
            if (i >= g_nrk) break;
            if (!g_rk[i].skip) read_rank(&g_rk[i]);
        }
    }
    g_die_jump = NULL;
    g_die_text = NULL;
    json_free();                        /* the readers' state of this thread */
    pf_free();
    return NULL;
}

static void read_all(int jobs) {
    pthread_t th[MAX_JOBS];
    int n = 0;
    for (; n < jobs - 1 && (size_t)n + 1 < g_nrk; n++)
        if (pthread_create(&th[n], NULL, reader, NULL) != 0) break;
    reader(NULL);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    for (size_t i = 0; i < g_nrk; i++)      /* the first trace's error, said once */
        if (g_rk[i].error) {
            fprintf(stderr, "%s\n", g_rk[i].error);
            exit(2);
        }
}

static int is_trace_name(const char *s) {
    static const char *const ext[] = { ".json", ".json.gz", ".pftrace", ".pftrace.gz", ".perfetto-trace" };
    size_t n = strlen(s);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t k = strlen(ext[i]);
        if (n > k && !strcmp(s + n - k, ext[i])) return 1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char **g_paths;          /* the files of a directory */
static size_t g_npaths;

static void add_path(const char *path) {
    g_rk = xrealloc(g_rk, (g_nrk + 1) * sizeof *g_rk);
    memset(&g_rk[g_nrk], 0, sizeof *g_rk);
    trace_init(&g_rk[g_nrk].t, path, (int)g_nrk);
    g_nrk++;
}

static void add_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) die("%s: cannot open: %s", dir, strerror(errno));
    size_t first = g_npaths;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_trace_name(e->d_name)) continue;
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        char *p = xrealloc(NULL, n);
        snprintf(p, n, "%s/%s", dir, e->d_name);
        g_paths = xrealloc(g_paths, (g_npaths + 1) * sizeof *g_paths);
        g_paths[g_npaths++] = p;
    }
    closedir(d);
    if (g_npaths == first) die("%s: no traces in it (.json, .json.gz, .pftrace)", dir);
    qsort(g_paths + first, g_npaths - first, sizeof *g_paths, cmp_str);
    for (size_t i = first; i < g_npaths; i++) add_path(g_paths[i]);
}

/* ======================================================================== */
/*  What it says                                                            */
/* ======================================================================== */

static const char *fmt_ns(char *buf, size_t cap, double ns) {
    tool_fmt_time(buf, cap, ns);
    return buf;
}

static double median_of(double *v, size_t n) {      /* v sorted */
    return n ? (v[(n - 1) / 2] + v[n / 2]) / 2 : 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "0-36,38-63" of ranks (sorted) */
static void put_ranks(FILE *o, const int *rk, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && rk[j + 1] == rk[j] + 1) j++;
        fprintf(o, "%s%d", i ? "," : "", rk[i]);
        if (j > i) fprintf(o, "-%d", rk[j]);
        i = j + 1;
    }
}

static const char **g_names;    /* the top-level regions' names, in order of first appearance */
static size_t g_nnames;

static void name_add(const char *name) {
    for (size_t i = 0; i < g_nnames; i++)
        if (g_names[i] == name) return;
    g_names = xrealloc(g_names, (g_nnames + 1) * sizeof *g_names);
    g_names[g_nnames++] = name;
}

static const rk_step *step_of(const rank_data *r, int64_t step) {
    size_t lo = 0, hi = r->nsteps;             /* steps come in order: numbers too */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->steps[mid].step < step) lo = mid + 1;
        else hi = mid;
    }
    return lo < r->nsteps && r->steps[lo].step == step ? &r->steps[lo] : NULL;
}

static int64_t cell_ns(const rank_data *r, const rk_step *s, const char *name) {
    for (size_t c = s->cell; c < s->cell + s->ncell; c++)
        if (r->cells[c].name == name) return r->cells[c].ns;
    return 0;
}

static void write_tables(const char *dir, rank_data **rk, size_t n) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) die("%s: cannot create: %s", dir, strerror(errno));
    for (size_t i = 0; i < n; i++) {
        const rank_data *r = rk[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/rank%d.csv", dir, r->t.rank);
        FILE *f = fopen(path, "w");
        if (!f) die("%s: cannot write: %s", path, strerror(errno));
        fputs("rank,step,step_ns,work_ns,wait_ns,region,region_ns,calls\n", f);
        for (size_t k = 0; k < r->nsteps; k++) {
            const rk_step *s = &r->steps[k];
            if (!s->ncell)
                fprintf(f, "%d,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",,0,0\n", r->t.rank, s->step, s->dur, s->work,
                        s->wait);
            for (size_t c = s->cell; c < s->cell + s->ncell; c++) {
                fprintf(f, "%d,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",", r->t.rank, s->step, s->dur, s->work, s->wait);
                const char *nm = r->cells[c].name;
                if (strpbrk(nm, ",\"\n\r")) {       /* quoted as CSV quotes */
                    fputc('"', f);
                    for (const char *p = nm; *p; p++) {
                        if (*p == '"') fputc('"', f);
                        fputc(*p, f);
                    }
                    fputc('"', f);
                } else {
                    fputs(nm, f);
                }
                fprintf(f, ",%" PRId64 ",%" PRId64 "\n", r->cells[c].ns, r->cells[c].calls);
            }
        }
        if (fclose(f) != 0) die("%s: cannot write: %s", path, strerror(errno));
    }
}

/* ---- per step ------------------------------------------------------------ */

typedef struct { int rank; double v; } rv;

static int cmp_rv(const void *a, const void *b) {
    const rv *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* p50, p99 and max with its rank of v (sorted), on one line. */
static void put_spread(const char *label, const rv *v, size_t n) {
    char a[32], b[32], c[32];
    if (!n) return;
    double *d = xrealloc(NULL, n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = v[i].v;
    size_t p99 = (99 * n + 99) / 100;            /* nearest rank: ceil(0.99 n) */
    printf("  %-20s p50 %10s  p99 %10s  max %10s (rank %d)\n", label, fmt_ns(a, sizeof a, median_of(d, n)),
           fmt_ns(b, sizeof b, d[p99 ? p99 - 1 : 0]), fmt_ns(c, sizeof c, v[n - 1].v), v[n - 1].rank);
    free(d);
}

/* ======================================================================== */
/*  prof ranks                                                              */
/* ======================================================================== */

static int cmp_rank_ptr(const void *a, const void *b) {
    const rank_data *x = *(rank_data *const *)a, *y = *(rank_data *const *)b;
    return x->t.rank < y->t.rank ? -1 : x->t.rank > y->t.rank;
}

static void say_hangs(rank_data **rk, size_t n) {
    int64_t step = -1;
    size_t left = n;
    int *members = xrealloc(NULL, n * sizeof *members);
    double *ns = xrealloc(NULL, n * sizeof *ns);
    int *done = xrealloc(NULL, n * sizeof *done);
    memset(done, 0, n * sizeof *done);
    for (size_t i = 0; i < n; i++)
        if (rk[i]->t.dump_step > step) step = rk[i]->t.dump_step;
    while (left) {                      /* the largest group first */
        size_t best = SIZE_MAX, best_n = 0;
        for (size_t i = 0; i < n; i++) {
            if (done[i]) continue;
            size_t k = 0;
            for (size_t j = 0; j < n; j++) k += !done[j] && rk[j]->hang_path == rk[i]->hang_path;
            if (k > best_n) best = i, best_n = k;
        }
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            if (!done[j] && rk[j]->hang_path == rk[best]->hang_path) {
                done[j] = 1;
                members[m] = rk[j]->t.rank;
                ns[m++] = (double)rk[j]->hang_ns;
            }
        left -= m;
        qsort(ns, m, sizeof *ns, cmp_double);
        char a[32];
        printf("hang");
        if (step >= 0) printf(" at step %" PRId64, step);
        if (m == 1) printf(": rank %d", members[0]);
        else printf(": %zu ranks", m);
        if (rk[best]->hang_path) printf(" in %s for %s", rk[best]->hang_path, fmt_ns(a, sizeof a, median_of(ns, m)));
        else printf(" inside no region");
        if (m > 1) {
            printf(" (ranks ");
            put_ranks(stdout, members, m);
            printf(")");
        }
        printf("\n");
    }
    free(members);
    free(ns);
    free(done);
}

static void say_steps(rank_data **rk, size_t n, double min_lag_ns, int min_lag_set) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++)
        if (rk[i]->nsteps) {
            if (rk[i]->steps[0].step < lo) lo = rk[i]->steps[0].step;
            if (rk[i]->steps[rk[i]->nsteps - 1].step > hi) hi = rk[i]->steps[rk[i]->nsteps - 1].step;
        }
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < rk[i]->ncells; c++) name_add(rk[i]->cells[c].name);
    if (lo > hi) {
        printf("no steps (ProfilerStep#N) in the traces: nothing to compare\n");
        return;
    }
    printf("%zu ranks, steps %" PRId64 " to %" PRId64 "\n", n, lo, hi);
    rv *v = xrealloc(NULL, n * sizeof *v);
    double *d = xrealloc(NULL, n * sizeof *d);
    size_t *named = xrealloc(NULL, n * sizeof *named), *wait_count = xrealloc(NULL, n * sizeof *wait_count);
    const char **wait_name = xrealloc(NULL, n * sizeof *wait_name);
    memset(named, 0, n * sizeof *named);
    size_t nsteps = 0;
    char a[32], b[32], c[32];
    for (int64_t st = lo; st <= hi; st++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (step_of(rk[i], st)) m++;
        if (!m) continue;
        nsteps++;
        printf("\nstep %" PRId64 "\n", st);
        if (n <= ALL_RANKS) {
            printf("  %-6s %10s %10s", "rank", "step", "work");
            for (size_t k = 0; k < g_nnames; k++) printf(" %12.12s", g_names[k]);
            printf("\n");
            for (size_t i = 0; i < n; i++) {
                const rk_step *s = step_of(rk[i], st);
                if (!s) continue;
                printf("  %-6d %10s %10s", rk[i]->t.rank, fmt_ns(a, sizeof a, (double)s->dur),
                       fmt_ns(b, sizeof b, (double)s->work));
                for (size_t k = 0; k < g_nnames; k++) printf(" %12s", fmt_ns(c, sizeof c, (double)cell_ns(rk[i], s, g_names[k])));
                printf("\n");
            }
        } else {
            for (int what = -2; what < (int)g_nnames; what++) {
                size_t q = 0;
                for (size_t i = 0; i < n; i++) {
                    const rk_step *s = step_of(rk[i], st);
                    if (!s) continue;
                    v[q].rank = rk[i]->t.rank;
                    v[q++].v = what == -2 ? (double)s->dur : what == -1 ? (double)s->work
                                                                       : (double)cell_ns(rk[i], s, g_names[what]);
                }
                qsort(v, q, sizeof *v, cmp_rv);
                put_spread(what == -2 ? "step" : what == -1 ? "work" : g_names[what], v, q);
            }
        }
        /* the straggler */
        size_t q = 0, worst = 0;
        for (size_t i = 0; i < n; i++) {
            const rk_step *s = step_of(rk[i], st);
            if (!s) continue;
            v[q].rank = (int)i;
            v[q++].v = (double)s->work;
        }
        qsort(v, q, sizeof *v, cmp_rv);
        for (size_t i = 0; i < q; i++) d[i] = v[i].v;
        double med = median_of(d, q);
        for (size_t i = 0; i < n; i++) {
            const rk_step *s = step_of(rk[i], st);
            if (s) d[worst++] = (double)s->dur;
        }
        qsort(d, worst, sizeof *d, cmp_double);
        double lim = min_lag_set ? min_lag_ns : dmax(1e6, median_of(d, worst) / 10);
        const rank_data *sr = rk[v[q - 1].rank];
        double lag = v[q - 1].v - med;
        if (q > 1 && lag >= lim) {
            named[v[q - 1].rank]++;
            printf("step %" PRId64 ": straggler rank %d: work %s, %s over the median of %zu ranks (%s)", st, sr->t.rank,
                   fmt_ns(a, sizeof a, v[q - 1].v), fmt_ns(b, sizeof b, lag), q, fmt_ns(c, sizeof c, med));
            /* where the others waited: the region most of them waited in */
            const char *in = NULL, *coll = NULL;
            size_t most = 0, nw = 0;
            for (size_t i = 0; i < n; i++) {
                const rk_step *o = step_of(rk[i], st);
                if (!o || !o->wait_in || rk[i] == sr) continue;
                size_t k = 0;
                while (k < nw && wait_name[k] != o->wait_in) k++;
                if (k == nw) wait_name[nw] = o->wait_in, wait_count[nw++] = 0;
                if (++wait_count[k] > most) most = wait_count[k], in = o->wait_in;
            }
            for (size_t i = 0; in && i < n && !coll; i++) {   /* NCCL's collective in it, where recorded */
                const rk_step *o = step_of(rk[i], st);
                if (o && o->wait_in == in && rk[i] != sr) coll = o->wait_coll;
            }
            if (in) printf("; the others waited in %s", in);
            if (coll && coll != in) printf(" (NCCL: %s)", coll);
            else if (coll) printf(" (NCCL)");
            printf("\n");
        } else if (q > 1) {
            printf("step %" PRId64 ": no straggler (the most work: rank %d, %s over the median)\n", st, sr->t.rank,
                   fmt_ns(a, sizeof a, lag > 0 ? lag : 0));
        }
    }

    /* ---- summary ---- */
    printf("\nsummary: %zu ranks, %zu steps\n", n, nsteps);
    printf("  persistent stragglers:");
    int any = 0;
    for (size_t i = 0; i < n; i++)
        if (named[i] >= 2 && 4 * named[i] >= nsteps) {
            printf("%s rank %d (%zu of %zu steps)", any ? "," : "", rk[i]->t.rank, named[i], nsteps);
            any = 1;
        }
    printf("%s\n", any ? "" : " none");
    printf("  mean time per step across the ranks:\n");
    for (int what = -2; what < (int)g_nnames; what++) {
        size_t q = 0;
        for (size_t i = 0; i < n; i++) {
            const rank_data *r = rk[i];
            if (!r->nsteps) continue;
            double sum = 0;
            for (size_t k = 0; k < r->nsteps; k++) {
                const rk_step *s = &r->steps[k];
                sum += what == -2 ? (double)s->dur : what == -1 ? (double)s->work : (double)cell_ns(r, s, g_names[what]);
            }
            v[q].rank = r->t.rank;
            v[q++].v = sum / (double)r->nsteps;
        }
        qsort(v, q, sizeof *v, cmp_rv);
        const char *label = what == -2 ? "step" : what == -1 ? "work" : g_names[what];
        put_spread(label, v, q);
        /* outliers: further from the median than 5 MADs and a tenth of it */
        for (size_t i = 0; i < q; i++) d[i] = v[i].v;
        double med = median_of(d, q);
        for (size_t i = 0; i < q; i++) d[i] = dabs(v[i].v - med);
        qsort(d, q, sizeof *d, cmp_double);
        double mad = median_of(d, q), lim = dmax(5 * mad, med / 10);
        int first = 1;
        for (size_t i = 0; i < q; i++) {
            if (dabs(v[i].v - med) <= lim || dabs(v[i].v - med) < 1000) continue;
            printf("%s rank %d %s (%.2fx the median)", first ? "    outliers:" : ",", v[i].rank,
                   fmt_ns(a, sizeof a, v[i].v), med > 0 ? v[i].v / med : 0.0);
            first = 0;
        }
        if (!first) printf("\n");
    }
    free(v);
    free(d);
    free(named);
    free(wait_count);
    free(wait_name);
}

int cmd_ranks(int argc, char **argv) {
    const char *table_dir = NULL, *subset = NULL;
    double min_lag_ms = 0;
    int min_lag_set = 0, options = 1;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (options && a[0] == '-' && a[1]) {
            if (!strcmp(a, "--")) {
                options = 0;
            } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
                fputs(ranks_usage, stdout);
                return 0;
            } else if (!strcmp(a, "--table-out") || !strcmp(a, "--ranks") || !strcmp(a, "--min-lag") || !strcmp(a, "-j")) {
                if (i + 1 >= argc) die("%s needs a value (prof ranks --help)", a);
                const char *v = argv[++i];
                char *e;
                if (!strcmp(a, "--table-out")) table_dir = v;
                else if (!strcmp(a, "--ranks")) {
                    if (!rank_listed(v, -1)) die("--ranks needs a list of ranks: 0-7,37");
                    subset = v;
                } else if (!strcmp(a, "--min-lag")) {
                    min_lag_ms = strtod(v, &e);
                    if (e == v || *e || !(min_lag_ms >= 0)) die("--min-lag needs milliseconds: --min-lag 5");
                    min_lag_set = 1;
                } else {
                    jobs = strtol(v, &e, 10);
                    if (e == v || *e || jobs < 1) die("-j needs a number of threads");
                }
            } else {
                die("unknown option '%s' (prof ranks --help shows the usage)", a);
            }
            continue;
        }
        struct stat st;
        if (stat(a, &st) == 0 && S_ISDIR(st.st_mode)) add_dir(a);
        else add_path(a);
    }
    if (!g_nrk) die("no traces (usage: prof ranks [--table-out DIR] TRACE... | DIR)");
    if (jobs > MAX_JOBS) jobs = MAX_JOBS;
    if (jobs < 1) jobs = 1;
    for (size_t i = 0; subset && i < g_nrk; i++)    /* the others' headers only */
        g_rk[i].skip = trace_rank(&g_rk[i].t) && !rank_listed(subset, g_rk[i].t.rank);
    read_all((int)jobs);

    /* the ranks in order, each once: the dumps apart */
    rank_data **run = xrealloc(NULL, g_nrk * sizeof *run), **dumps = xrealloc(NULL, g_nrk * sizeof *dumps);
    size_t nrun = 0, ndump = 0;
    for (size_t i = 0; i < g_nrk; i++) {
        rank_data *r = &g_rk[i];
        if (r->skip || (subset && !rank_listed(subset, r->t.rank))) continue;
        if (r->dump) dumps[ndump++] = r;
        else run[nrun++] = r;
    }
    for (int pass = 0; pass < 2; pass++) {
        rank_data **v = pass ? dumps : run;
        size_t n = pass ? ndump : nrun;
        if (n) qsort(v, n, sizeof *v, cmp_rank_ptr);
        for (size_t i = 1; i < n; i++)
            if (v[i]->t.rank == v[i - 1]->t.rank)
                die("%s and %s are both rank %d", v[i - 1]->t.path, v[i]->t.path, v[i]->t.rank);
    }
    if (!nrun && !ndump) die("no trace is of a rank in --ranks %s", subset);
    if (nrun) say_steps(run, nrun, min_lag_ms * 1e6, min_lag_set);
    if (ndump) {
        if (nrun) printf("\n");
        say_hangs(dumps, ndump);
    }
    if (table_dir && nrun) write_tables(table_dir, run, nrun);
    if (fflush(stdout) != 0) die("cannot write: %s", strerror(errno));

    free(run);
    free(dumps);
    for (size_t i = 0; i < g_nrk; i++) rank_free(&g_rk[i]);
    free(g_rk);
    g_rk = NULL;
    g_nrk = 0;
    for (size_t i = 0; i < g_npaths; i++) free(g_paths[i]);
    free(g_paths);
    g_paths = NULL;
    g_npaths = 0;
    free(g_names);
    g_names = NULL;
    g_nnames = 0;
    json_free();
    pf_free();
    return 0;
}

const char ranks_usage[] =
    "usage: prof ranks [--min-lag MS] [--table-out DIR] [--ranks LIST] [-j N] TRACE... | DIR\n"
    "\n"
    "Reads the ranks' traces of a distributed run (.json, .json.gz, .pftrace; DIR:\n"
    "every one in it), N at a time (default: the cores, at most 8), each through a\n"
    "bounded window, and says per step each rank's step time and time in each\n"
    "top-level region and which rank straggled: the one whose work before the\n"
    "step's sync point (PROF_SYNC) ran longest while the others waited, when it\n"
    "ran --min-lag MS over the median (default: 1 ms or a tenth of the median step\n"
    "time), and where the others waited (and NCCL's collective in it, where the\n"
    "run had prof run's NVTX capture); then the persistent stragglers and the spread of each region across\n"
    "the ranks (p50, p99, max and its rank) with the outliers. Hang dumps (a\n"
    "watchdog's, PROF_WATCHDOG) are grouped by what each rank is inside.\n"
    "\n"
    "  --table-out DIR  also write DIR/rank<r>.csv: one row per rank, step and\n"
    "                   top-level region (rank,step,step_ns,work_ns,wait_ns,\n"
    "                   region,region_ns,calls), for DuckDB, pandas, Spark, Dask\n"
    "  --ranks LIST     only these ranks: 0-7,37\n"
    "  --min-lag MS     how far over the median a straggler's work must run\n"
    "  -j N             read N traces at a time\n"
    "\n"
    "Exit status: 0 done, 2 error (one line on stderr says why).\n";
