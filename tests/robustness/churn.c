/* Thread churn: N short-lived threads, one after another, each recording R
   regions (3 by default), in one cycle (no schedule). Every region of every
   thread must be in the cycle, and an exited thread's memory must come back:
   what the cap counts is what was recorded, not a chunk per thread. Threads
   of more than a chunk (R > 2047) go the collector's way. Prints what the
   cycle held, the drops, and the peak RSS.

   churn [THREADS [R]]   (default 5000 3) */
#include "prof.h"
#include "sanitized.h"   /* a sanitizer's own memory makes RSS meaningless */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static size_t regions, threads_seen;
static long per_thread = 3;

static void *worker(void *arg) {
    (void)arg;
    for (long i = 0; i < per_thread; i++) {
        PROF_SCOPE("churn");
    }
    return NULL;
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Counts the "churn" regions and the distinct threads they came from. */
static void on_ready(const prof_cycle *c, void *user) {
    (void)user;
    size_t n = prof_cycle_event_count(c), k = 0;
    long *tids = (long *)malloc((n + 1) * sizeof *tids);
    prof_event e;
    for (size_t i = 0; i < n; i++)
        if (prof_cycle_event(c, i, &e) && e.kind == PROF_EVENT_REGION && !strcmp(e.name, "churn")) tids[k++] = e.tid;
    qsort(tids, k, sizeof *tids, cmp_long);
    for (size_t i = 0; i < k; i++)
        if (i == 0 || tids[i] != tids[i - 1]) threads_seen++;
    regions += k;
    free(tids);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 5000;
    if (argc > 2) per_thread = atol(argv[2]);
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.on_trace_ready = on_ready;
    PROF_INIT(&cfg);
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, NULL) != 0) { perror("pthread_create"); return 1; }
        pthread_join(t, NULL);
    }
    PROF_SHUTDOWN();
    prof_stats st;
    prof_get_stats(&st);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("regions %zu threads %zu dropped %llu sanitized %d maxrss_mb %ld\n", regions, threads_seen,
           (unsigned long long)st.dropped, SANITIZED, ru.ru_maxrss / 1024);
    return 0;
}
