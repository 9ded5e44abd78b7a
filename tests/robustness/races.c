/* Misuse the sanitizers must find clean: two threads call PROF_STEP at once
   while two others record, then main exit()s while one still steps (exit's
   prof_shutdown meets a step). With PROF_SCHEDULE=active=1 each step saves
   a cycle, so writers, collection and calibration run concurrently. */
#include "prof.h"

#include <pthread.h>
#include <stdlib.h>

static int stop;

/* arg NULL: 50 steps; else steps until main is exiting (at most 100,000) */
static void *stepper(void *arg) {
    for (int i = 0; arg ? !__atomic_load_n(&stop, __ATOMIC_RELAXED) && i < 100000 : i < 50; i++) {
        PROF_SCOPE("step_work");
        PROF_STEP();
    }
    return NULL;
}

static void *recorder(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        PROF_SCOPE("record");
    }
    return NULL;
}

int main(void) {
    pthread_t s[2], r[2];
    for (int i = 0; i < 2; i++) pthread_create(&r[i], NULL, recorder, NULL);
    pthread_create(&s[0], NULL, stepper, NULL);
    pthread_create(&s[1], NULL, stepper, &stop);
    pthread_detach(s[1]);
    for (int i = 0; i < 2; i++) pthread_join(r[i], NULL);
    pthread_join(s[0], NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    exit(0);                            /* s[1] may still be stepping */
}
