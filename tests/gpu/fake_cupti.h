/* fake_cupti.h - what a test program asks of the CUPTI double (fake_cupti.c),
   which it reaches through dlopen/dlsym of the same shared object that
   prof_cuda.h loads (PROF_CUPTI_LIB). */
#ifndef FAKE_CUPTI_H
#define FAKE_CUPTI_H
#include <stddef.h>
#include <stdint.h>

#define FAKE_CUPTI_OFFSET_NS   ((int64_t)777 * 1000000000)  /* its clock, against CLOCK_MONOTONIC */
#define FAKE_CUPTI_STREAM_SHIFT 100u                        /* its stream ids, against the runtime's */

/* One activity record, in the toolkit's struct layout, into the buffers,
   if its kind is enabled now (CUPTI records only what it traces). */
typedef void fake_cupti_emit_fn(const void *record, size_t size);
/* The same for work launched while its kind was enabled, which ran on past
   a disable: CUPTI still hands its record over. */
typedef void fake_cupti_deliver_fn(const void *record, size_t size);
/* How many records of a kind (CUpti_ActivityKind) it took: the runtime
   calls (and kernels) CUPTI traced, which cost their launches. */
typedef long fake_cupti_taken_fn(int kind);
/* The simulated runtime's stream ids, for cuptiGetStreamIdEx. */
typedef void fake_cupti_bind_fn(int (*stream_info)(void *stream, int *dev, unsigned long long *id));
/* Its clock, as cuptiGetTimestamp reads it. */
typedef int64_t fake_cupti_now_fn(void);
/* How many activity kinds are enabled now. */
typedef int fake_cupti_enabled_fn(void);
/* The next count readings of its clock (cuptiGetTimestamp) take ns before
   they read it, as a first call does (lazy binding, page faults) or one
   preempted on a loaded machine. */
typedef void fake_cupti_slow_reads_fn(int64_t ns, long count);

/* How many records forced flushes handed back incomplete (work still
   running, or not started: timestamps 0). */
typedef long fake_cupti_incomplete_fn(void);
/* How many flushes (cuptiActivityFlushAll) the calling thread made: an
   engine's thread should make none while it steps. */
typedef long fake_cupti_flushes_here_fn(void);

/* CUDA graphs as the driver tells CUPTI of them: a new graph's id; a node
   made in graph on this thread (a launch into a capturing stream), and one
   cloned from node into graph (cudaGraphInstantiate), each calling the
   subscriber's GRAPHNODE_CREATED or _CLONED callback on this thread, if
   enabled; a node's id (cuptiGetGraphNodeId's); how many callbacks ran.
   Nodes are kept to the process's end. */
typedef uint32_t fake_cupti_graph_fn(void);
typedef void *fake_cupti_graph_node_fn(uint32_t graph);
typedef void *fake_cupti_graph_clone_fn(void *node, uint32_t graph);
typedef uint64_t fake_cupti_node_id_fn(const void *node);
typedef long fake_cupti_callbacks_fn(void);

#ifdef FAKE_CUPTI_EXPORTS
fake_cupti_graph_fn fake_cupti_graph;
fake_cupti_graph_node_fn fake_cupti_graph_node;
fake_cupti_graph_clone_fn fake_cupti_graph_clone;
fake_cupti_node_id_fn fake_cupti_node_id;
fake_cupti_callbacks_fn fake_cupti_callbacks;
fake_cupti_emit_fn fake_cupti_emit;
fake_cupti_deliver_fn fake_cupti_deliver;
fake_cupti_taken_fn fake_cupti_taken;
fake_cupti_bind_fn fake_cupti_bind;
fake_cupti_now_fn fake_cupti_now;
fake_cupti_enabled_fn fake_cupti_enabled;
fake_cupti_slow_reads_fn fake_cupti_slow_reads;
fake_cupti_incomplete_fn fake_cupti_incomplete;
fake_cupti_flushes_here_fn fake_cupti_flushes_here;
#endif
#endif /* FAKE_CUPTI_H */
