/* nvtx.c - what a captured NVTX range costs the thread that makes it,
   against a PROF_SCOPE region, in and outside a recording window.
   bench/nvtx.sh builds it, runs it under NVTX_INJECTION64_PATH at
   libprof_nvtx.so (prof_nvtx.c) and without, and counts instructions with
   callgrind.

     nvtx MODE N
       scope          PROF_SCOPE, recorded
       scope_off      PROF_SCOPE outside a window (step 0 of wait=1)
       range          nvtxDomainRangePushEx/Pop, a registered name: recorded
                      as a region with its domain argument
       range_off      the same outside a window
       payload        NCCL's all-reduce range: a registered name, a category
                      and a payload-extension schema (3 fields), recorded
       payload_off    the same outside a window
   Prints ns per region (best of 5 runs of N, after a warm-up). */
#define _GNU_SOURCE
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

typedef struct { uint64_t comm; size_t bytes; int op; } params;
static nvtxDomainHandle_t dom;
static nvtxEventAttributes_t plain, with_payload;
static params par = { 0xc0ffee, 1 << 20, 0 };
static nvtxPayloadData_t pd = { NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5, sizeof par, &par };

static void setup(void) {
    static const nvtxPayloadSchemaEntry_t e[] = {
        { 0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0, offsetof(params, comm), NULL, NULL },
        { 0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0, offsetof(params, bytes), NULL, NULL },
        { 0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Reduction operation", NULL, 0, offsetof(params, op), NULL, NULL },
    };
    dom = nvtxDomainCreateA("NCCL");
    nvtxDomainNameCategoryA(dom, 7, "Collective");
    nvtxPayloadSchemaAttr_t a;
    memset(&a, 0, sizeof a);
    a.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                  NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                  NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    a.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    a.entries = e;
    a.numEntries = 3;
    a.payloadStaticSize = sizeof par;
    a.schemaId = pd.schemaId;
    nvtxPayloadSchemaRegister(dom, &a);
    memset(&plain, 0, sizeof plain);
    plain.version = NVTX_VERSION;
    plain.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    plain.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    plain.message.registered = nvtxDomainRegisterStringA(dom, "ncclAllReduce");
    with_payload = plain;
    with_payload.category = 7;
    with_payload.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    with_payload.reserved0 = 1;
    with_payload.payload.ullValue = (uint64_t)(uintptr_t)&pd;
}

__attribute__((noinline)) static void loop_scope(long n) {
    for (long i = 0; i < n; i++) { PROF_SCOPE("region"); }
}
__attribute__((noinline)) static void loop_range(long n) {
    for (long i = 0; i < n; i++) {
        nvtxDomainRangePushEx(dom, &plain);
        nvtxDomainRangePop(dom);
    }
}
__attribute__((noinline)) static void loop_payload(long n) {
    for (long i = 0; i < n; i++) {
        nvtxDomainRangePushEx(dom, &with_payload);
        nvtxDomainRangePop(dom);
    }
}

/* the chunks handed back, as a saved cycle does: the steady state */
static void recycle(void) {
    pthread_mutex_lock(&prof__wk_lock);
    prof__collect(NULL, 0, (uint64_t)-1);
    pthread_mutex_unlock(&prof__wk_lock);
}

static double best_of(void (*fn)(long), long n) {
    double best = 1e300;
    fn(n);
    for (int r = 0; r < 5; r++) {
        recycle();
        double t0 = now_ns();
        fn(n);
        double t = now_ns() - t0;
        if (t < best) best = t;
    }
    return best / n;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s scope|scope_off|range|range_off|payload|payload_off N\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    int off = strstr(mode, "_off") != NULL;
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.quiet = 1;
    cfg.output = "bench_nvtx_trace.json";
    cfg.buffer_mb = 1024;
    if (off) { cfg.schedule.wait = 1; cfg.schedule.active = 1; }   /* step 0: outside */
    PROF_INIT(&cfg);
    setup();
    void (*fn)(long) = !strncmp(mode, "scope", 5) ? loop_scope : !strncmp(mode, "range", 5) ? loop_range : loop_payload;
    printf("%s %.2f ns per region\n", mode, best_of(fn, n));
    fflush(stdout);
    _exit(0);                           /* nothing written: the runs are many */
}
