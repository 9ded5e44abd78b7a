/* fake_runtime_api.h - the runtime functions both doubles define, written
   once. fake_cuda.c and fake_hip.c include it after the runtime's header,
   having defined:

     RT(Name)            the runtime's spelling: cudaName or hipName
     rt_error, rt_event, rt_stream, rt_props   the runtime's types
     RT_PROPS_MORE(p)    fills the fields only that runtime's props have

   Each function hands its work to the simulation (fake_gpu.c) and turns
   the simulation's answer into the runtime's error code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_gpu.h"

#define RT_STR2(x) #x
#define RT_STR(x) RT_STR2(x)

/* The runtime's last error, per host thread: every call that fails sets
   it, over what was there; GetLastError returns it and resets it to
   success, PeekAtLastError returns it and leaves it. "Not ready" is not an
   error (driver_types.h: "not actually an error, but must be indicated
   differently than cudaSuccess"): it leaves the last error as it was, and
   so does every call that succeeds. */
static _Thread_local rt_error rt_last;

static rt_error rt_ret(rt_error e) {
    if (e != RT(Success) && e != RT(ErrorNotReady)) rt_last = e;
    return e;
}

static rt_error rt_err(int e) {
    switch (e) {
    case FAKE_OK: return RT(Success);
    case FAKE_NOT_READY: return RT(ErrorNotReady);
    case FAKE_BAD_HANDLE: return rt_ret(RT(ErrorInvalidResourceHandle));
    case FAKE_BAD_DEVICE: return rt_ret(RT(ErrorInvalidDevice));
    case FAKE_BAD_VALUE: return rt_ret(RT(ErrorInvalidValue));
    case FAKE_CAPTURE_UNSUPPORTED: return rt_ret(RT(ErrorStreamCaptureUnsupported));
    case FAKE_CAPTURED_EVENT: return rt_ret(RT(ErrorCapturedEvent));
    case FAKE_CAPTURE_INVALIDATED: return rt_ret(RT(ErrorStreamCaptureInvalidated));
    case FAKE_CAPTURE_IMPLICIT: return rt_ret(RT(ErrorStreamCaptureImplicit));
    case FAKE_CAPTURE_UNMATCHED: return rt_ret(RT(ErrorStreamCaptureUnmatched));
    default: return rt_ret((rt_error)e); /* a runtime code, from fake_gpu_fail */
    }
}

rt_error RT(GetLastError)(void) {
    rt_error e = rt_last;
    rt_last = RT(Success);
    return e;
}
rt_error RT(PeekAtLastError)(void) { return rt_last; }

/* The errors tests use, named as the runtime names them. */
#define RT_ERROR(e) { RT(e), RT_STR(RT(e)) }
static const struct { rt_error code; const char *name; } rt_errors[] = {
    RT_ERROR(Success), RT_ERROR(ErrorNotReady), RT_ERROR(ErrorInvalidResourceHandle),
    RT_ERROR(ErrorInvalidDevice), RT_ERROR(ErrorInvalidValue), RT_ERROR(ErrorNoDevice),
    RT_ERROR(ErrorInsufficientDriver), RT_ERROR(ErrorLaunchFailure), RT_ERROR(ErrorIllegalAddress),
    RT_ERROR(ErrorMemoryAllocation), RT_ERROR(ErrorStreamCaptureUnsupported), RT_ERROR(ErrorCapturedEvent),
    RT_ERROR(ErrorStreamCaptureInvalidated), RT_ERROR(ErrorStreamCaptureImplicit), RT_ERROR(ErrorStreamCaptureUnmatched),
};

const char *RT(GetErrorName)(rt_error e) {
    for (size_t i = 0; i < sizeof rt_errors / sizeof rt_errors[0]; i++)
        if (rt_errors[i].code == e) return rt_errors[i].name;
    return "unrecognized error code";
}

const char *RT(GetErrorString)(rt_error e) {
    return e == RT(Success) ? "no error" : "error reported by the test double";
}

rt_error RT(GetDeviceCount)(int *n) { return rt_err(fake_device_count(n)); }
rt_error RT(GetDevice)(int *dev) { return rt_err(fake_get_device(dev)); }
rt_error RT(SetDevice)(int dev) { return rt_err(fake_set_device(dev)); }

/* Device d: "Fake GPU d", 16 + 8d GiB, compute capability 9.d, 132 - 4d
   multiprocessors (tests/gpu/check_gpu.py expects these). */
rt_error RT(GetDeviceProperties)(rt_props *p, int d) {
    int err = fake_device_check(d);
    if (err) return rt_err(err);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Fake GPU %d", d);
    p->totalGlobalMem = (size_t)(16 + 8 * d) << 30;
    p->major = 9;
    p->minor = d;
    p->multiProcessorCount = 132 - 4 * d;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsPerMultiProcessor = 2048;
    p->regsPerBlock = 65536;
    p->sharedMemPerBlock = 48 << 10;
    RT_PROPS_MORE(p);
    return RT(Success);
}

/* Device d's PCI bus id, as the runtimes write it: domain 0, bus
   FAKE_GPU_PCI_BUS(d) (tests/gpu/fake_nvml.c lists them in another order). */
rt_error RT(DeviceGetPCIBusId)(char *bus, int len, int d) {
    int err = fake_device_check(d);
    if (err) return rt_err(err);
    if (!bus || len < 13) return rt_ret(RT(ErrorInvalidValue));
    snprintf(bus, (size_t)len, "0000:%02X:00.0", FAKE_GPU_PCI_BUS(d));
    return RT(Success);
}

rt_error RT(StreamCreateWithFlags)(rt_stream *s, unsigned int flags) {
    return rt_err(fake_stream_create((void **)s, (flags & RT(StreamNonBlocking)) != 0));
}
rt_error RT(StreamDestroy)(rt_stream s) { return rt_err(fake_stream_destroy(s)); }
rt_error RT(EventCreate)(rt_event *ev) { return rt_err(fake_event_create((void **)ev)); }
rt_error RT(EventDestroy)(rt_event ev) { return rt_err(fake_event_destroy(ev)); }
rt_error RT(EventRecord)(rt_event ev, rt_stream s) { return rt_err(fake_event_record(ev, s)); }
rt_error RT(EventQuery)(rt_event ev) { return rt_err(fake_event_query(ev)); }
rt_error RT(EventSynchronize)(rt_event ev) { return rt_err(fake_event_sync(ev)); }
rt_error RT(EventElapsedTime)(float *ms, rt_event from, rt_event to) {
    return rt_err(fake_elapsed(ms, from, to));
}

/* Host memory stands in for device memory (prof_cudaMalloc, prof_hipMalloc). */
rt_error RT(Malloc)(void **p, size_t bytes) {
    *p = malloc(bytes ? bytes : 1);
    return *p ? RT(Success) : rt_ret(RT(ErrorMemoryAllocation));
}
rt_error RT(Free)(void *p) {
    free(p);
    return RT(Success);
}

/* Stream capture (the simulation keeps the graph: fake_gpu_graph_*). */
rt_error RT(StreamBeginCapture)(rt_stream s, enum RT(StreamCaptureMode) mode) {
    return rt_err(fake_begin_capture(s, (int)mode));
}
rt_error RT(StreamEndCapture)(rt_stream s, RT(Graph_t) *graph) {
    return rt_err(fake_end_capture(s, (void **)graph));
}
rt_error RT(StreamIsCapturing)(rt_stream s, enum RT(StreamCaptureStatus) *status) {
    int st = 0;
    rt_error e = rt_err(fake_capture_status(s, &st, NULL));
    if (e == RT(Success))
        *status = st == FAKE_CAPTURE_ACTIVE ? RT(StreamCaptureStatusActive)
                : st == FAKE_CAPTURE_BROKEN ? RT(StreamCaptureStatusInvalidated) : RT(StreamCaptureStatusNone);
    return e;
}
rt_error RT(ThreadExchangeStreamCaptureMode)(enum RT(StreamCaptureMode) *mode) {
    int m = (int)*mode;
    rt_error e = rt_err(fake_exchange_capture_mode(&m));
    if (e == RT(Success)) *mode = (enum RT(StreamCaptureMode))m;
    return e;
}
rt_error RT(GraphDestroy)(RT(Graph_t) graph) { return rt_err(fake_graph_destroy(graph)); }
