/* fake_nccl: a library that speaks NVTX as NCCL does, for nvtx_capture:
   built with -fvisibility=hidden (its NVTX copy is its own), a domain
   "NCCL", its function names as registered strings, a named category,
   payload schemas registered as NCCL registers them (static schema ids,
   the reduction op an enum schema), pushed with the payload extension's
   NVTX_PAYLOAD_TYPE_EXT; an int64 payload, the default domain's ranges
   and marks, a start/end range, a thread named by NVTX; and the misuses a
   library may commit (a pop with nothing open, an end of no range, a
   payload of a schema never registered). */
#define _GNU_SOURCE                     /* syscall */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define SID_COMM_INIT (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 0)
#define SID_ALL_REDUCE (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5)
#define SID_REDOP (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 24)
#define SID_NEVER (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 99)

typedef enum { redSum = 0, redProd = 1, redMax = 2, redMin = 3, redAvg = 4 } redop;
typedef struct { uint64_t comm; int nranks, rank, dev; } comm_init_params;
typedef struct { uint64_t comm; size_t bytes; redop op; } all_reduce_params;

static nvtxDomainHandle_t dom;
static nvtxStringHandle_t s_init, s_all_reduce, s_group;

static const nvtxPayloadSchemaEntry_t comm_init_entries[] = {
    { 0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0, offsetof(comm_init_params, comm), NULL, NULL },
    { 0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "No. of ranks", NULL, 0, offsetof(comm_init_params, nranks), NULL, NULL },
    { 0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Rank", NULL, 0, offsetof(comm_init_params, rank), NULL, NULL },
    { 0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "CUDA device", NULL, 0, offsetof(comm_init_params, dev), NULL, NULL },
};
static const nvtxPayloadSchemaEntry_t all_reduce_entries[] = {
    { 0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0, offsetof(all_reduce_params, comm), NULL, NULL },
    { 0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0, offsetof(all_reduce_params, bytes), NULL, NULL },
    { 0, SID_REDOP, "Reduction operation", NULL, 0, offsetof(all_reduce_params, op), NULL, NULL },
};
static const nvtxPayloadEnum_t redop_names[] = {
    { "Sum", redSum, 0 }, { "Product", redProd, 0 }, { "Max", redMax, 0 }, { "Min", redMin, 0 }, { "Avg", redAvg, 0 },
};

static void schema(const nvtxPayloadSchemaEntry_t *e, size_t n, uint64_t id, size_t size) {
    nvtxPayloadSchemaAttr_t a;
    memset(&a, 0, sizeof a);
    a.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                  NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                  NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    a.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    a.entries = e;
    a.numEntries = n;
    a.payloadStaticSize = size;
    a.schemaId = id;
    nvtxPayloadSchemaRegister(dom, &a);
}

API void fake_nccl_setup(void) {
    dom = nvtxDomainCreateA("NCCL");
    s_init = nvtxDomainRegisterStringA(dom, "ncclCommInitRank");
    s_all_reduce = nvtxDomainRegisterStringA(dom, "ncclAllReduce");
    s_group = nvtxDomainRegisterStringA(dom, "ncclGroupEnd");
    nvtxDomainNameCategoryA(dom, 7, "Collective");
    nvtxPayloadEnumAttr_t e;
    memset(&e, 0, sizeof e);
    e.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                  NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
    e.entries = redop_names;
    e.numEntries = sizeof redop_names / sizeof redop_names[0];
    e.sizeOfEnum = sizeof(redop);
    e.schemaId = SID_REDOP;
    nvtxPayloadEnumRegister(dom, &e);
    schema(comm_init_entries, 4, SID_COMM_INIT, sizeof(comm_init_params));
    schema(all_reduce_entries, 3, SID_ALL_REDUCE, sizeof(all_reduce_params));
}

/* A range as NCCL's NVTX3_FUNC_WITH_PARAMS pushes it. */
static void push_ext(nvtxStringHandle_t name, uint32_t category, const nvtxPayloadData_t *pd) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = category;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = name;
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.reserved0 = 1;
    a.payload.ullValue = (uint64_t)(uintptr_t)pd;
    nvtxDomainRangePushEx(dom, &a);
}

API void fake_nccl_comm_init(int nranks, int rank) {
    comm_init_params p = { 0xc0ffee, nranks, rank, 0 };
    nvtxPayloadData_t pd = { SID_COMM_INIT, sizeof p, &p };
    push_ext(s_init, 0, &pd);
    nvtxDomainRangePop(dom);
}

API void fake_nccl_all_reduce(size_t bytes, int max) {
    all_reduce_params p = { 0xc0ffee, bytes, max ? redMax : redSum };
    nvtxPayloadData_t pd = { SID_ALL_REDUCE, sizeof p, &p };
    push_ext(s_all_reduce, 7, &pd);
    nvtxDomainMarkEx(dom, &(nvtxEventAttributes_t){ .version = NVTX_VERSION, .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
                                                     .messageType = NVTX_MESSAGE_TYPE_ASCII,
                                                     .message.ascii = "nccl_mark" });
    nvtxDomainRangePop(dom);
}

/* an int64 payload */
API void fake_nccl_group_end(int64_t n) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s_group;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = n;
    nvtxDomainRangePushEx(dom, &a);
    nvtxDomainRangePop(dom);
}

/* the default domain: a range around a mark */
API void fake_default(void) {
    nvtxRangePushA("default_range");
    nvtxMarkA("default_mark");
    nvtxRangePop();
}

API uint64_t fake_start(void) { return nvtxRangeStartA("async_range"); }
API void fake_end(uint64_t id) { nvtxRangeEnd(id); }

API void fake_name_thread(const char *name) { nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), name); }

/* a range named in wide text, in a category of the default domain named in
   wide text, with a double payload */
API void fake_wide(void) {
    nvtxNameCategoryW(3, L"cat\u00e9gorie");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = 3;
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = L"wide_\u03b1\u03b2";
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    a.payload.dValue = 0.25;
    nvtxRangePushEx(&a);
    nvtxRangePop();
}

/* a range never ended: counted at exit */
API void fake_leave_open(void) { nvtxRangePushA("left_open"); }

/* what a careless library does: each is counted, none recorded */
API void fake_misuse(void) {
    nvtxDomainRangePop(dom);            /* nothing open */
    nvtxRangeEnd(0x7777000000000001ull);/* no such range */
    uint64_t junk = 42;
    nvtxPayloadData_t pd = { SID_NEVER, sizeof junk, &junk };
    push_ext(s_group, 0, &pd);          /* a schema never registered: the range, without it */
    nvtxDomainRangePop(dom);
}
