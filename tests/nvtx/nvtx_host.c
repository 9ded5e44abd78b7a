/* nvtx_host: a program with no prof.h (a Python interpreter's shape) that
   loads nvtx_plugin RTLD_LOCAL, runs it, closes it, and calls NCCL's like
   once more: the plugin's prof.h records both (it stays loaded for
   libprof_nvtx: NODELETE), and nothing touches unmapped code. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

void fake_nccl_all_reduce(size_t bytes, int max);

int main(int argc, char **argv) {
    void *h = dlopen(argc > 1 ? argv[1] : "libnvtx_plugin.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "nvtx_host: %s\n", dlerror()); return 2; }
    void (*run)(void) = (void (*)(void))dlsym(h, "plugin_run");
    if (!run) return 2;
    run();
    dlclose(h);
    fake_nccl_all_reduce(512, 1);       /* after the plugin's dlclose */
    return 0;
}
