/* SIGINT and SIGTERM write the trace, then end the process as the signal's
   default action would; a crash says what is lost; a handler the engine set
   is left alone. Records 1,000 regions, prints "ready", then:

   signals wait     waits for a signal (sent by check.py)
   signals abort    abort()s
   signals segv     raises SIGSEGV (prints "sanitized" first where a
                    sanitizer owns SIGSEGV: nothing else is checked then)
   signals user     installed its own SIGINT handler before init: waits for
                    the signal, prints "user handler", returns from main */
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

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "wait";
    if (!strcmp(mode, "user")) signal(SIGINT, user_handler);
    PROF_INIT(NULL);
    for (int i = 0; i < 1000; i++) {
        PROF_SCOPE("work");
    }
    printf("ready\n");
    fflush(stdout);
    if (!strcmp(mode, "abort")) abort();
    if (!strcmp(mode, "segv")) {
        if (SANITIZED) { printf("sanitized\n"); return 0; }
        raise(SIGSEGV);
    }
    while (!got) sleep(1);              /* "wait": ended by the signal */
    printf("user handler\n");
    return 0;
}
