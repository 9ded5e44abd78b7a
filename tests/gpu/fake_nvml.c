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
