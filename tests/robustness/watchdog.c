/* A hang: a worker blocks forever inside a region while the main thread goes
   on without stepping. With PROF_WATCHDOG=1 and PROF_FLIGHT=5 the watchdog
   names the region and the thread on stderr and dumps the ring, once; the
   main thread is never stopped.

   Steps 0 to 19 take about 2 ms each: the main thread works ("host_work",
   asleep) and lets the worker through one "collective" > "wait_peer" per
   step. At step 20 the worker waits for a step that never comes; the main
   thread keeps working, looks for the dump (t.hang-20.json) every
   millisecond until it is there, then works 1.5 s more (no second dump
   for the same stall) and prints
     dump after S.SSS s, main went on N
   S: from its last PROF_STEP to the dump's file; N: regions it recorded
   after the dump appeared. Without PROF_FLIGHT there is no dump: it looks
   instead for the watchdog's report in PROF_LOG's file, and S is -1. */
#define _POSIX_C_SOURCE 200809L
#include "prof.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int posted;                      /* steps the worker may pass */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The main thread's work: a region that lasts `seconds`, asleep (the
   watchdog's question is whether the thread is stopped, not whether it
   computes; a spin would take a CPU from the tests beside this one). */
static void work(double seconds) {
    PROF_SCOPE("host_work");
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    long long ns = end.tv_nsec + (long long)(seconds * 1e9);
    end.tv_sec += (time_t)(ns / 1000000000);
    end.tv_nsec = (long)(ns % 1000000000);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR) {}
}

static void *worker(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("allreduce");
    for (int i = 0;; i++) {
        PROF_SCOPE("collective");
        PROF_SCOPE("wait_peer");
        pthread_mutex_lock(&lock);
        while (posted <= i) pthread_cond_wait(&cv, &lock);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void) {
    PROF_INIT(NULL);
    PROF_THREAD_NAME("main");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    for (int s = 0; s < 20; s++) {
        work(0.002);
        pthread_mutex_lock(&lock);
        posted++;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&lock);
        PROF_STEP();
    }
    double last_step = now_s(), dumped = 0;
    const char *log = getenv("PROF_FLIGHT") ? NULL : getenv("PROF_LOG");
    for (int spoke = 0; !dumped && !spoke;) {   /* as long as it takes: ctest's timeout is the bound */
        work(0.001);
        if (!log) {
            if (access("t.hang-20.json", F_OK) == 0) dumped = now_s();
            continue;
        }
        char line[512];
        FILE *f = fopen(log, "r");
        while (f && !spoke && fgets(line, sizeof line, f)) spoke = strstr(line, "prof: watchdog: ") == line;
        if (f) fclose(f);
    }
    int went_on = 0;
    for (double end = now_s() + 1.5; now_s() < end; went_on++) work(0.001);
    printf("dump after %.3f s, main went on %d\n", dumped ? dumped - last_step : -1.0, went_on);
    fflush(stdout);
    PROF_SHUTDOWN();
    return 0;
}
