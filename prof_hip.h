/* prof_hip.h - GPU regions for prof.h on HIP (ROCm). MIT licence (see prof.h).

   The HIP twin of prof_cuda.h, used the same way: prof.h's PROF_GPU_* macros
   (>>api-gpu) on libamdhip64, plus prof_hipMalloc / prof_hipFree. hipcc
   defines the platform; a plain C or C++ compiler gets AMD's. HIP has no
   stream ids: streams are numbered here, 0 for the default one. Kernel
   capture (PROF_KERNELS=1) goes through rocprofiler-sdk, whose tracer lives
   in the file that defines PROF_IMPLEMENTATION: include prof_hip.h there, or
   define PROF_GPU_IMPLEMENTATION in one file that includes prof_hip.h (the
   tracer alone; prof.h's implementation then in a file of its own, which
   a C compiler may build rather than hipcc).
   PROF_ENERGY reads AMD SMI's energy counters (loaded with dlopen). */
#ifndef PROF_HIP_H
#define PROF_HIP_H

#include "prof.h"

#if PROF__ENABLED
#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__) && !defined(__HIP_PLATFORM_HCC__)
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

/* The libraries this binding loads, as rows of prof.h's table of options
   (PROF__OPTIONS's columns, kind LIB: for the docs; each is read where it
   is loaded, below). */
#define PROF__HIP_LIBS(X)                                                                                     \
    X("PROF_ROCPROFILER_SDK", none, LIB, "$ROCM_PATH/lib's", 0, 0, "", "",                                     \
      "the librocprofiler-sdk.so to load (prof_hip.h)")                                                        \
    X("PROF_AMDSMI_LIB", none, LIB, "libamd_smi.so", 0, 0, "", "", "the AMD SMI to load for PROF_ENERGY (prof_hip.h)")

/* The rocprofiler-sdk tracer and the streams' numbers, defined below in the
   implementation's file; weak, so that a program whose implementation's
   file includes prof.h alone still links (without kernel capture). */
#ifdef __cplusplus
extern "C" {
#endif
PROF_API extern const prof_gpu_tracer prof__roc_tracer __attribute__((weak));
PROF_API long long prof__roc_stream_id(void *stream) __attribute__((weak));
PROF_API void prof__roc_early(void) __attribute__((weak));
#ifdef __cplusplus
}
#endif

PROF__GPU_LAST_ERROR(hip, hipError_t)     /* prof__hip_kept: the engine's last error kept */

/* What differs from CUDA: the properties struct, and no stream ids. */
static int prof__hip_device_props(int d, prof_gpu_props *o) {
    hipDeviceProp_t p;
    hipError_t prior = hipPeekAtLastError();
    hipError_t e = hipGetDeviceProperties(&p, d);
    if (e != hipSuccess) return prof__hip_kept(prior, e);
    PROF__GPU_PROPS(o, p);
    o->regs_per_sm = 0;                 /* not in hipDeviceProp_t */
    o->smem_per_sm = PROF__SCAST(int64_t, p.maxSharedMemoryPerMultiProcessor);
    o->smem_per_block_optin = 0;
    return 0;
}

/* HIP has no stream ids: the kernels' tracer numbers streams, as its
   launches name them, so that regions and kernels share a track. */
static int prof__hip_stream_info(void *s, int *dev, long long *id) {
    *id = prof__roc_stream_id ? prof__roc_stream_id(s) : -1;
    PROF__GPU_KEPT(hip, hipError_t, hipGetDevice(dev));
}

/* ---- energy through AMD SMI (PROF_ENERGY=1) --------------------------------
   AMD's management library, the same way as NVML in prof_cuda.h: loaded
   with dlopen, never linked (PROF_AMDSMI_LIB, else libamd_smi.so from the
   loader's paths, else $ROCM_PATH/lib's), amdsmi_init for its GPUs, a
   processor by its bdf, and amdsmi_get_energy_count's accumulator times
   its resolution (uJ per count, given with each read). The calls are bound
   from AMD SMI's documented ABI (no amdsmi.h is needed): tested against a
   double, not on a real AMD GPU. prof.h's core makes every call, on its
   own thread (>>energy). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *prof__amdsmi_dlopen(const char *, int) __attribute__((weakref("dlopen")));
static void *prof__amdsmi_dlsym(void *, const char *) __attribute__((weakref("dlsym")));
static char *prof__amdsmi_dlerror(void) __attribute__((weakref("dlerror")));

static struct {
    int (*init)(uint64_t flags);                /* amdsmi_init */
    int (*by_bdf)(uint64_t bdf, void **h);      /* amdsmi_get_processor_handle_from_bdf */
    int (*energy)(void *h, uint64_t *acc, float *res_uj, uint64_t *ts); /* amdsmi_get_energy_count */
    int (*str)(int status, const char **s);     /* amdsmi_status_code_to_string, if there */
    /* PROF_GPU_METRICS' calls, each NULL where this AMD SMI lacks it */
    int (*clock)(void *h, int type, void *info);                /* amdsmi_get_clock_info */
    int (*activity)(void *h, void *usage);                      /* amdsmi_get_gpu_activity */
    int (*mem)(void *h, int type, uint64_t *used);              /* amdsmi_get_gpu_memory_usage */
} prof__amdsmi;

static void prof__amdsmi_error(int err, char *buf, size_t n) {
    const char *s = PROF__NULLPTR;
    if (prof__amdsmi.str && prof__amdsmi.str(err, &s) != 0) s = PROF__NULLPTR;
    snprintf(buf, n, "AMD SMI error %d%s%s", err, s ? ": " : "", s ? s : "");
}

/* AMD SMI loaded and initialised: 1; 0: said why (one line), *why the trace's. */
static int prof__amdsmi_open(const char **why) {
    static const char *const names[4] = { "amdsmi_init", "amdsmi_get_processor_handle_from_bdf",
                                          "amdsmi_get_energy_count", "amdsmi_status_code_to_string" };
    static const char *const whys[2] = { "AMD SMI could not be loaded", "AMD SMI lacks the calls it needs" };
    static const prof__gpu_dl dl = { prof__amdsmi_dlopen, prof__amdsmi_dlsym, prof__amdsmi_dlerror,
                                     RTLD_NOW | RTLD_LOCAL };
    char line[512], e[160], rocm_lib[4096];
    const char *path = getenv("PROF_AMDSMI_LIB"), *fallback = PROF__NULLPTR;
    if (!path || !*path) {              /* the loader's paths, then ROCm's own folder */
        const char *rocm = getenv("ROCM_PATH");
        snprintf(rocm_lib, sizeof rocm_lib, "%s/lib/libamd_smi.so", rocm && *rocm ? rocm : "/opt/rocm");
        path = "libamd_smi.so";
        fallback = rocm_lib;
    }
    void *f[4];
    void *lib = prof__gpu_lib_load(&dl, path, fallback, names, 4, 3, f, whys, why);
    if (!lib) return 0;
    memcpy(&prof__amdsmi.init, &f[0], sizeof f[0]);     /* an object pointer into a function pointer */
    memcpy(&prof__amdsmi.by_bdf, &f[1], sizeof f[1]);
    memcpy(&prof__amdsmi.energy, &f[2], sizeof f[2]);
    if (f[3]) memcpy(&prof__amdsmi.str, &f[3], sizeof f[3]);
    void *g[3] = { prof__amdsmi_dlsym(lib, "amdsmi_get_clock_info"), prof__amdsmi_dlsym(lib, "amdsmi_get_gpu_activity"),
                   prof__amdsmi_dlsym(lib, "amdsmi_get_gpu_memory_usage") };
    if (g[0]) memcpy(&prof__amdsmi.clock, &g[0], sizeof g[0]);
    if (g[1]) memcpy(&prof__amdsmi.activity, &g[1], sizeof g[1]);
    if (g[2]) memcpy(&prof__amdsmi.mem, &g[2], sizeof g[2]);
    int err = prof__amdsmi.init(2);     /* AMDSMI_INIT_AMD_GPUS */
    if (err) {
        prof__amdsmi_error(err, e, sizeof e);
        snprintf(line, sizeof line, "PROF_ENERGY: %s failed (%s); no energy in the trace", names[0], e);
        prof_gpu_say(line);
        *why = "amdsmi_init failed";
        return 0;
    }
    return 1;
}

/* A PCI bus id as the runtimes write it ("0000:18:00.0") as AMD SMI's bdf:
   function in bits 0-2, device 3-7, bus 8-15, domain 16-63. -1: not one. */
static int prof__amdsmi_device(const char *bus, void **h) {
    unsigned dom = 0, b = 0, d = 0, f = 0;
    if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &d, &f) != 4 || b > 255 || d > 31 || f > 7) return -1;
    uint64_t bdf = PROF__SCAST(uint64_t, f) | PROF__SCAST(uint64_t, d) << 3 | PROF__SCAST(uint64_t, b) << 8 |
                   PROF__SCAST(uint64_t, dom) << 16;
    return prof__amdsmi.by_bdf(bdf, h);
}

static int prof__amdsmi_read(void *h, uint64_t *count, double *mj_per_count) {
    uint64_t acc = 0, ts = 0;
    float res = 0;
    int err = prof__amdsmi.energy(h, &acc, &res, &ts);
    if (!err && res > 0) *mj_per_count = PROF__SCAST(double, res) / 1000.0;   /* resolution: uJ per count */
    *count = acc;
    return err;
}

/* PROF_GPU_METRICS: metric m of processor h, by AMD SMI's documented ABI:
   amdsmi_clk_info_t {uint32 clk (MHz), min_clk, max_clk; uint8 clk_locked,
   clk_deep_sleep; uint32 reserved[4]} for AMDSMI_CLK_TYPE_GFX 0 and
   AMDSMI_CLK_TYPE_MEM 4; amdsmi_engine_usage_t {uint32 gfx_activity (%),
   umc_activity, mm_activity, reserved[13]}; amdsmi_get_gpu_memory_usage's
   bytes of AMDSMI_MEM_TYPE_VRAM 0. Throttle reasons and PCIe throughput
   are not read (AMD SMI's PCIe call samples for a second). A call this AMD
   SMI lacks: AMDSMI_STATUS_NOT_SUPPORTED (2). */
static int prof__amdsmi_metric(void *h, int m, double *v) {
    struct { uint32_t clk, min_clk, max_clk; uint8_t locked, deep_sleep; uint32_t reserved[4]; } clk;
    uint32_t usage[16];
    uint64_t used = 0;
    int err = 2;
    memset(&clk, 0, sizeof clk);
    memset(usage, 0, sizeof usage);
    if (m == PROF_GPU_M_SM_CLOCK || m == PROF_GPU_M_MEM_CLOCK) {
        if (prof__amdsmi.clock && !(err = prof__amdsmi.clock(h, m == PROF_GPU_M_SM_CLOCK ? 0 : 4, &clk)))
            *v = PROF__SCAST(double, clk.clk);
    } else if (m == PROF_GPU_M_UTIL) {
        if (prof__amdsmi.activity && !(err = prof__amdsmi.activity(h, usage))) *v = PROF__SCAST(double, usage[0]);
    } else if (m == PROF_GPU_M_MEM_USED) {
        if (prof__amdsmi.mem && !(err = prof__amdsmi.mem(h, 0, &used))) *v = PROF__SCAST(double, used) / 1048576.0;
    }
    return err;
}

static const prof_gpu_energy prof__amdsmi_energy = {
    "AMD SMI", "amdsmi_get_energy_count", 2 /* AMDSMI_STATUS_NOT_SUPPORTED */, "",
    prof__amdsmi_open, prof__amdsmi_device, prof__amdsmi_read, prof__amdsmi_error,
    prof__amdsmi_metric,
    { "amdsmi_get_clock_info", "amdsmi_get_clock_info", "amdsmi_get_gpu_activity", "amdsmi_get_gpu_memory_usage",
      PROF__NULLPTR, PROF__NULLPTR, PROF__NULLPTR },
    { PROF__NULLPTR },
};

PROF__GPU_RUNTIME(hip, "HIP", hipError_t, hipStream_t, hipEvent_t, &prof__roc_tracer, &prof__amdsmi_energy)
#define PROF__GPU_API      prof__hip_api
#define PROF__GPU_DEVICE() prof__hip_device()

/* PROF_INIT here starts kernel capture, when PROF_KERNELS asks, before the
   first kernel rather than at the first GPU region; it configures the SDK
   before its own first HIP call, as the SDK needs. */
static inline void prof__hip_early(void) {
    if (prof__roc_early) prof__roc_early();
}
#undef PROF_INIT
#define PROF_INIT(cfg) (prof_init(cfg), prof__hip_early(), prof_gpu_attach(&prof__hip_api))

/* ---- kernel capture through rocprofiler-sdk (PROF_KERNELS=1) --------------
   AMD's tool interface since ROCm 6.2 (roctracer is frozen), used as PyTorch's
   profiler uses it: a context with callback tracing of the HIP runtime API
   (each call's name, thread, correlation id, and the stream and bytes of
   launches and copies), a buffer of kernel-dispatch and memory-copy records
   (the GPU's times, on CLOCK_BOOTTIME), and a context of its own for code
   objects (kernel id -> name), started at once: the SDK hands kernel
   symbols only to contexts active when a code object loads. Each record
   becomes a prof_gpu_activity, as CUPTI's do in prof_cuda.h.

   The SDK is never linked. The implementation's file exports
   rocprofiler_configure, the SDK's discovery entry point: ROCm's HIP finds
   it at its own start (rocprofiler-register) when kernel capture is asked
   for in the environment. Otherwise, when capture starts, the SDK is
   dlopen()ed (PROF_ROCPROFILER_SDK, else $ROCM_PATH/lib, else the loader's
   paths) and rocprofiler_force_configure is handed that same function. An
   SDK that is absent, older than 0.4 or already configured by another tool
   (rocprofv3, Kineto) is said in one line; GPU regions go on. */
#if (defined(PROF_IMPLEMENTATION) || defined(PROF_GPU_IMPLEMENTATION)) && !defined(PROF__ROC_DONE) && \
    !defined(__HIP_DEVICE_COMPILE__)
#define PROF__ROC_DONE                  /* (host code only: hipcc's device pass leaves it out) */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The part of the SDK's ABI used here, as its headers declare it (written
   from rocprofiler-sdk 0.5.0, ROCm 6.3; the same in 0.4.0, ROCm 6.2, and
   extended only at the ends of structs since). Every struct carries its
   size: a field is read only when the size says it is there. */
typedef struct { uint64_t handle; } prof__roc_id;       /* context, buffer, agent, queue ids */
typedef struct { const char *name; uint32_t handle; } prof__roc_client; /* rocprofiler_client_id_t */
typedef struct { uint64_t internal, external; } prof__roc_corr;         /* rocprofiler_correlation_id_t */
typedef struct {                        /* rocprofiler_callback_tracing_record_t */
    prof__roc_id context;
    uint64_t thread_id;
    prof__roc_corr correlation;
    int32_t kind, operation, phase;
    void *payload;
} prof__roc_cb_rec;
typedef struct { uint32_t category, kind; void *payload; } prof__roc_header; /* rocprofiler_record_header_t */
typedef struct {                        /* rocprofiler_buffer_tracing_kernel_dispatch_record_t */
    uint64_t size;
    int32_t kind, operation;
    prof__roc_corr correlation;
    uint64_t thread_id, start, end;
    struct {                            /* rocprofiler_kernel_dispatch_info_t */
        uint64_t size;                  /* up to its padding */
        prof__roc_id agent, queue;
        uint64_t kernel_id, dispatch_id;
        uint32_t private_segment_size, group_segment_size;
        uint32_t workgroup[3], grid[3]; /* grid: work-items, not blocks */
    } info;
} prof__roc_dispatch;
typedef struct {                        /* rocprofiler_buffer_tracing_memory_copy_record_t */
    uint64_t size;
    int32_t kind, operation;            /* operation: 1 HtoH, 2 HtoD, 3 DtoH, 4 DtoD */
    prof__roc_corr correlation;
    uint64_t thread_id, start, end;
    prof__roc_id dst_agent, src_agent;
    uint64_t bytes;
} prof__roc_copy;
typedef struct {                        /* rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t */
    uint64_t size, kernel_id, code_object_id;
    const char *kernel_name;            /* with a ".kd" suffix */
} prof__roc_symbol;
typedef struct {                        /* rocprofiler_agent_v0_t, its head */
    uint64_t size;
    prof__roc_id id;
    int32_t type;                       /* 2: a GPU */
} prof__roc_agent;
#define PROF__ROC_AGENT_TYPE_INDEX 288  /* offset of its int32 logical_node_type_id: the HIP device */
typedef struct {                        /* rocprofiler_tool_configure_result_t */
    size_t size;
    int (*initialize)(void (*fini)(prof__roc_client), void *tool_data);
    void (*finalize)(void *tool_data);
    void *tool_data;
} prof__roc_tool;
typedef int prof__roc_status;           /* rocprofiler_status_t: 0 is success */
typedef prof__roc_tool *prof__roc_configure_fn(uint32_t version, const char *runtime_version, uint32_t priority,
                                               prof__roc_client *client);
typedef void prof__roc_cb_fn(prof__roc_cb_rec rec, uint64_t *user_data, void *data);
typedef void prof__roc_buf_fn(prof__roc_id context, prof__roc_id buffer, prof__roc_header **headers, size_t n,
                              void *data, uint64_t drops);
typedef int prof__roc_op_fn(int32_t kind, int32_t op, void *data);
typedef int prof__roc_arg_fn(int32_t kind, int32_t op, uint32_t arg_number, const void *value, int32_t indirection,
                             const char *type, const char *name, const char *value_str, int32_t deref, void *data);
typedef prof__roc_status prof__roc_agents_fn(int version, const void **agents, size_t n, void *data);
enum {
    PROF__ROC_CB_HIP_RUNTIME = 5, PROF__ROC_CB_CODE_OBJECT = 10,        /* rocprofiler_callback_tracing_kind_t */
    PROF__ROC_BUF_MEMORY_COPY = 10, PROF__ROC_BUF_KERNEL_DISPATCH = 11, /* rocprofiler_buffer_tracing_kind_t */
    PROF__ROC_CATEGORY_TRACING = 1, PROF__ROC_SYMBOL_REGISTER = 2, PROF__ROC_PHASE_ENTER = 1,
    PROF__ROC_PHASE_EXIT = 2, PROF__ROC_POLICY_DISCARD = 1, PROF__ROC_AGENT_INFO_V0 = 1, PROF__ROC_AGENT_GPU = 2,
};

#ifdef __cplusplus
extern "C" {
#endif
prof__roc_tool *rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                      prof__roc_client *client) __attribute__((visibility("default")));
#ifdef __cplusplus
}
#endif

#define PROF__ROC_BUF    (4u << 20)     /* bytes of the SDK's record buffer */
#define PROF__ROC_OPS    1024           /* HIP runtime operations remembered */
#define PROF__ROC_CORR   65536u         /* launches remembered (stream, by correlation); a power of 2 */
#define PROF__ROC_AGENTS 64
#define PROF__ROC_STREAMS 256

typedef struct prof__roc_kname { uint64_t id; char *raw; const char *name; } prof__roc_kname;
static struct {
    prof__roc_status (*is_initialized)(int *);
    prof__roc_status (*force_configure)(prof__roc_configure_fn *);
    prof__roc_status (*timestamp)(uint64_t *);
    const char *(*status_string)(prof__roc_status);
    prof__roc_status (*create_context)(prof__roc_id *);
    prof__roc_status (*start_context)(prof__roc_id);
    prof__roc_status (*stop_context)(prof__roc_id);
    prof__roc_status (*callback_service)(prof__roc_id, int32_t, const int32_t *, size_t, prof__roc_cb_fn *, void *);
    prof__roc_status (*buffer_service)(prof__roc_id, int32_t, const int32_t *, size_t, prof__roc_id);
    prof__roc_status (*create_buffer)(prof__roc_id, size_t, size_t, int, prof__roc_buf_fn *, void *, prof__roc_id *);
    prof__roc_status (*flush_buffer)(prof__roc_id);
    prof__roc_status (*op_name)(int32_t, int32_t, const char **, uint64_t *);
    prof__roc_status (*each_op)(int32_t, prof__roc_op_fn *, void *);
    prof__roc_status (*each_arg)(prof__roc_cb_rec, prof__roc_arg_fn *, int32_t, void *);
    prof__roc_status (*agents)(int, prof__roc_agents_fn *, size_t, void *);
    char *(*demangle)(const char *, char *, size_t *, int *);  /* libstdc++'s, if loaded */
    int bound;                          /* the functions above are loaded */
    int asked;                          /* atomic: capture asked for (start runs force_configure) */
    int tried;                          /* atomic: prof.h loaded and configured the SDK, or tried */
    int configured;                     /* atomic: initialize made the contexts */
    int finalized;                      /* atomic: the SDK called finalize: no more calls into it */
    int on;                             /* atomic: capturing */
    prof__roc_id code_ctx, ctx, buf;
    struct { uint64_t handle; int device; } agent[PROF__ROC_AGENTS];
    int nagent;
    const char *op[PROF__ROC_OPS];      /* runtime call names (interned); "" left out */
    unsigned char op_args[PROF__ROC_OPS]; /* 1: a launch, copy or fill: its stream and bytes are read */
    struct { uint64_t corr; uint64_t stream; } corr[PROF__ROC_CORR]; /* atomic fields */
    prof__roc_kname *kn;                /* under prof__roc_lock */
    size_t nkn, capkn;                  /* open addressing, capkn a power of 2 */
    void *stream[PROF__ROC_STREAMS];    /* under prof__roc_lock: stream i + 1 */
    int nstream;
} prof__roc;
#ifdef __cplusplus                      /* glibc's initializer has 0 for pointers */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wzero-as-null-pointer-constant"
#endif
static pthread_mutex_t prof__roc_lock = PTHREAD_MUTEX_INITIALIZER;
#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif

static void prof__roc_off(const char *why) {
    char line[1536];
    snprintf(line, sizeof line, "rocprofiler-sdk: %s; no kernel capture, GPU regions are still timed by events", why);
    prof_gpu_say(line);
}

static void prof__roc_fail(const char *what, prof__roc_status st) {
    char line[512];
    const char *why = prof__roc.status_string ? prof__roc.status_string(st) : PROF__NULLPTR;
    snprintf(line, sizeof line, "%s failed: %s (%d)", what, why ? why : "unknown status", st);
    prof__roc_off(line);
}

/* A function of the SDK into fp (an object pointer cannot be cast to a
   function pointer in ISO C: the bytes are copied). */
static int prof__roc_sym(void *lib, const char *name, void *fp, size_t fp_size) {
    void *sym = dlsym(lib, name);
    if (sym) memcpy(fp, &sym, fp_size);
    return sym != PROF__NULLPTR;
}
#define PROF__ROC_SYM(lib, fn, name) prof__roc_sym((lib), (name), &prof__roc.fn, sizeof prof__roc.fn)

/* The SDK's functions from lib; 0 when one is missing. */
static int prof__roc_bind(void *lib) {
    if (prof__roc.bound) return 1;
    if (!PROF__ROC_SYM(lib, is_initialized, "rocprofiler_is_initialized") ||
        !PROF__ROC_SYM(lib, force_configure, "rocprofiler_force_configure") ||
        !PROF__ROC_SYM(lib, timestamp, "rocprofiler_get_timestamp") ||
        !PROF__ROC_SYM(lib, create_context, "rocprofiler_create_context") ||
        !PROF__ROC_SYM(lib, start_context, "rocprofiler_start_context") ||
        !PROF__ROC_SYM(lib, stop_context, "rocprofiler_stop_context") ||
        !PROF__ROC_SYM(lib, callback_service, "rocprofiler_configure_callback_tracing_service") ||
        !PROF__ROC_SYM(lib, buffer_service, "rocprofiler_configure_buffer_tracing_service") ||
        !PROF__ROC_SYM(lib, create_buffer, "rocprofiler_create_buffer") ||
        !PROF__ROC_SYM(lib, flush_buffer, "rocprofiler_flush_buffer") ||
        !PROF__ROC_SYM(lib, op_name, "rocprofiler_query_callback_tracing_kind_operation_name"))
        return 0;
    PROF__ROC_SYM(lib, status_string, "rocprofiler_get_status_string");
    PROF__ROC_SYM(lib, each_op, "rocprofiler_iterate_callback_tracing_kind_operations");
    PROF__ROC_SYM(lib, each_arg, "rocprofiler_iterate_callback_tracing_kind_operation_args");
    PROF__ROC_SYM(lib, agents, "rocprofiler_query_available_agents");
    /* the C++ runtime's demangler: the program's, else libstdc++ loaded for it */
    void *self = dlopen(PROF__NULLPTR, RTLD_NOW), *cxx;
    if ((!self || !PROF__ROC_SYM(self, demangle, "__cxa_demangle")) &&
        (cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL)) != PROF__NULLPTR)
        PROF__ROC_SYM(cxx, demangle, "__cxa_demangle");
    prof__roc.bound = 1;
    return 1;
}

/* The SDK: PROF_ROCPROFILER_SDK, else $ROCM_PATH/lib's, else the loader's.
   With `flags` RTLD_NOLOAD, only one already in the process. */
static void *prof__roc_open(int flags, char *path, size_t size) {
    const char *env = getenv("PROF_ROCPROFILER_SDK"), *rocm = getenv("ROCM_PATH");
    void *lib = PROF__NULLPTR;
    if (env && *env) {
        snprintf(path, size, "%s", env);
        return dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);
    }
    if (rocm && *rocm) {
        snprintf(path, size, "%s/lib/librocprofiler-sdk.so", rocm);
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);
    }
    if (!lib) {
        snprintf(path, size, "librocprofiler-sdk.so");
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);
    }
    return lib;
}

/* The SDK already in the process (loaded by ROCm's HIP as it started), found
   among the loaded objects by its file name; NULL if none. */
static void *prof__roc_loaded(void) {
    for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
        const char *base = m->l_name ? strrchr(m->l_name, '/') : PROF__NULLPTR;
        base = base ? base + 1 : m->l_name;
        if (base && !strncmp(base, "librocprofiler-sdk.so", 21)) return dlopen(m->l_name, RTLD_NOW | RTLD_NOLOAD);
    }
    return PROF__NULLPTR;
}

/* The device (HIP's index) of an agent; -1 when unknown. */
static int prof__roc_device(uint64_t agent) {
    for (int i = 0; i < prof__roc.nagent; i++)
        if (prof__roc.agent[i].handle == agent) return prof__roc.agent[i].device;
    return -1;
}

static prof__roc_status prof__roc_agents(int version, const void **agents, size_t n, void *data) {
    (void)data;
    if (version != PROF__ROC_AGENT_INFO_V0) return 0;
    for (size_t i = 0; i < n && prof__roc.nagent < PROF__ROC_AGENTS; i++) {
        const prof__roc_agent *a = PROF__SCAST(const prof__roc_agent *, agents[i]);
        int32_t index;
        if (a->size < PROF__ROC_AGENT_TYPE_INDEX + sizeof index || a->type != PROF__ROC_AGENT_GPU) continue;
        memcpy(&index, PROF__SCAST(const char *, agents[i]) + PROF__ROC_AGENT_TYPE_INDEX, sizeof index);
        prof__roc.agent[prof__roc.nagent].handle = a->id.handle;
        prof__roc.agent[prof__roc.nagent++].device = index;
    }
    return 0;
}

/* prof.h's number of a HIP stream, 0 for the default: the GPU regions'
   (prof__hip_stream_info) and the kernels' (by their launch) alike. */
static long long prof__roc_stream_number(void *s) {
    static __thread struct { void *s; long long id; } last;  /* a thread launches on one stream mostly */
    if (!s) return 0;
    if (s == last.s) return last.id;
    pthread_mutex_lock(&prof__roc_lock);
    int i = 0;
    while (i < prof__roc.nstream && prof__roc.stream[i] != s) i++;
    if (i == prof__roc.nstream && i < PROF__ROC_STREAMS) prof__roc.stream[prof__roc.nstream++] = s;
    pthread_mutex_unlock(&prof__roc_lock);
    last.s = s;
    last.id = i < PROF__ROC_STREAMS ? i + 1 : -1;
    return last.id;
}

/* A runtime call's name (interned), "" for those left out as Kineto leaves
   them out: prof.h's own queries and what engines call between launches. */
static const char *prof__roc_op_name(int32_t op) {
    static const char *const skip[] = { "hipGetDevice", "hipSetDevice", "hipGetLastError", "hipPeekAtLastError",
                                        "hipEventQuery", "hipGetDeviceCount", "hipDeviceGetAttribute",
                                        "hipCtxSetCurrent", "hipGetDevicePropertiesR0600", "hipRuntimeGetVersion",
                                        "hipModuleGetFunction", "hipStreamIsCapturing" };
    if (op < 0 || op >= PROF__ROC_OPS) return "(runtime call)";
    const char *name = __atomic_load_n(&prof__roc.op[op], __ATOMIC_ACQUIRE);
    if (name) return name;
    const char *raw = PROF__NULLPTR;
    uint64_t n = 0;
    if (prof__roc.op_name(PROF__ROC_CB_HIP_RUNTIME, op, &raw, &n) || !raw) raw = "(runtime call)", n = 14;
    size_t len = n;
    name = prof_intern(raw, len);
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (!strcmp(skip[i], name)) name = "";
    /* launches, copies and fills: their stream (and bytes) are read */
    int args = !strncmp(name, "hipLaunch", 9) || !strncmp(name, "hipExtLaunch", 12) ||
               !strncmp(name, "hipModuleLaunch", 15) || !strncmp(name, "hipExtModuleLaunch", 18) ||
               !strncmp(name, "hipMemcpy", 9) || !strncmp(name, "hipMemset", 9);
    __atomic_store_n(&prof__roc.op_args[op], PROF__SCAST(unsigned char, args), __ATOMIC_RELAXED);
    __atomic_store_n(&prof__roc.op[op], name, __ATOMIC_RELEASE);
    return name;
}

/* The operations traced: every HIP runtime call but those left out. */
static int prof__roc_each_op(int32_t kind, int32_t op, void *data) {
    int32_t *ops = PROF__SCAST(int32_t *, data);
    (void)kind;
    if (op >= 0 && op < PROF__ROC_OPS && *prof__roc_op_name(op) && ops[0] < PROF__ROC_OPS) ops[1 + ops[0]++] = op;
    return 0;
}

typedef struct { void *stream; uint64_t bytes; } prof__roc_call_args;

static int prof__roc_arg(int32_t kind, int32_t op, uint32_t arg_number, const void *value, int32_t indirection,
                         const char *type, const char *name, const char *value_str, int32_t deref, void *data) {
    prof__roc_call_args *a = PROF__SCAST(prof__roc_call_args *, data);
    (void)kind, (void)op, (void)arg_number, (void)indirection, (void)type, (void)value_str, (void)deref;
    if (!value || !name) return 0;
    if (!strcmp(name, "stream")) memcpy(&a->stream, value, sizeof a->stream);
    else if (!strcmp(name, "sizeBytes") || !strcmp(name, "size")) memcpy(&a->bytes, value, sizeof a->bytes);
    return 0;
}

static int64_t prof__roc_now(void) {
    uint64_t t = 0;
    prof__roc.timestamp(&t);
    return PROF__SCAST(int64_t, t);
}

/* HIP runtime calls, on the engine's threads: the time at entry is kept in
   the SDK's per-call slot; at exit the call becomes a runtime activity, and
   a launch's stream is remembered by its correlation for its kernel. */
static void prof__roc_api(prof__roc_cb_rec r, uint64_t *user, void *data) {
    (void)data;
    if (r.kind != PROF__ROC_CB_HIP_RUNTIME || !__atomic_load_n(&prof__roc.on, __ATOMIC_ACQUIRE)) return;
    if (r.phase == PROF__ROC_PHASE_ENTER) {
        *user = PROF__SCAST(uint64_t, prof__roc_now());
        return;
    }
    if (r.phase != PROF__ROC_PHASE_EXIT || !*user) return;
    prof_gpu_activity a;
    memset(&a, 0, sizeof a);
    a.t1_ns = prof__roc_now();
    a.kind = PROF_GPU_RUNTIME;
    a.name = prof__roc_op_name(r.operation);
    if (!*a.name) return;
    a.device = -1;
    a.correlation = PROF__SCAST(uint32_t, r.correlation.internal);
    a.t0_ns = PROF__SCAST(int64_t, *user);
    a.thread = r.thread_id;
    a.cbid = r.operation;
    if (prof__roc.each_arg && r.operation >= 0 && r.operation < PROF__ROC_OPS &&
        __atomic_load_n(&prof__roc.op_args[r.operation], __ATOMIC_RELAXED)) {
        prof__roc_call_args ca = { PROF__NULLPTR, 0 };
        prof__roc.each_arg(r, prof__roc_arg, 1, &ca);
        long long sid = prof__roc_stream_number(ca.stream);
        a.stream = sid;
        a.bytes = ca.bytes;
        size_t slot = r.correlation.internal & (PROF__ROC_CORR - 1);
        __atomic_store_n(&prof__roc.corr[slot].stream, PROF__SCAST(uint64_t, sid < 0 ? 0 : sid), __ATOMIC_RELAXED);
        __atomic_store_n(&prof__roc.corr[slot].corr, r.correlation.internal, __ATOMIC_RELEASE);
    }
    prof_gpu_activity_add(&a);
}

/* The stream a correlation's call launched on; 0 when not remembered. */
static long long prof__roc_stream_of(uint64_t corr) {
    size_t slot = corr & (PROF__ROC_CORR - 1);
    if (__atomic_load_n(&prof__roc.corr[slot].corr, __ATOMIC_ACQUIRE) != corr) return 0;
    uint64_t s = __atomic_load_n(&prof__roc.corr[slot].stream, __ATOMIC_RELAXED);
    return __atomic_load_n(&prof__roc.corr[slot].corr, __ATOMIC_ACQUIRE) == corr ? PROF__SCAST(long long, s) : 0;
}

/* Kernel symbols as code objects load (any thread): id -> name. */
static void prof__roc_code_object(prof__roc_cb_rec r, uint64_t *user, void *data) {
    (void)user, (void)data;
    if (r.kind != PROF__ROC_CB_CODE_OBJECT || r.operation != PROF__ROC_SYMBOL_REGISTER ||
        r.phase != PROF__ROC_PHASE_ENTER || !r.payload)
        return;
    const prof__roc_symbol *s = PROF__SCAST(const prof__roc_symbol *, r.payload);
    if (s->size < sizeof *s || !s->kernel_name) return;
    size_t n = strlen(s->kernel_name);
    if (n > 3 && !strcmp(s->kernel_name + n - 3, ".kd")) n -= 3;
    pthread_mutex_lock(&prof__roc_lock);
    if (2 * (prof__roc.nkn + 1) > prof__roc.capkn) {  /* at most half full */
        size_t cap = prof__roc.capkn ? 2 * prof__roc.capkn : 1024;
        prof__roc_kname *t = PROF__SCAST(prof__roc_kname *, calloc(cap, sizeof *t));
        if (!t) {
            pthread_mutex_unlock(&prof__roc_lock);
            return;                     /* its kernels go unnamed */
        }
        for (size_t i = 0; i < prof__roc.capkn; i++) {
            if (!prof__roc.kn[i].raw) continue;
            size_t j = prof__roc.kn[i].id & (cap - 1);
            while (t[j].raw) j = (j + 1) & (cap - 1);
            t[j] = prof__roc.kn[i];
        }
        free(prof__roc.kn);
        prof__roc.kn = t;
        prof__roc.capkn = cap;
    }
    size_t j = s->kernel_id & (prof__roc.capkn - 1);
    while (prof__roc.kn[j].raw && prof__roc.kn[j].id != s->kernel_id) j = (j + 1) & (prof__roc.capkn - 1);
    char *raw = PROF__SCAST(char *, malloc(n + 1));
    if (raw && !prof__roc.kn[j].raw) {
        memcpy(raw, s->kernel_name, n);
        raw[n] = 0;
        prof__roc.kn[j].id = s->kernel_id;
        prof__roc.kn[j].raw = raw;
        prof__roc.kn[j].name = PROF__NULLPTR;
        prof__roc.nkn++;
    } else {
        free(raw);
    }
    pthread_mutex_unlock(&prof__roc_lock);
}

/* A kernel's name as Kineto shows it (demangled), from its id. */
static const char *prof__roc_kernel_name(uint64_t id) {
    const char *name = "(unknown kernel)";
    pthread_mutex_lock(&prof__roc_lock);
    size_t j = prof__roc.capkn ? id & (prof__roc.capkn - 1) : 0;
    while (prof__roc.capkn && prof__roc.kn[j].raw && prof__roc.kn[j].id != id) j = (j + 1) & (prof__roc.capkn - 1);
    if (prof__roc.capkn && prof__roc.kn[j].raw) {
        prof__roc_kname *k = &prof__roc.kn[j];
        if (!k->name) {
            int st = -1;
            char *d = prof__roc.demangle && k->raw[0] == '_' && k->raw[1] == 'Z'
                          ? prof__roc.demangle(k->raw, PROF__NULLPTR, PROF__NULLPTR, &st) : PROF__NULLPTR;
            const char *use = d && !st ? d : k->raw;
            k->name = prof_intern(use, strlen(use));
            free(d);
        }
        name = k->name;
    }
    pthread_mutex_unlock(&prof__roc_lock);
    return name;
}

/* Completed records, on the SDK's thread; their memory is the SDK's until
   this returns. The SDK reports a grid in work-items: here in blocks. */
static void prof__roc_buffer(prof__roc_id ctx, prof__roc_id buf, prof__roc_header **h, size_t n, void *data,
                             uint64_t drops) {
    static const char *const copies[] = { "Memcpy", "Memcpy HtoH (Host -> Host)", "Memcpy HtoD (Host -> Device)",
                                          "Memcpy DtoH (Device -> Host)", "Memcpy DtoD (Device -> Device)" };
    uint64_t lost = drops;
    (void)ctx, (void)buf, (void)data;
    for (size_t i = 0; i < n; i++) {
        if (!h[i] || h[i]->category != PROF__ROC_CATEGORY_TRACING || !h[i]->payload) continue;
        prof_gpu_activity a;
        memset(&a, 0, sizeof a);
        if (h[i]->kind == PROF__ROC_BUF_KERNEL_DISPATCH) {
            const prof__roc_dispatch *k = PROF__SCAST(const prof__roc_dispatch *, h[i]->payload);
            if (k->size < sizeof *k || k->info.size < sizeof k->info) {
                lost++;                 /* not the layout read here */
                continue;
            }
            a.kind = PROF_GPU_KERNEL;
            a.name = prof__roc_kernel_name(k->info.kernel_id);
            a.device = prof__roc_device(k->info.agent.handle);
            a.correlation = PROF__SCAST(uint32_t, k->correlation.internal);
            a.stream = prof__roc_stream_of(k->correlation.internal);
            a.t0_ns = PROF__SCAST(int64_t, k->start);
            a.t1_ns = PROF__SCAST(int64_t, k->end);
            for (int d = 0; d < 3; d++) {
                uint32_t b = k->info.workgroup[d] ? k->info.workgroup[d] : 1;
                a.block[d] = PROF__SCAST(int, b);
                a.grid[d] = PROF__SCAST(int, (k->info.grid[d] + b - 1) / b);
            }
            a.smem = k->info.group_segment_size;
        } else if (h[i]->kind == PROF__ROC_BUF_MEMORY_COPY) {
            const prof__roc_copy *c = PROF__SCAST(const prof__roc_copy *, h[i]->payload);
            if (c->size < sizeof *c) {
                lost++;
                continue;
            }
            a.kind = PROF_GPU_MEMCPY;
            a.name = copies[c->operation >= 1 && c->operation <= 4 ? c->operation : 0];
            a.device = prof__roc_device(c->dst_agent.handle);
            if (a.device < 0) a.device = prof__roc_device(c->src_agent.handle);
            a.correlation = PROF__SCAST(uint32_t, c->correlation.internal);
            a.stream = prof__roc_stream_of(c->correlation.internal);
            a.t0_ns = PROF__SCAST(int64_t, c->start);
            a.t1_ns = PROF__SCAST(int64_t, c->end);
            a.bytes = c->bytes;
        } else {
            continue;
        }
        if (a.device < 0) a.device = 0;
        prof_gpu_activity_add(&a);
    }
    if (lost) prof_gpu_activity_lost(lost);
}

/* The SDK's call at its exit, before prof.h's own exit handler: what the
   buffer holds is handed over now (a flush after this one fails). */
static void prof__roc_finalize(void *data) {
    (void)data;
    if (__atomic_load_n(&prof__roc.configured, __ATOMIC_ACQUIRE)) prof__roc.flush_buffer(prof__roc.buf);
    __atomic_store_n(&prof__roc.on, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&prof__roc.finalized, 1, __ATOMIC_RELEASE);
}

/* Inside the SDK's configuration, the only place contexts and buffers can
   be made: both contexts, the buffer, the services; the code objects'
   context starts now, the other with capture. Nonzero: not configured. */
static int prof__roc_initialize(void (*fini)(prof__roc_client), void *data) {
    char path[1024];
    int32_t ops[1 + PROF__ROC_OPS];
    prof__roc_status st;
    (void)fini, (void)data;
    if (!prof__roc.bound) {             /* found by the SDK itself: bind to the one loaded */
        void *lib = prof__roc_open(RTLD_NOLOAD, path, sizeof path);
        if (!lib) lib = prof__roc_loaded();
        if (!prof__roc_bind(lib)) {     /* NULL: RTLD_DEFAULT, the whole process */
            prof__roc_off("the SDK in this process lacks functions prof.h calls");
            return -1;
        }
    }
    if (prof__roc.agents)               /* the bytes of an agent read here: up to logical_node_type_id's padding */
        prof__roc.agents(PROF__ROC_AGENT_INFO_V0, prof__roc_agents, PROF__ROC_AGENT_TYPE_INDEX + 8, PROF__NULLPTR);
    ops[0] = 0;
    if (prof__roc.each_op) prof__roc.each_op(PROF__ROC_CB_HIP_RUNTIME, prof__roc_each_op, ops);
    static const int32_t symbols[1] = { PROF__ROC_SYMBOL_REGISTER };
    static const int32_t none[1] = { 0 };
    const char *what = PROF__NULLPTR;
    if ((st = prof__roc.create_context(&prof__roc.code_ctx)) != 0)
        what = "rocprofiler_create_context";
    else if ((st = prof__roc.callback_service(prof__roc.code_ctx, PROF__ROC_CB_CODE_OBJECT, symbols, 1,
                                              prof__roc_code_object, PROF__NULLPTR)) != 0)
        what = "rocprofiler_configure_callback_tracing_service";
    else if ((st = prof__roc.start_context(prof__roc.code_ctx)) != 0)
        what = "rocprofiler_start_context";
    else if ((st = prof__roc.create_context(&prof__roc.ctx)) != 0)
        what = "rocprofiler_create_context";
    else if ((st = prof__roc.callback_service(prof__roc.ctx, PROF__ROC_CB_HIP_RUNTIME, ops[0] ? ops + 1 : none,
                                              PROF__SCAST(size_t, ops[0]), prof__roc_api, PROF__NULLPTR)) != 0)
        what = "rocprofiler_configure_callback_tracing_service";
    else if ((st = prof__roc.create_buffer(prof__roc.ctx, PROF__ROC_BUF, PROF__ROC_BUF / 2, PROF__ROC_POLICY_DISCARD,
                                           prof__roc_buffer, PROF__NULLPTR, &prof__roc.buf)) != 0)
        what = "rocprofiler_create_buffer";
    else if ((st = prof__roc.buffer_service(prof__roc.ctx, PROF__ROC_BUF_KERNEL_DISPATCH, none, 0, prof__roc.buf)) != 0 ||
             (st = prof__roc.buffer_service(prof__roc.ctx, PROF__ROC_BUF_MEMORY_COPY, none, 0, prof__roc.buf)) != 0)
        what = "rocprofiler_configure_buffer_tracing_service";
    if (what) {
        prof__roc_fail(what, st);
        return -1;
    }
    __atomic_store_n(&prof__roc.configured, 1, __ATOMIC_RELEASE);
    return 0;
}

/* Whether kernel capture is asked for: by the environment (the SDK may come
   while HIP starts, before PROF_INIT), by the config, or by starting it. */
static int prof__roc_asked(void) {
    return prof_gpu_kernels_asked() || __atomic_load_n(&prof__roc.asked, __ATOMIC_ACQUIRE);
}

prof__roc_tool *rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                      prof__roc_client *client) {
    static prof__roc_tool tool = { sizeof(prof__roc_tool), prof__roc_initialize, prof__roc_finalize, PROF__NULLPTR };
    (void)runtime_version, (void)priority;
    if (!prof__roc_asked() || __atomic_load_n(&prof__roc.configured, __ATOMIC_ACQUIRE)) return PROF__NULLPTR;
    if (version < 400) {                /* major * 10000 + minor * 100 + patch */
        char line[160];
        snprintf(line, sizeof line, "version %u.%u.%u is older than 0.4.0 (ROCm 6.2)", version / 10000,
                 version / 100 % 100, version % 100);
        prof__roc_off(line);
        return PROF__NULLPTR;
    }
    if (client) client->name = "prof.h";
    return &tool;
}

/* The SDK loaded and configured by prof.h (rocprofiler_force_configure with
   the exported function): once, before HIP's first call where PROF_INIT
   comes first (the SDK sees only runtimes that start after it), else when
   capture starts. 1: configured. */
static int prof__roc_force(void) {
    char path[1024], line[1400];
    if (__atomic_exchange_n(&prof__roc.tried, 1, __ATOMIC_ACQ_REL)) return 0;   /* said why once */
    void *lib = prof__roc_open(0, path, sizeof path);
    if (!lib) {
        const char *why = dlerror();
        snprintf(line, sizeof line, "cannot load %s (%s; PROF_ROCPROFILER_SDK names the library, ROCm 6.2 or "
                 "later has it)", path, why ? why : "not found");
        prof__roc_off(line);
        return 0;
    }
    if (!prof__roc_bind(lib)) {
        snprintf(line, sizeof line, "%s lacks the functions of rocprofiler-sdk 0.4 (ROCm 6.2)", path);
        prof__roc_off(line);
        return 0;
    }
    int init = 0;
    prof__roc.is_initialized(&init);
    if (init) {
        prof__roc_off("already configured by another tool (rocprofv3, or a profiler in this process such as "
                      "PyTorch's), or before prof.h asked: set PROF_KERNELS=1 to be among its tools");
        return 0;
    }
    prof__roc_status st = prof__roc.force_configure(rocprofiler_configure);
    if (st) {
        prof__roc_fail("rocprofiler_force_configure", st);
        return 0;
    }
    return __atomic_load_n(&prof__roc.configured, __ATOMIC_ACQUIRE);    /* else initialize said why */
}

/* PROF_INIT in a file with prof_hip.h, before it makes any HIP call. */
void prof__roc_early(void) {
    if (prof_gpu_kernels_asked() && !__atomic_load_n(&prof__roc.configured, __ATOMIC_ACQUIRE)) prof__roc_force();
}

/* Capture starts (under prof.h's lock, HIP started): configured already when
   the SDK found rocprofiler_configure itself or PROF_INIT forced it; else
   forced now, late for HIP, which is said. */
static int prof__roc_start(size_t buffer_bytes) {
    (void)buffer_bytes;                 /* the SDK's buffer is its own; what it drops is counted */
    __atomic_store_n(&prof__roc.asked, 1, __ATOMIC_RELEASE);
    if (__atomic_load_n(&prof__roc.finalized, __ATOMIC_ACQUIRE)) return 0;
    if (!__atomic_load_n(&prof__roc.configured, __ATOMIC_ACQUIRE)) {
        int first = !__atomic_load_n(&prof__roc.tried, __ATOMIC_ACQUIRE);
        if (!prof__roc_force()) return 0;
        if (first)
            prof_gpu_say("rocprofiler-sdk: configured after HIP started (the profiler started without "
                         "PROF_INIT): HIP's calls and kernels may not reach it; call PROF_INIT before the first "
                         "HIP call, or export rocprofiler_configure (see prof_hip.h)");
    }
    prof__roc_status st = prof__roc.start_context(prof__roc.ctx);
    if (st) {
        prof__roc_fail("rocprofiler_start_context", st);
        return 0;
    }
    __atomic_store_n(&prof__roc.on, 1, __ATOMIC_RELEASE);
    /* the SDK's buffer tracing has no kind for the host's or a stream's
       waits (CUPTI's SYNCHRONIZATION): said once */
    static int said_sync;
    if (!said_sync++)
        prof_gpu_say("rocprofiler-sdk: no synchronisation records (hipStreamSynchronize, hipEventSynchronize, "
                     "hipDeviceSynchronize and hipStreamWaitEvent are in the trace as runtime calls only): no "
                     "cuda_sync events on HIP");
    return 1;
}

static void prof__roc_flush(void) {
    if (!__atomic_load_n(&prof__roc.finalized, __ATOMIC_ACQUIRE)) prof__roc.flush_buffer(prof__roc.buf);
}

static void prof__roc_stop(void) {
    __atomic_store_n(&prof__roc.on, 0, __ATOMIC_RELEASE);
    if (__atomic_load_n(&prof__roc.finalized, __ATOMIC_ACQUIRE)) return;
    prof__roc.stop_context(prof__roc.ctx);
    prof__roc.flush_buffer(prof__roc.buf);
}

/* Between windows (prof.h's core decides) the main context stops: HIP's
   calls and dispatches pay the SDK nothing; the code objects' context stays
   on, since kernel symbols reach only contexts active when they load. */
static void prof__roc_capture(int on) {
    if (__atomic_load_n(&prof__roc.finalized, __ATOMIC_ACQUIRE)) return;
    if (!on) {
        __atomic_store_n(&prof__roc.on, 0, __ATOMIC_RELEASE);
        prof__roc.stop_context(prof__roc.ctx);
    } else if (!__atomic_load_n(&prof__roc.on, __ATOMIC_ACQUIRE)) {
        prof__roc_status st = prof__roc.start_context(prof__roc.ctx);
        if (st) prof__roc_fail("rocprofiler_start_context", st);
        else __atomic_store_n(&prof__roc.on, 1, __ATOMIC_RELEASE);
    }
}

/* Under capture a GPU region spans what was launched inside its CPU side
   (>>gpu's one clock). */
const prof_gpu_tracer prof__roc_tracer = { "rocprofiler-sdk", prof__roc_start, prof__roc_flush, prof__roc_stop,
                                           prof__roc_now, prof__roc_capture, PROF__NULLPTR, PROF__NULLPTR };
long long prof__roc_stream_id(void *s) { return prof__roc_stream_number(s); }
/* Capture starts with the profiler however it starts (prof.h's
   prof__gpu_autostart): lazily, at the first macro of any kind, too. Only
   PROF_INIT knows that HIP has not started yet (prof__roc_early); a lazy
   start configures the SDK late, and says so. */
void prof__gpu_autostart(void) { prof_gpu_attach(&prof__hip_api); }
#endif /* PROF_IMPLEMENTATION || PROF_GPU_IMPLEMENTATION */

#else /* disabled: the macros are prof.h's, the wrappers the runtime's calls */

#define prof_hipMalloc(ptr, bytes) hipMalloc((ptr), (bytes))
#define prof_hipFree(ptr)          hipFree(ptr)

#endif /* PROF__ENABLED */
#endif /* PROF_HIP_H */
