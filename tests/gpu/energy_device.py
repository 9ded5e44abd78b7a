#!/usr/bin/env python3
"""PROF_ENERGY on a real NVIDIA GPU, against NVML read by hand and
nvidia-smi (tests/gpu/run_on_device.sh, section 7; never run by the suite,
which has no GPU).

    energy_device.py sample OUT     reads every NVML device's total-energy
                                    counter as fast as it answers, until
                                    stdin closes: OUT gets lines
                                    "<CLOCK_REALTIME ns before> <after> <bus id> <mJ>"
    energy_device.py check TRACE SAMPLES SMI_CSV
                                    each recorded step's joules (the trace's
                                    "GPU d energy (J)") against the same
                                    counter read by hand around the step (its
                                    reads interpolated at the step's ends, on
                                    the wall clock: baseTimeNanoseconds + ts);
                                    the window's total against the hand-read
                                    one and against nvidia-smi's power.draw
                                    over the same seconds. Prints the figures;
                                    exit 1 when the window's total is off the
                                    hand-read one by more than 2% plus two of
                                    the counter's changes.

The hand reads are the reference: a read costs milliseconds, so they are
placed mid-way between the clock readings around each call, as prof.h places
its own; the counter changes about every 100 ms, so a step shorter than that
is compared as a share on both sides (prof.h marks it)."""
import bisect
import ctypes
import json
import statistics
import sys
import time


def sample(out):
    nv = ctypes.CDLL("libnvidia-ml.so.1")
    check = lambda r, what: r == 0 or sys.exit(f"energy_device.py: {what} failed: NVML error {r}")  # noqa: E731
    check(nv.nvmlInit_v2(), "nvmlInit_v2")
    n = ctypes.c_uint()
    check(nv.nvmlDeviceGetCount_v2(ctypes.byref(n)), "nvmlDeviceGetCount_v2")

    class PciInfo(ctypes.Structure):    # nvmlPciInfo_t (v3): busIdLegacy, domain, bus, device, ids, busId
        _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint),
                    ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint),
                    ("busId", ctypes.c_char * 32)]
    devs = []
    for i in range(n.value):
        h = ctypes.c_void_p()
        check(nv.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)), "nvmlDeviceGetHandleByIndex_v2")
        p = PciInfo()
        check(nv.nvmlDeviceGetPciInfo_v3(h, ctypes.byref(p)), "nvmlDeviceGetPciInfo_v3")
        devs.append((h, f"{p.domain:04x}:{p.bus:02x}:{p.device:02x}.0"))
    import select
    mj = ctypes.c_ulonglong()
    with open(out, "w") as f:
        while not select.select([sys.stdin], [], [], 0)[0]:
            for h, bus in devs:
                a = time.time_ns()
                r = nv.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(mj))
                b = time.time_ns()
                if r == 0:
                    f.write(f"{a} {b} {bus} {mj.value}\n")


def knots(rows):
    """A device's counter changes, each placed mid-way between the reads
    around it (as prof.h does): [(wall ns, mJ)]."""
    out, prev = [], None
    for a, b, v in rows:
        if prev is not None and v != prev[2]:
            out.append(((prev[0] + b) / 2, v))
        prev = (a, b, v)
    return out


def at(k, t):
    """The counter at wall time t, linear between knots; None outside."""
    i = bisect.bisect_left([x[0] for x in k], t)
    if i == 0 or i >= len(k):
        return None
    (t0, e0), (t1, e1) = k[i - 1], k[i]
    return e0 + (e1 - e0) * (t - t0) / (t1 - t0)


def check_run(trace, samples, smi):
    d = json.load(open(trace))
    base, meta = int(d["baseTimeNanoseconds"]), d.get("prof_energy", {})
    print(f"prof_energy: read every {meta.get('read_every_ms')} ms, counter changes every "
          f"{meta.get('counter_changes_every_ms')} ms, a read {meta.get('read_cost_us_median')} us median, "
          f"{meta.get('read_cost_us_max')} us max ({meta.get('reads')} reads)")
    rows = {}
    for line in open(samples):
        a, b, bus, v = line.split()
        rows.setdefault(bus.lower(), []).append((int(a), int(b), int(v)))
    steps = sorted((e for e in d["traceEvents"] if e["ph"] == "X" and e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    bad = 0
    for dev in meta.get("devices", []):
        bus, key = dev["pci_bus_id"].lower(), f"GPU {dev['device']} energy (J)"
        k = knots(rows.get(bus, []))
        gaps = [b[0] - a[0] for a, b in zip(k, k[1:])]
        if not k or not gaps:
            print(f"GPU {dev['device']} ({bus}): no hand reads")
            bad = 1
            continue
        tick = statistics.median(gaps) / 1e6
        diffs, got, ref = [], 0.0, 0.0
        for e in steps:
            t0, t1 = base + e["ts"] * 1000, base + (e["ts"] + e["dur"]) * 1000
            h0, h1 = at(k, t0), at(k, t1)
            if key not in e["args"] or h0 is None or h1 is None:
                continue
            j, hj = e["args"][key], (h1 - h0) / 1000
            diffs.append(j - hj)
            got, ref = got + j, ref + hj
        if not diffs:
            print(f"GPU {dev['device']}: no step with both")
            bad = 1
            continue
        w0, w1 = base + steps[0]["ts"] * 1000, base + (steps[-1]["ts"] + steps[-1]["dur"]) * 1000
        watts = ref / ((w1 - w0) / 1e9)
        limit = 0.02 * ref + 2 * tick / 1000 * watts
        print(f"GPU {dev['device']} ({bus}): {len(diffs)} steps; per step prof.h - by hand: median "
              f"{statistics.median(diffs):+.3f} J, worst {max(diffs, key=abs):+.3f} J; window {got:.3f} J by prof.h, "
              f"{ref:.3f} J by hand ({100 * (got - ref) / ref:+.2f}%; limit {limit:.3f} J); counter changes every "
              f"{tick:.1f} ms (hand reads)")
        bad |= abs(got - ref) > limit
        try:                            # nvidia-smi: timestamp, index, pci.bus_id, power.draw [W]
            pw = []
            for line in open(smi):
                f = [x.strip() for x in line.split(",")]
                if len(f) < 4 or not f[2].lower().endswith(bus[-7:]):
                    continue
                t = time.mktime(time.strptime(f[0].split(".")[0], "%Y/%m/%d %H:%M:%S")) * 1e9
                if w0 - 1e9 <= t <= w1 + 1e9:
                    pw.append(float(f[3].split()[0]))
            if pw:
                print(f"  nvidia-smi power.draw over the window: mean {statistics.mean(pw):.1f} W ({len(pw)} samples); "
                      f"prof.h's {got / ((w1 - w0) / 1e9):.1f} W")
        except OSError as err:
            print(f"  nvidia-smi: {err}")
    return bad


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "sample":
        sample(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        sys.exit(check_run(*sys.argv[2:]))
    else:
        sys.exit(__doc__)
