/* nvtx_plain: a program with no prof.h that calls a library speaking NVTX
   (fake_nccl): under `prof run` libprof_nvtx.so's own recorder writes the
   trace. */
#include <stddef.h>

void fake_nccl_setup(void);
void fake_nccl_all_reduce(size_t bytes, int max);

int main(void) {
    fake_nccl_setup();
    for (int i = 0; i < 3; i++) fake_nccl_all_reduce(1024, 0);
    return 0;
}
