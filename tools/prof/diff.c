/* diff.c - prof diff: two saved traces (any format each) read as prof table
   reads one (table_cycle), their tables matched by region name: calls, self
   and total time in both, and the change, where the time went first. With
   --fail-over, exit status 1 when a region slowed by more than that: a
   check for CI. */
#include "tool.h"

#include <stdlib.h>
#include <string.h>

/* prof diff: the rows of two tables by name. */
typedef struct {
    const char *name;
    const prof_row *a, *b;              /* base's, new's; NULL: not in it */
    int64_t dself, dtotal;
} delta;

static double pct(int64_t d, int64_t base) { return base ? 100.0 * (double)d / (double)base : 0.0; }
static double absd(double v) { return v < 0 ? -v : v; }

static int delta_cmp(const void *pa, const void *pb) {
    const delta *a = (const delta *)pa, *b = (const delta *)pb;
    if (a->dself != b->dself) return a->dself > b->dself ? -1 : 1;    /* where the time went first */
    if (a->dtotal != b->dtotal) return a->dtotal > b->dtotal ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int pct_arg(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || (*end && strcmp(end, "%")) || !(v >= 0)) return 0;
    *out = v;
    return 1;
}

/* prof diff BASE NEW [--min-change PCT] [--fail-over PCT]: per region (by
   name), calls, self and total time in both, their change, the rows sorted
   by the change of self time (where the time went). A row that changed less
   than --min-change (default 5%) in both self and total time is left out.
   With --fail-over, exit status 1 when a region of both traces grew in
   total time by more than that, each named on stderr. */
int cmd_diff(int argc, char **argv) {
    double min_change = 5.0, fail_over = -1.0;
    const char *path[2] = { NULL, NULL };
    int np = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--min-change") && i + 1 < argc) {
            if (!pct_arg(argv[++i], &min_change)) die("--min-change '%s' is not a percentage", argv[i]);
        } else if (!strcmp(argv[i], "--fail-over") && i + 1 < argc) {
            if (!pct_arg(argv[++i], &fail_over)) die("--fail-over '%s' is not a percentage", argv[i]);
        } else if (argv[i][0] == '-' || np == 2) {
            die("usage: prof diff BASE NEW [--min-change PCT] [--fail-over PCT]");
        } else {
            path[np++] = argv[i];
        }
    }
    if (np != 2) die("usage: prof diff BASE NEW [--min-change PCT] [--fail-over PCT]");
    prof_table tab[2];
    for (int k = 0; k < 2; k++) {
        const prof_cycle *cy = table_cycle(k, trace_open(path[k], k));
        if (!prof_cycle_table(cy, PROF_SORT_NAME, 0, &tab[k])) die("%s: out of memory", path[k]);
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
        d[nd++] = (delta){ a ? a->name : b->name, a, b, (b ? b->self_ns : 0) - (a ? a->self_ns : 0),
                               (b ? b->total_ns : 0) - (a ? a->total_ns : 0) };
    }
    qsort(d, nd, sizeof *d, delta_cmp);
    printf("%-40s  %9s  %9s  %12s  %12s  %12s  %9s  %12s  %12s  %9s\n", "Name", "Calls", "New calls", "Self base",
           "Self new", "Self change", "Self %", "Total base", "Total new", "Total %");
    int failed = 0;
    size_t hidden = 0;
    for (size_t k = 0; k < nd; k++) {
        const delta *x = &d[k];
        double ps = pct(x->dself, x->a ? x->a->self_ns : 0), pt = pct(x->dtotal, x->a ? x->a->total_ns : 0);
        if (x->a && x->b && absd(ps) < min_change && absd(pt) < min_change) { hidden++; continue; }
        char sb[32], sn[32], sd[32], tb[32], tn[32], cut[48];
        tool_fmt_time(sb, sizeof sb, x->a ? (double)x->a->self_ns : 0.0);
        tool_fmt_time(sn, sizeof sn, x->b ? (double)x->b->self_ns : 0.0);
        tool_fmt_time(sd + 1, sizeof sd - 1, absd((double)x->dself));
        sd[0] = x->dself < 0 ? '-' : '+';
        tool_fmt_time(tb, sizeof tb, x->a ? (double)x->a->total_ns : 0.0);
        tool_fmt_time(tn, sizeof tn, x->b ? (double)x->b->total_ns : 0.0);
        char pss[16], pts[16];
        if (x->a && x->b) {
            snprintf(pss, sizeof pss, "%+.2f%%", ps);
            snprintf(pts, sizeof pts, "%+.2f%%", pt);
        } else {
            snprintf(pss, sizeof pss, "%s", x->a ? "gone" : "new");
            snprintf(pts, sizeof pts, "%s", pss);
        }
        printf("%-40s  %9llu  %9llu  %12s  %12s  %12s  %9s  %12s  %12s  %9s\n", tool_cut(cut, x->name, 40),
               (unsigned long long)(x->a ? x->a->calls : 0), (unsigned long long)(x->b ? x->b->calls : 0), sb, sn,
               sd, pss, tb, tn, pts);
        if (fail_over >= 0 && x->a && x->b && pt > fail_over) {
            note("'%s' slowed by %.2f%% in total time (%s to %s), over %.2f%%", x->name, pt, tb, tn, fail_over);
            failed = 1;
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
