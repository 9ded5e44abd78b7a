/* prof_cuda.h - GPU regions for prof.h on CUDA. MIT licence (see prof.h).

   Include it instead of prof.h where CUDA work is launched, as prof.h is
   (PROF_IMPLEMENTATION in one file, -DPROF_ENABLE to compile it in). It binds
   prof.h's PROF_GPU_* macros (>>api-gpu) to libcudart, which the engine links
   already, and adds prof_cudaMalloc / prof_cudaFree: cudaMalloc and cudaFree
   that also record. Stream ids need CUDA 12.0, a stream's device 12.8.
   Its own part of the implementation (capture's lazy start) goes with
   PROF_IMPLEMENTATION, or, where prof.h's implementation is a C file of
   its own (not built by nvcc), into the one file that defines
   PROF_GPU_IMPLEMENTATION and includes prof_cuda.h.
   PROF_ENERGY reads NVML's energy counters (loaded with dlopen). */
#ifndef PROF_CUDA_H
#define PROF_CUDA_H

#include "prof.h"

#if PROF__ENABLED
#include <cuda_runtime_api.h>

/* The libraries this binding loads, as rows of prof.h's table of options
   (PROF__OPTIONS's columns, kind LIB: for the docs; each is read where it
   is loaded, below). */
#define PROF__CUDA_LIBS(X)                                                                                    \
    X("PROF_CUPTI_LIB", none, LIB, "libcupti.so", 0, 0, "", "", "the libcupti.so to load (prof_cuda.h)")       \
    X("PROF_NVML_LIB", none, LIB, "libnvidia-ml.so.1", 0, 0, "", "", "the NVML to load for PROF_ENERGY")

/* ---- kernel capture through CUPTI (PROF_CUPTI=1) ---------------------------
   libcupti is loaded with dlopen when capture is asked for, never linked:
   PROF_CUPTI_LIB names it, else the loader's paths and the toolkit's. Its
   Activity API hands over buffers of records (kernels, copies, fills, runtime
   calls) on its threads; each becomes a prof_gpu_activity for the core.
   Buffers are within PROF_BUFFER_MB; when none is given CUPTI drops records
   and counts them, and so do we. The record structs are the toolkit's
   headers'; the fields read here sit alike in every version since CUDA 11.
   While CUPTI captures, a GPU region records no event: prof.h's core spans
   it over the kernels launched inside it (>>gpu), on CUPTI's clock. */
#if defined(__has_include) && !defined(PROF_NO_CUPTI)
#if __has_include(<cupti_activity.h>)
#define PROF__CUPTI 1
#endif
#endif

#ifdef PROF__CUPTI
/* CUPTI's headers are not ISO C (an enumerator past INT_MAX): quiet that
   for them alone, under the -Wpedantic engines build with. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_version.h>              /* CUPTI_API_VERSION: which records */
#pragma GCC diagnostic pop
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 prof__cupti_kernel;
typedef CUpti_ActivityMemcpy6 prof__cupti_memcpy;
typedef CUpti_ActivityMemset4 prof__cupti_memset;
typedef CUpti_ActivitySynchronization2 prof__cupti_sync;
typedef CUpti_ActivityCudaEvent2 prof__cupti_event;
#define PROF__CUPTI_GRAPH(a, rec) ((a)->graph = (rec)->graphId, (a)->graph_node = (rec)->graphNodeId)
#else  /* records before graph ids: graph launches' kernels still link to cudaGraphLaunch */
#define PROF__CUPTI_GRAPH(a, rec) ((void)0)
typedef CUpti_ActivityKernel4 prof__cupti_kernel;
typedef CUpti_ActivityMemcpy prof__cupti_memcpy;
typedef CUpti_ActivityMemset prof__cupti_memset;
typedef CUpti_ActivitySynchronization prof__cupti_sync;    /* the fields read sit alike in both */
typedef CUpti_ActivityCudaEvent prof__cupti_event;
#endif

#define PROF__CUPTI_BUF   (4u << 20)    /* bytes per activity buffer */
#define PROF__CUPTI_SPARE 16            /* buffers kept for reuse (64 MiB's worth) */
#define PROF__CUPTI_NAMES 1024u         /* kernel names remembered, by CUPTI's pointer */
#define PROF__CUPTI_CBIDS 1024
#define PROF__CUPTI_EVENTS 1024u        /* CUDA events whose last records are remembered */
#define PROF__CUPTI_RECS 4              /* ... each its last 4 */
#define PROF__CUPTI_CTXS 16             /* contexts whose device is known */

static struct {
    CUptiResult (*reg)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*timestamp)(uint64_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*cb_name)(CUpti_CallbackDomain, CUpti_CallbackId, const char **);
    CUptiResult (*stream_id)(CUcontext, CUstream, uint8_t, uint32_t *);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_cb)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
    CUptiResult (*node_id)(CUgraphNode, uint64_t *);
    CUpti_SubscriberHandle sub;         /* graph-node callbacks, from start to stop; NULL: none */
    int on;                             /* atomic: capturing (between windows: loaded, not capturing) */
    int loaded;                         /* atomic: started, until stopped */
    char *(*demangle)(const char *, char *, size_t *, int *);  /* libstdc++'s, if loaded */
    size_t bufs, bufs_max;              /* buffers out (atomic), and the most */
    uint8_t *spare[PROF__CUPTI_SPARE];  /* buffers back from CUPTI, for its next request */
    int nspare, spare_lock;             /* under spare_lock (a spin: callbacks, not hot) */
    int keep;                           /* atomic: spares are kept (capture starting or on) */
    struct { const char *raw, *name; } kn[PROF__CUPTI_NAMES];   /* while parsing */
    const char *api[2][PROF__CUPTI_CBIDS];  /* runtime [0] and driver [1] call names; "" left out */
    /* while parsing: the CUDA events' records (which call recorded each
       on which stream), for the synchronisations on them; and the
       contexts' devices, as kernels, copies and fills name them */
    struct { uint32_t ctx, id, n; uint32_t corr[PROF__CUPTI_RECS], stream[PROF__CUPTI_RECS]; } ev[PROF__CUPTI_EVENTS];
    struct { uint32_t ctx, dev; } ctx[PROF__CUPTI_CTXS];
    int nctx;
    int sync_off;                       /* synchronisations refused: not recorded, not asked again */
} prof__cupti;
static int prof__cupti_parsing;         /* atomic: a completed buffer is being read */

/* What is launched, and the calls that launch it: the runtime's, and the
   driver API's, through which libraries launch theirs (cuBLAS and cuBLASLt
   ask cudaGetDriverEntryPointByVersion for cuLaunchKernel*); then the
   host's waits (Kineto's cuda_sync) and the event records they wait on,
   which capture can do without (PROF__CUPTI_NEEDED). */
#define PROF__CUPTI_NEEDED 5
static const CUpti_ActivityKind prof__cupti_kinds[7] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CUDA_EVENT,
};


/* Why there is no kernel capture, in one line. */
static void prof__cupti_off(const char *why) {
    char line[1024];
    snprintf(line, sizeof line, "CUPTI: %s; no kernel capture, GPU regions are still timed by events", why);
    prof_gpu_say(line);
}

static void prof__cupti_say(const char *what, CUptiResult r) {
    const char *why = "unknown error";
    char line[512];
    if (prof__cupti.result_string) prof__cupti.result_string(r, &why);
    snprintf(line, sizeof line, "%s failed: %s", what, why);
    prof__cupti_off(line);
}

/* Buffers are allocated (and their pages touched) when capture starts, and
   a buffer CUPTI hands back is kept for its next request: CUPTI asks from
   inside the engine's launches, which should not wait for the allocator
   and 1,024 page faults. Past the spares, a request allocates. */
static void prof__cupti_spare_lock(void) {
    while (__atomic_exchange_n(&prof__cupti.spare_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void prof__cupti_spare_unlock(void) { __atomic_store_n(&prof__cupti.spare_lock, 0, __ATOMIC_RELEASE); }

static uint8_t *prof__cupti_buf_get(void) {
    uint8_t *b = PROF__NULLPTR;
    prof__cupti_spare_lock();
    if (prof__cupti.nspare) b = prof__cupti.spare[--prof__cupti.nspare];
    prof__cupti_spare_unlock();
    return b ? b : PROF__SCAST(uint8_t *, aligned_alloc(8, PROF__CUPTI_BUF));
}

/* Kept while capturing; after prof__cupti_stop, freed. */
static void prof__cupti_buf_put(uint8_t *b) {
    prof__cupti_spare_lock();
    if (__atomic_load_n(&prof__cupti.keep, __ATOMIC_ACQUIRE) && prof__cupti.nspare < PROF__CUPTI_SPARE) {
        prof__cupti.spare[prof__cupti.nspare++] = b;
        b = PROF__NULLPTR;
    }
    prof__cupti_spare_unlock();
    free(b);
}

static void CUPTIAPI prof__cupti_request(uint8_t **buf, size_t *size, size_t *max_records) {
    *max_records = 0;
    *buf = PROF__NULLPTR;
    *size = 0;
    if (__atomic_add_fetch(&prof__cupti.bufs, 1, __ATOMIC_RELAXED) > prof__cupti.bufs_max ||
        !(*buf = prof__cupti_buf_get()))
        __atomic_sub_fetch(&prof__cupti.bufs, 1, __ATOMIC_RELAXED);  /* CUPTI drops, and counts */
    else
        *size = PROF__CUPTI_BUF;
}

/* A kernel's name as Kineto shows it: demangled, kept by prof_intern. CUPTI
   gives every record of one kernel the same pointer. While parsing. */
static const char *prof__cupti_kernel_name(const char *raw) {
    if (!raw) return "(unnamed kernel)";
    size_t h = (PROF__RCAST(uintptr_t, raw) >> 4) & (PROF__CUPTI_NAMES - 1);
    if (prof__cupti.kn[h].raw == raw) return prof__cupti.kn[h].name;
    int st = -1;
    char *d = prof__cupti.demangle && raw[0] == '_' && raw[1] == 'Z' ? prof__cupti.demangle(raw, PROF__NULLPTR, PROF__NULLPTR, &st) : PROF__NULLPTR;
    const char *use = d && !st ? d : raw;
    const char *name = prof_intern(use, strlen(use));
    free(d);
    prof__cupti.kn[h].raw = raw;
    prof__cupti.kn[h].name = name;
    return name;
}

/* A runtime or driver call's name without its version ("cudaLaunchKernel",
   "cuMemcpyHtoDAsync"), or "" for the runtime calls left out: prof.h's own
   queries and what engines call between every launch (as Kineto leaves
   them out). The driver's calls that launched nothing are left out by
   prof.h's core. While parsing. */
static const char *prof__cupti_api_name(CUpti_CallbackId cbid, int driver) {
    static const char *const skip[] = { "cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaPeekAtLastError",
                                        "cudaEventQuery", "cudaStreamGetId", "cudaStreamGetDevice",
                                        "cudaStreamIsCapturing", "cudaGetDeviceCount", "cudaDeviceGetAttribute" };
    const char *unknown = driver ? "(driver call)" : "(runtime call)";
    if (cbid >= PROF__CUPTI_CBIDS) return unknown;
    if (prof__cupti.api[driver][cbid]) return prof__cupti.api[driver][cbid];
    const char *raw = PROF__NULLPTR;
    if (!prof__cupti.cb_name ||
        prof__cupti.cb_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &raw) != CUPTI_SUCCESS ||
        !raw)
        raw = unknown;
    size_t n = strlen(raw);
    const char *v = strstr(raw, "_v");
    if (v && v > raw && v[2] >= '0' && v[2] <= '9' && strspn(v + 2, "0123456789") == strlen(v + 2))
        n = PROF__SCAST(size_t, v - raw);
    const char *name = prof_intern(raw, n);
    for (size_t i = 0; !driver && i < sizeof skip / sizeof skip[0]; i++)
        if (strlen(skip[i]) == n && !strncmp(skip[i], raw, n)) name = "";
    return prof__cupti.api[driver][cbid] = name;
}

static const char *prof__cupti_copy_name(unsigned copy, unsigned src, unsigned dst) {
    static const char *const ck[] = { "?", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP" };
    static const char *const mk[] = { "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static",
                                      "Managed Static" };
    char b[96];
    int n = snprintf(b, sizeof b, "Memcpy %s (%s -> %s)", copy < 11 ? ck[copy] : "?", src < 8 ? mk[src] : "Unknown",
                     dst < 8 ? mk[dst] : "Unknown");
    return prof_intern(b, PROF__SCAST(size_t, n));
}

/* A context's device, as its kernels, copies and fills name it; 0 before
   one has (as Kineto). While parsing. */
static void prof__cupti_ctx_dev(uint32_t ctx, uint32_t dev) {
    for (int i = 0; i < prof__cupti.nctx; i++)
        if (prof__cupti.ctx[i].ctx == ctx) return;
    if (prof__cupti.nctx < PROF__CUPTI_CTXS) {
        prof__cupti.ctx[prof__cupti.nctx].ctx = ctx;
        prof__cupti.ctx[prof__cupti.nctx++].dev = dev;
    }
}

static int prof__cupti_dev_of(uint32_t ctx) {
    for (int i = 0; i < prof__cupti.nctx; i++)
        if (prof__cupti.ctx[i].ctx == ctx) return PROF__SCAST(int, prof__cupti.ctx[i].dev);
    return 0;
}

/* A CUDA event's slot (its last records), by context and id. While parsing. */
static size_t prof__cupti_ev_slot(uint32_t ctx, uint32_t id) {
    return (id * 2654435761u ^ ctx) & (PROF__CUPTI_EVENTS - 1);
}

/* cudaEventRecord's record: the event, on stream, by call corr. */
static void prof__cupti_ev_put(const prof__cupti_event *e) {
    size_t h = prof__cupti_ev_slot(e->contextId, e->eventId);
    if (prof__cupti.ev[h].ctx != e->contextId || prof__cupti.ev[h].id != e->eventId || !prof__cupti.ev[h].n) {
        prof__cupti.ev[h].ctx = e->contextId;
        prof__cupti.ev[h].id = e->eventId;
        prof__cupti.ev[h].n = 0;
    }
    uint32_t k = prof__cupti.ev[h].n++ % PROF__CUPTI_RECS;
    prof__cupti.ev[h].corr[k] = e->correlationId;
    prof__cupti.ev[h].stream[k] = e->streamId;
}

/* What a synchronisation on an event waited for: the event's last record
   before it (correlations grow with the calls), as Kineto links them. */
static void prof__cupti_ev_find(uint32_t ctx, uint32_t id, uint32_t corr, prof_gpu_activity *a) {
    size_t h = prof__cupti_ev_slot(ctx, id);
    uint32_t n = prof__cupti.ev[h].n;
    a->wait_stream = a->wait_corr = -1;
    if (prof__cupti.ev[h].ctx != ctx || prof__cupti.ev[h].id != id) return;
    for (uint32_t i = 0; i < n && i < PROF__CUPTI_RECS; i++) {
        uint32_t k = (n - 1 - i) % PROF__CUPTI_RECS;
        if (prof__cupti.ev[h].corr[k] < corr) {
            a->wait_corr = prof__cupti.ev[h].corr[k];
            a->wait_stream = prof__cupti.ev[h].stream[k];
            return;
        }
    }
}

/* A synchronisation record: the host's wait, under its call's correlation. */
static void prof__cupti_sync_of(const prof__cupti_sync *y, prof_gpu_activity *a) {
    a->kind = PROF_GPU_SYNC;
    a->sync = y->type >= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE &&
                      y->type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
                  ? PROF__SCAST(int, y->type) : 0;
    a->name = PROF__NULLPTR;            /* Kineto's, which prof.h's core gives */
    a->device = prof__cupti_dev_of(y->contextId);
    a->stream = y->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : PROF__SCAST(long long, y->streamId);
    a->correlation = y->correlationId;
    a->t0_ns = PROF__SCAST(int64_t, y->start);
    a->t1_ns = PROF__SCAST(int64_t, y->end);
    a->event = a->wait_stream = a->wait_corr = -1;
    if (y->cudaEventId != CUPTI_SYNCHRONIZATION_INVALID_VALUE &&
        (a->sync == PROF_GPU_SYNC_EVENT || a->sync == PROF_GPU_SYNC_WAIT_EVENT)) {
        a->event = y->cudaEventId;
        prof__cupti_ev_find(y->contextId, y->cudaEventId, y->correlationId, a);
    }
}

/* What kernel, copy and fill records name alike: where and when. */
#define PROF__CUPTI_ON_GPU(a, rec)                           \
    do {                                                     \
        (a)->device = PROF__SCAST(int, (rec)->deviceId);     \
        (a)->stream = (rec)->streamId;                       \
        (a)->correlation = (rec)->correlationId;             \
        (a)->t0_ns = PROF__SCAST(int64_t, (rec)->start);     \
        (a)->t1_ns = PROF__SCAST(int64_t, (rec)->end);       \
        prof__cupti_ctx_dev((rec)->contextId, (rec)->deviceId); \
    } while (0)

static void CUPTIAPI prof__cupti_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
    (void)size;
    CUpti_Activity *r = PROF__NULLPTR;
    while (__atomic_exchange_n(&prof__cupti_parsing, 1, __ATOMIC_ACQUIRE)) sched_yield(); /* one buffer at a time */
    while (valid && prof__cupti.next(buf, valid, &r) == CUPTI_SUCCESS) {
        prof_gpu_activity a;
        memset(&a, 0, sizeof a);
        if (r->kind == CUPTI_ACTIVITY_KIND_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            const prof__cupti_kernel *k = PROF__RCAST(const prof__cupti_kernel *, r);
            PROF__CUPTI_ON_GPU(&a, k);
            a.kind = PROF_GPU_KERNEL;
            a.name = prof__cupti_kernel_name(k->name);
            a.grid[0] = k->gridX, a.grid[1] = k->gridY, a.grid[2] = k->gridZ;
            a.block[0] = k->blockX, a.block[1] = k->blockY, a.block[2] = k->blockZ;
            a.regs = k->registersPerThread;
            a.smem = PROF__SCAST(int64_t, k->staticSharedMemory) + k->dynamicSharedMemory;
            PROF__CUPTI_GRAPH(&a, k);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const prof__cupti_memcpy *m = PROF__RCAST(const prof__cupti_memcpy *, r);
            PROF__CUPTI_ON_GPU(&a, m);
            a.kind = PROF_GPU_MEMCPY;
            a.name = prof__cupti_copy_name(m->copyKind, m->srcKind, m->dstKind);
            a.bytes = m->bytes;
            PROF__CUPTI_GRAPH(&a, m);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const prof__cupti_memset *m = PROF__RCAST(const prof__cupti_memset *, r);
            PROF__CUPTI_ON_GPU(&a, m);
            a.kind = PROF_GPU_MEMSET;
            a.name = m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ? "Memset (Device)" : "Memset";
            a.bytes = m->bytes;
            PROF__CUPTI_GRAPH(&a, m);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
            const CUpti_ActivityAPI *c = PROF__RCAST(const CUpti_ActivityAPI *, r);
            a.kind = PROF_GPU_RUNTIME;
            a.driver = r->kind == CUPTI_ACTIVITY_KIND_DRIVER;
            a.name = prof__cupti_api_name(c->cbid, a.driver);
            if (!*a.name) continue;
            a.device = -1;
            a.correlation = c->correlationId;
            a.t0_ns = PROF__SCAST(int64_t, c->start);
            a.t1_ns = PROF__SCAST(int64_t, c->end);
            a.thread = c->threadId;
            a.cbid = PROF__SCAST(int, c->cbid);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) {
            prof__cupti_sync_of(PROF__RCAST(const prof__cupti_sync *, r), &a);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_CUDA_EVENT) {
            prof__cupti_ev_put(PROF__RCAST(const prof__cupti_event *, r));
            continue;
        } else {
            continue;
        }
        prof_gpu_activity_add(&a);
    }
    __atomic_store_n(&prof__cupti_parsing, 0, __ATOMIC_RELEASE);
    size_t lost = 0;
    if (prof__cupti.dropped(ctx, stream, &lost) == CUPTI_SUCCESS && lost) prof_gpu_activity_lost(lost);
    prof__cupti_buf_put(buf);
    __atomic_sub_fetch(&prof__cupti.bufs, 1, __ATOMIC_RELAXED);
}

/* CUDA Graph nodes: CUPTI calls this on the thread that makes a node
   (inside the engine's launch into a capturing stream, or its
   cudaGraphAdd*Node) and that clones one (cudaGraphInstantiate clones
   every node of the graph: a replayed kernel carries its clone's id).
   prof.h's core names the node after the regions open there now, a clone
   after its original's (>>api-gpu's prof_gpu_graph_node): a few hundred
   instructions per node, once, when graphs are made; nothing at launches
   or replays. */
static void CUPTIAPI prof__cupti_graph_cb(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                          const void *data) {
    (void)user;
    const CUpti_ResourceData *r = PROF__SCAST(const CUpti_ResourceData *, data);
    const CUpti_GraphData *g = r ? PROF__SCAST(const CUpti_GraphData *, r->resourceDescriptor) : PROF__NULLPTR;
    uint64_t node = 0, orig = 0;
    if (domain != CUPTI_CB_DOMAIN_RESOURCE || !g || !g->node || prof__cupti.node_id(g->node, &node) != CUPTI_SUCCESS)
        return;
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED &&
        (!g->originalNode || prof__cupti.node_id(g->originalNode, &orig) != CUPTI_SUCCESS))
        return;
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED || cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
        prof_gpu_graph_node(node, orig);
}

/* The graph-node callbacks on, from capture's start to its stop, windows
   or not: engines capture their graphs once, before the windows that
   replay them. Refused (another CUPTI client, Nsight, holds the one
   subscription): one line, and kernel capture goes on without them. */
static void prof__cupti_graphs_on(void) {
    CUptiResult r;
    if (!prof__cupti.subscribe || !prof__cupti.enable_cb || !prof__cupti.node_id) return;
    const CUpti_CallbackDomain res = CUPTI_CB_DOMAIN_RESOURCE;
    if ((r = prof__cupti.subscribe(&prof__cupti.sub, prof__cupti_graph_cb, PROF__NULLPTR)) == CUPTI_SUCCESS &&
        (r = prof__cupti.enable_cb(1, prof__cupti.sub, res, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)) == CUPTI_SUCCESS &&
        (r = prof__cupti.enable_cb(1, prof__cupti.sub, res, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)) == CUPTI_SUCCESS)
        return;
    if (prof__cupti.sub && prof__cupti.unsubscribe) prof__cupti.unsubscribe(prof__cupti.sub);
    prof__cupti.sub = PROF__NULLPTR;
    const char *why = "unknown error";
    char line[512];
    if (prof__cupti.result_string) prof__cupti.result_string(r, &why);
    snprintf(line, sizeof line, "CUPTI: cuptiSubscribe failed: %s; CUDA Graph kernels have no capture_region", why);
    prof_gpu_say(line);
}

/* Loads libcupti and a function of it into fp (an object pointer cannot be
   cast to a function pointer in ISO C: the bytes are copied). */
static int prof__cupti_sym(void *lib, const char *name, void *fp, size_t fp_size) {
    void *sym = dlsym(lib, name);
    if (sym) memcpy(fp, &sym, fp_size);
    return sym != PROF__NULLPTR;
}
#define PROF__CUPTI_SYM(lib, fn, name) prof__cupti_sym((lib), (name), &prof__cupti.fn, sizeof prof__cupti.fn)

/* Capture ends (or never started): no more spares kept; those kept go. */
static void prof__cupti_spares_free(void) {
    __atomic_store_n(&prof__cupti.keep, 0, __ATOMIC_RELEASE);
    prof__cupti_spare_lock();
    while (prof__cupti.nspare) free(prof__cupti.spare[--prof__cupti.nspare]);
    prof__cupti_spare_unlock();
}

/* The activity kinds on: capture records. 0: an enable was
   refused, and what it enabled is off again. */
static int prof__cupti_on(void) {
    CUptiResult r;
    /* a window's synchronisations wait on its own event records only */
    while (__atomic_exchange_n(&prof__cupti_parsing, 1, __ATOMIC_ACQUIRE)) sched_yield();
    memset(prof__cupti.ev, 0, sizeof prof__cupti.ev);
    __atomic_store_n(&prof__cupti_parsing, 0, __ATOMIC_RELEASE);
    for (size_t i = 0; i < PROF__CUPTI_NEEDED; i++)
        if ((r = prof__cupti.enable(prof__cupti_kinds[i])) != CUPTI_SUCCESS) {
            while (i--) prof__cupti.disable(prof__cupti_kinds[i]);
            prof__cupti_say("cuptiActivityEnable", r);
            return 0;
        }
    for (size_t i = PROF__CUPTI_NEEDED; !prof__cupti.sync_off && i < sizeof prof__cupti_kinds / sizeof prof__cupti_kinds[0];
         i++)
        if ((r = prof__cupti.enable(prof__cupti_kinds[i])) != CUPTI_SUCCESS) {
            const char *why = "unknown error";
            char line[512];
            while (i-- > PROF__CUPTI_NEEDED) prof__cupti.disable(prof__cupti_kinds[i]);
            if (prof__cupti.result_string) prof__cupti.result_string(r, &why);
            snprintf(line, sizeof line, "CUPTI: cuptiActivityEnable of synchronisations failed: %s; kernels are "
                     "captured, synchronisations (cuda_sync) are not", why);
            prof__cupti.sync_off = 1;       /* not asked again: the line stays true */
            prof_gpu_say(line);
            break;
        }
    __atomic_store_n(&prof__cupti.on, 1, __ATOMIC_RELEASE);
    return 1;
}

/* ... and off: launches pay CUPTI nothing. What was recorded still comes
   at the next flush. */
static void prof__cupti_off_all(void) {
    __atomic_store_n(&prof__cupti.on, 0, __ATOMIC_RELEASE);
    for (size_t i = 0; i < sizeof prof__cupti_kinds / sizeof prof__cupti_kinds[0]; i++)
        prof__cupti.disable(prof__cupti_kinds[i]);
}

/* Between windows (prof.h's core decides): off, then on again. An enable
   refused then says why, and capture stays off. */
static void prof__cupti_capture(int on) {
    if (!__atomic_load_n(&prof__cupti.loaded, __ATOMIC_ACQUIRE)) return;
    if (!on) prof__cupti_off_all();
    else if (!__atomic_load_n(&prof__cupti.on, __ATOMIC_ACQUIRE)) prof__cupti_on();
}

static int prof__cupti_start(size_t buffer_bytes) {
    static const char *const libs[] = { "libcupti.so", "libcupti.so.13", "libcupti.so.12",
                                        "/usr/local/cuda/lib64/libcupti.so",
                                        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so" };
    const char *path = getenv("PROF_CUPTI_LIB");
    void *lib = PROF__NULLPTR;
    char line[768];
    if (path && *path) {
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; !lib && i < sizeof libs / sizeof libs[0]; i++) lib = dlopen(path = libs[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
        const char *why = dlerror();
        snprintf(line, sizeof line, "cannot load %s (%s; PROF_CUPTI_LIB names the library)",
                 path && *path ? path : "libcupti.so", why ? why : "not found");
        prof__cupti_off(line);
        return 0;
    }
    if (!PROF__CUPTI_SYM(lib, reg, "cuptiActivityRegisterCallbacks") || !PROF__CUPTI_SYM(lib, enable, "cuptiActivityEnable") ||
        !PROF__CUPTI_SYM(lib, disable, "cuptiActivityDisable") || !PROF__CUPTI_SYM(lib, flush_all, "cuptiActivityFlushAll") ||
        !PROF__CUPTI_SYM(lib, next, "cuptiActivityGetNextRecord") ||
        !PROF__CUPTI_SYM(lib, dropped, "cuptiActivityGetNumDroppedRecords") ||
        !PROF__CUPTI_SYM(lib, timestamp, "cuptiGetTimestamp")) {
        snprintf(line, sizeof line, "%s lacks the Activity API", path);
        prof__cupti_off(line);
        dlclose(lib);
        return 0;
    }
    PROF__CUPTI_SYM(lib, result_string, "cuptiGetResultString");
    PROF__CUPTI_SYM(lib, cb_name, "cuptiGetCallbackName");
    PROF__CUPTI_SYM(lib, stream_id, "cuptiGetStreamIdEx");
    PROF__CUPTI_SYM(lib, subscribe, "cuptiSubscribe");
    PROF__CUPTI_SYM(lib, unsubscribe, "cuptiUnsubscribe");
    PROF__CUPTI_SYM(lib, enable_cb, "cuptiEnableCallback");
    PROF__CUPTI_SYM(lib, node_id, "cuptiGetGraphNodeId");
    /* the C++ runtime's demangler: the program's, else libstdc++ loaded for
       it (a program that links it statically does not export it) */
    void *self = dlopen(PROF__NULLPTR, RTLD_NOW), *cxx;
    if ((!self || !PROF__CUPTI_SYM(self, demangle, "__cxa_demangle")) &&
        (cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL)) != PROF__NULLPTR)
        PROF__CUPTI_SYM(cxx, demangle, "__cxa_demangle");
    prof__cupti.bufs_max = buffer_bytes / PROF__CUPTI_BUF;
    if (prof__cupti.bufs_max < 2) prof__cupti.bufs_max = 2;
    __atomic_store_n(&prof__cupti.keep, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) {       /* the two CUPTI fills first, made and touched now */
        uint8_t *b = PROF__SCAST(uint8_t *, aligned_alloc(8, PROF__CUPTI_BUF));
        if (!b) break;
        memset(b, 0, PROF__CUPTI_BUF);
        prof__cupti_buf_put(b);
    }
    CUptiResult r = prof__cupti.reg(prof__cupti_request, prof__cupti_complete);
    if (r != CUPTI_SUCCESS) {
        prof__cupti_say("cuptiActivityRegisterCallbacks", r);
        prof__cupti_spares_free();
        return 0;
    }
    if (!prof__cupti_on()) {
        prof__cupti_spares_free();
        return 0;
    }
    __atomic_store_n(&prof__cupti.loaded, 1, __ATOMIC_RELEASE);
    prof__cupti_graphs_on();
    return 1;
}

static void prof__cupti_flush(void) { prof__cupti.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }
static void prof__cupti_flush_complete(void) { prof__cupti.flush_all(0); }
/* The buffers CUPTI has not handed back: after a flush of complete ones,
   those holding records not complete. */
static size_t prof__cupti_held(void) {
    return __atomic_load_n(&prof__cupti.bufs, __ATOMIC_RELAXED);
}

static void prof__cupti_stop(void) {
    __atomic_store_n(&prof__cupti.loaded, 0, __ATOMIC_RELEASE);
    if (prof__cupti.sub) prof__cupti.unsubscribe(prof__cupti.sub);
    prof__cupti.sub = PROF__NULLPTR;
    prof__cupti_off_all();
    prof__cupti_flush();
    prof__cupti_spares_free();
}

static int64_t prof__cupti_now(void) {
    uint64_t t = 0;
    prof__cupti.timestamp(&t);
    return PROF__SCAST(int64_t, t);
}

static const prof_gpu_tracer prof__cupti_tracer = { "CUPTI", prof__cupti_start, prof__cupti_flush, prof__cupti_stop,
                                                    prof__cupti_now, prof__cupti_capture,
                                                    prof__cupti_flush_complete, prof__cupti_held };
#define PROF__CUDA_TRACER (&prof__cupti_tracer)
#else
#define PROF__CUDA_TRACER PROF__NULLPTR          /* no CUPTI headers: PROF_CUPTI says so */
#endif /* PROF__CUPTI */

/* ---- energy through NVML (PROF_ENERGY=1) -----------------------------------
   NVIDIA's management library, loaded with dlopen when energy is asked for,
   never linked: PROF_NVML_LIB names it, else libnvidia-ml.so.1 from the
   loader's paths. A device's total-energy counter (NVIDIA GPUs from Volta
   on) counts mJ since the driver loaded. prof.h's core makes every call,
   on its own thread (>>energy); the four calls are declared here as
   nvml.h's ABI has them (an int for nvmlReturn_t, a pointer for a device),
   so no NVML header is needed. dlopen is referenced weakly: a program
   without it (glibc before 2.34, no -ldl) still links, and says so. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *prof__nvml_dlopen(const char *, int) __attribute__((weakref("dlopen")));
static void *prof__nvml_dlsym(void *, const char *) __attribute__((weakref("dlsym")));
static char *prof__nvml_dlerror(void) __attribute__((weakref("dlerror")));

static struct {
    int (*init)(void);                          /* nvmlInit_v2 */
    int (*by_bus)(const char *bus, void **h);   /* nvmlDeviceGetHandleByPciBusId_v2 */
    int (*energy)(void *h, unsigned long long *mj); /* nvmlDeviceGetTotalEnergyConsumption */
    const char *(*errstr)(int err);             /* nvmlErrorString, if there */
    /* PROF_GPU_METRICS' calls, each NULL where this NVML lacks it */
    int (*clock)(void *h, int type, unsigned *mhz);             /* nvmlDeviceGetClockInfo */
    int (*util)(void *h, unsigned *gpu_mem);                    /* nvmlDeviceGetUtilizationRates */
    int (*mem)(void *h, unsigned long long *total_free_used);   /* nvmlDeviceGetMemoryInfo */
    int (*pcie)(void *h, int counter, unsigned *kb_per_s);      /* nvmlDeviceGetPcieThroughput */
    int (*reasons)(void *h, unsigned long long *mask);          /* ...CurrentClocksEventReasons, or
                                                                   ...CurrentClocksThrottleReasons */
} prof__nvml;

static void prof__nvml_error(int err, char *buf, size_t n) {
    const char *s = prof__nvml.errstr ? prof__nvml.errstr(err) : PROF__NULLPTR;
    snprintf(buf, n, "NVML error %d%s%s", err, s ? ": " : "", s ? s : "");
}

/* NVML loaded and initialised: 1; 0: said why (one line), *why the trace's. */
static int prof__nvml_open(const char **why) {
    static const char *const names[4] = { "nvmlInit_v2", "nvmlDeviceGetHandleByPciBusId_v2",
                                          "nvmlDeviceGetTotalEnergyConsumption", "nvmlErrorString" };
    static const char *const whys[2] = { "NVML could not be loaded", "NVML lacks the calls it needs" };
    static const prof__gpu_dl dl = { prof__nvml_dlopen, prof__nvml_dlsym, prof__nvml_dlerror,
                                     RTLD_NOW | RTLD_LOCAL };
    char line[512], e[160];
    const char *path = getenv("PROF_NVML_LIB");
    if (!path || !*path) path = "libnvidia-ml.so.1";
    void *f[4];
    void *lib = prof__gpu_lib_load(&dl, path, PROF__NULLPTR, names, 4, 3, f, whys, why);
    if (!lib) return 0;
    memcpy(&prof__nvml.init, &f[0], sizeof f[0]);   /* an object pointer into a function pointer */
    memcpy(&prof__nvml.by_bus, &f[1], sizeof f[1]);
    memcpy(&prof__nvml.energy, &f[2], sizeof f[2]);
    if (f[3]) memcpy(&prof__nvml.errstr, &f[3], sizeof f[3]);
    void *g[5] = { prof__nvml_dlsym(lib, "nvmlDeviceGetClockInfo"), prof__nvml_dlsym(lib, "nvmlDeviceGetUtilizationRates"),
                   prof__nvml_dlsym(lib, "nvmlDeviceGetMemoryInfo"), prof__nvml_dlsym(lib, "nvmlDeviceGetPcieThroughput"),
                   prof__nvml_dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons") };
    if (!g[4]) g[4] = prof__nvml_dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");     /* before CUDA 12.2's */
    if (g[0]) memcpy(&prof__nvml.clock, &g[0], sizeof g[0]);
    if (g[1]) memcpy(&prof__nvml.util, &g[1], sizeof g[1]);
    if (g[2]) memcpy(&prof__nvml.mem, &g[2], sizeof g[2]);
    if (g[3]) memcpy(&prof__nvml.pcie, &g[3], sizeof g[3]);
    if (g[4]) memcpy(&prof__nvml.reasons, &g[4], sizeof g[4]);
    int err = prof__nvml.init();
    if (err) {
        prof__nvml_error(err, e, sizeof e);
        snprintf(line, sizeof line, "PROF_ENERGY: %s failed (%s); no energy in the trace", names[0], e);
        prof_gpu_say(line);
        *why = "nvmlInit failed";
        return 0;
    }
    return 1;
}

static int prof__nvml_device(const char *bus, void **h) { return prof__nvml.by_bus(bus, h); }

static int prof__nvml_read(void *h, uint64_t *count, double *mj_per_count) {
    unsigned long long mj = 0;          /* its unit is 1 mJ: *mj_per_count stays */
    int err = prof__nvml.energy(h, &mj);
    (void)mj_per_count;
    *count = mj;
    return err;
}

/* PROF_GPU_METRICS: metric m of device h (nvml.h's enums and structs:
   NVML_CLOCK_SM 1, NVML_CLOCK_MEM 2; nvmlUtilization_t {gpu, memory};
   nvmlMemory_t {total, free, used} in bytes; NVML_PCIE_UTIL_TX_BYTES 0,
   RX 1, in KB/s; the clocks' event reasons, a mask). A call this NVML
   lacks: NVML_ERROR_FUNCTION_NOT_FOUND (13). */
static int prof__nvml_metric(void *h, int m, double *v) {
    unsigned u[2] = { 0, 0 };
    unsigned long long q[3] = { 0, 0, 0 };
    int err = 13;
    switch (m) {
    case PROF_GPU_M_SM_CLOCK:
    case PROF_GPU_M_MEM_CLOCK:
        if (prof__nvml.clock && !(err = prof__nvml.clock(h, m == PROF_GPU_M_SM_CLOCK ? 1 : 2, u))) *v = PROF__SCAST(double, u[0]);
        break;
    case PROF_GPU_M_UTIL:
        if (prof__nvml.util && !(err = prof__nvml.util(h, u))) *v = PROF__SCAST(double, u[0]);
        break;
    case PROF_GPU_M_MEM_USED:
        if (prof__nvml.mem && !(err = prof__nvml.mem(h, q))) *v = PROF__SCAST(double, q[2]) / 1048576.0;
        break;
    case PROF_GPU_M_PCIE_RX:
    case PROF_GPU_M_PCIE_TX:
        if (prof__nvml.pcie && !(err = prof__nvml.pcie(h, m == PROF_GPU_M_PCIE_RX ? 1 : 0, u))) *v = PROF__SCAST(double, u[0]) / 1000.0;
        break;
    case PROF_GPU_M_THROTTLE:
        if (prof__nvml.reasons && !(err = prof__nvml.reasons(h, q))) *v = PROF__SCAST(double, q[0]);
        break;
    }
    return err;
}

static const prof_gpu_energy prof__nvml_energy = {
    "NVML", "nvmlDeviceGetTotalEnergyConsumption", 3 /* NVML_ERROR_NOT_SUPPORTED */,
    "; NVIDIA GPUs have one from Volta on", prof__nvml_open, prof__nvml_device, prof__nvml_read, prof__nvml_error,
    prof__nvml_metric,
    { "nvmlDeviceGetClockInfo", "nvmlDeviceGetClockInfo", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMemoryInfo",
      "nvmlDeviceGetPcieThroughput", "nvmlDeviceGetPcieThroughput", "nvmlDeviceGetCurrentClocksEventReasons" },
    { "GpuIdle", "ApplicationsClocksSetting", "SwPowerCap", "HwSlowdown", "SyncBoost", "SwThermalSlowdown",
      "HwThermalSlowdown", "HwPowerBrakeSlowdown", "DisplayClockSetting", "BoardLimit", "Reliability" },
};

PROF__GPU_LAST_ERROR(cuda, cudaError_t)   /* prof__cuda_kept: the engine's last error kept */

/* What differs from HIP: the properties struct and stream identity. */
static int prof__cuda_device_props(int d, prof_gpu_props *o) {
    struct cudaDeviceProp p;
    cudaError_t prior = cudaPeekAtLastError();
    cudaError_t e = cudaGetDeviceProperties(&p, d);
    if (e != cudaSuccess) return prof__cuda_kept(prior, e);
    PROF__GPU_PROPS(o, p);
    o->regs_per_sm = p.regsPerMultiprocessor;
    o->smem_per_sm = PROF__SCAST(int64_t, p.sharedMemPerMultiprocessor);
    o->smem_per_block_optin = PROF__SCAST(int64_t, p.sharedMemPerBlockOptin);
    return 0;
}

/* A stream's device (CUDA 12.8+; the current device before) and id (12.0+). */
static int prof__cuda_stream_info(void *s, int *dev, long long *id) {
    cudaError_t prior = cudaPeekAtLastError(), e;
#if CUDART_VERSION >= 12080
    e = cudaStreamGetDevice(PROF__SCAST(cudaStream_t, s), dev);
#else
    e = cudaGetDevice(dev);
#endif
    if (e != cudaSuccess) return prof__cuda_kept(prior, e);
#if CUDART_VERSION >= 12000
    unsigned long long sid;
    e = cudaStreamGetId(PROF__SCAST(cudaStream_t, s), &sid);
    *id = e == cudaSuccess ? PROF__SCAST(long long, sid) : -1;
#ifdef PROF__CUPTI
    /* Kernels carry CUPTI's stream ids, which are not the runtime's: while
       CUPTI is loaded (capturing or between windows), GPU regions take
       CUPTI's, so both share a track. */
    uint32_t cid;
    if (e == cudaSuccess && __atomic_load_n(&prof__cupti.loaded, __ATOMIC_ACQUIRE) && prof__cupti.stream_id &&
        prof__cupti.stream_id(PROF__NULLPTR, PROF__SCAST(CUstream, s), 0, &cid) == CUPTI_SUCCESS)
        *id = cid;
#endif
    return prof__cuda_kept(prior, e);
#else
    (void)s;
    (void)prior;
    *id = -1;
    return 0;
#endif
}

PROF__GPU_RUNTIME(cuda, "CUDA", cudaError_t, cudaStream_t, cudaEvent_t, PROF__CUDA_TRACER, &prof__nvml_energy)
#define PROF__GPU_API      prof__cuda_api
#define PROF__GPU_DEVICE() prof__cuda_device()

/* PROF_INIT here starts kernel capture, when PROF_CUPTI asks, before the
   first kernel rather than at the first GPU region. */
#undef PROF_INIT
#define PROF_INIT(cfg) (prof_init(cfg), prof_gpu_attach(&prof__cuda_api))

/* In the implementation's file (or the one file that defines
   PROF_GPU_IMPLEMENTATION, where prof.h's implementation is in a file of
   its own), capture starts with the profiler however it starts: lazily, at
   the first macro of any kind, too (prof.h's prof__gpu_autostart). */
#if defined(PROF_IMPLEMENTATION) || defined(PROF_GPU_IMPLEMENTATION)
void prof__gpu_autostart(void) { prof_gpu_attach(&prof__cuda_api); }
#endif

#else /* disabled: the macros are prof.h's, the wrappers the runtime's calls */

#define prof_cudaMalloc(ptr, bytes) cudaMalloc((ptr), (bytes))
#define prof_cudaFree(ptr)          cudaFree(ptr)

#endif /* PROF__ENABLED */
#endif /* PROF_CUDA_H */
