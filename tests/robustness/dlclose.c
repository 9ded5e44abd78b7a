/* Two copies of prof.h in one process, one of them unloaded while a thread
   that recorded into it lives on: the host (this program, with impl.c) and
   a plugin .so with its own PROF_IMPLEMENTATION. A host thread records 100
   regions through the plugin, the plugin is dlclose()d (its copy writes its
   trace), and only then does the thread exit: its TLS destructor must not
   be the unmapped plugin's. Each copy writes its own file.

   dlclose PLUGIN.so */
#define _POSIX_C_SOURCE 200809L
#include "prof.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

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
    void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!so) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    *(void **)(&plugin_work) = dlsym(so, "plugin_work");
    if (!plugin_work) return 1;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_mutex_lock(&mu);
    while (!worked) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    dlclose(so);
    pthread_mutex_lock(&mu);
    unloaded = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    printf("ok\n");
    return 0;
}
