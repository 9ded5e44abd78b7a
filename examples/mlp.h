/* mlp.h - the model, data and data loader shared by the example programs.

   A 32 -> 128 -> 128 -> 8 MLP trained with SGD and momentum on generated
   data, annotated with prof.h: regions around each layer's forward and
   backward, the loss, data loading and evaluation; shapes and FLOPs on the
   matmuls; a data-loader thread that names itself.

   train_mlp.c trains it in one process, train_mlp_mpi.c data-parallel across
   MPI ranks. Every function is static: include this file in exactly one
   source file of a program, after prof.h (and, there, after
   #define PROF_IMPLEMENTATION). Both programs use every function here, so
   none is unused in either.
*/
#ifndef MLP_H
#define MLP_H

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"
#include "mlp_common.h" /* sizes, random numbers, schedule, loss lines, clock */

/* ---- allocation: one wrapper, so every buffer shows in the memory view -- */

static void *xalloc(size_t bytes) {
    void *p = calloc(1, bytes);
    if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", bytes); exit(1); }
    PROF_ALLOC(p, bytes);
    return p;
}

static void xfree(void *p) { PROF_FREE(p); free(p); }

static float *falloc(size_t n) { return xalloc(n * sizeof(float)); }

/* ---- data: classes made of several Gaussian blobs in IN dimensions ----- */

typedef struct { float *x; int *y; int n; } Dataset;

/* The same seed gives the same data in every process. */
static void make_datasets(Dataset *train, Dataset *test, uint64_t seed) {
    PROF_FUNCTION();
    static float centers[CLASSES * CLUSTERS][IN];
    for (int c = 0; c < CLASSES * CLUSTERS; c++)
        for (int j = 0; j < IN; j++) centers[c][j] = rng_normal(&seed);
    Dataset *sets[2] = { train, test };
    int sizes[2] = { NTRAIN, NTEST };
    for (int s = 0; s < 2; s++) {
        Dataset *d = sets[s];
        d->n = sizes[s];
        d->x = falloc((size_t)d->n * IN);
        d->y = xalloc((size_t)d->n * sizeof(int));
        for (int i = 0; i < d->n; i++) {
            int blob = (int)(rng_next(&seed) % (CLASSES * CLUSTERS));
            d->y[i] = blob % CLASSES;
            for (int j = 0; j < IN; j++)
                d->x[i * IN + j] = centers[blob][j] + 0.9f * rng_normal(&seed);
        }
    }
}

static void dataset_free(Dataset *d) { xfree(d->x); xfree(d->y); }

/* ---- data loader thread: fills one half of a double buffer while the
        main thread trains on the other ----------------------------------- */

typedef struct { float x[BATCH * IN]; int y[BATCH]; } Batch;

typedef struct {
    const Dataset *ds;
    int nbatches;            /* produce this many batches, then exit */
    uint64_t seed;           /* of the shuffles */
    Batch slot[2];
    int full[2];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
} Loader;

/* slot i&1 changes hands: the loader sets it full, the trainer sets it empty */
static void slot_set(Loader *L, int i, int full) {
    pthread_mutex_lock(&L->mu);
    L->full[i & 1] = full;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
}

static void slot_wait(Loader *L, int i, int full) {
    pthread_mutex_lock(&L->mu);
    while (L->full[i & 1] != full) pthread_cond_wait(&L->cv, &L->mu);
    pthread_mutex_unlock(&L->mu);
}

static void *loader_main(void *arg) {
    Loader *L = arg;
    PROF_THREAD_NAME("dataloader");
    const Dataset *ds = L->ds;
    int *perm = xalloc((size_t)ds->n * sizeof(int));
    for (int i = 0; i < ds->n; i++) perm[i] = i;
    uint64_t rng = L->seed;
    int cursor = ds->n;      /* shuffle before the first batch */

    for (int i = 0; i < L->nbatches; i++) {
        Batch *b = &L->slot[i & 1];
        { PROF_SCOPE("wait_free_slot"); slot_wait(L, i, 0); }  /* long: loader is ahead */
        {
            PROF_SCOPE("load_batch");
            PROF_ARG_INT("batch", i);
            if (cursor + BATCH > ds->n) {  /* new epoch: Fisher-Yates shuffle */
                PROF_SCOPE("shuffle");
                PROF_INSTANT("epoch");
                for (int k = ds->n - 1; k > 0; k--) {
                    int r = (int)(rng_next(&rng) % (uint64_t)(k + 1));
                    int t = perm[k]; perm[k] = perm[r]; perm[r] = t;
                }
                cursor = 0;
            }
            for (int r = 0; r < BATCH; r++, cursor++) {
                memcpy(&b->x[r * IN], &ds->x[perm[cursor] * IN], IN * sizeof(float));
                b->y[r] = ds->y[perm[cursor]];
            }
        }
        slot_set(L, i, 1);
    }
    xfree(perm);
    return NULL;
}

/* Starts the loader thread on `ds` (at least BATCH examples). */
static Loader *loader_start(const Dataset *ds, int nbatches, uint64_t seed) {
    Loader *L = xalloc(sizeof *L);  /* ~34 KB of batches: keep it off the stack */
    L->ds = ds;
    L->nbatches = nbatches;
    L->seed = seed;
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    if (pthread_create(&L->thread, NULL, loader_main, L)) { fprintf(stderr, "no thread\n"); exit(1); }
    return L;
}

/* Batch i, once the loader has filled it; give it back with slot_set(L, i, 0). */
static const Batch *loader_acquire(Loader *L, int i) {
    PROF_FUNCTION();  /* time spent here is the trainer starving for data */
    slot_wait(L, i, 1);
    return &L->slot[i & 1];
}

/* After the last batch was acquired: the thread has ended, all is freed. */
static void loader_join(Loader *L) {
    pthread_join(L->thread, NULL);
    pthread_cond_destroy(&L->cv);
    pthread_mutex_destroy(&L->mu);
    xfree(L);
}

/* ---- matmuls: loop orders that keep the inner loop contiguous ---------- */

#define MATMUL_ARGS(M, N, K)                                       \
    PROF_ARG_INT("M", M); PROF_ARG_INT("N", N); PROF_ARG_INT("K", K); \
    PROF_FLOPS(2LL * (M) * (N) * (K))

/* C[M,N] = A[M,K] B[K,N] */
static void matmul_nn(float *C, const float *A, const float *B, int M, int N, int K) {
    PROF_FUNCTION();
    MATMUL_ARGS(M, N, K);
    for (int m = 0; m < M; m++) {
        float *c = C + (size_t)m * N;
        for (int n = 0; n < N; n++) c[n] = 0.0f;
        for (int k = 0; k < K; k++) {
            float a = A[(size_t)m * K + k];
            const float *b = B + (size_t)k * N;
            for (int n = 0; n < N; n++) c[n] += a * b[n];
        }
    }
}

/* C[M,N] = A[M,K] B[N,K]^T: rows of A against rows of B */
static void matmul_nt(float *C, const float *A, const float *B, int M, int N, int K) {
    PROF_FUNCTION();
    MATMUL_ARGS(M, N, K);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            const float *a = A + (size_t)m * K, *b = B + (size_t)n * K;
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;  /* 4 chains: no FP dependency stall */
            int k = 0;
            for (; k + 4 <= K; k += 4) {
                s0 += a[k] * b[k];         s1 += a[k + 1] * b[k + 1];
                s2 += a[k + 2] * b[k + 2]; s3 += a[k + 3] * b[k + 3];
            }
            for (; k < K; k++) s0 += a[k] * b[k];
            C[(size_t)m * N + n] = (s0 + s1) + (s2 + s3);
        }
}

/* C[M,N] = A[K,M]^T B[K,N] */
static void matmul_tn(float *C, const float *A, const float *B, int M, int N, int K) {
    PROF_FUNCTION();
    MATMUL_ARGS(M, N, K);
    memset(C, 0, (size_t)M * N * sizeof(float));
    for (int k = 0; k < K; k++)
        for (int m = 0; m < M; m++) {
            float a = A[(size_t)k * M + m];
            const float *b = B + (size_t)k * N;
            float *c = C + (size_t)m * N;
            for (int n = 0; n < N; n++) c[n] += a * b[n];
        }
}

/* ---- the model --------------------------------------------------------- */

typedef struct {
    int in, out;
    float *w, *b;     /* parameters; w is [in][out] */
    float *dw, *db;   /* gradients, overwritten by each backward */
} Linear;

/* parameters, gradients and momentum each live in one flat arena, as in
   llm.c: three allocations, one loop for the optimizer, one memcpy to save,
   one collective to average the gradients across ranks */
typedef struct {
    Linear l1, l2, l3;
    size_t n;
    float *params, *grads, *momentum;
} MLP;

typedef struct { float *a1, *a2, *logits; } Acts;  /* live from forward to backward */

static void mlp_init(MLP *net, uint64_t seed) {
    Linear *ls[3] = { &net->l1, &net->l2, &net->l3 };
    int dims[4] = { IN, H1, H2, CLASSES };
    net->n = 0;
    for (int i = 0; i < 3; i++) net->n += (size_t)(dims[i] + 1) * dims[i + 1];
    net->params = falloc(net->n);
    net->grads = falloc(net->n);
    net->momentum = falloc(net->n);
    size_t off = 0;
    for (int i = 0; i < 3; i++) {
        Linear *L = ls[i];
        L->in = dims[i]; L->out = dims[i + 1];
        L->w = net->params + off; L->dw = net->grads + off; off += (size_t)L->in * L->out;
        L->b = net->params + off; L->db = net->grads + off; off += (size_t)L->out;
        float std = sqrtf(2.0f / (float)L->in);  /* He init for ReLU; biases stay 0 */
        for (int k = 0; k < L->in * L->out; k++) L->w[k] = std * rng_normal(&seed);
    }
}

static void mlp_free(MLP *net) { xfree(net->params); xfree(net->grads); xfree(net->momentum); }

static void linear_forward(const Linear *L, const float *x, float *y, int n) {
    matmul_nn(y, x, L->w, n, L->out, L->in);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < L->out; j++) y[i * L->out + j] += L->b[j];
}

/* dW = x^T dy, db = sum over rows of dy, dx = dy W^T (skipped when dx is NULL) */
static void linear_backward(Linear *L, const float *x, const float *dy, float *dx, int n) {
    matmul_tn(L->dw, x, dy, L->in, L->out, n);
    for (int j = 0; j < L->out; j++) L->db[j] = 0.0f;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < L->out; j++) L->db[j] += dy[i * L->out + j];
    if (dx) matmul_nt(dx, dy, L->w, n, L->in, L->out);
}

static void relu(float *a, int n) { for (int i = 0; i < n; i++) a[i] = a[i] > 0 ? a[i] : 0; }

/* turns d(relu output) into d(relu input), in place */
static void relu_backward(float *d, const float *a, int n) {
    for (int i = 0; i < n; i++) if (a[i] <= 0) d[i] = 0;
}

static void forward(const MLP *net, const float *x, int n, Acts *A) {
    PROF_FUNCTION();
    A->a1 = falloc((size_t)n * H1);
    { PROF_SCOPE("linear1"); linear_forward(&net->l1, x, A->a1, n); }
    { PROF_SCOPE("relu1");   relu(A->a1, n * H1); }
    A->a2 = falloc((size_t)n * H2);
    { PROF_SCOPE("linear2"); linear_forward(&net->l2, A->a1, A->a2, n); }
    { PROF_SCOPE("relu2");   relu(A->a2, n * H2); }
    A->logits = falloc((size_t)n * CLASSES);
    { PROF_SCOPE("linear3"); linear_forward(&net->l3, A->a2, A->logits, n); }
}

/* mean cross-entropy of softmax(logits); writes d(loss)/d(logits) */
static float softmax_xent(const float *logits, const int *y, float *dlogits, int n) {
    double total = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + i * CLASSES;
        float *d = dlogits + i * CLASSES, mx = z[0], sum = 0;
        for (int c = 1; c < CLASSES; c++) mx = fmaxf(mx, z[c]);
        for (int c = 0; c < CLASSES; c++) sum += d[c] = expf(z[c] - mx);
        total += mx + logf(sum) - z[y[i]];
        for (int c = 0; c < CLASSES; c++) d[c] = (d[c] / sum - (c == y[i])) / (float)n;
    }
    return (float)(total / n);
}

/* frees each activation once its last use is done, as autograd would */
static void backward(MLP *net, const float *x, Acts *A, float *dlogits, int n) {
    PROF_FUNCTION();
    float *d2 = falloc((size_t)n * H2), *d1 = falloc((size_t)n * H1);
    { PROF_SCOPE("linear3_bwd"); linear_backward(&net->l3, A->a2, dlogits, d2, n); }
    xfree(dlogits);
    { PROF_SCOPE("relu2_bwd");   relu_backward(d2, A->a2, n * H2); }
    xfree(A->a2);
    { PROF_SCOPE("linear2_bwd"); linear_backward(&net->l2, A->a1, d2, d1, n); }
    xfree(d2);
    { PROF_SCOPE("relu1_bwd");   relu_backward(d1, A->a1, n * H1); }
    xfree(A->a1);
    { PROF_SCOPE("linear1_bwd"); linear_backward(&net->l1, x, d1, NULL, n); }
    xfree(d1);
}

/* Forward, loss and backward on one batch: the batch's mean loss, and its
   gradients in net->grads. The batch is not read afterwards. */
static float compute_gradients(MLP *net, const Batch *b) {
    Acts A;
    forward(net, b->x, BATCH, &A);
    float loss, *dlogits = falloc(BATCH * CLASSES);
    { PROF_SCOPE("loss"); loss = softmax_xent(A.logits, b->y, dlogits, BATCH); }
    xfree(A.logits);
    backward(net, b->x, &A, dlogits, BATCH);
    return loss;
}

static void sgd_step(MLP *net, float lr) {  /* PyTorch's SGD with momentum */
    for (size_t i = 0; i < net->n; i++) {
        net->momentum[i] = MOMENTUM * net->momentum[i] + net->grads[i];
        net->params[i] -= lr * net->momentum[i];
    }
}

/* how many examples of ds the model classifies right */
static int evaluate(const MLP *net, const Dataset *ds) {
    PROF_FUNCTION();
    int correct = 0;
    for (int i0 = 0; i0 < ds->n; i0 += BATCH) {
        int n = ds->n - i0 < BATCH ? ds->n - i0 : BATCH;
        Acts A;
        forward(net, ds->x + (size_t)i0 * IN, n, &A);
        for (int i = 0; i < n; i++) {
            const float *z = A.logits + i * CLASSES;
            int best = 0;
            for (int c = 1; c < CLASSES; c++) if (z[c] > z[best]) best = c;
            correct += best == ds->y[i0 + i];
        }
        xfree(A.a1); xfree(A.a2); xfree(A.logits);
    }
    return correct;
}

#endif /* MLP_H */
