/* fake_cupti.c - a test double of libcupti's Activity API, built as a shared
   object that prof_cuda.h loads with dlopen (PROF_CUPTI_LIB), as it would
   load the toolkit's libcupti.so.

   It exports the functions prof_cuda.h looks up, with the signatures of the
   toolkit's cupti_activity.h, and keeps activity buffers as CUPTI does:
   records go into the buffer the client's request callback gave; a full
   buffer is handed back through the completion callback on a thread of its
   own (CUPTI's worker), or held until the next flush with FAKE_CUPTI_HOLD=1
   so that a test knows exactly when buffers run out; with no buffer given,
   records are dropped and counted for cuptiActivityGetNumDroppedRecords.
   Its clock (cuptiGetTimestamp) is CLOCK_MONOTONIC plus an offset of its
   own, read as late as a test asks (fake_cupti_slow_reads), and its
   stream ids are not the runtime's (runtime id + 100), as on a real device.

   The test program produces the records (cupti_test.c: a runtime call and
   what it launched, in the real struct layouts) through fake_cupti_emit,
   and binds the simulated runtime's stream ids with fake_cupti_bind.
   FAKE_CUPTI_FAIL_ENABLE=N makes the Nth cuptiActivityEnable fail. */
#define _POSIX_C_SOURCE 200809L
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"   /* CUPTI's headers are not ISO C */
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#pragma GCC diagnostic pop
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_CUPTI_EXPORTS
#include "fake_cupti.h"

#define MAX_HELD 64

static long incomplete_given;           /* records a forced flush handed back incomplete (F.lock) */

static struct {
    pthread_mutex_t lock;
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    int enabled[64];
    int enables;                        /* cuptiActivityEnable calls so far */
    long taken[64];                     /* records taken, by kind: made while it was enabled */
    uint8_t *buf;                       /* the buffer being filled */
    size_t size, used;
    uint8_t *held[MAX_HELD];            /* full buffers not yet handed back */
    size_t held_used[MAX_HELD];
    int nheld;
    size_t dropped;                     /* since the last cuptiActivityGetNumDroppedRecords */
    int (*stream_info)(void *stream, int *dev, unsigned long long *id);
    pthread_t workers[1024];
    int nworkers;
} F = { PTHREAD_MUTEX_INITIALIZER, 0, 0, { 0 }, 0, { 0 }, 0, 0, 0, { 0 }, { 0 }, 0, 0, 0, { 0 }, 0 };

int64_t fake_cupti_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec + FAKE_CUPTI_OFFSET_NS;
}

static size_t record_size(CUpti_ActivityKind kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return sizeof(CUpti_ActivityCudaEvent2);
    default: return 0;
    }
}

typedef struct { uint8_t *buf; size_t used; } done_t;

static void *worker(void *arg) {
    done_t d = *(done_t *)arg;
    free(arg);
    F.complete(NULL, 0, d.buf, d.used, d.used);
    return NULL;
}

/* The buffer being filled is full (or flushed): hand it back. Under F.lock. */
static void retire_locked(int now) {
    if (!F.buf) return;
    if (now || getenv("FAKE_CUPTI_HOLD")) {
        if (F.nheld < MAX_HELD) {
            F.held[F.nheld] = F.buf;
            F.held_used[F.nheld++] = F.used;
        }
    } else {
        done_t *d = malloc(sizeof *d);
        d->buf = F.buf;
        d->used = F.used;
        if (F.nworkers < 1024 && !pthread_create(&F.workers[F.nworkers], NULL, worker, d)) F.nworkers++;
        else worker(d);
    }
    F.buf = NULL;
    F.size = F.used = 0;
}

/* A record into the buffers: only if its kind is enabled now (emit), or
   whatever is enabled now (deliver: work launched while it was, which ran
   on). Counted by kind once taken. */
static void put(const void *record, size_t size, int check_enabled) {
    CUpti_ActivityKind kind = ((const CUpti_Activity *)record)->kind;
    if (size != record_size(kind)) abort();     /* a test's mistake */
    pthread_mutex_lock(&F.lock);
    if (check_enabled && !F.enabled[kind == CUPTI_ACTIVITY_KIND_KERNEL ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : kind]) {
        pthread_mutex_unlock(&F.lock);
        return;
    }
    F.taken[kind]++;
    size_t at = (F.used + 7) & ~(size_t)7;
    if (F.buf && at + size > F.size) {
        retire_locked(0);
        at = 0;
    }
    if (!F.buf) {
        size_t max_records = 0;
        F.request(&F.buf, &F.size, &max_records);
        if (!F.buf || F.size < size) {
            F.buf = NULL;
            F.size = 0;
            F.dropped++;
            pthread_mutex_unlock(&F.lock);
            return;
        }
        at = 0;
    }
    memcpy(F.buf + at, record, size);
    F.used = at + size;
    pthread_mutex_unlock(&F.lock);
}

void fake_cupti_emit(const void *record, size_t size) { put(record, size, 1); }
void fake_cupti_deliver(const void *record, size_t size) { put(record, size, 0); }

long fake_cupti_taken(int kind) {
    pthread_mutex_lock(&F.lock);
    long n = kind >= 0 && kind < 64 ? F.taken[kind] : 0;
    pthread_mutex_unlock(&F.lock);
    return n;
}

void fake_cupti_bind(int (*stream_info)(void *stream, int *dev, unsigned long long *id)) {
    F.stream_info = stream_info;
}

long fake_cupti_incomplete(void) {
    pthread_mutex_lock(&F.lock);
    long n = incomplete_given;
    pthread_mutex_unlock(&F.lock);
    return n;
}

int fake_cupti_enabled(void) {
    int n = 0;
    pthread_mutex_lock(&F.lock);
    for (int i = 0; i < 64; i++) n += F.enabled[i];
    pthread_mutex_unlock(&F.lock);
    return n;
}

/* ---- the Activity API, as cupti_activity.h declares it ------------------- */

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
    if (!request || !complete) return CUPTI_ERROR_INVALID_PARAMETER;
    F.request = request;
    F.complete = complete;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
    const char *fail = getenv("FAKE_CUPTI_FAIL_ENABLE");
    if ((unsigned)kind >= 64 || !record_size(kind)) return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&F.lock);
    int n = ++F.enables;
    if (!(fail && atoi(fail) == n)) F.enabled[kind] = 1;
    pthread_mutex_unlock(&F.lock);
    return fail && atoi(fail) == n ? CUPTI_ERROR_INSUFFICIENT_PRIVILEGES : CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
    if ((unsigned)kind >= 64) return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&F.lock);
    F.enabled[kind] = 0;
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

/* A record of work on the device not complete now (its end, on CUPTI's
   clock, still to come): 1. Forced (cupti_activity.h: a forced flush
   "returns all the activity buffers including the ones which have one or
   more incomplete activity records"), it goes back as far as it is: a
   kernel, copy or fill that has started has its start and an end of 0
   (CUPTI_TIMESTAMP_UNKNOWN), one that has not, both 0. */
static int incomplete(uint8_t *rec, int force) {
    CUpti_ActivityKind kind = ((CUpti_Activity *)(void *)rec)->kind;
    uint64_t *start, *end;
    if (kind == CUPTI_ACTIVITY_KIND_KERNEL || kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)(void *)rec;
        start = &k->start, end = &k->end;
    } else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)(void *)rec;
        start = &m->start, end = &m->end;
    } else if (kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)(void *)rec;
        start = &m->start, end = &m->end;
    } else {
        return 0;                       /* a runtime call's record is complete once made, a
                                           synchronisation's (the host's wait) and an event
                                           record's too */
    }
    uint64_t now = (uint64_t)fake_cupti_now();
    if (*end == 0 || *end <= now) return 0;
    if (force) {
        if (*start > now) *start = 0;
        *end = 0;
        incomplete_given++;
    }
    return 1;
}

/* Whether a buffer holds a record not complete now; forced, those
   records are made what CUPTI hands back. Under F.lock. */
static int buffer_incomplete(uint8_t *buf, size_t used, int force) {
    int n = 0;
    for (size_t at = 0; at < used;) {
        size_t size = record_size(((CUpti_Activity *)(void *)(buf + at))->kind);
        if (!size) break;
        n += incomplete(buf + at, force);
        at = (at + size + 7) & ~(size_t)7;
    }
    return n;
}

/* Every buffer goes back, the one being filled too, in this thread, after
   the workers' (CUPTI's flush returns once the records are delivered);
   forced (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, prof_cuda.h's), with the
   records not yet complete as they are, else a buffer holding one stays
   (cupti_activity.h: the default flush "doesn't return buffers which have
   one or more incomplete records"). */
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
    int force = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
    pthread_mutex_lock(&F.lock);
    retire_locked(1);
    int n = 0, keep = 0, nw = F.nworkers;
    uint8_t *held[MAX_HELD];
    size_t used[MAX_HELD];
    pthread_t w[1024];
    for (int i = 0; i < F.nheld; i++) {
        if (buffer_incomplete(F.held[i], F.held_used[i], force) && !force) {
            F.held[keep] = F.held[i];
            F.held_used[keep++] = F.held_used[i];
        } else {
            held[n] = F.held[i];
            used[n++] = F.held_used[i];
        }
    }
    memcpy(w, F.workers, (size_t)nw * sizeof *w);
    F.nheld = keep;
    F.nworkers = 0;
    pthread_mutex_unlock(&F.lock);
    for (int i = 0; i < nw; i++) pthread_join(w[i], NULL);
    for (int i = 0; i < n; i++) F.complete(NULL, 0, held[i], used[i], used[i]);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record) {
    size_t at = 0;
    if (*record) {
        at = (size_t)((uint8_t *)*record - buffer) + record_size((*record)->kind);
        at = (at + 7) & ~(size_t)7;
    }
    if (at >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(void *)(buffer + at);
    return record_size((*record)->kind) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_KIND;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t *dropped) {
    (void)context;
    (void)stream;
    pthread_mutex_lock(&F.lock);
    *dropped = F.dropped;
    F.dropped = 0;
    pthread_mutex_unlock(&F.lock);
    return CUPTI_SUCCESS;
}

static int64_t slow_ns;                 /* atomic: fake_cupti_slow_reads' */
static long slow_left;                  /* atomic */

void fake_cupti_slow_reads(int64_t ns, long count) {
    __atomic_store_n(&slow_ns, ns, __ATOMIC_RELAXED);
    __atomic_store_n(&slow_left, count, __ATOMIC_RELEASE);
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp) {
    long left = __atomic_load_n(&slow_left, __ATOMIC_ACQUIRE);
    while (left > 0 && !__atomic_compare_exchange_n(&slow_left, &left, left - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {}
    if (left > 0) {                     /* a slow reading: its time comes at its end */
        int64_t ns = __atomic_load_n(&slow_ns, __ATOMIC_RELAXED);
        struct timespec t = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
        nanosleep(&t, NULL);
    }
    *timestamp = (uint64_t)fake_cupti_now();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str) {
    *str = result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (fake)"
                                                         : "CUPTI_ERROR_UNKNOWN (fake)";
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name) {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        switch (cbid) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: *name = "cuLaunchKernel"; break;
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: *name = "cuLaunchKernelEx"; break;
        case CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent: *name = "cuCtxGetCurrent"; break;
        default: return CUPTI_ERROR_INVALID_PARAMETER;
        }
        return CUPTI_SUCCESS;
    }
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return CUPTI_ERROR_INVALID_PARAMETER;
    switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: *name = "cudaLaunchKernel_v7000"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: *name = "cudaMemcpyAsync_v3020"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: *name = "cudaMemsetAsync_v3020"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020: *name = "cudaGetDevice_v3020"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020: *name = "cudaEventRecord_v3020"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000: *name = "cudaGraphLaunch_v10000"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020: *name = "cudaStreamSynchronize_v3020"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020: *name = "cudaEventSynchronize_v3020"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020: *name = "cudaDeviceSynchronize_v3020"; break;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020: *name = "cudaStreamWaitEvent_v3020"; break;
    default: return CUPTI_ERROR_INVALID_PARAMETER;
    }
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t per_thread, uint32_t *id) {
    int dev;
    unsigned long long rid;
    (void)context;
    (void)per_thread;
    if (!F.stream_info || F.stream_info(stream, &dev, &rid)) return CUPTI_ERROR_INVALID_STREAM;
    *id = (uint32_t)rid + FAKE_CUPTI_STREAM_SHIFT;
    return CUPTI_SUCCESS;
}
