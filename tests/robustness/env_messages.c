/* Malformed environment values, with control bytes or of any length, get
   one line each that quotes them escaped and cut, with the explanation
   whole; the engine goes on and records with the defaults. */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

int main(void) {
    PROF_INIT(NULL);
    { PROF_SCOPE("work"); }
    PROF_SHUTDOWN();
    return 0;
}
