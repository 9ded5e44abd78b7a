/* fake_gpu.h - a simulated GPU behind the test doubles of the CUDA and HIP
   runtimes (fake_cuda.c, fake_hip.c), for testing prof_cuda.h and prof_hip.h
   on machines without a GPU.

   The doubles define the runtime functions those headers call, compiled
   against the real runtime headers and linked instead of libcudart or
   libamdhip64; both sit on the simulation in fake_gpu.c:

   - each device has a clock that runs at its own rate and offset against
     CLOCK_MONOTONIC, so a test can check that prof.h takes both out;
   - work is queued per stream: a kernel (fake_gpu_launch) starts when the
     stream's earlier work ends, and an event completes when everything
     queued before it on its stream has; on an idle stream once the launch
     latency (fake_gpu_latency, default 0) has passed, as on a real device;
   - queries answer "not ready" until the device clock, read from the host
     clock, passes an event's completion; synchronising sleeps until then;
   - the true device time of every event is kept (fake_gpu_last), so a test
     knows where each GPU region belongs on the CPU timeline;
   - any call can be made to fail on demand (fake_gpu_fail), and every event
     and stream is counted, so a test can prove that nothing leaks and that
     nothing destroyed is used again;
   - the legacy default stream synchronises with the device's blocking
     streams, as the runtimes' does: work queued on it starts once theirs
     has ended, and theirs once its has; a non-blocking stream
     (cudaStreamNonBlocking, as prof.h's own) waits for neither;
   - stream capture as the runtimes do it: work and event records on a
     capturing stream run nothing and go into its graph; querying,
     synchronising or timing an event last recorded there fails (captured
     event), as does an event query or sync from a thread that the capture
     modes forbid (unsupported: a global capture on another thread, or a
     capture of its own, unless its mode is relaxed), and the legacy stream
     while a blocking stream captures (implicit); each such failure
     invalidates the captures concerned, whose end then fails and gives no
     graph. */
#ifndef FAKE_GPU_H
#define FAKE_GPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_GPU_MAX_DEVICES 8
/* Device d's PCI bus number: 0x18, 0x38, ... (its bus id 0000:18:00.0, ...) */
#define FAKE_GPU_PCI_BUS(d) (0x18 + 0x20 * (d))

/* The calls that can be made to fail. Destroying never fails: a leak is
   then always the caller's. */
typedef enum fake_call {
    FAKE_DEVICE_COUNT, FAKE_GET_DEVICE, FAKE_SET_DEVICE, FAKE_STREAM_INFO, FAKE_STREAM_CREATE,
    FAKE_EVENT_CREATE, FAKE_EVENT_RECORD, FAKE_EVENT_QUERY, FAKE_EVENT_SYNC, FAKE_ELAPSED,
    FAKE_CAPTURE_STATUS,                /* whether a stream is capturing */
    FAKE_NCALLS
} fake_call;

/* What the simulation answers; the doubles turn these into the runtime's
   codes. Positive values are a runtime's own codes (from fake_gpu_fail),
   passed through as they are. */
enum { FAKE_OK = 0, FAKE_NOT_READY = -1, FAKE_BAD_HANDLE = -2, FAKE_BAD_DEVICE = -3, FAKE_BAD_VALUE = -4,
       FAKE_CAPTURE_UNSUPPORTED = -5, FAKE_CAPTURED_EVENT = -6, FAKE_CAPTURE_INVALIDATED = -7,
       FAKE_CAPTURE_IMPLICIT = -8, FAKE_CAPTURE_UNMATCHED = -9 };

/* Capture modes (the runtimes' values) and a stream's capture status. */
enum { FAKE_MODE_GLOBAL = 0, FAKE_MODE_THREAD_LOCAL = 1, FAKE_MODE_RELAXED = 2 };
enum { FAKE_CAPTURE_NONE = 0, FAKE_CAPTURE_ACTIVE = 1, FAKE_CAPTURE_BROKEN = 2 };

typedef struct fake_gpu_stats {
    long calls[FAKE_NCALLS];
    long events_created, events_live;   /* through the runtime API */
    long streams_created, streams_live; /* through the runtime API: prof.h's own */
    long private_records;               /* events recorded on those streams (anchors) */
    long engine_syncs;                  /* synchronize on events of the engine's streams */
    long not_ready;                     /* queries answered "not ready" */
    long misuse;                        /* calls with a destroyed event or stream, or an
                                           event and a stream of different devices */
    long invalidated;                   /* captures a forbidden call invalidated */
    long graph_nodes_run;               /* work of launched graphs that has completed */
} fake_gpu_stats;

/* An event recorded on one of the engine's streams (not prof.h's own). */
typedef struct fake_gpu_mark {
    int device;
    unsigned long long stream_id;
    int64_t dev_ns;                     /* when it completes, device clock */
    uint64_t seq;                       /* counts this thread's engine records */
} fake_gpu_mark;

/* Set up before the first runtime call: `devices` devices (default 1),
   device d's clock reading offset_ns + rate * (host ns since setup). */
void fake_gpu_setup(int devices);
void fake_gpu_clock(int device, double rate, int64_t offset_ns);

/* Work and events reach the device ns after they are submitted (a real
   GPU's launch latency: 2-5 us idle, tens of us on a loaded host). */
void fake_gpu_latency(int64_t ns);

/* Called after every successful event record (prof.h's and the engine's),
   on the recording thread, outside the simulation's lock: the stream, its
   device, and the device time at which the event completes. The CUPTI
   double's tests turn it into CUPTI's records. */
typedef void fake_gpu_record_fn(void *stream, int device, int64_t dev_ns);
void fake_gpu_on_record(fake_gpu_record_fn *fn);

/* A stream of the engine on `device`, with the id cudaStreamGetId gives.
   NULL as a stream is the current device's default stream (id 0). */
void *fake_gpu_stream(int device, unsigned long long id);
/* The same, created with cudaStreamNonBlocking: it does not synchronise
   with the legacy stream. */
void *fake_gpu_stream_nonblocking(int device, unsigned long long id);
/* A graph's work items (what stream capture put in it); -1: not a graph. */
int fake_gpu_graph_nodes(void *graph);
/* Launches graph on stream, as cudaGraphLaunch: its work runs there in
   order; the device time at which it ends. */
int64_t fake_gpu_graph_launch(void *graph, void *stream);
/* Queues a kernel of ns device nanoseconds on stream. */
void fake_gpu_launch(void *stream, int64_t ns);
/* The same; returns when it starts on the device clock, and the device. */
int64_t fake_gpu_launch_at(void *stream, int64_t ns, int *device);

/* From now on, after `after` more successful calls, every `call` fails
   with the runtime's error code err. */
void fake_gpu_fail(fake_call call, int err, long after);

/* The last event this thread recorded on an engine stream; 0 if none. */
int fake_gpu_last(fake_gpu_mark *out);
/* Engine events recorded and not complete at this moment. */
int fake_gpu_pending(void);

/* Clocks: the host time (CLOCK_MONOTONIC ns) of device time dev_ns. */
double fake_gpu_host_ns(int device, int64_t dev_ns);
int64_t fake_gpu_now(void);
void fake_gpu_sleep(int64_t ns);

void fake_gpu_get_stats(fake_gpu_stats *out);
/* The runtime calls made on the calling thread, by kind: what prof.h made
   on an engine's thread. */
void fake_gpu_thread_calls(long out[FAKE_NCALLS]);

/* ---- the simulation's side of the runtime calls (fake_runtime_api.h) ---- */
int fake_device_count(int *n);
int fake_get_device(int *dev);
int fake_set_device(int dev);
int fake_device_check(int dev);
int fake_stream_info(void *stream, int *dev, unsigned long long *id);
int fake_stream_create(void **stream, int nonblocking);
int fake_begin_capture(void *stream, int mode);
int fake_end_capture(void *stream, void **graph);
int fake_capture_status(void *stream, int *status, unsigned long long *id);
int fake_exchange_capture_mode(int *mode);
int fake_graph_destroy(void *graph);
int fake_stream_destroy(void *stream);
int fake_event_create(void **ev);
int fake_event_destroy(void *ev);
int fake_event_record(void *ev, void *stream);
int fake_event_query(void *ev);
int fake_event_sync(void *ev);
int fake_elapsed(float *ms, void *from, void *to);

/* Synchronisation: the host sleeps until a stream's queued work, or all of
   a device's, has ended (its device ns returned); a stream's later work
   waits for an event's completion, as cudaStreamWaitEvent makes it. */
int64_t fake_stream_sync(void *stream);
int64_t fake_device_sync(int device);
int fake_stream_wait_event(void *stream, void *ev);
int64_t fake_event_done(void *ev);      /* an event's completion, device ns */

#ifdef __cplusplus
}
#endif
#endif /* FAKE_GPU_H */
