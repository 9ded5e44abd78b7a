/* fake_energy.h - the energy model behind the management-library doubles
   (fake_nvml.c: NVML; fake_amdsmi.c: AMD SMI), included by each (its
   functions are static; the test's side is exported).

   Four devices, listed by the library in the reverse order of their PCI
   buses (so that a match by index would pair the wrong ones): index i sits
   at bus FAKE_GPU_PCI_BUS(3 - i), where the simulated GPU device 3 - i is.
   Each draws the power the test sets (fake_nvml_power, by bus), from the
   moment it sets it; the counter reports the exact integral of that power
   up to the last multiple of the tick (10 ms, FAKE_NVML_TICK_MS) since the
   library's init, plus an offset (energy since the driver loaded), as a
   real counter that changes every tick does. Every call records the calling
   thread (fake_nvml_calls_on), so a test can prove that the engine's thread
   made none.

   FAKE_NVML_MODE, read at init, makes it fail as drivers do:
     init_fails   init answers "driver not loaded"
     no_counter   the device at bus FAKE_GPU_PCI_BUS(1) answers "not
                  supported" (an NVIDIA GPU older than Volta)
     backwards    the counter of bus FAKE_GPU_PCI_BUS(0) restarts from 0
                  FAKE_NVML_AFTER_MS after init (a driver reload)
     read_fails   reads of bus FAKE_GPU_PCI_BUS(0) fail from
                  FAKE_NVML_AFTER_MS on (a GPU lost)
     metrics_some the device at bus FAKE_GPU_PCI_BUS(1) answers "not
                  supported" for PCIe throughput and the clocks' event
                  reasons (as a board without them does)
   FAKE_NVML_READ_US: each energy read takes that long (an H200's: 2800).

   The device metrics (PROF_GPU_METRICS) of the device at bus
   FAKE_GPU_PCI_BUS(s), each constant: FAKE_METRIC(s, m) below, m in
   nvml.h's order of the calls (0 SM clock MHz, 1 memory clock MHz,
   2 utilisation %, 3 memory used MiB, 4 PCIe rx KB/s, 5 PCIe tx KB/s,
   6 the clocks' event reasons mask: bits 2 and 3, SwPowerCap and
   HwSlowdown, on s 0; bit 0, GpuIdle, on the others). */
#define FAKE_METRIC(s, m)                                                                                    \
    ((m) == 0 ? 1755.0 + (s) : (m) == 1 ? 2619.0 : (m) == 2 ? 37.0 + 10 * (s) : (m) == 3 ? 1024.0 + 256 * (s) \
     : (m) == 4 ? 12000.0 + (s) : (m) == 5 ? 3000.0 + 500 * (s) : (s) == 0 ? 12.0 : 1.0)
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fake_gpu.h"

#define NDEV 4
#define MAX_CHANGES 100000
#define MAX_THREADS 64

typedef struct change { int64_t ns; double watts; } change;

struct nvmlDevice_st {
    int bus;
    change *ch;                         /* power from ch[i].ns on */
    size_t n;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvmlDevice_st dev[NDEV];
static int inited;
static int64_t t0, tick_ns, after_ns, read_ns;
static char mode[32];
static struct { long tid, calls; } threads[MAX_THREADS];
static long nthreads;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Under the lock: the calling thread counted. */
static void called(void) {
    long tid = (long)syscall(SYS_gettid);
    for (long i = 0; i < nthreads; i++)
        if (threads[i].tid == tid) {
            threads[i].calls++;
            return;
        }
    if (nthreads < MAX_THREADS) {
        threads[nthreads].tid = tid;
        threads[nthreads++].calls = 1;
    }
}

static void setup_once(void) {
    if (dev[0].ch) return;
    for (int i = 0; i < NDEV; i++) {
        dev[i].bus = FAKE_GPU_PCI_BUS(NDEV - 1 - i);
        dev[i].ch = calloc(MAX_CHANGES, sizeof *dev[i].ch);
        dev[i].n = 1;                   /* idle: 0 W from the start */
    }
}

/* Exact energy (mJ) the device used from t0 to t. */
static double energy_mj(const struct nvmlDevice_st *d, int64_t t) {
    double mj = 0;
    for (size_t i = 0; i < d->n; i++) {
        int64_t a = d->ch[i].ns, b = i + 1 < d->n ? d->ch[i + 1].ns : INT64_MAX;
        if (a < t0) a = t0;
        if (b > t) b = t;
        if (b > a) mj += d->ch[i].watts * (double)(b - a) / 1e6;
    }
    return mj;
}

/* Under the lock, at the library's init: the mode, the tick, the origin.
   1: the init fails (init_fails). */
static int model_init(void) {
    called();
    setup_once();
    const char *m = getenv("FAKE_NVML_MODE"), *tk = getenv("FAKE_NVML_TICK_MS"), *af = getenv("FAKE_NVML_AFTER_MS"),
               *rd = getenv("FAKE_NVML_READ_US");
    snprintf(mode, sizeof mode, "%s", m ? m : "");
    tick_ns = (tk ? atoll(tk) : 10) * 1000000;
    after_ns = (af ? atoll(af) : 300) * 1000000;
    read_ns = (rd ? atoll(rd) : 0) * 1000;
    if (!inited) t0 = now_ns();
    for (int i = 0; i < NDEV; i++)
        if (dev[i].ch[0].ns == 0) dev[i].ch[0].ns = t0;
    int fails = !strcmp(mode, "init_fails");
    inited = !fails;
    return fails;
}

/* A read of device d's counter, after the read's cost: 0 and *mj (energy
   since the driver loaded, mJ, whole ticks only), or 1 "not supported",
   2 "GPU lost", 3 not initialised. Under the lock. */
static int model_read(const struct nvmlDevice_st *d, double *mj) {
    int64_t now = now_ns(), at = t0 + (now - t0) / tick_ns * tick_ns;
    if (!inited) return 3;
    if (!strcmp(mode, "no_counter") && d->bus == FAKE_GPU_PCI_BUS(1)) return 1;
    if (!strcmp(mode, "read_fails") && d->bus == FAKE_GPU_PCI_BUS(0) && now - t0 >= after_ns) return 2;
    if (!strcmp(mode, "backwards") && d->bus == FAKE_GPU_PCI_BUS(0) && at - t0 >= after_ns) {
        int64_t reset = t0 + (after_ns + tick_ns - 1) / tick_ns * tick_ns;
        *mj = energy_mj(d, at) - energy_mj(d, reset);
    } else {
        *mj = 987654321.0 + energy_mj(d, at);
    }
    return 0;
}

static void read_cost(void) {
    if (read_ns) {
        struct timespec ts = { 0, (long)read_ns };
        nanosleep(&ts, NULL);
    }
}

/* Metric m of device d (FAKE_METRIC): 0 and *v, 1 "not supported", 3 not
   initialised. Under the lock. */
static int model_metric(const struct nvmlDevice_st *d, int m, double *v) {
    int s = -1;
    for (int i = 0; i < NDEV; i++)
        if (d->bus == FAKE_GPU_PCI_BUS(i)) s = i;
    if (!inited) return 3;
    if (!strcmp(mode, "metrics_some") && s == 1 && m >= 4) return 1;
    *v = FAKE_METRIC(s, m);
    return 0;
}

/* The device at PCI bus `bus`, or NULL. */
static struct nvmlDevice_st *at_bus(unsigned bus) {
    for (int i = 0; i < NDEV; i++)
        if ((int)bus == dev[i].bus) return &dev[i];
    return NULL;
}

/* ---- the test's side ---- */

/* From now on the device at PCI bus `bus` draws `watts`. */
void fake_nvml_power(int bus, double watts) {
    pthread_mutex_lock(&lock);
    setup_once();
    for (int i = 0; i < NDEV; i++)
        if (dev[i].bus == bus && dev[i].n < MAX_CHANGES) {
            dev[i].ch[dev[i].n].ns = now_ns();
            dev[i].ch[dev[i].n++].watts = watts;
        }
    pthread_mutex_unlock(&lock);
}

/* NVML calls made on thread tid (a gettid()), and on every thread. */
long fake_nvml_calls_on(long tid) {
    long n = 0;
    pthread_mutex_lock(&lock);
    for (long i = 0; i < nthreads; i++)
        if (threads[i].tid == tid) n = threads[i].calls;
    pthread_mutex_unlock(&lock);
    return n;
}

long fake_nvml_calls(void) {
    long n = 0;
    pthread_mutex_lock(&lock);
    for (long i = 0; i < nthreads; i++) n += threads[i].calls;
    pthread_mutex_unlock(&lock);
    return n;
}
