/* GPU regions through prof_cuda.h (prof_hip.h with -DGPU_TEST_HIP) against
   the runtime doubles: where regions land on the CPU timeline, asynchrony,
   the event pool over a million regions, failures. Each case runs in its
   own process (GPU timing that fails stays off for the run); check_gpu.py
   runs it and checks the traces it writes. Built as C11, and as C++17 by
   gpu_test.cpp, where PROF_GPU_SCOPE is a destructor. */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#ifdef GPU_TEST_HIP
#include "prof_hip.h"
#define RT(name) hip##name
#define RT_MALLOC prof_hipMalloc
#define RT_FREE prof_hipFree
#define BACKEND "hip"
typedef hipStream_t gpu_stream;
#else
#include "prof_cuda.h"
#define RT(name) cuda##name
#define RT_MALLOC prof_cudaMalloc
#define RT_FREE prof_cudaFree
#define BACKEND "cuda"
typedef cudaStream_t gpu_stream;
#endif

#include <pthread.h>

#include "fake_gpu.h"
#include "../robustness/sanitized.h"
#include "gpu_test.h"

#define MS 1000000
#define US 1000

static int step_no;                     /* the step being run */

static prof_config config(const char *output) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);        /* C++17 has no designated initialisers */
    cfg.output = output;
    cfg.quiet = 1;                      /* stderr carries prof.h's GPU message alone */
    return cfg;
}

static void set_device(int d) { (void)RT(SetDevice)(d); }

/* One device with one engine stream (its id), and prof.h started. */
static gpu_stream start(const prof_config *cfg, unsigned long long stream_id) {
    fake_gpu_setup(1);
    gpu_stream s = (gpu_stream)fake_gpu_stream(0, stream_id);
    PROF_INIT(cfg);
    return s;
}

/* ---- truth: where each GPU region really ran --------------------------------
   The double keeps the device time of the last event this thread recorded
   on an engine stream; read right after PROF_GPU_BEGIN and PROF_GPU_END, it
   is the true start and end of the region. A region that recorded nothing
   (outside a recording window) leaves the sequence number unchanged. */

typedef struct truth_region {
    const char *name;
    void *stream;
    int began;
    fake_gpu_mark m0;
} truth_region;

static uint64_t mark_seq(void) {
    fake_gpu_mark m;
    fake_gpu_last(&m);
    return m.seq;
}

static void truth_begin(truth_region *t, const char *name, void *stream, uint64_t seq) {
    t->name = name;
    t->stream = stream;
    t->began = fake_gpu_last(&t->m0) && t->m0.seq != seq;
}

/* key: the stream as the test knows it (HIP's ids are prof.h's own) */
static void truth_end(const truth_region *t, uint64_t seq) {
    fake_gpu_mark m1;
    if (!t->began || !fake_gpu_last(&m1) || m1.seq == seq) return;
    truth("{\"region\": \"%s\", \"step\": %d, \"seq\": %llu, \"dev\": %d, \"stream\": %llu, "
          "\"key\": %llu, \"host0\": %.1f, \"host1\": %.1f}",
          t->name, step_no, (unsigned long long)t->m0.seq, t->m0.device, t->m0.stream_id, (unsigned long long)(uintptr_t)t->stream,
          fake_gpu_host_ns(t->m0.device, t->m0.dev_ns), fake_gpu_host_ns(m1.device, m1.dev_ns));
}

static void gpu_begin(truth_region *t, const char *name, gpu_stream s) {
    uint64_t seq = mark_seq();
    PROF_GPU_BEGIN(name, s);
    truth_begin(t, name, (void *)s, seq);
}

static void gpu_end(const truth_region *t, gpu_stream s) {
    uint64_t seq = mark_seq();
    PROF_GPU_END(s);
    truth_end(t, seq);
}

/* A region in the scope form around one kernel. */
static void region(const char *name, gpu_stream s, int64_t kernel_ns) {
    truth_region t;
    uint64_t seq = mark_seq();
    {
        PROF_GPU_SCOPE(name, s);
        truth_begin(&t, name, (void *)s, seq);
        if (kernel_ns) fake_gpu_launch((void *)s, kernel_ns);
        seq = mark_seq();
    }
    truth_end(&t, seq);
}

/* An instant at a known CLOCK_MONOTONIC time: how the checker maps host
   times to trace times. */
static void marker(void) {
    int64_t a = fake_gpu_now();
    PROF_INSTANT("marker");
    int64_t b = fake_gpu_now();
    truth("{\"marker\": %.1f, \"half\": %.1f, \"step\": %d}", (double)(a + b) / 2, (double)(b - a) / 2, step_no);
}

static void truth_stats(void) {
    fake_gpu_stats st;
    fake_gpu_get_stats(&st);
    truth("{\"stats\": {\"events_created\": %ld, \"events_live\": %ld, \"streams_created\": %ld, "
          "\"streams_live\": %ld, \"private_records\": %ld, \"engine_syncs\": %ld, \"not_ready\": %ld, "
          "\"misuse\": %ld}}",
          st.events_created, st.events_live, st.streams_created, st.streams_live, st.private_records,
          st.engine_syncs, st.not_ready, st.misuse);
}

/* ---- placement: 2 devices whose clocks drift and are offset, 3 streams and
   each device's default stream, nesting, a warm-up step thrown away ------ */

static gpu_stream s_a, s_b, s_c;

/* What a trace-ready handler sees: the table and the cycle's events. */
static void placement_ready(const prof_cycle *c, void *user) {
    (void)user;
    prof_cycle_write_trace(c, "placement.json");
    prof_cycle_write_trace(c, "placement.pftrace");     /* the same, in Perfetto's format */
    prof_table t;
    if (prof_cycle_table(c, PROF_SORT_NAME, 0, &t)) {
        for (size_t i = 0; i < t.n; i++) {
            const prof_row *r = &t.rows[i];
            truth("{\"row\": \"%s\", \"calls\": %llu, \"self_ns\": %lld, \"total_ns\": %lld, "
                  "\"self_gpu_ns\": %lld, \"gpu_total_ns\": %lld}",
                  r->name, (unsigned long long)r->calls, (long long)r->self_ns, (long long)r->total_ns,
                  (long long)r->self_gpu_ns, (long long)r->gpu_total_ns);
        }
        truth("{\"table\": {\"has_gpu\": %d, \"self_gpu_sum_ns\": %lld}}", t.has_gpu, (long long)t.self_gpu_sum_ns);
        FILE *f = fopen("table.txt", "w");
        if (f) {
            prof_table_print(&t, f, 0);
            fclose(f);
        }
        prof_table_free(&t);
    }
    for (size_t i = 0; i < prof_cycle_gpu_count(c); i++) {
        prof_gpu_event g;
        if (prof_cycle_gpu_event(c, i, &g))
            truth("{\"gpu_event\": \"%s\", \"device\": %d, \"stream\": %lld, \"correlation\": %u, "
                  "\"ts_ns\": %lld, \"dur_ns\": %lld}",
                  g.name, g.device, g.stream, (unsigned)g.correlation, (long long)g.ts_ns, (long long)g.dur_ns);
    }
    for (size_t i = 0; i < prof_cycle_event_count(c); i++) {
        prof_event e;
        if (prof_cycle_event(c, i, &e) && e.kind == PROF_EVENT_REGION && e.value != 0)
            truth("{\"cpu_gpu\": \"%s\", \"correlation\": %.0f, \"ts_ns\": %lld, \"dur_ns\": %lld}", e.name,
                  e.value, (long long)e.ts_ns, (long long)e.dur_ns);
    }
}

static void placement_step(int64_t cpu_ns) {
    truth_region fwd, inner;
    marker();
    PROF_BEGIN("step_body");
    gpu_begin(&fwd, "fwd", s_a);
    fake_gpu_launch((void *)s_a, 3 * MS);
    gpu_begin(&inner, "fwd.inner", s_a);
    fake_gpu_launch((void *)s_a, 1 * MS);
    gpu_end(&inner, s_a);
    fake_gpu_launch((void *)s_a, MS / 2);
    gpu_end(&fwd, s_a);
    region("comm", s_b, 2 * MS);
    set_device(1);
    region("dev1", s_c, 4 * MS);
    region("dflt1", NULL, 1 * MS);      /* device 1's default stream */
    set_device(0);
    region("dflt0", NULL, 1 * MS);      /* device 0's */
    PROF_END();
    PROF_BEGIN("cpu_only");
    PROF_END();
    fake_gpu_sleep(cpu_ns);             /* the CPU's part of the step */
    PROF_STEP();
}

/* wait 1, warm up 1, `active` recorded steps, one more after the cycle;
   work reaches the devices latency_ns after it is submitted. */
static int placement(int active, int64_t step_ns, int64_t latency_ns) {
    fake_gpu_setup(2);
    fake_gpu_latency(latency_ns);
    fake_gpu_clock(0, 1.0 + 50e-6, 1000LL * 1000000000); /* 50 ppm fast, 1000 s ahead */
    fake_gpu_clock(1, 1.0 - 30e-6, 3LL * 1000000000);    /* 30 ppm slow */
    s_a = (gpu_stream)fake_gpu_stream(0, 7);
    s_b = (gpu_stream)fake_gpu_stream(0, 13);
    s_c = (gpu_stream)fake_gpu_stream(1, 21);
    prof_config cfg = config("unused.json");
    cfg.schedule.wait = 1;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = active;
    cfg.schedule.repeat = 1;
    cfg.on_trace_ready = placement_ready;
    PROF_INIT(&cfg);
    truth("{\"config\": {\"active\": %d, \"step_ns\": %lld, \"rate\": [%.9f, %.9f], \"latency_ns\": %lld}}", active,
          (long long)step_ns, 1.0 + 50e-6, 1.0 - 30e-6, (long long)latency_ns);
    for (step_no = 0; step_no < active + 3; step_no++) placement_step(step_ns);
    PROF_SHUTDOWN();
    truth_stats();
    return 0;
}

/* ---- asynchrony: a region still running at a step is resolved later, on
   the profiler's thread, and no step waits for the GPU, not even the save:
   the engine's thread makes no runtime call but event records (and, the
   first time, the events and the stream's identity) ----------------------- */

static int async_case(void) {
    fake_gpu_stats st;
    prof_config cfg = config("async.json");
    cfg.schedule.active = 3;
    cfg.schedule.repeat = 1;
    gpu_stream s = start(&cfg, 5);
    static const char *const names[] = { "long", "short", "last" };
    static const int64_t kernel[] = { 400 * MS, 1 * MS, 1 * MS };
    for (step_no = 0; step_no < 3; step_no++) {
        marker();
        region(names[step_no], s, kernel[step_no]);
        PROF_STEP();
        /* the step returned with the GPU 400 ms behind, the save too */
        expect(fake_gpu_pending() > 0, "a step returned only after the GPU had finished");
        prof_flush();                   /* the profiler's thread has done the step's job */
        fake_gpu_get_stats(&st);
        if (step_no < 2) {
            expect(st.engine_syncs == 0, "a step before the save waited for an engine event");
            expect(st.not_ready > 0, "the unfinished region was not queried");
            expect(fake_gpu_pending() > 0, "the profiler's thread waited before the save");
        } else {
            expect(st.engine_syncs > 0, "the save did not wait for the unfinished regions");
            expect(fake_gpu_pending() == 0, "the save was written before the GPU had finished");
        }
    }
    long calls[FAKE_NCALLS];
    fake_gpu_thread_calls(calls);
    truth("{\"engine_calls\": {\"record\": %ld, \"create\": %ld, \"stream_info\": %ld, \"query\": %ld, "
          "\"sync\": %ld, \"elapsed\": %ld, \"stream_create\": %ld, \"capturing\": %ld}}",
          calls[FAKE_EVENT_RECORD], calls[FAKE_EVENT_CREATE], calls[FAKE_STREAM_INFO], calls[FAKE_EVENT_QUERY],
          calls[FAKE_EVENT_SYNC], calls[FAKE_ELAPSED], calls[FAKE_STREAM_CREATE], calls[FAKE_CAPTURE_STATUS]);
    PROF_SHUTDOWN();
    truth_stats();
    return 0;
}

/* ---- the pool: a million regions over 10,000 steps (2,000 under a
   sanitizer) on 3 streams of 2 devices, a cycle every 10 steps; every
   region is in its cycle ---------------------------------------------- */

#define POOL_STEPS (SANITIZED ? 2000 : 10000)
#define POOL_PER_STEP 100

static struct { uint64_t gpu, cpu; long bad; int cycles; } pool;

static int u32_cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Every GPU region has its CPU side in the cycle, by correlation, once. */
static void pool_ready(const prof_cycle *c, void *user) {
    (void)user;
    size_t n = prof_cycle_gpu_count(c), cpu = 0;
    uint32_t *corr = (uint32_t *)malloc(n * sizeof *corr + 1);
    if (!corr) abort();
    for (size_t i = 0; i < n; i++) {
        prof_gpu_event g;
        prof_cycle_gpu_event(c, i, &g);
        corr[i] = g.correlation;
        if (g.dur_ns < 0) pool.bad++;
    }
    qsort(corr, n, sizeof *corr, u32_cmp);
    for (size_t i = 1; i < n; i++)
        if (corr[i] == corr[i - 1]) pool.bad++;
    for (size_t i = 0; i < prof_cycle_event_count(c); i++) {
        prof_event e;
        if (!prof_cycle_event(c, i, &e) || e.kind != PROF_EVENT_REGION || e.value == 0) continue;
        uint32_t k = (uint32_t)e.value;
        cpu++;
        if (!bsearch(&k, corr, n, sizeof k, u32_cmp)) pool.bad++;
    }
    if (cpu != n) pool.bad++;
    pool.gpu += n;
    pool.cpu += cpu;
    pool.cycles++;
    free(corr);
}

static int pool_case(void) {
    fake_gpu_setup(2);
    gpu_stream s[3];
    s[0] = (gpu_stream)fake_gpu_stream(0, 1);
    s[1] = (gpu_stream)fake_gpu_stream(0, 2);
    s[2] = (gpu_stream)fake_gpu_stream(1, 3);
    static const int dev[3] = { 0, 0, 1 };
    prof_config cfg = config("unused.json");
    cfg.schedule.active = 10;
    cfg.on_trace_ready = pool_ready;
    PROF_INIT(&cfg);
    for (step_no = 0; step_no < POOL_STEPS; step_no++) {
        for (int i = 0; i < POOL_PER_STEP; i++) {
            int k = i % 3;
            if (k != 1) set_device(dev[k]);
            PROF_GPU_BEGIN("pooled", s[k]);
            PROF_GPU_END(s[k]);
        }
        PROF_STEP();
        prof_flush();                   /* the time a step's real work gives the profiler's thread */
    }
    set_device(0);
    PROF_SHUTDOWN();
    fake_gpu_stats st;
    fake_gpu_get_stats(&st);
    truth("{\"pool\": {\"regions\": %d, \"gpu\": %llu, \"cpu\": %llu, \"bad\": %ld, \"cycles\": %d}}",
          POOL_STEPS * POOL_PER_STEP, (unsigned long long)pool.gpu, (unsigned long long)pool.cpu, pool.bad,
          pool.cycles);
    truth_stats();
    expect(pool.gpu == (uint64_t)POOL_STEPS * POOL_PER_STEP, "GPU regions missing from the cycles");
    expect(pool.cpu == (uint64_t)POOL_STEPS * POOL_PER_STEP, "CPU sides of GPU regions missing");
    expect(pool.bad == 0, "a GPU region without its CPU side, or twice");
    /* a cycle each 10 steps; the window open at shutdown has no step and
       no event: no cycle, no trace */
    expect(pool.cycles == POOL_STEPS / 10, "cycles missing, or an empty one handed over");
    /* A ring of 256 pairs (100 in flight per step, drained at each step by
       the profiler's thread) of 2 events, 32 pairs ready per device, 3
       probes and a few anchors, within the ring's worth: events are reused,
       not made per region, even as the regions alternate devices and slots
       meet the other device. */
    expect(st.events_created <= 2 * 256 + 3 + 16, "events are not reused");
    /* each stream's identity asked once (its device, its id), not at each
       switch between the three */
    long calls[FAKE_NCALLS];
    fake_gpu_thread_calls(calls);
    expect(calls[FAKE_STREAM_INFO] == 3 * 2, "a stream's identity asked again");
    return 0;
}

/* ---- threads: each thread has its own ring; a thread that exits leaves
   its ring to the next one; the resolver runs while they record --------- */

static gpu_stream s_w;

static void *worker(void *arg) {
    const char *name = (const char *)arg;
    PROF_THREAD_NAME(name);
    for (int i = 0; i < 2000; i++) {
        {
            PROF_GPU_SCOPE(name, s_w);
            fake_gpu_launch((void *)s_w, 5 * US);
        }
        fake_gpu_sleep(10 * US);
    }
    return NULL;
}

static int threads_case(void) {
    prof_config cfg = config("threads.json");
    gpu_stream s_m = start(&cfg, 12);
    s_w = (gpu_stream)fake_gpu_stream(0, 11);
    PROF_THREAD_NAME("main");
    static const char *const names[] = { "worker_a", "worker_b" };
    for (int w = 0; w < 2; w++) {
        pthread_t t;
        pthread_create(&t, NULL, worker, (void *)names[w]);
        for (int i = 0; i < 100; i++) {
            { PROF_GPU_SCOPE("main_region", s_m); }
            PROF_STEP();
            fake_gpu_sleep(200 * US);
        }
        pthread_join(t, NULL);
    }
    PROF_SHUTDOWN();
    truth_stats();
    return 0;
}

/* ---- a region still open at PROF_SHUTDOWN (a C++ guard in main) must not
   touch the events shutdown released --------------------------------------- */

static int open_at_shutdown(void) {
    prof_config cfg = config("open.json");
    gpu_stream s = start(&cfg, 3);
    region("closed", s, 10 * US);
    PROF_GPU_BEGIN("open", s);
    PROF_SHUTDOWN();
    PROF_GPU_END(s);
    truth_stats();
    return 0;
}

/* ---- a hang on the GPU: with no step for PROF_WATCHDOG seconds, the
   watchdog names the GPU region whose kernel never ends (its end event
   recorded, never completed) and the one the thread is inside (its end
   not recorded yet), and dumps the flight recorder's ring with the GPU
   regions that finished in its steps ------------------------------------- */

static int hang_case(void) {
    prof_config cfg = config("hang.json");
    cfg.flight_steps = 3;
    cfg.flight_slow = -1;               /* no slow-step dumps: only the watchdog's */
    cfg.watchdog_s = 1;
    gpu_stream s = start(&cfg, 5);
    for (step_no = 0; step_no < 5; step_no++) {
        region("step_kernel", s, 100 * US);
        fake_gpu_sleep(MS);             /* done by the step's end: drained there */
        PROF_STEP();
    }
    region("stuck", s, (int64_t)3600 * 1000 * MS);    /* an hour: it never ends here */
    PROF_GPU_BEGIN("waiting", s);
    /* no step: the watchdog fires after 1 to 2 s; inside until it has
       dumped, however late its thread ran (a minute at most) */
    for (int i = 0; i < 6000; i++) {
        FILE *dump = fopen("hang.hang-5.json", "r");    /* written whole, then renamed */
        if (dump) {
            fclose(dump);
            break;
        }
        fake_gpu_sleep(10 * MS);
    }
    PROF_GPU_END(s);
    PROF_SHUTDOWN();
    return 0;
}

/* ---- the memory cap: a window's GPU regions are bounded by PROF_BUFFER_MB
   as its CPU records are; the rest are dropped, counted and reported ---- */

static int cap_case(void) {
    prof_config cfg = config("cap.json");
    cfg.buffer_mb = 1;                  /* 32,752 records; GPU results: 1 MiB */
    gpu_stream s = start(&cfg, 4);
    for (step_no = 0; step_no < 30; step_no++) {
        for (int i = 0; i < 1000; i++) {
            PROF_GPU_BEGIN("capped", s);
            PROF_GPU_END(s);
        }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    truth("{\"cap\": {\"regions\": 30000}}");
    truth_stats();
    return 0;
}

/* ---- failures: one message, GPU timing off, CPU recording goes on --------
   3 cycles of 2 steps; each step has a CPU region and two GPU regions. The
   failure comes at the step and place the plan says. */

enum { AT_STEP_START, BEFORE_BEGIN, INSIDE, BEFORE_STEP };

static const struct {
    const char *kind;
    fake_call call;
    int err, step, where;
} plans[] = {
    { "no_device", FAKE_DEVICE_COUNT, RT(ErrorNoDevice), 0, AT_STEP_START },
    { "no_driver", FAKE_DEVICE_COUNT, RT(ErrorInsufficientDriver), 0, AT_STEP_START },
    { "stream", FAKE_STREAM_CREATE, RT(ErrorMemoryAllocation), 0, AT_STEP_START },
    { "anchor", FAKE_EVENT_SYNC, RT(ErrorLaunchFailure), 2, AT_STEP_START },
    { "record_begin", FAKE_EVENT_RECORD, RT(ErrorLaunchFailure), 2, BEFORE_BEGIN },
    { "record_end", FAKE_EVENT_RECORD, RT(ErrorLaunchFailure), 2, INSIDE },
    { "query", FAKE_EVENT_QUERY, RT(ErrorIllegalAddress), 2, AT_STEP_START },
    { "elapsed", FAKE_ELAPSED, RT(ErrorLaunchFailure), 2, AT_STEP_START },
    { "sync", FAKE_EVENT_SYNC, RT(ErrorIllegalAddress), 3, BEFORE_STEP },
};

static int failure(const char *kind) {
    size_t p = 0, np = sizeof plans / sizeof plans[0];
    while (p < np && strcmp(plans[p].kind, kind)) p++;
    if (p == np) return 2;
    prof_config cfg = config("fail.json");
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 3;
    gpu_stream s = start(&cfg, 9);
    /* the first cycle without GPU regions */
    truth("{\"failure\": {\"kind\": \"%s\", \"error\": \"%s\", \"cycle\": %d}}", kind,
          RT(GetErrorName)((RT(Error_t))plans[p].err), plans[p].step / 2 + 1);
    for (step_no = 0; step_no < 6; step_no++) {
        int here = step_no == plans[p].step;
        if (here) prof_flush();         /* the cycles before resolved, on the profiler's thread, without it */
        if (here && plans[p].where == AT_STEP_START) fake_gpu_fail(plans[p].call, plans[p].err, 0);
        PROF_BEGIN("c");
        PROF_END();
        region("g1", s, 100 * US);
        if (here && plans[p].where == BEFORE_BEGIN) fake_gpu_fail(plans[p].call, plans[p].err, 0);
        PROF_GPU_BEGIN("g2", s);
        if (here && plans[p].where == INSIDE) fake_gpu_fail(plans[p].call, plans[p].err, 0);
        fake_gpu_launch((void *)s, 100 * US);
        PROF_GPU_END(s);
        if (here && plans[p].where == BEFORE_STEP) fake_gpu_fail(plans[p].call, plans[p].err, 0);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    truth_stats();
    return 0;
}

/* The allocation wrappers take what the runtime's own calls take: void ** in
   C and C++, and in C++ any T ** too, like cudaMalloc's template (float *p;
   prof_cudaMalloc(&p, n) builds disabled, so it must build enabled). */
static int typed_malloc(void) {
    prof_config cfg = config("typed.json");
    (void)start(&cfg, 3);
#ifdef __cplusplus
    float *p = nullptr;
#else
    void *p = NULL;
#endif
    int ok = RT_MALLOC(&p, 1024) == RT(Success);
    long long live = (long long)prof_mem_allocated(0);
    ok = ok && RT_FREE(p) == RT(Success);
    printf("typed_malloc: ok %d, %lld bytes live, then %lld\n", ok, live, (long long)prof_mem_allocated(0));
    PROF_SHUTDOWN();
    return 0;
}

/* ---- stream capture: 4 steps, each a region on the engine's blocking
   stream, then a graph captured on it (global mode, the runtime's default)
   around a GPU region of three kernels, a region begun before the capture
   and ended inside it, and a region on the legacy stream (which a blocking
   stream's capture makes unusable); the profiler's thread resolves the
   earlier regions meanwhile (prof_flush). Each capture must end valid with
   its three kernels, and its graph's launch complete; the regions inside
   it are CPU regions, said once, and the others keep their GPU sides. -- */

static int capture_case(void) {
    prof_config cfg = config("capture.json");
    cfg.schedule.active = 4;
    cfg.schedule.repeat = 1;
    gpu_stream s = start(&cfg, 7);
    RT(Graph_t) graphs[4];
    for (step_no = 0; step_no < 4; step_no++) {
        region("before", s, 50 * US);
        PROF_GPU_BEGIN("straddle", s);
        RT(Error_t) begun = RT(StreamBeginCapture)(s, RT(StreamCaptureModeGlobal));
        {
            PROF_GPU_SCOPE("captured", s);
            for (int k = 0; k < 3; k++) fake_gpu_launch((void *)s, 20 * US);
        }
        PROF_GPU_END(s);
        { PROF_GPU_SCOPE("legacy", (gpu_stream)0); }
        prof_flush();                   /* the profiler's thread queries "before"'s events meanwhile */
        enum RT(StreamCaptureStatus) st;
        RT(Error_t) during = RT(StreamIsCapturing)(s, &st);
        RT(Error_t) ended = RT(StreamEndCapture)(s, &graphs[step_no]);
        RT(Error_t) last = RT(GetLastError)();
        truth("{\"capture\": {\"begin\": \"%s\", \"status\": %d, \"status_ok\": \"%s\", \"end\": \"%s\", "
              "\"nodes\": %d, \"last_error\": \"%s\"}}",
              RT(GetErrorName)(begun), (int)st, RT(GetErrorName)(during), RT(GetErrorName)(ended),
              fake_gpu_graph_nodes(graphs[step_no]), RT(GetErrorName)(last));
        if (graphs[step_no]) fake_gpu_graph_launch(graphs[step_no], (void *)s);
        region("after", s, 10 * US);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    fake_gpu_sleep(MS);                 /* every graph's work done on the device */
    fake_gpu_stats st;
    fake_gpu_get_stats(&st);
    truth("{\"graphs\": {\"nodes_run\": %ld, \"invalidated\": %ld}}", st.graph_nodes_run, st.invalidated);
    for (int i = 0; i < 4; i++)
        if (graphs[i]) (void)RT(GraphDestroy)(graphs[i]);
    truth_stats();
    return 0;
}

/* ---- the legacy default stream synchronises with blocking streams: in
   each of 4 steps a kernel of 20 ms on a blocking stream, then a region on
   the legacy stream (it waits for that kernel), one on a non-blocking
   stream (it does not: when submitted before the kernel ends, it starts
   before), and one on the blocking stream again (it waits for the legacy
   stream's). check_gpu.py reads the order from the trace. ------------- */

static int legacy_case(void) {
    prof_config cfg = config("legacy.json");
    cfg.schedule.active = 4;
    cfg.schedule.repeat = 1;
    gpu_stream b = start(&cfg, 11);
    gpu_stream nb = (gpu_stream)fake_gpu_stream_nonblocking(0, 12);
    for (step_no = 0; step_no < 4; step_no++) {
        region("b_long", b, 20 * MS);
        region("legacy_wait", (gpu_stream)0, 10 * US);
        truth("{\"nb_submit\": %lld}", (long long)fake_gpu_now());   /* before the long kernel ends, mostly */
        region("nonblocking", nb, 10 * US);
        region("blocking", b, 10 * US);
        fake_gpu_sleep(25 * MS);        /* done by the step's end */
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    truth_stats();
    return 0;
}

/* ---- the runtime's last error, per thread: prof.h's calls leave the
   engine's as it was. A region while the engine has an error of its own
   pending (it set device 99): the engine reads exactly that one. Then
   prof.h's event record fails (a handle the runtime refuses: GPU timing
   goes off): the engine, which caused nothing, reads success; with
   `pending`, the engine had an error of its own pending when prof.h's call
   failed: it still reads an error, not success. -------------------------- */

static int last_error(int pending) {
    prof_config cfg = config("last_error.json");
    gpu_stream s = start(&cfg, 3);
    region("warm", s, 10 * US);         /* the stream known, its events made */
    (void)RT(SetDevice)(99);
    region("engine_error", s, 10 * US);
    RT(Error_t) own = RT(GetLastError)();
    RT(Error_t) cleared = RT(GetLastError)();
    if (pending) (void)RT(SetDevice)(99);
    fake_gpu_fail(FAKE_EVENT_RECORD, RT(ErrorInvalidResourceHandle), 0);
    region("prof_fails", s, 10 * US);
    RT(Error_t) after = RT(GetLastError)();
    truth("{\"last_error\": {\"own\": \"%s\", \"cleared\": \"%s\", \"after\": \"%s\", \"pending\": %d}}",
          RT(GetErrorName)(own), RT(GetErrorName)(cleared), RT(GetErrorName)(after), pending);
    PROF_SHUTDOWN();
    return 0;
}

static int run(const char *name) {
    if (!strcmp(name, "placement")) return placement(16, 70 * MS, 0);
    if (!strcmp(name, "placement_small")) return placement(4, 20 * MS, 0);
    if (!strncmp(name, "placement_latency_", 18)) return placement(4, 20 * MS, atoi(name + 18) * US);
    if (!strcmp(name, "async")) return async_case();
    if (!strcmp(name, "pool")) return pool_case();
    if (!strcmp(name, "threads")) return threads_case();
    if (!strcmp(name, "open_at_shutdown")) return open_at_shutdown();
    if (!strcmp(name, "cap")) return cap_case();
    if (!strcmp(name, "hang")) return hang_case();
    if (!strcmp(name, "typed_malloc")) return typed_malloc();
    if (!strcmp(name, "capture")) return capture_case();
    if (!strcmp(name, "legacy_stream")) return legacy_case();
    if (!strcmp(name, "last_error")) return last_error(0);
    if (!strcmp(name, "last_error_pending")) return last_error(1);
    if (!strncmp(name, "fail_", 5)) return failure(name + 5);
    fprintf(stderr, "unknown case %s\n", name);
    return 2;
}

int main(int argc, char **argv) { return gpu_test_main(argc, argv, BACKEND, run); }
