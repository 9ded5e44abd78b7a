/* gpu_edges.c - what a GPU region costs the engine's thread in runtime
   calls, on the CUDA runtime double (tests/gpu/fake_gpu.c, fake_cuda.c):
   N recorded PROF_GPU_BEGIN/END pairs on one engine stream, outside any
   stream capture, event pairs (no kernel capture), 1,000 a step, after N
   that warm the ring up (its slots' events made). Prints
   the runtime calls the engine's thread made per region, by kind
   (fake_gpu_thread_calls); bench/gpu_edges.sh counts the instructions
   (callgrind) in prof_gpu_begin and prof_gpu_end and in the runtime's
   calls they make.
     gpu_edges N */
#define _POSIX_C_SOURCE 200809L
#define PROF_IMPLEMENTATION
#include "prof_cuda.h"

#include <stdio.h>
#include <stdlib.h>

#include "fake_gpu.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_TOGGLE_COLLECT ((void)0)
#endif

/* The measured regions only: callgrind collects between the toggles. */
static void regions(void *s, long n, int measure) {
    for (long i = 0; i < n; i++) {
        if (measure) CALLGRIND_TOGGLE_COLLECT;
        PROF_GPU_BEGIN("region", s);
        PROF_GPU_END(s);
        if (measure) CALLGRIND_TOGGLE_COLLECT;
        if (i % 1000 == 999) {
            PROF_STEP();
            fake_gpu_sleep(20000000);   /* the profiler's thread drains the step (slowly, under valgrind) */
        }
    }
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    fake_gpu_setup(1);
    void *s = fake_gpu_stream(0, 5);
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "gpu_edges.json";
    cfg.quiet = 1;
    PROF_INIT(&cfg);
    long before[FAKE_NCALLS], after[FAKE_NCALLS];
    regions(s, n, 0);
    fake_gpu_thread_calls(before);
    regions(s, n, 1);
    fake_gpu_thread_calls(after);
    PROF_SHUTDOWN();
    printf("per region: event records %.2f, capture queries %.2f, stream queries %.2f, event queries %.2f\n",
           (double)(after[FAKE_EVENT_RECORD] - before[FAKE_EVENT_RECORD]) / (double)n,
           (double)(after[FAKE_CAPTURE_STATUS] - before[FAKE_CAPTURE_STATUS]) / (double)n,
           (double)(after[FAKE_STREAM_INFO] - before[FAKE_STREAM_INFO]) / (double)n,
           (double)(after[FAKE_EVENT_QUERY] - before[FAKE_EVENT_QUERY]) / (double)n);
    return 0;
}
