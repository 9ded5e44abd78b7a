/* device_capture.cu - kernel capture on a real GPU as an engine uses it
   (tests/gpu/run_on_device.sh; checked by check_device_capture.py).

   No PROF_INIT and no GPU region: CPU regions around the launches, and
   PROF_CUPTI=1 in the environment, as a torch.profiler user works; capture
   must start with the profiler. The schedule (wait 2, warmup 1, active 2,
   once) records steps 3 and 4 of 6. Each step:
     gemm    cuBLAS SGEMMs, which cuBLASLt launches through the driver API
     own     a kernel of this program's (<<<>>>: the runtime)
     graph   a CUDA graph of 3 kernels, captured and instantiated at step 0,
             before any window, and launched in every step
   truth.json says what was launched in the recorded steps. */
#define PROF_IMPLEMENTATION
#include "prof_cuda.h"

#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>

#define N 512
#define GEMMS 4

__global__ void own_kernel(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 0.5f + 1.0f;
}

__global__ void graph_kernel(float *x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += a;
}

#define CHECK(call)                                                                       \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                   \
            return 2;                                                                     \
        }                                                                                 \
    } while (0)

int main(void) {
    setenv("PROF_SCHEDULE", "wait=2,warmup=1,active=2,repeat=1", 1);
    cudaStream_t s;
    float *a, *b, *c;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&a, N * N * sizeof(float)));
    CHECK(cudaMalloc(&b, N * N * sizeof(float)));
    CHECK(cudaMalloc(&c, N * N * sizeof(float)));
    CHECK(cudaMemset(a, 0, N * N * sizeof(float)));
    CHECK(cudaMemset(b, 0, N * N * sizeof(float)));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cuBLAS could not start\n");
        return 2;
    }
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    const float one = 1.0f, zero = 0.0f;
    for (int step = 0; step < 6; step++) {
        if (step == 0) {                /* outside any window: the graph is made */
            PROF_SCOPE("capture graph");
            CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            for (int k = 0; k < 3; k++) graph_kernel<<<N * N / 256, 256, 0, s>>>(c, N * N, 1.0f);
            CHECK(cudaStreamEndCapture(s, &graph));
            CHECK(cudaGraphInstantiate(&exec, graph, 0));
        }
        {
            PROF_SCOPE("gemm");
            for (int g = 0; g < GEMMS; g++)
                if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, N, b, N, &zero, c, N) !=
                    CUBLAS_STATUS_SUCCESS) {
                    fprintf(stderr, "cublasSgemm failed\n");
                    return 2;
                }
        }
        {
            PROF_SCOPE("own");
            own_kernel<<<N * N / 256, 256, 0, s>>>(c, N * N);
        }
        {
            PROF_SCOPE("graph");
            CHECK(cudaGraphLaunch(exec, s));
        }
        CHECK(cudaStreamSynchronize(s));
        PROF_STEP();
    }
    PROF_SHUTDOWN();
    FILE *f = fopen("truth.json", "w");
    if (f) {
        fprintf(f, "{\"recorded_steps\": 2, \"gemms\": %d, \"own\": 1, \"graph_kernels\": 3}\n", GEMMS);
        fclose(f);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cublasDestroy(h);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaStreamDestroy(s);
    return 0;
}
