#!/usr/bin/env python3
"""Runs one case of tests/gpu/idle_test.c and checks its idle-time breakdown.

    check_idle.py CASE PROGRAM PROF_TOOL

The program writes idle.json, idle.pftrace, table.txt (the live table) and
truth.jsonl (each row of prof_cycle_gpu_idle). Checked:
  * the rows are exactly (to the nanosecond) what the trace's own events
    give under the breakdown's rules, computed here from idle.json alone:
    kernels, copies and fills by stream, each in the step its launch call
    began in, the gap before each from the end of the stream's work before
    it: host when the launch call began after that end (sync when its
    thread was then inside a host wait, a cuda_sync), launch when under
    30 us, wait when a Stream Wait Event on the stream between the two
    launches waited for work that ended after that end, else other; busy
    the union; per device the unions of NCCL's and compute kernels and
    their overlap;
  * the case's cause, >= 90% of the idle time of its streams: host-bound
    host; GPU-bound launch (the gaps between kernels queued back to back),
    with busy >= 90% of the span; sync-bound sync (the host synchronises
    after each launch) or wait (a stream waits for another's event);
    communicating, NCCL's kernel ran
    beside compute for >= 90% of its time;
  * prof table of idle.json and of idle.pftrace prints the live footer;
  * HTA (the readers' venv) on idle.json: get_idle_time_breakdown's
    host_wait (our host + sync), kernel_wait (launch) and other (wait +
    other) per stream agree with ours within 5%
    of the stream's idle time (and its per-stream total within 5%), and
    get_comm_comp_overlap's ratio with ours within 5% (communicating)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_case import check  # noqa: E402

LAUNCH_NS = 30000
WORK_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def ns(us):
    return round(us * 1000)


def expected(trace):
    """The breakdown's rows, from the trace's events: {(step, stream): row}."""
    ev = trace["traceEvents"]
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]) + 1, int(e["name"][13:]))
                   for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"))
    launch, thread = {}, {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = e["args"]["correlation"]
            if ns(e["ts"]) <= launch.get(c, ns(e["ts"])):
                launch[c], thread[c] = ns(e["ts"]), e["tid"]

    def step_of(t):
        for t0, t1, n in steps:
            if t0 <= t < t1:
                return n
        return -1

    work = []
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in WORK_CATS:
            t0 = ns(e["ts"])
            la = launch.get(e["args"]["correlation"])
            name = e["name"]
            comm = e["cat"] == "kernel" and re.match(r"^nccl.*Kernel", name) is not None
            comp = e["cat"] == "kernel" and not comm and not re.match(r"(^Memset)|(^dma)", name) and \
                "Memcpy" not in name and "Sync" not in name
            work.append(dict(dev=e["args"]["device"], stream=e["args"]["stream"], t0=t0, t1=t0 + ns(e["dur"]),
                             launch=la, tid=thread.get(e["args"]["correlation"]),
                             step=step_of(la if la is not None else t0), comm=comm, comp=comp))
    host_syncs, waits = [], []
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") != "cuda_sync":
            continue
        a = e["args"]
        if a["cuda_sync_kind"] == "Stream Wait Event":
            rec = launch.get(a["wait_on_cuda_event_record_corr_id"])
            before = [w for w in work if w["dev"] == a["device"] and w["stream"] == a["wait_on_stream"] and
                      w["launch"] is not None and rec is not None and w["launch"] < rec]
            done = max(w["t1"] for w in before) if before else float("inf")
            waits.append(dict(dev=a["device"], stream=a["stream"], t0=ns(e["ts"]), done=done))
        elif a["correlation"] in thread:
            host_syncs.append(dict(tid=thread[a["correlation"]], t0=ns(e["ts"]), t1=ns(e["ts"]) + ns(e["dur"])))

    def cause(w, p, end, gap):
        if w["launch"] is not None and w["launch"] > end:
            inside = any(y["tid"] == w["tid"] and y["t0"] <= end <= y["t1"] for y in host_syncs)
            return "sync" if inside else "host"
        if gap < LAUNCH_NS:
            return "launch"
        by = w["launch"] if w["launch"] is not None else w["t0"]
        after = p["launch"] if p["launch"] is not None else -float("inf")
        if any(y["dev"] == w["dev"] and y["stream"] == w["stream"] and after < y["t0"] <= by and y["done"] > end
               for y in waits):
            return "wait"
        return "other"
    rows = {}

    def row(step, dev, stream):
        return rows.setdefault((step, dev, stream), dict(work=0, busy=0, host=0, sync=0, wait=0, launch=0, other=0,
                                                         comm=0, comp=0, overlap=0))
    for key in sorted({(w["dev"], w["stream"]) for w in work}):
        ws = sorted((w for w in work if (w["dev"], w["stream"]) == key), key=lambda w: (w["t0"], w["t1"]))
        end = None
        for i, w in enumerate(ws):
            for r in (row(w["step"], *key), row(-2, *key)):
                r["work"] += 1
                if end is not None and w["t0"] > end:
                    r[cause(w, ws[i - 1], end, w["t0"] - end)] += w["t0"] - end
                lo = max(w["t0"], end) if end is not None else w["t0"]
                r["busy"] += max(0, w["t1"] - lo)
            end = w["t1"] if end is None else max(end, w["t1"])
    for dev in sorted({w["dev"] for w in work}):
        for step in sorted({w["step"] for w in work if w["dev"] == dev}) + [-2]:
            ws = [w for w in work if w["dev"] == dev and (step == -2 or w["step"] == step)]
            r = row(step, dev, -1)
            r["work"] = len(ws)
            r["busy"] = union(ws)
            r["comm"] = union([w for w in ws if w["comm"]])
            r["comp"] = union([w for w in ws if w["comp"]])
            r["overlap"] = r["comm"] + r["comp"] - union([w for w in ws if w["comm"] or w["comp"]])
    return rows


def union(ws):
    total, end = 0, None
    for w in sorted(ws, key=lambda w: w["t0"]):
        lo = w["t0"] if end is None else max(w["t0"], end)
        total += max(0, w["t1"] - lo)
        end = w["t1"] if end is None else max(end, w["t1"])
    return total


def footer(text):
    return [line for line in text.splitlines() if re.match(r"GPU \d+ (stream -?\d+|NCCL kernels)", line)]


def hta(trace_path, case, rows):
    """HTA's breakdowns of the same trace against ours: per stream, each
    category within 5% of the stream's idle time."""
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"     # our times are exact ns (check_hta.py says why)
    import logging
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    d = "hta_trace"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    shutil.copy(trace_path, d)
    ta = TraceAnalysis(trace_dir=d, include_last_profiler_step=True)
    df, _ = ta.get_idle_time_breakdown(visualize=False)
    # HTA's categories are ours with the sync causes folded back: host wait
    # is host + sync (late launches), other is wait + other
    names = {"host_wait": ("host", "sync"), "kernel_wait": ("launch",), "other": ("wait", "other")}
    for stream in sorted({int(s) for s in df["stream"]}):
        r = rows[(-2, 0, stream)]
        ours = {c: sum(r[k] for k in ks) for c, ks in names.items()}
        idle = sum(ours.values())
        sub = df[df["stream"] == stream]
        theirs = {c: float(sub[sub["idle_category"] == c]["idle_time"].sum()) * 1000 for c in names}
        total = sum(theirs.values())
        check(abs(total - idle) <= 0.05 * max(idle, 1), f"{case}: stream {stream}: HTA's idle {total:.0f} ns, ours {idle}")
        for c in names:
            check(abs(theirs[c] - ours[c]) <= 0.05 * max(idle, 1),
                  f"{case}: stream {stream}: HTA's {c} {theirs[c]:.0f} ns, ours {ours[c]} (of {idle})")
        print(f"{case}: stream {stream}: HTA " + ", ".join(f"{c} {theirs[c] / 1000:.3f}us" for c in names) +
              "; ours " + ", ".join(f"{c} {ours[c] / 1000:.3f}us" for c in names))
    if case == "idle_nccl":
        ov = ta.get_comm_comp_overlap(visualize=False)
        theirs = float(ov["comp_comm_overlap_pctg"].iloc[0]) / 100
        dev = rows[(-2, 0, -1)]
        ours = dev["overlap"] / dev["comm"]
        check(abs(theirs - ours) <= 0.05 * ours, f"{case}: HTA's comm/comp overlap {theirs:.4f}, ours {ours:.4f}")
        print(f"{case}: comm/comp overlap HTA {theirs:.4f}, ours {ours:.4f}")


def main():
    case, program, tool = sys.argv[1:4]
    for f in glob.glob("*.json") + glob.glob("*.pftrace") + ["truth.jsonl", "table.txt"]:
        if os.path.exists(f):
            os.remove(f)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run([program, case, "run"], env=env, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"{case} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    got = {}
    for line in open("truth.jsonl"):
        d = json.loads(line)
        if "idle" in d:
            r = d["idle"]
            got[(r.pop("step"), r.pop("device"), r.pop("stream"))] = r
    with open("idle.json") as f:
        trace = json.load(f)
    want = expected(trace)
    check(set(got) == set(want), f"{case}: rows {sorted(got)} != {sorted(want)}")
    for k in sorted(want):
        check(got[k] == want[k], f"{case}: row {k}: {got[k]} != the trace's {want[k]}")
    streams = sorted(k for k in got if k[0] == -2 and k[2] >= 0)
    cats = ("host", "sync", "wait", "launch", "other")
    total = {c: sum(got[k][c] for k in streams) for c in cats + ("busy",)}
    idle = sum(total[c] for c in cats)
    cause = {"idle_host": "host", "idle_gpu": "launch", "idle_sync_host": "sync", "idle_sync_event": "wait"}.get(case)
    if cause:
        check(idle > 0 and total[cause] >= 0.9 * idle, f"{case}: {cause} is {total[cause]} of the idle {idle}: {total}")
    if case == "idle_gpu":
        check(total["busy"] >= 0.9 * (total["busy"] + idle), f"{case}: GPU-bound, and busy is {total}")
    for k in streams:
        print(f"{case}: stream {k[2]}: busy {got[k]['busy']} ns; " + ", ".join(f"{c} {got[k][c]}" for c in cats))
    dev = got[(-2, 0, -1)]
    if case == "idle_nccl":
        check(dev["comm"] > 0 and dev["overlap"] >= 0.9 * dev["comm"],
              f"{case}: NCCL's {dev['comm']} ns overlapped by compute for {dev['overlap']}")
    else:
        check(dev["comm"] == 0 and dev["overlap"] == 0, f"{case}: no NCCL kernel, yet {dev}")
    live = footer(open("table.txt").read())
    check(len(live) == len(streams) + (case == "idle_nccl"), f"{case}: the live footer {live}")
    for path in ("idle.json", "idle.pftrace"):
        q = subprocess.run([tool, "table", path], capture_output=True, text=True, timeout=120)
        check(q.returncode == 0, f"prof table {path}: {q.stderr}")
        check(footer(q.stdout) == live, f"{case}: prof table {path}'s footer {footer(q.stdout)} != the run's {live}")
    hta("idle.json", case, got)
    print(f"{case}: {len(got)} rows as the trace's events give them; prof table's footer the run's; HTA agrees")


if __name__ == "__main__":
    main()
