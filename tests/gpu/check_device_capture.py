#!/usr/bin/env python3
"""check_device_capture.py TRACE TRUTH - what device_capture.cu's run wrote
(tests/gpu/run_on_device.sh): with no PROF_INIT and CPU regions only,
capture started with the profiler; every kernel, copy and fill of the two
recorded steps is in the trace with its launch call and flow
(check_cupti.py's checks), the cuBLAS GEMMs' calls included (cuda_driver,
or cuda_runtime where cuBLAS launched through the runtime), each inside its
region; the graph instantiated before any window has its 3 kernels per
recorded step, with graph ids; each recorded step's cudaStreamSynchronize
is a Stream Sync (cuda_sync) inside its call. Prints what it found."""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_cupti import check_trace  # noqa: E402
from run_case import check  # noqa: E402


def main():
    d = json.load(open(sys.argv[1]))
    t = json.load(open(sys.argv[2]))
    gpu, calls, _, _, _ = check_trace(d)
    ev = d["traceEvents"]
    steps = sorted(e["name"] for e in ev if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    check(steps == ["ProfilerStep#3", "ProfilerStep#4"], f"steps {steps}")
    regions = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
               and not e["name"].startswith("ProfilerStep#")]
    by_corr = {e["args"]["correlation"]: e for e in calls}
    where = collections.Counter()
    for k in gpu:
        call = by_corr[k["args"]["correlation"]]
        around = [r["name"] for r in regions if r["tid"] == call["tid"] and r["ts"] <= call["ts"] <= r["ts"] + r["dur"]]
        check(len(around) == 1, f"{k['name']}'s call {call['name']} inside {around}")
        where[(around[0], call["cat"], call["name"])] += 1
    n = t["recorded_steps"]
    graph = [k for k in gpu if "graph id" in k["args"]]
    check(len(graph) == n * t["graph_kernels"], f"{len(graph)} graph kernels, not {n * t['graph_kernels']}")
    own = sum(v for (r, _, _), v in where.items() if r == "own")
    check(own == n * t["own"], f"{own} kernels of region own")
    gemm = sum(v for (r, _, _), v in where.items() if r == "gemm")
    check(gemm >= n * t["gemms"], f"{gemm} kernels under gemm, fewer than {n * t['gemms']} GEMMs")
    # each recorded step's cudaStreamSynchronize is a Stream Sync (cuda_sync),
    # under its call's correlation, inside it, on the kernels' stream
    syncs = {e["args"]["correlation"]: e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_sync"}
    waits = [c for c in calls if c["name"] == "cudaStreamSynchronize"]
    check(len(waits) == n, f"{len(waits)} cudaStreamSynchronize calls, not {n}")
    streams = {k["args"]["stream"] for k in gpu}
    for c in waits:
        y = syncs.get(c["args"]["correlation"])
        check(y is not None and y["name"] == "Stream Sync" and y["args"]["stream"] in streams
              and c["ts"] <= y["ts"] and y["ts"] + y["dur"] <= c["ts"] + c["dur"] + 0.002,
              f"cudaStreamSynchronize {c['args']['correlation']}: its cuda_sync {y}")
    drivers = sum(1 for c in calls if c["cat"] == "cuda_driver")
    print(f"device capture: {len(gpu)} GPU events, every one with its call; {drivers} cuda_driver calls; "
          f"by region and call: " + ", ".join(f"{r}/{c}:{v}" for (r, _, c), v in sorted(where.items())))


if __name__ == "__main__":
    main()
