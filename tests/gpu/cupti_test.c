/* Kernel capture (PROF_CUPTI) on the simulated GPU, with the CUPTI double
   (fake_cupti.c, loaded by prof_cuda.h through PROF_CUPTI_LIB as it would
   load libcupti.so). The engine here launches "kernels" on the simulated
   device (fake_gpu_launch_at) and, as CUPTI would, each launch becomes a
   runtime-call record and a kernel record in the toolkit's struct layouts,
   with CUPTI's clock and CUPTI's stream ids; each cudaEventRecord becomes
   a runtime-call record (prof.h makes none under capture: a test sees one
   in the trace if it did). The device's launch latency is the case's. A
   graph launch (cudaGraphLaunch) is one runtime call whose kernels and copy
   share its correlation and carry graph and node ids. check_gpu.py's
   cupti_* cases check the trace (tests/gpu/check_cupti.py) against
   truth.jsonl.
   FAKE_CUPTI_LIB: the double's path (CMake gives it). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L         /* setenv */
#endif
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof_cuda.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"   /* CUPTI's headers are not ISO C */
#include <cupti_activity.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#pragma GCC diagnostic pop
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "cupti_records.h"
#include "fake_cupti.h"
#include "fake_gpu.h"
#include "gpu_test.h"

/* CUPTI's activity buffers, counted as prof_cuda.h allocates them: the
   program is linked with -Wl,--wrap=aligned_alloc (nothing else here calls
   it). Buffers CUPTI hands back are reused, not allocated again. */
#ifdef __cplusplus
extern "C" {
#endif
void *__real_aligned_alloc(size_t align, size_t size);
void *__wrap_aligned_alloc(size_t align, size_t size);
#ifdef __cplusplus
}
#endif
static long buffers_allocated;

void *__wrap_aligned_alloc(size_t align, size_t size) {
    __atomic_add_fetch(&buffers_allocated, 1, __ATOMIC_RELAXED);
    return __real_aligned_alloc(align, size);
}

static fake_cupti_emit_fn *emit;
static fake_cupti_deliver_fn *deliver;
static fake_cupti_taken_fn *taken;
static fake_cupti_now_fn *cupti_now;
static fake_cupti_enabled_fn *cupti_enabled;
static fake_cupti_slow_reads_fn *slow_reads;
static fake_cupti_incomplete_fn *incomplete;
static fake_cupti_flushes_here_fn *flushes_here;
static fake_cupti_graph_fn *graph_new;
static fake_cupti_graph_node_fn *graph_node;
static fake_cupti_graph_clone_fn *graph_clone;
static fake_cupti_node_id_fn *node_id;
static fake_cupti_callbacks_fn *callbacks;
static uint32_t corr;                   /* CUPTI's correlation ids */
static long launched;                   /* records emitted */
static int64_t device_end;              /* device 0's ns at which everything launched ends */

/* Until the device has run everything launched: a save's flush, which is
   forced, hands back what still runs with no time (CUPTI does too), so a
   case that counts every record lets the device finish before it. */
static void device_done(void) {
    while (fake_gpu_host_ns(0, device_end) > (double)fake_gpu_now()) fake_gpu_sleep(100000);
}

static void ran_until(int64_t end) {
    if (end > device_end) device_end = end;
}

/* The double's functions, from the same object prof_cuda.h loads. */
static void bind_cupti(void) {
    void *lib = dlopen(FAKE_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
    void *e = lib ? dlsym(lib, "fake_cupti_emit") : NULL, *n = lib ? dlsym(lib, "fake_cupti_now") : NULL;
    void *b = lib ? dlsym(lib, "fake_cupti_bind") : NULL, *en = lib ? dlsym(lib, "fake_cupti_enabled") : NULL;
    void *sr = lib ? dlsym(lib, "fake_cupti_slow_reads") : NULL;
    void *dl = lib ? dlsym(lib, "fake_cupti_deliver") : NULL, *tk = lib ? dlsym(lib, "fake_cupti_taken") : NULL;
    void *ic = lib ? dlsym(lib, "fake_cupti_incomplete") : NULL;
    void *fh = lib ? dlsym(lib, "fake_cupti_flushes_here") : NULL;
    void *gn = lib ? dlsym(lib, "fake_cupti_graph") : NULL, *gd = lib ? dlsym(lib, "fake_cupti_graph_node") : NULL;
    void *gc = lib ? dlsym(lib, "fake_cupti_graph_clone") : NULL, *ni = lib ? dlsym(lib, "fake_cupti_node_id") : NULL;
    void *cb = lib ? dlsym(lib, "fake_cupti_callbacks") : NULL;
    if (!e || !n || !b || !en || !sr || !dl || !tk || !ic || !fh || !gn || !gd || !gc || !ni || !cb) {
        fprintf(stderr, "cannot load the CUPTI double %s: %s\n", FAKE_CUPTI_LIB, dlerror());
        exit(2);
    }
    memcpy(&emit, &e, sizeof e);
    memcpy(&cupti_now, &n, sizeof n);
    memcpy(&cupti_enabled, &en, sizeof en);
    memcpy(&slow_reads, &sr, sizeof sr);
    memcpy(&deliver, &dl, sizeof dl);
    memcpy(&taken, &tk, sizeof tk);
    memcpy(&incomplete, &ic, sizeof ic);
    memcpy(&flushes_here, &fh, sizeof fh);
    memcpy(&graph_new, &gn, sizeof gn);
    memcpy(&graph_node, &gd, sizeof gd);
    memcpy(&graph_clone, &gc, sizeof gc);
    memcpy(&node_id, &ni, sizeof ni);
    memcpy(&callbacks, &cb, sizeof cb);
    fake_cupti_bind_fn *bind;
    memcpy(&bind, &b, sizeof b);
    bind(fake_stream_info);
    setenv("PROF_CUPTI_LIB", FAKE_CUPTI_LIB, 1);
}

/* CUPTI's time of a device time: the host's, on CUPTI's clock. */
/* A runtime (or driver) call's record: what the engine's thread did. */
static void api_call(CUpti_ActivityKind kind, uint32_t cbid, uint32_t c, int64_t t0, int64_t t1) {
    CUpti_ActivityAPI a = cupti_api(kind, cbid, c, t0, t1);
    emit(&a, sizeof a);
    launched++;
}

static void runtime_call(uint32_t cbid, uint32_t c, int64_t t0, int64_t t1) {
    api_call(CUPTI_ACTIVITY_KIND_RUNTIME, cbid, c, t0, t1);
}

/* cudaEventRecord, as CUPTI sees it (fake_gpu_on_record calls it on the
   recording thread): a runtime call, taken while RUNTIME is on. Under
   capture prof.h records none: a GPU region spans its kernels. */
static void event_recorded(void *stream, int dev, int64_t dev_ns) {
    (void)stream;
    (void)dev;
    (void)dev_ns;
    int64_t t = cupti_now();
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, ++corr, t, t);
}

static int untimed_next;                /* the next kernel's record has no time */
static int driver_next;                 /* the next kernel is a library's, launched by the driver
                                           API (cuBLAS's cuLaunchKernelEx): no runtime call */
static int nested_driver;               /* a runtime launch's record has its driver call inside it */
static int backwards_next;              /* ... ends before it starts */
static int hold_next;                   /* keep the next kernel's record back ... */
static CUpti_ActivityKernel10 held;     /* ... here, as CUPTI gives it only once it ran */

/* kernel<<<grid, block, 0, stream>>>, running ns on the device. */
static void launch(const char *name, void *stream, int64_t ns, int grid, int block) {
    uint32_t c = ++corr;
    int64_t t0 = cupti_now();
    int dev;
    int64_t start = fake_gpu_launch_at(stream, ns, &dev);
    ran_until(start + ns);
    if (driver_next) {
        api_call(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, c, t0, cupti_now());
        driver_next = 0;
    } else {
        int64_t t1 = cupti_now();
        runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, c, t0, t1);
        if (nested_driver)      /* the runtime's own driver call inside it, under its correlation */
            api_call(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, c, t0, t1);
    }
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.registersPerThread = 32;
    k.start = cupti_ts(dev, start);
    k.end = cupti_ts(dev, start + ns);
    k.deviceId = (uint32_t)dev;
    k.streamId = cupti_stream_id(stream);
    k.gridX = grid, k.gridY = 1, k.gridZ = 1;
    k.blockX = block, k.blockY = 1, k.blockZ = 1;
    k.staticSharedMemory = 1024;
    k.dynamicSharedMemory = 512;
    k.correlationId = c;
    k.name = name;
    if (backwards_next) {               /* as CUPTI gives some (pytorch#192021) */
        k.end = k.start - 1000;
        backwards_next = 0;
    }
    if (untimed_next) {                 /* as CUPTI gives some (kineto#996) */
        k.start = k.end = 0;
        untimed_next = 0;
    }
    if (hold_next) {
        held = k;
        hold_next = 0;
        return;
    }
    emit(&k, sizeof k);
    launched++;
}

/* cudaMemcpyAsync (HtoD, pageable) or cudaMemsetAsync of bytes, taking ns
   on the device. */
static void transfer(int fill, void *stream, uint64_t bytes, int64_t ns) {
    uint32_t c = ++corr;
    int64_t t0 = cupti_now();
    int dev;
    int64_t start = fake_gpu_launch_at(stream, ns, &dev);
    ran_until(start + ns);
    runtime_call(fill ? CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 : CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                 c, t0, cupti_now());
    CUpti_ActivityMemcpy6 m;
    CUpti_ActivityMemset4 f;
    memset(&m, 0, sizeof m);
    memset(&f, 0, sizeof f);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    f.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    f.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = f.bytes = bytes;
    m.start = f.start = cupti_ts(dev, start);
    m.end = f.end = cupti_ts(dev, start + ns);
    m.deviceId = f.deviceId = (uint32_t)dev;
    m.streamId = f.streamId = cupti_stream_id(stream);
    m.correlationId = f.correlationId = c;
    if (fill) emit(&f, sizeof f);
    else emit(&m, sizeof m);
    launched++;
}

/* A config asking for kernel capture, quiet, writing out. */
static prof_config capture(const char *out) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = out;
    cfg.quiet = 1;
    cfg.cupti = 1;
    return cfg;
}

/* One device whose clock is offset and drifts, with the case's launch
   latency; CUPTI sees every event record. */
static void device(int64_t latency_ns) {
    fake_gpu_setup(1);
    fake_gpu_clock(0, 1.0001, 5000000000);
    fake_gpu_latency(latency_ns);
    fake_gpu_on_record(event_recorded);
    bind_cupti();
}

/* Each saved cycle in both formats, cupti.<n>.json and .pftrace. */
static void both_formats(const prof_cycle *c, void *user) { gpu_write_both(c, "cupti", (int *)user); }

/* Six steps, steps 2-4 recorded: in each a GPU region around two kernels,
   a copy and a fill, one kernel outside any region, and a GPU region that
   launches nothing, on a device with latency_ns of launch latency. The window's first reading of CUPTI's
   clock against prof.h's takes 2 ms (as one preempted on a loaded machine
   does): the kernels still sit in their regions. */
static int case_kernels(int64_t latency_ns) {
    static int cycles;
    prof_config cfg = capture("cupti.json");
    gpu_kernels_schedule(&cfg, both_formats, &cycles);
    device(latency_ns);
    void *s = fake_gpu_stream(0, 13);
    PROF_INIT(&cfg);
    for (int step = 0; step < 6; step++) {
        {
            PROF_GPU_SCOPE("layer", s);
            transfer(0, s, 1 << 20, 40000);
            launch("_Z6matmulPfS_i", s, 60000, 128, 256);
            transfer(1, s, 4096, 3000);
            launch("_Z4reluPfi", s, 20000, 64, 256);
        }
        launch("_Z4lossPf", s, 10000, 1, 128);
        { PROF_GPU_SCOPE("idle", s); }  /* no GPU side */
        if (step == 1) slow_reads(2000000, 1);  /* the step that opens the window: its first reading */
        if (step == 4) device_done();   /* the step that saves */
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    /* names are demangled where the C++ runtime is: this C++ program's, or
       libstdc++ loaded for it into the C one */
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    fake_gpu_stats st;
    fake_gpu_get_stats(&st);
    truth("{\"per_step\": 5, \"recorded_steps\": 3, \"demangled\": %d, \"enabled_after\": %d, \"latency_ns\": %lld, "
          "\"event_calls\": %ld}",
          cxx != NULL, cupti_enabled(), (long long)latency_ns,
          st.calls[FAKE_EVENT_CREATE] + st.calls[FAKE_EVENT_RECORD] + st.calls[FAKE_EVENT_QUERY] +
              st.calls[FAKE_EVENT_SYNC] + st.calls[FAKE_ELAPSED]);
    if (cxx) dlclose(cxx);
    return 0;
}

/* More records than the buffers hold: none may go missing unsaid. CUPTI's
   buffers (2 of 4 MiB, held until the flush) and prof.h's own (1 MiB) both
   run out; one record has no timestamp, one ends before it starts. */
static int case_drops(void) {
    prof_config cfg = capture("drops.json");
    cfg.buffer_mb = 1;
    setenv("FAKE_CUPTI_HOLD", "1", 1);
    fake_gpu_setup(1);
    bind_cupti();
    void *s = fake_gpu_stream(0, 5);
    PROF_INIT(&cfg);
    for (int i = 0; i < 40000; i++) {
        untimed_next = i == 7;          /* one kernel record without a time: counted too */
        backwards_next = i == 9;        /* one that ends before it starts: written, said */
        launch("_Z5tinyv", s, 100, 1, 32);
    }
    PROF_SHUTDOWN();
    truth("{\"records\": %ld, \"buffers_allocated\": %ld}", launched, buffers_allocated);
    return 0;
}

/* No usable CUPTI (a path that is not there, a library without the
   Activity API, an enable refused): one line, and GPU regions as before. */
static int case_unusable(void) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "unusable.json";
    cfg.cupti = 1;
    fake_gpu_setup(1);
    if (!getenv("PROF_CUPTI_LIB")) bind_cupti();
    void *s = fake_gpu_stream(0, 3);
    PROF_INIT(&cfg);
    for (int step = 0; step < 3; step++) {
        { PROF_GPU_SCOPE("layer", s); fake_gpu_launch(s, 10000); }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    truth("{\"enabled_after\": %d}", cupti_enabled ? cupti_enabled() : 0);
    return 0;
}

/* A kernel of the last recorded step still runs when its cycle is saved,
   and its record comes only after the trace was written (once late.1.json
   exists): it is said, not dropped unsaid. (One that ends within the save's
   wait is in the trace: cupti_incomplete.) */
static int case_late(void) {
    prof_config cfg = capture("late.json");
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    fake_gpu_setup(1);
    bind_cupti();
    void *s = fake_gpu_stream(0, 9);
    PROF_INIT(&cfg);
    for (int step = 0; step < 3; step++) {
        { PROF_SCOPE("work"); launch("_Z4workv", s, 1000, 1, 32); }
        if (step == 1) {
            hold_next = 1;
            launch("_Z4slowv", s, 50000, 1, 32);
        }
        PROF_STEP();                    /* step 1's saves the cycle */
        if (step == 1) {
            for (int i = 0; access("late.1.json", F_OK) && i < 60000; i++)
                fake_gpu_sleep(1000000);
            deliver(&held, sizeof held);    /* now it has run: launched while capture was on */
            launched++;
        }
    }
    PROF_SHUTDOWN();
    truth("{\"late\": 1}");
    return 0;
}

/* Flight mode: 100,000 quick steps of one kernel each under a 16 MiB cap,
   which holds three quarters of their records; then a trigger file. The dump
   holds the ring's kernels with their launches, and nothing was dropped:
   the records are trimmed to the ring as the run goes (by the profiler's
   thread: steps of a microsecond wait for it every 200). (Steps of a
   microsecond are too noisy for a slow step's dump to be the only one.) */
static int case_flight(void) {
    prof_config cfg = capture("flight.json");
    cfg.buffer_mb = 16;
    gpu_flight_on_trigger(&cfg, 2);
    fake_gpu_setup(1);
    bind_cupti();
    void *s = fake_gpu_stream(0, 4);
    slow_reads(2000000, 3);             /* capture start's reading, every try of it */
    PROF_INIT(&cfg);
    for (int step = 0; step < 100000; step++) {
        {
            PROF_SCOPE("work");
            launch("_Z4stepv", s, 100, 1, 32);
        }
        if (step % 200 == 199) prof_flush();    /* the time a step's real work gives the profiler's thread */
        if (step == 99999) gpu_trigger_now();
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    truth("{\"records\": %ld, \"buffers_allocated\": %ld}", launched, buffers_allocated);
    return 0;
}

/* cudaGraphLaunch of a captured graph (graph 7: four kernels and a copy,
   nodes 1-5) on stream: one runtime call, and what it ran, each with its
   graph and node ids and the launch's correlation. */
static void graph_launch(void *stream) {
    static const char *const kernels[4] = { "_Z5embedPf", "_Z9attentionPf", "_Z3mlpPf", "_Z6lmheadPf" };
    uint32_t c = ++corr;
    int64_t t0 = cupti_now();
    int dev;
    int64_t start[5], ns[5] = { 8000, 30000, 20000, 12000, 4000 };
    for (int i = 0; i < 5; i++) ran_until((start[i] = fake_gpu_launch_at(stream, ns[i], &dev)) + ns[i]);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, c, t0, cupti_now());
    for (int i = 0; i < 4; i++) {
        CUpti_ActivityKernel10 k;
        memset(&k, 0, sizeof k);
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.registersPerThread = 64;
        k.start = cupti_ts(dev, start[i]);
        k.end = cupti_ts(dev, start[i] + ns[i]);
        k.deviceId = (uint32_t)dev;
        k.streamId = cupti_stream_id(stream);
        k.gridX = k.gridY = k.gridZ = 1;
        k.blockX = 256, k.blockY = k.blockZ = 1;
        k.correlationId = c;
        k.graphId = 7;
        k.graphNodeId = (uint64_t)i + 1;
        k.name = kernels[i];
        emit(&k, sizeof k);
        launched++;
    }
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.bytes = 65536;
    m.start = cupti_ts(dev, start[4]);
    m.end = cupti_ts(dev, start[4] + ns[4]);
    m.deviceId = (uint32_t)dev;
    m.streamId = cupti_stream_id(stream);
    m.correlationId = c;
    m.graphId = 7;
    m.graphNodeId = 5;
    emit(&m, sizeof m);
    launched++;
}

/* The cycle's table, one truth line per row (GPU columns in ns). */
static void graph_ready(const prof_cycle *c, void *user) {
    (void)user;
    prof_cycle_write_trace(c, "graph.json");
    prof_cycle_write_trace(c, "graph.pftrace");
    prof_table t;
    if (!prof_cycle_table(c, PROF_SORT_NAME, 0, &t)) return;
    for (size_t i = 0; i < t.n; i++)
        truth("{\"row\": \"%s\", \"calls\": %llu, \"self_gpu_ns\": %lld, \"gpu_total_ns\": %lld}", t.rows[i].name,
              (unsigned long long)t.rows[i].calls, (long long)t.rows[i].self_gpu_ns, (long long)t.rows[i].gpu_total_ns);
    FILE *f = fopen("graph.table.txt", "w");
    if (f) {
        prof_table_print(&t, f, 0);
        fclose(f);
    }
    prof_table_free(&t);
}

/* An inference engine's decode loop: 10 steps, each a GPU region "decode"
   around one launch of the captured graph, at 20 us of launch latency.
   flight: the flight recorder keeps 3 steps and dumps them on a trigger at
   the last; else the 10 steps are one cycle. */
static int case_graph(int flight) {
    prof_config cfg = capture("graph.json");
    if (flight) {
        gpu_flight_on_trigger(&cfg, 3);
    } else {
        cfg.schedule.active = 10;
        cfg.schedule.repeat = 1;
        cfg.on_trace_ready = graph_ready;
    }
    device(20000);
    void *s = fake_gpu_stream(0, 21);
    PROF_INIT(&cfg);
    for (int step = 0; step < 10; step++) {
        {
            PROF_GPU_SCOPE("decode", s);
            graph_launch(s);
        }
        if (flight) fake_gpu_sleep(1000000);    /* the step's GPU work done by its end: drained there */
        if (flight && step == 9) gpu_trigger_now();
        if (step == 9) device_done();   /* the step that saves */
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    truth("{\"graph\": {\"steps\": 10, \"nodes\": 5}}");
    return 0;
}

/* A library that launches through the driver API, as cuBLAS does: in
   each of 2 recorded steps, a region "gemm" around two of its kernels
   (cuLaunchKernelEx, no runtime call), a region "relu" around a runtime
   launch (whose own cuLaunchKernel shares its correlation), and a driver
   call that launches nothing (cuCtxGetCurrent). */
static int case_driver(void) {
    prof_config cfg = capture("driver.json");
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    device(2000);
    nested_driver = 1;
    void *s = fake_gpu_stream(0, 6);
    PROF_INIT(&cfg);
    for (int step = 0; step < 2; step++) {
        {
            PROF_SCOPE("gemm");
            for (int i = 0; i < 2; i++) {
                driver_next = 1;
                launch("_Z14cutlass_sgemmv", s, 30000, 132, 128);
            }
        }
        {
            PROF_SCOPE("relu");
            launch("_Z4reluPfi", s, 5000, 64, 256);
        }
        int64_t t = cupti_now();
        api_call(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, ++corr, t, t);
        if (step == 1) device_done();   /* the step that saves */
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    truth("{\"driver\": {\"steps\": 2, \"library_kernels\": 2, \"runtime_kernels\": 1}}");
    return 0;
}

/* Capture follows the schedule: 11 steps of 1,000 launches each, one
   window of 2 steps with 1 step of warm-up before it (warmup 1), or none
   (warmup 0, the window's first step pays capture's start). CUPTI takes
   the runtime calls of the warm-up and recorded steps only: outside them
   a launch pays it nothing. No PROF_INIT: capture starts with the
   profiler, at the first region. */
static int case_windows(int warmup) {
    setenv("PROF_CUPTI", "1", 1);
    setenv("PROF_OUTPUT", "windows.json", 1);
    setenv("PROF_SCHEDULE", warmup ? "wait=8,warmup=1,active=2,repeat=1" : "wait=9,warmup=0,active=2,repeat=1", 1);
    fake_gpu_setup(1);
    bind_cupti();
    void *s = fake_gpu_stream(0, 8);
    for (int step = 0; step < 11; step++) {
        {
            PROF_SCOPE("forward");
            for (int i = 0; i < 1000; i++) launch("_Z4stepv", s, 100, 1, 32);
        }
        PROF_STEP();
    }
    long engine_flushes = flushes_here();   /* the steps', the save's among them */
    PROF_SHUTDOWN();
    truth("{\"windows\": {\"launches\": 11000, \"traced_calls\": %ld, \"traced_kernels\": %ld, "
          "\"enabled_after\": %d, \"engine_flushes\": %ld}}",
          taken(CUPTI_ACTIVITY_KIND_RUNTIME), taken(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), cupti_enabled(),
          engine_flushes);
    return 0;
}

/* The save waits up to a second for the window's work, then its flush is
   forced: a kernel still running then comes back with its start and no
   end, one not started with neither (CUPTI's records not complete). Two
   recorded steps, each a GPU region around a short kernel that has run by
   the save; the last step then launches a kernel of 100 ms, which ends
   within the wait and is in the trace, one of 10 s, which has started when
   the wait ends, and one queued behind it. Those two are counted lost and
   said, never drawn. */
static int case_incomplete(void) {
    prof_config cfg = capture("incomplete.json");
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    device(2000);
    void *s = fake_gpu_stream(0, 15);
    PROF_INIT(&cfg);
    for (int step = 0; step < 2; step++) {
        {
            PROF_GPU_SCOPE("layer", s);
            launch("_Z5shortv", s, 10000, 1, 32);
        }
        if (step == 1) {
            device_done();
            launch("_Z6mediumv", s, 100000000, 1, 32);
            launch("_Z7runningv", s, (int64_t)10 * 1000000000, 1, 32);
            launch("_Z6queuedv", s, 10000, 1, 32);
            fake_gpu_sleep(1000000);    /* the first has started on the device */
        }
        PROF_STEP();                    /* step 1's saves the cycle */
    }
    PROF_SHUTDOWN();
    truth("{\"incomplete\": {\"handed_back\": %ld}}", incomplete());
    return 0;
}

/* ---- synchronisation (CUPTI's SYNCHRONIZATION and CUDA_EVENT records) ----
   As CUPTI makes them: cudaEventRecord gives its runtime call and an event
   record (the event's id, the stream it was recorded on, the call's
   correlation); each synchronising call its runtime call and, under the
   same correlation, a synchronisation record whose start and end are the
   host's wait inside the call: on the stream synchronised or made to wait
   (cudaStreamWaitEvent, which does not wait on the host), on the event
   waited for, or neither (cudaDeviceSynchronize). The waits are the
   simulated device's: a stream synchronised waits for its queued work, a
   stream made to wait starts its next work after the event completes. */
static void *sync_events[8];            /* the program's events: CUPTI's id is the index + 1 */
static int nsync_events;
static uint64_t event_sync_ids;         /* cudaEventSyncId: one per record */
static uint64_t event_sync_id[8];       /* each event's last record's */
static int sync_recording;              /* the step is one the window records */

static uint32_t event_id(void *ev) {
    for (int i = 0; i < nsync_events; i++)
        if (sync_events[i] == ev) return (uint32_t)i + 1;
    sync_events[nsync_events] = ev;
    return (uint32_t)++nsync_events;
}

static void record_event(void *ev, void *stream) {
    uint32_t c = ++corr, id = event_id(ev);
    int64_t t0 = cupti_now();
    fake_event_record(ev, stream);
    CUpti_ActivityCudaEvent2 e = cupti_event(c, stream, id);
    e.cudaEventSyncId = event_sync_id[id - 1] = ++event_sync_ids;
    emit(&e, sizeof e);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, c, t0, cupti_now());
    if (sync_recording)
        truth("{\"record\": {\"corr\": %u, \"event\": %u, \"stream\": %u, \"done_ns\": %.0f}}", c, id, cupti_stream_id(stream),
              fake_gpu_host_ns(0, fake_event_done(ev)) + (double)FAKE_CUPTI_OFFSET_NS);
}

/* One synchronising call of CUPTI's type on stream and/or ev. */
static void sync_call(CUpti_ActivitySynchronizationType type, void *stream, void *ev) {
    static const uint32_t cbid[5] = { 0, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                                      CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 };
    static const char *const name[5] = { "", "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync" };
    uint32_t c = ++corr;
    int64_t t0 = cupti_now(), w0 = cupti_now(), done = 0;
    if (type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE) fake_event_sync(ev), done = fake_event_done(ev);
    else if (type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT) fake_stream_wait_event(stream, ev);
    else if (type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) done = fake_stream_sync(stream);
    else done = fake_device_sync(0);
    int64_t w1 = cupti_now();
    CUpti_ActivitySynchronization2 y =
        cupti_sync(type, c, w0, w1, stream, ev ? event_id(ev) : CUPTI_SYNCHRONIZATION_INVALID_VALUE,
                   ev ? event_sync_id[event_id(ev) - 1] : CUPTI_SYNCHRONIZATION_INVALID_VALUE);
    emit(&y, sizeof y);
    runtime_call(cbid[type], c, t0, cupti_now());
    if (sync_recording)
        truth("{\"sync\": {\"name\": \"%s\", \"corr\": %u, \"call_t0\": %lld, \"t0\": %lld, \"t1\": %lld, \"stream\": %lld, "
              "\"event\": %lld, \"done_ns\": %.0f}}",
              name[type], c, (long long)t0, (long long)w0, (long long)w1,
              stream ? (long long)cupti_stream_id(stream) : -1LL, ev ? (long long)event_id(ev) : -1LL,
              done ? fake_gpu_host_ns(0, done) + (double)FAKE_CUPTI_OFFSET_NS : 0.0);
}

static void sync_formats(const prof_cycle *c, void *user) { gpu_write_both(c, "sync", (int *)user); }

/* Six steps, steps 2-4 recorded (step 1 warms up): in each, a kernel on
   stream 13, its event recorded; stream 14 made to wait for it, then a
   kernel there; the host waits for the event, then for stream 14, then,
   after one more kernel on stream 13, for the device. Every step's four
   synchronisations are CUPTI's records only while capture is on. */
static int case_sync(void) {
    static int cycles;
    prof_config cfg = capture("sync.json");
    gpu_kernels_schedule(&cfg, sync_formats, &cycles);
    fake_gpu_setup(1);
    fake_gpu_clock(0, 1.0001, 5000000000);
    fake_gpu_latency(2000);
    bind_cupti();
    void *s1 = fake_gpu_stream(0, 13), *s2 = fake_gpu_stream(0, 14), *ev = NULL;
    fake_event_create(&ev);
    PROF_INIT(&cfg);
    for (int step = 0; step < 6; step++) {
        sync_recording = step >= 2 && step <= 4;
        {
            PROF_SCOPE("step");
            launch("_Z7producev", s1, 300000, 64, 256);
            record_event(ev, s1);
            sync_call(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, s2, ev);
            launch("_Z7consumev", s2, 200000, 64, 256);
            sync_call(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, NULL, ev);
            sync_call(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, s2, NULL);
            launch("_Z6updatev", s1, 100000, 64, 256);
            sync_call(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, NULL, NULL);
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    fake_event_destroy(ev);
    truth("{\"taken\": {\"syncs\": %ld, \"records\": %ld, \"enabled_after\": %d}}",
          taken(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION), taken(CUPTI_ACTIVITY_KIND_CUDA_EVENT), cupti_enabled());
    return 0;
}

/* ---- CUDA graphs attributed to capture time (the double's graph-node
   callbacks) ---- */
#define GRAPH_MAX 16
typedef struct graph {
    uint32_t id, exec;                  /* the captured graph's and its instance's */
    int n;
    void *node[GRAPH_MAX], *clone[GRAPH_MAX];
    const char *kernel[GRAPH_MAX];
    int64_t ns[GRAPH_MAX];
} graph;

/* kernel<<<..., stream>>> while stream captures into g: the launch call
   (CUPTI records it while RUNTIME is on), the work into the capture's
   graph, and the node the driver makes for it, whose callback CUPTI runs
   on this thread inside the call. */
static void captured_launch(graph *g, const char *kernel, void *stream, int64_t ns) {
    int64_t t0 = cupti_now();
    fake_gpu_launch(stream, ns);
    g->node[g->n] = graph_node(g->id);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, ++corr, t0, cupti_now());
    g->kernel[g->n] = kernel;
    g->ns[g->n++] = ns;
}

/* cudaGraphInstantiate: every node cloned into the instance. */
static void instantiate(graph *g) {
    g->exec = graph_new();
    for (int i = 0; i < g->n; i++) g->clone[i] = graph_clone(g->node[i], g->exec);
}

/* cudaGraphLaunch of g's instance: one runtime call, and each node's
   kernel with the instance's graph id and its clone's node id. */
static void replay(const graph *g, void *stream) {
    uint32_t c = ++corr;
    int64_t t0 = cupti_now(), start[GRAPH_MAX];
    int dev = 0;
    for (int i = 0; i < g->n; i++) ran_until((start[i] = fake_gpu_launch_at(stream, g->ns[i], &dev)) + g->ns[i]);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, c, t0, cupti_now());
    for (int i = 0; i < g->n; i++) {
        CUpti_ActivityKernel10 k;
        memset(&k, 0, sizeof k);
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.registersPerThread = 32;
        k.start = cupti_ts(dev, start[i]);
        k.end = cupti_ts(dev, start[i] + g->ns[i]);
        k.deviceId = (uint32_t)dev;
        k.streamId = cupti_stream_id(stream);
        k.gridX = k.gridY = k.gridZ = 1;
        k.blockX = 128, k.blockY = k.blockZ = 1;
        k.correlationId = c;
        k.graphId = g->exec;
        k.graphNodeId = node_id(g->clone[i]);
        k.name = g->kernel[i];
        emit(&k, sizeof k);
        launched++;
    }
}

static void graph_regions_ready(const prof_cycle *c, void *user) {
    (void)user;
    prof_cycle_write_trace(c, "graph_regions.json");
    prof_cycle_write_trace(c, "graph_regions.pftrace");
    prof_table t;
    if (!prof_cycle_table(c, PROF_SORT_NAME, PROF_GROUP_CAPTURE, &t)) return;
    for (size_t i = 0; i < t.n; i++)
        truth("{\"row\": \"%s\", \"calls\": %llu, \"gpu_total_ns\": %lld}", t.rows[i].name,
              (unsigned long long)t.rows[i].calls, (long long)t.rows[i].gpu_total_ns);
    prof_table_free(&t);
}

/* A decode engine's graphs. Step 0, before the window (wait=1, warmup=1,
   active=3): graph A is captured on stream s inside GPU regions model >
   layer0 and model > layer1 (one kernel in model, three in each layer),
   then instantiated (its nodes cloned). Step 2, recorded: graph B is
   captured inside a CPU region prefill > GPU region layer0 (two kernels).
   Steps 2-4 each replay A 4 times and B once inside a GPU region decode,
   and launch one kernel outside any graph. A thread with no region open
   captures graph C (one kernel), replayed once in step 4. busy: another
   CUPTI client holds the subscription (FAKE_CUPTI_SUBSCRIBED). */
static int case_graph_regions(int busy) {
    static graph a, b, cg;
    prof_config cfg = capture("graph_regions.json");
    cfg.schedule.wait = 1;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = 3;
    cfg.schedule.repeat = 1;
    cfg.on_trace_ready = graph_regions_ready;
    if (busy) setenv("FAKE_CUPTI_SUBSCRIBED", "1", 1);
    device(2000);
    void *s = fake_gpu_stream(0, 31);
    PROF_INIT(&cfg);
    static const char *const layer_kernels[2][3] = { { "_Z4qkv0v", "_Z5attn0v", "_Z4mlp0v" },
                                                     { "_Z4qkv1v", "_Z5attn1v", "_Z4mlp1v" } };
    for (int step = 0; step < 5; step++) {
        if (step == 0) {
            cudaGraph_t cap = NULL;
            a.id = graph_new();
            if (cudaStreamBeginCapture((cudaStream_t)s, cudaStreamCaptureModeGlobal) != cudaSuccess) return 1;
            {
                PROF_GPU_SCOPE("model", s);
                captured_launch(&a, "_Z5embedv", s, 3000);
                {
                    PROF_GPU_SCOPE("layer0", s);
                    for (int i = 0; i < 3; i++) captured_launch(&a, layer_kernels[0][i], s, 5000);
                }
                {
                    PROF_GPU_SCOPE("layer1", s);
                    for (int i = 0; i < 3; i++) captured_launch(&a, layer_kernels[1][i], s, 5000);
                }
            }
            if (cudaStreamEndCapture((cudaStream_t)s, &cap) != cudaSuccess || fake_gpu_graph_nodes(cap) != 7) return 1;
            cudaGraphDestroy(cap);
            instantiate(&a);
            cg.id = graph_new();        /* no region open on this thread */
            captured_launch(&cg, "_Z6loose0v", s, 1000);
            instantiate(&cg);
        }
        if (step == 2) {
            cudaGraph_t cap = NULL;
            b.id = graph_new();
            if (cudaStreamBeginCapture((cudaStream_t)s, cudaStreamCaptureModeGlobal) != cudaSuccess) return 1;
            {
                PROF_SCOPE("prefill");
                PROF_GPU_SCOPE("layer0", s);
                for (int i = 0; i < 2; i++) captured_launch(&b, i ? "_Z8prefill1v" : "_Z8prefill0v", s, 4000);
            }
            if (cudaStreamEndCapture((cudaStream_t)s, &cap) != cudaSuccess || fake_gpu_graph_nodes(cap) != 2) return 1;
            cudaGraphDestroy(cap);
            instantiate(&b);
        }
        if (step >= 2) {
            {
                PROF_GPU_SCOPE("decode", s);
                for (int r = 0; r < 4; r++) replay(&a, s);
                replay(&b, s);
                if (step == 4) replay(&cg, s);
            }
            launch("_Z6samplev", s, 2000, 1, 32);
        }
        if (step == 4) device_done();
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    truth("{\"graph_regions\": {\"callbacks\": %ld, \"nodes\": %d}}", callbacks(), a.n + b.n + cg.n);
    return 0;
}

static int run(const char *name) {
    if (!strcmp(name, "cupti_sync") || !strcmp(name, "cupti_sync_refused")) return case_sync();
    if (!strcmp(name, "cupti_graph_regions")) return case_graph_regions(0);
    if (!strcmp(name, "cupti_graph_regions_busy")) return case_graph_regions(1);
    if (!strcmp(name, "cupti_driver")) return case_driver();
    if (!strcmp(name, "cupti_windows")) return case_windows(1);
    if (!strcmp(name, "cupti_windows_nowarmup")) return case_windows(0);
    if (!strcmp(name, "cupti_flight")) return case_flight();
    if (!strcmp(name, "cupti_late")) return case_late();
    if (!strcmp(name, "cupti_incomplete")) return case_incomplete();
    if (!strcmp(name, "cupti_kernels") || !strcmp(name, "cupti_loaded"))
        return case_kernels(2000);
    if (!strcmp(name, "cupti_latency_20")) return case_kernels(20000);
    if (!strcmp(name, "cupti_latency_50")) return case_kernels(50000);
    if (!strcmp(name, "cupti_graph")) return case_graph(0);
    if (!strcmp(name, "cupti_graph_flight")) return case_graph(1);
    if (!strcmp(name, "cupti_drops")) return case_drops();
    if (!strncmp(name, "cupti_unusable", 14)) return case_unusable();
    return 2;
}

int main(int argc, char **argv) { return gpu_test_main(argc, argv, "cuda", run); }
