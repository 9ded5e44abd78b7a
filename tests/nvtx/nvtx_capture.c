/* nvtx_capture: a program whose regions call a library that speaks NVTX as
   NCCL does (fake_nccl), on two threads. check_capture.py runs it with
   NVTX_INJECTION64_PATH at libprof_nvtx.so, without it, and beside another
   tool, and reads the traces back. Built with -DPROF_NVTX too: its own
   regions also go to NVTX (the domain "prof"), and must not come back.

   nvtx_capture threads   2 workers x 5 iterations, each:
                            work > all_reduce > ncclAllReduce (payload; a mark
                            inside), work > ncclGroupEnd (int64 payload),
                            work > default_range (a mark inside)
                          main: init > ncclCommInitRank (payload), a start/end
                          range begun on main and ended by worker 1, the
                          misuses and a range left open at exit (counted)
   nvtx_capture.cpp builds the same as C++ (g++ mangles internal names: the
   note prof.h's copy carries names its table by an assembler label).

   nvtx_capture steps     6 steps on main, each: step_work > all_reduce >
                          ncclAllReduce; PROF_SCHEDULE picks which record
   nvtx_capture fork      a collective before a fork and one after; the child,
                          forked with a range open on another thread, makes
                          NVTX calls of every kind and exits: it records
                          nothing, says nothing, never waits */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#include "prof.h"

#include "../robustness/sanitized.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif
void fake_nccl_setup(void);
void fake_nccl_comm_init(int nranks, int rank);
void fake_nccl_all_reduce(size_t bytes, int max);
void fake_nccl_group_end(int64_t n);
void fake_default(void);
uint64_t fake_start(void);
void fake_end(uint64_t id);
void fake_name_thread(const char *name);
void fake_misuse(void);
void fake_leave_open(void);
void fake_wide(void);
#ifdef __cplusplus
}
#endif

static uint64_t async_id;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started = PTHREAD_COND_INITIALIZER;
static int have_id;

static void *worker(void *arg) {
    int w = (int)(intptr_t)arg;
    fake_name_thread(w ? "nccl-worker-1" : "nccl-worker-0");
    for (int i = 0; i < 5; i++) {
        PROF_SCOPE("work");
        {
            PROF_SCOPE("all_reduce");
            fake_nccl_all_reduce((size_t)(w + 1) << 20, w);
        }
        fake_nccl_group_end(i);
        fake_default();
    }
    if (w == 1) {                       /* the range main started */
        pthread_mutex_lock(&lock);
        while (!have_id) pthread_cond_wait(&started, &lock);
        pthread_mutex_unlock(&lock);
        PROF_SCOPE("end_async");
        fake_end(async_id);
    }
    return NULL;
}

int main(int argc, char **argv) {
    PROF_INIT(NULL);
    fake_nccl_setup();
    if (argc > 1 && !strcmp(argv[1], "fork")) {
        { PROF_SCOPE("before_fork"); fake_nccl_all_reduce(64, 0); }
        uint64_t open = fake_start();   /* open across the fork */
        pid_t pid = fork();
        if (pid == 0) {
            fake_nccl_all_reduce(64, 1);
            fake_default();
            fake_end(fake_start());
            fake_end(open);
#if SANITIZED_ADDRESS
            /* LeakSanitizer's check at exit() hangs in the child of a
               multithreaded fork (robust_fork): the same shutdown, then _exit */
            PROF_SHUTDOWN();
            _exit(0);
#else
            exit(0);
#endif
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) return 1;
        { PROF_SCOPE("after_fork"); fake_nccl_all_reduce(64, 0); }
        fake_end(open);
        PROF_SHUTDOWN();
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "steps")) {
        for (int s = 0; s < 6; s++) {
            {
                PROF_SCOPE("step_work");
                PROF_SCOPE("all_reduce");
                fake_nccl_all_reduce(4096, 0);
            }
            PROF_STEP();
        }
        PROF_SHUTDOWN();
        return 0;
    }
    {
        PROF_SCOPE("init");
        fake_nccl_comm_init(4, 1);
    }
    pthread_t t[2];
    for (int w = 0; w < 2; w++) pthread_create(&t[w], NULL, worker, (void *)(intptr_t)w);
    {
        PROF_SCOPE("start_async");
        uint64_t id = fake_start();
        pthread_mutex_lock(&lock);
        async_id = id;
        have_id = 1;
        pthread_cond_signal(&started);
        pthread_mutex_unlock(&lock);
    }
    fake_misuse();
    for (int w = 0; w < 2; w++) pthread_join(t[w], NULL);
    fake_wide();
    fake_leave_open();
    PROF_SHUTDOWN();
    return 0;
}
