/* PROF_ALLOC of a size no allocation can have, (size_t)-1 say, is refused
   with one line; it never counts as -1 byte. Prints the host total. */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

#include <stdint.h>
#include <stdio.h>

int main(void) {
    static char a[64], b[64];
    PROF_INIT(NULL);
    PROF_ALLOC(a, 64);
    PROF_ALLOC(b, (size_t)-1);
    PROF_ALLOC(b, (size_t)PTRDIFF_MAX + 1);
    printf("allocated %lld\n", (long long)prof_mem_allocated(-1));
    PROF_FREE(a);
    PROF_SHUTDOWN();
    return 0;
}
