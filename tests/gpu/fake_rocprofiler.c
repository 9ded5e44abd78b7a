/* fake_rocprofiler.c - a test double of rocprofiler-sdk, built as a shared
   object named librocprofiler-sdk.so that prof_hip.h loads with dlopen
   (PROF_ROCPROFILER_SDK, or $ROCM_PATH/lib), as it would load ROCm's.

   It keeps the rules the SDK's headers and sources state, and fails loudly
   where a tool breaks them:
   - rocprofiler_force_configure calls every rocprofiler_configure the
     process exports and the one it is handed, once per distinct address
     (a second address is a second client); fake_roc_discover only those
     exported, as when ROCm's HIP starts the SDK; each tool's initialize runs
     then, and contexts, buffers and services can be made only inside it;
   - kernel symbols reach only the contexts active when a code object
     loads; at exit (its atexit handler, registered at configuration) the
     symbols' UNLOAD callbacks come, then each tool's finalize; after that
     every call answers ROCPROFILER_STATUS_ERROR_FINALIZED, and is counted;
   - HIP runtime calls reach the callbacks of active contexts that trace
     them, ENTER and EXIT with one user_data slot between them; their
     arguments (stream, sizeBytes) through
     rocprofiler_iterate_callback_tracing_kind_operation_args, during the
     callback only;
   - dispatch and copy records reach the buffer once their GPU work is done
     (their end on the host clock, plus a latency a test chooses), then the
     buffer's callback on the double's own thread whenever the watermark is
     passed, or on a flush, which waits for it; a flush from inside a buffer
     callback would deadlock the SDK: here it aborts. A full buffer drops
     (ROCPROFILER_BUFFER_POLICY_DISCARD) and counts for the next callback.
   Timestamps are CLOCK_BOOTTIME ns (sdk_ns). FAKE_ROC_TAKEN=1: another tool has
   configured the SDK already (rocprofv3). FAKE_ROC_VERSION: the version
   handed to rocprofiler_configure (default 500, 0.5.0). FAKE_ROC_HOLD=1:
   the buffer is delivered only at flushes. */
#define _GNU_SOURCE                     /* RTLD_DEFAULT, gettid */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FAKE_ROCPROFILER_EXPORTS
#include "fake_rocprofiler.h"

#define MAX_CTX 8
#define MAX_CLIENTS 4
#define MAX_PENDING 200000
#define MAX_SYMBOLS 256

typedef struct {
    int valid, active;
    rocprofiler_callback_tracing_cb_t code_cb, api_cb;
    void *code_data, *api_data;
    unsigned char api_ops[1024];        /* the HIP operations traced (all when api_all) */
    int api_all;
    int buffer_kind[ROCPROFILER_BUFFER_TRACING_LAST];  /* 1 + buffer index, 0: not traced */
} context_t;

typedef union {
    rocprofiler_buffer_tracing_kernel_dispatch_record_t k;
    rocprofiler_buffer_tracing_memory_copy_record_t c;
} record_t;

typedef struct {
    int used;
    uint64_t ctx;
    size_t size, watermark;
    rocprofiler_buffer_tracing_cb_t cb;
    void *data;
    record_t *rec;                      /* what it holds: size / sizeof(record_t) at most */
    int32_t *kind;
    size_t n, cap;
    uint64_t dropped;                   /* since its last callback */
} buffer_t;

typedef struct { record_t r; int32_t kind; int buffer; int64_t due; } pending_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static struct {
    int initialized, finalized, configuring, taken;
    int configures, after_finalize;
    int nclients;
    struct { rocprofiler_tool_configure_result_t *tool; rocprofiler_client_id_t *id; } client[MAX_CLIENTS];
    context_t ctx[MAX_CTX];
    int nctx;
    buffer_t buf[4];
    int nbuf;
    pending_t *pending;
    size_t npending;
    int64_t latency;
    int gpus;
    uint64_t total_dropped;
    long traced_calls, traced_dispatches;   /* HIP calls (ENTER) and dispatches active contexts took */
    struct { uint64_t id; char *name; } sym[MAX_SYMBOLS];
    int nsym;
    pthread_t thread;
    int thread_up, stop, flushing, delivering;
    int64_t boot_minus_mono;
} F;

static _Thread_local int in_buffer_cb;
/* the call being made on this thread: its arguments, for the args query */
static _Thread_local struct {
    int active;
    int32_t op;
    uint64_t corr;
    void *stream;
    uint64_t bytes;
    rocprofiler_user_data_t user[MAX_CTX];
} call;

static int64_t clock_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A host time (CLOCK_MONOTONIC) on the SDK's clock, CLOCK_BOOTTIME: the two
   differ by a constant (the time suspended), taken once at configuration,
   so that the simulated device's times (CLOCK_MONOTONIC) convert exactly. */
static uint64_t sdk_ns(int64_t mono) { return (uint64_t)(mono + F.boot_minus_mono); }

/* Counts a call made after finalize: nonzero, and it must fail. Under the lock. */
static int finalized_locked(void) {
    if (F.finalized) F.after_finalize++;
    return F.finalized;
}

static const char *op_name(int32_t op) {
    switch (op) {
    case FAKE_ROC_hipGetDevice: return "hipGetDevice";
    case FAKE_ROC_hipLaunchKernel: return "hipLaunchKernel";
    case FAKE_ROC_hipMemcpy: return "hipMemcpy";
    case FAKE_ROC_hipMemcpyAsync: return "hipMemcpyAsync";
    case FAKE_ROC_hipStreamSynchronize: return "hipStreamSynchronize";
    default: return NULL;
    }
}
static const int32_t ops[] = { FAKE_ROC_hipGetDevice, FAKE_ROC_hipLaunchKernel, FAKE_ROC_hipMemcpy,
                               FAKE_ROC_hipMemcpyAsync, FAKE_ROC_hipStreamSynchronize };

/* ---- delivery: the SDK's buffer thread ------------------------------------ */

/* Pending records whose time has come go into their buffers (full: dropped
   and counted). Under the lock. */
static void settle_locked(int64_t now) {
    size_t keep = 0;
    for (size_t i = 0; i < F.npending; i++) {
        pending_t *p = &F.pending[i];
        if (p->due > now) {
            F.pending[keep++] = *p;
            continue;
        }
        buffer_t *b = &F.buf[p->buffer];
        if (b->n == b->cap) {
            b->dropped++;
            F.total_dropped++;
        } else {
            b->rec[b->n] = p->r;
            b->kind[b->n++] = p->kind;
        }
    }
    F.npending = keep;
}

/* Hands buffer i's records to its callback, the lock let go meanwhile. */
static void deliver_locked(int i) {
    buffer_t *b = &F.buf[i];
    if (!b->n && !b->dropped) return;
    size_t n = b->n;
    uint64_t dropped = b->dropped;
    record_t *rec = malloc(n * sizeof *rec + 1);
    rocprofiler_record_header_t *h = malloc(n * sizeof *h + 1);
    rocprofiler_record_header_t **hp = malloc(n * sizeof *hp + 1);
    if (!rec || !h || !hp) abort();
    memcpy(rec, b->rec, n * sizeof *rec);
    for (size_t k = 0; k < n; k++) {
        h[k].category = ROCPROFILER_BUFFER_CATEGORY_TRACING;
        h[k].kind = (uint32_t)b->kind[k];
        h[k].payload = &rec[k];
        hp[k] = &h[k];
    }
    b->n = 0;
    b->dropped = 0;
    rocprofiler_context_id_t ctx = { b->ctx };
    rocprofiler_buffer_id_t id = { (uint64_t)i + 1 };
    F.delivering++;
    pthread_mutex_unlock(&lock);
    in_buffer_cb = 1;
    b->cb(ctx, id, hp, n, b->data, dropped);
    in_buffer_cb = 0;
    memset(rec, 0xdd, n * sizeof *rec);  /* the payloads die when the callback returns */
    free(rec);
    free(h);
    free(hp);
    pthread_mutex_lock(&lock);
    F.delivering--;
}

static void *buffer_thread(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!F.stop) {
        settle_locked(clock_ns(CLOCK_MONOTONIC));
        int hold = getenv("FAKE_ROC_HOLD") != NULL;
        for (int i = 0; i < F.nbuf; i++)
            if (F.flushing || (!hold && F.buf[i].n * sizeof(record_t) >= F.buf[i].watermark)) deliver_locked(i);
        if (F.flushing) {
            F.flushing = 0;
            pthread_cond_broadcast(&done);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;       /* a look every millisecond */
        if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&wake, &lock, &until);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* ---- exit: unload, finalize ------------------------------------------------ */

/* A kernel symbol's LOAD (ENTER) or UNLOAD (EXIT) callback, to the code
   object callbacks of the contexts in active[] that are active. */
static void symbol_callbacks(const context_t *active, uint64_t id, const char *name, int phase) {
    rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t d;
    memset(&d, 0, sizeof d);
    d.size = sizeof d;
    d.kernel_id = id;
    d.code_object_id = 1;
    d.kernel_name = name;
    for (int c = 0; c < MAX_CTX; c++) {
        if (!active[c].active || !active[c].code_cb) continue;
        rocprofiler_callback_tracing_record_t r;
        rocprofiler_user_data_t u = { 0 };
        memset(&r, 0, sizeof r);
        r.context_id.handle = (uint64_t)c + 1;
        r.thread_id = (uint64_t)syscall(SYS_gettid);
        r.kind = ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT;
        r.operation = ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER;
        r.phase = phase;
        r.payload = &d;
        active[c].code_cb(r, &u, active[c].code_data);
    }
}

static void at_exit(void) {
    pthread_mutex_lock(&lock);
    context_t active[MAX_CTX];
    memcpy(active, F.ctx, sizeof active);
    pthread_mutex_unlock(&lock);
    for (int s = 0; s < F.nsym; s++)    /* code objects unload before finalize */
        symbol_callbacks(active, F.sym[s].id, F.sym[s].name, ROCPROFILER_CALLBACK_PHASE_EXIT);
    pthread_mutex_lock(&lock);
    for (int c = 0; c < MAX_CTX; c++) F.ctx[c].active = 0;   /* contexts stop, buffers are flushed */
    F.flushing = 1;
    pthread_cond_broadcast(&wake);
    while (F.flushing && F.thread_up) pthread_cond_wait(&done, &lock);
    int n = F.nclients;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++)
        if (F.client[i].tool->finalize) F.client[i].tool->finalize(F.client[i].tool->tool_data);
    pthread_mutex_lock(&lock);
    F.finalized = 1;
    F.stop = 1;
    pthread_cond_broadcast(&wake);
    int up = F.thread_up;
    pthread_mutex_unlock(&lock);
    if (up) pthread_join(F.thread, NULL);
}

/* ---- registration --------------------------------------------------------- */

static void client_finalize(rocprofiler_client_id_t id) { (void)id; }

rocprofiler_status_t rocprofiler_is_initialized(int *status) {
    *status = F.initialized || getenv("FAKE_ROC_TAKEN") != NULL;
    return ROCPROFILER_STATUS_SUCCESS;
}

/* The SDK's initialisation: the tools the process exports, and the one
   forced (NULL: none, as when ROCm's HIP starts it). */
static rocprofiler_status_t configure_tools(rocprofiler_configure_func_t configure) {
    pthread_mutex_lock(&lock);
    if (F.initialized || getenv("FAKE_ROC_TAKEN")) {
        pthread_mutex_unlock(&lock);
        return ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    }
    F.initialized = 1;
    F.boot_minus_mono = clock_ns(CLOCK_BOOTTIME) - clock_ns(CLOCK_MONOTONIC);
    pthread_mutex_unlock(&lock);
    /* the tools: what the process exports, and the one handed over */
    rocprofiler_configure_func_t found[2] = { NULL, configure };
    void *sym = dlsym(RTLD_DEFAULT, "rocprofiler_configure");
    memcpy(&found[0], &sym, sizeof sym);
    const char *v = getenv("FAKE_ROC_VERSION");
    uint32_t version = v ? (uint32_t)atoi(v) : 500;
    for (int i = 0; i < 2; i++) {
        if (!found[i] || (i == 1 && found[1] == found[0])) continue;
        static rocprofiler_client_id_t ids[MAX_CLIENTS] = { { NULL, 1 }, { NULL, 2 }, { NULL, 3 }, { NULL, 4 } };
        rocprofiler_client_id_t *id = &ids[F.nclients];
        F.configures++;
        rocprofiler_tool_configure_result_t *tool = found[i](version, "6.3.0", (uint32_t)i, id);
        if (!tool) continue;
        if (tool->size < sizeof *tool) abort();
        pthread_mutex_lock(&lock);
        int first = F.nctx;
        F.configuring = 1;
        pthread_mutex_unlock(&lock);
        int rc = tool->initialize(client_finalize, tool->tool_data);
        pthread_mutex_lock(&lock);
        F.configuring = 0;
        if (rc) {                       /* a tool that fails loses its contexts */
            for (int c = first; c < F.nctx; c++) F.ctx[c].valid = F.ctx[c].active = 0;
        } else {
            F.client[F.nclients].tool = tool;
            F.client[F.nclients++].id = id;
        }
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    if (!F.thread_up && !pthread_create(&F.thread, NULL, buffer_thread, NULL)) F.thread_up = 1;
    pthread_mutex_unlock(&lock);
    atexit(at_exit);
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_force_configure(rocprofiler_configure_func_t configure) {
    return configure_tools(configure);
}

void fake_roc_discover(void) { configure_tools(NULL); }

rocprofiler_status_t rocprofiler_get_timestamp(uint64_t *ts) {
    *ts = sdk_ns(clock_ns(CLOCK_MONOTONIC));
    return ROCPROFILER_STATUS_SUCCESS;
}

const char *rocprofiler_get_status_string(rocprofiler_status_t st) {
    switch (st) {
    case ROCPROFILER_STATUS_SUCCESS: return "ROCPROFILER_STATUS_SUCCESS";
    case ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED: return "ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED";
    case ROCPROFILER_STATUS_ERROR_FINALIZED: return "ROCPROFILER_STATUS_ERROR_FINALIZED";
    default: return "ROCPROFILER_STATUS_ERROR";
    }
}

/* ---- contexts, services, buffers ------------------------------------------ */

/* The context of an id; NULL if none. Under the lock. */
static context_t *ctx_of(rocprofiler_context_id_t id) {
    return id.handle >= 1 && id.handle <= (uint64_t)F.nctx && F.ctx[id.handle - 1].valid ? &F.ctx[id.handle - 1] : NULL;
}

rocprofiler_status_t rocprofiler_create_context(rocprofiler_context_id_t *id) {
    pthread_mutex_lock(&lock);
    rocprofiler_status_t st = ROCPROFILER_STATUS_SUCCESS;
    if (finalized_locked()) st = ROCPROFILER_STATUS_ERROR_FINALIZED;
    else if (!F.configuring) st = ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (F.nctx == MAX_CTX) st = ROCPROFILER_STATUS_ERROR;
    else {
        F.ctx[F.nctx].valid = 1;
        id->handle = (uint64_t)++F.nctx;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

static rocprofiler_status_t set_active(rocprofiler_context_id_t id, int on) {
    pthread_mutex_lock(&lock);
    context_t *c = ctx_of(id);
    rocprofiler_status_t st = finalized_locked() ? ROCPROFILER_STATUS_ERROR_FINALIZED
                              : !c                ? ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND
                                                  : ROCPROFILER_STATUS_SUCCESS;
    if (!st) c->active = on;
    pthread_mutex_unlock(&lock);
    return st;
}
rocprofiler_status_t rocprofiler_start_context(rocprofiler_context_id_t id) { return set_active(id, 1); }
rocprofiler_status_t rocprofiler_stop_context(rocprofiler_context_id_t id) { return set_active(id, 0); }

rocprofiler_status_t rocprofiler_configure_callback_tracing_service(rocprofiler_context_id_t id, int32_t kind,
                                                                    const int32_t *operations, size_t count,
                                                                    rocprofiler_callback_tracing_cb_t cb, void *data) {
    pthread_mutex_lock(&lock);
    context_t *c = ctx_of(id);
    rocprofiler_status_t st = ROCPROFILER_STATUS_SUCCESS;
    if (!F.configuring) st = ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (!c) st = ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    else if (kind == ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT) {
        c->code_cb = cb;
        c->code_data = data;
    } else if (kind == ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API) {
        c->api_cb = cb;
        c->api_data = data;
        c->api_all = count == 0;
        for (size_t i = 0; i < count; i++) {
            if (operations[i] < 0 || operations[i] >= 1024 || !op_name(operations[i])) {
                st = ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND;
                break;
            }
            c->api_ops[operations[i]] = 1;
        }
    } else {
        st = ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

rocprofiler_status_t rocprofiler_create_buffer(rocprofiler_context_id_t id, size_t size, size_t watermark, int policy,
                                               rocprofiler_buffer_tracing_cb_t cb, void *data,
                                               rocprofiler_buffer_id_t *out) {
    pthread_mutex_lock(&lock);
    rocprofiler_status_t st = ROCPROFILER_STATUS_SUCCESS;
    if (!F.configuring) st = ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (!ctx_of(id)) st = ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    else if (F.nbuf == 4 || (policy != ROCPROFILER_BUFFER_POLICY_DISCARD && policy != ROCPROFILER_BUFFER_POLICY_LOSSLESS))
        st = ROCPROFILER_STATUS_ERROR;
    else {
        buffer_t *b = &F.buf[F.nbuf];
        b->used = 1;
        b->ctx = id.handle;
        b->size = size;
        b->watermark = watermark;
        b->cb = cb;
        b->data = data;
        b->cap = size / sizeof(record_t);
        b->rec = calloc(b->cap + 1, sizeof *b->rec);
        b->kind = calloc(b->cap + 1, sizeof *b->kind);
        if (!b->rec || !b->kind) abort();
        out->handle = (uint64_t)++F.nbuf;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

rocprofiler_status_t rocprofiler_configure_buffer_tracing_service(rocprofiler_context_id_t id, int32_t kind,
                                                                  const int32_t *operations, size_t count,
                                                                  rocprofiler_buffer_id_t buffer) {
    (void)operations;
    pthread_mutex_lock(&lock);
    context_t *c = ctx_of(id);
    rocprofiler_status_t st = ROCPROFILER_STATUS_SUCCESS;
    if (!F.configuring) st = ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED;
    else if (!c) st = ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND;
    else if (buffer.handle < 1 || buffer.handle > (uint64_t)F.nbuf || F.buf[buffer.handle - 1].ctx != id.handle)
        st = ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND;  /* a buffer gets only its own context's records */
    else if ((kind != ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH && kind != ROCPROFILER_BUFFER_TRACING_MEMORY_COPY) ||
             count)
        st = ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    else c->buffer_kind[kind] = (int)buffer.handle;
    pthread_mutex_unlock(&lock);
    return st;
}

rocprofiler_status_t rocprofiler_flush_buffer(rocprofiler_buffer_id_t buffer) {
    if (in_buffer_cb) {
        fprintf(stderr, "fake rocprofiler-sdk: rocprofiler_flush_buffer called from a buffer callback: the SDK "
                        "would deadlock\n");
        abort();
    }
    pthread_mutex_lock(&lock);
    rocprofiler_status_t st = ROCPROFILER_STATUS_SUCCESS;
    if (finalized_locked()) st = ROCPROFILER_STATUS_ERROR_FINALIZED;
    else if (buffer.handle < 1 || buffer.handle > (uint64_t)F.nbuf) st = ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND;
    else {                              /* on the buffer thread, waited for */
        F.flushing = 1;
        pthread_cond_broadcast(&wake);
        while (F.flushing && F.thread_up) pthread_cond_wait(&done, &lock);
    }
    pthread_mutex_unlock(&lock);
    return st;
}

/* ---- names, operations, arguments, agents ---------------------------------- */

rocprofiler_status_t rocprofiler_query_callback_tracing_kind_operation_name(int32_t kind, int32_t op,
                                                                            const char **name, uint64_t *len) {
    const char *n = kind == ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API ? op_name(op) : NULL;
    if (!n) return ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND;
    *name = n;
    if (len) *len = strlen(n);
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_iterate_callback_tracing_kind_operations(
    int32_t kind, rocprofiler_callback_tracing_kind_operation_cb_t cb, void *data) {
    if (kind != ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API) return ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (cb(kind, ops[i], data)) break;
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_iterate_callback_tracing_kind_operation_args(
    rocprofiler_callback_tracing_record_t record, rocprofiler_callback_tracing_operation_args_cb_t cb,
    int32_t max_deref, void *data) {
    (void)max_deref;
    if (!call.active || record.correlation_id.internal != call.corr) return ROCPROFILER_STATUS_ERROR;
    char s[32];
    snprintf(s, sizeof s, "%p", call.stream);
    int k = record.kind, op = record.operation;
    if (op == FAKE_ROC_hipMemcpy || op == FAKE_ROC_hipMemcpyAsync) {
        char b[32];
        snprintf(b, sizeof b, "%llu", (unsigned long long)call.bytes);
        if (cb(k, op, 2, &call.bytes, 0, "size_t", "sizeBytes", b, 0, data)) return ROCPROFILER_STATUS_SUCCESS;
    }
    if (op != FAKE_ROC_hipMemcpy) cb(k, op, 5, &call.stream, 1, "hipStream_t", "stream", s, 0, data);
    return ROCPROFILER_STATUS_SUCCESS;
}

rocprofiler_status_t rocprofiler_query_available_agents(int version, rocprofiler_query_available_agents_cb_t cb,
                                                        size_t agent_size, void *data) {
    static rocprofiler_agent_v0_t agents[1 + 8];
    const void *ptrs[1 + 8];
    if (version != ROCPROFILER_AGENT_INFO_VERSION_0) return ROCPROFILER_STATUS_ERROR;
    if (agent_size > sizeof(rocprofiler_agent_v0_t)) return 17;  /* ROCPROFILER_STATUS_ERROR_INCOMPATIBLE_ABI */
    int n = 1 + (F.gpus ? F.gpus : 1);
    for (int i = 0; i < n; i++) {
        memset(&agents[i], 0, sizeof agents[i]);
        agents[i].size = sizeof agents[i];
        agents[i].id.handle = 0x1000 + (uint64_t)i;     /* opaque handles */
        agents[i].type = i ? ROCPROFILER_AGENT_TYPE_GPU : ROCPROFILER_AGENT_TYPE_CPU;
        agents[i].logical_node_type_id = i ? i - 1 : 0;
        ptrs[i] = &agents[i];
    }
    return cb(version, ptrs, (size_t)n, data);
}

/* ---- the test's side ------------------------------------------------------- */

void fake_roc_setup(int gpus) { F.gpus = gpus; }

void fake_roc_latency(int64_t ns) { __atomic_store_n(&F.latency, ns, __ATOMIC_RELAXED); }

void fake_roc_load(const char *const *names, int n, uint64_t first_id) {
    pthread_mutex_lock(&lock);
    context_t active[MAX_CTX];
    memcpy(active, F.ctx, sizeof active);
    for (int i = 0; i < n && F.nsym < MAX_SYMBOLS; i++) {
        F.sym[F.nsym].id = first_id + (uint64_t)i;
        F.sym[F.nsym++].name = strdup(names[i]);
    }
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++) {
        char *copy = strdup(names[i]);  /* the name dies when the callback returns */
        symbol_callbacks(active, first_id + (uint64_t)i, copy, ROCPROFILER_CALLBACK_PHASE_ENTER);
        memset(copy, 'x', strlen(copy));
        free(copy);
    }
}

static uint64_t next_corr;

/* The API callbacks of active contexts tracing op, in phase. */
static void api_callbacks(int phase) {
    pthread_mutex_lock(&lock);
    context_t active[MAX_CTX];
    memcpy(active, F.ctx, sizeof active);
    pthread_mutex_unlock(&lock);
    for (int c = 0; c < MAX_CTX; c++) {
        if (!active[c].active || !active[c].api_cb || (!active[c].api_all && !active[c].api_ops[call.op])) continue;
        rocprofiler_callback_tracing_record_t r;
        memset(&r, 0, sizeof r);
        r.context_id.handle = (uint64_t)c + 1;
        r.thread_id = (uint64_t)syscall(SYS_gettid);
        r.correlation_id.internal = call.corr;
        r.kind = ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API;
        r.operation = call.op;
        r.phase = phase;
        r.payload = NULL;               /* the args' struct: read through the iterator here */
        if (phase == ROCPROFILER_CALLBACK_PHASE_ENTER) __atomic_add_fetch(&F.traced_calls, 1, __ATOMIC_RELAXED);
        active[c].api_cb(r, &call.user[c], active[c].api_data);
    }
}

uint64_t fake_roc_call(int32_t op, void *stream, uint64_t bytes) {
    memset(&call, 0, sizeof call);
    call.active = 1;
    call.op = op;
    call.corr = __atomic_add_fetch(&next_corr, 1, __ATOMIC_RELAXED);
    call.stream = stream;
    call.bytes = bytes;
    api_callbacks(ROCPROFILER_CALLBACK_PHASE_ENTER);
    return call.corr;
}

void fake_roc_call_end(void) {
    api_callbacks(ROCPROFILER_CALLBACK_PHASE_EXIT);
    call.active = 0;
}

/* A record into the pending list of every active context tracing kind. */
static void pend(const record_t *r, int32_t kind, int64_t end) {
    pthread_mutex_lock(&lock);
    if (!F.pending && !(F.pending = malloc(MAX_PENDING * sizeof *F.pending))) abort();
    for (int c = 0; c < F.nctx; c++) {
        if (!F.ctx[c].active || !F.ctx[c].buffer_kind[kind]) continue;
        if (F.npending == MAX_PENDING) {
            F.buf[F.ctx[c].buffer_kind[kind] - 1].dropped++;
            F.total_dropped++;
            continue;
        }
        F.traced_dispatches += kind == ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH;
        pending_t *p = &F.pending[F.npending++];
        p->r = *r;
        p->kind = kind;
        p->buffer = F.ctx[c].buffer_kind[kind] - 1;
        p->due = end + __atomic_load_n(&F.latency, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&lock);
}

static rocprofiler_agent_id_t agent(int device) {
    rocprofiler_agent_id_t a = { 0x1000 + (uint64_t)(device < 0 ? 0 : device + 1) };
    return a;
}

void fake_roc_dispatch(uint64_t corr, int device, uint64_t kernel_id, int64_t start, int64_t end,
                       const uint32_t grid[3], const uint32_t block[3], uint32_t lds) {
    record_t r;
    memset(&r, 0, sizeof r);
    rocprofiler_buffer_tracing_kernel_dispatch_record_t *k = &r.k;
    k->size = sizeof *k;
    k->kind = ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH;
    k->operation = 2;                   /* ROCPROFILER_KERNEL_DISPATCH_COMPLETE */
    k->correlation_id.internal = corr;
    k->thread_id = (uint64_t)syscall(SYS_gettid);
    k->start_timestamp = start ? sdk_ns(start) : 0;
    k->end_timestamp = end ? sdk_ns(end) : 0;
    /* as the SDK sets it: the offset of its padding, not its sizeof */
    k->dispatch_info.size = offsetof(rocprofiler_kernel_dispatch_info_t, reserved_padding);
    k->dispatch_info.agent_id = agent(device);
    k->dispatch_info.queue_id.handle = 0x5000;
    k->dispatch_info.kernel_id = kernel_id;
    k->dispatch_info.dispatch_id = corr;
    k->dispatch_info.group_segment_size = lds;
    k->dispatch_info.grid_size.x = grid[0], k->dispatch_info.grid_size.y = grid[1];
    k->dispatch_info.grid_size.z = grid[2];
    k->dispatch_info.workgroup_size.x = block[0], k->dispatch_info.workgroup_size.y = block[1];
    k->dispatch_info.workgroup_size.z = block[2];
    pend(&r, ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH, end);
}

void fake_roc_copy(uint64_t corr, int op, int src_device, int dst_device, uint64_t bytes, int64_t start, int64_t end) {
    record_t r;
    memset(&r, 0, sizeof r);
    rocprofiler_buffer_tracing_memory_copy_record_t *c = &r.c;
    c->size = sizeof *c;
    c->kind = ROCPROFILER_BUFFER_TRACING_MEMORY_COPY;
    c->operation = op;
    c->correlation_id.internal = corr;
    c->thread_id = (uint64_t)syscall(SYS_gettid);
    c->start_timestamp = sdk_ns(start);
    c->end_timestamp = sdk_ns(end);
    c->src_agent_id = agent(src_device);
    c->dst_agent_id = agent(dst_device);
    c->bytes = bytes;
    pend(&r, ROCPROFILER_BUFFER_TRACING_MEMORY_COPY, end);
}

void fake_roc_traced(long *calls, long *dispatches) {
    pthread_mutex_lock(&lock);
    *calls = F.traced_calls;
    *dispatches = F.traced_dispatches;
    pthread_mutex_unlock(&lock);
}

void fake_roc_counts(int *configures, int *after_finalize, int *active, uint64_t *dropped) {
    pthread_mutex_lock(&lock);
    *configures = F.configures;
    *after_finalize = F.after_finalize;
    *active = 0;
    for (int c = 0; c < F.nctx; c++) *active += F.ctx[c].active;
    *dropped = F.total_dropped;
    pthread_mutex_unlock(&lock);
}
