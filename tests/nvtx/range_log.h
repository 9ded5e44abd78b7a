/* range_log.h - what the test tools of tests/nvtx (an NVTX tool, a roctx)
   saw: per range name its pushes, the pops, the deepest nesting on a
   thread; written to the file $VAR names when the program exits. */
#ifndef RANGE_LOG_H
#define RANGE_LOG_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RANGE_NAMES = 256 };
static struct { char name[64]; long pushes; } range_seen[RANGE_NAMES];
static int range_nseen, range_deepest;
static long range_pops, range_unmatched;
static __thread int range_depth;
static pthread_mutex_t range_lock = PTHREAD_MUTEX_INITIALIZER;

/* A push of the range `key`; the depth before it. */
static int range_push(const char *key) {
    pthread_mutex_lock(&range_lock);
    int i = 0;
    while (i < range_nseen && strcmp(range_seen[i].name, key)) i++;
    if (i == range_nseen && range_nseen < RANGE_NAMES)
        snprintf(range_seen[range_nseen++].name, sizeof range_seen[0].name, "%s", key);
    if (i < range_nseen) range_seen[i].pushes++;
    if (++range_depth > range_deepest) range_deepest = range_depth;
    pthread_mutex_unlock(&range_lock);
    return range_depth - 1;
}

/* A pop; the depth after it. */
static int range_pop(void) {
    pthread_mutex_lock(&range_lock);
    range_pops++;
    if (range_depth == 0) range_unmatched++;
    else range_depth--;
    pthread_mutex_unlock(&range_lock);
    return range_depth;
}

/* The log, after `head` lines the tool adds (NULL: none). */
static void range_report(const char *var, void (*head)(FILE *)) {
    const char *path = getenv(var);
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    if (head) head(f);
    for (int i = 0; i < range_nseen; i++) fprintf(f, "range %s %ld\n", range_seen[i].name, range_seen[i].pushes);
    fprintf(f, "pops %ld unmatched %ld deepest %d\n", range_pops, range_unmatched, range_deepest);
    fclose(f);
}

#endif
