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
/* PROF_GPU_METRICS' calls; the structs as AMD SMI's ABI lays them out */
typedef struct {
    uint32_t clk, min_clk, max_clk;
    uint8_t clk_locked, clk_deep_sleep;
    uint32_t reserved[4];
} amdsmi_clk_info_t;
typedef struct {
    uint32_t gfx_activity, umc_activity, mm_activity;
    uint32_t reserved[13];
} amdsmi_engine_usage_t;
enum { AMDSMI_CLK_TYPE_GFX = 0, AMDSMI_CLK_TYPE_MEM = 4, AMDSMI_MEM_TYPE_VRAM = 0 };
amdsmi_status_t amdsmi_get_clock_info(void *handle, uint32_t clk_type, amdsmi_clk_info_t *info);
amdsmi_status_t amdsmi_get_gpu_activity(void *handle, amdsmi_engine_usage_t *info);
amdsmi_status_t amdsmi_get_gpu_memory_usage(void *handle, uint32_t mem_type, uint64_t *used);

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

/* PROF_GPU_METRICS' calls: metric m of the model (fake_energy.h). */
static amdsmi_status_t metric(void *handle, int m, double *v) {
    static const amdsmi_status_t codes[] = { AMDSMI_STATUS_SUCCESS, AMDSMI_STATUS_NOT_SUPPORTED,
                                             AMDSMI_STATUS_API_FAILED, AMDSMI_STATUS_NOT_INIT };
    pthread_mutex_lock(&lock);
    called();
    int r = handle ? model_metric((const struct nvmlDevice_st *)handle, m, v) : 4;
    pthread_mutex_unlock(&lock);
    return r == 4 ? AMDSMI_STATUS_INVAL : codes[r];
}

amdsmi_status_t amdsmi_get_clock_info(void *handle, uint32_t clk_type, amdsmi_clk_info_t *info) {
    double v = 0;
    if (!info || (clk_type != AMDSMI_CLK_TYPE_GFX && clk_type != AMDSMI_CLK_TYPE_MEM)) return AMDSMI_STATUS_INVAL;
    amdsmi_status_t r = metric(handle, clk_type == AMDSMI_CLK_TYPE_GFX ? 0 : 1, &v);
    if (r == AMDSMI_STATUS_SUCCESS) {
        memset(info, 0, sizeof *info);
        info->clk = (uint32_t)v;
        info->min_clk = 500;
        info->max_clk = 2100;
    }
    return r;
}

amdsmi_status_t amdsmi_get_gpu_activity(void *handle, amdsmi_engine_usage_t *info) {
    double v = 0;
    if (!info) return AMDSMI_STATUS_INVAL;
    amdsmi_status_t r = metric(handle, 2, &v);
    if (r == AMDSMI_STATUS_SUCCESS) {
        memset(info, 0, sizeof *info);
        info->gfx_activity = (uint32_t)v;
        info->umc_activity = (uint32_t)v / 2;
    }
    return r;
}

amdsmi_status_t amdsmi_get_gpu_memory_usage(void *handle, uint32_t mem_type, uint64_t *used) {
    double v = 0;
    if (!used || mem_type != AMDSMI_MEM_TYPE_VRAM) return AMDSMI_STATUS_INVAL;
    amdsmi_status_t r = metric(handle, 3, &v);
    if (r == AMDSMI_STATUS_SUCCESS) *used = (uint64_t)v << 20;
    return r;
}
