/* The writer falls behind the engine, and the engine never waits for it.
   Every step is a cycle (schedule active=1) handed to a trace-ready handler
   (the sink) that writes it; the first call blocks until the engine has made
   all its 20 steps of 2,000 regions, as a disk that stopped answering would,
   under a 1 MiB cap (about 32,000 records). So the steps return while the
   sink is stuck: if one waited for it, the sink's 30 s would run out and it
   would say so. What the cap could not hold while the writer was stuck is
   dropped and counted; the cycles written after hold the rest. check.py
   counts both.

   behind exit     5 steps, cycle 1's sink stuck until a line on stdin;
                   prints "exiting" and returns from main: exit() waits for
                   the sink (check.py sends the line once "exiting" is out)
   behind sigint   the same, and prints "ready" and waits for SIGINT, whose
                   shutdown waits for the sink (the line is sent once
                   prof.h says it is writing the trace)
   behind limit    the same with a sink stuck for good, and the writer's
                   wait (prof__wk_wait_s) 1 s: PROF_SHUTDOWN returns, says
                   what is not written; prints "shutdown returned" */
#define _POSIX_C_SOURCE 200809L         /* clock_gettime, for the sink's deadline */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern PROF_API int prof__wk_wait_s;    /* prof.h's wait for the writer at shutdown */

enum { STEPS = 20, REGIONS = 2000 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int engine_done;

static void sink(const prof_cycle *c, void *user) {
    (void)user;
    if (prof_cycle_index(c) == 1) {     /* stuck until the engine is through, 30 s at most */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 30;
        pthread_mutex_lock(&lock);
        while (!engine_done && pthread_cond_timedwait(&cv, &lock, &until) == 0) {}
        printf("sink: %s\n", engine_done ? "released after the engine's last step" : "30 s passed: a step waited");
        pthread_mutex_unlock(&lock);
    }
    char path[64];
    snprintf(path, sizeof path, "b.%d.json", prof_cycle_index(c));
    if (!prof_cycle_write_trace(c, path)) printf("sink: %s not written\n", path);
}

/* Cycle 1 waits for a line on stdin (limit: forever); each is written. */
static void slow_sink(const prof_cycle *c, void *user) {
    if (prof_cycle_index(c) == 1) {
        char line[16];
        if (user) for (;;) sleep(1);
        if (!fgets(line, sizeof line, stdin)) printf("sink: no line\n");
        printf("sink: released\n");
    }
    char path[64];
    snprintf(path, sizeof path, "s.%d.json", prof_cycle_index(c));
    if (!prof_cycle_write_trace(c, path)) printf("sink: %s not written\n", path);
    fflush(stdout);
}

static int slow(const char *mode) {
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.schedule.active = 1;
    cfg.on_trace_ready = slow_sink;
    cfg.user_data = strcmp(mode, "limit") ? NULL : (void *)1;
    if (cfg.user_data) prof__wk_wait_s = 1;
    PROF_INIT(&cfg);
    for (int s = 0; s < 5; s++) {
        for (int i = 0; i < 100; i++) { PROF_SCOPE("work"); }
        PROF_STEP();
    }
    if (cfg.user_data) {
        PROF_SHUTDOWN();
        printf("shutdown returned\n");
        fflush(stdout);
        _exit(0);                       /* the sink still holds its thread */
    }
    printf(strcmp(mode, "exit") ? "ready\n" : "exiting\n");
    fflush(stdout);
    if (strcmp(mode, "exit")) for (;;) sleep(1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1) return slow(argv[1]);
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.buffer_mb = 1;
    cfg.schedule.active = 1;
    cfg.on_trace_ready = sink;
    PROF_INIT(&cfg);
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < REGIONS; i++) { PROF_SCOPE("work"); }
        PROF_STEP();
    }
    pthread_mutex_lock(&lock);
    printf("engine: %d steps made\n", STEPS);     /* said before the sink can be released */
    fflush(stdout);
    engine_done = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&lock);
    PROF_SHUTDOWN();                    /* waits for the sink to write the rest */
    prof_stats st;
    prof_get_stats(&st);
    printf("dropped %llu behind %llu\n", (unsigned long long)st.dropped, (unsigned long long)st.behind);
    return 0;
}
