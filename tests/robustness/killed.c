/* A run killed with SIGKILL: nothing of prof.h runs after the kill, so what
   is in the trace is what was on disk. Streams a Perfetto trace (PROF_OUTPUT
   *.pftrace): 200 regions (100 with an argument) per step, and a line on
   stdout once each step's part is appended (prof_flush). check.py kills it
   after step 5's line, at a point in whatever step it has reached. The run
   stops recording after step 49 and waits to be killed: the file, and the
   time check.py takes to read it and 40 cuts of it, stay bounded however far
   the run got ahead of the reader (a loaded machine). */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

#include <stdio.h>
#include <unistd.h>

int main(void) {
    PROF_INIT(NULL);
    PROF_THREAD_NAME("trainer");
    for (int step = 0; step < 50; step++) {
        for (int i = 0; i < 100; i++) {
            PROF_SCOPE("forward");
            PROF_ARG_INT("i", i);
            { PROF_SCOPE("matmul"); }
        }
        PROF_STEP();
        prof_flush();                   /* its part is on disk before the line says so */
        printf("step %d\n", step);
        fflush(stdout);
    }
    for (;;) pause();                   /* until the kill */
}
