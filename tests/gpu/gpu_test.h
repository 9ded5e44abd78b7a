/* gpu_test.h - how the GPU test programs run, and what they write down.

   ctest starts a program with a case name (prof_test's ARGS). The program
   hands over to tests/gpu/check_gpu.py, which runs it again as
   `<program> <case> run` in the test's scratch directory, with its stderr
   captured, and checks what that run wrote: traces, and truth.jsonl, where
   the program says what it knows (true device times, the double's
   counters) one JSON object a line. */
#ifndef GPU_TEST_H
#define GPU_TEST_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_gpu.h"

static FILE *gpu_truth;
static int gpu_failed;

/* One line of truth.jsonl, whole: a trace-ready handler writes lines on
   the profiler's thread while the program writes its own (stdio locks each
   call, not the line's text and its newline together). */
__attribute__((format(printf, 1, 2))) static void truth(const char *fmt, ...) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    va_list ap;
    pthread_mutex_lock(&lock);
    if (!gpu_truth && !(gpu_truth = fopen("truth.jsonl", "w"))) {
        fprintf(stderr, "cannot write truth.jsonl\n");
        exit(2);
    }
    va_start(ap, fmt);
    vfprintf(gpu_truth, fmt, ap);
    va_end(ap);
    fputc('\n', gpu_truth);
    fflush(gpu_truth);
    pthread_mutex_unlock(&lock);
}

/* A saved cycle in both formats, <stem>.<n>.json and .pftrace, n counting
   the cycles (*n): check_gpu.py requires the two to say the same. */
__attribute__((unused)) static void gpu_write_both(const prof_cycle *c, const char *stem, int *n) {
    char path[256];
    ++*n;
    snprintf(path, sizeof path, "%s.%d.json", stem, *n);
    prof_cycle_write_trace(c, path);
    snprintf(path, sizeof path, "%s.%d.pftrace", stem, *n);
    prof_cycle_write_trace(c, path);
}

/* The kernel capture cases' schedule: six steps, steps 2-4 recorded (wait
   1, warm-up 1, active 3, once), each saved cycle handed to ready with
   cycles (its count) as user data. */
__attribute__((unused)) static void gpu_kernels_schedule(prof_config *cfg,
                                                         void (*ready)(const prof_cycle *, void *), int *cycles) {
    cfg->on_trace_ready = ready;
    cfg->user_data = cycles;
    cfg->schedule.wait = 1;
    cfg->schedule.warmup = 1;
    cfg->schedule.active = 3;
    cfg->schedule.repeat = 1;
}

#ifdef _POSIX_C_SOURCE                  /* setenv: the kernel capture tests */
/* Flight mode keeping the last `steps` steps, dumped on a trigger file
   (gpu_trigger_now) and never for a slow step. */
__attribute__((unused)) static void gpu_flight_on_trigger(prof_config *cfg, int steps) {
    cfg->flight_steps = steps;
    cfg->flight_slow = -1;
    setenv("PROF_TRIGGER", "file:dump-now", 1);
}

/* The trigger file made, and the simulated clock a second on: the next step
   is a second after the last look for it, looks, and dumps. */
__attribute__((unused)) static void gpu_trigger_now(void) {
    fclose(fopen("dump-now", "w"));
    fake_gpu_sleep(1100000000);
}
#endif

/* A check made inside the program; reported on stdout, the run fails. */
__attribute__((unused)) static void expect(int ok, const char *what) {
    if (ok) return;
    printf("FAIL: %s\n", what);
    gpu_failed = 1;
}

static int gpu_test_main(int argc, char **argv, const char *backend, int (*run)(const char *)) {
    if (argc == 3 && !strcmp(argv[2], "run")) {
        int rc = run(argv[1]);
        if (gpu_truth) fclose(gpu_truth);
        gpu_truth = NULL;
        return rc ? rc : gpu_failed;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s CASE [run]\n", argv[0]);
        return 2;
    }
    const char *py = getenv("PROF_TEST_PY"), *src = getenv("PROF_TEST_SRC");
    if (!py || !src) {
        fprintf(stderr, "PROF_TEST_PY and PROF_TEST_SRC must be set (ctest sets them)\n");
        return 2;
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "\"%s\" \"%s/gpu/check_gpu.py\" %s %s \"%s\"", py, src, backend, argv[1], argv[0]);
    return system(cmd) == 0 ? 0 : 1;
}

#endif /* GPU_TEST_H */
