/* A trace that cannot be written whole (a full disk, a file size limit)
   leaves the good trace that was at its path before, no partial file, and
   one line saying why; the engine goes on. check.py runs this twice: once
   freely, once under a file size limit. */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

#include <stdio.h>

int main(void) {
    PROF_INIT(NULL);
    for (int i = 0; i < 20000; i++) { PROF_SCOPE("work"); }    /* about 2 MB of trace */
    PROF_SHUTDOWN();
    puts("engine still running");
    return 0;
}
