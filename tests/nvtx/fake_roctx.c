/* fake_roctx: roctx's two range calls, as libroctx64 exports them, for the
   suite (Debian ships no roctracer). It counts what -DPROF_ROCTX pushes and
   writes it to $FAKE_ROCTX_LOG at exit, as fake_tool.c does for NVTX:
   per range name its pushes, the pops, the deepest nesting per thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NAMES = 256 };
static struct { char name[64]; long pushes; } seen[NAMES];
static int nseen, deepest;
static long pops, unmatched;
static __thread int depth;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int roctxRangePushA(const char *message);
int roctxRangePop(void);

int roctxRangePushA(const char *message) {
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < nseen && strcmp(seen[i].name, message)) i++;
    if (i == nseen && nseen < NAMES) snprintf(seen[nseen++].name, sizeof seen[0].name, "%s", message);
    if (i < nseen) seen[i].pushes++;
    if (++depth > deepest) deepest = depth;
    pthread_mutex_unlock(&lock);
    return depth - 1;
}

int roctxRangePop(void) {
    pthread_mutex_lock(&lock);
    pops++;
    if (depth == 0) unmatched++;
    else depth--;
    pthread_mutex_unlock(&lock);
    return depth;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("FAKE_ROCTX_LOG");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    for (int i = 0; i < nseen; i++) fprintf(f, "range %s %ld\n", seen[i].name, seen[i].pushes);
    fprintf(f, "pops %ld unmatched %ld deepest %d\n", pops, unmatched, deepest);
    fclose(f);
}
