/* SIGINT and SIGTERM write the trace, then end the process as the signal's
   default action would; a crash says what is lost; a handler the engine set
   is left alone. Records 1,000 regions, prints "ready", then:

   signals wait     waits for a signal (sent by check.py)
   signals abort    abort()s
   signals segv     raises SIGSEGV (bus, fpe, ill: SIGBUS, SIGFPE, SIGILL;
                    each prints "sanitized" first where a sanitizer may own
                    the signal: nothing else is checked then)
   signals user     installed its own SIGINT handler before init: waits for
                    the signal, prints "user handler", returns from main
   signals ignored  SIGINT ignored before init: waits (for SIGTERM)
   signals keep     cfg.keep_signals: waits for a signal
   signals second   a trace-ready handler that never returns: prints
                    "handler" from it and waits there, as the signal's
                    shutdown waits on it (for a second signal)
   signals usr2     PROF_TRIGGER=signal (check.py sets it): raises SIGUSR2
                    twice (two triggers, the handler still there for the
                    second), prints "triggered twice", shuts down, prints
                    "shut down" and raises SIGUSR2 again, which now has its
                    default action back
   signals cycles   schedule active=1: steps 0, 1, 2 (1,000, 5,000 and
                    5,000 regions) are cycles, written (prof_flush) before
                    500 regions of step 3 and a SIGSEGV */
#define _POSIX_C_SOURCE 200809L
#include "prof.h"
#include "sanitized.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void user_handler(int sig) { got = sig; }

static void stuck(const prof_cycle *c, void *user) {
    (void)c; (void)user;
    printf("handler\n");
    fflush(stdout);
    for (;;) sleep(1);
}

static void work(int n) {
    for (int i = 0; i < n; i++) {
        PROF_SCOPE("work");
    }
}

/* raise(sig) for a crash: 0 where it was raised and returned */
static int crash(int sig) {
    if (SANITIZED) { printf("sanitized\n"); return 0; }
    raise(sig);
    return 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "wait";
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (!strcmp(mode, "user")) signal(SIGINT, user_handler);
    if (!strcmp(mode, "ignored")) signal(SIGINT, SIG_IGN);
    if (!strcmp(mode, "keep")) cfg.keep_signals = 1;
    if (!strcmp(mode, "second")) cfg.on_trace_ready = stuck;
    if (!strcmp(mode, "cycles")) cfg.schedule.active = 1;
    PROF_INIT(&cfg);
    work(1000);
    printf("ready\n");
    fflush(stdout);
    if (!strcmp(mode, "abort")) abort();
    if (!strcmp(mode, "segv")) return crash(SIGSEGV);
    if (!strcmp(mode, "bus")) return crash(SIGBUS);
    if (!strcmp(mode, "fpe")) return crash(SIGFPE);
    if (!strcmp(mode, "ill")) return crash(SIGILL);
    if (!strcmp(mode, "cycles")) {
        for (int s = 1; s <= 3; s++) {
            PROF_STEP();
            if (s < 3) work(5000);
        }
        prof_flush();                   /* cycles 1 to 3 are on disk */
        work(500);
        return crash(SIGSEGV);
    }
    if (!strcmp(mode, "usr2")) {
        raise(SIGUSR2);
        raise(SIGUSR2);
        printf("triggered twice\n");
        PROF_SHUTDOWN();
        printf("shut down\n");
        fflush(stdout);
        raise(SIGUSR2);
        printf("SIGUSR2 did not end the process\n");
        return 0;
    }
    while (!got) sleep(1);              /* ended by the signal */
    printf("user handler\n");
    return 0;
}
