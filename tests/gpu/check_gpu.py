#!/usr/bin/env python3
"""Runs one GPU case and checks what it wrote.

    check_gpu.py BACKEND CASE PROGRAM

BACKEND is cuda or hip. PROGRAM (tests/gpu/gpu_test.c, real_runtime.c,
cupti_test.c or rocprof_test.c) is run as `PROGRAM CASE run` in the current
directory, with its stderr captured; it writes traces and truth.jsonl (what
it knows: true device times, the test double's counters). Traces are read back with Python's json.
Each check states the exact behaviour expected of prof.h."""
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_case import check, contains, fail, load, xs  # noqa: E402

GPU_OFF = "GPU timing is off, CPU regions are still recorded"
SLACK_NS = 2000  # beyond the anchor uncertainty prof.h reports


def run(program, case, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    env.update(extra)
    p = subprocess.run([program, case, "run"], env=env, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"{case} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def read_truth():
    """truth.jsonl as lists of objects by their first key."""
    by = collections.defaultdict(list)
    with open("truth.jsonl") as f:
        for line in f:
            d = json.loads(line)
            by[next(iter(d))].append(d)
    return by


def ns(us):
    """A ts or dur (microseconds, 3 decimals) in whole nanoseconds."""
    return round(us * 1000)


# said once at every HIP kernel capture's start (case_roc_kernels checks it)
ROC_NO_SYNC = ("prof: rocprofiler-sdk: no synchronisation records (hipStreamSynchronize, hipEventSynchronize, "
               "hipDeviceSynchronize and hipStreamWaitEvent are in the trace as runtime calls only): no "
               "cuda_sync events on HIP")


def stderr_lines(p):
    return [line for line in p.stderr.splitlines() if line.strip() and line != ROC_NO_SYNC]


def check_quiet(p):
    check(not stderr_lines(p), f"unexpected messages: {p.stderr}")


def run_quiet(program, case):
    """A case that must say nothing and leak nothing: its truth and the
    double's counters."""
    p = run(program, case)
    check(not p.stdout.strip(), p.stdout)
    check_quiet(p)
    truth = read_truth()
    return truth, check_no_leak(truth)


def check_no_leak(truth):
    st = truth["stats"][-1]["stats"]
    check(st["events_live"] == 0, f"{st['events_live']} events not destroyed after shutdown ({st})")
    check(st["streams_live"] == 0, f"{st['streams_live']} streams not destroyed after shutdown ({st})")
    check(st["misuse"] == 0, f"{st['misuse']} runtime calls with a destroyed or wrong-device handle ({st})")
    return st


def gpu_xs(d):
    return [e for e in xs(d) if e["cat"] == "gpu_user_annotation"]


def cpu_xs(d):
    return [e for e in xs(d) if e["cat"] == "user_annotation" and not e["name"].startswith("ProfilerStep#")]


def check_links(d):
    """Each GPU region: args as HTA reads them, its CPU region (same name, same
    correlation) and the ac2g flow from one to the other. Returns {corr: (cpu, gpu)}."""
    gpu = gpu_xs(d)
    cpu = {}
    for e in cpu_xs(d):
        c = e.get("args", {}).get("correlation")
        if c is not None:
            check(c not in cpu, f"correlation {c} on two CPU regions")
            cpu[c] = e
    flows = collections.defaultdict(list)
    for e in d["traceEvents"]:
        if e["ph"] in ("s", "f"):
            check(e["cat"] == "ac2g" and e["name"] == "ac2g", f"flow {e}")
            flows[(e["ph"], e["id"])].append(e)
    links = {}
    for g in gpu:
        a = g["args"]
        c = a["correlation"]
        check(a["device"] == g["pid"] and a["stream"] == g["tid"], f"args do not name pid/tid: {g}")
        check(a["stream"] >= 0 and c > 0, f"HTA needs stream >= 0 and correlation >= 0: {g}")
        check(c not in links, f"correlation {c} on two GPU regions")
        check(c in cpu, f"GPU region {g} has no CPU region with correlation {c}")
        check(cpu[c]["name"] == g["name"], f"CPU {cpu[c]['name']} and GPU {g['name']} share correlation {c}")
        (s,), (f,) = flows[("s", c)], flows[("f", c)]
        check((s["pid"], s["tid"], s["ts"]) == (cpu[c]["pid"], cpu[c]["tid"], cpu[c]["ts"]),
              f"flow start {s} is not at its CPU region {cpu[c]}")
        check((f["pid"], f["tid"], f["ts"], f.get("bp")) == (g["pid"], g["tid"], g["ts"], "e"),
              f"flow end {f} is not at its GPU region {g}")
        links[c] = (cpu[c], g)
    check(set(cpu) == set(links), f"CPU regions whose GPU side is missing: {sorted(set(cpu) - set(links))}")
    check(len(flows) == 2 * len(links), "flows without a GPU region")
    return links


def recorded_steps(d):
    return sorted(int(e["name"].split("#")[1]) for e in xs(d) if e["name"].startswith("ProfilerStep#"))


def clock_shift(d, truth, steps):
    """trace ns - CLOCK_MONOTONIC ns, from the markers (instants at known
    times), and how far off it may be: the tightest marker's half-window
    (its instant was taken somewhere between the two clock reads around it)."""
    marks = sorted((e for e in d["traceEvents"] if e["ph"] == "i" and e["name"] == "marker"), key=lambda e: e["ts"])
    known = [m for m in truth["marker"] if m["step"] in steps]
    check(len(marks) == len(known), f"{len(marks)} markers in the trace, {len(known)} recorded")
    # The tightest marker gives the shift; every other must agree within its
    # own window (the first may include the thread's registration).
    shifts = [(m["half"], ns(e["ts"]) - m["marker"]) for e, m in zip(marks, known)]
    half, shift = min(shifts)
    for h, s in shifts:
        check(abs(s - shift) <= h + half + 1000, f"markers disagree on the clock: {s - shift:.0f} ns, window {h} ns")
    return shift, half


def check_placement(d, truth, backend):
    """GPU regions at their true device times mapped to the CPU clock, on
    pid = device and tid = stream. Returns the worst errors in ns."""
    steps = recorded_steps(d)
    shift, shift_err = clock_shift(d, truth, steps)
    bound = {p["id"]: p["prof_alignment_bound_ns"] for p in d["deviceProperties"]}
    want = sorted((r for r in truth["region"] if r["step"] in steps), key=lambda r: r["seq"])
    links = check_links(d)
    got = [links[c][1] for c in sorted(links)]           # correlations follow the begins
    check(len(got) == len(want), f"{len(got)} GPU regions in the trace, {len(want)} recorded")
    hip_ids = {0: 0}
    worst_ts = worst_dur = 0
    errs = []
    for g, r in zip(got, want):
        check(g["name"] == r["region"], f"GPU region {g['name']} where {r['region']} ran")
        check(g["pid"] == r["dev"], f"{g['name']} on pid {g['pid']}, ran on device {r['dev']}")
        if backend == "cuda":
            check(g["tid"] == r["stream"], f"{g['name']} on tid {g['tid']}, cudaStreamGetId says {r['stream']}")
        else:                           # HIP: prof.h numbers streams 1, 2, ... by first use; NULL is 0
            tid = hip_ids.setdefault(r["key"], len(hip_ids))
            check(g["tid"] == tid, f"{g['name']} on tid {g['tid']}, expected stream number {tid}")
        err_ts = ns(g["ts"]) - (r["host0"] + shift)
        err_dur = ns(g["dur"]) - (r["host1"] - r["host0"])
        # the start is compared through the markers' shift, which is itself
        # known to its marker's half-window (under TSan, microseconds)
        tol = bound[r["dev"]] + shift_err + SLACK_NS
        check(abs(err_ts) <= tol, f"{g['name']} at {g['ts']} us is {err_ts:.0f} ns from its true start (tolerance "
              f"{tol:.0f}: bound {bound[r['dev']]}, the markers' shift known to {shift_err:.0f})")
        # both edges lie within the bound of their true place (the anchors'
        # half-width scales a region's length too: a 400 ms region measured
        # between anchors 400 ms apart takes both anchors' error)
        check(abs(err_dur) <= SLACK_NS + 2 * bound[r["dev"]],
              f"{g['name']} lasts {g['dur']} us, {err_dur:.0f} ns off its true length (bound {bound[r['dev']]} ns)")
        worst_ts = max(worst_ts, abs(err_ts))
        worst_dur = max(worst_dur, abs(err_dur))
        errs.append(err_ts)
    return worst_ts, worst_dur, errs


def expected_props(backend, dev):
    p = {"id": dev, "name": f"Fake GPU {dev}", "totalGlobalMem": (16 + 8 * dev) << 30, "computeMajor": 9,
         "computeMinor": dev, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
         "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 48 << 10, "numSms": 132 - 4 * dev}
    if backend == "cuda":
        p.update(regsPerMultiprocessor=65536, sharedMemPerMultiprocessor=228 << 10, sharedMemPerBlockOptin=227 << 10)
    else:                               # not in hipDeviceProp_t, or named otherwise
        p.update(regsPerMultiprocessor=0, sharedMemPerMultiprocessor=64 << 10, sharedMemPerBlockOptin=0)
    return p


def without_bound(props):
    """deviceProperties less the measured alignment bound (checked apart)."""
    return [{k: v for k, v in p.items() if k != "prof_alignment_bound_ns"} for p in props]


def case_placement(backend, program, min_anchors=4, case=None):
    truth, st = run_quiet(program, case or ("placement" if min_anchors == 4 else "placement_small"))
    conf = truth["config"][0]["config"]
    d = load("placement.json")
    steps = recorded_steps(d)
    check(steps == list(range(2, 2 + conf["active"])), f"recorded steps {steps}")
    worst_ts, worst_dur, errs = check_placement(d, truth, backend)

    gpu = gpu_xs(d)
    names = collections.Counter(e["name"] for e in gpu)
    want = {n: conf["active"] for n in ("fwd", "fwd.inner", "comm", "dev1", "dflt1", "dflt0")}
    check(names == want, f"GPU regions {dict(names)}, expected {want}")
    for e in gpu:
        if e["name"] == "fwd.inner":
            n = sum(1 for o in gpu if o["name"] == "fwd" and o["tid"] == e["tid"] and o["pid"] == e["pid"]
                    and contains(o, e))
            check(n == 1, f"fwd.inner at {e['ts']} lies in {n} fwd regions")
    check(d["prof_gpu_dropped_regions"] == 0, f"dropped {d['prof_gpu_dropped_regions']}")

    props = d["deviceProperties"]
    check(without_bound(props) == [expected_props(backend, 0), expected_props(backend, 1)], f"deviceProperties {props}")
    for p in props:                     # without kernel capture, the anchors' own
        check(p["prof_alignment_bound_ns"] == align_of(d, p["id"])["anchor_uncertainty_ns"], f"bound {p}")

    # Clock drift is taken out between anchors (at first use, every 0.5 s at
    # steps, and at the save): what prof.h reports as corrected is the drift
    # of the double's clocks over one anchor interval.
    anchors = st["private_records"] // 3
    check(anchors >= min_anchors, f"{anchors} anchors taken, expected re-anchoring to give {min_anchors}")
    # the window as it ran (a loaded machine's steps outlast their sleeps),
    # from its first step's start to its last one's end
    prof_steps = [e for e in xs(d) if e["name"].startswith("ProfilerStep#")]
    window = ns(max(e["ts"] + e["dur"] for e in prof_steps) - min(e["ts"] for e in prof_steps))
    longest = min(window, 600e6)
    align = {a["device"]: a for a in d["prof_gpu_alignment"]}
    check(sorted(align) == [0, 1], f"prof_gpu_alignment {d['prof_gpu_alignment']}")
    for dev, rate in enumerate(conf["rate"]):
        a = align[dev]
        unc, drift, ppm = a["anchor_uncertainty_ns"], a["drift_corrected_ns"], abs(rate - 1)
        check(0 <= unc < 100000, f"device {dev}: anchor uncertainty {unc} ns")
        lo = ppm * min(window, 500e6) * 0.8 - 2 * unc - SLACK_NS
        hi = ppm * longest * 1.5 + 2 * unc + SLACK_NS
        check(lo <= drift <= hi, f"device {dev}: drift corrected {drift} ns, expected {lo:.0f}..{hi:.0f}")

    # The table: a GPU region's GPU total is its own pair's time, self GPU
    # that minus the GPU regions inside it; a CPU region's GPU total is what
    # the regions inside it launched, its self GPU 0. Exact, in ns.
    dur = collections.defaultdict(int)
    for e in gpu:
        dur[e["name"]] += ns(e["dur"])
    top = sum(dur[n] for n in ("fwd", "comm", "dev1", "dflt1", "dflt0"))
    rows = {r["row"]: r for r in truth["row"]}
    expect = {"fwd": (dur["fwd"] - dur["fwd.inner"], dur["fwd"]), "step_body": (0, top), "ProfilerStep*": (0, top),
              "cpu_only": (0, 0)}
    for n in ("fwd.inner", "comm", "dev1", "dflt1", "dflt0"):
        expect[n] = (dur[n], dur[n])
    for n, (self_gpu, total) in expect.items():
        r = rows[n]
        check((r["self_gpu_ns"], r["gpu_total_ns"]) == (self_gpu, total),
              f"table row {n}: self GPU {r['self_gpu_ns']}, GPU total {r['gpu_total_ns']}; expected {self_gpu}, {total}")
        check(r["calls"] == conf["active"], f"table row {n}: {r['calls']} calls")
    tab = truth["table"][0]["table"]
    check(tab["has_gpu"] == 1 and tab["self_gpu_sum_ns"] == top, f"table {tab}, expected self GPU sum {top}")
    with open("table.txt") as f:
        text = f.read()
    for col in ("Self GPU", "Self GPU %", "GPU total", "GPU time avg", "Self GPU time total:",
                "of their place on the CPU clock (as measured)"):
        check(col in text, f"printed table lacks {col!r}:\n{text}")

    # The handler's view of the same cycle: what the trace says, to the ns.
    by_corr = {e["args"]["correlation"]: e for e in gpu}
    check(len(truth["gpu_event"]) == len(gpu), "prof_cycle_gpu_count differs from the trace")
    for g in truth["gpu_event"]:
        e = by_corr[g["correlation"]]
        check((g["gpu_event"], g["device"], g["stream"], g["ts_ns"], g["dur_ns"]) ==
              (e["name"], e["pid"], e["tid"], ns(e["ts"]), ns(e["dur"])), f"prof_cycle_gpu_event {g} vs {e}")
    cpu = {e["args"]["correlation"]: e for e in cpu_xs(d) if "correlation" in e.get("args", {})}
    check(sorted(c["correlation"] for c in truth["cpu_gpu"]) == sorted(cpu), "prof_cycle_event correlations")
    for c in truth["cpu_gpu"]:
        e = cpu[c["correlation"]]
        check((c["cpu_gpu"], c["ts_ns"], c["dur_ns"]) == (e["name"], ns(e["ts"]), ns(e["dur"])),
              f"prof_cycle_event {c} vs {e}")
    # Perfetto's format says the same: GPU tracks per device and stream, the
    # flows from the CPU regions, deviceProperties and alignment as attributes
    import pftrace
    if pftrace.pb is None:
        print("placement.pftrace not compared: the perfetto package is not installed")
    else:
        j, p = pftrace.load_json("placement.json"), pftrace.decode_pftrace("placement.pftrace")
        diff = j.diff(p)
        check(not diff, "placement.pftrace differs from placement.json:\n" + "\n".join(diff))
        check(sum(p.flows.values()) == len(gpu), f"{sum(p.flows.values())} flows for {len(gpu)} GPU regions")
        for dev in (0, 1):
            got = {k.split(".", 1)[1]: v for k, v in p.attributes.items() if k.startswith(f"gpu{dev}.")}
            want = dict(expected_props(backend, dev), anchor_uncertainty_ns=align[dev]["anchor_uncertainty_ns"],
                        drift_corrected_ns=align[dev]["drift_corrected_ns"],
                        prof_alignment_bound_ns=align[dev]["bound_ns"])
            del want["id"]
            check(got == want, f"device {dev}'s attributes {got}, expected {want}")
    errs.sort()
    print(f"placement: launch latency {conf['latency_ns'] / 1000:.0f} us; {len(gpu)} GPU regions; start error "
          f"median {errs[len(errs) // 2]:.0f} ns, worst {worst_ts:.0f} ns; worst length error {worst_dur:.0f} ns; "
          f"anchors {anchors}; alignment {d['prof_gpu_alignment']}")


def align_of(d, dev):
    return next(a for a in d["prof_gpu_alignment"] if a["device"] == dev)


def case_placement_small(backend, program):
    case_placement(backend, program, min_anchors=3)


def case_placement_latency_2(backend, program):
    """placement_small on devices whose work arrives 2 us after it is
    submitted: each region within the bound stated in deviceProperties."""
    case_placement(backend, program, min_anchors=3, case="placement_latency_2")


def case_placement_latency_20(backend, program):
    case_placement(backend, program, min_anchors=3, case="placement_latency_20")


def case_placement_latency_50(backend, program):
    case_placement(backend, program, min_anchors=3, case="placement_latency_50")


def case_async(backend, program):
    """A 400 ms region, then two short ones, the third step saving: no step
    waits for the GPU (the save is written once the profiler's thread has
    waited), every region is placed, and the engine's thread made no query,
    wait, elapsed time or stream of prof.h's: its event records (2 a
    region), the first region's pair of events (before the profiler's
    thread had seen the device: the others' were made there, ahead), and
    its stream's identity once (cudaStreamGetDevice and cudaStreamGetId),
    and whether its stream captures a graph (cudaStreamIsCapturing) at each
    region's begin and end."""
    truth, st = run_quiet(program, "async")
    d = load("async.1.json")
    worst_ts, worst_dur, errs = check_placement(d, truth, backend)
    names = sorted(e["name"] for e in gpu_xs(d))
    check(names == ["last", "long", "short"], f"GPU regions {names}")
    calls = truth["engine_calls"][0]["engine_calls"]
    want = {"record": 6, "create": 2, "stream_info": 2, "query": 0, "sync": 0, "elapsed": 0, "stream_create": 0,
            "capturing": 6}
    check(calls == want, f"runtime calls on the engine's thread {calls}, not {want}")
    print(f"async: resolved on the profiler's thread; {st['not_ready']} queries not ready, {st['engine_syncs']} "
          f"waits there; the engine's thread: {calls}; worst start error {worst_ts:.0f} ns")


def case_pool(backend, program):
    truth, st = run_quiet(program, "pool")
    print(f"pool: {truth['pool'][0]['pool']}; events created {st['events_created']}")


def case_threads(backend, program):
    run_quiet(program, "threads")
    d = load("threads.json")
    links = check_links(d)
    names = collections.Counter(g["name"] for _, g in links.values())
    check(names == {"worker_a": 2000, "worker_b": 2000, "main_region": 200}, f"GPU regions {dict(names)}")
    check(d["prof_gpu_dropped_regions"] == 0, f"dropped {d['prof_gpu_dropped_regions']}")


def case_open_at_shutdown(backend, program):
    run_quiet(program, "open_at_shutdown")
    d = load("open.json")
    check([e["name"] for e in gpu_xs(d)] == ["closed"], f"GPU regions {gpu_xs(d)}")


def case_hang(backend, program):
    """The watchdog's report of a hung GPU: the region whose kernel never
    ends and the one the thread is inside, once; the ring dumped, with its
    steps' GPU regions."""
    p = run(program, "hang")
    lines = stderr_lines(p)
    check(re.fullmatch(r"prof: watchdog: no PROF_STEP for [0-9.]+ s \(step 5 is running\); "
                       "what each thread is inside now:", lines[0]), f"stderr {p.stderr}")
    began = r"began [0-9]+\.[0-9]{3} s ago"
    check(re.fullmatch(f"prof: watchdog: GPU region stuck on device 0, stream [0-9]+, {began}: "
                       "its end event has not completed on the GPU", lines[1]), f"stderr {p.stderr}")
    check(re.fullmatch(f"prof: watchdog: GPU region waiting on device 0, stream [0-9]+, {began}: "
                       r"its end is not recorded yet \(a thread is inside it\)", lines[2]), f"stderr {p.stderr}")
    check(lines[3:] == ["prof: watchdog: dumping steps 2 to 5 and the regions open now"], f"stderr {p.stderr}")
    d = load("hang.hang-5.json")
    check((d["prof_dump_reason"], d["prof_dump_step"]) == ("hang", 5), f"header {d.get('prof_dump_reason')}")
    steps = sorted(e["name"] for e in xs(d) if e["name"].startswith("ProfilerStep#"))
    check(steps == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"], f"steps {steps}")
    # the ring's segments (steps 2 to 5) hold the GPU regions of steps 2 to
    # 4, each drained by its step's job, with their CPU sides; step 5's is
    # the stuck one
    gpu = gpu_xs(d)
    check([e["name"] for e in gpu] == ["step_kernel"] * 3, f"GPU regions {gpu}")
    corr = {e["args"]["correlation"] for e in cpu_xs(d) if e["name"] == "step_kernel"}
    check(len(corr) == 3 and corr == {e["args"]["correlation"] for e in gpu}, f"CPU sides {corr}")
    check(d["prof_gpu_dropped_regions"] == 0, f"dropped {d['prof_gpu_dropped_regions']}")


def case_typed_malloc(backend, program):
    p = run(program, "typed_malloc")
    check("typed_malloc: ok 1, 1024 bytes live, then 0" in p.stdout, f"typed_malloc: {p.stdout}")


def case_legacy_stream(backend, program):
    """The legacy stream waits for blocking streams and they for it; a
    non-blocking stream waits for neither: read from the trace's GPU sides."""
    p = run(program, "legacy_stream")
    check_no_leak(read_truth())
    check_quiet(p)
    d = load("legacy.1.json")
    by = collections.defaultdict(list)
    for e in gpu_xs(d):
        by[e["name"]].append((e["ts"], e["ts"] + e["dur"]))
    for name in ("b_long", "legacy_wait", "nonblocking", "blocking"):
        check(len(by[name]) == 4, f"{len(by[name])} GPU regions {name}, not 4")
        by[name].sort()
    truth = read_truth()
    long_end = [r["host1"] for r in truth["region"] if r["region"] == "b_long"]
    submit = [t["nb_submit"] for t in truth["nb_submit"]]
    slack = 5.0  # us: the regions' placement, far below the 20 ms kernel
    free = 0
    for k, long, wait, nb, blk in zip(range(4), by["b_long"], by["legacy_wait"], by["nonblocking"], by["blocking"]):
        check(wait[0] >= long[1] - slack, f"step {k}: the legacy stream's region began {long[1] - wait[0]:.1f} us "
              "before the blocking stream's kernel ended")
        check(blk[0] >= wait[1] - slack, f"step {k}: the blocking stream's region began {wait[1] - blk[0]:.1f} us "
              "before the legacy stream's work ended")
        if submit[k] < long_end[k] - 1e6:  # submitted 1 ms or more before the kernel ended: it must not wait
            free += 1
            check(nb[0] < long[1] - 500, f"step {k}: the non-blocking stream's region waited for the blocking "
                  f"stream (began {nb[0] - long[0]:.1f} us after its kernel)")
    check(free > 0, "no non-blocking region was submitted while the long kernel ran")
    print(f"legacy_stream: the legacy stream and blocking streams in order, the non-blocking stream free "
          f"({free} of 4 steps)")


def case_capture(backend, program):
    """A GPU region inside stream capture leaves the capture valid."""
    p = run(program, "capture")
    rt = "cuda" if backend == "cuda" else "hip"
    truth = read_truth()
    check_no_leak(truth)
    caps = [c["capture"] for c in truth["capture"]]
    check(len(caps) == 4, f"captures {caps}")
    for c in caps:
        check(c["begin"] == c["status_ok"] == c["end"] == f"{rt}Success" and c["status"] == 1,
              f"the engine's capture broken: {c}")
        check(c["nodes"] == 3, f"the graph holds {c['nodes']} kernels, not 3: {c}")
        check(c["last_error"] == f"{rt}Success", f"the engine's last error after its capture: {c}")
    g = truth["graphs"][0]["graphs"]
    check(g == {"nodes_run": 12, "invalidated": 0}, f"graphs {g}")
    d = load("capture.1.json")
    gpu = collections.Counter(e["name"] for e in gpu_xs(d))
    check(gpu == {"before": 4, "after": 4}, f"GPU regions {dict(gpu)}")
    cpu = collections.Counter(e["name"] for e in cpu_xs(d))
    for name in ("before", "after", "straddle", "captured", "legacy"):
        check(cpu[name] == 4, f"{cpu[name]} CPU regions {name}, not 4")
    for e in cpu_xs(d):
        if e["name"] in ("straddle", "captured", "legacy"):
            check("correlation" not in e.get("args", {}), f"a region inside capture with a GPU side: {e}")
    check(d["prof_gpu_dropped_regions"] == 0, f"dropped {d['prof_gpu_dropped_regions']}")
    lines = stderr_lines(p)
    check(len(lines) == 1 and "inside stream capture" in lines[0], f"messages {lines}")
    print(f"capture: 4 graphs valid, 12 kernels run; {lines[0]}")


def check_last_error(backend, program, case):
    """prof.h's failing call leaves the engine's last error as it was."""
    p = run(program, case)
    rt = "cuda" if backend == "cuda" else "hip"
    e = read_truth()["last_error"][0]["last_error"]
    check(e["own"] == f"{rt}ErrorInvalidDevice", f"the engine's own error, read after a region: {e['own']}")
    check(e["cleared"] == f"{rt}Success", f"after the engine read it: {e['cleared']}")
    if e["pending"]:
        check(e["after"] != f"{rt}Success", "the engine's pending error swallowed by prof.h's failing call")
    else:
        check(e["after"] == f"{rt}Success", f"prof.h's failed call left the engine {e['after']}")
    lines = stderr_lines(p)
    check(len(lines) == 1 and "event record failed" in lines[0], f"messages {lines}")
    print(f"{case}: {e}")


def case_last_error(backend, program):
    check_last_error(backend, program, "last_error")


def case_last_error_pending(backend, program):
    check_last_error(backend, program, "last_error_pending")


def case_cap(backend, program):
    p = run(program, "cap")
    check_no_leak(read_truth())
    d = load("cap.json")
    links = check_links(d)
    dropped = d["prof_gpu_dropped_regions"]
    check(dropped > 0 and len(links) + dropped == 30000,
          f"{len(links)} GPU regions and {dropped} dropped, of 30000")
    check(len(links) <= (1 << 20) // 48, f"{len(links)} GPU regions kept under a 1 MiB cap")
    check(len(cpu_xs(d)) == 30000 and d["prof_dropped_events"] == 0, "CPU regions lost")
    lines = stderr_lines(p)
    check(len(lines) == 1 and f"prof: {dropped} GPU regions dropped" in lines[0], f"messages {lines}")
    print(f"cap: {len(links)} GPU regions kept, {dropped} dropped: {lines[0]}")


def check_failure(backend, program, case):
    p = run(program, case)
    truth = read_truth()
    check_no_leak(truth)
    f = truth["failure"][0]["failure"]
    lines = stderr_lines(p)
    check(len(lines) == 1, f"expected one message, got {lines}")
    runtime = backend.upper() if backend == "cuda" else "HIP"
    msg = lines[0]
    check(msg.startswith(f"prof: {runtime}: ") and f["error"] in msg and msg.endswith(GPU_OFF),
          f"message {msg!r} should name {f['error']} and say {GPU_OFF!r}")
    if f["kind"] in ("no_device", "no_driver"):
        check("no usable device" in msg, f"message {msg!r}")
    for cycle in (1, 2, 3):
        d = load(f"fail.{cycle}.json")
        cpu = collections.Counter(e["name"] for e in cpu_xs(d))
        check(cpu == {"c": 2, "g1": 2, "g2": 2}, f"cycle {cycle}: CPU regions {dict(cpu)}")
        gpu = collections.Counter(e["name"] for e in gpu_xs(d))
        if cycle < f["cycle"]:
            check(gpu == {"g1": 2, "g2": 2}, f"cycle {cycle}, before the failure: GPU regions {dict(gpu)}")
            check_links(d)
        else:
            check(not gpu, f"cycle {cycle}, after the failure: GPU regions {dict(gpu)}")
            check(not any("correlation" in e.get("args", {}) for e in cpu_xs(d)), "correlation without a GPU side")
            check(not any(e["ph"] in ("s", "f") for e in d["traceEvents"]), "flows without a GPU side")
            check(d["deviceProperties"] == [], "deviceProperties without GPU regions")
    print(f"{case}: {msg}")


def case_real_cupti(backend, program):
    """Kernel capture asked for with the real runtime and the toolkit's
    libcupti. Without a device: the one line of the no-device path, exactly;
    the CPU trace whole; CUPTI never loaded (though the toolkit's libcupti
    is there to load: no libcupti in the process's map at its end). With
    one: the GPU regions, and libcupti loaded."""
    p = case_real(backend, program, "real_cupti")
    t = read_truth()["devices"][0]
    if t["devices"] == 0:
        lines = stderr_lines(p)
        check(len(lines) == 1 and re.fullmatch(r"prof: CUDA: (no usable device \(cudaError\w+: [^()]+\)|no device); "
                                               + GPU_OFF, lines[0]), f"no device: stderr {lines}")
        check(t["cupti_mapped"] == 0, "no device: libcupti was loaded")
        toolkit = [p for p in ("/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so")
                   if os.path.exists(p)]
        there = f"the toolkit's {toolkit[0]} was there to load" if toolkit else "no toolkit libcupti here"
        print(f"real_cupti, no device: CUPTI not loaded ({there})")
    else:
        check(t["cupti_mapped"] == 1, f"{t['devices']} devices: capture asked for, and libcupti not loaded")


def case_real(backend, program, case="real"):
    p = run(program, case)
    devices = read_truth()["devices"][0]["devices"]
    d = load("real.json")
    cpu = collections.Counter(e["name"] for e in cpu_xs(d))
    check(cpu == {"cpu": 3, "gpu_scope": 3, "gpu_explicit": 3}, f"CPU regions {dict(cpu)}")
    lines = stderr_lines(p)
    if devices == 0:
        check(len(lines) == 1 and GPU_OFF in lines[0], f"expected one line saying {GPU_OFF!r}, got {lines}")
        check(not gpu_xs(d), f"GPU regions without a device: {gpu_xs(d)}")
        print(f"real {backend}, no device: {lines[0]}")
    else:
        check(not any(GPU_OFF in line for line in lines), f"GPU timing went off on a machine with a GPU: {lines}")
        check(collections.Counter(e["name"] for e in gpu_xs(d)) == {"gpu_scope": 3, "gpu_explicit": 3},
              f"GPU regions {gpu_xs(d)}")
        check_links(d)
        print(f"real {backend}: {devices} devices, GPU regions recorded")
    return p


# ---- kernel capture (cupti_test.c, the CUPTI double fake_cupti.c) ---------

def case_cupti_kernels(backend, program, case="cupti_kernels"):
    """Steps 2-4 recorded, each: a GPU region "layer" around a copy, two
    kernels and a fill, then a kernel outside it and a GPU region "idle"
    that launches nothing, on a device with a launch latency (2 us;
    cupti_latency_*: 20, 50 us) and a clock offset and drift. Every one is
    in the trace once, with its launch and flow, on the stream track of
    CUPTI's id for the engine's stream (13 + 100), as is the region around
    them, though the window's first reading of CUPTI's clock was slow. One
    clock: under capture prof.h records no event (no cudaEvent* call at
    all); each region spans from its first kernel's start to its last one's
    end, and "idle" has no GPU side."""
    p = run(program, case)
    check_quiet(p)
    truth = read_truth()
    t = truth["per_step"][0]
    k = check_kernels_case("cupti", {"Memcpy HtoD (Pageable -> Device)": 3, "Memset (Device)": 3},
                           {"cudaLaunchKernel": 9, "cudaMemcpyAsync": 3, "cudaMemsetAsync": 3}, 113, 15)
    d, gpu, ann, starts, ends = k["trace"], k["gpu"], k["regions"], k["starts"], k["ends"]
    kernel = next(e for e in gpu if e["cat"] == "kernel")
    check(kernel["args"]["grid"] in ([128, 1, 1], [64, 1, 1], [1, 1, 1]) and kernel["args"]["shared memory"] == 1536
          and kernel["args"]["registers per thread"] == 32, f"kernel args {kernel['args']}")
    check(truth_enabled(0), "CUPTI's activity kinds still enabled after shutdown")
    check(t["event_calls"] == 0, f"{t['event_calls']} cudaEvent* calls under capture")
    check(starts == [0.0] * 3 and ends == [0.0] * 3,
          f"a region spans its kernels: first starts {starts}, last ends {ends} us from its edges")
    idle = [e for e in xs(d) if e["name"] == "idle"]
    check(len(idle) == 3 and all(e["cat"] == "user_annotation" for e in idle),
          f"idle: {[(e['cat'], e['name']) for e in idle]}, not its 3 CPU sides alone")
    bound = d["deviceProperties"][0]["prof_alignment_bound_ns"]
    check(bound < 1000000, f"alignment bound {bound} ns")
    print(f"{case}: launch latency {t['latency_ns'] / 1000:.0f} us; no cudaEvent call; regions span their kernels; "
          f"alignment bound {bound} ns ({d.get('prof_gpu_alignment')})")


def check_kernels_case(name, copies, calls, stream, launches):
    """What the kernel-capture cases share (cupti_kernels, roc_kernels):
    <name>.1.json holds steps 2-4, each a GPU region "layer" around the
    copies and kernels matmul and relu, each inside it, then the kernel
    loss: each 3 times (demangled where the C++ runtime is), with `copies`
    (name: count) and the runtime calls `calls` (name: count) on the
    engine's thread (prof.h makes no event record under capture), kernels
    and GPU regions on the track of
    stream `stream`, 3 GPU regions holding kernels; <name>.1.pftrace says
    the same, with `launches` + 3 flows. Returns the JSON (trace), its
    kernels and copies (gpu), its GPU regions (regions), how far after its
    region's start each first kernel starts and before its end each last one
    ends (starts, ends, us), the names wanted (want), and the .pftrace's file
    (pftrace: None without the perfetto package)."""
    from check_cupti import check_trace
    t = read_truth()["per_step"][0]
    d = load(name + ".1.json")
    mangled = {"_Z6matmulPfS_i": "matmul(float*, float*, int)", "_Z4reluPfi": "relu(float*, int)",
               "_Z4lossPf": "loss(float*)"}
    inside = set(copies) | {(mangled[k] if t["demangled"] else k) for k in ("_Z6matmulPfS_i", "_Z4reluPfi")}
    gpu, rt, ann, starts, ends = check_trace(d, launches=t["per_step"] * t["recorded_steps"], inside_names=inside)
    want = {(v if t["demangled"] else k): 3 for k, v in mangled.items()}
    want.update(copies)
    got = collections.Counter(e["name"] for e in gpu)
    check(got == want, f"kernels, copies and fills {dict(got)}, not {want}")
    got = collections.Counter(e["name"] for e in rt)
    check(got == calls, f"runtime calls {dict(got)}, not {calls}")
    check({e["tid"] for e in gpu} == {stream} and {e["tid"] for e in ann} == {stream},
          f"streams: kernels on {sorted({e['tid'] for e in gpu})}, GPU regions on {sorted({e['tid'] for e in ann})}")
    main = [e for e in d["traceEvents"] if e.get("cat") == "user_annotation" and e["name"] == "layer"]
    check({e["tid"] for e in rt} == {main[0]["tid"]}, "runtime calls not on the engine's thread")
    check(len(starts) == 3, f"{len(starts)} GPU regions hold kernels, not 3")
    check(d["prof_gpu_dropped_activities"] == 0, "activities dropped")
    out = {"trace": d, "gpu": gpu, "regions": ann, "starts": starts, "ends": ends, "want": want, "pftrace": None}
    # the same cycle as a .pftrace: every kernel, call, region and flow alike
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import pftrace
    if pftrace.pb is None:
        print(f"{name}: the .pftrace not checked (the perfetto package is not installed)")
        return out
    j, pf = pftrace.load_json(name + ".1.json"), pftrace.decode_pftrace(name + ".1.pftrace")
    diff = j.diff(pf)
    check(not diff, "the .pftrace and the JSON differ:\n" + "\n".join(diff))
    check(sum(pf.flows.values()) == launches + 3,
          f"{sum(pf.flows.values())} flows, not {launches} launches + 3 GPU regions")
    out["pftrace"] = name + ".1.pftrace"
    return out


def case_cupti_latency_20(backend, program):
    case_cupti_kernels(backend, program, "cupti_latency_20")


def case_cupti_latency_50(backend, program):
    case_cupti_kernels(backend, program, "cupti_latency_50")


def case_cupti_loaded(backend, program):
    """cupti_kernels while every core is busy (twice over): the same exact
    answers, since nothing in them hangs on the machine's speed."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        case_cupti_kernels(backend, program, "cupti_loaded")
    finally:
        for b in burners:
            b.kill()
            b.wait()


def check_graph(d, steps, regions=None):
    """A decode loop's trace: per step a GPU region "decode" around one
    cudaGraphLaunch of graph 7 (4 kernels and a copy, nodes 1-5). Returns
    the kernels, copies and the region's GPU time in ns."""
    from check_cupti import check_trace
    ran = {"embed(float*)", "attention(float*)", "mlp(float*)", "lmhead(float*)", "Memcpy DtoH (Device -> Pinned)"}
    ran |= {"_Z5embedPf", "_Z9attentionPf", "_Z3mlpPf", "_Z6lmheadPf"}
    gpu, rt, ann, starts, _ = check_trace(d, launches=5 * steps, inside_names=ran)
    check(collections.Counter(e["name"] for e in rt if e["name"] != "cudaEventRecord") == {"cudaGraphLaunch": steps},
          f"runtime calls {collections.Counter(e['name'] for e in rt)}")
    regions = steps if regions is None else regions
    check(len(starts) == regions, f"{len(starts)} GPU regions with kernels, not {regions}; {len(ann)} in all")
    for e in gpu:
        a = e["args"]
        check(a.get("graph id") == 7 and a.get("graph node id") in range(1, 6), f"{e['name']}: graph args {a}")
    nodes = collections.Counter(e["args"]["graph node id"] for e in gpu)
    check(nodes == {n: steps for n in range(1, 6)}, f"graph nodes {dict(nodes)}")
    flows = [e for e in d["traceEvents"] if e.get("cat") == "ac2g" and e["ph"] == "s" and e["id"] >= 1 << 32]
    check(len(flows) == 5 * steps and len({f["id"] for f in flows}) == len(flows),
          f"{len(flows)} flows for {5 * steps} graph nodes")
    check(len({e["args"]["correlation"] for e in gpu}) == steps, "a graph launch's kernels share its correlation")
    return gpu


def case_cupti_graph(backend, program):
    """10 steps of a CUDA graph launched inside a GPU region: its 40 kernels
    and 10 copies are in the trace with their graph and node ids, one flow
    each from their cudaGraphLaunch, inside the region; the table counts
    them in the region's GPU time and in each kernel's row; the .pftrace
    says the same."""
    p = run(program, "cupti_graph")
    check_quiet(p)
    d = load("graph.json")
    gpu = check_graph(d, 10)
    rows = {r["row"]: r for r in read_truth()["row"]}
    total = sum(ns(e["dur"]) for e in gpu)
    check(rows["decode"]["gpu_total_ns"] == total and rows["decode"]["calls"] == 10,
          f"table row decode {rows['decode']}, expected GPU total {total}")
    for e in gpu:
        check(rows[e["name"]]["calls"] == 10, f"table row {e['name']}: {rows[e['name']]}")
    import pftrace
    if pftrace.pb is not None:
        j, pf = pftrace.load_json("graph.json"), pftrace.decode_pftrace("graph.pftrace")
        diff = j.diff(pf)
        check(not diff, "graph.pftrace and graph.json differ:\n" + "\n".join(diff))
    print(f"cupti_graph: {len(gpu)} graph nodes run, each in its region with its graph and node ids")


def case_cupti_graph_flight(backend, program):
    """The same loop under the flight recorder (PROF_FLIGHT=3: the last step
    and 3 before it), dumped on a trigger at the last step: those 4 steps'
    graph nodes, attributed alike, inside their regions, and the 4 steps'
    GPU regions: each joins the ring at its own step (the step's job drains
    what began by the step's end), spanning its kernels."""
    p = run(program, "cupti_graph_flight")
    lines = stderr_lines(p)
    check(len(lines) == 1 and "dumping steps 6 to 9" in lines[0], f"stderr {p.stderr}")
    gpu = check_graph(load("graph.on_demand-9.json"), 4)
    print(f"cupti_graph_flight: {len(gpu)} graph nodes in the dump")


def case_cupti_driver(backend, program):
    """A library's kernels launched through the driver API (cuLaunchKernelEx,
    as cuBLAS launches its GEMMs) have their call in the trace as Kineto
    writes it (cuda_driver), with its flow, inside the region that made it;
    a runtime launch's own driver call (same correlation) is not written
    twice, and a driver call that launched nothing is left out."""
    from check_cupti import check_trace
    p = run(program, "cupti_driver")
    check_quiet(p)
    t = read_truth()["driver"][0]["driver"]
    d = load("driver.1.json")
    per_step = t["library_kernels"] + t["runtime_kernels"]
    gpu, calls, _, _, _ = check_trace(d, launches=t["steps"] * per_step)
    ev = d["traceEvents"]
    got = collections.Counter((e["cat"], e["name"]) for e in calls)
    want = {("cuda_driver", "cuLaunchKernelEx"): t["steps"] * t["library_kernels"],
            ("cuda_runtime", "cudaLaunchKernel"): t["steps"] * t["runtime_kernels"]}
    check(got == want, f"launch calls {dict(got)}, not {want}")
    by_corr = {e["args"]["correlation"]: e for e in calls}
    regions = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
               and not e["name"].startswith("ProfilerStep#")]
    for k in gpu:
        call = by_corr[k["args"]["correlation"]]
        want_region = "gemm" if "cutlass" in k["name"] else "relu"
        want_cat = "cuda_driver" if "cutlass" in k["name"] else "cuda_runtime"
        check(call["cat"] == want_cat, f"{k['name']} launched by {call['cat']} {call['name']}")
        around = [r for r in regions if r["tid"] == call["tid"] and r["ts"] <= call["ts"]
                  and call["ts"] + call["dur"] <= r["ts"] + r["dur"]]
        check([r["name"] for r in around] == [want_region],
              f"{call['name']} inside {[r['name'] for r in around]}, not [{want_region}]")
    print(f"cupti_driver: {len(gpu)} kernels, each with its call: {dict(got)}")


def check_windows(program, case, warmup):
    """11 steps of 1,000 launches, the window steps 9-10 (warmup: step 8
    warms up): CUPTI traced the launches of the warm-up and recorded steps
    alone, and the trace holds the recorded steps' 2,000 kernels, each with
    its launch; no PROF_INIT: capture started with the profiler, lazily."""
    from check_cupti import check_trace
    p = run(program, case)
    lines = [line for line in stderr_lines(p) if not line.startswith("prof: wrote windows.1.json")]
    check(len(lines) == (0 if warmup else 1), f"stderr {p.stderr}")
    check(warmup or "CUPTI: kernel capture starts with the recording window, which has no warm-up step" in lines[0],
          f"stderr {p.stderr}")
    t = read_truth()["windows"][0]["windows"]
    steps = 3 if warmup else 2
    check(t["traced_calls"] == steps * 1000 and t["traced_kernels"] == steps * 1000,
          f"CUPTI traced {t['traced_calls']} runtime calls and {t['traced_kernels']} kernels of {t['launches']}; "
          f"capture on for {steps} steps would trace {steps * 1000}")
    check(t["enabled_after"] == 0, "CUPTI's activity kinds still enabled after shutdown")
    d = load("windows.1.json")
    check_trace(d, launches=2000)
    check(sorted(recorded_steps(d)) == [9, 10], f"recorded steps {sorted(recorded_steps(d))}")
    print(f"{case}: CUPTI traced {t['traced_calls']} of {t['launches']} launches; 2000 kernels in the trace")


def case_cupti_windows(backend, program):
    check_windows(program, "cupti_windows", True)


def case_cupti_windows_nowarmup(backend, program):
    check_windows(program, "cupti_windows_nowarmup", False)


def truth_enabled(want):
    return read_truth()["per_step"][0].get("enabled_after", want) == want


def case_cupti_sync(backend, program):
    """Synchronisations as Kineto's cuda_sync events (tests/gpu/check_sync.py)."""
    from check_sync import check_case
    p = run(program, "cupti_sync")
    check_quiet(p)
    check_case(p, read_truth)


def case_cupti_sync_refused(backend, program):
    """cupti_sync where CUPTI refuses the synchronisation kind (its 6th
    enable): one line says so, kernels are still captured, no cuda_sync."""
    from check_sync import check_refused
    check_refused(run(program, "cupti_sync_refused", FAKE_CUPTI_FAIL_ENABLE="6"), read_truth, stderr_lines)


def case_cupti_drops(backend, program):
    """More than the buffers hold, and one record without a timestamp:
    every record is in the trace or counted in prof_gpu_dropped_activities,
    and prof.h says so once."""
    p = run(program, "cupti_drops")
    records = read_truth()["records"][0]["records"]
    # CUPTI's 2 buffers (a 1 MiB cap) were made at start; each was handed
    # back at a flush and reused, never allocated again
    allocated = read_truth()["records"][0]["buffers_allocated"]
    check(allocated == 2, f"{allocated} activity buffers allocated, not 2")
    written, dropped = check_drops(p, load("drops.json"), records, "CUPTI")
    check(dropped > 0 and written > 0, f"written {written}, dropped {dropped}: the buffers never ran out")
    print(f"cupti_drops: {written} written, {dropped} dropped of {records}")


def check_drops(p, d, records, tracer):
    """Every one of `records` is in trace d or counted in
    prof_gpu_dropped_activities, which one line says; the one record that
    ended before it began is drawn with no length, and said. Returns
    (written, dropped)."""
    ev = d["traceEvents"]
    written = sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "cuda_runtime"))
    dropped = d["prof_gpu_dropped_activities"]
    check(written + dropped == records, f"{written} written + {dropped} dropped != {records} records")
    lost = [line for line in stderr_lines(p) if "prof_gpu_dropped_activities" in line]
    check(len(lost) == 1 and str(dropped) in lost[0], f"expected one line counting {dropped} lost: {p.stderr}")
    back = [line for line in stderr_lines(p) if "ended before" in line]
    check(back == [f"prof: 1 kernel, copy, fill or runtime call record ended before it began ({tracer}'s "
                   "timestamps); drawn with no length"], f"stderr {p.stderr}")
    zero = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel" and e["dur"] == 0]
    check(len(zero) == 1, f"{len(zero)} kernels of no length")
    return written, dropped


def case_cupti_flight(backend, program):
    """Flight mode with kernel capture: 100,000 steps of a kernel each under
    a 16 MiB cap (which holds three quarters of their records); the
    on-demand dump at the last step holds the ring's 3 steps' launches and
    kernels, linked, and nothing was dropped: the records are trimmed to
    the ring as the run goes. CUPTI's clock was read slowly at capture
    start (every record placed a millisecond early): which step a launch
    belongs to does not hang on it."""
    p = run(program, "cupti_flight")
    truth = read_truth()["records"][0]
    check(truth["records"] == 200000, "records")
    # up to 4 buffers out at once (16 MiB), each reused: about 8 fill in the run
    check(2 <= truth["buffers_allocated"] <= 4, f"{truth['buffers_allocated']} activity buffers allocated")
    lines = stderr_lines(p)
    check(len(lines) == 1 and "dumping steps 99997 to 99999" in lines[0], f"stderr {p.stderr}")
    check_flight_dump("flight.on_demand-99999.json", "cudaLaunchKernel")


def check_flight_dump(path, launch):
    """A flight dump of 3 steps of one kernel each: 3 kernels and their 3
    launches (runtime calls named `launch`), linked; nothing dropped."""
    d = load(path)
    ev = d["traceEvents"]
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    calls = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and e["name"] == launch]
    check(len(kernels) == 3 and len(calls) == 3, f"{len(kernels)} kernels, {len(calls)} launches")
    check(sorted(e["args"]["correlation"] for e in kernels) == sorted(e["args"]["correlation"] for e in calls),
          "kernels and their launches")
    check(d["prof_gpu_dropped_activities"] == 0, f"dropped {d['prof_gpu_dropped_activities']}")


def case_cupti_incomplete(backend, program):
    """Records a forced flush handed back not complete (timestamps 0) are
    counted lost and said, never drawn."""
    p = run(program, "cupti_incomplete")
    check(read_truth()["incomplete"][0]["incomplete"]["handed_back"] == 2, "the double handed back no incomplete records")
    d = load("incomplete.1.json")
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    kernels = collections.Counter(e["name"] for e in ev if e.get("cat") == "kernel")
    check(kernels == {"short()": 2}, f"kernels drawn {dict(kernels)}")
    check(all(e["dur"] > 0 for e in ev if e.get("cat") == "kernel"), "a kernel of no length")
    launches = [e for e in ev if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"]
    check(len(launches) == 4, f"{len(launches)} launches, not 4")
    check(d["prof_gpu_dropped_activities"] == 2, f"dropped {d['prof_gpu_dropped_activities']}, not 2")
    lines = stderr_lines(p)
    lost = [line for line in lines if "prof_gpu_dropped_activities" in line]
    check(len(lost) == 1 and lost[0].startswith("prof: 2 kernels") and "not complete" in lost[0], f"messages {lines}")
    check(not [line for line in lines if "ended before" in line], f"an incomplete record drawn: {lines}")
    print(f"cupti_incomplete: {lost[0]}")


def case_cupti_late(backend, program):
    """The record of a kernel that ran past its cycle's save arrives after
    the trace was written: one line says so; the trace holds the rest."""
    from check_cupti import check_trace
    p = run(program, "cupti_late")
    d = load("late.1.json")
    gpu, rt, _, _, _ = check_trace(d)
    check(collections.Counter(e["name"] for e in gpu) == {"_Z4workv": 2} or
          collections.Counter(e["name"] for e in gpu) == {"work()": 2}, f"kernels {[e['name'] for e in gpu]}")
    check(len(rt) == 3, f"{len(rt)} runtime calls, not 3 (step 1's late launch included)")
    late = [line for line in stderr_lines(p) if "finished after it was saved" in line]
    check(len(late) == 1 and late[0].startswith("prof: 1 kernels"), f"expected one line counting 1 late: {p.stderr}")


def case_roc_late_start(backend, program):
    """Capture started by the first GPU region (no PROF_INIT), after HIP's
    first calls: one line says the SDK may miss them; the double does not."""
    from check_cupti import check_trace
    p = run(program, "roc_late_start")
    roc_at_exit()
    lines = [line for line in stderr_lines(p) if "rocprofiler-sdk" in line]
    check(len(lines) == 1 and "configured after HIP started" in lines[0] and "call PROF_INIT before" in lines[0],
          f"stderr {p.stderr}")
    gpu, _, _, _, _ = check_trace(load("late_start.json"), launches=2)
    check(all("loss" in e["name"] for e in gpu), f"kernels {[e['name'] for e in gpu]}")


def check_unusable(program, case, tracer, says, **env):
    """Kernel capture asked for, the tracer unusable: one line naming it
    says `says` and that GPU regions go on; unusable.json holds the 3 GPU
    regions with their stream, and nothing captured. Returns the line."""
    p = run(program, case, **env)
    lines = [line for line in stderr_lines(p) if tracer in line]
    check(len(lines) == 1 and says in lines[0] and "GPU regions are still timed by events" in lines[0],
          f"expected one line saying {says!r}: {p.stderr}")
    d = load("unusable.json")
    check(collections.Counter(e["name"] for e in gpu_xs(d)) == {"layer": 3}, f"GPU regions {gpu_xs(d)}")
    check(all("stream" in e["args"] for e in gpu_xs(d)), "GPU regions lost their stream")
    check(not [e for e in d["traceEvents"] if e.get("cat") in ("kernel", "cuda_runtime")], f"activities without {tracer}")
    return lines[0]


def cupti_unusable(program, case, says, **env):
    line = check_unusable(program, "cupti_unusable", "CUPTI", says, **env)
    check(read_truth()["enabled_after"][0]["enabled_after"] == 0, "activity kinds left enabled")
    print(f"{case}: {line}")


def case_cupti_unusable_missing(backend, program):
    cupti_unusable(program, "missing", "cannot load /nonexistent/libcupti.so",
                   PROF_CUPTI_LIB="/nonexistent/libcupti.so")


def case_cupti_unusable_noapi(backend, program):
    cupti_unusable(program, "noapi", "libm.so.6 lacks the Activity API", PROF_CUPTI_LIB="libm.so.6")


def case_cupti_unusable_enable(backend, program):
    cupti_unusable(program, "enable", "cuptiActivityEnable failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
                   FAKE_CUPTI_FAIL_ENABLE="2")


# ---- kernel capture on HIP (rocprof_test.c, the rocprofiler-sdk double
# ---- fake_rocprofiler.c) ---------------------------------------------------

def roc_at_exit(configures=1):
    """The double's counters at exit: prof.h configured once (exported and
    forced alike), made no SDK call after its finalize, and left no context
    active; what the SDK dropped."""
    t = read_truth()["at_exit"][-1]
    check(t["configures"] == configures, f"rocprofiler_configure called {t['configures']} times, not {configures}")
    check(t["after_finalize"] == 0, f"{t['after_finalize']} SDK calls after its finalize")
    check(t["active"] == 0, f"{t['active']} contexts active at exit")
    return t


def case_roc_kernels(backend, program):
    """Steps 2-4 recorded, each: a GPU region "layer" around a copy and two
    kernels, then a kernel outside it and a synchronisation; hipGetDevice
    before each, left out. Every kernel and copy is in the trace once, with
    its hipLaunchKernel / hipMemcpyAsync, flow and correlation, its grid in
    blocks, on the region's stream track; HTA's kernel breakdown lists the
    kernels; the .pftrace says the same as the JSON."""
    p = run(program, "roc_kernels")
    check_quiet(p)
    said = [line for line in p.stderr.splitlines() if line == ROC_NO_SYNC]
    check(len(said) == 1, f"HIP's lack of synchronisation records said {len(said)} times, not once: {p.stderr}")
    roc_at_exit()
    k = check_kernels_case("roc", {"Memcpy HtoD (Host -> Device)": 3},
                           {"hipLaunchKernel": 9, "hipMemcpyAsync": 3, "hipStreamSynchronize": 3}, 1, 12)
    gpu, want, pf = k["gpu"], k["want"], k["pftrace"]
    check(not [e for e in k["trace"]["traceEvents"] if e.get("cat") == "cuda_sync"], "cuda_sync events on HIP")
    dims = {"matmul": ([128, 1, 1], [256, 1, 1]), "relu": ([64, 1, 1], [256, 1, 1]), "loss": ([1, 1, 1], [64, 1, 1])}
    for e in gpu:
        if e["cat"] == "kernel":
            want_dims = next(v for k, v in dims.items() if k in e["name"])
            check((e["args"]["grid"], e["args"]["block"]) == want_dims, f"grid and block of {e['name']}: {e['args']}")
    copies = [e for e in gpu if e["cat"] == "gpu_memcpy"]
    check(all(e["args"]["bytes"] == 1 << 20 for e in copies), f"copies' bytes {[e['args'] for e in copies]}")
    # the table: a row per kernel and copy name, 3 calls each, with GPU time
    rows = {r["row"]: r for r in read_truth()["row"]}
    for name in want:
        check(name in rows and rows[name]["calls"] == 3 and rows[name]["self_gpu_ns"] > 0,
              f"table row of {name}: {rows.get(name)}")
    try:
        import hta  # noqa: F401
    except ImportError:
        print("roc_kernels: HTA not checked (the readers' venv is not in use)")
    else:
        os.makedirs("hta", exist_ok=True)
        with open("roc.1.json") as src, open(os.path.join("hta", "roc.1.json"), "w") as dst:
            dst.write(src.read())
        readers = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "readers")
        named = ",".join(sorted(k for k in want if "," not in k))  # the option's list is comma-separated
        r = subprocess.run([sys.executable, os.path.join(readers, "check_hta.py"), "hta", "--include-last-step",
                            "--expect-kernels", named], capture_output=True, text=True, timeout=600)
        print(r.stdout.strip())
        check(r.returncode == 0, f"check_hta.py failed:\n{r.stdout}\n{r.stderr}")
    if not pf:
        return
    import pftrace
    t = pftrace.pb.Trace()
    with open(pf, "rb") as f:
        t.ParseFromString(f.read())
    tracks = {pk.track_descriptor.name for pk in t.packet if pk.HasField("track_descriptor")}
    check("HIP runtime" in tracks and "CUDA runtime" not in tracks, f"runtime calls' tracks: {sorted(tracks)}")


def case_roc_drops(backend, program):
    """More records than the SDK's buffer holds before a flush: every one is
    in the trace or counted in prof_gpu_dropped_activities, said once; the
    one without a timestamp is counted, the one that ends before it starts
    drawn with no length and said."""
    p = run(program, "roc_drops")
    sdk = roc_at_exit()
    records = read_truth()["records"][0]["records"]
    written, dropped = check_drops(p, load("drops.json"), records, "rocprofiler-sdk")
    check(sdk["sdk_dropped"] > 0 and dropped == sdk["sdk_dropped"] + 1,
          f"dropped {dropped}: the SDK's {sdk['sdk_dropped']} and the untimed record")
    print(f"roc_drops: {written} written, {dropped} dropped of {records}")


def case_roc_late(backend, program):
    """A kernel whose record reaches the buffer after its cycle was saved:
    one line says so; the trace holds the rest."""
    from check_cupti import check_trace
    p = run(program, "roc_late")
    roc_at_exit()
    d = load("late.1.json")
    gpu, rt, _, _, _ = check_trace(d)
    check(len(gpu) == 2, f"kernels {[e['name'] for e in gpu]}")
    check(len(rt) == 5, f"{len(rt)} runtime calls, not 5 (2 launches, 2 syncs, step 1's late launch)")
    late = [line for line in stderr_lines(p) if "finished after it was saved" in line]
    check(len(late) == 1 and late[0].startswith("prof: 1 kernels"), f"expected one line counting 1 late: {p.stderr}")


def case_roc_flight(backend, program):
    """Flight mode with kernel capture on HIP: the on-demand dump at the last
    step holds the ring's 3 steps' launches and kernels, linked."""
    p = run(program, "roc_flight")
    roc_at_exit()
    lines = stderr_lines(p)
    check(len(lines) == 1 and "dumping steps 17 to 19" in lines[0], f"stderr {p.stderr}")
    check_flight_dump("flight.on_demand-19.json", "hipLaunchKernel")


def case_roc_windows(backend, program):
    """11 steps of 100 launches, the window steps 9-10 after a warm-up step:
    the SDK's main context took the warm-up and recorded steps' calls and
    dispatches alone (plus each step's hipStreamSynchronize), and the trace
    holds the 200 kernels of the recorded steps, each with its call."""
    from check_cupti import check_trace
    p = run(program, "roc_windows")
    check_quiet(p)
    roc_at_exit()
    t = read_truth()["windows"][0]["windows"]
    check(t["traced_calls"] == 3 * 101 and t["traced_dispatches"] == 3 * 100,
          f"the SDK traced {t['traced_calls']} calls and {t['traced_dispatches']} dispatches of {t['launches']} "
          "launches; 3 steps of 100 launches and a synchronize each while capture is on")
    d = load("windows.1.json")
    check_trace(d, launches=200)
    check(recorded_steps(d) == [9, 10], f"recorded steps {recorded_steps(d)}")
    print(f"roc_windows: the SDK traced {t['traced_calls']} calls of {t['launches']} launches; 200 kernels in the trace")


def case_roc_rocm_path(backend, program):
    """PROF_KERNELS=1 (no config) and the SDK found under $ROCM_PATH/lib."""
    from check_cupti import check_trace
    p = run(program, "roc_rocm_path")
    check_quiet(p)
    roc_at_exit()
    check_trace(load("rocm_path.json"), launches=2)


def case_roc_discovered(backend, program):
    """The SDK started by HIP before PROF_INIT (PROF_KERNELS=1) configured
    prof.h through its exported rocprofiler_configure, once, and handed it
    the kernel symbols of the code object loaded then: the kernels have
    their names. On device 1 of 2: the kernels' agent is that device."""
    from check_cupti import check_trace
    p = run(program, "roc_discovered")
    check_quiet(p)
    roc_at_exit()
    gpu, _, ann, _, _ = check_trace(load("discovered.json"), launches=2)
    check(all("relu" in e["name"] for e in gpu), f"kernels {[e['name'] for e in gpu]}")
    check({e["pid"] for e in gpu} == {1} and {e["pid"] for e in ann} == {1},
          f"devices: kernels on {sorted({e['pid'] for e in gpu})}, GPU regions on {sorted({e['pid'] for e in ann})}")


def roc_unusable(program, says, configures=None, **env):
    line = check_unusable(program, "roc_unusable", "rocprofiler-sdk", says, **env)
    if configures is not None:          # the double was loaded: it was left as found
        roc_at_exit(configures)
    print(f"roc_unusable: {line}")


def case_roc_unusable_absent(backend, program):
    roc_unusable(program, "cannot load /nonexistent/librocprofiler-sdk.so",
                 PROF_ROCPROFILER_SDK="/nonexistent/librocprofiler-sdk.so")


def case_roc_unusable_taken(backend, program):
    roc_unusable(program, "already configured by another tool", configures=0, FAKE_ROC_TAKEN="1")


def case_roc_unusable_old(backend, program):
    roc_unusable(program, "version 0.3.0 is older than 0.4.0 (ROCm 6.2)", configures=1, FAKE_ROC_VERSION="300")


def main():
    backend, case, program = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    if case.startswith("fail_"):
        check_failure(backend, program, case)
    elif case.startswith("energy"):     # PROF_ENERGY (tests/gpu/check_energy.py)
        from check_energy import check_case
        check_case(backend, case, run(program, case))
    else:
        fn = globals().get("case_" + case)
        if not fn:
            fail(f"no case {case}")
        fn(backend, program)
    print(f"ok: {backend} {case}")


if __name__ == "__main__":
    main()
