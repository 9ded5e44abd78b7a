// nccl_one_rank: one rank's NCCL all-reduce inside prof.h regions, for
// run_on_device.sh's NVTX section: run under `prof run`, NCCL's own NVTX
// ranges (domain "NCCL", payload schemas) land in the trace nested in
// "all_reduce". NCCL is dlopen()ed from argv[1] (PyPI's nvidia-nccl wheel:
// nvidia/nccl/lib/libnccl.so.2), so no nccl.h is needed to build it.
#define PROF_IMPLEMENTATION
#include "prof_cuda.h"

#include <dlfcn.h>
#include <stdio.h>

typedef struct { char internal[128]; } nccl_id;
typedef void *nccl_comm;
typedef int (*get_id_fn)(nccl_id *);
typedef int (*init_fn)(nccl_comm *, int, nccl_id, int);
typedef int (*all_reduce_fn)(const void *, void *, size_t, int, int, nccl_comm, cudaStream_t);
typedef int (*destroy_fn)(nccl_comm);

int main(int argc, char **argv) {
    void *h = dlopen(argc > 1 ? argv[1] : "libnccl.so.2", RTLD_NOW);
    if (!h) { fprintf(stderr, "nccl_one_rank: %s\n", dlerror()); return 2; }
    get_id_fn get_id = (get_id_fn)dlsym(h, "ncclGetUniqueId");
    init_fn init = (init_fn)dlsym(h, "ncclCommInitRank");
    all_reduce_fn all_reduce = (all_reduce_fn)dlsym(h, "ncclAllReduce");
    destroy_fn destroy = (destroy_fn)dlsym(h, "ncclCommDestroy");
    if (!get_id || !init || !all_reduce || !destroy) { fprintf(stderr, "nccl_one_rank: symbols missing\n"); return 2; }
    const size_t count = 1 << 20;       // floats: 4 MiB
    float *buf;
    cudaStream_t s;
    if (cudaMalloc(&buf, count * sizeof *buf) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) return 2;
    nccl_id id;
    nccl_comm comm;
    PROF_INIT(NULL);
    {
        PROF_SCOPE("init");
        if (get_id(&id) || init(&comm, 1, id, 0)) { fprintf(stderr, "nccl_one_rank: init failed\n"); return 2; }
    }
    for (int i = 0; i < 5; i++) {
        PROF_SCOPE("all_reduce");
        if (all_reduce(buf, buf, count, 7 /* ncclFloat32 */, 0 /* ncclSum */, comm, s)) return 2;
        cudaStreamSynchronize(s);
    }
    destroy(comm);
    PROF_SHUTDOWN();
    return 0;
}
