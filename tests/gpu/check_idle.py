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
  * each step's critical path (prof_cycle_gpu_path) is exactly the walk
    its comment describes, here over idle.json's events, and sums to the
    step; the host's own time is >= 90% of it where the host never waits
    for the GPU; where the host synchronises after each kernel, every
    kernel it waited for (that ended inside its wait, as the trace shows)
    is on it, and no other (idle_path: a step's three producers and the
    consumer the host waited for, through the stream's wait for the last
    producer);
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
    """The breakdown's rows, from the trace's events: {(step, stream): row};
    the critical paths; {step: how many pieces of work its host waited for}."""
    ev = trace["traceEvents"]
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]) + 1, int(e["name"][13:]), e["tid"])
                   for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"))
    launch, thread = {}, {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            c = e["args"]["correlation"]
            if ns(e["ts"]) <= launch.get(c, ns(e["ts"])):
                launch[c], thread[c] = ns(e["ts"]), e["tid"]

    def step_of(t):
        for t0, t1, n, _tid in steps:
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
            waits.append(dict(dev=a["device"], stream=a["stream"], t0=ns(e["ts"]), done=done,
                              on=(a["device"], a["wait_on_stream"], rec)))
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
    # the work each step's host waited for: what ended inside one of its
    # thread's host waits (a kernel done before its wait began was not waited for)
    waited = {}
    for w in work:
        if any(y["tid"] == w["tid"] and y["t0"] <= w["t1"] <= y["t1"] for y in host_syncs):
            waited[w["step"]] = waited.get(w["step"], 0) + 1
    return rows, paths(work, host_syncs, waits, steps), waited


def clip(a, b, t0):
    return max(0, b - max(a, t0))


def paths(work, host_syncs, waits, steps):
    """Each step's critical path, walked back from its end as prof.h's
    comment (>>api-gpu, prof_gpu_path) says."""
    w = sorted(work, key=lambda x: (x["dev"], x["stream"], x["t0"], x["t1"]))
    by_end = sorted(range(len(w)), key=lambda i: (w[i]["t1"], i))
    for y in waits:
        dev, stream, rec = y["on"]
        ws = [i for i, x in enumerate(w) if x["dev"] == dev and x["stream"] == stream and x["launch"] is not None and
              rec is not None and x["launch"] < rec]
        y["item"] = ws[-1] if ws else None
    waits = sorted(waits, key=lambda y: (y["dev"], y["stream"], y["t0"]))
    syncs = sorted(host_syncs, key=lambda y: (y["tid"], y["t0"]))

    def ended(a, b):
        last = [i for i in by_end if w[i]["t1"] <= b]
        return last[-1] if last and w[last[-1]]["t1"] >= a else None

    def last_sync(tid, t):
        mine = [y for y in syncs if y["tid"] == tid and y["t0"] < t]
        while mine and mine[-1]["t1"] > t:
            mine.pop()
        return mine[-1] if mine else None

    def waited(q, b):
        by = q["launch"] if q["launch"] is not None else q["t0"]
        after = b["launch"] if b["launch"] is not None else -float("inf")
        for y in waits:
            if y["dev"] == q["dev"] and y["stream"] == q["stream"] and after < y["t0"] <= by and y["done"] > b["t1"]:
                return y
        return None

    out = []
    for t0, t1, n, tid in steps:
        r = dict(step=n, work=0, host=0, launch=0, gpu=0, other=0)
        t, k = t1, None
        while t > t0:
            if k is None:
                y = last_sync(tid, t)
                if y is None or y["t1"] <= t0:
                    r["host"] += clip(t0, t, t0)
                    t = t0
                    break
                g = ended(y["t0"], y["t1"])
                if g is None:
                    r["host"] += clip(y["t0"], t, t0)
                    t = y["t0"]
                    continue
                r["host"] += clip(y["t1"], t, t0)
                r["other"] += clip(w[g]["t1"], y["t1"], t0)
                t, k = w[g]["t1"], g
                continue
            q = w[k]
            end = min(t, q["t1"])
            r["other"] += clip(end, t, t0)
            r["gpu"] += clip(q["t0"], end, t0)
            r["work"] += 1
            t = max(q["t0"], t0)
            if t <= t0:
                break
            b = w[k - 1] if k and (w[k - 1]["dev"], w[k - 1]["stream"]) == (q["dev"], q["stream"]) else None
            y = waited(q, b) if b else None
            if q["launch"] is not None and (b is None or q["launch"] > b["t1"]):
                at = min(q["launch"], t)
                r["launch"] += clip(at, t, t0)
                t, tid, k = at, q["tid"], None
            elif y is not None and y["item"] is not None and w[y["item"]]["t1"] <= t:
                r["other"] += clip(w[y["item"]]["t1"], t, t0)
                t, k = w[y["item"]]["t1"], y["item"]
            elif b is not None:
                at = min(b["t1"], t)
                r["other"] += clip(at, t, t0)
                t, k = at, k - 1
            else:
                break
        r["other"] += clip(t0, t, t0)
        check(sum(r[c] for c in ("host", "launch", "gpu", "other")) == t1 - t0, f"step {n}'s path {r} != {t1 - t0} ns")
        out.append(r)
    return out


def union(ws):
    total, end = 0, None
    for w in sorted(ws, key=lambda w: w["t0"]):
        lo = w["t0"] if end is None else max(w["t0"], end)
        total += max(0, w["t1"] - lo)
        end = w["t1"] if end is None else max(end, w["t1"])
    return total


def footer(text):
    return [line for line in text.splitlines() if re.match(r"GPU \d+ (stream -?\d+|NCCL kernels)|Critical path", line)]


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
        check(abs(total - idle) <= 0.05 * max(idle, 1),
              f"{case}: stream {stream}: HTA's idle {total:.0f} ns, ours {idle}")
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
    got, path = {}, []
    for line in open("truth.jsonl"):
        d = json.loads(line)
        if "idle" in d:
            r = d["idle"]
            got[(r.pop("step"), r.pop("device"), r.pop("stream"))] = r
        elif "path" in d:
            path.append(d["path"])
    with open("idle.json") as f:
        trace = json.load(f)
    want, want_path, waited = expected(trace)
    check(path == want_path, f"{case}: critical paths {path} != the trace's {want_path}")
    parts = {c: sum(r[c] for r in path) for c in ("host", "launch", "gpu", "other")}
    # where the host waits for the GPU, the work it waited for is on the
    # path, every piece of it (how long the host took to see it done is the
    # machine's: not asserted; a host late to its wait, the work done, did
    # not wait, and its path there is its own time); where it never waits,
    # the host's own time is at least 90% of the path (its sleeps, which a
    # loaded machine only lengthens)
    if case == "idle_sync_host":        # each step's five kernels, each synchronised after
        check([r["work"] for r in path] == [waited.get(r["step"], 0) for r in path] and
              sum(r["work"] for r in path) > 0,
              f"{case}: the paths' work {path}, the kernels waited for {waited}")
    elif case == "idle_path":           # each step's three producers, then the last consumer, which the host waited for
        check([r["work"] for r in path] == [4 if waited.get(r["step"]) else 0 for r in path] and
              sum(r["work"] for r in path) > 0, f"{case}: the paths' work {path}, the work waited for {waited}")
    else:
        check(max(parts, key=parts.get) == "host", f"{case}: the critical path's largest part is not host: {parts}")
        check(parts["host"] >= 0.9 * sum(parts.values()), f"{case}: critical path {parts}")
    print(f"{case}: critical path " + ", ".join(f"{c} {v}" for c, v in parts.items()))
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
    check(len(live) == len(streams) + (case == "idle_nccl") + 1, f"{case}: the live footer {live}")
    for path in ("idle.json", "idle.pftrace"):
        q = subprocess.run([tool, "table", path], capture_output=True, text=True, timeout=120)
        check(q.returncode == 0, f"prof table {path}: {q.stderr}")
        check(footer(q.stdout) == live, f"{case}: prof table {path}'s footer {footer(q.stdout)} != the run's {live}")
    hta("idle.json", case, got)
    print(f"{case}: {len(got)} rows as the trace's events give them; prof table's footer the run's; HTA agrees")


if __name__ == "__main__":
    main()
