/* Every macro of prof.h as an engine writes them, in the shapes that trip
   warnings: unbraced if/else bodies, values computed only for a macro, float
   and int arguments, a pointer to const data. tests/warnings/check.sh builds
   it with the implementation, enabled and disabled, as C and as C++, with the
   warning sets real engines use and -Werror. */
#include <stdint.h>
#include <stdio.h>

#include "prof.h"

static float loss_of(const float *x, int n) {
    PROF_FUNCTION();
    char name[32];                              /* built only for PROF_SCOPE_DYN */
    snprintf(name, sizeof name, "loss.%d", n);
    PROF_SCOPE_DYN(name);
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += x[i];
    return s;
}

static void matmul(float *out, const float *a, const float *b, int m, int n, int k) {
    PROF_SCOPE("matmul");
    long long flops = 2LL * m * n * k;         /* used only by PROF_FLOPS */
    int rows = m;                               /* used only by PROF_ARG_INT */
    const char *dtype = "f32";                  /* used only by PROF_ARG_STR */
    PROF_FLOPS(flops);
    PROF_BYTES(flops * 2);                      /* bytes moved: computed for it alone too */
    PROF_ARG_INT("M", rows);
    PROF_ARG_STR("dtype", dtype);
    for (int i = 0; i < m * n; i++) out[i] = a[i % (m * k)] * b[i % (k * n)];
}

int every_macro(int steps);
int every_macro(int steps) {
    PROF_INIT(NULL);
    PROF_THREAD_NAME("main");
    PROF_SET_RANK(0, 1);
    float a[16] = { 1.0f }, b[16] = { 2.0f }, c[16];
    static float pool[64];                      /* the engine's allocator hands this out */
    float *buf = pool;
    PROF_ALLOC(buf, sizeof pool);
    double lr = 0.1;
    float loss = 0.0f;
    int depth = 3;
    for (int s = 0; s < steps; s++) {
        PROF_BEGIN("step_body");
        matmul(c, a, b, 4, 4, 4);
        loss = loss_of(c, 16);
        PROF_END();
        if (s % 2) PROF_INSTANT("odd");
        else PROF_INSTANT("even");
        if (s == 0) PROF_SYNC();
        PROF_COUNTER("loss", loss);             /* a float */
        PROF_COUNTER("lr", lr);                 /* a double */
        PROF_COUNTER("depth", depth);           /* an int */
        PROF_COUNTER("one", 1);
        if (s + 1 < steps) PROF_STEP();
        else PROF_STEP();
    }
    PROF_FREE(buf);
    PROF_SHUTDOWN();
    return loss > 0.0f ? 0 : 1;
}
