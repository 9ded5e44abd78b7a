/* fake_gpu.c - the simulated GPU behind the runtime doubles; see fake_gpu.h.
   One lock guards it all: prof.h calls it from the engine's threads and from
   its resolver at the same time. */
#define _POSIX_C_SOURCE 200809L
#include "fake_gpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What streams and events share. Destroyed ones are kept (not freed), so
   that a later use is caught and counted instead of reading freed memory. */
typedef struct fake_obj {
    struct fake_obj *next;              /* every one ever made */
    int live, dev;
    int engine;                         /* a stream the test made, or an event
                                           last recorded on one (not prof.h's) */
} fake_obj;

typedef struct fake_graph {             /* what a capture recorded: its work, in order */
    int n, cap;
    int64_t *ns;
} fake_graph;

typedef struct fake_stream {
    fake_obj o;
    unsigned long long id;
    int64_t busy;                       /* device ns at which its queued work ends */
    int nonblocking;                    /* does not synchronise with the legacy stream */
    int capture, cmode;                 /* FAKE_CAPTURE_*, and the mode it began in */
    unsigned long long cap_id;          /* the capture sequence's id (unique) */
    const void *cap_thread;             /* the thread that began it */
    fake_graph *graph;                  /* what it captures into */
} fake_stream;

typedef struct fake_event {
    fake_obj o;
    int recorded;
    int64_t done;                       /* device ns at which it completes */
    unsigned long long captured;        /* last recorded in this capture sequence; 0: not */
} fake_event;

#define FAKE_GRAPH_RUNS 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int ndev;
    double rate[FAKE_GPU_MAX_DEVICES];
    int64_t offset[FAKE_GPU_MAX_DEVICES];
    int64_t origin;                     /* host ns at setup */
    int64_t latency;                    /* ns from a submission to the device */
    fake_gpu_record_fn *on_record;
    fake_stream dflt[FAKE_GPU_MAX_DEVICES];
    fake_obj *streams, *events;
    unsigned long long next_id;         /* ids of prof.h's streams */
    unsigned long long next_cap;        /* ids of capture sequences */
    struct { int dev, nodes; int64_t end; } runs[FAKE_GRAPH_RUNS];   /* graph launches */
    int nruns;
    struct { int err; long left; } fail[FAKE_NCALLS];
    fake_gpu_stats st;
} S;

static _Thread_local int cur_dev;
static _Thread_local fake_gpu_mark last;
static _Thread_local int capture_mode;  /* this thread's (cudaThreadExchangeStreamCaptureMode) */
static _Thread_local char thread_token; /* its address names the thread */

int64_t fake_gpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fake_gpu_sleep(int64_t ns) {
    struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
    if (ns > 0) nanosleep(&ts, NULL);
}

/* Under the lock from here on, unless said otherwise. */
static void setup_once(void) {
    if (S.ndev) return;
    S.ndev = 1;
    S.origin = fake_gpu_now();
    S.next_id = 1000;
    for (int d = 0; d < FAKE_GPU_MAX_DEVICES; d++) {
        S.rate[d] = 1.0;
        S.dflt[d].o.live = S.dflt[d].o.engine = 1;
        S.dflt[d].o.dev = d;
    }
}

void fake_gpu_setup(int devices) {
    pthread_mutex_lock(&lock);
    setup_once();
    S.ndev = devices < 1 ? 1 : devices > FAKE_GPU_MAX_DEVICES ? FAKE_GPU_MAX_DEVICES : devices;
    pthread_mutex_unlock(&lock);
}

void fake_gpu_clock(int device, double rate, int64_t offset_ns) {
    pthread_mutex_lock(&lock);
    setup_once();
    S.rate[device] = rate;
    S.offset[device] = offset_ns;
    pthread_mutex_unlock(&lock);
}

static int64_t dev_now(int d) {
    return S.offset[d] + (int64_t)((double)(fake_gpu_now() - S.origin) * S.rate[d]);
}

/* When work submitted now reaches device d, on its clock. */
static int64_t dev_arrival(int d) { return dev_now(d) + (int64_t)((double)S.latency * S.rate[d]); }

void fake_gpu_latency(int64_t ns) {
    pthread_mutex_lock(&lock);
    setup_once();
    S.latency = ns;
    pthread_mutex_unlock(&lock);
}

void fake_gpu_on_record(fake_gpu_record_fn *fn) {
    pthread_mutex_lock(&lock);
    S.on_record = fn;
    pthread_mutex_unlock(&lock);
}

double fake_gpu_host_ns(int device, int64_t dev_ns) {
    pthread_mutex_lock(&lock);
    double h = (double)S.origin + (double)(dev_ns - S.offset[device]) / S.rate[device];
    pthread_mutex_unlock(&lock);
    return h;
}

static _Thread_local long thread_calls[FAKE_NCALLS];   /* made on this thread */

void fake_gpu_thread_calls(long out[FAKE_NCALLS]) { memcpy(out, thread_calls, sizeof thread_calls); }

/* Counts a call; nonzero: the error it must fail with (fake_gpu_fail). */
static int enter(fake_call c) {
    setup_once();
    S.st.calls[c]++;
    thread_calls[c]++;
    if (!S.fail[c].err) return 0;
    if (S.fail[c].left > 0) { S.fail[c].left--; return 0; }
    return S.fail[c].err;
}

void fake_gpu_fail(fake_call call, int err, long after) {
    pthread_mutex_lock(&lock);
    S.fail[call].err = err;
    S.fail[call].left = after;
    pthread_mutex_unlock(&lock);
}

/* NULL (and the runtimes' special handles 1 and 2, the legacy and
   per-thread default streams) name the current device's default stream. */
static fake_stream *stream_of(void *h) {
    return (uintptr_t)h <= 2 ? &S.dflt[cur_dev] : (fake_stream *)h;
}

static int misuse(void) {
    S.st.misuse++;
    return FAKE_BAD_HANDLE;
}

static int is_legacy(const fake_stream *s) { return s == &S.dflt[s->o.dev]; }

/* When work queued now on s can start on its device: after the stream's
   own work; a blocking stream's after the legacy stream's, and the legacy
   stream's after every blocking stream's of its device. */
static int64_t ready_at(const fake_stream *s) {
    int d = s->o.dev;
    int64_t t = dev_arrival(d);
    if (s->busy > t) t = s->busy;
    if (s->nonblocking) return t;
    if (!is_legacy(s)) return S.dflt[d].busy > t ? S.dflt[d].busy : t;
    for (fake_obj *o = S.streams; o; o = o->next) {
        const fake_stream *b = (const fake_stream *)o;
        if (o->live && o->dev == d && !b->nonblocking && b->busy > t) t = b->busy;
    }
    return t;
}

static void invalidate(fake_stream *s) {
    if (s->capture != FAKE_CAPTURE_ACTIVE) return;
    s->capture = FAKE_CAPTURE_BROKEN;
    S.st.invalidated++;
}

/* The legacy stream while a blocking stream of its device captures: its
   use would depend on the capture ("implicit"). Those captures are
   invalidated if `use` (IsCapturing only asks). */
static int legacy_blocked(const fake_stream *s, int use) {
    int n = 0;
    if (!is_legacy(s)) return 0;
    for (fake_obj *o = S.streams; o; o = o->next) {
        fake_stream *b = (fake_stream *)o;
        if (!o->live || o->dev != s->o.dev || b->nonblocking || b->capture != FAKE_CAPTURE_ACTIVE) continue;
        n++;
        if (use) invalidate(b);
    }
    return n;
}

/* An event query or sync is "potentially unsafe" during capture: this
   thread may not make one while it captures (not relaxed), nor, in global
   mode, while another thread captures in global mode. Those captures are
   invalidated; nonzero: the call is refused. */
static int forbidden(void) {
    int n = 0;
    if (capture_mode == FAKE_MODE_RELAXED) return 0;
    for (fake_obj *o = S.streams; o; o = o->next) {
        fake_stream *b = (fake_stream *)o;
        if (b->capture != FAKE_CAPTURE_ACTIVE || b->cmode == FAKE_MODE_RELAXED) continue;
        if (b->cap_thread == &thread_token || (capture_mode == FAKE_MODE_GLOBAL && b->cmode == FAKE_MODE_GLOBAL)) {
            invalidate(b);
            n++;
        }
    }
    return n;
}

/* An event last recorded in a capture: using it fails, and invalidates
   that capture if it still runs. */
static int captured_event(const fake_event *e) {
    if (!e->captured) return 0;
    for (fake_obj *o = S.streams; o; o = o->next) {
        fake_stream *b = (fake_stream *)o;
        if (b->cap_id == e->captured) invalidate(b);
    }
    return 1;
}

static void graph_add(fake_graph *g, int64_t ns) {
    if (g->n == g->cap) {
        int nc = g->cap ? 2 * g->cap : 16;
        int64_t *v = (int64_t *)realloc(g->ns, (size_t)nc * sizeof *v);
        if (!v) abort();
        g->ns = v;
        g->cap = nc;
    }
    g->ns[g->n++] = ns;
}

/* A new stream or event on the current device, counted. */
static int obj_new(fake_call call, size_t size, fake_obj **list, long *created, long *live, void **out) {
    int err = enter(call);
    fake_obj *o = err ? NULL : (fake_obj *)calloc(1, size);
    if (o) {
        o->live = 1;
        o->dev = cur_dev;
        o->next = *list;
        *list = o;
        ++*created;
        ++*live;
    } else if (!err) {
        err = FAKE_BAD_VALUE;
    }
    *out = o;
    return err;
}

static int obj_destroy(fake_obj *o, long *live) {
    if (!o || !o->live) return misuse();
    o->live = 0;
    --*live;
    return 0;
}

static void *engine_stream(int device, unsigned long long id, int nonblocking) {
    fake_stream *s = (fake_stream *)calloc(1, sizeof *s);
    if (!s) abort();
    pthread_mutex_lock(&lock);
    setup_once();
    s->o.live = s->o.engine = 1;
    s->o.dev = device;
    s->o.next = S.streams;
    S.streams = &s->o;
    s->id = id;
    s->nonblocking = nonblocking;
    pthread_mutex_unlock(&lock);
    return s;
}

void *fake_gpu_stream(int device, unsigned long long id) { return engine_stream(device, id, 0); }
void *fake_gpu_stream_nonblocking(int device, unsigned long long id) { return engine_stream(device, id, 1); }

int fake_gpu_graph_nodes(void *graph) {
    pthread_mutex_lock(&lock);
    int n = graph ? ((fake_graph *)graph)->n : -1;
    pthread_mutex_unlock(&lock);
    return n;
}

int64_t fake_gpu_graph_launch(void *graph, void *stream) {
    fake_graph *g = (fake_graph *)graph;
    pthread_mutex_lock(&lock);
    fake_stream *s = stream_of(stream);
    int64_t end = ready_at(s);
    for (int i = 0; i < g->n; i++) end = (s->busy = ready_at(s) + g->ns[i]);
    if (S.nruns < FAKE_GRAPH_RUNS) {
        S.runs[S.nruns].dev = s->o.dev;
        S.runs[S.nruns].nodes = g->n;
        S.runs[S.nruns++].end = end;
    }
    pthread_mutex_unlock(&lock);
    return end;
}

int64_t fake_gpu_launch_at(void *stream, int64_t ns, int *device) {
    pthread_mutex_lock(&lock);
    setup_once();
    fake_stream *s = stream_of(stream);
    int64_t start = ready_at(s);
    legacy_blocked(s, 1);
    if (s->capture == FAKE_CAPTURE_ACTIVE) graph_add(s->graph, ns);   /* runs when the graph does */
    else if (s->capture == FAKE_CAPTURE_NONE) s->busy = start + ns;
    if (device) *device = s->o.dev;
    pthread_mutex_unlock(&lock);
    return start;
}

void fake_gpu_launch(void *stream, int64_t ns) { fake_gpu_launch_at(stream, ns, NULL); }

int fake_gpu_last(fake_gpu_mark *out) {
    *out = last;
    return last.seq != 0;
}

int fake_gpu_pending(void) {
    int n = 0;
    pthread_mutex_lock(&lock);
    for (fake_obj *o = S.events; o; o = o->next) {
        fake_event *e = (fake_event *)o;
        if (o->live && o->engine && e->recorded && dev_now(o->dev) < e->done) n++;
    }
    pthread_mutex_unlock(&lock);
    return n;
}

void fake_gpu_get_stats(fake_gpu_stats *out) {
    pthread_mutex_lock(&lock);
    S.st.graph_nodes_run = 0;
    for (int i = 0; i < S.nruns; i++)
        if (dev_now(S.runs[i].dev) >= S.runs[i].end) S.st.graph_nodes_run += S.runs[i].nodes;
    *out = S.st;
    pthread_mutex_unlock(&lock);
}

/* ---- the runtime calls ---------------------------------------------------- */

int fake_device_count(int *n) {
    pthread_mutex_lock(&lock);
    int err = enter(FAKE_DEVICE_COUNT);
    *n = err ? 0 : S.ndev;
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_get_device(int *dev) {
    pthread_mutex_lock(&lock);
    int err = enter(FAKE_GET_DEVICE);
    pthread_mutex_unlock(&lock);
    if (!err) *dev = cur_dev;
    return err;
}

int fake_device_check(int dev) {
    pthread_mutex_lock(&lock);
    setup_once();
    int err = dev < 0 || dev >= S.ndev ? FAKE_BAD_DEVICE : 0;
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_set_device(int dev) {
    pthread_mutex_lock(&lock);
    int err = enter(FAKE_SET_DEVICE);
    if (!err && (dev < 0 || dev >= S.ndev)) err = FAKE_BAD_DEVICE;
    pthread_mutex_unlock(&lock);
    if (!err) cur_dev = dev;
    return err;
}

int fake_stream_info(void *stream, int *dev, unsigned long long *id) {
    pthread_mutex_lock(&lock);
    int err = enter(FAKE_STREAM_INFO);
    fake_stream *s = stream_of(stream);
    if (!err && !s->o.live) err = misuse();
    if (!err) {
        *dev = s->o.dev;
        *id = s->id;
    }
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_stream_create(void **stream, int nonblocking) {
    pthread_mutex_lock(&lock);
    int err = obj_new(FAKE_STREAM_CREATE, sizeof(fake_stream), &S.streams, &S.st.streams_created,
                      &S.st.streams_live, stream);
    if (!err) ((fake_stream *)*stream)->id = S.next_id++;
    if (!err) ((fake_stream *)*stream)->nonblocking = nonblocking;
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_stream_destroy(void *stream) {
    pthread_mutex_lock(&lock);
    fake_obj *o = (fake_obj *)stream;
    /* prof.h destroys only its own streams, never the engine's */
    int err = o && o->engine ? misuse() : obj_destroy(o, &S.st.streams_live);
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_event_create(void **ev) {
    pthread_mutex_lock(&lock);
    int err = obj_new(FAKE_EVENT_CREATE, sizeof(fake_event), &S.events, &S.st.events_created,
                      &S.st.events_live, ev);
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_event_destroy(void *ev) {
    pthread_mutex_lock(&lock);
    int err = obj_destroy((fake_obj *)ev, &S.st.events_live);
    pthread_mutex_unlock(&lock);
    return err;
}

/* Counts a call on event e: the error it fails with, if any. */
static int use_event(fake_call c, const fake_event *e) {
    int err = enter(c);
    return !err && !e->o.live ? misuse() : err;
}

/* The event completes when the stream's queued work has: once it reaches
   the device if idle. */
int fake_event_record(void *ev, void *stream) {
    pthread_mutex_lock(&lock);
    fake_event *e = (fake_event *)ev;
    fake_stream *s = stream_of(stream);
    int err = use_event(FAKE_EVENT_RECORD, e);
    if (!err && (!s->o.live || e->o.dev != s->o.dev)) err = misuse();
    if (!err && s->capture == FAKE_CAPTURE_BROKEN) err = FAKE_CAPTURE_INVALIDATED;
    if (!err && legacy_blocked(s, 1)) err = FAKE_CAPTURE_IMPLICIT;
    if (!err && s->capture == FAKE_CAPTURE_ACTIVE) {      /* the graph's: nothing runs */
        e->recorded = 1;
        e->captured = s->cap_id;
        e->o.engine = s->o.engine;
    } else if (!err) {
        e->done = ready_at(s);
        if (is_legacy(s)) s->busy = e->done;    /* later work on blocking streams waits for what it waited for */
        e->recorded = 1;
        e->captured = 0;
        e->o.engine = s->o.engine;
        if (s->o.engine) {
            last.device = s->o.dev;
            last.stream_id = s->id;
            last.dev_ns = e->done;
            last.seq++;
        } else {
            S.st.private_records++;
        }
    }
    fake_gpu_record_fn *hook = err ? NULL : S.on_record;
    int dev = s->o.dev;
    int64_t done = e->done;
    pthread_mutex_unlock(&lock);
    if (hook) hook(stream, dev, done);
    return err;
}

/* As the runtimes: an event never recorded counts as complete. */
int fake_event_query(void *ev) {
    pthread_mutex_lock(&lock);
    fake_event *e = (fake_event *)ev;
    int err = use_event(FAKE_EVENT_QUERY, e);
    if (!err && forbidden()) err = FAKE_CAPTURE_UNSUPPORTED;
    if (!err && captured_event(e)) err = FAKE_CAPTURED_EVENT;
    if (!err && e->recorded && dev_now(e->o.dev) < e->done) {
        err = FAKE_NOT_READY;
        S.st.not_ready++;
    }
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_event_sync(void *ev) {
    pthread_mutex_lock(&lock);
    fake_event *e = (fake_event *)ev;
    int err = use_event(FAKE_EVENT_SYNC, e);
    if (!err && forbidden()) err = FAKE_CAPTURE_UNSUPPORTED;
    if (!err && captured_event(e)) err = FAKE_CAPTURED_EVENT;
    if (!err && e->o.engine) S.st.engine_syncs++;
    int dev = e->o.dev, wait = !err && e->recorded;
    int64_t done = e->done;
    pthread_mutex_unlock(&lock);
    /* sleeps outside the lock: other threads go on recording meanwhile */
    while (wait) {
        pthread_mutex_lock(&lock);
        int64_t left = (int64_t)((double)(done - dev_now(dev)) / S.rate[dev]);
        pthread_mutex_unlock(&lock);
        if (left <= 0) break;
        fake_gpu_sleep(left < 1000000 ? left : 1000000);
    }
    return err;
}

/* Both complete, on one device; float milliseconds, as the runtimes give. */
int fake_elapsed(float *ms, void *from, void *to) {
    pthread_mutex_lock(&lock);
    fake_event *a = (fake_event *)from, *b = (fake_event *)to;
    int err = use_event(FAKE_ELAPSED, a);
    if (!err && (!b->o.live || a->o.dev != b->o.dev)) err = misuse();
    if (!err && (!a->recorded || !b->recorded)) err = FAKE_BAD_HANDLE;
    if (!err && (captured_event(a) | captured_event(b))) err = FAKE_CAPTURED_EVENT;
    if (!err && (dev_now(a->o.dev) < a->done || dev_now(b->o.dev) < b->done)) err = FAKE_NOT_READY;
    if (!err) *ms = (float)((double)(b->done - a->done) / 1e6);
    pthread_mutex_unlock(&lock);
    return err;
}

/* ---- stream capture --------------------------------------------------------- */

int fake_begin_capture(void *stream, int mode) {
    pthread_mutex_lock(&lock);
    setup_once();
    fake_stream *s = stream_of(stream);
    int err = 0;
    if (!s->o.live) err = misuse();
    else if (is_legacy(s) || s->capture != FAKE_CAPTURE_NONE || mode < 0 || mode > FAKE_MODE_RELAXED) err = FAKE_BAD_VALUE;
    if (!err) {
        s->capture = FAKE_CAPTURE_ACTIVE;
        s->cmode = mode;
        s->cap_id = ++S.next_cap;
        s->cap_thread = &thread_token;
        s->graph = (fake_graph *)calloc(1, sizeof *s->graph);
        if (!s->graph) abort();
    }
    pthread_mutex_unlock(&lock);
    return err;
}

/* An invalidated capture ends with an error and no graph. */
int fake_end_capture(void *stream, void **graph) {
    pthread_mutex_lock(&lock);
    fake_stream *s = stream_of(stream);
    int err = 0;
    *graph = NULL;
    if (s->capture == FAKE_CAPTURE_NONE || (s->cmode != FAKE_MODE_RELAXED && s->cap_thread != &thread_token)) {
        err = FAKE_CAPTURE_UNMATCHED;
    } else if (s->capture == FAKE_CAPTURE_BROKEN) {
        free(s->graph->ns);
        free(s->graph);
        err = FAKE_CAPTURE_INVALIDATED;
    } else {
        *graph = s->graph;
    }
    if (err != FAKE_CAPTURE_UNMATCHED) {
        s->capture = FAKE_CAPTURE_NONE;
        s->graph = NULL;
    }
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_capture_status(void *stream, int *status, unsigned long long *id) {
    pthread_mutex_lock(&lock);
    int err = enter(FAKE_CAPTURE_STATUS);
    fake_stream *s = stream_of(stream);
    if (!err) err = !s->o.live ? misuse() : legacy_blocked(s, 0) ? FAKE_CAPTURE_IMPLICIT : 0;
    if (!err) {
        *status = s->capture;
        if (id) *id = s->capture ? s->cap_id : 0;
    }
    pthread_mutex_unlock(&lock);
    return err;
}

int fake_exchange_capture_mode(int *mode) {
    if (*mode < 0 || *mode > FAKE_MODE_RELAXED) return FAKE_BAD_VALUE;
    int prev = capture_mode;
    capture_mode = *mode;
    *mode = prev;
    return 0;
}

int fake_graph_destroy(void *graph) {
    fake_graph *g = (fake_graph *)graph;
    if (!g) return FAKE_BAD_VALUE;
    pthread_mutex_lock(&lock);
    free(g->ns);
    free(g);
    pthread_mutex_unlock(&lock);
    return 0;
}

/* ---- synchronisation: the host waits, a stream waits on an event ---------- */

/* Sleeps, outside the lock, until device dev's clock passes done. */
static void host_wait(int dev, int64_t done) {
    for (;;) {
        pthread_mutex_lock(&lock);
        int64_t left = (int64_t)((double)(done - dev_now(dev)) / S.rate[dev]);
        pthread_mutex_unlock(&lock);
        if (left <= 0) return;
        fake_gpu_sleep(left < 1000000 ? left : 1000000);
    }
}

int64_t fake_stream_sync(void *stream) {
    pthread_mutex_lock(&lock);
    setup_once();
    fake_stream *s = stream_of(stream);
    int dev = s->o.dev;
    int64_t done = s->busy;
    pthread_mutex_unlock(&lock);
    host_wait(dev, done);
    return done;
}

int64_t fake_device_sync(int device) {
    pthread_mutex_lock(&lock);
    setup_once();
    int64_t done = S.dflt[device].busy;
    for (fake_obj *o = S.streams; o; o = o->next) {
        const fake_stream *b = (const fake_stream *)o;
        if (o->live && o->dev == device && b->busy > done) done = b->busy;
    }
    pthread_mutex_unlock(&lock);
    host_wait(device, done);
    return done;
}

int fake_stream_wait_event(void *stream, void *ev) {
    pthread_mutex_lock(&lock);
    setup_once();
    fake_stream *s = stream_of(stream);
    fake_event *e = (fake_event *)ev;
    int err = !e->o.live || !s->o.live ? misuse() : 0;
    if (!err && e->recorded && !e->captured && e->done > s->busy) s->busy = e->done;
    pthread_mutex_unlock(&lock);
    return err;
}

int64_t fake_event_done(void *ev) {
    pthread_mutex_lock(&lock);
    int64_t done = ((fake_event *)ev)->done;
    pthread_mutex_unlock(&lock);
    return done;
}
