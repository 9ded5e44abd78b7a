/* thread_pool.c - an inference engine's shape, annotated with prof.h: a fixed
   pool of threads runs a graph of ops for every token, each op split across
   the threads by rows, a barrier after each op (ggml, llama.cpp's CPU backend
   and most CPU engines look like this rather than like one training loop).

   The pattern that makes a pool readable in a profile:
     - every thread names itself once (PROF_THREAD_NAME), so its track says
       which worker it is;
     - every thread opens one "graph" region around its whole share of the
       graph, and an op region around each op it computes. Time spent waiting
       at the barriers is then in no op, so it is the self time of "graph":
       the table grouped by thread shows, per worker, how long it waited;
     - PROF_STEP() once per token, on the thread that drives the graph, after
       every thread's graph region has closed (one more barrier), so that no
       region straddles two steps.

   Build and run (from examples/):
       cc -std=c11 -O2 -I.. -DPROF_ENABLE thread_pool.c -o thread_pool -lm -pthread
       ./thread_pool [tokens] [threads]             (default 16 and 4)
   It writes thread_pool_trace.json and prints the table on stderr, a row per
   op and thread (PROF_TABLE overrides: rows summed over threads without
   group=thread).
*/
#define _POSIX_C_SOURCE 200809L     /* pthread_barrier_t in a strict -std=c11 build */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROF_IMPLEMENTATION
#include "prof.h"

enum { DIM = 192, HIDDEN = 384, VOCAB = 256, MAX_THREADS = 16 };
typedef enum { OP_MATMUL, OP_ADD, OP_GELU, OP_SOFTMAX } op_kind;

/* One node of the graph: out = op(a, b), rows split across the threads. */
typedef struct node {
    const char *name;               /* the region's name: a literal */
    op_kind op;
    const float *a, *b;             /* matmul: a is 1 x k, b is k x n */
    float *out;
    int n, k;
} node;

typedef struct pool {
    node nodes[8];
    int nnodes, nthreads, tokens;
    pthread_barrier_t barrier;
} pool;

static float *randn(size_t n, unsigned seed) {
    float *v = (float *)malloc(n * sizeof *v);
    if (!v) exit(1);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = ((float)(seed >> 9) / (float)(1u << 23) - 0.5f) * 0.1f;
    }
    return v;
}

/* Thread ith of nth computes its rows [lo, hi) of one node. */
static void compute(const node *nd, int ith, int nth) {
    int lo = nd->n * ith / nth, hi = nd->n * (ith + 1) / nth;
    switch (nd->op) {
    case OP_MATMUL:
        PROF_FLOPS(2LL * (hi - lo) * nd->k);
        for (int j = lo; j < hi; j++) {
            float s = 0.0f;
            for (int i = 0; i < nd->k; i++) s += nd->a[i] * nd->b[(size_t)i * (size_t)nd->n + (size_t)j];
            nd->out[j] = s;
        }
        break;
    case OP_ADD:
        for (int j = lo; j < hi; j++) nd->out[j] = nd->a[j] + nd->b[j];
        break;
    case OP_GELU:
        for (int j = lo; j < hi; j++) {
            float x = nd->a[j];
            nd->out[j] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
        }
        break;
    case OP_SOFTMAX:                /* small: thread 0 does it all, the others wait */
        if (ith == 0) {
            float mx = nd->a[0], sum = 0.0f;
            for (int j = 1; j < nd->n; j++) mx = nd->a[j] > mx ? nd->a[j] : mx;
            for (int j = 0; j < nd->n; j++) sum += nd->out[j] = expf(nd->a[j] - mx);
            for (int j = 0; j < nd->n; j++) nd->out[j] /= sum;
        }
        break;
    }
}

/* What every thread runs for one token: its share of every node. */
static void run_graph(pool *p, int ith) {
    PROF_SCOPE("graph");            /* self time: waiting at the barriers */
    for (int i = 0; i < p->nnodes; i++) {
        { PROF_SCOPE(p->nodes[i].name); compute(&p->nodes[i], ith, p->nthreads); }
        pthread_barrier_wait(&p->barrier);
    }
}

typedef struct worker_arg { pool *p; int ith; } worker_arg;

static void *worker_main(void *arg) {
    const worker_arg *w = (const worker_arg *)arg;
    char name[16];                  /* made at run time: prof_intern keeps a copy */
    snprintf(name, sizeof name, "worker-%d", w->ith);
    PROF_THREAD_NAME(prof_intern(name, strlen(name)));
    for (int t = 0; t < w->p->tokens; t++) {
        pthread_barrier_wait(&w->p->barrier);    /* the token's input is ready */
        run_graph(w->p, w->ith);
        pthread_barrier_wait(&w->p->barrier);    /* every graph region has closed */
    }
    return NULL;
}

int main(int argc, char **argv) {
    int tokens = argc > 1 ? atoi(argv[1]) : 16, nthreads = argc > 2 ? atoi(argv[2]) : 4;
    if (tokens < 1 || nthreads < 1 || nthreads > MAX_THREADS) {
        fprintf(stderr, "usage: %s [tokens > 0] [threads 1..%d]\n", argv[0], MAX_THREADS);
        return 2;
    }
    prof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output = "thread_pool_trace.json";
    cfg.table = "sort=self_cpu,rows=12,group=thread";
    PROF_INIT(&cfg);
    PROF_THREAD_NAME("worker-0");   /* the main thread is worker 0, as in ggml */

    /* a two-layer MLP over a token embedding: logits = W2 gelu(W1 x + b1) */
    float *x = randn(DIM, 1), *w1 = randn((size_t)DIM * HIDDEN, 2), *b1 = randn(HIDDEN, 3);
    float *w2 = randn((size_t)HIDDEN * VOCAB, 4), *h = randn(HIDDEN, 5), *hb = randn(HIDDEN, 6);
    float *hg = randn(HIDDEN, 7), *logits = randn(VOCAB, 8), *probs = randn(VOCAB, 9);
    pool p = { .nnodes = 5, .nthreads = nthreads, .tokens = tokens };
    p.nodes[0] = (node){ "mul_mat_up", OP_MATMUL, x, w1, h, HIDDEN, DIM };
    p.nodes[1] = (node){ "add_bias", OP_ADD, h, b1, hb, HIDDEN, 0 };
    p.nodes[2] = (node){ "gelu", OP_GELU, hb, NULL, hg, HIDDEN, 0 };
    p.nodes[3] = (node){ "mul_mat_down", OP_MATMUL, hg, w2, logits, VOCAB, HIDDEN };
    p.nodes[4] = (node){ "soft_max", OP_SOFTMAX, logits, NULL, probs, VOCAB, 0 };
    pthread_barrier_init(&p.barrier, NULL, (unsigned)nthreads);

    pthread_t th[MAX_THREADS];
    worker_arg args[MAX_THREADS];
    for (int i = 1; i < nthreads; i++) {
        args[i] = (worker_arg){ &p, i };
        pthread_create(&th[i], NULL, worker_main, &args[i]);
    }
    double checksum = 0.0;
    for (int t = 0; t < tokens; t++) {
        x[t % DIM] += 0.01f;                    /* the next token's embedding */
        pthread_barrier_wait(&p.barrier);
        run_graph(&p, 0);
        pthread_barrier_wait(&p.barrier);       /* so the step ends after every graph region */
        int best = 0;
        for (int j = 1; j < VOCAB; j++) best = probs[j] > probs[best] ? j : best;
        checksum += best;
        PROF_STEP();                            /* every thread's graph region has closed */
    }
    for (int i = 1; i < nthreads; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&p.barrier);
    printf("%d tokens on %d threads, checksum %.0f\n", tokens, nthreads, checksum);
    free(x); free(w1); free(b1); free(w2); free(h); free(hb); free(hg); free(logits); free(probs);
    PROF_SHUTDOWN();
    return 0;
}
