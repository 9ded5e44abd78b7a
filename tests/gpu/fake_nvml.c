/* fake_nvml.c - a test double of the NVML calls prof.h makes for
   PROF_ENERGY, compiled against NVIDIA's real nvml.h (PyPI's
   nvidia-nvml-dev) and built as a shared object that prof.h loads through
   PROF_NVML_LIB as it would load libnvidia-ml.so.1.

   Four devices, listed by NVML in the reverse order of their PCI buses (so
   that a match by index would pair the wrong ones): NVML index i sits at
   bus FAKE_GPU_PCI_BUS(3 - i), where the simulated CUDA device 3 - i is.
   Each draws the power the test sets (fake_nvml_power, by bus), from the
   moment it sets it; the total-energy counter reports, in mJ, the exact
   integral of that power up to the last multiple of the tick (10 ms,
   FAKE_NVML_TICK_MS) since nvmlInit, plus an offset (energy since the
   driver loaded), as a real counter that changes every tick does.
   Every call records the calling thread (fake_nvml_calls_on), so a test can
   prove that the engine's thread made none.

   FAKE_NVML_MODE, read at nvmlInit, makes it fail as drivers do:
     init_fails   nvmlInit_v2 answers NVML_ERROR_DRIVER_NOT_LOADED
     no_counter   the device at bus FAKE_GPU_PCI_BUS(1) answers
                  NVML_ERROR_NOT_SUPPORTED (a GPU older than Volta)
     backwards    the counter of bus FAKE_GPU_PCI_BUS(0) restarts from 0
                  FAKE_NVML_AFTER_MS after init (a driver reload)
     read_fails   reads of bus FAKE_GPU_PCI_BUS(0) answer
                  NVML_ERROR_GPU_IS_LOST from FAKE_NVML_AFTER_MS on
   FAKE_NVML_READ_US: each energy read takes that long (an H200's: 2800). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE                     /* syscall(SYS_gettid) */
#endif
#include <nvml.h>
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

nvmlReturn_t nvmlInit_v2(void) {
    pthread_mutex_lock(&lock);
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
    pthread_mutex_unlock(&lock);
    return fails ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&lock);
    called();
    pthread_mutex_unlock(&lock);
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
    pthread_mutex_lock(&lock);
    called();
    *n = NDEV;
    pthread_mutex_unlock(&lock);
    return inited ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

/* NVML's formats: domain:bus:device.function, domain:bus:device, bus:device.function (hex). */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *out) {
    unsigned dom, bus, d, f;
    nvmlReturn_t r = NVML_ERROR_NOT_FOUND;
    pthread_mutex_lock(&lock);
    called();
    if (!inited) r = NVML_ERROR_UNINITIALIZED;
    else if (!id || !out) r = NVML_ERROR_INVALID_ARGUMENT;
    else if (sscanf(id, "%x:%x:%x.%x", &dom, &bus, &d, &f) == 4 || sscanf(id, "%x:%x:%x", &dom, &bus, &d) == 3 ||
             (dom = 0, sscanf(id, "%x:%x.%x", &bus, &d, &f) == 3)) {
        for (int i = 0; i < NDEV; i++)
            if (dom == 0 && (int)bus == dev[i].bus && d == 0) {
                *out = &dev[i];
                r = NVML_SUCCESS;
            }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *energy) {
    if (read_ns) {
        struct timespec ts = { 0, (long)read_ns };
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&lock);
    called();
    nvmlReturn_t r = NVML_SUCCESS;
    int64_t now = now_ns(), at = t0 + (now - t0) / tick_ns * tick_ns;
    if (!inited) r = NVML_ERROR_UNINITIALIZED;
    else if (!strcmp(mode, "no_counter") && d->bus == FAKE_GPU_PCI_BUS(1)) r = NVML_ERROR_NOT_SUPPORTED;
    else if (!strcmp(mode, "read_fails") && d->bus == FAKE_GPU_PCI_BUS(0) && now - t0 >= after_ns)
        r = NVML_ERROR_GPU_IS_LOST;
    else if (!strcmp(mode, "backwards") && d->bus == FAKE_GPU_PCI_BUS(0) && at - t0 >= after_ns) {
        int64_t reset = t0 + (after_ns + tick_ns - 1) / tick_ns * tick_ns;
        *energy = (unsigned long long)(energy_mj(d, at) - energy_mj(d, reset));
    } else
        *energy = 987654321ull + (unsigned long long)energy_mj(d, at);
    pthread_mutex_unlock(&lock);
    return r;
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
