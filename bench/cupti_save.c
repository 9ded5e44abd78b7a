/* cupti_save.c - what the step that saves a cycle costs the engine's thread
   under kernel capture (PROF_KERNELS=1, prof_cuda.h's CUPTI tracer), by the
   number of kernels its window launched.

   No GPU is needed: the runtime is the suite's double (tests/gpu/fake_cuda.c)
   and the records come from the CUPTI double (tests/gpu/fake_cupti.c, loaded
   as PROF_CUPTI_LIB), a cudaLaunchKernel
   runtime record and a kernel record per launch, made as CUPTI makes them
   (into its buffers, handed back on its threads). What is timed is the
   PROF_STEP that ends each window (schedule wait=1,active=1), and the
   steps of the window (as a reference: a step with nothing to save).

       cupti_save N        N launches per recorded step
   prints "N save_ms step_ms" (medians over 9 windows). bench/cupti_save.sh
   builds it against a build of the tests. */
#define _POSIX_C_SOURCE 200809L
#define PROF_IMPLEMENTATION
#include "prof_cuda.h"

#include <cupti_activity.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_records.h"
#include "fake_cupti.h"
#include "fake_gpu.h"

#define WINDOWS 9

static fake_cupti_emit_fn *emit;
static fake_cupti_now_fn *cupti_now;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One launch as CUPTI records it: the runtime call, then its kernel of 1 us,
   already run. */
static void launch(uint32_t c) {
    int64_t t0 = cupti_now();
    CUpti_ActivityAPI a = cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, c, t0,
                                    t0 + 500);
    emit(&a, sizeof a);
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = (uint64_t)t0 + 1000;
    k.end = (uint64_t)t0 + 2000;
    k.streamId = 7;
    k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
    k.correlationId = c;
    k.name = "_Z4stepv";
    emit(&k, sizeof k);
}

int main(int argc, char **argv) {
    long n = argc == 2 ? atol(argv[1]) : 0;
    const char *path = getenv("PROF_CUPTI_LIB");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    void *e = lib ? dlsym(lib, "fake_cupti_emit") : NULL, *c = lib ? dlsym(lib, "fake_cupti_now") : NULL;
    if (n <= 0 || !e || !c) {
        fprintf(stderr, "usage: cupti_save N (PROF_CUPTI_LIB: the CUPTI double)\n");
        return 2;
    }
    memcpy(&emit, &e, sizeof e);
    memcpy(&cupti_now, &c, sizeof c);
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "cupti_save.json";
    cfg.quiet = 1;
    cfg.kernels = 1;
    cfg.buffer_mb = 1024;
    cfg.schedule.wait = 1;
    cfg.schedule.active = 1;
    cfg.schedule.warmup = 0;
    fake_gpu_setup(1);                  /* the runtime's double: one device */
    PROF_INIT(&cfg);
    double save[WINDOWS], step[WINDOWS];
    uint32_t corr = 0;
    for (int w = 0; w < WINDOWS; w++) {
        double t = now_ms();
        PROF_STEP();                    /* the wait step ends: the window begins */
        step[w] = now_ms() - t;
        for (long i = 0; i < n; i++) launch(++corr);
        t = now_ms();
        PROF_STEP();                    /* the window ends: its cycle is saved */
        save[w] = now_ms() - t;
        prof_flush();                   /* its trace written before the next, as a run's steps would allow */
    }
    PROF_SHUTDOWN();
    qsort(save, WINDOWS, sizeof *save, by_value);
    qsort(step, WINDOWS, sizeof *step, by_value);
    printf("%ld %.3f %.3f\n", n, save[WINDOWS / 2], step[WINDOWS / 2]);
    return 0;
}
