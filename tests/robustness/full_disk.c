/* A trace that cannot be written whole (a full disk, a file size limit)
   leaves the good trace that was at its path before, no partial file, and
   one line saying why; the engine goes on. check.py runs this twice: once
   freely, once under a file size limit.

   full_disk steps   20 steps of 2,000 regions, streamed when PROF_OUTPUT is
                     a .pftrace: under a limit, a part that fails is cut
                     off, and the file keeps the steps before it */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    PROF_INIT(NULL);
    if (argc > 1 && !strcmp(argv[1], "steps")) {
        for (int s = 0; s < 20; s++) {
            for (int i = 0; i < 2000; i++) { PROF_SCOPE("work"); }
            PROF_STEP();
        }
    } else {
        for (int i = 0; i < 20000; i++) { PROF_SCOPE("work"); }    /* about 2 MB of trace */
    }
    PROF_SHUTDOWN();
    puts("engine still running");
    return 0;
}
