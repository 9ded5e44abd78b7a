/* gpu_mlp.h - the model and data of the GPU examples (train_mlp_gpu.h):
   mlp.h's 32 -> 128 -> 128 -> 8 MLP, SGD with momentum and Gaussian blobs,
   in C++, and the CPU reference of every kernel they launch.

   The reference is the CPU path of those programs (no device, or no device
   code in the build) and the check of their kernels (a GPU step must match a
   CPU step). Host C++ only: it needs neither CUDA nor HIP. Include it in one
   file of a program, after prof_cuda.h or prof_hip.h.
*/
#ifndef GPU_MLP_H
#define GPU_MLP_H

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mlp_common.h" /* sizes, random numbers, schedule, loss lines, clock */

static const int DIMS[4] = { IN, H1, H2, CLASSES };

/* ---- data: classes made of several Gaussian blobs in IN dimensions ----- */

struct HostData {
    std::vector<float> train_x, test_x;  /* [n][IN] */
    std::vector<int> train_y, test_y;
};

static void make_data(HostData *d, uint64_t seed) {
    PROF_FUNCTION();
    std::vector<float> centers(CLASSES * CLUSTERS * IN);
    for (float &c : centers) c = rng_normal(&seed);
    std::vector<float> *xs[2] = { &d->train_x, &d->test_x };
    std::vector<int> *ys[2] = { &d->train_y, &d->test_y };
    const int sizes[2] = { NTRAIN, NTEST };
    for (int s = 0; s < 2; s++) {
        xs[s]->resize((size_t)sizes[s] * IN);
        ys[s]->resize((size_t)sizes[s]);
        for (int i = 0; i < sizes[s]; i++) {
            int blob = (int)(rng_next(&seed) % (CLASSES * CLUSTERS));
            (*ys[s])[i] = blob % CLASSES;
            for (int j = 0; j < IN; j++)
                (*xs[s])[(size_t)i * IN + j] = centers[(size_t)blob * IN + j] + 0.9f * rng_normal(&seed);
        }
    }
}

/* The order of the training examples: reshuffled at each epoch. */
struct Sampler {
    std::vector<int> perm;
    int cursor;
    uint64_t rng;
};

static void sampler_init(Sampler *s, uint64_t seed) {
    s->perm.resize(NTRAIN);
    for (int i = 0; i < NTRAIN; i++) s->perm[i] = i;
    s->cursor = NTRAIN;  /* shuffle before the first batch */
    s->rng = seed;
}

/* The next BATCH example indices. */
static void sampler_next(Sampler *s, int *idx) {
    if (s->cursor + BATCH > NTRAIN) {  /* new epoch: Fisher-Yates */
        PROF_SCOPE("shuffle");
        for (int k = NTRAIN - 1; k > 0; k--) {
            int r = (int)(rng_next(&s->rng) % (uint64_t)(k + 1));
            int t = s->perm[k]; s->perm[k] = s->perm[r]; s->perm[r] = t;
        }
        s->cursor = 0;
    }
    std::memcpy(idx, &s->perm[s->cursor], BATCH * sizeof(int));
    s->cursor += BATCH;
}

/* ---- parameters: one flat arena [w1 b1 w2 b2 w3 b3], w as [in][out] ---- */

static size_t param_count(void) {
    size_t n = 0;
    for (int l = 0; l < 3; l++) n += (size_t)(DIMS[l] + 1) * DIMS[l + 1];
    return n;
}

/* Offsets of layer l's weights and biases in the arena. */
static size_t w_off(int l) {
    size_t o = 0;
    for (int i = 0; i < l; i++) o += (size_t)(DIMS[i] + 1) * DIMS[i + 1];
    return o;
}
static size_t b_off(int l) { return w_off(l) + (size_t)DIMS[l] * DIMS[l + 1]; }

static std::vector<float> init_params(uint64_t seed) {
    std::vector<float> p(param_count(), 0.0f);
    for (int l = 0; l < 3; l++) {
        float std_dev = std::sqrt(2.0f / (float)DIMS[l]);  /* He init; biases 0 */
        for (int k = 0; k < DIMS[l] * DIMS[l + 1]; k++) p[w_off(l) + k] = std_dev * rng_normal(&seed);
    }
    return p;
}

/* ---- the CPU reference of each kernel, same arguments ------------------ */

/* C[M,N] = op(A) op(B): op(A) is A[M,K], or A^T for A[K,M] (ta);
   op(B) is B[K,N], or B^T for B[N,K] (tb). */
static void ref_matmul(float *C, const float *A, const float *B, int M, int N, int K, bool ta, bool tb) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++)
                s += (ta ? A[(size_t)k * M + m] : A[(size_t)m * K + k]) *
                     (tb ? B[(size_t)n * K + k] : B[(size_t)k * N + n]);
            C[(size_t)m * N + n] = s;
        }
}

/* y[i][j] += b[j], then ReLU if relu */
static void ref_bias_act(float *y, const float *b, int rows, int cols, bool relu) {
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            float v = y[(size_t)i * cols + j] + b[j];
            y[(size_t)i * cols + j] = relu && v < 0.0f ? 0.0f : v;
        }
}

/* loss[0] = mean cross-entropy of softmax(logits); d = d(loss)/d(logits) */
static void ref_softmax_xent(const float *logits, const int *y, float *d, float *loss, int n) {
    float total = 0.0f;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * CLASSES;
        float mx = z[0], sum = 0.0f;
        for (int c = 1; c < CLASSES; c++) mx = std::fmax(mx, z[c]);
        for (int c = 0; c < CLASSES; c++) sum += std::exp(z[c] - mx);
        total += mx + std::log(sum) - z[y[i]];
        for (int c = 0; c < CLASSES; c++)
            d[(size_t)i * CLASSES + c] = (std::exp(z[c] - mx) / sum - (c == y[i] ? 1.0f : 0.0f)) / (float)n;
    }
    loss[0] = total / (float)n;
}

/* d(ReLU input) from d(ReLU output), in place; a is the ReLU's output */
static void ref_relu_backward(float *d, const float *a, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] <= 0.0f) d[i] = 0.0f;
}

/* db[j] = sum over rows of dy[i][j] */
static void ref_col_sum(float *db, const float *dy, int rows, int cols) {
    for (int j = 0; j < cols; j++) {
        float s = 0.0f;
        for (int i = 0; i < rows; i++) s += dy[(size_t)i * cols + j];
        db[j] = s;
    }
}

/* PyTorch's SGD with momentum over the whole arena */
static void ref_sgd(float *p, const float *g, float *m, int n, float lr, float mu) {
    for (int i = 0; i < n; i++) {
        m[i] = mu * m[i] + g[i];
        p[i] -= lr * m[i];
    }
}

/* the batch: rows idx[r] of the data set */
static void ref_gather(float *x, int *y, const float *X, const int *Y, const int *idx, int n) {
    for (int r = 0; r < n; r++) {
        std::memcpy(x + (size_t)r * IN, X + (size_t)idx[r] * IN, IN * sizeof(float));
        y[r] = Y[idx[r]];
    }
}

/* how many rows of logits[n][CLASSES] have their maximum at the label */
static int count_correct(const float *logits, const int *y, int n) {
    int correct = 0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * CLASSES;
        int best = 0;
        for (int c = 1; c < CLASSES; c++)
            if (z[c] > z[best]) best = c;
        correct += best == y[i];
    }
    return correct;
}

/* largest |a - b| relative to max(1, |b|) */
static double max_rel_diff(const float *a, const float *b, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = std::fabs((double)a[i] - (double)b[i]) / std::fmax(1.0, std::fabs((double)b[i]));
        if (!(d <= worst)) worst = d;  /* NaN wins */
    }
    return worst;
}

#endif /* GPU_MLP_H */
