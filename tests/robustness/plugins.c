/* Several libraries, each with its own copy of prof.h, in one process: an
   engine with two or more extension modules that embed it. Each copy's
   thread-local storage is small enough for glibc's static reserve (a -fPIC
   copy's TLS is initial-exec, and so all of it is taken from there when the
   library is loaded). Each plugin is loaded from 4 copies of its file
   (dlopen of one path twice gives the same object); the copy loaded n-th
   records 10n regions and writes its own trace when it is unloaded.

   plugins PLUGIN.so...   (robust_plugin) */
#define _POSIX_C_SOURCE 200809L
#include "prof.h"

#include <dlfcn.h>
#include <stdio.h>

enum { COPIES = 4, MOST = 4 * COPIES };

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out)) ok = 0;
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc - 1 > MOST / COPIES) return 2;
    { PROF_SCOPE("host"); }
    void *so[MOST];
    int n = 0;
    for (int a = 1; a < argc; a++) {
        for (int i = 0; i < COPIES; i++, n++) {
            char path[64];
            snprintf(path, sizeof path, "./plugin_%d.so", n + 1);
            if (!copy_file(argv[a], path)) { fprintf(stderr, "cannot copy %s to %s\n", argv[a], path); return 1; }
            if (!(so[n] = dlopen(path, RTLD_NOW | RTLD_LOCAL))) { fprintf(stderr, "%s\n", dlerror()); return 1; }
            void (*work)(int);
            *(void **)(&work) = dlsym(so[n], "plugin_work");
            if (!work) return 1;
            work(10 * (n + 1));
            remove(path);
        }
    }
    for (int i = 0; i < n; i++) dlclose(so[i]);
    printf("ok\n");
    return 0;
}
