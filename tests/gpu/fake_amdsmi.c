/* fake_amdsmi.c - a test double of the AMD SMI calls prof.h makes for
   PROF_ENERGY on HIP, built as a shared object that prof.h loads through
   PROF_AMDSMI_LIB as it would load libamd_smi.so. No amdsmi.h is at hand
   (neither Debian nor PyPI ships it): the declarations below are AMD SMI's
   documented ABI as ROCm 7.0.2's own Python binding spells it (PyPI's
   amdsmi 7.0.2, amdsmi_wrapper.py): status codes an unsigned 32-bit enum,
   a processor handle a pointer, a bdf a 64-bit union passed by value
   (function bits 0-2, device 3-7, bus 8-15, domain 16-63), the energy count
   an accumulator in units of counter_resolution microjoules. So this tests
   prof.h's use of that ABI, not the ABI itself: untested on a real AMD GPU.
   The devices, their power and counter, the failures: fake_energy.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE                     /* syscall(SYS_gettid) */
#endif
#include "fake_energy.h"

typedef uint32_t amdsmi_status_t;
enum {
    AMDSMI_STATUS_SUCCESS = 0, AMDSMI_STATUS_INVAL = 1, AMDSMI_STATUS_NOT_SUPPORTED = 2,
    AMDSMI_STATUS_API_FAILED = 7, AMDSMI_STATUS_NOT_FOUND = 31, AMDSMI_STATUS_NOT_INIT = 32,
    AMDSMI_STATUS_DRIVER_NOT_LOADED = 34,
};
#define RESOLUTION_UJ 15.2588f          /* an MI300X's, as amd-smi reports it */

amdsmi_status_t amdsmi_init(uint64_t flags);
amdsmi_status_t amdsmi_get_processor_handle_from_bdf(uint64_t bdf, void **handle);
amdsmi_status_t amdsmi_get_energy_count(void *handle, uint64_t *acc, float *resolution_uj, uint64_t *timestamp);
amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t status, const char **s);

amdsmi_status_t amdsmi_init(uint64_t flags) {
    pthread_mutex_lock(&lock);
    int fails = model_init();
    pthread_mutex_unlock(&lock);
    if (!(flags & 2)) return AMDSMI_STATUS_INVAL;       /* AMDSMI_INIT_AMD_GPUS */
    return fails ? AMDSMI_STATUS_DRIVER_NOT_LOADED : AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_processor_handle_from_bdf(uint64_t bdf, void **handle) {
    amdsmi_status_t r = AMDSMI_STATUS_NOT_FOUND;
    pthread_mutex_lock(&lock);
    called();
    if (!inited) r = AMDSMI_STATUS_NOT_INIT;
    else if (!handle) r = AMDSMI_STATUS_INVAL;
    else if ((bdf & 7) == 0 && (bdf >> 3 & 31) == 0 && bdf >> 16 == 0 && at_bus((unsigned)(bdf >> 8 & 0xff))) {
        *handle = at_bus((unsigned)(bdf >> 8 & 0xff));
        r = AMDSMI_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

amdsmi_status_t amdsmi_get_energy_count(void *handle, uint64_t *acc, float *resolution_uj, uint64_t *timestamp) {
    static const amdsmi_status_t codes[] = { AMDSMI_STATUS_SUCCESS, AMDSMI_STATUS_NOT_SUPPORTED,
                                             AMDSMI_STATUS_API_FAILED, AMDSMI_STATUS_NOT_INIT };
    double mj = 0;
    read_cost();
    pthread_mutex_lock(&lock);
    called();
    int r = model_read((const struct nvmlDevice_st *)handle, &mj);
    if (!r) {
        *acc = (uint64_t)(mj * 1000.0 / (double)RESOLUTION_UJ);
        *resolution_uj = RESOLUTION_UJ;
        *timestamp = (uint64_t)now_ns();
    }
    pthread_mutex_unlock(&lock);
    return codes[r];
}

amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t status, const char **s) {
    switch (status) {
    case AMDSMI_STATUS_SUCCESS: *s = "AMDSMI_STATUS_SUCCESS"; break;
    case AMDSMI_STATUS_NOT_SUPPORTED: *s = "AMDSMI_STATUS_NOT_SUPPORTED"; break;
    case AMDSMI_STATUS_API_FAILED: *s = "AMDSMI_STATUS_API_FAILED"; break;
    case AMDSMI_STATUS_DRIVER_NOT_LOADED: *s = "AMDSMI_STATUS_DRIVER_NOT_LOADED"; break;
    case AMDSMI_STATUS_NOT_INIT: *s = "AMDSMI_STATUS_NOT_INIT"; break;
    default: *s = "AMDSMI_STATUS_UNKNOWN_ERROR"; break;
    }
    return AMDSMI_STATUS_SUCCESS;
}
