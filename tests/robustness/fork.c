/* fork() in a profiled process, while other threads record and hold the
   profiler's lock (a refill, prof_get_stats). Every child must exit (never
   hang in exit()'s prof_shutdown) and record nothing; the parent's trace
   holds exactly the parent's regions, at the path it asked for.

   fork late    100 forks (3 under TSan, where each takes seconds) after
                init, from a process recording on 2 threads; prints
                "forks F hung H busy N dropped D"
   fork early   one fork before init: parent and child each record one
                region, and the child's descriptors are its own (stdin
                stays open); prints "child PID"
   fork exec    after init, with a thread recording, the child exec()s
                this program as "fork fresh": a fresh process, which
                records one region and raises SIGTERM, which writes its
                trace and ends it; prints "child PID status S" (S: the
                signal that ended it, or 100 + its exit status) */
#define _POSIX_C_SOURCE 200809L
#include "prof.h"
#include "sanitized.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int stop;
static long busy;

static void *recorder(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && busy < 20000) {
        {
            PROF_SCOPE("busy");
            busy++;
        }
        sched_yield();                  /* recording through the forks, not before them */
    }
    return NULL;
}

static void *stats(void *arg) {
    (void)arg;
    prof_stats st;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        prof_get_stats(&st);
        sched_yield();                  /* or the lock, unfair, starves fork()'s prepare handler */
    }
    return NULL;
}

/* Waits up to 10 s for the child; a child still there then is hung. */
static int hung(pid_t pid) {
    struct timespec ms = { 0, 1000000 };
    for (int i = 0; i < 10000; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        nanosleep(&ms, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return 1;
}

static int late(void) {
    PROF_INIT(NULL);
    pthread_t r, s;
    pthread_create(&r, NULL, recorder, NULL);
    pthread_create(&s, NULL, stats, NULL);
    int nhung = 0, forks = SANITIZED_THREAD ? 3 : 100;
    for (int i = 0; i < forks; i++) {
        pid_t pid = fork();
        if (pid == 0) {                 /* uses the profiler, then exit(): atexit runs */
            static char x[8];
            {
                PROF_SCOPE("child");
                PROF_ALLOC(x, sizeof x);
                PROF_FREE(x);
                PROF_STEP();
            }
#if SANITIZED_ADDRESS
            /* LeakSanitizer's check at exit() hangs in the child of a
               multithreaded fork (it cannot stop threads that are not
               there): the same shutdown, then _exit */
            PROF_SHUTDOWN();
            _exit(0);
#else
            exit(0);
#endif
        }
        nhung += pid < 0 || hung(pid);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(r, NULL);
    pthread_join(s, NULL);
    PROF_SHUTDOWN();
    prof_stats st;
    prof_get_stats(&st);
    printf("forks %d hung %d busy %ld dropped %llu\n", forks, nhung, busy, (unsigned long long)st.dropped);
    return 0;
}

/* fd 0's file, which a child must still have: the profiler's fork handler
   closes only descriptors of its own */
static int stdin_is(const struct stat *before) {
    struct stat now;
    return fstat(0, &now) == 0 && now.st_dev == before->st_dev && now.st_ino == before->st_ino;
}

static int early(void) {
    struct stat in;
    if (fstat(0, &in) != 0 && (open("/dev/null", O_RDONLY) != 0 || fstat(0, &in) != 0)) return 2;
    pid_t pid = fork();
    if (pid == 0) {
        { PROF_SCOPE("child"); }
        return stdin_is(&in) ? 0 : 3;   /* exit: the child's own trace */
    }
    { PROF_SCOPE("parent"); }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child %ld\n", (long)pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int exec_child(const char *self) {
    PROF_INIT(NULL);
    pthread_t r;
    pthread_create(&r, NULL, recorder, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = { (char *)"robust_fork", (char *)"fresh", NULL };
        execv(self, args);
        _exit(99);
    }
    { PROF_SCOPE("parent"); }
    int status = 0, nhung = 0;
    struct timespec ms = { 0, 1000000 };
    for (int i = 0; i < 20000 && waitpid(pid, &status, WNOHANG) != pid; i++) nanosleep(&ms, NULL);
    if (kill(pid, 0) == 0) {            /* still there after 20 s: SIGTERM did not end it */
        nhung = 1;
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(r, NULL);
    printf("child %ld status %d%s\n", (long)pid, WIFSIGNALED(status) ? WTERMSIG(status) : 100 + WEXITSTATUS(status),
           nhung ? " hung" : "");
    return 0;
}

/* The exec()ed child: a process of its own, as if started afresh. */
static int fresh(void) {
    { PROF_SCOPE("fresh"); }
    raise(SIGTERM);                     /* its handler writes the trace, then ends the process */
    sleep(20);                          /* ended by SIGTERM before this */
    return 3;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "early")) return early();
    if (argc > 1 && !strcmp(argv[1], "exec")) return exec_child(argv[0]);
    if (argc > 1 && !strcmp(argv[1], "fresh")) return fresh();
    return late();
}
