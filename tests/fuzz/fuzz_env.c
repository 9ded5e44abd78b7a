/* fuzz_env: a libFuzzer target for prof.h's parsers of the environment.

   Every PROF_* variable is text from outside the program, parsed at init.
   The first input byte picks the parser (and, for the path templates, the
   rank); the rest of the input is the variable's value, as a NUL-terminated
   string in a buffer of exactly its size, so that AddressSanitizer sees a
   read past the terminator. Besides crashes, undefined behaviour and leaks
   (the sanitizers), each parser's promises are checked and a broken one is an
   abort():

     0 PROF_SCHEDULE  prof__parse_schedule: an accepted schedule has fields
                      >= 0, active >= 1, wait + warmup + active <= INT_MAX,
                      and reads back the same from its canonical spelling; a
                      refused one leaves *out alone.
     1 PROF_TABLE     prof__parse_table_spec: the fields in their ranges, the
                      same from the canonical spelling, refused: untouched.
     2 PROF_RANKS     prof__rank_in: -1, 0 or 1; a list malformed for one rank
                      is malformed for all; every number a valid list names is
                      in it.
     3 PROF_BUFFER_MB prof__parse_uint: 0 to INT_MAX, its decimal digits,
                      the same from "%ld"; refused: untouched.
     4 PROF_OUTPUT    prof__expand_path, for cycles -1 and 3, with and without
                      a schedule: exactly what a plain unbounded expansion
                      gives when that fits PROF__PATH, else 0 and "".
     5 any value      prof__q, which quotes every value a message shows: one
                      line, shorter than PROF__QUOTE.

   Build (tests/fuzz/CMakeLists.txt does this under PROF_SANITIZE=address,...):
     clang -g -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_env.c tools/impl_private.c -lpthread
   Messages the parsers print (prof__msg) go to /dev/null unless
   PROF_FUZZ_VERBOSE is set. */
#define _POSIX_C_SOURCE 200809L   /* strnlen under -std=c11 */
#include "../../tools/impl_private.h"   /* the parsers, in the copy it links (instrumented as
                                              this file is: the fuzzer sees their branches) */

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise: say which, and abort (libFuzzer saves the input). */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_env: %s:%d: promise broken: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ---- 0: PROF_SCHEDULE ---------------------------------------------------- */

static int same_schedule(const prof_schedule *a, const prof_schedule *b) {
    return a->skip_first == b->skip_first && a->wait == b->wait && a->warmup == b->warmup &&
           a->active == b->active && a->repeat == b->repeat;
}

static void fuzz_schedule(const char *s) {
    const prof_schedule untouched = { -7, -7, -7, -7, -7 };
    prof_schedule r = untouched;
    if (!prof__parse_schedule(s, &r)) {
        FUZZ_CHECK(same_schedule(&r, &untouched));
        return;
    }
    FUZZ_CHECK(r.skip_first >= 0 && r.wait >= 0 && r.warmup >= 0 && r.repeat >= 0);
    FUZZ_CHECK(r.active >= 1);
    FUZZ_CHECK((long long)r.wait + r.warmup + r.active <= INT_MAX);
    /* the canonical spelling of what was read reads back the same */
    char again[256];
    prof_schedule r2 = untouched;
    snprintf(again, sizeof again, "skip_first=%d,wait=%d,warmup=%d,active=%d,repeat=%d", r.skip_first, r.wait,
             r.warmup, r.active, r.repeat);
    FUZZ_CHECK(prof__parse_schedule(again, &r2));
    FUZZ_CHECK(same_schedule(&r, &r2));
}

/* ---- 1: PROF_TABLE ------------------------------------------------------- */

/* One spelling of each prof_sort, in the enum's order. */
static const char *const sort_names[] = {
    "self_cpu", "cpu_total", "cpu_avg", "cpu_min", "cpu_max", "calls", "flops", "name",
    "self_gpu", "gpu_total", "gpu_avg", "cpu_mem", "self_cpu_mem", "gpu_mem", "self_gpu_mem",
};
static const char *const group_names[] = { "name", "args", "thread", "args+thread" };   /* by PROF_GROUP_* bits */

static void fuzz_table(const char *s) {
    const prof_sort sort0 = (prof_sort)99;
    const size_t rows0 = 12345678;
    prof_sort sort = sort0;
    size_t rows = rows0;
    int group = -7, all = -7;
    if (!prof__parse_table_spec(s, &sort, &rows, &group, &all)) {
        FUZZ_CHECK(sort == sort0 && rows == rows0 && group == -7 && all == -7);
        return;
    }
    /* a sort past the table: prof_sort grew and sort_names above did not */
    FUZZ_CHECK((size_t)sort < sizeof sort_names / sizeof sort_names[0]);
    FUZZ_CHECK(rows <= INT_MAX);
    FUZZ_CHECK(group >= 0 && group <= (PROF_GROUP_ARGS | PROF_GROUP_THREAD));
    FUZZ_CHECK(all == 0 || all == 1);

    /* all_ranks may be NULL (the table of a single process): same answer */
    prof_sort sort2 = sort0;
    size_t rows2 = rows0;
    int group2 = -7, all2 = -7;
    FUZZ_CHECK(prof__parse_table_spec(s, &sort2, &rows2, &group2, NULL));
    FUZZ_CHECK(sort2 == sort && rows2 == rows && group2 == group);

    /* the canonical spelling reads back the same */
    char again[256];
    snprintf(again, sizeof again, "sort=%s,rows=%zu,group=%s,ranks=%s", sort_names[sort], rows, group_names[group],
             all ? "all" : "0");
    sort2 = sort0, rows2 = rows0, group2 = -7, all2 = -7;
    FUZZ_CHECK(prof__parse_table_spec(again, &sort2, &rows2, &group2, &all2));
    FUZZ_CHECK(sort2 == sort && rows2 == rows && group2 == group && all2 == all);
}

/* ---- 2: PROF_RANKS ------------------------------------------------------- */

static void fuzz_ranks(const char *s) {
    static const int probes[] = { 0, 1, 2, 7, 1000, INT_MAX };
    enum { NP = sizeof probes / sizeof probes[0] };
    int r[NP], malformed = 0;
    for (int i = 0; i < NP; i++) {
        r[i] = prof__rank_in(s, probes[i]);
        FUZZ_CHECK(r[i] >= -1 && r[i] <= 1);
        malformed += r[i] < 0;
    }
    FUZZ_CHECK(malformed == 0 || malformed == NP);     /* malformed is a property of the list */
    if (malformed) return;
    if (!*s || !strcmp(s, "all"))
        for (int i = 0; i < NP; i++) FUZZ_CHECK(r[i] == 1);
    /* Every number written in a valid list is a single rank or a range's
       bound, so it is in the list. */
    for (const char *p = s; *p;) {
        if (*p < '0' || *p > '9') {
            p++;
            continue;
        }
        long long v = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            if (v <= INT_MAX) v = v * 10 + (*p - '0');
        if (v <= INT_MAX) FUZZ_CHECK(prof__rank_in(s, (int)v) == 1);
    }
}

/* ---- 3: PROF_BUFFER_MB (and the launchers' RANK, WORLD_SIZE) ------------- */

static void fuzz_uint(const char *s) {
    long v = -7;
    if (!prof__parse_uint(s, &v)) {
        FUZZ_CHECK(v == -7);
        return;
    }
    FUZZ_CHECK(v >= 0 && v <= INT_MAX);
    /* What was read is exactly the digits: no sign, no white space
       (strtol's own leniency is refused before it). */
    long long d = 0;
    FUZZ_CHECK(*s);
    for (const char *p = s; *p; p++) {
        FUZZ_CHECK(*p >= '0' && *p <= '9');
        if (d <= INT_MAX) d = d * 10 + (*p - '0');
    }
    FUZZ_CHECK(d == v);
    char again[32];
    long v2 = -7;
    snprintf(again, sizeof again, "%ld", v);
    FUZZ_CHECK(prof__parse_uint(again, &v2) && v2 == v);
}

/* ---- 4: PROF_OUTPUT, PROF_STACKS, PROF_LOG templates ---------------------- */

/* A growing string, for the reference expansion below. */
typedef struct { char *p; size_t n, cap; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = 2 * (b->n + n + 1);
        b->p = (char *)realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* What prof__expand_path promises, with no limit on the length: ".{cycle}"
   before the extension (from the last '.' of the last path component; in a
   name ending in ".gz", from the '.' before that, if the component has one)
   when there is a schedule, a cycle and no {cycle}; then {pid}, {rank} (0
   when not a distributed run) and {cycle} (kept as it is for cycle < 0)
   replaced, left to right. Returned malloc'd. */
static char *expand_reference(const char *tmpl, int cycle, int has_sched, int rank) {
    sbuf t = { NULL, 0, 0 }, o = { NULL, 0, 0 };
    sb_put(&t, "", 0);
    sb_put(&o, "", 0);
    if (cycle >= 0 && has_sched && !strstr(tmpl, "{cycle}")) {
        const char *slash = strrchr(tmpl, '/'), *dot = strrchr(tmpl, '.');
        size_t n = strlen(tmpl), name = slash ? (size_t)(slash - tmpl) + 1 : 0;
        if (n > 3 && !strcmp(tmpl + n - 3, ".gz"))      /* t.json.gz: the '.' of ".json" */
            for (size_t i = n - 3; i-- > name;)
                if (tmpl[i] == '.') { dot = tmpl + i; break; }
        if (!dot || (slash && dot < slash)) dot = tmpl + strlen(tmpl);
        sb_put(&t, tmpl, (size_t)(dot - tmpl));
        sb_put(&t, ".{cycle}", 8);
        sb_put(&t, dot, strlen(dot));
    } else {
        sb_put(&t, tmpl, strlen(tmpl));
    }
    for (const char *p = t.p; *p;) {
        char num[32];
        long v = -1;
        size_t skip = 0;
        if (!strncmp(p, "{pid}", 5)) v = (long)getpid(), skip = 5;
        else if (!strncmp(p, "{rank}", 6)) v = rank > 0 ? rank : 0, skip = 6;
        else if (!strncmp(p, "{cycle}", 7) && cycle >= 0) v = cycle, skip = 7;
        if (skip) {
            sb_put(&o, num, (size_t)snprintf(num, sizeof num, "%ld", v));
            p += skip;
        } else {
            sb_put(&o, p++, 1);
        }
    }
    free(t.p);
    return o.p;
}

static void fuzz_expand(const char *tmpl, int rank) {
    static const int cycles[] = { -1, 3 };
    char *out = (char *)malloc(PROF__PATH);             /* exactly its size: ASan sees an overrun */
    if (!out) abort();
    prof__g.who.rank = rank;
    for (int has_sched = 0; has_sched <= 1; has_sched++) {
        for (size_t c = 0; c < sizeof cycles / sizeof cycles[0]; c++) {
            int cycle = cycles[c];
            /* The callers' precondition: a template that may get ".{cycle}"
               is PROF_OUTPUT or PROF_STACKS, which init keeps below
               PROF__PATH bytes (prof__set_path). PROF_LOG (cycle -1) is
               taken at any length. */
            if (cycle >= 0 && has_sched && strlen(tmpl) >= PROF__PATH) continue;
            prof__g.conf.has_sched = has_sched;
            memset(out, 'x', PROF__PATH);
            int ok = prof__expand_path(out, tmpl, cycle, "the fuzzed path");
            char *want = expand_reference(tmpl, cycle, has_sched, rank);
            if (strlen(want) < PROF__PATH) {                /* fits: exactly that */
                FUZZ_CHECK(ok == 1);
                FUZZ_CHECK(memchr(out, 0, PROF__PATH) != NULL);
                FUZZ_CHECK(strcmp(out, want) == 0);
            } else {                                        /* does not: never a cut path */
                FUZZ_CHECK(ok == 0);
                FUZZ_CHECK(out[0] == 0);
            }
            free(want);
        }
    }
    prof__g.who.rank = 0;
    prof__g.conf.has_sched = 0;
    free(out);
}

/* ---- 5: prof__q, every value a message quotes ---------------------------- */

static void fuzz_quote(const char *s) {
    char *q = (char *)malloc(PROF__QUOTE);
    if (!q) abort();
    const char *r = prof__q(s, q);
    FUZZ_CHECK(r == q);
    size_t n = strnlen(q, PROF__QUOTE);
    FUZZ_CHECK(n < PROF__QUOTE);
    for (size_t i = 0; i < n; i++) FUZZ_CHECK((unsigned char)q[i] >= 0x20 && q[i] != 0x7f);
    /* up to 200 bytes without control bytes: quoted as they are */
    int plain = strlen(s) <= 200;
    for (const char *p = s; *p && plain; p++) plain = (unsigned char)*p >= 0x20 && *p != 0x7f;
    if (plain) FUZZ_CHECK(strcmp(q, s) == 0);
    free(q);
}

/* ---- the driver ----------------------------------------------------------- */

enum { MODES = 6 };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* prof__msg speaks on stderr; a fuzzer would fill it. */
    if (!getenv("PROF_FUZZ_VERBOSE")) prof__logf = fopen("/dev/null", "w");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int ranks[] = { -1, 0, 7, INT_MAX };   /* who.rank: -1, not a distributed run */
    if (size < 1) return 0;
    unsigned sel = data[0];
    char *s = (char *)malloc(size);                     /* the value and its NUL, nothing more */
    if (!s) abort();
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0;
    switch (sel % MODES) {
    case 0: fuzz_schedule(s); break;
    case 1: fuzz_table(s); break;
    case 2: fuzz_ranks(s); break;
    case 3: fuzz_uint(s); break;
    case 4: fuzz_expand(s, ranks[(sel / MODES) % 4]); break;
    default: fuzz_quote(s); break;
    }
    free(s);
    return 0;
}
