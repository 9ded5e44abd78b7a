/* A small training engine annotated the way a user would annotate one, with
   every macro of prof.h. check.sh compiles it without PROF_ENABLE and compares
   the object code with that of the same file with the annotations removed
   (strip.py): the two must be the same bytes. */
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(PROF_ENABLE)
static const prof_config prof_cfg = {
    .output = "trainer_{rank}.json",
    .buffer_mb = 128,
    .schedule = { .skip_first = 1, .wait = 1, .warmup = 1, .active = 3, .repeat = 1 },
};
#define TRAINER_PROF_CONFIG (&prof_cfg)
#else
#define TRAINER_PROF_CONFIG NULL
#endif

enum op_kind { OP_MATMUL, OP_RELU, OP_SOFTMAX, OP_ADD, OP_COUNT };

typedef struct tensor {
    float *data;
    int rows, cols;
} tensor;

typedef struct layer {
    enum op_kind op;
    const char *name;
    tensor w;
} layer;

static const char *const op_names[OP_COUNT] = { "matmul", "relu", "softmax", "add" };
static const float init_scale[OP_COUNT] = { 0.02f, 0.0f, 0.0f, 1.0f };
static int log_every = 10;                  /* .data */
static float scratch[4096];                 /* .bss */
static _Thread_local unsigned rng_state;    /* .tbss */

static unsigned next_rand(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* Shapes that warn when a disabled macro is empty: unbraced if/else bodies
   and values computed only for a macro (-Wempty-body, -Wunused-variable). */
static void note_step(int step, float loss, int n) {
    long long flops = 6LL * n * n;          /* for PROF_FLOPS alone */
    double scaled = (double)loss * 2.0;     /* for PROF_COUNTER alone */
    PROF_SCOPE("note");
    PROF_FLOPS(flops);
    if (step % 2) PROF_INSTANT("odd");
    else PROF_INSTANT("even");
    for (int i = 0; i < 2; i++) PROF_COUNTER("scaled", scaled + i);
    if (isnan(loss)) PROF_INSTANT("nan");
}

static int tensor_alloc(tensor *t, int rows, int cols, float scale) {
    size_t bytes = (size_t)rows * (size_t)cols * sizeof(float);
    t->data = (float *)malloc(bytes);
    if (!t->data) {
        PROF_INSTANT("oom");
        return -1;
    }
    PROF_ALLOC(t->data, bytes);
    t->rows = rows;
    t->cols = cols;
    for (int i = 0; i < rows * cols; i++)
        t->data[i] = scale * (float)((int)(next_rand() % 2001) - 1000) / 1000.0f;
    return 0;
}

static void tensor_free(tensor *t) {
    PROF_FREE(t->data);
    free(t->data);
    t->data = NULL;
}

static void matmul(float *out, const float *a, const tensor *w, int n) {
    PROF_FUNCTION();
    PROF_ARG_INT("M", n);
    PROF_ARG_INT("N", w->cols);
    PROF_ARG_INT("K", w->rows);
    PROF_FLOPS(2LL * n * w->rows * w->cols);
    PROF_BYTES((long long)sizeof(float) * w->rows * w->cols);   /* the weights, read once */
    assert(w->cols <= (int)(sizeof scratch / sizeof scratch[0]));
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < w->cols; j++) {
            float s = 0.0f;
            for (int k = 0; k < w->rows; k++)
                s += a[i * w->rows + k] * w->data[k * w->cols + j];
            out[i * w->cols + j] = s;
        }
    }
}

static float softmax_rows(float *x, int n, int cols) {
    PROF_SCOPE("softmax");
    float loss = 0.0f;
    for (int i = 0; i < n; i++) {
        float *row = x + i * cols, mx = row[0], sum = 0.0f;
        for (int j = 1; j < cols; j++)
            if (row[j] > mx) mx = row[j];
        for (int j = 0; j < cols; j++) {
            row[j] = expf(row[j] - mx);
            sum += row[j];
        }
        if (sum == 0.0f) {
            PROF_INSTANT("softmax_underflow");
            return NAN;
        }
        loss -= logf(row[0] / sum);
    }
    return loss / (float)n;
}

static int run_layer(const layer *l, float *x, float *y, int n, int width, float *loss) {
    PROF_SCOPE_DYN(l->name);
    PROF_ARG_STR("op", op_names[l->op]);
    switch (l->op) {
    case OP_MATMUL: {
        PROF_SCOPE("gemm");
        matmul(y, x, &l->w, n);
        memcpy(x, y, (size_t)n * (size_t)width * sizeof(float));
        break;
    }
    case OP_RELU:
        for (int i = 0; i < n * width; i++)
            if (x[i] < 0.0f) x[i] = 0.0f;
        break;
    case OP_SOFTMAX:
        *loss = softmax_rows(x, n, width);
        if (isnan(*loss)) {
            PROF_INSTANT("nan_loss");
            fprintf(stderr, "%s: %s gave NaN\n", l->name, op_names[l->op]);
            return -1;
        }
        break;
    case OP_ADD:
        PROF_BEGIN("residual");
        for (int i = 0; i < n * width; i++) x[i] += y[i];
        PROF_END();
        break;
    default:
        PROF_INSTANT("bad_op");
        fprintf(stderr, "%s: bad op %d\n", l->name, (int)l->op);
        return -1;
    }
    return 0;
}

typedef struct loader_arg {
    float *batch;
    int n, width, steps;
} loader_arg;

static void *loader_main(void *p) {
    loader_arg *a = (loader_arg *)p;
    PROF_THREAD_NAME("data_loader");
    rng_state = 12345u;
    for (int s = 0; s < a->steps; s++) {
        PROF_SCOPE("load_batch");
        for (int i = 0; i < a->n * a->width; i++)
            a->batch[i] = (float)(next_rand() % 256) / 255.0f;
        PROF_COUNTER("loader_queue", a->steps - s);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 20, n = 8, width = 64;
    int rank = argc > 2 ? atoi(argv[2]) : 0, world = argc > 3 ? atoi(argv[3]) : 1;
    if (world < 1 || rank < 0 || rank >= world) {
        fprintf(stderr, "bad rank %d of %d\n", rank, world);
        return 1;
    }
    PROF_INIT(TRAINER_PROF_CONFIG);
    PROF_SET_RANK(rank, world);
    PROF_THREAD_NAME("trainer");

    layer net[] = {
        { OP_MATMUL, "fc1", { NULL, 0, 0 } }, { OP_RELU, "relu1", { NULL, 0, 0 } },
        { OP_ADD, "skip", { NULL, 0, 0 } },   { OP_MATMUL, "fc2", { NULL, 0, 0 } },
        { OP_SOFTMAX, "head", { NULL, 0, 0 } },
    };
    const int nlayers = (int)(sizeof net / sizeof net[0]);
    for (int i = 0; i < nlayers; i++) {
        if (net[i].op != OP_MATMUL) continue;
        if (tensor_alloc(&net[i].w, width, width, init_scale[net[i].op]) != 0) {
            fprintf(stderr, "out of memory\n");
            PROF_SHUTDOWN();
            return 1;
        }
    }
    float *x = (float *)malloc((size_t)n * (size_t)width * sizeof(float));
    float *y = scratch;
    if (!x) return 1;
    PROF_ALLOC(x, (size_t)n * (size_t)width * sizeof(float));

    loader_arg la = { x, n, width, steps };
    pthread_t loader;
    if (pthread_create(&loader, NULL, loader_main, &la) != 0) return 1;
    pthread_join(loader, NULL);
    PROF_SYNC();

    int status = 0;
    for (int step = 0; step < steps; step++) {
        float loss = 0.0f;
        {
            PROF_SCOPE("forward");
            for (int i = 0; i < nlayers; i++) {
                if (run_layer(&net[i], x, y, n, width, &loss) != 0) {
                    status = 2;
                    break;
                }
            }
        }
        if (status) break;
        {
            PROF_SCOPE("optimizer");
            for (int i = 0; i < nlayers; i++) {
                if (net[i].op != OP_MATMUL) continue;
                PROF_SCOPE("adam");
                for (int k = 0; k < width * width; k++)
                    net[i].w.data[k] -= 1e-3f * net[i].w.data[k];
            }
        }
        PROF_COUNTER("loss", loss);
        PROF_COUNTER("lr", 1e-3 * pow(0.99, step));
        note_step(step, loss, n);
        if (rank == 0 && step % log_every == 0) printf("step %d loss %.4f\n", step, loss);
        PROF_STEP();
    }

    PROF_FREE(x);
    free(x);
    for (int i = 0; i < nlayers; i++)
        if (net[i].op == OP_MATMUL) tensor_free(&net[i].w);
    PROF_SHUTDOWN();
    return status;
}
