/* The idle-time breakdown (prof_cycle_gpu_idle, the table's footer) and
   the steps' critical paths (prof_cycle_gpu_path) on the simulated GPU
   with the CUPTI double, for engines built to be host-bound (the host
   launches slower than the kernels run), GPU-bound (the host queues far
   ahead, the device runs kernels 2 us apart), sync-bound (the host
   synchronises the stream after each launch; or a stream waits for
   another's event, cudaStreamWaitEvent; idle_path: that pipeline, then
   the host waits for its last stream) and communicating (an NCCL kernel
   on its own stream beside compute kernels). Each launch, event record
   and synchronisation becomes CUPTI's records, as cupti_test.c makes
   them. Four recorded steps (one of warm-up before them), saved as
   idle.json and idle.pftrace, the live table's text as table.txt, and
   each row of prof_cycle_gpu_idle and prof_cycle_gpu_path as a truth
   line; tests/gpu/check_idle.py checks them against the trace's own
   events, prof table of both files and HTA's breakdowns.
   FAKE_CUPTI_LIB: the double's path (CMake gives it). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L         /* setenv */
#endif
#ifndef PROF_TEST_SHARED_IMPL
#define PROF_IMPLEMENTATION
#endif
#include "prof_cuda.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"   /* CUPTI's headers are not ISO C */
#include <cupti_activity.h>
#include <cupti_runtime_cbid.h>
#pragma GCC diagnostic pop
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "cupti_records.h"
#include "fake_cupti.h"
#include "fake_gpu.h"
#include "gpu_test.h"

static fake_cupti_emit_fn *emit;
static fake_cupti_now_fn *cupti_now;
static uint32_t corr;
static int64_t device_end;              /* device 0's ns at which everything launched ends */
static int64_t ramp_ns;                 /* a kernel's first ns on the device go before its record's start:
                                           back-to-back kernels then have gaps of it, as on a real device */

static void bind_cupti(void) {
    void *lib = dlopen(FAKE_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
    void *e = lib ? dlsym(lib, "fake_cupti_emit") : NULL, *n = lib ? dlsym(lib, "fake_cupti_now") : NULL;
    void *b = lib ? dlsym(lib, "fake_cupti_bind") : NULL;
    if (!e || !n || !b) {
        fprintf(stderr, "cannot load the CUPTI double %s: %s\n", FAKE_CUPTI_LIB, dlerror());
        exit(2);
    }
    memcpy(&emit, &e, sizeof e);
    memcpy(&cupti_now, &n, sizeof n);
    fake_cupti_bind_fn *bind;
    memcpy(&bind, &b, sizeof b);
    bind(fake_stream_info);
    setenv("PROF_CUPTI_LIB", FAKE_CUPTI_LIB, 1);
}

/* A runtime call's record, t0 to now. */
static void call(uint32_t cbid, uint32_t c, int64_t t0) {
    CUpti_ActivityAPI a = cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, cbid, c, t0, cupti_now());
    emit(&a, sizeof a);
}

/* kernel<<<1, 128, 0, stream>>>, running ns on the device: its runtime
   call's record and its own. */
static void launch(const char *name, void *stream, int64_t ns) {
    uint32_t c = ++corr;
    int64_t t0 = cupti_now();
    int dev;
    int64_t start = fake_gpu_launch_at(stream, ns, &dev);
    if (start + ns > device_end) device_end = start + ns;
    call(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, c, t0);
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = cupti_ts(dev, start + ramp_ns);
    k.end = cupti_ts(dev, start + ns);
    k.deviceId = (uint32_t)dev;
    k.streamId = cupti_stream_id(stream);
    k.gridX = k.gridY = k.gridZ = 1;
    k.blockX = 128, k.blockY = k.blockZ = 1;
    k.correlationId = c;
    k.contextId = 1;
    k.name = name;
    emit(&k, sizeof k);
}

/* cudaEventRecord(ev, stream) of the program's one event (CUPTI's id 1):
   its call, and CUPTI's record of it. */
static void record(void *ev, void *stream) {
    uint32_t c = ++corr;
    int64_t t0 = cupti_now();
    fake_event_record(ev, stream);
    CUpti_ActivityCudaEvent2 e = cupti_event(c, stream, 1);
    emit(&e, sizeof e);
    call(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, c, t0);
}

/* cudaStreamWaitEvent(stream, ev), or (ev NULL) cudaStreamSynchronize(stream):
   its call, and CUPTI's synchronisation record of the host's wait in it. */
static void sync_on(void *stream, void *ev) {
    uint32_t c = ++corr;
    int64_t t0 = cupti_now(), w0 = cupti_now();
    if (ev) fake_stream_wait_event(stream, ev);
    else fake_stream_sync(stream);
    CUpti_ActivitySynchronization2 y =
        cupti_sync(ev ? CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT
                      : CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
                   c, w0, cupti_now(), stream, ev ? 1 : CUPTI_SYNCHRONIZATION_INVALID_VALUE,
                   CUPTI_SYNCHRONIZATION_INVALID_VALUE);
    emit(&y, sizeof y);
    call(ev ? CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020 : CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
         c, t0);
}

static void device_done(void) {
    while (fake_gpu_host_ns(0, device_end) > (double)fake_gpu_now()) fake_gpu_sleep(100000);
}

/* The saved cycle: both formats, the table, and the breakdown's rows. */
static void ready(const prof_cycle *c, void *user) {
    (void)user;
    prof_cycle_write_trace(c, "idle.json");
    prof_cycle_write_trace(c, "idle.pftrace");
    prof_table t;
    if (!prof_cycle_table(c, PROF_SORT_NAME, 0, &t)) return;
    FILE *f = fopen("table.txt", "w");
    if (f) {
        prof_table_print(&t, f, 0);
        fclose(f);
    }
    prof_table_free(&t);
    for (size_t i = 0; i < prof_cycle_gpu_idle_count(c); i++) {
        prof_gpu_idle r;
        prof_cycle_gpu_idle(c, i, &r);
        truth("{\"idle\": {\"step\": %lld, \"device\": %d, \"stream\": %lld, \"work\": %llu, \"busy\": %lld, "
              "\"host\": %lld, \"sync\": %lld, \"wait\": %lld, \"launch\": %lld, \"other\": %lld, \"comm\": %lld, "
              "\"comp\": %lld, \"overlap\": %lld}}",
              (long long)r.step, r.device, r.stream, (unsigned long long)r.work, (long long)r.busy_ns,
              (long long)r.host_ns, (long long)r.sync_ns, (long long)r.wait_ns, (long long)r.launch_ns,
              (long long)r.other_ns, (long long)r.comm_ns, (long long)r.comp_ns, (long long)r.overlap_ns);
    }
    for (size_t i = 0; i < prof_cycle_gpu_path_count(c); i++) {
        prof_gpu_path r;
        prof_cycle_gpu_path(c, i, &r);
        truth("{\"path\": {\"step\": %lld, \"work\": %llu, \"host\": %lld, \"launch\": %lld, \"gpu\": %lld, "
              "\"other\": %lld}}",
              (long long)r.step, (unsigned long long)r.work, (long long)r.host_ns, (long long)r.launch_ns,
              (long long)r.gpu_ns, (long long)r.other_ns);
    }
}

/* Six steps: step 0 warms up, 1-4 are recorded (one cycle), 5 is not. */
static void *streams[2], *event;

static void step_work(const char *name, int step) {
    if (!strcmp(name, "idle_host")) {          /* 200 us of host work before each 20 us kernel */
        for (int i = 0; i < 5; i++) {
            PROF_SCOPE("prepare");
            fake_gpu_sleep(200000);
            launch("_Z4tinyPf", streams[0], 20000);
        }
    } else if (!strcmp(name, "idle_gpu")) {    /* 400 us kernels queued at once, 2 us apart */
        PROF_SCOPE("enqueue");
        ramp_ns = 2000;
        for (int i = 0; i < 5; i++) launch("_Z6matmulPf", streams[0], 400000);
    } else if (!strcmp(name, "idle_sync_host")) {  /* the host waits for each 100 us kernel */
        for (int i = 0; i < 5; i++) {
            PROF_SCOPE("layer");
            launch("_Z6matmulPf", streams[0], 100000);
            sync_on(streams[0], NULL);
        }
    } else if (!strcmp(name, "idle_sync_event")) { /* stream 14 waits for each 300 us producer on 13 */
        PROF_SCOPE("pipeline");
        for (int i = 0; i < 3; i++) {
            launch("_Z7producePf", streams[0], 300000);
            record(event, streams[0]);
            sync_on(streams[1], event);
            launch("_Z7consumePf", streams[1], 50000);
        }
    } else if (!strcmp(name, "idle_path")) {   /* idle_sync_event's pipeline, then the host waits for it */
        PROF_SCOPE("pipeline");
        for (int i = 0; i < 3; i++) {
            launch("_Z7producePf", streams[0], 300000);
            record(event, streams[0]);
            sync_on(streams[1], event);
            launch("_Z7consumePf", streams[1], 50000);
        }
        sync_on(streams[1], NULL);
    } else {                                    /* idle_nccl: an all-reduce beside the compute */
        PROF_SCOPE("layer");
        launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", streams[1], 300000);
        for (int i = 0; i < 4; i++) launch("_Z6matmulPf", streams[0], 100000);
        device_done();                          /* the step's work done within it */
    }
    if (step == 4) device_done();               /* the step that saves */
}

static int run(const char *name) {
    if (strcmp(name, "idle_host") && strcmp(name, "idle_gpu") && strcmp(name, "idle_nccl") &&
        strcmp(name, "idle_sync_host") && strcmp(name, "idle_sync_event") && strcmp(name, "idle_path"))
        return 2;
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.quiet = 1;
    cfg.kernels = 1;
    cfg.on_trace_ready = ready;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = 4;
    cfg.schedule.repeat = 1;
    fake_gpu_setup(1);
    fake_gpu_clock(0, 1.0001, 5000000000);
    fake_gpu_latency(5000);
    bind_cupti();
    streams[0] = fake_gpu_stream(0, 13);
    streams[1] = fake_gpu_stream(0, 14);
    fake_event_create(&event);
    PROF_INIT(&cfg);
    for (int step = 0; step < 6; step++) {
        step_work(name, step);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    fake_event_destroy(event);
    truth("{\"case\": \"%s\"}", name);
    return 0;
}

int main(int argc, char **argv) {
    (void)gpu_test_main;                /* its checker is check_gpu.py; this program's is its own */
    if (argc == 3 && !strcmp(argv[2], "run")) {
        int rc = run(argv[1]);
        if (gpu_truth) fclose(gpu_truth);
        return rc;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s CASE PROF_TOOL, or %s CASE run\n", argv[0], argv[0]);
        return 2;
    }
    const char *py = getenv("PROF_TEST_PY"), *src = getenv("PROF_TEST_SRC");
    if (!py || !src) {
        fprintf(stderr, "PROF_TEST_PY and PROF_TEST_SRC must be set (ctest sets them)\n");
        return 2;
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "\"%s\" \"%s/gpu/check_idle.py\" %s \"%s\" \"%s\"", py, src, argv[1], argv[0], argv[2]);
    return system(cmd) == 0 ? 0 : 1;
}
