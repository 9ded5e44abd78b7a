/* A consumer of the installed or embedded prof package: implementation and
   use in one file, enabled. Writes its trace to $PROF_OUTPUT. */
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <stddef.h>

static double work(int n) {
    PROF_FUNCTION();
    double s = 0;
    for (int i = 1; i <= n; i++) s += 1.0 / i;
    return s;
}

int main(void) {
    PROF_INIT(NULL);
    double s = 0;
    for (int step = 0; step < 3; step++) {
        {
            PROF_SCOPE("step");
            s += work(1000);
        }
        PROF_STEP();
    }
    PROF_COUNTER("sum", s);
    PROF_SHUTDOWN();
    return s > 0 ? 0 : 1;
}
