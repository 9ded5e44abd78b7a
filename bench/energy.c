/* bench/energy.c - what PROF_ENERGY costs, and whom: the engine's thread at
   each PROF_STEP(), and the profiler's thread, which reads the energy
   counter. The device is bound through a minimal runtime binding (one
   device at PCI bus 0000:18:00.0) whose energy source calls NVML as
   prof_cuda.h does, linked rather than loaded: NVML is
   tests/gpu/fake_nvml.c, whose reads take FAKE_NVML_READ_US (an H200's:
   2800 us median, 206000 worst).
   bench/energy.sh builds and runs it in each mode.

     energy STEPS STEP_US [off]

   prints one line: the step call's p50, p99 and max (us), the NVML calls
   made on the engine's thread, the reads the profiler's thread made and
   what one cost (median, max: prof.h's own figures), the steps that carry
   joules. */
#define _GNU_SOURCE
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

long fake_nvml_calls_on(long tid);
void fake_nvml_power(int bus, double watts);

static int one(int *n) { *n = 1; return 0; }
static int dev0(int *d) { *d = 0; return 0; }
static int set_dev(int d) { (void)d; return 0; }
static int props(int d, prof_gpu_props *p) { (void)d; memset(p, 0, sizeof *p); return 0; }
static int stream_info(void *s, int *d, long long *id) { (void)s; *d = 0; *id = 7; return 0; }
static int make(void **x) { static char obj; *x = &obj; return 0; }
static int unmake(void *x) { (void)x; return 0; }
static int record(void *ev, void *s) { (void)ev; (void)s; return 0; }
static int query(void *ev) { (void)ev; return 0; }
static int elapsed(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 0.001f; return 0; }
static const char *str(int e) { (void)e; return "none"; }
static int bus_id(char *buf, int len, int d) { (void)d; snprintf(buf, (size_t)len, "0000:18:00.0"); return 0; }
int nvmlInit_v2(void);                  /* the double's, as nvml.h declares them */
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **h);
int nvmlDeviceGetTotalEnergyConsumption(void *h, unsigned long long *mj);
static int en_open(const char **why) {
    if (!nvmlInit_v2()) return 1;
    prof_gpu_say("PROF_ENERGY: nvmlInit_v2 failed; no energy in the trace");
    *why = "nvmlInit failed";
    return 0;
}
static int en_device(const char *bus, void **h) { return nvmlDeviceGetHandleByPciBusId_v2(bus, h); }
static int en_read(void *h, uint64_t *count, double *mj_per_count) {
    unsigned long long mj = 0;
    int err = nvmlDeviceGetTotalEnergyConsumption(h, &mj);
    (void)mj_per_count;
    *count = mj;
    return err;
}
static void en_error(int err, char *buf, size_t n) { snprintf(buf, n, "NVML error %d", err); }
static const prof_gpu_energy energy = {
    "NVML", "nvmlDeviceGetTotalEnergyConsumption", 3, "", en_open, en_device, en_read, en_error, NULL, { NULL },
    { NULL },
};
static const prof_gpu_api api = {
    "CUDA", 600, one, dev0, set_dev, props, stream_info, make, unmake, make, unmake, record, query, unmake, elapsed,
    str, str, NULL, bus_id, &energy, NULL, NULL, NULL,
};

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static long with_joules;

static void ready(const prof_cycle *c, void *u) {
    (void)u;
    for (size_t i = 0; i < prof_cycle_event_count(c); i++) {
        double j;
        with_joules += prof_cycle_step_energy(c, i, 0, &j) != 0;
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: energy STEPS STEP_US [off]\n");
        return 2;
    }
    int steps = atoi(argv[1]), off = argc > 3 && !strcmp(argv[3], "off");
    int64_t step_ns = atoll(argv[2]) * 1000;
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.energy = !off;
    cfg.quiet = 1;
    cfg.on_trace_ready = ready;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = steps - 1;
    cfg.schedule.repeat = 1;
    PROF_INIT(&cfg);
    prof_gpu_begin(&api, "start", NULL);  /* the GPU core on, as in an engine with GPU regions, */
    prof_gpu_end(&api, NULL);           /* energy or not */
    long engine = (long)syscall(SYS_gettid);
    int64_t *t = calloc((size_t)steps, sizeof *t);
    for (int n = 0; n < steps; n++) {
        fake_nvml_power(0x18, 100 + 50 * (n % 4));
        int64_t end = now_ns() + step_ns;
        while (now_ns() < end) {}       /* the step's work */
        int64_t a = now_ns();
        PROF_STEP();
        t[n] = now_ns() - a;
    }
    PROF_SHUTDOWN();
    qsort(t, (size_t)steps, sizeof *t, cmp);
    uint64_t reads = prof__en.reads, nc = reads < PROF__EN_COSTS ? reads : PROF__EN_COSTS;
    uint32_t *c = calloc(nc + 1, sizeof *c);
    memcpy(c, prof__en.cost, nc * sizeof *c);
    qsort(c, nc, sizeof *c, prof__u32_cmp);
    printf("step call p50 %.1f us, p99 %.1f us, max %.1f us; NVML calls on the engine's thread %ld; reads %llu, "
           "read cost median %.1f us, max %.1f us; steps with joules %ld of %d\n",
           (double)t[steps / 2] / 1e3, (double)t[steps * 99 / 100] / 1e3, (double)t[steps - 1] / 1e3,
           fake_nvml_calls_on(engine), (unsigned long long)reads, nc ? (double)c[nc / 2] / 1e3 : 0.0,
           (double)prof__en.cost_max / 1e3, with_joules, steps - 1);
    free(c);
    free(t);
    return 0;
}
