/* prof.h - v0.2.0 - a header-only profiler for C and C++ training engines.
   MIT licence (see the end of this file).

   Regions, steps, counters and instants recorded into per-thread buffers and
   written as Chrome Trace Event JSON in the shape PyTorch's profiler (Kineto)
   writes, so Perfetto UI, chrome://tracing and the PyTorch tooling open it.

   MAP (search for the tag; the implementation runs in data-flow order)
     >>api        public API and config: prof_config, prof_stats, functions
     >>api-memory   memory events, totals and leaks
     >>api-cycle    a saved cycle: events, the summary table, folded stacks
     >>api-model    a cycle made from outside: a saved trace read back
     >>api-gpu      the GPU core's interface: prof_gpu_api, kernel records
     >>hot        the hot path: PROF_SCOPE's inline record, NVTX/roctx
                  ranges, the macros
     >>bind       the runtime calls CUDA and HIP spell alike, which
                  prof_cuda.h / prof_hip.h bind: PROF__GPU_RUNTIME,
                  prof_<rt>Malloc / Free
     >>disabled   without PROF_ENABLE: every macro is nothing
     >>impl       implementation: kinds of record, global state, messages
     >>clock        TSC / CLOCK_MONOTONIC, calibration to ns
     >>buffers      per-thread chunks, registration, the memory cap, the
                    chunk reserve
     >>events       PROF_INSTANT, PROF_COUNTER, args, interned names,
                    thread names, PROF_BEGIN/END's stack
     >>memory       PROF_ALLOC/FREE: live allocations, per-device totals
     >>schedule     torch.profiler.schedule's actions; PROF_TRIGGER
     >>collect      a cycle's records from every thread, without stopping them
     >>gpu          GPU core: event pairs, resolution at steps, clock
                    alignment; kernel capture's records
     >>energy       PROF_ENERGY: joules per step and watts per GPU, from
                    the binding's energy source, read on the profiler's thread
     >>analysis     the one pass every sink reads (parents, tracks, labels,
                    correlations) and the walk that drives every sink
     >>model        cycles made from outside (the prof tool's readers)
     >>wbuf         the writers' buffer size (>>gzip's blocks use it)
     >>gzip         .json.gz: deflate of our own, or zlib (PROF_ZLIB)
     >>write        what the sinks share: formats by extension, the
                    buffer, files written whole, numbers, escaped names
     >>json         sink: Kineto-shaped Chrome trace JSON
     >>perfetto     sink: Perfetto's native protobuf format (.pftrace)
     >>table        the cycle API: events, GPU regions of a saved cycle
     >>memreport    sink: memory per region, peaks, leaks' regions
     >>rows         sink: key_averages() table's rows, percentiles, printing
     >>stacks       sink: folded stacks
     >>output       paths, TensorBoard's layout, saving a cycle, streaming
     >>open         what each thread is inside now (watchdog, crashes)
     >>process      fork, signals, other copies of prof.h, unloading
     >>env          environment variables, config, ranks, init
     >>worker       the hand-off: the jobs a step leaves to the profiler's thread
     >>counters     PROF_COUNTERS: every thread's CPU counters per step
                    (perf_event_open), read on the profiler's thread
     >>sample       PROF_SAMPLE: every thread's CPU samples (perf_event_open),
                    drained on the profiler's thread
     >>flight       the flight recorder: a ring of steps, dumps
     >>watch        the watchdog: a hang's report and dump
     >>steps        PROF_STEP and shutdown: what drives the rest
     >>internals    what a unit with PROF_INTERNALS calls in the implementation
                    (the suite's tests, the prof tool: not API)

   USE
     In exactly one C or C++ file:
         #define PROF_IMPLEMENTATION
         #include "prof.h"
     Everywhere else just #include "prof.h". Build with -DPROF_ENABLE to compile
     the instrumentation in; without it every macro below is empty and the
     annotated code compiles to the same bytes as code that never mentioned it.
     The types and functions (prof_config, prof_get_stats, the cycle API ...)
     exist in every build; disabled, the functions are inline no-ops, so code
     that configures the profiler or reads its results needs no #if.

         int main(void) {
             PROF_INIT(NULL);                 // optional: first macro inits lazily
             for (int step = 0; step < 100; step++) {
                 PROF_SCOPE("train_step");
                 { PROF_SCOPE("forward");  forward(); }
                 { PROF_SCOPE("backward"); backward(); }
                 PROF_COUNTER("loss", loss);
             }
             PROF_SHUTDOWN();                 // optional: also runs at exit()
         }

   MACROS
     PROF_INIT(cfg)            start; cfg is const prof_config * or NULL
     PROF_SHUTDOWN()           write what is recorded, release everything
     PROF_SCOPE(name)          region until the end of the enclosing block
     PROF_FUNCTION()           PROF_SCOPE named after the enclosing function
     PROF_SCOPE_DYN(str)       PROF_SCOPE with a name made at run time
     PROF_BEGIN(name)          explicit region, closed by PROF_END() on the
     PROF_END()                  same thread (last in, first out)
     PROF_INSTANT(name)        a point event
     PROF_COUNTER(name, v)     a sample of a numeric track
     PROF_THREAD_NAME(name)    names the calling thread in the trace
     PROF_STEP()               the current step ends, the next begins
     PROF_ARG_INT(key, v)      attach data to the innermost open region
     PROF_ARG_STR(key, s)        of this thread ("Input Dims", sizes ...)
     PROF_FLOPS(n)               (FLOPs and bytes moved: the table's achieved
     PROF_BYTES(n)                TFLOP/s and GB/s, and % of the peak)
     PROF_ALLOC(ptr, bytes)    host memory: ptr was just allocated, or is
     PROF_FREE(ptr)              about to be freed (its size is looked up);
                                 a table column, a curve, leaks at shutdown
     PROF_SET_RANK(r, n)       distributed identity (else from the launcher)
     PROF_SYNC()               a cross-rank sync point: call after a barrier

   GPU regions: include prof_cuda.h or prof_hip.h instead (they include this
   file) for PROF_GPU_SCOPE(name, stream), PROF_GPU_BEGIN(name, stream) /
   PROF_GPU_END(stream), PROF_GPU_ALLOC(ptr, bytes) and PROF_GPU_FREE(ptr).
   The file with PROF_IMPLEMENTATION includes the binding too; or it includes
   prof.h alone (a C file the C compiler builds) and one file that includes
   the binding defines PROF_GPU_IMPLEMENTATION (its part: capture's lazy
   start, HIP's rocprofiler-sdk tracer).

   Names are stored as pointers: pass string literals or strings that outlive
   the trace; PROF_SCOPE_DYN(str) and prof_intern(s, n) copy a name made at
   run time once, and return the same pointer for the same text. Close regions before PROF_STEP(): a region that spans a step
   boundary overlaps the ProfilerStep#N event only partially.

   ENVIRONMENT (read at init, overrides the config; every option, with its
   prof_config field and default: docs/options.md, from PROF__OPTIONS)
     PROF_FORMAT     a trace format by its name (PROF__FORMATS), whatever the
                     extension (default: the extension decides)
     PROF_OUTPUT     trace path; {pid}, {rank}, {cycle} are replaced (default
                     prof_trace_{pid} and the format's extension)
     PROF_BUFFER_MB  cap on recorder memory; beyond it events are dropped,
                     counted, reported and stored in the trace (default 64)
     PROF_DISABLE    1: record nothing at run time
     PROF_SCHEDULE   skip_first=N,wait=N,warmup=N,active=N,repeat=N
                     (torch.profiler.schedule); one trace per cycle
     PROF_TABLE      print the summary table per cycle, e.g.
                     sort=self_cpu,rows=10
     PROF_TB_DIR     also write each cycle for TensorBoard's profiler plugin,
                     in this directory
     PROF_STACKS     also write folded stacks to this path (flamegraph.pl,
                     speedscope)
     PROF_RANKS      ranks that record, e.g. 0 or 0,2-3
     PROF_CLOCK      monotonic: CLOCK_MONOTONIC instead of the TSC (at the
                     first init)
     PROF_LOG        messages and tables go to this file, not stderr (the
                     profiler never writes to stdout)
     PROF_SIGNALS    0: leave SIGINT/SIGTERM and crash signals alone (default:
                     on SIGINT/SIGTERM the trace is written, then the signal's
                     default action; a crash says what each thread is inside
                     and what is lost, then the previous handler runs)
     PROF_MERGE_THREADS  0: a track per OS thread (default: alike-named
                     threads that never overlap share one)
     PROF_TRIGGER    signal or file:<path>: record nothing until SIGUSR2
                     arrives or the file appears or changes (looked for at
                     steps, once a second at most; never removed: ranks may
                     share it); then PROF_TRIGGER_STEPS steps from the next
                     step, or from the step the file names (step=1200), a
                     trace per trigger
     PROF_TRIGGER_STEPS  steps a trigger records (default 5)
     PROF_PEAK_TFLOPS  the device's peak TFLOP/s, for the table's % peak
                     (default: a known GPU's)
     PROF_PEAK_GBPS  the device's peak GB/s, likewise
     PROF_FLIGHT     N: the flight recorder: every step recorded, the last N
                     kept, written only when a step takes PROF_FLIGHT_SLOW
                     times the median, or a trigger asks (at most once per
                     PROF_FLIGHT_COOLDOWN seconds)
     PROF_FLIGHT_SLOW  a slow step, for the flight recorder: this many times
                     the median of the steps before it (0: never) (default 3)
     PROF_FLIGHT_COOLDOWN  seconds between two flight recorder dumps (0: no
                     limit) (default 300)
     PROF_WATCHDOG   no PROF_STEP for this many seconds: say on stderr what
                     every thread is inside and which GPU regions have not
                     completed; with PROF_FLIGHT, dump the ring too
     PROF_CUPTI      the CUDA spelling of PROF_KERNELS (which decides when
                     both are set)
     PROF_KERNELS    1: every kernel, copy and fill, and the runtime calls
                     that launched them: CUPTI (prof_cuda.h), rocprofiler-sdk
                     (prof_hip.h; ROCm 6.2 or later)
     PROF_ENERGY     1: each recorded step's joules per GPU ("GPU 0 energy
                     (J)"), a power track per GPU and the table's J/step, from
                     the energy counter of the GPU binding (prof_cuda.h,
                     prof_hip.h), read on the profiler's thread
     PROF_GPU_METRICS  1: device tracks while recording (SM and memory clocks,
                     utilisation, memory used, throttle reasons, PCIe), read
                     with PROF_ENERGY's counter, which it turns on
     PROF_SAMPLE     HZ: while a window records, every thread's native call
                     stack sampled HZ times per second of its CPU time
                     (perf_event_open; build with -fno-omit-frame-pointer for
                     whole stacks)
     PROF_COUNTERS   the counters of task-clock, context-switches,
                     page-faults, cycles, instructions to count per thread and
                     recorded step (perf_event_open, read by the profiler's
                     thread): counter tracks, and the table's on-CPU time,
                     waiting and IPC per thread
     PROF_CUPTI_LIB  the libcupti.so to load (prof_cuda.h)
     PROF_NVML_LIB   the NVML to load for PROF_ENERGY
     PROF_ROCPROFILER_SDK  the librocprofiler-sdk.so to load (prof_hip.h)
     PROF_AMDSMI_LIB  the AMD SMI to load for PROF_ENERGY (prof_hip.h)

   LINKAGE  Every function is declared PROF_API (default: nothing, extern).
   A shared library that embeds its own copy (a plugin with its own
   PROF_IMPLEMENTATION) keeps it private with -DPROF_PRIVATE, or
   PROF_API=__attribute__((visibility("hidden"))). A second copy in one
   process is told so at init and writes its own files ("-2" before the
   extension). Translation units must agree on PROF_NO_TSC: a mismatch is a
   link error (prof__emit_slow_tsc against prof__emit_slow_mono), not a
   trace of garbage. -DPROF_ZLIB (with -lz, in the implementation's unit)
   gzips .json.gz traces with zlib instead of prof.h's own deflate.
   PROF_INTERNALS is prof.h's own (its tests, the prof tool, >>internals):
   not API, and no engine's business.

   PLATFORMS  Linux with GCC or Clang, C99/C11 and C++11/17 (strict or gnu
   dialects). Timestamps: invariant TSC on x86-64, the generic timer on
   AArch64, CLOCK_MONOTONIC elsewhere or with -DPROF_NO_TSC.
*/
#ifndef PROF_H
#define PROF_H

#define PROF_VERSION_MAJOR 0
#define PROF_VERSION_MINOR 2
#define PROF_VERSION_PATCH 0
#define PROF_VERSION       "0.2.0"
#define PROF_VERSION_NUM   200      /* major * 10000 + minor * 100 + patch */

/* -DPROF_ENABLE, -DPROF_ENABLE=1 and "#define PROF_ENABLE" enable;
   -DPROF_ENABLE=0 or no definition disables. */
#if defined(PROF_ENABLE) && ((PROF_ENABLE + 0) != 0 || (1 - PROF_ENABLE - 1) == 2)
#define PROF__ENABLED 1
#else
#define PROF__ENABLED 0
#endif

/* ======================================================================== */
/*  >>api  Public API and configuration                                   */
/* ======================================================================== */
/* The types and functions exist in every build: an engine's code that
   configures prof.h or reads its results needs no #if. Each function is
   written once, as
       PROF__FN type prof_name(params) PROF__OFF(body)
   With PROF_ENABLE, a PROF_API declaration the implementation defines;
   without, a static inline no-op with that body (nothing, or return 0 and
   outputs zeroed), which makes no code unless it is called. */

#ifndef PROF_API
#ifdef PROF_PRIVATE
#define PROF_API __attribute__((visibility("hidden")))
#else
#define PROF_API
#endif
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>                     /* strlen: PROF_SCOPE_DYN; memset */

/* A null pointer in header code: nullptr in C++ (-Wzero-as-null-pointer-constant). */
#ifdef __cplusplus
#define PROF__NULLPTR nullptr
#else
#define PROF__NULLPTR NULL
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if PROF__ENABLED
#define PROF__FN       PROF_API
#define PROF__OFF(...) ;
#else
#define PROF__FN       static inline
#define PROF__OFF(...) { __VA_ARGS__ }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"   /* the no-ops' */
#endif

/* torch.profiler.schedule: see README. active == 0 means "no schedule":
   everything from init to shutdown is one recorded cycle. */
typedef struct prof_schedule {
    int skip_first, wait, warmup, active, repeat;
} prof_schedule;

/* One saved cycle, as the trace-ready handler sees it. */
typedef struct prof__cycle prof_cycle;
typedef void (*prof_trace_ready_fn)(const prof_cycle *cycle, void *user_data);

/* Zero means default everywhere (sokol style):
       prof_config cfg = { .output = "run.json", .buffer_mb = 256 };
       PROF_INIT(&cfg);
   Where 0 is the default and an option can also be turned off, PROF_OFF
   turns it off (cfg.signals = PROF_OFF; cfg.flight_slow = PROF_OFF); in the
   environment, 0 is off (PROF_SIGNALS=0, PROF_FLIGHT_SLOW=0). A field is
   named as its variable is (PROF_MERGE_THREADS: merge_threads), with its
   unit where the variable leaves it out (PROF_FLIGHT: flight_steps,
   PROF_WATCHDOG: watchdog_s). The table of options in >>impl (PROF__OPTIONS;
   docs/options.md) gives each one's kind, default and range; its readers
   check each field's type against it at compile time, and the struct stays
   written out here, where it is read.                                  */
#define PROF_OFF (-1)
typedef struct prof_config {
    const char   *output;     /* trace path, see PROF_OUTPUT                */
    size_t        buffer_mb;  /* recorder memory cap in MiB (default 64)    */
    int           disable;    /* nonzero: record nothing                    */
    int           quiet;      /* nonzero: no informational lines on stderr  */
    prof_schedule schedule;
    const char   *table;      /* print a table per cycle: "sort=self_cpu,rows=10" */
    const char   *tb_dir;     /* also write <tb_dir>/<worker>.<ns>.pt.trace.json */
    const char   *stacks;     /* also write folded stacks here (flamegraph.pl) */
    const char   *ranks;      /* ranks that record: "0", "0,2-3" (default all) */
    const char   *log;        /* messages and tables go here, not stderr    */
    int           separate_threads; /* deprecated, still honoured: nonzero is
                                 merge_threads = PROF_OFF                   */
    prof_trace_ready_fn on_trace_ready; /* replaces writing `output`        */
    void         *user_data;
    int           keep_signals; /* deprecated, still honoured: nonzero is
                                 signals = PROF_OFF                         */
    const char   *format;     /* "json", "json.gz", "perfetto" (default: by
                                 the output's extension, see PROF_FORMAT)   */
    const char   *trigger;    /* "signal" or "file:<path>": record nothing
                                 until asked (PROF_TRIGGER)                 */
    int           trigger_steps; /* steps a trigger records (default 5)     */
    double        peak_tflops; /* the device's peak, for the table's "% peak"
                                 (PROF_PEAK_TFLOPS; default: the GPU's, if
                                 known)                                     */
    double        peak_gbps;  /* likewise its memory bandwidth (PROF_PEAK_GBPS) */
    int           flight_steps; /* flight recorder: keep the last N steps, write
                                 them only when a step goes wrong (PROF_FLIGHT) */
    double        flight_slow;  /* a step this many times the median is slow
                                 (PROF_FLIGHT_SLOW, default 3; PROF_OFF: never) */
    double        flight_cooldown; /* s between two dumps (PROF_FLIGHT_COOLDOWN,
                                 default 300; PROF_OFF: none)               */
    double        watchdog_s; /* no PROF_STEP for this long (seconds): say what
                                 every thread is inside, dump the flight
                                 recorder (PROF_WATCHDOG; 0: no watchdog)   */
    int           cupti;      /* the CUDA spelling of kernels, still honoured:
                                 nonzero is kernels = 1 (PROF_CUPTI=1)      */
    int           trace_ready_at_step; /* nonzero: collect and write each cycle
                                 (and call on_trace_ready) on the thread that
                                 steps, inside PROF_STEP, as torch.profiler
                                 does; default: on the profiler's thread    */
    int           kernels;    /* nonzero: every kernel, copy and fill, and the
                                 runtime calls that launched them, for the
                                 runtime in use: CUPTI (prof_cuda.h),
                                 rocprofiler-sdk (prof_hip.h); PROF_KERNELS=1 */
    int           energy;     /* nonzero: each step's joules per GPU and a
                                 power track, from NVML (PROF_ENERGY=1)     */
    int           gpu_metrics; /* nonzero: device tracks while recording
                                 (clocks, utilisation, memory used, throttle
                                 reasons, PCIe), read with the energy
                                 counter; turns energy on (PROF_GPU_METRICS=1) */
    int           signals;    /* PROF_OFF: no SIGINT/SIGTERM/crash handlers
                                 (PROF_SIGNALS=0; default: installed)       */
    int           merge_threads; /* PROF_OFF: a track per OS thread, even for
                                 alike-named threads that never overlap
                                 (PROF_MERGE_THREADS=0; default: merged)    */
    const char   *clock;      /* "tsc" (default) or "monotonic": the clock of
                                 the first init (PROF_CLOCK)                */
    int           sample_hz;  /* sample every thread's call stack this many
                                 times per second of its CPU time while a
                                 window records (PROF_SAMPLE; 0: off)       */
    const char   *counters;   /* "task-clock,context-switches,page-faults,
                                 cycles,instructions" or some of them: each
                                 thread's CPU counters per recorded step
                                 (PROF_COUNTERS; NULL: none)                */
} prof_config;

/* What the last cycles recorded and lost; for tests and for logging. */
typedef struct prof_stats {
    uint64_t events;          /* events handed to the writer so far         */
    uint64_t dropped;         /* events lost to the memory cap so far       */
    uint64_t traces_written;  /* trace files written so far                 */
    uint64_t unknown_frees;   /* PROF_FREE of a pointer not live (double or
                                 foreign free): no event, totals unchanged  */
    uint64_t reused_live;     /* PROF_ALLOC of an address still live: the old
                                 allocation was counted as freed first      */
    uint64_t clipped;         /* regions begun before a cycle's window and
                                 ended in it: written from its start, marked */
    uint64_t lost_past_end;   /* regions begun in a saved cycle, not drawn in
                                 it (nested deeper than 64), and ended in
                                 steps not recorded: in no trace, reported  */
    uint64_t unclosed;        /* PROF_BEGINs never ended, reported by name  */
    uint64_t names_refused;   /* prof_intern past its 16 MiB: "(names full)" */
    uint64_t behind;          /* of dropped: lost because the profiler's
                                 thread was still writing (the writer fell
                                 behind the engine), and events of saves
                                 that found its queue full                  */
    uint64_t samples;         /* CPU samples in saved cycles (PROF_SAMPLE)  */
    uint64_t samples_lost;    /* CPU samples lost: a ring overflowed, or
                                 their memory passed the cap; reported      */
} prof_stats;

/* Functions that can fail return 1 on success and 0 on failure, having said
   why on stderr. (The prof_gpu_api hooks below pass the runtime's own error
   codes through instead, 0 for success, so that the message can name them.) */
PROF__FN void prof_init(const prof_config *cfg) PROF__OFF()
PROF__FN void prof_shutdown(void) PROF__OFF()
PROF__FN void prof_step(void) PROF__OFF()
/* Waits until the profiler's thread has done what the steps so far handed
   it: the traces of the cycles saved by then are written (and their
   trace-ready handlers have returned), and the reads a window's edge asks
   for are made (PROF_COUNTERS, PROF_ENERGY, PROF_SAMPLE's events: counting
   from the window's start). The steps themselves never wait.
   1 when done; 0 if it did not finish within a minute, or at once inside
   a trace-ready handler, whose own cycle is being written (said on stderr). */
PROF__FN int prof_flush(void) PROF__OFF(return 1;)
PROF__FN void prof_instant(const char *name) PROF__OFF()
PROF__FN void prof_counter(const char *name, double value) PROF__OFF()
PROF__FN void prof_thread_name(const char *name) PROF__OFF()
PROF__FN void prof_begin(const char *name) PROF__OFF()
PROF__FN void prof_end(void) PROF__OFF()
PROF__FN void prof_arg_int(const char *key, int64_t value) PROF__OFF()
PROF__FN void prof_arg_str(const char *key, const char *value) PROF__OFF()
PROF__FN void prof_get_stats(prof_stats *out) PROF__OFF(memset(out, 0, sizeof *out);)
/* A name built at run time ("layer.17.attn") as a name prof.h can keep: a
   copy of s[0, n) made the first time, the same pointer for the same text
   ever after (lock-free then: a hash and a compare). The copies live to the
   end of the process, 16 MiB of them at most; past that, "(names full)",
   counted in prof_stats.names_refused. PROF_SCOPE_DYN(str) is
   PROF_SCOPE(prof_intern(str, strlen(str))), interning only when recording. */
PROF__FN const char *prof_intern(const char *s, size_t n) PROF__OFF(return s;)
/* This process's rank and the world size. Taken at init from the launcher's
   environment (torchrun, Open MPI, MPICH/PMI, Slurm) unless set here. */
PROF__FN void prof_set_rank(int rank, int world_size) PROF__OFF()
/* A cross-rank clock sync point: call right after a barrier, on every rank.
   The n-th sync of each rank marks the same moment; prof merge aligns the
   ranks' traces on them. */
PROF__FN void prof_sync(void) PROF__OFF()

/* ---- >>api-memory  memory events, totals and leaks -------------------------
   PROF_ALLOC(ptr, bytes) is prof_mem_alloc(ptr, bytes, -1) and PROF_FREE(ptr)
   prof_mem_free(ptr); GPU allocators call them with the device (0, 1, ...).
   Live allocations and per-device totals are kept from init to shutdown,
   recording or not; events are recorded inside recording windows. */
#if PROF__ENABLED && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
/* the address is a key, never read: gcc must not warn that a fresh malloc's
   bytes reach a const pointer uninitialised (noipa: a clone would lose it;
   disabled, the no-op reads nothing, and a definition takes no attribute there) */
#define PROF__KEY_ONLY __attribute__((access(none, 1), noipa))
#else
#define PROF__KEY_ONLY
#endif
PROF__FN void    prof_mem_alloc(const void *ptr, size_t bytes, int device) PROF__KEY_ONLY PROF__OFF() /* -1: host */
PROF__FN void    prof_mem_free(const void *ptr) PROF__KEY_ONLY PROF__OFF()      /* the size is looked up */
PROF__FN int64_t prof_mem_allocated(int device) PROF__OFF(return 0;)             /* bytes live now on a device */

typedef struct prof_leak {
    const void *ptr;
    int64_t     bytes;
    int         device;       /* -1 host, d >= 0 GPU d                      */
    const char *region;       /* region it was allocated in, "(no region)",
                                 or "(not recorded)" outside windows        */
} prof_leak;

/* Allocations not freed, largest first: the live ones now, or after
   shutdown those it reported. Fills up to max, returns how many there are. */
PROF__FN size_t prof_leaks(prof_leak *out, size_t max) PROF__OFF(return 0;)

/* ---- >>api-cycle  a saved cycle: events, the summary table, folded stacks ---- */

typedef enum prof_event_kind {
    PROF_EVENT_REGION, PROF_EVENT_STEP, PROF_EVENT_INSTANT, PROF_EVENT_COUNTER,
    PROF_EVENT_SYNC           /* PROF_SYNC; value = its number, from 0      */
} prof_event_kind;

typedef struct prof_event {
    prof_event_kind kind;
    const char *name;         /* "ProfilerStep" for steps                   */
    long        tid;
    int64_t     ts_ns;        /* since baseTimeNanoseconds, as in the trace */
    int64_t     dur_ns;       /* regions and steps                          */
    double      value;        /* counters; the step number N for steps      */
} prof_event;

PROF__FN int      prof_cycle_index(const prof_cycle *c) PROF__OFF(return 0;)   /* 1, 2, ...       */
PROF__FN uint64_t prof_cycle_dropped(const prof_cycle *c) PROF__OFF(return 0;) /* lost to the cap */
PROF__FN size_t   prof_cycle_event_count(const prof_cycle *c) PROF__OFF(return 0;)
/* Event i, for i < prof_cycle_event_count(); 0 for slots that hold a
   region's argument or a memory event (those are in the trace, the table and
   prof_cycle_memory_peak) rather than an event. */
PROF__FN int      prof_cycle_event(const prof_cycle *c, size_t i, prof_event *out)
    PROF__OFF(memset(out, 0, sizeof *out); return 0;)
PROF__FN int      prof_cycle_write_trace(const prof_cycle *c, const char *path) PROF__OFF(return 0;)
/* PROF_ENERGY: the joules GPU `device` used in step i (an event of kind
   PROF_EVENT_STEP), to the millijoule as the traces hold them: 1
   measured, 2 a time share of one counter interval, 0 not known (no
   energy for it, or i is not a step). */
PROF__FN int      prof_cycle_step_energy(const prof_cycle *c, size_t i, int device, double *joules)
    PROF__OFF(if (joules) *joules = 0; return 0;)
PROF__FN int      prof_cycle_write_stacks(const prof_cycle *c, const char *path) PROF__OFF(return 0;)
/* The highest Total Allocated on a device (-1 host) after any memory event of
   the cycle, and the innermost region open at that event on its thread
   ("ProfilerStep*" for a step, "(no region)" outside both). 0 if the device
   has no memory event in the cycle. */
PROF__FN int      prof_cycle_memory_peak(const prof_cycle *c, int device, int64_t *peak_bytes, const char **region)
    PROF__OFF(if (peak_bytes) *peak_bytes = 0; if (region) *region = NULL; return 0;)

/* key_averages().table(): one row per region name, or per name and
   arguments and/or thread (group: 0 or PROF_GROUP_* ORed). Like torch's,
   rows sum over threads unless grouped by thread. Sorted descending (by
   name: ascending). */
#define PROF_GROUP_ARGS   1
#define PROF_GROUP_THREAD 2
#define PROF_GROUP_DOMAIN 8       /* by the "domain" argument alone (NVTX's: libprof_nvtx) */
#define PROF_GROUP_CAPTURE 16     /* a CUDA Graph's kernels by the regions open when their node
                                     was captured: a row "[graph] a/b" each (kernel capture) */
#define PROF_TABLE_PERCENTILES 4  /* ORed in too: p50/p90/p99 of a call's total */
typedef enum prof_sort {
    PROF_SORT_SELF_CPU, PROF_SORT_CPU_TOTAL, PROF_SORT_CPU_AVG, PROF_SORT_CPU_MIN,
    PROF_SORT_CPU_MAX, PROF_SORT_CALLS, PROF_SORT_FLOPS, PROF_SORT_NAME,
    PROF_SORT_SELF_GPU, PROF_SORT_GPU_TOTAL, PROF_SORT_GPU_AVG,
    PROF_SORT_CPU_MEM, PROF_SORT_SELF_CPU_MEM, PROF_SORT_GPU_MEM, PROF_SORT_SELF_GPU_MEM
} prof_sort;

typedef struct prof_row {
    const char *name;
    const char *args;         /* "M=64, N=128" when grouped by arguments    */
    const char *thread;       /* the thread's name when grouped by thread   */
    long        tid;          /*   and its id (0 otherwise)                 */
    uint64_t    calls;
    int64_t     self_ns;      /* total minus time in child regions          */
    int64_t     total_ns;
    int64_t     min_ns, max_ns; /* of one call's total                      */
    int64_t     p50_ns, p90_ns, p99_ns; /* the same, exact (nearest rank), with
                                 PROF_TABLE_PERCENTILES; else 0             */
    double      self_pct, total_pct; /* of the sum of all self times         */
    int64_t     flops;        /* sum of PROF_FLOPS                          */
    int64_t     bytes;        /* sum of PROF_BYTES (bytes the region moved) */
    int64_t     self_gpu_ns;  /* GPU time of its own GPU region, minus that */
    int64_t     gpu_total_ns; /*   of the GPU regions opened inside it; with
                                 kernel capture, of the kernels, copies and
                                 fills launched inside it (torch's)         */
    int64_t     cpu_mem, self_cpu_mem; /* bytes allocated minus freed inside */
    int64_t     gpu_mem, self_gpu_mem; /*   (self: not in child regions)    */
    int         kernel;       /* a kernel, copy or fill (kernel capture)   */
} prof_row;

/* PROF_ENERGY: a device's joules per step, in the table's footer. */
typedef struct prof_energy {
    int    device;            /* the runtime's device number (GPU d)        */
    size_t steps;             /* steps that carry its joules                */
    double j_p50, j_p90;      /* joules per step (nearest rank)             */
    double watts;             /* those steps' joules over their time        */
    double j_per_token;       /* over PROF_COUNTER("tokens", n) in them; 0: none */
    double j_per_sample;      /* over PROF_COUNTER("samples", n); 0: none   */
} prof_energy;

/* PROF_COUNTERS: a thread's counters summed over the steps that carry
   them, in the table's footer (read per step, so no region's). */
typedef struct prof_cpu {
    long        tid;
    const char *thread;       /* its name, or NULL                          */
    size_t      steps;        /* steps that carry its task-clock            */
    int64_t     wall_ns;      /*   and their length                         */
    double      v[5];         /* task-clock (ns), context-switches,
                                 page-faults, cycles, instructions; -1: not
                                 counted                                    */
} prof_cpu;

typedef struct prof_table {
    prof_row *rows;
    size_t    n;
    int64_t   self_sum_ns;
    int       has_gpu;        /* the cycle has GPU regions: GPU columns    */
    int64_t   self_gpu_sum_ns; /* of regions; with kernel capture, of kernels */
    int       has_mem;        /* the cycle has memory events: memory columns */
    int       has_gpu_mem;    /*   and GPU ones: GPU Mem columns too         */
    size_t    threads;        /* threads whose regions the rows sum over    */
    int       by_thread;      /* grouped by thread: a Thread column         */
    int       has_pct;        /* percentiles asked: CPU p50/p90/p99 columns */
    double    peak_tflops;    /* the device's peak, for "% peak" columns:  */
    double    peak_gbps;      /*   PROF_PEAK_TFLOPS / PROF_PEAK_GBPS, else
                                 the GPU's, when known; 0: none             */
    int64_t   gpu_bound_ns;   /* GPU times sit within this of their place on
                                 the CPU clock, as measured (worst device);
                                 0: not known (a trace read back)           */
    int       gpu_one_clock;  /* kernel capture placed every GPU region on
                                 its kernels' clock (they nest exactly)     */
    int       energy_devs;    /* PROF_ENERGY: devices in energy[]           */
    prof_energy energy[8];
    prof_cpu *cpu;            /* PROF_COUNTERS: a row per thread counted    */
    size_t    ncpu;
    struct prof_gpu_idle *idle; /* kernel capture: the cycle's idle time by
                                 device and stream (prof_cycle_gpu_idle's
                                 PROF_GPU_IDLE_ALL rows), in the footer    */
    size_t    nidle;
    size_t    path_steps;     /* kernel capture: the steps' critical paths
                                 (prof_cycle_gpu_path), summed: host,
                                 launch, gpu, other                        */
    int64_t   path_ns[4];
} prof_table;

PROF__FN int  prof_cycle_table(const prof_cycle *c, prof_sort sort, int group, prof_table *out)
    PROF__OFF(memset(out, 0, sizeof *out); return 0;)
PROF__FN void prof_table_print(const prof_table *t, FILE *f, size_t max_rows) PROF__OFF() /* 0: all */
/* A table spec as PROF_TABLE takes it ("sort=self_cpu,rows=20,group=args,
   percentiles") into prof_cycle_table's sort and group and print's rows;
   0 (nothing said) if it is not one. */
PROF__FN int  prof_table_spec(const char *spec, prof_sort *sort, size_t *rows, int *group) PROF__OFF(return 0;)
PROF__FN void prof_table_free(prof_table *t) PROF__OFF()

/* ---- >>api-model  a cycle made from outside: a saved trace read back ------
   The prof tool's readers (and any program with a timeline to show) build a
   cycle that the table, folded stacks and writers take as they take one the
   recorder saved. Times are ns from any origin, 0 or later; names, keys and
   string values are kept as pointers and must outlive the cycle (literals,
   or prof_intern's copies). Add threads, and each thread's regions and
   steps in any order, each followed by its arguments; prof_model_finish
   puts the records in the order the recorder keeps them (a region when it
   ends, its arguments before it) and runs the analysis every sink reads;
   after it, nothing more is added (the adding functions return 0).
   Functions that can fail return 0 (or -1 for an index) when memory runs
   out; prof_cycle_free releases what prof_model_new made, and nothing else. */
PROF__FN prof_cycle *prof_model_new(void) PROF__OFF(return PROF__NULLPTR;)
/* The index of the thread tid, added on first sight; a name names it. */
PROF__FN int prof_model_thread(prof_cycle *c, long tid, const char *name) PROF__OFF(return -1;)
PROF__FN int prof_model_region(prof_cycle *c, int thread, const char *name, int64_t t0_ns, int64_t t1_ns)
    PROF__OFF(return 0;)
/* ProfilerStep#number, which the table files under "ProfilerStep*" */
PROF__FN int prof_model_step(prof_cycle *c, int thread, int64_t number, int64_t t0_ns, int64_t t1_ns)
    PROF__OFF(return 0;)
/* PROF_ENERGY's joules, read back: the step added last used `joules` on
   GPU `device` (its argument "GPU d energy (J)"); share: it was marked a
   share of one counter interval. The table's footer and the writers then
   take the model's steps' joules as the recorder's. */
PROF__FN int prof_model_step_energy(prof_cycle *c, int device, double joules, int share) PROF__OFF(return 0;)
/* A sample of the counter `name` at ts_ns (PROF_COUNTER's): only "tokens"
   and "samples" are kept, for the table's J/token and J/sample, and
   PROF_COUNTERS's tracks ("tid <tid> task-clock (ms)" ...), a counter of
   that thread, for the table's CPU counters. */
PROF__FN int prof_model_count(prof_cycle *c, const char *name, int64_t ts_ns, double value) PROF__OFF(return 0;)
/* An argument of the region or step added last. */
PROF__FN int prof_model_arg_int(prof_cycle *c, const char *key, int64_t value) PROF__OFF(return 0;)
PROF__FN int prof_model_arg_str(prof_cycle *c, const char *key, const char *value) PROF__OFF(return 0;)
PROF__FN int prof_model_finish(prof_cycle *c) PROF__OFF(return 0;)
PROF__FN void prof_cycle_free(prof_cycle *c) PROF__OFF()

/* ---- >>api-gpu  GPU regions: the backend-neutral core's interface ----------
   With prof_cuda.h or prof_hip.h included (instead of prof.h):
     PROF_GPU_SCOPE(name, stream)   a CPU region plus a GPU region on stream,
                                    timed by an event pair, to block end
     PROF_GPU_BEGIN(name, stream)   the same, explicit; last in, first out
     PROF_GPU_END(stream)             per thread
     PROF_GPU_ALLOC(ptr, bytes)     device memory events (current device)
     PROF_GPU_FREE(ptr)
   Events come from a pool and are resolved with event queries on the
   profiler's thread; the engine's stream is never synchronised, and no step
   waits for the GPU. Without a usable device (no GPU, a
   driver older than the runtime, a failing event call) prof.h says so once,
   GPU timing goes off and CPU regions are still recorded.
   The two headers fill a prof_gpu_api with a handful of runtime calls; every
   call returns the runtime's error code, 0 for success. Engines do not use
   it directly. */

typedef struct prof_gpu_props {  /* what Kineto writes in deviceProperties */
    char    name[256];
    int64_t total_mem;
    int     major, minor, sms, warp_size;
    int     max_threads_per_block, max_threads_per_sm;
    int     regs_per_block, regs_per_sm;
    int64_t smem_per_block, smem_per_sm, smem_per_block_optin;
} prof_gpu_props;

typedef struct prof_gpu_api {
    const char *name;                           /* "CUDA", "HIP"                */
    int not_ready;                              /* event_query's "not yet" code */
    int (*device_count)(int *n);
    int (*get_device)(int *dev);
    int (*set_device)(int dev);
    int (*device_props)(int dev, prof_gpu_props *out);
    int (*stream_info)(void *stream, int *dev, long long *id); /* id -1: unknown */
    int (*stream_create)(void **stream);        /* non-blocking, for anchors  */
    int (*stream_destroy)(void *stream);
    int (*event_create)(void **ev);             /* timing-enabled             */
    int (*event_destroy)(void *ev);
    int (*event_record)(void *ev, void *stream);
    int (*event_query)(void *ev);               /* 0, not_ready or an error   */
    int (*event_sync)(void *ev);
    int (*elapsed_ms)(float *ms, void *from, void *to);
    const char *(*error_name)(int err);
    const char *(*error_string)(int err);
    const struct prof_gpu_tracer *tracer;       /* kernel capture, or NULL    */
    int (*pci_bus_id)(char *buf, int len, int dev); /* "0000:18:00.0" (PROF_ENERGY) */
    const struct prof_gpu_energy *energy;       /* PROF_ENERGY's counter, or NULL */
    /* stream capture (cudaStreamBeginCapture): *on 1 while stream is
       captured into a graph, or unusable because another is (the legacy
       stream); NULL: the runtime has none */
    int (*capturing)(void *stream, int *on);
    int (*relax_capture)(void);                 /* the calling thread's event calls may run
                                                   while other threads capture (NULL: none) */
    /* a GPU region's edge: ev recorded on stream unless stream is captured
       (capturing's *on: then *captured 1, nothing recorded), both with one
       read of the runtime's last error; NULL: capturing, then event_record */
    int (*record_free)(void *ev, void *stream, int *captured);
} prof_gpu_api;

PROF__FN void prof_gpu_begin(const prof_gpu_api *api, const char *name, void *stream) PROF__OFF()
PROF__FN void prof_gpu_end(const prof_gpu_api *api, void *stream) PROF__OFF()

/* A saved cycle's GPU regions, placed on the CPU timeline. */
typedef struct prof_gpu_event {
    const char *name;
    int         device;
    long long   stream;
    uint32_t    correlation;  /* also on the CPU region that launched it    */
    int64_t     ts_ns;        /* since baseTimeNanoseconds, as in the trace */
    int64_t     dur_ns;
} prof_gpu_event;

PROF__FN size_t prof_cycle_gpu_count(const prof_cycle *c) PROF__OFF(return 0;)
PROF__FN int    prof_cycle_gpu_event(const prof_cycle *c, size_t i, prof_gpu_event *out)
    PROF__OFF(memset(out, 0, sizeof *out); return 0;)

/* Kernel capture: what a runtime's activity tracer (CUPTI, in prof_cuda.h)
   saw, handed to the core, which places it on the CPU clock and writes it
   as Kineto does. Times are on the tracer's clock, in ns; the core maps it
   to its own by pairs of readings of both (now_ns).
   One clock: while a tracer is started, a GPU region records no event; its
   GPU side spans the kernels, copies and fills whose launch call lies in
   its CPU side, on its thread, onto its stream (Kineto's
   gpu_user_annotation rule), on the tracer's clock: it holds them by
   construction, and one that launched nothing there has no GPU side.
   A synchronisation (PROF_GPU_SYNC, Kineto's cuda_sync) is the host's wait
   in cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize or
   cudaStreamWaitEvent, under its call's correlation: on the device's
   side of the trace, never GPU work (it spans no region, costs no GPU time). */
enum { PROF_GPU_KERNEL = 1, PROF_GPU_MEMCPY, PROF_GPU_MEMSET, PROF_GPU_RUNTIME, PROF_GPU_SYNC };
/* A synchronisation's kind: CUPTI's CUpti_ActivitySynchronizationType. */
enum { PROF_GPU_SYNC_EVENT = 1, PROF_GPU_SYNC_WAIT_EVENT, PROF_GPU_SYNC_STREAM, PROF_GPU_SYNC_CONTEXT };

typedef struct prof_gpu_activity {
    int         kind;         /* PROF_GPU_*                                  */
    const char *name;         /* a name prof_intern gave, or a literal       */
    int         device;       /* -1 for a runtime call                       */
    long long   stream;
    uint32_t    correlation;  /* the runtime call's, the same on both sides  */
    int64_t     t0_ns, t1_ns;
    uint64_t    thread;       /* runtime call: the tracer's thread id        */
    int         cbid;         /* runtime call: the tracer's callback id      */
    int         grid[3], block[3], regs;  /* kernel                          */
    int64_t     smem;         /* kernel: static + dynamic shared memory      */
    uint64_t    bytes;        /* copy or fill                                */
    uint64_t    graph_node;   /* launched by a graph: its node's id ...      */
    uint32_t    graph;        /* ... and the graph's (0: not by a graph)     */
    int         driver;       /* runtime call: one of the driver API's
                                 (cuLaunchKernel: cuBLAS, cuDNN, NCCL) */
    int         sync;         /* synchronisation: PROF_GPU_SYNC_*; its stream
                                 is -1 where it has none (context, event) */
    long long   event;        /* ... the CUDA event waited on, or -1 */
    long long   wait_stream;  /* ... the stream that event was recorded on, */
    long long   wait_corr;    /* ... by the call of this correlation (-1: not
                                 recorded while capture was on) */
    const char *capture_region; /* launched by a graph: the regions open
                                 when its node was captured, "a/b" (NULL:
                                 none known; the core fills it) */
} prof_gpu_activity;

/* Capture follows the schedule: start loads the tracer with capture on,
   and the core turns it off (capture(0)) between recording windows, where
   a launch then pays the profiler nothing, and on again (capture(1)) at the
   next window's warm-up. A tracer without capture stays on. */
typedef struct prof_gpu_tracer {
    const char *name;                           /* "CUPTI"                     */
    int  (*start)(size_t buffer_bytes);         /* 1: capturing; 0: said why   */
    void (*flush)(void);                        /* hands over what is complete */
    void (*stop)(void);
    int64_t (*now_ns)(void);                    /* the tracer's clock          */
    void (*capture)(int on);                    /* NULL: always on while started */
    void (*flush_complete)(void);               /* hands over only buffers whose records
                                                   are all complete; NULL: flush does */
    size_t (*held)(void);                       /* buffers it keeps back (records not
                                                   complete); NULL: none */
} prof_gpu_tracer;

/* PROF_ENERGY's source: the GPU vendor's management library, which the
   binding loads (prof_cuda.h: NVML, prof_hip.h: AMD SMI) and the core
   reads as its reading policy says (>>energy). Every call is made on the
   profiler's thread, one at a time: open once, device once for each device
   of the runtime, by its PCI bus id as the runtime writes it, then read as
   often as the policy says. Errors are the library's codes, 0 for success.
   Nothing is closed: the library stays loaded, its handles valid, to the
   process's end.
   The device tracks (PROF_GPU_METRICS) are read by metric, at the same
   reads: metric(handle, PROF_GPU_M_*, &value), 0 or the library's error
   (`unsupported` for a device without it), NULL in a binding with none;
   metric_call[m] names the call that reads metric m, NULL where the
   binding cannot read it; throttle (PROF_GPU_M_THROTTLE) is a bit mask
   whose bit i throttle_name[i] names (NULL: not named). */
enum {
    PROF_GPU_M_SM_CLOCK,                        /* MHz */
    PROF_GPU_M_MEM_CLOCK,                       /* MHz */
    PROF_GPU_M_UTIL,                            /* % of the time a kernel ran */
    PROF_GPU_M_MEM_USED,                        /* MiB of device memory in use */
    PROF_GPU_M_PCIE_RX,                         /* MB/s into the device */
    PROF_GPU_M_PCIE_TX,                         /* MB/s out of it */
    PROF_GPU_M_THROTTLE,                        /* the reasons the clocks are held down, a bit mask */
    PROF_GPU_M_COUNT
};
typedef struct prof_gpu_energy {
    const char *source;                         /* "NVML": the trace's and the lines' name */
    const char *counter;                        /* the call that reads it (the trace's "counter") */
    int  unsupported;                           /* the error of a device without the counter */
    const char *no_counter_hint;                /* what that line adds after the error, or "" */
    int  (*open)(const char **why);             /* loads, initialises: 1; 0: said why, *why the trace's */
    int  (*device)(const char *pci_bus, void **handle);                /* 0 or an error */
    int  (*read)(void *handle, uint64_t *count, double *mj_per_count); /* the counter, in units of
                                                   *mj_per_count (set where the library says); 0 or an error */
    void (*error)(int err, char *buf, size_t n); /* "NVML error 3: Not Supported", into buf[n] */
    int  (*metric)(void *handle, int m, double *value); /* PROF_GPU_M_*; NULL: no device tracks */
    const char *metric_call[PROF_GPU_M_COUNT];  /* the call that reads each; NULL: not read */
    const char *throttle_name[64];              /* the throttle mask's bits */
} prof_gpu_energy;

/* From the tracer's callbacks, on any thread; copies a (a synchronisation
   without a name gets Kineto's for its kind). */
PROF__FN void prof_gpu_activity_add(const prof_gpu_activity *a) PROF__OFF()
/* Records the tracer itself lost (its buffers full), counted as dropped. */
PROF__FN void prof_gpu_activity_lost(uint64_t n) PROF__OFF()
/* CUDA Graph nodes attributed to capture time. The tracer's graph-node
   callback, on the thread that makes the node (inside the engine's
   launch into a capturing stream, or its cudaGraphAdd*Node), names the
   node after the regions that thread has open now: prof_gpu_graph_node(
   node, 0); a node cloned from another (cudaGraphInstantiate, a graph's
   clone) takes the original's: prof_gpu_graph_node(clone, original).
   Each call copies at most 8 names (the innermost) into a slot of a table
   keyed by node id, made when the tracer starts: no allocation, no lock,
   nothing that grows with the events. A replayed graph's kernels then
   carry their node's regions (prof_gpu_activity.capture_region). */
PROF__FN void prof_gpu_graph_node(uint64_t node, uint64_t original) PROF__OFF()
/* PROF_INIT in a file with prof_cuda.h: kernel capture starts now, when
   PROF_CUPTI asks, not at the first GPU region. */
PROF__FN void prof_gpu_attach(const prof_gpu_api *api) PROF__OFF()
/* One line, as prof.h says things (PROF_LOG, "prof: " before it). */
PROF__FN void prof_gpu_say(const char *line) PROF__OFF()
/* Whether kernel capture is asked for: the resolved option once the
   profiler started, else PROF_CUPTI / PROF_KERNELS as the environment has
   them (a binding's tool hook may ask before PROF_INIT). */
PROF__FN int prof_gpu_kernels_asked(void) PROF__OFF(return 0;)

/* >>api-model's GPU side: a saved trace's GPU records into a model, which
   the table then reads as it reads the recorder's (GPU columns, a row per
   kernel name). Times are the model's ns. prof_model_gpu_region: a GPU
   region's CPU side, a region (arguments may follow) whose GPU side has
   this correlation; prof_model_gpu: a GPU region's GPU side (g's name,
   device, stream, correlation, ts_ns, dur_ns); prof_model_activity: kernel
   capture's record, a runtime call (kind PROF_GPU_RUNTIME; a->thread: the
   tid of its thread in the model) or a kernel, copy or fill (a->device,
   a->stream), a->t0_ns to a->t1_ns, with a->correlation. */
PROF__FN int prof_model_gpu_region(prof_cycle *c, int thread, const char *name, uint32_t correlation, int64_t t0_ns,
                                   int64_t t1_ns) PROF__OFF(return 0;)
PROF__FN int prof_model_gpu(prof_cycle *c, const prof_gpu_event *g) PROF__OFF(return 0;)
PROF__FN int prof_model_activity(prof_cycle *c, const prof_gpu_activity *a) PROF__OFF(return 0;)

/* Kernel capture: why each stream sat idle (Holistic Trace Analysis's
   idle-time breakdown), per step, as the analysis of a cycle finds it, for
   a recorded cycle and a model alike. A stream's kernels, copies and fills
   belong to the step their launch call began in (-1: none), with the gap
   before each, from the end of the stream's work before it, whichever step
   that was (the stream's first has none). A gap is
     host    the launch call began after the stream had run dry (HTA's
             host wait) ...
     sync    ... while its thread was inside a synchronising call
             (cudaStreamSynchronize, cudaEventSynchronize,
             cudaDeviceSynchronize: a cuda_sync) when the stream ran dry
     launch  not late, and under 30 us (HTA's kernel wait: work queued
             back to back)
     wait    not late, not under 30 us, and the stream was made to wait
             (cudaStreamWaitEvent) after the work before the gap was
             launched and by the launch after it, for an event that
             completed after the stream ran dry (or not known when)
     other   none of those (HTA's other, with wait)
   A row of stream -1 is its device as a whole: busy is the union over its
   streams, and it alone has comm (NCCL's kernels: nccl...Kernel, HTA's
   rule), comp (the other kernels but HTA's: none named *Memcpy*, Memset*,
   *Sync*) and their overlap; its gaps are not sorted. Step -2 (PROF_GPU_IDLE_ALL):
   the whole cycle, a stream's the sum of its steps', its device's summed
   over every step's kernels at once. Rows by device, stream, step; the
   step rows of a stream before its whole-cycle row. */
#define PROF_GPU_IDLE_ALL (-2)
typedef struct prof_gpu_idle {
    int64_t   step;           /* its number, -1 outside steps, or PROF_GPU_IDLE_ALL */
    int       device;
    long long stream;         /* -1: the device */
    uint64_t  work;           /* kernels, copies and fills                   */
    int64_t   busy_ns;        /* the union of their times                    */
    int64_t   host_ns, sync_ns, wait_ns, launch_ns, other_ns; /* its gaps, as above */
    int64_t   comm_ns, comp_ns, overlap_ns; /* stream -1: NCCL's, compute's,
                                 both at once (unions)                       */
} prof_gpu_idle;

PROF__FN size_t prof_cycle_gpu_idle_count(const prof_cycle *c) PROF__OFF(return 0;)
PROF__FN int    prof_cycle_gpu_idle(const prof_cycle *c, size_t i, prof_gpu_idle *out)
    PROF__OFF(memset(out, 0, sizeof *out); return 0;)

/* Kernel capture: each step's critical path, a light one over launches,
   host waits, stream waits and the work, walked back from the step's end
   on its thread: the thread's own time (host) back to the last host wait
   that waited for work, then that work (gpu), and from each piece of work
   to what it started after, by its gap's cause above: its launch call when
   that came late (launch: from the call to the start; then the call's
   thread), the work a stream wait held it for, else the stream's work
   before it; other: the gaps between (a wait's return after its work, a
   stream's gap). Clipped at the step's start: the four sum to the step's
   length. One per step, in time order. */
typedef struct prof_gpu_path {
    int64_t   step;
    uint64_t  work;           /* kernels, copies and fills on it             */
    int64_t   host_ns, launch_ns, gpu_ns, other_ns;
} prof_gpu_path;

PROF__FN size_t prof_cycle_gpu_path_count(const prof_cycle *c) PROF__OFF(return 0;)
PROF__FN int    prof_cycle_gpu_path(const prof_cycle *c, size_t i, prof_gpu_path *out)
    PROF__OFF(memset(out, 0, sizeof *out); return 0;)

#if !PROF__ENABLED
#pragma GCC diagnostic pop
#endif
#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- >>hot  the hot path inline, everything else out of line ------------ */
#if PROF__ENABLED
#ifdef __cplusplus
extern "C" {
#endif

typedef struct prof__rec {      /* one recorded event: 32 bytes             */
    const char *name;
    uint64_t    t1;             /* end tick, or a kind's payload            */
    uint32_t    kind;           /* 0 = region; chunks are zeroed            */
    uint32_t    aux;
    uint64_t    t0;             /* start tick; written last, never 0: the
                                   collector reads it to see a record done */
} prof__rec;

/* The regions a thread is inside right now (name, start tick), kept while
   recording so that the watchdog (another thread) and a crash handler (this
   one) can say where the engine is: a stack of frames, PROF__OPEN_MAX deep.
   Deeper regions share the scratch frame at [PROF__OPEN_MAX], which nobody
   reads; each region's end puts `top` back at its own frame, so nesting
   comes out right at any depth. */
#define PROF__OPEN_MAX 64
typedef struct prof__open { const char *name; uint64_t t0; } prof__open;

typedef struct prof__tls_t {
    prof__rec *cur, *end;               /* the inline path's window of its chunk */
    prof__open *volatile top;           /* the next frame; NULL before the first.
                                           volatile: other threads read it */
    prof__open *last;                   /* the scratch frame: from it on, deeper */
} prof__tls_t;

/* The hot path's names carry the clock mode: a translation unit built with
   -DPROF_NO_TSC fails to link against an implementation built without it
   (its records would be read in the wrong unit), rather than recording
   nothing. */
#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(PROF_NO_TSC)
#define prof__on        prof__on_tsc
#define prof__tls       prof__tls_tsc
#define prof__emit_slow prof__emit_slow_tsc
#else
#define prof__on        prof__on_mono
#define prof__tls       prof__tls_mono
#define prof__emit_slow prof__emit_slow_mono
#endif

/* initial-exec: shared-library (-fPIC) code reaches prof__tls at a fixed
   offset instead of calling __tls_get_addr per region. It takes 16 bytes of
   the static TLS block glibc keeps for libraries dlopen()ed later;
   -DPROF_TLS_DYNAMIC gives that back for the general model. Executables
   (-fPIE or not) already get initial-exec or better (local-exec, one
   instruction less) from the compiler. */
#if defined(PROF_TLS_DYNAMIC) || !defined(__PIC__) || defined(__PIE__)
#define PROF__TLS_MODEL
#else
#define PROF__TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

extern PROF_API unsigned char prof__on;  /* 1 while recording (or not yet initialised) */
extern PROF_API unsigned long prof__jobs_off_thread;   /* for tests: jobs run off the profiler's thread */
extern PROF_API __thread prof__tls_t prof__tls PROF__TLS_MODEL;
PROF_API void prof__emit_slow(const char *name, uint64_t t0, uint64_t t1);
PROF_API uint64_t prof__ticks_clock(void);       /* CLOCK_MONOTONIC ns, where there is no TSC */
PROF_API prof__open *prof__open_slow(void);      /* a frame past the fast path's: first, or deep */

#define PROF__LIKELY(x)   __builtin_expect(!!(x), 1)
#define PROF__UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline uint64_t prof__ticks(void) {
#if defined(__x86_64__) && !defined(PROF_NO_TSC)
    uint64_t lo, hi;                    /* rdtsc clears the upper halves */
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (hi << 32) | lo;
#elif defined(__aarch64__) && !defined(PROF_NO_TSC)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return prof__ticks_clock();
#endif
}

static inline int prof__recording(void) {
    return __atomic_load_n(&prof__on, __ATOMIC_RELAXED);
}

/* A region opens: its frame is the thread's next, named now; the caller
   stores its start there once the clock is read. Stores, no lock: another
   thread reads the frames below `top`, and a torn read costs it a start
   time. Stores to `top` are volatile, and atomic where TSan checks
   them (an atomic store to prof__tls costs gcc a thread-pointer load). */
#if defined(__SANITIZE_THREAD__)
#define PROF__SET_TOP(v) __atomic_store_n(&prof__tls.top, (v), __ATOMIC_RELEASE)
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PROF__SET_TOP(v) __atomic_store_n(&prof__tls.top, (v), __ATOMIC_RELEASE)
#endif
#endif
#ifndef PROF__SET_TOP
#define PROF__SET_TOP(v) (prof__tls.top = (v))
#endif

static inline prof__open *prof__open_push(const char *name) {
    prof__open *f = prof__tls.top;
    if (PROF__UNLIKELY(f >= prof__tls.last)) f = prof__open_slow();
    __atomic_store_n(&f->name, name, __ATOMIC_RELAXED);
    PROF__SET_TOP(f + 1);
    return f;
}

static inline void prof__emit(const char *name, uint64_t t0, uint64_t t1) {
    prof__rec *r = prof__tls.cur;
    if (PROF__LIKELY(r < prof__tls.end)) {
        r->name = name;
        r->t1 = t1;
        __atomic_store_n(&r->t0, t0, __ATOMIC_RELEASE);
        prof__tls.cur = r + 1;
    } else {
        prof__emit_slow(name, t0, t1);
    }
}

/* -DPROF_NVTX: every region (PROF_SCOPE, PROF_SCOPE_DYN, PROF_BEGIN,
   PROF_GPU_SCOPE...) is also an NVTX range in the domain "prof", so Nsight
   Systems shows the engine's names; recording or not (Nsight's capture is
   its own). NVTX3 is header-only (the CUDA toolkit's include/nvtx3): with no
   tool attached a range is two calls that return at once. -DPROF_ROCTX does
   the same with roctx ranges for rocprof (link -lroctx64). Pushed before the
   region's clock starts and popped after it stops: their cost is not in the
   region's time. Define it for every unit, as PROF_ENABLE. */

#if defined(PROF_NVTX)
#include <nvtx3/nvToolsExt.h>
PROF_API nvtxDomainHandle_t prof__nvtx_domain(void);
/* Names go as strings registered in the domain (a tool then keeps one copy
   of each): a name is a pointer that lives as long as the program, so each
   thread remembers its handle in a small cache by that pointer; a miss
   registers it. With no tool attached there is no handle, and the name goes
   as text. */
PROF_API nvtxStringHandle_t prof__nvtx_name(const char *name);
static inline void prof__nvtx_push(const char *text, nvtxStringHandle_t h) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    if (h) {
        a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        a.message.registered = h;
    } else {
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = text;
    }
    nvtxDomainRangePushEx(prof__nvtx_domain(), &a);
}
static inline void prof__range_push(const char *name) { prof__nvtx_push(name, prof__nvtx_name(name)); }
/* a name built at run time (PROF_SCOPE_DYN's, maybe in a reused buffer): text */
static inline void prof__range_push_text(const char *text) { prof__nvtx_push(text, PROF__NULLPTR); }
static inline void prof__range_pop(void) { nvtxDomainRangePop(prof__nvtx_domain()); }
#elif defined(PROF_ROCTX)
int roctxRangePushA(const char *message);      /* roctx.h's, declared here: Debian ships no roctracer */
int roctxRangePop(void);
static inline void prof__range_push(const char *name) { (void)roctxRangePushA(name); }
#define prof__range_push_text prof__range_push
static inline void prof__range_pop(void) { (void)roctxRangePop(); }
#else
#define prof__range_push(name) ((void)0)
#define prof__range_push_text(text) ((void)0)
#define prof__range_pop()      ((void)0)
#endif

typedef struct prof__scope { const char *name; uint64_t t0; prof__open *f; } prof__scope;

static inline prof__scope prof__scope_begin(const char *name) {
    prof__scope s;
    prof__range_push(name);
    s.name = name;
    s.t0 = 0;
    s.f = PROF__NULLPTR;
    if (PROF__LIKELY(prof__recording())) {
        s.f = prof__open_push(name);
        s.t0 = prof__ticks();
        __atomic_store_n(&s.f->t0, s.t0, __ATOMIC_RELAXED);
    }
    return s;
}

static inline void prof__scope_end(prof__scope *s) {
    if (s->t0) {
        prof__emit(s->name, s->t0, prof__ticks());
        PROF__SET_TOP(s->f);            /* the region's frame is free again */
    }
    prof__range_pop();
}

/* PROF_SCOPE_DYN: the name is interned (before the clock is read) only when
   recording; outside a window it costs what PROF_SCOPE does. */
static inline prof__scope prof__scope_begin_dyn(const char *str) {
    prof__scope s;
    prof__range_push_text(str);
    s.name = str;                       /* unread unless recording */
    s.t0 = 0;
    s.f = PROF__NULLPTR;
    if (PROF__LIKELY(prof__recording())) {
        s.name = prof_intern(str, strlen(str));
        s.f = prof__open_push(s.name);
        s.t0 = prof__ticks();
        __atomic_store_n(&s.f->t0, s.t0, __ATOMIC_RELAXED);
    }
    return s;
}

#ifdef __cplusplus
} /* extern "C" */

struct prof__scope_guard {
    prof__scope s;
    explicit prof__scope_guard(const char *name) : s(prof__scope_begin(name)) {}
    prof__scope_guard(const char *str, int) : s(prof__scope_begin_dyn(str)) {}   /* PROF_SCOPE_DYN */
    ~prof__scope_guard() { prof__scope_end(&s); }
    prof__scope_guard(const prof__scope_guard &) = delete;
    prof__scope_guard &operator=(const prof__scope_guard &) = delete;
};
#define PROF__SCOPE_DECL(var, name) prof__scope_guard var(name)
#define PROF__SCOPE_DYN_DECL(var, str) prof__scope_guard var((str), 1)

struct prof__gpu_guard {
    const prof_gpu_api *api;
    void *stream;
    prof__gpu_guard(const prof_gpu_api *a, const char *name, void *s) : api(a), stream(s) {
        prof_gpu_begin(a, name, s);
    }
    ~prof__gpu_guard() { prof_gpu_end(api, stream); }
    prof__gpu_guard(const prof__gpu_guard &) = delete;
    prof__gpu_guard &operator=(const prof__gpu_guard &) = delete;
};
#define PROF__GPU_SCOPE_DECL(var, api, name, stream) prof__gpu_guard var((api), (name), PROF__VOIDP(stream))
#else
typedef struct prof__gpu_scope { const prof_gpu_api *api; void *stream; } prof__gpu_scope;
static inline prof__gpu_scope prof__gpu_scope_begin(const prof_gpu_api *api, const char *name, void *stream) {
    prof__gpu_scope s;
    s.api = api;
    s.stream = stream;
    prof_gpu_begin(api, name, stream);
    return s;
}
static inline void prof__gpu_scope_end(prof__gpu_scope *s) { prof_gpu_end(s->api, s->stream); }
#define PROF__GPU_SCOPE_DECL(var, api, name, stream)                                       \
    prof__gpu_scope var __attribute__((cleanup(prof__gpu_scope_end), unused)) =           \
        prof__gpu_scope_begin((api), (name), PROF__VOIDP(stream))
#define PROF__SCOPE_DECL(var, name) \
    prof__scope var __attribute__((cleanup(prof__scope_end), unused)) = prof__scope_begin(name)
#define PROF__SCOPE_DYN_DECL(var, str) \
    prof__scope var __attribute__((cleanup(prof__scope_end), unused)) = prof__scope_begin_dyn(str)
#endif

/* Casts in header code, which strict C++ builds of engines compile: named
   casts in C++ (-Wold-style-cast), C casts in C. */
#ifdef __cplusplus
#define PROF__SCAST(T, x) static_cast<T>(x)
#define PROF__RCAST(T, x) reinterpret_cast<T>(x)
inline void *prof__voidp(void *p) { return p; }  /* any object pointer, no cast */
#define PROF__VOIDP(p) prof__voidp(p)
#else
#define PROF__SCAST(T, x) ((T)(x))
#define PROF__RCAST(T, x) ((T)(x))
#define PROF__VOIDP(p) ((void *)(p))
#endif

/* Argument conversions with no cast that a strict C++ build flags
   (-Wold-style-cast; -Wuseless-cast when the value has the type already):
   an exact-type overload, else a static_cast. */
#ifdef __cplusplus
inline double prof__f64(double v) { return v; }
template <class T> inline double prof__f64(T v) { return static_cast<double>(v); }
inline int64_t prof__i64(int64_t v) { return v; }
template <class T> inline int64_t prof__i64(T v) { return static_cast<int64_t>(v); }
inline size_t prof__size(size_t v) { return v; }
template <class T> inline size_t prof__size(T v) { return static_cast<size_t>(v); }
#define PROF__F64(v)  prof__f64(v)
#define PROF__I64(v)  prof__i64(v)
#define PROF__SIZE(v) prof__size(v)
#else
#define PROF__F64(v)  ((double)(v))
#define PROF__I64(v)  ((int64_t)(v))
#define PROF__SIZE(v) ((size_t)(v))
#endif

#define PROF__CAT2(a, b) a##b
#define PROF__CAT(a, b) PROF__CAT2(a, b)
#define PROF__VAR(base) PROF__CAT(base, __COUNTER__)

#define PROF_INIT(cfg)        prof_init(cfg)
#define PROF_SHUTDOWN()       prof_shutdown()
#define PROF_SCOPE(name)      PROF__SCOPE_DECL(PROF__VAR(prof__scope_), name)
#define PROF_FUNCTION()       PROF_SCOPE(__func__)
#define PROF_SCOPE_DYN(str)   PROF__SCOPE_DYN_DECL(PROF__VAR(prof__scope_), str)
#define PROF_BEGIN(name)      prof_begin(name)
#define PROF_END()            prof_end()
#define PROF_INSTANT(name)    do { if (prof__recording()) prof_instant(name); } while (0)
#define PROF_COUNTER(name, v) do { if (prof__recording()) prof_counter((name), PROF__F64(v)); } while (0)
#define PROF_THREAD_NAME(name) prof_thread_name(name)
#define PROF_STEP()           prof_step()
#define PROF_ARG_INT(key, v)  do { if (prof__recording()) prof_arg_int((key), PROF__I64(v)); } while (0)
#define PROF_ARG_STR(key, s)  do { if (prof__recording()) prof_arg_str((key), (s)); } while (0)
#define PROF_FLOPS(n)         PROF_ARG_INT("flops", (n))
#define PROF_BYTES(n)         PROF_ARG_INT("bytes", (n))
#define PROF_ALLOC(ptr, bytes) prof_mem_alloc((ptr), PROF__SIZE(bytes), -1)
#define PROF_FREE(ptr)        prof_mem_free(ptr)
#define PROF_SET_RANK(r, n)   prof_set_rank((r), (n))
#define PROF_SYNC()           prof_sync()

/* GPU regions: prof_cuda.h / prof_hip.h define PROF__GPU_API (their
   prof_gpu_api) and PROF__GPU_DEVICE() (the current device). */
#define PROF_GPU_SCOPE(name, stream) PROF__GPU_SCOPE_DECL(PROF__VAR(prof__gpu_scope_), &PROF__GPU_API, name, stream)
#define PROF_GPU_BEGIN(name, stream) prof_gpu_begin(&PROF__GPU_API, (name), PROF__VOIDP(stream))
#define PROF_GPU_END(stream)         prof_gpu_end(&PROF__GPU_API, PROF__VOIDP(stream))
#define PROF_GPU_ALLOC(ptr, bytes)   prof_mem_alloc((ptr), PROF__SIZE(bytes), PROF__GPU_DEVICE())
#define PROF_GPU_FREE(ptr)           prof_mem_free(ptr)

/* ---- >>bind  the runtime calls CUDA and HIP spell alike ---------------- */

/* The runtime calls that CUDA and HIP spell alike, bound once: prof_cuda.h
   expands PROF__GPU_RUNTIME(cuda, ...), prof_hip.h PROF__GPU_RUNTIME(hip, ...),
   after defining prof__<rt>_device_props and prof__<rt>_stream_info, which
   differ; tracer and energy are the binding's (NULL: none). It defines prof__<rt>_api, prof__<rt>_device() and the allocation
   wrappers prof_<rt>Malloc / prof_<rt>Free (in C++ also for T **, as the
   runtime's own template). Every call returns the runtime's error as int,
   and leaves the thread's last error as the engine left it (PROF__GPU_KEPT). */

/* A binding's management library (PROF_ENERGY's counter: NVML, AMD SMI),
   loaded through the binding's weak dlopen, dlsym and dlerror (dl; NULL
   where the program has none): path, else the fallback (NULL: none);
   f[i] is names[i]'s call for i < n, and the first `need` must exist. The
   library's handle; NULL having said why in one line, *why the trace's
   (whys[0]: it could not be loaded, whys[1]: it lacks a call). */
typedef struct prof__gpu_dl {
    void *(*open)(const char *path, int flags);
    void *(*sym)(void *lib, const char *name);
    char *(*error)(void);
    int flags;
} prof__gpu_dl;

static inline void *prof__gpu_lib_load(const prof__gpu_dl *dl, const char *path, const char *fallback,
                                       const char *const *names, int n, int need, void **f,
                                       const char *const whys[2], const char **why) {
    char line[2 * 4096 + 512];
    if (!dl->open || !dl->sym) {
        prof_gpu_say("PROF_ENERGY: this program has no dlopen (link it with -ldl); no energy in the trace");
        *why = "no dlopen";
        return PROF__NULLPTR;
    }
    void *lib = dl->open(path, dl->flags);
    if (!lib && fallback) lib = dl->open(fallback, dl->flags);
    if (!lib) {
        const char *de = dl->error ? dl->error() : PROF__NULLPTR;
        snprintf(line, sizeof line, "PROF_ENERGY: cannot load %s (%s); no energy in the trace", path,
                 de ? de : "dlopen failed");
        prof_gpu_say(line);
        *why = whys[0];
        return PROF__NULLPTR;
    }
    int missing = 0;
    for (int i = 0; i < n; i++) missing |= !(f[i] = dl->sym(lib, names[i])) && i < need;
    if (missing) {
        size_t k = PROF__SCAST(size_t, snprintf(line, sizeof line, "PROF_ENERGY: %s lacks ", path));
        for (int i = 0; i < need && k < sizeof line; i++)
            k += PROF__SCAST(size_t, snprintf(line + k, sizeof line - k, "%s%s", i ? (i + 1 < need ? ", " : " or ") : "",
                                              names[i]));
        if (k < sizeof line) snprintf(line + k, sizeof line - k, "; no energy in the trace");
        prof_gpu_say(line);
        *why = whys[1];
        return PROF__NULLPTR;
    }
    return lib;
}

/* The runtime keeps a last error per thread, which a failing call sets and
   the engine's next rt##GetLastError reads as its own. A call of prof.h's
   that fails clears it again, unless the engine had one pending before the
   call (read first, with rt##PeekAtLastError, which resets nothing): the
   runtime has then replaced the engine's with prof.h's, which stays, so
   that the engine still sees an error. "Not ready" (an event query's "not
   yet") is not an error and sets none. The binding expands
   PROF__GPU_LAST_ERROR(rt, Err) before its first call, and each call of
   prof.h's is PROF__GPU_KEPT(rt, Err, call) in a function returning int. */
#define PROF__GPU_LAST_ERROR(rt, Err)                                                                   \
    static int prof__##rt##_kept(Err prior, Err e) {                                                    \
        if (e != rt##Success && e != rt##ErrorNotReady && prior == rt##Success) (void)rt##GetLastError(); \
        return PROF__SCAST(int, e);                                                                     \
    }
#define PROF__GPU_KEPT(rt, Err, call)                                                                   \
    do {                                                                                                \
        Err prof__prior = rt##PeekAtLastError();                                                        \
        return prof__##rt##_kept(prof__prior, (call));                                                  \
    } while (0)
#define PROF__GPU_RUNTIME(rt, label, Err, Stream, Event, tracer, energy)                                \
    static int prof__##rt##_device_count(int *n) { PROF__GPU_KEPT(rt, Err, rt##GetDeviceCount(n)); }   \
    static int prof__##rt##_get_device(int *d) { PROF__GPU_KEPT(rt, Err, rt##GetDevice(d)); }          \
    static int prof__##rt##_set_device(int d) { PROF__GPU_KEPT(rt, Err, rt##SetDevice(d)); }           \
    static int prof__##rt##_stream_create(void **s) {                                                   \
        PROF__GPU_KEPT(rt, Err, rt##StreamCreateWithFlags(PROF__RCAST(Stream *, s), rt##StreamNonBlocking)); \
    }                                                                                                   \
    static int prof__##rt##_stream_destroy(void *s) {                                                   \
        PROF__GPU_KEPT(rt, Err, rt##StreamDestroy(PROF__SCAST(Stream, s)));                             \
    }                                                                                                   \
    static int prof__##rt##_event_create(void **ev) {                                                   \
        PROF__GPU_KEPT(rt, Err, rt##EventCreate(PROF__RCAST(Event *, ev)));                             \
    }                                                                                                   \
    static int prof__##rt##_event_destroy(void *ev) {                                                   \
        PROF__GPU_KEPT(rt, Err, rt##EventDestroy(PROF__SCAST(Event, ev)));                              \
    }                                                                                                   \
    static int prof__##rt##_event_record(void *ev, void *s) {                                           \
        PROF__GPU_KEPT(rt, Err, rt##EventRecord(PROF__SCAST(Event, ev), PROF__SCAST(Stream, s)));        \
    }                                                                                                   \
    static int prof__##rt##_event_query(void *ev) {                                                     \
        PROF__GPU_KEPT(rt, Err, rt##EventQuery(PROF__SCAST(Event, ev)));                                \
    }                                                                                                   \
    static int prof__##rt##_event_sync(void *ev) {                                                      \
        PROF__GPU_KEPT(rt, Err, rt##EventSynchronize(PROF__SCAST(Event, ev)));                          \
    }                                                                                                   \
    static int prof__##rt##_elapsed(float *ms, void *a, void *b) {                                      \
        PROF__GPU_KEPT(rt, Err, rt##EventElapsedTime(ms, PROF__SCAST(Event, a), PROF__SCAST(Event, b))); \
    }                                                                                                   \
    static const char *prof__##rt##_error_name(int e) { return rt##GetErrorName(PROF__SCAST(Err, e)); } \
    static const char *prof__##rt##_error_string(int e) { return rt##GetErrorString(PROF__SCAST(Err, e)); } \
    static int prof__##rt##_pci_bus_id(char *buf, int len, int d) {                                     \
        PROF__GPU_KEPT(rt, Err, rt##DeviceGetPCIBusId(buf, len, d));                                    \
    }                                                                                                   \
    /* the legacy stream while a blocking stream captures: "implicit", an                           \
       error that leaves the capture valid, and no event may go there */                            \
    static int prof__##rt##_capturing(void *s, int *on) {                                               \
        enum rt##StreamCaptureStatus st = rt##StreamCaptureStatusNone;                                  \
        Err prior = rt##PeekAtLastError();                                                              \
        Err e = rt##StreamIsCapturing(PROF__SCAST(Stream, s), &st);                                     \
        *on = e == rt##ErrorStreamCaptureImplicit || (e == rt##Success && st != rt##StreamCaptureStatusNone); \
        prof__##rt##_kept(prior, e);                                                                    \
        return e == rt##ErrorStreamCaptureImplicit ? 0 : PROF__SCAST(int, e);                           \
    }                                                                                                   \
    static int prof__##rt##_record_free(void *ev, void *s, int *captured) {                             \
        enum rt##StreamCaptureStatus st = rt##StreamCaptureStatusNone;                                  \
        Err prior = rt##PeekAtLastError();                                                              \
        Err e = rt##StreamIsCapturing(PROF__SCAST(Stream, s), &st);                                     \
        *captured = e == rt##ErrorStreamCaptureImplicit || (e == rt##Success && st != rt##StreamCaptureStatusNone); \
        if (e != rt##Success) prof__##rt##_kept(prior, e);  /* a query that failed: recorded, as before */ \
        if (*captured) return 0;                                                                        \
        return prof__##rt##_kept(prior, rt##EventRecord(PROF__SCAST(Event, ev), PROF__SCAST(Stream, s))); \
    }                                                                                                   \
    static int prof__##rt##_relax_capture(void) {                                                       \
        enum rt##StreamCaptureMode m = rt##StreamCaptureModeRelaxed;                                    \
        PROF__GPU_KEPT(rt, Err, rt##ThreadExchangeStreamCaptureMode(&m));                               \
    }                                                                                                   \
    static const prof_gpu_api prof__##rt##_api = {                                                      \
        label, PROF__SCAST(int, rt##ErrorNotReady),                                                     \
        prof__##rt##_device_count, prof__##rt##_get_device, prof__##rt##_set_device,                    \
        prof__##rt##_device_props, prof__##rt##_stream_info, prof__##rt##_stream_create,                \
        prof__##rt##_stream_destroy, prof__##rt##_event_create, prof__##rt##_event_destroy,             \
        prof__##rt##_event_record, prof__##rt##_event_query, prof__##rt##_event_sync,                   \
        prof__##rt##_elapsed, prof__##rt##_error_name, prof__##rt##_error_string, tracer,               \
        prof__##rt##_pci_bus_id, energy, prof__##rt##_capturing, prof__##rt##_relax_capture,            \
        prof__##rt##_record_free,                                                                       \
    };                                                                                                  \
    static inline int prof__##rt##_device(void) {                                                       \
        int d = 0;                                                                                      \
        return rt##GetDevice(&d) == rt##Success ? d : 0;                                                \
    }                                                                                                   \
    static inline Err prof_##rt##Malloc(void **ptr, size_t bytes) {                                     \
        Err e = rt##Malloc(ptr, bytes);                                                                 \
        if (e == rt##Success) prof_mem_alloc(*ptr, bytes, prof__##rt##_device());                       \
        return e;                                                                                       \
    }                                                                                                   \
    static inline Err prof_##rt##Free(void *ptr) {                                                      \
        if (ptr) prof_mem_free(ptr);                                                                    \
        return rt##Free(ptr);                                                                           \
    }                                                                                                   \
    PROF__GPU_MALLOC_T(rt, Err)
/* The device properties both runtimes' structs name alike, from p into o. */
#define PROF__GPU_PROPS(o, p)                                                                           \
    do {                                                                                                \
        snprintf((o)->name, sizeof (o)->name, "%s", (p).name);                                          \
        (o)->total_mem = PROF__SCAST(int64_t, (p).totalGlobalMem);                                       \
        (o)->major = (p).major;                                                                         \
        (o)->minor = (p).minor;                                                                         \
        (o)->sms = (p).multiProcessorCount;                                                             \
        (o)->warp_size = (p).warpSize;                                                                  \
        (o)->max_threads_per_block = (p).maxThreadsPerBlock;                                            \
        (o)->max_threads_per_sm = (p).maxThreadsPerMultiProcessor;                                      \
        (o)->regs_per_block = (p).regsPerBlock;                                                         \
        (o)->smem_per_block = PROF__SCAST(int64_t, (p).sharedMemPerBlock);                               \
    } while (0)
#ifdef __cplusplus
#define PROF__GPU_MALLOC_T(rt, Err)                                                                     \
    template <class T> static inline Err prof_##rt##Malloc(T **ptr, size_t bytes) {                    \
        return prof_##rt##Malloc(reinterpret_cast<void **>(ptr), bytes);                                \
    }
#else
#define PROF__GPU_MALLOC_T(rt, Err)
#endif

/* ======================================================================== */
/*  >>disabled  Disabled: every macro is nothing                          */
/* ======================================================================== */
#else

/* Statements are ((void)0), so `if (x) PROF_STEP(); else ...` stays
   warning-free. Values an engine may compute only for a macro (counters,
   arguments, FLOPs, sizes, ranks) go into sizeof: never evaluated, no code,
   but "used" (-Wunused-variable); the config too, so that an engine's
   `prof_config cfg = {...}; PROF_INIT(&cfg);` needs no #if. Names are
   dropped unread. The functions of >>api are inline no-ops; prof_intern(s, n)
   called by name stays a macro, n unevaluated (&prof_intern is the function). */
#define PROF__NOTHING          ((void)0)
#define PROF__UNUSED(x)        ((void)sizeof(x))
#define PROF_INIT(cfg)         PROF__UNUSED(cfg)
#define PROF_SHUTDOWN()        PROF__NOTHING
#define PROF_SCOPE(name)
#define PROF_FUNCTION()
#define PROF_SCOPE_DYN(str)    PROF__UNUSED(str)     /* a name built only for it */
#define prof_intern(s, n)      (PROF__UNUSED(n), (s))  /* the name, as it was given */
#define PROF_BEGIN(name)       PROF__NOTHING
#define PROF_END()             PROF__NOTHING
#define PROF_INSTANT(name)     PROF__NOTHING
#define PROF_COUNTER(name, v)  PROF__UNUSED(v)
#define PROF_THREAD_NAME(name) PROF__NOTHING
#define PROF_STEP()            PROF__NOTHING
#define PROF_ARG_INT(key, v)   PROF__UNUSED(v)
#define PROF_ARG_STR(key, s)   PROF__UNUSED(s)
#define PROF_FLOPS(n)          PROF__UNUSED(n)
#define PROF_BYTES(n)          PROF__UNUSED(n)
#define PROF_ALLOC(ptr, bytes) (PROF__UNUSED(ptr), PROF__UNUSED(bytes))
#define PROF_FREE(ptr)         PROF__NOTHING
#define PROF_SET_RANK(r, n)    (PROF__UNUSED(r), PROF__UNUSED(n))
#define PROF_SYNC()            PROF__NOTHING
#define PROF_GPU_SCOPE(name, stream) PROF__UNUSED(stream)   /* a stream kept only for it */
#define PROF_GPU_BEGIN(name, stream) PROF__UNUSED(stream)
#define PROF_GPU_END(stream)         PROF__UNUSED(stream)
#define PROF_GPU_ALLOC(ptr, bytes)   (PROF__UNUSED(ptr), PROF__UNUSED(bytes))
#define PROF_GPU_FREE(ptr)           PROF__NOTHING

#endif /* PROF__ENABLED */
#endif /* PROF_H */

/* ======================================================================== */
/*  >>impl  Implementation                                                */
/* ======================================================================== */
/* The locks, what each guards, and the order they nest in: a thread that
   holds one takes only those indented under it, never one above it.
     prof__wk_lock        a job running (>>worker): the profiler's thread
                          takes it per job; the watchdog's dump and
                          shutdown take it to run jobs themselves
       prof__lock           the registry of threads, prof__g's state, the
                            job queue (its condition variables wait on it),
                            the schedule, the GPU core's slots and rings
         prof__pool_lock      the free chunks, the reserve, the cap (>>buffers)
         prof__act_lock       kernel capture's records (>>gpu)
         prof__gpool.lock     the GPU event pairs made ahead and given up (>>gpu)
         prof__smp.lock       PROF_SAMPLE's events, rings and samples (>>sample)
         a shard's spinlock   its live allocations (>>memory), one at a time
       prof__stream.lock    the open Perfetto stream: one part at a time (>>output)
       prof__en_lock        PROF_ENERGY's readings (>>energy)
     prof__intern_lock    the interned names (>>events): nothing under it
     prof__nvtx_lock      the NVTX domain's creation (>>events): nothing under it
   prof__lock, prof__stream.lock and prof__en_lock are never held together.
   A crash's report only tries prof__lock, for 100 ms at most (>>process). */
/* PROF_INTERNALS: the implementation's own types, and the state and
   functions it shares with the suite's tests and the prof tool, which read
   it from inside (PROF__SHARED). In the unit that compiles the
   implementation it gives those hidden external names; in a unit without
   PROF_IMPLEMENTATION it declares them, with no code, and that unit links
   an implementation compiled with PROF_INTERNALS. Not for engines: none of
   it is API. Each section keeps its shared part beside its code, outside
   the "#if PROF__BODIES" spans that hold everything else. */
#if PROF__ENABLED && !defined(PROF__IMPL_SEEN) && \
    ((defined(PROF_IMPLEMENTATION) && !defined(PROF__IMPLEMENTED)) || defined(PROF_INTERNALS))
#define PROF__IMPL_SEEN
#if defined(PROF_IMPLEMENTATION) && !defined(PROF__IMPLEMENTED)
#define PROF__IMPLEMENTED
#define PROF__BODIES 1
#else
#define PROF__BODIES 0
#endif
#ifdef PROF_INTERNALS
#define PROF__SHARED __attribute__((visibility("hidden")))
#define PROF__SHARED_DEF                /* defines what a PROF__SHARED declaration named */
#else
#define PROF__SHARED static
#define PROF__SHARED_DEF static
#endif
#if PROF__BODIES                        /* a shared variable: defined here, or declared */
#define PROF__SHARED_VAR PROF__SHARED
#define PROF__VAR_INIT(...) = __VA_ARGS__
#else
#define PROF__SHARED_VAR extern PROF__SHARED
#define PROF__VAR_INIT(...)
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Strict -std=c11 hides the POSIX/Linux declarations we need, and prof.h must
   not define _GNU_SOURCE behind the engine's back (its headers may already be
   in). These redeclarations are compatible with glibc's and musl's. */
#if !defined(__cplusplus)
extern long syscall(long number, ...);
#if !defined(CLOCK_MONOTONIC)
extern int clock_gettime(int clock_id, struct timespec *tp);
#endif
#endif
#define PROF__CLOCK_REALTIME  0 /* Linux ABI values */
#define PROF__CLOCK_MONOTONIC 1

/* The implementation is C, built as C++ too: its casts and NULLs are C's.
   Those are C++ style warnings, off for this section alone (the inline hot
   path above is clean without this). */
#ifdef __cplusplus
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wzero-as-null-pointer-constant"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuseless-cast"
#endif
extern "C" {
#endif

#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 prof__i128;  /* not ISO C: -Wpedantic would say so */
__extension__ typedef unsigned __int128 prof__u128;
#endif

/* The kinds of record, declared once: each with what its fields hold and
   its role in the walk (>>analysis): a SPAN has a length, owns arguments and
   memory events and can have children; an ARG belongs to the span that owns
   it; a POINT stands alone on its thread; a MEM event's total is the record
   after it; NONE is never shown to a sink. A new kind is a line here and a
   case in the sinks that draw it. */
#define PROF__KINDS(X)                                                                        \
    X(REGION,     SPAN)  /* name, t0, t1 */                                                   \
    X(INSTANT,    POINT) /* name, t0 */                                                       \
    X(COUNTER,    POINT) /* name, t0, t1 = double bits */                                     \
    X(ARG_INT,    ARG)   /* name = key, t0 = when, t1 = value */                              \
    X(ARG_STR,    ARG)   /* name = key, t0 = when, t1 = const char * */                       \
    X(STEP,       SPAN)  /* t0, t1, aux = step number */                                      \
    X(SYNC,       POINT) /* t0, aux = sync number */                                          \
    X(GPU_REGION, SPAN)  /* a region's CPU side: name, t0, t1, aux = correlation */           \
    X(MEM,        MEM)   /* name = address, t1 = +/- bytes, aux = device code */              \
    X(MEM_TOTAL,  NONE)  /* t1 = bytes allocated on that device after it */                   \
    X(CLIPPED,    SPAN)  /* collected only: a region that began before its cycle's window,    \
                            t0 moved to the window's start */                                 \
    X(UNCLOSED,   NONE)  /* name, t0: a PROF_BEGIN never ended (evicted from a full stack,    \
                            or open at shutdown); reported, not drawn */                      \
    X(OPEN,       SPAN)  /* collected only: a region still open at a save or a watchdog's     \
                            dump, drawn up to it (t1: its time) */                            \
    X(THREAD,     NONE)  /* retired store only: the records after it are thread aux's */
#define PROF__KIND_ENUM(k, role) PROF__K_##k,
enum { PROF__KINDS(PROF__KIND_ENUM) PROF__K_COUNT };
enum { PROF__R_NONE, PROF__R_SPAN, PROF__R_ARG, PROF__R_POINT, PROF__R_MEM };
#define PROF__KIND_ROLE(k, role) PROF__R_##role,
static const unsigned char prof__role[16] = { PROF__KINDS(PROF__KIND_ROLE) };
typedef char prof__kinds_fit_4_bits[PROF__K_COUNT <= 16 ? 1 : -1];    /* prof__ev.kind */
/* What every format says of a CLIPPED and an OPEN region (args.clipped, args.open). */
#define PROF__CLIPPED_MARK "began before this trace"
#define PROF__OPEN_MARK    "still running at the end of this trace"

#define PROF__CHUNK_BYTES  65536u
#define PROF__CHUNK_RECS   (PROF__CHUNK_BYTES / sizeof(prof__rec) - 1)
#define PROF__STACK_MAX    256
#define PROF__DEFAULT_MB   64
#define PROF__DEFAULT_OUT  "prof_trace_{pid}.json"
#define PROF__PATH         4096         /* every path, with its NUL (Linux's PATH_MAX): longer is an error, never cut */

/* ---- the options: one row each, in the order they are read (a message per
   malformed value, in this order; a column may use the rows read before it,
   as PROF_OUTPUT's default follows PROF_FORMAT's). The readers (>>env) give
   a field of prof__g.opt per row, from the default, then prof_config, then
   the environment, and check each prof_config field's type at compile time;
   tests/docs/check_env.py checks the rows against prof_config, the top
   comment's ENVIRONMENT list and docs/options.md.
   How to add an option:
     1. a row here: variable ("" for config only), prof_config field, kind,
        default, range, the form a malformed value is told it must have,
        what happens then, one line of doc;
     2. the field in prof_config (>>api), of its kind's type; read
        prof__g.opt.<field> where it is used;
     3. its entry in ENVIRONMENT above; python3 tests/docs/check_env.py --write.
   Kinds (the field's type; prof_config's 0 is the default everywhere):
     BOOL   int: 0 or 1; in the config nonzero is on, PROF_OFF off
     INT    int, a whole number lo..hi; the config's if above 0
     REAL   double, lo..hi; 0 (config: PROF_OFF) is off, stored as 0
     MIB    size_t, a whole number of MiB lo..hi
     PATH   a path template, kept in char[PROF__PATH]
     SPEC   a string read by prof__spec_<field> into a prof__opt_<field>
     SCHED  the same, a prof_schedule in the config
     ALIAS  another variable for the BOOL named by field, read before it
     LIB    a binding's library, read where it is loaded: a row of the
            binding's own table (PROF__CUDA_LIBS in prof_cuda.h,
            PROF__HIP_LIBS in prof_hip.h), for the docs only (field none)                                        */
#define PROF__FORM_SCHEDULE "of the form skip_first=N,wait=N,warmup=N,active=N,repeat=N with active >= 1"
#define PROF__FORM_TABLE                                                                                      \
    "of the form sort=self_cpu|cpu_total|cpu_avg|cpu_min|cpu_max|calls|flops|name|self_gpu|gpu_total|gpu_avg|" \
    "cpu_mem|self_cpu_mem|gpu_mem|self_gpu_mem,rows=N[,group=args|thread|args+thread|domain|capture][,ranks=all]"   \
    "[,percentiles]"
/* PROF_COUNTERS's counters, in the order of their bits (>>counters). */
#define PROF__CTR_N 5
static const char *const prof__ctr_names[PROF__CTR_N] = { "task-clock", "context-switches", "page-faults",
                                                          "cycles", "instructions" };
#define PROF__FORM_COUNTERS                                                                                   \
    "a comma-separated list of task-clock, context-switches, page-faults, cycles, instructions"
#define PROF__OPTIONS(X)                                                                                      \
    X("PROF_FORMAT", format, SPEC, "", 0, 0, prof__fmt_forms(), "the output's extension decides",              \
      "a trace format by its name (PROF__FORMATS), whatever the extension (default: the extension decides)")  \
    X("PROF_OUTPUT", output, PATH, "", 0, 0, "", prof__fmt_instead(o->format),                               \
      "trace path; {pid}, {rank}, {cycle} are replaced (default prof_trace_{pid} and the format's extension)") \
    X("PROF_BUFFER_MB", buffer_mb, MIB, PROF__DEFAULT_MB, 1, 0x7fffffff, "a whole number of MiB above 0", "",   \
      "cap on recorder memory; beyond it events are dropped, counted, reported and stored in the trace")       \
    X("PROF_DISABLE", disable, BOOL, 0, 0, 1, "0 or 1", "ignoring it", "1: record nothing at run time")        \
    X("", quiet, BOOL, 0, 0, 1, "0 or 1", "ignoring it", "no informational lines on stderr")                    \
    X("PROF_SCHEDULE", schedule, SCHED, "", 0, 0, PROF__FORM_SCHEDULE, "ignoring it",                          \
      "skip_first=N,wait=N,warmup=N,active=N,repeat=N (torch.profiler.schedule); one trace per cycle")        \
    X("PROF_TABLE", table, SPEC, "", 0, 0, PROF__FORM_TABLE, "no table",                                       \
      "print the summary table per cycle, e.g. sort=self_cpu,rows=10")                                         \
    X("PROF_TB_DIR", tb_dir, PATH, "", 0, 0, "", "no TensorBoard traces",                                      \
      "also write each cycle for TensorBoard's profiler plugin, in this directory")                            \
    X("PROF_STACKS", stacks, PATH, "", 0, 0, "", "no folded stacks",                                           \
      "also write folded stacks to this path (flamegraph.pl, speedscope)")                                     \
    X("PROF_RANKS", ranks, SPEC, "all", 0, 0, "'all' or a list of ranks like 0,2-3", "recording on every rank", \
      "ranks that record, e.g. 0 or 0,2-3")                                                                    \
    X("PROF_CLOCK", clock, SPEC, "tsc", 0, 0, "tsc or monotonic", "ignoring it",                               \
      "monotonic: CLOCK_MONOTONIC instead of the TSC (at the first init)")                                     \
    X("PROF_LOG", log, PATH, "", 0, 0, "", "speaking on stderr",                                               \
      "messages and tables go to this file, not stderr (the profiler never writes to stdout)")                 \
    X("PROF_SIGNALS", signals, BOOL, 1, 0, 1, "0 or 1", "ignoring it",                                         \
      "0: leave SIGINT/SIGTERM and crash signals alone (default: on SIGINT/SIGTERM the trace is written, "     \
      "then the signal's default action; a crash says what each thread is inside and what is lost, then the "  \
      "previous handler runs)")                                                                                \
    X("PROF_MERGE_THREADS", merge_threads, BOOL, 1, 0, 1, "0 or 1", "ignoring it",                             \
      "0: a track per OS thread (default: alike-named threads that never overlap share one)")                  \
    X("PROF_TRIGGER", trigger, SPEC, "", 0, 0, "signal or file:<path>", "recording as if it were unset",       \
      "signal or file:<path>: record nothing until SIGUSR2 arrives or the file appears or changes (looked "   \
      "for at steps, once a second at most; never removed: ranks may share it); then PROF_TRIGGER_STEPS "      \
      "steps from the next step, or from the step the file names (step=1200), a trace per trigger")           \
    X("PROF_TRIGGER_STEPS", trigger_steps, INT, 5, 1, 999999, "a number of steps from 1 to 999999", "",        \
      "steps a trigger records")                                                                               \
    X("PROF_PEAK_TFLOPS", peak_tflops, REAL, 0, 0, 1e12, "a positive number", "no peak",                       \
      "the device's peak TFLOP/s, for the table's % peak (default: a known GPU's)")                            \
    X("PROF_PEAK_GBPS", peak_gbps, REAL, 0, 0, 1e12, "a positive number", "no peak",                           \
      "the device's peak GB/s, likewise")                                                                      \
    X("PROF_FLIGHT", flight_steps, INT, 0, 0, 99999, "a number of steps from 0 to 99999", "no flight recorder", \
      "N: the flight recorder: every step recorded, the last N kept, written only when a step takes "          \
      "PROF_FLIGHT_SLOW times the median, or a trigger asks (at most once per PROF_FLIGHT_COOLDOWN seconds)")  \
    X("PROF_FLIGHT_SLOW", flight_slow, REAL, 3, 0, 1e9, "a number from 0", "",                                 \
      "a slow step, for the flight recorder: this many times the median of the steps before it (0: never)")    \
    X("PROF_FLIGHT_COOLDOWN", flight_cooldown, REAL, 300, 0, 1e9, "a number from 0", "",                       \
      "seconds between two flight recorder dumps (0: no limit)")                                               \
    X("PROF_WATCHDOG", watchdog_s, REAL, 0, 0, 1e7, "a number of seconds from 0", "no watchdog",               \
      "no PROF_STEP for this many seconds: say on stderr what every thread is inside and which GPU regions "   \
      "have not completed; with PROF_FLIGHT, dump the ring too")                                               \
    X("", trace_ready_at_step, BOOL, 0, 0, 1, "0 or 1", "ignoring it",                                         \
      "write each cycle (and call on_trace_ready) inside PROF_STEP, on the thread that steps")                 \
    X("PROF_CUPTI", kernels, ALIAS, 0, 0, 1, "0 or 1", "ignoring it",                                          \
      "the CUDA spelling of PROF_KERNELS (which decides when both are set)")                                   \
    X("PROF_KERNELS", kernels, BOOL, 0, 0, 1, "0 or 1", "ignoring it",                                         \
      "1: every kernel, copy and fill, and the runtime calls that launched them: CUPTI (prof_cuda.h), "        \
      "rocprofiler-sdk (prof_hip.h; ROCm 6.2 or later)")                                                       \
    X("PROF_ENERGY", energy, BOOL, 0, 0, 1, "0 or 1", "ignoring it",                                           \
      "1: each recorded step's joules per GPU (\"GPU 0 energy (J)\"), a power track per GPU and the table's "   \
      "J/step, from the energy counter of the GPU binding (prof_cuda.h, prof_hip.h), read on the profiler's "  \
      "thread")                                                                                                \
    X("PROF_GPU_METRICS", gpu_metrics, BOOL, 0, 0, 1, "0 or 1", "ignoring it",                                 \
      "1: device tracks while recording (SM and memory clocks, utilisation, memory used, throttle reasons, "    \
      "PCIe), read with PROF_ENERGY's counter, which it turns on")                                             \
    X("PROF_SAMPLE", sample_hz, INT, 0, 0, 20000, "a number of samples per second from 0 to 20000", "no sampling",\
      "HZ: while a window records, every thread's native call stack sampled HZ times per second of its CPU " \
      "time (perf_event_open; build with -fno-omit-frame-pointer for whole stacks)")                           \
    X("PROF_COUNTERS", counters, SPEC, "", 0, 0, PROF__FORM_COUNTERS, "no counters",                           \
      "the counters of task-clock, context-switches, page-faults, cycles, instructions to count per thread "   \
      "and recorded step (perf_event_open, read by the profiler's thread): counter tracks, and the table's "   \
      "on-CPU time, waiting and IPC per thread")

/* What the SPEC and SCHED rows hold, once read (>>env). */
typedef struct { prof_schedule s; int on; } prof__opt_schedule;
typedef struct { long rows; prof_sort sort; int group, all_ranks; } prof__opt_table;   /* rows -1: no table */
typedef struct { int kind; char path[PROF__PATH]; } prof__opt_trigger;                 /* PROF__TRIG_* */
typedef char prof__opt_ranks[256];      /* "" = all */
typedef int prof__opt_format;           /* PROF__FMT_*; -1: by the output's extension */
typedef int prof__opt_clock;            /* 1: CLOCK_MONOTONIC */
typedef unsigned prof__opt_counters;    /* PROF_COUNTERS: a bit per prof__ctr_names entry */
#define PROF__OPT_DECL_BOOL(f)  int f;
#define PROF__OPT_DECL_INT(f)   int f;
#define PROF__OPT_DECL_REAL(f)  double f;
#define PROF__OPT_DECL_MIB(f)   size_t f;
#define PROF__OPT_DECL_PATH(f)  char f[PROF__PATH];
#define PROF__OPT_DECL_SPEC(f)  prof__opt_##f f;
#define PROF__OPT_DECL_SCHED(f) prof__opt_##f f;
#define PROF__OPT_DECL_ALIAS(f)
#define PROF__OPT_DECL_LIB(f)
#define PROF__OPT_DECL(var, f, kind, ...) PROF__OPT_DECL_##kind(f)
typedef struct prof__opts { PROF__OPTIONS(PROF__OPT_DECL) } prof__opts;

typedef struct prof__chunk {
    struct prof__chunk *next;   /* set once by the producer, release */
    char pad[sizeof(prof__rec) - sizeof(void *)];
    prof__rec recs[PROF__CHUNK_RECS];
} prof__chunk;

typedef prof__open prof__frame;         /* PROF_BEGIN's stack: a name and its start, in record units */

struct prof__tinfo { long tid; const char *name; uint64_t pt; /* pthread_self(), as tracers name threads */ };

typedef struct prof__ev {               /* a record taken by the collector: 32 bytes, */
    const char *name;                   /* a cycle holds one per event */
    uint64_t t0, t1;
    uint32_t aux;
    uint32_t kind : 4;                  /* PROF__K_* */
    uint32_t th : 28;                   /* index into prof__g.rec.tinfo (threads
                                           ever seen: 268 million at most) */
} prof__ev;

/* One per recording thread. Producer fields are touched only by the owner;
   the collector reads published records and owns head/head_pos. */
typedef struct prof__thread {
    struct prof__thread *next;          /* registry, under prof__lock */
    prof__chunk *head;                  /* collector: oldest live chunk */
    uint32_t head_pos;                  /* collector: records taken from head */
    prof__chunk *tail;                  /* producer: current chunk */
    prof__rec *cur, *lim;               /* producer: slow-path view of tail */
    uint64_t dropped;                   /* atomic */
    const char *name;                   /* atomic */
    long tid;
    uint32_t idx;                       /* index into prof__g.rec.tinfo, never reused */
    int sp;                             /* PROF_BEGIN/END stack */
    prof__frame stack[PROF__STACK_MAX];
    int *gpu_dead;                      /* its GPU pairs' ring learns of its exit */
    struct prof__gtls_t *gpu;           /* its GPU regions' state (prof__gtlsp), freed at its exit */
    void *nvtx;                         /* -DPROF_NVTX: its names' handles (prof__nvtx_cache), too */
    prof__tls_t *tls;                   /* its prof__tls (the top of its open regions)
                                           while it lives; under prof__lock */
    prof__open open[PROF__OPEN_MAX + 1];/* PROF_SCOPEs open now, up to prof__tls.top */
    int retired;                        /* the store of exited threads' records */
    int dead;                           /* exited with more than a chunk: the collector frees it */
    int pinned;                         /* a collection is draining it (>>collect); under prof__lock */
} prof__thread;

/* Schedule actions, as torch.profiler.ProfilerAction. */
enum { PROF__NONE, PROF__WARMUP, PROF__RECORD, PROF__RECORD_AND_SAVE };

PROF__SHARED_VAR struct prof__state {
    int inited, shut;                   /* under prof__lock; inited also read atomically */
    int disabled;                       /* recording off: the user's word or an unchosen rank */
    prof__opts opt;                     /* the options as the table's readers left them (>>env) */
    struct {                            /* what the config and the environment asked for */
        char output[PROF__PATH];
        char tb_dir[PROF__PATH];
        char stacks[PROF__PATH];
        prof_trace_ready_fn on_ready;
        void *user_data;
        int quiet;
        int user_disabled;              /* PROF_DISABLE or cfg.disable */
        char ranks[256];                /* ranks that record; "" = all */
        long table_rows;                /* -1: no table; 0: every row */
        prof_sort table_sort;
        int table_group, table_all_ranks;
        int separate_threads;           /* !opt.merge_threads */
        int format;                     /* opt.format: PROF__FMT_*; -1: by extension */
        double peak_tflops, peak_gbps;  /* cfg / PROF_PEAK_*: 0 unknown */
        int cupti;                      /* opt.kernels: kernel capture */
        int energy;                     /* cfg.energy / PROF_ENERGY: joules per step (>>energy) */
        int gpu_metrics;                /* cfg.gpu_metrics / PROF_GPU_METRICS: device tracks (>>energy) */
        int ready_at_step;              /* cfg.trace_ready_at_step: no profiler's thread */
        int flight;                     /* PROF_FLIGHT: steps the flight recorder keeps; 0 off */
        double flight_slow, flight_cooldown;
        double watchdog;                /* PROF_WATCHDOG: seconds without a step; 0 off */
        int trigger;                    /* PROF__TRIG_*: record only when asked */
        int trigger_steps;
        char trigger_path[PROF__PATH];  /* PROF_TRIGGER=file:<path> */
        prof_schedule sched;
        int has_sched;
    } conf;
    struct {                            /* ns = mono0 + (tick - tick0) * ns_per_tick */
        int fallback;                   /* the TSC is not invariant: CLOCK_MONOTONIC */
        uint64_t tick0;
        int64_t mono0, wall0;
        double ns_per_tick;
        uint64_t ns_per_tick_q32;       /* the same in 32.32 fixed point, for the writer */
        uint64_t fb_tsc0;               /* fallback: TSC at init ...         */
        double fb_ns_per_tsc;           /* ... and its last measured rate    */
    } clk;
    struct {                            /* where the schedule stands */
        int64_t step;
        uint64_t step_t0;               /* tick at which the current step began */
        uint64_t win_t0;                /* tick at which the recording window began */
        int lazy;                       /* the first region inited: step 0 begins with it */
        int cycle;                      /* cycles saved so far */
        uint64_t saved_to;              /* tick at which the last saved cycle ended */
        uint32_t syncs;                 /* PROF_SYNC calls so far, recorded or not */
    } run;
    struct {                            /* the recorder: threads and their chunks */
        pthread_key_t key;
        prof__thread *threads;
        struct prof__tinfo *tinfo;      /* every thread ever seen: tid, name */
        size_t ntinfo, tinfo_cap;
        struct prof__ev *spill;         /* taken early: began after a cycle's end */
        size_t nspill, spillcap;
        prof__thread retired;           /* exited threads' records, packed, each
                                           run after a PROF__K_THREAD record */
        prof__chunk *pool;              /* under prof__pool_lock, with chunks and npool */
        size_t chunks, chunks_max;      /* allocated (pooled, in use, being made); the cap */
        size_t npool;                   /* chunks in the pool */
        size_t in_use;                  /* atomic: chunks holding records (a crash's loss) */
        size_t held;                    /* atomic: chunks' worth of collected cycles the
                                           profiler's thread holds, not yet written */
        unsigned pending;               /* atomic: jobs handed to it and not done (>>worker) */
        uint64_t dropped_dead;          /* drops of threads already freed */
        uint64_t dropped_behind;        /* atomic: of all drops, those while the writer worked */
        uint64_t behind_reported;
        uint64_t dropped_reported;
        uint64_t lost_past_end;         /* regions that outlived a saved cycle into unrecorded
                                           steps, and were not drawn in it (prof__opens_read_locked) */
        prof__ev *opened;               /* the regions open at the last save, drawn to its end */
        size_t nopened;
    } rec;
    struct {                            /* this process among others */
        int copy;                       /* which copy of prof.h in the process: 1, 2, ... (0: unknown) */
        int copy_fd;                    /* the socket that claims that number, when copy > 0 */
        int fork_child;                 /* a fork()'s child */
        int mute;                       /* forked after init: records nothing, ever */
        int signals;                    /* cfg / PROF_SIGNALS: handle SIGINT, SIGTERM, crashes */
        int key_made;                   /* rec.key exists */
    } proc;
    struct {                            /* this process in a distributed run */
        int rank, world;                /* rank -1: not a distributed run */
        int rank_set;                   /* by prof_set_rank: the environment yields */
    } who;
    prof_stats stats;
} prof__g;                              /* zero is the state before init */
PROF__SHARED_VAR pthread_mutex_t prof__lock PROF__VAR_INIT(PTHREAD_MUTEX_INITIALIZER);
PROF__SHARED_VAR FILE *prof__logf;     /* PROF_LOG's file, NULL: stderr (prof__log) */

#if PROF__BODIES

/* Where the profiler speaks: stderr, or PROF_LOG's file. Never stdout, which
   is the engine's (generated text, results). Atomic: read without the lock. */
static FILE *prof__log(void) {
    FILE *f = __atomic_load_n(&prof__logf, __ATOMIC_ACQUIRE);
    return f ? f : stderr;
}
unsigned char prof__on = 1;             /* 1 before init: the first event inits */
__thread prof__tls_t prof__tls PROF__TLS_MODEL;
static __thread prof__thread *prof__self;
static __thread struct prof__gtls_t *prof__gtlsp;  /* >>gpu: on the heap, not in TLS (see there) */
static __thread void *prof__nvtx_cache;             /* -DPROF_NVTX's names, the same way */

/* Code that runs rarely: init, configuration, shutdown, reports, crashes,
   the watchdog. The compiler optimizes it for size, keeps calls to it off
   its callers' straight path and spends less time compiling it. Never on a
   writer's or the collection's path: a function that only cold code calls
   is compiled as cold too. */
#define PROF__COLD __attribute__((cold))

/* One line on stderr (or PROF_LOG's file); the profiler's only way to speak.
   Built whole and written at once so lines from several threads do not
   interleave. */
PROF__COLD __attribute__((format(printf, 1, 2))) static void prof__msg(const char *fmt, ...) {
    char line[2 * 4096 + 512];          /* room for two whole paths and the words around them */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    FILE *f = prof__log();
    fprintf(f, "prof: %s\n", line);
    fflush(f);
}

/* A value from outside (the environment) as a message shows it: control
   bytes escaped (\\n, \\xNN) so the message stays one line, and a long value
   cut to its first 200 bytes with its length said, so the explanation after
   it is never lost. Into buf[PROF__QUOTE]. */
#endif /* PROF__BODIES */
#define PROF__QUOTE 256
#if PROF__BODIES
PROF__SHARED const char *prof__q(const char *s, char *buf) {
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(s), o = 0, i = 0;
    for (; i < n && o < 200; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') { buf[o++] = '\\'; buf[o++] = 'n'; }
        else if (c < 0x20 || c == 0x7f) { buf[o++] = '\\'; buf[o++] = 'x'; buf[o++] = hex[c >> 4]; buf[o++] = hex[c & 15]; }
        else buf[o++] = (char)c;
    }
    if (i < n) o += (size_t)snprintf(buf + o, PROF__QUOTE - o, "...(%zu bytes)", n);
    buf[o] = 0;
    return buf;
}

/* For the few functions whose inlining the writers' speed rests on. */
#define PROF__INLINE static inline __attribute__((always_inline))

/* The one array-growth helper: room for need elements of size bytes at p,
   doubling. The (possibly moved) array, or NULL with p and *cap untouched
   when memory runs out or the size would overflow. */
static void *prof__grow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return p;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > (size_t)-1 / 2) return NULL;
        nc *= 2;
    }
    if (nc > (size_t)-1 / size) return NULL;
    void *q = realloc(p, nc * size);
    if (q) *cap = nc;
    return q;
}

/* ---- >>clock  timestamps: TSC or CLOCK_MONOTONIC, in ns at write time ---- */

static int64_t prof__mono_ns(void) {
    struct timespec ts;
    clock_gettime(PROF__CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t prof__ticks_clock(void) { return (uint64_t)prof__mono_ns(); }

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(PROF_NO_TSC)
#define PROF__TICKS_ARE_NS 0
#else
#define PROF__TICKS_ARE_NS 1
#endif

/* Set once at init; read without the lock by threads that may race it. */
static int prof__fallback(void) { return __atomic_load_n(&prof__g.clk.fallback, __ATOMIC_RELAXED); }

/* A (tick, monotonic ns) pair read as close together as this CPU allows. */
static void prof__clock_pair(uint64_t *tick, int64_t *mono) {
    uint64_t best = (uint64_t)-1;
    *tick = 0;
    *mono = 0;
    for (int i = 0; i < 7; i++) {
        uint64_t a = prof__ticks();
        int64_t m = prof__mono_ns();
        uint64_t b = prof__ticks();
        if (b - a < best) { best = b - a; *tick = a + (b - a) / 2; *mono = m; }
    }
}

/* Whether rdtsc runs at a constant rate, in step on every core. */
static int prof__tsc_invariant(void) {
#if defined(__x86_64__) && !defined(PROF_NO_TSC)
    uint32_t r[4];  /* eax ebx ecx edx; an array: nvcc's front end flags unread outputs */
    __asm__ __volatile__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(0x80000000u), "c"(0));
    if (r[0] >= 0x80000007u) {
        __asm__ __volatile__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(0x80000007u), "c"(0));
        if (r[3] & (1u << 8)) return 1;
    }
    /* Hypervisors often hide the bit; the kernel's own choice is a good proxy. */
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    char buf[16] = { 0 };
    if (f) { if (!fgets(buf, sizeof buf, f)) buf[0] = 0; fclose(f); }
    return strncmp(buf, "tsc", 3) == 0;
#else
    return 1;
#endif
}

/* Refines ns_per_tick from init to now; on very short runs, sleeps until
   20 ms have passed since init so the calibration error stays below a few
   ns per ms (asleep: a run of many short processes, a test suite, must not
   spend that on a spin). Threads that step or shut down at once may all
   calibrate, and writers read the result without the lock: the fields are
   atomics. */
static void prof__calibrate(void) {
    double npt = 1.0;
    if (!PROF__TICKS_ARE_NS && !prof__fallback()) {
        uint64_t t; int64_t m;
        for (prof__clock_pair(&t, &m); m - prof__g.clk.mono0 < 20000000; prof__clock_pair(&t, &m)) {
            struct timespec d = { 0, (long)(20000000 - (m - prof__g.clk.mono0)) };
            syscall(SYS_nanosleep, &d, NULL);   /* nanosleep() is POSIX: hidden by -std=c11 */
        }
        npt = (double)(m - prof__g.clk.mono0) / (double)(t - prof__g.clk.tick0);
    }
    uint64_t q32 = (uint64_t)(npt * 4294967296.0 + 0.5);
    __atomic_store(&prof__g.clk.ns_per_tick, &npt, __ATOMIC_RELAXED);
    __atomic_store_n(&prof__g.clk.ns_per_tick_q32, q32, __ATOMIC_RELAXED);
}

static double prof__ns_per_tick(void) {
    double v;
    __atomic_load(&prof__g.clk.ns_per_tick, &v, __ATOMIC_RELAXED);
    return v;
}

/* The calibration as ticks are converted with it: ns per tick in 32.32
   fixed point, or a double where there is no 128-bit product. A writer reads
   it once per trace (one scale for the file, and no atomic load per event). */
#endif /* PROF__BODIES */
#ifdef __SIZEOF_INT128__
typedef uint64_t prof__scale;
#else
typedef double prof__scale;
#endif
#if PROF__BODIES
#ifdef __SIZEOF_INT128__
static prof__scale prof__scale_now(void) { return __atomic_load_n(&prof__g.clk.ns_per_tick_q32, __ATOMIC_RELAXED); }
#else
static prof__scale prof__scale_now(void) { return prof__ns_per_tick(); }
#endif

static int64_t prof__tick_ns_by(uint64_t tick, prof__scale s) {
    int64_t d = (int64_t)(tick - prof__g.clk.tick0);
#ifdef __SIZEOF_INT128__
    return prof__g.clk.mono0 + (int64_t)(((prof__i128)d * (prof__i128)s) >> 32);
#else
    return prof__g.clk.mono0 + (int64_t)((double)d * s);
#endif
}

PROF__SHARED int64_t prof__tick_ns(uint64_t tick) { return prof__tick_ns_by(tick, prof__scale_now()); }

#endif /* PROF__BODIES */
/* A writer's clock, read once per trace: ns = off + (tick - tick0) * scale,
   the offset already holding the shift to the trace's own origin. Kept in
   the writer, so converting a tick is a subtraction, a product and an add. */
typedef struct prof__tclock { uint64_t tick0; int64_t off; prof__scale scale; } prof__tclock;
#if PROF__BODIES

/* ts counts ns from baseTimeNanoseconds, a whole second of the wall clock
   just before init: small values keep the readers' doubles exact. ns since
   baseTimeNanoseconds = prof__tick_ns() + this. */
static int64_t prof__trace_base(void) { return prof__g.clk.wall0 - prof__g.clk.wall0 % 1000000000; }
static int64_t prof__trace_shift(void) { return prof__g.clk.wall0 - prof__trace_base() - prof__g.clk.mono0; }

static prof__tclock prof__tclock_now(int64_t shift) {
    prof__tclock c;
    c.tick0 = prof__g.clk.tick0;
    c.off = prof__g.clk.mono0 + shift;
    c.scale = prof__scale_now();
    return c;
}

static inline int64_t prof__tclock_ns(const prof__tclock *c, uint64_t tick) {
    int64_t d = (int64_t)(tick - c->tick0);
#ifdef __SIZEOF_INT128__
    /* a tick after tick0 (all but a clipped region's start): the same
       product unsigned, one multiply where the signed one takes three */
    if (PROF__LIKELY(d >= 0)) return c->off + (int64_t)(((prof__u128)(uint64_t)d * c->scale) >> 32);
    return c->off + (int64_t)(((prof__i128)d * (prof__i128)c->scale) >> 32);
#else
    return c->off + (int64_t)((double)d * c->scale);
#endif
}

/* The current time in the units records store: ticks, or ns in fallback. */
static uint64_t prof__now(void) {
    return prof__fallback() ? (uint64_t)prof__mono_ns() : prof__ticks();
}

/* ---- >>buffers  per-thread chunks of records, registration, the cap ----- */

static void prof__init_locked(const prof_config *cfg);
static void prof__gpu_autostart_due(void);
static void prof__wk_thread_locked(void);

static prof__thread *prof__register(void) {
    prof__thread *th = (prof__thread *)calloc(1, sizeof *th);
    if (!th) return NULL;
    th->tid = (long)syscall(SYS_gettid);
    pthread_mutex_lock(&prof__lock);
    if (!prof__g.inited) {              /* no PROF_INIT: an event's first slow path inits */
        prof__init_locked(NULL);
        prof__g.run.lazy = 1;
    }
    struct prof__tinfo *ti = (struct prof__tinfo *)prof__grow(prof__g.rec.tinfo, &prof__g.rec.tinfo_cap,
                                                               prof__g.rec.ntinfo + 1, sizeof *ti);
    if (!ti) { pthread_mutex_unlock(&prof__lock); free(th); return NULL; }
    prof__g.rec.tinfo = ti;
    th->idx = (uint32_t)prof__g.rec.ntinfo++;
    ti[th->idx].tid = th->tid;
    ti[th->idx].pt = (uint64_t)pthread_self();
    ti[th->idx].name = NULL;
    th->next = prof__g.rec.threads;
    prof__g.rec.threads = th;
    th->tls = &prof__tls;
    if (!prof__tls.top) {               /* frames in the sink stay there: regions are open in it */
        prof__tls.top = th->open;
        prof__tls.last = th->open + PROF__OPEN_MAX;
    }
    prof__wk_thread_locked();           /* its counters and sampling from now */
    pthread_mutex_unlock(&prof__lock);
    pthread_setspecific(prof__g.rec.key, th);
    prof__self = th;
    prof__gpu_autostart_due();          /* a lazy start: kernel capture with it */
    return th;
}

/* Frames for threads that cannot register (out of memory) or have exited
   (C++ thread_local destructors may still open regions): written, never
   read. */
static prof__open prof__open_sink[PROF__OPEN_MAX + 1];

prof__open *prof__open_slow(void) {
    if (prof__tls.top) return prof__tls.last;       /* deeper than PROF__OPEN_MAX */
    if (!prof__self) prof__register();              /* points top at its frames */
    if (!prof__tls.top) {
        prof__tls.top = prof__open_sink;
        prof__tls.last = prof__open_sink + PROF__OPEN_MAX;
    }
    return prof__tls.top;
}

/* Marks every slot of a chunk unwritten. Only kind, aux and t0 need it:
   t0 == 0 is what the collector reads, and the inline path leaves kind at 0
   (a region). Those three are a record's last 16 bytes: one store each,
   four records a turn (1.75 instructions a record, against 5 field by
   field). It runs on the recording thread when the reserve's helper has not
   kept up (a long cycle on a busy machine, or under callgrind, which runs
   one thread at a time): 2,047 records' worth per chunk, 4.4 instructions
   more per region field by field. */
typedef char prof__rec_tail_is_16[offsetof(prof__rec, kind) + 16 == sizeof(prof__rec) ? 1 : -1];
#define PROF__REC_CLEAR(r) memset(&(r)->kind, 0, 16)
static void prof__chunk_clear(prof__chunk *c) {
    c->next = NULL;
    size_t i = 0;
    for (; i + 4 <= PROF__CHUNK_RECS; i += 4) {
        PROF__REC_CLEAR(&c->recs[i]);
        PROF__REC_CLEAR(&c->recs[i + 1]);
        PROF__REC_CLEAR(&c->recs[i + 2]);
        PROF__REC_CLEAR(&c->recs[i + 3]);
    }
    for (; i < PROF__CHUNK_RECS; i++) PROF__REC_CLEAR(&c->recs[i]);
}

/* FRESH MEMORY. A new chunk's 16 pages fault when first written: in a long
   cycle (no schedule) that would happen in the recording thread, and cost a
   recorded region half again its time. A helper thread keeps a reserve of
   PROF__RESERVE chunks allocated and written (so faulted) in the pool,
   within the cap: each refill that takes one wakes it to make another.
   Recycled chunks (a schedule, streaming) keep the pool full and the helper
   asleep. It is started at init when recording, and joined at shutdown
   (before dlclose unmaps it); a fork's child has none. If it cannot run,
   refills allocate themselves.
   THE POOL has a lock of its own, held for a pointer's move: a refill never
   waits for the profiler's thread (>>worker), which holds prof__lock and
   collects at the same time. What that thread holds of collected cycles,
   not yet written, counts against the cap with the chunks in use
   (prof__g.rec.held): when the writer falls behind, recording drops and
   counts, it never waits. */
#define PROF__RESERVE 64                /* 4 MiB */

static pthread_mutex_t prof__pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t prof__res_cv = PTHREAD_COND_INITIALIZER;
static pthread_t prof__res_thread;
static int prof__res_running;           /* atomic: the helper exists */
static int prof__res_stop;              /* under prof__pool_lock */

/* Whether the profiler has shut down: read without prof__lock. */
static int prof__shut(void) { return __atomic_load_n(&prof__g.shut, __ATOMIC_RELAXED); }

static void prof__pool_put_locked(prof__chunk *c) {    /* under prof__pool_lock */
    c->next = prof__g.rec.pool;
    prof__g.rec.pool = c;
    prof__g.rec.npool++;
}

static void *prof__reserve_run(void *arg) {
    (void)arg;
    pthread_mutex_lock(&prof__pool_lock);
    while (!prof__res_stop) {
        if (prof__g.rec.npool >= PROF__RESERVE || prof__g.rec.chunks >= prof__g.rec.chunks_max || prof__shut()) {
            pthread_cond_wait(&prof__res_cv, &prof__pool_lock);
            continue;
        }
        pthread_mutex_unlock(&prof__pool_lock);
        prof__chunk *c = (prof__chunk *)malloc(sizeof *c);
        if (c) prof__chunk_clear(c);    /* writes every record: every page faults here */
        pthread_mutex_lock(&prof__pool_lock);
        if (!c) break;                  /* out of memory: refills allocate themselves */
        /* Counted once in the pool, not while made: a refill never finds the
           cap taken by a chunk still being made. One the refills no longer
           had room for goes back. */
        if (prof__g.rec.chunks < prof__g.rec.chunks_max && !prof__shut() && !prof__res_stop) {
            prof__g.rec.chunks++;
            prof__pool_put_locked(c);
        } else {
            free(c);
        }
    }
    pthread_mutex_unlock(&prof__pool_lock);
    return NULL;
}

/* At init, under prof__lock. */
PROF__COLD static void prof__reserve_start(void) {
    if (prof__g.disabled || __atomic_load_n(&prof__res_running, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&prof__pool_lock);
    prof__res_stop = 0;
    pthread_mutex_unlock(&prof__pool_lock);
    if (pthread_create(&prof__res_thread, NULL, prof__reserve_run, NULL) == 0)
        __atomic_store_n(&prof__res_running, 1, __ATOMIC_RELEASE);
}

/* At shutdown, outside the lock: the helper ends and is joined. */
PROF__COLD static void prof__reserve_stop(void) {
    if (!__atomic_exchange_n(&prof__res_running, 0, __ATOMIC_ACQ_REL)) return;
    pthread_mutex_lock(&prof__pool_lock);
    prof__res_stop = 1;
    pthread_cond_signal(&prof__res_cv);
    pthread_mutex_unlock(&prof__pool_lock);
    pthread_join(prof__res_thread, NULL);
}

/* A cleared chunk from the pool or the heap; NULL at the memory cap, which
   the chunks in use and what the writer holds share. */
static prof__chunk *prof__chunk_get(void) {
    pthread_mutex_lock(&prof__pool_lock);
    prof__chunk *c = NULL;
    if (__atomic_load_n(&prof__g.rec.in_use, __ATOMIC_RELAXED) + __atomic_load_n(&prof__g.rec.held, __ATOMIC_RELAXED) <
        prof__g.rec.chunks_max) {
        c = prof__g.rec.pool;
        if (c) {
            prof__g.rec.pool = c->next;
            prof__g.rec.npool--;
            c->next = NULL;
        } else if (prof__g.rec.chunks < prof__g.rec.chunks_max && !prof__shut() &&
                   (c = (prof__chunk *)malloc(sizeof *c))) {
            prof__chunk_clear(c);
            prof__g.rec.chunks++;
        }
    }
    if (prof__g.rec.npool < PROF__RESERVE && __atomic_load_n(&prof__res_running, __ATOMIC_RELAXED))
        pthread_cond_signal(&prof__res_cv);
    if (c) __atomic_fetch_add(&prof__g.rec.in_use, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&prof__pool_lock);
    return c;
}

/* Appends a chunk to a producer's list. The producer's own thread, or
   (for the retired store) whoever holds the lock. */
static void prof__link_chunk(prof__thread *th, prof__chunk *c) {
    if (th->tail) __atomic_store_n(&th->tail->next, c, __ATOMIC_RELEASE);
    else __atomic_store_n(&th->head, c, __ATOMIC_RELEASE);
    th->tail = c;
    th->cur = c->recs;
    th->lim = c->recs + PROF__CHUNK_RECS;
}

/* Hands the producer a cleared chunk: 0 at the memory cap. */
static int prof__refill(prof__thread *th) {
    prof__chunk *c = prof__chunk_get();
    if (c) prof__link_chunk(th, c);
    return c != NULL;
}

/* The slow paths' producer: the calling thread (registered if new), its view
   of its chunk caught up with what the inline path wrote. NULL if it cannot
   register. */
static inline __attribute__((always_inline)) prof__thread *prof__producer(void) {
    prof__thread *th = prof__self;
    if (PROF__UNLIKELY(!th) && !(th = prof__register())) return NULL;
    if (!prof__fallback() && prof__tls.cur) th->cur = prof__tls.cur; /* the inline path moved it */
    return th;
}

/* Hands the rest of the chunk to the inline path. In fallback mode it never
   gets a window: every region goes through prof__emit_slow, which re-times it
   on CLOCK_MONOTONIC. */
static inline __attribute__((always_inline)) void prof__window(const prof__thread *th) {
    int fb = prof__fallback();
    prof__tls.cur = fb ? NULL : th->cur;
    prof__tls.end = fb ? NULL : th->lim;
}

/* n events dropped at the cap: counted (as the writer's, when the
   profiler's thread has steps handed to it not done yet), and the inline
   path has no window. The writer's count first: a collection that reads
   the drop in the thread's count (acquire) finds it there too
   (>>collect). */
static void prof__drop(prof__thread *th, uint64_t n) {
    if (__atomic_load_n(&prof__g.rec.pending, __ATOMIC_RELAXED))
        __atomic_fetch_add(&prof__g.rec.dropped_behind, n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&th->dropped, n, __ATOMIC_RELEASE);
    prof__tls.cur = prof__tls.end = NULL;
}

/* A free record slot for the calling thread, or NULL when dropped. */
static prof__rec *prof__slot(void) {
    prof__thread *th = prof__producer();
    if (!th) return NULL;
    if (th->cur >= th->lim && !prof__refill(th)) {
        prof__drop(th, 1);
        return NULL;
    }
    prof__rec *r = th->cur++;
    prof__window(th);
    return r;
}

static void prof__push(uint32_t kind, const char *name, uint64_t t0, uint64_t t1, uint32_t aux) {
    prof__rec *r = prof__slot();
    if (!r) return;
    r->name = name;
    r->t1 = t1;
    r->kind = kind;
    r->aux = aux;
    __atomic_store_n(&r->t0, t0, __ATOMIC_RELEASE);
}

void prof__emit_slow(const char *name, uint64_t t0, uint64_t t1) {
    if (prof__fallback()) {
        /* Region timed by a TSC that is not invariant: place its end on
           CLOCK_MONOTONIC and scale its length by the last calibration. */
        int64_t end = prof__mono_ns();
        double rate;                    /* a step may be measuring it again */
        __atomic_load(&prof__g.clk.fb_ns_per_tsc, &rate, __ATOMIC_RELAXED);
        double len = (double)(t1 - t0) * rate;
        t1 = (uint64_t)end;
        t0 = (uint64_t)(end - (int64_t)len);
        if (!t0) t0 = 1;
    }
    prof__push(PROF__K_REGION, name, t0, t1, 0);
}

/* The PROF_BEGINs a thread leaves open when it exits or at shutdown. */
static void prof__push_unclosed(const prof__thread *th) {
    if (prof__recording())
        for (int i = 0; i < th->sp; i++)
            if (th->stack[i].t0) prof__push(PROF__K_UNCLOSED, th->stack[i].name, prof__now(), 0, 0);
}

static void prof__retire_locked(prof__thread *th);

/* The TLS destructor: a thread's records go to the retired store, and its
   chunk and its struct come back now, not at the next cycle's end (a
   thread that holds more is left to the collector). */
static void prof__thread_exit(void *p) {
    prof__thread *th = (prof__thread *)p;
    prof__push_unclosed(th);
    if (prof__self == th) {
        prof__self = NULL;
        prof__gtlsp = NULL;
        free(th->gpu);
        th->gpu = NULL;
        prof__nvtx_cache = NULL;
        free(th->nvtx);
        th->nvtx = NULL;
        prof__tls.cur = prof__tls.end = NULL;
        PROF__SET_TOP(prof__open_sink);             /* its frames go with its struct; a save
                                                       may read top until th->tls is cleared */
        prof__tls.last = prof__open_sink + PROF__OPEN_MAX;
    }
    if (th->gpu_dead) __atomic_store_n(th->gpu_dead, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&prof__lock);
    th->tls = NULL;                     /* its thread-local storage goes with it */
    prof__retire_locked(th);
    pthread_mutex_unlock(&prof__lock);
}

/* ---- >>events  public event functions ----------------------------------- */

void prof_instant(const char *name) { prof__push(PROF__K_INSTANT, name, prof__now(), 0, 0); }

void prof_counter(const char *name, double value) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    prof__push(PROF__K_COUNTER, name, prof__now(), bits, 0);
}

/* An argument belongs to the first region that closes after it on this thread
   and began no later than it. Waiting for the clock to move on guarantees that
   regions opened after the argument start strictly later. */
static uint64_t prof__arg_time(void) {
    uint64_t t = prof__now();
    while (prof__now() == t) {}
    return t;
}

void prof_arg_int(const char *key, int64_t value) {
    prof__push(PROF__K_ARG_INT, key, prof__arg_time(), (uint64_t)value, 0);
}

void prof_arg_str(const char *key, const char *value) {
    prof__push(PROF__K_ARG_STR, key, prof__arg_time(), (uint64_t)(uintptr_t)value, 0);
}

/* INTERNED NAMES. An open-addressing table of entries (hash, length, text),
   read without a lock: a slot is published with release once its entry is
   whole, and a full table is replaced by one twice its size, published the
   same way; the old one stays (a reader may be in it) until the process
   ends, as the names do. Inserts take prof__intern_lock. */
#define PROF__INTERN_MAX ((size_t)16 << 20)

typedef struct prof__iname { uint32_t hash, len; char s[1]; } prof__iname;
typedef struct prof__itab {
    size_t mask, used;
    struct prof__itab *older;           /* tables it replaced */
    prof__iname *slot[1];
} prof__itab;

static prof__itab *prof__names_tab;     /* atomic */
static size_t prof__names_bytes;        /* under prof__intern_lock */
static uint64_t prof__names_refused;    /* atomic */
static pthread_mutex_t prof__intern_lock = PTHREAD_MUTEX_INITIALIZER;

/* A word at a time: names are short, and hashed on every PROF_SCOPE_DYN. */
static uint32_t prof__hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (n) {
        w = 0;
        memcpy(&w, s, n);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    }
    return (uint32_t)(h ^ (h >> 29));
}

static const char *prof__intern_find(const prof__itab *t, const char *s, size_t n, uint32_t h) {
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        const prof__iname *e = __atomic_load_n(&t->slot[i], __ATOMIC_ACQUIRE);
        if (!e) return NULL;
        if (e->hash == h && e->len == n && !memcmp(e->s, s, n)) return e->s;
    }
}

static prof__itab *prof__intern_table(size_t slots) {
    prof__itab *t = (prof__itab *)calloc(1, sizeof *t + (slots - 1) * sizeof t->slot[0]);
    if (t) t->mask = slots - 1;
    return t;
}

static void prof__intern_put(prof__itab *t, prof__iname *e) {
    size_t i = e->hash & t->mask;
    while (t->slot[i]) i = (i + 1) & t->mask;
    __atomic_store_n(&t->slot[i], e, __ATOMIC_RELEASE);
    t->used++;
}

const char *prof_intern(const char *s, size_t n) {
    static const char full[] = "(names full)";
    if (!s) return NULL;
    if (n > UINT32_MAX - 1) n = UINT32_MAX - 1;
    uint32_t h = prof__hash_bytes(s, n);
    const prof__itab *t = __atomic_load_n(&prof__names_tab, __ATOMIC_ACQUIRE);
    const char *found = t ? prof__intern_find(t, s, n, h) : NULL;
    if (PROF__LIKELY(found != NULL)) return found;
    pthread_mutex_lock(&prof__intern_lock);
    prof__itab *cur = __atomic_load_n(&prof__names_tab, __ATOMIC_ACQUIRE);
    if (cur && (found = prof__intern_find(cur, s, n, h))) {    /* another thread was first */
        pthread_mutex_unlock(&prof__intern_lock);
        return found;
    }
    prof__iname *e = NULL;
    if (n < PROF__INTERN_MAX - prof__names_bytes && (e = (prof__iname *)malloc(sizeof *e + n))) {
        e->hash = h;
        e->len = (uint32_t)n;
        memcpy(e->s, s, n);
        e->s[n] = 0;
    }
    if (e && (!cur || (cur->used + 1) * 2 > cur->mask + 1)) {  /* grow: a new table, published whole */
        prof__itab *nt = prof__intern_table(cur ? 2 * (cur->mask + 1) : 256);
        if (nt) {
            for (size_t i = 0; cur && i <= cur->mask; i++)
                if (cur->slot[i]) prof__intern_put(nt, cur->slot[i]);
            nt->older = cur;
            __atomic_store_n(&prof__names_tab, nt, __ATOMIC_RELEASE);
            cur = nt;
        } else if (!cur || cur->used + 1 > cur->mask) {         /* no room at all */
            free(e);
            e = NULL;
        }
    }
    if (e) {
        prof__intern_put(cur, e);
        prof__names_bytes += sizeof *e + n;
    } else {
        __atomic_fetch_add(&prof__names_refused, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&prof__intern_lock);
    return e ? e->s : full;
}

void prof_thread_name(const char *name) {
    prof__thread *th = prof__self ? prof__self : prof__register();
    if (th) __atomic_store_n(&th->name, name, __ATOMIC_RELEASE);
}

#ifdef PROF_NVTX
/* The domain "prof", created by the first range (which is also when NVTX
   loads a tool, if one is attached: Nsight's). NULL with no tool. */
static int prof__nvtx_made;             /* atomic */
static nvtxDomainHandle_t prof__nvtx_dom;
static pthread_mutex_t prof__nvtx_lock = PTHREAD_MUTEX_INITIALIZER;

nvtxDomainHandle_t prof__nvtx_domain(void) {
    if (PROF__LIKELY(__atomic_load_n(&prof__nvtx_made, __ATOMIC_ACQUIRE))) return prof__nvtx_dom;
    pthread_mutex_lock(&prof__nvtx_lock);
    if (!prof__nvtx_made) {
        prof__nvtx_dom = nvtxDomainCreateA("prof");
        __atomic_store_n(&prof__nvtx_made, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&prof__nvtx_lock);
    return prof__nvtx_dom;
}

static nvtxStringHandle_t prof__nvtx_register(const char *name) {
    return name ? nvtxDomainRegisterStringA(prof__nvtx_domain(), name) : PROF__NULLPTR;
}

/* The cache of a thread's names: 64 slots by the pointer's hash, on the heap
   (its TLS is one pointer: >>gpu's prof__gtls_new says why), made at its
   first range and freed at its exit (prof__thread_exit). */
typedef struct prof__nvtx_slot { const char *name; nvtxStringHandle_t h; } prof__nvtx_slot;

nvtxStringHandle_t prof__nvtx_name(const char *name) {
    prof__nvtx_slot *cache = (prof__nvtx_slot *)prof__nvtx_cache;
    if (PROF__UNLIKELY(!cache)) {
        prof__thread *th = prof__self ? prof__self : prof__register();
        if (!th || !(cache = (prof__nvtx_slot *)calloc(64, sizeof *cache))) return prof__nvtx_register(name);
        th->nvtx = prof__nvtx_cache = cache;
    }
    uint64_t k = 0;
    memcpy(&k, &name, sizeof name);     /* the pointer's bits, with no cast */
    prof__nvtx_slot *c = &cache[(k * 0x9E3779B97F4A7C15ull) >> 58];
    if (PROF__UNLIKELY(c->name != name)) {
        c->h = prof__nvtx_register(name);
        c->name = name;
    }
    return c->h;
}
#endif

/* A frame of PROF_BEGIN's stack, which a watchdog reads while it changes. */
static void prof__frame_set(prof__frame *f, const char *name, uint64_t t0) {
    __atomic_store_n(&f->name, name, __ATOMIC_RELAXED);
    __atomic_store_n(&f->t0, t0, __ATOMIC_RELAXED);
}

/* A full stack holds PROF_BEGINs that early returns left open: the oldest
   goes (an unclosed region, reported at the cycle's end), so that balanced
   BEGIN/END pairs after them still record. An unclosed region costs itself. */
void prof_begin(const char *name) {
    prof__range_push(name);             /* NVTX / roctx, as the engine calls: one for one */
    prof__thread *th = prof__self ? prof__self : prof__register();
    if (!th) return;
    int sp = th->sp;
    if (PROF__UNLIKELY(sp == PROF__STACK_MAX)) {
        if (prof__recording()) prof__push(PROF__K_UNCLOSED, th->stack[0].name, prof__now(), 0, 0);
        for (int i = 1; i < sp; i++) prof__frame_set(&th->stack[i - 1], th->stack[i].name, th->stack[i].t0);
        sp--;
    }
    prof__frame_set(&th->stack[sp], name, prof__recording() ? prof__now() : 0);
    __atomic_store_n(&th->sp, sp + 1, __ATOMIC_RELEASE);   /* a watchdog reads it */
}

void prof_end(void) {
    prof__range_pop();
    prof__thread *th = prof__self;
    if (!th) return;
    if (th->sp == 0) return;                    /* unmatched PROF_END: nothing open */
    prof__frame f = th->stack[th->sp - 1];
    __atomic_store_n(&th->sp, th->sp - 1, __ATOMIC_RELEASE);
    if (f.t0) prof__push(PROF__K_REGION, f.name, f.t0, prof__now(), 0);
}

/* ---- >>memory  live allocations and per-device totals ------------------- */

/* PROF_ALLOC / PROF_FREE keep a map of the live allocations (address ->
   size, device, identity of the allocation's record) and a running total per
   device, from init to shutdown whether recording or not: the totals are right
   when a window opens, and a free needs no size. Inside windows each call also
   records an event. The map is 64 shards by address hash, each an
   open-addressing table behind its own spinlock, so threads allocating at once
   rarely meet; the totals are atomics. */
#define PROF__MEM_SHARDS  64
#define PROF__MEM_CODES   65            /* device code: 0 host, 1 + d GPU d */
#define PROF__MEM_NOREC   0xFFFFFFFFu   /* entry's allocation was not recorded */

typedef struct prof__mentry {
    uintptr_t ptr;                      /* 0: empty slot */
    int64_t bytes;
    uint64_t t0;                        /* its record: thread th, start t0 */
    const char *region;                 /* set when that record's cycle is saved */
    uint32_t th, code;
} prof__mentry;

typedef struct prof__mshard {
    int lock;                           /* spinlock */
    int live;                           /* between init and shutdown */
    size_t n, cap;                      /* cap: 0 or a power of two */
    prof__mentry *slot;
} __attribute__((aligned(64))) prof__mshard;   /* a cache line each */

static struct {
    prof__mshard shard[PROF__MEM_SHARDS];
    int64_t total[PROF__MEM_CODES];     /* atomic: bytes live per device */
    uint64_t unknown_frees, reused_live; /* atomic */
    uint64_t unknown_said, reused_said; /* under prof__lock: already reported */
    int on;                             /* atomic: keep the map */
    int recorded;                       /* atomic: some memory event was recorded */
    int said_oom, said_dev, said_size;  /* atomic: each message once */
    int started;                        /* under prof__lock: shards are live */
    prof_leak *leaks;                   /* under prof__lock: what shutdown reported */
    size_t nleaks;
} prof__mem;

static void prof__ensure_init(void);

__attribute__((noinline)) static void prof__spin_wait(int *l) {
    do {
        for (unsigned n = 0; __atomic_load_n(l, __ATOMIC_RELAXED); n++) {
            if (n >= 100) { syscall(SYS_sched_yield); continue; } /* the holder may be descheduled */
#if defined(__x86_64__) || defined(__i386__)
            __asm__ __volatile__("pause");
#elif defined(__aarch64__)
            __asm__ __volatile__("yield");
#endif
        }
    } while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE));
}

static inline __attribute__((always_inline)) void prof__spin_lock(int *l) {
    if (PROF__UNLIKELY(__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))) prof__spin_wait(l);
}

static void prof__spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

/* The one integer and pointer hash (strings have prof__fnv), of the memory
   map, the writer's names and the stacks' nodes:
   Fibonacci hashing, whose high bits are the well-mixed ones. Users take
   bits from the top: the map's shard is bits 58-63 and its slot bits from
   26 up (prof__mem_home), the names' slot bits from 32 up. */
static uint64_t prof__mix64(uint64_t x) { return x * 0x9E3779B97F4A7C15ull; }
static uint64_t prof__hash_ptr(const void *p) { return prof__mix64((uint64_t)(uintptr_t)p); }

static uint64_t prof__mem_hash(uintptr_t p) { return prof__hash_ptr((const void *)p); }
static size_t prof__mem_home(uint64_t h, size_t mask) { return (size_t)(h >> 26) & mask; }

static prof__mshard *prof__mem_shard(uint64_t h) { return &prof__mem.shard[h >> 58]; }

/* The slot holding p, or the empty one where it would go (cap > 0). */
static prof__mentry *prof__mem_find(const prof__mshard *s, uintptr_t p, uint64_t h) {
    size_t mask = s->cap - 1, i = prof__mem_home(h, mask);
    while (s->slot[i].ptr && s->slot[i].ptr != p) i = (i + 1) & mask;
    return &s->slot[i];
}

/* Keeps the table at most half full before one more entry; 0 out of memory. */
static int prof__mem_room(prof__mshard *s) {
    if (2 * (s->n + 1) <= s->cap) return 1;
    size_t cap = s->cap ? 2 * s->cap : 16;
    prof__mentry *v = (prof__mentry *)calloc(cap, sizeof *v);
    if (!v) return 0;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slot[i].ptr) continue;
        size_t j = prof__mem_home(prof__mem_hash(s->slot[i].ptr), cap - 1);
        while (v[j].ptr) j = (j + 1) & (cap - 1);
        v[j] = s->slot[i];
    }
    free(s->slot);
    s->slot = v;
    s->cap = cap;
    return 1;
}

/* Linear probing's deletion without tombstones: later entries of the probe
   run move back into the hole unless their home lies cyclically in (i, j]. */
static void prof__mem_erase(prof__mshard *s, prof__mentry *e) {
    size_t mask = s->cap - 1, i = (size_t)(e - s->slot), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!s->slot[j].ptr) break;
        size_t home = prof__mem_home(prof__mem_hash(s->slot[j].ptr), mask);
        if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
            s->slot[i] = s->slot[j];
            i = j;
        }
    }
    s->slot[i].ptr = 0;
    s->n--;
}

/* One memory event is two records, adjacent in one chunk: PROF__K_MEM and
   its PROF__K_MEM_TOTAL. The second is published first: the collector stops at
   the first unpublished record, so it never takes the event without its
   total, and a cycle boundary (by start time, the same) never splits them. */
static void prof__mem_push(uint64_t t0, uintptr_t p, int64_t bytes, uint32_t code, int64_t total) {
    prof__thread *th = prof__producer();
    if (!th) return;
    if (!th->cur || th->lim - th->cur < 2) {
        if (th->cur && th->cur < th->lim) { /* one slot left: a lone total, which readers skip */
            prof__rec *pad = th->cur++;
            pad->name = NULL;
            pad->t1 = 0;
            pad->kind = PROF__K_MEM_TOTAL;
            pad->aux = 0;
            __atomic_store_n(&pad->t0, t0, __ATOMIC_RELEASE);
        }
        if (!prof__refill(th)) {
            prof__drop(th, 2);
            return;
        }
    }
    prof__rec *r = th->cur;
    th->cur += 2;
    prof__window(th);
    r[0].name = (const char *)p;
    r[0].t1 = (uint64_t)bytes;
    r[0].kind = PROF__K_MEM;
    r[0].aux = code;
    r[1].name = NULL;
    r[1].t1 = (uint64_t)total;
    r[1].kind = PROF__K_MEM_TOTAL;
    r[1].aux = code;
    __atomic_store_n(&r[1].t0, t0, __ATOMIC_RELEASE);
    __atomic_store_n(&r[0].t0, t0, __ATOMIC_RELEASE);
    if (PROF__UNLIKELY(!__atomic_load_n(&prof__mem.recorded, __ATOMIC_RELAXED)))
        __atomic_store_n(&prof__mem.recorded, 1, __ATOMIC_RELAXED);
}

/* Whether the map is kept; the first call of a program inits the profiler. */
__attribute__((noinline, cold)) static int prof__mem_first(void) {
    if (__atomic_load_n(&prof__g.inited, __ATOMIC_ACQUIRE)) return 0;
    prof__ensure_init();
    return __atomic_load_n(&prof__mem.on, __ATOMIC_ACQUIRE);
}

static inline __attribute__((always_inline)) int prof__mem_ready(void) {
    return PROF__LIKELY(__atomic_load_n(&prof__mem.on, __ATOMIC_ACQUIRE)) || prof__mem_first();
}

void prof_mem_alloc(const void *ptr, size_t bytes, int device) {
    if (!ptr || !prof__mem_ready()) return;
    if (device < -1 || device >= PROF__MEM_CODES - 1) {
        if (!__atomic_exchange_n(&prof__mem.said_dev, 1, __ATOMIC_RELAXED))
            prof__msg("memory event on device %d ignored: devices are -1 (host) and 0 to %d", device,
                      PROF__MEM_CODES - 2);
        return;
    }
    if (bytes > (size_t)PTRDIFF_MAX) {  /* (size_t)-1 would count as -1 byte */
        if (!__atomic_exchange_n(&prof__mem.said_size, 1, __ATOMIC_RELAXED))
            prof__msg("PROF_ALLOC of %zu bytes ignored: no allocation is larger than PTRDIFF_MAX", bytes);
        return;
    }
    uintptr_t p = (uintptr_t)ptr;
    uint32_t code = (uint32_t)(device + 1), th = PROF__MEM_NOREC, old_code = 0;
    int64_t old_bytes = 0, old_total = 0, total;
    int rec = prof__recording(), reused = 0;
    uint64_t t0 = 0;
    if (rec) {
        prof__thread *me = prof__self ? prof__self : prof__register();
        t0 = prof__arg_time();          /* owned like an argument: by the innermost region */
        if (me) th = me->idx;
    }
    uint64_t h = prof__mem_hash(p);
    prof__mshard *s = prof__mem_shard(h);
    prof__spin_lock(&s->lock);
    if (!s->live || !prof__mem_room(s)) {
        int oom = s->live;
        prof__spin_unlock(&s->lock);
        if (oom && !__atomic_exchange_n(&prof__mem.said_oom, 1, __ATOMIC_RELAXED))
            prof__msg("out of memory for the allocation map: some allocations are not tracked");
        return;
    }
    prof__mentry *e = prof__mem_find(s, p, h);
    if (e->ptr) {                       /* still live: it was freed without PROF_FREE */
        reused = 1;
        old_bytes = e->bytes;
        old_code = e->code;
        old_total = __atomic_sub_fetch(&prof__mem.total[old_code], old_bytes, __ATOMIC_RELAXED);
    } else {
        s->n++;
    }
    e->ptr = p;
    e->bytes = (int64_t)bytes;
    e->t0 = t0;
    e->region = NULL;
    e->th = th;
    e->code = code;
    total = __atomic_add_fetch(&prof__mem.total[code], (int64_t)bytes, __ATOMIC_RELAXED);
    prof__spin_unlock(&s->lock);
    if (reused) __atomic_fetch_add(&prof__mem.reused_live, 1, __ATOMIC_RELAXED);
    if (rec) {
        if (reused) prof__mem_push(t0, p, -old_bytes, old_code, old_total);
        prof__mem_push(t0, p, (int64_t)bytes, code, total);
    }
}

void prof_mem_free(const void *ptr) {
    if (!ptr || !prof__mem_ready()) return;
    uintptr_t p = (uintptr_t)ptr;
    int rec = prof__recording();
    uint64_t t0 = rec ? prof__arg_time() : 0;
    uint64_t h = prof__mem_hash(p);
    prof__mshard *s = prof__mem_shard(h);
    prof__spin_lock(&s->lock);
    prof__mentry *e = s->live && s->cap ? prof__mem_find(s, p, h) : NULL;
    if (!e || !e->ptr) {                /* double free, or never allocated */
        int live = s->live;
        prof__spin_unlock(&s->lock);
        if (live) __atomic_fetch_add(&prof__mem.unknown_frees, 1, __ATOMIC_RELAXED);
        return;
    }
    int64_t bytes = e->bytes;
    uint32_t code = e->code;
    prof__mem_erase(s, e);
    int64_t total = __atomic_sub_fetch(&prof__mem.total[code], bytes, __ATOMIC_RELAXED);
    prof__spin_unlock(&s->lock);
    if (rec) prof__mem_push(t0, p, -bytes, code, total);
}

int64_t prof_mem_allocated(int device) {
    if (device < -1 || device >= PROF__MEM_CODES - 1) return 0;
    return __atomic_load_n(&prof__mem.total[device + 1], __ATOMIC_RELAXED);
}

/* At init (under prof__lock): the map starts, or goes on across a second
   PROF_INIT; PROF_DISABLE keeps nothing. */
static void prof__mem_start_locked(void) {
    if (!prof__mem.started) {
        prof__mem.started = 1;
        free(prof__mem.leaks);
        prof__mem.leaks = NULL;
        prof__mem.nleaks = 0;
        for (int d = 0; d < PROF__MEM_CODES; d++) __atomic_store_n(&prof__mem.total[d], 0, __ATOMIC_RELAXED);
        for (int i = 0; i < PROF__MEM_SHARDS; i++) {
            prof__spin_lock(&prof__mem.shard[i].lock);
            prof__mem.shard[i].live = 1;
            prof__spin_unlock(&prof__mem.shard[i].lock);
        }
    }
    __atomic_store_n(&prof__mem.on, !prof__g.conf.user_disabled, __ATOMIC_RELEASE);
}

static int prof__leak_cmp(const void *a, const void *b) {
    const prof_leak *x = (const prof_leak *)a, *y = (const prof_leak *)b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return (uintptr_t)x->ptr < (uintptr_t)y->ptr ? -1 : (uintptr_t)x->ptr > (uintptr_t)y->ptr;
}

/* The live allocations, largest first, into a new array (NULL if none or out
   of memory); with kill, the shards are freed and stop. Under prof__lock. */
static prof_leak *prof__mem_live_locked(size_t *n, int kill) {
    prof_leak *v = NULL;
    size_t cap = 0;
    *n = 0;
    for (int i = 0; i < PROF__MEM_SHARDS; i++) {
        prof__mshard *s = &prof__mem.shard[i];
        prof__spin_lock(&s->lock);
        for (size_t j = 0; j < s->cap; j++) {
            const prof__mentry *e = &s->slot[j];
            if (!e->ptr) continue;
            prof_leak *nv = (prof_leak *)prof__grow(v, &cap, *n + 1, sizeof *v);
            if (!nv) break;
            v = nv;
            v[*n].ptr = (const void *)e->ptr;
            v[*n].bytes = e->bytes;
            v[*n].device = (int)e->code - 1;
            v[*n].region = e->region ? e->region : "(not recorded)";
            ++*n;
        }
        if (kill) {
            free(s->slot);
            s->slot = NULL;
            s->n = s->cap = 0;
            s->live = 0;
        }
        prof__spin_unlock(&s->lock);
    }
    if (*n) qsort(v, *n, sizeof *v, prof__leak_cmp);
    return v;
}

size_t prof_leaks(prof_leak *out, size_t max) {
    size_t n;
    pthread_mutex_lock(&prof__lock);
    prof_leak *live = prof__mem.started ? prof__mem_live_locked(&n, 0) : NULL;
    const prof_leak *v = prof__mem.started ? live : prof__mem.leaks;
    if (!prof__mem.started) n = prof__mem.nleaks;
    for (size_t i = 0; i < n && i < max; i++) out[i] = v[i];
    pthread_mutex_unlock(&prof__lock);
    free(live);
    return n;
}

/* torch's _format_memory: "%.2f Gb", "Mb", "Kb" (powers of 1024), or "N b". */
PROF__SHARED void prof__fmt_mem(char *o, size_t cap, int64_t b) {
    uint64_t a = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
    if (a >= 1073741824u) snprintf(o, cap, "%.2f Gb", (double)b / 1073741824.0);
    else if (a >= 1048576u) snprintf(o, cap, "%.2f Mb", (double)b / 1048576.0);
    else if (a >= 1024u) snprintf(o, cap, "%.2f Kb", (double)b / 1024.0);
    else snprintf(o, cap, "%lld b", (long long)b);
}

/* At shutdown, once the last cycle is saved (so its allocations know their
   regions): the leak report and the bad-use line on stderr; the map goes, and
   prof_leaks() answers from the report. */
PROF__COLD static void prof__mem_shutdown(void) {
    enum { PROF__LEAK_LINES = 20 };
    pthread_mutex_lock(&prof__lock);
    if (!prof__mem.started) { pthread_mutex_unlock(&prof__lock); return; }
    int kept = __atomic_exchange_n(&prof__mem.on, 0, __ATOMIC_ACQ_REL);
    size_t n;
    prof_leak *v = prof__mem_live_locked(&n, 1);
    prof__mem.started = 0;
    for (int d = 0; d < PROF__MEM_CODES; d++) __atomic_store_n(&prof__mem.total[d], 0, __ATOMIC_RELAXED);
    if (!kept || !v) { free(v); v = NULL; n = 0; }   /* PROF_DISABLE: nothing was kept */
    prof__mem.leaks = v;
    prof__mem.nleaks = n;
    if (n) {
        char size[32], dev[16];
        int64_t sum = 0;
        for (size_t i = 0; i < n; i++) sum += v[i].bytes;
        prof__fmt_mem(size, sizeof size, sum);
        prof__msg("%zu allocation%s never freed, %lld bytes (%s) in all; largest first:", n, n == 1 ? "" : "s",
                  (long long)sum, size);
        for (size_t i = 0; i < n && i < PROF__LEAK_LINES; i++) {
            prof__fmt_mem(size, sizeof size, v[i].bytes);
            if (v[i].device < 0) snprintf(dev, sizeof dev, "CPU");
            else snprintf(dev, sizeof dev, "GPU %d", v[i].device);
            prof__msg("  %lld bytes (%s) at %p on %s, allocated in '%s'", (long long)v[i].bytes, size, v[i].ptr, dev,
                      v[i].region);
        }
        if (n > PROF__LEAK_LINES) prof__msg("  ... and %zu more", n - PROF__LEAK_LINES);
    }
    uint64_t uf = __atomic_load_n(&prof__mem.unknown_frees, __ATOMIC_RELAXED) - prof__mem.unknown_said;
    uint64_t rl = __atomic_load_n(&prof__mem.reused_live, __ATOMIC_RELAXED) - prof__mem.reused_said;
    if (uf || rl)
        prof__msg("bad memory calls: %llu PROF_FREE of a pointer not allocated or already freed (ignored), "
                  "%llu PROF_ALLOC of an address still allocated (the old allocation counted as freed)",
                  (unsigned long long)uf, (unsigned long long)rl);
    prof__mem.unknown_said += uf;
    prof__mem.reused_said += rl;
    pthread_mutex_unlock(&prof__lock);
}

/* ---- >>schedule  torch.profiler.schedule -------------------------------- */

static int prof__action(const prof_schedule *s, int64_t step) {
    int64_t num = (int64_t)s->wait + s->warmup + s->active;
    if (step < s->skip_first) return PROF__NONE;
    step -= s->skip_first;
    if (s->repeat > 0 && step / num >= s->repeat) return PROF__NONE;
    int64_t m = step % num;
    if (m < s->wait) return PROF__NONE;
    if (m < s->wait + s->warmup) return PROF__WARMUP;
    return m < num - 1 ? PROF__RECORD : PROF__RECORD_AND_SAVE;
}

static int prof__cur_action(void) {
    return prof__g.conf.has_sched ? prof__action(&prof__g.conf.sched, prof__g.run.step) : PROF__RECORD;
}

/* TRIGGERS (PROF_TRIGGER). A triggered run is a schedule set at run time:
   until a trigger it is one whose skip_first never ends; a trigger noticed
   at a step sets skip_first to the step that begins, for trigger_steps
   active steps once. SIGUSR2's handler only sets a flag (Kineto's lesson:
   nothing more in a handler); the file is looked for by the stepping
   thread, outside the lock, once a second at most.
   The file is never removed: every rank of a run may watch the same one on
   a shared filesystem. A trigger is the file appearing, or changing (its
   time, size or inode: touched again); one there before init is not. It
   may hold a step ("step=1200" or "1200"): then every rank records from
   that step (or, in flight mode, dumps the ring up to it), whenever each
   notices the file, so that their traces hold the same steps. */
#endif /* PROF__BODIES */
enum { PROF__TRIG_NONE, PROF__TRIG_SIGNAL, PROF__TRIG_FILE };
#if PROF__BODIES

static struct {
    int fired;                          /* atomic: SIGUSR2 came */
    int ours;                           /* atomic: the handler is installed */
    int64_t next_look;                  /* mono ns: the file's next look */
    uint64_t stamp;                     /* the file as last seen; 0: not there */
} prof__trig;

/* The file's identity as a number (0: not there): a touch changes it. */
static uint64_t prof__trig_stamp(void) {
    struct stat st;
    if (stat(prof__g.conf.trigger_path, &st) != 0) return 0;
    uint64_t h = 1469598103934665603ull;
    uint64_t part[4] = { (uint64_t)st.st_mtime, (uint64_t)st.st_size, (uint64_t)st.st_ino, 0 };
#ifdef st_mtime                         /* glibc and musl: st_mtime is st_mtim.tv_sec, ns beside it */
    part[3] = (uint64_t)st.st_mtim.tv_nsec;
#endif
    for (int i = 0; i < 4; i++) h = (h ^ part[i]) * 1099511628211ull;
    return h | 1;
}

/* Where sigaction is declared the handler stays installed; under strict C,
   glibc's signal() puts the default action back as it delivers (which
   would end the process at the next SIGUSR2): the handler takes it again. */
static void prof__on_trigger(int sig) {
#if !defined(SA_SIGINFO)
    int saved = errno;
    if (__atomic_load_n(&prof__trig.ours, __ATOMIC_RELAXED)) signal(sig, prof__on_trigger);
    errno = saved;
#else
    (void)sig;
#endif
    __atomic_store_n(&prof__trig.fired, 1, __ATOMIC_RELAXED);
}

/* Installs prof__on_trigger for SIGUSR2; the action that was there before. */
static void (*prof__trigger_take(void))(int) {
#if defined(SA_SIGINFO)
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = prof__on_trigger;
    sigemptyset(&sa.sa_mask);
#ifdef SA_RESTART
    sa.sa_flags = SA_RESTART;           /* the engine's system calls go on */
#endif
    if (sigaction(SIGUSR2, &sa, &old) != 0) return SIG_ERR;
    if (old.sa_flags & SA_SIGINFO) {    /* the engine's, as it was */
        sigaction(SIGUSR2, &old, NULL);
        return SIG_ERR;
    }
    return old.sa_handler;
#else
    return signal(SIGUSR2, prof__on_trigger);
#endif
}

/* Init, under the lock: the never-ending wait, and SIGUSR2's handler where
   its action is the default (which would end the process). */
static void prof__trigger_start(void) {
    if (!prof__g.conf.trigger) return;
    if (!prof__g.conf.flight) {         /* flight mode: a trigger dumps the ring instead */
        prof_schedule never = { INT32_MAX, 0, 0, prof__g.conf.trigger_steps, 1 };
        prof__g.conf.sched = never;
        prof__g.conf.has_sched = 1;
    }
    prof__trig.next_look = 0;
    if (prof__g.conf.trigger == PROF__TRIG_FILE) prof__trig.stamp = prof__trig_stamp();  /* older: no trigger */
    if (prof__g.conf.trigger != PROF__TRIG_SIGNAL || prof__trig.ours || prof__g.disabled) return;
    __atomic_store_n(&prof__trig.ours, 1, __ATOMIC_RELAXED);
    void (*old)(int) = prof__trigger_take();
    if (old != SIG_DFL) {
        __atomic_store_n(&prof__trig.ours, 0, __ATOMIC_RELAXED);
        if (old != SIG_ERR) signal(SIGUSR2, old);
        prof__msg("PROF_TRIGGER=signal: SIGUSR2 has a handler already (the engine's, or ignored); "
                  "it is left alone and nothing will trigger a trace");
    }
}

static void prof__trigger_stop(void) {
    if (!prof__trig.ours) return;
    __atomic_store_n(&prof__trig.ours, 0, __ATOMIC_RELAXED);
    void (*old)(int) = signal(SIGUSR2, SIG_DFL);
    if (old != prof__on_trigger && old != SIG_ERR) signal(SIGUSR2, old);   /* the engine's since */
}

/* Whether a trigger came (1), by the stepping thread, outside the lock; the
   step the file names in *at, else -1. */
static int prof__trigger_poll(int64_t *at) {
    *at = -1;
    if (prof__g.conf.trigger == PROF__TRIG_SIGNAL) return __atomic_exchange_n(&prof__trig.fired, 0, __ATOMIC_RELAXED);
    if (prof__g.conf.trigger != PROF__TRIG_FILE) return 0;
    int64_t now = prof__mono_ns();
    if (now < prof__trig.next_look) return 0;
    prof__trig.next_look = now + 1000000000;
    uint64_t stamp = prof__trig_stamp();
    if (stamp == prof__trig.stamp) return 0;
    prof__trig.stamp = stamp;
    if (!stamp) return 0;               /* gone: the next one to appear is a trigger */
    FILE *f = fopen(prof__g.conf.trigger_path, "r");
    char text[64] = "";
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!strncmp(p, "step=", 5)) p += 5;
    if (*p >= '0' && *p <= '9') {
        char *end;
        long long v = strtoll(p, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
        if (!*end && v >= 0) *at = v;
    }
    return 1;
}

/* What a trigger is called in messages. */
static const char *prof__trigger_who(void) {
    return prof__g.conf.trigger == PROF__TRIG_SIGNAL ? "SIGUSR2" : "PROF_TRIGGER file";
}

/* Under the lock, at the step that begins: a window from it, unless one is
   open. */
static void prof__trigger_fire(int64_t at) {
    int64_t step = prof__g.run.step;
    const char *who = prof__trigger_who();
    if (prof__cur_action() != PROF__NONE) return;      /* a window is open: this one is its */
    if (at >= 0 && at < step)
        prof__msg("%s: step %lld has passed; recording from this one", who, (long long)at);
    if (at > step) step = at;
    if (step > INT32_MAX - prof__g.conf.trigger_steps) {
        prof__msg("PROF_TRIGGER: step %lld is past what a schedule counts; not recorded", (long long)step);
        return;
    }
    prof__g.conf.sched.skip_first = (int)step;
    prof__msg("%s: recording steps %lld to %lld", who, (long long)step, (long long)step + prof__g.conf.trigger_steps - 1);
}

/* ---- >>collect  a cycle's records, taken without stopping threads ------- */

#endif /* PROF__BODIES */
/* Kernel capture's two readings of both clocks (>>gpu): the tracer's and
   ours, at a window's start and at its save, each within half its ticks. */
typedef struct prof__aclk {
    int64_t ns[2];
    uint64_t tick[2];
    uint64_t half[2];
} prof__aclk;

typedef struct prof__cycle {
    prof__ev *ev;                       /* grouped by thread, each in record order */
    size_t n, cap;
    struct prof__tinfo *th;             /* snapshot of prof__g.rec.tinfo */
    size_t nth;
    uint64_t dropped;                   /* lost to the cap since the last cycle */
    uint64_t behind;                    /* before its window: steps the writer never got */
    int index;                          /* 1-based cycle number */
    int oom;                            /* collection itself ran out of memory */
    struct prof__gev *gpu;              /* GPU regions, by device, stream, start */
    size_t ngpu;
    struct prof__gdev_info *gdev;       /* the devices they ran on */
    size_t ngdev;
    uint64_t gpu_dropped;               /* GPU regions lost (pool full, errors) */
    struct prof__gact *act;             /* kernel capture: runtime calls by thread,
                                           then kernels, copies, fills by device, stream */
    size_t nact, nact_api;              /* ... the first nact_api are runtime calls */
    int64_t spans_ns;                   /* kernel capture's readings' half-width: prof__analyse
                                           spans the GPU regions over their kernels once the
                                           CPU sides are in (>>gpu's one clock), with this bound */
    int spans_due;
    int act_due;                        /* the step that saved it read act_clk: the profiler's
                                           thread takes its window's records (prof__act_cycle) */
    prof__aclk act_clk;
    uint64_t act_lost;                  /* activities lost (tracer's or our buffers full) */
    uint32_t *parent;                   /* per event: see prof__analyse */
    uint32_t *first;                    /*   and where its subtree begins */
    uint32_t *track;                    /* per thread: whose track it is on (prof__tracks) */
    const char **label;                 /* per thread: its name, or "thread <tid>" */
    uint32_t *gcorr, *kcorr[2];         /* correlations, sorted: of the GPU regions; of
                                           kernel capture's runtime calls, and the rest */
    size_t ngcorr, nkcorr[2];
    struct prof_gpu_idle *idle;         /* kernel capture: the idle breakdown (prof__idle_build) */
    size_t nidle;
    struct prof_gpu_path *path;         /*   and each step's critical path */
    size_t npath;
    prof__tclock clk;                   /* its ticks as ns since base_ns (prof__cycle_clock) */
    int64_t base_ns;                    /* the trace's baseTimeNanoseconds */
    int model;                          /* made by prof_model_new: prof_cycle_free frees it */
    uint64_t clipped;                   /* regions that began before the window (K_CLIPPED) */
    uint64_t until;                     /* collected up to this tick */
    const char *reason;                 /* a flight recorder's dump: why ("slow_step"), else NULL */
    int64_t reason_step;                /*   and at which step; its first step */
    int64_t first_step;
    long pid;                           /* the process its trace names; 0: this one (prof__trace_pid) */
    struct prof__ecy *en;               /* PROF_ENERGY: the knots around its steps (>>energy) */
    struct prof__scy *smp;              /* PROF_SAMPLE: its CPU samples (>>sample) */
} prof__cycle;

/* PROF_SAMPLE's samples, as >>sample takes them and a saved cycle keeps them. */
typedef struct prof__smap {             /* an executable mapping (/proc/self/maps) */
    char *path;
    uint64_t start, end, offset;
    char build_id[41];                  /* hex, from its ELF file's NT_GNU_BUILD_ID note; "" none */
} prof__smap;

typedef struct prof__sample {           /* a CPU sample */
    int64_t ns;                         /* CLOCK_MONOTONIC, as the kernel stamped it */
    uint32_t th;                        /* its thread: an index into prof__g.rec.tinfo */
    uint32_t ip, nip;                   /* its frames: ip[ip .. ip + nip), innermost first */
    int32_t tid;                        /* its thread's OS id */
    uint32_t region, step;              /* a saved cycle's: the innermost region open on its
                                           thread then, and the step (indices into its ev;
                                           PROF__NO_EVENT: none) */
} prof__sample;

typedef struct prof__scy {              /* a saved cycle's samples (prof__cycle.smp) */
    prof__sample *s;
    size_t n;
    uint64_t *ip;
    size_t nip;
    uint64_t lost;                      /* lost since the save before */
    int64_t period_ns;                  /* CPU time between two samples of a thread */
    int refused;                        /* the kernel refused: none (said) */
    struct prof__smap *map;             /* the executable mappings when it was saved */
    size_t nmap;
} prof__scy;

#define PROF__NO_EVENT UINT32_MAX       /* no parent */
#define PROF__FIRST_CHILD 0x80000000u   /* prof__cycle.first: its parent begins where it does */
#define PROF__FIRST_MAX   0x7fffffffu   /*   the rest: the record its subtree begins at, */
#define PROF__LONE        PROF__FIRST_MAX /* or: a plain region alone (prof__analyse) */
#if PROF__BODIES

/* The cycle's clock: the recorder's calibration now. Set when it is
   collected, and again when it is saved, after the calibration's last
   refinement: every sink converts its ticks with it. */
static int prof__idle_build(prof__cycle *cy);

static long prof__trace_pid(const prof__cycle *cy) { return cy->pid ? cy->pid : (long)getpid(); }

PROF__SHARED void prof__cycle_clock(prof__cycle *cy) {
    cy->clk = prof__tclock_now(prof__trace_shift());
    cy->base_ns = prof__trace_base();
    if (cy->parent && !prof__idle_build(cy)) cy->oom = 1;  /* analysed: its idle time on this clock */
}

static void prof__chunk_release(prof__chunk *c) {
    __atomic_fetch_sub(&prof__g.rec.in_use, 1, __ATOMIC_RELAXED);
    if (prof__shut()) {                 /* the last collection: memory for its copy */
        /* free() keeps a 64 KiB block in the heap, resident: the whole
           pages inside it go back to the system first (madvise, by number:
           -std=c11 hides it), so the copy grows as the chunks shrink. Those
           pages are not the allocator's: its header is before the block. */
        uintptr_t a = ((uintptr_t)c + 4095) & ~(uintptr_t)4095, b = ((uintptr_t)(c + 1)) & ~(uintptr_t)4095;
        if (b > a) syscall(SYS_madvise, a, b - a, 4L /* MADV_DONTNEED */);
        free(c);
        pthread_mutex_lock(&prof__pool_lock);
        prof__g.rec.chunks--;
        pthread_mutex_unlock(&prof__pool_lock);
        return;
    }
    prof__chunk_clear(c);
    pthread_mutex_lock(&prof__pool_lock);
    prof__pool_put_locked(c);
    pthread_mutex_unlock(&prof__pool_lock);
}

/* One record into the retired store; 0 at the memory cap. */
static int prof__store_put(prof__thread *st, const prof__rec *r) {
    if (st->cur >= st->lim) {
        prof__chunk *c = prof__chunk_get();
        if (!c) return 0;
        prof__link_chunk(st, c);
    }
    prof__rec *d = st->cur++;
    d->name = r->name;
    d->t1 = r->t1;
    d->kind = r->kind;
    d->aux = r->aux;
    __atomic_store_n(&d->t0, r->t0, __ATOMIC_RELEASE);
    return 1;
}

/* An exited thread whose records not yet collected fit its one chunk (the
   many short threads of a pool that starts one per task): they move into
   the retired store, packed behind a PROF__K_THREAD record naming the
   thread, its chunk goes back to the pool and its struct is freed, so
   5,000 short threads cost what they recorded, not 5,000 chunks. Past the
   cap the rest are dropped, counted. A thread with more is marked dead and
   left to the collector, which takes its chunks whole at the cycle's end and
   frees it: copying them here would hold the lock (and every other thread's
   refill) for as long as a copy of up to the whole cap takes, and the chunk
   it wastes is at most the size of one it filled. Under the lock. */
static void prof__retire_locked(prof__thread *th) {
    prof__thread *st = &prof__g.rec.retired;
    uint64_t lost = __atomic_load_n(&th->dropped, __ATOMIC_RELAXED);
    int marked = 0;
    /* a collection draining it now (pinned) moves its head: read only when not */
    if (th->pinned || __atomic_load_n(&th->head, __ATOMIC_ACQUIRE) != th->tail) {
        th->dead = 1;
        return;
    }
    prof__g.rec.tinfo[th->idx].name = __atomic_load_n(&th->name, __ATOMIC_ACQUIRE);
    if (!st->retired) {
        st->retired = 1;
        st->next = prof__g.rec.threads;
        prof__g.rec.threads = st;
    }
    for (prof__chunk *c = th->head; c;) {
        for (uint32_t i = c == th->head ? th->head_pos : 0; i < PROF__CHUNK_RECS && c->recs[i].t0; i++) {
            if (!marked) {
                prof__rec mark = { NULL, 0, PROF__K_THREAD, th->idx, 1 };
                marked = prof__store_put(st, &mark);
            }
            if (!marked || !prof__store_put(st, &c->recs[i])) lost++;
        }
        prof__chunk *next = c->next;
        prof__chunk_release(c);
        c = next;
    }
    prof__g.rec.dropped_dead += lost;
    for (prof__thread **link = &prof__g.rec.threads; *link; link = &(*link)->next)
        if (*link == th) { *link = th->next; break; }
    free(th);
}

/* Room for `more` events; 0 (and *oom set) when memory runs out. */
static int prof__ev_reserve(prof__ev **v, size_t n, size_t *cap, size_t more, int *oom) {
    prof__ev *nv = (prof__ev *)prof__grow(*v, cap, n + more, sizeof *nv);
    if (!nv) { *oom = 1; return 0; }
    *v = nv;
    return 1;
}

static void prof__ev_append(prof__ev **v, size_t *n, size_t *cap, const prof__ev *e, int *oom) {
    if (prof__ev_reserve(v, *n, cap, 1, oom)) (*v)[(*n)++] = *e;
}

/* Whether region e was open at the last save, and so drawn in its trace up
   to the save (a region of that name open on that thread then: a scope's
   start in the fallback clock's units is an estimate, its name is not). */
static int prof__was_open(const prof__ev *e) {
    for (size_t i = 0; i < prof__g.rec.nopened; i++)
        if (prof__g.rec.opened[i].th == e->th && prof__g.rec.opened[i].name == e->name) return 1;
    return 0;
}

/* A save's collection (and a streamed part's) also finds, past each
   thread's end, the regions that began by the save and ended after it: open
   at the save. The frames read at the step miss one that ended between the
   step's reading of its time and theirs (a thread does not wait for the lock
   to end a region); its record draws it instead, read in place or, for a
   thread that has exited since, where it spills. The collector's own, on
   when prof__found.on. */
static struct {
    int on;
    prof__ev *ev;
    size_t n, cap;
} prof__found;

/* A region of thread idx that began by t_to and ended after it, as an open
   row (begun at t_from at the earliest) into prof__found, if it is one; 0
   when memory runs out. */
static int prof__found_add(const char *name, uint32_t kind, uint64_t t0, uint64_t t1, uint32_t idx, uint64_t t_from,
                           uint64_t t_to) {
    if ((kind != PROF__K_REGION && kind != PROF__K_GPU_REGION) || t0 > t_to || t1 <= t_to) return 1;
    prof__ev *v = (prof__ev *)prof__grow(prof__found.ev, &prof__found.cap, prof__found.n + 1, sizeof *v);
    if (!v) return 0;                   /* out of memory: it is counted lost when it is collected */
    prof__found.ev = v;
    prof__ev *e = &v[prof__found.n++];
    memset(e, 0, sizeof *e);
    e->name = name;
    e->t0 = t0 < t_from ? t_from : t0;
    e->t1 = t_to;
    e->kind = PROF__K_OPEN;
    e->th = idx & 0xFFFFFFFu;
    return 1;
}

/* Sorts one taken record: into the cycle if it began in [t_from, t_to], into
   the spill if it began later (another thread, already past the boundary)
   or is a region still open at t_to (collected after it ended), else away
   (counted, in a cycle: a window whose start was not handed over). */
static void prof__take(prof__cycle *cy, const prof__ev *e, uint64_t t_from, uint64_t t_to,
                       prof__ev **spill, size_t *nspill, size_t *spillcap, int *oom) {
    int region = e->kind == PROF__K_REGION || e->kind == PROF__K_GPU_REGION;
    if (e->t0 > t_to || (prof__role[e->kind] == PROF__R_SPAN && e->t1 > t_to)) {
        /* a thread that exited (its records spill): open at t_to too */
        if (prof__found.on) prof__found_add(e->name, e->kind, e->t0, e->t1, e->th, t_from, t_to);
        prof__ev_append(spill, nspill, spillcap, e, oom);
    } else if (e->t0 >= t_from) {
        if (cy) prof__ev_append(&cy->ev, &cy->n, &cy->cap, e, &cy->oom);
        else if (region && e->t0 <= prof__g.run.saved_to && e->t1 > prof__g.run.saved_to && !prof__was_open(e))
            prof__g.rec.lost_past_end++;    /* began in a saved cycle, ended while none recorded */
    } else if (cy && region && e->t1 >= t_from) {
        /* began before this window (in the last one, or in warm-up) and ended
           in it: written from the window's start, marked, never dropped */
        prof__ev c = *e;
        c.t0 = t_from;
        c.kind = e->kind == PROF__K_REGION ? (uint32_t)PROF__K_CLIPPED : e->kind;
        prof__ev_append(&cy->ev, &cy->n, &cy->cap, &c, &cy->oom);
        cy->clipped++;
    } else if (cy && prof__role[e->kind] != PROF__R_NONE) {
        cy->behind++;
    }
}

/* cy's events grouped by thread, each group in the order they had (a
   stable counting sort by thread index); 0 when memory runs out. */
static int prof__by_thread(prof__cycle *cy) {
    size_t *cnt = (size_t *)calloc(cy->nth + 1, sizeof *cnt);
    prof__ev *sorted = (prof__ev *)malloc(cy->n * sizeof *sorted + 1);
    if (!cnt || !sorted) {
        free(cnt);
        free(sorted);
        return 0;
    }
    for (size_t i = 0; i < cy->n; i++) cnt[cy->ev[i].th + 1]++;
    for (size_t t = 0; t < cy->nth; t++) cnt[t + 1] += cnt[t];
    for (size_t i = 0; i < cy->n; i++) sorted[cnt[cy->ev[i].th]++] = cy->ev[i];
    free(cy->ev);
    cy->ev = sorted;
    cy->cap = cy->n;
    free(cnt);
    return 1;
}

/* From a thread's first record after t_to (c, pos) to its last published,
   read and left in place: the regions among them that began by t_to and
   ended after it, into prof__found. */
static void prof__find_open(const prof__chunk *c, uint32_t pos, uint32_t idx, uint64_t t_from, uint64_t t_to) {
    for (; c; c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE), pos = 0)
        for (; pos < PROF__CHUNK_RECS; pos++) {
            const prof__rec *r = &c->recs[pos];
            uint64_t t0 = __atomic_load_n(&r->t0, __ATOMIC_ACQUIRE);
            if (!t0 || !prof__found_add(r->name, r->kind & 15u, t0, r->t1, idx, t_from, t_to)) return;
        }
}

/* What a collection drains: the registry as it stood, each thread pinned
   (one that exits meanwhile is marked dead and left to the next collection,
   not freed under it), and whether it had exited before. The collector's
   own: under prof__wk_lock. */
static struct prof__snap {
    prof__thread *th;
    int dead;
} *prof__snap;
static size_t prof__nsnap, prof__snapcap;

/* A collection's start: the registry into prof__snap, each thread pinned
   and its name read. Takes prof__lock for that alone. */
static void prof__snap_take(void) {
    pthread_mutex_lock(&prof__lock);
    size_t n = 0;
    for (prof__thread *th = prof__g.rec.threads; th; th = th->next) n++;
    struct prof__snap *snap = (struct prof__snap *)prof__grow(prof__snap, &prof__snapcap, n, sizeof *snap);
    if (snap) prof__snap = snap;
    else n = prof__snapcap;             /* out of memory: the rest wait for the next collection */
    prof__nsnap = 0;
    for (prof__thread *th = prof__g.rec.threads; th && prof__nsnap < n; th = th->next) {
        if (!th->retired) prof__g.rec.tinfo[th->idx].name = __atomic_load_n(&th->name, __ATOMIC_ACQUIRE);
        th->pinned = 1;
        prof__snap[prof__nsnap].th = th;
        prof__snap[prof__nsnap++].dead = th->dead;
    }
    pthread_mutex_unlock(&prof__lock);
}

/* A collection's end, under prof__lock: cycle cy's clock, its drops
   (dropped: the threads' counts read while draining) and its threads. */
static void prof__collect_counts(prof__cycle *cy, uint64_t dropped, int oom) {
    if (oom) cy->oom = 1;
    prof__cycle_clock(cy);
    /* cy->behind so far: events of a window whose start was never handed
       over. The writer's drops are counted twice, the writer's count
       first (prof__drop): every one read while draining in its thread's
       count is in the writer's read here. One read here and not yet then (its
       thread between the two adds) is more than this cycle dropped: it
       is left to the next cycle, which counts it. (Counted the other
       way round, a drop read while draining and not here was left to the
       next cycle, which could not tell it when all of its own drops were
       the writer's: the cycles' lines said one fewer than the stats.) */
    uint64_t behind = __atomic_load_n(&prof__g.rec.dropped_behind, __ATOMIC_RELAXED) - prof__g.rec.behind_reported;
    cy->dropped = dropped - prof__g.rec.dropped_reported + cy->behind;
    if (behind > cy->dropped - cy->behind) behind = cy->dropped - cy->behind;
    cy->behind += behind;
    prof__g.rec.behind_reported += behind;
    cy->th = (struct prof__tinfo *)malloc(prof__g.rec.ntinfo * sizeof *cy->th + 1);
    if (cy->th && prof__g.rec.ntinfo) memcpy(cy->th, prof__g.rec.tinfo, prof__g.rec.ntinfo * sizeof *cy->th);
    cy->nth = cy->th ? prof__g.rec.ntinfo : 0;
}

/* The threads that had exited before the collection, now out of the
   registry: their chunks and themselves go. */
static void prof__snap_free_dead(void) {
    for (size_t k = 0; k < prof__nsnap; k++) {
        prof__thread *th = prof__snap[k].th;
        if (!prof__snap[k].dead) continue;
        for (prof__chunk *c = th->head; c;) {
            prof__chunk *next = c->next;
            prof__chunk_release(c);
            c = next;
        }
        free(th);
    }
}

/* Takes every published record of every thread (and of the retired store)
   up to t_to, recycles drained chunks and frees threads that exited with
   more than a chunk. A thread writes its records in the order it made them,
   each after the reading of its clock, so its first record that began
   after t_to, or is a region that ended after it (still open at t_to), is
   where its part of this collection ends: that record and those after it
   stay where they are for the next collection, exactly as if they had been
   written later, and cost no memory beyond the chunks the cap counts. The
   retired store, which packs many threads' records, and a thread that has
   exited, whose chunks go now, spill them instead.
   The caller holds prof__wk_lock, not prof__lock: that is taken only to
   read the registry at the start and to change it at the end, so threads
   refill, register and step while records are copied. */
__attribute__((noinline)) PROF__SHARED void prof__collect(prof__cycle *cy, uint64_t t_from, uint64_t t_to) {
    prof__ev *spill = NULL;
    size_t nspill = 0, spillcap = 0;
    int oom = 0;
    prof__cycle *into = cy;             /* NULL once memory runs out */
    for (size_t i = 0; i < prof__g.rec.nspill; i++)
        prof__take(cy, &prof__g.rec.spill[i], t_from, t_to, &spill, &nspill, &spillcap, &oom);
    free(prof__g.rec.spill);
    int from_spill = cy && cy->n > 0;   /* then records are no longer grouped by thread */

    prof__snap_take();
    uint64_t dropped = 0;
    for (size_t k = 0; k < prof__nsnap; k++) {
        prof__thread *th = prof__snap[k].th;
        uint32_t idx = th->idx;             /* the retired store's records say whose they are */
        prof__chunk *c = __atomic_load_n(&th->head, __ATOMIC_ACQUIRE);
        uint32_t pos = th->head_pos;
        while (c) {
            if (into && !prof__ev_reserve(&into->ev, into->n, &into->cap, PROF__CHUNK_RECS, &into->oom)) into = NULL;
            for (; pos < PROF__CHUNK_RECS; pos++) {
                prof__rec *r = &c->recs[pos];
                prof__ev e;
                e.t0 = __atomic_load_n(&r->t0, __ATOMIC_ACQUIRE);
                if (!e.t0) goto drained;
                e.name = r->name;
                e.t1 = r->t1;
                e.kind = r->kind & 15u;              /* PROF__K_* fit 4 bits */
                e.aux = r->aux;
                if (PROF__UNLIKELY(e.kind == PROF__K_THREAD)) { idx = e.aux; continue; }
                e.th = idx & 0xFFFFFFFu;
                int later = e.t0 > t_to || (e.t1 > t_to && prof__role[e.kind] == PROF__R_SPAN);
                if (PROF__LIKELY(into && e.t0 >= t_from && !later)) into->ev[into->n++] = e;
                else if (later && !th->retired && !prof__snap[k].dead) {    /* the rest are too */
                    if (prof__found.on) prof__find_open(c, pos, idx, t_from, t_to);
                    goto drained;
                }
                else prof__take(into, &e, t_from, t_to, &spill, &nspill, &spillcap, &oom);
            }
            prof__chunk *next = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE);
            if (!next) break;               /* the producer still writes here */
            __atomic_store_n(&th->head, next, __ATOMIC_RELEASE);
            prof__chunk_release(c);
            c = next;
            pos = 0;
        }
    drained:
        th->head_pos = pos;
        dropped += __atomic_load_n(&th->dropped, __ATOMIC_ACQUIRE);
    }

    pthread_mutex_lock(&prof__lock);
    for (size_t k = 0; k < prof__nsnap; k++) {
        prof__thread *th = prof__snap[k].th;
        th->pinned = 0;
        if (!prof__snap[k].dead) continue;  /* exited before: everything it wrote is taken */
        prof__g.rec.dropped_dead += __atomic_load_n(&th->dropped, __ATOMIC_RELAXED);
        dropped -= __atomic_load_n(&th->dropped, __ATOMIC_RELAXED);
        for (prof__thread **link = &prof__g.rec.threads; *link; link = &(*link)->next)
            if (*link == th) { *link = th->next; break; }
    }
    dropped += prof__g.rec.dropped_dead;
    prof__g.rec.spill = spill;
    prof__g.rec.nspill = nspill;
    prof__g.rec.spillcap = spillcap;
    if (cy) prof__collect_counts(cy, dropped, oom);
    prof__g.rec.dropped_reported = dropped;
    pthread_mutex_unlock(&prof__lock);
    prof__snap_free_dead();
    /* spilled events came first: regroup by thread, keeping record order */
    if (cy && from_spill && (!cy->th || !prof__by_thread(cy))) cy->oom = 1;   /* it counts by cy->th */
}

/* Step 0 began with the first event, not at init: with a lazy start the
   profiler starts when some thread first registers (a worker naming itself,
   say), after regions of other threads began. Stretches ProfilerStep#0 back
   over whatever the cycle holds that began before it. */
static void prof__step0_covers(prof__cycle *cy) {
    prof__ev *s0 = NULL;
    uint64_t first = (uint64_t)-1;
    for (size_t i = 0; i < cy->n; i++) {
        prof__ev *e = &cy->ev[i];
        if (e->kind == PROF__K_STEP) {
            if (e->aux == 0) s0 = e;
        } else if (e->t0 < first) {
            first = e->t0;
        }
    }
    /* Inited lazily, by a region that read its clock after (PROF_SCOPE
       registers its thread when it opens): step 0 begins with it. */
    if (s0 && (first < s0->t0 || (prof__g.run.lazy && first < s0->t1))) s0->t0 = first;
}

/* What prof__analyse left in the cycle. */
PROF__SHARED void prof__analysis_free(prof__cycle *cy) {
    free(cy->parent);
    free(cy->first);
    free(cy->track);
    free(cy->label);
    free(cy->gcorr);
    free(cy->kcorr[0]);
    free(cy->kcorr[1]);
    cy->parent = cy->first = cy->track = cy->gcorr = cy->kcorr[0] = cy->kcorr[1] = NULL;
    cy->label = NULL;
    free(cy->idle);
    free(cy->path);
    cy->idle = NULL;
    cy->path = NULL;
    cy->nidle = cy->npath = 0;
}

static void prof__en_free(struct prof__ecy *en);
static void prof__smp_take(struct prof__cycle *cy);
static void prof__smp_free(struct prof__scy *sc);

static void prof__cycle_free(prof__cycle *cy) {
    prof__analysis_free(cy);
    free(cy->ev);
    free(cy->th);
    free(cy->gpu);
    free(cy->act);
    free(cy->gdev);
    prof__en_free(cy->en);
    cy->en = NULL;
    prof__smp_free(cy->smp);
    cy->smp = NULL;
}


/* ---- >>gpu  GPU core: event pairs, resolution, clock alignment -------------

   A GPU region is a pair of timing events recorded on the engine's stream.
   Pairs come from a per-thread ring: the thread fills it without a lock and
   makes no other runtime call (but a stream's identity on its first use,
   a slot's events before the profiler's thread has made a device's
   ahead: prof__gpool, and whether its stream is being captured into a
   graph: prof__gpu_edge). The profiler's thread drains
   the rings at each step's job with event queries, and at a save waits
   there for the window's events: no step waits for the GPU. Times are
   placed on the CPU clock through anchors: an event recorded on a private
   idle stream and waited for, so its GPU time is known on the CPU clock to
   within half the record-to-return window (best of 3). Each window takes
   its own anchors on the profiler's thread (when it first sees a pair of a
   device, every half second at steps, and when it is saved); between two
   anchors GPU time is scaled to CPU time, so clock drift does not
   accumulate. Under kernel capture no event is recorded at all (>>gpu's
   one clock). */

#endif /* PROF__BODIES */
#define PROF__GPU_RING0    256u         /* pairs in flight per thread, at first */
#define PROF__GPU_RING_MAX 65536u       /* ... growing up to this, then dropping */
#define PROF__GPU_STACK    64
#define PROF__GPU_DEVS     64
#define PROF__GPU_PROBES   3
#define PROF__GPU_REANCHOR 500000000    /* ns between anchors within a window */

typedef struct prof__gpair {            /* one GPU region in flight */
    void *ev0, *ev1;                    /* created on first use, then reused */
    int evdev;                          /* the events' device; -1: none yet */
    int dev;
    uint32_t gen;                       /* the window it was recorded in */
    uint32_t corr;                      /* 0: abandoned, a call failed */
    int ready;                          /* atomic: ev1 recorded, resolver may look */
    int span;                           /* no events: kernel capture spans it over its kernels */
    const char *name;
    long long stream;
    uint64_t t0, t1;                    /* CPU ticks at its begin, and (span) its end */
} prof__gpair;

typedef struct prof__gring {            /* one thread's pairs */
    struct prof__gring *next;
    prof__gpair *slot;
    uint32_t cap;                       /* power of 2; grows under the lock */
    uint32_t resv;                      /* atomic: pairs begun (producer) */
    uint32_t tail;                      /* atomic: pairs drained (resolver) */
    int dead;                           /* atomic: its thread has exited */
} prof__gring;

typedef struct prof__gframe { const char *name; uint64_t t0; uint32_t slot; int has_pair; } prof__gframe;

#define PROF__GPU_KNOWN 4               /* streams a thread remembers besides its last */
typedef struct prof__gstream { void *stream; long long id; int dev; } prof__gstream;

typedef struct prof__gtls_t {
    prof__gring *ring;
    void *stream;                       /* the last stream seen ... */
    long long stream_id;                /* ... and what it is */
    int stream_dev, stream_ok;
    prof__gstream known[PROF__GPU_KNOWN];   /* streams asked about before (not the default's) */
    int nknown;
    unsigned next_known;
    int sp, overflow;                   /* PROF_GPU_BEGIN/END stack */
    prof__gframe stack[PROF__GPU_STACK];
} prof__gtls_t;


/* mono: when it was taken, on CLOCK_MONOTONIC; ticks convert to ns only
   once calibrated, at the first save */
typedef struct prof__anchor { void *ev; uint64_t tick, unc; int64_t mono; } prof__anchor;

typedef struct prof__gres {             /* a resolved pair, still in GPU time */
    const char *name;
    uint64_t t0, t1;                    /* t1: span's CPU end */
    uint32_t corr;
    int dev, anchor, span;
    long long stream;
    double off_ns, dur_ns;              /* from its anchor; its length */
} prof__gres;

typedef struct prof__gev {              /* a saved GPU region, CPU clock in ns */
    const char *name;
    int64_t t0, t1;
    uint32_t corr;
    int dev;
    long long stream;
    int span;                           /* its CPU side for now: its kernels' span to come */
} prof__gev;

/* marked_ns: set (> 0) when kernel capture spanned every GPU region of
   the device over its kernels (>>gpu's one clock), to the half-width of
   the readings of the tracer's clock; prof__gdev_bound says which bound
   holds */
struct prof__gdev_info { int dev; prof_gpu_props props; int64_t unc_ns, drift_ns, marked_ns; };

typedef struct prof__gdev {
    void *stream;                       /* private, idle: anchors only */
    void *probe[PROF__GPU_PROBES];
    prof__anchor *a;
    int n, cap;
    int cur;                            /* atomic: anchor for new pairs; -1 none */
    int used, has_props;
    prof_gpu_props props;
} prof__gdev;

PROF__SHARED_VAR struct prof__gpu_state {
    const prof_gpu_api *api;
    int state;                          /* atomic: 0 not started, 1 on, 2 off */
    uint32_t corr;                      /* atomic: last correlation id */
    uint32_t gen;                       /* atomic: bumped at each window's start and end */
    prof__gring *rings;
    prof__gdev dev[PROF__GPU_DEVS];
    prof__gres *res;
    size_t nres, rescap;
    uint64_t dropped;                   /* atomic */
    void *smap[64];                     /* streams numbered by prof.h: HIP */
    int nsmap;
    int said_capture;                   /* atomic: a region inside stream capture was said */
    uint64_t relaxed_pt;                /* the profiler's thread whose capture mode is relaxed */
} prof__gpu;
#if PROF__BODIES

/* How far a device's GPU times may sit from their true place on the CPU
   clock, as measured: the anchors' half-bracket, or the tracer's readings'
   when kernel capture spanned them (kernels and regions then share that
   error). */
static int64_t prof__gdev_bound(const struct prof__gdev_info *d) { return d->marked_ns > 0 ? d->marked_ns : d->unc_ns; }

/* The first failure turns GPU timing off for the run, with one message. */
static void prof__gpu_fail(const prof_gpu_api *api, const char *call, int err) {
    int on = 1;
    if (__atomic_compare_exchange_n(&prof__gpu.state, &on, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        prof__msg("%s: %s failed: %s (%s); GPU timing is off, CPU regions are still recorded", api->name,
                  call, api->error_name(err), api->error_string(err));
}

static void prof__ensure_init(void);
static void prof__atexit(void);
static void prof__act_start_locked(const prof_gpu_api *api);
static void prof__act_follow_locked(int want, int window_starts);
static void prof__act_window_locked(void);
static void prof__act_stop_locked(void);
static void prof__en_wake_locked(void);

__attribute__((noinline, cold)) static int prof__gpu_start(const prof_gpu_api *api) {
    prof__ensure_init();
    pthread_mutex_lock(&prof__lock);
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) == 0) {
        int n = 0, err = api->device_count(&n);
        prof__gpu.api = api;
        prof__en_wake_locked();         /* PROF_ENERGY: its source is bound, its reads can begin */
        if (err || n <= 0) {
            __atomic_store_n(&prof__gpu.state, 2, __ATOMIC_RELEASE);
            if (err)
                prof__msg("%s: no usable device (%s: %s); GPU timing is off, CPU regions are still recorded",
                          api->name, api->error_name(err), api->error_string(err));
            else
                prof__msg("%s: no device; GPU timing is off, CPU regions are still recorded", api->name);
        } else {
            for (int d = 0; d < PROF__GPU_DEVS; d++) prof__gpu.dev[d].cur = -1;
            /* The runtime tears itself down at exit; saving must come first,
               and handlers run in reverse order of registration. */
            atexit(prof__atexit);
            __atomic_store_n(&prof__gpu.state, 1, __ATOMIC_RELEASE);
            prof__act_start_locked(api);
        }
    }
    pthread_mutex_unlock(&prof__lock);
    return __atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) == 1;
}

/* Runs fn on device d: events and streams belong to the device current
   when they are made. The engine's current device is put back. */
static int prof__gpu_on(int d, int *prev) {
    const prof_gpu_api *api = prof__gpu.api;
    int err = api->get_device(prev);
    if (!err && *prev != d) err = api->set_device(d);
    return err;
}
static void prof__gpu_off(int d, int prev) {
    if (prev != d) prof__gpu.api->set_device(prev);
}

/* When an event recorded on an idle stream reached the device, on the CPU
   clock: between [*lo, *hi]. The event completes a launch latency after
   its record (1-5 us on an idle GPU, tens under load), so the middle of
   record-to-sync would place it early by half that latency. Instead the
   event is polled: it completed after the last query that found it
   pending began, and before the first that found it done returned; the
   bracket is two queries wide whatever the latency. Polling stops after
   PROF__GPU_POLL_NS (a device that is slow to answer), and a wait takes
   over, from the last pending query on. */
#define PROF__GPU_POLL_NS 20000000
static int prof__gpu_probe(const prof_gpu_api *api, void *ev, void *stream, uint64_t *lo, uint64_t *hi) {
    uint64_t from = prof__now();
    int err = api->event_record(ev, stream);
    if (err) return err;
    *lo = from;
    int64_t stop = prof__mono_ns() + PROF__GPU_POLL_NS;
    for (unsigned n = 0;; n++) {
        uint64_t q0 = prof__now();
        err = api->event_query(ev);
        *hi = prof__now();
        if (err != api->not_ready) return err;
        *lo = q0;
        if ((n & 63u) == 63u && prof__mono_ns() > stop) break;
    }
    err = api->event_sync(ev);
    *hi = prof__now();
    return err;
}

/* A new anchor on device d, appended to its list. On the profiler's
   thread (under prof__wk_lock, which keeps anchors and results), never the
   engine's: it records on a stream of its own, waits for it, and sets the
   device of the thread it runs on. */
static int prof__gpu_anchor_take(int d) {
    const prof_gpu_api *api = prof__gpu.api;
    prof__gdev *g = &prof__gpu.dev[d];
    int prev, err, best = -1;
    uint64_t tick = 0, win = 0;
    if ((err = prof__gpu_on(d, &prev))) { prof__gpu_fail(api, "set device", err); return -1; }
    if (!g->stream && (err = api->stream_create(&g->stream))) g->stream = NULL;
    for (int i = 0; i < PROF__GPU_PROBES && !err; i++)
        if (!g->probe[i] && (err = api->event_create(&g->probe[i]))) g->probe[i] = NULL;
    if (err) {
        prof__gpu_off(d, prev);
        prof__gpu_fail(api, "creating an anchor", err);
        return -1;
    }
    if (g->n == g->cap) {
        int nc = g->cap ? 2 * g->cap : 8;
        prof__anchor *na = (prof__anchor *)realloc(g->a, (size_t)nc * sizeof *na);
        if (!na) { prof__gpu_off(d, prev); return -1; }
        memset(na + g->cap, 0, (size_t)(nc - g->cap) * sizeof *na);
        g->a = na;
        g->cap = nc;
    }
    for (int i = 0; i < PROF__GPU_PROBES; i++) {
        uint64_t lo, hi;
        if ((err = prof__gpu_probe(api, g->probe[i], g->stream, &lo, &hi))) {
            prof__gpu_off(d, prev);
            prof__gpu_fail(api, "anchor event", err);
            return -1;
        }
        if (best < 0 || hi - lo < win) { best = i; win = hi - lo; tick = lo + win / 2; }
    }
    prof__gpu_off(d, prev);
    /* the chosen probe becomes the anchor; the anchor slot's old event, a probe */
    prof__anchor *an = &g->a[g->n];
    void *ev = an->ev;
    an->ev = g->probe[best];
    g->probe[best] = ev;
    an->tick = tick;
    an->unc = win / 2;
    an->mono = prof__mono_ns();
    __atomic_store_n(&g->cur, g->n++, __ATOMIC_RELEASE);
    return g->n - 1;
}

/* What a stream is: its device and id. Runtimes without stream ids (HIP)
   get prof.h's own numbers, 0 for the default stream. A thread asks the
   runtime once per stream: an engine that alternates a few streams (compute
   and copies) finds them in its last PROF__GPU_KNOWN, with no call. The
   default stream's device is the current one, asked each time. */
__attribute__((noinline, cold)) static int prof__gpu_stream(prof__gtls_t *g, void *stream) {
    const prof_gpu_api *api = prof__gpu.api;
    int dev = 0;
    long long id = -1;
    for (int i = 0; (uintptr_t)stream > 2 && i < g->nknown; i++) {
        if (g->known[i].stream != stream) continue;
        g->stream = stream;
        g->stream_dev = g->known[i].dev;
        g->stream_id = g->known[i].id;
        g->stream_ok = 1;
        return 1;
    }
    int err = api->stream_info(stream, &dev, &id);
    if (err) { prof__gpu_fail(api, "stream query", err); return 0; }
    if (dev < 0 || dev >= PROF__GPU_DEVS) {
        prof__msg("%s: device %d is beyond the %d prof.h follows; its regions are not timed", api->name, dev,
                  PROF__GPU_DEVS);
        return 0;
    }
    if (id < 0) {
        id = 0;
        if (stream) {
            pthread_mutex_lock(&prof__lock);
            int i = 0;
            while (i < prof__gpu.nsmap && prof__gpu.smap[i] != stream) i++;
            if (i == prof__gpu.nsmap && i < (int)(sizeof prof__gpu.smap / sizeof prof__gpu.smap[0]))
                prof__gpu.smap[prof__gpu.nsmap++] = stream;
            id = i + 1;
            pthread_mutex_unlock(&prof__lock);
        }
    }
    g->stream = stream;
    g->stream_dev = dev;
    g->stream_id = id;
    g->stream_ok = 1;
    if ((uintptr_t)stream > 2) {
        prof__gstream *k = &g->known[g->nknown < PROF__GPU_KNOWN ? g->nknown++ : (int)(g->next_known++ % PROF__GPU_KNOWN)];
        k->stream = stream;
        k->id = id;
        k->dev = dev;
    }
    return 1;
}

/* The calling thread's ring: a dead thread's drained one, or a new one. */
__attribute__((noinline, cold)) static int prof__gpu_ring(prof__gtls_t *g) {
    prof__thread *th = prof__self ? prof__self : prof__register();
    if (!th) return 0;
    pthread_mutex_lock(&prof__lock);
    prof__gring *r = prof__gpu.rings;
    for (; r; r = r->next)
        if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE) && r->tail == r->resv) break;
    if (r) {
        r->dead = 0;
    } else if ((r = (prof__gring *)calloc(1, sizeof *r)) &&
               (r->slot = (prof__gpair *)calloc(PROF__GPU_RING0, sizeof *r->slot))) {
        r->cap = PROF__GPU_RING0;
        for (uint32_t i = 0; i < r->cap; i++) r->slot[i].evdev = -1;
        r->next = prof__gpu.rings;
        prof__gpu.rings = r;
    } else {
        free(r);
        r = NULL;
    }
    if (r) th->gpu_dead = &r->dead;
    pthread_mutex_unlock(&prof__lock);
    g->ring = r;
    return r != NULL;
}

/* A full ring doubles under the lock, which keeps the resolver out. */
__attribute__((noinline, cold)) static int prof__gpu_grow(prof__gring *r) {
    int ok = 0;
    pthread_mutex_lock(&prof__lock);
    uint32_t cap = r->cap, nc = cap * 2;
    prof__gpair *ns = nc <= PROF__GPU_RING_MAX ? (prof__gpair *)calloc(nc, sizeof *ns) : NULL;
    if (ns) {
        for (uint32_t i = 0; i < nc; i++) ns[i].evdev = -1;
        for (uint32_t i = r->tail; i != r->tail + cap; i++) ns[i & (nc - 1)] = r->slot[i & (cap - 1)];
        free(r->slot);
        r->slot = ns;
        r->cap = nc;
        ok = 1;
    }
    pthread_mutex_unlock(&prof__lock);
    return ok;
}

/* Events made ahead on the profiler's thread: per device, pairs a ring slot
   takes when it meets a device it has no events for, and the pairs slots
   gave up, which that thread destroys. The engine's thread takes and gives
   under the pool's lock and makes no runtime call; only while no pair of
   the device is ready yet (a thread's first regions, before the profiler's
   thread has seen the device) does it make them itself, and says nothing:
   the events then serve that slot for the run. */
#define PROF__GPU_SPARE 32              /* pairs kept ready per device in use */
typedef struct prof__gpool_pair { void *ev[2]; int dev; } prof__gpool_pair;
static struct {
    pthread_mutex_t lock;
    prof__gpool_pair *ready;            /* made ahead, any device */
    size_t nready, capready;
    prof__gpool_pair *gone;             /* given up by slots, to be destroyed */
    size_t ngone, capgone;
    int used[PROF__GPU_DEVS];           /* a slot asked for this device's events */
} prof__gpool = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL, 0, 0, { 0 } };

/* Slot p's events go back (to be destroyed), and a ready pair of device d
   takes their place. 0: none is ready. On the engine's thread. */
static int prof__gpool_take(prof__gpair *p, int d) {
    int ok = 0;
    pthread_mutex_lock(&prof__gpool.lock);
    prof__gpool.used[d] = 1;
    size_t i = 0;
    while (i < prof__gpool.nready && prof__gpool.ready[i].dev != d) i++;
    prof__gpool_pair *g = i == prof__gpool.nready || p->evdev < 0 ? prof__gpool.gone
        : (prof__gpool_pair *)prof__grow(prof__gpool.gone, &prof__gpool.capgone, prof__gpool.ngone + 1, sizeof *g);
    if (i < prof__gpool.nready && (p->evdev < 0 || g)) {
        if (p->evdev >= 0) {
            prof__gpool.gone = g;
            g[prof__gpool.ngone].ev[0] = p->ev0;
            g[prof__gpool.ngone].ev[1] = p->ev1;
            g[prof__gpool.ngone++].dev = p->evdev;
        }
        p->ev0 = prof__gpool.ready[i].ev[0];
        p->ev1 = prof__gpool.ready[i].ev[1];
        p->evdev = d;
        prof__gpool.ready[i] = prof__gpool.ready[--prof__gpool.nready];
        ok = 1;
    }
    pthread_mutex_unlock(&prof__gpool.lock);
    return ok;
}

/* n pairs destroyed, each on its device; the array freed. */
static void prof__gpool_destroy(const prof_gpu_api *api, prof__gpool_pair *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int prev;
        if (prof__gpu_on(v[i].dev, &prev)) continue;
        api->event_destroy(v[i].ev[0]);
        api->event_destroy(v[i].ev[1]);
        prof__gpu_off(v[i].dev, prev);
    }
    free(v);
}

/* At a job, on the profiler's thread: the pairs given up are destroyed, and
   each device in use gets PROF__GPU_SPARE pairs ready. */
static void prof__gpool_fill(void) {
    const prof_gpu_api *api = prof__gpu.api;
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) != 1) return;
    int have[PROF__GPU_DEVS] = { 0 }, used[PROF__GPU_DEVS];
    pthread_mutex_lock(&prof__gpool.lock);
    prof__gpool_pair *gone = prof__gpool.gone;
    size_t ngone = prof__gpool.ngone;
    prof__gpool.gone = NULL;
    prof__gpool.ngone = prof__gpool.capgone = 0;
    for (size_t i = 0; i < prof__gpool.nready; i++) have[prof__gpool.ready[i].dev]++;
    memcpy(used, prof__gpool.used, sizeof used);
    pthread_mutex_unlock(&prof__gpool.lock);
    prof__gpool_destroy(api, gone, ngone);
    for (int d = 0; d < PROF__GPU_DEVS; d++) {
        int prev, err = 0;
        if (!used[d] || have[d] >= PROF__GPU_SPARE || (err = prof__gpu_on(d, &prev))) {
            if (err) prof__gpu_fail(api, "set device", err);
            continue;
        }
        for (; have[d] < PROF__GPU_SPARE && !err; have[d]++) {
            prof__gpool_pair g;
            g.dev = d;
            if ((err = api->event_create(&g.ev[0]))) break;
            if ((err = api->event_create(&g.ev[1]))) {
                api->event_destroy(g.ev[0]);
                break;
            }
            pthread_mutex_lock(&prof__gpool.lock);
            prof__gpool_pair *r = (prof__gpool_pair *)prof__grow(prof__gpool.ready, &prof__gpool.capready,
                                                                 prof__gpool.nready + 1, sizeof *r);
            if (r) {
                prof__gpool.ready = r;
                r[prof__gpool.nready++] = g;
            }
            pthread_mutex_unlock(&prof__gpool.lock);
            if (!r) {
                api->event_destroy(g.ev[0]);
                api->event_destroy(g.ev[1]);
                break;
            }
        }
        prof__gpu_off(d, prev);
        if (err) prof__gpu_fail(api, "event create", err);
    }
}

/* Shutdown: every pair made ahead or given up is destroyed. */
static void prof__gpool_release(const prof_gpu_api *api) {
    pthread_mutex_lock(&prof__gpool.lock);
    prof__gpool_destroy(api, prof__gpool.ready, prof__gpool.nready);
    prof__gpool_destroy(api, prof__gpool.gone, prof__gpool.ngone);
    prof__gpool.ready = prof__gpool.gone = NULL;
    prof__gpool.nready = prof__gpool.capready = prof__gpool.ngone = prof__gpool.capgone = 0;
    memset(prof__gpool.used, 0, sizeof prof__gpool.used);
    pthread_mutex_unlock(&prof__gpool.lock);
}

/* Gives slot h events on device d. An engine that alternates devices meets
   slots whose events are another device's: a free slot further on that has
   d's swaps with it, so events are made only while the ring adapts, never
   per region. Failing that, the slot takes a pair made ahead on the
   profiler's thread (prof__gpool), or, none being ready, its events are
   remade here. */
__attribute__((noinline, cold)) static int prof__gpu_events(prof__gring *r, uint32_t h, int d) {
    const prof_gpu_api *api = prof__gpu.api;
    prof__gpair *p = &r->slot[h & (r->cap - 1)];
    uint32_t end = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) + r->cap;
    for (uint32_t i = h + 1; i != end; i++) {     /* free: not begun, or drained */
        prof__gpair *q = &r->slot[i & (r->cap - 1)];
        if (q->evdev != d) continue;
        void *ev0 = p->ev0, *ev1 = p->ev1;
        int evdev = p->evdev;
        p->ev0 = q->ev0;
        p->ev1 = q->ev1;
        p->evdev = d;
        q->ev0 = ev0;
        q->ev1 = ev1;
        q->evdev = evdev;
        return 1;
    }
    if (prof__gpool_take(p, d)) return 1;
    int prev, err;
    if (p->evdev >= 0 && !prof__gpu_on(p->evdev, &prev)) {
        api->event_destroy(p->ev0);
        api->event_destroy(p->ev1);
        prof__gpu_off(p->evdev, prev);
    }
    p->evdev = -1;
    if ((err = prof__gpu_on(d, &prev))) { prof__gpu_fail(api, "set device", err); return 0; }
    err = api->event_create(&p->ev0);
    if (!err && (err = api->event_create(&p->ev1))) api->event_destroy(p->ev0);
    prof__gpu_off(d, prev);
    if (err) { prof__gpu_fail(api, "event create", err); return 0; }
    p->evdev = d;
    return 1;
}

/* A stream being captured into a graph (cudaStreamBeginCapture) runs
   nothing: an event recorded there would be the graph's, and the
   profiler's query of it an error that invalidates the engine's capture.
   A GPU region there (or on the legacy stream while a blocking stream
   captures) records no event: it is a CPU region, said once. */
__attribute__((noinline, cold)) static void prof__gpu_say_captured(const prof_gpu_api *api) {
    if (!__atomic_exchange_n(&prof__gpu.said_capture, 1, __ATOMIC_ACQ_REL))
        prof__msg("%s: GPU regions inside stream capture have no GPU side (their work runs when the graph is "
                  "launched): they are recorded as CPU regions", api->name);
}

/* A region's edge: ev recorded on stream, unless stream is captured
   (*captured 1: said once, nothing recorded). One call of the binding's
   where it has record_free; else the query, then the record. */
static int prof__gpu_edge(const prof_gpu_api *api, void *ev, void *stream, int *captured) {
    int on = 0, err = 0;
    *captured = 0;
    if (api->record_free) err = api->record_free(ev, stream, captured);
    else if (!api->capturing || api->capturing(stream, &on) || !on) err = api->event_record(ev, stream);
    else *captured = 1;
    if (PROF__UNLIKELY(*captured)) prof__gpu_say_captured(api);
    return err;
}

static void prof__gpu_relax(const prof_gpu_api *api);   /* after prof__act, below */

/* Under kernel capture a GPU region records no event: its GPU side is the
   span of the kernels, copies and fills launched inside its CPU side onto
   its stream (Kineto's gpu_user_annotation rule), found at the save
   (prof__gpu_one_clock), so it nests by construction, costs what its CPU
   region costs, and one that launched nothing there has none. 1 while a
   tracer is started (atomic). */
static int prof__gpu_spans;

/* A thread's GPU state lives on the heap, reached by one pointer of TLS
   (prof__gtlsp), made at its first GPU region and freed at its exit: in a
   -fPIC copy the whole TLS block of the object goes to glibc's small static
   reserve (prof__tls is initial-exec), and 1.5 KB of frames there left no
   room for a second library with its own prof.h: its dlopen failed
   ("cannot allocate memory in static TLS block"). */
__attribute__((noinline, cold)) static prof__gtls_t *prof__gtls_new(void) {
    prof__thread *th = prof__self ? prof__self : prof__register();
    prof__gtls_t *g = th ? (prof__gtls_t *)calloc(1, sizeof *g) : NULL;
    if (!g) {
        __atomic_fetch_add(&prof__gpu.dropped, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    th->gpu = g;
    return prof__gtlsp = g;
}

void prof_gpu_begin(const prof_gpu_api *api, const char *name, void *stream) {
    prof__range_push(name);
    prof__gtls_t *g = prof__gtlsp;
    if (PROF__UNLIKELY(!g) && !(g = prof__gtls_new())) return;
    if (PROF__UNLIKELY(g->sp == PROF__GPU_STACK)) {     /* deeper than anyone reads */
        g->overflow++;
        __atomic_fetch_add(&prof__gpu.dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    prof__gframe *f = &g->stack[g->sp++];
    f->name = name;
    f->has_pair = 0;
    f->t0 = 0;
    if (!prof__recording()) return;
    f->t0 = prof__now();
    int state = __atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE);
    if (PROF__UNLIKELY(state != 1) && (state == 2 || !prof__gpu_start(api))) return;
    api = prof__gpu.api;
    if (PROF__UNLIKELY(!g->ring) && !prof__gpu_ring(g)) return;
    /* The last stream's device and id are kept; the default stream (NULL,
       or the runtimes' handles 1 and 2) is the current device's, which
       the engine may have changed since. */
    if (PROF__UNLIKELY((uintptr_t)stream <= 2) && stream == g->stream && g->stream_ok) {
        int cur;
        if (api->get_device(&cur) || cur != g->stream_dev) g->stream_ok = 0;
    }
    if (PROF__UNLIKELY(stream != g->stream || !g->stream_ok) && !prof__gpu_stream(g, stream)) return;
    prof__gring *r = g->ring;
    uint32_t h = r->resv;
    if (PROF__UNLIKELY(h - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= r->cap) && !prof__gpu_grow(r)) {
        __atomic_fetch_add(&prof__gpu.dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    prof__gpair *p = &r->slot[h & (r->cap - 1)];
    int dev = g->stream_dev;
    uint32_t gen = __atomic_load_n(&prof__gpu.gen, __ATOMIC_ACQUIRE);
    int span = __atomic_load_n(&prof__gpu_spans, __ATOMIC_ACQUIRE);
    if (!span && PROF__UNLIKELY(p->evdev != dev) && !prof__gpu_events(r, h, dev)) return;
    if (!span) {
        int cap, err = prof__gpu_edge(api, p->ev0, stream, &cap);
        if (cap) return;                /* inside stream capture: a CPU region */
        if (PROF__UNLIKELY(err)) { prof__gpu_fail(api, "event record", err); return; }
    }
    uint32_t corr = __atomic_add_fetch(&prof__gpu.corr, 1, __ATOMIC_RELAXED);
    if (PROF__UNLIKELY(!corr)) corr = __atomic_add_fetch(&prof__gpu.corr, 1, __ATOMIC_RELAXED);
    p->span = span;
    p->name = name;
    p->stream = g->stream_id;
    p->dev = dev;
    p->gen = gen;
    p->corr = corr;
    p->t0 = f->t0;
    __atomic_store_n(&p->ready, 0, __ATOMIC_RELAXED); /* shutdown may have left it set */
    __atomic_store_n(&r->resv, h + 1, __ATOMIC_RELEASE);
    f->slot = h;
    f->has_pair = 1;
}

void prof_gpu_end(const prof_gpu_api *api, void *stream) {
    prof__range_pop();
    prof__gtls_t *g = prof__gtlsp;
    if (PROF__UNLIKELY(!g)) return;             /* no GPU region began on this thread */
    if (PROF__UNLIKELY(g->overflow)) { g->overflow--; return; }
    if (PROF__UNLIKELY(!g->sp)) return;         /* unmatched: nothing open */
    prof__gframe *f = &g->stack[--g->sp];
    if (!f->t0) return;                         /* began outside a window */
    uint32_t corr = 0;
    prof__gpair *p = NULL;
    /* state 0 after a begin: PROF_SHUTDOWN ran meanwhile and released the
       events (a C++ guard in main outlives it) */
    if (f->has_pair && __atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) != 0) {
        prof__gring *r = g->ring;
        p = &r->slot[f->slot & (r->cap - 1)];
        const prof_gpu_api *ga = prof__gpu.api;
        int cap = 0, err = p->span ? 0 : prof__gpu_edge(ga, p->ev1, stream, &cap);
        if (cap) {
            p->corr = 0;                        /* capture began inside it: a CPU region */
        } else if (PROF__UNLIKELY(err)) {
            p->corr = 0;
            prof__gpu_fail(api, "event record", err);
        }
        corr = p->corr;
    }
    uint64_t t1 = prof__now();
    if (p) {                            /* the pair's end, then the resolver may look */
        p->t1 = t1;
        __atomic_store_n(&p->ready, 1, __ATOMIC_RELEASE);
    }
    prof__rec *rec = prof__tls.cur;     /* the inline path of prof__emit, with a kind */
    if (PROF__LIKELY(rec < prof__tls.end)) {
        rec->name = f->name;
        rec->t1 = t1;
        rec->kind = corr ? PROF__K_GPU_REGION : PROF__K_REGION;
        rec->aux = corr;
        __atomic_store_n(&rec->t0, f->t0, __ATOMIC_RELEASE);
        prof__tls.cur = rec + 1;
    } else {
        prof__push(corr ? PROF__K_GPU_REGION : PROF__K_REGION, f->name, f->t0, t1, corr);
    }
}

/* ---- resolution, on the profiler's thread --------------------------------
   The engine's thread records a pair's two events and nothing else: no
   query, no anchor, no wait. The profiler's thread drains the rings at each
   step's job (queries only), and at a save waits there for the window's
   pairs, takes the last anchors and places them, while the engine runs on:
   a cycle whose GPU work is still running is written once it has finished.
   Anchors and results are the profiler's thread's alone (prof__wk_lock);
   a ring's slots are read under prof__lock (a ring grows under it), then
   queried and waited for without it: a pair's events stay its own until
   the ring's tail passes it. prof__gpu_wgen: the window whose pairs are
   being resolved; a job of a later window starts its anchors afresh. */
static uint32_t prof__gpu_wgen;

static void prof__gpu_window_for(uint32_t gen) {
    if (gen == prof__gpu_wgen) return;
    prof__gpu_wgen = gen;
    prof__gpu.nres = 0;
    for (int d = 0; d < PROF__GPU_DEVS; d++) {
        prof__gpu.dev[d].cur = -1;
        prof__gpu.dev[d].n = 0;
    }
}

/* One finished pair of the window, resolved against its device's current
   anchor (one taken after the pair began gives a negative offset, which
   elapsed times allow). 0: a call failed (GPU timing is off). */
static int prof__gpu_resolve(const prof__gpair *p) {
    const prof_gpu_api *api = prof__gpu.api;
    float off = 0.0f, dur = 0.0f;
    int err = 0, a = -1;
    if (!p->span) {
        a = prof__gpu.dev[p->dev].cur;
        if (a < 0 && (a = prof__gpu_anchor_take(p->dev)) < 0) return 0;   /* it said why */
        err = api->elapsed_ms(&off, prof__gpu.dev[p->dev].a[a].ev, p->ev0);
        if (!err) err = api->elapsed_ms(&dur, p->ev0, p->ev1);
        if (err) {
            prof__gpu_fail(api, "event elapsed time", err);
            return 0;
        }
    }
    /* a window's results take at most what the memory cap (PROF_BUFFER_MB)
       allows the CPU's records; more are dropped */
    int room = prof__gpu.nres < prof__g.rec.chunks_max * PROF__CHUNK_BYTES / sizeof(prof__gres);
    prof__gres *nr = room ? (prof__gres *)prof__grow(prof__gpu.res, &prof__gpu.rescap, prof__gpu.nres + 1, sizeof *nr)
                          : NULL;
    if (!nr) {
        __atomic_fetch_add(&prof__gpu.dropped, 1, __ATOMIC_RELAXED);
        return 1;
    }
    prof__gpu.res = nr;
    prof__gres *o = &prof__gpu.res[prof__gpu.nres++];
    o->name = p->name;
    o->t0 = p->t0;
    o->t1 = p->t1;
    o->span = p->span;
    o->corr = p->corr;
    o->dev = p->dev;
    o->anchor = a;
    o->stream = p->stream;
    o->off_ns = (double)off * 1e6;
    o->dur_ns = (double)dur * 1e6;
    return 1;
}

/* Drains every ring as far as pairs of window gen begun by `until` (the
   job's step) are finished (wait: waits for each), letting older windows'
   pairs go unread and leaving later ones for their step and window, as if
   drained at the step itself; then tops up the events made ahead. On the
   profiler's thread. */
PROF__SHARED void prof__gpu_drain(uint32_t gen, int wait, uint64_t until) {
    const prof_gpu_api *api = prof__gpu.api;
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) != 1) return;
    prof__gpu_relax(api);
    prof__gpu_window_for(gen);
    pthread_mutex_lock(&prof__lock);
    size_t nr = 0;
    for (prof__gring *r = prof__gpu.rings; r; r = r->next) nr++;
    prof__gring **rings = nr ? (prof__gring **)malloc(nr * sizeof *rings) : NULL;
    nr = 0;
    for (prof__gring *r = rings ? prof__gpu.rings : NULL; r; r = r->next) rings[nr++] = r;  /* freed at shutdown only */
    pthread_mutex_unlock(&prof__lock);
    for (size_t i = 0; i < nr; i++) {
        prof__gring *r = rings[i];
        pthread_mutex_lock(&prof__lock);
        uint32_t t = r->tail, h = __atomic_load_n(&r->resv, __ATOMIC_ACQUIRE), n = 0;
        prof__gpair *cp = h != t ? (prof__gpair *)malloc((size_t)(h - t) * sizeof *cp) : NULL;
        for (; cp && n != h - t; n++) {     /* finished ones: ready first, then what it guards */
            const prof__gpair *p = &r->slot[(t + n) & (r->cap - 1)];
            if (!__atomic_load_n(&p->ready, __ATOMIC_ACQUIRE)) break;
            cp[n] = *p;
        }
        pthread_mutex_unlock(&prof__lock);
        uint32_t k = 0;
        for (; k < n; k++) {
            const prof__gpair *p = &cp[k];
            if ((int32_t)(p->gen - gen) > 0 || p->t0 > until) break;   /* a later window's, or step's */
            if (!p->corr || p->gen != gen || __atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) != 1) continue;
            /* a device's first anchor of the window as soon as a pair of it is
               seen, finished or not: the pairs lie close to it */
            if (!p->span && prof__gpu.dev[p->dev].cur < 0 && prof__gpu_anchor_take(p->dev) < 0) break;
            int err = p->span ? 0 : wait ? api->event_sync(p->ev1) : api->event_query(p->ev1);
            if (err == api->not_ready && !wait) break;
            if (err) prof__gpu_fail(api, wait ? "event synchronize" : "event query", err);
            else if (!prof__gpu_resolve(p)) break;
        }
        pthread_mutex_lock(&prof__lock);
        for (uint32_t j = 0; j < k; j++) __atomic_store_n(&r->slot[(t + j) & (r->cap - 1)].ready, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&r->tail, t + k, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&prof__lock);
        free(cp);
    }
    free(rings);
    prof__gpool_fill();                 /* the events the next regions will take */
}

/* At a step's job: drain what finished; re-anchor devices whose anchor is
   old. On the profiler's thread. */
static void prof__gpu_step(uint32_t gen, uint64_t until) {
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) != 1) return;
    prof__gpu_drain(gen, 0, until);
    int64_t now = prof__mono_ns();
    for (int d = 0; d < PROF__GPU_DEVS; d++) {
        prof__gdev *g = &prof__gpu.dev[d];
        if (g->cur >= 0 && now - g->a[g->cur].mono > PROF__GPU_REANCHOR) prof__gpu_anchor_take(d);
    }
}

/* A recording window begins at a step: its pairs carry a new gen, and
   kernel capture's records start afresh. Under prof__lock, on the thread
   that steps: no runtime call. */
static void prof__gpu_window_locked(void) {
    prof__act_window_locked();
    __atomic_add_fetch(&prof__gpu.gen, 1, __ATOMIC_RELEASE);
}

static int prof__gev_cmp(const void *a, const void *b) {
    const prof__gev *x = (const prof__gev *)a, *y = (const prof__gev *)b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

static int prof__u32_cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Whether the GPU side of correlation c is in the cycle: a region whose
   pair was lost is written as a plain region. corrs: prof__gpu_corrs'. */
static int prof__gpu_find(const uint32_t *corrs, size_t n, uint32_t c) {
    return n && bsearch(&c, corrs, n, sizeof c, prof__u32_cmp) != NULL;
}

/* ---- kernel capture: what a tracer (CUPTI) hands over ----------------------
   The tracer's callbacks run on its threads, and a flush made under
   prof__lock calls them back on this one: what they hand over is kept under
   a lock of its own, never prof__lock. Within the memory cap; past it they
   are counted lost, as are the records the tracer itself could not keep.
   Times are placed on the CPU clock by two readings of both clocks, at the
   window's start and at its save: both are host clocks, so the mapping is
   exact to the readings' width, with no launch latency in it. Which steps a
   record belongs to is decided on the tracer's own clock, read at the steps
   themselves, not through that mapping: a launch made just after a step
   began stays in it however wide the readings were. */
#endif /* PROF__BODIES */
typedef struct prof__gact {             /* a saved activity, on the CPU clock */
    prof_gpu_activity a;
    uint64_t t0, t1;                    /* ticks */
    long tid;                           /* runtime call: its thread in the trace */
} prof__gact;
#if PROF__BODIES

static pthread_mutex_t prof__act_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const prof_gpu_tracer *tracer;      /* set once capture has started */
    prof_gpu_activity *a;               /* under prof__act_lock */
    size_t n, cap;
    uint64_t lost;                      /* atomic */
    prof__aclk clk;                     /* the readings: the window's start, its last save */
    uint32_t saved_lo, saved_hi;        /* the last saved cycle's runtime calls' correlations */
    int64_t next_flush;                 /* flight mode: mono ns of the next trim's flush */
    int capturing;                      /* the tracer's capture is on (>>api-gpu: it follows the schedule) */
    uint64_t own_pt, own_tid;           /* atomic: the profiler's thread, whose runtime calls are its own */
    int said_start;                     /* a window without warm-up paid capture's start: said once */
} prof__act;

/* The tracer's clock now; 0 when nothing is captured. Under prof__lock. */
static int64_t prof__act_now_locked(void) { return prof__act.tracer ? prof__act.tracer->now_ns() : 0; }

/* Kernels of the last saved cycle still running at its save reach us after
   it was written: counted and said, never dropped unsaid. Under prof__act_lock. */
static void prof__act_late_locked(void) {
    size_t late = 0;
    for (size_t i = 0; i < prof__act.n; i++) {
        const prof_gpu_activity *a = &prof__act.a[i];
        late += a->kind < PROF_GPU_RUNTIME && prof__act.saved_hi && a->correlation >= prof__act.saved_lo &&
                a->correlation <= prof__act.saved_hi;
    }
    if (late)
        prof__msg("%zu kernels, copies or fills launched in the last saved cycle finished after it was saved and "
                  "are not in it", late);
}

/* A reading of both clocks: the tracer's between two of ours, taken at
   their midpoint, so off by up to half their distance; the narrowest of 16
   (a first call binds lazily, a preempted one takes milliseconds; on a
   loaded machine under TSan the narrowest of 3 was often microseconds wide,
   and a launch at a GPU region's first instant then fell before it:
   cupti_c_cupti_loaded failed 7 runs in 25). Each try is three clock reads,
   on the profiler's thread. */
static void prof__act_reading(int k) {
    uint64_t best = (uint64_t)-1;
    for (int i = 0; i < 16; i++) {
        uint64_t a = prof__now();
        int64_t ns = prof__act.tracer->now_ns();
        uint64_t b = prof__now();
        if (b - a >= best) continue;
        best = b - a;
        prof__act.clk.ns[k] = ns;
        prof__act.clk.tick[k] = a + (b - a) / 2;
        prof__act.clk.half[k] = (b - a + 1) / 2;
    }
}

/* Kineto's names of a synchronisation's kinds (cupti_strings.cpp). */
static const char *prof__sync_name(int sync) {
    static const char *const n[] = { "Unknown Sync", "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync" };
    return sync >= 0 && sync <= PROF_GPU_SYNC_CONTEXT ? n[sync] : n[0];
}
static const char *prof__gnode_path(uint64_t node);  /* >>open */
static void prof__gnodes_make(void);
static void prof__gnode_say_lost(void);

void prof_gpu_activity_add(const prof_gpu_activity *a) {
    const char *region = a->graph_node && !a->capture_region ? prof__gnode_path(a->graph_node) : NULL;
    pthread_mutex_lock(&prof__act_lock);
    size_t room = prof__g.rec.chunks_max * PROF__CHUNK_BYTES / sizeof *a;
    prof_gpu_activity *na = prof__act.n < room ? (prof_gpu_activity *)prof__grow(prof__act.a, &prof__act.cap,
                                                                                   prof__act.n + 1, sizeof *na)
                                               : NULL;
    if (na) {
        prof__act.a = na;
        na[prof__act.n] = *a;
        if (region) na[prof__act.n].capture_region = region;
        if (a->kind == PROF_GPU_SYNC && !a->name) na[prof__act.n].name = prof__sync_name(a->sync);
        prof__act.n++;
    } else {
        __atomic_fetch_add(&prof__act.lost, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&prof__act_lock);
}

void prof_gpu_activity_lost(uint64_t n) { __atomic_fetch_add(&prof__act.lost, n, __ATOMIC_RELAXED); }

/* Capture starts with the GPU core (PROF_INIT where prof_cuda.h is included,
   or the first GPU region), when PROF_CUPTI asks. Under prof__lock. */
static void prof__act_start_locked(const prof_gpu_api *api) {
    if (!prof__g.conf.cupti || prof__act.tracer) return;
    if (!api->tracer) {
        prof__msg("%s: kernel capture is asked for (PROF_KERNELS), which this build lacks (CUDA: CUPTI's headers; "
                  "HIP: a file with PROF_IMPLEMENTATION or PROF_GPU_IMPLEMENTATION includes prof_hip.h); GPU regions "
                  "are still timed by events", api->name);
        return;
    }
    prof__gnodes_make();                /* before the tracer's graph-node callbacks can come */
    if (!api->tracer->start(prof__g.rec.chunks_max * PROF__CHUNK_BYTES)) return;  /* it said why */
    prof__act.tracer = api->tracer;
    __atomic_store_n(&prof__act.capturing, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&prof__gpu_spans, 1, __ATOMIC_RELEASE);
    prof__act_reading(0);
    prof__act_follow_locked(__atomic_load_n(&prof__on, __ATOMIC_RELAXED), 0);
}

/* Capture follows the schedule (>>api-gpu): on while a window records or
   warms up (prof__on), off between windows, as Kineto enables CUPTI at the
   warm-up step and disables it after the active steps. The warm-up step
   absorbs capture's start; a window without one begins with it, and its
   first step pays it (said once). In flight mode every step records: on.
   Under prof__lock, after a save has taken the window's records. */
static void prof__act_follow_locked(int want, int window_starts) {
    const prof_gpu_tracer *tr = prof__act.tracer;
    if (!tr || !tr->capture || !want == !__atomic_load_n(&prof__act.capturing, __ATOMIC_RELAXED)) return;
    tr->capture(want);
    __atomic_store_n(&prof__act.capturing, want, __ATOMIC_RELAXED);   /* a save reads it off the lock */
    if (want && window_starts && !prof__act.said_start++)
        prof__msg("%s: kernel capture starts with the recording window, which has no warm-up step: the window's "
                  "first step pays the start (a warm-up step, warmup=1, would)", tr->name);
}

/* A window begins: the clocks are read. What came before it stays until
   the next save, on the profiler's thread, leaves it out (and counts the
   last save's late records): nothing proportional to the records at the
   step. Under prof__lock. */
static void prof__act_window_locked(void) {
    if (!prof__act.tracer) return;
    prof__act_reading(0);
}

/* The row of a device's side a record is drawn on: its stream's; a
   synchronisation's beside it, as Kineto moves a Stream Sync (its stream +
   PROF__SYNC_ROW, "stream N (sync)"), or one row for those of no stream
   (PROF__SYNC_ROW - 1, "sync"): a host's wait overlaps the stream's kernels. */
#define PROF__SYNC_ROW 1000000
PROF__INLINE long long prof__act_row(const prof_gpu_activity *a) {
    if (a->kind != PROF_GPU_SYNC) return a->stream;
    return a->stream >= 0 ? a->stream + PROF__SYNC_ROW : PROF__SYNC_ROW - 1;
}

static int prof__gact_cmp(const void *x, const void *y) {
    const prof__gact *a = (const prof__gact *)x, *b = (const prof__gact *)y;
    int ra = a->a.kind == PROF_GPU_RUNTIME, rb = b->a.kind == PROF_GPU_RUNTIME;
    if (ra != rb) return rb - ra;       /* runtime calls first */
    if (ra && a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (!ra && a->a.device != b->a.device) return a->a.device < b->a.device ? -1 : 1;
    long long sa = prof__act_row(&a->a), sb = prof__act_row(&b->a);
    if (!ra && sa != sb) return sa < sb ? -1 : 1;
    return (a->t0 > b->t0) - (a->t0 < b->t0);
}

/* A runtime call the profiler's own thread made (a device's properties,
   say): not the engine's, and not in its trace. */
static int prof__act_own(uint64_t v) {
    uint64_t pt = __atomic_load_n(&prof__act.own_pt, __ATOMIC_RELAXED);
    uint64_t tid = __atomic_load_n(&prof__act.own_tid, __ATOMIC_RELAXED);
    return (pt && (v == pt || (v <= 0xFFFFFFFFu && v == (uint32_t)pt))) || (tid && v == tid);
}

/* The profiler's thread queries and waits for events while an engine's
   thread may capture a graph: in the runtime's default (global) mode that
   is forbidden, and would invalidate the capture. Its mode is relaxed, once,
   before its first event call; on no other thread. */
static void prof__gpu_relax(const prof_gpu_api *api) {
    uint64_t pt = __atomic_load_n(&prof__act.own_pt, __ATOMIC_RELAXED);
    if (!api->relax_capture || !pt || pt != (uint64_t)pthread_self() || prof__gpu.relaxed_pt == pt) return;
    prof__gpu.relaxed_pt = pt;
    api->relax_capture();
}

/* The trace's id of the thread a tracer names: its kernel thread id, or its
   pthread_self() (CUPTI's), whole or cut to 32 bits, among the threads th;
   else the tracer's own. */
static long prof__act_tid(const struct prof__tinfo *th, size_t nth, uint64_t v) {
    for (size_t i = 0; i < nth; i++) {
        const struct prof__tinfo *t = &th[i];
        if ((uint64_t)t->tid == v || t->pt == v || (v <= 0xFFFFFFFFu && (uint32_t)t->pt == v)) return t->tid;
    }
    return (long)v;
}

/* Ticks per tracer ns: the rate between the two readings of both clocks,
   or the calibration's before there are two. */
PROF__INLINE double prof__act_rate(const prof__aclk *c, double npt) {
    double k = npt > 0 ? 1.0 / npt : 1.0;
    if (c->ns[1] > c->ns[0] && c->tick[1] > c->tick[0])
        k = (double)(c->tick[1] - c->tick[0]) / (double)(c->ns[1] - c->ns[0]);
    return k;
}

/* The correlations of the n records' launches (kernels, copies, fills) and
   of the runtime's own calls (not the driver's), each sorted. */
PROF__INLINE void prof__act_launches(size_t n, uint32_t *launched, size_t *nlaunched, uint32_t *rt, size_t *nrt) {
    for (size_t i = 0; i < n; i++) {
        const prof_gpu_activity *a = &prof__act.a[i];
        if (a->kind < PROF_GPU_RUNTIME) launched[(*nlaunched)++] = a->correlation;
        else if (a->kind == PROF_GPU_RUNTIME && !a->driver) rt[(*nrt)++] = a->correlation;
    }
    qsort(launched, *nlaunched, sizeof *launched, prof__u32_cmp);
    qsort(rt, *nrt, sizeof *rt, prof__u32_cmp);
}

/* Record a's ends in ticks, both by one monotonic map (k ticks per tracer
   ns): back-to-back kernels stay so. 1 when it ends before its start
   (pytorch#192021): then it has no length. */
PROF__INLINE int prof__act_ticks(const prof__aclk *c, const prof_gpu_activity *a, double k, uint64_t *t0,
                                 uint64_t *t1) {
    *t0 = c->tick[0] + (uint64_t)(int64_t)((double)(a->t0_ns - c->ns[0]) * k);
    *t1 = c->tick[0] + (uint64_t)(int64_t)((double)(a->t1_ns - c->ns[0]) * k);
    if ((int64_t)(*t1 - *t0) >= 0) return 0;
    *t1 = *t0;
    return 1;
}

/* A saved cycle's lines about its kernel capture's records: those drawn
   with no length, and those lost (which the cycle counts). */
static void prof__act_say_lost(prof__cycle *cy, size_t backwards) {
    prof__gnode_say_lost();
    if (backwards)
        prof__msg("%zu kernel, copy, fill or runtime call record%s ended before %s began (%s's timestamps); "
                  "drawn with no length", backwards, backwards == 1 ? "" : "s", backwards == 1 ? "it" : "they",
                  prof__act.tracer->name);
    cy->act_lost = __atomic_exchange_n(&prof__act.lost, 0, __ATOMIC_RELAXED);
    if (cy->act_lost)
        prof__msg("%llu kernels, copies, fills or runtime calls lost (%s's buffers or the memory cap "
                  "PROF_BUFFER_MB full, or no timestamp: not complete when the buffers were flushed at the save, "
                  "or not timed); counted in the trace as prof_gpu_dropped_activities",
                  (unsigned long long)cy->act_lost, prof__act.tracer->name);
}

/* A cycle's records wait, on the profiler's thread, for the work its
   window launched, PROF__ACT_WAIT_NS at most, while the tracer hands over
   complete buffers only (1 ms apart, doubling to 64 ms). Where no window
   records after it (capture is off, or the process shuts down): until the
   tracer holds nothing back, then one forced flush, whose records not
   complete (a kernel still running) are counted lost. Where capture goes
   on (the next window, the flight recorder): until every launch in
   [from_ns, to_ns] (a runtime call whose name says it launches a kernel, a
   graph, a copy or a fill; the driver's are not waited for) has its work's
   record, and no forced flush, which would cut the next window's records
   short: what comes later is counted late at the next save. */
#define PROF__ACT_WAIT_NS 1000000000

static int prof__act_launches_work(const prof_gpu_activity *a) {
    const char *n = a->name ? a->name : "";
    return a->kind == PROF_GPU_RUNTIME && !a->driver &&
           ((strstr(n, "Launch") && !strstr(n, "HostFunc")) || strstr(n, "Memcpy") || strstr(n, "Memset"));
}

/* The window's launches whose work has no record yet. Under prof__act_lock. */
static size_t prof__act_unfinished_locked(int64_t from_ns, int64_t to_ns) {
    size_t n = prof__act.n, m = 0, left = 0;
    uint32_t *done = n ? (uint32_t *)malloc(n * sizeof *done) : NULL;
    if (!done) return 0;
    for (size_t i = 0; i < n; i++)
        if (prof__act.a[i].kind < PROF_GPU_RUNTIME) done[m++] = prof__act.a[i].correlation;
    qsort(done, m, sizeof *done, prof__u32_cmp);
    for (size_t i = 0; i < n; i++) {
        const prof_gpu_activity *a = &prof__act.a[i];
        left += a->t0_ns >= from_ns && a->t0_ns <= to_ns && prof__act_launches_work(a) &&
                !prof__gpu_find(done, m, a->correlation);
    }
    free(done);
    return left;
}

static void prof__act_wait(int64_t from_ns, int64_t to_ns) {
    const prof_gpu_tracer *tr = prof__act.tracer;
    int goes_on = __atomic_load_n(&prof__act.capturing, __ATOMIC_RELAXED) &&
                  !__atomic_load_n(&prof__g.shut, __ATOMIC_RELAXED);
    int64_t until = prof__mono_ns() + PROF__ACT_WAIT_NS;
    long nap = 1000000;
    for (;;) {
        (tr->flush_complete ? tr->flush_complete : tr->flush)();
        size_t left;
        if (goes_on) {
            pthread_mutex_lock(&prof__act_lock);
            left = prof__act_unfinished_locked(from_ns, to_ns);
            pthread_mutex_unlock(&prof__act_lock);
        } else {
            left = tr->held ? tr->held() : 0;
        }
        if (!left || prof__mono_ns() >= until) break;
        struct timespec d = { 0, nap };
        syscall(SYS_nanosleep, &d, NULL);   /* nanosleep() is POSIX: hidden by -std=c11 */
        if (nap < 64000000) nap *= 2;
    }
    if (!goes_on) tr->flush();
}

/* After a cycle took its records: what a later window launched stays (a
   runtime call begun after to_ns, and the work of such a call, or of no
   call here that began after to_ns); the rest goes. keep: room for n
   correlations. Under prof__act_lock. */
static void prof__act_keep_later_locked(int64_t to_ns, uint32_t *keep, const uint32_t *all, size_t nall) {
    size_t nkeep = 0, n = 0;
    for (size_t i = 0; i < prof__act.n; i++) {
        const prof_gpu_activity *a = &prof__act.a[i];
        if (a->kind == PROF_GPU_RUNTIME && a->t0_ns > to_ns) keep[nkeep++] = a->correlation;
    }
    qsort(keep, nkeep, sizeof *keep, prof__u32_cmp);
    for (size_t i = 0; i < prof__act.n; i++) {
        const prof_gpu_activity *a = &prof__act.a[i];
        if (a->t0_ns <= 0 || a->t1_ns <= 0) continue;     /* counted lost already */
        int later = a->kind == PROF_GPU_RUNTIME ? a->t0_ns > to_ns
                    : prof__gpu_find(keep, nkeep, a->correlation) ||
                          (!prof__gpu_find(all, nall, a->correlation) && a->t0_ns > to_ns);
        if (later) prof__act.a[n++] = *a;
    }
    prof__act.n = n;
}

/* A cycle is saved: what the tracer completed goes into it, on the CPU
   clock, by the readings c. A runtime call belongs to it if it began in
   [from_ns, to_ns], the tracer's clock read at the steps that bound the
   cycle; what it launched belongs with it, wherever the GPU ran it (GPU
   work lags the CPU: a window's first kernels may be the last window's
   launches, its last ones run after the save). prof__analyse spans the
   cycle's GPU regions over what they launched (prof__gpu_one_clock). On
   the profiler's thread, without prof__lock (only for a copy of the
   threads' ids): a step goes on meanwhile, and a next window's records
   stay for its own save. */
static void prof__gpu_one_clock(prof__cycle *cy, int64_t tracer_ns);

/* The registry's threads, copied under prof__lock, to name runtime calls'
   threads by without it; NULL (none: the tracer's ids stay) without memory. */
static struct prof__tinfo *prof__act_threads(size_t *n) {
    pthread_mutex_lock(&prof__lock);
    *n = prof__g.rec.ntinfo;
    struct prof__tinfo *th = (struct prof__tinfo *)malloc(*n * sizeof *th + 1);
    if (th && *n) memcpy(th, prof__g.rec.tinfo, *n * sizeof *th);
    pthread_mutex_unlock(&prof__lock);
    if (!th) *n = 0;
    return th;
}

static void prof__act_cycle(prof__cycle *cy, const prof__aclk *c, int64_t from_ns, int64_t to_ns) {
    if (!prof__act.tracer) return;
    prof__act_wait(from_ns, to_ns);
    size_t nth;
    struct prof__tinfo *th = prof__act_threads(&nth);
    double npt = prof__ns_per_tick(), k = prof__act_rate(c, npt);
    pthread_mutex_lock(&prof__act_lock);
    prof__act_late_locked();
    size_t n = prof__act.n, nin = 0, nall = 0, backwards = 0;
    cy->act = n ? (prof__gact *)malloc(n * sizeof *cy->act) : NULL;
    /* the correlations of runtime calls: all of them, and those in the window */
    uint32_t *all = n ? (uint32_t *)malloc(2 * n * sizeof *all) : NULL, *in = all ? all + n : NULL;
    /* the correlations of what was launched and of the runtime's calls: a
       driver call is kept when it launched something the runtime did not
       (cuBLAS's cuLaunchKernel), not when it launched nothing or is the
       runtime's own (cudaLaunchKernel's cuLaunchKernel, if the tracer
       names it under the same correlation) */
    uint32_t *launched = n ? (uint32_t *)malloc(2 * n * sizeof *launched) : NULL, *rt = launched ? launched + n : NULL;
    size_t nlaunched = 0, nrt = 0;
    if (n && (!cy->act || !all || !launched)) {
        __atomic_fetch_add(&prof__act.lost, n, __ATOMIC_RELAXED);
        cy->oom = 1;
        free(cy->act);
        cy->act = NULL;
        n = prof__act.n = 0;
    }
    prof__act_launches(n, launched, &nlaunched, rt, &nrt);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n; i++) {
            const prof_gpu_activity *a = &prof__act.a[i];
            int api = a->kind == PROF_GPU_RUNTIME;
            if (pass != !api) continue;     /* runtime calls first, then what they launched */
            if (api && a->driver && (!prof__gpu_find(launched, nlaunched, a->correlation) ||
                                     prof__gpu_find(rt, nrt, a->correlation)))
                continue;
            if (api && prof__act_own(a->thread)) continue;
            int inside = a->t0_ns >= from_ns && a->t0_ns <= to_ns;
            /* a record without a time: one the tracer could not time
               (kineto#996), or one not complete when its buffer was flushed
               (CUPTI's forced flush hands those back with 0 for a time it
               does not have yet): counted, never placed */
            if (a->t0_ns <= 0 || a->t1_ns <= 0) {
                __atomic_fetch_add(&prof__act.lost, 1, __ATOMIC_RELAXED);
                continue;
            }
            if (api) {
                all[nall++] = a->correlation;
                if (!inside) continue;
                in[nin++] = a->correlation;
            } else if (!prof__gpu_find(in, nin, a->correlation) &&
                       (prof__gpu_find(all, nall, a->correlation) || !inside)) {
                continue;                   /* launched outside the window */
            }
            uint64_t t0, t1;
            backwards += (size_t)prof__act_ticks(c, a, k, &t0, &t1);
            prof__gact *o = &cy->act[cy->nact++];
            o->a = *a;
            o->t0 = t0;
            o->t1 = t1;
            o->tid = api ? prof__act_tid(th, nth, a->thread) : 0;
            cy->nact_api += (size_t)api;
        }
        if (!pass) {
            qsort(all, nall, sizeof *all, prof__u32_cmp);
            qsort(in, nin, sizeof *in, prof__u32_cmp);
        }
    }
    if (n) prof__act_keep_later_locked(to_ns, launched, all, nall);
    if (nin) prof__act.saved_lo = in[0], prof__act.saved_hi = in[nin - 1];
    pthread_mutex_unlock(&prof__act_lock);
    free(th);
    free(all);
    free(launched);
    if (cy->nact) qsort(cy->act, cy->nact, sizeof *cy->act, prof__gact_cmp);
    int64_t half = c->half[0] > c->half[1] ? (int64_t)c->half[0] : (int64_t)c->half[1];
    cy->spans_ns = npt > 0 ? (int64_t)((double)half * npt + 0.5) : half;
    cy->spans_due = 1;              /* for prof__analyse: a save's CPU sides are collected after this */
    prof__act_say_lost(cy, backwards);
}

/* Flight mode: the window never ends, so at steps what the tracer recorded
   that ended before the ring's first step (from_ns, on the tracer's clock)
   goes, the ring keeping no more: once a second, after the tracer handed
   over its complete buffers (a kernel still running stays with the tracer
   for a later flush), and whenever they have filled half the room the cap
   gives them. A kernel launched before the ring that ran into it stays, as
   a cycle keeps it. On the profiler's thread. */
static void prof__act_trim(int64_t from_ns) {
    const prof_gpu_tracer *tr = prof__act.tracer;
    if (!tr) return;
    int64_t now = prof__mono_ns();
    if (now >= prof__act.next_flush) {
        prof__act.next_flush = now + 1000000000;
        (tr->flush_complete ? tr->flush_complete : tr->flush)();
    } else {
        pthread_mutex_lock(&prof__act_lock);
        size_t n = prof__act.n;
        pthread_mutex_unlock(&prof__act_lock);
        if (n < prof__g.rec.chunks_max * PROF__CHUNK_BYTES / sizeof(prof_gpu_activity) / 2) return;
    }
    from_ns -= 1000000;                 /* 1 ms to spare: launches of kernels still running */
    pthread_mutex_lock(&prof__act_lock);
    size_t n = 0;
    for (size_t i = 0; i < prof__act.n; i++) {
        const prof_gpu_activity *a = &prof__act.a[i];
        if (a->t0_ns <= 0 || a->t1_ns <= 0 || a->t1_ns >= from_ns) prof__act.a[n++] = *a;  /* untimed: counted at the dump */
    }
    prof__act.n = n;
    pthread_mutex_unlock(&prof__act_lock);
}

/* Shutdown: capture stops. Under prof__lock. */
static void prof__act_stop_locked(void) {
    if (!prof__act.tracer) return;
    __atomic_store_n(&prof__gpu_spans, 0, __ATOMIC_RELEASE);
    prof__act.tracer->stop();
    prof__act.tracer = NULL;
    pthread_mutex_lock(&prof__act_lock);
    prof__act_late_locked();
    free(prof__act.a);
    prof__act.a = NULL;
    prof__act.n = prof__act.cap = 0;
    pthread_mutex_unlock(&prof__act_lock);
}

void prof_gpu_say(const char *line) { prof__msg("%s", line); }

void prof_gpu_attach(const prof_gpu_api *api) {
    if (prof__g.conf.cupti || prof__g.conf.energy) prof__gpu_start(api);
}

/* Kernel capture starts with the profiler, whatever starts it (PROF_INIT,
   or lazily the first macro of any kind): the file with PROF_IMPLEMENTATION
   (or PROF_GPU_IMPLEMENTATION) that includes prof_cuda.h or prof_hip.h
   defines prof__gpu_autostart, which attaches its runtime. Without it (no
   such file includes a binding) capture waits for a GPU region or a
   PROF_INIT where a binding is included, which one line says. Run after a
   lazy init, or at the first event after prof_init (PROF_INIT of
   prof_cuda.h or prof_hip.h attaches at once, and HIP's before HIP
   starts), outside prof__lock. */
PROF_API void prof__gpu_autostart(void) __attribute__((weak));
static int prof__gpu_auto;              /* atomic: init asked for it, not yet done */

static void prof__gpu_autostart_due(void) {
    if (!__atomic_load_n(&prof__gpu_auto, __ATOMIC_ACQUIRE) || !__atomic_exchange_n(&prof__gpu_auto, 0, __ATOMIC_ACQ_REL))
        return;
    if (prof__gpu_autostart) prof__gpu_autostart();
    else if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) == 0 && prof__g.conf.cupti)
        prof__msg("kernel capture (PROF_CUPTI / PROF_KERNELS) starts at the first GPU region or PROF_INIT in a file "
                  "that includes prof_cuda.h or prof_hip.h: no file with PROF_IMPLEMENTATION or PROF_GPU_IMPLEMENTATION "
                  "includes one");
}

/* The drained pairs (prof__gpu.res) placed on the CPU clock through the
   anchors they were measured from: between anchors k and k+1 GPU time is
   scaled by (CPU span / GPU span) of the two, so the GPU clock's drift is
   taken out. Times stay in ticks, converted with the CPU events. Those
   begun from t_from to t_to go to *out (sorted), their devices to *info;
   the others are counted lost (returned). A pair measured from an anchor
   taken after it began takes the span before that anchor. On the
   profiler's thread. */
static uint64_t prof__gpu_place(prof__gev **out, size_t *nout, struct prof__gdev_info **info_out,
                                       size_t *ninfo_out, uint64_t t_from, uint64_t t_to, int *oom) {
    const prof_gpu_api *api = prof__gpu.api;
    uint64_t lost = 0;
    /* ticks to ns, for what is reported in ns: not yet calibrated before
       the first save (prof__save_cycle refines it again) */
    prof__calibrate();
    double npt = prof__ns_per_tick();   /* once: another thread may calibrate meanwhile */
    /* per device: scale[k] in ticks per GPU ns between anchors k, k+1 */
    double *scale[PROF__GPU_DEVS] = { 0 };
    struct prof__gdev_info info[PROF__GPU_DEVS];
    int ninfo = 0, spans[PROF__GPU_DEVS] = { 0 };   /* devices with regions kernel capture spans */
    for (size_t i = 0; i < prof__gpu.nres; i++) spans[prof__gpu.res[i].dev] |= prof__gpu.res[i].span;
    for (int d = 0; d < PROF__GPU_DEVS; d++) {
        prof__gdev *g = &prof__gpu.dev[d];
        if (g->n < 1 ? !spans[d] : !(scale[d] = (double *)calloc((size_t)g->n, sizeof(double)))) continue;
        struct prof__gdev_info *in = &info[ninfo++];
        memset(in, 0, sizeof *in);
        in->dev = d;
        if (!g->has_props) g->has_props = api->device_props(d, &g->props) == 0;
        if (g->has_props) in->props = g->props;
        else snprintf(in->props.name, sizeof in->props.name, "%s device %d", api->name, d);
        for (int k = 0; k < g->n; k++) {
            int64_t unc = prof__tick_ns(g->a[k].tick + g->a[k].unc) - prof__tick_ns(g->a[k].tick);
            if (unc > in->unc_ns) in->unc_ns = unc;
            scale[d][k] = npt > 0 ? 1.0 / npt : 1.0;
            float ms;
            if (k + 1 < g->n && !api->elapsed_ms(&ms, g->a[k].ev, g->a[k + 1].ev) && ms > 0.0f) {
                double gpu_ns = (double)ms * 1e6;
                double cpu_ticks = (double)(g->a[k + 1].tick - g->a[k].tick);
                int64_t cpu_ns = prof__tick_ns(g->a[k + 1].tick) - prof__tick_ns(g->a[k].tick);
                int64_t drift = cpu_ns - (int64_t)gpu_ns;
                if (drift < 0) drift = -drift;
                if (drift > in->drift_ns) in->drift_ns = drift;
                scale[d][k] = cpu_ticks / gpu_ns;
            }
        }
    }
    prof__gev *gv = (prof__gev *)malloc(prof__gpu.nres * sizeof *gv);
    struct prof__gdev_info *gd = (struct prof__gdev_info *)malloc((size_t)ninfo * sizeof *gd + 1);
    *out = gv;
    *info_out = gd;
    *nout = 0;
    if (gv && gd) {
        memcpy(gd, info, (size_t)ninfo * sizeof *info);
        *ninfo_out = (size_t)ninfo;
        for (size_t i = 0; i < prof__gpu.nres; i++) {
            const prof__gres *r = &prof__gpu.res[i];
            if (r->t0 < t_from || r->t0 > t_to || (!r->span && !scale[r->dev])) { lost++; continue; }
            prof__gev *o = &gv[(*nout)++];
            o->name = r->name;
            o->corr = r->corr;
            o->dev = r->dev;
            o->stream = r->stream;
            o->span = r->span;
            if (r->span) {              /* its CPU side, until its kernels span it */
                o->t0 = (int64_t)r->t0;
                o->t1 = (int64_t)r->t1;
                continue;
            }
            /* an anchor taken after the pair began: the span before it */
            double k = scale[r->dev][r->off_ns < 0 && r->anchor > 0 ? r->anchor - 1 : r->anchor];
            o->t0 = (int64_t)prof__gpu.dev[r->dev].a[r->anchor].tick + (int64_t)(r->off_ns * k + (r->off_ns < 0 ? -0.5 : 0.5));
            o->t1 = o->t0 + (int64_t)(r->dur_ns * k + 0.5);
        }
        qsort(gv, *nout, sizeof *gv, prof__gev_cmp);
    } else {
        lost += prof__gpu.nres;
        *oom = 1;
    }
    for (int d = 0; d < PROF__GPU_DEVS; d++) free(scale[d]);
    return lost;
}

/* A cycle is saved, on the profiler's thread: wait for its window's pairs
   (the engine's thread does not), close each device's anchors with a last
   one, and place every pair on the CPU clock; then kernel capture's
   records of the window (prof__act_cycle), by the clocks its step read. */
static void prof__gpu_save(prof__cycle *cy, uint64_t t_from, uint64_t t_to, uint32_t gen) {
    uint64_t lost = 0;
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) == 1) {
        prof__gpu_relax(prof__gpu.api);
        prof__gpu_drain(gen, 1, t_to);  /* the window's GPU work is done: its records complete */
        for (int d = 0; d < PROF__GPU_DEVS; d++)
            if (prof__gpu.dev[d].n > 0) prof__gpu_anchor_take(d);
    }
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) == 1 && prof__gpu.nres)
        lost += prof__gpu_place(&cy->gpu, &cy->ngpu, &cy->gdev, &cy->ngdev, t_from, t_to, &cy->oom);
    prof__gpu.nres = 0;
    cy->gpu_dropped = lost + __atomic_exchange_n(&prof__gpu.dropped, 0, __ATOMIC_RELAXED);
    if (cy->gpu_dropped)
        prof__msg("%llu GPU regions dropped (memory cap PROF_BUFFER_MB reached, or too many in flight or "
                  "nested on a thread); counted in the trace as prof_gpu_dropped_regions",
                  (unsigned long long)cy->gpu_dropped);
    if (cy->act_due) {
        cy->act_due = 0;
        prof__act_cycle(cy, &cy->act_clk, cy->act_clk.ns[0], cy->act_clk.ns[1]);
    }
}

/* A cycle is saved, at the step, on the thread that steps: the clocks
   are read for kernel capture's records, which prof__gpu_save takes on the
   profiler's thread with the GPU regions; then the next window's gen.
   Under prof__lock. Returns the saved window's gen. */
static uint32_t prof__gpu_cycle_locked(prof__cycle *cy) {
    uint32_t gen = __atomic_load_n(&prof__gpu.gen, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) == 1 && prof__act.tracer) {
        prof__act_reading(1);
        cy->act_clk = prof__act.clk;    /* ns[0]: read as the window began */
        cy->act_due = 1;
    }
    prof__gpu_window_locked();
    return gen;
}

/* Shutdown: every event, stream and ring of a dead thread goes back. Live
   threads keep their (emptied) rings: a region may still end into one. */
static void prof__gpu_release_locked(void) {
    const prof_gpu_api *api = prof__gpu.api;
    if (!api) return;
    __atomic_store_n(&prof__gpu.state, 2, __ATOMIC_RELEASE);
    prof__act_stop_locked();
    prof__gpool_release(api);
    prof__gring **link = &prof__gpu.rings;
    while (*link) {
        prof__gring *r = *link;
        for (uint32_t i = 0; i < r->cap; i++) {
            prof__gpair *p = &r->slot[i];
            if (p->evdev < 0) continue;
            api->event_destroy(p->ev0);
            api->event_destroy(p->ev1);
            p->evdev = -1;
        }
        if (__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE)) {
            *link = r->next;
            free(r->slot);
            free(r);
        } else {
            r->tail = __atomic_load_n(&r->resv, __ATOMIC_ACQUIRE);
            link = &r->next;
        }
    }
    for (int d = 0; d < PROF__GPU_DEVS; d++) {
        prof__gdev *g = &prof__gpu.dev[d];
        for (int k = 0; k < g->cap; k++) if (g->a[k].ev) api->event_destroy(g->a[k].ev);
        for (int i = 0; i < PROF__GPU_PROBES; i++) if (g->probe[i]) api->event_destroy(g->probe[i]);
        if (g->stream) api->stream_destroy(g->stream);
        free(g->a);
        memset(g, 0, sizeof *g);
        g->cur = -1;
    }
    free(prof__gpu.res);
    prof__gpu.res = NULL;
    prof__gpu.nres = prof__gpu.rescap = 0;
    __atomic_store_n(&prof__gpu.state, 0, __ATOMIC_RELEASE);
}

/* ---- >>energy  joules per step, watts per GPU (PROF_ENERGY) ---------------
   Each device of the runtime in use (CUDA or HIP, through prof_cuda.h /
   prof_hip.h) has a total-energy counter in its vendor's management
   library, which the binding loads and hands over as a prof_gpu_energy
   (>>api-gpu); each device is matched to the library's by PCI bus id,
   never by index. Every call into it is made on the profiler's thread:
   its init, the matching, and the reads of the counter (energy since the
   driver loaded), which cost milliseconds (2.8 ms median, 206 ms at worst
   on an H200) and change about every 100 ms. So the thread reads while a
   window records, no more often than the counter changes (0.9 times the
   mean interval between the changes it saw: 10 ms at first, then what the
   device does, 5 ms to 1 s), between its jobs and at their start, and
   once as a window opens (or its warm-up: the step that opens it wakes the
   thread, which reads at once). That opening read's value is an opening
   knot at its end, placed before the next change's knot; a step that
   began before it (a window opening at init, while the thread loads the
   library) is taken back from it at the power up to the next knot, by at
   most PROF__EN_BACK of the knots' mean intervals.
   A change seen between two reads happened between the start of the one
   before and the end of this one: a knot, placed mid-way, whose value is
   exact. Between knots the energy is spread evenly over time (the power is
   taken as constant there), so a window's total is exact to its ends' two
   knot intervals, and a step's joules are the difference of that curve at
   its ends: a step with no knot inside it gets a time share of one
   interval, and says so. A save waits (on the profiler's thread, at most a
   second) for a knot past the window's last step. The power track is the
   same curve's slope: ΔmJ / Δms between knots. A device without the
   counter, a read that fails, a counter that goes back: one line, that
   device's energy stops (or the interval is left unknown), the trace is
   whole. */
#define PROF__EN_DEVS     16
#define PROF__EN_FIRST_NS 10000000      /* between reads until the counter is seen to change */
#define PROF__EN_MIN_NS   5000000
#define PROF__EN_MAX_NS   1000000000
#define PROF__EN_COSTS    256           /* the last reads' costs, for their median */
#define PROF__EN_MEAN     16            /* knot intervals the reading period follows */
#define PROF__EN_SHARE    "share of one counter interval"
#define PROF__EN_BACK     4             /* mean knot intervals a step's start may precede the first read */

typedef struct prof__eknot {
    uint64_t tick;                      /* mid-way between the reads that bracket the change */
    uint64_t half;                      /* half that bracket (ticks) */
    uint64_t mj;                        /* energy since the first read (mJ); never falls */
    int64_t mono;                       /* tick's CLOCK_MONOTONIC ns, for the period */
    int gap;                            /* 1: the energy since the knot before is unknown;
                                           2 (a model's): the step ending here was a share;
                                           4: an opening (the counter's value at a window's
                                           opening read, tick: that read's end) */
} prof__eknot;

typedef struct prof__emet {            /* PROF_GPU_METRICS: a device's metrics at one read */
    uint64_t tick;                      /* mid-way through their reads */
    double v[PROF_GPU_M_COUNT];
} prof__emet;

typedef struct prof__edev {
    int dev;                            /* the runtime's device number */
    char bus[32];                       /* its PCI bus id, as the runtime writes it */
    void *h;                            /* the library's handle */
    int on;                             /* read; 0: said why (why), never read again */
    const char *why;
    int have;                           /* a read before: raw, a */
    uint64_t raw, acc;                  /* the counter's last value; energy so far (mJ) */
    uint64_t a;                         /* tick at which the last read that saw raw began */
    int64_t a_mono;
    int gap, back_said;                 /* the next knot ends an unknown interval */
    int opening;                        /* an opening read, no change seen since: open_* */
    uint64_t open_b, open_mj;           /*   its end (tick), the energy then (counter units) */
    int64_t open_mono;
    double mj_per_count;                /* the counter's unit (1 until the library says) */
    prof__eknot *k;                     /* under prof__en_lock */
    size_t nk, cap;
    int mon;                            /* PROF_GPU_METRICS: bit m, metric m is read */
    prof__emet *m;                      /* under prof__en_lock */
    size_t nm, mcap;
} prof__edev;

typedef struct prof__ecdev {            /* a device in a saved cycle */
    int dev;
    char bus[32];
    char key[32];                       /* "GPU d energy (J)": its steps' argument */
    double res_mj;                      /* the counter's resolution */
    const char *why;                    /* no energy: why */
    prof__eknot *k;
    size_t nk;
    int mon;                            /* PROF_GPU_METRICS: the metrics read */
    prof__emet *m;
    size_t nm;
} prof__ecdev;

typedef struct prof__ecount { uint64_t tick; double v; int which; } prof__ecount;  /* a model's tokens (0), samples (1) */

typedef struct prof__ecy {              /* a saved cycle's energy (prof__cycle.en) */
    const char *src;                    /* the library (prof_gpu_energy's source) */
    const char *counter;                /* the call that reads it */
    const char *const *gm_names;        /* PROF_GPU_METRICS: the throttle mask's bits' names, or NULL */
    const char *why;                    /* none at all: why */
    int nd;
    prof__ecdev d[PROF__EN_DEVS];
    double period_ms, change_ms, cost_med_us, cost_max_us;
    uint64_t reads;
    int from_trace;                     /* a model's: its steps' joules, read back */
    prof__ecount *cnt;                  /*   and its tokens and samples (prof_model_count) */
    size_t ncnt;
} prof__ecy;

static pthread_mutex_t prof__en_lock = PTHREAD_MUTEX_INITIALIZER;
/* The profiler's thread, the one that reads (its id, not a TLS flag: a
   copy's TLS is 80 bytes); 0 once it has stopped. */
static uint64_t prof__en_thread;
static int prof__en_reader(void) {
    return __atomic_load_n(&prof__en_thread, __ATOMIC_RELAXED) == (uint64_t)pthread_self();
}
static struct {
    int state;                          /* profiler's thread: 0 not tried, 1 reading, 2 off */
    const char *why;                    /* off: why */
    const prof_gpu_energy *src;         /* the binding's library, once started */
    prof__edev d[PROF__EN_DEVS];
    int nd;
    int64_t period_ns, next_ns;         /* between reads; the next (CLOCK_MONOTONIC) */
    uint64_t reads, cost_max;           /* under prof__en_lock */
    uint32_t cost[PROF__EN_COSTS];
} prof__en;

static const char *prof__en_err(int r, char *buf, size_t n) {
    if (prof__en.src->error) prof__en.src->error(r, buf, n);
    else snprintf(buf, n, "%s error %d", prof__en.src->source, r);
    return buf;
}

/* One read of device v's counter, in its own units (mj_per_count). */
static int prof__en_get(prof__edev *v, uint64_t *raw) {
    *raw = 0;
    return prof__en.src->read(v->h, raw, &v->mj_per_count);
}

static void prof__en_off(const char *why) {
    prof__en.state = 2;
    prof__en.why = why;
}

/* PROF_GPU_METRICS: the tracks' names and units (the JSON's argument). */
static const char *const prof__gm_name[PROF_GPU_M_COUNT] = { "SM clock", "memory clock", "utilization",
                                                             "memory used", "PCIe rx", "PCIe tx", "throttle reasons" };
static const char *const prof__gm_unit[PROF_GPU_M_COUNT] = { "MHz", "MHz", "%", "MiB", "MB/s", "MB/s", "on" };

static int prof__gm_wanted(void) { return __atomic_load_n(&prof__g.conf.gpu_metrics, __ATOMIC_RELAXED); }
static int prof__gm_on(void) { return prof__gm_wanted() && prof__en.src && prof__en.src->metric; }

/* PROF_GPU_METRICS, on the profiler's thread, once for device v: a first
   read of each metric; one line for each it does not have. */
PROF__COLD static void prof__gm_start(prof__edev *v) {
    char e[160];
    int mon = 0;
    if (!prof__gm_wanted()) return;
    if (!prof__en.src->metric) {
        prof__msg("PROF_GPU_METRICS: GPU %d (%s): %s's binding reads no device metrics; no device tracks", v->dev,
                  v->bus, prof__en.src->source);
        return;
    }
    for (int m = 0; m < PROF_GPU_M_COUNT; m++) {
        const char *call = prof__en.src->metric_call[m];
        double x = 0;
        int err;
        if (!call)
            prof__msg("PROF_GPU_METRICS: GPU %d (%s): %s's binding does not read its %s; no track for it", v->dev,
                      v->bus, prof__en.src->source, prof__gm_name[m]);
        else if ((err = prof__en.src->metric(v->h, m, &x)) != 0)
            prof__msg("PROF_GPU_METRICS: GPU %d (%s) gives no %s (%s: %s); no track for it", v->dev, v->bus,
                      prof__gm_name[m], call, prof__en_err(err, e, sizeof e));
        else
            mon |= 1 << m;
    }
    __atomic_store_n(&v->mon, mon, __ATOMIC_RELAXED);  /* a save on the engine's thread reads it */
}

/* PROF_GPU_METRICS, on the profiler's thread: one sample of device v's
   metrics, at an energy read. A read that fails: one line, that metric's
   track ends there. */
static void prof__gm_read(prof__edev *v) {
    char e[160];
    prof__emet x;
    memset(&x, 0, sizeof x);
    uint64_t a = prof__now();
    int mon = __atomic_load_n(&v->mon, __ATOMIC_RELAXED);
    for (int m = 0; m < PROF_GPU_M_COUNT; m++) {
        int err;
        if (!(mon >> m & 1) || (err = prof__en.src->metric(v->h, m, &x.v[m])) == 0) continue;
        prof__msg("PROF_GPU_METRICS: GPU %d (%s): reading its %s failed (%s: %s); no track for it from here on", v->dev,
                  v->bus, prof__gm_name[m], prof__en.src->metric_call[m], prof__en_err(err, e, sizeof e));
        mon &= ~(1 << m);
    }
    __atomic_store_n(&v->mon, mon, __ATOMIC_RELAXED);
    x.tick = a + (prof__now() - a) / 2;
    pthread_mutex_lock(&prof__en_lock);
    prof__emet *mv = (prof__emet *)prof__grow(v->m, &v->mcap, v->nm + 1, sizeof *mv);
    if (mv) {
        v->m = mv;
        mv[v->nm++] = x;
    }
    pthread_mutex_unlock(&prof__en_lock);
}

/* The profiler's thread, once: the library, each device by its bus id, a
   first read of its counter. */
PROF__COLD static void prof__en_start(const prof_gpu_api *api) {
    char e[160];
    int n = 0, err;
    const char *why = NULL;
    prof__en_off("not started");
    if (!api->pci_bus_id) {
        prof__msg("PROF_ENERGY: %s's binding gives no PCI bus ids (a prof_cuda.h or prof_hip.h older than prof.h); "
                  "no energy in the trace", api->name);
        prof__en_off("the runtime's binding gives no PCI bus ids");
        return;
    }
    if (!api->energy) {
        prof__msg("PROF_ENERGY: %s's binding reads no energy counter; no energy in the trace", api->name);
        prof__en_off("the runtime's binding reads no energy counter");
        return;
    }
    prof__en.src = api->energy;
    if ((err = api->device_count(&n)) || n <= 0) {
        prof__msg("PROF_ENERGY: no %s device; no energy in the trace", api->name);
        prof__en_off("no device");
        return;
    }
    if (!prof__en.src->open(&why)) {
        prof__en_off(why ? why : "the management library cannot be used");
        return;
    }
    int on = 0;
    for (int d = 0; d < n && d < PROF__EN_DEVS; d++) {
        prof__edev *v = &prof__en.d[prof__en.nd++];
        uint64_t raw = 0;
        v->dev = d;
        v->mj_per_count = 1.0;
        if ((err = api->pci_bus_id(v->bus, (int)sizeof v->bus, d)) != 0) {
            v->bus[0] = 0;
            prof__msg("PROF_ENERGY: GPU %d: %s gives no PCI bus id (%s); no energy for it", d, api->name,
                      api->error_name(err));
            v->why = "the runtime gives no PCI bus id";
            continue;
        }
        v->bus[sizeof v->bus - 1] = 0;
        if ((err = prof__en.src->device(v->bus, &v->h)) != 0) {
            prof__msg("PROF_ENERGY: GPU %d (%s): %s has no device at that bus (%s); no energy for it", d, v->bus,
                      prof__en.src->source, prof__en_err(err, e, sizeof e));
            v->why = "the management library has no device at its PCI bus id";
            continue;
        }
        uint64_t a = prof__now();
        if ((err = prof__en_get(v, &raw)) != 0) {
            const char *hint = prof__en.src->no_counter_hint;
            prof__msg("PROF_ENERGY: GPU %d (%s) has no energy counter (%s%s); no energy for it", d, v->bus,
                      prof__en_err(err, e, sizeof e), hint ? hint : "");
            v->why = err == prof__en.src->unsupported ? "no energy counter (not supported)"
                                                     : "its energy counter cannot be read";
            continue;
        }
        v->on = v->have = 1;
        v->raw = raw;
        v->a = a;
        v->a_mono = prof__mono_ns();
        v->opening = 1;                 /* the first read opens the first window */
        v->open_b = prof__now();
        v->open_mono = v->a_mono;
        prof__gm_start(v);
        on++;
    }
    if (n > PROF__EN_DEVS)
        prof__msg("PROF_ENERGY: %d devices; energy for the first %d", n, PROF__EN_DEVS);
    if (!on) {
        prof__en_off("no device with an energy counter");
        return;
    }
    prof__en.state = 1;
    prof__en.why = NULL;
    prof__en.period_ns = PROF__EN_FIRST_NS;
    prof__en.next_ns = prof__mono_ns() + PROF__EN_FIRST_NS;
}

/* The reading period: 0.9 times the mean interval between a device's last
   knots, the fastest device's; no faster than PROF__EN_MIN_NS. */
static void prof__en_period(const prof__edev *v) {
    if (v->nk < 4) return;
    size_t m = v->nk - 1 < PROF__EN_MEAN ? v->nk - 1 : PROF__EN_MEAN;
    int64_t mean = (v->k[v->nk - 1].mono - v->k[v->nk - 1 - m].mono) / (int64_t)m;
    int64_t p = mean / 10 * 9;
    if (p < PROF__EN_MIN_NS) p = PROF__EN_MIN_NS;
    if (p > PROF__EN_MAX_NS) p = PROF__EN_MAX_NS;
    int fastest = 1;
    for (int i = 0; i < prof__en.nd; i++) {
        const prof__edev *o = &prof__en.d[i];
        if (o != v && o->on && o->nk >= 4) {
            size_t mo = o->nk - 1 < PROF__EN_MEAN ? o->nk - 1 : PROF__EN_MEAN;
            if ((o->k[o->nk - 1].mono - o->k[o->nk - 1 - mo].mono) / (int64_t)mo < mean) fastest = 0;
        }
    }
    if (fastest) prof__en.period_ns = p;
}

/* Device v's opening read ended at b (tick), m1 (CLOCK_MONOTONIC). */
static void prof__en_opened(prof__edev *v, uint64_t b, int64_t m1) {
    v->opening = 1;
    v->open_b = b;
    v->open_mono = m1;
    v->open_mj = v->acc;
}

/* The opening knot before device v's first change since its opening read. */
static prof__eknot prof__en_opening(prof__edev *v) {
    prof__eknot o;
    memset(&o, 0, sizeof o);
    o.tick = v->open_b;
    o.mj = (uint64_t)((double)v->open_mj * v->mj_per_count);
    o.mono = v->open_mono;
    o.gap = 4 | (v->gap ? 1 : 0);
    v->gap = 0;
    v->opening = 0;
    return o;
}

/* One read of every device's counter, on the profiler's thread. An
   opening read (at a window's opening) records no knot: the counter's value
   then is the opening knot that comes before the next change's. */
static void prof__en_read(int opening) {
    char e[160];
    for (int i = 0; i < prof__en.nd; i++) {
        prof__edev *v = &prof__en.d[i];
        if (!v->on) continue;
        uint64_t mj = 0;                /* in the counter's units */
        int64_t m0 = prof__mono_ns();
        uint64_t a = prof__now();
        int err = prof__en_get(v, &mj);
        uint64_t b = prof__now();
        int64_t m1 = prof__mono_ns();
        pthread_mutex_lock(&prof__en_lock);
        uint64_t cost = (uint64_t)(m1 - m0);
        prof__en.cost[prof__en.reads++ % PROF__EN_COSTS] = cost > UINT32_MAX ? UINT32_MAX : (uint32_t)cost;
        if (cost > prof__en.cost_max) prof__en.cost_max = cost;
        pthread_mutex_unlock(&prof__en_lock);
        if (err) {
            prof__msg("PROF_ENERGY: GPU %d (%s): reading its energy counter failed (%s); no energy for it from "
                      "its last reading on", v->dev, v->bus, prof__en_err(err, e, sizeof e));
            v->on = 0;
            v->why = "a read of its energy counter failed";
            continue;
        }
        if (mj == v->raw) {             /* no change: a later one began after this read did */
            v->a = a;
            v->a_mono = m0;
            if (opening) prof__en_opened(v, b, m1);
            continue;
        }
        prof__eknot k;
        memset(&k, 0, sizeof k);
        k.tick = v->a + (b - v->a) / 2;
        k.half = (b - v->a) / 2;
        k.mono = v->a_mono + (m1 - v->a_mono) / 2;
        if (mj < v->raw) {              /* went back: a reset or a wrap; that interval is unknown */
            if (!v->back_said)
                prof__msg("PROF_ENERGY: GPU %d (%s): its energy counter went back from %llu to %llu (a driver "
                          "reload or a wrap); the energy over that interval is unknown, counting goes on from there",
                          v->dev, v->bus, (unsigned long long)v->raw, (unsigned long long)mj);
            v->back_said = 1;
            k.gap = 1;
        } else {
            v->acc += mj - v->raw;
        }
        k.mj = (uint64_t)((double)v->acc * v->mj_per_count);
        v->raw = mj;
        v->a = a;
        v->a_mono = m0;
        if (opening) {                  /* what came before the window is the opening knot's */
            v->gap |= k.gap;
            prof__en_opened(v, b, m1);
            continue;
        }
        pthread_mutex_lock(&prof__en_lock);
        prof__eknot *kv = (prof__eknot *)prof__grow(v->k, &v->cap, v->nk + 2, sizeof *kv);
        if (kv) {
            v->k = kv;
            if (v->opening) kv[v->nk++] = prof__en_opening(v);
            kv[v->nk++] = k;
        } else {
            v->gap = 1;
        }
        if (kv && v->gap) kv[v->nk - 1].gap = 1;
        if (kv) v->gap = 0;
        pthread_mutex_unlock(&prof__en_lock);
        prof__en_period(v);
    }
    for (int i = 0; i < prof__en.nd && prof__gm_on(); i++)
        if (prof__en.d[i].on && __atomic_load_n(&prof__en.d[i].mon, __ATOMIC_RELAXED)) prof__gm_read(&prof__en.d[i]);
    int on = 0;
    for (int i = 0; i < prof__en.nd; i++) on += prof__en.d[i].on;
    if (!on) prof__en.state = 2;
}

/* Set by the step that opens a window (its engine's thread), taken by the
   profiler's thread: an opening read. */
static int prof__en_open;

static int prof__en_on(void) { return __atomic_load_n(&prof__g.conf.energy, __ATOMIC_RELAXED); }

static int prof__en_wanted(void) {
    return prof__en_on() && prof__en.state != 2 && __atomic_load_n(&prof__g.inited, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&prof__g.shut, __ATOMIC_RELAXED) && prof__recording();
}

/* The profiler's thread, between jobs and at their start, with no lock: a
   read when one is due. The ns until the next, or -1: none wanted. */
static int64_t prof__en_poll(void) {
    if (!prof__en_wanted()) return -1;
    if (prof__en.state == 0) {
        pthread_mutex_lock(&prof__lock);
        const prof_gpu_api *api = prof__gpu.api;
        pthread_mutex_unlock(&prof__lock);
        if (!api) return 100000000;     /* no runtime bound yet: look again */
        prof__en_start(api);
        if (prof__en.state != 1) return -1;
    }
    int64_t now = prof__mono_ns();
    if (__atomic_exchange_n(&prof__en_open, 0, __ATOMIC_RELAXED)) {     /* a window opens: read now */
        prof__en_read(1);
        now = prof__mono_ns();
        prof__en.next_ns = now + prof__en.period_ns;
    } else if (now >= prof__en.next_ns) {
        prof__en_read(0);
        now = prof__mono_ns();
        prof__en.next_ns += prof__en.period_ns;
        if (prof__en.next_ns <= now) prof__en.next_ns = now + prof__en.period_ns;
    }
    return prof__en.state == 1 ? prof__en.next_ns - now : -1;
}

/* On the profiler's thread: reads until every device has a knot after
   `end` (a window's last step), a second at most. */
static void prof__en_close(uint64_t end) {
    if (!prof__en_reader() || prof__en.state != 1) return;
    int64_t t0 = prof__mono_ns(), limit = 4 * prof__en.period_ns + 50000000;
    if (limit > 1000000000) limit = 1000000000;
    for (;;) {
        int all = 1;
        pthread_mutex_lock(&prof__en_lock);
        for (int i = 0; i < prof__en.nd; i++) {
            const prof__edev *v = &prof__en.d[i];
            if (v->on && !(v->nk && v->k[v->nk - 1].tick - v->k[v->nk - 1].half >= end)) all = 0;
        }
        pthread_mutex_unlock(&prof__en_lock);
        int64_t now = prof__mono_ns();
        if (all || prof__en.state != 1 || now - t0 > limit) return;
        int64_t wait = prof__en.next_ns - now;
        if (wait > 0) {
            struct timespec ts = { (time_t)(wait / 1000000000), (long)(wait % 1000000000) };
            syscall(SYS_nanosleep, &ts, NULL);
        }
        prof__en_read(0);
        now = prof__mono_ns();
        prof__en.next_ns = now + prof__en.period_ns;
    }
}

/* PROF_GPU_METRICS: device v's samples from the last at or before lo to
   hi, into c; those before its last left out for later windows. Under
   prof__en_lock. */
static void prof__gm_take(prof__ecdev *c, prof__edev *v, uint64_t lo, uint64_t hi) {
    size_t ma = 0, mz;
    c->mon = __atomic_load_n(&v->mon, __ATOMIC_RELAXED);
    while (ma + 1 < v->nm && v->m[ma + 1].tick <= lo) ma++;
    for (mz = ma; mz < v->nm && v->m[mz].tick <= hi; mz++) {}
    if (mz > ma && (c->m = (prof__emet *)malloc((mz - ma) * sizeof *c->m)) != NULL) {
        memcpy(c->m, v->m + ma, (mz - ma) * sizeof *c->m);
        c->nm = mz - ma;
    }
    if (!prof__g.conf.flight && mz > 1 && mz - 1 < v->nm) {
        memmove(v->m, v->m + (mz - 1), (v->nm - (mz - 1)) * sizeof *v->m);
        v->nm -= mz - 1;
    }
}

/* A saved cycle's energy: the knots around its steps, by device. On the
   profiler's thread it first waits for a knot past its last step. */
static void prof__en_take(prof__cycle *cy) {
    if (!prof__en_on() || cy->en) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < cy->n; i++) {
        const prof__ev *e = &cy->ev[i];
        if (e->kind != PROF__K_STEP) continue;
        if (e->t0 < lo) lo = e->t0;
        if (e->t1 > hi) hi = e->t1;
    }
    if (!hi) return;
    prof__en_close(hi);
    prof__ecy *en = (prof__ecy *)calloc(1, sizeof *en);
    if (!en) return;
    static int unbound_said;
    pthread_mutex_lock(&prof__lock);
    const prof_gpu_api *api = prof__gpu.api;
    pthread_mutex_unlock(&prof__lock);
    int unbound = api == NULL;
    const prof_gpu_energy *src = prof__en.src ? prof__en.src : api ? api->energy : NULL;
    en->src = src ? src->source : "none";
    en->counter = src ? src->counter : "none";
    en->gm_names = src && src->metric ? src->throttle_name : NULL;
    if (prof__en.state == 0 && unbound && !unbound_said++)
        prof__msg("PROF_ENERGY: no GPU runtime is bound (the file with PROF_IMPLEMENTATION includes neither "
                  "prof_cuda.h nor prof_hip.h, and no GPU region ran); no energy in the trace");
    pthread_mutex_lock(&prof__en_lock);
    en->why = prof__en.state != 0 ? prof__en.why
              : unbound ? "no GPU runtime is bound (prof_cuda.h, prof_hip.h)" : "not read yet";
    if (prof__en.state == 1 || prof__en.nd) en->why = NULL;
    en->period_ms = (double)prof__en.period_ns / 1e6;
    en->reads = prof__en.reads;
    en->cost_max_us = (double)prof__en.cost_max / 1e3;
    size_t nc = prof__en.reads < PROF__EN_COSTS ? (size_t)prof__en.reads : PROF__EN_COSTS;
    uint32_t costs[PROF__EN_COSTS];
    memcpy(costs, prof__en.cost, nc * sizeof *costs);
    int64_t span = 0, nspan = 0;
    for (int i = 0; i < prof__en.nd; i++) {
        prof__edev *v = &prof__en.d[i];
        prof__ecdev *c = &en->d[en->nd++];
        c->dev = v->dev;
        memcpy(c->bus, v->bus, sizeof c->bus);
        snprintf(c->key, sizeof c->key, "GPU %d energy (J)", v->dev);
        c->res_mj = v->mj_per_count;
        c->why = v->why;
        size_t a = 0, b = v->nk;
        while (a + 1 < v->nk && v->k[a + 1].tick <= lo) a++;        /* the last knot at or before lo */
        size_t z = a;
        while (z < v->nk && v->k[z].tick < hi) z++;                 /* the first at or after hi */
        b = z < v->nk ? z + 1 : v->nk;
        if (b > a && (c->k = (prof__eknot *)malloc((b - a) * sizeof *c->k)) != NULL) {
            memcpy(c->k, v->k + a, (b - a) * sizeof *c->k);
            c->nk = b - a;
        }
        if (v->nk >= 2) {
            span += v->k[v->nk - 1].mono - v->k[0].mono;
            nspan += (int64_t)v->nk - 1;
        }
        prof__gm_take(c, v, lo, hi);
        size_t keep = a;                                            /* later windows begin after this one */
        while (keep + 1 < v->nk && v->k[keep + 1].tick <= hi) keep++;
        if (!prof__g.conf.flight && keep && keep < v->nk) {
            memmove(v->k, v->k + keep, (v->nk - keep) * sizeof *v->k);
            v->nk -= keep;
        }
    }
    pthread_mutex_unlock(&prof__en_lock);
    en->change_ms = nspan ? (double)span / (double)nspan / 1e6 : 0;
    if (nc) {
        qsort(costs, nc, sizeof *costs, prof__u32_cmp);
        en->cost_med_us = (double)costs[nc / 2] / 1e3;
    }
    cy->en = en;
}

static void prof__en_free(prof__ecy *en) {
    if (!en) return;
    for (int i = 0; i < en->nd; i++) free(en->d[i].k), free(en->d[i].m);
    free(en->cnt);
    free(en);
}

/* The device's energy at tick (mJ since its first read), between two knots
   with no unknown interval between; 0 if it is not known there. *knot: the
   index of the knot at or after tick. */
static int prof__en_at(const prof__ecdev *d, const prof__tclock *clk, uint64_t tick, double *mj, size_t *knot) {
    if (d->nk >= 2 && (d->k[0].gap & 4) && tick < d->k[0].tick && !(d->k[1].gap & 1) &&
        d->k[0].tick - tick <= PROF__EN_BACK * ((d->k[d->nk - 1].tick - d->k[0].tick) / (d->nk - 1))) {
        /* before an opening knot, by at most PROF__EN_BACK mean intervals
           between knots (a window that opens as the counter is first
           read): the power over the next PROF__EN_BACK intervals (one
           alone would be off by as much as the opening's placement) */
        size_t j = 1;
        while (j < PROF__EN_BACK && j + 1 < d->nk && !(d->k[j + 1].gap & 1)) j++;
        int64_t n0 = prof__tclock_ns(clk, d->k[0].tick), n1 = prof__tclock_ns(clk, d->k[j].tick),
                n = prof__tclock_ns(clk, tick);
        double f = n1 > n0 ? (double)(n0 - n) / (double)(n1 - n0) : 0.0;
        *mj = (double)d->k[0].mj - f * (double)(d->k[j].mj - d->k[0].mj);
        *knot = 0;
        return 1;
    }
    if (!d->nk || tick < d->k[0].tick || tick > d->k[d->nk - 1].tick) return 0;
    size_t lo = 0, hi = d->nk - 1;
    while (hi - lo > 1) {               /* k[lo].tick <= tick <= k[hi].tick */
        size_t m = lo + (hi - lo) / 2;
        if (d->k[m].tick <= tick) lo = m;
        else hi = m;
    }
    if (d->nk == 1 || tick == d->k[lo].tick) {
        *mj = (double)d->k[lo].mj;
        *knot = lo;
        return 1;
    }
    if (d->k[hi].gap & 1) return 0;
    int64_t n0 = prof__tclock_ns(clk, d->k[lo].tick), n1 = prof__tclock_ns(clk, d->k[hi].tick),
            n = prof__tclock_ns(clk, tick);
    double f = n1 > n0 ? (double)(n - n0) / (double)(n1 - n0) : 1.0;
    *mj = (double)d->k[lo].mj + f * (double)(d->k[hi].mj - d->k[lo].mj);
    *knot = hi;
    return 1;
}

/* A step's joules on device i: 1 measured across knots, 2 a time share of
   one counter interval (no knot inside it), 0 unknown. To the traces' 3
   decimals, for every reader of it: the footer a run prints is then the
   one prof table prints from its trace, to the last digit. */
static int prof__en_step(const prof__cycle *cy, int i, uint64_t t0, uint64_t t1, double *joules) {
    const prof__ecdev *d = &cy->en->d[i];
    double e0, e1;
    size_t k0, k1;
    if (!prof__en_at(d, &cy->clk, t0, &e0, &k0) || !prof__en_at(d, &cy->clk, t1, &e1, &k1)) return 0;
    for (size_t k = k0 + 1; k <= k1 && k < d->nk; k++)
        if (d->k[k].gap & 1) return 0;
    char num[48];
    snprintf(num, sizeof num, "%.3f", (e1 - e0) / 1000.0);
    *joules = strtod(num, NULL);
    return k1 > k0 && !(k1 == k0 + 1 && (d->k[k1].gap & 2)) ? 1 : 2;
}

/* The power between knots j - 1 and j (W); 0 if unknown (a gap). */
static int prof__en_watts(const prof__cycle *cy, const prof__ecdev *d, size_t j, double *w) {
    int64_t n0 = prof__tclock_ns(&cy->clk, d->k[j - 1].tick), n1 = prof__tclock_ns(&cy->clk, d->k[j].tick);
    if ((d->k[j].gap & 1) || n1 <= n0) return 0;
    *w = (double)(d->k[j].mj - d->k[j - 1].mj) * 1e6 / (double)(n1 - n0);
    return 1;
}

/* The trace's word on how its energy was measured: one JSON object, which
   the JSON's header holds as prof_energy and the .pftrace as a string
   attribute of that name. Into buf[n]; its length. */
static size_t prof__en_meta(const prof__cycle *cy, char *buf, size_t n) {
    const prof__ecy *en = cy->en;
    size_t o = 0;
#define PROF__EN_PUT(...) (o += (size_t)snprintf(buf + o, o < n ? n - o : 0, __VA_ARGS__), o = o < n ? o : n)
    PROF__EN_PUT("{\"source\": \"%s\"", en->src);
    if (en->why) PROF__EN_PUT(", \"off\": \"%s\"", en->why);
    if (en->from_trace || (en->why && !en->nd)) {       /* read back, or none read */
        PROF__EN_PUT(", \"devices\": [");
        for (int i = 0; i < en->nd; i++) PROF__EN_PUT("%s{\"device\": %d}", i ? ", " : "", en->d[i].dev);
        PROF__EN_PUT("]}");
        return o;
    }
    PROF__EN_PUT(", \"counter\": \"%s\""
                 ", \"method\": \"the counter is read on the profiler's thread; a change seen between two reads is "
                 "placed mid-way between them; between such knots the energy is spread evenly over time; a step's "
                 "joules are that curve's difference at its ends, a step with no knot inside it holds a time share "
                 "of one counter interval (marked energy: '" PROF__EN_SHARE "'); a window's total is exact to "
                 "its ends' knot intervals; power (W) is the energy between knots over their time\""
                 ", \"reads\": %llu, \"read_every_ms\": %.3f, \"counter_changes_every_ms\": %.3f"
                 ", \"read_cost_us_median\": %.1f, \"read_cost_us_max\": %.1f, \"devices\": [",
                 en->counter, (unsigned long long)en->reads, en->period_ms, en->change_ms, en->cost_med_us,
                 en->cost_max_us);
    for (int i = 0; i < en->nd; i++) {
        const prof__ecdev *d = &en->d[i];
        int64_t unc = 0;
        for (size_t k = 0; k < d->nk; k++) {
            int64_t h = prof__tclock_ns(&cy->clk, d->k[k].tick) - prof__tclock_ns(&cy->clk, d->k[k].tick - d->k[k].half);
            unc = h > unc ? h : unc;
        }
        PROF__EN_PUT("%s{\"device\": %d, \"pci_bus_id\": \"%s\", \"resolution_mJ\": %.6g, \"knots\": %zu, "
                     "\"knot_uncertainty_ms\": %.3f", i ? ", " : "", d->dev, d->bus, d->res_mj, d->nk, (double)unc / 1e6);
        if (d->why) PROF__EN_PUT(", \"off\": \"%s\"", d->why);
        PROF__EN_PUT("}");
    }
    PROF__EN_PUT("]}");
#undef PROF__EN_PUT
    return o;
}

static int prof__dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int prof__ev_t0_cmp(const void *a, const void *b) {
    const prof__ev *x = *(const prof__ev *const *)a, *y = *(const prof__ev *const *)b;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* The table's footer: each device's joules per step (median, p90), its
   average power over those steps, and per token or sample, where the
   engine counted them in the steps (PROF_COUNTER("tokens", n)). */
static void prof__en_table(const prof__cycle *c, prof_table *out) {
    if (!c->en) return;
    size_t ns = 0;
    for (size_t i = 0; i < c->n; i++) ns += c->ev[i].kind == PROF__K_STEP;
    const prof__ev **st = ns ? (const prof__ev **)malloc(ns * sizeof *st) : NULL;
    double *j = ns ? (double *)malloc(ns * sizeof *j) : NULL, *tok = ns ? (double *)calloc(2 * ns, sizeof *tok) : NULL;
    if (!st || !j || !tok) goto done;
    ns = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->ev[i].kind == PROF__K_STEP) st[ns++] = &c->ev[i];
    qsort(st, ns, sizeof *st, prof__ev_t0_cmp);
    for (size_t i = 0; i < c->n + c->en->ncnt; i++) {  /* tokens and samples, by the step they are in */
        prof__ecount x = { 0, 0, -1 };
        if (i >= c->n) {
            x = c->en->cnt[i - c->n];           /* a model's */
        } else if (c->ev[i].kind == PROF__K_COUNTER && c->ev[i].name) {
            const prof__ev *e = &c->ev[i];
            x.which = !strcmp(e->name, "tokens") ? 0 : !strcmp(e->name, "samples") ? 1 : -1;
            x.tick = e->t0;
            memcpy(&x.v, &e->t1, sizeof x.v);
        }
        if (x.which < 0) continue;
        size_t lo = 0, hi = ns;                     /* the last step beginning at or before it */
        while (lo < hi) {
            size_t m = lo + (hi - lo) / 2;
            if (st[m]->t0 <= x.tick) lo = m + 1;
            else hi = m;
        }
        if (lo && x.tick < st[lo - 1]->t1) tok[2 * (lo - 1) + (size_t)x.which] += x.v;
    }
    for (int d = 0; d < c->en->nd && out->energy_devs < 8; d++) {
        size_t n = 0;
        double sum = 0, ns_sum = 0, t[2] = { 0, 0 };
        for (size_t k = 0; k < ns; k++) {
            double x;
            if (!prof__en_step(c, d, st[k]->t0, st[k]->t1, &x)) continue;
            j[n++] = x;
            sum += x;
            ns_sum += (double)(prof__tclock_ns(&c->clk, st[k]->t1) - prof__tclock_ns(&c->clk, st[k]->t0));
            t[0] += tok[2 * k];
            t[1] += tok[2 * k + 1];
        }
        if (!n) continue;
        qsort(j, n, sizeof *j, prof__dbl_cmp);
        prof_energy *e = &out->energy[out->energy_devs++];
        e->device = c->en->d[d].dev;
        e->steps = n;
        e->j_p50 = j[(n * 50 + 99) / 100 - 1];     /* nearest rank */
        e->j_p90 = j[(n * 90 + 99) / 100 - 1];
        e->watts = ns_sum > 0 ? sum * 1e9 / ns_sum : 0;
        e->j_per_token = t[0] > 0 ? sum / t[0] : 0;
        e->j_per_sample = t[1] > 0 ? sum / t[1] : 0;
    }
done:
    free(st);
    free(j);
    free(tok);
}

int prof_cycle_step_energy(const prof_cycle *c, size_t i, int device, double *joules) {
    *joules = 0;
    if (!c || !c->en || i >= c->n || c->ev[i].kind != PROF__K_STEP) return 0;
    for (int d = 0; d < c->en->nd; d++)
        if (c->en->d[d].dev == device) return prof__en_step(c, d, c->ev[i].t0, c->ev[i].t1, joules);
    return 0;
}

/* The profiler's thread: its first and last words with the library. */
static void prof__en_thread_start(void) { __atomic_store_n(&prof__en_thread, (uint64_t)pthread_self(), __ATOMIC_RELAXED); }
static void prof__en_thread_stop(void) {
    if (prof__en_on() && prof__en.state == 1) prof__en_close(prof__now());
    __atomic_store_n(&prof__en_thread, 0, __ATOMIC_RELAXED);
}

/* ---- >>analysis  the one analysis pass, and the walker every sink rides ----
   prof__analyse runs once per saved cycle and leaves in it what every sink
   would otherwise derive for itself:
     parent   per event, the innermost region or step open on its thread
              when it began. Records come in post-order per thread (a region
              when it ends), so a span adopts every waiting event of its
              thread that began no earlier than it. An argument's or memory
              event's region, a region's children and self time follow.
     first    per event, the record its subtree begins at: its first child's
              first, or itself for one with no children. A first child is
              marked (PROF__FIRST_CHILD): its parent begins where it does. A
              region with neither, not its thread's last record, is
              PROF__LONE: nothing but itself begins where it does, and the
              record after it is its thread's. A walk puts BEGINs in time
              order from this without sorting, and a run of the usual
              records is a loop on one compare.
     track    per thread, the thread whose track it is drawn on (prof__tracks)
     label    per thread, its name, or "thread <tid>" for one never named
     gcorr    the GPU regions' correlations, sorted: a CPU region whose GPU
              side is in the cycle starts a flow (one whose pair was lost is
              written as a plain region)
     kcorr    kernel capture's correlations, sorted: [0] of the runtime calls,
              [1] of the kernels, copies and fills; a flow joins the two
     idle     kernel capture's idle time by step and stream
              (prof_cycle_gpu_idle), on the cycle's clock: made again when
              a save sets that clock (prof__cycle_clock)
   Then prof__walk (below) drives a sink through the cycle. 0 when memory
   runs out (sinks then fail). */

static int prof__spans(uint32_t kind) { return prof__role[kind & 15u] == PROF__R_SPAN; }

static uint32_t *prof__tracks(const prof__cycle *cy, int separate);
static int prof__labels(prof__cycle *cy);
static uint32_t *prof__corrs(const prof__cycle *cy, int what, size_t *n, int *oom);

PROF__SHARED int prof__analyse(prof__cycle *cy) {
    uint32_t *par = (uint32_t *)malloc((cy->n + 1) * sizeof *par);
    uint32_t *wait = (uint32_t *)malloc((cy->n + 1) * sizeof *wait);
    size_t nw = 0;
    int oom = 0;
    prof__analysis_free(cy);            /* a cycle analysed again (threads kept apart, say) */
    uint32_t *first = (uint32_t *)malloc((cy->n + 1) * sizeof *first);
    if (!par || !wait || !first || cy->n >= PROF__LONE) {
        free(par); free(wait); free(first);
        cy->oom = 1;
        return 0;
    }
    if (cy->spans_due) {                /* its GPU regions over their kernels: once, with the CPU sides */
        cy->spans_due = 0;
        prof__gpu_one_clock(cy, cy->spans_ns);
    }
    for (size_t i = 0; i < cy->n; i++) {
        const prof__ev *e = &cy->ev[i];
        uint32_t f = e->kind == PROF__K_REGION ? PROF__LONE : (uint32_t)i;
        if (i && e->th != cy->ev[i - 1].th) {           /* another thread: nothing is waiting */
            nw = 0;
            if (first[i - 1] == PROF__LONE) first[i - 1] = (uint32_t)(i - 1);
        }
        par[i] = PROF__NO_EVENT;
        if (prof__spans(e->kind) && nw && cy->ev[wait[nw - 1]].t0 >= e->t0) {
            uint32_t c;
            do {
                c = wait[--nw];
                par[c] = (uint32_t)i;
            } while (nw && cy->ev[wait[nw - 1]].t0 >= e->t0);
            f = first[c] == PROF__LONE ? c : first[c] & PROF__FIRST_MAX;
            first[c] = f | PROF__FIRST_CHILD;           /* c, the last adopted, is the first */
        }
        first[i] = f;
        wait[nw++] = (uint32_t)i;
    }
    if (cy->n && first[cy->n - 1] == PROF__LONE) first[cy->n - 1] = (uint32_t)(cy->n - 1);
    free(wait);
    cy->parent = par;
    cy->first = first;
    cy->gcorr = prof__corrs(cy, 0, &cy->ngcorr, &oom);
    cy->kcorr[0] = prof__corrs(cy, 1, &cy->nkcorr[0], &oom);
    cy->kcorr[1] = prof__corrs(cy, 2, &cy->nkcorr[1], &oom);
    if (!oom && cy->clk.scale && !prof__idle_build(cy)) oom = 1;   /* a save's clock: again there */
    if (oom || !(cy->track = prof__tracks(cy, prof__g.conf.separate_threads)) || !prof__labels(cy)) {
        cy->oom = 1;
        return 0;
    }
    return 1;
}

/* The region (not a step) that owns argument or memory event i, or PROF__NO_EVENT. */
static uint32_t prof__owner(const prof__cycle *cy, size_t i) {
    uint32_t p = cy->parent[i];
    return p != PROF__NO_EVENT && cy->ev[p].kind != PROF__K_STEP ? p : PROF__NO_EVENT;
}

/* torch's key_averages() files every ProfilerStep#N under one name. */
static const char *prof__row_name(const prof__ev *e) {
    if (e->kind == PROF__K_STEP) return "ProfilerStep*";
    return e->name ? e->name : "(null)";
}

/* The total recorded with the memory event at ev[i], or NULL if ev[i] is not
   a memory event with its total right behind it (a lone total pads a chunk's
   last slot; a lost half, possible only when collection runs out of memory,
   leaves the other skipped). */
static const prof__ev *prof__mem_total(const prof__cycle *cy, size_t i) {
    const prof__ev *e = &cy->ev[i], *t = e + 1;
    if (e->kind != PROF__K_MEM || i + 1 >= cy->n) return NULL;
    return t->kind == PROF__K_MEM_TOTAL && t->th == e->th && t->t0 == e->t0 ? t : NULL;
}

/* Sorted correlations: what 0, of the GPU regions; 1, of kernel capture's
   runtime calls; 2, of its kernels, copies and fills. NULL when there are
   none, or (*oom set) no memory. */
static uint32_t *prof__corrs(const prof__cycle *cy, int what, size_t *n, int *oom) {
    size_t from = what == 2 ? cy->nact_api : 0;
    *n = what == 0 ? cy->ngpu : what == 1 ? cy->nact_api : cy->nact - cy->nact_api;
    if (!*n) return NULL;
    uint32_t *c = (uint32_t *)malloc(*n * sizeof *c);
    if (!c) { *n = 0; *oom = 1; return NULL; }
    for (size_t i = 0; i < *n; i++) c[i] = what == 0 ? cy->gpu[i].corr : cy->act[from + i].a.correlation;
    qsort(c, *n, sizeof *c, prof__u32_cmp);
    return c;
}

/* ---- idle time: prof_cycle_gpu_idle's rows (>>api-gpu), made once here ---- */

/* HTA's consecutive_kernel_delay is 30, compared with its trace times,
   which are microseconds (its docstring says ns; the comparison is in the
   trace's unit): a gap under 30 us between work already queued is HTA's
   "kernel wait". */
#define PROF__IDLE_LAUNCH_NS 30000

typedef struct prof__iw {               /* a kernel, copy or fill, in ns */
    int64_t t0, t1, launch;             /* launch: its launch call's start; INT64_MIN: none seen */
    long long stream;
    long tid;                           /* its launch call's thread */
    int dev;
    int32_t step;                       /* index into the steps; -1: in none */
    unsigned char comm, comp;
} prof__iw;

typedef struct prof__icall { uint32_t corr; int64_t t0; long tid; } prof__icall;

/* A synchronisation, for the gaps: a host's wait (tid, t0 to t1), or a
   stream's wait on an event (dev, stream; t0 its call; done when the
   event completed, INT64_MAX: not known). */
typedef struct prof__isync {
    int64_t t0, t1, done;
    size_t item;                        /* a stream's wait: the work it waited for (SIZE_MAX: not known) */
    long long stream;
    long tid;
    int dev;
} prof__isync;

static int prof__iw_cmp(const void *pa, const void *pb) {
    const prof__iw *a = (const prof__iw *)pa, *b = (const prof__iw *)pb;
    if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
    if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
    if (a->t0 != b->t0) return a->t0 < b->t0 ? -1 : 1;
    return (a->t1 > b->t1) - (a->t1 < b->t1);
}

static int prof__icall_cmp(const void *pa, const void *pb) {
    const prof__icall *a = (const prof__icall *)pa, *b = (const prof__icall *)pb;
    if (a->corr != b->corr) return a->corr < b->corr ? -1 : 1;
    return (a->t0 > b->t0) - (a->t0 < b->t0);
}

static int prof__isync_cmp(const void *pa, const void *pb) {  /* by thread, or device and stream; then time */
    const prof__isync *a = (const prof__isync *)pa, *b = (const prof__isync *)pb;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
    if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
    return (a->t0 > b->t0) - (a->t0 < b->t0);
}

static int64_t prof__idle_key(int64_t step) { return step == PROF_GPU_IDLE_ALL ? INT64_MAX : step; }

static int prof__idle_cmp(const void *pa, const void *pb) {
    const prof_gpu_idle *a = (const prof_gpu_idle *)pa, *b = (const prof_gpu_idle *)pb;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
    int64_t x = prof__idle_key(a->step), y = prof__idle_key(b->step);
    return (x > y) - (x < y);
}

/* HTA's kinds of kernel: communication (^nccl.*Kernel), and computation:
   no memory kernel (^Memcpy, ^Memset, ^dma) and none its rule leaves out
   (.*Memcpy, ^Memset, .*Sync). Copies and fills are neither. */
static void prof__idle_kind(const prof__gact *g, prof__iw *w) {
    const char *n = g->a.name ? g->a.name : "";
    w->comm = w->comp = 0;
    if (g->a.kind != PROF_GPU_KERNEL) return;
    w->comm = !strncmp(n, "nccl", 4) && strstr(n + 4, "Kernel") != NULL;
    w->comp = !w->comm && strncmp(n, "Memset", 6) && strncmp(n, "dma", 3) && !strstr(n, "Memcpy") && !strstr(n, "Sync");
}

/* The step (an index into st, sorted by start, [2k] start and [2k+1] end)
   that time t lies in, -1 for none. */
static int32_t prof__idle_step(const int64_t *st, size_t ns, int64_t t) {
    size_t lo = 0, hi = ns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st[2 * mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo && t < st[2 * (lo - 1) + 1] ? (int32_t)(lo - 1) : -1;
}

/* The runtime call of correlation c (the first: the outermost), or NULL. */
static const prof__icall *prof__idle_call(const prof__icall *calls, size_t n, uint32_t c) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (calls[mid].corr < c) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && calls[lo].corr == c ? &calls[lo] : NULL;
}

/* The cycle's work for the breakdown: its kernels, copies and fills, each
   with its launch call's start and thread and its step, sorted by device,
   stream, start; NULL with *n 0 when there is none (or memory ran out:
   *oom). Its runtime calls by correlation into *calls (the caller frees). */
static prof__iw *prof__idle_work(const prof__cycle *cy, const int64_t *st, size_t nst, size_t *n,
                                 prof__icall **calls, int *oom) {
    size_t na = cy->nact_api, nw = 0;
    prof__icall *cl = *calls = (prof__icall *)malloc((na + 1) * sizeof *cl);
    prof__iw *w = (prof__iw *)malloc((cy->nact - na + 1) * sizeof *w);
    *n = 0;
    if (!cl || !w) { free(w); *oom = 1; return NULL; }
    for (size_t i = 0; i < na; i++) {
        cl[i].corr = cy->act[i].a.correlation;
        cl[i].t0 = prof__tclock_ns(&cy->clk, cy->act[i].t0);
        cl[i].tid = cy->act[i].tid;
    }
    if (na) qsort(cl, na, sizeof *cl, prof__icall_cmp);
    for (size_t i = na; i < cy->nact; i++) {
        const prof__gact *g = &cy->act[i];
        if (g->a.kind != PROF_GPU_KERNEL && g->a.kind != PROF_GPU_MEMCPY && g->a.kind != PROF_GPU_MEMSET) continue;
        prof__iw *x = &w[nw++];
        const prof__icall *c = prof__idle_call(cl, na, g->a.correlation);
        x->t0 = prof__tclock_ns(&cy->clk, g->t0);
        x->t1 = prof__tclock_ns(&cy->clk, g->t1);
        x->dev = g->a.device;
        x->stream = g->a.stream;
        x->launch = c ? c->t0 : INT64_MIN;
        x->tid = c ? c->tid : -1;
        x->step = prof__idle_step(st, nst, c ? c->t0 : x->t0);
        prof__idle_kind(g, x);
    }
    if (nw) qsort(w, nw, sizeof *w, prof__iw_cmp);
    if (!nw) { free(w); w = NULL; }
    *n = nw;
    return w;
}

/* When the work stream s of device dev had queued before time t ended:
   the index of the last launched before t (a stream runs its work in the
   order it was queued, so by start, w's order, is by launch); SIZE_MAX
   when none of it is known. */
static size_t prof__idle_done(const prof__iw *w, size_t n, int dev, long long s, int64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {                   /* the stream's first */
        size_t mid = lo + (hi - lo) / 2;
        if (w[mid].dev < dev || (w[mid].dev == dev && w[mid].stream < s)) lo = mid + 1;
        else hi = mid;
    }
    size_t a = lo;
    for (hi = n; lo < hi;) {            /* past its last launched before t */
        size_t mid = lo + (hi - lo) / 2;
        if (w[mid].dev == dev && w[mid].stream == s && w[mid].launch < t) lo = mid + 1;
        else hi = mid;
    }
    return lo > a && w[lo - 1].launch != INT64_MIN ? lo - 1 : SIZE_MAX;
}

/* The cycle's synchronisations, for the gaps: host waits (by thread; a
   stream's wait for an event, cudaStreamWaitEvent, is not one) into *hs,
   streams' waits (by device and stream, tid -1) into *ws, each sorted by
   time. 0 when memory runs out. */
static int prof__idle_syncs(const prof__cycle *cy, const prof__icall *cl, const prof__iw *w, size_t nw,
                            prof__isync **hs, size_t *nhs, prof__isync **ws, size_t *nws) {
    size_t n = 0;
    for (size_t i = cy->nact_api; i < cy->nact; i++) n += cy->act[i].a.kind == PROF_GPU_SYNC;
    *hs = (prof__isync *)malloc((n + 1) * sizeof **hs);
    *ws = (prof__isync *)malloc((n + 1) * sizeof **ws);
    *nhs = *nws = 0;
    if (!*hs || !*ws) return 0;
    for (size_t i = cy->nact_api; i < cy->nact; i++) {
        const prof__gact *g = &cy->act[i];
        if (g->a.kind != PROF_GPU_SYNC) continue;
        prof__isync y;
        memset(&y, 0, sizeof y);
        y.t0 = prof__tclock_ns(&cy->clk, g->t0);
        y.t1 = prof__tclock_ns(&cy->clk, g->t1);
        if (g->a.sync == PROF_GPU_SYNC_WAIT_EVENT) {
            const prof__icall *rec = g->a.wait_corr >= 0 && g->a.wait_corr <= 0xffffffffLL
                                         ? prof__idle_call(cl, cy->nact_api, (uint32_t)g->a.wait_corr) : NULL;
            y.dev = g->a.device;
            y.stream = g->a.stream;
            y.tid = -1;
            y.item = rec ? prof__idle_done(w, nw, g->a.device, g->a.wait_stream, rec->t0) : SIZE_MAX;
            y.done = y.item != SIZE_MAX ? w[y.item].t1 : INT64_MAX;
            (*ws)[(*nws)++] = y;
        } else {
            const prof__icall *c = prof__idle_call(cl, cy->nact_api, g->a.correlation);
            if (!c) continue;           /* no call: no thread that waited */
            y.tid = c->tid;
            (*hs)[(*nhs)++] = y;
        }
    }
    if (*nhs) qsort(*hs, *nhs, sizeof **hs, prof__isync_cmp);
    if (*nws) qsort(*ws, *nws, sizeof **ws, prof__isync_cmp);
    return 1;
}

/* What prof__idle_stream reads and where it writes. */
typedef struct prof__ictx {
    const int64_t *num;                 /* the steps' numbers */
    size_t nst;
    prof_gpu_idle *acc;                 /* nst + 1 rows: outside the steps, then each step */
    const prof__isync *hs, *ws;         /* prof__idle_syncs' */
    size_t nhs, nws;
    prof_gpu_idle *out;                 /* the rows so far */
    size_t nout, cap;
} prof__ictx;

/* Thread tid was inside a host wait at time t. */
static int prof__idle_in_sync(const prof__ictx *x, long tid, int64_t t) {
    size_t lo = 0, hi = x->nhs;         /* the last of tid's that began by t: a thread is in one call at a time */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->hs[mid].tid < tid || (x->hs[mid].tid == tid && x->hs[mid].t0 <= t)) lo = mid + 1;
        else hi = mid;
    }
    return lo && x->hs[lo - 1].tid == tid && x->hs[lo - 1].t1 >= t;
}

/* Stream s of device dev was made to wait, by a call after `after` and by
   `by`, for an event that completed after `end`: that wait, or NULL. */
static const prof__isync *prof__idle_waited(const prof__ictx *x, int dev, long long s, int64_t after, int64_t by,
                                            int64_t end) {
    size_t lo = 0, hi = x->nws;         /* the first of the stream's after `after` (tid -1 for all) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const prof__isync *y = &x->ws[mid];
        if (y->dev < dev || (y->dev == dev && (y->stream < s || (y->stream == s && y->t0 <= after)))) lo = mid + 1;
        else hi = mid;
    }
    for (; lo < x->nws && x->ws[lo].dev == dev && x->ws[lo].stream == s && x->ws[lo].t0 <= by; lo++)
        if (x->ws[lo].done > end) return &x->ws[lo];
    return NULL;
}

/* The gap of `gap` ns before w (after p, the stream's work before it, and
   the end of all of it, end) into row r, by its cause (>>api-gpu). */
static void prof__idle_gap(const prof__ictx *x, const prof__iw *w, const prof__iw *p, int64_t end, int64_t gap,
                           prof_gpu_idle *r) {
    if (w->launch != INT64_MIN && w->launch > end) {
        if (prof__idle_in_sync(x, w->tid, end)) r->sync_ns += gap;
        else r->host_ns += gap;
    } else if (gap < PROF__IDLE_LAUNCH_NS) {
        r->launch_ns += gap;
    } else if (prof__idle_waited(x, w->dev, w->stream, p->launch, w->launch != INT64_MIN ? w->launch : w->t0, end)) {
        r->wait_ns += gap;
    } else {
        r->other_ns += gap;
    }
}

static int prof__idle_put(prof__ictx *x, const prof_gpu_idle *r) {
    prof_gpu_idle *o = (prof_gpu_idle *)prof__grow(x->out, &x->cap, x->nout + 1, sizeof *o);
    if (!o) return 0;
    x->out = o;
    o[x->nout++] = *r;
    return 1;
}

/* One stream's rows, w[0, n): the steps' rows that have work, then the
   whole cycle's. 0 when memory runs out. */
static int prof__idle_stream(prof__ictx *x, const prof__iw *w, size_t n) {
    memset(x->acc, 0, (x->nst + 1) * sizeof *x->acc);
    int64_t end = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        prof_gpu_idle *r = &x->acc[w[i].step + 1];
        r->work++;
        if (i && w[i].t0 > end) prof__idle_gap(x, &w[i], &w[i - 1], end, w[i].t0 - end, r);
        int64_t from = w[i].t0 > end ? w[i].t0 : end;
        if (w[i].t1 > from) r->busy_ns += w[i].t1 - from;
        if (w[i].t1 > end) end = w[i].t1;
    }
    prof_gpu_idle all;
    memset(&all, 0, sizeof all);
    for (size_t s = 0; s <= x->nst; s++) {
        prof_gpu_idle *r = &x->acc[s];
        if (!r->work) continue;
        r->step = s ? x->num[s - 1] : -1;
        r->device = w[0].dev;
        r->stream = w[0].stream;
        all.work += r->work;
        all.busy_ns += r->busy_ns;
        all.host_ns += r->host_ns;
        all.sync_ns += r->sync_ns;
        all.wait_ns += r->wait_ns;
        all.launch_ns += r->launch_ns;
        all.other_ns += r->other_ns;
        if (!prof__idle_put(x, r)) return 0;
    }
    all.step = PROF_GPU_IDLE_ALL;
    all.device = w[0].dev;
    all.stream = w[0].stream;
    return prof__idle_put(x, &all);
}

typedef struct prof__iedge { int64_t t; int any, comm, comp; } prof__iedge;

static int prof__iedge_cmp(const void *pa, const void *pb) {
    const prof__iedge *a = (const prof__iedge *)pa, *b = (const prof__iedge *)pb;
    return (a->t > b->t) - (a->t < b->t);
}

/* A device's row for step index s (-1: outside the steps; -2: every
   step's work at once): the unions of its work, of NCCL's kernels and of
   compute kernels, and the time both ran, from the work's edges swept in
   time order (e: room for 2n). */
static void prof__idle_device(const prof__iw *w, size_t n, int32_t s, prof__iedge *e, prof_gpu_idle *r) {
    size_t ne = 0;
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < n; i++) {
        if (s != -2 && w[i].step != s) continue;
        r->work++;
        e[ne].t = w[i].t0, e[ne].any = 1, e[ne].comm = w[i].comm, e[ne++].comp = w[i].comp;
        e[ne].t = w[i].t1, e[ne].any = -1, e[ne].comm = -w[i].comm, e[ne++].comp = -w[i].comp;
    }
    if (ne) qsort(e, ne, sizeof *e, prof__iedge_cmp);
    int any = 0, comm = 0, comp = 0;
    for (size_t k = 0; k < ne; k++) {
        int64_t dt = k ? e[k].t - e[k - 1].t : 0;
        if (any > 0) r->busy_ns += dt;
        if (comm > 0) r->comm_ns += dt;
        if (comp > 0) r->comp_ns += dt;
        if (comm > 0 && comp > 0) r->overlap_ns += dt;
        any += e[k].any, comm += e[k].comm, comp += e[k].comp;
    }
    r->device = n ? w[0].dev : 0;
    r->stream = -1;
}

/* A device's rows, w[0, n) its work: each stream's, then its own. */
static int prof__idle_dev(prof__ictx *x, const prof__iw *w, size_t n, prof__iedge *e) {
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a; b < n && w[b].stream == w[a].stream; b++) {}
        if (!prof__idle_stream(x, w + a, b - a)) return 0;
    }
    for (int32_t s = -2; s < (int32_t)x->nst; s++) {
        prof_gpu_idle r;
        prof__idle_device(w, n, s, e, &r);
        r.step = s == -2 ? PROF_GPU_IDLE_ALL : s == -1 ? -1 : x->num[s];
        if (r.work && !prof__idle_put(x, &r)) return 0;
    }
    return 1;
}

/* ---- a step's critical path (prof_cycle_gpu_path), over the same records ---- */

typedef struct prof__pend { int64_t t1; size_t i; } prof__pend;

static int prof__pend_cmp(const void *pa, const void *pb) {
    const prof__pend *a = (const prof__pend *)pa, *b = (const prof__pend *)pb;
    if (a->t1 != b->t1) return a->t1 < b->t1 ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

typedef struct prof__pwalk {            /* what a walk reads */
    const prof__ictx *x;
    const prof__iw *w;
    size_t nw;
    const prof__pend *by_end;           /* w's ends, in time order */
} prof__pwalk;

static int64_t prof__clip(int64_t from, int64_t to, int64_t t0) {
    if (from < t0) from = t0;
    return to > from ? to - from : 0;
}

/* The work that ended last within [a, b], or SIZE_MAX. */
static size_t prof__path_ended(const prof__pwalk *p, int64_t a, int64_t b) {
    size_t lo = 0, hi = p->nw;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->by_end[mid].t1 <= b) lo = mid + 1;
        else hi = mid;
    }
    return lo && p->by_end[lo - 1].t1 >= a ? p->by_end[lo - 1].i : SIZE_MAX;
}

/* The last host wait of thread tid that began before t and ended by it, or NULL. */
static const prof__isync *prof__path_sync(const prof__ictx *x, long tid, int64_t t) {
    size_t lo = 0, hi = x->nhs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->hs[mid].tid < tid || (x->hs[mid].tid == tid && x->hs[mid].t0 < t)) lo = mid + 1;
        else hi = mid;
    }
    while (lo && x->hs[lo - 1].tid == tid && x->hs[lo - 1].t1 > t) lo--;   /* inside one: the one before */
    return lo && x->hs[lo - 1].tid == tid ? &x->hs[lo - 1] : NULL;
}

/* On thread tid at time t, going back to t0: its own time (host) back to
   the last host wait that waited for work (one that ended inside it), the
   wait's tail after that work (other); then *k is that work. 0: the walk
   reached t0 on the thread. */
static int prof__path_cpu(const prof__pwalk *p, long tid, int64_t *t, int64_t t0, size_t *k, prof_gpu_path *r) {
    for (size_t guard = 0; *t > t0 && guard <= p->x->nhs; guard++) {
        const prof__isync *s = prof__path_sync(p->x, tid, *t);
        size_t g = s && s->t1 > t0 ? prof__path_ended(p, s->t0, s->t1) : SIZE_MAX;
        if (!s || s->t1 <= t0) break;
        if (g == SIZE_MAX) {            /* it waited for nothing: the thread's own time */
            r->host_ns += prof__clip(s->t0, *t, t0);
            *t = s->t0;
            continue;
        }
        r->host_ns += prof__clip(s->t1, *t, t0);
        r->other_ns += prof__clip(p->w[g].t1, s->t1, t0);
        *t = p->w[g].t1;
        *k = g;
        return 1;
    }
    r->host_ns += prof__clip(t0, *t, t0);
    *t = t0;
    return 0;
}

/* Step [t0, t1] of the thread tid, walked back from its end: on the CPU
   (prof__path_cpu), and on the GPU from work k to what it started after,
   as its gap says (prof__idle_gap's rules): its launch call when it came
   late (launch: from the call to the start; then the call's thread), the
   work a stream wait held it for, else the stream's work before it (the
   gap between: other). */
static void prof__path_step(const prof__pwalk *p, long tid, int64_t t0, int64_t t1, prof_gpu_path *r) {
    int64_t t = t1;
    size_t k = SIZE_MAX;
    for (size_t guard = 0; t > t0 && guard < 4 * (p->nw + p->x->nhs) + 8; guard++) {
        if (k == SIZE_MAX) {
            if (!prof__path_cpu(p, tid, &t, t0, &k, r)) return;
            continue;
        }
        const prof__iw *q = &p->w[k];
        int64_t end = t < q->t1 ? t : q->t1;
        r->other_ns += prof__clip(end, t, t0);
        r->gpu_ns += prof__clip(q->t0, end, t0);
        r->work++;
        t = q->t0 > t0 ? q->t0 : t0;
        if (t <= t0) return;
        const prof__iw *b = k && q[-1].dev == q->dev && q[-1].stream == q->stream ? &q[-1] : NULL;
        const prof__isync *y = b ? prof__idle_waited(p->x, q->dev, q->stream, b->launch,
                                                     q->launch != INT64_MIN ? q->launch : q->t0, b->t1) : NULL;
        if (q->launch != INT64_MIN && (!b || q->launch > b->t1)) {
            int64_t at = q->launch < t ? q->launch : t;
            r->launch_ns += prof__clip(at, t, t0);
            t = at;
            tid = q->tid;
            k = SIZE_MAX;
        } else if (y && y->item != SIZE_MAX && p->w[y->item].t1 <= t) {
            r->other_ns += prof__clip(p->w[y->item].t1, t, t0);
            t = p->w[y->item].t1;
            k = y->item;
        } else if (b) {
            int64_t at = b->t1 < t ? b->t1 : t;
            r->other_ns += prof__clip(at, t, t0);
            t = at;
            k--;
        } else {
            break;
        }
    }
    r->other_ns += prof__clip(t0, t, t0);   /* nothing known before it */
}

/* Every step's critical path into cy->path. 0 when memory runs out. */
static int prof__path_build(prof__cycle *cy, const prof__ictx *x, const prof__iw *w, size_t nw, const int64_t *st,
                            const long *tids) {
    prof__pend *by_end = (prof__pend *)malloc((nw + 1) * sizeof *by_end);
    prof_gpu_path *out = (prof_gpu_path *)calloc(x->nst + 1, sizeof *out);
    if (!by_end || !out) { free(by_end); free(out); return 0; }
    for (size_t i = 0; i < nw; i++) by_end[i].t1 = w[i].t1, by_end[i].i = i;
    if (nw) qsort(by_end, nw, sizeof *by_end, prof__pend_cmp);
    prof__pwalk p = { x, w, nw, by_end };
    for (size_t s = 0; s < x->nst; s++) {
        out[s].step = x->num[s];
        prof__path_step(&p, tids[s], st[2 * s], st[2 * s + 1], &out[s]);
    }
    free(by_end);
    cy->path = out;
    cy->npath = x->nst;
    return 1;
}

/* prof_cycle_gpu_idle's rows of the cycle, into cy->idle (again: the
   clock a save refines). 0 when memory runs out. */
static int prof__idle_build(prof__cycle *cy) {
    size_t nst = 0, nw = 0;
    int oom = 0;
    free(cy->idle);
    free(cy->path);
    cy->idle = NULL;
    cy->path = NULL;
    cy->nidle = cy->npath = 0;
    if (cy->nact <= cy->nact_api) return 1;
    for (size_t i = 0; i < cy->n; i++) nst += cy->ev[i].kind == PROF__K_STEP;
    int64_t *st = (int64_t *)malloc((3 * nst + 1) * sizeof *st);
    long *tids = (long *)malloc((nst + 1) * sizeof *tids);
    if (!st || !tids) { free(st); free(tids); return 0; }
    for (size_t i = 0, k = 0; i < cy->n; i++)   /* one thread's steps: in time order */
        if (cy->ev[i].kind == PROF__K_STEP) {
            st[2 * k] = prof__tclock_ns(&cy->clk, cy->ev[i].t0);
            st[2 * k + 1] = prof__tclock_ns(&cy->clk, cy->ev[i].t1);
            tids[k] = cy->ev[i].th < cy->nth ? cy->th[cy->ev[i].th].tid : 0;
            st[2 * nst + k++] = cy->ev[i].aux;
        }
    prof__icall *calls = NULL;
    prof__isync *hs = NULL, *ws = NULL;
    prof__ictx x;
    memset(&x, 0, sizeof x);
    x.num = st + 2 * nst;
    x.nst = nst;
    prof__iw *w = prof__idle_work(cy, st, nst, &nw, &calls, &oom);
    prof__iedge *e = (prof__iedge *)malloc((2 * nw + 1) * sizeof *e);
    x.acc = (prof_gpu_idle *)malloc((nst + 1) * sizeof *x.acc);
    int ok = !oom && e && x.acc && prof__idle_syncs(cy, calls, w, nw, &hs, &x.nhs, &ws, &x.nws);
    x.hs = hs;
    x.ws = ws;
    for (size_t a = 0, b; ok && a < nw; a = b) {
        for (b = a; b < nw && w[b].dev == w[a].dev; b++) {}
        ok = prof__idle_dev(&x, w + a, b - a, e);
    }
    if (ok && x.nout) qsort(x.out, x.nout, sizeof *x.out, prof__idle_cmp);
    ok = ok && prof__path_build(cy, &x, w, nw, st, tids);
    free(st); free(tids); free(calls); free(w); free(e); free(x.acc); free(hs); free(ws);
    if (!ok) { free(x.out); return 0; }
    cy->idle = x.out;
    cy->nidle = x.nout;
    return 1;
}

size_t prof_cycle_gpu_path_count(const prof_cycle *c) { return c ? c->npath : 0; }

int prof_cycle_gpu_path(const prof_cycle *c, size_t i, prof_gpu_path *out) {
    if (!c || i >= c->npath) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    *out = c->path[i];
    return 1;
}

size_t prof_cycle_gpu_idle_count(const prof_cycle *c) { return c ? c->nidle : 0; }

int prof_cycle_gpu_idle(const prof_cycle *c, size_t i, prof_gpu_idle *out) {
    if (!c || i >= c->nidle) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    *out = c->idle[i];
    return 1;
}

/* A thread never named: "thread <tid>", into buf[32]. */
static const char *prof__unnamed(char *buf, long tid) {
    snprintf(buf, 32, "thread %ld", tid);
    return buf;
}

/* Every thread's label: its name, or "thread <tid>" (one block: the
   pointers, then the texts made up). 0 when out of memory. */
static int prof__labels(prof__cycle *cy) {
    size_t extra = 0;
    for (size_t k = 0; k < cy->nth; k++) extra += cy->th[k].name ? 0 : 32;
    cy->label = (const char **)malloc(cy->nth * sizeof *cy->label + extra + 1);
    if (!cy->label) return 0;
    char *s = (char *)(cy->label + cy->nth);
    for (size_t k = 0; k < cy->nth; k++) {
        cy->label[k] = cy->th[k].name;
        if (cy->label[k]) continue;
        cy->label[k] = prof__unnamed(s, cy->th[k].tid);
        s += 32;
    }
    return 1;
}

/* The label of the thread with OS id tid (kernel capture's runtime calls
   name threads so), into buf[32] if the cycle has no such thread. */
static const char *prof__tid_label(const prof__cycle *cy, long tid, char *buf) {
    for (size_t k = 0; k < cy->nth; k++)
        if (cy->th[k].tid == tid) return cy->label[k];
    return prof__unnamed(buf, tid);
}

/* Threads that share a name and whose events never overlap in time share a
   track: a pool that starts new threads for every graph (ggml without
   OpenMP) shows as the workers it has, not as hundreds of threads. Returns,
   per thread index, the index of the thread whose track it is on (itself if
   none), or NULL when out of memory. Greedy: alike-named threads in order of
   their first event, each on the first of their tracks that has ended. */
typedef struct prof__life { uint64_t t0, t1; uint32_t th; } prof__life;

static int prof__life_cmp(const void *pa, const void *pb) {
    const prof__life *a = (const prof__life *)pa, *b = (const prof__life *)pb;
    return (a->t0 > b->t0) - (a->t0 < b->t0);
}

static uint32_t *prof__tracks(const prof__cycle *cy, int separate) {
    size_t nth = cy->nth ? cy->nth : 1;
    uint32_t *track = (uint32_t *)malloc(nth * sizeof *track);
    prof__life *sp = (prof__life *)calloc(nth, sizeof *sp), *ends = NULL;
    if (!track || !sp) { free(track); free(sp); return NULL; }
    for (size_t k = 0; k < nth; k++) track[k] = (uint32_t)k;
    if (separate || cy->nth < 2) { free(sp); return track; }
    for (size_t k = 0; k < nth; k++) sp[k].th = (uint32_t)k;
    for (size_t i = 0; i < cy->n; i++) {
        const prof__ev *e = &cy->ev[i];
        if (e->th >= nth) continue;
        prof__life *x = &sp[e->th];
        uint64_t end = prof__spans(e->kind) ? e->t1 : e->t0;
        if (!x->t0 || e->t0 < x->t0) x->t0 = e->t0;
        if (end > x->t1) x->t1 = end;
    }
    qsort(sp, nth, sizeof *sp, prof__life_cmp);
    ends = (prof__life *)malloc(nth * sizeof *ends);    /* one name's tracks and their last ends */
    unsigned char *done = (unsigned char *)calloc(nth, 1);
    if (!ends || !done) { free(ends); free(done); free(sp); return track; }
    for (size_t i = 0; i < nth; i++) {
        const char *name = cy->th[sp[i].th].name;
        if (done[i] || !name || !sp[i].t0) continue;
        size_t nt = 0;                  /* the first thread of a name leads its first track */
        ends[nt++] = sp[i];
        for (size_t j = i + 1; j < nth; j++) {
            const char *nj = cy->th[sp[j].th].name;
            if (done[j] || !nj || !sp[j].t0 || strcmp(nj, name)) continue;
            done[j] = 1;
            size_t k = 0;
            while (k < nt && ends[k].t1 > sp[j].t0) k++;
            if (k == nt) ends[nt++] = sp[j];        /* overlaps them all: a track of its own */
            else { track[sp[j].th] = ends[k].th; ends[k].t1 = sp[j].t1; }
        }
    }
    free(done);
    free(ends);
    free(sp);
    return track;
}


/* GPU time by correlation, for the walk's GPU totals: sorted, NULL if none
   or no memory. */
typedef struct prof__gdur { uint32_t corr; int64_t ns; } prof__gdur;

static int prof__gdur_cmp(const void *a, const void *b) {
    return prof__u32_cmp(&((const prof__gdur *)a)->corr, &((const prof__gdur *)b)->corr);
}

static prof__gdur *prof__gpu_durations(const prof__cycle *cy) {
    prof__gdur *d = cy->ngpu ? (prof__gdur *)malloc(cy->ngpu * sizeof *d) : NULL;
    if (!d) return NULL;
    for (size_t i = 0; i < cy->ngpu; i++) {
        d[i].corr = cy->gpu[i].corr;
        d[i].ns = prof__tclock_ns(&cy->clk, (uint64_t)cy->gpu[i].t1) - prof__tclock_ns(&cy->clk, (uint64_t)cy->gpu[i].t0);
    }
    qsort(d, cy->ngpu, sizeof *d, prof__gdur_cmp);
    return d;
}

/* Kernel capture's launches: each kernel, copy or fill at its runtime
   call's thread and time, sorted so; cum: the GPU time of those before it
   (n + 1 entries). A region's GPU total is then two searches. */
typedef struct prof__klaunch { long tid; uint64_t t; int64_t cum; } prof__klaunch;

static int prof__klaunch_cmp(const void *x, const void *y) {
    const prof__klaunch *a = (const prof__klaunch *)x, *b = (const prof__klaunch *)y;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

/* The first launch at or after (tid, t). */
static size_t prof__klaunch_at(const prof__klaunch *k, size_t n, long tid, uint64_t t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (k[m].tid < tid || (k[m].tid == tid && k[m].t < t)) lo = m + 1;
        else hi = m;
    }
    return lo;
}

static int64_t prof__klaunch_ns(const prof__klaunch *k, size_t n, long tid, uint64_t t0, uint64_t t1) {
    size_t a = prof__klaunch_at(k, n, tid, t0), b = prof__klaunch_at(k, n, tid, t1 + 1);
    return k[b].cum - k[a].cum;
}

/* NULL when the cycle has no kernels (or no memory: *oom). */
static prof__klaunch *prof__klaunches(const prof__cycle *cy, size_t *n, int *oom) {
    size_t ng = cy->nact - cy->nact_api, na = cy->nact_api, m = 0;
    *n = 0;
    if (!ng) return NULL;
    prof__klaunch *k = (prof__klaunch *)malloc((ng + 1) * sizeof *k);
    prof__gdur *api = (prof__gdur *)malloc((na + 1) * sizeof *api);  /* (correlation, index) */
    if (!k || !api) {
        free(k);
        free(api);
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < na; i++) api[i].corr = cy->act[i].a.correlation, api[i].ns = (int64_t)i;
    qsort(api, na, sizeof *api, prof__gdur_cmp);
    for (size_t i = na; i < cy->nact; i++) {
        const prof__gact *g = &cy->act[i];
        if (g->a.kind == PROF_GPU_SYNC) continue;   /* the host's wait, not GPU time */
        prof__gdur key = { g->a.correlation, 0 };
        const prof__gdur *f = na ? (const prof__gdur *)bsearch(&key, api, na, sizeof key, prof__gdur_cmp) : NULL;
        if (!f) continue;               /* its launch is not in the cycle */
        const prof__gact *call = &cy->act[f->ns];
        k[m].tid = call->tid;
        k[m].t = call->t0;
        k[m++].cum = prof__tclock_ns(&cy->clk, g->t1) - prof__tclock_ns(&cy->clk, g->t0);
    }
    qsort(k, m, sizeof *k, prof__klaunch_cmp);
    int64_t sum = 0;
    for (size_t i = 0; i <= m; i++) {   /* durations into the sum of those before */
        int64_t d = i < m ? k[i].cum : 0;
        k[i].cum = sum;
        sum += d;
    }
    k[m].tid = LONG_MAX;
    free(api);
    *n = m;
    return k;
}

/* One clock (>>api-gpu's "One clock"): under kernel capture a GPU region
   records no event, and its GPU side is found here, once kernel capture's
   records and the CPU sides are in the cycle: it spans from the first start
   to the last end of the kernels, copies and fills whose launch call lies
   in its CPU side on its thread, onto its stream (Kineto's
   gpu_user_annotation rule), so it contains them by construction, on the
   one clock they share; one that launched nothing there has no GPU side and
   leaves the cycle (its CPU side is written as a plain region). A launch
   call's place on the CPU clock is as good as the readings of the tracer's
   clock: tracer_ns, their half-width, is then the device's bound. */
static int prof__u64first_cmp(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void prof__gpu_one_clock(prof__cycle *cy, int64_t tracer_ns) {
    size_t ng = cy->nact - cy->nact_api, na = cy->nact_api, nl = 0, nr = 0, spans = 0, kept = 0;
    for (size_t j = 0; j < cy->ngpu; j++) spans += (size_t)cy->gpu[j].span;
    if (!spans) return;
    /* launches (thread, call tick, index of what it launched), sorted by
       thread and time; and the regions' CPU sides (correlation, index) */
    uint64_t *api = (uint64_t *)malloc((2 * na + 1) * sizeof *api);
    prof__klaunch *kl = (prof__klaunch *)malloc((ng + 1) * sizeof *kl);
    uint64_t *cpu = (uint64_t *)malloc((2 * cy->n + 2) * sizeof *cpu);
    int spanned[PROF__GPU_DEVS] = { 0 }, timed[PROF__GPU_DEVS] = { 0 };
    if (!api || !kl || !cpu) {          /* out of memory: drawn at their CPU sides */
        cy->oom = 1;
        goto done;
    }
    for (size_t i = 0; i < na; i++) api[2 * i] = cy->act[i].a.correlation, api[2 * i + 1] = i;
    qsort(api, na, 2 * sizeof *api, prof__u64first_cmp);    /* by correlation: unique among calls */
    for (size_t i = na; i < cy->nact; i++) {
        uint64_t key = cy->act[i].a.correlation;
        if (cy->act[i].a.kind == PROF_GPU_SYNC) continue;   /* spans no region */
        const uint64_t *c = na ? (const uint64_t *)bsearch(&key, api, na, 2 * sizeof *api, prof__u64first_cmp) : NULL;
        if (!c) continue;
        const prof__gact *call = &cy->act[c[1]];
        kl[nl].tid = call->tid;
        kl[nl].t = call->t0;
        kl[nl].cum = (int64_t)i;
        nl++;
    }
    qsort(kl, nl, sizeof *kl, prof__klaunch_cmp);
    kl[nl].tid = LONG_MAX;
    for (size_t i = 0; i < cy->n; i++)
        if (cy->ev[i].kind == PROF__K_GPU_REGION) cpu[2 * nr] = cy->ev[i].aux, cpu[2 * nr++ + 1] = i;
    qsort(cpu, nr, 2 * sizeof *cpu, prof__u64first_cmp);
    for (size_t j = 0; j < cy->ngpu; j++) {
        prof__gev *g = &cy->gpu[j];
        int dev = g->dev >= 0 && g->dev < PROF__GPU_DEVS ? g->dev : 0;
        if (!g->span) {                 /* an event pair (begun before capture started) */
            timed[dev]++;
            cy->gpu[kept++] = *g;
            continue;
        }
        spanned[dev]++;
        uint64_t key = g->corr, lo = UINT64_MAX, hi = 0;
        const uint64_t *c = nr ? (const uint64_t *)bsearch(&key, cpu, nr, 2 * sizeof *cpu, prof__u64first_cmp) : NULL;
        if (!c || !nl) continue;
        const prof__ev *e = &cy->ev[c[1]];
        long tid = e->th < cy->nth ? cy->th[e->th].tid : 0;
        for (size_t k = prof__klaunch_at(kl, nl, tid, e->t0); kl[k].tid == tid && kl[k].t <= e->t1; k++) {
            const prof__gact *a = &cy->act[kl[k].cum];
            if (a->a.device != g->dev || a->a.stream != g->stream) continue;
            lo = a->t0 < lo ? a->t0 : lo;
            hi = a->t1 > hi ? a->t1 : hi;
        }
        if (lo > hi) continue;          /* launched nothing on its stream: no GPU side */
        g->t0 = (int64_t)lo;
        g->t1 = (int64_t)hi;
        cy->gpu[kept++] = *g;
    }
    cy->ngpu = kept;
    qsort(cy->gpu, cy->ngpu, sizeof *cy->gpu, prof__gev_cmp);
    for (size_t i = 0; i < cy->ngdev; i++) {
        int d = cy->gdev[i].dev;
        if (d >= 0 && d < PROF__GPU_DEVS && spanned[d] && !timed[d])
            cy->gdev[i].marked_ns = tracer_ns > 0 ? tracer_ns : 1;
    }
done:
    free(api);
    free(kl);
    free(cpu);
}

/* ---- the walk: one traversal of a cycle that drives any sink ---------------
   prof__walk visits the CPU records thread by thread in record order, then
   the GPU regions by device and stream, then kernel capture's runtime calls
   by thread and its kernels, copies and fills by device and stream, calling
   the sink's callbacks. It keeps what every sink needs and none should
   re-derive: which thread and track a run of records is on, the arguments
   and memory events waiting for the span that owns them, and on request
   (need) the spans' self and total times (CPU, GPU, memory) and the order
   in which spans begin. It is inline, and sinks pass a static const table:
   the compiler sees every callback and inlines it, so a writer's inner loop
   costs what a loop written for it would. */

enum {
    PROF__NEED_TIMES = 1,               /* self and total CPU and GPU times */
    PROF__NEED_MEM = 2,                 /* memory allocated inside each span */
    PROF__NEED_ORDER = 4                /* begin(): each span where it begins */
};

typedef struct prof__wthread {          /* a run of one thread's records */
    uint32_t k, lead;                   /* its index; the thread whose track it is on */
    uint32_t plain;                     /* prof__ev_kt of a region of this thread */
    long tid;                           /* the track's thread id (the lead's) */
    long os_tid;                        /* its own id when on another's track, else 0 */
    const char *label;                  /* its name, or "thread <tid>" */
} prof__wthread;

typedef struct prof__wreg {             /* one span (region or step), complete */
    const prof__ev *e;
    size_t idx;
    const size_t *args;                 /* its arguments, indices into cy->ev */
    size_t nargs;
    int plain;                          /* a region (not a step, clipped or open) without
                                           arguments: known at compile time on the
                                           plain walk's fast path */
    uint32_t begun;                     /* NEED_ORDER: what begin() returned for it */
    int leaf;                           /* NEED_ORDER: nothing else begins where it
                                           does, and begin() was not called for it */
    int64_t self_ns, total_ns;          /* NEED_TIMES: total minus the children's */
    int64_t self_gpu_ns, gpu_total_ns;  /*   see prof_row */
    int64_t self_cpu_mem, self_gpu_mem; /* NEED_MEM: bytes allocated minus freed */
    int64_t cpu_mem, gpu_mem;           /*   by the events it owns, and its subtree's */
} prof__wreg;

/* A sink's callbacks. A sink's table names each slot (.span = ...), every
   one and in this order, NULL where it has none: C++ takes designated
   initialisers only so, and before C++20 only as an extension, hence the
   tables' __extension__. */
typedef struct prof__sink {
    unsigned need;                      /* PROF__NEED_* */
    void (*thread)(void *s, const prof__cycle *cy, const prof__wthread *t);
    uint32_t (*begin)(void *s, const prof__cycle *cy, const prof__wthread *t, size_t i);
    void (*span)(void *s, const prof__cycle *cy, const prof__wthread *t, const prof__wreg *r);
    void (*point)(void *s, const prof__cycle *cy, const prof__wthread *t, const prof__ev *e);
    void (*mem)(void *s, const prof__cycle *cy, const prof__wthread *t, const prof__ev *e, const prof__ev *total);
    /* GPU regions by device, stream, start; new_dev / new_stream: the first
       of its device / stream; then once with g NULL: they are done */
    void (*gpu)(void *s, const prof__cycle *cy, const prof__gev *g, int new_dev, int new_stream);
    /* kernel capture: runtime calls (api) by thread, then the rest by device
       and stream; new_track: the first of its thread / stream, new_dev: of
       its device (or the first after the runtime calls); flows: the keys of
       its flows (prof__walk_flows), one per kernel, copy or fill a call
       launched (a graph launch has several), none when the other end is
       not in the cycle; label: the thread's */
    void (*act)(void *s, const prof__cycle *cy, const prof__gact *g, int new_track, int new_dev,
                const uint64_t *flows, size_t nflows, const char *label);
    /* optional, for a sink that needs neither times nor memory: the run of
       plain regions from record i on (prof__wplain says which), taken in
       one loop of the sink's own, its state in locals rather than reloaded
       behind every byte it stores; each as span() would have it. Returns
       the first record it did not take: i to leave record i to span(). */
    size_t (*plains)(void *s, const prof__cycle *cy, const prof__wthread *t, size_t i);
    /* PROF_ENERGY's power track: device dev's watts from tick on, by
       device, in time order (>>energy) */
    void (*power)(void *s, const prof__cycle *cy, int dev, uint64_t tick, double watts);
    /* PROF_GPU_METRICS' tracks: device dev's metric m (PROF_GPU_M_*; for
       the throttle mask, its bit `bit`, v 0 or 1) is v from tick on, by
       device and track, in time order (>>energy) */
    void (*metric)(void *s, const prof__cycle *cy, int dev, int m, int bit, uint64_t tick, double v);
} prof__sink;

typedef struct prof__wspan { int64_t total, gpu, cpu_mem, gpu_mem; size_t idx; } prof__wspan;

typedef struct prof__walker {           /* the walk's own memory */
    size_t *pend, pcap;                 /* arguments waiting for their span */
    size_t *mpend, mcap;                /* memory events waiting for theirs */
    prof__wspan *stk;                   /* finished spans waiting for their parent */
    size_t scap;
    uint32_t *begun;                    /* NEED_ORDER: what begin() returned, for the spans
                                           begun and not yet ended, innermost last */
    size_t nbegun, bcap;
    uint32_t *chain;                    /*   the spans that begin at one record */
    size_t ccap;
    prof__gdur *gdur;                   /* NEED_TIMES: GPU time by correlation */
    size_t ngdur;
    prof__klaunch *kl;                  /*   and kernel capture's launches */
    size_t nkl;
    uint64_t *kf;                       /* kernel capture: correlation << 32 | index, sorted */
    size_t nkf;
    uint64_t *fl;                       /* a call's flows' keys */
    size_t flcap;
    uint64_t *wf;                       /* synchronisations on an event whose record's call is
                                           here: that call's correlation << 32 | index, sorted */
    size_t nwf;
} prof__walker;

/* Slices need BEGIN and END in time order; records come in post-order (a
   span when it ends), and a span's subtree is the run of records right
   before it, from cy->first (prof__analyse). The spans that begin at record
   i: none if i has children (its subtree began earlier); else i itself if
   it is a span, then its parent if i is the first child, that one's parent
   if it is the first, and so on out. A span that begins alone is the
   sink's to begin (prof__wreg.leaf); the others are begun outermost first,
   and what begin() returns waits on a stack for the span's end: spans end
   innermost first. 0 when out of memory. */
static int prof__walk_begin(prof__walker *w, const prof__cycle *cy, const prof__sink *k, void *s,
                            const prof__wthread *t, size_t i) {
    size_t n = 0;
    if (cy->first[i] != ((uint32_t)i | PROF__FIRST_CHILD)) return 1;   /* itself alone, or nothing */
    for (uint32_t c = (uint32_t)i;; c = cy->parent[c]) {
        if (c != i || prof__spans(cy->ev[i].kind)) {
            uint32_t *ch = (uint32_t *)prof__grow(w->chain, &w->ccap, n + 1, sizeof *ch);
            if (!ch) return 0;
            w->chain = ch;
            ch[n++] = c;
        }
        if (!(cy->first[c] & PROF__FIRST_CHILD)) break;
    }
    while (n--) {
        uint32_t *b = (uint32_t *)prof__grow(w->begun, &w->bcap, w->nbegun + 1, sizeof *b);
        if (!b) return 0;
        w->begun = b;
        b[w->nbegun++] = k->begin(s, cy, t, w->chain[n]);
    }
    return 1;
}

/* A span's times and memory, from its children waiting on the stack; it
   waits there in turn. 0 when out of memory. */
static int prof__walk_times(prof__walker *w, const prof__cycle *cy, unsigned need, size_t *sp, prof__wreg *r,
                            size_t *nm) {
    const prof__ev *e = r->e;
    size_t i = r->idx;
    int64_t total = prof__tclock_ns(&cy->clk, e->t1) - prof__tclock_ns(&cy->clk, e->t0), kids = 0, kids_gpu = 0;
    int64_t gpu = -1;
    int64_t cpu_mem = 0, gpu_mem = 0;
    if (need & PROF__NEED_MEM) {
        while (*nm && cy->parent[w->mpend[*nm - 1]] == i) {
            const prof__ev *a = &cy->ev[w->mpend[--*nm]];
            if (a->aux) gpu_mem += (int64_t)a->t1;
            else cpu_mem += (int64_t)a->t1;
        }
        r->self_cpu_mem = cpu_mem;
        r->self_gpu_mem = gpu_mem;
    }
    while (*sp && cy->parent[w->stk[*sp - 1].idx] == i) {   /* its children */
        const prof__wspan *c = &w->stk[--*sp];
        kids += c->total;
        kids_gpu += c->gpu;
        cpu_mem += c->cpu_mem;
        gpu_mem += c->gpu_mem;
    }
    /* GPU total: with kernel capture, what was launched inside it; else its
       own pair's time, else what its children launched */
    if (w->nkl) {
        gpu = prof__klaunch_ns(w->kl, w->nkl, e->th < cy->nth ? cy->th[e->th].tid : 0, e->t0, e->t1);
    } else if (e->kind == PROF__K_GPU_REGION && w->ngdur) {
        prof__gdur key = { e->aux, 0 };
        const prof__gdur *g = (const prof__gdur *)bsearch(&key, w->gdur, w->ngdur, sizeof key, prof__gdur_cmp);
        if (g) gpu = g->ns;
    }
    if (gpu < 0) gpu = kids_gpu;
    r->total_ns = total;
    r->self_ns = total - kids;
    r->gpu_total_ns = gpu;
    r->self_gpu_ns = gpu > kids_gpu ? gpu - kids_gpu : 0;
    r->cpu_mem = cpu_mem;
    r->gpu_mem = gpu_mem;
    prof__wspan *s = (prof__wspan *)prof__grow(w->stk, &w->scap, *sp + 1, sizeof *s);
    if (!s) return 0;
    w->stk = s;
    s[*sp].total = total;
    s[*sp].gpu = gpu;
    s[*sp].cpu_mem = cpu_mem;
    s[*sp].gpu_mem = gpu_mem;
    s[(*sp)++].idx = i;
    return 1;
}

/* Pushes i on a stack of waiting records; 0 when out of memory. */
static int prof__walk_wait(size_t **v, size_t *cap, size_t *n, size_t i) {
    size_t *p = (size_t *)prof__grow(*v, cap, *n + 1, sizeof *p);
    if (!p) return 0;
    p[(*n)++] = i;
    *v = p;
    return 1;
}

static int prof__walk_setup(prof__walker *w, const prof__cycle *cy, unsigned need) {
    int oom = 0;
    memset(w, 0, sizeof *w);
    if (cy->n && (!cy->parent || !cy->track || !cy->label)) return 0;
    if (cy->n && !cy->first) return 0;
    if (need & PROF__NEED_TIMES) {
        w->gdur = prof__gpu_durations(cy);
        w->ngdur = w->gdur ? cy->ngpu : 0;
        w->kl = prof__klaunches(cy, &w->nkl, &oom);
        if (oom || (cy->ngpu && !w->gdur)) return 0;
    }
    /* never NULL, so that pend + k is defined with nothing waiting */
    w->pend = (size_t *)prof__grow(NULL, &w->pcap, 16, sizeof *w->pend);
    return w->pend != NULL;
}

static void prof__walk_free(prof__walker *w) {
    free(w->pend); free(w->mpend); free(w->stk); free(w->begun); free(w->chain); free(w->gdur); free(w->kl);
    free(w->kf); free(w->fl); free(w->wf);
}

/* Flows of kernel capture, one to one: each kernel, copy or fill has its
   own, from the call that launched it, though a graph launch's share one
   correlation. Its key: the correlation for the first of that correlation
   (so the usual one-kernel launch keeps the id it always had), else 2^32 +
   its index in the cycle. Writers make ids of keys. Into *flows (w->fl for
   a call); their number, or (size_t)-1 when out of memory. */
static uint64_t prof__flow_key(const uint64_t *kf, size_t at) {
    uint64_t c = kf[at] >> 32;
    return at && kf[at - 1] >> 32 == c ? ((uint64_t)1 << 32) + (kf[at] & 0xffffffffu) : c;
}

/* A synchronisation on an event also ends a flow from the call that
   recorded the event (cudaEventRecord), keyed PROF__WAIT_FLOW + its index;
   Kineto links the two by arguments only (wait_on_cuda_event_record_corr_id). */
#define PROF__WAIT_FLOW ((uint64_t)1 << 62)

static int prof__sync_waits(const prof__cycle *cy, const prof__gact *g) {
    return g->a.kind == PROF_GPU_SYNC && g->a.wait_corr >= 0 && g->a.wait_corr <= 0xffffffffLL &&
           prof__gpu_find(cy->kcorr[0], cy->nkcorr[0], (uint32_t)g->a.wait_corr);
}

static size_t prof__walk_flows(prof__walker *w, const prof__cycle *cy, size_t j, const uint64_t **flows) {
    const prof__gact *g = &cy->act[j];
    uint64_t c = g->a.correlation;
    size_t lo = 0, hi = w->nkf, n = 0;
    *flows = w->fl;
    if (j >= cy->nact_api) {            /* what was launched: one flow, if its call is here */
        if (prof__gpu_find(cy->kcorr[0], cy->nkcorr[0], g->a.correlation)) {
            uint64_t v = c << 32 | j;
            while (lo < hi) {
                size_t m = lo + (hi - lo) / 2;
                if (w->kf[m] < v) lo = m + 1;
                else hi = m;
            }
            w->fl[n++] = prof__flow_key(w->kf, lo);
        }
        if (prof__sync_waits(cy, g)) w->fl[n++] = PROF__WAIT_FLOW + j;    /* room for 2: prof__walk_acts */
        return n;
    }
    while (lo < hi) {                   /* a call: one flow per thing it launched */
        size_t m = lo + (hi - lo) / 2;
        if (w->kf[m] >> 32 < c) lo = m + 1;
        else hi = m;
    }
    for (size_t i = lo; i < w->nkf && w->kf[i] >> 32 == c; i++) {
        uint64_t *nf = (uint64_t *)prof__grow(w->fl, &w->flcap, n + 1, sizeof *nf);
        if (!nf) return (size_t)-1;
        w->fl = nf;
        w->fl[n++] = prof__flow_key(w->kf, i);
    }
    for (lo = 0, hi = w->nwf; lo < hi;) {   /* and to each synchronisation on the event it recorded */
        size_t m = lo + (hi - lo) / 2;
        if (w->wf[m] >> 32 < c) lo = m + 1;
        else hi = m;
    }
    for (size_t i = lo; i < w->nwf && w->wf[i] >> 32 == c; i++) {
        uint64_t *nf = (uint64_t *)prof__grow(w->fl, &w->flcap, n + 1, sizeof *nf);
        if (!nf) return (size_t)-1;
        w->fl = nf;
        w->fl[n++] = PROF__WAIT_FLOW + (w->wf[i] & 0xffffffffu);
    }
    *flows = w->fl;
    return n;
}

/* The word an event's kind and thread share (the bit fields after aux),
   as bytes: a plain walk tests both with one compare. */
PROF__INLINE uint32_t prof__ev_kt(const prof__ev *e) {
    uint32_t v;
    memcpy(&v, (const char *)e + offsetof(prof__ev, aux) + sizeof e->aux, sizeof v);
    return v;
}

/* The same word of a region on thread th. */
static uint32_t prof__region_kt(uint32_t th) {
    prof__ev probe;
    memset(&probe, 0, sizeof probe);
    probe.kind = PROF__K_REGION;
    probe.th = th;
    return prof__ev_kt(&probe);
}

/* Record e is a plain region of the run whose prof__wthread.plain is kt: a
   region of the run's thread without arguments (the walk calls plains()
   with none waiting), or given f (its cy->first, on an ordered walk), one
   with nothing else beginning where it does (PROF__LONE says all that,
   and that the next record is the run's too). A sink's plains() loops on
   this with the walk's arrays in locals. */
PROF__INLINE int prof__wplain(const prof__ev *e, uint32_t kt, const uint32_t *f) {
    return f ? *f == PROF__LONE : prof__ev_kt(e) == kt;
}

/* The start of a run of thread th's records: which track it is on, its
   ids and label into *t; the sink is told. */
PROF__INLINE void prof__walk_thread(prof__walker *w, const prof__cycle *cy, const prof__sink *k, void *s,
                                    prof__wthread *t, uint32_t th) {
    t->k = th;
    t->lead = cy->track[th];
    t->tid = cy->th[t->lead].tid;
    t->os_tid = t->lead != th ? cy->th[th].tid : 0;
    t->label = cy->label[th];
    t->plain = prof__region_kt(th);
    w->nbegun = 0;
    if (k->thread) k->thread(s, cy, t);
}

/* Record i of run t, one the plain loop does not take: a span with the
   arguments it owns and, as the sink needs, its times and where it begins;
   an argument or a memory event, which waits for its span; a point. *np,
   *nm, *sp: how many arguments, memory events and finished spans wait.
   0 when memory runs out. */
PROF__INLINE int prof__walk_record(prof__walker *w, const prof__cycle *cy, const prof__sink *k, void *s,
                                   const prof__wthread *t, size_t i, size_t *np, size_t *nm, size_t *sp) {
    const prof__ev *e = &cy->ev[i];
    const unsigned kind = e->kind, need = k->need;
    if ((need & PROF__NEED_ORDER) && !prof__walk_begin(w, cy, k, s, t, i)) return 0;
    if (PROF__LIKELY(kind == PROF__K_REGION) || prof__role[kind] == PROF__R_SPAN) {
        prof__wreg r;
        size_t first_arg = *np;         /* the arguments it owns: pend[first_arg, *np) */
        while (first_arg && prof__owner(cy, w->pend[first_arg - 1]) == i) first_arg--;
        r.e = e;
        r.idx = i;
        r.args = w->pend + first_arg;
        r.nargs = *np - first_arg;
        r.plain = kind == PROF__K_REGION && !r.nargs;
        /* only itself began here: the sink begins it if it must */
        r.leaf = (need & PROF__NEED_ORDER) && (cy->first[i] == PROF__LONE || cy->first[i] == i);
        r.begun = (need & PROF__NEED_ORDER) && !r.leaf && w->nbegun ? w->begun[--w->nbegun] : 0;
        if ((need & (PROF__NEED_TIMES | PROF__NEED_MEM)) && !prof__walk_times(w, cy, need, sp, &r, nm)) return 0;
        k->span(s, cy, t, &r);
        *np = first_arg;
    } else if (prof__role[kind] == PROF__R_ARG) {
        if (!prof__walk_wait(&w->pend, &w->pcap, np, i)) return 0;
    } else if (prof__role[kind] == PROF__R_POINT) {
        if (k->point) k->point(s, cy, t, e);
    } else if (prof__role[kind] == PROF__R_MEM) {
        const prof__ev *tot = prof__mem_total(cy, i);
        if (!tot) return 1;
        if (k->mem) k->mem(s, cy, t, e, tot);
        if ((need & PROF__NEED_MEM) && !prof__walk_wait(&w->mpend, &w->mcap, nm, i)) return 0;
    }
    return 1;
}

/* The GPU regions by device, stream and start; then once with NULL: they
   are done. */
PROF__INLINE void prof__walk_gpu(const prof__cycle *cy, const prof__sink *k, void *s) {
    for (size_t j = 0; j < cy->ngpu; j++) {
        const prof__gev *g = &cy->gpu[j];
        int new_dev = !j || g->dev != cy->gpu[j - 1].dev;
        k->gpu(s, cy, g, new_dev, new_dev || g->stream != cy->gpu[j - 1].stream);
    }
    k->gpu(s, cy, NULL, 0, 0);
}

/* Kernel capture's records: the runtime calls by thread, then what they
   launched by device and stream, each with its flows. 0 when memory runs
   out. */
PROF__INLINE int prof__walk_acts(prof__walker *w, const prof__cycle *cy, const prof__sink *k, void *s) {
    if (cy->nact > cy->nact_api) {
        w->nkf = cy->nact - cy->nact_api;
        if (!(w->kf = (uint64_t *)malloc(w->nkf * sizeof *w->kf)) ||
            !(w->wf = (uint64_t *)malloc(w->nkf * sizeof *w->wf)) ||
            !(w->fl = (uint64_t *)prof__grow(NULL, &w->flcap, 2, sizeof *w->fl)))
            return 0;
        for (size_t j = cy->nact_api; j < cy->nact; j++) {
            w->kf[j - cy->nact_api] = (uint64_t)cy->act[j].a.correlation << 32 | j;
            if (prof__sync_waits(cy, &cy->act[j])) w->wf[w->nwf++] = (uint64_t)cy->act[j].a.wait_corr << 32 | j;
        }
        qsort(w->kf, w->nkf, sizeof *w->kf, prof__u64first_cmp);
        qsort(w->wf, w->nwf, sizeof *w->wf, prof__u64first_cmp);
    }
    for (size_t j = 0; j < cy->nact; j++) {
        const prof__gact *g = &cy->act[j], *q = j ? g - 1 : NULL;
        int api = j < cy->nact_api, new_track, new_dev = 0;
        char buf[32];
        if (api) {
            new_track = !q || q->tid != g->tid;
        } else {
            new_dev = !q || j == cy->nact_api || q->a.device != g->a.device;
            new_track = new_dev || prof__act_row(&q->a) != prof__act_row(&g->a);
        }
        const uint64_t *flows = NULL;
        size_t nflows = w->nkf ? prof__walk_flows(w, cy, j, &flows) : 0;
        if (nflows == (size_t)-1) return 0;
        k->act(s, cy, g, new_track, new_dev, flows, nflows, api && new_track ? prof__tid_label(cy, g->tid, buf) : NULL);
    }
    return 1;
}

/* PROF_ENERGY's power track: each device's watts between its knots, and
   where the last one ends. */
PROF__INLINE void prof__walk_power(const prof__cycle *cy, const prof__sink *k, void *s) {
    for (int d = 0; d < cy->en->nd; d++) {
        const prof__ecdev *v = &cy->en->d[d];
        double watts = 0;
        int any = 0;
        for (size_t j = 1; j < v->nk; j++) {
            if (!prof__en_watts(cy, v, j, &watts)) continue;
            k->power(s, cy, v->dev, v->k[j - 1].tick, watts);
            any = 1;
        }
        if (any) k->power(s, cy, v->dev, v->k[v->nk - 1].tick, watts);
    }
}

/* PROF_GPU_METRICS' tracks, for the walk: by device and track, each
   sample where its value changes, and the first and last. */
static void prof__walk_metrics(const prof__cycle *cy, const prof__sink *k, void *s) {
    for (int d = 0; d < cy->en->nd; d++) {
        const prof__ecdev *v = &cy->en->d[d];
        uint64_t seen = 0;
        for (size_t j = 0; j < v->nm; j++) seen |= (uint64_t)v->m[j].v[PROF_GPU_M_THROTTLE];
        for (int m = 0; m < PROF_GPU_M_COUNT + 64; m++) {
            int bit = m - PROF_GPU_M_COUNT, mm = bit < 0 ? m : PROF_GPU_M_THROTTLE;
            if (mm == PROF_GPU_M_THROTTLE &&
                (bit < 0 || !(seen >> bit & 1) || !cy->en->gm_names || !cy->en->gm_names[bit]))
                continue;               /* the mask as its named flags, those set in the window */
            if (!(v->mon >> mm & 1)) continue;
            for (size_t j = 0; j < v->nm; j++) {
                double x = bit < 0 ? v->m[j].v[m] : (double)((uint64_t)v->m[j].v[mm] >> bit & 1);
                double was = !j ? 0 : bit < 0 ? v->m[j - 1].v[m] : (double)((uint64_t)v->m[j - 1].v[mm] >> bit & 1);
                if (!j || x != was || j + 1 == v->nm) k->metric(s, cy, v->dev, mm, bit, v->m[j].tick, x);
            }
        }
    }
}

/* The walk. 0 when memory runs out (the sink has seen part of the cycle). */
PROF__INLINE int prof__walk(const prof__cycle *cy, const prof__sink *k, void *s) {
    prof__walker w;
    prof__wthread t;
    const unsigned need = k->need;
    const size_t n = cy->n;
    size_t i = 0;
    if (!prof__walk_setup(&w, cy, need)) goto fail;
    while (i < n) {                     /* a run of one thread's records */
        const uint32_t th = cy->ev[i].th;
        const uint32_t *first = need == PROF__NEED_ORDER ? cy->first : NULL;
        size_t np = 0, nm = 0, sp = 0;
        prof__walk_thread(&w, cy, k, s, &t, th);
        for (; i < n; i++) {
            const prof__ev *e = &cy->ev[i];
            /* most records: a plain region, nothing waiting (a lone one
               may begin the next thread's run); the sink sees plain and
               leaf as constants */
            if (PROF__LIKELY(!np && (!need || first) && prof__wplain(e, t.plain, first ? first + i : NULL) &&
                             e->th == th)) {
                prof__wreg r;
                if (k->plains) {
                    size_t j = k->plains(s, cy, &t, i);
                    if (j > i) {
                        i = j - 1;
                        continue;
                    }
                }
                r.e = e;
                r.idx = i;
                r.args = w.pend;
                r.nargs = 0;
                r.plain = 1;
                r.leaf = need == PROF__NEED_ORDER;
                r.begun = 0;
                k->span(s, cy, &t, &r);
                continue;
            }
            if (e->th != th) break;
            if (!prof__walk_record(&w, cy, k, s, &t, i, &np, &nm, &sp)) goto fail;
        }
    }
    if (k->gpu) prof__walk_gpu(cy, k, s);
    if (k->act && !prof__walk_acts(&w, cy, k, s)) goto fail;
    if (k->power && cy->en) prof__walk_power(cy, k, s);   /* the power between knots */
    if (k->metric && cy->en) prof__walk_metrics(cy, k, s);
    prof__walk_free(&w);
    return 1;
fail:
    prof__walk_free(&w);
    return 0;
}

/* ---- >>model  a cycle made from outside (>>api-model) ----------------------
   Its records are those the recorder would have kept, on a clock of its own:
   a tick is a nanosecond, counted from 1 (the analysis takes a tick of 0 for
   "none"), so ns = tick - 1. Each region or step and its arguments are a
   unit, put in the recorder's order at the finish. */
typedef struct prof__munit { uint32_t th; uint64_t t0, t1; size_t first, last; } prof__munit;

typedef struct prof__mjoule { int dev, share; uint64_t t0, t1; double j; } prof__mjoule;  /* a step's joules */

typedef struct prof__model {
    prof__cycle cy;                     /* first: the cycle is the model */
    prof__munit *unit;
    size_t nunit, ucap, thcap;
    size_t gcap, acap;                  /* of cy.gpu, cy.act (prof_model_gpu, _activity) */
    int open;                           /* a unit takes arguments */
    int done;                           /* finished: nothing more is added */
    prof__mjoule *en;                   /* prof_model_step_energy */
    size_t nen, encap;
    prof__ecount *cnt;                  /* prof_model_count */
    size_t ncnt, cntcap;
} prof__model;

/* The model behind c, if c is one still taking records. */
static prof__model *prof__model_of(prof_cycle *c) {
    prof__model *m = c && c->model ? (prof__model *)(void *)c : NULL;
    return m && !m->done ? m : NULL;
}

prof_cycle *prof_model_new(void) {
    prof__model *m = (prof__model *)calloc(1, sizeof *m);
    if (!m) return NULL;
    m->cy.model = 1;
    m->cy.index = 1;
    m->cy.clk.tick0 = 0;
    m->cy.clk.off = -1;
#ifdef __SIZEOF_INT128__
    m->cy.clk.scale = (prof__scale)1 << 32;
#else
    m->cy.clk.scale = 1.0;
#endif
    return &m->cy;
}

int prof_model_thread(prof_cycle *c, long tid, const char *name) {
    prof__model *m = prof__model_of(c);
    if (!m) return -1;
    size_t k = 0;
    while (k < c->nth && c->th[k].tid != tid) k++;
    if (k == c->nth) {
        struct prof__tinfo *th = (struct prof__tinfo *)prof__grow(c->th, &m->thcap, k + 1, sizeof *th);
        if (!th || k >= 0xFFFFFFFu) {
            c->oom = 1;                 /* prof_model_finish says so */
            return -1;
        }
        c->th = th;
        memset(&th[k], 0, sizeof th[k]);
        th[k].tid = tid;
        c->nth++;
    }
    if (name) c->th[k].name = name;
    return (int)k;
}

/* One record into the model; 0 when memory runs out. */
static int prof__model_rec(prof__model *m, uint32_t kind, const char *name, uint64_t t0, uint64_t t1, uint32_t aux,
                           uint32_t th) {
    prof__cycle *c = &m->cy;
    prof__ev e;
    e.name = name;
    e.t0 = t0;
    e.t1 = t1;
    e.aux = aux;
    e.kind = kind & 15u;
    e.th = th & 0xFFFFFFFu;
    prof__ev_append(&c->ev, &c->n, &c->cap, &e, &c->oom);
    return !c->oom;
}

static int prof__model_span(prof_cycle *c, int thread, uint32_t kind, const char *name, uint32_t aux, int64_t t0_ns,
                            int64_t t1_ns) {
    prof__model *m = prof__model_of(c);
    if (m) m->open = 0;                 /* arguments follow only the span they belong to */
    if (!m || thread < 0 || (size_t)thread >= c->nth || t0_ns < 0 || t1_ns < t0_ns) return 0;
    prof__munit *u = (prof__munit *)prof__grow(m->unit, &m->ucap, m->nunit + 1, sizeof *u);
    if (!u) {
        c->oom = 1;
        return 0;
    }
    m->unit = u;
    u += m->nunit;
    u->th = (uint32_t)thread;
    u->t0 = (uint64_t)t0_ns + 1;
    u->t1 = (uint64_t)t1_ns + 1;
    u->first = u->last = c->n;
    if (!prof__model_rec(m, kind, name, u->t0, u->t1, aux, u->th)) return 0;
    m->nunit++;
    m->open = 1;
    return 1;
}

int prof_model_region(prof_cycle *c, int thread, const char *name, int64_t t0_ns, int64_t t1_ns) {
    return prof__model_span(c, thread, PROF__K_REGION, name, 0, t0_ns, t1_ns);
}

int prof_model_gpu_region(prof_cycle *c, int thread, const char *name, uint32_t correlation, int64_t t0_ns,
                          int64_t t1_ns) {
    return prof__model_span(c, thread, PROF__K_GPU_REGION, name, correlation, t0_ns, t1_ns);
}

int prof_model_gpu(prof_cycle *c, const prof_gpu_event *g) {
    prof__model *m = prof__model_of(c);
    if (m) m->open = 0;
    if (!m || !g || g->ts_ns < 0 || g->dur_ns < 0) return 0;
    prof__gev *v = (prof__gev *)prof__grow(c->gpu, &m->gcap, c->ngpu + 1, sizeof *v);
    if (!v) {
        c->oom = 1;
        return 0;
    }
    c->gpu = v;
    v += c->ngpu++;
    memset(v, 0, sizeof *v);
    v->name = g->name;
    v->t0 = g->ts_ns + 1;               /* ticks, as the regions' */
    v->t1 = g->ts_ns + g->dur_ns + 1;
    v->corr = g->correlation;
    v->dev = g->device;
    v->stream = g->stream;
    return 1;
}

int prof_model_activity(prof_cycle *c, const prof_gpu_activity *a) {
    prof__model *m = prof__model_of(c);
    if (m) m->open = 0;
    if (!m || !a || a->kind < PROF_GPU_KERNEL || a->kind > PROF_GPU_SYNC || a->t0_ns < 0 || a->t1_ns < a->t0_ns)
        return 0;
    prof__gact *v = (prof__gact *)prof__grow(c->act, &m->acap, c->nact + 1, sizeof *v);
    if (!v) {
        c->oom = 1;
        return 0;
    }
    c->act = v;
    v += c->nact++;
    v->a = *a;
    v->t0 = (uint64_t)a->t0_ns + 1;
    v->t1 = (uint64_t)a->t1_ns + 1;
    v->tid = a->kind == PROF_GPU_RUNTIME ? (long)a->thread : 0;
    c->nact_api += a->kind == PROF_GPU_RUNTIME;
    return 1;
}

int prof_model_step(prof_cycle *c, int thread, int64_t number, int64_t t0_ns, int64_t t1_ns) {
    return number >= 0 && number <= UINT32_MAX &&
           prof__model_span(c, thread, PROF__K_STEP, NULL, (uint32_t)number, t0_ns, t1_ns);
}

static int prof__model_arg(prof_cycle *c, uint32_t kind, const char *key, uint64_t v) {
    prof__model *m = prof__model_of(c);
    if (!m || !m->open) return 0;
    prof__munit *u = &m->unit[m->nunit - 1];
    if (!prof__model_rec(m, kind, key, u->t0, v, 0, u->th)) return 0;
    u->last = c->n - 1;
    return 1;
}

int prof_model_arg_int(prof_cycle *c, const char *key, int64_t value) {
    return prof__model_arg(c, PROF__K_ARG_INT, key, (uint64_t)value);
}

int prof_model_arg_str(prof_cycle *c, const char *key, const char *value) {
    return prof__model_arg(c, PROF__K_ARG_STR, key, (uint64_t)(uintptr_t)value);
}

/* The recorder's order: by thread, a region when it ends (at one end, the
   inner one, which began later, first), the order of adding last. */
static int prof__munit_cmp(const void *pa, const void *pb) {
    const prof__munit *a = (const prof__munit *)pa, *b = (const prof__munit *)pb;
    if (a->th != b->th) return a->th < b->th ? -1 : 1;
    if (a->t1 != b->t1) return a->t1 < b->t1 ? -1 : 1;
    if (a->t0 != b->t0) return a->t0 > b->t0 ? -1 : 1;
    return (a->first > b->first) - (a->first < b->first);
}

int prof_model_step_energy(prof_cycle *c, int device, double joules, int share) {
    prof__model *m = prof__model_of(c);
    if (!m || !m->open || device < 0 || !(joules >= 0 && joules < 1e15)) return 0;
    const prof__munit *u = &m->unit[m->nunit - 1];
    if (c->ev[u->first].kind != PROF__K_STEP) return 0;
    prof__mjoule *v = (prof__mjoule *)prof__grow(m->en, &m->encap, m->nen + 1, sizeof *v);
    if (!v) return 0;
    m->en = v;
    v[m->nen].dev = device;
    v[m->nen].share = share != 0;
    v[m->nen].t0 = u->t0;
    v[m->nen].t1 = u->t1;
    v[m->nen++].j = joules;
    return 1;
}

static int prof__ctr_of(const char *name, long *tid);     /* >>counters */
static int prof__model_ctr(prof_cycle *c, const char *name, long tid, int64_t ts_ns, double value) {
    int th = prof_model_thread(c, tid, NULL);
    prof__model *m = prof__model_of(c);
    if (!m || th < 0) return 0;
    m->open = 0;
    prof__munit *u = (prof__munit *)prof__grow(m->unit, &m->ucap, m->nunit + 1, sizeof *u);
    if (!u) {
        c->oom = 1;
        return 0;
    }
    m->unit = u;
    u += m->nunit;
    u->th = (uint32_t)th;
    u->t0 = u->t1 = (uint64_t)ts_ns + 1;  /* a point: before the spans that end after it */
    u->first = u->last = c->n;
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    if (!prof__model_rec(m, PROF__K_COUNTER, name, u->t0, bits, 0, u->th)) return 0;
    m->nunit++;
    return 1;
}

int prof_model_count(prof_cycle *c, const char *name, int64_t ts_ns, double value) {
    long tid;
    if (ts_ns >= 0 && prof__ctr_of(name, &tid) >= 0) return prof__model_ctr(c, name, tid, ts_ns, value);
    prof__model *m = prof__model_of(c);
    int which = !name ? -1 : !strcmp(name, "tokens") ? 0 : !strcmp(name, "samples") ? 1 : -1;
    if (!m || which < 0 || ts_ns < 0) return m != NULL && ts_ns >= 0;
    prof__ecount *v = (prof__ecount *)prof__grow(m->cnt, &m->cntcap, m->ncnt + 1, sizeof *v);
    if (!v) return 0;
    m->cnt = v;
    v[m->ncnt].tick = (uint64_t)ts_ns + 1;
    v[m->ncnt].v = value;
    v[m->ncnt++].which = which;
    return 1;
}

static int prof__mjoule_cmp(const void *pa, const void *pb) {
    const prof__mjoule *a = (const prof__mjoule *)pa, *b = (const prof__mjoule *)pb;
    if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
    return a->t0 < b->t0 ? -1 : a->t0 > b->t0;
}

/* The model's steps' joules as knots at their ends: steps that touch share
   one; the time between two that do not is unknown (a gap). */
static int prof__model_energy(prof__model *m) {
    if (!m->nen) return 1;
    prof__ecy *en = (prof__ecy *)calloc(1, sizeof *en);
    if (!en) return 0;
    en->src = "the steps' joules of a saved trace";
    en->from_trace = 1;
    m->cy.en = en;
    en->cnt = m->cnt;                   /* the tokens go with the joules */
    en->ncnt = m->ncnt;
    m->cnt = NULL;
    m->ncnt = 0;
    qsort(m->en, m->nen, sizeof *m->en, prof__mjoule_cmp);
    for (size_t i = 0; i < m->nen;) {
        size_t e = i;
        while (e < m->nen && m->en[e].dev == m->en[i].dev) e++;
        if (en->nd < PROF__EN_DEVS) {
            prof__ecdev *d = &en->d[en->nd++];
            d->dev = m->en[i].dev;
            snprintf(d->key, sizeof d->key, "GPU %d energy (J)", d->dev);
            if (!(d->k = (prof__eknot *)calloc(2 * (e - i), sizeof *d->k))) return 0;
            double acc = 0;
            for (size_t k = i; k < e; k++) {
                if (!d->nk || d->k[d->nk - 1].tick != m->en[k].t0) {
                    d->k[d->nk].tick = m->en[k].t0;
                    d->k[d->nk].mj = (uint64_t)(acc + 0.5);
                    d->k[d->nk].gap = d->nk > 0;        /* between two steps that do not touch */
                    d->nk++;
                }
                acc += m->en[k].j * 1000.0;
                d->k[d->nk].tick = m->en[k].t1;
                d->k[d->nk].mj = (uint64_t)(acc + 0.5);
                d->k[d->nk++].gap = m->en[k].share ? 2 : 0;
            }
        }
        i = e;
    }
    return 1;
}

int prof_model_finish(prof_cycle *c) {
    prof__model *m = prof__model_of(c);
    if (!m || c->oom) return 0;
    m->open = 0;
    m->done = 1;
    if (!prof__model_energy(m)) return 0;
    if (m->nunit) qsort(m->unit, m->nunit, sizeof *m->unit, prof__munit_cmp);
    prof__ev *sorted = (prof__ev *)malloc((c->n + 1) * sizeof *sorted);
    if (!sorted) return 0;
    size_t o = 0;
    for (size_t u = 0; u < m->nunit; u++) {     /* its arguments, then itself */
        for (size_t i = m->unit[u].first + 1; i <= m->unit[u].last; i++) sorted[o++] = c->ev[i];
        sorted[o++] = c->ev[m->unit[u].first];
    }
    free(c->ev);
    c->ev = sorted;
    c->n = c->cap = o;
    m->nunit = 0;
    /* GPU records in the recorder's order: regions by device, stream, start;
       runtime calls by thread, then the rest by device and stream */
    if (c->ngpu) qsort(c->gpu, c->ngpu, sizeof *c->gpu, prof__gev_cmp);
    if (c->nact) qsort(c->act, c->nact, sizeof *c->act, prof__gact_cmp);
    return prof__analyse(c);
}

void prof_cycle_free(prof_cycle *c) {
    prof__model *m = c && c->model ? (prof__model *)(void *)c : NULL;
    if (!m) return;                     /* the recorder's cycles are its own */
    prof__cycle_free(c);
    free(m->unit);
    free(m->en);
    free(m->cnt);
    free(m);
}

/* ---- >>wbuf  the writers' buffer size, which >>gzip's blocks use ------- */

/* Writes through a 1 MiB buffer with slack behind it, so an event's fixed-size
   pieces are stored with whole-word copies and one space check per event. */
#endif /* PROF__BODIES */
#define PROF__WBUF  (1u << 20)
#define PROF__SLACK 4096u
#if PROF__BODIES

/* ---- >>gzip  sink: gzip for .json.gz, no zlib -------------------------- */

#ifdef PROF_ZLIB
/* With -DPROF_ZLIB (and -lz) zlib writes the stream instead, at level
   PROF_ZLIB_LEVEL (1): on the suite's traces level 1 is 6% larger than the
   deflate below, level 6 20% smaller and slower. The same four calls as
   below. */
#include <zlib.h>
#ifndef PROF_ZLIB_LEVEL
#define PROF_ZLIB_LEVEL 1
#endif

typedef struct prof__gz {
    z_stream s;
    unsigned char *out;                 /* compressed bytes of one flush */
    size_t nout, cap;
    int ok;
} prof__gz;

static void prof__gz_run(prof__gz *z, int flush) {
    z->nout = 0;
    do {
        z->s.next_out = z->out + z->nout;
        z->s.avail_out = (uInt)(z->cap - z->nout);
        if (deflate(&z->s, flush) == Z_STREAM_ERROR) { z->ok = 0; return; }
        z->nout = z->cap - z->s.avail_out;
    } while (z->s.avail_out == 0 && z->nout < z->cap);
}

static int prof__gz_start(prof__gz *z, FILE *f) {
    (void)f;                            /* zlib writes gzip's header itself */
    memset(z, 0, sizeof *z);
    if (deflateInit2(&z->s, PROF_ZLIB_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    z->ok = 1;
    z->cap = deflateBound(&z->s, PROF__WBUF) + 64;
    return (z->out = (unsigned char *)malloc(z->cap)) != NULL;
}

static void prof__gz_block(prof__gz *z, const unsigned char *in, size_t n) {
    z->s.next_in = (Bytef *)(uintptr_t)in;     /* zlib's API is not const */
    z->s.avail_in = (uInt)n;
    prof__gz_run(z, Z_NO_FLUSH);
    if (z->s.avail_in) z->ok = 0;       /* the room deflateBound promised was not enough */
}

static void prof__gz_end(prof__gz *z) { prof__gz_run(z, Z_FINISH); }

static void prof__gz_free(prof__gz *z) {
    if (z->ok || z->out) deflateEnd(&z->s);
    free(z->out);
}
#else

/* A deflate stream (RFC 1951) in gzip's wrapper (RFC 1952), written as the
   JSON writer flushes its buffer: LZ77 over each flushed megabyte (a 32 KiB
   window, a hash chain probed 8 deep, greedy matches), then one block coded
   with Huffman codes made for it, or deflate's fixed codes where those come
   out smaller (a block of a few bytes). Traces repeat their keys and names
   event after event, which the matches take; a match's own positions are
   not hashed when it is long (what follows it is found from where it
   began, as zlib's fastest level does): most of the work, little of the
   size, which the block's own codes more than win back. Every reader of
   traces reads it: Perfetto, HTA, the TensorBoard plugin. */
#define PROF__GZ_HBITS  15
#define PROF__GZ_WIN    32768
#define PROF__GZ_PROBES 8
#define PROF__GZ_INSERT 8               /* a match's positions hashed up to this length */

/* Where deflate's length and distance codes begin (RFC 1951, 3.2.5), and
   how many extra bits follow each. */
static const uint16_t prof__gz_lbase[29] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                             35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
static const uint16_t prof__gz_dbase[30] = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385,
                                             513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385,
                                             24577 };
static const uint8_t prof__gz_lext[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                           3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
static const uint8_t prof__gz_dext[30] = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                           7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };

typedef struct prof__gz_code {          /* one block's codes: bit-reversed for the stream */
    uint16_t code[288];                 /* literals and lengths: [0, 288) */
    uint8_t len[288];
    uint16_t dcode[30];                 /* distances */
    uint8_t dlen[30];
} prof__gz_code;

typedef struct prof__gz {
    uint64_t bits;                      /* pending output bits, LSB first (fewer than 32) */
    unsigned nbits;
    uint32_t crc;
    uint32_t isize;                     /* input size mod 2^32 */
    int32_t *head;                      /* hash -> last position, -1 none */
    int32_t *prev;                      /* position -> previous with its hash */
    uint32_t *syms;                     /* a block's parse: a literal, or dist << 16 | length */
    unsigned char *out;                 /* compressed bytes of one flush */
    size_t nout;
    prof__gz_code fixed, dyn;
    uint8_t lcode[259];                 /* match length 3..258 -> its length code */
    uint8_t dcode[512];                 /* distance -> its code: [d] up to 256, else [256 + (d - 1) / 128] */
    uint32_t crc_table[8][256];         /* per stream: writers of two cycles share nothing */
} prof__gz;

/* Loads and stores in the machine's order: little-endian ones take words
   at a time (>>gzip, >>perfetto). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define PROF__LE 1
#else
#define PROF__LE 0
#endif

/* CRC-32, eight bytes a step where the machine is little-endian (each of
   the eight tables advances a byte through the rest of the step). */
static uint32_t prof__crc32(const prof__gz *z, uint32_t crc, const unsigned char *p, size_t n) {
    const uint32_t (*t)[256] = z->crc_table;
    crc = ~crc;
#if PROF__LE
    for (; n >= 8; p += 8, n -= 8) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + 4, 4);
        a ^= crc;
        crc = t[7][a & 0xff] ^ t[6][(a >> 8) & 0xff] ^ t[5][(a >> 16) & 0xff] ^ t[4][a >> 24] ^
              t[3][b & 0xff] ^ t[2][(b >> 8) & 0xff] ^ t[1][(b >> 16) & 0xff] ^ t[0][b >> 24];
    }
#endif
    while (n--) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* n (at most 32) bits of v into the stream; whole 32-bit words go out. */
PROF__INLINE void prof__gz_bits(prof__gz *z, uint64_t v, unsigned n) {
    z->bits |= v << z->nbits;
    z->nbits += n;
    if (z->nbits >= 32) {
        unsigned char *o = z->out + z->nout;
        o[0] = (unsigned char)z->bits;
        o[1] = (unsigned char)(z->bits >> 8);
        o[2] = (unsigned char)(z->bits >> 16);
        o[3] = (unsigned char)(z->bits >> 24);
        z->nout += 4;
        z->bits >>= 32;
        z->nbits -= 32;
    }
}

/* The whole bytes of what is pending, out (a flush's end). */
static void prof__gz_bytes(prof__gz *z) {
    for (; z->nbits >= 8; z->nbits -= 8, z->bits >>= 8) z->out[z->nout++] = (unsigned char)z->bits;
}

/* Huffman codes go most significant bit first into an LSB-first stream. */
static uint32_t prof__gz_rev(uint32_t code, unsigned n) {
    uint32_t r = 0;
    for (unsigned i = 0; i < n; i++) r |= ((code >> i) & 1u) << (n - 1 - i);
    return r;
}

/* Canonical codes (RFC 1951, 3.2.2) of n symbols from their lengths. */
static void prof__gz_canon(const uint8_t *len, uint16_t *code, unsigned n) {
    unsigned count[16] = { 0 }, next[16];
    for (unsigned s = 0; s < n; s++) count[len[s]]++;
    count[0] = 0;
    next[0] = 0;
    for (unsigned b = 1, c = 0; b < 16; b++) next[b] = c = (c + count[b - 1]) << 1;
    for (unsigned s = 0; s < n; s++) code[s] = len[s] ? (uint16_t)prof__gz_rev(next[len[s]]++, len[s]) : 0;
}

/* Huffman code lengths for n (at most 288) symbols' counts, none longer than
   max: a tree built from the two least frequent (leaves sorted, inner nodes
   queued as they are made); too deep, the counts are halved (kept above 0)
   and it is built again. Symbols never seen get length 0; at least two
   symbols get a code (a lone one is given a partner), which every inflater
   takes. */
static void prof__gz_lengths(const uint32_t *freq, unsigned n, unsigned max, uint8_t *len) {
    uint32_t f[288], w[576];
    uint16_t leaf[288], par[576];
    unsigned m = 0;
    for (unsigned s = 0; s < n; s++) f[s] = freq[s];
    for (unsigned s = 0; s < n && m < 2; s++) m += f[s] != 0;
    for (unsigned s = 0; m < 2 && s < n; s++) if (!f[s]) { f[s] = 1; m++; }
    for (;;) {
        m = 0;
        for (unsigned s = 0; s < n; s++) {
            len[s] = 0;
            if (!f[s]) continue;
            unsigned j = m++;           /* insertion sort by count: n is small */
            for (; j && f[leaf[j - 1]] > f[s]; j--) leaf[j] = leaf[j - 1];
            leaf[j] = (uint16_t)s;
        }
        /* nodes: [0, m) the leaves in order, [m, 2m - 1) inner ones as made */
        for (unsigned j = 0; j < m; j++) w[j] = f[leaf[j]];
        unsigned li = 0, ii = m, nn = m;
        for (; nn < 2 * m - 1; nn++) {
            unsigned pick[2];
            for (int k = 0; k < 2; k++)
                pick[k] = li < m && (ii >= nn || w[li] <= w[ii]) ? li++ : ii++;
            w[nn] = w[pick[0]] + w[pick[1]];
            par[pick[0]] = par[pick[1]] = (uint16_t)nn;
        }
        unsigned depth[576], deepest = 0;
        depth[2 * m - 2] = 0;
        for (unsigned j = 2 * m - 2; j-- > 0;) {
            depth[j] = depth[par[j]] + 1;
            if (depth[j] > deepest) deepest = depth[j];
        }
        if (deepest <= max) {
            for (unsigned j = 0; j < m; j++) len[leaf[j]] = (uint8_t)depth[j];
            return;
        }
        for (unsigned s = 0; s < n; s++) if (f[s]) f[s] = (f[s] >> 1) | 1;
    }
}

/* The fixed codes (RFC 1951, 3.2.6), deflate's tables, and CRC-32's. */
static void prof__gz_tables(prof__gz *z) {
    for (unsigned s = 0; s < 288; s++) z->fixed.len[s] = (uint8_t)(s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8);
    for (unsigned d = 0; d < 30; d++) z->fixed.dlen[d] = 5;
    prof__gz_canon(z->fixed.len, z->fixed.code, 288);
    prof__gz_canon(z->fixed.dlen, z->fixed.dcode, 30);
    for (unsigned len = 3, l = 0; len <= 258; len++) {
        while (l < 28 && prof__gz_lbase[l + 1] <= len) l++;
        z->lcode[len] = (uint8_t)l;
    }
    for (unsigned dist = 1, d = 0; dist <= 32768; dist++) {
        while (d < 29 && prof__gz_dbase[d + 1] <= dist) d++;
        z->dcode[dist <= 256 ? dist : 256 + ((dist - 1) >> 7)] = (uint8_t)d;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        z->crc_table[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (uint32_t i = 0; i < 256; i++)
            z->crc_table[k][i] = (z->crc_table[k - 1][i] >> 8) ^ z->crc_table[0][z->crc_table[k - 1][i] & 0xff];
}

static unsigned prof__gz_dsym(const prof__gz *z, unsigned dist) {
    return z->dcode[dist <= 256 ? dist : 256 + ((dist - 1) >> 7)];
}

/* The hash of the 3 bytes at p. Little-endian, a word's load: the 4th byte
   (within the writer's buffer and its slack, whatever it holds) is masked. */
static uint32_t prof__gz_hash(const unsigned char *p) {
#if PROF__LE
    uint32_t v;
    memcpy(&v, p, 4);
    v &= 0xFFFFFFu;
#else
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
#endif
    return (v * 2654435761u) >> (32 - PROF__GZ_HBITS);
}

/* How many of the first max bytes of a and b agree: eight at a time where
   words load little-endian (the first differing byte is the lowest set). */
static unsigned prof__gz_len(const unsigned char *a, const unsigned char *b, unsigned max) {
    unsigned len = 0;
#if PROF__LE
    for (; len + 8 <= max; len += 8) {
        uint64_t x, y;
        memcpy(&x, a + len, 8);
        memcpy(&y, b + len, 8);
        if (x != y) return len + (unsigned)(__builtin_ctzll(x ^ y) >> 3);
    }
#endif
    while (len < max && a[len] == b[len]) len++;
    return len;
}

/* LZ77 over in[0, n): the parse into z->syms, its symbols counted into
   lf[286] and df[30]. Returns the number of symbols. */
static size_t prof__gz_parse(prof__gz *z, const unsigned char *in, size_t n, uint32_t *lf, uint32_t *df) {
    int32_t *head = z->head, *prev = z->prev;
    uint32_t *sy = z->syms;
    size_t ns = 0, i = 0;
    for (size_t k = 0; k < (size_t)1 << PROF__GZ_HBITS; k++) head[k] = -1;
    while (i < n) {
        unsigned best = 0, dist = 0;
        if (i + 3 <= n) {
            uint32_t h = prof__gz_hash(in + i);
            int32_t cand = head[h];
            size_t max = n - i < 258 ? n - i : 258;
            for (int probe = 0; cand >= 0 && probe < PROF__GZ_PROBES && i - (size_t)cand <= PROF__GZ_WIN; probe++) {
                const unsigned char *a = in + cand, *b = in + i;
                if (a[best] == b[best]) {       /* can it beat the best so far? */
                    unsigned len = prof__gz_len(a, b, (unsigned)max);
                    if (len > best) { best = len; dist = (unsigned)(i - (size_t)cand); if (len == max) break; }
                }
                cand = prev[cand];
            }
            prev[i] = head[h];
            head[h] = (int32_t)i;
        }
        if (best >= 3) {
            sy[ns++] = (uint32_t)dist << 16 | best;
            lf[257 + z->lcode[best]]++;
            df[prof__gz_dsym(z, dist)]++;
            if (best <= PROF__GZ_INSERT) {
                size_t end = i + best < n - 2 ? i + best : n - 2;  /* its positions with 3 bytes, hashed */
                for (size_t k = i + 1; k < end; k++) {
                    uint32_t h = prof__gz_hash(in + k);
                    prev[k] = head[h];
                    head[h] = (int32_t)k;
                }
            }
            i += best;
        } else {
            lf[in[i]]++;
            sy[ns++] = in[i++];
        }
    }
    lf[256] = 1;                        /* the end of the block */
    return ns;
}

/* The bits the parse takes in codes c, extra bits included. */
static uint64_t prof__gz_cost(const prof__gz_code *c, const uint32_t *lf, const uint32_t *df) {
    uint64_t bits = 0;
    for (unsigned s = 0; s < 286; s++) bits += (uint64_t)lf[s] * (c->len[s] + (s > 256 ? prof__gz_lext[s - 257] : 0));
    for (unsigned d = 0; d < 30; d++) bits += (uint64_t)df[d] * (c->dlen[d] + prof__gz_dext[d]);
    return bits;
}

/* The block's own codes into z->dyn, and their description (RFC 1951,
   3.2.7) written into hdr (at most 320 entries: a code-length symbol | its
   extra bits << 8), hcl the code-length code's lengths. Returns the header's
   size in bits; *nh, *nlit, *ndist, *nhcl what it holds. */
static const uint8_t prof__gz_clorder[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };

static uint64_t prof__gz_dynamic(prof__gz *z, const uint32_t *lf, const uint32_t *df, uint16_t *hdr, size_t *nh,
                                 unsigned *nlit, unsigned *ndist, unsigned *nhcl, uint8_t *hcl, uint16_t *hcc) {
    uint8_t all[286 + 30];
    uint32_t cf[19] = { 0 };
    prof__gz_lengths(lf, 286, 15, z->dyn.len);
    prof__gz_lengths(df, 30, 15, z->dyn.dlen);
    prof__gz_canon(z->dyn.len, z->dyn.code, 286);
    prof__gz_canon(z->dyn.dlen, z->dyn.dcode, 30);
    unsigned nl = 286, nd = 30;
    while (nl > 257 && !z->dyn.len[nl - 1]) nl--;
    while (nd > 1 && !z->dyn.dlen[nd - 1]) nd--;
    memcpy(all, z->dyn.len, nl);
    memcpy(all + nl, z->dyn.dlen, nd);
    size_t h = 0, total = nl + nd;
    for (size_t i = 0; i < total;) {   /* runs: 16 repeats the last, 17 and 18 zeros */
        size_t r = 1;
        while (i + r < total && all[i + r] == all[i]) r++;
        if (all[i] == 0 && r >= 3) {
            if (r > 138) r = 138;
            hdr[h++] = r <= 10 ? (uint16_t)(17 | (r - 3) << 8) : (uint16_t)(18 | (r - 11) << 8);
        } else if (i && all[i] == all[i - 1] && r >= 3) {
            if (r > 6) r = 6;
            hdr[h++] = (uint16_t)(16 | (r - 3) << 8);
        } else {
            r = 1;
            hdr[h++] = all[i];
        }
        cf[hdr[h - 1] & 0xff]++;
        i += r;
    }
    prof__gz_lengths(cf, 19, 7, hcl);
    prof__gz_canon(hcl, hcc, 19);
    unsigned nc = 19;
    while (nc > 4 && !hcl[prof__gz_clorder[nc - 1]]) nc--;
    uint64_t bits = 5 + 5 + 4 + 3 * nc;
    for (size_t k = 0; k < h; k++) {
        unsigned s = hdr[k] & 0xff;
        bits += hcl[s] + (s == 16 ? 2 : s == 17 ? 3 : s == 18 ? 7 : 0);
    }
    *nh = h;
    *nlit = nl;
    *ndist = nd;
    *nhcl = nc;
    return bits;
}

/* Compresses n bytes as one deflate block (not the last) into z->out:
   room for n * 9 / 8 + 64 bytes (a block's own codes are written only
   where they come out smaller than the fixed ones). */
static void prof__gz_block(prof__gz *z, const unsigned char *in, size_t n) {
    uint32_t lf[286] = { 0 }, df[30] = { 0 };
    uint16_t hdr[320], hcc[19];
    uint8_t hcl[19];
    size_t nh;
    unsigned nl, nd, nc;
    z->crc = prof__crc32(z, z->crc, in, n);
    z->isize += (uint32_t)n;
    z->nout = 0;
    size_t ns = prof__gz_parse(z, in, n, lf, df);
    uint64_t dyn = prof__gz_dynamic(z, lf, df, hdr, &nh, &nl, &nd, &nc, hcl, hcc) + prof__gz_cost(&z->dyn, lf, df);
    const prof__gz_code *c = &z->fixed;
    if (dyn < prof__gz_cost(&z->fixed, lf, df)) {
        c = &z->dyn;
        prof__gz_bits(z, 0 | 2 << 1, 3);        /* BFINAL 0, BTYPE 10: codes of its own */
        prof__gz_bits(z, nl - 257, 5);
        prof__gz_bits(z, nd - 1, 5);
        prof__gz_bits(z, nc - 4, 4);
        for (unsigned k = 0; k < nc; k++) prof__gz_bits(z, hcl[prof__gz_clorder[k]], 3);
        for (size_t k = 0; k < nh; k++) {
            unsigned s = hdr[k] & 0xff, x = hdr[k] >> 8;
            prof__gz_bits(z, hcc[s], hcl[s]);
            if (s >= 16) prof__gz_bits(z, x, s == 16 ? 2 : s == 17 ? 3 : 7);
        }
    } else {
        prof__gz_bits(z, 0 | 1 << 1, 3);        /* BFINAL 0, BTYPE 01: the fixed codes */
    }
    for (size_t k = 0; k < ns; k++) {
        uint32_t v = z->syms[k];
        if (v < 256) {
            prof__gz_bits(z, c->code[v], c->len[v]);
            continue;
        }
        unsigned len = v & 0xffff, dist = v >> 16, l = z->lcode[len], d = prof__gz_dsym(z, dist);
        /* length code and extra bits (at most 15 + 5), then distance's (15 + 13) */
        prof__gz_bits(z, c->code[257 + l] | (uint64_t)(len - prof__gz_lbase[l]) << c->len[257 + l],
                      c->len[257 + l] + prof__gz_lext[l]);
        prof__gz_bits(z, c->dcode[d] | (uint64_t)(dist - prof__gz_dbase[d]) << c->dlen[d],
                      c->dlen[d] + prof__gz_dext[d]);
    }
    prof__gz_bits(z, c->code[256], c->len[256]);    /* end of block */
    prof__gz_bytes(z);
}

/* The stream's start: gzip's header, then the state. 0: out of memory. */
static int prof__gz_start(prof__gz *z, FILE *f) {
    static const unsigned char head[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };  /* deflate, Unix */
    memset(z, 0, sizeof *z);
    prof__gz_tables(z);
    z->head = (int32_t *)malloc(((size_t)1 << PROF__GZ_HBITS) * sizeof *z->head);
    z->prev = (int32_t *)malloc(PROF__WBUF * sizeof *z->prev);
    z->syms = (uint32_t *)malloc(PROF__WBUF * sizeof *z->syms);
    z->out = (unsigned char *)malloc(PROF__WBUF + PROF__WBUF / 8 + 64);
    return z->head && z->prev && z->syms && z->out && fwrite(head, 1, sizeof head, f) == sizeof head;
}

/* The last (empty) block, the bits left, CRC-32 and size: into z->out. */
static void prof__gz_end(prof__gz *z) {
    z->nout = 0;
    prof__gz_bits(z, 1 | 1 << 1, 3);    /* BFINAL, BTYPE 01 */
    prof__gz_bits(z, z->fixed.code[256], z->fixed.len[256]);
    prof__gz_bytes(z);
    if (z->nbits) prof__gz_bits(z, 0, 8 - z->nbits);
    prof__gz_bytes(z);
    for (int i = 0; i < 4; i++) z->out[z->nout++] = (unsigned char)(z->crc >> (8 * i));
    for (int i = 0; i < 4; i++) z->out[z->nout++] = (unsigned char)(z->isize >> (8 * i));
}

static void prof__gz_free(prof__gz *z) { free(z->head); free(z->prev); free(z->syms); free(z->out); }
#endif /* PROF_ZLIB */

/* ---- >>write  what the sinks share: buffer, whole files, escaping ------ */

/* Whether a path asks for gzip: it ends in ".gz". */
static int prof__is_gz(const char *path) {
    size_t n = strlen(path);
    return n > 3 && !strcmp(path + n - 3, ".gz");
}

/* The trace formats, one row each: name (PROF_FORMAT, cfg.format), the
   extensions that ask for it, its default file, whether cycles stream into
   one file (parts written as steps go, >>output), its writer. A path whose
   extension no row has is JSON's, the first row. */
#endif /* PROF__BODIES */
#define PROF__FORMATS(X)                                                                                   \
    X(JSON,     "json",     ".json",    "",                "prof_trace_{pid}.json",    0, prof__write_json)    \
    X(GZ,       "json.gz",  ".json.gz", ".gz",             "prof_trace_{pid}.json.gz", 0, prof__write_json_gz) \
    X(PERFETTO, "perfetto", ".pftrace", ".perfetto-trace", "prof_trace_{pid}.pftrace", 1, prof__write_pftrace)
#define PROF__FMT_ENUM(id, name, ext, ext2, file, streams, writer) PROF__FMT_##id,
enum { PROF__FORMATS(PROF__FMT_ENUM) PROF__NFMT };
/* A writer: the cycle to path; as_ops: see prof__write_trace_as; *nev: events written. */
typedef int prof__writer_fn(const struct prof__cycle *cy, const char *path, int as_ops, size_t *nev);
struct prof__format {
    const char *name, *ext[2], *file;
    int streams;
    prof__writer_fn *write;
};
#ifdef PROF_INTERNALS
extern PROF__SHARED const struct prof__format prof__fmt[PROF__NFMT];
#endif
#if PROF__BODIES
#define PROF__FMT_DECL(id, name, ext, ext2, file, streams, writer) static prof__writer_fn writer;
PROF__FORMATS(PROF__FMT_DECL)
#define PROF__FMT_ROW(id, name, ext, ext2, file, streams, writer) { name, { ext, ext2 }, file, streams, writer },
PROF__SHARED_DEF const struct prof__format prof__fmt[PROF__NFMT] = { PROF__FORMATS(PROF__FMT_ROW) };

PROF__SHARED int prof__path_format(const char *path) {
    size_t n = strlen(path);
    for (int i = PROF__NFMT - 1; i > 0; i--)
        for (int k = 0; k < 2; k++) {
            size_t m = strlen(prof__fmt[i].ext[k]);
            if (m && n > m && !strcmp(path + n - m, prof__fmt[i].ext[k])) return i;
        }
    return PROF__FMT_JSON;
}

/* PROF_FORMAT's names, as a message lists them: "json, json.gz or perfetto". */
PROF__COLD static const char *prof__fmt_forms(void) {
    static char list[128];
    size_t n = 0;
    for (int i = 0; i < PROF__NFMT; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i == 0 ? "" : i + 1 < PROF__NFMT ? ", " : " or ",
                              prof__fmt[i].name);
    return list;
}

/* What a bad PROF_OUTPUT is replaced by: "using <fmt's default file>". */
PROF__COLD static const char *prof__fmt_instead(int fmt) {
    static char line[64];
    snprintf(line, sizeof line, "using %s", prof__fmt[fmt >= 0 ? fmt : PROF__FMT_JSON].file);
    return line;
}

/* PROF_FORMAT's parser (a SPEC of the options' table): a name, or "" for
   the output's extension. */
PROF__COLD static int prof__spec_format(const char *s, void *out) {
    for (int i = 0; i < PROF__NFMT; i++)
        if (!*s || !strcmp(s, prof__fmt[i].name)) {
            *(prof__opt_format *)out = *s ? i : -1;
            return 1;
        }
    return 0;
}

/* Names are pointers, and an engine has few distinct ones: what a sink
   derives from one (its escaped form, an interning id) is kept in a table
   keyed by the pointer, open addressing, two values per slot (one line of
   the table holds the key and both). */
#endif /* PROF__BODIES */
typedef struct prof__nslot {
    const char *key;
    uint32_t off, len;
} prof__nslot;

typedef struct prof__names {
    prof__nslot *s;
    size_t slots, used;
} prof__names;

typedef struct prof__w {
    FILE *f;
    struct prof__gz *gz;                /* .json.gz: compressed as it is flushed */
    char *buf;
    size_t n;
    int errnum;                         /* errno of the first failed write */
    int err;
    prof__names nm;                     /* escaped names: pointer -> [off, off + len) of arena */
    char *arena;
    size_t an, acap;
} prof__w;
#if PROF__BODIES

PROF__SHARED void prof__w_flush(prof__w *w) {
    const void *p = w->buf;
    size_t n = w->n;
    if (n && w->gz) {
        prof__gz_block(w->gz, (const unsigned char *)w->buf, n);
        p = w->gz->out;
        n = w->gz->nout;
    }
    if (n && fwrite(p, 1, n, w->f) != n && !w->err) { w->err = 1; w->errnum = errno; }
    w->n = 0;
}

/* Output files appear whole or not at all: each is written to a temporary
   beside it ("<path>.tmp<pid>", same directory, so the rename is atomic)
   and renamed over path once complete. A write that fails (a full disk, a
   kill in the middle) leaves whatever good file was at path. */
static FILE *prof__out_open(const char *path, char *tmp, size_t cap, const char *what) {
    int n = snprintf(tmp, cap, "%s.tmp%ld", path, (long)getpid());
    FILE *f = n > 0 && (size_t)n < cap ? fopen(tmp, "wb") : NULL;
    /* Unbuffered (the writers buffer themselves): exit() in another thread
       flushes every stream without its lock, and would write a buffer this
       thread writes too, twice. */
    if (f) setvbuf(f, NULL, _IONBF, 0);
    if (!f) prof__msg("cannot write %s '%s': %s", what, path, n > 0 && (size_t)n < cap ? strerror(errno)
                                                                                      : "path too long");
    return f;
}

/* Closes f; on success renames tmp to path, else removes it and says why
   (errnum: the error of the failed write, 0 if none seen). 1 on success. */
static int prof__out_close(FILE *f, const char *tmp, const char *path, int ok, int errnum, const char *what) {
    if (fflush(f) != 0 || ferror(f)) { if (ok) errnum = errno; ok = 0; }
    if (fclose(f) != 0) { if (ok) errnum = errno; ok = 0; }
    if (ok && rename(tmp, path) != 0) { errnum = errno; ok = 0; }
    if (!ok) {
        remove(tmp);
        prof__msg("failed writing %s '%s': %s; a file there before is left as it was", what, path,
                  errnum ? strerror(errnum) : "out of memory");
    }
    return ok;
}

/* Room for need more bytes (at most PROF__WBUF / 2: longer pieces go through
   prof__w_put), plus the slack the word copies may overrun. */
PROF__INLINE char *prof__w_room(prof__w *w, size_t need) {
    if (w->n + need > PROF__WBUF) prof__w_flush(w);
    return w->buf + w->n;
}

PROF__SHARED void prof__w_put(prof__w *w, const char *s, size_t n) {
    while (n) {
        size_t k = n < PROF__WBUF ? n : PROF__WBUF;
        memcpy(prof__w_room(w, k), s, k);
        w->n += k;
        s += k;
        n -= k;
    }
}

#define PROF__W_LIT(w, s) prof__w_put((w), "" s, sizeof(s) - 1) /* "" s: literals only */

/* Copies n bytes in 16-byte words, the first always (most names are
   shorter); both sides have 16 bytes of slack behind them. */
static char *prof__copy16(char *o, const char *s, size_t n) {
    memcpy(o, s, 16);
    for (size_t i = 16; i < n; i += 16) memcpy(o + i, s + i, 16);
    return o + n;
}

static const char prof__dig2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Decimal digits of v, two at a time, into o (24 bytes of room). */
static char *prof__fmt_u64(char *o, uint64_t v) {
    char tmp[48];
    char *e = tmp + 24, *p = e;
    while (v >= 100) { p -= 2; memcpy(p, prof__dig2 + 2 * (v % 100), 2); v /= 100; }
    if (v >= 10) { p -= 2; memcpy(p, prof__dig2 + 2 * v, 2); }
    else *--p = (char)('0' + v);
    memcpy(o, p, 24);                   /* fixed size: reads into tmp's upper half */
    return o + (e - p);
}

static char *prof__fmt_i64(char *o, int64_t v) {
    if (v < 0) { *o++ = '-'; return prof__fmt_u64(o, (uint64_t)0 - (uint64_t)v); }
    return prof__fmt_u64(o, (uint64_t)v);
}

/* Nanoseconds as microseconds with 3 decimals: exact, and what Kineto writes. */
PROF__SHARED char *prof__fmt_us(char *o, int64_t ns) {
    uint64_t v = (uint64_t)ns;
    if (ns < 0) { *o++ = '-'; v = (uint64_t)0 - v; }
    uint32_t frac = (uint32_t)(v % 1000);
    o = prof__fmt_u64(o, v / 1000);
    o[0] = '.';
    o[1] = (char)('0' + frac / 100);
    memcpy(o + 2, prof__dig2 + 2 * (frac % 100), 2);
    return o + 4;
}

PROF__SHARED void prof__w_i64(prof__w *w, int64_t v) {
    w->n = (size_t)(prof__fmt_i64(prof__w_room(w, 32), v) - w->buf);
}

static void prof__w_double(prof__w *w, double v) {
    char tmp[40];
    if (v != v || v - v != 0) { PROF__W_LIT(w, "null"); return; } /* NaN, inf */
    int n = snprintf(tmp, sizeof tmp, "%.17g", v);
    prof__w_put(w, tmp, (size_t)n);
}

static int prof__arena_grow(prof__w *w, size_t need) {
    /* + 16: prof__copy16 reads past the end */
    char *a = (char *)prof__grow(w->arena, &w->acap, w->an + need + 16, 1);
    if (!a) return 0;
    w->arena = a;
    return 1;
}

/* The length of the valid multi-byte UTF-8 sequence at p, or 0: checks the
   length, continuation bytes (a NUL ends the check), overlongs, surrogates. */
static int prof__utf8_seq(const unsigned char *p) {
    unsigned c = *p;
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    int ok = len > 0 && c <= 0xF4;
    for (int i = 1; ok && i < len; i++) ok = (p[i] & 0xC0) == 0x80;
    if (ok && len == 3) ok = !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] >= 0xA0);
    if (ok && len == 4) ok = !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] >= 0x90);
    return ok ? len : 0;
}

/* Appends s as a JSON string (quotes included) to the arena. Any bytes give
   valid JSON: control characters are escaped and invalid UTF-8 becomes U+FFFD. */
static void prof__escape(prof__w *w, const char *s) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s ? s : "(null)");
    size_t n = strlen((const char *)p);
    if (!prof__arena_grow(w, n * 6 + 2)) { w->err = 1; return; }
    char *o = w->arena + w->an;
    *o++ = '"';
    while (*p) {
        unsigned c = *p;
        if (c < 0x80) {
            if (c == '"' || c == '\\') { *o++ = '\\'; *o++ = (char)c; }
            else if (c < 0x20) {
                *o++ = '\\'; *o++ = 'u'; *o++ = '0'; *o++ = '0';
                *o++ = hex[c >> 4]; *o++ = hex[c & 15];
            } else *o++ = (char)c;
            p++;
            continue;
        }
        int len = prof__utf8_seq(p);
        if (len) { memcpy(o, p, (size_t)len); o += len; p += len; }
        else { memcpy(o, "\xEF\xBF\xBD", 3); o += 3; p++; }
    }
    *o++ = '"';
    w->an = (size_t)(o - w->arena);
}

static uint32_t prof__hash(const void *p) { return (uint32_t)(prof__hash_ptr(p) >> 32); }

static int prof__names_grow(prof__names *t) {
    size_t slots = t->slots ? t->slots * 2 : 1024;
    prof__nslot *ns = (prof__nslot *)calloc(slots, sizeof *ns);
    if (!ns) return 0;
    for (size_t i = 0; i < t->slots; i++) {
        if (!t->s[i].key) continue;
        size_t j = prof__hash(t->s[i].key) & (slots - 1);
        while (ns[j].key) j = (j + 1) & (slots - 1);
        ns[j] = t->s[i];
    }
    free(t->s);
    t->s = ns;
    t->slots = slots;
    return 1;
}

/* The slot of key k, or of the free slot where it goes (*fresh = 1, the
   key stored, its values for the caller to fill); -1 when out of memory. */
static ptrdiff_t prof__names_slot(prof__names *t, const char *k, int *fresh) {
    if (t->used * 2 >= t->slots && !prof__names_grow(t)) return -1;
    size_t j = prof__hash(k) & (t->slots - 1);
    while (t->s[j].key && t->s[j].key != k) j = (j + 1) & (t->slots - 1);
    *fresh = !t->s[j].key;
    if (*fresh) { t->s[j].key = k; t->used++; }
    return (ptrdiff_t)j;
}

static void prof__names_free(prof__names *t) { free(t->s); }

/* The escaped form of the string at p, escaped the first time p is seen:
   names are pointers, and an engine has few distinct ones. */
static const char *prof__name_ref(prof__w *w, const char *p, uint32_t *len) {
    static const char null_key[] = "(null)";
    int fresh;
    ptrdiff_t j = prof__names_slot(&w->nm, p ? p : null_key, &fresh);
    if (j < 0) { w->err = 1; return NULL; }
    if (fresh) {
        size_t start = w->an;
        prof__escape(w, p);
        w->nm.s[j].off = (uint32_t)start;
        w->nm.s[j].len = (uint32_t)(w->an - start);
        if (w->err) { w->nm.s[j].len = 0; return NULL; }
    }
    *len = w->nm.s[j].len;
    return w->arena + w->nm.s[j].off;
}

static void prof__w_name(prof__w *w, const char *p) {
    uint32_t len;
    const char *s = prof__name_ref(w, p, &len);
    if (s) prof__w_put(w, s, len);
}

/* A one-off string (path, process name): escaped, written, not cached. */
PROF__SHARED void prof__w_str(prof__w *w, const char *s) {
    size_t start = w->an;
    prof__escape(w, s);
    if (w->err) return;
    prof__w_put(w, w->arena + start, w->an - start);
    w->an = start;
}

PROF__SHARED void prof__w_free(prof__w *w) {
    free(w->buf); prof__names_free(&w->nm); free(w->arena);
}

/* ---- >>json  sink: Kineto-shaped JSON ---------------------------------- */

/* What an X event's writing reads as numbers and moves: the writer's own
   (prof__tw.x), or a run's copy in locals (prof__js_plains), which the
   compiler keeps in registers because no byte stored can touch it. */
typedef struct prof__jx {
    prof__tclock clk;                   /* ticks -> ns since baseTimeNanoseconds */
    uint64_t ms_ns;                     /* where the millisecond in ms_str begins */
    size_t ms_len;                      /* its digits (never 0: the first ms is not kept) */
    size_t wlen;                        /* where's bytes */
} prof__jx;

typedef struct prof__tw {               /* trace-writing context */
    prof__w w;
    const prof__cycle *cy;
    prof__jx x;
    long pid;
    size_t nev;                         /* events written: the "wrote" line's count */
    const char *xhead;                  /* PROF__X_HEAD or PROF__X_HEAD_OP */
    size_t xlen;
    char where[48];                     /* ',"pid":P,"tid":T,"ts":' of the current thread */
    /* Timestamps of neighbouring events share their milliseconds: those
       digits are formatted once (x.ms_ns: where that millisecond begins),
       the rest come from tables of 4 bytes per number below 1000: tab3
       "ddd", tabp "ddd.", tabs its digits without leading zeros and a '.'
       (tabn of them), so a number is a load, a store and an add. */
    char ms_str[48];
    char tab3[4 * 1000 + 4], tabp[4 * 1000], tabs[4 * 1000];
    uint8_t tabn[1000];
    long os_tid;                        /* the thread's own id when on another's track */
    int merged;                         /*   and so it is                               */
    long cpu_pid;                       /* the CPU's pid (pid is a GPU's on its tracks) */
} prof__tw;

static int64_t prof__ts(const prof__tw *t, uint64_t tick) { return prof__tclock_ns(&t->x.clk, tick); }

/* ns < 1 ms as microseconds: "u.ddd", no leading zeros. */
PROF__INLINE char *prof__fmt_sub_ms(const prof__tw *t, char *o, uint32_t ns) {
    uint32_t us = ns / 1000;
    memcpy(o, t->tabs + 4 * us, 4);
    o += t->tabn[us];
    memcpy(o, t->tab3 + 4 * (ns - us * 1000), 4);
    return o + 3;
}

/* The millisecond ms (not 0) formatted into ms_str; its digits' count. */
static size_t prof__fmt_ms(prof__tw *t, uint64_t ms) {
    return (size_t)(prof__fmt_u64(t->ms_str, ms) - t->ms_str);
}

/* A timestamp in microseconds with 3 decimals, as prof__fmt_us, faster. */
PROF__INLINE char *prof__fmt_ts(prof__tw *t, prof__jx *x, char *o, int64_t ns) {
    if (PROF__UNLIKELY((uint64_t)ns - x->ms_ns >= 1000000)) {
        if (ns < 0) return prof__fmt_us(o, ns);
        if (ns < 1000000) return prof__fmt_sub_ms(t, o, (uint32_t)ns);   /* ms_str stays a later one's */
        x->ms_ns = (uint64_t)ns / 1000000 * 1000000;
        x->ms_len = prof__fmt_ms(t, (uint64_t)ns / 1000000);
    }
    uint32_t rem = (uint32_t)((uint64_t)ns - x->ms_ns), us = rem / 1000;
    memcpy(o, t->ms_str, 24);
    o += x->ms_len;
    memcpy(o, t->tabp + 4 * us, 4);
    memcpy(o + 4, t->tab3 + 4 * (rem - us * 1000), 4);
    return o + 7;
}

/* A duration: almost always under a millisecond. */
PROF__INLINE char *prof__fmt_dur(const prof__tw *t, char *o, int64_t ns) {
    if ((uint64_t)ns >= 1000000) return prof__fmt_us(o, ns);
    return prof__fmt_sub_ms(t, o, (uint32_t)ns);
}

static void prof__tw_thread(prof__tw *t, long tid) {
    char *o = t->where;
    memcpy(o, ",\"pid\":", 7);
    o = prof__fmt_i64(o + 7, t->pid);
    memcpy(o, ",\"tid\":", 7);
    o = prof__fmt_i64(o + 7, tid);
    memcpy(o, ",\"ts\":", 6);
    t->x.wlen = (size_t)(o + 6 - t->where);
}

/* Opens one event: separator and the literal up to the name. */
static void prof__ev_open(prof__tw *t, const char *lit, size_t n) {
    if (t->nev++) PROF__W_LIT(&t->w, ",");
    prof__w_put(&t->w, lit, n);
}

#define PROF__EV_OPEN(t, lit) prof__ev_open((t), "" lit, sizeof(lit) - 1)

static void prof__ev_where(prof__tw *t, uint64_t tick) {
    char *o = prof__w_room(&t->w, sizeof t->where + 32);
    memcpy(o, t->where, sizeof t->where);
    t->w.n = (size_t)(prof__fmt_us(o + t->x.wlen, prof__ts(t, tick)) - t->w.buf);
}

static void prof__meta(prof__tw *t, const char *what, long tid, const char *key, const char *sval, int64_t ival) {
    PROF__EV_OPEN(t, "{\"ph\":\"M\",\"name\":\"");
    prof__w_put(&t->w, what, strlen(what));
    PROF__W_LIT(&t->w, "\",\"pid\":");
    prof__w_i64(&t->w, t->pid);
    PROF__W_LIT(&t->w, ",\"tid\":");
    prof__w_i64(&t->w, tid);
    PROF__W_LIT(&t->w, ",\"ts\":0.000,\"args\":{\"");
    prof__w_put(&t->w, key, strlen(key));
    PROF__W_LIT(&t->w, "\":");
    if (sval) prof__w_str(&t->w, sval); else prof__w_i64(&t->w, ival);
    PROF__W_LIT(&t->w, "}}");
}

#define PROF__X_HEAD "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":"
/* TensorBoard's operator view lists only "cpu_op" events: its copy of a
   cycle files regions under that category (steps stay user_annotation). */
#define PROF__X_HEAD_OP "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":"

/* The one serializer of X events (regions and steps), at o, in two halves:
   the head (the literal up to the name, padded to sizeof PROF__X_HEAD) and
   the name escaped with its quotes (16 bytes of slack behind it); then
   where, ts and dur (trim ns shorter). Word copies; the room made by the
   caller. Each returns its end. */
PROF__INLINE char *prof__x_put(char *o, const char *head, size_t hlen, const char *name, uint32_t len) {
    *o++ = ',';                         /* never the first: the head's metadata events are */
    memcpy(o, head, sizeof PROF__X_HEAD);
    return prof__copy16(o + hlen, name, len);
}

PROF__INLINE char *prof__x_times(prof__tw *t, prof__jx *x, char *o, uint64_t tick0, uint64_t tick1, int64_t trim) {
    const int64_t t0 = prof__tclock_ns(&x->clk, tick0), t1 = prof__tclock_ns(&x->clk, tick1);
    memcpy(o, t->where, sizeof t->where);
    o = prof__fmt_ts(t, x, o + x->wlen, t0);
    memcpy(o, ",\"dur\":", 8);
    o = prof__fmt_dur(t, o + 7, t1 - t0 - trim);
    *o++ = '}';
    return o;
}

/* The room an X event needs at most for a name of len bytes. */
#define PROF__X_ROOM(len) ((len) + sizeof PROF__X_HEAD + sizeof ((prof__tw *)0)->where + 80)

/* An X event through the writer's buffer: a name too long for one space
   check (a hostile or generated one of megabytes) goes through in pieces. */
static void prof__x_event(prof__tw *t, const char *head, size_t hlen, const char *name, uint32_t len, uint64_t tick0,
                          uint64_t tick1, int64_t trim) {
    prof__w *w = &t->w;
    char *o;
    t->nev++;
    if (PROF__LIKELY(len < PROF__WBUF / 4)) {
        o = prof__x_put(prof__w_room(w, PROF__X_ROOM(len)), head, hlen, name, len);
    } else {
        PROF__W_LIT(w, ",");
        prof__w_put(w, head, hlen);
        prof__w_put(w, name, len);
        o = prof__w_room(w, PROF__X_ROOM(0));
    }
    w->n = (size_t)(prof__x_times(t, &t->x, o, tick0, tick1, trim) - w->buf);
}

/* The name of a region, escaped with its quotes, once per distinct pointer:
   from the slot it hashes to, else its slot found or made. NULL if none
   could be (no memory). */
PROF__INLINE const char *prof__js_name(prof__w *w, const prof__nslot *slots, size_t mask, const char *arena,
                                       const char *key, uint32_t *len) {
    const prof__nslot *sl = &slots[prof__hash(key) & mask];
    if (PROF__LIKELY(sl->key == key && key)) {      /* seen before: most events */
        *len = sl->len;
        return arena + sl->off;
    }
    return prof__name_ref(w, key, len);
}

/* A region: both ends are converted, so children end inside their parents
   exactly. */
static void prof__region_fast(prof__tw *t, const prof__ev *e) {
    prof__w *w = &t->w;
    uint32_t len;
    const char *name = prof__js_name(w, w->nm.s, w->nm.slots - 1, w->arena, e->name, &len);
    if (name) prof__x_event(t, t->xhead, t->xlen, name, len, e->t0, e->t1, 0);
}

/* The walk's plains(): a run of regions, each as prof__region_fast writes
   it, in a loop with the writer's numbers in locals. */
__attribute__((noinline)) static size_t prof__js_plains(void *s, const prof__cycle *cy, const prof__wthread *th, size_t i) {
    prof__tw *t = (prof__tw *)s;
    prof__w *w = &t->w;
    if (t->merged) return i;
    const prof__ev *const ev = cy->ev;
    const size_t n_ev = cy->n, i0 = i;
    const uint32_t kt = th->plain;
    const char *const head = t->xhead, *const arena = w->arena;
    const size_t hlen = t->xlen, mask = w->nm.slots - 1;
    const prof__nslot *const slot = w->nm.s;
    prof__jx x = t->x;
    char *const buf = w->buf, *const lim = buf + PROF__WBUF;
    char *o = buf + w->n;
    for (; i < n_ev && prof__wplain(ev + i, kt, NULL); i++) {
        const prof__ev *e = ev + i;
        const prof__nslot *sl = &slot[prof__hash(e->name) & mask];
        if (PROF__UNLIKELY(sl->key != e->name || !e->name)) break;
        if (PROF__UNLIKELY(o + PROF__X_ROOM(sl->len) > lim)) {
            if (PROF__X_ROOM(sl->len) > PROF__WBUF / 2) break;     /* a name to write in pieces */
            w->n = (size_t)(o - buf);
            prof__w_flush(w);
            o = buf + w->n;
        }
        o = prof__x_times(t, &x, prof__x_put(o, head, hlen, arena + sl->off, sl->len), e->t0, e->t1, 0);
    }
    w->n = (size_t)(o - buf);
    t->x = x;
    t->nev += i - i0;
    return i;
}

/* A region with what the fast path leaves out (arguments, its GPU side's
   correlation, its own thread id on another's track), or a step: the X
   event, then its closing brace becomes the args object.
   corr: the correlation of the region's GPU side, 0 if none */
__attribute__((noinline)) static void prof__region(prof__tw *t, const prof__ev *e, const prof__ev *ev, const size_t *args, size_t nargs,
                         uint32_t corr) {
    if (e->kind == PROF__K_STEP) {
        /* A step ends where the next begins; readers that add ts and dur in
           floating point (TensorBoard) would see the two overlap by a rounding
           error, so a step ends 1 ns early. */
        char name[64] = "\"ProfilerStep#";
        char *o = prof__fmt_u64(name + 14, e->aux);
        *o++ = '"';
        prof__x_event(t, PROF__X_HEAD, sizeof PROF__X_HEAD - 1, name, (uint32_t)(o - name), e->t0, e->t1, 1);
    } else {
        prof__region_fast(t, e);
    }
    int clipped = e->kind == PROF__K_CLIPPED, open = e->kind == PROF__K_OPEN;
    int energy = e->kind == PROF__K_STEP && t->cy->en;
    if ((nargs || corr || t->os_tid || clipped || open || energy) && !t->w.err) {
        t->w.n--;                       /* the closing brace */
        PROF__W_LIT(&t->w, ",\"args\":{");
        int sep = 0;
        for (int i = 0, share = 0; energy && i < t->cy->en->nd; i++) {  /* PROF_ENERGY: its joules per device */
            double j;
            int how = prof__en_step(t->cy, i, e->t0, e->t1, &j);
            char kv[96];
            if (how) {
                snprintf(kv, sizeof kv, "%s\"%s\":%.3f", sep ? "," : "", t->cy->en->d[i].key, j);
                prof__w_put(&t->w, kv, strlen(kv));
                sep = 1;
            }
            if (how == 2 && !share++) {
                if (sep) PROF__W_LIT(&t->w, ",");
                PROF__W_LIT(&t->w, "\"energy\":\"" PROF__EN_SHARE "\"");
                sep = 1;
            }
        }
        if (clipped) {                  /* began before this trace: ts is the trace's start */
            PROF__W_LIT(&t->w, "\"clipped\":\"" PROF__CLIPPED_MARK "\"");
            sep = 1;
        }
        if (open) {                     /* a watchdog's dump: it had not ended */
            PROF__W_LIT(&t->w, "\"open\":\"" PROF__OPEN_MARK "\"");
            sep = 1;
        }
        if (corr) {
            if (sep) PROF__W_LIT(&t->w, ",");
            PROF__W_LIT(&t->w, "\"correlation\":");
            prof__w_i64(&t->w, corr);
            sep = 1;
        }
        if (t->os_tid) {                /* on an alike-named thread's track */
            if (sep) PROF__W_LIT(&t->w, ",");
            PROF__W_LIT(&t->w, "\"os_tid\":");
            prof__w_i64(&t->w, t->os_tid);
            sep = 1;
        }
        for (size_t i = 0; i < nargs; i++) {
            const prof__ev *a = &ev[args[i]];
            if (i || sep) PROF__W_LIT(&t->w, ",");
            prof__w_name(&t->w, a->name);
            PROF__W_LIT(&t->w, ":");
            if (a->kind == PROF__K_ARG_INT) prof__w_i64(&t->w, (int64_t)a->t1);
            else prof__w_name(&t->w, (const char *)(uintptr_t)a->t1);
        }
        PROF__W_LIT(&t->w, "}}");
    }
}

/* A device's numbers as the traces name them: deviceProperties' as Kineto
   writes them, and the bound on its GPU times' alignment to the CPU clock,
   as measured (prof__gdev_bound; the first PROF__DEV_PROPS), then the
   anchors' figures. Into f[PROF__DEV_FIELDS]. */
#define PROF__DEV_PROPS  13
#define PROF__DEV_FIELDS 15
typedef struct prof__kv { const char *key; int64_t v; } prof__kv;

static void prof__dev_fields(const struct prof__gdev_info *d, prof__kv *f) {
    const prof_gpu_props *p = &d->props;
    const prof__kv all[PROF__DEV_FIELDS] = {
        { "totalGlobalMem", p->total_mem }, { "computeMajor", p->major }, { "computeMinor", p->minor },
        { "maxThreadsPerBlock", p->max_threads_per_block },
        { "maxThreadsPerMultiprocessor", p->max_threads_per_sm }, { "regsPerBlock", p->regs_per_block },
        { "regsPerMultiprocessor", p->regs_per_sm }, { "warpSize", p->warp_size },
        { "sharedMemPerBlock", p->smem_per_block }, { "sharedMemPerMultiprocessor", p->smem_per_sm },
        { "numSms", p->sms }, { "sharedMemPerBlockOptin", p->smem_per_block_optin },
        { "prof_alignment_bound_ns", prof__gdev_bound(d) },
        { "anchor_uncertainty_ns", d->unc_ns }, { "drift_corrected_ns", d->drift_ns },
    };
    memcpy(f, all, sizeof all);
}

/* deviceProperties as Kineto writes them. */
static void prof__w_devices(prof__w *w, const prof__cycle *cy) {
    PROF__W_LIT(w, "  \"deviceProperties\": [");
    for (size_t i = 0; i < cy->ngdev; i++) {
        const struct prof__gdev_info *d = &cy->gdev[i];
        prof__kv f[PROF__DEV_FIELDS];
        prof__dev_fields(d, f);
        if (i) PROF__W_LIT(w, ",");
        PROF__W_LIT(w, "\n    {\"id\": ");
        prof__w_i64(w, d->dev);
        PROF__W_LIT(w, ", \"name\": ");
        prof__w_str(w, d->props.name);
        for (size_t k = 0; k < PROF__DEV_PROPS; k++) {
            PROF__W_LIT(w, ", \"");
            prof__w_put(w, f[k].key, strlen(f[k].key));
            PROF__W_LIT(w, "\": ");
            prof__w_i64(w, f[k].v);
        }
        PROF__W_LIT(w, "}");
    }
    if (cy->ngdev) PROF__W_LIT(w, "\n  ],\n");
    else PROF__W_LIT(w, "],\n");
}

/* An event's where, ts and dur, for a span [t0, t1] (ticks) of the GPU side. */
static void prof__w_span(prof__tw *t, uint64_t t0, uint64_t t1) {
    prof__ev_where(t, t0);
    PROF__W_LIT(&t->w, ",\"dur\":");
    char *o = prof__w_room(&t->w, 32);
    t->w.n = (size_t)(prof__fmt_us(o, prof__ts(t, t1) - prof__ts(t, t0)) - t->w.buf);
}

/* A GPU's process (pid = device) and a stream's track (tid = stream id),
   named and ordered after the CPU's, where they begin. */
static void prof__w_gpu_track(prof__tw *t, int dev, long long stream, int new_dev, int new_stream) {
    char label[64];
    if (new_dev) {
        t->pid = dev;
        snprintf(label, sizeof label, "GPU %d", dev);
        prof__meta(t, "process_name", 0, "name", label, 0);
        prof__meta(t, "process_labels", 0, "labels", label, 0);
        prof__meta(t, "process_sort_index", 0, "sort_index", NULL, 5000000 + dev);
    }
    if (new_stream) {
        snprintf(label, sizeof label, "stream %lld", stream);
        prof__meta(t, "thread_name", (long)stream, "name", label, 0);
        prof__meta(t, "thread_sort_index", (long)stream, "sort_index", NULL, stream);
        prof__tw_thread(t, (long)stream);
    }
}

/* Kernel capture's flows: ids apart from the GPU regions' correlations,
   one per key (prof__walk_flows). */
#define PROF__ACT_FLOW ((int64_t)1 << 32)

static void prof__w_act_flow(prof__tw *t, const char *lit, size_t len, const prof__gact *g, uint64_t key) {
    prof__ev_open(t, lit, len);
    prof__w_i64(&t->w, PROF__ACT_FLOW + (int64_t)key);
    prof__ev_where(t, g->t0);
    PROF__W_LIT(&t->w, "}");
}
#define PROF__W_ACT_FLOW(t, lit, g, key) prof__w_act_flow((t), "" lit, sizeof(lit) - 1, (g), (key))


static void prof__w_ints(prof__w *w, const int *v, int n) {
    PROF__W_LIT(w, "[");
    for (int i = 0; i < n; i++) {
        if (i) PROF__W_LIT(w, ",");
        prof__w_i64(w, v[i]);
    }
    PROF__W_LIT(w, "]");
}

/* A memory event as Kineto writes one, for TensorBoard's memory view, and a
   sample of a counter track per device for Perfetto's curve. Total Reserved is
   what the allocator holds, used or not: we see only what the engine reports,
   so it is Total Allocated (the plugin skips a point without it, and a reserved
   curve below the allocated one would say the impossible). Host: Device Type
   0, Device Id -1, as Kineto writes the CPU; GPU d: 1, d. */
static void prof__w_mem(prof__tw *t, const prof__ev *e, const prof__ev *tot) {
    prof__w *w = &t->w;
    int dev = (int)e->aux - 1;
    int64_t total = (int64_t)tot->t1;
    PROF__EV_OPEN(t, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\"");
    prof__ev_where(t, e->t0);
    if (dev < 0) PROF__W_LIT(w, ",\"args\":{\"Device Type\":0,\"Device Id\":-1,\"Addr\":");
    else {
        PROF__W_LIT(w, ",\"args\":{\"Device Type\":1,\"Device Id\":");
        prof__w_i64(w, dev);
        PROF__W_LIT(w, ",\"Addr\":");
    }
    w->n = (size_t)(prof__fmt_u64(prof__w_room(w, 32), (uint64_t)(uintptr_t)e->name) - w->buf);
    PROF__W_LIT(w, ",\"Bytes\":");
    prof__w_i64(w, (int64_t)e->t1);
    PROF__W_LIT(w, ",\"Total Allocated\":");
    prof__w_i64(w, total);
    PROF__W_LIT(w, ",\"Total Reserved\":");
    prof__w_i64(w, total);
    PROF__W_LIT(w, "}}");
    if (dev < 0) PROF__EV_OPEN(t, "{\"ph\":\"C\",\"name\":\"Memory (CPU)\"");
    else {
        PROF__EV_OPEN(t, "{\"ph\":\"C\",\"name\":\"Memory (GPU ");
        prof__w_i64(w, dev);
        PROF__W_LIT(w, ")\"");
    }
    prof__ev_where(t, e->t0);
    PROF__W_LIT(w, ",\"args\":{\"Allocated\":");
    prof__w_i64(w, total);
    PROF__W_LIT(w, "}}");
}


/* The process's name in a trace: its command, and its rank if it has one
   (pids of different hosts may clash). Into buf[n]. */
static const char *prof__process_name(char *buf, size_t n) {
    FILE *cf = fopen("/proc/self/comm", "r");
    snprintf(buf, n, "prof");
    if (cf) {
        if (fgets(buf, (int)n, cf)) buf[strcspn(buf, "\n")] = 0;
        fclose(cf);
    }
    if (prof__g.who.rank >= 0) {
        size_t cl = strlen(buf);
        snprintf(buf + cl, n - cl, " rank %d", prof__g.who.rank);
    }
    return buf;
}

/* PROF_SAMPLE's samples (>>sample), a key of prof's own that other readers
   pass over: the sampling period, the samples lost, the executable
   mappings when the cycle was saved (path, start, end, file offset, GNU
   build id), then per sample [OS tid, ts in ns since baseTimeNanoseconds,
   step number or -1, innermost region's name or null, addresses innermost
   first as hex strings]. */
static void prof__w_hex(prof__w *w, uint64_t v) {
    char b[24];
    int n = snprintf(b, sizeof b, "\"0x%llx\"", (unsigned long long)v);
    prof__w_put(w, b, (size_t)n);
}

static void prof__js_samples(prof__w *w, const prof__cycle *cy) {
    const prof__scy *sc = cy->smp;
    PROF__W_LIT(w, ",\n  \"prof_samples\": {\"period_ns\": ");
    prof__w_i64(w, sc->period_ns);
    PROF__W_LIT(w, ", \"lost\": ");
    prof__w_i64(w, (int64_t)sc->lost);
    PROF__W_LIT(w, ", \"refused\": ");
    prof__w_i64(w, sc->refused);
    PROF__W_LIT(w, ",\n    \"mappings\": [");
    for (size_t i = 0; i < sc->nmap; i++) {
        const prof__smap *m = &sc->map[i];
        if (i) PROF__W_LIT(w, ",");
        PROF__W_LIT(w, "\n      {\"path\": ");
        prof__w_str(w, m->path);
        PROF__W_LIT(w, ", \"start\": ");
        prof__w_hex(w, m->start);
        PROF__W_LIT(w, ", \"end\": ");
        prof__w_hex(w, m->end);
        PROF__W_LIT(w, ", \"offset\": ");
        prof__w_hex(w, m->offset);
        PROF__W_LIT(w, ", \"build_id\": ");
        prof__w_str(w, m->build_id);
        PROF__W_LIT(w, "}");
    }
    PROF__W_LIT(w, "],\n    \"samples\": [");
    int64_t shift = prof__trace_shift();  /* CLOCK_MONOTONIC to ns since baseTimeNanoseconds */
    for (size_t i = 0; i < sc->n; i++) {
        const prof__sample *s = &sc->s[i];
        if (i) PROF__W_LIT(w, ",");
        PROF__W_LIT(w, "\n      [");
        prof__w_i64(w, s->tid);
        PROF__W_LIT(w, ", ");
        prof__w_i64(w, s->ns + shift);
        PROF__W_LIT(w, ", ");
        prof__w_i64(w, s->step == PROF__NO_EVENT ? -1 : (int64_t)cy->ev[s->step].aux);
        PROF__W_LIT(w, ", ");
        if (s->region == PROF__NO_EVENT) PROF__W_LIT(w, "null");
        else prof__w_str(w, cy->ev[s->region].name);
        PROF__W_LIT(w, ", [");
        for (uint32_t k = 0; k < s->nip; k++) {
            if (k) PROF__W_LIT(w, ", ");
            prof__w_hex(w, sc->ip[s->ip + k]);
        }
        PROF__W_LIT(w, "]]");
    }
    PROF__W_LIT(w, "]}");
}

/* The trace's header, Kineto's keys in Kineto's order, up to the opening of
   traceEvents, and the process's metadata events. */
static void prof__w_head(prof__tw *t, const prof__cycle *cy, const char *path) {
    prof__w *w = &t->w;
    PROF__W_LIT(w, "{\n  \"schemaVersion\": 1,\n");
    prof__w_devices(w, cy);
    if (prof__g.who.rank >= 0) {
        /* "rank": N with the space: HTA finds ranks with "rank":\s+(\d+) */
        PROF__W_LIT(w, "  \"distributedInfo\": {\"backend\": \"unknown\", \"rank\": ");
        prof__w_i64(w, prof__g.who.rank);
        PROF__W_LIT(w, ", \"world_size\": ");
        prof__w_i64(w, prof__g.who.world);
        PROF__W_LIT(w, "},\n");
    }
    PROF__W_LIT(w, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
    prof__w_i64(w, cy->base_ns);
    PROF__W_LIT(w, ",\n  \"traceName\": ");
    prof__w_str(w, path);
    PROF__W_LIT(w, ",\n  \"prof_dropped_events\": ");
    prof__w_i64(w, (int64_t)cy->dropped);
    PROF__W_LIT(w, ",\n  \"prof_clipped_regions\": ");
    prof__w_i64(w, (int64_t)cy->clipped);
    if (cy->reason) {                   /* a flight recorder's dump: why, and its steps */
        PROF__W_LIT(w, ",\n  \"prof_dump_reason\": ");
        prof__w_str(w, cy->reason);
        PROF__W_LIT(w, ",\n  \"prof_dump_step\": ");
        prof__w_i64(w, cy->reason_step);
        PROF__W_LIT(w, ",\n  \"prof_dump_first_step\": ");
        prof__w_i64(w, cy->first_step);
    }
    if (cy->nact || cy->act_lost) {
        PROF__W_LIT(w, ",\n  \"prof_gpu_dropped_activities\": ");
        prof__w_i64(w, (int64_t)cy->act_lost);
    }
    if (cy->ngdev || cy->gpu_dropped) {
        PROF__W_LIT(w, ",\n  \"prof_gpu_dropped_regions\": ");
        prof__w_i64(w, (int64_t)cy->gpu_dropped);
        /* how well GPU times sit on the CPU clock, per device */
        PROF__W_LIT(w, ",\n  \"prof_gpu_alignment\": [");
        for (size_t i = 0; i < cy->ngdev; i++) {
            if (i) PROF__W_LIT(w, ", ");
            PROF__W_LIT(w, "{\"device\": ");
            prof__w_i64(w, cy->gdev[i].dev);
            PROF__W_LIT(w, ", \"anchor_uncertainty_ns\": ");
            prof__w_i64(w, cy->gdev[i].unc_ns);
            PROF__W_LIT(w, ", \"drift_corrected_ns\": ");
            prof__w_i64(w, cy->gdev[i].drift_ns);
            PROF__W_LIT(w, ", \"bound_ns\": ");
            prof__w_i64(w, prof__gdev_bound(&cy->gdev[i]));
            PROF__W_LIT(w, "}");
        }
        PROF__W_LIT(w, "]");
    }
    if (cy->en) {                       /* PROF_ENERGY: how its numbers were made */
        char meta[4096];
        size_t n = prof__en_meta(cy, meta, sizeof meta);
        PROF__W_LIT(w, ",\n  \"prof_energy\": ");
        prof__w_put(w, meta, n);
    }
    if (cy->smp) prof__js_samples(w, cy);
    PROF__W_LIT(w, ",\n  \"traceEvents\": [\n");

    char comm[96];
    prof__meta(t, "process_name", 0, "name", prof__process_name(comm, sizeof comm), 0);
    prof__meta(t, "process_labels", 0, "labels", "CPU", 0);
    prof__meta(t, "process_sort_index", 0, "sort_index", NULL, t->pid);
}

/* ---- the JSON sink: the walk's callbacks ---- */

/* A thread's run of records: its metadata where its track begins, then its
   events on its track (the lead's tid; its own in args.os_tid). */
static void prof__js_thread(void *s, const prof__cycle *cy, const prof__wthread *th) {
    prof__tw *t = (prof__tw *)s;
    t->os_tid = th->os_tid;
    t->merged = th->lead != th->k;
    if (!t->merged) {
        prof__meta(t, "thread_name", cy->th[th->k].tid, "name", th->label, 0);
        prof__meta(t, "thread_sort_index", cy->th[th->k].tid, "sort_index", NULL, (int64_t)th->k);
    }
    prof__tw_thread(t, th->tid);
}

PROF__INLINE void prof__js_span(void *s, const prof__cycle *cy, const prof__wthread *th, const prof__wreg *r) {
    prof__tw *t = (prof__tw *)s;
    const prof__ev *e = r->e;
    (void)th;
    /* a region, no argument, on its own thread's track: most events */
    if (PROF__LIKELY(r->plain && !t->merged)) {
        prof__region_fast(t, e);
        return;
    }
    uint32_t corr = e->kind == PROF__K_GPU_REGION && prof__gpu_find(cy->gcorr, cy->ngcorr, e->aux) ? e->aux : 0;
    prof__region(t, e, cy->ev, r->args, r->nargs, corr);
    if (corr) {                         /* the flow's start, bound to this region */
        PROF__EV_OPEN(t, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":");
        prof__w_i64(&t->w, corr);
        prof__ev_where(t, e->t0);
        PROF__W_LIT(&t->w, "}");
    }
}

static void prof__js_point(void *s, const prof__cycle *cy, const prof__wthread *th, const prof__ev *e) {
    prof__tw *t = (prof__tw *)s;
    prof__w *w = &t->w;
    (void)cy;
    (void)th;
    if (e->kind == PROF__K_INSTANT) {
        PROF__EV_OPEN(t, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":");
        prof__w_name(w, e->name);
        prof__ev_where(t, e->t0);
        PROF__W_LIT(w, "}");
    } else if (e->kind == PROF__K_COUNTER) {
        double v;
        memcpy(&v, &e->t1, sizeof v);
        PROF__EV_OPEN(t, "{\"ph\":\"C\",\"name\":");
        prof__w_name(w, e->name);
        prof__ev_where(t, e->t0);
        PROF__W_LIT(w, ",\"args\":{");
        prof__w_name(w, e->name);
        PROF__W_LIT(w, ":");
        prof__w_double(w, v);
        PROF__W_LIT(w, "}}");
    } else {                            /* PROF_SYNC: what prof merge aligns ranks on */
        PROF__EV_OPEN(t, "{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"prof_sync\",\"name\":\"prof_sync\"");
        prof__ev_where(t, e->t0);
        PROF__W_LIT(w, ",\"args\":{\"sync\":");
        prof__w_i64(w, e->aux);
        PROF__W_LIT(w, "}}");
    }
}

static void prof__js_mem(void *s, const prof__cycle *cy, const prof__wthread *th, const prof__ev *e,
                         const prof__ev *tot) {
    (void)cy;
    (void)th;
    prof__w_mem((prof__tw *)s, e, tot);
}

/* GPU regions on pid = device, tid = stream, each with the end of the flow
   from the CPU region that launched it. */
static void prof__js_gpu(void *s, const prof__cycle *cy, const prof__gev *g, int new_dev, int new_stream) {
    prof__tw *t = (prof__tw *)s;
    prof__w *w = &t->w;
    if (!g) return;
    prof__w_gpu_track(t, g->dev, g->stream, new_dev, new_stream);
    PROF__EV_OPEN(t, "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":");
    prof__w_name(w, g->name);
    prof__w_span(t, (uint64_t)g->t0, (uint64_t)g->t1);
    PROF__W_LIT(w, ",\"args\":{\"device\":");
    prof__w_i64(w, g->dev);
    if (cy->nact == cy->nact_api) {     /* HTA takes whatever has a stream for a kernel */
        PROF__W_LIT(w, ",\"stream\":");
        prof__w_i64(w, g->stream);
    }
    PROF__W_LIT(w, ",\"correlation\":");
    prof__w_i64(w, g->corr);
    PROF__W_LIT(w, "}}");
    PROF__EV_OPEN(t, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":");
    prof__w_i64(w, g->corr);
    prof__ev_where(t, (uint64_t)g->t0);
    PROF__W_LIT(w, "}");
}

/* A synchronisation, as Kineto writes a cuda_sync: on its row beside its
   stream (prof__act_row), its arguments Kineto's; the flows end on it. */
static void prof__js_sync(prof__tw *t, const prof__gact *g, int new_track, int new_dev, const uint64_t *flows,
                          size_t nflows) {
    prof__w *w = &t->w;
    long row = (long)prof__act_row(&g->a);
    prof__w_gpu_track(t, g->a.device, 0, new_dev, 0);
    if (new_track) {
        char label[64];
        if (g->a.stream >= 0) snprintf(label, sizeof label, "stream %lld (sync)", g->a.stream);
        else snprintf(label, sizeof label, "sync");
        prof__meta(t, "thread_name", row, "name", label, 0);
        prof__meta(t, "thread_sort_index", row, "sort_index", NULL, g->a.stream >= 0 ? g->a.stream : row);
        prof__tw_thread(t, row);
    }
    PROF__EV_OPEN(t, "{\"ph\":\"X\",\"cat\":\"cuda_sync\",\"name\":");
    prof__w_name(w, g->a.name);
    prof__w_span(t, g->t0, g->t1);
    PROF__W_LIT(w, ",\"args\":{\"cuda_sync_kind\":");
    prof__w_name(w, prof__sync_name(g->a.sync));
    if (g->a.sync == PROF_GPU_SYNC_EVENT || g->a.sync == PROF_GPU_SYNC_WAIT_EVENT) {
        PROF__W_LIT(w, ",\"wait_on_stream\":");
        prof__w_i64(w, g->a.wait_stream);
        PROF__W_LIT(w, ",\"wait_on_cuda_event_record_corr_id\":");
        prof__w_i64(w, g->a.wait_corr);
        PROF__W_LIT(w, ",\"wait_on_cuda_event_id\":");
        prof__w_i64(w, g->a.event);
    }
    PROF__W_LIT(w, ",\"stream\":");
    prof__w_i64(w, g->a.stream);
    PROF__W_LIT(w, ",\"correlation\":");
    prof__w_i64(w, g->a.correlation);
    PROF__W_LIT(w, ",\"device\":");
    prof__w_i64(w, g->a.device);
    PROF__W_LIT(w, ",\"context\":1}}");
    for (size_t i = 0; i < nflows; i++) {
        if (flows[i] & PROF__WAIT_FLOW)
            PROF__W_ACT_FLOW(t, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"cuda_sync\",\"name\":\"wait_on_event\",\"id\":",
                             g, flows[i]);
        else PROF__W_ACT_FLOW(t, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":", g, flows[i]);
    }
}

/* What kernel capture saw, as Kineto writes it: runtime calls on their CPU
   threads (cuda_runtime), kernels, copies and fills on the device's stream
   tracks, synchronisations beside them (cuda_sync), an ac2g flow from each
   launch to what it launched (and from a call that recorded an event to
   each synchronisation on it). */
static void prof__js_act(void *s, const prof__cycle *cy, const prof__gact *g, int new_track, int new_dev,
                         const uint64_t *flows, size_t nflows, const char *label) {
    prof__tw *t = (prof__tw *)s;
    prof__w *w = &t->w;
    (void)cy;
    (void)label;
    if (g->a.kind == PROF_GPU_RUNTIME) {
        t->pid = t->cpu_pid;
        if (new_track) prof__tw_thread(t, g->tid);
        if (g->a.driver) PROF__EV_OPEN(t, "{\"ph\":\"X\",\"cat\":\"cuda_driver\",\"name\":");
        else PROF__EV_OPEN(t, "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":");
        prof__w_name(w, g->a.name);
        prof__w_span(t, g->t0, g->t1);
        PROF__W_LIT(w, ",\"args\":{\"cbid\":");
        prof__w_i64(w, g->a.cbid);
        PROF__W_LIT(w, ",\"correlation\":");
        prof__w_i64(w, g->a.correlation);
        PROF__W_LIT(w, "}}");
        for (size_t i = 0; i < nflows; i++) {
            if (flows[i] & PROF__WAIT_FLOW)
                PROF__W_ACT_FLOW(t, "{\"ph\":\"s\",\"cat\":\"cuda_sync\",\"name\":\"wait_on_event\",\"id\":", g,
                                 flows[i]);
            else PROF__W_ACT_FLOW(t, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":", g, flows[i]);
        }
        return;
    }
    if (g->a.kind == PROF_GPU_SYNC) {
        prof__js_sync(t, g, new_track, new_dev, flows, nflows);
        return;
    }
    prof__w_gpu_track(t, g->a.device, g->a.stream, new_dev, new_track);
    if (g->a.kind == PROF_GPU_KERNEL) PROF__EV_OPEN(t, "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":");
    else if (g->a.kind == PROF_GPU_MEMCPY) PROF__EV_OPEN(t, "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":");
    else PROF__EV_OPEN(t, "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":");
    prof__w_name(w, g->a.name);
    prof__w_span(t, g->t0, g->t1);
    PROF__W_LIT(w, ",\"args\":{\"queued\":0,\"device\":");
    prof__w_i64(w, g->a.device);
    PROF__W_LIT(w, ",\"context\":1,\"stream\":");
    prof__w_i64(w, g->a.stream);
    PROF__W_LIT(w, ",\"correlation\":");
    prof__w_i64(w, g->a.correlation);
    if (g->a.kind == PROF_GPU_KERNEL) {
        PROF__W_LIT(w, ",\"registers per thread\":");
        prof__w_i64(w, g->a.regs);
        PROF__W_LIT(w, ",\"shared memory\":");
        prof__w_i64(w, g->a.smem);
        PROF__W_LIT(w, ",\"grid\":");
        prof__w_ints(w, g->a.grid, 3);
        PROF__W_LIT(w, ",\"block\":");
        prof__w_ints(w, g->a.block, 3);
    } else {
        int64_t ns = prof__ts(t, g->t1) - prof__ts(t, g->t0);
        char *o;
        PROF__W_LIT(w, ",\"bytes\":");
        prof__w_i64(w, (int64_t)g->a.bytes);
        PROF__W_LIT(w, ",\"memory bandwidth (GB/s)\":");
        o = prof__w_room(w, 40);
        w->n += (size_t)snprintf(o, 40, "%.6g", ns > 0 ? (double)g->a.bytes / (double)ns : 0.0);
    }
    if (g->a.graph) {                   /* launched by a CUDA graph: which, and which node */
        PROF__W_LIT(w, ",\"graph id\":");
        prof__w_i64(w, g->a.graph);
        PROF__W_LIT(w, ",\"graph node id\":");
        prof__w_i64(w, (int64_t)g->a.graph_node);
        if (g->a.capture_region) {      /* the regions open when its node was captured */
            PROF__W_LIT(w, ",\"capture_region\":");
            prof__w_name(w, g->a.capture_region);
        }
    }
    PROF__W_LIT(w, "}}");
    if (nflows)
        PROF__W_ACT_FLOW(t, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":", g, flows[0]);
}

/* PROF_ENERGY's power track: a counter of the process, "GPU d power (W)". */
static void prof__js_power(void *s, const prof__cycle *cy, int dev, uint64_t tick, double watts) {
    prof__tw *t = (prof__tw *)s;
    prof__w *w = &t->w;
    (void)cy;
    t->pid = t->cpu_pid;
    prof__tw_thread(t, 0);
    PROF__EV_OPEN(t, "{\"ph\":\"C\",\"name\":\"GPU ");
    prof__w_i64(w, dev);
    PROF__W_LIT(w, " power (W)\"");
    prof__ev_where(t, tick);
    PROF__W_LIT(w, ",\"args\":{\"W\":");
    char *o = prof__w_room(w, 40);
    w->n += (size_t)snprintf(o, 40, "%.3f", watts);
    PROF__W_LIT(w, "}}");
}

/* A track's name: "GPU d SM clock (MHz)", "GPU d throttle: SwPowerCap". */
static void prof__gm_track(const prof__cycle *cy, int dev, int m, int bit, char *buf, size_t n) {
    if (bit >= 0) snprintf(buf, n, "GPU %d throttle: %s", dev, cy->en->gm_names[bit]);
    else snprintf(buf, n, "GPU %d %s (%s)", dev, prof__gm_name[m], prof__gm_unit[m]);
}

/* PROF_GPU_METRICS' tracks: counters of the process, one argument each. */
static void prof__js_metric(void *s, const prof__cycle *cy, int dev, int m, int bit, uint64_t tick, double v) {
    prof__tw *t = (prof__tw *)s;
    prof__w *w = &t->w;
    char name[128];
    prof__gm_track(cy, dev, m, bit, name, sizeof name);
    t->pid = t->cpu_pid;
    prof__tw_thread(t, 0);
    PROF__EV_OPEN(t, "{\"ph\":\"C\",\"name\":");
    prof__w_str(w, name);               /* quoted, escaped */
    prof__ev_where(t, tick);
    PROF__W_LIT(w, ",\"args\":{");
    prof__w_str(w, prof__gm_unit[m]);
    PROF__W_LIT(w, ":");
    char *o = prof__w_room(w, 40);
    w->n += (size_t)snprintf(o, 40, "%.3f", v);
    PROF__W_LIT(w, "}}");
}

__extension__ static const prof__sink prof__json_sink = {
    .need = 0,
    .thread = prof__js_thread,
    .begin = NULL,
    .span = prof__js_span,
    .point = prof__js_point,
    .mem = prof__js_mem,
    .gpu = prof__js_gpu,
    .act = prof__js_act,
    .plains = prof__js_plains,
    .power = prof__js_power,
    .metric = prof__js_metric,
};


/* Writes the cycle as Kineto's JSON; as_ops: regions as cpu_op (TensorBoard's
   operator view). *nev (if not NULL) gets the number of traceEvents. */
__attribute__((noinline)) static int prof__write_trace_as(const prof__cycle *cy, const char *path, int as_ops,
                                                          int gz, size_t *nev) {
    /* both heads padded to the same size: the fast path copies a fixed size */
    static const char op_head[sizeof PROF__X_HEAD] = PROF__X_HEAD_OP;
    prof__tw t;
    memset(&t, 0, sizeof t);
    t.cy = cy;
    t.xhead = as_ops ? op_head : PROF__X_HEAD;
    t.xlen = as_ops ? sizeof PROF__X_HEAD_OP - 1 : sizeof PROF__X_HEAD - 1;
    t.pid = t.cpu_pid = prof__trace_pid(cy);
    t.x.ms_ns = (uint64_t)-1 - 1000000; /* no millisecond formatted yet */
    for (int i = 0; i < 1000; i++) {
        char *d = t.tab3 + 4 * i;
        int skip = (i < 100) + (i < 10);
        d[0] = (char)('0' + i / 100);
        d[1] = (char)('0' + i / 10 % 10);
        d[2] = (char)('0' + i % 10);
        memcpy(t.tabp + 4 * i, d, 3);
        t.tabp[4 * i + 3] = '.';
        memcpy(t.tabs + 4 * i, d + skip, 3);
        t.tabs[4 * i + 3 - skip] = '.';
        t.tabn[i] = (uint8_t)(4 - skip);
    }
    t.x.clk = cy->clk;
    char tmp[PROF__PATH + 32];
    prof__gz gzs;
    if (!(t.w.f = prof__out_open(path, tmp, sizeof tmp, "trace"))) return 0;
    if (gz) {
        t.w.gz = &gzs;
        if (!prof__gz_start(&gzs, t.w.f)) t.w.err = 1;
    }
    t.w.buf = (char *)malloc(PROF__WBUF + PROF__SLACK);
    if (!t.w.buf || !prof__names_grow(&t.w.nm)) t.w.err = 1;
    prof__w *w = &t.w;
    if (!w->err) {
        prof__w_head(&t, cy, path);
        if (!prof__walk(cy, &prof__json_sink, &t)) w->err = 1;
        PROF__W_LIT(w, "\n  ]\n}\n");
        prof__w_flush(w);
        if (w->gz && !w->err) {
            prof__gz_end(w->gz);
            if (fwrite(w->gz->out, 1, w->gz->nout, w->f) != w->gz->nout) { w->err = 1; w->errnum = errno; }
        }
    }
    if (w->gz) prof__gz_free(w->gz);
    int ok = prof__out_close(w->f, tmp, path, !w->err, w->errnum, "trace");
    if (nev) *nev = t.nev;
    prof__w_free(w);
    return ok;
}


/* ---- >>perfetto  sink: Perfetto's native protobuf trace -------------------
   A .pftrace is a run of Trace.packet fields (tag 0x0A, length, TracePacket
   bytes), hand-encoded here from Perfetto's protos/perfetto/trace/: no SDK,
   no protobuf library. A file cut anywhere loses only its last packet.
     sequence 1     the clock snapshot (REALTIME is the trace's clock), the
                    trace's attributes (what the JSON's header says), the
                    process's and threads' tracks
     one per run    a thread's events in time order: each region a BEGIN and
     of a thread    an END slice (no "complete" event in this format), its
                    arguments on the END; names interned on first use per
                    sequence; timestamps as deltas on an incremental clock
     one per        its GPU regions, each with the end of the flow from the
     GPU stream     CPU region that launched it
     one per cycle  PROF_SAMPLE's samples: interned mappings, frames and
     or part        callstacks, a PerfSample each (prof__pf_samples)
   Times are the JSON's exactly: its ts in ns plus baseTimeNanoseconds.
   Names: prof__pb_* encode protobuf (varints, fields, nested messages in a
   prof__pb; the prof tool's writer uses them too), prof__pf_* are the
   writer on them (its state a prof__pf), prof__pf_sink_* the callbacks the
   walk drives. */

#endif /* PROF__BODIES */
#define PROF__PB_VARINT 0u
#define PROF__PB_I64    1u
#define PROF__PB_LEN    2u
#define PROF__PB_TAG(field, type) (((uint64_t)(field) << 3) | (type))
#if PROF__BODIES

/* Perfetto's field numbers (protos/perfetto/trace/...) */
enum {
    PROF__TP_CLOCK_SNAPSHOT = 6, PROF__TP_TIMESTAMP = 8, PROF__TP_SEQ_ID = 10, PROF__TP_TRACK_EVENT = 11,
    PROF__TP_INTERNED = 12, PROF__TP_SEQ_FLAGS = 13, PROF__TP_CLOCK_ID = 58, PROF__TP_DEFAULTS = 59,
    PROF__TP_TRACK_DESC = 60, PROF__TP_ATTRIBUTES = 126,
    PROF__TE_ANNOTATION = 4, PROF__TE_TYPE = 9, PROF__TE_NAME_IID = 10, PROF__TE_TRACK = 11,
    PROF__TE_NAME = 23, PROF__TE_COUNTER = 30, PROF__TE_DCOUNTER = 44, PROF__TE_FLOW = 47,
    PROF__TE_FLOW_END = 48,
    PROF__TE_BEGIN = 1, PROF__TE_END = 2, PROF__TE_INSTANT = 3, PROF__TE_COUNTER_T = 4,
    PROF__CLK_REALTIME = 1, PROF__CLK_MONOTONIC = 3, PROF__CLK_SEQ = 64  /* ours, incremental */
};

/* Track uuids: this trace's base (a hash of pid, rank, start, with its low
   32 bits clear) plus one of these; flow ids are the base plus a correlation. */
#define PROF__PF_PROCESS  1u
#define PROF__PF_THREAD   0x100000u     /* + thread index */
#define PROF__PF_LANES    0x10000000u   /* + thread index * 16 + lane: overlap tracks */
#define PROF__PF_ACTS     0x20000000u   /* + n: kernel capture's tracks, in write order */
#define PROF__PF_COUNTER  0x40000000u   /* + counter index */
#define PROF__PF_MEMORY   0x50000000u   /* + device + 1 */
#define PROF__PF_POWER    0x58000000u   /* + device: PROF_ENERGY's power track */
#define PROF__PF_METRIC   0x59000000u   /* + device * 256 + metric (a throttle flag: 64 + bit) */
#define PROF__PF_GPU      0x60000000u   /* + device */
#define PROF__PF_STREAM   0x70000000u   /* + stream index */
#define PROF__PF_SLANES   0x78000000u   /* + stream index * 16 + lane */
#define PROF__LANES       16            /* overlap tracks per thread or stream */

PROF__SHARED unsigned char *prof__pb_varint(unsigned char *o, uint64_t v) {
    while (v >= 0x80) { *o++ = (unsigned char)(v | 0x80); v >>= 7; }
    *o++ = (unsigned char)v;
    return o;
}

static size_t prof__pb_vlen(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

/* A message under construction in a growable buffer: a TrackEvent, a
   TrackDescriptor, whatever a packet holds. Length-delimited fields inside it
   are written whole (their length known first), so nothing moves. */
#endif /* PROF__BODIES */
typedef struct prof__pb {
    unsigned char *b;
    size_t n, cap;
    int err;
} prof__pb;
#if PROF__BODIES

PROF__SHARED unsigned char *prof__pb_room(prof__pb *m, size_t need) {
    unsigned char *b = (unsigned char *)prof__grow(m->b, &m->cap, m->n + need, 1);
    if (!b) { m->err = 1; return NULL; }
    m->b = b;
    return b + m->n;
}

PROF__SHARED void prof__pb_uint(prof__pb *m, uint32_t field, uint64_t v) {
    unsigned char *o = prof__pb_room(m, 24);
    if (o) m->n = (size_t)(prof__pb_varint(prof__pb_varint(o, PROF__PB_TAG(field, PROF__PB_VARINT)), v) - m->b);
}

PROF__SHARED void prof__pb_fixed64(prof__pb *m, uint32_t field, uint64_t v) {
    unsigned char *o = prof__pb_room(m, 24);
    if (!o) return;
    o = prof__pb_varint(o, PROF__PB_TAG(field, PROF__PB_I64));
    for (int i = 0; i < 8; i++) *o++ = (unsigned char)(v >> (8 * i));
    m->n = (size_t)(o - m->b);
}

/* A length-delimited field: bytes, a string, or a message built in another prof__pb. */
PROF__SHARED void prof__pb_bytes(prof__pb *m, uint32_t field, const void *p, size_t len) {
    unsigned char *o = prof__pb_room(m, len + 24);
    if (!o) return;
    o = prof__pb_varint(prof__pb_varint(o, PROF__PB_TAG(field, PROF__PB_LEN)), len);
    if (len) memcpy(o, p, len);
    m->n = (size_t)(o + len - m->b);
}

/* A string field. Protobuf strings are UTF-8: invalid bytes become U+FFFD,
   as the JSON writer makes them, so both formats say the same. */
static void prof__pb_str(prof__pb *m, uint32_t field, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "(null)"), *q = p;
    size_t n = 0, raw;
    while (*q) {
        int len = *q < 0x80 ? 1 : prof__utf8_seq(q);
        n += len ? (size_t)len : 3;
        q += len ? len : 1;
    }
    raw = (size_t)(q - p);
    if (n == raw) { prof__pb_bytes(m, field, p, n); return; }
    unsigned char *o = prof__pb_room(m, n + 24);
    if (!o) return;
    o = prof__pb_varint(prof__pb_varint(o, PROF__PB_TAG(field, PROF__PB_LEN)), n);
    for (q = p; *q;) {
        int len = *q < 0x80 ? 1 : prof__utf8_seq(q);
        if (len) { memcpy(o, q, (size_t)len); o += len; q += len; }
        else { memcpy(o, "\xEF\xBF\xBD", 3); o += 3; q++; }
    }
    m->n = (size_t)(o - m->b);
}

/* Appends sub as field `field` of m, and empties sub for reuse. */
PROF__SHARED void prof__pb_sub(prof__pb *m, uint32_t field, prof__pb *sub) {
    prof__pb_bytes(m, field, sub->b, sub->n);
    m->err |= sub->err;
    sub->n = 0;
}

typedef struct prof__lane {             /* an overlap track: its slices, (t0, t1) */
    uint64_t *iv;                       /* pairs in ticks */
    size_t n, cap;
} prof__lane;

typedef struct prof__pf {               /* Perfetto-writing context */
    prof__w w;                          /* the buffer, the file, the first error */
    const prof__cycle *cy;
    prof__tclock clk;                   /* ticks -> trace ns (REALTIME) */
    int64_t base;                       /* baseTimeNanoseconds */
    uint64_t uuid0;
    long pid;                           /* the trace's process (prof__trace_pid) */
    prof__names names, keys;            /* event names, argument keys: pointer -> off:
                                           iid, len: the sequence last told it */
    uint32_t iids;                      /* interning ids handed out */
    prof__names ctr;                    /* counter name pointer -> off: track index */
    int power_dev;                      /* the device whose power track is being written, + 1 */
    uint64_t metric_track;              /* the device track being written (PROF_GPU_METRICS), or 0 */
    const char **ctr_name;              /* by track index: counters with the same
                                           text share a track, as in the JSON */
    size_t nctr, ctr_cap;
    uint64_t mem_told;                  /* memory tracks described: bit device + 1 */
    uint32_t seq, seqs;                 /* the current sequence; sequences so far */
    unsigned char seqb[8];              /* its field, as every packet holds it */
    unsigned char tb[16], te[16];       /* what follows a leaf's BEGIN's and END's
                                           timestamps (prof__pf_seq) */
    size_t seqn;
    int64_t last;                       /* the last timestamp on the sequence's clock */
    uint64_t *open;                     /* ends (ticks) of the slices open on the track */
    size_t nopen, open_cap;
    prof__lane lane[PROF__LANES];       /* this track's overlap tracks */
    unsigned lanes_told;                /* bit L: lane L's track is described */
    unsigned char *told;                /* by thread index: its track is described in this part */
    int stream;                         /* written in parts: a region's GPU side may
                                           be in a later part, its flow is written anyway */
    uint64_t part_t0;                   /* where this part's records begin (ticks): a
                                           region that began before holds slices written
                                           already, and goes to the overlap track */
    /* scratch messages: an event's fields, an annotation, a packet's fields,
       and two levels of messages inside it */
    prof__pb ev, an, pk, d1, d2;
    size_t nev;
    uint32_t streams;                   /* GPU streams written */
    uint32_t act_tracks;                /* kernel capture's tracks written */
    uint64_t act_end;                   /* the last end on the current one (ticks) */
    int smp;                            /* PROF_SAMPLE: its parts had samples, or said why not */
    uint64_t smp_lost;                  /*   lost in them so far */
    int64_t smp_period;
    int smp_refused;
} prof__pf;

/* One whole packet: the sequence, then the TracePacket fields m holds. */
static void prof__pf_packet(prof__pf *p, prof__pb *m) {
    prof__w *w = &p->w;
    unsigned char *o = (unsigned char *)prof__w_room(w, 32);
    *o++ = (unsigned char)PROF__PB_TAG(1, PROF__PB_LEN);           /* Trace.packet */
    o = prof__pb_varint(o, p->seqn + m->n);
    memcpy(o, p->seqb, sizeof p->seqb);
    w->n = (size_t)(o + p->seqn - (unsigned char *)w->buf);
    prof__w_put(w, (const char *)m->b, m->n);
    if (m->err) w->err = 1;
    m->n = 0;
    m->err = 0;
}

/* Makes seq the current sequence: the field every packet starts with, and
   what follows a leaf's packets' timestamps (16 bytes each: that field,
   then the TrackEvent's tag, length, type and, BEGIN's, the name's tag). */
static void prof__pf_seq(prof__pf *p, uint32_t seq) {
    unsigned char *tb = p->tb, *te = p->te;
    p->seq = seq;
    unsigned char *o = prof__pb_varint(p->seqb, PROF__PB_TAG(PROF__TP_SEQ_ID, PROF__PB_VARINT));
    const size_t sn = p->seqn = (size_t)(prof__pb_varint(o, seq) - p->seqb);
    memset(tb, 0, sizeof p->tb);
    memset(te, 0, sizeof p->te);
    memcpy(tb, p->seqb, sn);
    memcpy(te, p->seqb, sn);
    tb[sn] = te[sn] = (unsigned char)PROF__PB_TAG(PROF__TP_TRACK_EVENT, PROF__PB_LEN);
    tb[sn + 1] = 4;
    te[sn + 1] = 2;
    tb[sn + 2] = te[sn + 2] = (unsigned char)PROF__PB_TAG(PROF__TE_TYPE, PROF__PB_VARINT);
    tb[sn + 3] = PROF__TE_BEGIN;
    te[sn + 3] = PROF__TE_END;
    tb[sn + 4] = (unsigned char)PROF__PB_TAG(PROF__TE_NAME_IID, PROF__PB_VARINT);
}

/* Starts a new sequence: its incremental state cleared, its default track,
   and its own clock (PROF__CLK_SEQ: incremental, equal to REALTIME) at base. */
static void prof__pf_sequence(prof__pf *p, uint64_t track) {
    prof__pb *m = &p->pk, *d1 = &p->d1, *d2 = &p->d2;
    prof__pf_seq(p, ++p->seqs);
    p->last = p->base;
    p->nopen = 0;
    for (int l = 0; l < PROF__LANES; l++) p->lane[l].n = 0;
    p->lanes_told = 0;
    prof__pb_uint(m, PROF__TP_SEQ_FLAGS, 1);            /* SEQ_INCREMENTAL_STATE_CLEARED */
    prof__pb_uint(d1, PROF__TP_CLOCK_ID, PROF__CLK_SEQ); /* TracePacketDefaults.timestamp_clock_id */
    prof__pb_uint(d2, 11, track);                       /* TrackEventDefaults.track_uuid */
    prof__pb_sub(d1, 11, d2);                           /* .track_event_defaults */
    prof__pb_sub(m, PROF__TP_DEFAULTS, d1);
    prof__pb_uint(d2, 1, PROF__CLK_SEQ);                /* Clock.clock_id */
    prof__pb_uint(d2, 2, (uint64_t)p->base);            /* Clock.timestamp */
    prof__pb_uint(d2, 3, 1);                            /* Clock.is_incremental */
    prof__pb_sub(d1, 1, d2);                            /* ClockSnapshot.clocks */
    prof__pb_uint(d2, 1, PROF__CLK_REALTIME);
    prof__pb_uint(d2, 2, (uint64_t)p->base);
    prof__pb_sub(d1, 1, d2);
    prof__pb_sub(m, PROF__TP_CLOCK_SNAPSHOT, d1);
    prof__pf_packet(p, m);
}

/* The interning id of name, an InternedData packet written first if this
   sequence was not told it yet. table: p->names (InternedData.event_names,
   field 2) or p->keys (debug_annotation_names, 3). Leaves p->ev alone. */
static uint32_t prof__pf_intern(prof__pf *p, prof__names *table, uint32_t field, const char *name) {
    static const char null_key[] = "(null)";
    int fresh;
    ptrdiff_t j = prof__names_slot(table, name ? name : null_key, &fresh);
    if (j < 0) { p->w.err = 1; return 0; }
    prof__nslot *sl = &table->s[j];
    if (fresh) { sl->off = ++p->iids; sl->len = 0; }
    if (sl->len != p->seq) {
        sl->len = p->seq;
        prof__pb_uint(&p->d2, 1, sl->off);              /* EventName.iid */
        prof__pb_str(&p->d2, 2, name);                  /* EventName.name */
        prof__pb_sub(&p->d1, field, &p->d2);
        prof__pb_sub(&p->pk, PROF__TP_INTERNED, &p->d1);
        prof__pf_packet(p, &p->pk);
    }
    return sl->off;
}

/* A TrackDescriptor packet: uuid, parent (0: none), name (NULL: none), and
   p->d2 as field `field` (a ProcessDescriptor, 3; ThreadDescriptor, 4;
   CounterDescriptor, 8; 0: nothing). Leaves p->ev alone. */
static void prof__pf_track(prof__pf *p, uint64_t uuid, uint64_t parent, const char *name, uint32_t field) {
    prof__pb *d1 = &p->d1;
    prof__pb_uint(d1, 1, uuid);
    if (parent) prof__pb_uint(d1, 5, parent);
    if (name) prof__pb_str(d1, 2, name);
    if (field) prof__pb_sub(d1, field, &p->d2);
    prof__pb_sub(&p->pk, PROF__TP_TRACK_DESC, d1);
    prof__pf_packet(p, &p->pk);
}

static int64_t prof__pf_ts(const prof__pf *p, uint64_t tick) { return prof__tclock_ns(&p->clk, tick); }

/* A packet's timestamp: a delta on the sequence's clock, or where time goes
   back on the sequence (a region on an overlap track, a thread met again)
   or the slice is on an overlap track, ts itself on REALTIME. */
PROF__INLINE unsigned char *prof__pf_time(prof__pf *p, unsigned char *o, int64_t ts, int absolute) {
    *o++ = (unsigned char)PROF__PB_TAG(PROF__TP_TIMESTAMP, PROF__PB_VARINT);
    if (PROF__LIKELY(ts >= p->last && !absolute)) {
        o = prof__pb_varint(o, (uint64_t)(ts - p->last));
        p->last = ts;
        return o;
    }
    o = prof__pb_varint(o, (uint64_t)ts);
    o = prof__pb_varint(o, PROF__PB_TAG(PROF__TP_CLOCK_ID, PROF__PB_VARINT));
    *o++ = PROF__CLK_REALTIME;
    return o;
}

/* A packet holding one TrackEvent: its type, then the fields in p->ev. */
static void prof__pf_event(prof__pf *p, int64_t ts, int absolute, uint32_t type) {
    prof__w *w = &p->w;
    prof__pb *m = &p->ev;
    unsigned char head[40], *o = prof__pf_time(p, head, ts, absolute);
    size_t hn = (size_t)(o - head), te = 2 + m->n;
    o = (unsigned char *)prof__w_room(w, 96);
    *o++ = (unsigned char)PROF__PB_TAG(1, PROF__PB_LEN);
    o = prof__pb_varint(o, hn + p->seqn + 1 + prof__pb_vlen(te) + te);
    memcpy(o, head, sizeof head);
    o += hn;
    memcpy(o, p->seqb, sizeof p->seqb);
    o += p->seqn;
    *o++ = (unsigned char)PROF__PB_TAG(PROF__TP_TRACK_EVENT, PROF__PB_LEN);
    o = prof__pb_varint(o, te);
    *o++ = (unsigned char)PROF__PB_TAG(PROF__TE_TYPE, PROF__PB_VARINT);
    *o++ = (unsigned char)type;
    w->n = (size_t)(o - (unsigned char *)w->buf);
    prof__w_put(w, (const char *)m->b, m->n);
    if (m->err) w->err = 1;
    m->n = 0;
    m->err = 0;
}

/* A debug annotation on the event being built: key = v, or = s if not NULL. */
static void prof__pf_arg(prof__pf *p, const char *key, int64_t v, const char *s) {
    prof__pb *a = &p->an;
    prof__pb_uint(a, 1, prof__pf_intern(p, &p->keys, 3, key));  /* DebugAnnotation.name_iid */
    if (s) prof__pb_str(a, 6, s);                       /* .string_value */
    else prof__pb_uint(a, 4, (uint64_t)v);              /* .int_value */
    prof__pb_sub(&p->ev, PROF__TE_ANNOTATION, a);
}

/* The plain slice ends: BEGIN with an interned name, END with nothing, on
   the sequence's own track; written straight into the buffer. Most events. */
PROF__INLINE void prof__pf_plain(prof__pf *p, int64_t ts, uint32_t type, uint32_t iid) {
    prof__w *w = &p->w;
    unsigned char *o0 = (unsigned char *)prof__w_room(w, 64), *o = o0 + 2, *te;
    o = prof__pf_time(p, o, ts, 0);
    memcpy(o, p->seqb, sizeof p->seqb);
    o += p->seqn;
    *o = (unsigned char)PROF__PB_TAG(PROF__TP_TRACK_EVENT, PROF__PB_LEN);
    te = o + 1;
    o[2] = (unsigned char)PROF__PB_TAG(PROF__TE_TYPE, PROF__PB_VARINT);
    o[3] = (unsigned char)type;
    o += 4;
    if (iid) {
        *o++ = (unsigned char)PROF__PB_TAG(PROF__TE_NAME_IID, PROF__PB_VARINT);
        o = prof__pb_varint(o, iid);
    }
    *te = (unsigned char)(o - te - 1);                  /* all under 128 bytes */
    o0[0] = (unsigned char)PROF__PB_TAG(1, PROF__PB_LEN);
    o0[1] = (unsigned char)(o - o0 - 2);
    w->n = (size_t)(o - (unsigned char *)w->buf);
}

/* The interning id of a region's name: most are told the sequence already. */
PROF__INLINE uint32_t prof__pf_name(prof__pf *p, const char *name) {
    prof__names *t = &p->names;
    const prof__nslot *sl = &t->s[prof__hash(name) & (t->slots - 1)];
    if (PROF__LIKELY(sl->key == name && sl->len == p->seq && name)) return sl->off;
    return prof__pf_intern(p, t, 2, name);
}

/* The bytes of v at o, the lowest first: 8 stored, however many count. */
PROF__INLINE void prof__put_le64(unsigned char *o, uint64_t v) {
#if PROF__LE
    memcpy(o, &v, 8);
#else
    for (int k = 0; k < 8; k++) o[k] = (unsigned char)(v >> 8 * k);
#endif
}

/* The head of a packet at o whose timestamp's delta d is under 2^14: the
   packet's tag and length (for tn bytes after the delta), the timestamp's
   tag and d, as one word. Returns where the rest goes. */
PROF__INLINE unsigned char *prof__pf_word(unsigned char *o, uint32_t d, size_t tn) {
    const uint64_t head = (uint64_t)PROF__PB_TAG(1, PROF__PB_LEN) |
                          (uint64_t)PROF__PB_TAG(PROF__TP_TIMESTAMP, PROF__PB_VARINT) << 16;
    if (d < 0x80) {
        prof__put_le64(o, head | (uint64_t)(2 + tn) << 8 | (uint64_t)d << 24);
        return o + 4;
    }
    prof__put_le64(o, head | (uint64_t)(3 + tn) << 8 | (uint64_t)((d & 0x7f) | 0x80) << 24 | (uint64_t)(d >> 7) << 32);
    return o + 5;
}

/* A leaf's BEGIN and END, any deltas, any name id (prof__pf_word's
   fast case aside): tb and te as prof__pf_seq makes them, sn the sequence's
   field's length. At most 64 bytes stored. Returns the end. */
static unsigned char *prof__pf_pair(unsigned char *o, uint64_t d0, uint64_t d1, uint32_t iid,
                                    const unsigned char *tb, const unsigned char *te, size_t sn) {
    unsigned char *o0 = o, *t;
    o[0] = (unsigned char)PROF__PB_TAG(1, PROF__PB_LEN);
    o[2] = (unsigned char)PROF__PB_TAG(PROF__TP_TIMESTAMP, PROF__PB_VARINT);
    t = prof__pb_varint(o + 3, d0);
    memcpy(t, tb, 16);
    o = prof__pb_varint(t + sn + 5, iid);
    t[sn + 1] = (unsigned char)(o - t - sn - 2);        /* the TrackEvent's length */
    o0[1] = (unsigned char)(o - o0 - 2);
    o0 = o;
    o[0] = (unsigned char)PROF__PB_TAG(1, PROF__PB_LEN);
    o[2] = (unsigned char)PROF__PB_TAG(PROF__TP_TIMESTAMP, PROF__PB_VARINT);
    t = prof__pb_varint(o + 3, d1);
    memcpy(t, te, 16);
    o = t + sn + 4;
    o0[1] = (unsigned char)(o - o0 - 2);
    return o;
}

/* A region with nothing inside it, nothing attached, on its own thread's
   track: its BEGIN and END at once, 0 if it must go the long way (it
   overlaps what is open). Most regions of most traces (prof__pf_sink_run takes
   runs of them). */
static int prof__pf_leaf(prof__pf *p, const prof__ev *e) {
    int64_t t0 = prof__pf_ts(p, e->t0), t1 = prof__pf_ts(p, e->t1);
    if (PROF__UNLIKELY(t0 < p->last || t1 < t0 || (p->nopen && e->t1 > p->open[p->nopen - 1]) ||
                       e->t0 < p->part_t0))
        return 0;
    uint32_t iid = prof__pf_name(p, e->name);
    p->nev++;
    if (PROF__UNLIKELY(!iid)) {         /* no memory for its name */
        prof__pf_plain(p, t0, PROF__TE_BEGIN, 0);
        prof__pf_plain(p, t1, PROF__TE_END, 0);
        return 1;
    }
    prof__w *w = &p->w;
    unsigned char *o = (unsigned char *)prof__w_room(w, 64);
    o = prof__pf_pair(o, (uint64_t)(t0 - p->last), (uint64_t)(t1 - t0), iid, p->tb, p->te, p->seqn);
    w->n = (size_t)(o - (unsigned char *)w->buf);
    p->last = t1;
    return 1;
}

/* The walk's plains(): a run of leaf regions, each written as prof__pf_leaf
   writes it, in a loop with the writer's state in locals and the packets'
   constant bytes stored from templates; deltas under 2^14 and name ids
   under 128 (most) in words. It takes the usual case and leaves the rest to span(): a
   region that must go the long way, and one whose name this sequence was
   not told yet or is not in its first slot. At most 64 bytes an event: the
   room for a batch is made once. */
PROF__INLINE size_t prof__pf_sink_run(prof__pf *p, const prof__cycle *cy, size_t i, const size_t sn, const uint64_t from) {
    const prof__ev *const ev = cy->ev;
    const uint32_t *const first = cy->first;
    const uint32_t seq = p->seq;
    const size_t n_ev = cy->n, i0 = i, mask = p->names.slots - 1;
    const prof__tclock clk = p->clk;
    const prof__nslot *const slot = p->names.s;
    /* where a leaf must end, in ticks: by the end of what holds it (ticks
       are under 2^63: the difference's sign tells) */
    const uint64_t top = p->nopen ? p->open[p->nopen - 1] : (uint64_t)INT64_MAX;
    int64_t last = p->last;
    unsigned char tb[16], te[16];       /* in locals: no byte stored changes them */
    memcpy(tb, p->tb, sizeof tb);
    memcpy(te, p->te, sizeof te);
    for (;;) {
        unsigned char *const buf = (unsigned char *)p->w.buf, *o = buf + p->w.n;
        const size_t room = (PROF__WBUF - p->w.n) / 64, stop = n_ev - i < room ? n_ev : i + room;
        const prof__ev *e = ev + i, *const estop = ev + stop;
        const uint32_t *f = first + i;
        for (; e < estop && prof__wplain(e, 0, f); e++, f++) {     /* with f, kt is not read */
            const int64_t t0 = prof__tclock_ns(&clk, e->t0), t1 = prof__tclock_ns(&clk, e->t1);
            const int64_t d0 = t0 - last, d1 = t1 - t0;
            /* a slot told this sequence (len == seq, never 0) holds a name and its iid */
            const prof__nslot *sl = &slot[prof__hash(e->name) & mask];
            if (PROF__UNLIKELY((d0 | d1 | (int64_t)(top - e->t1)) < 0 || e->t0 < from || sl->key != e->name ||
                               sl->len != seq))
                break;
            const uint32_t iid = sl->off;
            if (PROF__LIKELY((uint64_t)(d0 | d1) < 0x4000 && iid < 0x80)) {
                unsigned char *t = prof__pf_word(o, (uint32_t)d0, sn + 6);
                memcpy(t, tb, 16);
                t[sn + 5] = (unsigned char)iid;
                o = prof__pf_word(t + sn + 6, (uint32_t)d1, sn + 4);
                memcpy(o, te, 16);
                o += sn + 4;
            } else {
                o = prof__pf_pair(o, (uint64_t)d0, (uint64_t)d1, iid, tb, te, sn);
            }
            last = t1;
        }
        i = (size_t)(e - ev);
        p->w.n = (size_t)(o - buf);
        if (i < stop || i == n_ev) break;
        prof__w_flush(&p->w);
    }
    p->last = last;
    p->nev += i - i0;
    return i;
}

/* The usual case made constants: the sequence's field is 2 bytes for the
   first 127 sequences (most traces' all), and only a streamed part has a
   start that a region may begin before. */
static size_t prof__pf_sink_plains(void *s, const prof__cycle *cy, const prof__wthread *th, size_t i) {
    prof__pf *p = (prof__pf *)s;
    if (th->os_tid || !cy->first) return i;
    if (p->seqn == 2 && !p->part_t0) return prof__pf_sink_run(p, cy, i, 2, 0);
    return prof__pf_sink_run(p, cy, i, p->seqn, p->part_t0);
}

/* The name of a step, "ProfilerStep#N", into buf[48]. */
static const char *prof__step_name(char *buf, uint32_t n) {
    memcpy(buf, "ProfilerStep#", 13);
    *prof__fmt_u64(buf + 13, n) = 0;
    return buf;
}

/* Where a region that overlaps another only partly goes (slices on one
   track must nest), as Perfetto does with such JSON events: the first of the
   track's overlap tracks ("lanes", under it) on which it nests with or
   misses every slice; the last if none. Returns the lane + 1, and the
   lane's track in *uuid, described on first use. Lanes start afresh with
   each sequence. */
static uint32_t prof__pf_lane(prof__pf *p, uint64_t lanes, uint64_t parent, uint64_t t0, uint64_t t1, uint64_t *uuid) {
    int l = 0;
    for (; l < PROF__LANES - 1; l++) {
        const prof__lane *ln = &p->lane[l];
        size_t k = 0;
        for (; k < ln->n; k += 2) {
            uint64_t a = ln->iv[k], b = ln->iv[k + 1];
            if (!(t1 <= a || t0 >= b || (t0 >= a && t1 <= b) || (t0 <= a && t1 >= b))) break;
        }
        if (k >= ln->n) break;
    }
    prof__lane *ln = &p->lane[l];
    uint64_t *iv = (uint64_t *)prof__grow(ln->iv, &ln->cap, ln->n + 2, sizeof *iv);
    if (iv) {
        ln->iv = iv;
        iv[ln->n++] = t0;
        iv[ln->n++] = t1;
    } else {
        p->w.err = 1;
    }
    *uuid = lanes + (uint64_t)l;
    if (!(p->lanes_told >> l & 1)) {
        p->lanes_told |= 1u << l;
        prof__pf_track(p, *uuid, parent, "overlapping regions", 0);
    }
    return (uint32_t)l + 1;
}

/* A region's or step's BEGIN. 0, or its overlap lane + 1 (it began before
   something already written ended, or ends after what holds it). */
static uint32_t prof__pf_begin(prof__pf *p, const prof__ev *e, uint32_t lead) {
    int64_t ts = prof__pf_ts(p, e->t0);
    int over = ts < p->last || (p->nopen && e->t1 > p->open[p->nopen - 1]) || e->t0 < p->part_t0;
    if (!over) {
        uint64_t *o = (uint64_t *)prof__grow(p->open, &p->open_cap, p->nopen + 1, sizeof *o);
        if (!o) { p->w.err = 1; return 0; }
        p->open = o;
        o[p->nopen++] = e->t1;
    }
    p->nev++;
    if (PROF__LIKELY(!over && e->kind == PROF__K_REGION)) {
        prof__pf_plain(p, ts, PROF__TE_BEGIN, prof__pf_name(p, e->name));
        return 0;
    }
    uint32_t lane = 0;
    if (over) {
        uint64_t uuid;
        lane = prof__pf_lane(p, p->uuid0 + PROF__PF_LANES + 16ull * lead, p->uuid0 + PROF__PF_THREAD + lead, e->t0,
                             e->t1, &uuid);
        prof__pb_uint(&p->ev, PROF__TE_TRACK, uuid);
    }
    if (e->kind == PROF__K_STEP) {
        char name[48];
        prof__pb_str(&p->ev, PROF__TE_NAME, prof__step_name(name, e->aux));
    } else {
        prof__pb_uint(&p->ev, PROF__TE_NAME_IID, prof__pf_intern(p, &p->names, 2, e->name));
    }
    if (e->kind == PROF__K_GPU_REGION && (p->stream || prof__gpu_find(p->cy->gcorr, p->cy->ngcorr, e->aux)))
        prof__pb_fixed64(&p->ev, PROF__TE_FLOW, p->uuid0 | e->aux);  /* to its GPU side */
    prof__pf_event(p, ts, over, PROF__TE_BEGIN);
    return lane;
}

/* A region's or step's END, with what the JSON puts in its args; over: its
   lane + 1, or 0. */
static void prof__pf_end(prof__pf *p, const prof__ev *e, uint32_t over, uint32_t lead, long os_tid,
                         const size_t *args, size_t nargs) {
    const prof__cycle *cy = p->cy;
    int64_t ts = prof__pf_ts(p, e->t1);
    uint32_t corr = e->kind == PROF__K_GPU_REGION && (p->stream || prof__gpu_find(cy->gcorr, cy->ngcorr, e->aux))
                        ? e->aux : 0;
    if (!over) p->nopen--;
    int energy = e->kind == PROF__K_STEP && cy->en;
    if (PROF__LIKELY(!over && !nargs && !corr && !os_tid && e->kind != PROF__K_CLIPPED && e->kind != PROF__K_OPEN &&
                     !energy)) {
        prof__pf_plain(p, ts, PROF__TE_END, 0);
        return;
    }
    for (int i = 0, share = 0; energy && i < cy->en->nd; i++) {  /* PROF_ENERGY: as the JSON's args */
        double j;
        int how = prof__en_step(cy, i, e->t0, e->t1, &j);
        if (how) {
            uint64_t bits;
            memcpy(&bits, &j, sizeof bits);                         /* the JSON's 3 decimals already */
            prof__pb_uint(&p->an, 1, prof__pf_intern(p, &p->keys, 3, cy->en->d[i].key));  /* DebugAnnotation.name_iid */
            prof__pb_fixed64(&p->an, 5, bits);                                  /* .double_value */
            prof__pb_sub(&p->ev, PROF__TE_ANNOTATION, &p->an);
        }
        if (how == 2 && !share++) prof__pf_arg(p, "energy", 0, PROF__EN_SHARE);
    }
    if (over) prof__pb_uint(&p->ev, PROF__TE_TRACK, p->uuid0 + PROF__PF_LANES + 16ull * lead + over - 1);
    if (e->kind == PROF__K_CLIPPED) prof__pf_arg(p, "clipped", 0, PROF__CLIPPED_MARK);
    if (e->kind == PROF__K_OPEN) prof__pf_arg(p, "open", 0, PROF__OPEN_MARK);
    if (corr) prof__pf_arg(p, "correlation", corr, NULL);
    if (os_tid) prof__pf_arg(p, "os_tid", os_tid, NULL);
    for (size_t i = 0; i < nargs; i++) {
        const prof__ev *a = &cy->ev[args[i]];
        if (a->kind == PROF__K_ARG_INT) prof__pf_arg(p, a->name, (int64_t)a->t1, NULL);
        else prof__pf_arg(p, a->name, 0, (const char *)(uintptr_t)a->t1);
    }
    prof__pf_event(p, ts, over != 0, PROF__TE_END);
}

/* The track of a counter: one per distinct text, under the process. */
static uint64_t prof__pf_counter_track(prof__pf *p, const char *name) {
    int fresh;
    ptrdiff_t j = prof__names_slot(&p->ctr, name ? name : "(null)", &fresh);
    if (j < 0) { p->w.err = 1; return 0; }
    if (fresh) {
        const char *text = name ? name : "(null)";
        size_t k = 0;
        while (k < p->nctr && strcmp(p->ctr_name[k], text)) k++;
        if (k == p->nctr) {
            const char **cn = (const char **)prof__grow(p->ctr_name, &p->ctr_cap, k + 1, sizeof *cn);
            if (!cn) { p->w.err = 1; return 0; }
            p->ctr_name = cn;
            cn[p->nctr++] = text;             /* p->d2 empty: an empty CounterDescriptor */
            prof__pf_track(p, p->uuid0 + PROF__PF_COUNTER + k, p->uuid0 + PROF__PF_PROCESS, text, 8);
        }
        p->ctr.s[j].off = (uint32_t)k;
    }
    return p->uuid0 + PROF__PF_COUNTER + p->ctr.s[j].off;
}

/* A memory event as the JSON writes it: a "[memory]" instant with Kineto's
   args, and a sample of the device's memory counter track. */
static void prof__pf_mem(prof__pf *p, const prof__ev *e, const prof__ev *tot) {
    int dev = (int)e->aux - 1;
    int64_t total = (int64_t)tot->t1, ts = prof__pf_ts(p, e->t0);
    uint64_t track = p->uuid0 + PROF__PF_MEMORY + (uint64_t)(dev + 1);
    if (dev + 1 >= 64 || !(p->mem_told >> (dev + 1) & 1)) {
        char name[48];
        if (dev < 0) snprintf(name, sizeof name, "Memory (CPU)");
        else snprintf(name, sizeof name, "Memory (GPU %d)", dev);
        prof__pb_uint(&p->d2, 3, 3);                    /* CounterDescriptor.unit: UNIT_SIZE_BYTES */
        prof__pf_track(p, track, p->uuid0 + PROF__PF_PROCESS, name, 8);
        if (dev + 1 < 64) p->mem_told |= 1ull << (dev + 1);
    }
    prof__pb_uint(&p->ev, PROF__TE_NAME_IID, prof__pf_intern(p, &p->names, 2, "[memory]"));
    prof__pf_arg(p, "Device Type", dev < 0 ? 0 : 1, NULL);
    prof__pf_arg(p, "Device Id", dev, NULL);
    prof__pf_arg(p, "Addr", (int64_t)(uintptr_t)e->name, NULL);
    prof__pf_arg(p, "Bytes", (int64_t)e->t1, NULL);
    prof__pf_arg(p, "Total Allocated", total, NULL);
    prof__pf_arg(p, "Total Reserved", total, NULL);
    prof__pf_event(p, ts, 0, PROF__TE_INSTANT);
    prof__pb_uint(&p->ev, PROF__TE_TRACK, track);
    prof__pb_uint(&p->ev, PROF__TE_COUNTER, (uint64_t)total);
    prof__pf_event(p, ts, 0, PROF__TE_COUNTER_T);
    p->nev += 2;
}

/* PROF_ENERGY's power track: a counter track per device under the
   process, "GPU d power (W)", its own sequence (its samples in time order). */
static void prof__pf_sink_power(void *s, const prof__cycle *cy, int dev, uint64_t tick, double watts) {
    prof__pf *p = (prof__pf *)s;
    uint64_t track = p->uuid0 + PROF__PF_POWER + (uint64_t)dev, bits;
    (void)cy;
    if (p->power_dev != dev + 1) {      /* its first sample */
        char name[48];
        snprintf(name, sizeof name, "GPU %d power (W)", dev);
        prof__pb_str(&p->d2, 6, "W");                   /* CounterDescriptor.unit_name */
        prof__pf_track(p, track, p->uuid0 + PROF__PF_PROCESS, name, 8);
        prof__pf_sequence(p, track);
        p->power_dev = dev + 1;
    }
    char num[48];
    snprintf(num, sizeof num, "%.3f", watts);          /* the JSON's 3 decimals */
    watts = strtod(num, NULL);
    memcpy(&bits, &watts, sizeof bits);
    prof__pb_fixed64(&p->ev, PROF__TE_DCOUNTER, bits);
    prof__pf_event(p, prof__pf_ts(p, tick), 0, PROF__TE_COUNTER_T);
    p->nev++;
}

/* PROF_GPU_METRICS' tracks: a counter track each under the process, its
   own sequence, named as the JSON's counters, its unit the JSON's key. */
static void prof__pf_sink_metric(void *s, const prof__cycle *cy, int dev, int m, int bit, uint64_t tick, double v) {
    prof__pf *p = (prof__pf *)s;
    uint64_t track = p->uuid0 + PROF__PF_METRIC + (uint64_t)dev * 256 + (uint64_t)(bit >= 0 ? 64 + bit : m), bits;
    if (p->metric_track != track) {     /* its first sample */
        char name[128];
        prof__gm_track(cy, dev, m, bit, name, sizeof name);
        prof__pb_str(&p->d2, 6, prof__gm_unit[m]);     /* CounterDescriptor.unit_name */
        prof__pf_track(p, track, p->uuid0 + PROF__PF_PROCESS, name, 8);
        prof__pf_sequence(p, track);
        p->metric_track = track;
    }
    char num[48];
    snprintf(num, sizeof num, "%.3f", v);              /* the JSON's 3 decimals */
    v = strtod(num, NULL);
    memcpy(&bits, &v, sizeof bits);
    prof__pb_fixed64(&p->ev, PROF__TE_DCOUNTER, bits);
    prof__pf_event(p, prof__pf_ts(p, tick), 0, PROF__TE_COUNTER_T);
    p->nev++;
}

/* ---- the Perfetto sink: the walk's callbacks ----
   The CPU side: a sequence per run of a thread's records, in time order
   (the walk's begin() puts each span's BEGIN where it begins). */
static void prof__pf_sink_thread(void *s, const prof__cycle *cy, const prof__wthread *th) {
    prof__pf *p = (prof__pf *)s;
    if (!p->told[th->lead]) {           /* its track, before its first event: alike-named threads
                                           share the first one's, which the walk may reach last */
        p->told[th->lead] = 1;
        prof__pb_uint(&p->d2, 1, (uint64_t)p->pid);       /* ThreadDescriptor.pid */
        prof__pb_uint(&p->d2, 2, (uint64_t)th->tid);      /* .tid: the lead's */
        prof__pb_str(&p->d2, 5, cy->label[th->lead]);      /* .thread_name */
        prof__pf_track(p, p->uuid0 + PROF__PF_THREAD + th->lead, p->uuid0 + PROF__PF_PROCESS, NULL, 4);
    }
    prof__pf_sequence(p, p->uuid0 + PROF__PF_THREAD + th->lead);
}

static uint32_t prof__pf_sink_begin(void *s, const prof__cycle *cy, const prof__wthread *th, size_t i) {
    return prof__pf_begin((prof__pf *)s, &cy->ev[i], th->lead);
}

PROF__INLINE void prof__pf_sink_span(void *s, const prof__cycle *cy, const prof__wthread *th, const prof__wreg *r) {
    prof__pf *p = (prof__pf *)s;
    const prof__ev *e = r->e;
    uint32_t begun = r->begun;
    (void)cy;
    if (r->leaf) {                      /* nothing inside it: BEGIN and END at once, if it can */
        if (PROF__LIKELY(r->plain && !th->os_tid) && prof__pf_leaf(p, e)) return;
        begun = prof__pf_begin(p, e, th->lead);
    }
    prof__pf_end(p, e, begun, th->lead, th->os_tid, r->args, r->nargs);
}

static void prof__pf_sink_point(void *s, const prof__cycle *cy, const prof__wthread *th, const prof__ev *e) {
    prof__pf *p = (prof__pf *)s;
    (void)cy;
    (void)th;
    if (e->kind == PROF__K_INSTANT) {
        prof__pb_uint(&p->ev, PROF__TE_NAME_IID, prof__pf_intern(p, &p->names, 2, e->name));
        prof__pf_event(p, prof__pf_ts(p, e->t0), 0, PROF__TE_INSTANT);
    } else if (e->kind == PROF__K_COUNTER) {
        uint64_t ctrack = prof__pf_counter_track(p, e->name);
        prof__pb_uint(&p->ev, PROF__TE_TRACK, ctrack);
        prof__pb_fixed64(&p->ev, PROF__TE_DCOUNTER, e->t1);     /* the double's bits */
        prof__pf_event(p, prof__pf_ts(p, e->t0), 0, PROF__TE_COUNTER_T);
    } else {                            /* a sync: on the process's track, as the JSON's "s":"p" */
        prof__pb_uint(&p->ev, PROF__TE_TRACK, p->uuid0 + PROF__PF_PROCESS);
        prof__pb_uint(&p->ev, PROF__TE_NAME_IID, prof__pf_intern(p, &p->names, 2, "prof_sync"));
        prof__pf_arg(p, "sync", e->aux, NULL);
        prof__pf_event(p, prof__pf_ts(p, e->t0), 0, PROF__TE_INSTANT);
    }
    p->nev++;
}

static void prof__pf_sink_mem(void *s, const prof__cycle *cy, const prof__wthread *th, const prof__ev *e,
                         const prof__ev *tot) {
    (void)cy;
    (void)th;
    prof__pf_mem((prof__pf *)s, e, tot);
}

/* The GPU side: a track per device, under it one per stream, each stream a
   sequence; every region ends the flow its CPU region began. Regions on a
   stream nest or follow each other; one that overlaps partly goes to one of
   the stream's overlap tracks. g NULL: the last stream ends. */
static void prof__pf_sink_gpu(void *s, const prof__cycle *cy, const prof__gev *g, int new_dev, int new_stream) {
    prof__pf *p = (prof__pf *)s;
    char label[64];
    uint64_t st = p->uuid0 + PROF__PF_STREAM + p->streams, lane;
    if (!g) {
        while (p->nopen) prof__pf_plain(p, prof__pf_ts(p, p->open[--p->nopen]), PROF__TE_END, 0);
        return;
    }
    if (new_dev) {
        snprintf(label, sizeof label, "GPU %d", g->dev);
        prof__pf_track(p, p->uuid0 + PROF__PF_GPU + (uint32_t)g->dev, 0, label, 0);
    }
    if (new_stream) {
        while (p->nopen) prof__pf_plain(p, prof__pf_ts(p, p->open[--p->nopen]), PROF__TE_END, 0);
        st = p->uuid0 + PROF__PF_STREAM + ++p->streams;
        snprintf(label, sizeof label, "stream %lld", g->stream);
        prof__pf_track(p, st, p->uuid0 + PROF__PF_GPU + (uint32_t)g->dev, label, 0);
        prof__pf_sequence(p, st);
    }
    while (p->nopen && p->open[p->nopen - 1] <= (uint64_t)g->t0)
        prof__pf_plain(p, prof__pf_ts(p, p->open[--p->nopen]), PROF__TE_END, 0);
    int over = p->nopen && (uint64_t)g->t1 > p->open[p->nopen - 1];
    if (over) {
        prof__pf_lane(p, p->uuid0 + PROF__PF_SLANES + 16ull * p->streams, st, (uint64_t)g->t0, (uint64_t)g->t1,
                      &lane);
        prof__pb_uint(&p->ev, PROF__TE_TRACK, lane);
    }
    prof__pb_uint(&p->ev, PROF__TE_NAME_IID, prof__pf_intern(p, &p->names, 2, g->name));
    prof__pb_fixed64(&p->ev, PROF__TE_FLOW_END, p->uuid0 | g->corr);
    prof__pf_arg(p, "device", g->dev, NULL);
    if (cy->nact == cy->nact_api) prof__pf_arg(p, "stream", g->stream, NULL);  /* as the JSON's */
    prof__pf_arg(p, "correlation", g->corr, NULL);
    prof__pf_event(p, prof__pf_ts(p, (uint64_t)g->t0), over, PROF__TE_BEGIN);
    p->nev++;
    if (over) {
        prof__pb_uint(&p->ev, PROF__TE_TRACK, lane);
        prof__pf_event(p, prof__pf_ts(p, (uint64_t)g->t1), 1, PROF__TE_END);
        return;
    }
    uint64_t *o = (uint64_t *)prof__grow(p->open, &p->open_cap, p->nopen + 1, sizeof *o);
    if (!o) { p->w.err = 1; return; }
    p->open = o;
    o[p->nopen++] = (uint64_t)g->t1;
}

/* Kernel capture: each stream's kernels, copies and fills on a track of
   their own beside its GPU regions ("stream 13 kernels", under the device),
   each thread's runtime calls on one of that thread's ("CUDA runtime", "HIP
   runtime"), a flow from each call to what it launched. Each track is a
   sequence, and what one holds follows in time (a stream runs one at a
   time, a thread makes one call at a time): a start before the last end is
   moved to it. */
static void prof__pf_sink_act(void *s, const prof__cycle *cy, const prof__gact *g, int new_track, int new_dev,
                         const uint64_t *flows, size_t nflows, const char *label) {
    prof__pf *p = (prof__pf *)s;
    uint64_t flow0 = p->uuid0 ^ ((uint64_t)1 << 63);    /* apart from the regions' flows */
    int api = g->a.kind == PROF_GPU_RUNTIME;
    (void)cy;
    if (new_track) {
        char name[64];
        uint64_t uuid = p->uuid0 + PROF__PF_ACTS + p->act_tracks++;
        if (api) {
            prof__pb_uint(&p->d2, 1, (uint64_t)p->pid);     /* a track of the thread's */
            prof__pb_uint(&p->d2, 2, (uint64_t)g->tid);
            prof__pb_str(&p->d2, 5, label);
            snprintf(name, sizeof name, "%s runtime", prof__gpu.api ? prof__gpu.api->name : "CUDA");
            prof__pf_track(p, uuid, p->uuid0 + PROF__PF_PROCESS, name, 4);
        } else {
            if (new_dev) {              /* its device first */
                snprintf(name, sizeof name, "GPU %d", g->a.device);
                prof__pf_track(p, p->uuid0 + PROF__PF_GPU + (uint32_t)g->a.device, 0, name, 0);
            }
            if (g->a.kind != PROF_GPU_SYNC) snprintf(name, sizeof name, "stream %lld kernels", g->a.stream);
            else if (g->a.stream >= 0) snprintf(name, sizeof name, "stream %lld sync", g->a.stream);
            else snprintf(name, sizeof name, "sync");
            prof__pf_track(p, uuid, p->uuid0 + PROF__PF_GPU + (uint32_t)g->a.device, name, 0);
        }
        prof__pf_sequence(p, uuid);
        p->act_end = 0;
    }
    uint64_t t0 = g->t0 < p->act_end ? p->act_end : g->t0, t1 = g->t1 < t0 ? t0 : g->t1;
    p->act_end = t1;
    prof__pb_uint(&p->ev, PROF__TE_NAME_IID, prof__pf_intern(p, &p->names, 2, g->a.name));
    for (size_t i = 0; i < nflows; i++) prof__pb_fixed64(&p->ev, api ? PROF__TE_FLOW : PROF__TE_FLOW_END, flow0 + flows[i]);
    if (api) {
        prof__pf_arg(p, "cbid", g->a.cbid, NULL);
    } else {
        prof__pf_arg(p, "device", g->a.device, NULL);
        prof__pf_arg(p, "stream", g->a.stream, NULL);
    }
    prof__pf_arg(p, "correlation", g->a.correlation, NULL);
    if (g->a.kind == PROF_GPU_SYNC) {
        prof__pf_arg(p, "cuda_sync_kind", 0, prof__sync_name(g->a.sync));
        if (g->a.sync == PROF_GPU_SYNC_EVENT || g->a.sync == PROF_GPU_SYNC_WAIT_EVENT) {
            prof__pf_arg(p, "wait_on_stream", g->a.wait_stream, NULL);
            prof__pf_arg(p, "wait_on_cuda_event_record_corr_id", g->a.wait_corr, NULL);
            prof__pf_arg(p, "wait_on_cuda_event_id", g->a.event, NULL);
        }
    } else if (g->a.kind == PROF_GPU_KERNEL) {
        char dims[80];
        snprintf(dims, sizeof dims, "[%d, %d, %d]", g->a.grid[0], g->a.grid[1], g->a.grid[2]);
        prof__pf_arg(p, "grid", 0, dims);
        snprintf(dims, sizeof dims, "[%d, %d, %d]", g->a.block[0], g->a.block[1], g->a.block[2]);
        prof__pf_arg(p, "block", 0, dims);
        prof__pf_arg(p, "registers per thread", g->a.regs, NULL);
        prof__pf_arg(p, "shared memory", g->a.smem, NULL);
    } else if (!api && g->a.kind != PROF_GPU_SYNC) {
        prof__pf_arg(p, "bytes", (int64_t)g->a.bytes, NULL);
    }
    if (g->a.graph) {
        prof__pf_arg(p, "graph id", g->a.graph, NULL);
        prof__pf_arg(p, "graph node id", (int64_t)g->a.graph_node, NULL);
        if (g->a.capture_region) prof__pf_arg(p, "capture_region", 0, g->a.capture_region);
    }
    prof__pf_event(p, prof__pf_ts(p, t0), 0, PROF__TE_BEGIN);
    prof__pf_plain(p, prof__pf_ts(p, t1), PROF__TE_END, 0);
    p->nev++;
}

/* A part of a streamed trace has only its CPU side; the last, everything. */
__extension__ static const prof__sink prof__perfetto_cpu_sink = {
    .need = PROF__NEED_ORDER,
    .thread = prof__pf_sink_thread,
    .begin = prof__pf_sink_begin,
    .span = prof__pf_sink_span,
    .point = prof__pf_sink_point,
    .mem = prof__pf_sink_mem,
    .gpu = NULL,
    .act = NULL,
    .plains = prof__pf_sink_plains,
    .power = NULL,
    .metric = NULL,
};
__extension__ static const prof__sink prof__perfetto_sink = {
    .need = PROF__NEED_ORDER,
    .thread = prof__pf_sink_thread,
    .begin = prof__pf_sink_begin,
    .span = prof__pf_sink_span,
    .point = prof__pf_sink_point,
    .mem = prof__pf_sink_mem,
    .gpu = prof__pf_sink_gpu,
    .act = prof__pf_sink_act,
    .plains = prof__pf_sink_plains,
    .power = prof__pf_sink_power,
    .metric = prof__pf_sink_metric,
};

static void prof__pf_attr(prof__pf *p, const char *key, int64_t v, const char *s) {
    prof__pb *a = &p->d2;
    prof__pb_str(a, 1, key);                            /* TraceAttributes.Attribute.key */
    if (s) prof__pb_str(a, 3, s);                       /* .string_value */
    else prof__pb_uint(a, 2, (uint64_t)v);              /* .long_value */
    prof__pb_sub(&p->d1, 1, a);
}

/* Sequence 1: the clocks, what the JSON's header says (as trace attributes:
   Perfetto shows them as trace_attribute.<key> metadata), the process. */
/* The trace attributes packet: what the JSON's header says (Perfetto shows
   them as trace_attribute.<key> metadata; a later packet's value wins). */
static void prof__pf_attrs(prof__pf *p, const char *path, uint64_t dropped, uint64_t clipped) {
    const prof__cycle *cy = p->cy;
    prof__pf_attr(p, "traceName", 0, path);
    prof__pf_attr(p, "baseTimeNanoseconds", p->base, NULL);
    prof__pf_attr(p, "prof_dropped_events", (int64_t)dropped, NULL);
    prof__pf_attr(p, "prof_clipped_regions", (int64_t)clipped, NULL);
    if (cy->reason) {
        prof__pf_attr(p, "prof_dump_reason", 0, cy->reason);
        prof__pf_attr(p, "prof_dump_step", cy->reason_step, NULL);
        prof__pf_attr(p, "prof_dump_first_step", cy->first_step, NULL);
    }
    if (prof__g.who.rank >= 0) {
        prof__pf_attr(p, "rank", prof__g.who.rank, NULL);
        prof__pf_attr(p, "world_size", prof__g.who.world, NULL);
    }
    if (cy->ngdev || cy->gpu_dropped) prof__pf_attr(p, "prof_gpu_dropped_regions", (int64_t)cy->gpu_dropped, NULL);
    if (cy->nact || cy->act_lost) prof__pf_attr(p, "prof_gpu_dropped_activities", (int64_t)cy->act_lost, NULL);
    for (size_t i = 0; i < cy->ngdev; i++) {
        const struct prof__gdev_info *d = &cy->gdev[i];
        prof__kv f[PROF__DEV_FIELDS];
        prof__dev_fields(d, f);
        char key[96];
        snprintf(key, sizeof key, "gpu%d.name", d->dev);
        prof__pf_attr(p, key, 0, d->props.name);
        for (size_t k = 0; k < PROF__DEV_FIELDS; k++) {
            snprintf(key, sizeof key, "gpu%d.%s", d->dev, f[k].key);
            prof__pf_attr(p, key, f[k].v, NULL);
        }
    }
    if (cy->en) {                       /* PROF_ENERGY: how its numbers were made, as the JSON says it */
        char meta[4096];
        size_t n = prof__en_meta(cy, meta, sizeof meta);
        meta[n < sizeof meta ? n : sizeof meta - 1] = 0;
        prof__pf_attr(p, "prof_energy", 0, meta);
    }
    if (p->smp) {                       /* PROF_SAMPLE: the JSON's prof_samples figures */
        prof__pf_attr(p, "prof_samples_period_ns", p->smp_period, NULL);
        prof__pf_attr(p, "prof_samples_lost", (int64_t)p->smp_lost, NULL);
        prof__pf_attr(p, "prof_samples_refused", p->smp_refused, NULL);
    }
    prof__pf_seq(p, 1);
    prof__pb_sub(&p->pk, PROF__TP_ATTRIBUTES, &p->d1);
    prof__pf_packet(p, &p->pk);
}

/* Sequence 1: the clocks, the attributes, the process. */
static void prof__pf_head(prof__pf *p, const char *path) {
    prof__pb *m = &p->pk, *d1 = &p->d1, *d2 = &p->d2;
    prof__pf_seq(p, ++p->seqs);
    prof__pb_uint(d2, 1, PROF__CLK_REALTIME);
    prof__pb_uint(d2, 2, (uint64_t)prof__g.clk.wall0);
    prof__pb_sub(d1, 1, d2);
    prof__pb_uint(d2, 1, PROF__CLK_MONOTONIC);
    prof__pb_uint(d2, 2, (uint64_t)prof__g.clk.mono0);
    prof__pb_sub(d1, 1, d2);
    prof__pb_uint(d1, 2, PROF__CLK_REALTIME);           /* primary_trace_clock */
    prof__pb_sub(m, PROF__TP_CLOCK_SNAPSHOT, d1);
    prof__pf_packet(p, m);
    prof__pf_attrs(p, path, p->cy->dropped, p->cy->clipped);
    char comm[96];
    prof__pb_uint(d2, 1, (uint64_t)p->pid);             /* ProcessDescriptor.pid */
    prof__pb_str(d2, 6, prof__process_name(comm, sizeof comm)); /* .process_name */
    prof__pb_str(d2, 8, "CPU");                         /* .process_labels */
    prof__pf_track(p, p->uuid0 + PROF__PF_PROCESS, 0, NULL, 3);
}

/* A writer on path's temporary file (tmp[cap]); 0, having said why, if it
   cannot be opened. Times are converted with the clock of cy, the first
   cycle or part: the same for every part of a streamed trace. */
static int prof__pf_open(prof__pf *p, const prof__cycle *cy, const char *path, char *tmp, size_t cap) {
    memset(p, 0, sizeof *p);
    p->base = cy->base_ns;
    p->clk = cy->clk;
    p->clk.off += p->base;              /* REALTIME ns, not since the base */
    p->pid = prof__trace_pid(cy);
    /* uuids of different ranks' and runs' traces differ: merged, they do not clash */
    p->uuid0 = prof__mix64((uint64_t)p->pid ^ (uint64_t)(prof__g.who.rank + 1) << 32 ^ (uint64_t)prof__g.clk.wall0);
    p->uuid0 = (p->uuid0 | 1ull << 63) & ~(uint64_t)0xffffffffu;
    if (!(p->w.f = prof__out_open(path, tmp, cap, "trace"))) return 0;
    p->w.buf = (char *)malloc(PROF__WBUF + PROF__SLACK);
    if (!p->w.buf || !prof__names_grow(&p->names) || !prof__names_grow(&p->keys) || !prof__names_grow(&p->ctr))
        p->w.err = 1;
    return 1;
}

static void prof__pf_free(prof__pf *p) {
    free(p->open); free(p->ctr_name); free(p->told);
    for (int l = 0; l < PROF__LANES; l++) free(p->lane[l].iv);
    prof__names_free(&p->names); prof__names_free(&p->keys); prof__names_free(&p->ctr);
    free(p->ev.b); free(p->an.b); free(p->pk.b); free(p->d1.b); free(p->d2.b);
    prof__w_free(&p->w);
}

/* PROF_SAMPLE's samples (>>sample) as Perfetto's own profiling data, on a
   sequence of their own: its InternedData holds the cycle's executable
   mappings (the path's parts in mapping_paths, the GNU build id's bytes in
   build_ids, start, end, file offset), each distinct address once as a
   frame (its mapping, and as rel_pc its offset in the file; no function
   name: nothing is looked up at run time) and each distinct stack once as
   a callstack (outermost frame first), each told just before the first
   sample that uses it; then a PerfSample per sample at its time (pid, the
   tid of its thread's track, user mode, its callstack). Addresses in no
   mapping (the vDSO) share a mapping without a file, rel_pc the address. */
typedef struct prof__pfh {              /* key (nonzero) -> value, open addressing, half full at most */
    uint64_t *k;
    uint32_t *v;
    size_t cap, n;
} prof__pfh;

static int prof__pfh_room(prof__pfh *h) {
    if (2 * (h->n + 1) <= h->cap) return 1;
    size_t cap = h->cap ? 2 * h->cap : 1024;
    uint64_t *k = (uint64_t *)calloc(cap, sizeof *k);
    uint32_t *v = (uint32_t *)malloc(cap * sizeof *v);
    if (!k || !v) { free(k); free(v); return 0; }
    for (size_t i = 0; i < h->cap; i++) {
        if (!h->k[i]) continue;
        size_t j = (size_t)(prof__mix64(h->k[i]) >> 20) & (cap - 1);
        while (k[j]) j = (j + 1) & (cap - 1);
        k[j] = h->k[i];
        v[j] = h->v[i];
    }
    free(h->k);
    free(h->v);
    h->k = k;
    h->v = v;
    h->cap = cap;
    return 1;
}

typedef struct prof__pfs {              /* the samples' interning */
    prof__pfh frames;                   /* address + 1 -> frame iid */
    prof__pfh stacks;                   /* its addresses' hash -> callstack iid */
    uint32_t *first;                    /* by callstack iid: the sample that made it */
    size_t first_cap;
    uint64_t *fr;                       /* one sample's frame iids */
    size_t fr_cap;
    uint32_t nframes, nstacks;
} prof__pfs;

/* The mapping (index) of address a in sc's mappings (sorted by start), or
   sc->nmap: none. */
static size_t prof__pf_map_of(const prof__scy *sc, uint64_t a) {
    size_t lo = 0, hi = sc->nmap;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (sc->map[mid].start <= a) lo = mid + 1;
        else hi = mid;
    }
    for (size_t k = lo; k-- > 0 && lo - k <= 8;)       /* a range reused after a dlclose: the latest */
        if (a < sc->map[k].end) return k;
    return sc->nmap;
}

/* The InternedData of the mappings: iid i + 1 for sc->map[i], nmap + 1 the
   one without a file. */
static void prof__pf_mappings(prof__pf *p, const prof__scy *sc) {
    prof__pb *d1 = &p->d1, *d2 = &p->d2;
    uint64_t strs = 0;
    for (size_t i = 0; i < sc->nmap; i++) {
        const prof__smap *m = &sc->map[i];
        unsigned char id[20];
        size_t nid = 0;
        for (const char *h = m->build_id; h[0] && h[1] && nid < sizeof id; h += 2) {
            char two[3] = { h[0], h[1], 0 };
            id[nid++] = (unsigned char)strtoul(two, NULL, 16);
        }
        if (nid) {
            prof__pb_uint(d2, 1, i + 1);                /* InternedString.iid */
            prof__pb_bytes(d2, 2, id, nid);             /* .str: the id's bytes */
            prof__pb_sub(d1, 16, d2);                   /* InternedData.build_ids */
        }
        uint64_t first = strs + 1;
        for (const char *s = m->path; *s;) {            /* "/a/b.so": "a", "b.so" */
            size_t n = strcspn(s, "/");
            if (n) {
                prof__pb_uint(d2, 1, ++strs);
                prof__pb_bytes(d2, 2, s, n);
                prof__pb_sub(d1, 17, d2);               /* .mapping_paths */
            }
            s += n + (s[n] == '/');
        }
        prof__pb_uint(d2, 1, i + 1);                    /* Mapping.iid */
        if (nid) prof__pb_uint(d2, 2, i + 1);           /* .build_id */
        prof__pb_uint(d2, 8, m->offset);                /* .exact_offset */
        prof__pb_uint(d2, 3, m->offset);                /* .start_offset */
        prof__pb_uint(d2, 4, m->start);
        prof__pb_uint(d2, 5, m->end);
        for (uint64_t k = first; k <= strs; k++) prof__pb_uint(d2, 7, k);  /* .path_string_ids */
        prof__pb_sub(d1, 19, d2);                       /* InternedData.mappings */
    }
    prof__pb_uint(d2, 1, sc->nmap + 1);                 /* addresses in no file */
    prof__pb_sub(d1, 19, d2);
    prof__pb_sub(&p->pk, PROF__TP_INTERNED, d1);
    prof__pf_packet(p, &p->pk);
}

/* Sample i's callstack iid, its frames and itself told p->d1 if new; 0 out
   of memory. */
static uint32_t prof__pf_stack(prof__pf *p, prof__pfs *t, const prof__scy *sc, size_t i) {
    const prof__sample *s = &sc->s[i];
    const uint64_t *ip = sc->ip + s->ip;
    prof__pb *d1 = &p->d1, *d2 = &p->d2;
    uint64_t *fr = (uint64_t *)prof__grow(t->fr, &t->fr_cap, s->nip + 1, sizeof *fr), hash = 0x9ae16a3b2f90404full;
    if (!fr) return 0;
    t->fr = fr;
    for (uint32_t k = 0; k < s->nip; k++) {
        uint64_t a = ip[k];
        hash = prof__mix64(hash ^ a) ^ (hash >> 29);
        if (!prof__pfh_room(&t->frames)) return 0;
        size_t j = (size_t)(prof__mix64(a + 1) >> 20) & (t->frames.cap - 1);
        while (t->frames.k[j] && t->frames.k[j] != a + 1) j = (j + 1) & (t->frames.cap - 1);
        if (!t->frames.k[j]) {          /* a new frame */
            size_t m = prof__pf_map_of(sc, a);
            t->frames.k[j] = a + 1;
            t->frames.v[j] = ++t->nframes;
            t->frames.n++;
            prof__pb_uint(d2, 1, t->nframes);               /* Frame.iid */
            prof__pb_uint(d2, 3, m + 1);                    /* .mapping_id */
            prof__pb_uint(d2, 4, m < sc->nmap ? a - sc->map[m].start + sc->map[m].offset : a);  /* .rel_pc */
            prof__pb_sub(d1, 6, d2);                        /* InternedData.frames */
        }
        fr[k] = t->frames.v[j];
    }
    hash |= 1;
    if (!prof__pfh_room(&t->stacks)) return 0;
    size_t j = (size_t)(prof__mix64(hash) >> 20) & (t->stacks.cap - 1);
    for (; t->stacks.k[j]; j = (j + 1) & (t->stacks.cap - 1)) {
        if (t->stacks.k[j] != hash) continue;
        const prof__sample *o = &sc->s[t->first[t->stacks.v[j]]];
        if (o->nip == s->nip && !memcmp(sc->ip + o->ip, ip, s->nip * sizeof *ip)) return t->stacks.v[j];
    }
    uint32_t *first = (uint32_t *)prof__grow(t->first, &t->first_cap, t->nstacks + 2, sizeof *first);
    if (!first) return 0;
    t->first = first;
    first[++t->nstacks] = (uint32_t)i;
    t->stacks.k[j] = hash;
    t->stacks.v[j] = t->nstacks;
    t->stacks.n++;
    prof__pb_uint(d2, 1, t->nstacks);                       /* Callstack.iid */
    for (uint32_t k = s->nip; k-- > 0;) prof__pb_uint(d2, 2, fr[k]);  /* .frame_ids, outermost first */
    prof__pb_sub(d1, 7, d2);                                /* InternedData.callstacks */
    return t->nstacks;
}

static void prof__pf_samples(prof__pf *p, const prof__cycle *cy) {
    const prof__scy *sc = cy->smp;
    prof__pfs t;
    memset(&t, 0, sizeof t);
    prof__pf_sequence(p, p->uuid0 + PROF__PF_PROCESS);
    prof__pf_mappings(p, sc);
    int64_t shift = prof__trace_shift() + p->base;      /* CLOCK_MONOTONIC to the trace's REALTIME ns */
    uint64_t pid = (uint64_t)p->pid;
    for (size_t i = 0; i < sc->n && !p->w.err; i++) {
        const prof__sample *s = &sc->s[i];
        uint32_t cs = prof__pf_stack(p, &t, sc, i);
        if (!cs) { p->w.err = 1; break; }
        if (p->d1.n) {                  /* what it uses first */
            prof__pb_sub(&p->pk, PROF__TP_INTERNED, &p->d1);
            prof__pf_packet(p, &p->pk);
        }
        long tid = s->tid;              /* its thread's track's: an alike-named thread's is its lead's */
        if (cy->track && s->th < cy->nth) tid = cy->th[cy->track[s->th]].tid;
        unsigned char head[40], *o = prof__pf_time(p, head, s->ns + shift, 0), *room;
        if ((room = prof__pb_room(&p->pk, (size_t)(o - head)))) {
            memcpy(room, head, (size_t)(o - head));
            p->pk.n += (size_t)(o - head);
        }
        prof__pb_uint(&p->d2, 2, pid);                  /* PerfSample.pid */
        prof__pb_uint(&p->d2, 3, (uint64_t)tid);        /* .tid */
        prof__pb_uint(&p->d2, 5, 2);                    /* .cpu_mode: MODE_USER */
        prof__pb_uint(&p->d2, 4, cs);                   /* .callstack_iid */
        prof__pb_sub(&p->pk, 66, &p->d2);               /* TracePacket.perf_sample */
        prof__pf_packet(p, &p->pk);
    }
    free(t.frames.k); free(t.frames.v); free(t.stacks.k); free(t.stacks.v); free(t.first); free(t.fr);
}

/* Appends cy's events to the file: the head before them if first, its GPU
   regions after them if last. 1 if all is written. */
static int prof__pf_part(prof__pf *p, const prof__cycle *cy, const char *path, int first, int last) {
    p->cy = cy;
    free(p->told);                      /* a part's threads are numbered afresh */
    if (!(p->told = (unsigned char *)calloc(cy->nth + 1, 1))) p->w.err = 1;
    if (cy->smp) {                      /* what the trace's attributes say of the samples */
        p->smp = 1;
        p->smp_lost += cy->smp->lost;
        p->smp_period = cy->smp->period_ns;
        p->smp_refused = cy->smp->refused;
    }
    if (!p->w.err) {
        if (first) prof__pf_head(p, path);
        /* each call with its own table: the compiler inlines what it holds */
        if (!(last ? prof__walk(cy, &prof__perfetto_sink, p) : prof__walk(cy, &prof__perfetto_cpu_sink, p)))
            p->w.err = 1;
        if (cy->smp && cy->smp->n && !p->w.err) prof__pf_samples(p, cy);   /* PROF_SAMPLE's */
        prof__w_flush(&p->w);
    }
    p->part_t0 = cy->until;
    return !p->w.err;
}

/* Writes the cycle in Perfetto's format. *nev (if not NULL) gets the number
   of events (slices, instants, counter samples). */
__attribute__((noinline)) static int prof__write_perfetto(const prof__cycle *cy, const char *path, size_t *nev) {
    prof__pf p;
    char tmp[PROF__PATH + 32];
    if (!prof__pf_open(&p, cy, path, tmp, sizeof tmp)) return 0;
    prof__pf_part(&p, cy, path, 1, 1);
    int ok = prof__out_close(p.w.f, tmp, path, !p.w.err, p.w.errnum, "trace");
    if (nev) *nev = p.nev;
    prof__pf_free(&p);
    return ok;
}

/* The formats' writers (PROF__FORMATS). */
static int prof__write_json(const prof__cycle *cy, const char *path, int as_ops, size_t *nev) {
    return prof__write_trace_as(cy, path, as_ops, 0, nev);
}
static int prof__write_json_gz(const prof__cycle *cy, const char *path, int as_ops, size_t *nev) {
    return prof__write_trace_as(cy, path, as_ops, 1, nev);
}
static int prof__write_pftrace(const prof__cycle *cy, const char *path, int as_ops, size_t *nev) {
    (void)as_ops;
    return prof__write_perfetto(cy, path, nev);
}

/* Writes the cycle to path in format fmt (PROF__FMT_*); as_ops: see
   prof__write_trace_as. */
PROF__SHARED int prof__write_trace_fmt(const prof__cycle *cy, const char *path, int fmt, int as_ops, size_t *nev) {
    return prof__fmt[fmt].write(cy, path, as_ops, nev);
}

/* ---- >>table  the cycle API: a saved cycle's events and GPU regions ----- */

#define PROF__NO_PARENT   ((size_t)-1)

int prof_cycle_index(const prof_cycle *c) { return c->index; }
uint64_t prof_cycle_dropped(const prof_cycle *c) { return c->dropped; }
size_t prof_cycle_event_count(const prof_cycle *c) { return c->n; }
int prof_cycle_write_trace(const prof_cycle *c, const char *path) {
    return prof__write_trace_fmt(c, path, prof__path_format(path), 0, NULL);
}
size_t prof_cycle_gpu_count(const prof_cycle *c) { return c->ngpu; }

int prof_cycle_gpu_event(const prof_cycle *c, size_t i, prof_gpu_event *out) {
    memset(out, 0, sizeof *out);
    if (i >= c->ngpu) return 0;
    const prof__gev *g = &c->gpu[i];
    int64_t t0 = prof__tclock_ns(&c->clk, (uint64_t)g->t0);
    out->name = g->name;
    out->device = g->dev;
    out->stream = g->stream;
    out->correlation = g->corr;
    out->ts_ns = t0;
    out->dur_ns = prof__tclock_ns(&c->clk, (uint64_t)g->t1) - t0;
    return 1;
}

/* A step comes back as name "ProfilerStep" with value = its number N (the
   trace's "ProfilerStep#N"): a const cycle has nowhere to keep that string.
   Durations are exact (the trace ends steps 1 ns early for TensorBoard). */
int prof_cycle_event(const prof_cycle *c, size_t i, prof_event *out) {
    memset(out, 0, sizeof *out);
    if (i >= c->n) return 0;
    const prof__ev *e = &c->ev[i];
    int64_t t0 = prof__tclock_ns(&c->clk, e->t0);
    out->name = e->name;
    out->tid = e->th < c->nth ? c->th[e->th].tid : 0;
    out->ts_ns = t0;
    switch (e->kind) {
    case PROF__K_REGION:
    case PROF__K_CLIPPED:               /* began before the window: ts is its start */
    case PROF__K_OPEN:                  /* open at a watchdog's dump: ends at it */
    case PROF__K_GPU_REGION:            /* value: the correlation of its GPU side */
        out->kind = PROF_EVENT_REGION;
        out->dur_ns = prof__tclock_ns(&c->clk, e->t1) - t0;
        out->value = (double)(e->kind == PROF__K_GPU_REGION ? e->aux : 0);
        return 1;
    case PROF__K_STEP:
        out->kind = PROF_EVENT_STEP;
        out->name = "ProfilerStep";
        out->dur_ns = prof__tclock_ns(&c->clk, e->t1) - t0;
        out->value = (double)e->aux;
        return 1;
    case PROF__K_INSTANT:
        out->kind = PROF_EVENT_INSTANT;
        return 1;
    case PROF__K_SYNC:
        out->kind = PROF_EVENT_SYNC;
        out->name = "prof_sync";
        out->value = (double)e->aux;
        return 1;
    case PROF__K_COUNTER:
        out->kind = PROF_EVENT_COUNTER;
        memcpy(&out->value, &e->t1, sizeof out->value);
        return 1;
    default:                            /* an argument, not an event */
        memset(out, 0, sizeof *out);
        return 0;
    }
}


/* Keeps an open-addressing index (slot = item + 1, 0 = empty) at most half
   full before item n is added; items' hashes lie `stride` bytes apart from
   *hash0. 0 when memory runs out. */
static int prof__index_room(size_t **slot, size_t *nslot, size_t n, const uint64_t *hash0, size_t stride) {
    if (2 * (n + 1) <= *nslot) return 1;
    size_t ns = *nslot ? 2 * *nslot : 256;
    size_t *sl = (size_t *)calloc(ns, sizeof *sl);
    if (!sl) return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = *(const uint64_t *)(const void *)((const char *)hash0 + i * stride);
        size_t j = (size_t)h & (ns - 1);
        while (sl[j]) j = (j + 1) & (ns - 1);
        sl[j] = i + 1;
    }
    free(*slot);
    *slot = sl;
    *nslot = ns;
    return 1;
}

static uint64_t prof__fnv(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* A growable byte buffer of NUL-terminated strings, addressed by offset. */
typedef struct prof__sbuf { char *p; size_t n, cap; } prof__sbuf;

static int prof__sb_put(prof__sbuf *b, const char *s, size_t len) {
    char *p = (char *)prof__grow(b->p, &b->cap, b->n + len + 1, 1);
    if (!p) return 0;
    b->p = p;
    memcpy(p + b->n, s, len);
    b->n += len;
    p[b->n] = 0;                        /* terminated, not counted */
    return 1;
}

/* "key=value, key=value" in attachment order; flops and bytes are summed,
   not shown. */
static int prof__render_args(prof__sbuf *b, const prof__ev *ev, const size_t *args, size_t nargs, const char *only) {
    b->n = 0;
    if (!prof__sb_put(b, "", 0)) return 0;
    for (size_t i = 0; i < nargs; i++) {
        const prof__ev *a = &ev[args[i]];
        const char *key = a->name ? a->name : "(null)", *val;
        char num[32];
        if (only && strcmp(key, only)) continue;    /* group=domain: that one */
        if (a->kind == PROF__K_ARG_INT) {
            if (!strcmp(key, "flops") || !strcmp(key, "bytes")) continue;
            snprintf(num, sizeof num, "%lld", (long long)(int64_t)a->t1);
            val = num;
        } else {
            val = (const char *)(uintptr_t)a->t1;
            if (!val) val = "(null)";
        }
        if ((b->n && !prof__sb_put(b, ", ", 2)) || !prof__sb_put(b, key, strlen(key)) ||
            !prof__sb_put(b, "=", 1) || !prof__sb_put(b, val, strlen(val)))
            return 0;
    }
    return 1;
}

typedef struct prof__agg {              /* a row while the table is built */
    uint64_t hash;
    size_t name, args, thread;          /* offsets into the string buffer */
    prof_row r;
} prof__agg;

static int prof__cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

/* Descending by the sort key (by name: ascending), then name, then args. */
static int prof__row_cmp(const prof_row *a, const prof_row *b, prof_sort s) {
    int c = 0;
    switch (s) {
    case PROF_SORT_SELF_CPU:  c = prof__cmp_i64(b->self_ns, a->self_ns); break;
    case PROF_SORT_CPU_TOTAL: c = prof__cmp_i64(b->total_ns, a->total_ns); break;
    case PROF_SORT_CPU_MIN:   c = prof__cmp_i64(b->min_ns, a->min_ns); break;
    case PROF_SORT_CPU_MAX:   c = prof__cmp_i64(b->max_ns, a->max_ns); break;
    case PROF_SORT_FLOPS:     c = prof__cmp_i64(b->flops, a->flops); break;
    case PROF_SORT_CALLS:     c = (b->calls > a->calls) - (b->calls < a->calls); break;
    case PROF_SORT_SELF_GPU:  c = prof__cmp_i64(b->self_gpu_ns, a->self_gpu_ns); break;
    case PROF_SORT_GPU_TOTAL: c = prof__cmp_i64(b->gpu_total_ns, a->gpu_total_ns); break;
    case PROF_SORT_CPU_AVG:
    case PROF_SORT_GPU_AVG: { /* b's total / calls against a's, exactly */
        int64_t bt = s == PROF_SORT_CPU_AVG ? b->total_ns : b->gpu_total_ns;
        int64_t at = s == PROF_SORT_CPU_AVG ? a->total_ns : a->gpu_total_ns;
#ifdef __SIZEOF_INT128__
        prof__i128 x = (prof__i128)bt * (prof__i128)a->calls, y = (prof__i128)at * (prof__i128)b->calls;
#else
        double x = (double)bt * (double)a->calls, y = (double)at * (double)b->calls;
#endif
        c = (x > y) - (x < y);
        break;
    }
    case PROF_SORT_CPU_MEM:      c = prof__cmp_i64(b->cpu_mem, a->cpu_mem); break;
    case PROF_SORT_SELF_CPU_MEM: c = prof__cmp_i64(b->self_cpu_mem, a->self_cpu_mem); break;
    case PROF_SORT_GPU_MEM:      c = prof__cmp_i64(b->gpu_mem, a->gpu_mem); break;
    case PROF_SORT_SELF_GPU_MEM: c = prof__cmp_i64(b->self_gpu_mem, a->self_gpu_mem); break;
    default: break;
    }
    if (!c) c = strcmp(a->name, b->name);
    if (!c) c = strcmp(a->args ? a->args : "", b->args ? b->args : "");
    if (!c) c = (a->tid > b->tid) - (a->tid < b->tid);
    return c;
}

PROF__COLD static void prof__row_sort(prof_row *v, prof_row *tmp, size_t n, prof_sort s) {
    if (n < 2) return;
    size_t h = n / 2, i = 0, j = h, k = 0;
    prof__row_sort(v, tmp, h, s);
    prof__row_sort(v + h, tmp, n - h, s);
    while (i < h && j < n) tmp[k++] = prof__row_cmp(&v[j], &v[i], s) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    memcpy(v, tmp, k * sizeof *v);      /* v[j..n) is in place already */
}

/* ---- >>memreport  sink: memory per region, peaks, leaks ----------------- */

/* Memory events belong to regions by the arguments' rule (see
   prof__arg_time): the first region to close after the event on its thread
   that began no later. Steps own them too, as torch's ProfilerStep* row does. */
/* 1: the cycle has memory events; 3: GPU ones among them. */
static int prof__mem_flags(const prof__cycle *c) {
    int f = 0;
    for (size_t i = 0; i < c->n; i++)
        if (prof__mem_total(c, i)) f |= c->ev[i].aux ? 3 : 1;
    return f;
}

/* The peak of Total Allocated on device code `code` (the earliest event of
   equal ones), the region owning that event and the step it fell in (-1 if
   none); 0 if the device has no memory event in the cycle. */
PROF__COLD static int prof__mem_peak(const prof__cycle *c, uint32_t code, int64_t *peak, const char **region, int64_t *step) {
    size_t at = (size_t)-1;
    int64_t best = 0;
    for (size_t i = 0; i < c->n; i++) {
        const prof__ev *tot = prof__mem_total(c, i);
        if (!tot || c->ev[i].aux != code) continue;
        int64_t v = (int64_t)tot->t1;
        if (at == (size_t)-1 || v > best || (v == best && c->ev[i].t0 < c->ev[at].t0)) { best = v; at = i; }
    }
    if (at == (size_t)-1) return 0;
    const prof__ev *m = &c->ev[at];
    *peak = best;
    *region = "(no region)";
    if (c->parent && c->parent[at] != PROF__NO_EVENT) *region = prof__row_name(&c->ev[c->parent[at]]);
    *step = -1;
    for (size_t j = 0; j < c->n; j++)
        if (c->ev[j].kind == PROF__K_STEP && c->ev[j].t0 <= m->t0 && m->t0 < c->ev[j].t1) { *step = c->ev[j].aux; break; }
    return 1;
}

PROF__COLD int prof_cycle_memory_peak(const prof_cycle *c, int device, int64_t *peak_bytes, const char **region) {
    int64_t peak = 0, step;
    const char *r = NULL;
    int ok = device >= -1 && device < PROF__MEM_CODES - 1 && prof__mem_peak(c, (uint32_t)(device + 1), &peak, &r, &step);
    if (peak_bytes) *peak_bytes = peak;
    if (region) *region = r;
    return ok;
}

/* "prof: cycle 1 peak CPU memory 3.25 Mb at 'forward' (step 9)", a line per
   device with memory events, after the table. */
PROF__COLD PROF__SHARED void prof__mem_print_peaks(const prof__cycle *c, FILE *f) {
    unsigned char seen[PROF__MEM_CODES] = { 0 };
    for (size_t i = 0; i < c->n; i++)
        if (prof__mem_total(c, i)) seen[c->ev[i].aux < PROF__MEM_CODES ? c->ev[i].aux : 0] = 1;
    for (uint32_t code = 0; code < PROF__MEM_CODES; code++) {
        int64_t peak, step;
        const char *region;
        char dev[16], size[32], st[40] = "";
        if (!seen[code] || !prof__mem_peak(c, code, &peak, &region, &step)) continue;
        if (code) snprintf(dev, sizeof dev, "GPU %u", code - 1);
        else snprintf(dev, sizeof dev, "CPU");
        prof__fmt_mem(size, sizeof size, peak);
        if (step >= 0) snprintf(st, sizeof st, " (step %lld)", (long long)step);
        fprintf(f, "prof: cycle %d peak %s memory %s at '%s'%s\n", c->index, dev, size, region, st);
    }
}

/* The live entry of an allocation record learns its region (for the leak
   report), if the address was not freed and reused since. */
static void prof__mem_name(const prof__ev *a, const char *region) {
    uintptr_t p = (uintptr_t)a->name;
    uint64_t h = prof__mem_hash(p);
    prof__mshard *s = prof__mem_shard(h);
    prof__spin_lock(&s->lock);
    if (s->live && s->cap) {
        prof__mentry *e = prof__mem_find(s, p, h);
        if (e->ptr && e->th == a->th && e->t0 == a->t0) e->region = region;
    }
    prof__spin_unlock(&s->lock);
}

/* Names the region of every allocation a saved cycle recorded: its parent
   (prof__analyse), a step's "ProfilerStep*" too. */
PROF__COLD static void prof__mem_label(const prof__cycle *c) {
    if (!__atomic_load_n(&prof__mem.recorded, __ATOMIC_RELAXED) || !c->parent) return;
    for (size_t i = 0; i < c->n; i++)
        if (prof__mem_total(c, i) && (int64_t)c->ev[i].t1 >= 0)
            prof__mem_name(&c->ev[i], c->parent[i] == PROF__NO_EVENT ? "(no region)" : prof__row_name(&c->ev[c->parent[i]]));
}

/* ---- >>rows  sink: the table's rows, percentiles, printing ------------- */

/* The rows while they are summed: their strings in one buffer, an index. */
typedef struct prof__rows {
    prof__agg *v;
    size_t n, cap, *slot, nslot;
    prof__sbuf str;
    int by_args, by_thread;
} prof__rows;

/* The row of a region named name (and arguments key / thread tid, label,
   as grouped), made on first sight with min and max at total_ns; NULL when
   memory runs out. */
static prof__agg *prof__row_of(prof__rows *t, const char *name, const char *key, long tid, const char *label,
                               int64_t total_ns) {
    uint64_t h = prof__fnv(0xcbf29ce484222325ull, name);
    if (t->by_args) h = prof__fnv(h * 0x100000001b3ull, key); /* NUL between */
    if (t->by_thread) h = (h ^ (uint64_t)tid) * 0x100000001b3ull;
    if (!prof__index_room(&t->slot, &t->nslot, t->n, t->v ? &t->v[0].hash : NULL, sizeof *t->v)) return NULL;
    size_t j = (size_t)h & (t->nslot - 1);
    for (; t->slot[j]; j = (j + 1) & (t->nslot - 1)) {
        prof__agg *x = &t->v[t->slot[j] - 1];
        if (x->hash == h && !strcmp(t->str.p + x->name, name) && (!t->by_args || !strcmp(t->str.p + x->args, key)) &&
            (!t->by_thread || x->r.tid == tid))
            return x;
    }
    prof__agg *na = (prof__agg *)prof__grow(t->v, &t->cap, t->n + 1, sizeof *na);
    if (!na) return NULL;
    t->v = na;
    prof__agg *g = &t->v[t->n];
    memset(g, 0, sizeof *g);
    g->hash = h;
    g->name = t->str.n;
    if (!prof__sb_put(&t->str, name, strlen(name) + 1)) return NULL;
    g->args = t->str.n;
    if (t->by_args && !prof__sb_put(&t->str, key, strlen(key) + 1)) return NULL;
    g->thread = t->str.n;
    if (t->by_thread) {
        g->r.tid = tid;
        if (!prof__sb_put(&t->str, label, strlen(label) + 1)) return NULL;
    }
    g->r.min_ns = g->r.max_ns = total_ns;
    t->slot[j] = ++t->n;
    return g;
}

/* The summed rows as prof_table's: one block with their strings (so that
   prof_table_free is one free()), shares of the self-time sum, sorted. */
PROF__COLD static int prof__rows_out(const prof__rows *t, prof_sort sort, prof_table *out) {
    prof_row *rows = (prof_row *)malloc(t->n * sizeof *rows + t->str.n);
    prof_row *tmp = (prof_row *)malloc(t->n * sizeof *tmp);
    if (!rows || !tmp) { free(rows); free(tmp); return 0; }
    char *s = (char *)(rows + t->n);
    memcpy(s, t->str.p, t->str.n);
    int64_t sum = 0, gsum = 0;
    for (size_t i = 0; i < t->n; i++) sum += t->v[i].r.self_ns;
    int kernels = 0;
    for (size_t i = 0; i < t->n; i++) kernels |= t->v[i].r.kernel;
    /* with kernel capture, GPU time is the kernels' (regions' would count it twice) */
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].r.kernel == kernels) gsum += t->v[i].r.self_gpu_ns;
    for (size_t i = 0; i < t->n; i++) {
        rows[i] = t->v[i].r;
        rows[i].name = s + t->v[i].name;
        rows[i].args = t->by_args ? s + t->v[i].args : NULL;
        rows[i].thread = t->by_thread ? s + t->v[i].thread : NULL;
        /* torch: both shares are of the sum of self times */
        rows[i].self_pct = sum ? 100.0 * (double)rows[i].self_ns / (double)sum : 0.0;
        rows[i].total_pct = sum ? 100.0 * (double)rows[i].total_ns / (double)sum : 0.0;
    }
    prof__row_sort(rows, tmp, t->n, sort);
    free(tmp);
    out->rows = rows;
    out->n = t->n;
    out->self_sum_ns = sum;
    out->self_gpu_sum_ns = gsum;
    return 1;
}

/* Peaks of GPUs by the name their runtime reports: dense BF16 tensor
   TFLOP/s (the MFU convention) and memory GB/s, from the vendors' data
   sheets (NVIDIA H100, H200, A100 data sheets; AMD Instinct MI300X data
   sheet). The first match of a part of the name wins. */
static const struct { const char *part; double tflops, gbps; } prof__gpu_peaks[] = {
    { "H100 PCIe", 756.0, 2000.0 }, { "H100 NVL", 835.0, 3900.0 }, { "H100", 989.0, 3350.0 },
    { "H200", 989.0, 4800.0 },      { "A100-PCIE-40GB", 312.0, 1555.0 },
    { "A100-SXM4-40GB", 312.0, 1555.0 }, { "A100", 312.0, 2039.0 }, { "MI300X", 1307.0, 5300.0 },
};

/* The table's peaks: the config's, else the cycle's GPU's when it is one
   the list knows (the same for every device of the cycle). */
PROF__COLD PROF__SHARED void prof__table_peaks(const prof__cycle *c, prof_table *out) {
    out->peak_tflops = prof__g.conf.peak_tflops;
    out->peak_gbps = prof__g.conf.peak_gbps;
    if (!c->ngdev || (out->peak_tflops > 0 && out->peak_gbps > 0)) return;
    for (size_t k = 0; k < sizeof prof__gpu_peaks / sizeof prof__gpu_peaks[0]; k++) {
        size_t d = 0;
        while (d < c->ngdev && strstr(c->gdev[d].props.name, prof__gpu_peaks[k].part)) d++;
        if (d < c->ngdev) continue;
        if (!(out->peak_tflops > 0)) out->peak_tflops = prof__gpu_peaks[k].tflops;
        if (!(out->peak_gbps > 0)) out->peak_gbps = prof__gpu_peaks[k].gbps;
        return;
    }
}

/* Percentiles of each row's call totals, exact: the nearest rank
   (ceil(q * n)-th smallest) of the calls of a row, from (row, total) pairs
   sorted. */
typedef struct prof__pct { size_t row; int64_t ns; } prof__pct;

static int prof__pct_cmp(const void *pa, const void *pb) {
    const prof__pct *a = (const prof__pct *)pa, *b = (const prof__pct *)pb;
    if (a->row != b->row) return a->row < b->row ? -1 : 1;
    return (a->ns > b->ns) - (a->ns < b->ns);
}

PROF__COLD static void prof__percentiles(prof__rows *t, prof__pct *v, size_t n) {
    if (n) qsort(v, n, sizeof *v, prof__pct_cmp);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && v[j].row == v[i].row) j++;
        size_t c = j - i;
        prof_row *r = &t->v[v[i].row].r;
        r->p50_ns = v[i + (50 * c + 99) / 100 - 1].ns;
        r->p90_ns = v[i + (90 * c + 99) / 100 - 1].ns;
        r->p99_ns = v[i + (99 * c + 99) / 100 - 1].ns;
        i = j;
    }
}

/* ---- the table sink: rows summed over the walk's spans ---- */
typedef struct prof__tsink {
    prof__rows t;
    prof__sbuf key;                     /* a span's arguments as text (group=args) */
    prof__pct *pct;                     /* (row, total) of each call: percentiles */
    size_t npct, pct_cap;
    unsigned char *seen;                /* tracks with regions */
    size_t nthreads;
    int pcts, ok;
    const char *only;                   /* the one argument grouped by ("domain"), or NULL: all */
    int capture;                        /* group=capture: graph kernels by their capture_region */
    prof__sbuf cap;                     /* ... that row's name */
} prof__tsink;

static void prof__table_span(void *s, const prof__cycle *c, const prof__wthread *th, const prof__wreg *r) {
    prof__tsink *x = (prof__tsink *)s;
    if (!x->ok) return;
    x->nthreads += !x->seen[th->lead];  /* alike threads: one row */
    x->seen[th->lead] = 1;
    if (x->t.by_args && !prof__render_args(&x->key, c->ev, r->args, r->nargs, x->only)) { x->ok = 0; return; }
    prof__agg *g = prof__row_of(&x->t, prof__row_name(r->e), x->key.p, th->tid, c->label[th->lead], r->total_ns);
    if (!g) { x->ok = 0; return; }
    for (size_t i = 0; i < r->nargs; i++) {
        const prof__ev *a = &c->ev[r->args[i]];
        if (a->kind != PROF__K_ARG_INT || !a->name) continue;
        if (!strcmp(a->name, "flops")) g->r.flops += (int64_t)a->t1;
        else if (!strcmp(a->name, "bytes")) g->r.bytes += (int64_t)a->t1;
    }
    g->r.calls++;
    g->r.self_ns += r->self_ns;
    g->r.total_ns += r->total_ns;
    if (r->total_ns < g->r.min_ns) g->r.min_ns = r->total_ns;
    if (r->total_ns > g->r.max_ns) g->r.max_ns = r->total_ns;
    g->r.self_gpu_ns += r->self_gpu_ns;
    g->r.gpu_total_ns += r->gpu_total_ns;
    g->r.self_cpu_mem += r->self_cpu_mem;
    g->r.self_gpu_mem += r->self_gpu_mem;
    g->r.cpu_mem += r->cpu_mem;
    g->r.gpu_mem += r->gpu_mem;
    if (x->pcts) {
        prof__pct *np = (prof__pct *)prof__grow(x->pct, &x->pct_cap, x->npct + 1, sizeof *np);
        if (!np) { x->ok = 0; return; }
        x->pct = np;
        x->pct[x->npct].row = (size_t)(g - x->t.v);
        x->pct[x->npct++].ns = r->total_ns;
    }
}

/* Kernel capture: a row per kernel, copy and fill name, with its GPU time
   as its self and total (torch's rows for kernels). */
static void prof__table_act(void *s, const prof__cycle *c, const prof__gact *g, int new_track, int new_dev,
                         const uint64_t *flows, size_t nflows, const char *label) {
    prof__tsink *x = (prof__tsink *)s;
    (void)c;
    (void)new_track;
    (void)new_dev;
    (void)flows;
    (void)nflows;
    (void)label;
    if (!x->ok || g->a.kind == PROF_GPU_RUNTIME || g->a.kind == PROF_GPU_SYNC) return;
    const char *name = g->a.name ? g->a.name : "(null)";
    if (x->capture && g->a.capture_region) {
        x->cap.n = 0;
        const char *cr = g->a.capture_region;
        if (!prof__sb_put(&x->cap, "[graph] ", 8) || !prof__sb_put(&x->cap, cr, strlen(cr) + 1)) {
            x->ok = 0;
            return;
        }
        name = x->cap.p;
    }
    prof__agg *a = prof__row_of(&x->t, name, "", -1, "GPU", 0); /* no arguments */
    if (!a) { x->ok = 0; return; }
    int64_t ns = prof__tclock_ns(&c->clk, g->t1) - prof__tclock_ns(&c->clk, g->t0);
    a->r.kernel = 1;
    a->r.calls++;
    a->r.self_gpu_ns += ns;
    a->r.gpu_total_ns += ns;
}

__extension__ static const prof__sink prof__table_sink = {
    .need = PROF__NEED_TIMES | PROF__NEED_MEM,
    .thread = NULL,
    .begin = NULL,
    .span = prof__table_span,
    .point = NULL,
    .mem = NULL,
    .gpu = NULL,
    .act = prof__table_act,
    .plains = NULL,
    .power = NULL,
    .metric = NULL,
};

PROF__COLD static void prof__ctr_table(const prof__cycle *c, prof_table *out);   /* >>counters */
static void prof__ctr_print(const prof_table *t, FILE *f);

/* The footer's idle time: the cycle's rows of prof_cycle_gpu_idle for
   every step at once. 0 when memory runs out. */
PROF__COLD static int prof__idle_table(const prof__cycle *c, prof_table *out) {
    size_t n = 0;
    for (size_t i = 0; i < c->nidle; i++) n += c->idle[i].step == PROF_GPU_IDLE_ALL;
    if (!n) return 1;
    if (!(out->idle = (prof_gpu_idle *)malloc(n * sizeof *out->idle))) return 0;
    for (size_t i = 0; i < c->nidle; i++)
        if (c->idle[i].step == PROF_GPU_IDLE_ALL) out->idle[out->nidle++] = c->idle[i];
    for (size_t i = 0; i < c->npath; i++) {
        const prof_gpu_path *p = &c->path[i];
        out->path_ns[0] += p->host_ns, out->path_ns[1] += p->launch_ns;
        out->path_ns[2] += p->gpu_ns, out->path_ns[3] += p->other_ns;
    }
    out->path_steps = c->npath;
    return 1;
}

PROF__COLD int prof_cycle_table(const prof_cycle *c, prof_sort sort, int group, prof_table *out) {
    prof__tsink x;
    int mem = prof__mem_flags(c);
    memset(&x, 0, sizeof x);
    memset(out, 0, sizeof *out);
    x.t.by_args = (group & (PROF_GROUP_ARGS | PROF_GROUP_DOMAIN)) != 0;
    x.only = (group & PROF_GROUP_ARGS) ? NULL : (group & PROF_GROUP_DOMAIN) ? "domain" : NULL;
    x.t.by_thread = (group & PROF_GROUP_THREAD) != 0;
    x.pcts = (group & PROF_TABLE_PERCENTILES) != 0;
    x.capture = (group & PROF_GROUP_CAPTURE) != 0;
    x.ok = (x.seen = (unsigned char *)calloc(c->nth + 1, 1)) != NULL;
    if (x.ok && !prof__walk(c, &prof__table_sink, &x)) x.ok = 0;
    int ok = x.ok;
    if (ok) prof__percentiles(&x.t, x.pct, x.npct);
    if (ok && x.t.n) ok = prof__rows_out(&x.t, sort, out);
    if (ok) {
        out->has_gpu = c->ngpu > 0 || c->nact > c->nact_api;
        out->has_mem = mem != 0;
        out->has_gpu_mem = (mem & 2) != 0;
        out->threads = x.nthreads;
        out->by_thread = x.t.by_thread;
        out->has_pct = x.pcts;
        prof__table_peaks(c, out);
        prof__en_table(c, out);
        prof__ctr_table(c, out);        /* PROF_COUNTERS */
        ok = prof__idle_table(c, out);
        for (size_t d = 0; d < c->ngdev; d++) {
            int64_t b = prof__gdev_bound(&c->gdev[d]);
            out->gpu_bound_ns = b > out->gpu_bound_ns ? b : out->gpu_bound_ns;
            out->gpu_one_clock = (d == 0 || out->gpu_one_clock) && c->gdev[d].marked_ns > 0;
        }
    }
    free(x.seen);
    free(x.pct);
    free(x.key.p);
    free(x.cap.p);
    free(x.t.slot);
    free(x.t.v);
    free(x.t.str.p);
    return ok;
}

void prof_table_free(prof_table *t) {
    free(t->idle);
    free(t->rows);
    free(t->cpu);
    memset(t, 0, sizeof *t);
}

/* torch's _format_time: microseconds below 1 ms, ms below 1 s, else s. */
PROF__COLD PROF__SHARED void prof__fmt_time(char *o, size_t cap, double ns) {
    if (ns >= 1e9) snprintf(o, cap, "%.3fs", ns / 1e9);
    else if (ns >= 1e6) snprintf(o, cap, "%.3fms", ns / 1e6);
    else snprintf(o, cap, "%.3fus", ns / 1e3);
}

PROF__COLD static void prof__fmt_share(char *o, size_t cap, int64_t ns, int64_t sum) {
    if (sum) snprintf(o, cap, "%.2f%%", 100.0 * (double)ns / (double)sum);
    else snprintf(o, cap, "NaN");
}

/* torch cuts a name at max - 3 characters and adds "..."; never mid-UTF-8. */
PROF__SHARED const char *prof__cut(char *buf, const char *s, size_t max) {
    size_t n = strlen(s), cut = max - 3;
    if (n < cut) return s;
    while (cut && ((unsigned char)s[cut] & 0xC0) == 0x80) cut--;
    memcpy(buf, s, cut);
    memcpy(buf + cut, "...", 4);
    return buf;
}

/* The table's columns, laid out as torch's EventList.table(): right-aligned,
   two spaces after each, widths 12 but Name (longest + 4, at most 55),
   Thread (at most 32) and Args (at most 80), which stands where torch puts
   Input Shapes; FLOPs scaled by the smallest count, as torch does. */
#endif /* PROF__BODIES */
#define PROF__NAME_W   55
#define PROF__ARGS_W   80
#define PROF__THREAD_W 32
#define PROF__COL_W    12
#define PROF__MAX_COLS 32

typedef struct prof__cols {
    const char *head[PROF__MAX_COLS];
    int width[PROF__MAX_COLS];
    int n, nmem, has_args, unit;        /* unit: FLOPs scale, 0 FLOPs ... 5 PFLOPs */
    int has_bytes;                      /* a row has PROF_BYTES: bytes, GB/s */
    int64_t fmin;                       /* the smallest FLOPs of a row; 0: no FLOPs columns */
    char flops_head[16];
    char rule[512];
} prof__cols;
#if PROF__BODIES

PROF__COLD PROF__SHARED void prof__table_cols(const prof_table *t, prof__cols *c) {
    static const char *const flop_units[] = { "FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs" };
    static const char *const base[8] = { "Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                                         "CPU time avg", "CPU min", "CPU max" };
    static const char *const gpu[4] = { "Self GPU", "Self GPU %", "GPU total", "GPU time avg" };
    static const char *const mem[4] = { "CPU Mem", "Self CPU Mem", "GPU Mem", "Self GPU Mem" };
    static const char *const pct[3] = { "CPU p50", "CPU p90", "CPU p99" };
    size_t nw = 0, aw = 0, tw = 0;
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < t->n; i++) {
        const prof_row *r = &t->rows[i];
        size_t n = strlen(r->name);
        if (n > nw) nw = n;
        if (r->args && (n = strlen(r->args)) > aw) aw = n;
        if (r->thread && (n = strlen(r->thread)) > tw) tw = n;
        if (r->flops > 0 && (!c->fmin || r->flops < c->fmin)) c->fmin = r->flops;
        if (r->bytes > 0) c->has_bytes = 1;
    }
    c->has_args = aw > 0;
    for (int64_t v = c->fmin; v >= 1000 && c->unit < 5; v /= 1000) c->unit++;
    snprintf(c->flops_head, sizeof c->flops_head, "Total %s", flop_units[c->unit]);
#define PROF__COL(h, w) (c->head[c->n] = (h), c->width[c->n++] = (int)(w))
    for (int k = 0; k < 8; k++) PROF__COL(base[k], k ? PROF__COL_W : (nw + 4 < PROF__NAME_W ? nw + 4 : PROF__NAME_W));
    if (t->has_pct)                     /* the tail, beside min and max */
        for (int k = 0; k < 3; k++) PROF__COL(pct[k], PROF__COL_W);
    if (t->has_gpu)                     /* torch: Self CUDA, Self CUDA %, CUDA total, CUDA time avg */
        for (int k = 0; k < 4; k++) PROF__COL(gpu[k], PROF__COL_W);
    c->nmem = t->has_mem ? (t->has_gpu_mem ? 4 : 2) : 0;    /* torch's order: before # of Calls */
    for (int k = 0; k < c->nmem; k++) PROF__COL(mem[k], PROF__COL_W);
    PROF__COL("# of Calls", PROF__COL_W);
    if (t->by_thread) PROF__COL("Thread", tw + 4 < PROF__THREAD_W ? tw + 4 : PROF__THREAD_W);
    if (c->has_args) PROF__COL("Args", aw + 4 < PROF__ARGS_W ? aw + 4 : PROF__ARGS_W);
    if (c->fmin) {
        PROF__COL(c->flops_head, PROF__COL_W);
        PROF__COL("GFLOPS", PROF__COL_W);
        if (t->peak_tflops > 0) PROF__COL("% peak FLOPs", PROF__COL_W);
    }
    if (c->has_bytes) {
        PROF__COL("Total bytes", PROF__COL_W);
        PROF__COL("GB/s", PROF__COL_W);
        if (t->peak_gbps > 0) PROF__COL("% peak BW", PROF__COL_W);
    }
#undef PROF__COL
    size_t rl = 0;
    for (int k = 0; k < c->n; k++) {
        for (int d = 0; d < c->width[k]; d++) c->rule[rl++] = '-';
        c->rule[rl++] = ' ';
        c->rule[rl++] = ' ';
    }
    c->rule[rl] = 0;
}

/* One row's line. */
PROF__COLD PROF__SHARED void prof__table_line(const prof_table *t, const prof__cols *c, const prof_row *r, FILE *f) {
    static const double flop_scale[] = { 1.0, 1e-3, 1e-6, 1e-9, 1e-12, 1e-15 };
    char cell[PROF__MAX_COLS][64], nbuf[PROF__NAME_W + 1], abuf[PROF__ARGS_W + 1], tbuf[PROF__THREAD_W + 1];
    const char *v[PROF__MAX_COLS];
    v[0] = prof__cut(nbuf, r->name, PROF__NAME_W);
    prof__fmt_share(cell[1], 64, r->self_ns, t->self_sum_ns);
    prof__fmt_time(cell[2], 64, (double)r->self_ns);
    prof__fmt_share(cell[3], 64, r->total_ns, t->self_sum_ns);
    prof__fmt_time(cell[4], 64, (double)r->total_ns);
    prof__fmt_time(cell[5], 64, r->calls ? (double)r->total_ns / (double)r->calls : 0.0);
    prof__fmt_time(cell[6], 64, (double)r->min_ns);
    prof__fmt_time(cell[7], 64, (double)r->max_ns);
    int k = 8;
    if (t->has_pct) {
        prof__fmt_time(cell[k++], 64, (double)r->p50_ns);
        prof__fmt_time(cell[k++], 64, (double)r->p90_ns);
        prof__fmt_time(cell[k++], 64, (double)r->p99_ns);
    }
    if (t->has_gpu) {
        prof__fmt_time(cell[k++], 64, (double)r->self_gpu_ns);
        prof__fmt_share(cell[k++], 64, r->self_gpu_ns, t->self_gpu_sum_ns);
        prof__fmt_time(cell[k++], 64, (double)r->gpu_total_ns);
        prof__fmt_time(cell[k++], 64, r->calls ? (double)r->gpu_total_ns / (double)r->calls : 0.0);
    }
    const int64_t mem[4] = { r->cpu_mem, r->self_cpu_mem, r->gpu_mem, r->self_gpu_mem };
    for (int m = 0; m < c->nmem; m++) prof__fmt_mem(cell[k++], 64, mem[m]);
    snprintf(cell[k++], 64, "%llu", (unsigned long long)r->calls);
    for (int i = 1; i < k; i++) v[i] = cell[i];
    if (t->by_thread) v[k++] = prof__cut(tbuf, r->thread ? r->thread : "", PROF__THREAD_W);
    if (c->has_args) v[k++] = prof__cut(abuf, r->args ? r->args : "", PROF__ARGS_W);
    /* rates over the GPU's time where the region has one (its kernels did
       the work), else the CPU's; "% peak" of a GPU's peak only for those */
    int64_t ns = r->gpu_total_ns > 0 ? r->gpu_total_ns : r->total_ns;
    int peaked = !t->has_gpu || r->gpu_total_ns > 0;
    if (c->fmin) {
        double gflops = ns ? (double)r->flops / (double)ns : 0.0;    /* FLOP/ns = GFLOP/s */
        int m = t->peak_tflops > 0 ? 3 : 2;
        for (int i = 0; i < m; i++) strcpy(cell[k + i], "--");
        if (r->flops > 0) {
            snprintf(cell[k], 64, "%8.3f", (double)r->flops * flop_scale[c->unit]);
            snprintf(cell[k + 1], 64, "%8.3f", gflops);
            if (m == 3 && peaked) snprintf(cell[k + 2], 64, "%.2f%%", gflops / (t->peak_tflops * 1e3) * 100.0);
        }
        for (int i = 0; i < m; i++) v[k + i] = cell[k + i];
        k += m;
    }
    if (c->has_bytes) {
        double gbps = ns ? (double)r->bytes / (double)ns : 0.0;      /* bytes/ns = GB/s */
        int m = t->peak_gbps > 0 ? 3 : 2;
        for (int i = 0; i < m; i++) strcpy(cell[k + i], "--");
        if (r->bytes > 0) {
            prof__fmt_mem(cell[k], 64, r->bytes);
            snprintf(cell[k + 1], 64, "%8.3f", gbps);
            if (m == 3 && peaked) snprintf(cell[k + 2], 64, "%.2f%%", gbps / t->peak_gbps * 100.0);
        }
        for (int i = 0; i < m; i++) v[k + i] = cell[k + i];
    }
    for (k = 0; k < c->n; k++) fprintf(f, "%*s  ", c->width[k], v[k]);
    fputc('\n', f);
}

/* The footer's idle time: each stream's busy share of its span (from its
   first work to its last) and its idle time by cause; each device's NCCL
   kernels and the share of their time that compute kernels overlapped;
   the steps' critical path, by part. */
PROF__COLD static void prof__idle_print(const prof_table *t, FILE *f) {
    static const char *const what[5] = { "host late", "host in a sync", "waiting on an event", "launch gaps",
                                         "other" };
    char a[64], b[64], c[5][64], p[5][64];
    for (size_t i = 0; i < t->nidle; i++) {
        const prof_gpu_idle *r = &t->idle[i];
        if (r->stream < 0) {
            if (!r->comm_ns) continue;
            prof__fmt_time(a, sizeof a, (double)r->comm_ns);
            prof__fmt_share(b, sizeof b, r->overlap_ns, r->comm_ns);
            fprintf(f, "GPU %d NCCL kernels: %s, %s of it overlapped by compute kernels\n", r->device, a, b);
            continue;
        }
        const int64_t part[5] = { r->host_ns, r->sync_ns, r->wait_ns, r->launch_ns, r->other_ns };
        int64_t idle = part[0] + part[1] + part[2] + part[3] + part[4], span = r->busy_ns + idle;
        prof__fmt_time(a, sizeof a, (double)r->busy_ns);
        prof__fmt_share(b, sizeof b, r->busy_ns, span);
        fprintf(f, "GPU %d stream %lld busy %s (%s of its span)", r->device, r->stream, a, b);
        if (!idle) fprintf(f, ", never idle");
        for (int k = 0, n = 0; k < 5; k++) {
            if (!part[k]) continue;
            prof__fmt_time(c[k], sizeof c[k], (double)part[k]);
            prof__fmt_share(p[k], sizeof p[k], part[k], idle);
            fprintf(f, "%s%s %s (%s)", n++ ? ", " : "; idle: ", what[k], c[k], p[k]);
        }
        fputc('\n', f);
    }
    if (!t->path_steps) return;
    static const char *const part[4] = { "host", "launch", "GPU work", "other" };
    int64_t sum = t->path_ns[0] + t->path_ns[1] + t->path_ns[2] + t->path_ns[3];
    fprintf(f, "Critical path of the %zu step%s:", t->path_steps, t->path_steps == 1 ? "" : "s");
    for (int k = 0; k < 4; k++) {
        prof__fmt_time(a, sizeof a, (double)t->path_ns[k]);
        prof__fmt_share(b, sizeof b, t->path_ns[k], sum);
        fprintf(f, "%s %s %s (%s)", k ? "," : "", part[k], a, b);
    }
    fputc('\n', f);
}

PROF__COLD void prof_table_print(const prof_table *t, FILE *f, size_t max_rows) {
    prof__cols c;
    if (!t || !t->n) return;
    prof__table_cols(t, &c);
    fprintf(f, "%s\n", c.rule);
    for (int k = 0; k < c.n; k++) fprintf(f, "%*s  ", c.width[k], c.head[k]);
    fprintf(f, "\n%s\n", c.rule);
    for (size_t i = 0; i < t->n && (!max_rows || i < max_rows); i++) prof__table_line(t, &c, &t->rows[i], f);
    if (max_rows && t->n > max_rows)
        fprintf(f, "... %zu more row%s (rows=%zu; rows=0 prints all)\n", t->n - max_rows,
                t->n - max_rows == 1 ? "" : "s", max_rows);
    char tot[64];
    prof__fmt_time(tot, sizeof tot, (double)t->self_sum_ns);
    fprintf(f, "%s\nSelf CPU time total: %s\n", c.rule, tot);
    if (t->has_gpu) {
        prof__fmt_time(tot, sizeof tot, (double)t->self_gpu_sum_ns);
        fprintf(f, "Self GPU time total: %s\n", tot);
        if (t->gpu_bound_ns > 0) {
            prof__fmt_time(tot, sizeof tot, (double)t->gpu_bound_ns);
            fprintf(f, "GPU times are within %s of their place on the CPU clock (as measured%s).\n", tot,
                    t->gpu_one_clock ? "; kernels and GPU regions on one clock" : "");
        }
    }
    prof__idle_print(t, f);
    for (int i = 0; i < t->energy_devs; i++) {     /* PROF_ENERGY */
        const prof_energy *e = &t->energy[i];
        fprintf(f, "GPU %d energy per step: median %.3f J, p90 %.3f J, %.1f W average (%zu steps)", e->device,
                e->j_p50, e->j_p90, e->watts, e->steps);
        if (e->j_per_token > 0) fprintf(f, "; %.4g J/token", e->j_per_token);
        if (e->j_per_sample > 0) fprintf(f, "; %.4g J/sample", e->j_per_sample);
        fprintf(f, "\n");
    }
    prof__ctr_print(t, f);              /* PROF_COUNTERS */
    /* torch's key_averages() sums over threads too, and says nothing */
    if (t->threads > 1 && !t->by_thread)
        fprintf(f, "Rows sum over the %zu threads that recorded regions, as torch's key_averages() does "
                "(a thread's waiting counts as its self time); group=thread gives a row per thread.\n",
                t->threads);
}

/* ---- >>stacks  sink: folded stacks -------------------------------------- */

/* A node of the calling-context tree: one distinct stack, all threads merged. */
typedef struct prof__cct { const char *name; size_t parent; int64_t self_ns; uint64_t hash; } prof__cct;

/* Frames as flamegraph.pl, inferno and speedscope read them: ';' separates
   frames and a line ends at a newline, so neither may appear in a name. */
static int prof__put_frame(prof__sbuf *b, const char *s) {
    size_t start = b->n;
    if (!prof__sb_put(b, s, strlen(s))) return 0;
    for (char *p = b->p + start; *p; p++) {
        if (*p == ';') *p = ':';
        else if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
    }
    return 1;
}

static int prof__line_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One line per distinct stack, merged across threads, sorted: frames root
   first, then the stack's self time in whole microseconds (rounded, as
   torch's export_stacks counts; lines that round to 0 are left out). Steps
   are frames named "ProfilerStep*"; threads are not frames. */
static void prof__st_span(void *s, const prof__cycle *c, const prof__wthread *th, const prof__wreg *r) {
    (void)c;
    (void)th;
    ((int64_t *)s)[r->idx] = r->self_ns;
}

__extension__ static const prof__sink prof__stacks_sink = {
    .need = PROF__NEED_TIMES,
    .thread = NULL,
    .begin = NULL,
    .span = prof__st_span,
    .point = NULL,
    .mem = NULL,
    .gpu = NULL,
    .act = NULL,
    .plains = NULL,
    .power = NULL,
    .metric = NULL,
};

/* The calling-context tree of cycle c into *nodep (*nnodep nodes): a node
   per distinct stack, its self time summed over threads. Backwards, every
   region comes before its children, whose node's parent is then its node.
   0 when memory runs out. */
PROF__COLD static int prof__st_tree(const prof_cycle *c, prof__cct **nodep, size_t *nnodep, size_t **node_ofp) {
    prof__cct *node = NULL;
    size_t nnode = 0, ncap = 0, *slot = NULL, nslot = 0;
    int64_t *self = (int64_t *)malloc((c->n + 1) * sizeof *self);
    int ok = 1;
    size_t *node_of = (size_t *)malloc((c->n + 1) * sizeof *node_of);  /* a span's node */
    if (!self || !node_of || !prof__walk(c, &prof__stacks_sink, self)) ok = 0;
    for (size_t i = c->n; ok && i-- > 0;) {
        const prof__ev *e = &c->ev[i];
        if (!prof__spans(e->kind)) continue;
        size_t pn = c->parent[i] == PROF__NO_EVENT ? PROF__NO_PARENT : node_of[c->parent[i]];
        const char *name = prof__row_name(e);
        uint64_t h = prof__fnv(0xcbf29ce484222325ull ^ prof__mix64((uint64_t)pn), name);
        if (!prof__index_room(&slot, &nslot, nnode, node ? &node[0].hash : NULL, sizeof *node)) { ok = 0; break; }
        size_t j = (size_t)h & (nslot - 1);
        for (; slot[j]; j = (j + 1) & (nslot - 1)) {
            const prof__cct *x = &node[slot[j] - 1];
            if (x->hash == h && x->parent == pn && !strcmp(x->name, name)) break;
        }
        if (!slot[j]) {
            prof__cct *nn = (prof__cct *)prof__grow(node, &ncap, nnode + 1, sizeof *nn);
            if (!nn) { ok = 0; break; }
            node = nn;
            node[nnode].name = name;
            node[nnode].parent = pn;
            node[nnode].self_ns = 0;
            node[nnode].hash = h;
            slot[j] = ++nnode;
        }
        node_of[i] = slot[j] - 1;
        node[slot[j] - 1].self_ns += self[i];
    }
    if (ok && node_ofp) *node_ofp = node_of;    /* PROF_SAMPLE's lines hang under it */
    else free(node_of);
    free(self);
    free(slot);
    *nodep = node;
    *nnodep = nnode;
    return ok;
}

/* PROF_SAMPLE (>>sample): a line per sample, its region's stack then its
   native frames outermost first, named "file+0xoffset" (the file's base
   name and the address's offset in it: the prof tool names them from the
   file's symbols), each worth the sampling period of CPU time, which comes
   off its region's self time. A sample outside every region hangs under
   its step. Into lines at *offp (grown), *nsl of them. */
PROF__COLD static int prof__st_samples(const prof_cycle *c, prof__cct *node, const size_t *node_of,
                                       prof__sbuf *lines, size_t **offp, size_t *nsl) {
    const prof__scy *sc = c->smp;
    size_t *off = (size_t *)malloc(sc->n * sizeof *off), *up = (size_t *)malloc((c->n + 1) * sizeof *up);
    int ok = off && up;
    for (size_t i = 0; ok && i < sc->n; i++) {
        const prof__sample *s = &sc->s[i];
        size_t depth = 0, start = lines->n;
        if (s->region != PROF__NO_EVENT) {
            size_t k = node_of[s->region];
            int64_t *self = &node[k].self_ns;
            *self = *self > sc->period_ns ? *self - sc->period_ns : 0;
            for (size_t p = k; p != PROF__NO_PARENT && depth <= c->n; p = node[p].parent) up[depth++] = p;
            while (ok && depth--) ok = prof__put_frame(lines, node[up[depth]].name) && prof__sb_put(lines, ";", 1);
        } else if (s->step != PROF__NO_EVENT) {
            ok = prof__put_frame(lines, prof__row_name(&c->ev[s->step])) && prof__sb_put(lines, ";", 1);
        }
        for (uint32_t k = s->nip; ok && k-- > 0;) {
            uint64_t a = sc->ip[s->ip + k];
            char f[160];
            const prof__smap *m = NULL;
            for (size_t j = 0; j < sc->nmap && !m; j++)
                if (a >= sc->map[j].start && a < sc->map[j].end) m = &sc->map[j];
            if (m) {
                const char *base = strrchr(m->path, '/');
                snprintf(f, sizeof f, "%.100s+0x%llx", base ? base + 1 : m->path,
                         (unsigned long long)(a - m->start + m->offset));
            } else {
                snprintf(f, sizeof f, "0x%llx", (unsigned long long)a);
            }
            ok = prof__put_frame(lines, f) && (!k || prof__sb_put(lines, ";", 1));
        }
        char num[32];
        int len = snprintf(num, sizeof num, " %lld", (long long)((sc->period_ns + 500) / 1000));
        ok = ok && prof__sb_put(lines, num, (size_t)len + 1);
        if (ok) off[(*nsl)++] = start;
    }
    free(up);
    *offp = off;
    return ok;
}

/* Sorted lines whose stacks are alike, as one line with their sum, into
   *merged (line[] then points into it): how many lines are left. */
PROF__COLD static size_t prof__st_merge(const char **line, size_t nl, prof__sbuf *merged, int *ok) {
    size_t o = 0, *at = (size_t *)malloc((nl + 1) * sizeof *at);
    if (!at) { *ok = 0; return nl; }
    for (size_t k = 0; k < nl && *ok;) {
        const char *sp = strrchr(line[k], ' ');
        size_t stack = sp ? (size_t)(sp - line[k]) : strlen(line[k]);
        long long sum = 0;
        size_t j = k;
        for (; j < nl; j++) {
            const char *q = strrchr(line[j], ' ');
            if (!q || (size_t)(q - line[j]) != stack || strncmp(line[j], line[k], stack)) break;
            sum += atoll(q + 1);
        }
        if (j == k) { sum = 0; j = k + 1; }
        char num[32];
        int len = snprintf(num, sizeof num, " %lld", sum);
        at[o++] = merged->n;
        *ok = prof__sb_put(merged, line[k], stack) && prof__sb_put(merged, num, (size_t)len + 1);
        k = j;
    }
    for (size_t k = 0; *ok && k < o; k++) line[k] = merged->p + at[k];
    free(at);
    return *ok ? o : nl;
}

/* The sorted lines, nl of them, into the file at path, whole. */
PROF__COLD static int prof__st_write(const char *path, const char *const *line, size_t nl) {
    char tmp[PROF__PATH + 32];
    FILE *f = prof__out_open(path, tmp, sizeof tmp, "stacks");
    if (!f) return 0;
    int errnum = 0, ok = 1;
    prof__sbuf text = { NULL, 0, 0 };   /* the file, in one write */
    for (size_t k = 0; k < nl && ok; k++)
        ok = prof__sb_put(&text, line[k], strlen(line[k])) && prof__sb_put(&text, "\n", 1);
    if (ok && text.n && fwrite(text.p, 1, text.n, f) != text.n) { errnum = errno; ok = 0; }
    free(text.p);
    return prof__out_close(f, tmp, path, ok, errnum, "stacks");
}

PROF__COLD int prof_cycle_write_stacks(const prof_cycle *c, const char *path) {
    prof__cct *node = NULL;
    prof__sbuf lines = { NULL, 0, 0 };
    size_t nnode = 0, *up = NULL, *off = NULL, nl = 0, *node_of = NULL;
    const char **line = NULL;
    int ok = prof__st_tree(c, &node, &nnode, &node_of);
    size_t nsl = 0;                     /* PROF_SAMPLE: a line per sample, merged below */
    if (ok && c->smp && c->smp->n) ok = prof__st_samples(c, node, node_of, &lines, &off, &nsl);

    /* The lines, each NUL-terminated in one buffer, then sorted. */
    if (ok && (nnode || nsl)) {
        up = (size_t *)malloc((nnode + 1) * sizeof *up);
        size_t *o = (size_t *)realloc(off, (nnode + nsl) * sizeof *off);
        line = (const char **)malloc((nnode + nsl) * sizeof *line);
        if (o) off = o;
        if (!up || !o || !line) ok = 0;
    }
    nl = nsl;
    for (size_t k = 0; ok && k < nnode; k++) {
        int64_t us = (node[k].self_ns + 500) / 1000;
        if (us <= 0) continue;
        size_t depth = 0;
        for (size_t p = k; p != PROF__NO_PARENT; p = node[p].parent) up[depth++] = p;
        off[nl++] = lines.n;
        while (ok && depth--) ok = prof__put_frame(&lines, node[up[depth]].name) &&
                                   (!depth || prof__sb_put(&lines, ";", 1));
        char num[32];
        int len = snprintf(num, sizeof num, " %lld", (long long)us);
        ok = ok && prof__sb_put(&lines, num, (size_t)len + 1);
    }
    if (ok) {
        for (size_t k = 0; k < nl; k++) line[k] = lines.p + off[k];
        if (nl) qsort(line, nl, sizeof *line, prof__line_cmp);
        prof__sbuf merged = { NULL, 0, 0 };
        if (nsl) nl = prof__st_merge(line, nl, &merged, &ok);
        ok = ok && prof__st_write(path, line, nl);
        free(merged.p);
    } else {
        prof__msg("out of memory writing stacks '%s'", path);
    }
    free(node);
    free(node_of);
    free(up);
    free(off);
    free(line);
    free(lines.p);
    return ok;
}

/* ---- >>output  output paths and saving a cycle -------------------------- */

/* Expands {pid}, {rank} and {cycle} into out[PROF__PATH]. A schedule without
   {cycle} in the path still gets one file per cycle: ".<cycle>" goes before
   the extension. cycle < 0: a path of no cycle (PROF_LOG). 0, with a
   message naming what, when the path would not fit: never a cut path. */
/* While a flight dump is named: its reason and step ({reason}, {step}), on
   the naming thread (two threads may save at once). */
static __thread const char *prof__fl_reason;
static __thread int64_t prof__fl_step;

PROF__COLD PROF__SHARED int prof__expand_path(char *out, const char *tmpl, int cycle, const char *what) {
    char ext_tmpl[PROF__PATH + 64], ins[64] = "";
    size_t n = 0, cap = PROF__PATH;
    if (cycle >= 0) {                   /* what goes before a trace's extension */
        int k = 0;
        if (prof__g.proc.copy > 1)      /* a second copy of prof.h in this process */
            k += snprintf(ins + k, sizeof ins - (size_t)k, "-%d", prof__g.proc.copy);
        if (prof__g.proc.fork_child && !strstr(tmpl, "{pid}"))  /* not the parent's file */
            k += snprintf(ins + k, sizeof ins - (size_t)k, "-%ld", (long)getpid());
        if (prof__g.conf.has_sched && !strstr(tmpl, "{cycle}"))
            snprintf(ins + k, sizeof ins - (size_t)k, ".{cycle}");
        else if (prof__fl_reason && !strstr(tmpl, "{reason}") && !strstr(tmpl, "{step}"))
            snprintf(ins + k, sizeof ins - (size_t)k, ".{reason}-{step}");  /* a flight dump */
    }
    if (ins[0]) {
        const char *slash = strrchr(tmpl, '/');
        const char *dot = strrchr(tmpl, '.');
        if (prof__is_gz(tmpl))                  /* t.json.gz: t.1.json.gz (dot is ".gz") */
            for (size_t i = (size_t)(dot - tmpl); i-- > 0 && tmpl[i] != '/';)
                if (tmpl[i] == '.') { dot = tmpl + i; break; }
        if (!dot || (slash && dot < slash)) dot = tmpl + strlen(tmpl);
        snprintf(ext_tmpl, sizeof ext_tmpl, "%.*s%s%s", (int)(dot - tmpl), tmpl, ins, dot);
        tmpl = ext_tmpl;
    }
    while (*tmpl && n + 1 < cap) {
        long v = -1;
        if (!strncmp(tmpl, "{pid}", 5)) { v = (long)getpid(); tmpl += 5; }
        else if (!strncmp(tmpl, "{rank}", 6)) { v = prof__g.who.rank > 0 ? prof__g.who.rank : 0; tmpl += 6; }
        else if (cycle >= 0 && !strncmp(tmpl, "{cycle}", 7)) { v = cycle; tmpl += 7; }  /* else literal */
        else if (prof__fl_reason && !strncmp(tmpl, "{step}", 6)) { v = (long)prof__fl_step; tmpl += 6; }
        else if (prof__fl_reason && !strncmp(tmpl, "{reason}", 8)) {
            n += (size_t)snprintf(out + n, cap - n, "%s", prof__fl_reason);
            tmpl += 8;
            continue;
        }
        if (v >= 0) n += (size_t)snprintf(out + n, cap - n, "%ld", v);
        else out[n++] = *tmpl++;
    }
    if (*tmpl || n >= cap) {
        out[0] = 0;
        prof__msg("the path of %s would be longer than %d bytes; not written", what, PROF__PATH - 1);
        return 0;
    }
    out[n] = 0;
    return 1;
}

/* mkdir -p; 0 and a message if the directory cannot be made. */
PROF__COLD static int prof__mkdirs(const char *dir) {
    char buf[PROF__PATH];
    snprintf(buf, sizeof buf, "%s", dir);   /* fits: PROF_TB_DIR was checked at init */
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            prof__msg("cannot create directory '%s': %s", buf, strerror(errno));
            return 0;
        }
        if (!(*p = c)) return 1;
    }
}

/* "cycle 2: 300 regions never closed (PROF_BEGIN without PROF_END): 'parse'
   x200, 'load' x100": the cycle's unclosed regions by name, the 8 most
   frequent named. */
PROF__COLD static void prof__say_unclosed(const prof__cycle *cy) {
    enum { NAMES = 8 };
    const char *name[NAMES];
    uint64_t count[NAMES], total = 0, other = 0;
    size_t nn = 0;
    for (size_t i = 0; i < cy->n; i++) {
        if (cy->ev[i].kind != PROF__K_UNCLOSED) continue;
        const char *nm = cy->ev[i].name ? cy->ev[i].name : "(null)";
        size_t k = 0;
        while (k < nn && strcmp(name[k], nm)) k++;
        if (k == nn && nn < NAMES) { name[nn] = nm; count[nn++] = 0; }
        if (k < nn) count[k]++;
        else other++;
        total++;
    }
    if (!total) return;
    char line[NAMES * 96 + 64];
    size_t o = 0;
    for (size_t k = 0; k < nn; k++)
        o += (size_t)snprintf(line + o, sizeof line - o, "%s'%.64s' x%llu", k ? ", " : "", name[k],
                              (unsigned long long)count[k]);
    if (other) snprintf(line + o, sizeof line - o, ", others x%llu", (unsigned long long)other);
    prof__msg("cycle %d: %llu region%s never closed (PROF_BEGIN without PROF_END): %s", cy->index,
              (unsigned long long)total, total == 1 ? "" : "s", line);
    pthread_mutex_lock(&prof__lock);
    prof__g.stats.unclosed += total;
    pthread_mutex_unlock(&prof__lock);
}

/* Writes a trace file and says so, with the number of events in it. */
static int prof__write_announced(const prof__cycle *cy, const char *path, int fmt, int as_ops) {
    size_t nev = 0;
    int ok = prof__write_trace_fmt(cy, path, fmt, as_ops, &nev);
    if (ok && !prof__g.conf.quiet) prof__msg("wrote %s (%zu events)", path, nev);
    return ok;
}

/* TensorBoard's layout, as torch.profiler.tensorboard_trace_handler writes
   it: <dir>/<host>_<pid>.<time_ns>.pt.trace.json, one file per cycle. */
static void prof__write_tb(const prof__cycle *cy) {
    char host[256] = "host", path[PROF__PATH];
    FILE *f = fopen("/proc/sys/kernel/hostname", "r");
    if (f) {
        if (fgets(host, sizeof host, f)) host[strcspn(host, "\n")] = 0;
        fclose(f);
    }
    struct timespec ts;
    clock_gettime(PROF__CLOCK_REALTIME, &ts);
    if (!prof__mkdirs(prof__g.conf.tb_dir)) return;
    int n = snprintf(path, sizeof path, "%s/%s_%ld.%lld.pt.trace.json", prof__g.conf.tb_dir, host, (long)getpid(),
                     (long long)ts.tv_sec * 1000000000 + ts.tv_nsec);
    if (n < 0 || (size_t)n >= sizeof path) {
        prof__msg("the path of cycle %d's TensorBoard trace would be longer than %d bytes; not written",
                  cy->index, PROF__PATH - 1);
        return;
    }
    prof__write_announced(cy, path, PROF__FMT_JSON, 1);
}

/* Streaming. A cycle in Perfetto's format, when nothing else wants the
   whole cycle (a trace-ready handler, the table, stacks, TensorBoard's
   copy), is appended to its file at every recorded step: the step's
   records, collected and written by the thread that steps, their chunks
   back to the pool. A run killed at any point leaves a trace of the steps
   before; the recorder's memory stays within PROF_BUFFER_MB however long the
   cycle. The first part goes to the temporary file, which then takes the
   trace's name: a file there before is replaced by a trace that opens, and
   from then on the file grows by whole parts (one that fails is cut off
   again and the stream stops, saying so). GPU regions are resolved at steps
   as before and written with the cycle's last part. */
static struct {
    pthread_mutex_t lock;               /* one part written at a time */
    prof__pf *pw;                       /* the open stream, or NULL */
    int cycle;                          /* the cycle it is, or was, for */
    char path[PROF__PATH], tmp[PROF__PATH + 32];
    long good;                          /* bytes of whole parts in the file */
    uint64_t dropped, behind, clipped;  /* in its parts before the last */
} prof__stream = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, "", "", 0, 0, 0, 0 };

/* Whether cycles stream (conf is settled: called after init). */
static int prof__streams(void) {
    int fmt = prof__g.conf.format >= 0 ? prof__g.conf.format : prof__path_format(prof__g.conf.output);
    return prof__fmt[fmt].streams && !prof__g.conf.on_ready && !prof__g.conf.tb_dir[0] &&
           !prof__g.conf.stacks[0] && prof__g.conf.table_rows < 0 && !prof__g.conf.energy;
}

/* Whether cycle `index` has parts in its file already. */
static int prof__streaming(int index) {
    pthread_mutex_lock(&prof__stream.lock);
    int on = prof__stream.pw && prof__stream.cycle == index;
    pthread_mutex_unlock(&prof__stream.lock);
    return on;
}

/* Whether cycle `index` began a stream: open, finished or stopped by a part
   that failed (its file holds the steps before: nothing rewrites it). */
static int prof__streamed(int index) {
    pthread_mutex_lock(&prof__stream.lock);
    int on = index > 0 && prof__stream.cycle == index;
    pthread_mutex_unlock(&prof__stream.lock);
    return on;
}

/* Appends a part of cycle cy->index to its file; last: cy is what the
   cycle's end collected, and the file is finished. 1 if written. */
static int prof__stream_part(prof__cycle *cy, int last) {
    pthread_mutex_lock(&prof__stream.lock);
    prof__pf *p = prof__stream.pw;
    const char *path = prof__stream.path;
    int first = !p || prof__stream.cycle != cy->index;
    if (first && prof__stream.cycle == cy->index) {     /* its stream failed: said already */
        pthread_mutex_unlock(&prof__stream.lock);
        return 0;
    }
    if (first) {
        char what[64];
        if (p) {                        /* an earlier cycle's, never finished (recording was
                                           switched off): its parts are a trace as they are */
            fclose(p->w.f);
            prof__pf_free(p);
            free(p);
        }
        snprintf(what, sizeof what, "cycle %d's trace", cy->index);
        prof__stream.cycle = cy->index;
        prof__stream.dropped = prof__stream.behind = prof__stream.clipped = 0;
        prof__stream.good = 0;
        prof__calibrate();
        prof__cycle_clock(cy);          /* the trace's clock, for every part */
        if (!(p = (prof__pf *)malloc(sizeof *p)) || !prof__expand_path(prof__stream.path, prof__g.conf.output,
                                                                       cy->index, what) ||
            !prof__pf_open(p, cy, path, prof__stream.tmp, sizeof prof__stream.tmp)) {
            if (!p) prof__msg("out of memory: %s not written", what);
            free(p);
            pthread_mutex_unlock(&prof__stream.lock);
            return 0;
        }
        p->stream = 1;
        prof__stream.pw = p;
    }
    int ok = prof__pf_part(p, cy, path, first, last), errnum = p->w.errnum;
    if (ok && first && rename(prof__stream.tmp, path) != 0) { ok = 0; errnum = errno; }
    if (ok && last) {                   /* what the JSON's header says, for the whole cycle */
        prof__pf_attrs(p, path, cy->dropped, prof__stream.clipped + cy->clipped);
        prof__w_flush(&p->w);
        ok = !p->w.err;
        errnum = p->w.errnum;
    }
    if (ok) prof__stream.good = ftell(p->w.f);
    if (!last) {
        prof__stream.dropped += cy->dropped;
        prof__stream.behind += cy->behind;
        prof__stream.clipped += cy->clipped;
    }
    if (!ok || last) {
        if (fclose(p->w.f) != 0 && ok) { ok = 0; errnum = errno; }
        if (!ok && first) remove(prof__stream.tmp);
        else if (!ok) syscall(SYS_truncate, path, prof__stream.good);  /* whole parts only */
        if (!ok)
            prof__msg("failed writing cycle %d's trace '%s': %s; %s", cy->index, path,
                      errnum ? strerror(errnum) : "out of memory",
                      first ? "a file there before is left as it was" : "it holds the steps written before");
        else if (!prof__g.conf.quiet)
            prof__msg("wrote %s (%zu events)", path, p->nev);
        prof__pf_free(p);
        free(p);
        prof__stream.pw = NULL;
    }
    pthread_mutex_unlock(&prof__stream.lock);
    return ok;
}

/* What a part's records bring to the run's figures (the last part's come
   with its cycle, in prof__save_cycle). */
static void prof__part_done(const prof__cycle *cy) {
    prof__mem_label(cy);
    prof__say_unclosed(cy);
    pthread_mutex_lock(&prof__lock);
    prof__g.stats.clipped += cy->clipped;
    prof__g.stats.events += cy->n;
    pthread_mutex_unlock(&prof__lock);
}

/* The default trace-ready handler: the cycle goes to PROF_OUTPUT. */
static void prof__save_cycle(prof__cycle *cy) {
    char path[PROF__PATH], what[64];
    prof__en_take(cy);                  /* PROF_ENERGY: the knots around its steps */
    prof__smp_take(cy);                 /* PROF_SAMPLE: the CPU samples inside them */
    prof__mem_label(cy);                /* the leak report says where each allocation was made */
    int streamed = prof__streamed(cy->index);
    if (streamed) {                     /* its earlier parts' drops are told with the cycle's */
        pthread_mutex_lock(&prof__stream.lock);
        cy->dropped += prof__stream.dropped;
        cy->behind += prof__stream.behind;
        pthread_mutex_unlock(&prof__stream.lock);
    }
    if (cy->oom) prof__msg("out of memory while collecting cycle %d; its trace is incomplete", cy->index);
    prof__calibrate();
    prof__cycle_clock(cy);
    snprintf(what, sizeof what, "cycle %d's trace", cy->index);
    prof__fl_reason = cy->reason;       /* a flight dump: named by why and when */
    prof__fl_step = cy->reason_step;
    int have_path = prof__expand_path(path, prof__g.conf.output, cy->index, what);
    prof__fl_reason = NULL;
    if (cy->dropped)
        prof__msg("%llu events dropped: the recorder reached its memory cap (PROF_BUFFER_MB); "
                  "raise it or record fewer steps", (unsigned long long)cy->dropped);
    if (cy->behind)
        prof__msg("the profiler's thread fell behind the engine: %llu of those %llu were dropped while it was "
                  "still writing earlier steps (a slow disk or handler, or more events a step than it writes "
                  "in one)", (unsigned long long)cy->behind, (unsigned long long)cy->dropped);
    prof__say_unclosed(cy);
    int ok = 1;
    if (prof__g.conf.on_ready) prof__g.conf.on_ready(cy, prof__g.conf.user_data);
    else if (streamed) ok = prof__stream_part(cy, 1);
    else ok = have_path && prof__write_announced(cy, path, prof__g.conf.format >= 0 ? prof__g.conf.format
                                                                                    : prof__path_format(path), 0);
    if (prof__g.conf.tb_dir[0]) prof__write_tb(cy);
    if (prof__g.conf.stacks[0]) {
        char sp[PROF__PATH];
        snprintf(what, sizeof what, "cycle %d's stacks", cy->index);
        if (prof__expand_path(sp, prof__g.conf.stacks, cy->index, what) && prof_cycle_write_stacks(cy, sp) &&
            !prof__g.conf.quiet)
            prof__msg("wrote %s", sp);
    }
    /* One table for the run, not one per rank: rank 0's, unless asked */
    if (prof__g.conf.table_rows >= 0 && (prof__g.who.rank <= 0 || prof__g.conf.table_all_ranks)) {
        prof_table tab;
        /* a flight dump's table shows the tails: that is where a slow step is */
        int group = prof__g.conf.table_group | (cy->reason ? PROF_TABLE_PERCENTILES : 0);
        if (prof_cycle_table(cy, prof__g.conf.table_sort, group, &tab)) {
            FILE *f = prof__log();
            if (cy->reason) fprintf(f, "prof: flight dump %d (%s at step %lld)\n", cy->index, cy->reason, (long long)cy->reason_step);
            else fprintf(f, "prof: cycle %d\n", cy->index);
            prof_table_print(&tab, f, (size_t)prof__g.conf.table_rows);
            prof__mem_print_peaks(cy, f);
            fflush(f);
            prof_table_free(&tab);
        }
    }
    pthread_mutex_lock(&prof__lock);
    prof__g.stats.clipped += cy->clipped;
    prof__g.stats.events += cy->n;
    prof__g.stats.dropped += cy->dropped;
    prof__g.stats.behind += cy->behind;
    prof__g.stats.traces_written += ok ? 1 : 0;
    pthread_mutex_unlock(&prof__lock);
}

/* ---- >>open  what each thread is inside now ------------------------------
   Every thread keeps the regions it is inside: PROF_SCOPE's frames (the hot
   path's, prof__tls.top) and PROF_BEGIN's stack. The watchdog (>>watch)
   and the crash handler (>>process) read them, the handler with no lock and
   no allocation, so what is here formats text by hand. */
#define PROF__OPEN_ROWS 64              /* rows a report shows per thread */

typedef struct prof__openrow {
    const char *name;
    int64_t age_ns;                     /* open for this long */
    uint64_t t0;                        /* its start, in record units */
} prof__openrow;

/* ns per tick at (tk, m), ticks and CLOCK_MONOTONIC read together: over the
   run so far, so that a crash handler needs no calibration. */
static double prof__rate_at(uint64_t tk, int64_t m) {
    if (PROF__TICKS_ARE_NS) return 1.0;
    uint64_t t0 = prof__fallback() ? prof__g.clk.fb_tsc0 : prof__g.clk.tick0;
    return tk > t0 && m > prof__g.clk.mono0 ? (double)(m - prof__g.clk.mono0) / (double)(tk - t0) : 1.0;
}

/* What th is inside now, outermost first: PROF_SCOPE's frames (below its
   prof__tls's top; none once it has exited) and PROF_BEGIN's merged by
   start, the innermost PROF__OPEN_ROWS.
   tk: ticks now; now: prof__now() now; begins: 0 leaves PROF_BEGIN's out.
   Reads only, with no lock: a signal handler calls it. Returns the number
   of rows; *more: outer rows left out, plus PROF__OPEN_DEEPER if regions
   deeper than PROF__OPEN_MAX are open. */
#define PROF__OPEN_DEEPER (1 << 20)
static int prof__open_of(const prof__thread *th, uint64_t tk, uint64_t now, double rate, int begins,
                         prof__openrow *row, int *more) {
    *more = 0;
    if (!th || !th->tls) return 0;
    uintptr_t top = (uintptr_t)__atomic_load_n(&th->tls->top, __ATOMIC_ACQUIRE), base = (uintptr_t)th->open;
    size_t ns = top > base && top <= (uintptr_t)(th->open + PROF__OPEN_MAX + 1) ? (top - base) / sizeof *th->open : 0;
    int deeper = ns > PROF__OPEN_MAX ? PROF__OPEN_DEEPER : 0;
    if (ns > PROF__OPEN_MAX) ns = PROF__OPEN_MAX;
    int nb = begins ? __atomic_load_n(&th->sp, __ATOMIC_ACQUIRE) : 0;
    if (nb < 0 || nb > PROF__STACK_MAX) nb = 0;
    int fb = prof__fallback(), n = 0;
    size_t i = 0, j = 0;
    while (i < ns || j < (size_t)nb) {
        prof__openrow a, b;
        a.age_ns = b.age_ns = -1;
        if (i < ns) {                   /* a scope's start is a tick, fallback or not */
            uint64_t t0 = __atomic_load_n(&th->open[i].t0, __ATOMIC_RELAXED);
            a.name = __atomic_load_n(&th->open[i].name, __ATOMIC_RELAXED);
            if (!t0 || t0 > tk) t0 = tk;    /* opening now, after tk was read */
            a.age_ns = (int64_t)((double)(tk - t0) * rate);
            a.t0 = fb ? now - (uint64_t)a.age_ns : t0;
        }
        if (j < (size_t)nb) {           /* a PROF_BEGIN's is in record units */
            uint64_t t0 = __atomic_load_n(&th->stack[j].t0, __ATOMIC_RELAXED);
            b.name = __atomic_load_n(&th->stack[j].name, __ATOMIC_RELAXED);
            b.t0 = t0 && t0 <= now ? t0 : now;
            b.age_ns = fb ? (int64_t)(now - b.t0) : (int64_t)((double)(now - b.t0) * rate);
            if (!t0) { j++; continue; } /* began outside a window: not timed */
        }
        int take_a = a.age_ns >= b.age_ns;
        if (take_a) i++;
        else j++;
        if (n == PROF__OPEN_ROWS) {     /* keep the innermost */
            memmove(row, row + 1, (PROF__OPEN_ROWS - 1) * sizeof *row);
            n--;
            (*more)++;
        }
        row[n++] = take_a ? a : b;
    }
    *more |= deeper;
    return n;
}

/* The k rows prof__open_of gave for th as open-region records into out[k],
   innermost first (they end together at `now`, an inner one first), begun
   no earlier than `from`. */
static void prof__open_records(const prof__thread *th, const prof__openrow *row, int k, uint64_t from, uint64_t now,
                               prof__ev *out) {
    for (int j = 0; j < k; j++) {
        const prof__openrow *r = &row[k - 1 - j];
        prof__ev *e = &out[j];
        memset(e, 0, sizeof *e);
        e->name = r->name;
        e->t0 = r->t0 < from ? from : r->t0;
        e->t1 = now;
        e->kind = PROF__K_OPEN;
        e->th = th->idx & 0xFFFFFFFu;
    }
}

/* CUDA Graph nodes' capture-time regions (>>api-gpu's prof_gpu_graph_node):
   a table of PROF__GNODES slots keyed by node id, open addressing, made
   (calloc: untouched pages cost nothing) when the tracer starts and kept to
   the process's end, since the tracer's callback may run on any thread
   until it is gone. A slot is claimed by a compare-and-swap of its key;
   its names are written, then it is marked ready; the reader (the tracer's
   buffer thread, at prof_gpu_activity_add) joins them once, interned.
   Node ids are never reused, so slots are never freed: past the table's
   size a node has no regions, counted and said at the next save. */
#define PROF__GNODES      65536u        /* power of 2: 6 MiB of address space */
#define PROF__GNODE_DEPTH 8             /* innermost regions kept per node */
#define PROF__GNODE_PROBE 64

typedef struct prof__gnode {
    uint64_t node;                      /* atomic: 0 free, else the node's id */
    int ready;                          /* atomic: names written */
    int n, more;                        /* names kept; more: outer ones left out */
    const char *name[PROF__GNODE_DEPTH];/* outermost first */
    const char *path;                   /* atomic: "a/b", joined at first use */
} prof__gnode;

static prof__gnode *prof__gnodes;       /* atomic: set once */
static uint64_t prof__gnodes_lost;      /* atomic: nodes past the table's room */
static uint64_t prof__gnodes_said;

static void prof__gnodes_make(void) {
    if (__atomic_load_n(&prof__gnodes, __ATOMIC_ACQUIRE)) return;
    prof__gnode *t = (prof__gnode *)calloc(PROF__GNODES, sizeof *t);
    prof__gnode *none = NULL;
    if (t && !__atomic_compare_exchange_n(&prof__gnodes, &none, t, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) free(t);
}

/* The slot of node, claimed for it (claim) or only found; NULL: none. */
static prof__gnode *prof__gnode_slot(uint64_t node, int claim) {
    prof__gnode *t = __atomic_load_n(&prof__gnodes, __ATOMIC_ACQUIRE);
    if (!t || !node) return NULL;
    uint64_t h = (node * 0x9E3779B97F4A7C15ull) >> 32;
    for (unsigned i = 0; i < PROF__GNODE_PROBE; i++) {
        prof__gnode *g = &t[(h + i) & (PROF__GNODES - 1)];
        uint64_t k = __atomic_load_n(&g->node, __ATOMIC_ACQUIRE);
        if (k == node) return g;
        if (k) continue;
        if (!claim) return NULL;
        if (__atomic_compare_exchange_n(&g->node, &k, node, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) || k == node)
            return g;
    }
    return NULL;
}

/* The regions the calling thread has open now, outermost first, into the
   slot: PROF_SCOPE's and PROF_BEGIN's (they have frames while the
   profiler records: a window, its warm-up, or a run with no schedule) and
   PROF_GPU_SCOPE's (known at every step, windows or not), merged by their
   start; a GPU region begun outside a window has none, and is outer to
   those begun in it. At most PROF__OPEN_ROWS + PROF__GPU_STACK frames are
   read, on the thread itself. */
static void prof__gnode_fill(prof__gnode *g) {
    prof__openrow row[PROF__OPEN_ROWS];
    const char *name[PROF__OPEN_ROWS + PROF__GPU_STACK];
    int more = 0, nr = 0, k = 0;
    const prof__thread *th = prof__self;
    const prof__gtls_t *gt = prof__gtlsp;
    if (th) {
        uint64_t tk = prof__ticks(), now = prof__now();
        double rate = prof__fallback() ? prof__rate_at(tk, prof__mono_ns()) : 1.0;
        nr = prof__open_of(th, tk, now, rate, 1, row, &more);
    }
    int ng = gt ? gt->sp : 0, i = 0, j = 0;
    while (i < nr || j < ng) {
        int gpu = j < ng && (i == nr || !gt->stack[j].t0 || gt->stack[j].t0 <= row[i].t0);
        name[k++] = gpu ? gt->stack[j++].name : row[i++].name;
    }
    int from = k > PROF__GNODE_DEPTH ? k - PROF__GNODE_DEPTH : 0;
    g->n = k - from;
    g->more = from + (more != 0);
    for (int m = 0; m < g->n; m++) g->name[m] = name[from + m];
}

void prof_gpu_graph_node(uint64_t node, uint64_t original) {
    prof__gnode *g = prof__gnode_slot(node, 1), *o = NULL;
    if (!g) {
        if (__atomic_load_n(&prof__gnodes, __ATOMIC_ACQUIRE))
            __atomic_fetch_add(&prof__gnodes_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    if (__atomic_load_n(&g->ready, __ATOMIC_ACQUIRE)) return;      /* told twice */
    if (original && (o = prof__gnode_slot(original, 0)) && !__atomic_load_n(&o->ready, __ATOMIC_ACQUIRE)) o = NULL;
    if (original && !o) {
        g->n = g->more = 0;             /* its original's regions are not known */
    } else if (o) {
        g->n = o->n;
        g->more = o->more;
        memcpy(g->name, o->name, sizeof g->name);
    } else {
        prof__gnode_fill(g);
    }
    __atomic_store_n(&g->ready, 1, __ATOMIC_RELEASE);
}

/* Node's regions as "a/b" ("..." before them where outer ones were left
   out), interned; NULL: none known. On the tracer's buffer thread. */
static const char *prof__gnode_path(uint64_t node) {
    prof__gnode *g = prof__gnode_slot(node, 0);
    if (!g || !__atomic_load_n(&g->ready, __ATOMIC_ACQUIRE) || !g->n) return NULL;
    const char *p = __atomic_load_n(&g->path, __ATOMIC_ACQUIRE);
    if (p) return p;
    char b[1024];
    size_t n = 0;
    if (g->more) n = (size_t)snprintf(b, sizeof b, ".../");
    for (int i = 0; i < g->n && n < sizeof b; i++)
        n += (size_t)snprintf(b + n, sizeof b - n, "%s%s", i ? "/" : "", g->name[i] ? g->name[i] : "?");
    if (n >= sizeof b) n = sizeof b - 1;
    p = prof_intern(b, n);
    __atomic_store_n(&g->path, p, __ATOMIC_RELEASE);
    return p;
}

/* Nodes past the table's room since the last save: one line. */
static void prof__gnode_say_lost(void) {
    uint64_t lost = __atomic_load_n(&prof__gnodes_lost, __ATOMIC_RELAXED);
    if (lost == prof__gnodes_said) return;
    prof__gnodes_said = lost;
    prof__msg("%llu CUDA Graph nodes were made past the %u the profiler keeps: their kernels have no capture_region",
              (unsigned long long)lost, PROF__GNODES);
}

/* Text for the crash handler: no stdio, no malloc. */
PROF__COLD static void prof__as_str(char *m, size_t *n, size_t cap, const char *s) {
    for (; s && *s && *n < cap; s++) m[(*n)++] = *s;
}
PROF__COLD static void prof__as_u64(char *m, size_t *n, size_t cap, unsigned long long v) {
    char d[24];
    int k = 0;
    do d[k++] = (char)('0' + v % 10); while ((v /= 10) && k < 24);
    while (k && *n < cap) m[(*n)++] = d[--k];
}
/* ns as seconds with 3 decimals */
PROF__COLD static void prof__as_secs(char *m, size_t *n, size_t cap, int64_t ns) {
    unsigned long long ms = ns > 0 ? (unsigned long long)(ns / 1000000) : 0;
    prof__as_u64(m, n, cap, ms / 1000);
    prof__as_str(m, n, cap, ".");
    char f[4] = { (char)('0' + ms % 1000 / 100), (char)('0' + ms % 100 / 10), (char)('0' + ms % 10), 0 };
    prof__as_str(m, n, cap, f);
    prof__as_str(m, n, cap, " s");
}

/* "thread 1234 (name) is inside a (1.204 s) > b (0.002 s)" into m. */
PROF__COLD static void prof__as_inside(char *m, size_t *n, size_t cap, long tid, const char *tname, const prof__openrow *row,
                            int nrow, int more) {
    prof__as_str(m, n, cap, "thread ");
    prof__as_u64(m, n, cap, (unsigned long long)tid);
    if (tname) {
        prof__as_str(m, n, cap, " (");
        prof__as_str(m, n, cap, tname);
        prof__as_str(m, n, cap, ")");
    }
    if (!nrow) {
        prof__as_str(m, n, cap, " is inside no region");
        return;
    }
    prof__as_str(m, n, cap, " is inside ");
    if (more & ~PROF__OPEN_DEEPER) {
        prof__as_u64(m, n, cap, (unsigned long long)(more & ~PROF__OPEN_DEEPER));
        prof__as_str(m, n, cap, " more > ");
    }
    for (int k = 0; k < nrow; k++) {
        if (k) prof__as_str(m, n, cap, " > ");
        prof__as_str(m, n, cap, row[k].name ? row[k].name : "(null)");
        prof__as_str(m, n, cap, " (");
        prof__as_secs(m, n, cap, row[k].age_ns);
        prof__as_str(m, n, cap, ")");
    }
    if (more & PROF__OPEN_DEEPER) prof__as_str(m, n, cap, " > (deeper ones not kept)");
}

/* ---- >>process  fork, signals, other copies of prof.h, unloading -------- */

/* FORK. A child forked after init is a copy of one thread of a profiled
   process, holding the parent's records and maybe a lock another thread held:
   it records nothing and writes nothing, so the parent's trace stays the
   parent's and the child's exit never waits. The fork happens with prof__lock
   held (so its state is whole); the memory map's spinlocks and the locks
   the profiler's threads hold while they work, whose holders are not in
   the child, are let go: a fork never waits for a writer. A child forked before init is a fresh
   process: it records, and a PROF_OUTPUT without {pid} gets "-<pid>" before
   its extension. A child that exec()s starts afresh. */
static void prof__signals_stop(int in_child);
static void prof__smp_forget(void);
static void prof__wk_start(void);
static void prof__wk_forget(void);
static void prof__wd_start(void);
static void prof__wd_stop(int in_child);

static void prof__smp_fork_lock(int lock);
static void prof__ctr_fork_lock(int lock);
static void prof__ctr_forget(void);
PROF__COLD static void prof__fork_prepare(void) {
    pthread_mutex_lock(&prof__lock);
    prof__smp_fork_lock(1);             /* the child's copy of the sampled threads is whole */
    prof__ctr_fork_lock(1);             /* and of the counted ones */
}
PROF__COLD static void prof__fork_parent(void) {
    prof__ctr_fork_lock(0);
    prof__smp_fork_lock(0);
    pthread_mutex_unlock(&prof__lock);
}
PROF__COLD static void prof__fork_child(void) {
    prof__g.proc.fork_child = 1;
    __atomic_store_n(&prof__res_running, 0, __ATOMIC_RELAXED);    /* the parent's helpers are not here, */
    prof__wk_forget();                  /* nor the locks they may hold */
    prof__smp_forget();                 /* nor its sampled threads */
    prof__ctr_forget();                 /* nor its counted ones */
    pthread_mutex_init(&prof__pool_lock, NULL);
    if (prof__g.inited) {
        prof__g.proc.mute = 1;
        __atomic_store_n(&prof__g.shut, 1, __ATOMIC_RELAXED);  /* PROF_INIT and exit() find nothing to do */
        prof__g.disabled = 1;
        __atomic_store_n(&prof__on, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&prof__mem.on, 0, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < PROF__MEM_SHARDS; i++) __atomic_store_n(&prof__mem.shard[i].lock, 0, __ATOMIC_RELAXED);
    prof__tls.cur = prof__tls.end = NULL;
    if (prof__g.proc.copy) close(prof__g.proc.copy_fd);     /* the number is the parent's */
    prof__g.proc.copy = 0;
    prof__signals_stop(1);
    prof__wd_stop(1);
    pthread_mutex_unlock(&prof__lock);
}

/* SIGNALS. SIGINT and SIGTERM (Ctrl-C, a scheduler's time limit) would end a
   run before its trace is written. Where their action is the default,
   prof.h takes them: the handler only writes a byte into a pipe; a watcher
   thread then shuts down as exit() would (the trace is written) and sends
   the signal again with its default action, so the process ends with the
   status its parent expects. A second signal ends it at once. A handler the
   engine set, or SIG_IGN, is left alone. ISO C's signal(): strict -std=c11
   hides sigaction, and prof.h does not define _POSIX_C_SOURCE behind the
   engine's back.
   A crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints, once, what the
   crashing thread is inside, and the other threads where the profiler's
   lock is free (tried, never waited for), and what is lost: write(2) only,
   no lock waited for, no allocation. Then the previous handler runs: where
   sigaction is declared (C++, or C with POSIX or GNU features) prof.h sits
   in front of any handler and calls it with the same arguments; under
   strict C it takes only signals whose action is the default. The flight
   recorder's ring is not written: that needs a file and memory.
   PROF_SIGNALS=0: none of this. */
static const int prof__stop_sigs[] = { SIGINT, SIGTERM };
static const int prof__crash_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

static struct {
    int pipe[2];                        /* handler -> watcher, while running */
    pthread_t watcher;
    int running;                        /* atomic: the watcher thread exists */
    int caught;                         /* atomic: the stop signal being handled */
    unsigned char ours[32];             /* ours[sig]: prof.h's handler is installed
                                           (1 by signal(), 2 by sigaction()) */
} prof__sig;

static const char *prof__sig_name(int sig) {
    switch (sig) {
    case SIGINT:  return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS:  return "SIGBUS";
    case SIGFPE:  return "SIGFPE";
    case SIGILL:  return "SIGILL";
    default:      return "SIGABRT";
    }
}

/* The signal again, to the process, with its default action. */
PROF__COLD static void prof__sig_default(int sig) {
    signal(sig, SIG_DFL);
    syscall(SYS_kill, (long)getpid(), (long)sig);  /* kill() is POSIX: hidden by -std=c11 */
}

PROF__COLD static void prof__on_stop(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (__atomic_exchange_n(&prof__sig.caught, sig, __ATOMIC_RELAXED) || write(prof__sig.pipe[1], &b, 1) != 1)
        prof__sig_default(sig);         /* a second one: stop now */
    errno = saved;
}

/* What the crashing thread is inside, then the others', then what is lost.
   Async-signal-safe; once per process. */
PROF__COLD static void prof__crash_report(int sig) {
    static int said;
    if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) return;
    char m[1536];
    prof__openrow row[PROF__OPEN_ROWS];
    size_t n = 0;
    int more = 0, k;
    uint64_t tk = prof__ticks(), now = prof__fallback() ? (uint64_t)prof__mono_ns() : tk;
    double rate = prof__rate_at(tk, prof__mono_ns());
    const prof__thread *self = prof__self;
    prof__as_str(m, &n, sizeof m, "prof: ");
    prof__as_str(m, &n, sizeof m, prof__sig_name(sig));
    prof__as_str(m, &n, sizeof m, ": ");
    k = prof__open_of(self, tk, now, rate, 1, row, &more);
    prof__as_inside(m, &n, sizeof m, self ? self->tid : (long)syscall(SYS_gettid),
                    self ? __atomic_load_n(&self->name, __ATOMIC_RELAXED) : NULL, row, k, more);
    prof__as_str(m, &n, sizeof m, "\n");
    if (write(2, m, n) < 0) {}
    /* The registry stays still while prof__lock is held. A profiler's
       thread holds it for moments (starting, taking a job): wait up to 100
       ms for it, never longer, as the crashing thread may hold it itself. */
    int locked = 0;
    for (int i = 0; i < 100 && !(locked = pthread_mutex_trylock(&prof__lock) == 0); i++) {
        struct timespec ms = { 0, 1000000 };
        syscall(SYS_nanosleep, &ms, NULL);      /* nanosleep() is POSIX: hidden by -std=c11 */
    }
    if (locked) {
        for (const prof__thread *th = prof__g.rec.threads; th; th = th->next) {
            if (th == self || !(k = prof__open_of(th, tk, now, rate, 1, row, &more))) continue;
            n = 0;
            prof__as_str(m, &n, sizeof m, "prof:   and ");
            prof__as_inside(m, &n, sizeof m, th->tid, __atomic_load_n(&th->name, __ATOMIC_RELAXED), row, k, more);
            prof__as_str(m, &n, sizeof m, "\n");
            if (write(2, m, n) < 0) {}
        }
        pthread_mutex_unlock(&prof__lock);
    } else {
        static const char busy[] = "prof:   (other threads not shown: the profiler's lock is held)\n";
        if (write(2, busy, sizeof busy - 1) < 0) {}
    }
    n = 0;
    prof__as_str(m, &n, sizeof m, "prof: ");
    prof__as_str(m, &n, sizeof m, prof__sig_name(sig));
    prof__as_str(m, &n, sizeof m, ": the process is crashing; up to ");
    prof__as_u64(m, &n, sizeof m,
                 (unsigned long long)__atomic_load_n(&prof__g.rec.in_use, __ATOMIC_RELAXED) * PROF__CHUNK_RECS);
    prof__as_str(m, &n, sizeof m, prof__g.conf.flight
                     ? " events recorded since the last trace are lost (the flight recorder's ring is not written)\n"
                     : " events recorded since the last trace are lost (a schedule writes one per cycle)\n");
    if (write(2, m, n) < 0) {}
}

#if defined(SA_SIGINFO)
#define PROF__SIGACTION 1
static struct sigaction prof__crash_old[32];    /* the handlers prof.h is in front of */

PROF__COLD static void prof__on_crash(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    prof__crash_report(sig);
    const struct sigaction *o = &prof__crash_old[sig];
    if (o->sa_flags & SA_SIGINFO) {
        o->sa_sigaction(sig, si, uc);   /* theirs decides: it may recover */
    } else if (o->sa_handler != SIG_DFL && o->sa_handler != SIG_IGN) {
        o->sa_handler(sig);
    } else {                            /* as it was: the fault again, or this signal, */
        sigaction(sig, o, NULL);        /* now with the default action */
        if (o->sa_handler == SIG_DFL) raise(sig);
    }
    errno = saved;
}
#else
#define PROF__SIGACTION 0
PROF__COLD static void prof__on_crash(int sig) {
    prof__crash_report(sig);
    signal(sig, SIG_DFL);               /* returning re-runs the fault, or delivers this: */
    raise(sig);                         /* the crash goes on as it would have */
}
#endif

PROF__COLD static void *prof__sig_watch(void *arg) {
    (void)arg;
    for (;;) {
        unsigned char b = 0;
        ssize_t n = read(prof__sig.pipe[0], &b, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n != 1 || b == 0) return NULL;          /* shutdown */
        const char *name = prof__sig_name(b);
        prof__msg("%s: writing the trace before the process ends (PROF_SIGNALS=0 turns this off)", name);
        prof_shutdown();
        prof__sig_default(b);
        return NULL;
    }
}

static void prof__sig_take(int sig, void (*fn)(int)) {
    void (*old)(int) = signal(sig, fn);
    if (old == SIG_DFL) prof__sig.ours[sig] = 1;
    else if (old != SIG_ERR) signal(sig, old);      /* the engine's, or ignored: as it was */
}

static void prof__signals_restore(void);

PROF__COLD static int prof__is_crash_fn(void (*fn)(int)) {
#if PROF__SIGACTION
    (void)fn;                           /* installed by sigaction, put back the same way */
    return 0;
#else
    return fn == prof__on_crash;
#endif
}

/* At init, under prof__lock. */
PROF__COLD static void prof__signals_start(void) {
    if (!prof__g.proc.signals || prof__g.disabled || __atomic_load_n(&prof__sig.running, __ATOMIC_ACQUIRE)) return;
    if (pipe(prof__sig.pipe) != 0) return;
    fcntl(prof__sig.pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(prof__sig.pipe[1], F_SETFD, FD_CLOEXEC);
    __atomic_store_n(&prof__sig.caught, 0, __ATOMIC_RELAXED);
    /* handlers first: a signal before the watcher runs waits in the pipe */
    for (size_t i = 0; i < sizeof prof__stop_sigs / sizeof *prof__stop_sigs; i++)
        prof__sig_take(prof__stop_sigs[i], prof__on_stop);
    for (size_t i = 0; i < sizeof prof__crash_sigs / sizeof *prof__crash_sigs; i++) {
        int sig = prof__crash_sigs[i];
#if PROF__SIGACTION
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = prof__on_crash;
        sa.sa_flags = SA_SIGINFO;
#ifdef SA_ONSTACK
        sa.sa_flags |= SA_ONSTACK;          /* the engine's alternate stack, if it has one */
#endif
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, &sa, &prof__crash_old[sig]) == 0) prof__sig.ours[sig] = 2;
#else
        prof__sig_take(sig, prof__on_crash);
#endif
    }
    if (pthread_create(&prof__sig.watcher, NULL, prof__sig_watch, NULL) != 0) {
        prof__signals_restore();
        close(prof__sig.pipe[0]);
        close(prof__sig.pipe[1]);
        return;
    }
    __atomic_store_n(&prof__sig.running, 1, __ATOMIC_RELEASE);
}

/* Our handlers go, where they are still there (the engine may have set its
   own since). */
PROF__COLD static void prof__signals_restore(void) {
    for (int sig = 1; sig < 32; sig++) {
        if (!prof__sig.ours[sig]) continue;
#if PROF__SIGACTION
        if (prof__sig.ours[sig] == 2) {     /* put back what was there, if we still are */
            struct sigaction cur;
            prof__sig.ours[sig] = 0;
            if (sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == prof__on_crash)
                sigaction(sig, &prof__crash_old[sig], NULL);
            continue;
        }
#endif
        prof__sig.ours[sig] = 0;
        void (*old)(int) = signal(sig, SIG_DFL);
        if (old != prof__on_stop && !prof__is_crash_fn(old) && old != SIG_ERR) signal(sig, old);
    }
}

/* The handlers go, then the watcher: at shutdown (outside the lock) it is
   joined, so that dlclose() unmaps no code a thread still runs; in a fork's
   child (in_child) it is not there, and the pipe, shared with the parent's,
   is only closed. */
PROF__COLD static void prof__signals_stop(int in_child) {
    if (!__atomic_exchange_n(&prof__sig.running, 0, __ATOMIC_ACQ_REL)) return;
    prof__signals_restore();
    if (!in_child) {
        unsigned char z = 0;                        /* 0: the watcher returns */
        if (pthread_equal(pthread_self(), prof__sig.watcher) || write(prof__sig.pipe[1], &z, 1) != 1)
            pthread_detach(prof__sig.watcher);      /* it is shutting down itself, or cannot be told */
        else
            pthread_join(prof__sig.watcher, NULL);
    }
    close(prof__sig.pipe[0]);
    close(prof__sig.pipe[1]);
}

/* COPIES. A shared library built with its own PROF_IMPLEMENTATION (and its
   symbols hidden) is a second profiler in the process: both would write
   prof_trace_<pid>.json. Each copy claims the first free abstract socket
   name "prof.h/<pid>/<n>" (Linux; no file, gone with the process), which
   numbers the copies with no symbol shared; copy n >= 2 writes its traces
   with "-n" before the extension and says so. */
PROF__COLD static void prof__claim_copy(void) {
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return;
    for (int n = 1; n < 100; n++) {
        struct sockaddr_un a;
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;         /* sun_path[0] = 0: the abstract namespace */
        int len = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "prof.h/%ld/%d", (long)getpid(), n);
        socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
        if (bind(fd, (const struct sockaddr *)(const void *)&a, size) == 0) {
            prof__g.proc.copy = n;
            prof__g.proc.copy_fd = fd;
            if (n > 1)
                prof__msg("this is copy %d of prof.h in this process (a library with its own "
                          "PROF_IMPLEMENTATION): its traces get '-%d' before the extension", n, n);
            return;
        }
        if (errno != EADDRINUSE) break;
    }
    close(fd);
}

/* TOOLS. libprof_nvtx.so (prof_nvtx.c, loaded by NVTX from
   NVTX_INJECTION64_PATH) records what other libraries say to NVTX into
   this copy, through the record path the macros use. It finds the copy
   with no symbol exported (an executable exports none without -rdynamic):
   each copy's code carries an ELF note, "prof.h" type 1, holding the
   distance from the note to its prof__tool table; a note is in a PT_NOTE
   segment, which dl_iterate_phdr lists and strip keeps. Nothing runs in
   the program for it: no library, no cost. -DPROF_PRIVATE copies carry
   none (a plugin's own profiler stays its own). */
#endif /* PROF__BODIES */
#define PROF__TOOL_MAGIC   0x544f4f4cu  /* "LOOT" little-endian: a table, not garbage */
#define PROF__TOOL_VERSION 1u
typedef struct prof__tool {
    uint32_t magic, version;            /* PROF__TOOL_MAGIC, PROF__TOOL_VERSION */
    size_t size;                        /* sizeof: later versions only append */
    const unsigned char *on;            /* prof__on: nonzero while recording (or before init) */
    uint64_t (*now)(void);              /* the records' time (ticks, or ns without a TSC) */
    void (*region)(const char *name, uint64_t t0, uint64_t t1);    /* the calling thread's */
    void (*instant)(const char *name);
    void (*arg_int)(const char *key, int64_t v);   /* the next region this thread ends */
    void (*arg_str)(const char *key, const char *s);
    const char *(*intern)(const char *s, size_t n);
    void (*thread_name)(const char *name);         /* the calling thread */
    int (*name_tid)(long tid, const char *name);   /* a thread prof.h has seen: 1, else 0 */
    void (*say)(const char *line);                 /* one line, as prof.h says its own */
    int copy;                           /* filled by nobody: 0 (room for later) */
} prof__tool;
#if PROF__BODIES

static void prof__tool_region(const char *name, uint64_t t0, uint64_t t1) {
    prof__push(PROF__K_REGION, name, t0, t1, 0);
}
static void prof__tool_instant(const char *name) { prof__push(PROF__K_INSTANT, name, prof__now(), 0, 0); }
PROF__COLD static int prof__tool_name_tid(long tid, const char *name) {
    int found = 0;
    pthread_mutex_lock(&prof__lock);
    for (prof__thread *th = prof__g.rec.threads; th; th = th->next)
        if (th->tid == tid && !th->retired) {
            __atomic_store_n(&th->name, name, __ATOMIC_RELEASE);
            found = 1;
        }
    pthread_mutex_unlock(&prof__lock);
    return found;
}
PROF__COLD static void prof__tool_say(const char *line) { prof__msg("%s", line); }

/* A global of C linkage (a C++ compiler would mangle an internal name, or
   drop it), hidden: exported by no object, and so the note's distance to it
   is fixed by the link, with no dynamic relocation. */
#endif /* PROF__BODIES */
extern __attribute__((visibility("hidden"))) const prof__tool prof__tool_table;
#if PROF__BODIES
__attribute__((used)) const prof__tool prof__tool_table = {
    PROF__TOOL_MAGIC, PROF__TOOL_VERSION, sizeof(prof__tool), &prof__on, prof__now,
    prof__tool_region, prof__tool_instant, prof_arg_int, prof_arg_str, prof_intern,
    prof_thread_name, prof__tool_name_tid, prof__tool_say, 0,
};

#ifndef PROF_PRIVATE
/* namesz 7 ("prof.h" and its NUL, padded to 8), descsz 8, type 1; the
   descriptor: the table's address less the descriptor's own, fixed at link
   time (no dynamic relocation in a read-only segment). */
__asm__(".pushsection .note.prof_h,\"a\",%note\n"
        ".balign 4\n"
        ".long 7\n.long 8\n.long 1\n"
        ".asciz \"prof.h\"\n.balign 4\n"
        ".quad prof__tool_table - .\n"
        ".popsection\n");
#endif

/* LOADING. The fork handlers go in when the code is loaded, so a fork
   before init is seen too; dlclose() takes them out again (glibc ties them
   to this object). At unload (dlclose, after its atexit handler,
   prof_shutdown, wrote the trace) the thread key goes, so a thread that
   recorded here and exits later calls no destructor that is unmapped. */
__attribute__((constructor)) static void prof__load(void) {
    pthread_atfork(prof__fork_prepare, prof__fork_parent, prof__fork_child);
}

__attribute__((destructor)) static void prof__unload(void) {
    if (prof__g.proc.key_made) pthread_key_delete(prof__g.rec.key);
}

/* ---- >>env  environment and init ---------------------------------------- */

/* Keeps a path template in dst[PROF__PATH]: 0 and a message (what follows,
   `instead`) if it is too long, with dst emptied; never cut. */
PROF__COLD static int prof__set_path(char *dst, const char *var, const char *value, const char *instead) {
    size_t n = strlen(value);
    if (n < PROF__PATH) {
        memcpy(dst, value, n + 1);
        return 1;
    }
    dst[0] = 0;
    prof__msg("%s is %zu bytes, longer than the %d a path can have; %s", var, n, PROF__PATH - 1, instead);
    return 0;
}

/* Parses a whole non-negative number; 0 if absent or malformed. */
PROF__COLD PROF__SHARED int prof__parse_uint(const char *s, long *out) {
    char *end;
    if (!s || *s < '0' || *s > '9') return 0;   /* strtol would take " +64" */
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v < 0 || v > 0x7fffffffL) return 0;
    *out = v;
    return 1;
}

/* "skip_first=3,wait=5,warmup=1,active=3,repeat=1": missing keys are 0. */
/* The next item of a "key=value,key=value" spec, cut in place in *cur:
   1 with *key and *val set, 0 at the end, -1 for an item without '=' (*key:
   the item, which PROF_TABLE's "percentiles" is) or an empty one. The one
   tokenizer of PROF_SCHEDULE and PROF_TABLE. */
PROF__COLD static int prof__kv_next(char **cur, char **key, char **val) {
    char *tok = *cur, *comma, *eq;
    if (!tok) return 0;
    comma = strchr(tok, ',');
    if (comma) *comma = 0;
    *cur = comma ? comma + 1 : NULL;
    *key = tok;                         /* a bare word: -1, the word in *key */
    *val = NULL;
    if (!(eq = strchr(tok, '=')) || eq == tok) return -1;
    *eq = 0;
    *val = eq + 1;
    return 1;
}

/* "skip_first=3,wait=5,warmup=1,active=3,repeat=1": missing keys are 0;
   active >= 1 and wait + warmup + active must fit an int. */
PROF__COLD PROF__SHARED int prof__parse_schedule(const char *s, prof_schedule *out) {
    prof_schedule r = { 0, 0, 0, 0, 0 };
    char buf[256], *cur = buf, *key, *val;
    int k;
    if (strlen(s) >= sizeof buf) return 0;
    strcpy(buf, s);
    while ((k = prof__kv_next(&cur, &key, &val)) > 0) {
        long v;
        if (!prof__parse_uint(val, &v)) return 0;
        if (!strcmp(key, "skip_first")) r.skip_first = (int)v;
        else if (!strcmp(key, "wait")) r.wait = (int)v;
        else if (!strcmp(key, "warmup")) r.warmup = (int)v;
        else if (!strcmp(key, "active")) r.active = (int)v;
        else if (!strcmp(key, "repeat")) r.repeat = (int)v;
        else return 0;
    }
    if (k < 0 || r.active < 1 || (long long)r.wait + r.warmup + r.active > 0x7fffffffLL) return 0;
    *out = r;
    return 1;
}

/* The PROF_TABLE spec: "sort=self_cpu,rows=10[,group=args|thread|args+thread|domain]", any order, any subset; the rest
   stays at sort=self_cpu, rows=0 (all), no grouping. "1" takes every
   default. torch's sort_by spellings are accepted too. */
PROF__COLD PROF__SHARED int prof__parse_table_spec(const char *spec, prof_sort *sort, size_t *rows, int *group_by_args,
                                                   int *all_ranks) {
    static const struct { const char *name; prof_sort sort; } sorts[] = {
        { "self_cpu", PROF_SORT_SELF_CPU },   { "self_cpu_time_total", PROF_SORT_SELF_CPU },
        { "cpu_total", PROF_SORT_CPU_TOTAL }, { "cpu_time_total", PROF_SORT_CPU_TOTAL },
        { "cpu_avg", PROF_SORT_CPU_AVG },     { "cpu_time", PROF_SORT_CPU_AVG },
        { "cpu_min", PROF_SORT_CPU_MIN },     { "cpu_max", PROF_SORT_CPU_MAX },
        { "calls", PROF_SORT_CALLS },         { "count", PROF_SORT_CALLS },
        { "flops", PROF_SORT_FLOPS },         { "name", PROF_SORT_NAME },
        { "self_gpu", PROF_SORT_SELF_GPU },   { "self_cuda_time_total", PROF_SORT_SELF_GPU },
        { "gpu_total", PROF_SORT_GPU_TOTAL }, { "cuda_time_total", PROF_SORT_GPU_TOTAL },
        { "gpu_avg", PROF_SORT_GPU_AVG },     { "cuda_time", PROF_SORT_GPU_AVG },
        { "self_device_time_total", PROF_SORT_SELF_GPU }, { "device_time_total", PROF_SORT_GPU_TOTAL },
        { "cpu_mem", PROF_SORT_CPU_MEM },     { "cpu_memory_usage", PROF_SORT_CPU_MEM },
        { "self_cpu_mem", PROF_SORT_SELF_CPU_MEM }, { "self_cpu_memory_usage", PROF_SORT_SELF_CPU_MEM },
        { "gpu_mem", PROF_SORT_GPU_MEM },     { "cuda_memory_usage", PROF_SORT_GPU_MEM },
        { "self_gpu_mem", PROF_SORT_SELF_GPU_MEM }, { "self_cuda_memory_usage", PROF_SORT_SELF_GPU_MEM },
    };
    prof_sort s = PROF_SORT_SELF_CPU;
    long n = 0;
    int g = 0, all = 0, k = 0, pct = 0;
    char buf[256], *cur = buf, *tok, *eq;
    if (!spec || strlen(spec) >= sizeof buf) return 0;
    strcpy(buf, spec);
    if (strcmp(buf, "1") != 0) {
        while ((k = prof__kv_next(&cur, &tok, &eq)) != 0) {
            if (k < 0) {                /* the one bare word: percentiles */
                if (strcmp(tok, "percentiles")) return 0;
                pct = PROF_TABLE_PERCENTILES;
            } else if (!strcmp(tok, "sort")) {
                size_t i = 0, ns = sizeof sorts / sizeof sorts[0];
                while (i < ns && strcmp(eq, sorts[i].name)) i++;
                if (i == ns) return 0;
                s = sorts[i].sort;
            } else if (!strcmp(tok, "rows")) {
                if (!prof__parse_uint(eq, &n)) return 0;
            } else if (!strcmp(tok, "group")) {
                if (!strcmp(eq, "args")) g = PROF_GROUP_ARGS;
                else if (!strcmp(eq, "thread")) g = PROF_GROUP_THREAD;
                else if (!strcmp(eq, "domain")) g = PROF_GROUP_DOMAIN;
                else if (!strcmp(eq, "capture")) g = PROF_GROUP_CAPTURE;
                else if (!strcmp(eq, "args+thread") || !strcmp(eq, "thread+args")) g = PROF_GROUP_ARGS | PROF_GROUP_THREAD;
                else if (!strcmp(eq, "name")) g = 0;
                else return 0;
            } else if (!strcmp(tok, "ranks")) {
                if (!strcmp(eq, "all")) all = 1;
                else if (!strcmp(eq, "0")) all = 0;
                else return 0;
            } else {
                return 0;
            }
        }
    }
    *sort = s;
    *rows = (size_t)n;
    *group_by_args = g | pct;
    if (all_ranks) *all_ranks = all;
    return 1;
}

PROF__COLD int prof_table_spec(const char *spec, prof_sort *sort, size_t *rows, int *group) {
    return prof__parse_table_spec(spec, sort, rows, group, NULL);
}

/* The launcher's variables: torchrun, Open MPI, MPICH/PMI, Slurm. */
PROF__COLD static void prof__rank_from_env(void) {
    static const char *vars[][2] = {
        { "RANK", "WORLD_SIZE" },
        { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
        { "PMI_RANK", "PMI_SIZE" },
        { "SLURM_PROCID", "SLURM_NTASKS" },
    };
    prof__g.who.rank = -1;
    prof__g.who.world = 0;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *r = getenv(vars[i][0]), *n = getenv(vars[i][1]);
        long rv, nv;
        if (!r || !*r) continue;
        if (!prof__parse_uint(r, &rv) || !n || !prof__parse_uint(n, &nv) || rv >= nv) {
            char q1[PROF__QUOTE], q2[PROF__QUOTE];
            prof__msg("%s='%s' with %s='%s' is not a rank below a world size; ignoring them",
                      vars[i][0], prof__q(r, q1), vars[i][1], prof__q(n ? n : "", q2));
            continue;
        }
        prof__g.who.rank = (int)rv;
        prof__g.who.world = (int)nv;
        return;
    }
}

/* Whether `rank` is in a PROF_RANKS list such as "0,2-3" (or "all");
   -1 if the list is malformed. */
PROF__COLD PROF__SHARED int prof__rank_in(const char *list, int rank) {
    if (!*list || !strcmp(list, "all")) return 1;
    int hit = 0;
    for (const char *p = list; *p;) {
        char *end;
        if (*p < '0' || *p > '9') return -1;
        long lo = strtol(p, &end, 10), hi = lo;
        if (*end == '-') {
            p = end + 1;
            if (*p < '0' || *p > '9') return -1;
            hi = strtol(p, &end, 10);
        }
        if (hi < lo || (*end && *end != ',') || (*end == ',' && !end[1])) return -1;
        if (rank >= lo && rank <= hi) hit = 1;
        p = *end ? end + 1 : end;
    }
    return hit;
}

/* Recording is off when the user says so or this rank is not chosen; a run
   with no rank (not distributed) records as rank 0 would. Under the lock. */
PROF__COLD static void prof__update_disabled(void) {
    prof__g.disabled = prof__g.conf.user_disabled ||
                       prof__rank_in(prof__g.conf.ranks, prof__g.who.rank > 0 ? prof__g.who.rank : 0) == 0;
}

static void prof__smp_follow_locked(int want);
static void prof__ctr_step_locked(int64_t step, int prev, int next);

PROF__COLD void prof_set_rank(int rank, int world_size) {
    if (rank < 0 || world_size <= rank) {
        prof__msg("PROF_SET_RANK(%d, %d): the rank must be at least 0 and below the world size; ignoring it",
                  rank, world_size);
        return;
    }
    pthread_mutex_lock(&prof__lock);
    prof__g.who.rank = rank;
    prof__g.who.world = world_size;
    prof__g.who.rank_set = 1;
    if (prof__g.inited && !prof__g.shut) {
        prof__update_disabled();
        int on = !prof__g.disabled && prof__cur_action() != PROF__NONE;
        __atomic_store_n(&prof__on, (unsigned char)on, __ATOMIC_RELAXED);
        prof__act_follow_locked(on, 0);
        prof__smp_follow_locked(on && prof__cur_action() >= PROF__RECORD);
        prof__ctr_step_locked(-1, PROF__NONE, prof__cur_action());
    }
    pthread_mutex_unlock(&prof__lock);
}

void prof_sync(void) {
    uint32_t k = __atomic_fetch_add(&prof__g.run.syncs, 1, __ATOMIC_RELAXED);
    if (prof__recording()) prof__push(PROF__K_SYNC, NULL, prof__now(), 0, k);
}

PROF__COLD static void prof__atexit(void) { prof_shutdown(); }

/* ---- the options' readers (the table: PROF__OPTIONS, >>impl) ----------- */

/* One line for a malformed value: "<who>='<value>' is not <form>; <then>". */
PROF__COLD static void prof__opt_say(const char *who, const char *v, const char *form, const char *then) {
    char q[PROF__QUOTE];
    prof__msg("%s='%s' is not %s; %s", who, prof__q(v, q), form, then);
}

/* A variable's value: NULL when unset, empty, or the row has none. */
PROF__COLD static const char *prof__opt_env(const char *var) {
    const char *e = *var ? getenv(var) : NULL;
    return e && *e ? e : NULL;
}

/* BOOL. `then` NULL: malformed values are passed over without a word. */
PROF__COLD static void prof__opt_cfg_bool(int *o, const int *c, int d) { *o = *c == 0 ? d : d ? *c > 0 : 1; }
PROF__COLD static void prof__opt_bool(const char *var, int *o, const char *form, const char *then) {
    const char *e = prof__opt_env(var);
    if (e && (!strcmp(e, "0") || !strcmp(e, "1"))) *o = e[0] == '1';
    else if (e && then) prof__opt_say(var, e, form, then);
}

/* INT and MIB: a whole number lo..hi; malformed: the value so far stays. */
PROF__COLD static void prof__opt_cfg_int(int *o, const int *c, int d) { *o = *c > 0 ? *c : d; }
PROF__COLD static void prof__opt_cfg_mib(size_t *o, const size_t *c, size_t d) { *o = *c ? *c : d; }
PROF__COLD static int prof__opt_whole(const char *var, long *v, long lo, long hi, const char *form, const char *then) {
    const char *e = prof__opt_env(var);
    long n;
    if (e && prof__parse_uint(e, &n) && n >= lo && n <= hi) *v = n;
    else if (e) {
        char instead[64];
        snprintf(instead, sizeof instead, "using %ld", *v);
        prof__opt_say(var, e, form, *v || !*then ? instead : then);
    }
    return e != NULL;
}
PROF__COLD static void prof__opt_int(const char *var, int *o, long lo, long hi, const char *form, const char *then) {
    long v = *o;
    if (prof__opt_whole(var, &v, lo, hi, form, then)) *o = (int)v;
}
PROF__COLD static void prof__opt_mib(const char *var, size_t *o, long lo, long hi, const char *form, const char *then) {
    long v = (long)*o;
    if (prof__opt_whole(var, &v, lo, hi, form, then)) *o = (size_t)v;
}

/* REAL: lo..hi; 0 is off. */
PROF__COLD static void prof__opt_cfg_real(double *o, const double *c, double d) { *o = *c > 0 ? *c : *c < 0 ? 0 : d; }
PROF__COLD static void prof__opt_real(const char *var, double *o, double lo, double hi, const char *form,
                                      const char *then) {
    const char *e = prof__opt_env(var);
    char *end, instead[64];
    if (!e) return;
    double v = strtod(e, &end);
    if (!*end && v >= lo && v <= hi) {
        *o = v;
        return;
    }
    snprintf(instead, sizeof instead, "using %g", *o);
    prof__opt_say(var, e, form, *o > 0 || !*then ? instead : then);
}

/* PATH: the config's or the default, then the variable's; too long: "". */
PROF__COLD static void prof__opt_cfg_path(char *o, const char *const *c, const char *var, const char *d,
                                          const char *then) {
    prof__set_path(o, var, *c && **c ? *c : d, then);
}
PROF__COLD static void prof__opt_path(const char *var, char *o, const char *then) {
    const char *e = prof__opt_env(var);
    if (e) prof__set_path(o, var, e, then);
}

/* SPEC and SCHED: a parser of the string into *out, which it leaves alone
   when it refuses it. */
typedef int prof__spec_fn(const char *s, void *out);
PROF__COLD static void prof__opt_spec(const char *who, const char *s, prof__spec_fn *parse, void *out, const char *form,
                                      const char *then) {
    if (s && *s && !parse(s, out)) prof__opt_say(who, s, form, then);
}
PROF__COLD static void prof__opt_cfg_spec(void *o, const char *const *c, prof__spec_fn *parse, const char *field,
                                          const char *d, const char *form, const char *then) {
    char who[64];
    parse(d, o);                        /* the default: always taken */
    snprintf(who, sizeof who, "prof_config.%s", field);
    prof__opt_spec(who, *c, parse, o, form, then);
}
PROF__COLD static void prof__opt_cfg_sched(prof__opt_schedule *o, const prof_schedule *c) {
    o->s = *c;
    o->on = c->active > 0;
    if (o->on && (c->skip_first < 0 || c->wait < 0 || c->warmup < 0 || c->repeat < 0)) {
        prof__msg("prof_config.schedule has a negative field; recording without a schedule");
        o->on = 0;
    }
}

/* Each kind's two steps: from the default and the config (o, c: prof__opts
   and prof_config pointers), then from the variable. */
#define PROF__OPT_CFG_BOOL(v, f, d, lo, hi, form, then)  prof__opt_cfg_bool(&o->f, &c->f, d);
#define PROF__OPT_CFG_INT(v, f, d, lo, hi, form, then)   prof__opt_cfg_int(&o->f, &c->f, d);
#define PROF__OPT_CFG_REAL(v, f, d, lo, hi, form, then)  prof__opt_cfg_real(&o->f, &c->f, d);
#define PROF__OPT_CFG_MIB(v, f, d, lo, hi, form, then)   prof__opt_cfg_mib(&o->f, &c->f, d);
#define PROF__OPT_CFG_PATH(v, f, d, lo, hi, form, then)  prof__opt_cfg_path(o->f, &c->f, v, d, then);
#define PROF__OPT_CFG_SPEC(v, f, d, lo, hi, form, then) \
    prof__opt_cfg_spec(&o->f, &c->f, prof__spec_##f, #f, d, form, then);
#define PROF__OPT_CFG_SCHED(v, f, d, lo, hi, form, then) prof__opt_cfg_sched(&o->f, &c->f);
#define PROF__OPT_CFG_ALIAS(v, f, d, lo, hi, form, then)
#define PROF__OPT_CFG_LIB(v, f, d, lo, hi, form, then)
#define PROF__OPT_ENV_BOOL(v, f, d, lo, hi, form, then)  prof__opt_bool(v, &o->f, form, then);
#define PROF__OPT_ENV_INT(v, f, d, lo, hi, form, then)   prof__opt_int(v, &o->f, lo, hi, form, then);
#define PROF__OPT_ENV_REAL(v, f, d, lo, hi, form, then)  prof__opt_real(v, &o->f, lo, hi, form, then);
#define PROF__OPT_ENV_MIB(v, f, d, lo, hi, form, then)   prof__opt_mib(v, &o->f, lo, hi, form, then);
#define PROF__OPT_ENV_PATH(v, f, d, lo, hi, form, then)  prof__opt_path(v, o->f, then);
#define PROF__OPT_ENV_SPEC(v, f, d, lo, hi, form, then) \
    prof__opt_spec(v, prof__opt_env(v), prof__spec_##f, &o->f, form, then);
#define PROF__OPT_ENV_SCHED PROF__OPT_ENV_SPEC
#define PROF__OPT_ENV_ALIAS PROF__OPT_ENV_BOOL
#define PROF__OPT_ENV_LIB(v, f, d, lo, hi, form, then)
#define PROF__OPT_FROM_CFG(v, f, kind, d, lo, hi, form, then, doc) PROF__OPT_CFG_##kind(v, f, d, lo, hi, form, then)
#define PROF__OPT_FROM_ENV(v, f, kind, d, lo, hi, form, then, doc) PROF__OPT_ENV_##kind(v, f, d, lo, hi, form, then)

/* The SPEC rows' parsers; "" is each one's default. */
PROF__COLD static int prof__spec_schedule(const char *s, void *out) {
    prof__opt_schedule *o = (prof__opt_schedule *)out;
    if (!*s) o->on = 0;
    else if (prof__parse_schedule(s, &o->s)) o->on = 1;
    else return 0;
    return 1;
}
PROF__COLD static int prof__spec_table(const char *s, void *out) {
    prof__opt_table *o = (prof__opt_table *)out, t;
    size_t rows = 0;
    if (!*s) {
        o->rows = -1;
        return 1;
    }
    if (!prof__parse_table_spec(s, &t.sort, &rows, &t.group, &t.all_ranks)) return 0;
    t.rows = (long)rows;
    *o = t;
    return 1;
}
PROF__COLD static int prof__spec_ranks(const char *s, void *out) {
    if (strlen(s) >= sizeof(prof__opt_ranks) || prof__rank_in(s, 0) < 0) return 0;
    strcpy((char *)out, strcmp(s, "all") ? s : "");
    return 1;
}
PROF__COLD static int prof__spec_trigger(const char *s, void *out) {
    prof__opt_trigger *o = (prof__opt_trigger *)out;
    if (!*s) o->kind = PROF__TRIG_NONE;
    else if (!strcmp(s, "signal")) o->kind = PROF__TRIG_SIGNAL;
    else if (strncmp(s, "file:", 5) || !s[5] || strlen(s + 5) >= PROF__PATH) return 0;
    else {
        o->kind = PROF__TRIG_FILE;
        strcpy(o->path, s + 5);
    }
    return 1;
}
PROF__COLD static int prof__spec_clock(const char *s, void *out) {
    if (strcmp(s, "tsc") && strcmp(s, "monotonic")) return 0;
    *(prof__opt_clock *)out = s[0] == 'm';
    return 1;
}

/* PROF_COUNTERS: the names it knows, in any order; a name it does not know
   beside one it knows is kept to be said once counting starts (>>counters),
   and the others are counted; none it knows: refused (the option's line). */
static char prof__ctr_bad[128];
PROF__COLD static int prof__spec_counters(const char *s, void *out) {
    unsigned m = 0;
    prof__ctr_bad[0] = 0;
    while (*s) {
        size_t n = strcspn(s, ","), k = 0;
        while (k < PROF__CTR_N && !(strlen(prof__ctr_names[k]) == n && !strncmp(s, prof__ctr_names[k], n))) k++;
        if (k < PROF__CTR_N) {
            m |= 1u << k;
        } else if (n) {
            size_t at = strlen(prof__ctr_bad);
            snprintf(prof__ctr_bad + at, sizeof prof__ctr_bad - at, "%s'%.*s'", at ? ", " : "", (int)n, s);
        }
        s += n + (s[n] == ',');
    }
    if (!m && prof__ctr_bad[0]) {
        prof__ctr_bad[0] = 0;
        return 0;
    }
    *(prof__opt_counters *)out = m;
    return 1;
}

/* PROF_LOG's file, opened once: messages go there from now on. */
PROF__COLD static void prof__log_open(const char *log) {
    char lp[PROF__PATH];
    if (!*log || __atomic_load_n(&prof__logf, __ATOMIC_ACQUIRE)) return;
    FILE *lf = prof__expand_path(lp, log, -1, "PROF_LOG") ? fopen(lp, "a") : NULL;
    if (lf) {
        setvbuf(lf, NULL, _IOLBF, 0);
        __atomic_store_n(&prof__logf, lf, __ATOMIC_RELEASE);
    } else if (lp[0]) {
        prof__msg("PROF_LOG: cannot open '%s': %s; speaking on stderr", lp, strerror(errno));
    }
}

/* Kernel capture asked for (>>api-gpu; prof_hip.h's tool hook asks, maybe
   before PROF_INIT): the resolved option once inited, else PROF_CUPTI /
   PROF_KERNELS read by the table's own reader, without a word (init says
   it). */
int prof_gpu_kernels_asked(void) {
    int k = 0;
    if (__atomic_load_n(&prof__g.inited, __ATOMIC_ACQUIRE)) return prof__g.conf.cupti;
    prof__opt_bool("PROF_CUPTI", &k, "", NULL);
    prof__opt_bool("PROF_KERNELS", &k, "", NULL);
    return k;
}

/* Init, part 1: the options from their defaults, the config and the
   environment (the table), the rules that relate them, then prof__g.conf. */
PROF__COLD PROF__SHARED void prof__resolve_config(const prof_config *cfg) {
    prof_config folded = *cfg, *c = &folded;   /* the deprecated spellings, honoured */
    if (c->cupti) c->kernels = 1;
    if (c->keep_signals && !c->signals) c->signals = PROF_OFF;
    if (c->separate_threads && !c->merge_threads) c->merge_threads = PROF_OFF;
    prof__opts *o = &prof__g.opt;
    PROF__OPTIONS(PROF__OPT_FROM_CFG)
    PROF__OPTIONS(PROF__OPT_FROM_ENV)
    /* The rules between options, each stated once. */
    if (o->trigger.kind && o->schedule.on) prof__msg("PROF_TRIGGER decides when to record: the schedule is ignored");
    else if (o->flight_steps && o->schedule.on)
        prof__msg("PROF_FLIGHT records every step and writes only dumps: the schedule is ignored");
    if (o->trigger.kind || o->flight_steps) o->schedule.on = 0;
    if (o->gpu_metrics) o->energy = 1;  /* the device tracks are read with the energy counter */
    if (o->energy && (o->trace_ready_at_step || o->flight_steps)) {
        prof__msg("PROF_ENERGY: not with %s (the energy counter is read on the profiler's thread%s); no energy in "
                  "the trace", o->trace_ready_at_step ? "trace_ready_at_step" : "PROF_FLIGHT",
                  o->trace_ready_at_step ? ", which that leaves out" : "; flight dumps do not carry it");
        o->energy = o->gpu_metrics = 0;
    }
    if (!o->output[0]) strcpy(o->output, prof__fmt[o->format >= 0 ? o->format : PROF__FMT_JSON].file);
    /* prof__g.conf: what the rest of the implementation reads */
    prof__g.conf.quiet = o->quiet;
    prof__g.conf.on_ready = c->on_trace_ready;
    prof__g.conf.user_data = c->user_data;
    memcpy(prof__g.conf.output, o->output, sizeof o->output);
    memcpy(prof__g.conf.tb_dir, o->tb_dir, sizeof o->tb_dir);
    memcpy(prof__g.conf.stacks, o->stacks, sizeof o->stacks);
    memcpy(prof__g.conf.ranks, o->ranks, sizeof o->ranks);
    prof__g.conf.table_rows = o->table.rows;
    prof__g.conf.table_sort = o->table.sort;
    prof__g.conf.table_group = o->table.group;
    prof__g.conf.table_all_ranks = o->table.all_ranks;
    prof__g.conf.separate_threads = !o->merge_threads;
    prof__g.conf.format = o->format;
    prof__g.conf.peak_tflops = o->peak_tflops;
    prof__g.conf.peak_gbps = o->peak_gbps;
    prof__g.conf.cupti = o->kernels;
    prof__g.conf.ready_at_step = o->trace_ready_at_step;
    prof__g.conf.flight = o->flight_steps;
    prof__g.conf.flight_slow = o->flight_slow;
    prof__g.conf.flight_cooldown = o->flight_cooldown;
    prof__g.conf.watchdog = o->watchdog_s;
    prof__g.conf.trigger = o->trigger.kind;
    prof__g.conf.trigger_steps = o->trigger_steps;
    memcpy(prof__g.conf.trigger_path, o->trigger.path, sizeof o->trigger.path);
    prof__g.conf.sched = o->schedule.s;
    prof__g.conf.has_sched = o->schedule.on;
    __atomic_store_n(&prof__g.conf.gpu_metrics, o->gpu_metrics, __ATOMIC_RELAXED);  /* as energy */
    __atomic_store_n(&prof__g.conf.energy, o->energy, __ATOMIC_RELAXED);   /* the profiler's thread reads it */
    prof__g.proc.signals = o->signals;
    size_t chunks_max = o->buffer_mb * 1048576u / sizeof(prof__chunk);
    pthread_mutex_lock(&prof__pool_lock);   /* the reserve helper may be running (PROF_INIT after a lazy start) */
    prof__g.rec.chunks_max = chunks_max ? chunks_max : 1;
    pthread_mutex_unlock(&prof__pool_lock);
    prof__log_open(o->log);
    if (!prof__g.who.rank_set) prof__rank_from_env();
    prof__g.conf.user_disabled = o->disable;
    prof__update_disabled();
}

/* Init, part 2, once per process: the clock's zero and rate, the thread
   key, the exit hook. */
PROF__COLD static void prof__start_clock(void) {
    int force_mono = prof__g.opt.clock;     /* PROF_CLOCK */
    __atomic_store_n(&prof__g.clk.fallback, !PROF__TICKS_ARE_NS && (force_mono || !prof__tsc_invariant()),
                     __ATOMIC_RELAXED);
    if (prof__fallback() && !force_mono)
        prof__msg("this CPU's TSC is not invariant: regions are placed by CLOCK_MONOTONIC");
    uint64_t t;
    int64_t m;
    prof__clock_pair(&t, &m);
    if (prof__fallback()) {
        prof__g.clk.fb_tsc0 = t;
        prof__g.clk.tick0 = (uint64_t)m;
        /* a first rate for the TSC; refined at every step */
        int64_t m1;
        uint64_t t1;
        do prof__clock_pair(&t1, &m1); while (m1 - m < 2000000);
        double rate = (double)(m1 - m) / (double)(t1 - t);
        __atomic_store(&prof__g.clk.fb_ns_per_tsc, &rate, __ATOMIC_RELAXED);
    } else {
        prof__g.clk.tick0 = t;
    }
    prof__g.clk.mono0 = m;
    double one = 1.0;                   /* until the first calibration */
    __atomic_store(&prof__g.clk.ns_per_tick, &one, __ATOMIC_RELAXED);
    struct timespec ts;
    clock_gettime(PROF__CLOCK_REALTIME, &ts);
    prof__g.clk.wall0 = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    prof__g.proc.key_made = pthread_key_create(&prof__g.rec.key, prof__thread_exit) == 0;
    atexit(prof__atexit);
    prof__claim_copy();
}

/* Init: resolve the config, start the clock (the first time only), then
   open step 0 and its window. */
PROF__COLD static void prof__init_locked(const prof_config *cfg) {
    static prof_config none;            /* all defaults */
    if (prof__g.proc.mute) return;      /* a fork's child: the parent's run, not its own */
    prof__resolve_config(cfg ? cfg : &none);
    if ((prof__g.conf.cupti || prof__g.conf.energy) && !prof__g.disabled)
        __atomic_store_n(&prof__gpu_auto, 1, __ATOMIC_RELEASE);
    if (!prof__g.inited) prof__start_clock();
    prof__trigger_start();              /* a triggered run: nothing recorded until asked */
    __atomic_store_n(&prof__g.inited, 1, __ATOMIC_RELEASE);   /* read without the lock */
    __atomic_store_n(&prof__g.shut, 0, __ATOMIC_RELAXED);     /* read without the lock (>>buffers) */
    prof__g.run.step = 0;
    prof__g.run.lazy = 0;
    prof__g.run.step_t0 = prof__now();
    /* A window that opens at step 0 (always, without a schedule) holds the
       events that began before init too: lazily, or before PROF_INIT. */
    prof__g.run.win_t0 = prof__cur_action() >= PROF__RECORD ? 1 : prof__g.run.step_t0;
    int act = prof__cur_action();
    __atomic_store_n(&prof__on, (unsigned char)(!prof__g.disabled && act != PROF__NONE), __ATOMIC_RELAXED);
    prof__mem_start_locked();
    prof__signals_start();
    prof__reserve_start();
    prof__wk_start();
    prof__smp_follow_locked(!prof__g.disabled && act >= PROF__RECORD);   /* a window from step 0 */
    prof__ctr_step_locked(-1, PROF__NONE, act);
    prof__wd_start();
}

PROF__COLD void prof_init(const prof_config *cfg) {
    pthread_mutex_lock(&prof__lock);
    prof__init_locked(cfg);
    pthread_mutex_unlock(&prof__lock);
}

static void prof__ensure_init(void) {
    if (__atomic_load_n(&prof__g.inited, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&prof__lock);
    if (!prof__g.inited) prof__init_locked(NULL);
    pthread_mutex_unlock(&prof__lock);
    prof__gpu_autostart_due();
}

/* ---- >>worker  the hand-off: what a step leaves to the profiler's thread ---
   PROF_STEP on an engine's thread does a constant amount of work, whatever
   was recorded: it moves the schedule, reads the regions open at a save
   (a few frames per thread, no events), resolves what the GPU side must
   read at the step itself (>>gpu), and queues a job of a few words. The
   profiler's own thread takes the jobs in order and does everything that
   grows with the events: the collection, the analysis pass, every sink
   (JSON, gzip, Perfetto, TensorBoard's copy, the table, stacks), the
   flight recorder's segments and dumps, and the trace-ready handler. It
   holds prof__wk_lock while a job runs (so do the watchdog's dump and
   shutdown, which run jobs too), and prof__lock only for moments, so that
   refills, registrations and steps never wait for a writer.
   Bounded, never blocking: the queue holds PROF__JOBS jobs (flight steps
   and streamed parts that find it full join the last one queued; a save
   that finds it full is skipped, and its events are counted when the next
   cycle is collected); what the writer has not written counts against
   PROF_BUFFER_MB (>>buffers), so when it falls behind recording drops and
   counts. PROF_SHUTDOWN, exit() and SIGINT/SIGTERM wait for it to finish,
   PROF__WK_WAIT seconds at most. cfg.trace_ready_at_step, or a thread that
   cannot be started: every job runs on the thread that steps, as before. */
#define PROF__JOBS    256
#define PROF__WK_WAIT 60                /* seconds shutdown waits for the writer */
/* The wait in use: PROF__WK_WAIT; a test (robust_behind) sets it lower to
   reach the limit. */
extern PROF_API int prof__wk_wait_s;
PROF_API int prof__wk_wait_s = PROF__WK_WAIT;

enum { PROF__JOB_STEP, PROF__JOB_HANG };

typedef struct prof__job {
    int kind;                           /* PROF__JOB_* */
    int prev, next;                     /* STEP: the schedule's action for the step that
                                           ended, and for the one that begins */
    int fired;                          /* a trigger was seen at this step ... */
    int64_t at;                         /* ... naming this step (-1: none) */
    int64_t step;                       /* the step that ended (HANG: the one running) */
    uint64_t t0, now;                   /* its start; the step's time (HANG: the dump's) */
    uint64_t from;                      /* the recording window's start */
    int64_t act_ns;                     /* flight: kernel capture's clock at the step */
    int64_t slow;                       /* flight: a slow step, judged at the step (-1: none), */
    uint64_t slow_dur;                  /*   its length (ticks) */
    double median;                      /*   and the median it was judged against */
    prof__ev *open;                     /* regions open at a save, or (HANG) at the dump */
    size_t nopen;
    uint32_t gen;                       /* the GPU window of its step (>>gpu: resolved here) */
    prof__cycle cy;                     /* the cycle as the step began it: kernel capture's
                                           records, taken there; a save collects into it */
} prof__job;

static void prof__job_run(prof__job *j);
static int prof__smp_on(void);
static int64_t prof__smp_poll(void);
static void prof__smp_job_start(void);
static int prof__ctr_on(void);
static int64_t prof__ctr_poll(void);

PROF__SHARED pthread_mutex_t prof__wk_lock = PTHREAD_MUTEX_INITIALIZER;  /* while a job runs */
static pthread_cond_t prof__wk_cv = PTHREAD_COND_INITIALIZER;      /* a job was queued */
/* Under prof__lock: what the profiler's thread polls between jobs changed
   since it last looked (a window's edge: PROF_ENERGY's opening read,
   PROF_SAMPLE's events, PROF_COUNTERS's), so it looks again before it
   waits; polls_due stays set until a round of polls has seen it
   (prof_flush waits for that too). prof__wk_kick_locked sets both. */
static int prof__wk_kick, prof__wk_polls_due;
static pthread_cond_t prof__wk_idle = PTHREAD_COND_INITIALIZER;    /* the queue emptied */
static struct {
    prof__job q[PROF__JOBS];            /* under prof__lock: the queue, the running one first */
    unsigned head, n;
    int busy;                           /* q[head] is running */
    int stop;
    pthread_t thread;
    int running;                        /* atomic: the thread exists */
} prof__wk;

/* Under prof__lock: a window's edge for what the profiler's thread polls. */
static void prof__wk_kick_locked(void) {
    prof__wk_kick = 1;
    if (__atomic_load_n(&prof__wk.running, __ATOMIC_RELAXED)) prof__wk_polls_due = 1;
    pthread_cond_signal(&prof__wk_cv);
}

/* Under prof__lock: a thread registered. PROF_COUNTERS and PROF_SAMPLE
   open its events at once, not at their next look (prof_flush in the
   thread waits for them). */
static void prof__wk_thread_locked(void) {
    if (prof__ctr_on() || prof__smp_on()) prof__wk_kick_locked();
}

/* Hands j to the profiler's thread, under prof__lock. 0: there is none (a
   trace-ready handler wanted at the step, or it could not start), and the
   caller runs j itself, after letting prof__lock go. */
static int prof__wk_submit_locked(prof__job *j) {
    if (!__atomic_load_n(&prof__wk.running, __ATOMIC_RELAXED)) return 0;
    if (prof__wk.n == PROF__JOBS || prof__wk.stop) {
        prof__job *last = &prof__wk.q[(prof__wk.head + prof__wk.n - 1) % PROF__JOBS];
        int joins = prof__wk.n > (unsigned)prof__wk.busy &&   /* never the one running */
                    last->kind == PROF__JOB_STEP && j->kind == PROF__JOB_STEP &&
                    (prof__g.conf.flight || (last->prev == PROF__RECORD && j->prev == PROF__RECORD &&
                                             last->next == PROF__RECORD && j->next == PROF__RECORD));
        if (joins) {                    /* a flight step or a streamed part: the last one reaches further */
            last->now = j->now;
            free(last->open);           /* and the regions open are those at its end */
            last->open = j->open;
            last->nopen = j->nopen;
            j->open = NULL;
            last->step = j->step;
            last->act_ns = j->act_ns;
            if (j->fired) {             /* a trigger, and a slow step, stay what they were */
                last->fired = 1;
                last->at = j->at;
            }
            if (j->slow >= 0) {
                last->slow = j->slow;
                last->slow_dur = j->slow_dur;
                last->median = j->median;
            }
            if (j->cy.ngpu) {          /* flight: the GPU regions placed at this step too */
                prof__gev *v = (prof__gev *)realloc(last->cy.gpu, (last->cy.ngpu + j->cy.ngpu) * sizeof *v);
                if (v) {
                    memcpy(v + last->cy.ngpu, j->cy.gpu, j->cy.ngpu * sizeof *v);
                    last->cy.gpu = v;
                    last->cy.ngpu += j->cy.ngpu;
                } else {
                    __atomic_fetch_add(&prof__gpu.dropped, j->cy.ngpu, __ATOMIC_RELAXED);
                }
            }
        } else {                        /* its events: counted at the next cycle's collection */
            __atomic_fetch_add(&prof__gpu.dropped, j->cy.ngpu, __ATOMIC_RELAXED);
            __atomic_fetch_add(&prof__act.lost, j->cy.nact, __ATOMIC_RELAXED);
        }
        prof__cycle_free(&j->cy);
        free(j->open);
        return 1;
    }
    prof__wk.q[(prof__wk.head + prof__wk.n++) % PROF__JOBS] = *j;
    __atomic_store_n(&prof__g.rec.pending, prof__wk.n, __ATOMIC_RELAXED);
    pthread_cond_signal(&prof__wk_cv);
    return 1;
}

static __thread int prof__in_job;       /* this thread runs a job (a handler may call exit()) */

/* Jobs run on a thread other than the profiler's: by a step where that
   thread is not running (cfg.trace_ready_at_step), by shutdown and the
   watchdog's dump; none by a step while it runs (scenario_*_handoff counts). */
PROF_API unsigned long prof__jobs_off_thread;

/* j, on the calling thread, in turn with the profiler's thread's jobs. */
static void prof__job_run_here(prof__job *j) {
    if (!__atomic_load_n(&prof__wk.running, __ATOMIC_ACQUIRE) || !pthread_equal(pthread_self(), prof__wk.thread))
        __atomic_fetch_add(&prof__jobs_off_thread, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&prof__wk_lock);
    prof__in_job = 1;
    prof__job_run(j);
    prof__in_job = 0;
    pthread_mutex_unlock(&prof__wk_lock);
}

/* Under prof__lock: with PROF_ENERGY, the profiler's thread makes an
   opening read now (a window opens, or the runtime is bound). */
static void prof__en_wake_locked(void) {
    if (!prof__g.conf.energy) return;
    __atomic_store_n(&prof__en_open, 1, __ATOMIC_RELAXED);
    prof__wk_kick_locked();
}

static void *prof__wk_run(void *arg) {
    (void)arg;
    __atomic_store_n(&prof__act.own_pt, (uint64_t)pthread_self(), __ATOMIC_RELAXED);
    __atomic_store_n(&prof__act.own_tid, (uint64_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
    prof__en_thread_start();
    pthread_mutex_lock(&prof__lock);
    for (;;) {
        while (!prof__wk.n && !prof__wk.stop) {
            int64_t ns = -1;            /* PROF_ENERGY: a read when one is due, and the next */
            prof__wk_kick = 0;
            if (prof__en_on()) {
                pthread_mutex_unlock(&prof__lock);
                ns = prof__en_poll();
                pthread_mutex_lock(&prof__lock);
                if (prof__wk.n || prof__wk.stop) break;
            }
            if (prof__smp_on()) {       /* PROF_SAMPLE: new threads' events, the rings drained */
                pthread_mutex_unlock(&prof__lock);
                int64_t sn = prof__smp_poll();
                pthread_mutex_lock(&prof__lock);
                if (prof__wk.n || prof__wk.stop) break;
                if (sn >= 0 && (ns < 0 || sn < ns)) ns = sn;
            }
            if (prof__ctr_on()) {       /* PROF_COUNTERS: new threads' counters, a step's read */
                pthread_mutex_unlock(&prof__lock);
                int64_t cn = prof__ctr_poll();
                pthread_mutex_lock(&prof__lock);
                if (prof__wk.n || prof__wk.stop) break;
                if (cn >= 0 && (ns < 0 || cn < ns)) ns = cn;
            }
            if (prof__wk_kick) continue;    /* a window opened or closed meanwhile: look again */
            if (prof__wk_polls_due) {   /* every edge so far looked at */
                prof__wk_polls_due = 0;
                pthread_cond_broadcast(&prof__wk_idle);
            }
            if (ns < 0) {
                pthread_cond_wait(&prof__wk_cv, &prof__lock);
                continue;
            }
            struct timespec until;
            clock_gettime(PROF__CLOCK_REALTIME, &until);
            ns += until.tv_nsec;
            until.tv_sec += (time_t)(ns / 1000000000);
            until.tv_nsec = (long)(ns % 1000000000);
            pthread_cond_timedwait(&prof__wk_cv, &prof__lock, &until);
        }
        if (!prof__wk.n) break;         /* stopped, and every job done */
        prof__job j = prof__wk.q[prof__wk.head];
        prof__wk.busy = 1;
        pthread_mutex_unlock(&prof__lock);
        if (prof__en_on()) prof__en_poll();     /* a read due, before a job that may take long */
        if (prof__smp_on()) prof__smp_job_start();
        if (prof__ctr_on()) prof__ctr_poll();   /* the read its step asked for, before its save */
        prof__job_run_here(&j);
        pthread_mutex_lock(&prof__lock);
        prof__wk.busy = 0;
        prof__wk.head = (prof__wk.head + 1) % PROF__JOBS;
        __atomic_store_n(&prof__g.rec.pending, --prof__wk.n, __ATOMIC_RELAXED);
        if (!prof__wk.n) pthread_cond_broadcast(&prof__wk_idle);
    }
    prof__wk_polls_due = 0;             /* stopped: nothing more is polled */
    pthread_cond_broadcast(&prof__wk_idle);
    pthread_mutex_unlock(&prof__lock);
    prof__en_thread_stop();             /* a knot past the last step, for shutdown's save */
    return NULL;
}

/* At init, under prof__lock: the thread, unless the handler is wanted at
   the step. If it cannot start, the steps run their jobs themselves. */
PROF__COLD static void prof__wk_start(void) {
    if (prof__g.disabled || prof__g.conf.ready_at_step || __atomic_load_n(&prof__wk.running, __ATOMIC_ACQUIRE)) return;
    prof__wk.stop = 0;
    if (pthread_create(&prof__wk.thread, NULL, prof__wk_run, NULL) == 0)
        __atomic_store_n(&prof__wk.running, 1, __ATOMIC_RELEASE);
    else
        prof__msg("cannot start the profiler's thread (%s); traces are written at the steps", strerror(errno));
}

/* Until the queue is empty, or `until` (CLOCK_REALTIME) has passed; under
   prof__lock. The jobs left. */
static unsigned prof__wk_wait_locked(const struct timespec *until) {
    while ((prof__wk.n || prof__wk_polls_due) && pthread_cond_timedwait(&prof__wk_idle, &prof__lock, until) == 0) {}
    return prof__wk.n + (unsigned)prof__wk_polls_due;
}

static struct timespec prof__wk_deadline(void) {
    struct timespec t;
    clock_gettime(PROF__CLOCK_REALTIME, &t);
    t.tv_sec += prof__wk_wait_s;
    return t;
}

int prof_flush(void) {
    if (prof__in_job) {                 /* a trace-ready handler: the job that would be waited for is its own */
        prof__msg("prof_flush inside a trace-ready handler: not waited for (the handler's own cycle is being "
                  "written)");
        return 0;
    }
    struct timespec until = prof__wk_deadline();
    pthread_mutex_lock(&prof__lock);
    unsigned left = prof__wk_wait_locked(&until);
    pthread_mutex_unlock(&prof__lock);
    if (left)
        prof__msg("prof_flush: the profiler's thread has not finished writing in %d s (%u step%s still queued)",
                  prof__wk_wait_s, left, left == 1 ? "" : "s");
    return !left;
}

/* In a fork's child: the thread and its jobs are the parent's. */
static void prof__wk_forget(void) {
    __atomic_store_n(&prof__wk.running, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&prof__g.rec.pending, 0, __ATOMIC_RELAXED);
    prof__wk.n = 0;
    prof__wk.busy = 0;
    prof__wk_polls_due = 0;
    pthread_mutex_init(&prof__wk_lock, NULL);
}

/* At shutdown, outside the locks: every job queued is done, then the thread
   is joined. 0 when it has not finished within PROF__WK_WAIT seconds (a
   disk that does not answer, a handler that does not return): said, and
   the thread is left to the process's end. */
PROF__COLD static int prof__wk_stop(void) {
    if (!__atomic_load_n(&prof__wk.running, __ATOMIC_ACQUIRE)) return 1;
    struct timespec until = prof__wk_deadline();
    pthread_mutex_lock(&prof__lock);
    prof__wk.stop = 1;
    pthread_cond_signal(&prof__wk_cv);
    unsigned left = prof__wk_wait_locked(&until);
    pthread_mutex_unlock(&prof__lock);
    if (left) {
        prof__msg("the profiler's thread has not finished writing in %d s (%u step%s still queued); what it has "
                  "not written is lost (a file it was writing is left as it was)", prof__wk_wait_s, left,
                  left == 1 ? "" : "s");
        return 0;
    }
    pthread_join(prof__wk.thread, NULL);
    __atomic_store_n(&prof__wk.running, 0, __ATOMIC_RELEASE);
    return 1;
}

/* ---- >>counters  PROF_COUNTERS: each thread's CPU counters per step -------
   PROF_COUNTERS=task-clock,context-switches,page-faults,cycles,instructions
   (cfg.counters; any of them): each registered thread counts them on itself
   (perf_event_open counting events: no sampling, no ring, no signal),
   opened by the profiler's thread with the thread's OS tid, enabled while a
   window records and disabled between windows. Each recorded step asks the
   profiler's thread to read every thread's counters (prof__ctr.req: a word
   under the lock the step holds anyway, and the wake-up it already has);
   read() brings a running thread's count up to date, a multiplexed
   hardware counter is scaled by its time enabled over its time counted. A
   step's value per thread is the difference between that read and the one
   before: the read is made at the step's hand-off, so it runs that late,
   and one made after the next step has ended covers both and is the later
   one's. Nothing runs on an engine's thread per region or per event, and
   the region's hot path is the same instructions with or without counters:
   no value is read at a region's edges, so none is a region's.
   The values join the saved cycle as counter tracks of their thread,
   named "tid <tid> <counter>" (task-clock in ms), placed at their step's
   start; the table's footer sums them per thread: wall against on-CPU
   time (waiting = wall - task-clock), context switches, page faults, IPC.
   A counter the machine lacks (ENOENT: no PMU in most virtual machines) is
   one line, and the others go on; where only user space may be counted
   (perf_event_paranoid 2), context-switches, which the kernel counts in
   its own code, is one line and left out; a refusal (paranoid 3 and more,
   a seccomp profile) is one line and no counters. The values wait for a
   save under a cap (a sixteenth of PROF_BUFFER_MB): past it they are
   dropped, counted and said. */
#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/perf_event.h>)
#define PROF__PERF_CTR 1
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#endif
#endif

typedef struct prof__ctr_th {           /* a counted thread (profiler's thread, under prof__ctr.lock) */
    long tid;
    uint32_t idx;                       /* its index in prof__g.rec.tinfo */
    int fd[PROF__CTR_N];                /* -1: not counted */
    double last[PROF__CTR_N];           /* at the read before */
} prof__ctr_th;

typedef struct prof__ctr_val {          /* a thread's counts over one step */
    int64_t step;
    uint32_t th;
    unsigned have;                      /* the bits of v read */
    double v[PROF__CTR_N];
} prof__ctr_val;

static struct {
    pthread_mutex_t lock;               /* the profiler's thread's, or a fork's (under prof__lock) */
    int state;                          /* atomic: 0 not started; 1 counting; -1 off (said) */
    unsigned mask;                      /* the counters in use */
    int user_only;                      /* the kernel lets this process count its user space only */
    int want;                           /* under prof__lock: a window records */
    int64_t req;                        /* under prof__lock: the last step that asked for a read */
    int64_t done;                       /* under lock: the last step read */
    int enabled;                        /* under lock: the events are enabled */
    prof__ctr_th *t;
    size_t nt, tcap, seen;
    prof__ctr_val *v;                   /* read, waiting for a save */
    size_t nv, vcap;
    uint64_t lost;                      /* values past the cap, since the last save */
} prof__ctr = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, -1, -1, 0, NULL, 0, 0, 0, NULL, 0, 0, 0 };

static int prof__ctr_on(void) {
    return (prof__g.opt.counters || prof__ctr_bad[0]) && __atomic_load_n(&prof__ctr.state, __ATOMIC_RELAXED) >= 0;
}
static void prof__ctr_state(int s) { __atomic_store_n(&prof__ctr.state, s, __ATOMIC_RELAXED); }

/* The steps (under prof__lock): step, which ended, asks for a read when it
   was recorded (prev), and the events follow the window (next); the
   profiler's thread does both, woken. */
static void prof__ctr_step_locked(int64_t step, int prev, int next) {
    int want = !prof__g.disabled && next >= PROF__RECORD;
    if (prof__g.disabled || prev < PROF__RECORD) step = -1;
    if (!prof__ctr_on()) return;
    if (want && (prof__g.conf.flight || !__atomic_load_n(&prof__wk.running, __ATOMIC_RELAXED))) {
        prof__msg("PROF_COUNTERS: %s; no counters", prof__g.conf.flight
                  ? "the flight recorder (PROF_FLIGHT) does not keep them"
                  : "they are read by the profiler's thread, which this run has not (cfg.trace_ready_at_step)");
        prof__ctr_state(-1);
        return;
    }
    int kick = step >= 0;
    if (step >= 0) prof__ctr.req = step;
    if (!want != !prof__ctr.want) {
        prof__ctr.want = want;
        kick = 1;
    }
    if (kick) prof__wk_kick_locked();
}

#ifdef PROF__PERF_CTR
static int prof__ctr_open1(long tid, int k, int user_only) {
    static const uint32_t type[PROF__CTR_N] = { PERF_TYPE_SOFTWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_SOFTWARE,
                                                PERF_TYPE_HARDWARE, PERF_TYPE_HARDWARE };
    static const uint64_t config[PROF__CTR_N] = { PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_CONTEXT_SWITCHES,
                                                  PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_HW_CPU_CYCLES,
                                                  PERF_COUNT_HW_INSTRUCTIONS };
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type[k];
    a.config = config[k];
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    a.disabled = !prof__ctr.enabled;
    a.exclude_kernel = (unsigned)user_only;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, 0x8UL /* PERF_FLAG_FD_CLOEXEC */);
}

/* A counter's count now, scaled when the kernel multiplexed it. */
static int prof__ctr_value(int fd, double *out) {
    uint64_t b[3];
    if (read(fd, b, sizeof b) != (ssize_t)sizeof b) return 0;
    *out = b[2] && b[2] < b[1] ? (double)b[0] * (double)b[1] / (double)b[2] : (double)b[0];
    return 1;
}

static int prof__ctr_paranoid(void) {
    int p = -9;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    if (f) {
        if (fscanf(f, "%d", &p) != 1) p = -9;
        fclose(f);
    }
    return p;
}

/* A counter that cannot be opened: it leaves the set (said once), or all
   do (a refusal). 1 when the open may be tried again as user space only. */
PROF__COLD static int prof__ctr_failed(int k, int err) {
    int para = prof__ctr_paranoid();
    char p[32];
    if (para == -9) snprintf(p, sizeof p, "unreadable");
    else snprintf(p, sizeof p, "%d", para);
    if ((err == EACCES || err == EPERM) && !prof__ctr.user_only) {
        prof__ctr.user_only = 1;        /* paranoid 2: a process may count its own user space */
        return 1;
    }
    if (err == EACCES || err == EPERM || err == ENOSYS) {
        if (para > 2 || para == -9)
            prof__msg("PROF_COUNTERS: perf_event_open is refused (%s; kernel.perf_event_paranoid is %s): no "
                      "counters; allow a process to count itself with sysctl kernel.perf_event_paranoid=2 (or "
                      "CAP_PERFMON)", strerror(err), p);
        else
            prof__msg("PROF_COUNTERS: perf_event_open is refused (%s) though kernel.perf_event_paranoid is %s: a "
                      "seccomp filter (a container's profile) forbids it; no counters; allow perf_event_open in "
                      "that profile (Docker: --security-opt seccomp=<a profile that allows it>)", strerror(err), p);
        prof__ctr_state(-1);
    } else if (err == ENOENT || err == ENODEV || err == EOPNOTSUPP || err == EINVAL) {
        prof__msg("PROF_COUNTERS: %s: this machine has no such counter (perf_event_open: %s%s); counting the "
                  "others", prof__ctr_names[k], strerror(err),
                  k >= 3 ? "; no hardware counters: a virtual machine without a virtual PMU" : "");
        prof__ctr.mask &= ~(1u << k);
    } else {
        prof__msg("PROF_COUNTERS: %s cannot be counted (perf_event_open: %s); counting the others",
                  prof__ctr_names[k], strerror(err));
        prof__ctr.mask &= ~(1u << k);
    }
    return 0;
}

/* t's counters. 0 when its thread has exited (ESRCH). */
static int prof__ctr_open(prof__ctr_th *t) {
    for (int k = 0; k < PROF__CTR_N; k++) t->fd[k] = -1, t->last[k] = 0;
    for (int k = 0; k < PROF__CTR_N && prof__ctr.state > 0; k++) {
        if (!(prof__ctr.mask >> k & 1u)) continue;
        if (k == 1 && prof__ctr.user_only) {   /* counted in the kernel's code: 0 as user space only */
            prof__msg("PROF_COUNTERS: context-switches are counted in the kernel's code, which "
                      "kernel.perf_event_paranoid %d keeps a process from counting (sysctl "
                      "kernel.perf_event_paranoid=1, or CAP_PERFMON); counting the others", prof__ctr_paranoid());
            prof__ctr.mask &= ~2u;
            continue;
        }
        int fd = prof__ctr_open1(t->tid, k, prof__ctr.user_only);
        if (fd < 0 && errno == ESRCH) break;
        if (fd < 0 && prof__ctr_failed(k, errno)) {
            k = -1;                     /* again from the first, as user space only */
            for (int i = 0; i < PROF__CTR_N; i++)
                if (t->fd[i] >= 0) close(t->fd[i]), t->fd[i] = -1;
            continue;
        }
        t->fd[k] = fd;
    }
    int any = 0;
    for (int k = 0; k < PROF__CTR_N; k++) any |= t->fd[k] >= 0;
    return any;
}

static void prof__ctr_close(prof__ctr_th *t) {
    for (int k = 0; k < PROF__CTR_N; k++)
        if (t->fd[k] >= 0) close(t->fd[k]);
}

/* Whether t's thread has exited (a counting event without a ring says
   POLLHUP to poll() whether or not its thread lives: asked of the
   thread). */
static int prof__ctr_gone(const prof__ctr_th *t) {
    return syscall(SYS_tgkill, (long)getpid(), t->tid, 0) != 0 && errno == ESRCH;
}

/* Every thread's counts since the read before, as step's values (step <
   0: only looked at, at an enable); the threads that exited closed after
   it. Under prof__ctr.lock. */
static void prof__ctr_read_all(int64_t step) {
    size_t keep = 0;
    for (size_t i = 0; i < prof__ctr.nt; i++) {
        prof__ctr_th *t = &prof__ctr.t[i];
        int gone = prof__ctr_gone(t);   /* asked first: what it counted before its exit is in the count */
        prof__ctr_val v;
        memset(&v, 0, sizeof v);
        v.step = step;
        v.th = t->idx;
        for (int k = 0; k < PROF__CTR_N; k++) {
            double x;
            if (t->fd[k] < 0 || !prof__ctr_value(t->fd[k], &x)) continue;
            v.v[k] = x - t->last[k];
            v.have |= 1u << k;
            t->last[k] = x;
        }
        if (step >= 0 && v.have) {
            prof__ctr_val *s = (prof__ctr_val *)prof__grow(prof__ctr.v, &prof__ctr.vcap, prof__ctr.nv + 1, sizeof v);
            if (s && (prof__ctr.nv + 1) * sizeof v <= prof__g.opt.buffer_mb * (1024 * 1024 / 16)) {
                prof__ctr.v = s;
                prof__ctr.v[prof__ctr.nv++] = v;
            } else {
                if (s) prof__ctr.v = s;
                prof__ctr.lost++;
            }
        }
        if (gone) prof__ctr_close(t);
        else prof__ctr.t[keep++] = *t;
    }
    prof__ctr.nt = keep;
}

/* Under prof__ctr.lock: the events enabled while a window records, from a
   fresh count (the time between windows is no step's), disabled between. */
static void prof__ctr_apply(int want) {
    if (!want == !prof__ctr.enabled) return;
    for (size_t i = 0; i < prof__ctr.nt; i++)
        for (int k = 0; k < PROF__CTR_N; k++)
            if (prof__ctr.t[i].fd[k] >= 0)
                ioctl(prof__ctr.t[i].fd[k], want ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
    prof__ctr.enabled = want;
    if (want) prof__ctr_read_all(-1);
}

/* The first look: the names PROF_COUNTERS did not know, said. */
PROF__COLD static void prof__ctr_start(void) {
    if (prof__ctr_bad[0])
        prof__msg("PROF_COUNTERS: %s: no such counter (%s); counting the others", prof__ctr_bad,
                  "task-clock, context-switches, page-faults, cycles, instructions");
    prof__ctr.mask = prof__g.opt.counters;
    prof__ctr_state(prof__ctr.mask ? 1 : -1);
}

/* On the profiler's thread, between its jobs and before each: the threads
   registered since the last look get their counters, the read a step asked
   for is made, and the events follow the window. The ns until the next
   look: PROF__CTR_LOOK_NS while a window records (a thread that registers
   inside it is counted from then on), 0 when more threads are to be looked
   at, else -1 (the steps wake it). */
#define PROF__CTR_LOOK_NS 10000000
static int64_t prof__ctr_poll(void) {
    pthread_mutex_lock(&prof__lock);
    int want = prof__ctr.want;
    int64_t req = prof__ctr.req;
    size_t from = prof__ctr.seen, to = prof__g.rec.ntinfo, n = 0;
    long tids[64];
    uint32_t idx[64];
    for (size_t i = from; i < to && n < 64; i++, n++) {
        tids[n] = prof__g.rec.tinfo[i].tid;
        idx[n] = (uint32_t)i;
    }
    pthread_mutex_unlock(&prof__lock);
    pthread_mutex_lock(&prof__ctr.lock);
    if (prof__ctr.state == 0) prof__ctr_start();
    for (size_t i = 0; i < n && prof__ctr.state > 0; i++) {
        prof__ctr.seen = idx[i] + 1;
        prof__ctr_th t;
        memset(&t, 0, sizeof t);
        t.tid = tids[i];
        t.idx = idx[i];
        prof__ctr_th *v = (prof__ctr_th *)prof__grow(prof__ctr.t, &prof__ctr.tcap, prof__ctr.nt + 1, sizeof t);
        if (!v) break;                  /* out of memory: looked at again next time */
        prof__ctr.t = v;
        if (prof__ctr_open(&t)) prof__ctr.t[prof__ctr.nt++] = t;
        else prof__ctr_close(&t);
    }
    if (prof__ctr.state > 0 && req > prof__ctr.done) {
        prof__ctr_read_all(req);
        prof__ctr.done = req;
    }
    if (prof__ctr.state > 0) prof__ctr_apply(want);
    int on = prof__ctr.state > 0 && want;
    pthread_mutex_unlock(&prof__ctr.lock);
    return n == 64 ? 0 : on ? PROF__CTR_LOOK_NS : -1;
}

/* Around a fork, under prof__lock: no read is halfway through the list. */
static void prof__ctr_fork_lock(int lock) {
    if (lock) pthread_mutex_lock(&prof__ctr.lock);
    else pthread_mutex_unlock(&prof__ctr.lock);
}

/* A fork's child: its copies of the parent's events are closed, never
   disabled (they are the parent's threads' counters); it counts nothing. */
static void prof__ctr_forget(void) {
    for (size_t i = 0; i < prof__ctr.nt; i++) prof__ctr_close(&prof__ctr.t[i]);
    prof__ctr.nt = 0;
    prof__ctr.want = prof__ctr.enabled = 0;
    prof__ctr_state(-1);
    pthread_mutex_unlock(&prof__ctr.lock);   /* taken by this thread before the fork (prof__fork_prepare) */
}
#else  /* no perf_event_open on this system */
static int64_t prof__ctr_poll(void) {
    if (prof__ctr.state == 0) {
        prof__msg("PROF_COUNTERS: this system has no perf_event_open (Linux); no counters");
        prof__ctr_state(-1);
    }
    return -1;
}
static void prof__ctr_close(prof__ctr_th *t) { (void)t; }
static void prof__ctr_fork_lock(int lock) { (void)lock; }
static void prof__ctr_forget(void) { prof__ctr_state(-1); }
#endif

/* Shutdown, after the last save: every event closed, the values no cycle
   took let go. */
static void prof__ctr_stop(void) {
    pthread_mutex_lock(&prof__ctr.lock);
    for (size_t i = 0; i < prof__ctr.nt; i++) prof__ctr_close(&prof__ctr.t[i]);
    prof__ctr.nt = 0;
    prof__ctr.want = prof__ctr.enabled = 0;
    free(prof__ctr.t);
    free(prof__ctr.v);
    prof__ctr.t = NULL;
    prof__ctr.v = NULL;
    prof__ctr.tcap = prof__ctr.nv = prof__ctr.vcap = 0;
    pthread_mutex_unlock(&prof__ctr.lock);
}

/* A counter track's name: "tid <tid> <counter>", task-clock "(ms)". */
static const char *prof__ctr_track(long tid, int k) {
    char b[96];
    int n = snprintf(b, sizeof b, "tid %ld %s%s", tid, prof__ctr_names[k], k == 0 ? " (ms)" : "");
    return prof_intern(b, (size_t)n);
}

typedef struct prof__ctr_step { int64_t step; uint64_t t0; } prof__ctr_step;
static int prof__ctr_step_cmp(const void *x, const void *y) {
    const prof__ctr_step *a = (const prof__ctr_step *)x, *b = (const prof__ctr_step *)y;
    return a->step < b->step ? -1 : a->step > b->step;
}
static int prof__ctr_ev_cmp(const void *x, const void *y) {
    const prof__ev *a = (const prof__ev *)x, *b = (const prof__ev *)y;
    if (a->th != b->th) return a->th < b->th ? -1 : 1;
    return a->t0 < b->t0 ? -1 : a->t0 > b->t0;
}

/* The counter events of the cycle's steps, from the values read: each a
   PROF__K_COUNTER of its thread at its step's start; the values of later
   steps stay, older ones go. Into *out (by thread, then time), their count. */
static size_t prof__ctr_events(const prof__cycle *cy, prof__ev **out) {
    size_t nst = 0, m = 0;
    *out = NULL;
    for (size_t i = 0; i < cy->n; i++) nst += cy->ev[i].kind == PROF__K_STEP;
    prof__ctr_step *st = (prof__ctr_step *)malloc((nst + 1) * sizeof *st);
    if (!st) return 0;
    nst = 0;
    for (size_t i = 0; i < cy->n; i++)
        if (cy->ev[i].kind == PROF__K_STEP) {
            prof__ctr_step s = { (int64_t)cy->ev[i].aux, cy->ev[i].t0 };
            st[nst++] = s;
        }
    qsort(st, nst, sizeof *st, prof__ctr_step_cmp);
    int64_t hi = nst ? st[nst - 1].step : -1;
    pthread_mutex_lock(&prof__ctr.lock);
    size_t keep = 0, want = 0;
    for (size_t i = 0; i < prof__ctr.nv; i++) want += prof__ctr.v[i].step <= hi ? PROF__CTR_N : 0;
    prof__ev *e = want ? (prof__ev *)malloc(want * sizeof *e) : NULL;
    uint64_t lost = prof__ctr.lost;
    for (size_t i = 0; i < prof__ctr.nv; i++) {
        const prof__ctr_val *v = &prof__ctr.v[i];
        if (v->step > hi) {             /* a later cycle's */
            prof__ctr.v[keep++] = *v;
            continue;
        }
        prof__ctr_step key = { v->step, 0 };
        const prof__ctr_step *s = (const prof__ctr_step *)bsearch(&key, st, nst, sizeof *st, prof__ctr_step_cmp);
        if (!s || v->th >= cy->nth) continue;   /* a step before the cycle's, or its warm-up */
        for (int k = 0; k < PROF__CTR_N; k++) {
            if (!(v->have >> k & 1u)) continue;
            if (!e) { lost++; continue; }
            double x = k == 0 ? v->v[k] / 1e6 : v->v[k];
            prof__ev c;
            memset(&c, 0, sizeof c);
            c.kind = PROF__K_COUNTER;
            c.name = prof__ctr_track(cy->th[v->th].tid, k);
            c.th = v->th;
            c.t0 = s->t0;
            memcpy(&c.t1, &x, sizeof x);
            e[m++] = c;
        }
    }
    prof__ctr.nv = keep;
    prof__ctr.lost = 0;
    pthread_mutex_unlock(&prof__ctr.lock);
    free(st);
    if (lost)
        prof__msg("PROF_COUNTERS: cycle %d lost %llu values (their memory passed a sixteenth of PROF_BUFFER_MB, "
                  "or it ran out)", cy->index, (unsigned long long)lost);
    if (m) qsort(e, m, sizeof *e, prof__ctr_ev_cmp);
    *out = e;
    return m;
}

/* A cycle or a streamed part, collected (>>steps): its steps' counter
   values join it, each thread's in its records' order (post-order: before
   the first record that ends after it), so that the analysis gives each
   its step as its parent. */
static void prof__ctr_join(prof__cycle *cy) {
    if (!prof__g.opt.counters || !__atomic_load_n(&prof__ctr.state, __ATOMIC_RELAXED)) return;
    prof__ev *add;
    size_t m = prof__ctr_events(cy, &add), a = 0, o = 0;
    if (!m) {
        free(add);
        return;
    }
    prof__ev *ev = (prof__ev *)malloc((cy->n + m) * sizeof *ev);
    size_t *at = (size_t *)calloc(cy->nth + 1, sizeof *at);  /* each thread's first in add, and past it */
    unsigned char *seen = (unsigned char *)calloc(cy->nth + 1, 1);
    if (!ev || !at || !seen) {
        prof__msg("PROF_COUNTERS: out of memory; cycle %d has no counters", cy->index);
        free(ev); free(at); free(seen); free(add);
        return;
    }
    for (size_t t = 0; t <= cy->nth; t++) at[t] = m;
    for (size_t i = m; i-- > 0;) at[add[i].th] = i;
    for (size_t i = 0; i < cy->n; i++) {
        const prof__ev *e = &cy->ev[i];
        uint32_t th = e->th;
        if (!seen[th]) {
            seen[th] = 1;
            a = at[th];
        }
        uint64_t key = prof__spans(e->kind) ? e->t1 : e->t0;
        while (a < m && add[a].th == th && add[a].t0 < key) ev[o++] = add[a++];
        ev[o++] = *e;
        if (i + 1 == cy->n || cy->ev[i + 1].th != th)   /* its group ends: the rest of its values */
            while (a < m && add[a].th == th) ev[o++] = add[a++];
    }
    for (size_t i = 0; i < m; i++)      /* threads with values and no records */
        if (!seen[add[i].th]) ev[o++] = add[i];
    free(cy->ev);
    cy->ev = ev;
    cy->cap = cy->n + m;
    cy->n = o;
    free(at);
    free(seen);
    free(add);
}

/* The table's footer (prof_cycle_table): each thread's counter tracks
   summed over the steps that carry them, its wall time the length of
   those steps. From the tracks' names, so that a trace read back (prof
   table) gives the same. */
static int prof__ctr_of(const char *name, long *tid) {
    int at = 0;
    if (!name || strncmp(name, "tid ", 4) || sscanf(name + 4, "%ld %n", tid, &at) != 1 || !at) return -1;
    const char *c = name + 4 + at;
    for (int k = 0; k < PROF__CTR_N; k++) {
        size_t n = strlen(prof__ctr_names[k]);
        if (!strncmp(c, prof__ctr_names[k], n) && (!c[n] || !strcmp(c + n, " (ms)"))) return k;
    }
    return -1;
}

static void prof__ctr_table(const prof__cycle *c, prof_table *out) {
    size_t ns = 0;
    for (size_t i = 0; i < c->n; i++) ns += c->ev[i].kind == PROF__K_STEP;
    const prof__ev **st = ns ? (const prof__ev **)malloc(ns * sizeof *st) : NULL;
    if (!st) return;
    ns = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->ev[i].kind == PROF__K_STEP) st[ns++] = &c->ev[i];
    qsort(st, ns, sizeof *st, prof__ev_t0_cmp);
    for (size_t i = 0; i < c->n; i++) {
        const prof__ev *e = &c->ev[i];
        long tid;
        int k = e->kind == PROF__K_COUNTER ? prof__ctr_of(e->name, &tid) : -1;
        if (k < 0) continue;
        size_t lo = 0, hi = ns;         /* the last step beginning at or before it */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (st[mid]->t0 <= e->t0) lo = mid + 1;
            else hi = mid;
        }
        if (!lo || e->t0 >= st[lo - 1]->t1) continue;
        size_t t = 0;
        while (t < out->ncpu && out->cpu[t].tid != tid) t++;
        if (t == out->ncpu) {
            prof_cpu *v = (prof_cpu *)realloc(out->cpu, (t + 1) * sizeof *v);
            if (!v) break;
            out->cpu = v;
            memset(&v[t], 0, sizeof *v);
            v[t].tid = tid;
            v[t].thread = e->th < c->nth && c->label ? c->label[e->th] : NULL;
            for (int j = 0; j < PROF__CTR_N; j++) v[t].v[j] = -1;
            out->ncpu++;
        }
        prof_cpu *p = &out->cpu[t];
        double x;
        memcpy(&x, &e->t1, sizeof x);
        if (p->v[k] < 0) p->v[k] = 0;
        p->v[k] += k == 0 ? x * 1e6 : x;
        if (k == 0) {
            p->steps++;
            p->wall_ns += prof__tclock_ns(&c->clk, st[lo - 1]->t1) - prof__tclock_ns(&c->clk, st[lo - 1]->t0);
        }
    }
    free(st);
}

/* Its lines, after the table's. */
static void prof__ctr_print(const prof_table *t, FILE *f) {
    if (!t->ncpu) return;
    fprintf(f, "CPU counters per thread over its steps (read per step, not per region):\n");
    fprintf(f, "%-28s %6s %12s %12s %9s %12s %12s %12s %6s\n", "Thread", "Steps", "Wall", "On-CPU", "On-CPU %",
            "Waiting", "Ctx switches", "Page faults", "IPC");
    for (size_t i = 0; i < t->ncpu; i++) {
        const prof_cpu *p = &t->cpu[i];
        char name[64], wall[32] = "-", on[32] = "-", pct[32] = "-", wait[32] = "-", cs[32] = "-", pf[32] = "-",
             ipc[32] = "-";
        snprintf(name, sizeof name, "%.40s (%ld)", p->thread ? p->thread : "thread", p->tid);
        if (p->steps) prof__fmt_time(wall, sizeof wall, (double)p->wall_ns);
        if (p->v[0] >= 0) {
            prof__fmt_time(on, sizeof on, p->v[0]);
            if (p->wall_ns > 0) {
                snprintf(pct, sizeof pct, "%.1f%%", 100.0 * p->v[0] / (double)p->wall_ns);
                prof__fmt_time(wait, sizeof wait, (double)p->wall_ns > p->v[0] ? (double)p->wall_ns - p->v[0] : 0);
            }
        }
        if (p->v[1] >= 0) snprintf(cs, sizeof cs, "%.0f", p->v[1]);
        if (p->v[2] >= 0) snprintf(pf, sizeof pf, "%.0f", p->v[2]);
        if (p->v[3] > 0 && p->v[4] >= 0) snprintf(ipc, sizeof ipc, "%.2f", p->v[4] / p->v[3]);
        fprintf(f, "%-28s %6zu %12s %12s %9s %12s %12s %12s %6s\n", name, p->steps, wall, on, pct, wait, cs, pf, ipc);
    }
}
/* ---- >>sample  PROF_SAMPLE: CPU samples of every thread the profiler knows -
   PROF_SAMPLE=HZ (cfg.sample_hz): while a window records, each registered
   thread is sampled on its own CPU time by the kernel (perf_event_open:
   the software task-clock, user space only, the instruction pointer and
   the kernel's frame-pointer walk of the user stack, CLOCK_MONOTONIC
   stamps), into a small ring per thread. The profiler's thread opens the
   events (pid = the thread's OS tid), drains the rings every few ms and at
   each save, and closes a thread's event after its last drain once the
   thread has exited. No signal reaches the engine and nothing on an
   engine's thread grows with the samples: the kernel writes the ring, the
   step only enables or disables the events (one ioctl per thread) as the
   schedule opens and closes windows, as kernel capture follows them.
   A ring that overflows (PERF_RECORD_LOST) or the memory cap (a quarter of
   PROF_BUFFER_MB) loses samples: counted (prof_stats.samples_lost) and
   said per cycle. Where perf_event_open is refused (perf_event_paranoid, a
   seccomp profile, a kernel without the event) one line says why and how
   to allow it; everything else goes on. A fork's child samples nothing: it
   closes its copies of the parent's events without touching them.
   A saved cycle takes the samples stamped inside its steps (prof__cycle.smp),
   a streamed part those of its step; the others are dropped at the save
   that passes them. The executable mappings seen while sampling are kept
   for the prof tool (prof__smp_maps_read). */
#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/perf_event.h>)
#define PROF__PERF 1
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#endif
#endif

#endif /* PROF__BODIES */
#define PROF__SMP_HZ_MAX 20000

typedef struct prof__smp_th {           /* a sampled thread (profiler's thread, under prof__smp.lock) */
    long tid;
    uint32_t idx;                       /* its index in prof__g.rec.tinfo */
    int fd;
    void *ring;                         /* 1 + 2^n pages */
    size_t map_bytes;
} prof__smp_th;

PROF__SHARED_VAR struct prof__smp_state {
    pthread_mutex_t lock;               /* the profiler's thread's, or a fork's (under prof__lock); nothing under it */
    int state;                          /* 0: not started; 1: sampling; -1: refused or off (said) */
    int want;                           /* atomic, set by the steps under prof__lock: a window records */
    int enabled;                        /* the events are enabled (the profiler's thread, under lock) */
    prof__smp_th *t;
    size_t nt, tcap;
    size_t seen;                        /* tinfo entries looked at */
    prof__sample *s;                    /* drained, waiting for a save to take them; in time order per thread */
    size_t ns, scap;
    uint64_t *ip;                       /* their frames, innermost first */
    size_t nip, ipcap;
    uint64_t lost;                      /* since the last save: ring overflows and the cap */
    size_t pages;                       /* data pages per ring */
    int64_t period_ns;
    unsigned char rec[65536];           /* one record, copied out of the ring (perf_event_header.size is 16 bits) */
    prof__smap *map;                    /* the executable mappings of files seen while sampling, by start */
    size_t nmap, mapcap;
    uint64_t anon[16][2];               /* executable ranges of no file (the vDSO) as last read */
    int nanon;
    int maps_due;                       /* a window opened: the mappings to be read again */
    int maps_stale;                     /* a sample holds an address in none of them */
    int64_t maps_ns;                    /* when they were last read (CLOCK_MONOTONIC) */
} prof__smp PROF__VAR_INIT({ PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, NULL, 0, 0, 0, NULL, 0, 0, NULL, 0, 0, 0, 0, 0,
                                { 0 }, NULL, 0, 0, { { 0, 0 } }, 0, 0, 0, 0 });
#if PROF__BODIES

static void prof__smp_maps_check(size_t from, int force);

static int prof__smp_on(void) {
    return prof__g.opt.sample_hz > 0 && __atomic_load_n(&prof__smp.state, __ATOMIC_RELAXED) >= 0;
}
static void prof__smp_state(int s) { __atomic_store_n(&prof__smp.state, s, __ATOMIC_RELAXED); }

#ifdef PROF__PERF
/* The first refusal: one line, why and how to allow it; no more tries. */
PROF__COLD static void prof__smp_refused(int err) {
    int paranoid = -9;
    FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
    if (f) {
        if (fscanf(f, "%d", &paranoid) != 1) paranoid = -9;
        fclose(f);
    }
    char para[64];
    if (paranoid == -9) snprintf(para, sizeof para, "unreadable");
    else snprintf(para, sizeof para, "%d", paranoid);
    if ((err == EACCES || err == EPERM) && (paranoid > 2 || paranoid == -9))
        prof__msg("PROF_SAMPLE: perf_event_open is refused (%s; kernel.perf_event_paranoid is %s): no samples; "
                  "allow a process to sample itself with sysctl kernel.perf_event_paranoid=2 (or CAP_PERFMON)",
                  strerror(err), para);
    else if (err == EACCES || err == EPERM || err == ENOSYS)
        prof__msg("PROF_SAMPLE: perf_event_open is refused (%s) though kernel.perf_event_paranoid is %s: a "
                  "seccomp filter (a container's profile) forbids it; no samples; allow perf_event_open in "
                  "that profile (Docker: --security-opt seccomp=<a profile that allows it>)",
                  strerror(err), para);
    else
        prof__msg("PROF_SAMPLE: this kernel cannot sample a thread's CPU time (perf_event_open: %s); no samples",
                  strerror(err));
    prof__smp_state(-1);
}

/* The ring's size: about an eighth of a second of samples of 32 frames,
   within the locked memory a user may map (perf_event_mlock_kb). */
static size_t prof__smp_pages(int hz) {
    size_t want = (size_t)hz * 300 / 8 / 4096, p = 8;
    while (p < want && p < 64) p *= 2;
    return p;
}

/* thread's event and ring; 0 and errno when the kernel refuses. */
static int prof__smp_open(prof__smp_th *t) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = (uint64_t)prof__smp.period_ns;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.exclude_callchain_kernel = 1;
    a.use_clockid = 1;
    a.clockid = PROF__CLOCK_MONOTONIC;
    int fd = (int)syscall(SYS_perf_event_open, &a, (pid_t)t->tid, -1, -1, 0x8UL /* PERF_FLAG_FD_CLOEXEC */);
    if (fd < 0) return 0;
    long page = sysconf(_SC_PAGESIZE);
    for (size_t p = prof__smp.pages; p >= 1; p /= 2) {   /* the locked-memory limit: a smaller ring */
        size_t bytes = (1 + p) * (size_t)page;
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            t->fd = fd;
            t->ring = m;
            t->map_bytes = bytes;
            if (p < prof__smp.pages) {
                prof__msg("PROF_SAMPLE: rings of %zu pages, not %zu (the locked memory a user may map: "
                          "kernel.perf_event_mlock_kb); samples may be lost at high rates", p, prof__smp.pages);
                prof__smp.pages = p;
            }
            if (prof__smp.enabled) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
            return 1;
        }
    }
    int e = errno;
    close(fd);
    errno = e;
    return 0;
}

static void prof__smp_close(prof__smp_th *t) {
    munmap(t->ring, t->map_bytes);
    close(t->fd);
}

/* One sample record into the store; frames are the callchain's user
   addresses (its PERF_CONTEXT_* markers left out), or the ip alone. */
static void prof__smp_keep(const prof__smp_th *t, const unsigned char *r, size_t size) {
    uint64_t ip, time, nr = 0;
    if (size < 8 + 24) return;
    memcpy(&ip, r + 8, 8);
    memcpy(&time, r + 24, 8);
    if (size >= 40) memcpy(&nr, r + 32, 8);
    if (size < 40 || nr > (size - 40) / 8) nr = size < 40 ? 0 : (size - 40) / 8;
    size_t bytes = (prof__smp.ns + 1) * sizeof(prof__sample) + (prof__smp.nip + nr + 1) * 8;
    uint64_t *ips = (uint64_t *)prof__grow(prof__smp.ip, &prof__smp.ipcap, prof__smp.nip + nr + 1, 8);
    if (ips) prof__smp.ip = ips;
    prof__sample *s = ips ? (prof__sample *)prof__grow(prof__smp.s, &prof__smp.scap, prof__smp.ns + 1, sizeof *s)
                          : NULL;
    if (!s || bytes > prof__g.opt.buffer_mb * (1024 * 1024 / 4)) {
        prof__smp.lost++;
        return;
    }
    prof__smp.s = s;
    prof__sample *o = &s[prof__smp.ns++];
    o->ns = (int64_t)time;
    o->th = t->idx;
    o->tid = (int32_t)t->tid;
    o->ip = (uint32_t)prof__smp.nip;
    uint32_t n = 0;
    for (uint64_t k = 0; k < nr; k++) {
        uint64_t v;
        memcpy(&v, r + 40 + 8 * k, 8);
        if (v >= (uint64_t)PERF_CONTEXT_MAX) continue;
        ips[prof__smp.nip + n++] = v;
    }
    if (!n) ips[prof__smp.nip + n++] = ip;
    o->nip = n;
    prof__smp.nip += n;
}

/* Everything in t's ring, under prof__smp.lock. */
static void prof__smp_drain(prof__smp_th *t) {
    struct perf_event_mmap_page *m = (struct perf_event_mmap_page *)t->ring;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = t->map_bytes - page;
    const unsigned char *d = (const unsigned char *)t->ring + page;
    uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), tail = m->data_tail;
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        unsigned char *r = prof__smp.rec;
        for (size_t k = 0; k < sizeof h; k++) r[k] = d[(tail + k) % size];
        memcpy(&h, r, sizeof h);
        if (h.size < sizeof h || head - tail < h.size) break;
        for (size_t k = sizeof h; k < h.size; k++) r[k] = d[(tail + k) % size];
        if (h.type == PERF_RECORD_SAMPLE) prof__smp_keep(t, r, h.size);
        else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
            uint64_t n;
            memcpy(&n, r + 16, 8);
            prof__smp.lost += n;
        }
        tail += h.size;
    }
    __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
}

/* Whether t's thread has exited: its event hangs up. */
static int prof__smp_gone(const prof__smp_th *t) {
    struct pollfd p = { t->fd, POLLIN, 0 };
    return poll(&p, 1, 0) > 0 && (p.revents & POLLHUP);
}

/* Every ring drained; the threads that exited closed after it. Under
   prof__smp.lock. */
PROF__SHARED void prof__smp_drain_all(void) {
    size_t k = 0, from = prof__smp.ns;
    for (size_t i = 0; i < prof__smp.nt; i++) {
        prof__smp_th *t = &prof__smp.t[i];
        int gone = prof__smp_gone(t);   /* asked first: what it wrote before its exit is in the ring */
        prof__smp_drain(t);
        if (gone) prof__smp_close(t);
        else prof__smp.t[k++] = *t;
    }
    prof__smp.nt = k;
    prof__smp_maps_check(from, 0);
}

/* On the profiler's thread: the threads registered since the last look
   get their events, and the rings are drained. The ns until the next
   drain, or -1 when no window records (the step wakes it: prof__wk_cv). */
/* Under prof__smp.lock: every thread's event enabled while a window
   records (want), disabled between windows; a syscall a thread, made only
   when the window's state changed. */
static void prof__smp_apply(int want) {
    if (!want == !prof__smp.enabled) return;
    if (want) prof__smp.maps_due = 1;   /* read by the profiler's thread (prof__smp_maps_check) */
    for (size_t i = 0; i < prof__smp.nt; i++)
        ioctl(prof__smp.t[i].fd, want ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
    prof__smp.enabled = want;
}

/* The profiler's thread, before a job: the window's edge applied first (a
   save can take long; the step may have found the lock taken). */
static void prof__smp_job_start(void) {
    pthread_mutex_lock(&prof__smp.lock);
    prof__smp_apply(__atomic_load_n(&prof__smp.want, __ATOMIC_RELAXED));
    pthread_mutex_unlock(&prof__smp.lock);
}

static int64_t prof__smp_poll(void) {
    pthread_mutex_lock(&prof__lock);
    int want = __atomic_load_n(&prof__smp.want, __ATOMIC_RELAXED);
    size_t from = prof__smp.seen, to = prof__g.rec.ntinfo, n = 0;
    long tids[64];
    uint32_t idx[64];
    for (size_t i = from; i < to && n < 64; i++, n++) {
        tids[n] = prof__g.rec.tinfo[i].tid;
        idx[n] = (uint32_t)i;
    }
    pthread_mutex_unlock(&prof__lock);
    pthread_mutex_lock(&prof__smp.lock);
    if (prof__smp.state == 0) {
        int hz = prof__g.opt.sample_hz > PROF__SMP_HZ_MAX ? PROF__SMP_HZ_MAX : prof__g.opt.sample_hz;
        prof__smp.period_ns = 1000000000 / hz;
        prof__smp.pages = prof__smp_pages(hz);
        prof__smp_state(1);
    }
    for (size_t i = 0; i < n && prof__smp.state > 0; i++) {
        prof__smp.seen = idx[i] + 1;
        prof__smp_th t;
        memset(&t, 0, sizeof t);
        t.tid = tids[i];
        t.idx = idx[i];
        prof__smp_th *v = (prof__smp_th *)prof__grow(prof__smp.t, &prof__smp.tcap, prof__smp.nt + 1, sizeof t);
        if (!v) break;                  /* out of memory: looked at again next time */
        prof__smp.t = v;
        if (prof__smp_open(&t)) prof__smp.t[prof__smp.nt++] = t;
        else if (errno != ESRCH) prof__smp_refused(errno);  /* ESRCH: it has exited already */
    }
    prof__smp_apply(want);
    prof__smp_drain_all();
    int64_t next = want && prof__smp.state > 0 ? (int64_t)prof__smp.pages * 4096 / 400 * prof__smp.period_ns / 4 : -1;
    pthread_mutex_unlock(&prof__smp.lock);
    if (n == 64) return 0;              /* more threads to look at */
    return next < 0 ? -1 : next < 1000000 ? 1000000 : next;
}

/* The steps (under prof__lock): events on while a window records, off
   between windows. The step applies the change itself (a syscall a
   thread, at a window's edge only) when prof__smp.lock is free, and never
   waits for it: the profiler's thread holds it while it drains, and then
   applies the change itself before its next job or wait (kicked). Samples
   taken after a window's last step, before its events are off, fall
   outside every saved cycle's steps. */
static void prof__smp_follow_locked(int want) {
    if (!prof__smp_on() || !want == !__atomic_load_n(&prof__smp.want, __ATOMIC_RELAXED)) return;
    if (want && (prof__g.conf.flight || !__atomic_load_n(&prof__wk.running, __ATOMIC_RELAXED))) {
        prof__msg("PROF_SAMPLE: %s; no samples", prof__g.conf.flight
                  ? "the flight recorder (PROF_FLIGHT) does not keep samples"
                  : "samples are drained by the profiler's thread, which this run has not "
                    "(cfg.trace_ready_at_step)");
        prof__smp_state(-1);
        return;
    }
    __atomic_store_n(&prof__smp.want, want, __ATOMIC_RELAXED);
    if (pthread_mutex_trylock(&prof__smp.lock) == 0) {
        prof__smp_apply(want);
        pthread_mutex_unlock(&prof__smp.lock);
    }
    prof__wk_kick_locked();
}

/* Around a fork, under prof__lock: no drain is halfway through the list. */
static void prof__smp_fork_lock(int lock) {
    if (lock) pthread_mutex_lock(&prof__smp.lock);
    else pthread_mutex_unlock(&prof__smp.lock);
}

/* A fork's child: its copies of the parent's events are closed, never
   disabled (the same events: the parent's threads would stop being
   sampled); the child samples nothing. */
static void prof__smp_forget(void) {
    for (size_t i = 0; i < prof__smp.nt; i++) prof__smp_close(&prof__smp.t[i]);
    prof__smp.nt = 0;
    prof__smp.want = prof__smp.enabled = 0;
    prof__smp_state(-1);
    pthread_mutex_unlock(&prof__smp.lock);   /* taken by this thread before the fork (prof__fork_prepare) */
}

/* Shutdown, after the last save: every event closed, the samples no
   cycle took let go. */
static void prof__smp_stop(void) {
    pthread_mutex_lock(&prof__smp.lock);
    for (size_t i = 0; i < prof__smp.nt; i++) prof__smp_close(&prof__smp.t[i]);
    prof__smp.nt = 0;
    prof__smp.want = prof__smp.enabled = 0;
    free(prof__smp.s);
    free(prof__smp.ip);
    prof__smp.s = NULL;
    prof__smp.ip = NULL;
    for (size_t i = 0; i < prof__smp.nmap; i++) free(prof__smp.map[i].path);
    free(prof__smp.map);
    prof__smp.map = NULL;
    prof__smp.nmap = prof__smp.mapcap = 0;
    prof__smp.ns = prof__smp.scap = prof__smp.nip = prof__smp.ipcap = 0;
    pthread_mutex_unlock(&prof__smp.lock);
}
#else  /* no perf_event_open on this system */
static int64_t prof__smp_poll(void) {
    if (prof__smp.state == 0) {
        prof__msg("PROF_SAMPLE: this system has no perf_event_open (Linux); no samples");
        prof__smp_state(-1);
    }
    return -1;
}
static void prof__smp_follow_locked(int want) { (void)want; }
static void prof__smp_job_start(void) {}
static void prof__smp_forget(void) { prof__smp_state(-1); }
static void prof__smp_fork_lock(int lock) { (void)lock; }
static void prof__smp_stop(void) {}
PROF__SHARED void prof__smp_drain_all(void) {}
static void prof__smp_maps_check(size_t from, int force) { (void)from; (void)force; }
#endif

#ifdef PROF__PERF
/* An ELF file's GNU build id, as hex into out[41] ("" when it has none or
   cannot be read): the NT_GNU_BUILD_ID note of its first PT_NOTE segments. */
/* pread() is POSIX: hidden by -std=c11 */
static ssize_t prof__smp_pread(int fd, void *b, size_t n, uint64_t off) {
    return lseek(fd, (off_t)off, SEEK_SET) < 0 ? -1 : read(fd, b, n);
}

static void prof__smp_build_id(const char *path, char *out) {
    out[0] = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    unsigned char eh[64], ph[56], note[256];
    if (prof__smp_pread(fd, eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh, "\177ELF", 4) || eh[4] != 2 ||
        eh[5] != 1) {
        close(fd);                      /* 64-bit little-endian files only */
        return;
    }
    uint64_t phoff;
    uint16_t phentsize, phnum;
    memcpy(&phoff, eh + 32, 8);
    memcpy(&phentsize, eh + 54, 2);
    memcpy(&phnum, eh + 56, 2);
    for (uint16_t i = 0; i < phnum && phentsize >= sizeof ph && !out[0]; i++) {
        if (prof__smp_pread(fd, ph, sizeof ph, phoff + (uint64_t)i * phentsize) != (ssize_t)sizeof ph) break;
        uint32_t type;
        uint64_t off, size;
        memcpy(&type, ph, 4);
        memcpy(&off, ph + 8, 8);
        memcpy(&size, ph + 32, 8);
        if (type != 4 /* PT_NOTE */) continue;
        if (size > sizeof note) size = sizeof note;
        ssize_t n = prof__smp_pread(fd, note, (size_t)size, off);
        for (size_t k = 0; n > 0 && k + 12 <= (size_t)n;) {
            uint32_t nsz, dsz, nt;
            memcpy(&nsz, note + k, 4);
            memcpy(&dsz, note + k + 4, 4);
            memcpy(&nt, note + k + 8, 4);
            size_t d = k + 12 + ((nsz + 3u) & ~3u);
            if (d + dsz > (size_t)n) break;
            if (nt == 3 /* NT_GNU_BUILD_ID */ && nsz == 4 && !memcmp(note + k + 12, "GNU", 4) && dsz <= 20) {
                for (uint32_t b = 0; b < dsz; b++) snprintf(out + 2 * b, 3, "%02x", note[d + b]);
                break;
            }
            k = d + ((dsz + 3u) & ~3u);
        }
    }
    close(fd);
}

/* The executable mappings (prof__smp.map, under prof__smp.lock): what the
   prof tool resolves addresses with. /proc/self/maps is read on the
   profiler's thread when a window opens, when a drained sample holds an
   address in no mapping of a file nor of the vDSO (at most every 50 ms),
   and at a save that has such a sample; each new mapping's build id is read
   once. Those gone since (a dlclose) are kept, so that what was sampled in
   them still resolves; a range another file took later holds both, the
   later one's first found. */
static int prof__smp_known(uint64_t a) {
    size_t lo = 0, hi = prof__smp.nmap;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (prof__smp.map[mid].start <= a) lo = mid + 1;
        else hi = mid;
    }
    for (size_t k = lo; k-- > 0 && lo - k <= 8;)
        if (a < prof__smp.map[k].end) return 1;
    for (int k = 0; k < prof__smp.nanon; k++)
        if (a >= prof__smp.anon[k][0] && a < prof__smp.anon[k][1]) return 1;
    return 0;
}

/* One mapping of a file into the list, unless it is there already. */
static void prof__smp_map_add(uint64_t lo, uint64_t hi, uint64_t off, const char *path) {
    size_t at = prof__smp.nmap;
    while (at > 0 && prof__smp.map[at - 1].start > lo) at--;
    for (size_t k = at; k-- > 0 && prof__smp.map[k].start == lo;)
        if (prof__smp.map[k].end == hi && prof__smp.map[k].offset == off && !strcmp(prof__smp.map[k].path, path))
            return;
    prof__smap *m = (prof__smap *)prof__grow(prof__smp.map, &prof__smp.mapcap, prof__smp.nmap + 1, sizeof *m);
    if (!m) return;                     /* out of memory: its addresses stay unnamed */
    prof__smp.map = m;
    size_t n = strlen(path);
    char *copy = (char *)malloc(n + 1);
    if (!copy) return;
    memcpy(copy, path, n + 1);
    memmove(m + at + 1, m + at, (prof__smp.nmap - at) * sizeof *m);
    m[at].path = copy;
    m[at].start = lo;
    m[at].end = hi;
    m[at].offset = off;
    prof__smp_build_id(path, m[at].build_id);
    prof__smp.nmap++;
}

static void prof__smp_maps_read(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    prof__smp.maps_ns = prof__mono_ns();
    prof__smp.maps_due = prof__smp.maps_stale = 0;
    if (!f) return;
    char line[4096 + 256];
    int nanon = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off;
        char perm[8];
        int at = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perm, &off, &at) != 4 || !at) continue;
        char *path = line + at;
        path[strcspn(path, "\n")] = 0;
        if (perm[2] != 'x') continue;
        if (path[0] == '/') prof__smp_map_add(lo, hi, off, path);
        else if (nanon < 16) {
            prof__smp.anon[nanon][0] = lo;
            prof__smp.anon[nanon++][1] = hi;
        }
    }
    prof__smp.nanon = nanon;
    fclose(f);
}

/* After a drain: the samples from `from` on looked at; the mappings read
   again if a window opened, or if one of them is in none and (force: at a
   save) the last read is 50 ms old. */
static void prof__smp_maps_check(size_t from, int force) {
    for (size_t i = from; i < prof__smp.ns && !prof__smp.maps_stale; i++)
        for (uint32_t k = 0; k < prof__smp.s[i].nip && !prof__smp.maps_stale; k++)
            if (!prof__smp_known(prof__smp.ip[prof__smp.s[i].ip + k])) prof__smp.maps_stale = 1;
    if (prof__smp.maps_due ||
        (prof__smp.maps_stale && (force || prof__mono_ns() - prof__smp.maps_ns >= 50000000)))
        prof__smp_maps_read();
}
#endif

/* The mappings into sc (at a save, under prof__smp.lock). */
static void prof__smp_maps(prof__scy *sc) {
    prof__smp_maps_check(prof__smp.ns, 1);
#ifdef PROF__PERF
    sc->map = (prof__smap *)malloc((prof__smp.nmap + 1) * sizeof *sc->map);
    for (size_t i = 0; sc->map && i < prof__smp.nmap; i++) {
        const prof__smap *m = &prof__smp.map[i];
        size_t n = strlen(m->path);
        prof__smap *o = &sc->map[sc->nmap];
        if (!(o->path = (char *)malloc(n + 1))) break;
        memcpy(o->path, m->path, n + 1);
        o->start = m->start;
        o->end = m->end;
        o->offset = m->offset;
        memcpy(o->build_id, m->build_id, sizeof o->build_id);
        sc->nmap++;
    }
#else
    (void)sc;
#endif
}

/* Attribution, once per saved cycle: each sample's innermost region (a
   sweep per thread over its regions by start, a stack of those open) and
   its step (the step whose time holds it, whichever thread stepped). */
typedef struct prof__smp_iv { uint32_t th, i; uint64_t t0, t1; } prof__smp_iv;
static int prof__smp_iv_cmp(const void *x, const void *y) {
    const prof__smp_iv *a = (const prof__smp_iv *)x, *b = (const prof__smp_iv *)y;
    if (a->th != b->th) return a->th < b->th ? -1 : 1;
    if (a->t0 != b->t0) return a->t0 < b->t0 ? -1 : 1;
    if (a->t1 != b->t1) return a->t1 > b->t1 ? -1 : 1;   /* the outer one first */
    return a->i < b->i ? -1 : a->i > b->i;
}

static void prof__smp_attribute(const prof__cycle *cy, prof__scy *sc) {
    size_t nr = 0, nst = 0, ns = sc->n;
    for (size_t i = 0; i < cy->n; i++) {
        nr += prof__spans(cy->ev[i].kind) && cy->ev[i].kind != PROF__K_STEP;
        nst += cy->ev[i].kind == PROF__K_STEP;
    }
    prof__smp_iv *r = (prof__smp_iv *)malloc((nr + nst + ns + 1) * sizeof *r), *st = r + nr, *sm = st + nst;
    uint32_t *open = (uint32_t *)malloc((nr + 1) * sizeof *open);
    for (size_t i = 0; i < ns; i++) sc->s[i].region = sc->s[i].step = PROF__NO_EVENT;
    if (!r || !open) {
        free(r);
        free(open);
        return;
    }
    nr = nst = 0;
    for (size_t i = 0; i < cy->n; i++) {
        const prof__ev *e = &cy->ev[i];
        prof__smp_iv v = { e->th, (uint32_t)i, e->t0, e->t1 };
        if (e->kind == PROF__K_STEP) { v.th = 0; st[nst++] = v; }
        else if (prof__spans(e->kind)) r[nr++] = v;
    }
    double npt = prof__ns_per_tick();   /* CLOCK_MONOTONIC ns to ticks */
    for (size_t i = 0; i < ns; i++) {
        const prof__sample *s = &sc->s[i];
        double d = (double)(s->ns - prof__g.clk.mono0) / npt;
        prof__smp_iv v = { s->th, (uint32_t)i, d <= 0 ? 0 : prof__g.clk.tick0 + (uint64_t)d, 0 };
        sm[i] = v;
    }
    qsort(r, nr, sizeof *r, prof__smp_iv_cmp);
    qsort(st, nst, sizeof *st, prof__smp_iv_cmp);
    qsort(sm, ns, sizeof *sm, prof__smp_iv_cmp);
    size_t k = 0, sk = 0, top = 0;
    uint32_t th = UINT32_MAX;
    for (size_t i = 0; i < ns; i++) {
        uint64_t t = sm[i].t0;
        if (sm[i].th != th) {           /* a new thread: its regions */
            th = sm[i].th;
            top = 0;
            while (k < nr && r[k].th < th) k++;
        }
        for (; k < nr && r[k].th == th && r[k].t0 <= t; k++) {
            while (top && cy->ev[open[top - 1]].t1 < r[k].t0) top--;
            open[top++] = r[k].i;
        }
        while (top && cy->ev[open[top - 1]].t1 < t) top--;
        prof__sample *s = &sc->s[sm[i].i];
        s->region = top ? open[top - 1] : PROF__NO_EVENT;
        size_t lo = 0, hi = nst;        /* the last step that began by t */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (st[mid].t0 <= t) lo = mid + 1;
            else hi = mid;
        }
        sk = lo;
        if (sk && st[sk - 1].t1 >= t) s->step = st[sk - 1].i;
    }
    free(r);
    free(open);
}

/* A save (prof__save_cycle): the rings drained, and the samples stamped
   inside the cycle's steps move to it, each with its region and step;
   older ones go. */
static void prof__smp_take(prof__cycle *cy) {
    if (prof__g.opt.sample_hz <= 0 || !__atomic_load_n(&prof__smp.state, __ATOMIC_RELAXED)) return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < cy->n; i++) {
        const prof__ev *e = &cy->ev[i];
        if (e->kind != PROF__K_STEP) continue;
        if (e->t0 < lo) lo = e->t0;
        if (e->t1 > hi) hi = e->t1;
    }
    prof__calibrate();                  /* ticks to CLOCK_MONOTONIC: the samples' clock */
    int64_t lo_ns = hi ? prof__tick_ns(lo) : 0, hi_ns = hi ? prof__tick_ns(hi) : INT64_MAX;
    prof__scy *sc = (prof__scy *)calloc(1, sizeof *sc);
    pthread_mutex_lock(&prof__smp.lock);
    prof__smp_drain_all();
    size_t keep = 0, kip = 0, n = 0, nip = 0;
    for (size_t i = 0; i < prof__smp.ns; i++) {        /* how many are the cycle's */
        const prof__sample *s = &prof__smp.s[i];
        if (s->ns >= lo_ns && s->ns <= hi_ns) { n++; nip += s->nip; }
    }
    if (sc && n) {
        sc->s = (prof__sample *)malloc(n * sizeof *sc->s);
        sc->ip = (uint64_t *)malloc((nip ? nip : 1) * sizeof *sc->ip);
        if (!sc->s || !sc->ip) {
            free(sc->s);
            free(sc->ip);
            sc->s = NULL;
            sc->ip = NULL;
        }
    }
    uint64_t lost = prof__smp.lost;
    for (size_t i = 0; i < prof__smp.ns; i++) {
        prof__sample s = prof__smp.s[i];
        const uint64_t *ip = prof__smp.ip + s.ip;
        if (s.ns > hi_ns) {             /* a later cycle's: kept */
            memmove(prof__smp.ip + kip, ip, s.nip * sizeof *ip);
            s.ip = (uint32_t)kip;
            kip += s.nip;
            prof__smp.s[keep++] = s;
        } else if (s.ns >= lo_ns) {
            if (sc && sc->s) {
                memcpy(sc->ip + sc->nip, ip, s.nip * sizeof *ip);
                s.ip = (uint32_t)sc->nip;
                sc->nip += s.nip;
                sc->s[sc->n++] = s;
            } else {
                lost++;
            }
        }
    }
    prof__smp.ns = keep;
    prof__smp.nip = kip;
    prof__smp.lost = 0;
    if (sc) {
        sc->lost = lost;
        sc->period_ns = prof__smp.period_ns;
        sc->refused = prof__smp.state < 0;
    }
    if (sc && sc->n) prof__smp_maps(sc);
    pthread_mutex_unlock(&prof__smp.lock);
    if (sc && sc->n) prof__smp_attribute(cy, sc);
    prof__smp_free(cy->smp);
    cy->smp = sc;
    pthread_mutex_lock(&prof__lock);
    prof__g.stats.samples += sc ? sc->n : 0;
    prof__g.stats.samples_lost += lost;
    pthread_mutex_unlock(&prof__lock);
    if (lost)
        prof__msg("PROF_SAMPLE: cycle %d lost %llu CPU samples (a ring overflowed, or their memory passed a "
                  "quarter of PROF_BUFFER_MB)", cy->index, (unsigned long long)lost);
}

static void prof__smp_free(prof__scy *sc) {
    if (!sc) return;
    for (size_t i = 0; i < sc->nmap; i++) free(sc->map[i].path);
    free(sc->map);
    free(sc->s);
    free(sc->ip);
    free(sc);
}

/* ---- >>flight  the flight recorder (PROF_FLIGHT) --------------------------
   Every step is recorded, as inside a window; at each step what the threads
   published is collected into that step's segment (their chunks go back to
   the pool, so memory stays flat), and a ring keeps the last N + 1 segments,
   fewer if their events pass the memory cap. Nothing is written until a
   dump: a slow step (longer than PROF_FLIGHT_SLOW times the median of the
   last 64), a trigger (PROF_TRIGGER's file or signal) or the watchdog. A
   dump is the ring as one cycle, written like any, named and marked with
   its reason. GPU regions are placed at each step (those whose GPU side
   finished by then) and kept with the step's segment; the window never
   ends, so the anchors they are placed with start afresh whenever no pair
   is in flight (or, past 64 on a device, anyway: the pairs in flight then
   are counted lost). Kernel capture's records are trimmed to the ring at
   steps and written with a dump. */
#define PROF__FL_HIST 64                /* step durations the median is taken over */

typedef struct prof__fseg {
    prof__ev *ev;
    size_t n;
    prof__gev *gpu;                     /* GPU regions finished during the step before */
    size_t ngpu;
    int64_t step;
    uint64_t t0;
    int64_t ns0;                        /* kernel capture's clock as t0 was read; 0: since capture began */
} prof__fseg;

static struct {
    prof__fseg *seg;                    /* ring of cap segments, oldest at head */
    int cap, head, n;
    size_t nev, ngpu;                   /* events and GPU regions the ring holds */
    struct prof__gdev_info gdev[PROF__GPU_DEVS];    /* devices seen: props, worst clock figures */
    int ngdev;
    uint64_t dur[PROF__FL_HIST];        /* recent steps' lengths, ticks */
    int ndur, idur;
    int64_t last_dump;                  /* mono ns; 0: none yet */
    uint64_t suppressed;                /* slow steps not dumped (cooldown) */
    int dumps;
    int64_t want;                       /* a trigger's step + 1: dump up to it once it has ended; 0 none */
    int64_t ns_next;                    /* kernel capture's clock at the last step: the next one's ns0 */
} prof__fl;

static void prof__fl_drop_oldest(void) {
    prof__fseg *g = &prof__fl.seg[prof__fl.head];
    prof__fl.nev -= g->n;
    prof__fl.ngpu -= g->ngpu;
    free(g->ev);
    free(g->gpu);
    g->ev = NULL;
    g->gpu = NULL;
    g->ngpu = 0;
    prof__fl.head = (prof__fl.head + 1) % prof__fl.cap;
    prof__fl.n--;
}

static int prof__u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Flight mode, at a step's job: the GPU regions drained since the last
   step, placed; the devices they ran on noted. Once a device has many
   anchors (a few seconds' worth), they start afresh: the pairs still in
   flight are measured from the next one when they finish. On the
   profiler's thread, which keeps prof__fl. */
static void prof__fl_gpu(prof__gev **gpu, size_t *ngpu, uint32_t gen, uint64_t until) {
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) != 1) return;
    prof__gpu_drain(gen, 0, until);
    if (prof__gpu.nres) {
        struct prof__gdev_info *info = NULL;
        size_t ninfo = 0;
        int oom = 0;
        uint64_t lost = prof__gpu_place(gpu, ngpu, &info, &ninfo, 0, (uint64_t)-1, &oom);
        __atomic_fetch_add(&prof__gpu.dropped, lost, __ATOMIC_RELAXED);
        for (size_t i = 0; i < ninfo && info; i++) {
            int k = 0;
            while (k < prof__fl.ngdev && prof__fl.gdev[k].dev != info[i].dev) k++;
            if (k == prof__fl.ngdev) prof__fl.gdev[prof__fl.ngdev++] = info[i];
            if (info[i].unc_ns > prof__fl.gdev[k].unc_ns) prof__fl.gdev[k].unc_ns = info[i].unc_ns;
            if (info[i].drift_ns > prof__fl.gdev[k].drift_ns) prof__fl.gdev[k].drift_ns = info[i].drift_ns;
        }
        free(info);
        prof__gpu.nres = 0;
    }
    for (int d = 0; d < PROF__GPU_DEVS; d++) {
        prof__gdev *g = &prof__gpu.dev[d];
        if (g->n >= 8) g->cur = -1, g->n = 0;
        else if (g->cur >= 0 && prof__mono_ns() - g->a[g->cur].mono > PROF__GPU_REANCHOR) prof__gpu_anchor_take(d);
    }
}

/* The step that ended at `now` (it began at t0) as a segment of the ring,
   with g's GPU regions (placed at the step) and act_ns, kernel capture's
   clock read then. On the profiler's thread, under prof__wk_lock. */
static void prof__fl_segment(int64_t step, uint64_t t0, uint64_t now, prof__cycle *g, int64_t act_ns) {
    if (!prof__fl.seg) {
        prof__fl.cap = prof__g.conf.flight + 1;
        prof__fl.seg = (prof__fseg *)calloc((size_t)prof__fl.cap, sizeof *prof__fl.seg);
        if (!prof__fl.seg) return;
    }
    prof__cycle c;
    memset(&c, 0, sizeof c);
    prof__collect(&c, 0, now);
    free(c.th);
    /* kernel capture's clock as t0 was read: at the step before, or (a hang's
       dump made the step's first part) as the segment before it says */
    int64_t ns0 = prof__fl.ns_next;
    const prof__fseg *last = prof__fl.n ? &prof__fl.seg[(prof__fl.head + prof__fl.n - 1) % prof__fl.cap] : NULL;
    if (last && last->t0 == t0) ns0 = last->ns0;
    prof__fl.ns_next = act_ns;
    pthread_mutex_lock(&prof__pool_lock);  /* the cap, which a PROF_INIT after a lazy start sets again */
    size_t max_ev = prof__g.rec.chunks_max * PROF__CHUNK_BYTES / sizeof(prof__ev);
    pthread_mutex_unlock(&prof__pool_lock);
    while (prof__fl.n && (prof__fl.n == prof__fl.cap || prof__fl.nev + prof__fl.ngpu + c.n + g->ngpu > max_ev))
        prof__fl_drop_oldest();
    prof__fseg *sg = &prof__fl.seg[(prof__fl.head + prof__fl.n++) % prof__fl.cap];
    sg->ev = c.ev;
    sg->n = c.n;
    sg->gpu = g->gpu;
    sg->ngpu = g->ngpu;
    sg->step = step;
    sg->t0 = t0;
    sg->ns0 = ns0;
    g->gpu = NULL;                      /* the segment has them now */
    g->ngpu = 0;
    prof__fl.nev += sg->n;
    prof__fl.ngpu += sg->ngpu;
    prof__act_trim(prof__fl.seg[prof__fl.head].ns0);
}

/* Whether the step just ended (ticks) is slow against the median of those
   before it; then it joins them. At the step, under prof__lock: a few
   dozen compares, a sort only for a step longer than the least of them. */
static int prof__fl_slow_locked(uint64_t dur, double *median_out) {
    int slow = 0;
    uint64_t least = (uint64_t)-1;      /* the median is at least the least: most steps stop here */
    for (int i = 0; i < prof__fl.ndur; i++) least = prof__fl.dur[i] < least ? prof__fl.dur[i] : least;
    if (prof__g.conf.flight_slow > 0 && prof__fl.ndur >= 10 && (double)dur > prof__g.conf.flight_slow * (double)least) {
        uint64_t v[PROF__FL_HIST];
        memcpy(v, prof__fl.dur, (size_t)prof__fl.ndur * sizeof *v);
        qsort(v, (size_t)prof__fl.ndur, sizeof *v, prof__u64_cmp);
        double median = (double)v[prof__fl.ndur / 2];
        *median_out = median;
        slow = (double)dur > prof__g.conf.flight_slow * median;
    }
    prof__fl.dur[prof__fl.idur] = dur;
    prof__fl.idur = (prof__fl.idur + 1) % PROF__FL_HIST;
    if (prof__fl.ndur < PROF__FL_HIST) prof__fl.ndur++;
    return slow;
}

/* The ring as one cycle, its segments up to step `upto`: their events in
   ring order, those begun before its first step clipped to it (or left
   out, when wholly before it), then grouped by thread as a collection's
   are. Under prof__wk_lock; prof__lock only for what the steps share. */
static void prof__fl_cycle(prof__cycle *cy, const char *reason, int64_t step, uint64_t now,
                           const prof__ev *extra, size_t nextra, int64_t upto) {
    const prof__fseg *first = &prof__fl.seg[prof__fl.head];
    uint64_t from = prof__fl.n ? first->t0 : now;
    int64_t from_ns = prof__fl.n ? first->ns0 : INT64_MAX, to_ns = INT64_MAX;  /* kernel capture's */
    int nseg = 0;                       /* the segments of steps up to `upto` */
    while (nseg < prof__fl.n && prof__fl.seg[(prof__fl.head + nseg) % prof__fl.cap].step <= upto) nseg++;
    if (nseg < prof__fl.n) {
        now = prof__fl.seg[(prof__fl.head + nseg) % prof__fl.cap].t0;
        to_ns = prof__fl.seg[(prof__fl.head + nseg) % prof__fl.cap].ns0;
    }
    cy->index = ++prof__fl.dumps;
    cy->until = now;
    prof__cycle_clock(cy);
    cy->reason = reason;
    cy->reason_step = step;
    cy->first_step = prof__fl.n ? first->step : step;
    cy->ev = (prof__ev *)malloc((prof__fl.nev + nextra) * sizeof *cy->ev + 1);
    pthread_mutex_lock(&prof__lock);
    size_t nth = prof__g.rec.ntinfo;
    cy->th = (struct prof__tinfo *)malloc(nth * sizeof *cy->th + 1);
    if (cy->th && nth) memcpy(cy->th, prof__g.rec.tinfo, nth * sizeof *cy->th);
    pthread_mutex_unlock(&prof__lock);
    if (!cy->ev || !cy->th) {
        cy->oom = 1;
        return;
    }
    cy->nth = nth;
    for (int k = 0; k < nseg; k++) {
        const prof__fseg *g = &prof__fl.seg[(prof__fl.head + k) % prof__fl.cap];
        for (size_t i = 0; i < g->n; i++) {
            prof__ev e = g->ev[i];
            if (e.t0 < from) {              /* began before the ring's first step */
                if ((e.kind != PROF__K_REGION && e.kind != PROF__K_GPU_REGION) || e.t1 < from) continue;
                e.t0 = from;
                e.kind = PROF__K_CLIPPED;
                cy->clipped++;
            }
            cy->ev[cy->n++] = e;
        }
    }
    for (size_t i = 0; i < nextra; i++) {   /* open regions: drawn from the ring's start at most */
        prof__ev e = extra[i];
        if (e.t0 < from) e.t0 = from;
        cy->ev[cy->n++] = e;
    }
    cy->cap = cy->n;
    pthread_mutex_lock(&prof__lock);
    if (prof__fl.ngpu) {                /* the segments' GPU regions, in the order writers read */
        cy->gpu = (prof__gev *)malloc(prof__fl.ngpu * sizeof *cy->gpu);
        cy->gdev = (struct prof__gdev_info *)malloc((size_t)prof__fl.ngdev * sizeof *cy->gdev + 1);
        if (!cy->gpu || !cy->gdev) {
            cy->oom = 1;
        } else {
            for (int k = 0; k < nseg; k++) {
                const prof__fseg *g = &prof__fl.seg[(prof__fl.head + k) % prof__fl.cap];
                if (g->ngpu) memcpy(cy->gpu + cy->ngpu, g->gpu, g->ngpu * sizeof *g->gpu);
                cy->ngpu += g->ngpu;
            }
            qsort(cy->gpu, cy->ngpu, sizeof *cy->gpu, prof__gev_cmp);
            memcpy(cy->gdev, prof__fl.gdev, (size_t)prof__fl.ngdev * sizeof *cy->gdev);
            cy->ngdev = (size_t)prof__fl.ngdev;
        }
    }
    pthread_mutex_unlock(&prof__lock);
    if (prof__act.tracer) {             /* kernel capture: the ring's launches */
        prof__act_reading(1);
        prof__act_cycle(cy, &prof__act.clk, from_ns, to_ns == INT64_MAX ? prof__act.clk.ns[1] : to_ns);
    }
    cy->gpu_dropped = __atomic_exchange_n(&prof__gpu.dropped, 0, __ATOMIC_RELAXED);
    if (cy->gpu_dropped)
        prof__msg("%llu GPU regions dropped since the last dump (memory cap PROF_BUFFER_MB, too many in flight, "
                  "or in flight past 64 anchors); counted in the trace as prof_gpu_dropped_regions",
                  (unsigned long long)cy->gpu_dropped);
    if (!prof__by_thread(cy)) cy->oom = 1;
    prof__analyse(cy);
}

/* A dump, unless one was written less than PROF_FLIGHT_COOLDOWN ago (then
   counted). extra: events to add (a watchdog's open regions). Under
   prof__wk_lock; the caller writes cy after it. */
static int prof__fl_dump(prof__cycle *cy, const char *reason, int64_t step, uint64_t now, int cooled,
                                const prof__ev *extra, size_t nextra, int64_t upto) {
    int64_t t = prof__mono_ns();
    if (cooled && prof__fl.last_dump && prof__g.conf.flight_cooldown > 0 &&
        (double)(t - prof__fl.last_dump) < prof__g.conf.flight_cooldown * 1e9) {
        prof__fl.suppressed++;
        return 0;
    }
    prof__fl.last_dump = t;
    prof__fl_cycle(cy, reason, step, now, extra, nextra, upto);
    return 1;
}

static void prof__fl_free(void) {
    while (prof__fl.n) prof__fl_drop_oldest();
    free(prof__fl.seg);
    prof__fl.seg = NULL;
}

/* ---- >>watch  the watchdog (PROF_WATCHDOG) ------------------------------
   One thread that wakes once a second: when no PROF_STEP has come for
   PROF_WATCHDOG seconds (counted from the first step), it says on stderr
   what every thread is inside (>>open) and which GPU regions have not
   completed, and in flight mode dumps the ring, the step in progress and
   the open regions (drawn up to the dump, marked open). It fires once per
   stall and only reads the engine's state: it never stops or signals a
   thread. */
static struct {
    int pipe[2];                        /* a byte: stop */
    pthread_t thread;
    int running;                        /* atomic: the thread exists */
    int64_t last_step;                  /* atomic: mono ns of the last PROF_STEP; 0 none yet */
} prof__wd = { { -1, -1 }, 0, 0, 0 };

/* Lines about GPU regions that have not completed: begun and their end not
   recorded yet, or recorded and not reached by the GPU (a hung kernel).
   Under the lock. */
PROF__COLD static size_t prof__gpu_pending_locked(char *m, size_t n, size_t cap, uint64_t now, double rate) {
    if (__atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) != 1) return n;
    const prof_gpu_api *api = prof__gpu.api;
    int fb = prof__fallback();
    for (prof__gring *r = prof__gpu.rings; r; r = r->next) {
        uint32_t t = r->tail, h = __atomic_load_n(&r->resv, __ATOMIC_ACQUIRE);
        for (; t != h; t++) {
            const prof__gpair *p = &r->slot[t & (r->cap - 1)];
            const char *state = "its end is not recorded yet (a thread is inside it)";
            if (__atomic_load_n(&p->ready, __ATOMIC_ACQUIRE)) {
                if (!p->corr || p->span || api->event_query(p->ev1) != api->not_ready) continue;
                state = "its end event has not completed on the GPU";
            }
            uint64_t t0 = p->t0 <= now ? p->t0 : now;
            int64_t age = fb ? (int64_t)(now - t0) : (int64_t)((double)(now - t0) * rate);
            prof__as_str(m, &n, cap, "watchdog: GPU region ");
            prof__as_str(m, &n, cap, p->name ? p->name : "(null)");
            prof__as_str(m, &n, cap, " on device ");
            prof__as_u64(m, &n, cap, (unsigned long long)p->dev);
            prof__as_str(m, &n, cap, ", stream ");
            prof__as_u64(m, &n, cap, (unsigned long long)p->stream);
            prof__as_str(m, &n, cap, ", began ");
            prof__as_secs(m, &n, cap, age);
            prof__as_str(m, &n, cap, " ago: ");
            prof__as_str(m, &n, cap, state);
            prof__as_str(m, &n, cap, "\n");
        }
    }
    return n;
}

/* No step for quiet_ns: the report, and in flight mode the dump. */
PROF__COLD static void prof__wd_fire(int64_t quiet_ns) {
    enum { CAP = 1 << 16 };
    char *m = (char *)malloc(CAP);
    prof__openrow row[PROF__OPEN_ROWS];
    size_t n = 0, cap = 0;
    prof__job j;                        /* flight mode: the dump, the profiler's thread's job */
    memset(&j, 0, sizeof j);
    j.kind = PROF__JOB_HANG;
    j.slow = -1;
    int queued = 0;
    if (!m) return;
    pthread_mutex_lock(&prof__lock);
    if (prof__g.shut || prof__g.disabled) {
        pthread_mutex_unlock(&prof__lock);
        free(m);
        return;
    }
    uint64_t now = prof__now(), tk = prof__fallback() ? prof__ticks() : now;   /* one reading: t0 <= now */
    double rate = prof__rate_at(tk, prof__mono_ns());
    int64_t step = prof__g.run.step;
    prof__as_str(m, &n, CAP, "watchdog: no PROF_STEP for ");
    prof__as_secs(m, &n, CAP, quiet_ns);
    prof__as_str(m, &n, CAP, " (step ");
    prof__as_u64(m, &n, CAP, (unsigned long long)step);
    prof__as_str(m, &n, CAP, " is running); what each thread is inside now:\n");
    for (prof__thread *th = prof__g.rec.threads; th; th = th->next) {
        int more, k = prof__open_of(th, tk, now, rate, 1, row, &more);
        if (!k) continue;
        prof__as_str(m, &n, CAP, "watchdog:   ");
        prof__as_inside(m, &n, CAP, th->tid, __atomic_load_n(&th->name, __ATOMIC_RELAXED), row, k, more);
        prof__as_str(m, &n, CAP, "\n");
        if (!prof__g.conf.flight) continue;
        prof__ev *v = (prof__ev *)prof__grow(j.open, &cap, j.nopen + (size_t)k, sizeof *v);
        if (!v) continue;
        j.open = v;
        prof__open_records(th, row, k, 0, now, j.open + j.nopen);
        j.nopen += (size_t)k;
    }
    n = prof__gpu_pending_locked(m, n, CAP, now, rate);
    for (size_t a = 0, b = 0; b < n; b++)   /* one message per line, before the dump's */
        if (m[b] == '\n') {
            prof__msg("%.*s", (int)(b - a), m + a);
            a = b + 1;
        }
    free(m);
    if (prof__g.conf.flight) {          /* the step so far joins the ring, which is dumped */
        j.step = step;
        j.t0 = prof__g.run.step_t0;
        j.now = now;
        j.gen = __atomic_load_n(&prof__gpu.gen, __ATOMIC_ACQUIRE);
        j.act_ns = prof__act_now_locked();
        queued = prof__wk_submit_locked(&j);
    }
    pthread_mutex_unlock(&prof__lock);
    if (prof__g.conf.flight && !queued) prof__job_run_here(&j);
}

PROF__COLD static void *prof__wd_run(void *arg) {
    (void)arg;
    int64_t fired_for = 0;              /* the stall already reported: its last step */
    for (;;) {
        struct pollfd pf;
        pf.fd = prof__wd.pipe[0];
        pf.events = POLLIN;
        pf.revents = 0;
        int r = poll(&pf, 1, 1000);     /* at most once a second */
        if (r > 0 || (r < 0 && errno != EINTR)) return NULL;
        int64_t last = __atomic_load_n(&prof__wd.last_step, __ATOMIC_ACQUIRE), quiet = prof__mono_ns() - last;
        if (last && last != fired_for && (double)quiet >= prof__g.conf.watchdog * 1e9) {
            fired_for = last;
            prof__wd_fire(quiet);
        }
    }
}

/* At init, under the lock. */
PROF__COLD static void prof__wd_start(void) {
    if (!(prof__g.conf.watchdog > 0) || prof__g.disabled || __atomic_load_n(&prof__wd.running, __ATOMIC_ACQUIRE))
        return;
    if (pipe(prof__wd.pipe) != 0) {
        prof__msg("PROF_WATCHDOG: no pipe (%s); no watchdog", strerror(errno));
        return;
    }
    fcntl(prof__wd.pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(prof__wd.pipe[1], F_SETFD, FD_CLOEXEC);
    if (pthread_create(&prof__wd.thread, NULL, prof__wd_run, NULL) != 0) {
        prof__msg("PROF_WATCHDOG: cannot start its thread; no watchdog");
        close(prof__wd.pipe[0]);
        close(prof__wd.pipe[1]);
        return;
    }
    __atomic_store_n(&prof__wd.running, 1, __ATOMIC_RELEASE);
}

/* At shutdown, outside the lock (a dump in progress finishes first); in a
   fork's child (in_child) the thread is not there: the pipe is closed. */
PROF__COLD static void prof__wd_stop(int in_child) {
    if (!__atomic_exchange_n(&prof__wd.running, 0, __ATOMIC_ACQ_REL)) return;
    if (!in_child) {
        unsigned char z = 0;
        if (write(prof__wd.pipe[1], &z, 1) == 1) pthread_join(prof__wd.thread, NULL);
        else pthread_detach(prof__wd.thread);
    }
    close(prof__wd.pipe[0]);
    close(prof__wd.pipe[1]);
}

/* ---- >>steps  steps and shutdown, which drive the rest ------------------ */

/* Regions that began in a saved cycle and ended while no cycle recorded
   (not closed before PROF_STEP) are in no trace: counted, said once per
   job that finds them. On the profiler's thread, which collects. */
static void prof__say_lost(void) {
    uint64_t n = prof__g.rec.lost_past_end;
    if (!n) return;
    prof__g.rec.lost_past_end = 0;
    pthread_mutex_lock(&prof__lock);
    prof__g.stats.lost_past_end += n;
    pthread_mutex_unlock(&prof__lock);
    prof__msg("%llu region%s began in a saved cycle and ended after it, in steps not recorded: in no trace "
              "(close regions before PROF_STEP)", (unsigned long long)n, n == 1 ? "" : "s");
}

/* The regions every thread is inside when a cycle is saved (a producer
   thread waiting across steps, say) join it, drawn from their start (the
   window's, if earlier) to the save and marked open, instead of being lost
   when they end in steps not recorded. Read at the step itself, under
   prof__lock (a few frames a thread: no events); the job takes them to
   the profiler's thread, where prof__g.rec.opened keeps the last save's,
   to tell those from the lost. */
static void prof__opens_read_locked(prof__job *j) {
    prof__openrow row[PROF__OPEN_ROWS];
    uint64_t tk = prof__fallback() ? prof__ticks() : j->now;
    double rate = prof__rate_at(tk, prof__mono_ns());
    size_t cap = 0;
    if (j->from > j->now) return;       /* two threads stepping at once: a step between this one's
                                           reading of now and its save began the window later */
    for (prof__thread *th = prof__g.rec.threads; th; th = th->next) {
        /* at shutdown, the PROF_BEGINs left open on its thread are reported
           as never closed, not drawn */
        int more, k = prof__open_of(th, tk, j->now, rate, !(prof__g.shut && th == prof__self), row, &more);
        prof__ev *v = k ? (prof__ev *)prof__grow(j->open, &cap, j->nopen + (size_t)k, sizeof *v) : NULL;
        if (!v) continue;               /* out of memory: they stay lost, and are counted so */
        j->open = v;
        prof__open_records(th, row, k, j->from, j->now, v + j->nopen);
        j->nopen += (size_t)k;
    }
}

/* The open regions read at the save join the collected cycle: each
   thread's after its records, innermost first (they end together), but
   before a step that ends at the save (a region inside it ends first). A
   region that ended after the save is not in the cycle (>>collect keeps it
   for the next one), so none is drawn twice. */
static void prof__opens_join(prof__cycle *cy, prof__job *j) {
    free(prof__g.rec.opened);
    prof__g.rec.opened = j->open;       /* the last save's, for prof__was_open */
    prof__g.rec.nopened = j->nopen;
    j->open = NULL;
    size_t n = prof__g.rec.nopened;
    if (!n || !prof__ev_reserve(&cy->ev, cy->n, &cy->cap, n, &cy->oom)) return;
    memcpy(cy->ev + cy->n, prof__g.rec.opened, n * sizeof *cy->ev);
    cy->n += n;
    if (!prof__by_thread(cy)) { cy->oom = 1; return; }    /* stable: each thread's come last */
    for (size_t i = 0; i + 1 < cy->n; i++) {
        prof__ev *e = &cy->ev[i];
        if (e->kind != PROF__K_STEP || e->t1 < j->now || e[1].kind != PROF__K_OPEN || e[1].th != e->th) continue;
        prof__ev step = *e;             /* the step ending now goes after them */
        size_t k = i;
        for (; k + 1 < cy->n && cy->ev[k + 1].kind == PROF__K_OPEN && cy->ev[k + 1].th == step.th; k++)
            cy->ev[k] = cy->ev[k + 1];
        cy->ev[k] = step;
        i = k;
    }
}

/* Open rows by thread, each thread's innermost (latest begun) first: they
   all end at the save. */
static int prof__open_cmp(const void *x, const void *y) {
    const prof__ev *a = (const prof__ev *)x, *b = (const prof__ev *)y;
    if (a->th != b->th) return a->th < b->th ? -1 : 1;
    return (a->t0 < b->t0) - (a->t0 > b->t0);
}

/* The regions open at the job's step: those read in the frames at the step,
   and those the collection found past a thread's end (ended between the
   step's reading of its time and the frames'), by thread, innermost first.
   After a collection with prof__found on. */
static void prof__opens_found(prof__job *j) {
    size_t read = j->nopen;
    for (size_t i = 0; i < prof__found.n; i++) {    /* open at the step, not read in the frames */
        const prof__ev *f = &prof__found.ev[i];
        size_t k = 0;
        while (k < j->nopen && !(j->open[k].th == f->th && j->open[k].name == f->name && j->open[k].t0 == f->t0)) k++;
        if (k < j->nopen) continue;
        prof__ev *v = (prof__ev *)realloc(j->open, (j->nopen + 1) * sizeof *v);
        if (!v) break;                  /* out of memory: it is counted lost when it is collected */
        j->open = v;
        j->open[j->nopen++] = *f;
    }
    if (j->nopen > read) qsort(j->open, j->nopen, sizeof *j->open, prof__open_cmp);  /* innermost first */
}

/* A streamed part's arguments whose region is still open at its end (a
   worker's region across the step, say) go back to the collector's spill,
   to be taken again with the part that has their region: a part's analysis
   would find them no region, and the region's part would have lost them.
   An argument is the open region's when no span of the part adopts it and
   it began no earlier than the thread's outermost open region (the walk's
   rule, prof__analyse, with the open regions after the thread's records).
   With the fallback clock an open scope's start is an estimate: a
   millisecond's slack, at the cost of carrying an argument of no region
   made just before one began until that region ends. On the profiler's
   thread; the records stay grouped by thread, in their order. */
static void prof__part_carry(prof__cycle *cy, const prof__ev *open, size_t nopen) {
    if (!nopen || !cy->n) return;
    uint32_t *wait = (uint32_t *)malloc(cy->n * sizeof *wait);
    unsigned char *carry = (unsigned char *)calloc(cy->n, 1);
    uint64_t slack = prof__fallback() ? 1000000 : 0;
    size_t ncarry = 0;
    for (size_t i = 0; wait && carry && i < cy->n;) {
        uint32_t th = cy->ev[i].th;
        size_t end = i, nw = 0;
        while (end < cy->n && cy->ev[end].th == th) end++;
        uint64_t outer = (uint64_t)-1;  /* the outermost open region's start (threads come
                                           in the registry's order: a few rows each, read all) */
        for (size_t k = 0; k < nopen; k++)
            if (open[k].th == th && open[k].t0 < outer) outer = open[k].t0;
        for (size_t k = i; outer != (uint64_t)-1 && k < end; k++) {
            const prof__ev *e = &cy->ev[k];
            if (prof__spans(e->kind))
                while (nw && cy->ev[wait[nw - 1]].t0 >= e->t0) nw--;
            wait[nw++] = (uint32_t)k;
        }
        /* wait[0, nw): unadopted, by start; the open regions take those from outer on */
        for (size_t w = 0; w < nw; w++) {
            const prof__ev *e = &cy->ev[wait[w]];
            if (e->t0 + slack >= outer && prof__role[e->kind] == PROF__R_ARG) {
                carry[wait[w]] = 1;
                ncarry++;
            }
        }
        i = end;
    }
    /* before the spill: a thread that exited has its records after them there */
    prof__ev *sp = ncarry ? (prof__ev *)malloc((ncarry + prof__g.rec.nspill) * sizeof *sp) : NULL;
    if (sp) {                           /* else (no memory) they stay, without their region */
        size_t out = 0, c = 0;
        for (size_t i = 0; i < cy->n; i++) {
            if (carry[i]) sp[c++] = cy->ev[i];
            else cy->ev[out++] = cy->ev[i];
        }
        if (prof__g.rec.nspill) memcpy(sp + c, prof__g.rec.spill, prof__g.rec.nspill * sizeof *sp);
        free(prof__g.rec.spill);
        prof__g.rec.spill = sp;
        prof__g.rec.nspill += c;
        prof__g.rec.spillcap = prof__g.rec.nspill;
        cy->n = out;
    }
    free(wait);
    free(carry);
}

/* The window that ended at the job's step as a cycle to save, made in the
   job's cycle, which holds the GPU side the step resolved (>>gpu): its
   records from every thread, step 0 stretched over what came before it,
   the analysis every sink reads. */
static void prof__cycle_make(prof__job *j) {
    prof__cycle *cy = &j->cy;
    cy->index = ++prof__g.run.cycle;
    cy->until = j->now;
    prof__found.on = j->from <= j->now;
    prof__found.n = 0;
    prof__collect(cy, j->from, j->now);
    prof__found.on = 0;
    prof__opens_found(j);
    prof__opens_join(cy, j);
    prof__ctr_join(cy);                 /* PROF_COUNTERS: its steps' values */
    prof__step0_covers(cy);
    prof__analyse(cy);                  /* last: it reads the GPU side too */
    prof__g.run.saved_to = j->now;
}

/* What the window recorded up to the job's step, its CPU side, as a part of
   the cycle in progress (streaming). GPU regions stay to the cycle's end,
   where they are resolved. Regions open then (read in the frames at the
   step, or found past a thread's end) are taken by a later part, whole,
   with their arguments (prof__part_carry). */
static void prof__part_make(prof__cycle *cy, prof__job *j) {
    cy->index = prof__g.run.cycle + 1;
    cy->until = j->now;
    prof__found.on = j->from <= j->now;
    prof__found.n = 0;
    prof__collect(cy, j->from, j->now);
    prof__found.on = 0;
    prof__opens_found(j);
    if (!cy->oom) prof__part_carry(cy, j->open, j->nopen);
    prof__ctr_join(cy);                 /* PROF_COUNTERS: its steps' values */
    prof__step0_covers(cy);
    prof__analyse(cy);
}

/* What the profiler's thread holds, not yet written, against the cap. */
static size_t prof__held(const prof__cycle *cy) {
    return (cy->n * (sizeof *cy->ev + sizeof *cy->parent) + PROF__CHUNK_BYTES - 1) / PROF__CHUNK_BYTES;
}

/* What a job leaves to write (prof__job_run). */
typedef enum {
    PROF__OUT_NOTHING,                  /* warm-up thrown away, the GPU's pairs drained, a dump that failed */
    PROF__OUT_CYCLE,                    /* the job's cycle, saved whole */
    PROF__OUT_PART,                     /* a part of the cycle in progress, streamed */
    PROF__OUT_DUMP                      /* the flight recorder's ring: a hang's, a trigger's, a slow step's */
} prof__job_out;

/* A flight-mode step's job: the step joins the ring, and the ring is dumped
   into cy when a trigger's step has ended or the step was slow. *gone: a
   trigger's step no longer in the ring. */
static prof__job_out prof__job_flight(prof__cycle *cy, prof__job *j, int64_t *gone) {
    prof__fl_gpu(&j->cy.gpu, &j->cy.ngpu, j->gen, j->now);  /* what finished by the step, placed */
    prof__fl_segment(j->step, j->t0, j->now, &j->cy, j->act_ns);
    if (j->fired) prof__fl.want = (j->at < 0 ? j->step : j->at) + 1;
    int64_t upto = prof__fl.want - 1;
    if (prof__fl.want && j->step >= upto) {     /* a trigger's step has ended: the ring up to it */
        prof__fl.want = 0;
        if (prof__fl.n && prof__fl.seg[prof__fl.head].step <= upto)
            return prof__fl_dump(cy, "on_demand", upto, j->now, 0, NULL, 0, upto) ? PROF__OUT_DUMP : PROF__OUT_NOTHING;
        *gone = upto;
    } else if (j->slow >= 0) {
        return prof__fl_dump(cy, "slow_step", j->slow, j->now, 1, NULL, 0, INT64_MAX) ? PROF__OUT_DUMP
                                                                                      : PROF__OUT_NOTHING;
    }
    return PROF__OUT_NOTHING;
}

/* The line a dump is announced with: the watchdog's (hang), a slow step's
   or a trigger's. */
static void prof__job_say_dump(const prof__cycle *cy, const prof__job *j, int hang) {
    if (hang) {
        prof__msg("watchdog: dumping steps %lld to %lld and the regions open now", (long long)cy->first_step,
                  (long long)j->step);
        return;
    }
    prof__calibrate();                  /* ticks to ns: before the first save, not yet */
    double ns = (double)j->slow_dur * prof__ns_per_tick(), median = j->median * prof__ns_per_tick();
    if (!strcmp(cy->reason, "slow_step"))
        prof__msg("flight recorder: step %lld took %.3f ms, %.1fx the median of the steps before it "
                  "(%.3f ms); dumping steps %lld to %lld", (long long)j->slow, ns / 1e6, ns / median,
                  median / 1e6, (long long)cy->first_step, (long long)j->step);
    else
        prof__msg("flight recorder: %s; dumping steps %lld to %lld", prof__trigger_who(),
                  (long long)cy->first_step, (long long)cy->reason_step);
}

/* One job, on the profiler's thread (or the stepping thread, with no such
   thread), under prof__wk_lock: what the step at its end leaves to do. */
static void prof__job_run(prof__job *j) {
    prof__cycle dump, *cy = &dump;      /* what is written: a flight dump, a part, or the job's cycle */
    memset(&dump, 0, sizeof dump);
    prof__job_out out = PROF__OUT_NOTHING;
    int64_t gone = -1;                  /* a trigger's step no longer in the ring */
    int hang = j->kind == PROF__JOB_HANG;
    if (hang) {                         /* the watchdog's: the step so far, then the ring */
        prof__fl_gpu(&j->cy.gpu, &j->cy.ngpu, j->gen, j->now);
        prof__fl_segment(j->step, j->t0, j->now, &j->cy, j->act_ns);
        if (prof__fl_dump(cy, "hang", j->step, j->now, 0, j->open, j->nopen, INT64_MAX)) out = PROF__OUT_DUMP;
    } else if (prof__g.conf.flight) {
        out = prof__job_flight(cy, j, &gone);
    } else if (j->prev == PROF__RECORD_AND_SAVE) {
        prof__gpu_save(&j->cy, j->from, j->now, j->gen);   /* waits for the window's GPU work */
        prof__cycle_make(j);
        cy = &j->cy;
        out = PROF__OUT_CYCLE;
    } else if (j->prev == PROF__RECORD) {
        prof__gpu_step(j->gen, j->now); /* what finished: drained, so the rings stay small */
        if (prof__streams()) {
            prof__part_make(cy, j);     /* the window goes on: what it recorded so far */
            out = PROF__OUT_PART;
        }
    } else {
        prof__collect(NULL, 0, j->now);     /* warm-up is thrown away */
    }
    size_t held = prof__held(cy);
    __atomic_fetch_add(&prof__g.rec.held, held, __ATOMIC_RELAXED);
    prof__say_lost();
    if (out == PROF__OUT_PART) prof__smp_take(cy);     /* PROF_SAMPLE: the step's CPU samples, with it */
    if (out == PROF__OUT_PART && prof__stream_part(cy, 0)) prof__part_done(cy);
    if (out == PROF__OUT_DUMP) prof__job_say_dump(cy, j, hang);
    if (gone >= 0)
        prof__msg("flight recorder: PROF_TRIGGER file asks for step %lld, which the ring no longer holds; "
                  "nothing dumped", (long long)gone);
    if (out == PROF__OUT_CYCLE || out == PROF__OUT_DUMP) prof__save_cycle(cy);
    prof__cycle_free(&dump);
    __atomic_fetch_sub(&prof__g.rec.held, held, __ATOMIC_RELAXED);
    prof__cycle_free(&j->cy);
    free(j->open);
}

void prof_step(void) {
    prof__ensure_init();
    int64_t at;                         /* the step a trigger file names, or -1 */
    int fired = prof__trigger_poll(&at);    /* a look at a file is a system call: not under the lock */
    pthread_mutex_lock(&prof__lock);
    uint64_t now = prof__now();         /* under the lock: steps of two threads stay in order */
    if (prof__g.shut) { pthread_mutex_unlock(&prof__lock); return; }
    int64_t step = prof__g.run.step;
    uint64_t step_t0 = prof__g.run.step_t0;
    int prev = prof__cur_action();
    prof__g.run.step = step + 1;
    prof__g.run.step_t0 = now;
    if (prof__g.conf.watchdog > 0) __atomic_store_n(&prof__wd.last_step, prof__mono_ns(), __ATOMIC_RELEASE);
    if (fired && !prof__g.disabled && !prof__g.conf.flight) prof__trigger_fire(at);
    int next = prof__cur_action();
    int disabled = prof__g.disabled;    /* read under the lock: PROF_INIT may run elsewhere */
    pthread_mutex_unlock(&prof__lock);

    /* The step's own event, on the thread that steps, like Kineto's; pushed
       outside the lock, which a chunk refill takes. */
    if (!disabled && prev >= PROF__RECORD)
        prof__push(PROF__K_STEP, NULL, step_t0 ? step_t0 : 1, now, (uint32_t)step);

    prof__job j;
    memset(&j, 0, sizeof j);
    j.kind = PROF__JOB_STEP;
    j.step = step;
    j.t0 = step_t0;
    j.now = now;
    j.prev = prev;
    j.next = next;
    j.fired = fired;
    j.at = at;
    int work = 0;
    pthread_mutex_lock(&prof__lock);
    j.from = prof__g.run.win_t0;
    if (prof__fallback()) {
        uint64_t t; int64_t m;
        prof__clock_pair(&t, &m);
        if (t != prof__g.clk.fb_tsc0) {
            double rate = (double)(m - prof__g.clk.mono0) / (double)(t - prof__g.clk.fb_tsc0);
            __atomic_store(&prof__g.clk.fb_ns_per_tsc, &rate, __ATOMIC_RELAXED);
        }
    }
    j.slow = -1;
    if (prof__g.conf.flight && !prof__g.disabled) {
        if (step_t0 && prof__fl_slow_locked(now - step_t0, &j.median)) {   /* judged here: exact */
            j.slow = step;
            j.slow_dur = now - step_t0;
        }
        j.gen = __atomic_load_n(&prof__gpu.gen, __ATOMIC_ACQUIRE);
        j.act_ns = prof__act_now_locked();
        work = 1;
    } else if (!prof__g.disabled && prev == PROF__RECORD_AND_SAVE) {
        prof__opens_read_locked(&j);
        j.gen = prof__gpu_cycle_locked(&j.cy);
        work = 1;
    } else if (!prof__g.disabled && prev == PROF__RECORD &&
               (prof__streams() || __atomic_load_n(&prof__gpu.state, __ATOMIC_ACQUIRE) == 1)) {
        if (prof__streams()) prof__opens_read_locked(&j);   /* whose arguments wait for a later part */
        j.gen = __atomic_load_n(&prof__gpu.gen, __ATOMIC_ACQUIRE);
        work = 1;                       /* a streamed part, or the GPU's pairs to drain */
    }
    if (prof__g.conf.flight) {
        /* flight mode: every step is recorded, the ring takes what it needs */
    } else if (next >= PROF__RECORD && prev != PROF__RECORD) {
        work |= !prof__g.disabled;      /* warm-up is thrown away (or the window before, saved) */
        prof__gpu_window_locked();
        prof__g.run.win_t0 = now;
    }
    __atomic_store_n(&prof__on, (unsigned char)(!prof__g.disabled && next != PROF__NONE), __ATOMIC_RELAXED);
    if (prev == PROF__NONE && next != PROF__NONE)
        prof__en_wake_locked();         /* PROF_ENERGY: an opening read, then reads from the warm-up on */
    prof__act_follow_locked(!prof__g.disabled && next != PROF__NONE, prev == PROF__NONE && next >= PROF__RECORD);
    prof__smp_follow_locked(!prof__g.disabled && next >= PROF__RECORD);
    prof__ctr_step_locked(step, prev, next);
    int queued = work && prof__wk_submit_locked(&j);
    pthread_mutex_unlock(&prof__lock);
    if (work && !queued) prof__job_run_here(&j);
}

/* Shutdown: the collections' scratch and the free chunks go. Live threads
   keep their current chunk: a region open right now may still close into
   it. What was lost is said first. */
PROF__COLD static void prof__shutdown_release(void) {
    free(prof__g.rec.spill);
    prof__g.rec.spill = NULL;
    prof__g.rec.nspill = prof__g.rec.spillcap = 0;
    free(prof__g.rec.opened);
    prof__g.rec.opened = NULL;
    prof__g.rec.nopened = 0;
    free(prof__found.ev);
    prof__found.ev = NULL;
    prof__found.cap = 0;
    prof__say_lost();
    pthread_mutex_lock(&prof__pool_lock);
    while (prof__g.rec.pool) {
        prof__chunk *c = prof__g.rec.pool;
        prof__g.rec.pool = c->next;
        free(c);
        prof__g.rec.chunks--;
    }
    prof__g.rec.npool = 0;
    pthread_mutex_unlock(&prof__pool_lock);
}

/* Shutdown's lines about what is not written: the tail events of cycle
   `index` (in no step), and the slow steps the flight recorder did not dump. */
PROF__COLD static void prof__shutdown_say(size_t tail, int index, int64_t tail_step, uint64_t suppressed) {
    if (tail && index > 1)              /* the frees after the training loop, say: no trace of its own */
        prof__msg("%zu event%s after the last step of cycle %d, in no step: not written (a trace holds "
                  "steps)", tail, tail == 1 ? "" : "s", index - 1);
    else if (tail)
        prof__msg("%zu event%s of the window from step %lld, which no PROF_STEP completed: not written (a "
                  "trace holds steps)", tail, tail == 1 ? "" : "s", (long long)tail_step);
    if (suppressed)
        prof__msg("flight recorder: %llu more slow step%s not dumped (within PROF_FLIGHT_COOLDOWN of a dump)",
                  (unsigned long long)suppressed, suppressed == 1 ? " was" : "s were");
}

void prof_shutdown(void) {
    if (prof__in_job) {                 /* a trace-ready handler calls exit(): its cycle is the last */
        prof__msg("PROF_SHUTDOWN or exit() inside a trace-ready handler: the cycles after this one are not "
                  "written");
        return;
    }
    prof__wd_stop(0);
    prof__signals_stop(0);
    prof__reserve_stop();
    prof__trigger_stop();
    /* PROF_BEGINs this thread left open are unclosed regions of the last cycle */
    if (prof__self) prof__push_unclosed(prof__self);
    if (!prof__wk_stop()) return;       /* the writer is stuck: nothing more can be written */
    if (prof__ctr_on()) prof__ctr_poll();   /* PROF_COUNTERS: the last step's read, if not made */
    pthread_mutex_lock(&prof__wk_lock);
    pthread_mutex_lock(&prof__lock);
    if (!prof__g.inited || prof__g.shut) {
        pthread_mutex_unlock(&prof__lock);
        pthread_mutex_unlock(&prof__wk_lock);
        return;
    }
    __atomic_store_n(&prof__on, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&prof__g.shut, 1, __ATOMIC_RELAXED);
    int act = prof__cur_action();
    int save = !prof__g.disabled && act >= PROF__RECORD && !prof__g.conf.flight;  /* flight: dumps only */
    prof__job j;
    memset(&j, 0, sizeof j);
    j.prev = PROF__RECORD_AND_SAVE;
    j.now = prof__now();
    j.from = prof__g.run.win_t0;
    if (save) {
        prof__opens_read_locked(&j);
        j.gen = prof__gpu_cycle_locked(&j.cy);
    }
    pthread_mutex_unlock(&prof__lock);
    if (save) prof__gpu_save(&j.cy, j.from, j.now, j.gen);  /* this thread is the profiler's now */
    pthread_mutex_lock(&prof__lock);
    prof__gpu_release_locked();
    pthread_mutex_unlock(&prof__lock);

    prof__cycle *cy = &j.cy;
    uint64_t suppressed = prof__fl.suppressed;
    if (prof__g.conf.flight) prof__fl_free();
    size_t tail = 0;                    /* events of a window no step completed */
    int64_t tail_step = prof__g.run.step;
    if (save) {
        prof__cycle_make(&j);
        size_t k = 0;
        while (k < cy->n && cy->ev[k].kind != PROF__K_STEP) k++;
        /* A schedule's window that shutdown ends before any of its steps did
           (torch.profiler saves it at exit, holding only the ProfilerStep
           its exit closed) has no trace of its own, whatever came before it;
           one whose earlier steps are in its streamed file finishes it. A
           run with no schedule is one window, written with or without steps. */
        if (k == cy->n && (prof__g.conf.has_sched || cy->index > 1) && !prof__streaming(cy->index)) {
            tail = cy->n;
            save = 0;
        }
    } else {
        prof__collect(NULL, 0, 0);
    }
    free(j.open);
    prof__shutdown_release();
    prof__shutdown_say(tail, cy->index, tail_step, suppressed);
    if (save) prof__save_cycle(cy);
    prof__cycle_free(cy);
    prof__smp_stop();                   /* PROF_SAMPLE: every event closed */
    prof__ctr_stop();                   /* PROF_COUNTERS: likewise */
    pthread_mutex_unlock(&prof__wk_lock);
    prof__mem_shutdown();               /* after the last cycle: leaks know their regions */
}

void prof_get_stats(prof_stats *out) {
    pthread_mutex_lock(&prof__lock);
    *out = prof__g.stats;
    uint64_t pending = prof__g.rec.dropped_dead;
    for (prof__thread *th = prof__g.rec.threads; th; th = th->next)  /* acquire: as a collection reads them */
        pending += __atomic_load_n(&th->dropped, __ATOMIC_ACQUIRE);
    out->dropped += pending - prof__g.rec.dropped_reported;
    out->behind += __atomic_load_n(&prof__g.rec.dropped_behind, __ATOMIC_RELAXED) - prof__g.rec.behind_reported;
    out->unknown_frees = __atomic_load_n(&prof__mem.unknown_frees, __ATOMIC_RELAXED);
    out->names_refused = __atomic_load_n(&prof__names_refused, __ATOMIC_RELAXED);
    out->reused_live = __atomic_load_n(&prof__mem.reused_live, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&prof__lock);
}

#endif /* PROF__BODIES */

/* ---- >>internals  what the suite's tests and the prof tool link -------- */

/* With PROF_INTERNALS, the functions a unit without the implementation
   calls in it, by section (the state they share, prof__g and the rest, is
   declared beside its code, outside the bodies). */
#ifdef PROF_INTERNALS
/* in >>impl */
PROF__SHARED const char *prof__q(const char *s, char *buf);
/* in >>clock */
PROF__SHARED int64_t prof__tick_ns(uint64_t tick);
/* in >>memory */
PROF__SHARED void prof__fmt_mem(char *o, size_t cap, int64_t b);
/* in >>collect */
PROF__SHARED void prof__cycle_clock(prof__cycle *cy);
PROF__SHARED void prof__collect(prof__cycle *cy, uint64_t t_from, uint64_t t_to);
PROF__SHARED void prof__analysis_free(prof__cycle *cy);
/* in >>gpu */
PROF__SHARED void prof__gpu_drain(uint32_t gen, int wait, uint64_t until);
/* in >>analysis */
PROF__SHARED int prof__analyse(prof__cycle *cy);
/* in >>write */
PROF__SHARED int prof__path_format(const char *path);
PROF__SHARED void prof__w_flush(prof__w *w);
PROF__SHARED void prof__w_put(prof__w *w, const char *s, size_t n);
PROF__SHARED char *prof__fmt_us(char *o, int64_t ns);
PROF__SHARED void prof__w_i64(prof__w *w, int64_t v);
PROF__SHARED void prof__w_str(prof__w *w, const char *s);
PROF__SHARED void prof__w_free(prof__w *w);
/* in >>perfetto */
PROF__SHARED unsigned char *prof__pb_varint(unsigned char *o, uint64_t v);
PROF__SHARED unsigned char *prof__pb_room(prof__pb *m, size_t need);
PROF__SHARED void prof__pb_uint(prof__pb *m, uint32_t field, uint64_t v);
PROF__SHARED void prof__pb_fixed64(prof__pb *m, uint32_t field, uint64_t v);
PROF__SHARED void prof__pb_bytes(prof__pb *m, uint32_t field, const void *p, size_t len);
PROF__SHARED void prof__pb_sub(prof__pb *m, uint32_t field, prof__pb *sub);
PROF__SHARED int prof__write_trace_fmt(const prof__cycle *cy, const char *path, int fmt, int as_ops, size_t *nev);
/* in >>memreport */
PROF__SHARED void prof__mem_print_peaks(const prof__cycle *c, FILE *f);
PROF__SHARED void prof__table_peaks(const prof__cycle *c, prof_table *out);
/* in >>rows */
PROF__SHARED void prof__fmt_time(char *o, size_t cap, double ns);
PROF__SHARED const char *prof__cut(char *buf, const char *s, size_t max);
PROF__SHARED void prof__table_cols(const prof_table *t, prof__cols *c);
PROF__SHARED void prof__table_line(const prof_table *t, const prof__cols *c, const prof_row *r, FILE *f);
/* in >>output */
PROF__SHARED int prof__expand_path(char *out, const char *tmpl, int cycle, const char *what);
/* in >>env */
PROF__SHARED int prof__parse_schedule(const char *s, prof_schedule *out);
PROF__SHARED int prof__parse_uint(const char *s, long *out);
PROF__SHARED int prof__parse_table_spec(const char *spec, prof_sort *sort, size_t *rows, int *group_by_args,
                                        int *all_ranks);
PROF__SHARED int prof__rank_in(const char *list, int rank);
PROF__SHARED void prof__resolve_config(const prof_config *cfg);
/* in >>worker */
extern PROF__SHARED pthread_mutex_t prof__wk_lock;
/* in >>sample */
PROF__SHARED void prof__smp_drain_all(void);
#endif /* PROF_INTERNALS */

#ifdef __cplusplus
} /* extern "C" */
#pragma GCC diagnostic pop
#endif

#endif /* PROF_IMPLEMENTATION || PROF_INTERNALS */

/*
MIT License

Copyright (c) 2026 The prof.h authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of
the Software, and to permit persons to whom the Software is furnished to do so,
subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS
FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/
