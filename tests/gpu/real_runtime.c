/* prof_cuda.h (prof_hip.h with -DGPU_TEST_HIP) linked to the real runtime.
   Without a GPU, as on the test machines, the engine must run on: one line
   says GPU timing is off, every CPU region is in the trace, no GPU region
   is. With a GPU, the GPU regions must be there. check_gpu.py checks which
   by the device count written to truth.jsonl. real_cupti asks for kernel
   capture too: without a device it changes nothing (CUPTI is never loaded:
   the run ends with no libcupti in its memory map, which truth.jsonl says);
   with one, kernels come through the toolkit's libcupti. */
#ifndef PROF_TEST_SHARED_IMPL   /* else tests/impl.c's, linked in (tests/CMakeLists.txt) */
#define PROF_IMPLEMENTATION
#endif
#ifdef GPU_TEST_HIP
#include "prof_hip.h"
#define RT(name) hip##name
#define BACKEND "hip"
#else
#include "prof_cuda.h"
#define RT(name) cuda##name
#define BACKEND "cuda"
#endif

#include "gpu_test.h"

/* Whether a libcupti is in this process's memory map (loaded, and not
   unloaded since). */
static int cupti_mapped(void) {
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && !found && fgets(line, sizeof line, f)) found = strstr(line, "/libcupti") != NULL;
    if (f) fclose(f);
    return found;
}

static int run(const char *name) {
    if (strcmp(name, "real") && strcmp(name, "real_cupti")) return 2;
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "real.json";
    cfg.quiet = 1;
    cfg.cupti = !strcmp(name, "real_cupti");   /* kernel capture asked for: CUDA's libcupti */
    PROF_INIT(&cfg);
    for (int step = 0; step < 3; step++) {
        PROF_BEGIN("cpu");
        PROF_END();
        { PROF_GPU_SCOPE("gpu_scope", 0); }
        PROF_GPU_BEGIN("gpu_explicit", 0);
        PROF_GPU_END(0);
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    int n = 0;
    if (RT(GetDeviceCount)(&n) != RT(Success)) n = 0;
    truth("{\"devices\": %d, \"cupti_mapped\": %d}", n, cupti_mapped());
    return 0;
}

int main(int argc, char **argv) { return gpu_test_main(argc, argv, BACKEND, run); }
