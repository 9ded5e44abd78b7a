/* mlp_common.h - what every training example shares, in C that C++ compiles
   too: the model's sizes, the random numbers, the learning-rate schedule, the
   loss lines they print and the clock.

   mlp.h (C: train_mlp.c, train_mlp_mpi.c) and gpu_mlp.h (C++: the GPU
   examples) include it, so all of them train the same model on the same data
   on the same schedule. Every program that includes it uses every function
   here, so none is unused in any.
*/
#ifndef MLP_COMMON_H
#define MLP_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum {
    IN = 32, H1 = 128, H2 = 128, CLASSES = 8,  /* 32 -> 128 -> 128 -> 8      */
    CLUSTERS = 3,                  /* Gaussian blobs per class: not linear */
    NTRAIN = 8192, NTEST = 2048, BATCH = 128,
    PRINT_EVERY = 10, EVAL_EVERY = 20, WARMUP = 5,
};
static const float PEAK_LR = 0.05f, MOMENTUM = 0.9f;

/* ---- deterministic random numbers (splitmix64) ------------------------- */

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float rng_uniform(uint64_t *s) { return (float)(rng_next(s) >> 40) / 16777216.0f; }
static float rng_normal(uint64_t *s) {  /* Box-Muller; 1 - u keeps log away from 0 */
    float u1 = 1.0f - rng_uniform(s), u2 = rng_uniform(s);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

/* ---- the schedule and the loss lines ----------------------------------- */

/* linear warmup, then cosine decay to 10% of the peak */
static float lr_at(int step, int steps) {
    if (step < WARMUP) return PEAK_LR * (float)(step + 1) / WARMUP;
    float t = (float)(step - WARMUP) / (float)(steps > WARMUP + 1 ? steps - WARMUP - 1 : 1);
    return PEAK_LR * (0.1f + 0.45f * (1.0f + cosf(3.14159265f * t)));
}

/* A loss line after the first step and then every PRINT_EVERY steps. */
static int is_print_step(int step) { return step == 0 || (step + 1) % PRINT_EVERY == 0; }

/* The line: the mean of the losses summed since the line before, over
   `ranks` processes (train_mlp_mpi.c sums them across its ranks; 1 elsewhere). */
static void print_loss(int step, double sum, int ranks, float lr) {
    int len = step == 0 ? 1 : PRINT_EVERY;
    printf("step %4d  loss %.4f  lr %.4f\n", step + 1, sum / (len * ranks), lr);
}

static double now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* MLP_COMMON_H */
