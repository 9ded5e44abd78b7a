/* run.c - prof run [--] CMD [ARGS...]: runs CMD with prof.h as its NVTX
   tool. NVTX_INJECTION64_PATH is set to libprof_nvtx.so (prof_nvtx.c), so
   that every NVTX range, mark and thread name of every library in CMD
   (NCCL's collectives with their sizes, cuDF's, an engine's own) goes into
   its trace: into the program's prof.h where it has one, else into the
   library's own recorder (PROF_OUTPUT and the other variables apply).

   The library: $PROF_NVTX_LIB, else libprof_nvtx.so beside prof (the
   build puts it there), else in ../lib beside it (an install). When
   NVTX_INJECTION64_PATH names another tool already (Nsight Systems sets it
   to its own), one line says so and CMD runs as it is: prof.h leaves NVTX
   to that tool. CMD replaces prof (exec): its exit status is the run's. */
#define _XOPEN_SOURCE 700      /* realpath, readlink, setenv */
#include "tool.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PROF_NVTX_LIBDIR
#define PROF_NVTX_LIBDIR "lib"
#endif

static const char run_lib_name[] = "libprof_nvtx.so";

/* The library's path into out[PATH_MAX]: 1 when found. */
static int run_find_lib(char *out) {
    const char *env = getenv("PROF_NVTX_LIB");
    if (env && *env) return realpath(env, out) != NULL;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return 0;
    slash[1] = 0;
    static const char *const where[] = { "", "../" PROF_NVTX_LIBDIR "/", "../lib/", "../lib64/" };
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        char p[PATH_MAX + 64];
        snprintf(p, sizeof p, "%s%s%s", exe, where[i], run_lib_name);
        if (realpath(p, out) && access(out, R_OK) == 0) return 1;
    }
    return 0;
}

int cmd_run(int argc, char **argv) {
    if (argc > 0 && !strcmp(argv[0], "--")) argc--, argv++;
    if (argc < 1) die("usage: prof run [--] CMD [ARGS...]");
    char lib[PATH_MAX];
    const char *named = getenv("NVTX_INJECTION64_PATH");
    int found = run_find_lib(lib);
    if (named && *named) {
        char have[PATH_MAX];
        if (!found || !realpath(named, have) || strcmp(have, lib))
            note("NVTX_INJECTION64_PATH names another tool (%s): prof.h leaves NVTX to it", named);
    } else if (!found) {
        const char *env = getenv("PROF_NVTX_LIB");
        if (env && *env) die("PROF_NVTX_LIB=%s: %s", env, strerror(errno));
        die("%s not found beside prof or in ../%s (set PROF_NVTX_LIB to it)", run_lib_name, PROF_NVTX_LIBDIR);
    } else if (setenv("NVTX_INJECTION64_PATH", lib, 1) != 0) {
        die("cannot set NVTX_INJECTION64_PATH: %s", strerror(errno));
    }
    fflush(NULL);
    execvp(argv[0], argv);
    die("cannot run %s: %s", argv[0], strerror(errno));
}
