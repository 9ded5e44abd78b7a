/* fake_rocprofiler.h - the rocprofiler-sdk double (fake_rocprofiler.c): the
   part of the SDK's ABI it implements, spelled as the SDK's headers spell it
   (written from rocprofiler-sdk 0.5.0; no SDK header is installed here), and
   what a test program asks of it, reached through dlopen/dlsym of the same
   shared object that prof_hip.h loads (PROF_ROCPROFILER_SDK). prof_hip.h
   declares the same ABI on its own: the two are written apart, so a layout
   one of them gets wrong shows as a failing test, not a shared mistake. */
#ifndef FAKE_ROCPROFILER_H
#define FAKE_ROCPROFILER_H
#include <stddef.h>
#include <stdint.h>

/* ---- the SDK's types (fwd.h, registration.h, buffer_tracing.h,
   callback_tracing.h, agent.h) ------------------------------------------- */
typedef int rocprofiler_status_t;
enum {
    ROCPROFILER_STATUS_SUCCESS = 0, ROCPROFILER_STATUS_ERROR = 1, ROCPROFILER_STATUS_ERROR_CONTEXT_NOT_FOUND = 2,
    ROCPROFILER_STATUS_ERROR_BUFFER_NOT_FOUND = 3, ROCPROFILER_STATUS_ERROR_KIND_NOT_FOUND = 4,
    ROCPROFILER_STATUS_ERROR_OPERATION_NOT_FOUND = 5, ROCPROFILER_STATUS_ERROR_CONFIGURATION_LOCKED = 15,
    ROCPROFILER_STATUS_ERROR_FINALIZED = 20,
};
typedef struct { uint64_t handle; } rocprofiler_context_id_t;
typedef struct { uint64_t handle; } rocprofiler_buffer_id_t;
typedef struct { uint64_t handle; } rocprofiler_agent_id_t;
typedef struct { uint64_t handle; } rocprofiler_queue_id_t;
typedef union { uint64_t value; void *ptr; } rocprofiler_user_data_t;
typedef struct { uint64_t internal; rocprofiler_user_data_t external; } rocprofiler_correlation_id_t;
typedef struct { uint32_t x, y, z; } rocprofiler_dim3_t;
typedef struct rocprofiler_client_id_t { const char *name; const uint32_t handle; } rocprofiler_client_id_t;
typedef void (*rocprofiler_client_finalize_t)(rocprofiler_client_id_t);
typedef struct {
    size_t size;
    int (*initialize)(rocprofiler_client_finalize_t finalize_func, void *tool_data);
    void (*finalize)(void *tool_data);
    void *tool_data;
} rocprofiler_tool_configure_result_t;
typedef rocprofiler_tool_configure_result_t *(*rocprofiler_configure_func_t)(
    uint32_t version, const char *runtime_version, uint32_t priority, rocprofiler_client_id_t *client_id);

enum { ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API = 5, ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT = 10 };
enum { ROCPROFILER_BUFFER_TRACING_MEMORY_COPY = 10, ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH = 11,
       ROCPROFILER_BUFFER_TRACING_LAST = 17 };
enum { ROCPROFILER_BUFFER_CATEGORY_TRACING = 1 };
enum { ROCPROFILER_CALLBACK_PHASE_ENTER = 1, ROCPROFILER_CALLBACK_PHASE_EXIT = 2 };
enum { ROCPROFILER_CODE_OBJECT_LOAD = 1, ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER = 2 };
enum { ROCPROFILER_MEMORY_COPY_HOST_TO_DEVICE = 2, ROCPROFILER_MEMORY_COPY_DEVICE_TO_HOST = 3 };
enum { ROCPROFILER_BUFFER_POLICY_DISCARD = 1, ROCPROFILER_BUFFER_POLICY_LOSSLESS = 2 };
enum { ROCPROFILER_AGENT_INFO_VERSION_0 = 1 };
enum { ROCPROFILER_AGENT_TYPE_CPU = 1, ROCPROFILER_AGENT_TYPE_GPU = 2 };

typedef struct {
    rocprofiler_context_id_t context_id;
    uint64_t thread_id;
    rocprofiler_correlation_id_t correlation_id;
    int32_t kind, operation, phase;
    void *payload;
} rocprofiler_callback_tracing_record_t;
typedef struct {
    union { struct { uint32_t category, kind; }; uint64_t hash; };
    void *payload;
} rocprofiler_record_header_t;
typedef struct {
    uint64_t size;                      /* up to reserved_padding */
    rocprofiler_agent_id_t agent_id;
    rocprofiler_queue_id_t queue_id;
    uint64_t kernel_id, dispatch_id;
    uint32_t private_segment_size, group_segment_size;
    rocprofiler_dim3_t workgroup_size, grid_size;
    uint8_t reserved_padding[56];
} rocprofiler_kernel_dispatch_info_t;
typedef struct {
    uint64_t size;
    int32_t kind, operation;
    rocprofiler_correlation_id_t correlation_id;
    uint64_t thread_id, start_timestamp, end_timestamp;
    rocprofiler_kernel_dispatch_info_t dispatch_info;
} rocprofiler_buffer_tracing_kernel_dispatch_record_t;
typedef struct {
    uint64_t size;
    int32_t kind, operation;
    rocprofiler_correlation_id_t correlation_id;
    uint64_t thread_id, start_timestamp, end_timestamp;
    rocprofiler_agent_id_t dst_agent_id, src_agent_id;
    uint64_t bytes;
} rocprofiler_buffer_tracing_memory_copy_record_t;
typedef struct {
    uint64_t size, kernel_id, code_object_id;
    const char *kernel_name;
    uint64_t kernel_object;
    uint32_t kernarg_segment_size, kernarg_segment_alignment, group_segment_size, private_segment_size;
} rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t;
/* rocprofiler_agent_v0_t: its head and, 288 bytes in, the HIP device index
   (logical_node_type_id); the fields between are left as bytes. */
typedef struct {
    uint64_t size;
    rocprofiler_agent_id_t id;
    int32_t type;
    uint8_t between[288 - 20];
    int32_t logical_node_type_id, reserved_padding0;
} rocprofiler_agent_v0_t;

typedef void (*rocprofiler_callback_tracing_cb_t)(rocprofiler_callback_tracing_record_t record,
                                                  rocprofiler_user_data_t *user_data, void *callback_data);
typedef void (*rocprofiler_buffer_tracing_cb_t)(rocprofiler_context_id_t context, rocprofiler_buffer_id_t buffer_id,
                                                rocprofiler_record_header_t **headers, size_t num_headers,
                                                void *data, uint64_t drop_count);
typedef int (*rocprofiler_callback_tracing_kind_operation_cb_t)(int32_t kind, int32_t operation, void *data);
typedef int (*rocprofiler_callback_tracing_operation_args_cb_t)(
    int32_t kind, int32_t operation, uint32_t arg_number, const void *const arg_value_addr,
    int32_t arg_indirection_count, const char *arg_type, const char *arg_name, const char *arg_value_str,
    int32_t arg_dereference_count, void *data);
typedef rocprofiler_status_t (*rocprofiler_query_available_agents_cb_t)(int version, const void **agents,
                                                                         size_t num_agents, void *user_data);

/* ---- what a test asks of the double ------------------------------------ */
/* The HIP runtime calls it knows, with operation ids of its own. */
enum { FAKE_ROC_hipGetDevice = 102, FAKE_ROC_hipLaunchKernel = 214, FAKE_ROC_hipMemcpy = 259,
       FAKE_ROC_hipMemcpyAsync = 268, FAKE_ROC_hipStreamSynchronize = 346 };

/* The devices (GPU agents 0..n-1 after one CPU agent). */
typedef void fake_roc_setup_fn(int gpus);
/* HIP starts (rocprofiler-register): the SDK configures the tools the
   process exports. */
typedef void fake_roc_discover_fn(void);
/* A code object loads: kernels first_id.. named names[i] (with ".kd", as the
   SDK names them), to the contexts active now. */
typedef void fake_roc_load_fn(const char *const *names, int n, uint64_t first_id);
/* A HIP runtime call begins on this thread (ENTER callbacks): its
   correlation id. stream and bytes are its arguments, as the SDK lists
   them; fake_roc_call_end makes the EXIT callbacks. */
typedef uint64_t fake_roc_call_fn(int32_t op, void *stream, uint64_t bytes);
typedef void fake_roc_call_end_fn(void);
/* What the call launched, with host times (CLOCK_MONOTONIC ns): its
   record reaches the buffer once the host clock passes its end plus the
   latency (fake_roc_latency), as the SDK has it once the GPU is done.
   grid is in work-items, as the SDK reports it. device -1: the host. */
typedef void fake_roc_dispatch_fn(uint64_t corr, int device, uint64_t kernel_id, int64_t start, int64_t end,
                                  const uint32_t grid[3], const uint32_t block[3], uint32_t lds);
typedef void fake_roc_copy_fn(uint64_t corr, int op, int src_device, int dst_device, uint64_t bytes, int64_t start,
                              int64_t end);
typedef void fake_roc_latency_fn(int64_t ns);
/* What it saw: configure calls made, SDK calls after finalize, contexts
   active now, records dropped (buffer full). */
typedef void fake_roc_counts_fn(int *configures, int *after_finalize, int *active, uint64_t *dropped);
/* The HIP calls and kernel dispatches active contexts took: what tracing
   cost the engine's launches. */
typedef void fake_roc_traced_fn(long *calls, long *dispatches);

#ifdef FAKE_ROCPROFILER_EXPORTS
fake_roc_setup_fn fake_roc_setup;
fake_roc_discover_fn fake_roc_discover;
fake_roc_load_fn fake_roc_load;
fake_roc_call_fn fake_roc_call;
fake_roc_call_end_fn fake_roc_call_end;
fake_roc_dispatch_fn fake_roc_dispatch;
fake_roc_copy_fn fake_roc_copy;
fake_roc_latency_fn fake_roc_latency;
fake_roc_counts_fn fake_roc_counts;
fake_roc_traced_fn fake_roc_traced;
#endif
#endif /* FAKE_ROCPROFILER_H */
