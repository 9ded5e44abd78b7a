"""gpu_torch.py LIB - torch.profiler on bench/gpu_launch.cuh's loop, the loop
bench/gpu_capture.cu times under prof.h, in the same run on the same GPU.

LIB is gpu_launch.cu built as a shared object. The loop runs (ctypes) in
batches of 1,000 launches: with no profiler, under torch.profiler with CUDA
activities alone, and with CPU and CUDA; the profiler's schedule records 2
steps of every 5 after a warm-up, as gpu_capture.cu's does, and prints the
median and best ns per launch by place (outside a window, warm-up, inside):
    torch cuda outside bare median 4210.3 best 4010.2"""
import ctypes
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

CYCLES = 12


def run(lib, acts, label):
    places = {"outside": [], "warmup": [], "inside": []}
    steps = 5 * CYCLES
    if acts is None:
        for step in range(steps):
            m = step % 5
            places["outside" if m < 2 else "warmup" if m == 2 else "inside"].append(lib.gpu_launch_run(1000))
    else:
        with profile(activities=acts, schedule=schedule(wait=2, warmup=1, active=2),
                     on_trace_ready=lambda p: None) as prof:
            for step in range(steps):
                m = step % 5
                places["outside" if m < 2 else "warmup" if m == 2 else "inside"].append(lib.gpu_launch_run(1000))
                prof.step()
    for place, v in places.items():
        print(f"torch {label} {place} bare median {statistics.median(v):.1f} best {min(v):.1f}")


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.gpu_launch_run.restype = ctypes.c_double
    lib.gpu_launch_run.argtypes = [ctypes.c_int]
    torch.cuda.init()
    for _ in range(3):
        lib.gpu_launch_run(1000)        # module load, first faults
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    for _round in range(2):
        run(lib, None, "none")
        run(lib, [ProfilerActivity.CUDA], "cuda")
        run(lib, [ProfilerActivity.CPU, ProfilerActivity.CUDA], "cpu+cuda")


if __name__ == "__main__":
    main()
