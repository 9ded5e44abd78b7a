/* Two copies of prof.h in one process, one of them unloaded while a thread
   that recorded into it lives on: the host (this program, with impl.c) and
   a plugin .so with its own PROF_IMPLEMENTATION. A host thread records 100
   regions through the plugin, the plugin is dlclose()d (its copy writes its
   trace), and only then does the thread exit: its TLS destructor must not
   be the unmapped plugin's. Each copy writes its own file. The plugin's
   own threads (with PROF_WATCHDOG, its watchdog too) are joined before
   dlclose returns: the process's threads are counted before dlopen, while
   the plugin is loaded, and after dlclose (after the moment a thread that
   pthread_join has seen end takes to leave /proc/self/task).

   dlclose PLUGIN.so    prints "threads H loaded L unloaded U", then "ok" */
#define _POSIX_C_SOURCE 200809L
#include "prof.h"

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static int threads(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void (*plugin_work)(int);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int worked, unloaded;

static void *worker(void *arg) {
    (void)arg;
    plugin_work(100);
    { PROF_SCOPE("host_thread"); }
    pthread_mutex_lock(&mu);
    worked = 1;
    pthread_cond_broadcast(&cv);
    while (!unloaded) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;                        /* exits after the plugin is gone */
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    for (int i = 0; i < 5; i++) {
        PROF_SCOPE("host");
    }
    int before = threads();
    void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!so) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    *(void **)(&plugin_work) = dlsym(so, "plugin_work");
    if (!plugin_work) return 1;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_mutex_lock(&mu);
    while (!worked) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    int loaded = threads();
    dlclose(so);
    int after = threads();              /* the worker's and the host's; 5 s for the joined to leave /proc */
    struct timespec ms = { 0, 1000000 };
    for (int i = 0; i < 5000 && after > before + 1; i++) {
        nanosleep(&ms, NULL);
        after = threads();
    }
    printf("threads %d loaded %d unloaded %d\n", before, loaded, after);
    pthread_mutex_lock(&mu);
    unloaded = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    printf("ok\n");
    return 0;
}
