/* fake_nvml.c - a test double of the NVML calls prof.h makes for
   PROF_ENERGY, compiled against NVIDIA's real nvml.h (PyPI's
   nvidia-nvml-dev) and built as a shared object that prof.h loads through
   PROF_NVML_LIB as it would load libnvidia-ml.so.1. The devices, their
   power and counter, the failures: fake_energy.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE                     /* syscall(SYS_gettid) */
#endif
#include <nvml.h>

#include "fake_energy.h"

nvmlReturn_t nvmlInit_v2(void) {
    pthread_mutex_lock(&lock);
    int fails = model_init();
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
        if (dom == 0 && d == 0 && at_bus(bus)) {
            *out = at_bus(bus);
            r = NVML_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *energy) {
    static const nvmlReturn_t codes[] = { NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_GPU_IS_LOST,
                                          NVML_ERROR_UNINITIALIZED };
    double mj = 0;
    read_cost();
    pthread_mutex_lock(&lock);
    called();
    int r = model_read(d, &mj);
    if (!r) *energy = (unsigned long long)mj;
    pthread_mutex_unlock(&lock);
    return codes[r];
}

/* PROF_GPU_METRICS' calls: metric m of the model (fake_energy.h). */
static nvmlReturn_t metric(nvmlDevice_t d, int m, double *v) {
    static const nvmlReturn_t codes[] = { NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_GPU_IS_LOST,
                                          NVML_ERROR_UNINITIALIZED };
    pthread_mutex_lock(&lock);
    called();
    int r = d ? model_metric(d, m, v) : 4;
    pthread_mutex_unlock(&lock);
    return r == 4 ? NVML_ERROR_INVALID_ARGUMENT : codes[r];
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, nvmlClockType_t type, unsigned int *clock) {
    double v = 0;
    if (!clock || (type != NVML_CLOCK_SM && type != NVML_CLOCK_MEM)) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = metric(d, type == NVML_CLOCK_SM ? 0 : 1, &v);
    if (r == NVML_SUCCESS) *clock = (unsigned)v;
    return r;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    double v = 0;
    if (!u) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = metric(d, 2, &v);
    if (r == NVML_SUCCESS) {
        u->gpu = (unsigned)v;
        u->memory = (unsigned)v / 2;
    }
    return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    double v = 0;
    if (!m) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = metric(d, 3, &v);
    if (r == NVML_SUCCESS) {
        m->total = 80ull << 30;
        m->used = (unsigned long long)v << 20;
        m->free = m->total - m->used;
    }
    return r;
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, nvmlPcieUtilCounter_t counter, unsigned int *value) {
    double v = 0;
    if (!value || (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = metric(d, counter == NVML_PCIE_UTIL_RX_BYTES ? 4 : 5, &v);
    if (r == NVML_SUCCESS) *value = (unsigned)v;
    return r;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *reasons) {
    double v = 0;
    if (!reasons) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = metric(d, 6, &v);
    if (r == NVML_SUCCESS) *reasons = (unsigned long long)v;
    return r;
}
