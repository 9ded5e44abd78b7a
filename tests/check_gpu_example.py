#!/usr/bin/env python3
"""Runs a GPU example (examples/train_mlp_cuda.cu, train_mlp_hip.cpp) in the
current directory and checks its trace with Python's json.

    check_gpu_example.py --api CUDA|HIP BINARY

The program says on which path it trains, and the checks follow:
  - no device ("no CUDA device (...)" on stderr, once): it trains on the CPU
    reference; prof.h says exactly once that GPU timing is off; the trace has
    every region of every recorded step on the CPU side and nothing of a GPU;
  - a device ("CUDA device 0: ..." on stdout): the same CPU regions, plus for
    each PROF_GPU_SCOPE a gpu_user_annotation event on the device's stream
    track, tied to its CPU region by an ac2g flow (s at the CPU region, f at
    the GPU event), nested on the GPU as on the CPU; deviceProperties filled;
    the table has GPU columns; the GPU step matched the CPU reference;
  - a device but a build without device code (HIP built by a host compiler):
    the CPU regions only.
Exit 0: all passed; 1: a check failed (the first failure is printed)."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

# The example's schedule: skip_first=2, wait=1, warmup=1, active=3.
RECORDED_STEPS = [4, 5, 6]
# Every step's regions; the GPU ones are PROF_GPU_SCOPEs.
CPU_ONLY = ["next_batch", "read_loss"]
GPU_SCOPED = ["upload_batch", "forward", "linear1", "linear2", "linear3", "loss",
              "backward", "linear3_bwd", "linear2_bwd", "linear1_bwd", "optimizer_step"]
NESTED = {"forward": ["linear1", "linear2", "linear3"],
          "backward": ["linear3_bwd", "linear2_bwd", "linear1_bwd"]}
EPS = 0.002  # us: ts and dur are exact to the ns, each rounded once
GPU_EPS = 0.05  # us: GPU times are event offsets scaled onto the CPU clock,
                # each end rounded on its own; back-to-back events may coincide


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    d = json.loads(raw.decode("utf-8"))
    keys = list(d)
    for key in ("schemaVersion", "deviceProperties", "baseTimeNanoseconds", "traceEvents"):
        check(key in d, f"{path}: top-level key {key} missing")
    check(keys.index("deviceProperties") < keys.index("traceEvents"), "deviceProperties after traceEvents")
    for e in d["traceEvents"]:
        check("ph" in e and "name" in e and "pid" in e and "tid" in e, f"event lacks ph/name/pid/tid: {e}")
        if e["ph"] == "X":
            check(e.get("cat"), f"X event without cat: {e}")
            check(e["dur"] >= 0, f"negative duration: {e}")
    return d


def inside(outer, inner, eps=EPS):
    return outer["ts"] - eps <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + eps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True, choices=["CUDA", "HIP"])
    ap.add_argument("binary")
    a = ap.parse_args()
    api = a.api

    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run([a.binary], env=env, capture_output=True, text=True, timeout=600)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    check(p.returncode == 0, f"{a.binary} exited {p.returncode}")

    no_device = re.findall(rf"^.*: no {api} device \(.*\); running the CPU reference path$", p.stderr, re.M)
    device = re.findall(rf"^{api} device 0: .+$", p.stdout, re.M)
    no_code = re.findall(r"^.*: built without hipcc, no device code; running the CPU reference path$",
                         p.stderr, re.M)
    timing_off = [l for l in p.stderr.splitlines() if "GPU timing is off" in l]
    check(len(no_device) + len(device) == 1,
          f"the program must say once whether it found a {api} device: {no_device + device}")
    gpu = bool(device) and not no_code
    mode = "GPU" if gpu else ("no device" if no_device else "a device, no device code in this build")
    print(f"check_gpu_example: {api}, {mode}")

    traces = sorted(glob.glob("train_mlp_*_trace*.json"))
    check(len(traces) == 1, f"expected one trace (one cycle), found {traces}")
    d = load(traces[0])
    ev = d["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    cpu = [e for e in xs if e["cat"] == "user_annotation"]
    gpu_ev = [e for e in xs if e["cat"] == "gpu_user_annotation"]
    flows = [e for e in ev if e["ph"] in ("s", "f")]

    # ---- the CPU side of every region of every recorded step ----
    steps = sorted((e for e in cpu if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    check([int(s["name"][13:]) for s in steps] == RECORDED_STEPS,
          f"recorded steps {[s['name'] for s in steps]}, expected ProfilerStep#{RECORDED_STEPS}")
    per_step = []
    for s in steps:
        mine = [e for e in cpu if e is not s and e["pid"] == s["pid"] and e["tid"] == s["tid"] and inside(s, e)]
        by_name = {}
        for e in mine:
            by_name.setdefault(e["name"], []).append(e)
        for name in CPU_ONLY + GPU_SCOPED:
            check(len(by_name.get(name, [])) == 1,
                  f"{s['name']}: {len(by_name.get(name, []))} '{name}' regions, expected 1")
        for outer, inner in NESTED.items():
            for name in inner:
                check(inside(by_name[outer][0], by_name[name][0]), f"{s['name']}: {name} not inside {outer}")
        order = [by_name[n][0] for n in ["next_batch", "upload_batch", "forward", "loss", "backward",
                                         "optimizer_step", "read_loss"]]
        for x, y in zip(order, order[1:]):
            check(x["ts"] + x["dur"] <= y["ts"] + EPS, f"{s['name']}: {x['name']} ends after {y['name']} begins")
        per_step.append(by_name)
    for c in ("loss", "lr"):
        n = sum(1 for e in ev if e["ph"] == "C" and e["name"] == c)
        check(n == len(steps), f"{n} samples of counter {c}, expected {len(steps)}")
    check("Self CPU" in p.stderr and "Self CPU" not in p.stdout, "the summary table is not on stderr alone")

    if not gpu:
        # ---- no GPU work: CPU regions only, GPU timing off said once ----
        if no_device:
            check(len(timing_off) == 1, f"expected one 'GPU timing is off' line on stderr, got {timing_off}")
            check(timing_off[0].startswith(f"prof: {api}: "), f"not prof.h's {api} line: {timing_off[0]}")
            check(d["deviceProperties"] == [], f"deviceProperties without a device: {d['deviceProperties']}")
            check(not gpu_ev and not flows, "GPU events or flows without a device")
            check(all("correlation" not in e.get("args", {}) for e in cpu),
                  "a CPU region has a correlation without a device")
            check("Self GPU" not in p.stderr, "the table has GPU columns without a device")
        print(f"check_gpu_example: ok: {len(steps)} steps, {len(CPU_ONLY + GPU_SCOPED)} regions each, "
              f"CPU side only ({mode})")
        return

    # ---- a GPU: every GPU scope has its GPU side, linked by a flow ----
    check(not timing_off, f"GPU timing went off with a device: {timing_off}")
    check(d["deviceProperties"], "deviceProperties empty with a device")
    for dp in d["deviceProperties"]:
        check("name" in dp and "computeMajor" in dp and "totalGlobalMem" in dp, f"deviceProperties entry: {dp}")
    check("Self GPU" in p.stderr, "the table has no GPU columns")
    check(re.search(r"^check: .*: ok$", p.stdout, re.M), "the GPU step did not match the CPU reference")

    gpu_by_corr = {}
    for g in gpu_ev:
        args = g.get("args", {})
        for k in ("device", "stream", "correlation"):
            check(isinstance(args.get(k), int), f"GPU event without integer args.{k}: {g}")
        check(args["stream"] >= 0 and args["correlation"] > 0, f"GPU event with stream < 0 or no correlation: {g}")
        check(g["pid"] == args["device"] and g["tid"] == args["stream"], f"GPU event off its device/stream: {g}")
        check(args["correlation"] not in gpu_by_corr, f"two GPU events with correlation {args['correlation']}")
        gpu_by_corr[args["correlation"]] = g
    starts = {(f["id"]): f for f in flows if f["ph"] == "s"}
    ends = {(f["id"]): f for f in flows if f["ph"] == "f"}
    check(len(starts) == sum(1 for f in flows if f["ph"] == "s"), "two flow starts with one id")
    check(len(ends) == sum(1 for f in flows if f["ph"] == "f"), "two flow ends with one id")
    gpu_pids = {g["pid"] for g in gpu_ev}
    for pid in gpu_pids:
        check(any(e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == pid for e in ev),
              f"no process_name for GPU pid {pid}")

    streams = set()
    for s, by_name in zip(steps, per_step):
        on_gpu = {}
        for name in GPU_SCOPED:
            c_ev = by_name[name][0]
            corr = c_ev.get("args", {}).get("correlation")
            check(isinstance(corr, int) and corr > 0, f"{s['name']}: CPU region {name} has no correlation")
            g = gpu_by_corr.get(corr)
            check(g is not None, f"{s['name']}: no GPU event for {name} (correlation {corr})")
            check(g["name"] == name, f"correlation {corr}: CPU {name}, GPU {g['name']}")
            check(g["pid"] != c_ev["pid"], f"{name}: GPU event on the CPU's pid")
            st, fi = starts.get(corr), ends.get(corr)
            check(st is not None and fi is not None, f"{s['name']}: {name} has no ac2g flow")
            check(st["cat"] == "ac2g" and fi["cat"] == "ac2g" and fi.get("bp") == "e", f"flow shape: {st} {fi}")
            check((st["pid"], st["tid"]) == (c_ev["pid"], c_ev["tid"]) and abs(st["ts"] - c_ev["ts"]) <= EPS,
                  f"{name}: flow start {st} not at its CPU region {c_ev}")
            check((fi["pid"], fi["tid"]) == (g["pid"], g["tid"]) and abs(fi["ts"] - g["ts"]) <= EPS,
                  f"{name}: flow end {fi} not at its GPU event {g}")
            streams.add((g["pid"], g["tid"]))
            on_gpu[name] = g
        for outer, inner in NESTED.items():
            for name in inner:
                check(inside(on_gpu[outer], on_gpu[name], GPU_EPS),
                      f"{s['name']}: on the GPU, {name} not inside {outer}")
        order = [on_gpu[n] for n in ["upload_batch", "forward", "loss", "backward", "optimizer_step"]]
        for x, y in zip(order, order[1:]):
            check(x["ts"] + x["dur"] <= y["ts"] + GPU_EPS,
                  f"{s['name']}: on the GPU, {x['name']} ends after {y['name']} begins (one stream)")
    check(len(streams) == 1, f"the example launches on one stream, GPU events on {sorted(streams)}")
    check(len(gpu_ev) == len(steps) * len(GPU_SCOPED),
          f"{len(gpu_ev)} GPU events, expected {len(steps) * len(GPU_SCOPED)}")
    print(f"check_gpu_example: ok: {len(steps)} steps, {len(GPU_SCOPED)} GPU regions each on "
          f"{sorted(streams)}, with flows from their CPU regions")


if __name__ == "__main__":
    main()
