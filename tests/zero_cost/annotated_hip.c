/* annotated_cuda.c on HIP: the host side of a small HIP training engine
   (its kernels are compiled by hipcc in another file and reached through
   launch_* functions), annotated with every macro of prof_hip.h, and built
   by the C or C++ compiler with HIP's headers (check.sh defines
   __HIP_PLATFORM_AMD__, as an engine's build does). Compiled without
   PROF_ENABLE it must be the same bytes as without the annotations. */
#define PROF_IMPLEMENTATION
#include "prof_hip.h"

#include <hip/hip_runtime_api.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(PROF_ENABLE)
static prof_config *engine_prof_config(void) {
    static prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "engine_hip_{cycle}.json";
    cfg.schedule.wait = 1;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = 2;
    cfg.table = "sort=gpu_total,rows=10";
    return &cfg;
}
#define ENGINE_PROF_CONFIG engine_prof_config()
#else
#define ENGINE_PROF_CONFIG NULL
#endif

/* kernels, in engine_kernels.hip */
void launch_embed(hipStream_t s, float *x, const int *tokens, const float *table, int n, int width);
void launch_gemm(hipStream_t s, float *y, const float *x, const float *w, int n, int width);
void launch_gelu(hipStream_t s, float *x, int count);
void launch_adamw(hipStream_t s, float *w, const float *g, float *m, float *v, int count, float lr);

typedef struct layer {
    const char *name;
    float *w, *g, *m, *v;       /* device: weights, gradient, moments */
} layer;

static int g_log_every = 5;     /* .data */
static size_t g_arena_used;     /* .bss */
static char *g_arena;           /* activations: one hipMalloc, carved up */

static void *arena_take(size_t bytes) {
    void *p = g_arena + g_arena_used;
    g_arena_used += (bytes + 255) & ~(size_t)255;
    PROF_GPU_ALLOC(p, bytes);
    return p;
}

/* gives back everything taken since `first` */
static void arena_release(void *first) {
    PROF_GPU_FREE(first);
    g_arena_used = (size_t)((char *)first - g_arena);
}

static int check(hipError_t e, const char *what) {
    if (e == hipSuccess) return 0;
    fprintf(stderr, "%s: %s\n", what, hipGetErrorString(e));
    return -1;
}

static int layer_init(layer *l, const char *name, int width) {
    size_t bytes = (size_t)width * (size_t)width * sizeof(float);
    l->name = name;
    if (check(prof_hipMalloc((void **)&l->w, bytes), "weights") ||
        check(prof_hipMalloc((void **)&l->g, bytes), "gradient") ||
        check(prof_hipMalloc((void **)&l->m, bytes), "moment 1") ||
        check(prof_hipMalloc((void **)&l->v, bytes), "moment 2"))
        return -1;
    return check(hipMemset(l->m, 0, bytes), "memset") || check(hipMemset(l->v, 0, bytes), "memset");
}

static int layer_free(layer *l) {
    return check(prof_hipFree(l->w), "free") | check(prof_hipFree(l->g), "free") |
           check(prof_hipFree(l->m), "free") | check(prof_hipFree(l->v), "free");
}

static void forward(hipStream_t s, const layer *net, int nlayers, float *x, int n, int width) {
    PROF_GPU_SCOPE("forward", s);
    for (int i = 0; i < nlayers; i++) {
        PROF_GPU_SCOPE(net[i].name, s);
        launch_gemm(s, x, x, net[i].w, n, width);
        PROF_GPU_BEGIN("gelu", s);
        launch_gelu(s, x, n * width);
        PROF_GPU_END(s);
    }
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 10, n = 64, width = 256;
    PROF_INIT(ENGINE_PROF_CONFIG);
    PROF_THREAD_NAME("engine");

    hipStream_t s;
    if (check(hipStreamCreateWithFlags(&s, hipStreamNonBlocking), "stream")) return 1;
    layer net[3];
    static const char *const names[3] = { "block0", "block1", "block2" };
    for (int i = 0; i < 3; i++)
        if (layer_init(&net[i], names[i], width)) return 1;
    if (check(prof_hipMalloc((void **)&g_arena, (size_t)64 << 20), "arena")) return 1;
    int *tokens;
    float *table;
    if (check(prof_hipMalloc((void **)&tokens, (size_t)n * sizeof(int)), "tokens") ||
        check(prof_hipMalloc((void **)&table, (size_t)1000 * width * sizeof(float)), "table"))
        return 1;

    for (int step = 0; step < steps; step++) {
        float *x = (float *)arena_take((size_t)n * width * sizeof(float));
        {
            PROF_GPU_SCOPE("embed", s);
            launch_embed(s, x, tokens, table, n, width);
        }
        forward(s, net, 3, x, n, width);
        PROF_GPU_BEGIN("optimizer", s);
        for (int i = 0; i < 3; i++)
            launch_adamw(s, net[i].w, net[i].g, net[i].m, net[i].v, width * width, 3e-4f);
        PROF_GPU_END(s);
        {
            PROF_SCOPE("sync");
            if (check(hipStreamSynchronize(s), "step")) return 2;
        }
        arena_release(x);
        if (step % g_log_every == 0) printf("step %d\n", step);
        PROF_STEP();
    }

    int status = 0;
    for (int i = 0; i < 3; i++) status |= layer_free(&net[i]);
    status |= check(prof_hipFree(table), "free") | check(prof_hipFree(tokens), "free") |
              check(prof_hipFree(g_arena), "free") | check(hipStreamDestroy(s), "stream");
    PROF_SHUTDOWN();
    return status ? 3 : 0;
}
