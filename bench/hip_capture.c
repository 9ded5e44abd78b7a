/* hip_capture.c - what HIP kernel capture (PROF_KERNELS=1, prof_hip.h's
   rocprofiler-sdk tracer) adds to each HIP runtime call and each record.

   No AMD GPU is needed: the calls are made through the rocprofiler-sdk test
   double (tests/gpu/fake_rocprofiler.c) on the simulated device, so what is
   timed is prof.h's side only: the ENTER and EXIT callbacks of a launch
   (prof__roc_api: a timestamp, the call's name, its stream from the SDK's
   argument list, a record handed to the core) and, per kernel, the buffer
   callback (prof__roc_buffer). The SDK's own cost is not in it.

       hip_capture MODE N        MODE: off (no capture) or on
   prints "MODE ns_per_launch N" (the launch call with its callbacks, best
   of 5 batches). bench/hip_capture.sh builds it and adds callgrind's
   instructions per call of each callback. */
#define _POSIX_C_SOURCE 200809L
#define PROF_IMPLEMENTATION
#include "prof_hip.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_gpu.h"
#include "fake_rocprofiler.h"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "hip_capture: %s: %s\n", name, dlerror());
        exit(2);
    }
    return p;
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "on") && strcmp(argv[1], "off"))) {
        fprintf(stderr, "usage: hip_capture on|off N (PROF_ROCPROFILER_SDK: the double)\n");
        return 2;
    }
    long n = atol(argv[2]);
    const char *path = getenv("PROF_ROCPROFILER_SDK");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!lib) {
        fprintf(stderr, "hip_capture: set PROF_ROCPROFILER_SDK to the double (%s)\n", dlerror());
        return 2;
    }
    fake_roc_call_fn *call;
    fake_roc_call_end_fn *call_end;
    fake_roc_load_fn *load;
    fake_roc_dispatch_fn *dispatch;
    void *p = sym(lib, "fake_roc_call");
    memcpy(&call, &p, sizeof p);
    p = sym(lib, "fake_roc_call_end");
    memcpy(&call_end, &p, sizeof p);
    p = sym(lib, "fake_roc_load");
    memcpy(&load, &p, sizeof p);
    p = sym(lib, "fake_roc_dispatch");
    memcpy(&dispatch, &p, sizeof p);

    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "hip_capture.json";
    cfg.quiet = 1;
    cfg.kernels = !strcmp(argv[1], "on");
    cfg.buffer_mb = 1024;
    void *s = fake_gpu_stream(0, 1);
    PROF_INIT(&cfg);
    static const char *const names[] = { "_Z5emptyv.kd" };
    load(names, 1, 1);
    const uint32_t grid[3] = { 64, 1, 1 }, block[3] = { 64, 1, 1 };
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            call(FAKE_ROC_hipLaunchKernel, s, 0);
            call_end();
        }
        double t = (now_ns() - t0) / (double)n;
        if (t < best) best = t;
    }
    /* kernels' records through the buffer callback: 20,000, what the SDK's
       buffer holds (the double delivers it at the flush, not the watermark) */
    int64_t t = fake_gpu_now();
    for (long i = 0; i < n && i < 20000; i++) dispatch((uint64_t)i + 1, 0, 1, t, t + 1000, grid, block, 0);
    PROF_SHUTDOWN();
    printf("%s %.1f %ld\n", argv[1], best, n);
    return 0;
}
