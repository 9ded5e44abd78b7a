/* diff.c - prof diff: two saved traces (any format each) read as prof table
   reads one (table_cycle), their tables matched by region name: calls, self
   and total time in both, and the change, where the time went first. With
   --fail-over, exit status 1 when a region slowed by more than that: a
   check for CI. With group=function, PROF_SAMPLE's self samples per
   function and their shares in both. */
#include "tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* prof diff: the rows of two tables by name, and the U test of their calls. */
typedef struct {
    const char *name;
    const prof_row *a, *b;              /* base's, new's; NULL: not in it */
    int64_t dself, dtotal;
    double p;                           /* the U test's two-sided p; 1: not tested */
    int tested;                         /* both have calls enough for p < ALPHA to be possible */
} delta;

#define ALPHA 0.05                      /* a change is significant below this p */

static double pct(int64_t d, int64_t base) { return base ? 100.0 * (double)d / (double)base : 0.0; }
static double absd(double v) { return v < 0 ? -v : v; }

static int delta_cmp(const void *pa, const void *pb) {
    const delta *a = (const delta *)pa, *b = (const delta *)pb;
    if (a->dself != b->dself) return a->dself > b->dself ? -1 : 1;    /* where the time went first */
    if (a->dtotal != b->dtotal) return a->dtotal > b->dtotal ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* ---- the U test (Mann-Whitney) ------------------------------------------ */
/* Whether one run's calls of a region are slower than the other's, or only
   their totals differ by chance: a few calls held up by a loaded machine
   move a total by 50% and leave the ranks of the calls nearly where they
   were; a region made 3x slower moves every rank. The normal approximation
   of U, with the correction for ties and for continuity; two-sided p. */

typedef struct { const char *name; int64_t ns; } call;

static int call_cmp(const void *pa, const void *pb) {
    const call *a = pa, *b = pb;
    int c = strcmp(a->name, b->name);
    return c ? c : a->ns < b->ns ? -1 : a->ns > b->ns;
}

/* Every region's and step's duration in cy, by name (steps as the table's
   "ProfilerStep*"), then by duration. */
static call *calls_of(const prof_cycle *cy, size_t *n) {
    size_t m = prof_cycle_event_count(cy), k = 0;
    call *v = xrealloc(NULL, (m + 1) * sizeof *v);
    for (size_t i = 0; i < m; i++) {
        prof_event e;
        if (!prof_cycle_event(cy, i, &e) || (e.kind != PROF_EVENT_REGION && e.kind != PROF_EVENT_STEP)) continue;
        v[k++] = (call){ e.kind == PROF_EVENT_STEP ? "ProfilerStep*" : e.name, e.dur_ns };
    }
    qsort(v, k, sizeof *v, call_cmp);
    *n = k;
    return v;
}

/* The calls named name: v[*first, return). */
static size_t calls_named(const call *v, size_t n, const char *name, size_t *first) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(v[mid].name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    *first = lo;
    while (hi < n && !strcmp(v[hi].name, name)) hi++;
    return hi;
}

static double two_sided(double z) { return erfc(z / sqrt(2.0)); }

/* a[na] and b[nb], each sorted: the two-sided p that they come from one
   distribution; *p_min: the least p samples of these sizes can give. */
static double u_test(const call *a, size_t na, const call *b, size_t nb, double *p_min) {
    double n1 = (double)na, n2 = (double)nb, n = n1 + n2;
    *p_min = 1.0;
    if (!na || !nb) return 1.0;
    *p_min = two_sided((n1 * n2 / 2 - 0.5) / sqrt(n1 * n2 * (n + 1) / 12));
    double r1 = 0, ties = 0;
    size_t i = 0, j = 0, pos = 0;
    while (i < na || j < nb) {          /* a merge, a run of equal values at a time */
        int64_t v = j >= nb || (i < na && a[i].ns <= b[j].ns) ? a[i].ns : b[j].ns;
        size_t ca = 0, cb = 0;
        while (i < na && a[i].ns == v) i++, ca++;
        while (j < nb && b[j].ns == v) j++, cb++;
        double t = (double)(ca + cb), mid = (double)pos + (t + 1) / 2;   /* ranks from 1: their mean */
        r1 += (double)ca * mid;
        ties += t * t * t - t;
        pos += ca + cb;
    }
    double u = r1 - n1 * (n1 + 1) / 2, mu = n1 * n2 / 2;
    double var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
    if (var <= 0) return 1.0;           /* every call alike */
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    return z <= 0 ? 1.0 : two_sided(z);
}

/* The rows of base and new matched by name, each tested, where the time
   went first; tab[] holds the rows they point to. */
static delta *diff_rows(trace *tr[2], prof_table tab[2], size_t *count) {
    call *calls[2];
    size_t ncalls[2];
    for (int k = 0; k < 2; k++) {
        const prof_cycle *cy = table_cycle(k, tr[k]);
        if (!prof_cycle_table(cy, PROF_SORT_NAME, 0, &tab[k])) die("%s: out of memory", tr[k]->path);
        calls[k] = calls_of(cy, &ncalls[k]);
    }
    delta *d = xrealloc(NULL, (tab[0].n + tab[1].n + 1) * sizeof *d);
    size_t nd = 0, i = 0, j = 0;
    while (i < tab[0].n || j < tab[1].n) {      /* both sorted by name: a merge */
        const prof_row *a = i < tab[0].n ? &tab[0].rows[i] : NULL, *b = j < tab[1].n ? &tab[1].rows[j] : NULL;
        int c = !a ? 1 : !b ? -1 : strcmp(a->name, b->name);
        if (c < 0) b = NULL;
        if (c > 0) a = NULL;
        i += a != NULL;
        j += b != NULL;
        delta *x = &d[nd++];
        *x = (delta){ a ? a->name : b->name, a, b, (b ? b->self_ns : 0) - (a ? a->self_ns : 0),
                      (b ? b->total_ns : 0) - (a ? a->total_ns : 0), 1.0, 0 };
        if (a && b) {
            size_t fa, fb, ea = calls_named(calls[0], ncalls[0], x->name, &fa),
                           eb = calls_named(calls[1], ncalls[1], x->name, &fb);
            double p_min;
            x->p = u_test(calls[0] + fa, ea - fa, calls[1] + fb, eb - fb, &p_min);
            x->tested = p_min < ALPHA;
        }
    }
    qsort(d, nd, sizeof *d, delta_cmp);
    free(calls[0]);
    free(calls[1]);
    *count = nd;
    return d;
}

/* The p column: "--" where the calls are too few to test. */
static void fmt_p(char *o, size_t cap, const delta *x) {
    if (!x->tested) snprintf(o, cap, "--");
    else if (x->p < 0.0001) snprintf(o, cap, "<0.0001");
    else snprintf(o, cap, "%.4f", x->p);
}

/* Over the threshold and, where the calls are enough to tell, significant. */
static int slowed(const delta *x, double pt, double fail_over) {
    return fail_over >= 0 && x->a && x->b && pt > fail_over && (!x->tested || x->p < ALPHA);
}

static int pct_arg(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end && strcmp(end, "%")) || !(v >= 0)) return 0;
    *out = v;
    return 1;
}

/* A row's cells as prof diff prints them (and prof report --diff shows):
   calls, new calls, self base, new, change, %, total base, new, %, p. */
enum { C_CALLS, C_NCALLS, C_SB, C_SN, C_SD, C_SP, C_TB, C_TN, C_TP, C_P, C_COUNT };
typedef char diff_cells[C_COUNT][32];

static void row_cells(const delta *x, diff_cells c) {
    double ps = pct(x->dself, x->a ? x->a->self_ns : 0), pt = pct(x->dtotal, x->a ? x->a->total_ns : 0);
    snprintf(c[C_CALLS], sizeof c[0], "%llu", (unsigned long long)(x->a ? x->a->calls : 0));
    snprintf(c[C_NCALLS], sizeof c[0], "%llu", (unsigned long long)(x->b ? x->b->calls : 0));
    tool_fmt_time(c[C_SB], sizeof c[0], x->a ? (double)x->a->self_ns : 0.0);
    tool_fmt_time(c[C_SN], sizeof c[0], x->b ? (double)x->b->self_ns : 0.0);
    tool_fmt_time(c[C_SD] + 1, sizeof c[0] - 1, absd((double)x->dself));
    c[C_SD][0] = x->dself < 0 ? '-' : '+';
    tool_fmt_time(c[C_TB], sizeof c[0], x->a ? (double)x->a->total_ns : 0.0);
    tool_fmt_time(c[C_TN], sizeof c[0], x->b ? (double)x->b->total_ns : 0.0);
    if (x->a && x->b) {
        snprintf(c[C_SP], sizeof c[0], "%+.2f%%", ps);
        snprintf(c[C_TP], sizeof c[0], "%+.2f%%", pt);
    } else {
        snprintf(c[C_SP], sizeof c[0], "%s", x->a ? "gone" : "new");
        snprintf(c[C_TP], sizeof c[0], "%s", x->a ? "gone" : "new");
    }
    fmt_p(c[C_P], sizeof c[0], x);
}

/* ---- group=function: PROF_SAMPLE's self samples per function ----------- */
/* Each trace's samples (samples.c), named from its own mappings: per
   function, the samples whose innermost frame it is and their share of the
   trace's samples, in both; sorted by the change of share, where the CPU
   time went first. Shares, not counts, compare runs of different lengths. */

typedef struct { const char *name; long n[2]; double share[2]; } fdelta;
typedef struct { fdelta *v; size_t n; int k; long all[2]; } ftally;

static void tally(const tool_sample *s, void *ctx) {
    ftally *t = ctx;
    if (!s->n) return;
    t->all[t->k]++;
    for (size_t i = 0; i < t->n; i++)         /* names are interned: one text, one pointer */
        if (t->v[i].name == s->frame[0]) {
            t->v[i].n[t->k]++;
            return;
        }
    t->v = xrealloc(t->v, (t->n + 1) * sizeof *t->v);
    t->v[t->n++] = (fdelta){ s->frame[0], { t->k == 0, t->k == 1 }, { 0, 0 } };
}

static int fdelta_cmp(const void *pa, const void *pb) {
    const fdelta *a = pa, *b = pb;
    double da = a->share[1] - a->share[0], db = b->share[1] - b->share[0];
    if (da != db) return da > db ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int diff_functions(const char *path[2], double min_change) {
    ftally t = { NULL, 0, 0, { 0, 0 } };
    for (t.k = 0; t.k < 2; t.k++) {
        trace *tr = trace_open(path[t.k], t.k);
        if (!samples_each(tr, tally, &t))
            die("%s: no samples in this trace (%s)", path[t.k],
                tr->pf ? "group=function reads the samples of a JSON trace" : "it was recorded without PROF_SAMPLE");
    }
    for (size_t i = 0; i < t.n; i++)
        for (int k = 0; k < 2; k++) t.v[i].share[k] = t.all[k] ? 100.0 * (double)t.v[i].n[k] / (double)t.all[k] : 0;
    if (t.n) qsort(t.v, t.n, sizeof *t.v, fdelta_cmp);
    printf("%-48s  %12s  %10s  %12s  %10s  %12s\n", "function (self)", "samples base", "share base", "samples new",
           "share new", "share change");
    size_t hidden = 0;
    for (size_t i = 0; i < t.n; i++) {
        const fdelta *x = &t.v[i];
        double d = x->share[1] - x->share[0];
        if (absd(d) < min_change) { hidden++; continue; }
        printf("%-48s  %12ld  %9.1f%%  %12ld  %9.1f%%  %+11.1f%%\n", x->name, x->n[0], x->share[0], x->n[1],
               x->share[1], d);                 /* names whole, as prof table group=function prints them */
    }
    if (hidden) printf("(%zu function%s whose share changed by less than %.2f points: left out; --min-change 0 shows all)\n",
                       hidden, hidden == 1 ? "" : "s", min_change);
    printf("%ld samples in base, %ld in new\n", t.all[0], t.all[1]);
    free(t.v);
    traces_free();
    return 0;
}

/* prof diff BASE NEW [--min-change PCT] [--fail-over PCT]: per region (by
   name), calls, self and total time in both, their change, the rows sorted
   by the change of self time (where the time went). A row that changed less
   than --min-change (default 5%) in both self and total time is left out.
   With --fail-over, exit status 1 when a region of both traces grew in
   total time by more than that, each named on stderr. With group=function,
   PROF_SAMPLE's self samples per function instead (diff_functions), a row
   left out when its share moved by less than --min-change points. */
int cmd_diff(int argc, char **argv) {
    double min_change = 5.0, fail_over = -1.0;
    const char *path[2] = { NULL, NULL };
    int np = 0, functions = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "group=function") || !strcmp(argv[i], "--group=function")) {
            functions = 1;
        } else if (!strcmp(argv[i], "--min-change") && i + 1 < argc) {
            if (!pct_arg(argv[++i], &min_change)) die("--min-change '%s' is not a percentage", argv[i]);
        } else if (!strcmp(argv[i], "--fail-over") && i + 1 < argc) {
            if (!pct_arg(argv[++i], &fail_over)) die("--fail-over '%s' is not a percentage", argv[i]);
        } else if (argv[i][0] == '-' || np == 2) {
            die("usage: prof diff BASE NEW [group=function] [--min-change PCT] [--fail-over PCT]");
        } else {
            path[np++] = argv[i];
        }
    }
    if (np != 2) die("usage: prof diff BASE NEW [group=function] [--min-change PCT] [--fail-over PCT]");
    if (functions && fail_over >= 0) die("--fail-over checks regions' times: not with group=function");
    if (functions) return diff_functions(path, min_change);
    for (int k = 0; k < 2; k++) trace_open(path[k], k);
    trace *tr[2] = { &g_tr[0], &g_tr[1] };
    prof_table tab[2];
    size_t nd;
    delta *d = diff_rows(tr, tab, &nd);
    printf("%-40s  %9s  %9s  %12s  %12s  %12s  %9s  %12s  %12s  %9s  %9s\n", "Name", "Calls", "New calls", "Self base",
           "Self new", "Self change", "Self %", "Total base", "Total new", "Total %", "p");
    int failed = 0;
    size_t hidden = 0;
    for (size_t k = 0; k < nd; k++) {
        const delta *x = &d[k];
        double ps = pct(x->dself, x->a ? x->a->self_ns : 0), pt = pct(x->dtotal, x->a ? x->a->total_ns : 0);
        if (x->a && x->b && absd(ps) < min_change && absd(pt) < min_change) { hidden++; continue; }
        diff_cells c;
        char cut[48];
        row_cells(x, c);
        printf("%-40s  %9s  %9s  %12s  %12s  %12s  %9s  %12s  %12s  %9s  %9s\n", tool_cut(cut, x->name, 40),
               c[C_CALLS], c[C_NCALLS], c[C_SB], c[C_SN], c[C_SD], c[C_SP], c[C_TB], c[C_TN], c[C_TP], c[C_P]);
        if (slowed(x, pt, fail_over)) {
            note("'%s' slowed by %.2f%% in total time (%s to %s), over %.2f%%, %s", x->name, pt, c[C_TB], c[C_TN],
                 fail_over, x->tested ? "significant (U test)" : "too few calls to test");
            failed = 1;
        } else if (fail_over >= 0 && x->a && x->b && pt > fail_over) {
            note("'%s' grew by %.2f%% in total time (%s to %s), but not significantly (U test p = %.3g): not failed",
                 x->name, pt, c[C_TB], c[C_TN], x->p);
        }
    }
    if (hidden) printf("(%zu region%s changed by less than %.2f%%: left out; --min-change 0 shows all)\n", hidden,
                       hidden == 1 ? "" : "s", min_change);
    free(d);
    for (int k = 0; k < 2; k++) prof_table_free(&tab[k]);
    table_free();
    traces_free();
    return failed;
}

/* prof report --diff: the rows as JSON, for the page (report.c). */
void diff_json(tool_out *o, trace *base, trace *new_) {
    trace *tr[2] = { base, new_ };
    prof_table tab[2];
    size_t nd;
    delta *d = diff_rows(tr, tab, &nd);
    char head[64];
    tool_out_put(o, head, (size_t)snprintf(head, sizeof head, "{\"alpha\":%g,\"rows\":[", ALPHA));
    for (size_t k = 0; k < nd; k++) {     /* [name, in base, in new, change of total %, p, tested, cells...] */
        const delta *x = &d[k];
        diff_cells c;
        char b[128];
        row_cells(x, c);
        if (k) tool_out_put(o, ",", 1);
        tool_out_put(o, "[", 1);
        tool_out_json_str(o, x->name);
        int n = snprintf(b, sizeof b, ",%d,%d,%.6g,%.6g,%d", x->a != NULL, x->b != NULL,
                         pct(x->dtotal, x->a ? x->a->total_ns : 0), x->p, x->tested);
        tool_out_put(o, b, (size_t)n);
        for (int i = 0; i < C_COUNT; i++) {
            tool_out_put(o, ",", 1);
            tool_out_json_str(o, c[i]);
        }
        tool_out_put(o, "]", 1);
    }
    tool_out_put(o, "]}", 2);
    free(d);
    for (int k = 0; k < 2; k++) prof_table_free(&tab[k]);
}
