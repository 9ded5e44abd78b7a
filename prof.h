/* prof.h - v0.1 - a header-only profiler for C and C++ training engines.
   Public domain / MIT (see LICENSE at the end of this file).

   Regions, steps, counters and instants recorded into per-thread buffers and
   written as Chrome Trace Event JSON in the shape PyTorch's profiler (Kineto)
   writes, so Perfetto UI, chrome://tracing and the PyTorch tooling open it.

   USE
     In exactly one C or C++ file:
         #define PROF_IMPLEMENTATION
         #include "prof.h"
     Everywhere else just #include "prof.h". Build with -DPROF_ENABLE to compile
     the instrumentation in; without it every macro below is empty and the
     annotated code compiles to the same bytes as code that never mentioned it.

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
     PROF_BEGIN(name)          explicit region, closed by PROF_END() on the
     PROF_END()                  same thread (last in, first out)
     PROF_INSTANT(name)        a point event
     PROF_COUNTER(name, v)     a sample of a numeric track
     PROF_THREAD_NAME(name)    names the calling thread in the trace
     PROF_STEP()               the current step ends, the next begins
     PROF_ARG_INT(key, v)      attach data to the innermost open region
     PROF_ARG_STR(key, s)        of this thread ("Input Dims", sizes ...)
     PROF_FLOPS(n)
     PROF_ALLOC(ptr, bytes)    host memory events
     PROF_FREE(ptr)
     PROF_SET_RANK(r, n)       distributed identity; PROF_SYNC() after a barrier

   Names are stored as pointers: pass string literals or strings that outlive
   the trace. Close regions before PROF_STEP(): a region that spans a step
   boundary overlaps the ProfilerStep#N event only partially.

   ENVIRONMENT (read at init, overrides the config)
     PROF_OUTPUT     trace path; {pid}, {rank}, {cycle} are replaced
                     (default prof_trace_{pid}.json)
     PROF_BUFFER_MB  cap on recorder memory (default 64); beyond it events
                     are dropped, counted, reported and stored in the trace
     PROF_DISABLE    1: record nothing at run time
     PROF_SCHEDULE, PROF_TABLE, PROF_TB_DIR: see README.md

   PLATFORMS  Linux with GCC or Clang, C99/C11 and C++11/17 (strict or gnu
   dialects). Timestamps: invariant TSC on x86-64, the generic timer on
   AArch64, CLOCK_MONOTONIC elsewhere or with -DPROF_NO_TSC.
*/
#ifndef PROF_H
#define PROF_H

/* -DPROF_ENABLE, -DPROF_ENABLE=1 and "#define PROF_ENABLE" enable;
   -DPROF_ENABLE=0 or no definition disables. */
#if defined(PROF_ENABLE) && ((PROF_ENABLE + 0) != 0 || (1 - PROF_ENABLE - 1) == 2)
#define PROF__ENABLED 1
#else
#define PROF__ENABLED 0
#endif

/* ======================================================================== */
/*  Public API and configuration                                            */
/* ======================================================================== */
#if PROF__ENABLED

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* torch.profiler.schedule: see README. active == 0 means "no schedule":
   everything from init to shutdown is one recorded cycle. */
typedef struct prof_schedule {
    int skip_first, wait, warmup, active, repeat;
} prof_schedule;

/* Zero means default everywhere (sokol style):
       prof_config cfg = { .output = "run.json", .buffer_mb = 256 };
       PROF_INIT(&cfg);                                                     */
typedef struct prof_config {
    const char   *output;     /* trace path, see PROF_OUTPUT                */
    size_t        buffer_mb;  /* recorder memory cap in MiB (default 64)    */
    int           disable;    /* nonzero: record nothing                    */
    int           quiet;      /* nonzero: no informational lines on stderr  */
    prof_schedule schedule;
} prof_config;

/* What the last cycles recorded and lost; for tests and for logging. */
typedef struct prof_stats {
    uint64_t events;          /* events handed to the writer so far         */
    uint64_t dropped;         /* events lost to the memory cap so far       */
    uint64_t traces_written;  /* trace files written so far                 */
} prof_stats;

void prof_init(const prof_config *cfg);
void prof_shutdown(void);
void prof_step(void);
void prof_instant(const char *name);
void prof_counter(const char *name, double value);
void prof_thread_name(const char *name);
void prof_begin(const char *name);
void prof_end(void);
void prof_arg_int(const char *key, int64_t value);
void prof_arg_str(const char *key, const char *value);
void prof_get_stats(prof_stats *out);

/* ---- hot path: inline, everything else is out of line ------------------ */

typedef struct prof__rec {      /* one recorded event: 32 bytes             */
    const char *name;
    uint64_t    t1;             /* end tick, or a kind's payload            */
    uint32_t    kind;           /* 0 = region; chunks are zeroed            */
    uint32_t    aux;
    uint64_t    t0;             /* start tick; written last, never 0: the
                                   collector reads it to see a record done */
} prof__rec;

typedef struct prof__tls_t { prof__rec *cur, *end; } prof__tls_t;

extern unsigned char prof__on;  /* 1 while recording (or not yet initialised) */
extern __thread prof__tls_t prof__tls;
void prof__emit_slow(const char *name, uint64_t t0, uint64_t t1);

#define PROF__LIKELY(x)   __builtin_expect(!!(x), 1)
#define PROF__UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline uint64_t prof__ticks(void) {
#if defined(__x86_64__) && !defined(PROF_NO_TSC)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__) && !defined(PROF_NO_TSC)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    uint64_t prof__ticks_clock(void);
    return prof__ticks_clock();
#endif
}

static inline int prof__recording(void) {
    return __atomic_load_n(&prof__on, __ATOMIC_RELAXED);
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

typedef struct prof__scope { const char *name; uint64_t t0; } prof__scope;

static inline prof__scope prof__scope_begin(const char *name) {
    prof__scope s;
    s.name = name;
    s.t0 = PROF__LIKELY(prof__recording()) ? prof__ticks() : 0;
    return s;
}

static inline void prof__scope_end(prof__scope *s) {
    if (s->t0) prof__emit(s->name, s->t0, prof__ticks());
}

#ifdef __cplusplus
} /* extern "C" */

struct prof__scope_guard {
    prof__scope s;
    explicit prof__scope_guard(const char *name) : s(prof__scope_begin(name)) {}
    ~prof__scope_guard() { prof__scope_end(&s); }
    prof__scope_guard(const prof__scope_guard &) = delete;
    prof__scope_guard &operator=(const prof__scope_guard &) = delete;
};
#define PROF__SCOPE_DECL(var, name) prof__scope_guard var(name)
#else
#define PROF__SCOPE_DECL(var, name) \
    prof__scope var __attribute__((cleanup(prof__scope_end))) = prof__scope_begin(name)
#endif

#define PROF__CAT2(a, b) a##b
#define PROF__CAT(a, b) PROF__CAT2(a, b)
#define PROF__VAR(base) PROF__CAT(base, __COUNTER__)

#define PROF_INIT(cfg)        prof_init(cfg)
#define PROF_SHUTDOWN()       prof_shutdown()
#define PROF_SCOPE(name)      PROF__SCOPE_DECL(PROF__VAR(prof__scope_), name)
#define PROF_FUNCTION()       PROF_SCOPE(__func__)
#define PROF_BEGIN(name)      prof_begin(name)
#define PROF_END()            prof_end()
#define PROF_INSTANT(name)    do { if (prof__recording()) prof_instant(name); } while (0)
#define PROF_COUNTER(name, v) do { if (prof__recording()) prof_counter((name), (double)(v)); } while (0)
#define PROF_THREAD_NAME(name) prof_thread_name(name)
#define PROF_STEP()           prof_step()
#define PROF_ARG_INT(key, v)  do { if (prof__recording()) prof_arg_int((key), (int64_t)(v)); } while (0)
#define PROF_ARG_STR(key, s)  do { if (prof__recording()) prof_arg_str((key), (s)); } while (0)
#define PROF_FLOPS(n)         PROF_ARG_INT("flops", (n))
#define PROF_ALLOC(ptr, bytes) ((void)0)
#define PROF_FREE(ptr)        ((void)0)
#define PROF_SET_RANK(r, n)   ((void)0)
#define PROF_SYNC()           ((void)0)

/* ======================================================================== */
/*  Disabled: every macro is nothing                                        */
/* ======================================================================== */
#else

#define PROF_INIT(cfg)
#define PROF_SHUTDOWN()
#define PROF_SCOPE(name)
#define PROF_FUNCTION()
#define PROF_BEGIN(name)
#define PROF_END()
#define PROF_INSTANT(name)
#define PROF_COUNTER(name, v)
#define PROF_THREAD_NAME(name)
#define PROF_STEP()
#define PROF_ARG_INT(key, v)
#define PROF_ARG_STR(key, s)
#define PROF_FLOPS(n)
#define PROF_ALLOC(ptr, bytes)
#define PROF_FREE(ptr)
#define PROF_SET_RANK(r, n)
#define PROF_SYNC()

#endif /* PROF__ENABLED */
#endif /* PROF_H */
