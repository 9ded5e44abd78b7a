/* functions.c - prof table TRACE group=function: where a run's CPU time went
   inside its regions, from the samples PROF_SAMPLE kept (a JSON trace's
   prof_samples key, prof.h's >>sample): per region, the samples whose
   innermost frame is each function (its self samples) and their share of
   the region's, the functions named from the ELF files' symbols
   (samples.c, symbols.c). */
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *region, *function; long n; } frow;

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
    (*rows)[*nr].function = function;
    (*rows)[*nr].n = 1;
    (*nr)++;
}

typedef struct { frow *rows; size_t nr; long all; } ftab;

static void one(const tool_sample *s, void *ctx) {
    ftab *f = ctx;
    if (!s->n) return;
    add(&f->rows, &f->nr, s->region ? s->region : "(none)", s->frame[0]);
    f->all++;
}

int table_functions(const char *path, size_t limit) {
    ftab ft = { NULL, 0, 0 };
    trace *t = trace_open(path, 0);
    if (!samples_each(t, one, &ft))
        die("%s: no samples in this trace (%s)", path,
            t->pf ? "group=function reads the samples of a JSON trace" : "it was recorded without PROF_SAMPLE");
    frow *rows = ft.rows;
    size_t nr = ft.nr;
    long all = ft.all;
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
    free(rows);
    traces_free();
    return 0;
}
