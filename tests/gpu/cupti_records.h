/* cupti_records.h - CUPTI's activity records as the suite's programs make
   them for the CUPTI double (tests/gpu/fake_cupti.c), on the simulated
   runtime (fake_gpu.h): each filled as CUPTI fills it, for the caller to
   change further and emit (fake_cupti_emit). */
#ifndef CUPTI_RECORDS_H
#define CUPTI_RECORDS_H

#include <cupti_activity.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fake_cupti.h"
#include "fake_gpu.h"

/* Device dev's time (its own ns) on CUPTI's clock. */
static inline uint64_t cupti_ts(int dev, int64_t dev_ns) {
    return (uint64_t)(fake_gpu_host_ns(dev, dev_ns) + 0.5) + (uint64_t)FAKE_CUPTI_OFFSET_NS;
}

/* CUPTI's id of a simulated stream; its "none" for NULL. */
static inline uint32_t cupti_stream_id(void *stream) {
    int dev;
    unsigned long long id;
    if (!stream) return CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    fake_stream_info(stream, &dev, &id);
    return (uint32_t)id + FAKE_CUPTI_STREAM_SHIFT;
}

/* A runtime (or driver) call of the calling thread, t0 to t1 on CUPTI's clock. */
static inline CUpti_ActivityAPI cupti_api(CUpti_ActivityKind kind, uint32_t cbid, uint32_t corr, int64_t t0,
                                          int64_t t1) {
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.cbid = cbid;
    a.start = (uint64_t)t0;
    a.end = (uint64_t)t1;
    a.processId = (uint32_t)getpid();
    a.threadId = (uint32_t)(uintptr_t)pthread_self(); /* CUPTI's: pthread_self(), cut to 32 bits */
    a.correlationId = corr;
    return a;
}

/* cudaEventRecord's record of event (CUPTI's id) on stream, by the call of corr. */
static inline CUpti_ActivityCudaEvent2 cupti_event(uint32_t corr, void *stream, uint32_t event) {
    CUpti_ActivityCudaEvent2 e;
    memset(&e, 0, sizeof e);
    e.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
    e.correlationId = corr;
    e.contextId = 1;
    e.streamId = cupti_stream_id(stream);
    e.eventId = event;
    return e;
}

/* A synchronisation: the host's wait w0 to w1 inside the call of corr, on
   stream and event (NULL, CUPTI_SYNCHRONIZATION_INVALID_VALUE: none). */
static inline CUpti_ActivitySynchronization2 cupti_sync(CUpti_ActivitySynchronizationType type, uint32_t corr,
                                                        int64_t w0, int64_t w1, void *stream, uint32_t event,
                                                        uint32_t event_sync) {
    CUpti_ActivitySynchronization2 y;
    memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = type;
    y.start = (uint64_t)w0;
    y.end = (uint64_t)w1;
    y.correlationId = corr;
    y.contextId = 1;
    y.streamId = cupti_stream_id(stream);
    y.cudaEventId = event;
    y.cudaEventSyncId = event_sync;
    return y;
}

#endif /* CUPTI_RECORDS_H */
