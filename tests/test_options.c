/* The table of options (PROF__OPTIONS) as the readers take it: every row's
   variable, malformed, gets exactly one line, naming it; the config's
   deprecated spellings and PROF_OFF; PROF_KERNELS deciding over PROF_CUPTI,
   before init too; the rules between options; the formats' table (default
   files, extensions). Calls prof__resolve_config itself: no init. */
#define _POSIX_C_SOURCE 200809L         /* setenv, unsetenv */
#define PROF_INTERNALS                  /* prof__resolve_config, prof__g; the suite's implementation */
#include "prof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            failures++;                                                    \
            fprintf(stderr, "test_options:%d: %s: ", __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

#define ROW(var, field, kind, ...) { var, #kind },
static const struct { const char *var, *kind; } rows[] = { PROF__OPTIONS(ROW) };
#define NROWS (sizeof rows / sizeof rows[0])

static char said[8192];                 /* what the last resolve said */
static int nsaid;                       /* in lines */

static void resolve(const prof_config *cfg) {
    FILE *f = tmpfile();
    if (!f) {
        perror("tmpfile");
        exit(2);
    }
    prof__logf = f;
    prof__resolve_config(cfg);
    prof__logf = NULL;
    fflush(f);
    rewind(f);
    size_t n = fread(said, 1, sizeof said - 1, f);
    said[n] = 0;
    fclose(f);
    nsaid = 0;
    for (const char *p = said; *p; p++) nsaid += *p == '\n';
}

static void clear_env(void) {
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].var[0]) unsetenv(rows[i].var);
}

static void every_row_malformed(void) {
    static prof_config none;
    static char long_path[5001];
    memset(long_path, 'p', 5000);
    for (size_t i = 0; i < NROWS; i++) {
        const char *var = rows[i].var, *kind = rows[i].kind;
        char want[128];
        if (!var[0] || !strcmp(kind, "LIB")) continue;      /* config only; a binding's */
        clear_env();
        int path = !strcmp(kind, "PATH");
        setenv(var, path ? long_path : "\x01?", 1);
        resolve(&none);
        snprintf(want, sizeof want, path ? "prof: %s is 5000 bytes" : "prof: %s='\\x01?' is not ", var);
        CHECK(nsaid == 1 && !strncmp(said, want, strlen(want)), "%s (%s): said %d lines: %s", var, kind, nsaid, said);
    }
    clear_env();
}

static void spellings(void) {
    prof_config c;
    memset(&c, 0, sizeof c);
    resolve(&c);
    CHECK(nsaid == 0, "defaults: %s", said);
    CHECK(prof__g.proc.signals == 1 && prof__g.conf.separate_threads == 0 && prof__g.conf.cupti == 0,
          "defaults: signals %d separate %d kernels %d", prof__g.proc.signals, prof__g.conf.separate_threads,
          prof__g.conf.cupti);
    CHECK(prof__g.conf.flight_slow == 3 && prof__g.conf.flight_cooldown == 300 && prof__g.conf.trigger_steps == 5,
          "defaults: slow %g cooldown %g trigger steps %d", prof__g.conf.flight_slow, prof__g.conf.flight_cooldown,
          prof__g.conf.trigger_steps);
    CHECK(!strcmp(prof__g.conf.output, "prof_trace_{pid}.json") && prof__g.conf.format == -1, "output %s",
          prof__g.conf.output);

    c.keep_signals = 1;
    resolve(&c);
    CHECK(prof__g.proc.signals == 0, "keep_signals = 1: signals %d", prof__g.proc.signals);
    setenv("PROF_SIGNALS", "1", 1);
    resolve(&c);
    CHECK(prof__g.proc.signals == 1, "keep_signals = 1, PROF_SIGNALS=1: signals %d", prof__g.proc.signals);
    unsetenv("PROF_SIGNALS");
    c.keep_signals = 0;
    c.signals = PROF_OFF;
    resolve(&c);
    CHECK(prof__g.proc.signals == 0, "signals = PROF_OFF: %d", prof__g.proc.signals);

    c.separate_threads = 1;
    resolve(&c);
    CHECK(prof__g.conf.separate_threads == 1, "separate_threads = 1: %d", prof__g.conf.separate_threads);
    c.separate_threads = 0;
    c.merge_threads = PROF_OFF;
    resolve(&c);
    CHECK(prof__g.conf.separate_threads == 1, "merge_threads = PROF_OFF: %d", prof__g.conf.separate_threads);
    setenv("PROF_MERGE_THREADS", "1", 1);
    resolve(&c);
    CHECK(prof__g.conf.separate_threads == 0, "PROF_MERGE_THREADS=1: %d", prof__g.conf.separate_threads);
    unsetenv("PROF_MERGE_THREADS");

    c.cupti = 1;
    resolve(&c);
    CHECK(prof__g.conf.cupti == 1, "cupti = 1: kernels %d", prof__g.conf.cupti);
    setenv("PROF_KERNELS", "0", 1);
    resolve(&c);
    CHECK(prof__g.conf.cupti == 0, "cupti = 1, PROF_KERNELS=0: kernels %d", prof__g.conf.cupti);
    setenv("PROF_CUPTI", "1", 1);
    resolve(&c);
    CHECK(prof__g.conf.cupti == 0, "PROF_CUPTI=1 PROF_KERNELS=0: kernels %d", prof__g.conf.cupti);
    CHECK(prof_gpu_kernels_asked() == 0, "before init, PROF_CUPTI=1 PROF_KERNELS=0: asked");
    unsetenv("PROF_KERNELS");
    CHECK(prof_gpu_kernels_asked() == 1, "before init, PROF_CUPTI=1: not asked");
    unsetenv("PROF_CUPTI");
    CHECK(prof_gpu_kernels_asked() == 0, "before init, nothing set: asked");
    c.cupti = 0;
    c.kernels = 1;
    resolve(&c);
    CHECK(prof__g.conf.cupti == 1, "kernels = 1: %d", prof__g.conf.cupti);

    c.flight_slow = PROF_OFF;

    c.flight_cooldown = PROF_OFF;

    c.watchdog_s = 2.5;
    resolve(&c);
    CHECK(prof__g.conf.flight_slow == 0 && prof__g.conf.flight_cooldown == 0 && prof__g.conf.watchdog == 2.5,
          "PROF_OFF: slow %g cooldown %g watchdog %g", prof__g.conf.flight_slow, prof__g.conf.flight_cooldown,
          prof__g.conf.watchdog);
    c.flight_slow = 2;
    setenv("PROF_FLIGHT_COOLDOWN", "0", 1);
    setenv("PROF_WATCHDOG", "0", 1);
    resolve(&c);
    CHECK(prof__g.conf.flight_slow == 2 && prof__g.conf.flight_cooldown == 0 && prof__g.conf.watchdog == 0,
          "env 0: slow %g cooldown %g watchdog %g", prof__g.conf.flight_slow, prof__g.conf.flight_cooldown,
          prof__g.conf.watchdog);
    clear_env();
}

static void rules_and_formats(void) {
    prof_config c;
    memset(&c, 0, sizeof c);
    c.format = "perfetto";
    resolve(&c);
    CHECK(!strcmp(prof__g.conf.output, "prof_trace_{pid}.pftrace") && prof__g.conf.format == PROF__FMT_PERFETTO,
          "perfetto: output %s format %d", prof__g.conf.output, prof__g.conf.format);
    setenv("PROF_FORMAT", "json.gz", 1);
    resolve(&c);
    CHECK(!strcmp(prof__g.conf.output, "prof_trace_{pid}.json.gz"), "json.gz: output %s", prof__g.conf.output);
    c.output = "mine.json";
    resolve(&c);
    CHECK(!strcmp(prof__g.conf.output, "mine.json") && prof__g.conf.format == PROF__FMT_GZ, "mine.json: %s %d",
          prof__g.conf.output, prof__g.conf.format);
    unsetenv("PROF_FORMAT");
    c.format = "protobuf";
    resolve(&c);
    CHECK(nsaid == 1 && strstr(said, "prof: prof_config.format='protobuf' is not json, json.gz or perfetto; "
                                     "the output's extension decides"), "said %s", said);

    memset(&c, 0, sizeof c);
    c.schedule.active = 2;
    c.trigger = "signal";
    resolve(&c);
    CHECK(prof__g.conf.has_sched == 0 && prof__g.conf.trigger == PROF__TRIG_SIGNAL && nsaid == 1 &&
          strstr(said, "PROF_TRIGGER decides when to record: the schedule is ignored"), "trigger: %s", said);
    c.trigger = NULL;
    c.flight_steps = 10;
    resolve(&c);
    CHECK(prof__g.conf.has_sched == 0 && prof__g.conf.flight == 10 && nsaid == 1 &&
          strstr(said, "PROF_FLIGHT records every step"), "flight: %s", said);
    c.flight_steps = 0;
    resolve(&c);
    CHECK(prof__g.conf.has_sched == 1 && prof__g.conf.sched.active == 2 && nsaid == 0, "schedule: %s", said);
    c.energy = 1;
    c.trace_ready_at_step = 1;
    resolve(&c);
    CHECK(prof__g.conf.energy == 0 && nsaid == 1 && strstr(said, "PROF_ENERGY: not with trace_ready_at_step"),
          "energy: %s", said);
    c.energy = 0;                       /* the device tracks turn energy on, and go with it */
    c.gpu_metrics = 1;
    resolve(&c);
    CHECK(prof__g.conf.energy == 0 && prof__g.conf.gpu_metrics == 0 && nsaid == 1 &&
          strstr(said, "PROF_ENERGY: not with trace_ready_at_step"), "gpu_metrics: %s", said);
    c.trace_ready_at_step = 0;
    resolve(&c);
    CHECK(prof__g.conf.energy == 1 && prof__g.conf.gpu_metrics == 1 && nsaid == 0, "gpu_metrics: %s", said);
    c.energy = c.gpu_metrics = 0;

    static const struct { const char *path; int fmt; } ext[] = {
        { "a.json", PROF__FMT_JSON }, { "a.txt", PROF__FMT_JSON }, { "a.json.gz", PROF__FMT_GZ },
        { "a.gz", PROF__FMT_GZ }, { ".gz", PROF__FMT_JSON }, { "a.pftrace", PROF__FMT_PERFETTO },
        { "a.perfetto-trace", PROF__FMT_PERFETTO }, { "a.pftrace.gz", PROF__FMT_GZ },
    };
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        CHECK(prof__path_format(ext[i].path) == ext[i].fmt, "%s: format %d", ext[i].path,
              prof__path_format(ext[i].path));
    CHECK(prof__fmt[PROF__FMT_PERFETTO].streams && !prof__fmt[PROF__FMT_JSON].streams, "streams");
    clear_env();
}

int main(void) {
    clear_env();
    every_row_malformed();
    spellings();
    rules_and_formats();
    if (failures) return 1;
    printf("test_options: %zu rows, every check passed\n", NROWS);
    return 0;
}
