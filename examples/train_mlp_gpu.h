/* train_mlp_gpu.h - the GPU training program, written once for CUDA and HIP:
   train_mlp_cuda.cu and train_mlp_hip.cpp say how their runtime spells
   things, then include this file.

   The shape to copy into a GPU engine: PROF_GPU_SCOPE(name, stream) around
   the launches of each layer's forward and backward, the loss and the
   optimizer step, so each region has a CPU side (the launches) and a GPU
   side (the kernels, timed by an event pair on the stream); PROF_SCOPE
   around CPU-only work; prof_cudaMalloc / prof_hipMalloc (GPU_PROF(Malloc)
   here) for device buffers; PROF_STEP() once per step, after every region of
   the step has closed.

   The data lives on the device; each step draws a shuffled batch on the CPU,
   gathers it on the GPU, runs forward, loss, backward and SGD with momentum
   on a stream of its own and reads the loss back (the step's one wait).
   After training, one more step runs on both the GPU and the CPU reference
   (gpu_mlp.h) from the same state, and the two must agree.

   Without a usable device (no GPU, a driver older than the runtime) the
   program says so in one line and trains on the CPU reference instead, through
   the same step function: every region is still recorded, on the CPU side
   only, and prof.h says once that GPU timing is off. The same happens when a
   plain C++ compiler built it: the kernels need nvcc or hipcc, so such a
   build has no device code, but it links the runtime and uses every macro.

   Before including this file, a program includes its runtime and
   prof_cuda.h or prof_hip.h (with PROF_IMPLEMENTATION), and defines what
   differs between the runtimes:
     GPU(name)           the runtime's name: GPU(Malloc) is cudaMalloc, hipMalloc
     GPU_PROF(name)      prof.h's wrapper: prof_cudaMalloc, prof_hipMalloc
     GPU_API             "CUDA" or "HIP", for messages
     GPU_COMPILER        what compiles the kernels: "nvcc" or "hipcc"
     GPU_TRACE           the trace's file name
     pinned_alloc(&p, bytes), pinned_free(p)
                         page-locked host memory: each runtime has its own call
     print_device(dev)   the line naming the device: their properties differ
*/
#ifndef TRAIN_MLP_GPU_H
#define TRAIN_MLP_GPU_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_mlp.h" /* model, data and the CPU reference */

#define GPU_CHECK(call)                                                                   \
    do {                                                                                  \
        GPU(Error_t) e_ = (call);                                                         \
        if (e_ != GPU(Success)) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, GPU(GetErrorString)(e_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

/* ---- kernels: simple, one thread per output element; nvcc or hipcc ----- */

enum { TILE = 16, THREADS = 256 };

#if defined(__CUDACC__) || defined(__HIPCC__)

static unsigned blocks(int n) { return (unsigned)((n + THREADS - 1) / THREADS); }

/* C[M,N] = op(A) op(B) in shared-memory tiles; ta, tb as in ref_matmul */
__global__ void matmul_kernel(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb) {
    __shared__ float As[TILE][TILE + 1], Bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        int ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = row < M && ka < K ? (ta ? A[(size_t)ka * M + row] : A[(size_t)row * K + ka]) : 0.0f;
        Bs[ty][tx] = kb < K && col < N ? (tb ? B[(size_t)col * K + kb] : B[(size_t)kb * N + col]) : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

__global__ void bias_act_kernel(float *y, const float *b, int rows, int cols, int relu) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols) return;
    float v = y[i] + b[i % cols];
    y[i] = relu && v < 0.0f ? 0.0f : v;
}

/* one block: a thread per row, then a tree sum of the row losses */
__global__ void softmax_xent_kernel(const float *logits, const int *y, float *d, float *loss, int n) {
    __shared__ float part[THREADS];
    float total = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float *z = logits + (size_t)i * CLASSES;
        float mx = z[0], sum = 0.0f;
        for (int c = 1; c < CLASSES; c++) mx = fmaxf(mx, z[c]);
        for (int c = 0; c < CLASSES; c++) sum += expf(z[c] - mx);
        total += mx + logf(sum) - z[y[i]];
        for (int c = 0; c < CLASSES; c++)
            d[(size_t)i * CLASSES + c] = (expf(z[c] - mx) / sum - (c == y[i] ? 1.0f : 0.0f)) / (float)n;
    }
    part[threadIdx.x] = total;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s /= 2) {
        if ((int)threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) loss[0] = part[0] / (float)n;
}

__global__ void relu_backward_kernel(float *d, const float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && a[i] <= 0.0f) d[i] = 0.0f;
}

__global__ void col_sum_kernel(float *db, const float *dy, int rows, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float s = 0.0f;
    for (int i = 0; i < rows; i++) s += dy[(size_t)i * cols + j];
    db[j] = s;
}

__global__ void sgd_kernel(float *p, const float *g, float *m, int n, float lr, float mu) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    m[i] = mu * m[i] + g[i];
    p[i] -= lr * m[i];
}

__global__ void gather_kernel(float *x, int *y, const float *X, const int *Y, const int *idx, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * IN) return;
    int r = i / IN, j = i % IN;
    x[i] = X[(size_t)idx[r] * IN + j];
    if (j == 0) y[r] = Y[idx[r]];
}

/* kernel<<<grid, block, 0, stream>>>(args...), then the launch's error */
#define LAUNCH(kernel, grid, block, stream, ...)                \
    do {                                                        \
        kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__);  \
        GPU_CHECK(GPU(GetLastError)());                         \
    } while (0)
static const bool have_kernels = true;
#else
/* A host compiler's build has no device code: its trainer never takes the
   GPU path, and LAUNCH is never reached. */
#define LAUNCH(kernel, grid, block, stream, ...) abort()
static const bool have_kernels = false;
#endif

/* ---- a trainer: the model's buffers on the device, or in host memory on
        the CPU path; each operation launches a kernel or calls its reference */

struct Trainer {
    bool gpu;                  /* false: the CPU reference path           */
    GPU(Stream_t) stream;      /* created by the program; 0 on the CPU    */
    float *params, *grads, *mom;                   /* arenas               */
    float *train_x, *test_x;                       /* the data set         */
    int *train_y, *test_y;
    int *idx, *y;                                  /* the batch            */
    float *x, *a1, *a2, *logits, *dlogits, *d1, *d2, *loss;
    int *h_idx;                /* host staging (pinned on the GPU path)   */
    float *h_loss, *h_logits;
    Sampler sampler;
};

template <typename T> static T *dev_alloc(const Trainer &t, size_t n) {
    void *p = nullptr;
    size_t bytes = n * sizeof(T);
    if (t.gpu) {
        GPU_CHECK(GPU_PROF(Malloc)(&p, bytes));  /* a GPU memory event too */
        GPU_CHECK(GPU(MemsetAsync)(p, 0, bytes, t.stream));
    } else {
        if (!(p = calloc(1, bytes))) { fprintf(stderr, "out of memory\n"); exit(1); }
        PROF_ALLOC(p, bytes);
    }
    return static_cast<T *>(p);
}

template <typename T> static void dev_free(const Trainer &t, T *p) {
    if (t.gpu) {
        GPU_CHECK(GPU_PROF(Free)(p));
    } else {
        PROF_FREE(p);
        free(p);
    }
}

template <typename T> static T *host_alloc(const Trainer &t, size_t n) {
    void *p = nullptr;
    if (t.gpu) GPU_CHECK(pinned_alloc(&p, n * sizeof(T)));  /* async copies need pinned memory */
    else if (!(p = calloc(n, sizeof(T)))) { fprintf(stderr, "out of memory\n"); exit(1); }
    return static_cast<T *>(p);
}

template <typename T> static void host_free(const Trainer &t, T *p) {
    if (t.gpu) GPU_CHECK(pinned_free(p));
    else free(p);
}

static void to_device(const Trainer &t, void *dst, const void *src, size_t bytes) {
    if (t.gpu) GPU_CHECK(GPU(MemcpyAsync)(dst, src, bytes, GPU(MemcpyHostToDevice), t.stream));
    else memcpy(dst, src, bytes);
}

static void to_host(const Trainer &t, void *dst, const void *src, size_t bytes) {
    if (t.gpu) GPU_CHECK(GPU(MemcpyAsync)(dst, src, bytes, GPU(MemcpyDeviceToHost), t.stream));
    else memcpy(dst, src, bytes);
}

static void wait_for_device(const Trainer &t) {
    if (t.gpu) GPU_CHECK(GPU(StreamSynchronize)(t.stream));
}

static void matmul(const Trainer &t, float *C, const float *A, const float *B, int M, int N, int K,
                   bool ta, bool tb) {
    if (!t.gpu) return ref_matmul(C, A, B, M, N, K, ta, tb);
    LAUNCH(matmul_kernel, dim3((unsigned)((N + TILE - 1) / TILE), (unsigned)((M + TILE - 1) / TILE)),
           dim3(TILE, TILE), t.stream, C, A, B, M, N, K, ta, tb);
}

/* y[n][out] = act(x[n][in] W + b) for layer l */
static void linear_forward(const Trainer &t, int l, const float *x, float *y, int n, bool relu) {
    int in = DIMS[l], out = DIMS[l + 1];
    matmul(t, y, x, t.params + w_off(l), n, out, in, false, false);
    if (!t.gpu) return ref_bias_act(y, t.params + b_off(l), n, out, relu);
    LAUNCH(bias_act_kernel, blocks(n * out), THREADS, t.stream, y, t.params + b_off(l), n, out, relu);
}

/* dW = x^T dy, db = column sums of dy, dx = dy W^T (skipped when dx is null) */
static void linear_backward(const Trainer &t, int l, const float *x, const float *dy, float *dx, int n) {
    int in = DIMS[l], out = DIMS[l + 1];
    matmul(t, t.grads + w_off(l), x, dy, in, out, n, true, false);
    if (t.gpu) {
        LAUNCH(col_sum_kernel, blocks(out), THREADS, t.stream, t.grads + b_off(l), dy, n, out);
    } else {
        ref_col_sum(t.grads + b_off(l), dy, n, out);
    }
    if (dx) matmul(t, dx, dy, t.params + w_off(l), n, in, out, false, true);
}

static void relu_backward(const Trainer &t, float *d, const float *a, int n) {
    if (!t.gpu) return ref_relu_backward(d, a, n);
    LAUNCH(relu_backward_kernel, blocks(n), THREADS, t.stream, d, a, n);
}

/* ---- the training step: the same regions on the GPU and the CPU path ---- */

/* logits of x[n][IN] */
static void forward(const Trainer &t, const float *x, int n) {
    PROF_GPU_SCOPE("forward", t.stream);
    { PROF_GPU_SCOPE("linear1", t.stream); linear_forward(t, 0, x, t.a1, n, true); }
    { PROF_GPU_SCOPE("linear2", t.stream); linear_forward(t, 1, t.a1, t.a2, n, true); }
    { PROF_GPU_SCOPE("linear3", t.stream); linear_forward(t, 2, t.a2, t.logits, n, false); }
}

static float train_step(Trainer &t, float lr) {
    {
        PROF_SCOPE("next_batch");  /* CPU only: which examples */
        sampler_next(&t.sampler, t.h_idx);
    }
    {
        PROF_GPU_SCOPE("upload_batch", t.stream);
        to_device(t, t.idx, t.h_idx, BATCH * sizeof(int));
        if (t.gpu) {
            LAUNCH(gather_kernel, blocks(BATCH * IN), THREADS, t.stream, t.x, t.y, t.train_x, t.train_y, t.idx, BATCH);
        } else {
            ref_gather(t.x, t.y, t.train_x, t.train_y, t.idx, BATCH);
        }
    }
    forward(t, t.x, BATCH);
    {
        PROF_GPU_SCOPE("loss", t.stream);
        if (t.gpu) {
            LAUNCH(softmax_xent_kernel, 1, THREADS, t.stream, t.logits, t.y, t.dlogits, t.loss, BATCH);
        } else {
            ref_softmax_xent(t.logits, t.y, t.dlogits, t.loss, BATCH);
        }
    }
    {
        PROF_GPU_SCOPE("backward", t.stream);
        { PROF_GPU_SCOPE("linear3_bwd", t.stream); linear_backward(t, 2, t.a2, t.dlogits, t.d2, BATCH); }
        {
            PROF_GPU_SCOPE("linear2_bwd", t.stream);
            relu_backward(t, t.d2, t.a2, BATCH * H2);
            linear_backward(t, 1, t.a1, t.d2, t.d1, BATCH);
        }
        {
            PROF_GPU_SCOPE("linear1_bwd", t.stream);
            relu_backward(t, t.d1, t.a1, BATCH * H1);
            linear_backward(t, 0, t.x, t.d1, nullptr, BATCH);
        }
    }
    {
        PROF_GPU_SCOPE("optimizer_step", t.stream);
        int n = (int)param_count();
        if (t.gpu) {
            LAUNCH(sgd_kernel, blocks(n), THREADS, t.stream, t.params, t.grads, t.mom, n, lr, MOMENTUM);
        } else {
            ref_sgd(t.params, t.grads, t.mom, n, lr, MOMENTUM);
        }
    }
    {
        PROF_SCOPE("read_loss");  /* the step's one wait for the GPU */
        to_host(t, t.h_loss, t.loss, sizeof(float));
        wait_for_device(t);
    }
    return t.h_loss[0];
}

/* test accuracy, BATCH rows at a time */
static double evaluate(Trainer &t, const HostData &data) {
    PROF_FUNCTION();
    int correct = 0;
    for (int i0 = 0; i0 < NTEST; i0 += BATCH) {
        int n = NTEST - i0 < BATCH ? NTEST - i0 : BATCH;
        forward(t, t.test_x + (size_t)i0 * IN, n);
        {
            PROF_SCOPE("read_logits");
            to_host(t, t.h_logits, t.logits, (size_t)n * CLASSES * sizeof(float));
            wait_for_device(t);
        }
        correct += count_correct(t.h_logits, &data.test_y[(size_t)i0], n);
    }
    return (double)correct / NTEST;
}

static void trainer_init(Trainer &t, bool gpu, const HostData &data, const std::vector<float> &params) {
    PROF_FUNCTION();
    t = Trainer();
    t.gpu = gpu;
    if (gpu) GPU_CHECK(GPU(StreamCreateWithFlags)(&t.stream, GPU(StreamNonBlocking)));
    size_t np = param_count();
    t.params = dev_alloc<float>(t, np);
    t.grads = dev_alloc<float>(t, np);
    t.mom = dev_alloc<float>(t, np);
    t.train_x = dev_alloc<float>(t, (size_t)NTRAIN * IN);
    t.train_y = dev_alloc<int>(t, NTRAIN);
    t.test_x = dev_alloc<float>(t, (size_t)NTEST * IN);
    t.test_y = dev_alloc<int>(t, NTEST);
    t.idx = dev_alloc<int>(t, BATCH);
    t.y = dev_alloc<int>(t, BATCH);
    t.x = dev_alloc<float>(t, (size_t)BATCH * IN);
    t.a1 = dev_alloc<float>(t, (size_t)BATCH * H1);
    t.a2 = dev_alloc<float>(t, (size_t)BATCH * H2);
    t.logits = dev_alloc<float>(t, (size_t)BATCH * CLASSES);
    t.dlogits = dev_alloc<float>(t, (size_t)BATCH * CLASSES);
    t.d1 = dev_alloc<float>(t, (size_t)BATCH * H1);
    t.d2 = dev_alloc<float>(t, (size_t)BATCH * H2);
    t.loss = dev_alloc<float>(t, 1);
    t.h_idx = host_alloc<int>(t, BATCH);
    t.h_loss = host_alloc<float>(t, 1);
    t.h_logits = host_alloc<float>(t, (size_t)BATCH * CLASSES);
    {
        PROF_GPU_SCOPE("upload_data", t.stream);
        to_device(t, t.params, params.data(), np * sizeof(float));
        to_device(t, t.train_x, data.train_x.data(), data.train_x.size() * sizeof(float));
        to_device(t, t.train_y, data.train_y.data(), data.train_y.size() * sizeof(int));
        to_device(t, t.test_x, data.test_x.data(), data.test_x.size() * sizeof(float));
        to_device(t, t.test_y, data.test_y.data(), data.test_y.size() * sizeof(int));
    }
    wait_for_device(t);  /* the host vectors may go now */
    sampler_init(&t.sampler, 1234);
}

static void trainer_free(Trainer &t) {
    float *fs[] = { t.params, t.grads, t.mom, t.train_x, t.test_x, t.x, t.a1, t.a2,
                    t.logits, t.dlogits, t.d1, t.d2, t.loss };
    int *is[] = { t.train_y, t.test_y, t.idx, t.y };
    for (float *p : fs) dev_free(t, p);
    for (int *p : is) dev_free(t, p);
    host_free(t, t.h_idx);
    host_free(t, t.h_loss);
    host_free(t, t.h_logits);
    if (t.gpu) GPU_CHECK(GPU(StreamDestroy)(t.stream));
}

/* One more step from the GPU trainer's state, on the GPU and on the CPU
   reference: the loss and the parameters after it must agree. */
static int verify(Trainer &g, const HostData &data, float lr) {
    PROF_FUNCTION();
    size_t np = param_count();
    std::vector<float> params(np), mom(np);
    to_host(g, params.data(), g.params, np * sizeof(float));
    to_host(g, mom.data(), g.mom, np * sizeof(float));
    wait_for_device(g);
    Trainer c;
    trainer_init(c, false, data, params);
    memcpy(c.mom, mom.data(), np * sizeof(float));
    c.sampler = g.sampler;  /* the same next batch */
    float gpu_loss = train_step(g, lr), cpu_loss = train_step(c, lr);
    to_host(g, params.data(), g.params, np * sizeof(float));
    wait_for_device(g);
    double dloss = max_rel_diff(&gpu_loss, &cpu_loss, 1), dparams = max_rel_diff(params.data(), c.params, np);
    int ok = dloss < 1e-4 && dparams < 1e-4;
    printf("check: a GPU step against the CPU reference: loss %.6f vs %.6f, parameters differ by %.2g: %s\n",
           gpu_loss, cpu_loss, dparams, ok ? "ok" : "MISMATCH");
    trainer_free(c);
    return ok;
}

int main(int argc, char **argv) {
    /* One cycle of 3 recorded steps after start-up (steps 4-6), and its
       table; PROF_* environment variables override all of this. */
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = GPU_TRACE;                        /* .1.json: a file per cycle */
    cfg.schedule.skip_first = 2;
    cfg.schedule.wait = 1;
    cfg.schedule.warmup = 1;
    cfg.schedule.active = 3;
    cfg.schedule.repeat = 1;
    cfg.table = "sort=cpu_total,rows=16";
    PROF_INIT(&cfg);
    PROF_THREAD_NAME("main");
    int steps = argc > 1 ? atoi(argv[1]) : 40;
    if (steps < 1) { fprintf(stderr, "usage: %s [steps > 0]\n", argv[0]); return 2; }

    /* A GPU if there is one and the build has kernels; otherwise the same
       training on the CPU. */
    int ndev = 0;
    GPU(Error_t) err = GPU(GetDeviceCount)(&ndev);
    bool gpu = err == GPU(Success) && ndev > 0;
    if (gpu) {
        GPU_CHECK(print_device(0));
        if (!have_kernels) {
            fprintf(stderr, "%s: built without " GPU_COMPILER ", no device code; running the CPU reference path\n",
                    argv[0]);
            gpu = false;
        }
    } else {
        fprintf(stderr, "%s: no " GPU_API " device (%s: %s); running the CPU reference path\n", argv[0],
                err != GPU(Success) ? GPU(GetErrorName)(err) : "0 devices",
                err != GPU(Success) ? GPU(GetErrorString)(err) : "none found");
    }
    double t0 = now_s();

    HostData data;
    make_data(&data, 42);
    Trainer t;
    trainer_init(t, gpu, data, init_params(7));

    double window = 0;
    for (int step = 0; step < steps; step++) {
        float lr = lr_at(step, steps);
        float loss = train_step(t, lr);
        PROF_COUNTER("loss", loss);
        PROF_COUNTER("lr", lr);
        window += loss;
        if (is_print_step(step)) { print_loss(step, window, 1, lr); window = 0; }
        PROF_STEP();  /* last in the step: every region above has closed */
    }

    double acc = evaluate(t, data);
    printf("%d steps on the %s in %.3f s, test accuracy %.1f%%\n", steps, gpu ? "GPU" : "CPU", now_s() - t0,
           100.0 * acc);
    int ok = gpu ? verify(t, data, lr_at(steps - 1, steps)) : 1;

    trainer_free(t);
    PROF_SHUTDOWN();  /* writes the trace; also runs at exit if omitted */
    return ok ? 0 : 1;
}

#endif /* TRAIN_MLP_GPU_H */
