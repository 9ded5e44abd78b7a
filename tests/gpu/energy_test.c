/* PROF_ENERGY on the simulated GPU (prof_cuda.h, fake_cuda.c), with the NVML
   double (fake_nvml.c, built from NVIDIA's nvml.h and loaded by prof.h
   through PROF_NVML_LIB as it would load libnvidia-ml.so.1); with
   -DGPU_TEST_HIP, prof_hip.h and fake_hip.c with the AMD SMI double
   (fake_amdsmi.c, through PROF_AMDSMI_LIB). Two GPU devices, which the
   management library lists in another order; each step sets each
   device's power (fake_nvml_power, by PCI bus) as it begins, so the exact
   energy of a step is its power times its length, and counts its tokens
   (PROF_COUNTER("tokens", n)). Each cycle is written as JSON and .pftrace,
   with its summary table (table.txt). truth.jsonl holds each step's power
   and tokens, and the NVML calls made on the engine's thread. The case
   picks the double's failure (FAKE_NVML_MODE) or a missing library;
   energy_metrics* also ask for the device tracks (cfg.gpu_metrics);
   check_gpu.py's energy_* cases check the rest (tests/gpu/check_energy.py).
   FAKE_ENERGY_LIB: the double's path (CMake gives it). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L         /* setenv */
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE                 /* syscall: the engine's thread id */
#endif
#ifndef PROF_TEST_SHARED_IMPL
#define PROF_IMPLEMENTATION
#endif
#ifdef GPU_TEST_HIP
#include "prof_hip.h"
#define BACKEND "hip"
#define LIB_VAR "PROF_AMDSMI_LIB"
#define NO_LIB "/nonexistent/libamd_smi.so"
#define SET_DEVICE(d) (void)hipSetDevice(d)
typedef hipStream_t gpu_stream;
#else
#include "prof_cuda.h"
#define BACKEND "cuda"
#define LIB_VAR "PROF_NVML_LIB"
#define NO_LIB "/nonexistent/libnvidia-ml.so.1"
#define SET_DEVICE(d) (void)cudaSetDevice(d)
typedef cudaStream_t gpu_stream;
#endif

#include <sys/syscall.h>
#include <unistd.h>

#include "fake_gpu.h"
#include "gpu_test.h"

#define MS 1000000LL

void fake_nvml_power(int bus, double watts);
long fake_nvml_calls_on(long tid);
long fake_nvml_calls(void);

static int cycles;

static void ready(const prof_cycle *c, void *user) {
    (void)user;
    gpu_write_both(c, "energy", &cycles);
    prof_table t;
    if (prof_cycle_table(c, PROF_SORT_CPU_TOTAL, 0, &t)) {
        FILE *f = fopen("table.txt", "w");
        if (f) {
            prof_table_print(&t, f, 0);
            fclose(f);
        }
        prof_table_free(&t);
    }
}

/* Step n's power on device d (W): it changes from step to step. */
static double watts(int n, int d) { return 120.0 + 60.0 * d + 90.0 * ((n * 7 + d * 3) % 5); }

static int run(const char *name) {
    int steps = 34;                     /* wait 1, warm-up 1, 30 recorded, 2 after */
    if (!strcmp(name, "energy_no_lib")) setenv(LIB_VAR, NO_LIB, 1);
    else setenv(LIB_VAR, FAKE_ENERGY_LIB, 1);
    if (!strncmp(name, "energy_", 7)) {
        setenv("FAKE_NVML_MODE", name + 7, 1);
        steps = 14;
    }
    if (!strcmp(name, "energy_nowarm")) steps = 13;    /* PROF_SCHEDULE=active=11: its window opens at init */
    if (!strcmp(name, "energy_slow")) {     /* an H200's read against its counter's interval: 2.8 ms of ~100 */
        setenv("FAKE_NVML_READ_US", "280", 1);
        steps = 34;
    }
    fake_gpu_setup(2);
    void *s[2] = { fake_gpu_stream(0, 7), fake_gpu_stream(1, 9) };
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.quiet = 1;
    cfg.energy = 1;
    cfg.gpu_metrics = !strncmp(name, "energy_metrics", 14);    /* the device tracks */
    cfg.on_trace_ready = ready;
    cfg.schedule.wait = 1;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = steps - 4;
    if (!strcmp(name, "energy_nowarm")) {
        cfg.schedule.wait = cfg.schedule.warmup = 0;
        cfg.schedule.active = 11;
    }
    cfg.schedule.repeat = 1;
    PROF_INIT(&cfg);
    long engine = (long)syscall(SYS_gettid);
    for (int n = 0; n < steps; n++) {
        double w[2];
        int tokens = 1024 + 256 * (n % 3);
        for (int d = 0; d < 2; d++) fake_nvml_power(FAKE_GPU_PCI_BUS(d), w[d] = watts(n, d));
        truth("{\"step\": %d, \"watts\": [%.1f, %.1f], \"tokens\": %d}", n, w[0], w[1], tokens);
        for (int d = 0; d < 2; d++) {
            SET_DEVICE(d);              /* HIP's events are the current device's, as an engine's are */
            PROF_GPU_SCOPE("layer", (gpu_stream)s[d]);
            fake_gpu_launch(s[d], 5 * MS);
        }
        PROF_COUNTER("tokens", tokens);
        fake_gpu_sleep((30 + 10 * (n % 7)) * MS);
        PROF_STEP();
    }
    for (int d = 0; d < 2; d++) fake_nvml_power(FAKE_GPU_PCI_BUS(d), 0);
    PROF_SHUTDOWN();
    truth("{\"nvml\": {\"engine_tid\": %ld, \"on_engine\": %ld, \"all\": %ld}}", engine, fake_nvml_calls_on(engine),
          fake_nvml_calls());
    return 0;
}

int main(int argc, char **argv) { return gpu_test_main(argc, argv, BACKEND, run); }
