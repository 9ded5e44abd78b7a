#!/usr/bin/env python3
"""Checks what kernel capture (PROF_CUPTI=1) wrote into a JSON trace, the
way Kineto writes it, and prints what it measured.

    check_cupti.py TRACE [--launches N] [--kernels NAME,...] [--figures]

  - every kernel, gpu_memcpy and gpu_memset event sits on a GPU track
    (pid = device, tid = stream) with Kineto's args (device, stream,
    correlation; kernels: grid, block, registers per thread, shared memory;
    copies and fills: bytes, memory bandwidth (GB/s));
  - every one of them has the cuda_runtime (or cuda_driver: a library's
    cuLaunchKernel) call that launched it, on a CPU
    thread of the process, tied by an ac2g flow (s at the call, f at the GPU
    event, the same id) and by the same correlation; the call begins before
    what it launched;
  - gpu_user_annotation events (the GPU regions) carry no stream, so that
    HTA does not count them as kernels; every kernel, copy and fill
    launched inside a GPU region's CPU side (its call on that thread,
    within that span) onto the region's stream lies inside the region,
    exactly, to the nanosecond (--slack-us widens it, for a trace written
    before prof.h put both on one clock);
  - no two events on a GPU track overlap partially (Perfetto's UI drops
    such an X event from the timeline: perfetto#4280);
  - kernels launched by a CUDA graph carry "graph id" and "graph node id";
    every flow has one start and one end (a graph launch starts one per
    kernel it ran);
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


def check_trace(d, launches=None, kernels=(), slack_us=0.0, inside_names=None):
    """The checks above on a loaded trace; returns (GPU events, runtime
    calls, GPU regions, [first kernel's start - region's start, us],
    [region's end - last kernel's end, us]). Which kernels a region
    launched: those whose call lies in its CPU side, more than MARGIN_NS
    from its edges (a call's place on the CPU clock is as good as the
    readings of the tracer's clock: one just after a region may seem inside
    it); or, given inside_names (what a test knows it launched inside a
    region), each kernel of those names belongs to the region nearest its
    call on its thread."""
    ev = d["traceEvents"]
    gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    rt = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")]
    ann = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gpu_user_annotation"]
    flows = {}
    for e in ev:
        if e.get("cat") == "ac2g" and e["ph"] in "sf":
            flows.setdefault(e["id"], {})[e["ph"]] = e
    check(gpu, "no kernel, copy or fill in the trace")
    act_flows = {fid: f for fid, f in flows.items() if fid >= 1 << 32}   # kernel capture's, apart from regions'
    for fid, f in act_flows.items():
        check(set(f) == {"s", "f"}, f"flow {fid} has {sorted(f)}, not one start and one end")
    n_s = sum(1 for e in ev if e.get("cat") == "ac2g" and e["ph"] == "s" and e["id"] >= 1 << 32)
    check(n_s == len(act_flows), f"{n_s} flow starts for {len(act_flows)} flow ids: an id used twice")
    check("prof_gpu_dropped_activities" in d, "header lacks prof_gpu_dropped_activities")
    cpu_pids = {e["pid"] for e in ev if e.get("cat") in ("user_annotation", "cpu_op")}
    by_corr = {}
    for e in rt:
        args = e["args"]
        check(isinstance(args.get("cbid"), int) and isinstance(args.get("correlation"), int),
              f"runtime call without cbid/correlation: {e}")
        check(e["pid"] in cpu_pids, f"runtime call {e['name']} not on the process's CPU tracks (pid {e['pid']})")
        check(args["correlation"] not in by_corr, f"two calls with correlation {args['correlation']}: {e['name']} and "
              f"{by_corr.get(args['correlation'], {}).get('name')} (a runtime call's own driver call written too?)")
        by_corr[args["correlation"]] = e
    f_at_all = {}
    for f in flows.values():
        if "f" in f:
            f_at_all.setdefault((f["f"]["pid"], f["f"]["tid"], f["f"]["ts"]), []).append(f)
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
        if "graph id" in args:
            check(isinstance(args["graph id"], int) and isinstance(args.get("graph node id"), int),
                  f"{e['name']}: graph id without a node id: {args}")
        call = by_corr.get(args["correlation"])
        check(call is not None, f"{e['name']} (correlation {args['correlation']}) has no runtime call")
        check(call["ts"] <= e["ts"], f"{e['name']} begins before the call that launched it ({call['name']})")
        fl = next((f for f in f_at_all.get((e["pid"], e["tid"], e["ts"]), []) if "s" in f
                   and f["s"]["ts"] == call["ts"] and f["s"]["tid"] == call["tid"]), None)
        check(fl is not None, f"{e['name']}: no ac2g flow from its launch")
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
    check_tracks(ev)
    starts, ends = [], []
    cpu_side = {e["args"]["correlation"]: e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                and "correlation" in e.get("args", {})}
    slack = ns(slack_us)
    # every region's CPU side, with a GPU side in the trace or not (a flight
    # dump's last GPU region is still in flight when it is written)
    regions = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
               and not e["name"].startswith("ProfilerStep#")]
    for r in ann:
        c = cpu_side.get(r["args"]["correlation"])
        if c is None:                   # a flight dump's ring began after its CPU side
            continue
        r0, r1 = ns(r["ts"]), ns(r["ts"]) + ns(r["dur"])
        if inside_names is None:
            inside = [k for k in gpu if k["pid"] == r["pid"] and k["tid"] == r["tid"] and launched_in(by_corr, k, c)]
        else:
            inside = [k for k in gpu if k["pid"] == r["pid"] and k["tid"] == r["tid"] and k["name"] in inside_names
                      and nearest(by_corr, k, regions) is c]
        for k in inside:
            k0, k1 = ns(k["ts"]), ns(k["ts"]) + ns(k["dur"])
            check(r0 - slack <= k0 and k1 <= r1 + slack,
                  f"{k['name']} ({k0 - r0} ns from the start, {k1 - r1} ns past the end) is not inside "
                  f"GPU region {r['name']} that launched it")
        if inside:
            starts.append((min(ns(k["ts"]) for k in inside) - r0) / 1000)
            ends.append((r1 - max(ns(k["ts"]) + ns(k["dur"]) for k in inside)) / 1000)
    return gpu, rt, ann, starts, ends


def ns(us):
    """A ts or dur (us, 3 decimals) in whole ns, as Perfetto reads it."""
    return round(us * 1000)


MARGIN_NS = 1000


def launched_in(by_corr, k, cpu):
    """Whether k's launch call is on cpu's thread, within its span (more
    than MARGIN_NS from its edges)."""
    call = by_corr.get(k["args"]["correlation"])
    return (call is not None and call["pid"] == cpu["pid"] and call["tid"] == cpu["tid"]
            and ns(cpu["ts"]) + MARGIN_NS < ns(call["ts"]) < ns(cpu["ts"]) + ns(cpu["dur"]) - MARGIN_NS)


def nearest(by_corr, k, cpus):
    """The CPU side on k's call's thread nearest that call (0: inside)."""
    call = by_corr.get(k["args"]["correlation"])
    if call is None:
        return None
    t = ns(call["ts"])
    mine = [c for c in cpus if c["pid"] == call["pid"] and c["tid"] == call["tid"]]
    return min(mine, key=lambda c: max(ns(c["ts"]) - t, t - ns(c["ts"]) - ns(c["dur"]), 0), default=None)


def check_tracks(ev):
    """On each GPU track (pid, tid of a kernel, GPU region or
    synchronisation), X events nest or follow one another: none overlaps
    another partially."""
    tracks = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS + ("gpu_user_annotation", "cuda_sync"):
            tracks.setdefault((e["pid"], e["tid"]), []).append((ns(e["ts"]), -ns(e["dur"]), e["name"]))
    for key, xs in tracks.items():
        open_ = []
        for t0, mdur, name in sorted(xs):
            t1 = t0 - mdur
            while open_ and open_[-1][0] <= t0:
                open_.pop()
            check(not open_ or t1 <= open_[-1][0],
                  f"on GPU track {key}, {name} [{t0}, {t1}] ns overlaps {open_[-1][1] if open_ else ''} partially")
            open_.append((t1, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--launches", type=int)
    ap.add_argument("--kernels", default="")
    ap.add_argument("--slack-us", type=float, default=0.0)
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
