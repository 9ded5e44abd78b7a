#!/usr/bin/env python3
"""PROF_ENERGY's cases of check_gpu.py: tests/gpu/energy_test.c on the
simulated GPU with the NVML double (tests/gpu/fake_nvml.c; on HIP the AMD
SMI double, fake_amdsmi.c), whose counter changes every 10 ms by the exact
integral of the power each step sets (tests/gpu/fake_energy.h).

What each case checks, read back by Python's json and Perfetto's proto:
  energy        every recorded step carries each device's joules ("GPU d
                energy (J)"), within one counter tick (10 ms at the highest
                power of the step and its neighbours; or twice the knots'
                uncertainty the trace states, where reads lagged so far
                that it is more) of the exact energy, or, where the
                profiler's thread was kept from reading (a loaded machine,
                a sanitizer) and the counter's changes seen around one of
                the step's ends lie more than 1.5 ticks apart,
                within that interval's energy instead (the knots are the
                power track's samples; the check says how many);
                each device's total over the window within 1%; the devices
                matched by PCI bus id (NVML lists them in another order:
                a match by index would swap their powers); a power track per
                device ("GPU d power (W)", counter events) whose integral is
                the steps' joules; a step marked a share exactly where a
                device has no knot inside it (none where reads kept pace); the .pftrace says the same as the JSON;
                the trace's metadata says how (prof_energy); the table's
                footer gives each device's median and p90 J/step, its
                average W, and J/token; no NVML call on the engine's thread.
  energy_nowarm PROF_SCHEDULE=active=11 (no wait, no warm-up): all 11
                steps within a tick, the first one too.
  energy_slow   the same with reads that take 0.28 ms: an H200's read
                against its counter's interval (2.8 ms of ~100 ms), here
                against the double's 10 ms.
  energy_metrics PROF_GPU_METRICS: a track for each metric the double has
                (on HIP: no PCIe or throttle reasons, one line for each),
                every sample its known value, across the window; the
                throttle mask as named flags; no call on the engine's thread.
  energy_metrics_some  GPU 1 without PCIe throughput and throttle reasons:
                one line for each, the rest of its tracks there.
  energy_no_lib, energy_init_fails, energy_no_counter, energy_backwards,
  energy_read_fails: one line on stderr, the trace whole (every step, every
                GPU region), energy where it is known and none where not."""
import bisect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_case import ENERGY_FOOTER, check, load  # noqa: E402
import pftrace  # noqa: E402

TICK_S = 0.010
BUS = {0: "0000:18:00.0", 1: "0000:38:00.0"}
# what each management library's binding says (its double's codes and strings)
LIBS = {
    "cuda": {"source": "NVML", "counter": "nvmlDeviceGetTotalEnergyConsumption", "resolution": 1.0,
             "missing": "/nonexistent/libnvidia-ml.so.1", "init": "nvmlInit_v2 failed (NVML error 9: Driver Not Loaded)",
             "no_counter": "NVML error 3: Not Supported", "read": "NVML error 15: GPU is lost"},
    "hip": {"source": "AMD SMI", "counter": "amdsmi_get_energy_count", "resolution": 0.0152588,
            "missing": "/nonexistent/libamd_smi.so",
            "init": "amdsmi_init failed (AMD SMI error 34: AMDSMI_STATUS_DRIVER_NOT_LOADED)",
            "no_counter": "AMD SMI error 2: AMDSMI_STATUS_NOT_SUPPORTED", "read": "AMD SMI error 7: AMDSMI_STATUS_API_FAILED"},
}
LIB = LIBS["cuda"]


def steps_of(d):
    return sorted((e for e in d["traceEvents"] if e["ph"] == "X" and e["name"].startswith("ProfilerStep#")),
                  key=lambda e: e["ts"])


def truth():
    t = {"step": {}, "nvml": None}
    with open("truth.jsonl") as f:
        for line in f:
            x = json.loads(line)
            if "step" in x:
                t["step"][x["step"]] = x
            else:
                t["nvml"] = x["nvml"]
    return t


def exact_j(tr, e, dev):
    """A step's exact joules: the power its start set, over its length."""
    n = int(e["name"].split("#")[1])
    return tr["step"][n]["watts"][dev] * (e["dur"] + 0.001) / 1e6


def span_at(knots, t):
    """The counter's interval (s) around time t (us): a tick, or, where the
    knots (the power track's times, us) around t lie more than 1.5 ticks
    apart (the profiler's thread was kept from reading), that interval."""
    i = bisect.bisect_right(knots or [], t)
    if knots and 0 < i < len(knots) and (knots[i] - knots[i - 1]) / 1e6 > 1.5 * TICK_S:
        return (knots[i] - knots[i - 1]) / 1e6
    return TICK_S


def p_hi(tr, e, dev):
    n = int(e["name"].split("#")[1])
    return max(tr["step"][k]["watts"][dev] for k in (n - 1, n, n + 1) if k in tr["step"])


def tick_j(tr, e, dev, knots=None, least=TICK_S):
    """One counter tick's energy at the highest power near the step (or, if
    longer, `least`: twice the knots' stated uncertainty); where reads were
    delayed around one of its ends, that interval's energy."""
    span = max(span_at(knots, e["ts"]), span_at(knots, e["ts"] + e["dur"]), least)
    return span * p_hi(tr, e, dev)


def knot_uncertainty_s(d, dev):
    """The trace's own word on how far a knot may lie from the change it
    marks (half the widest gap between the reads that saw a change)."""
    return [x for x in d["prof_energy"]["devices"] if x["device"] == dev][0]["knot_uncertainty_ms"] / 1e3


def key(dev):
    return f"GPU {dev} energy (J)"


def common(p, tr, d, steps_expected):
    """Whole: every step, every GPU region, JSON = .pftrace; no NVML call
    on the engine's thread."""
    steps = steps_of(d)
    check([int(e["name"].split("#")[1]) for e in steps] == list(range(2, 2 + steps_expected)),
          f"recorded steps: {[e['name'] for e in steps]}")
    gpu = [e for e in d["traceEvents"] if e["ph"] == "X" and e.get("cat") == "gpu_user_annotation"]
    check(len(gpu) == 2 * steps_expected, f"{len(gpu)} GPU regions, not {2 * steps_expected}")
    diff = pftrace.load_json("energy.1.json").diff(pftrace.decode_pftrace("energy.1.pftrace"))
    check(not diff, "the .pftrace says otherwise: " + "; ".join(diff))
    nv = tr["nvml"]
    check(nv["on_engine"] == 0, f"{nv['on_engine']} NVML calls on the engine's thread (of {nv['all']})")
    return steps


def stderr_lines(p):
    return [line for line in p.stderr.splitlines() if line.strip()]


def one_line(p, says):
    lines = stderr_lines(p)
    check(len(lines) == 1 and says in lines[0], f"expected one line saying {says!r}, got: {lines}")


def power_track(d, dev):
    return sorted(((e["ts"], e["args"]["W"]) for e in d["traceEvents"]
                   if e["ph"] == "C" and e["name"] == f"GPU {dev} power (W)"))


def integral_j(track, t0, t1):
    """The power track's energy over [t0, t1] (us): each sample holds to the next."""
    j = 0.0
    for (ts, w), (nts, _) in zip(track, track[1:]):
        a, b = max(ts, t0), min(nts, t1)
        if b > a:
            j += w * (b - a) / 1e6
    return j


def check_device(tr, steps, dev, d, where=lambda e: True):
    """Within a tick on each step `where` says has energy; the window's
    total within 1% where every step has it."""
    knots = [t for t, _ in power_track(d, dev)]
    # each end's estimate is off by at most the power times its knots'
    # uncertainty: a tick where reads kept pace (half of 0.9 tick each),
    # more where the profiler's thread was delayed (a loaded machine)
    least = max(TICK_S, 2 * knot_uncertainty_s(d, dev))
    got = ex = 0.0
    wide = 0
    for e in steps:
        if not where(e):
            continue
        j = e["args"].get(key(dev))
        check(j is not None, f"{e['name']} lacks {key(dev)}: {e.get('args')}")
        x, tick = exact_j(tr, e, dev), tick_j(tr, e, dev, knots, least)
        wide += tick > tick_j(tr, e, dev) + 1e-9
        check(abs(j - x) <= tick, f"{e['name']} GPU {dev}: {j} J, exact {x:.3f} J: off by more than a tick "
                                  f"or its knots' uncertainty ({tick:.3f} J)")
        got, ex = got + j, ex + x
    if wide:
        print(f"GPU {dev}: {wide} steps checked within more than a tick (reads delayed: knots {1e3 * least / 2:.3f} ms "
              "uncertain, or the counter's changes around an end further apart than 1.5 ticks)")
    return got, ex


def check_shares(d, steps):
    """A step is marked a share of one counter interval exactly where a
    device's knots (its power track's times) have none inside it. Every
    step is longer than the counter's interval, so where the reads kept
    pace none is; where the profiler's thread was kept from reading (a
    loaded machine) the steps between its reads say so. A knot within 2 ns
    of a step's end (the trace's rounding) leaves that step unchecked."""
    knots = [[t for t, _ in power_track(d, dev)] for dev in (0, 1)]
    shares = 0
    for e in steps:
        a, b = e["ts"], e["ts"] + e["dur"] + 0.001
        if any(abs(t - a) < 0.002 or abs(t - b) < 0.002 for k in knots for t in k):
            continue
        empty = any(not any(a < t <= b for t in k) for k in knots)
        marked = "energy" in e["args"]
        check(marked == empty, f"{e['name']}: marked a share {marked}, a device without a knot inside it {empty}")
        shares += marked
    if shares:
        print(f"{shares} steps without a knot inside, marked shares (reads delayed)")


def case_energy(p, tr, d, n=30):
    steps = common(p, tr, d, n)
    check(not stderr_lines(p), f"unexpected messages: {p.stderr}")
    meta = d.get("prof_energy")
    check(meta and meta["source"] == LIB["source"] and meta["counter"] == LIB["counter"] and "method" in meta,
          f"prof_energy: {meta}")
    res = LIB["resolution"]
    check([(x["device"], x["pci_bus_id"], x["resolution_mJ"]) for x in meta["devices"]] == [(0, BUS[0], res),
                                                                                         (1, BUS[1], res)],
          f"devices: {meta['devices']}")
    for dev in (0, 1):
        got, ex = check_device(tr, steps, dev, d)
        # 1%, or where reads were delayed at the window's ends, those intervals' energy
        track = [t for t, _ in power_track(d, dev)]
        spans = [span_at(track, steps[0]["ts"]), span_at(track, steps[-1]["ts"] + steps[-1]["dur"])]
        limit = 0.01 * ex
        if max(spans) > TICK_S:
            limit = max(limit, spans[0] * p_hi(tr, steps[0], dev) + spans[1] * p_hi(tr, steps[-1], dev))
        check(abs(got - ex) <= limit, f"GPU {dev}: the window's {got:.3f} J, exact {ex:.3f} J: off by more than "
                                      f"{limit:.3f} J")
        track = power_track(d, dev)
        check(len(track) >= 2, f"GPU {dev}: {len(track)} power samples")
        t0, t1 = steps[0]["ts"], steps[-1]["ts"] + steps[-1]["dur"] + 0.001
        pj = integral_j(track, t0, t1)
        check(abs(pj - got) <= 0.001 * got + 0.01, f"GPU {dev}: the power track holds {pj:.3f} J over the window, "
                                                   f"its steps {got:.3f} J")
        print(f"GPU {dev}: window {got:.3f} J, exact {ex:.3f} J ({100 * (got - ex) / ex:+.3f}%)")
    check_shares(d, steps)
    # the table's footer: median and p90 (nearest rank), W, J/token; the
    # table sums unrounded joules, these the trace's (to the mJ): W and
    # J/token are compared within their printed precision, not as text
    with open("table.txt") as f:
        table = f.read()
    for dev in (0, 1):
        js = sorted(e["args"][key(dev)] for e in steps)
        rank = lambda q: js[-(-len(js) * q // 100) - 1]  # noqa: E731
        secs = sum(e["dur"] + 0.001 for e in steps) / 1e6
        tokens = sum(tr["step"][int(e["name"].split("#")[1])]["tokens"] for e in steps)
        lines = [m for m in map(ENERGY_FOOTER.fullmatch, table.splitlines()) if m and int(m[1]) == dev]
        check(len(lines) == 1, f"the table's footer has no energy line for GPU {dev}:\n{table}")
        m = lines[0]
        want = (f"median {rank(50):.3f} J, p90 {rank(90):.3f} J, {sum(js) / secs:.1f} W average ({len(js)} steps); "
                f"{sum(js) / tokens:.4g} J/token")
        check(m[2] == f"{rank(50):.3f}" and m[3] == f"{rank(90):.3f}" and int(m[5]) == len(js) and
              abs(float(m[4]) - sum(js) / secs) <= 0.06 and
              abs(float(m[6]) - sum(js) / tokens) <= 6e-4 * sum(js) / tokens,
              f"the table's footer says {m[0]!r}, the steps {want!r}")


def case_energy_nowarm(p, tr, d):
    """PROF_SCHEDULE=active=11: the window opens at init, with no step before
    it to read the counter in; its first step has joules all the same."""
    steps = steps_of(d)
    check([int(e["name"].split("#")[1]) for e in steps] == list(range(0, 11)),
          f"recorded steps: {[e['name'] for e in steps]}")
    check(tr["nvml"]["on_engine"] == 0, f"{tr['nvml']['on_engine']} NVML calls on the engine's thread")
    check(not stderr_lines(p), f"unexpected messages: {p.stderr}")
    for dev in (0, 1):
        # step 0's start is taken back from the first read by at most 4
        # counter intervals: a first read later than that (a loaded machine)
        # leaves step 0 without joules, and is said here
        knots = [t for t, _ in power_track(d, dev)]
        mean = (knots[-1] - knots[0]) / (len(knots) - 1)
        late = knots[0] - steps[0]["ts"] > 4 * mean
        if late:
            print(f"GPU {dev}: the first read came {(knots[0] - steps[0]['ts']) / 1e3:.1f} ms after step 0 began, "
                  f"more than 4 intervals ({4 * mean / 1e3:.1f} ms): step 0 not checked")
        check_device(tr, steps, dev, d, where=lambda e, late=late: not (late and e is steps[0]))


# PROF_GPU_METRICS: the double's values (fake_energy.h's FAKE_METRIC), by
# the runtime's device d (at bus FAKE_GPU_PCI_BUS(d)): each track's name,
# its one argument, its value
def metric_tracks(dev, some=False):
    t = {f"GPU {dev} SM clock (MHz)": ("MHz", 1755 + dev), f"GPU {dev} memory clock (MHz)": ("MHz", 2619),
         f"GPU {dev} utilization (%)": ("%", 37 + 10 * dev), f"GPU {dev} memory used (MiB)": ("MiB", 1024 + 256 * dev)}
    if LIB["source"] == "NVML" and not (some and dev == 1):
        t[f"GPU {dev} PCIe rx (MB/s)"] = ("MB/s", (12000 + dev) / 1000)
        t[f"GPU {dev} PCIe tx (MB/s)"] = ("MB/s", (3000 + 500 * dev) / 1000)
        for flag in (("SwPowerCap", "HwSlowdown") if dev == 0 else ("GpuIdle",)):
            t[f"GPU {dev} throttle: {flag}"] = ("on", 1)
    return t


def check_metrics(p, tr, d, steps, some=False):
    """Each track the device has, its every sample the double's value, from
    before the window's first step to past its last; no other device
    track; the .pftrace the same (common's diff)."""
    want = {}
    for dev in (0, 1):
        want.update(metric_tracks(dev, some))
    got = {}
    for e in d["traceEvents"]:
        if e["ph"] == "C" and e["name"].startswith("GPU ") and "energy" not in e["name"] and "power" not in e["name"]:
            got.setdefault(e["name"], []).append(e)
    check(sorted(got) == sorted(want), f"device tracks {sorted(got)}, not {sorted(want)}")
    t0, t1 = steps[0]["ts"], steps[-1]["ts"] + steps[-1]["dur"]
    for name, (unit, value) in want.items():
        ev = sorted(got[name], key=lambda e: e["ts"])
        check(all(list(e["args"]) == [unit] and e["args"][unit] == value for e in ev),
              f"{name}: {[e['args'] for e in ev]}, not {unit} {value}")
        check(len(ev) >= 2 and ev[0]["ts"] <= t0 + 20000 and ev[-1]["ts"] >= t1 - 20000,
              f"{name}: {len(ev)} samples from {ev[0]['ts']} to {ev[-1]['ts']} us, the window {t0} to {t1} us")
    print(f"{len(want)} device tracks, each the double's value")


def case_energy_metrics(p, tr, d):
    steps = common(p, tr, d, 10)
    if LIB["source"] == "NVML":
        check(not stderr_lines(p), f"unexpected messages: {p.stderr}")
    else:                               # AMD SMI's binding reads neither PCIe nor throttle reasons
        lines = stderr_lines(p)
        want = [f"prof: PROF_GPU_METRICS: GPU {dev} ({BUS[dev]}): AMD SMI's binding does not read its {m}; no track "
                "for it" for dev in (0, 1) for m in ("PCIe rx", "PCIe tx", "throttle reasons")]
        check(sorted(lines) == sorted(want), f"lines: {lines}")
    check_metrics(p, tr, d, steps)
    for dev in (0, 1):
        check_device(tr, steps, dev, d)


def case_energy_metrics_some(p, tr, d):
    steps = common(p, tr, d, 10)
    lines = stderr_lines(p)
    want = [f"prof: PROF_GPU_METRICS: GPU 1 ({BUS[1]}) gives no {m} ({call}: NVML error 3: Not Supported); no track "
            "for it" for m, call in (("PCIe rx", "nvmlDeviceGetPcieThroughput"), ("PCIe tx", "nvmlDeviceGetPcieThroughput"),
                                     ("throttle reasons", "nvmlDeviceGetCurrentClocksEventReasons"))]
    check(lines == want, f"lines: {lines}, not {want}")
    check_metrics(p, tr, d, steps, some=True)


def case_energy_slow(p, tr, d):
    case_energy(p, tr, d)
    cost = d["prof_energy"]["read_cost_us_median"]
    check(cost >= 280, f"reads that take 0.28 ms measured {cost} us")


def no_energy(d):
    check(all(not any(k.endswith("energy (J)") for k in e.get("args", {})) for e in steps_of(d)),
          "a step carries energy")
    check(not [e for e in d["traceEvents"] if e["ph"] == "C" and "power" in e["name"]], "a power track")


def case_energy_no_lib(p, tr, d):
    common(p, tr, d, 10)
    one_line(p, f"PROF_ENERGY: cannot load {LIB['missing']}")
    no_energy(d)
    check(d["prof_energy"].get("off") == f"{LIB['source']} could not be loaded", f"prof_energy: {d['prof_energy']}")


def case_energy_init_fails(p, tr, d):
    common(p, tr, d, 10)
    one_line(p, f"PROF_ENERGY: {LIB['init']}")
    no_energy(d)


def case_energy_no_counter(p, tr, d):
    steps = common(p, tr, d, 10)
    one_line(p, f"PROF_ENERGY: GPU 1 ({BUS[1]}) has no energy counter ({LIB['no_counter']}")
    check_device(tr, steps, 0, d)
    check(all(key(1) not in e["args"] for e in steps), "GPU 1 has joules without a counter")
    off = [x for x in d["prof_energy"]["devices"] if x["device"] == 1][0]
    check(off.get("off", "").startswith("no energy counter"), f"GPU 1: {off}")


def case_energy_backwards(p, tr, d):
    steps = common(p, tr, d, 10)
    one_line(p, f"PROF_ENERGY: GPU 0 ({BUS[0]}): its energy counter went back from")
    check_device(tr, steps, 1, d)
    has = [key(0) in e["args"] for e in steps]
    check(has[0] and has[-1] and not all(has), f"GPU 0 energy on steps: {has} (known before and after the reset, "
                                               "unknown across it)")
    check_device(tr, steps, 0, d, where=lambda e: key(0) in e["args"])


def case_energy_read_fails(p, tr, d):
    steps = common(p, tr, d, 10)
    one_line(p, f"PROF_ENERGY: GPU 0 ({BUS[0]}): reading its energy counter failed ({LIB['read']})")
    check_device(tr, steps, 1, d)
    has = [key(0) in e["args"] for e in steps]
    check(has[0] and not has[-1] and has == sorted(has, reverse=True), f"GPU 0 energy on steps: {has}")
    check_device(tr, steps, 0, d, where=lambda e: key(0) in e["args"])


def check_case(backend, case, p):
    global LIB
    LIB = LIBS[backend]
    tr = truth()
    d = load("energy.1.json")
    globals()["case_" + case](p, tr, d)
