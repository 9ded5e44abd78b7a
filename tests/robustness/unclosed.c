/* 300 PROF_BEGINs left open by early returns, then 1,000 balanced
   BEGIN/END pairs on the same thread: every balanced region is recorded
   (the open ones cost only themselves), and the 300 are reported at the
   cycle's end by name and count. Prints what prof_get_stats counted. */
/* the implementation is impl.c, compiled once for every case */
#include "prof.h"

#include <stdio.h>

static int parse(int i) {
    PROF_BEGIN("leaky_parse");
    if (i >= 0) return i;                       /* the early return that skips PROF_END */
    PROF_END();
    return -1;
}

int main(void) {
    PROF_INIT(NULL);
    for (int i = 0; i < 300; i++) parse(i);
    for (int i = 0; i < 1000; i++) {
        PROF_BEGIN("balanced");
        PROF_END();
    }
    PROF_SHUTDOWN();
    prof_stats st;
    prof_get_stats(&st);
    printf("unclosed %llu dropped %llu\n", (unsigned long long)st.unclosed, (unsigned long long)st.dropped);
    return 0;
}
