#!/usr/bin/env python3
"""Checks what kernel capture (PROF_CUPTI=1) wrote into a JSON trace, the
way Kineto writes it, and prints what it measured.

    check_cupti.py TRACE [--launches N] [--kernels NAME,...] [--figures]

  - every kernel, gpu_memcpy and gpu_memset event sits on a GPU track
    (pid = device, tid = stream) with Kineto's args (device, stream,
    correlation; kernels: grid, block, registers per thread, shared memory;
    copies and fills: bytes, memory bandwidth (GB/s));
  - every one of them has the cuda_runtime call that launched it, on a CPU
    thread of the process, tied by an ac2g flow (s at the call, f at the GPU
    event, the same id) and by the same correlation; the call begins before
    what it launched;
  - gpu_user_annotation events (the GPU regions) carry no stream, so that
    HTA does not count them as kernels; each kernel that began inside a GPU
    region's span on the same stream ends inside it (both within
    --slack-us);
  - --launches N: exactly N kernels, copies and fills; --kernels: each name
    appears.
--figures prints how the GPU regions (event pairs placed by anchors) sit
against the kernels inside them (CUPTI's timestamps): the alignment error.
Exit 0: all passed; 1: a check failed (the first failure printed)."""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_case import check  # noqa: E402

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def check_trace(d, launches=None, kernels=(), slack_us=2.0):
    """The checks above on a loaded trace; returns (GPU events, runtime
    calls, GPU regions, [first kernel's start - region's start, us],
    [region's end - last kernel's end, us])."""
    ev = d["traceEvents"]
    gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    rt = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"]
    ann = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gpu_user_annotation"]
    flows = {}
    for e in ev:
        if e.get("cat") == "ac2g" and e["ph"] in "sf":
            flows.setdefault(e["id"], {})[e["ph"]] = e
    check(gpu, "no kernel, copy or fill in the trace")
    check("prof_gpu_dropped_activities" in d, "header lacks prof_gpu_dropped_activities")
    cpu_pids = {e["pid"] for e in ev if e.get("cat") in ("user_annotation", "cpu_op")}
    by_corr = {}
    for e in rt:
        args = e["args"]
        check(isinstance(args.get("cbid"), int) and isinstance(args.get("correlation"), int),
              f"runtime call without cbid/correlation: {e}")
        check(e["pid"] in cpu_pids, f"runtime call {e['name']} not on the process's CPU tracks (pid {e['pid']})")
        by_corr[args["correlation"]] = e
    f_at = {(f["f"]["pid"], f["f"]["tid"], f["f"]["ts"]): f for f in flows.values() if "f" in f}
    for e in gpu:
        args = e["args"]
        for k in ("device", "stream", "correlation"):
            check(isinstance(args.get(k), int), f"{e['cat']} {e['name']} lacks args.{k}")
        check(e["pid"] == args["device"] and e["tid"] == args["stream"],
              f"{e['name']} not on its device/stream track: {e}")
        if e["cat"] == "kernel":
            for k in ("grid", "block"):
                check(isinstance(args.get(k), list) and len(args[k]) == 3, f"kernel {e['name']} args.{k}: {args.get(k)}")
            for k in ("registers per thread", "shared memory"):
                check(isinstance(args.get(k), int), f"kernel {e['name']} lacks args.{k}")
        else:
            check(isinstance(args.get("bytes"), int) and "memory bandwidth (GB/s)" in args,
                  f"{e['cat']} {e['name']} lacks bytes / memory bandwidth")
        call = by_corr.get(args["correlation"])
        check(call is not None, f"{e['name']} (correlation {args['correlation']}) has no runtime call")
        check(call["ts"] <= e["ts"], f"{e['name']} begins before the call that launched it ({call['name']})")
        fl = f_at.get((e["pid"], e["tid"], e["ts"]))
        check(fl is not None and "s" in fl, f"{e['name']}: no ac2g flow from its launch")
        s = fl["s"]
        check(s["pid"] == call["pid"] and s["tid"] == call["tid"] and s["ts"] == call["ts"],
              f"{e['name']}: its flow does not start at {call['name']}")
    for e in ann:
        check("stream" not in e.get("args", {}), f"gpu_user_annotation {e['name']} has a stream: HTA would count it")
    if launches is not None:
        check(len(gpu) == launches, f"{len(gpu)} kernels, copies and fills, not {launches}")
    names = {e["name"] for e in gpu}
    for want in kernels:
        check(any(want in n for n in names), f"no kernel named like {want!r}; have {sorted(names)[:8]}")
    starts, ends = [], []
    for r in ann:
        r0, r1 = r["ts"], r["ts"] + r["dur"]
        # what began inside it, away from its ends (the next launch may
        # begin where it ends, within the placement's rounding)
        inside = [k for k in gpu if k["pid"] == r["pid"] and k["tid"] == r["tid"]
                  and r0 - slack_us <= k["ts"] < r1 - slack_us]
        for k in inside:
            check(k["ts"] + k["dur"] <= r1 + slack_us,
                  f"{k['name']} ends {k['ts'] + k['dur'] - r1:.3f} us after GPU region {r['name']}")
        if inside:
            starts.append(min(k["ts"] for k in inside) - r0)
            ends.append(r1 - max(k["ts"] + k["dur"] for k in inside))
    return gpu, rt, ann, starts, ends


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--launches", type=int)
    ap.add_argument("--kernels", default="")
    ap.add_argument("--slack-us", type=float, default=2.0)
    ap.add_argument("--figures", action="store_true")
    a = ap.parse_args()
    with open(a.trace, "rb") as f:
        d = json.loads(f.read().decode("utf-8"))
    gpu, rt, ann, starts, ends = check_trace(d, a.launches, [k for k in a.kernels.split(",") if k], a.slack_us)
    names = {e["name"] for e in gpu}
    print(f"check_cupti: {len(gpu)} kernels/copies/fills ({len(names)} names), {len(rt)} runtime calls, "
          f"{len(ann)} GPU regions; dropped {d['prof_gpu_dropped_activities']}")
    if a.figures:
        if starts:
            print(f"alignment: first kernel starts {statistics.median(starts):.2f} us after its GPU region "
                  f"(median of {len(starts)}; min {min(starts):.2f}, max {max(starts):.2f}); last kernel ends "
                  f"{statistics.median(ends):.2f} us before its end (min {min(ends):.2f}, max {max(ends):.2f})")
        else:
            print("alignment: no kernel inside a GPU region on its stream")
    print("check_cupti: all passed")


if __name__ == "__main__":
    main()
