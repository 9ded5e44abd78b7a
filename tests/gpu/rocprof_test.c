/* Kernel capture on HIP (PROF_KERNELS=1) on the simulated GPU, with the
   rocprofiler-sdk double (fake_rocprofiler.c, built as librocprofiler-sdk.so
   and loaded by prof_hip.h through PROF_ROCPROFILER_SDK or $ROCM_PATH/lib,
   as it would load ROCm's). The engine here makes HIP runtime calls the
   SDK sees (fake_roc_call: the callbacks with their correlation ids and
   arguments) and runs their work on the simulated device; the kernels' and
   copies' records reach the buffer once that work is done, as the SDK's
   do. check_gpu.py's roc_* cases check the traces (check_cupti.py's checks,
   HTA's kernel breakdown) against truth.jsonl.
   FAKE_ROC_LIB: the double's path (CMake gives it). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L         /* setenv */
#endif
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof_hip.h"

#include <dlfcn.h>

#include "fake_gpu.h"
#include "fake_rocprofiler.h"
#include "gpu_test.h"

static fake_roc_setup_fn *roc_setup;
static fake_roc_discover_fn *roc_discover;
static fake_roc_load_fn *roc_load;
static fake_roc_call_fn *roc_call;
static fake_roc_call_end_fn *roc_call_end;
static fake_roc_dispatch_fn *roc_dispatch;
static fake_roc_copy_fn *roc_copy;
static fake_roc_latency_fn *roc_latency;
static fake_roc_counts_fn *roc_counts;
static fake_roc_traced_fn *roc_traced;
static long records;                    /* runtime calls, kernels and copies the SDK recorded */

/* A function of the double into fp (object to function pointer: the bytes). */
static void bind_fn(void *lib, const char *name, void *fp, size_t size) {
    void *sym = dlsym(lib, name);
    if (!sym) {
        fprintf(stderr, "cannot load the rocprofiler-sdk double %s: %s\n", FAKE_ROC_LIB, dlerror());
        exit(2);
    }
    memcpy(fp, &sym, size);
}
#define BIND(lib, fp, name) bind_fn((lib), (name), &(fp), sizeof(fp))

/* The double's functions, from the object prof_hip.h will load. PROF_ROCPROFILER_SDK
   names it unless the case gives the library another way (ROCM_PATH). */
static void bind_sdk(int gpus) {
    void *lib = dlopen(FAKE_ROC_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "cannot load the rocprofiler-sdk double %s: %s\n", FAKE_ROC_LIB, dlerror());
        exit(2);
    }
    BIND(lib, roc_setup, "fake_roc_setup");
    BIND(lib, roc_discover, "fake_roc_discover");
    BIND(lib, roc_load, "fake_roc_load");
    BIND(lib, roc_call, "fake_roc_call");
    BIND(lib, roc_call_end, "fake_roc_call_end");
    BIND(lib, roc_dispatch, "fake_roc_dispatch");
    BIND(lib, roc_copy, "fake_roc_copy");
    BIND(lib, roc_latency, "fake_roc_latency");
    BIND(lib, roc_counts, "fake_roc_counts");
    BIND(lib, roc_traced, "fake_roc_traced");
    roc_setup(gpus);
    if (!getenv("ROCM_PATH")) setenv("PROF_ROCPROFILER_SDK", FAKE_ROC_LIB, 0);
}

/* The engine's code object, loaded when its first kernel is: its kernels'
   ids 100.., named as the SDK names them. */
enum { K_MATMUL = 100, K_RELU, K_LOSS, K_TINY };
static void load_code_object(void) {
    static const char *const names[] = { "_Z6matmulPfS_i.kd", "_Z4reluPfi.kd", "_Z4lossPf.kd", "_Z4tinyv.kd" };
    roc_load(names, 4, K_MATMUL);
}

static int64_t host_end;                /* when the work queued so far ends (host clock) */

/* kernel<<<blocks, threads, 0, stream>>> running ns on the device: the
   hipLaunchKernel call, then its dispatch record (grid in work-items). */
static void launch(uint64_t kernel, void *stream, int64_t ns, uint32_t blocks, uint32_t threads) {
    uint64_t corr = roc_call(FAKE_ROC_hipLaunchKernel, stream, 0);
    int dev;
    int64_t start = fake_gpu_launch_at(stream, ns, &dev);
    roc_call_end();
    int64_t h0 = (int64_t)fake_gpu_host_ns(dev, start), h1 = (int64_t)fake_gpu_host_ns(dev, start + ns);
    const uint32_t grid[3] = { blocks * threads, 1, 1 }, block[3] = { threads, 1, 1 };
    roc_dispatch(corr, dev, kernel, h0, h1, grid, block, 1024);
    if (h1 > host_end) host_end = h1;
    records += 2;
}

/* hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, stream). */
static void copy_to_device(void *stream, uint64_t bytes, int64_t ns) {
    uint64_t corr = roc_call(FAKE_ROC_hipMemcpyAsync, stream, bytes);
    int dev;
    int64_t start = fake_gpu_launch_at(stream, ns, &dev);
    roc_call_end();
    int64_t h1 = (int64_t)fake_gpu_host_ns(dev, start + ns);
    roc_copy(corr, ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE, -1, dev, bytes, (int64_t)fake_gpu_host_ns(dev, start), h1);
    if (h1 > host_end) host_end = h1;
    records += 2;
}

/* hipStreamSynchronize: returns once the stream's work is done, and its
   records are in the SDK's buffer (latency: how long after). */
static void synchronize(void *stream, int64_t latency) {
    roc_call(FAKE_ROC_hipStreamSynchronize, stream, 0);
    int64_t left = host_end + latency - fake_gpu_now();
    fake_gpu_sleep(left > 0 ? left : 0);
    roc_call_end();
    records++;
}

/* hipGetDevice: left out of the trace, as Kineto leaves it out. */
static void get_device(void) {
    roc_call(FAKE_ROC_hipGetDevice, NULL, 0);
    roc_call_end();
}

/* The double's counters at the very end, after its finalize and prof.h's
   shutdown (registered first, this runs last). */
static void counts_at_exit(void) {
    int configures, after, active;
    uint64_t dropped;
    roc_counts(&configures, &after, &active, &dropped);
    gpu_truth = fopen("truth.jsonl", "a");  /* gpu_test_main closed it */
    truth("{\"at_exit\": 1, \"configures\": %d, \"after_finalize\": %d, \"active\": %d, \"sdk_dropped\": %llu}",
          configures, after, active, (unsigned long long)dropped);
    if (gpu_truth) fclose(gpu_truth);
    gpu_truth = NULL;
}

static prof_config capture(const char *out) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = out;
    cfg.quiet = 1;
    cfg.kernels = 1;
    return cfg;
}

/* What every case with the double starts with: its counters written at
   exit, devices 0..device simulated (the SDK's GPU agents alike), the
   double bound; the engine's stream, on `device`, made current. */
static void *start_sdk_on(int device, unsigned long long stream_id) {
    atexit(counts_at_exit);
    fake_gpu_setup(device + 1);
    bind_sdk(device + 1);
    if (hipSetDevice(device) != hipSuccess) exit(2);
    return fake_gpu_stream(device, stream_id);
}
static void *start_sdk(unsigned long long stream_id) { return start_sdk_on(0, stream_id); }

/* A step's work: a region around a kernel, waited for. */
static void work(void *s, uint64_t kernel) {
    {
        PROF_GPU_SCOPE("work", s);
        launch(kernel, s, 1000, 4, 64);
    }
    synchronize(s, 0);
}

/* Each saved cycle in both formats, roc.<n>.json and .pftrace. */
static void both_formats(const prof_cycle *c, void *user) {
    gpu_write_both(c, "roc", (int *)user);
    prof_table t;                       /* and the table's rows: the kernels' among them */
    if (prof_cycle_table(c, PROF_SORT_NAME, 0, &t)) {
        for (size_t i = 0; i < t.n; i++)
            truth("{\"row\": \"%s\", \"calls\": %llu, \"self_gpu_ns\": %lld, \"gpu_total_ns\": %lld}",
                  t.rows[i].name, (unsigned long long)t.rows[i].calls, (long long)t.rows[i].self_gpu_ns,
                  (long long)t.rows[i].gpu_total_ns);
        prof_table_free(&t);
    }
}

/* Six steps, steps 2-4 recorded: in each a GPU region around a copy and
   two kernels, a kernel outside it, and a synchronisation; records reach
   the buffer 200 us after their work ends. */
static int case_kernels(void) {
    static int cycles;
    prof_config cfg = capture("roc.json");
    gpu_kernels_schedule(&cfg, both_formats, &cycles);
    void *s = start_sdk(13);
    fake_gpu_clock(0, 1.0001, 5000000000);
    roc_latency(200000);
    PROF_INIT(&cfg);
    load_code_object();
    for (int step = 0; step < 6; step++) {
        get_device();
        {
            PROF_GPU_SCOPE("layer", s);
            copy_to_device(s, 1 << 20, 40000);
            launch(K_MATMUL, s, 60000, 128, 256);
            launch(K_RELU, s, 20000, 64, 256);
        }
        launch(K_LOSS, s, 10000, 1, 64);
        synchronize(s, 200000);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    truth("{\"per_step\": 4, \"recorded_steps\": 3, \"demangled\": %d}", cxx != NULL);
    if (cxx) dlclose(cxx);
    return 0;
}

/* Capture follows the schedule: 11 steps of 100 launches, one window of
   2 steps after 1 step of warm-up. The SDK's main context is active for
   the warm-up and recorded steps only: it takes their 300 calls and 300
   dispatches, and the trace holds the 200 kernels of the recorded steps. */
static int case_windows(void) {
    prof_config cfg = capture("windows.json");
    cfg.schedule.wait = 8;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    void *s = start_sdk(7);
    PROF_INIT(&cfg);
    load_code_object();
    for (int step = 0; step < 11; step++) {
        {
            PROF_SCOPE("forward");
            for (int i = 0; i < 100; i++) launch(K_TINY, s, 1000, 1, 64);
        }
        synchronize(s, 0);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    long calls, dispatches;
    roc_traced(&calls, &dispatches);
    truth("{\"windows\": {\"launches\": 1100, \"traced_calls\": %ld, \"traced_dispatches\": %ld}}", calls,
          dispatches);
    return 0;
}

/* More records than the SDK's buffer holds, delivered only at flushes
   (FAKE_ROC_HOLD): the SDK drops and counts the rest; one record has no
   timestamp, one ends before it starts. None goes missing unsaid. */
static int case_drops(void) {
    prof_config cfg = capture("drops.json");
    setenv("FAKE_ROC_HOLD", "1", 1);
    void *s = start_sdk(5);
    PROF_INIT(&cfg);
    load_code_object();
    for (int i = 0; i < 30000; i++) {
        if (i == 7 || i == 9) {         /* untimed (kineto#996), and backwards (pytorch#192021) */
            uint64_t corr = roc_call(FAKE_ROC_hipLaunchKernel, s, 0);
            roc_call_end();
            const uint32_t grid[3] = { 32, 1, 1 }, block[3] = { 32, 1, 1 };
            int64_t now = fake_gpu_now();
            roc_dispatch(corr, 0, K_TINY, i == 7 ? 0 : now, i == 7 ? 0 : now - 1000, grid, block, 0);
            records += 2;
            continue;
        }
        launch(K_TINY, s, 100, 1, 32);
    }
    synchronize(s, 0);
    PROF_SHUTDOWN();
    truth("{\"records\": %ld}", records);
    return 0;
}

/* A kernel of the last recorded step whose record comes 300 ms after it
   ran, long after its cycle was saved: said, not dropped unsaid. */
static int case_late(void) {
    prof_config cfg = capture("late.json");
    cfg.schedule.active = 2;
    cfg.schedule.repeat = 1;
    void *s = start_sdk(9);
    PROF_INIT(&cfg);
    load_code_object();
    for (int step = 0; step < 3; step++) {
        work(s, K_TINY);
        if (step == 1) {
            roc_latency(300000000);
            launch(K_LOSS, s, 50000, 1, 32);    /* the step that saves the cycle does not wait for it */
        }
        PROF_STEP();
        if (step == 1) {
            roc_latency(0);
            synchronize(s, 300000000);
        }
    }
    PROF_SHUTDOWN();
    return 0;
}

/* Flight mode: every step recorded, the last 2 kept; a trigger file at
   the last step dumps them, kernels with their launches. */
static int case_flight(void) {
    prof_config cfg = capture("flight.json");
    gpu_flight_on_trigger(&cfg, 2);
    void *s = start_sdk(4);
    PROF_INIT(&cfg);
    load_code_object();
    for (int step = 0; step < 20; step++) {
        work(s, K_TINY);
        if (step == 19) gpu_trigger_now();
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* No usable SDK (absent, too old, configured by another tool): one line,
   and GPU regions as before. */
static int case_unusable(void) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "unusable.json";
    cfg.kernels = 1;
    fake_gpu_setup(1);
    if (!getenv("PROF_ROCPROFILER_SDK")) {
        bind_sdk(1);
        atexit(counts_at_exit);
    }
    void *s = fake_gpu_stream(0, 3);
    PROF_INIT(&cfg);
    for (int step = 0; step < 3; step++) {
        { PROF_GPU_SCOPE("layer", s); fake_gpu_launch(s, 10000); }
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* ROCm's HIP starts the SDK before PROF_INIT (PROF_KERNELS=1 in the
   environment, rocprofiler_configure exported) and loads the engine's code
   object then: prof.h is configured by the SDK, not forced, and knows the
   kernels' names from that load. The engine runs on device 1 of 2. */
static int case_discovered(void) {
    prof_config cfg = capture("discovered.json");
    cfg.kernels = 0;                    /* the environment asks */
    setenv("PROF_KERNELS", "1", 1);
    void *s = start_sdk_on(1, 7);
    unsetenv("PROF_ROCPROFILER_SDK");   /* prof.h finds the SDK already loaded */
    roc_discover();
    load_code_object();
    PROF_INIT(&cfg);
    for (int step = 0; step < 2; step++) {
        work(s, K_RELU);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* No PROF_INIT: the first GPU region starts prof.h, HIP is running before
   the SDK is configured, which is said (a real SDK may then miss HIP's
   calls; the double does not). */
static int case_late_start(void) {
    setenv("PROF_KERNELS", "1", 1);
    setenv("PROF_OUTPUT", "late_start.json", 1);
    void *s = start_sdk(7);
    for (int step = 0; step < 2; step++) {
        {
            PROF_GPU_SCOPE("work", s);
            if (step == 0) load_code_object();  /* with the first launch, as HIP loads it */
            launch(K_LOSS, s, 1000, 1, 64);
        }
        synchronize(s, 0);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

/* The SDK found under $ROCM_PATH/lib, capture asked for by PROF_KERNELS. */
static int case_rocm_path(void) {
    prof_config cfg = capture("rocm_path.json");
    cfg.kernels = 0;                    /* the environment asks */
    char rocm[1024];                    /* FAKE_ROC_LIB is <rocm>/lib/librocprofiler-sdk.so.0 */
    snprintf(rocm, sizeof rocm, "%s", FAKE_ROC_LIB);
    for (int up = 0; up < 2; up++) *strrchr(rocm, '/') = 0;
    setenv("ROCM_PATH", rocm, 1);
    setenv("PROF_KERNELS", "1", 1);
    void *s = start_sdk(7);
    PROF_INIT(&cfg);
    load_code_object();
    for (int step = 0; step < 2; step++) {
        work(s, K_MATMUL);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    return 0;
}

static int run(const char *name) {
    if (!strcmp(name, "roc_windows")) return case_windows();
    if (!strcmp(name, "roc_kernels")) return case_kernels();
    if (!strcmp(name, "roc_drops")) return case_drops();
    if (!strcmp(name, "roc_late")) return case_late();
    if (!strcmp(name, "roc_flight")) return case_flight();
    if (!strcmp(name, "roc_rocm_path")) return case_rocm_path();
    if (!strcmp(name, "roc_discovered")) return case_discovered();
    if (!strcmp(name, "roc_late_start")) return case_late_start();
    if (!strncmp(name, "roc_unusable", 12)) return case_unusable();
    return 2;
}

int main(int argc, char **argv) { return gpu_test_main(argc, argv, "hip", run); }
