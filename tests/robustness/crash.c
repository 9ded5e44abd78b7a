/* A crash prints what the crashing thread is inside (and the other threads,
   when the profiler's lock is free), then the previous handler runs: the
   engine's, with the signal's own siginfo, or the default action. It links
   the implementation built with POSIX features, so prof.h installs its
   handler with sigaction and sits in front of any handler (signals.c
   covers strict C, where it takes only signals left at the default), and
   reads its lock through PROF_INTERNALS.

   crash nested    the main thread faults inside train_step > forward >
                   layer_3 (a PROF_SCOPE_DYN) > matmul, while a loader
                   thread waits inside load_batch > read_file
   crash deep      faults 100 regions deep: the outermost 64 are kept
   crash chained   as nested, but the engine set a SIGSEGV handler before
                   init: it prints "engine handler: fault at 0x10" and
                   exits with 42
   crash busy      as nested, while another thread holds the profiler's
                   lock for 10 ms from before the fault (as the profiler's
                   own threads do for moments): the report waits for it
   Prints "sanitized" and exits where a sanitizer owns SIGSEGV. */
#define _POSIX_C_SOURCE 200809L
#define PROF_INTERNALS                  /* prof__lock */
#include "prof.h"
#include "sanitized.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int loader_inside;

static void *loader(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("loader");
    PROF_SCOPE("load_batch");
    PROF_SCOPE("read_file");
    pthread_mutex_lock(&lock);
    loader_inside = 1;
    pthread_cond_signal(&cv);
    for (;;) pthread_cond_wait(&cv, &lock);     /* until the process dies */
    return NULL;
}

static int holding;

static void *holder(void *arg) {
    (void)arg;
    pthread_mutex_lock(&prof__lock);
    pthread_mutex_lock(&lock);
    holding = 1;
    pthread_cond_broadcast(&cv);        /* the loader waits on it too: it waits again */
    pthread_mutex_unlock(&lock);
    struct timespec ms10 = { 0, 10000000 };    /* the report waits up to 100 ms */
    nanosleep(&ms10, NULL);
    pthread_mutex_unlock(&prof__lock);
    return NULL;
}

static volatile uintptr_t bad_address = 0x10;     /* volatile: the compiler cannot see the fault coming */

static void fault(void) { *(volatile int *)bad_address = 1; }

static void deep(int n) {
    PROF_SCOPE("level");
    if (n > 1) deep(n - 1);
    else fault();
}

static void engine_handler(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    char m[64];
    int n = snprintf(m, sizeof m, "engine handler: fault at %p\n", si->si_addr);
    if (write(1, m, (size_t)n) < 0) {}
    _exit(42);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "nested";
    if (SANITIZED) {
        printf("sanitized\n");
        return 0;
    }
    if (!strcmp(mode, "chained")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = engine_handler;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
    }
    PROF_INIT(NULL);
    PROF_THREAD_NAME("main");
    if (!strcmp(mode, "deep")) deep(100);
    pthread_t t;
    pthread_create(&t, NULL, loader, NULL);
    pthread_mutex_lock(&lock);
    while (!loader_inside) pthread_cond_wait(&cv, &lock);
    pthread_mutex_unlock(&lock);
    if (!strcmp(mode, "busy")) {
        pthread_create(&t, NULL, holder, NULL);
        pthread_mutex_lock(&lock);
        while (!holding) pthread_cond_wait(&cv, &lock);
        pthread_mutex_unlock(&lock);
    }
    PROF_SCOPE("train_step");
    PROF_SCOPE("forward");
    char layer[16];
    snprintf(layer, sizeof layer, "layer_%d", 3);
    PROF_SCOPE_DYN(layer);
    PROF_SCOPE("matmul");
    fault();
    return 0;
}
