/* Regions that a loader thread begins in one step and ends in the next
   (10 of them, one per step): no region disappears. In the trace whose
   window ends while it runs, a region is drawn to the window's end with
   args.open; in one whose window began after it, from the window's start
   with args.clipped. check.py runs it under two schedules. Prints the counts
   prof_get_stats has. */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>

enum { REGIONS = 10 };
static int begin_go, begun, end_go, ended;

static void wait_for(int *flag, int value) {
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != value) sched_yield();
}

static void *loader(void *arg) {
    (void)arg;
    PROF_THREAD_NAME("loader");
    for (int i = 1; i <= REGIONS; i++) {
        wait_for(&begin_go, i);
        PROF_BEGIN("load");                 /* in step i - 1 ... */
        __atomic_store_n(&begun, i, __ATOMIC_RELEASE);
        wait_for(&end_go, i);
        PROF_END();                         /* ... and ended in step i */
        __atomic_store_n(&ended, i, __ATOMIC_RELEASE);
    }
    return NULL;
}

int main(void) {
    pthread_t t;
    PROF_INIT(NULL);
    pthread_create(&t, NULL, loader, NULL);
    for (int i = 1; i <= REGIONS; i++) {
        {
            PROF_SCOPE("step_work");
            __atomic_store_n(&begin_go, i, __ATOMIC_RELEASE);
            wait_for(&begun, i);
        }
        PROF_STEP();
        __atomic_store_n(&end_go, i, __ATOMIC_RELEASE);
        wait_for(&ended, i);
    }
    PROF_STEP();
    pthread_join(t, NULL);
    PROF_SHUTDOWN();
    prof_stats st;
    prof_get_stats(&st);
    printf("clipped %llu lost %llu\n", (unsigned long long)st.clipped, (unsigned long long)st.lost_past_end);
    return 0;
}
