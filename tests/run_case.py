#!/usr/bin/env python3
"""Runs one scenario of tests/scenarios.c and checks what it wrote.

    run_case.py CASE BINARY
    run_case.py --table BINARY KIND:NAME...

CASE is a test of the table at the end of scenarios.c, checked here by
case_CASE. --table checks that the table as CMake read it (KIND:NAME, each
entry) is the one BINARY was compiled with, that every test of it has its
check here and every check here its test, and that every program of
scenarios.c is in it.

Every trace is parsed back by Python's json (what TensorBoard's plugin and HTA
use); each check states the exact behaviour expected of prof.h."""
import collections
import concurrent.futures
import glob
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(binary, case, env=None, cwd=None):
    full = dict(os.environ)
    for k in list(full):
        if k.startswith("PROF_"):
            del full[k]
    full.update(env or {})
    p = subprocess.run([binary, case], cwd=cwd, env=full, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{case} exited {p.returncode}: {p.stderr}")
    return p


def sanitizer(binary):
    """"thread" or "address" when binary was built with TSan or ASan, else None."""
    with open(binary, "rb") as f:
        text = f.read()
    return "thread" if b"__tsan_init" in text else "address" if b"__asan_init" in text else None


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")  # strict: invalid UTF-8 would raise
    d = json.loads(text)
    for key in ("schemaVersion", "traceEvents", "baseTimeNanoseconds", "displayTimeUnit"):
        check(key in d, f"top-level key {key} missing")
    # Kineto's key order: traceEvents after the header keys.
    keys = list(d)
    check(keys.index("baseTimeNanoseconds") < keys.index("traceEvents"), "baseTimeNanoseconds after traceEvents")
    for e in d["traceEvents"]:
        check("ph" in e and "name" in e and "pid" in e and "tid" in e, f"event lacks ph/name/pid/tid: {e}")
        if e["ph"] == "X":
            check(e.get("cat"), f"X event without cat: {e}")
            check(e["dur"] >= 0, f"negative duration: {e}")
    # ts and dur carry exactly 3 decimals (nanoseconds in microseconds).
    for m in re.finditer(rb'"(ts|dur)":(-?[0-9.]+)', raw):
        check(re.fullmatch(rb"-?\d+\.\d{3}", m.group(2)), f"{m.group(1)} not written with 3 decimals: {m.group(2)}")
    return d


def xs(d, name=None):
    return [e for e in d["traceEvents"] if e["ph"] == "X" and (name is None or e["name"] == name)]


def span_ns(e):
    """An X event's [start, end) in whole ns, as the trace writes them (its
    ts + dur in floating point can pass a touching neighbour's ts)."""
    return round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000)


def contains(outer, inner):
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-9


def case_regions(binary, tmp):
    run(binary, "regions", {"PROF_OUTPUT": "trace_{pid}.json"}, tmp)
    files = glob.glob(os.path.join(tmp, "trace_*.json"))
    check(len(files) == 1 and re.search(r"trace_\d+\.json$", files[0]), f"{{pid}} not replaced: {files}")
    d = load(files[0])
    threads = {e["tid"]: e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    check(sorted(threads.values()) == ["main", "worker-0", "worker-1", "worker-2", "worker-3"], f"thread names {threads}")
    workers = [t for t, n in threads.items() if n.startswith("worker")]
    for t in workers:
        mine = [e for e in xs(d) if e["tid"] == t]
        by = {}
        for e in mine:
            by.setdefault(e["name"], []).append(e)
        counts = {k: len(v) for k, v in by.items()}
        check(counts == {"outer": 100, "inner": 300, "leaf": 300, "explicit": 100}, f"thread {t} counts {counts}")
        for e in mine:
            check(e["cat"] == "user_annotation", f"cat {e['cat']}")
        # every inner lies in exactly one outer, every leaf in exactly one inner
        for child, parent in (("inner", "outer"), ("leaf", "inner"), ("explicit", "outer")):
            for c in by[child]:
                n = sum(1 for p in by[parent] if contains(p, c))
                check(n == 1, f"{child} at {c['ts']} lies in {n} {parent} regions")
        outers = sorted(by["outer"], key=lambda e: e["ts"])
        for a, b in zip(outers, outers[1:]):
            check(span_ns(a)[1] <= span_ns(b)[0], "sibling outer regions overlap")
    check(len(xs(d, "main_only")) == 1, "main_only missing")
    check(all(e["pid"] == xs(d)[0]["pid"] for e in xs(d)), "one process, one pid")


HOSTILE = [
    'quote"back\\slash', "ctl\x01\x02\x1f\n\t\r", "lone\ufffdcontinuation", "overlong\ufffd\ufffd",
    "surrogate\ufffd\ufffd\ufffd", "truncated\ufffd\ufffd", "too-big\ufffd\ufffd\ufffd\ufffd",
    "utf8 \u00e9\u20ac\U0001f525", "",
]


def case_hostile(binary, tmp):
    run(binary, "hostile", {"PROF_OUTPUT": "t.json"}, tmp)
    d = load(os.path.join(tmp, "t.json"))
    regions = xs(d)
    check([e["name"] for e in regions] == HOSTILE + ["(null)"], f"names {[e['name'] for e in regions]}")
    for e, want in zip(regions, HOSTILE):
        check(e["args"] == {want: want}, f"args {e.get('args')} != {want!r}")
    inst = [e for e in d["traceEvents"] if e["ph"] == "i"]
    check([e["name"] for e in inst] == ['instant"\x7f'], f"instant {inst}")


def case_counters(binary, tmp):
    run(binary, "counters", {"PROF_OUTPUT": "t.json"}, tmp)
    d = load(os.path.join(tmp, "t.json"))
    cs = [(e["name"], e["args"][e["name"]]) for e in d["traceEvents"] if e["ph"] == "C"]
    check(cs == [("loss", 2.5), ("loss", -0.125), ("lr", 1e-300), ("queue", 42), ("bad", None)], f"counters {cs}")
    inst = [e for e in d["traceEvents"] if e["ph"] == "i"]
    check(len(inst) == 2 and all(e["name"] == "checkpoint" and e["s"] == "t" for e in inst), f"instants {inst}")
    ts = [e["ts"] for e in d["traceEvents"] if e["ph"] in "Ci"]
    check(ts == sorted(ts), "counter/instant times out of order")


def case_args(binary, tmp):
    run(binary, "args", {"PROF_OUTPUT": "t.json"}, tmp)
    d = load(os.path.join(tmp, "t.json"))
    got = {e["name"]: e.get("args") for e in xs(d)}
    want = {
        "parent": {"before_child": 1, "after_child": -7},
        "child": {"M": 64, "dtype": "f32", "flops": 1000},
        "explicit": {"x": 3},
        "no_args": None,
    }
    check(got == want, f"args {got}")


def case_args_formats(binary, tmp):
    """Every argument of every region, read back from .pftrace (streamed:
    a part written at every step), .json and .json.gz and compared with
    what the program recorded: two workers each hold a region open across
    every one of main's 12 steps, its arguments given before the step, and
    the step's part is written while it is open (scenarios.c says how)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pftrace
    if pftrace.pb is None:
        print("SKIP: the perfetto package (tests/readers/requirements.txt) is not installed")
        sys.exit(77)
    for out in ("a.pftrace", "a.json", "a.json.gz"):
        r = run(binary, "args_formats", {"PROF_OUTPUT": out}, tmp)
        want = collections.Counter()
        for line in r.stdout.splitlines():
            thread, region, args = line.split("|")
            kv = []
            for a in args.split():
                k, v = a.split("=", 1)
                kv.append((k, int(v) if v.lstrip("-").isdigit() else v))
            want[(thread, region, tuple(sorted(kv)))] += 1
        regions = collections.Counter(k[1] for k in want.elements())
        check(regions == {"main_work": 12, "outer": 96, "inner": 84, "long": 1},
              f"the program recorded {dict(regions)}")
        check(sum(len(k[2]) for k in want.elements()) == 12 + 96 * 2 + 84 + 2, "the program's arguments")
        path = os.path.join(tmp, out)
        if out.endswith(".pftrace"):
            t = pftrace.decode_pftrace(path)
        else:
            with (gzip.open(path, "rb") if out.endswith(".gz") else open(path, "rb")) as f:
                t = pftrace.from_json(json.loads(f.read()))
        got = collections.Counter()
        for (track, name, ts, dur, args), n in t.slices.items():
            if not name.startswith("ProfilerStep#"):
                got[(t.threads.get(track[1]), name, args)] += n
        missing, extra = want - got, got - want
        check(not missing and not extra,
              f"{out}: {sum(missing.values())} regions as recorded not in the trace, e.g. {list(missing)[:4]}; "
              f"{sum(extra.values())} in the trace not recorded so, e.g. {list(extra)[:4]}")
        check(not re.search(r"dropped|lost", r.stderr), f"{out}: stderr {r.stderr}")
    print("args_formats: 193 regions and their 290 arguments, in .pftrace, .json and .json.gz")


def case_disable(binary, tmp):
    p = run(binary, "regions", {"PROF_OUTPUT": "t.json", "PROF_DISABLE": "1"}, tmp)
    check(not os.path.exists(os.path.join(tmp, "t.json")), "PROF_DISABLE=1 still wrote a trace")
    check("prof:" not in p.stderr, f"PROF_DISABLE=1 printed: {p.stderr}")
    p = run(binary, "regions", {"PROF_OUTPUT": "t.json", "PROF_DISABLE": "yes"}, tmp)
    check("PROF_DISABLE='yes'" in p.stderr, f"malformed PROF_DISABLE not named: {p.stderr}")
    check(os.path.exists(os.path.join(tmp, "t.json")), "malformed PROF_DISABLE stopped recording")


def case_energy_cpu(binary, tmp):
    """PROF_ENERGY=1 in a program with no GPU runtime bound (prof.h alone):
    one line says so; the trace is the one written without it (the same
    events), its prof_energy says why it has none."""
    traces = []
    for energy in ("0", "1"):
        p = run(binary, "lazy_steps", {"PROF_OUTPUT": "t.json", "PROF_ENERGY": energy}, tmp)
        said = [line for line in p.stderr.splitlines() if "PROF_ENERGY" in line]
        want = 1 if energy == "1" else 0
        check(len(said) == want and all("no GPU runtime is bound" in line for line in said),
              f"PROF_ENERGY={energy}: {p.stderr}")
        traces.append(load(os.path.join(tmp, "t.json")))
    strip = lambda d: sorted((e["ph"], e["name"]) for e in d["traceEvents"])  # noqa: E731
    check(strip(traces[0]) == strip(traces[1]), "PROF_ENERGY=1 changed the trace's events")
    check("prof_energy" not in traces[0] and traces[1].get("prof_energy", {}).get("off", "").startswith(
        "no GPU runtime is bound"), f"prof_energy: {traces[1].get('prof_energy')}")


def case_cap(binary, tmp):
    p = run(binary, "cap", {"PROF_OUTPUT": "t.json", "PROF_BUFFER_MB": "1"}, tmp)
    d = load(os.path.join(tmp, "t.json"))
    kept = len(xs(d, "r"))
    # 1 MiB holds 16 chunks of 2047 records
    check(kept == 16 * 2047, f"kept {kept}")
    check(d["prof_dropped_events"] == 100000 - kept, f"dropped {d['prof_dropped_events']}")
    check(f"{100000 - kept} events dropped" in p.stderr, f"drop not reported: {p.stderr}")
    check(f"events {kept} dropped {100000 - kept} traces 1" in p.stdout, f"stats: {p.stdout}")
    p = run(binary, "cap", {"PROF_OUTPUT": "t.json", "PROF_BUFFER_MB": "lots"}, tmp)
    check("PROF_BUFFER_MB='lots'" in p.stderr, f"malformed PROF_BUFFER_MB not named: {p.stderr}")
    check("dropped 0 " in p.stdout, f"default cap dropped events: {p.stdout}")


def case_unwritable(binary, tmp):
    p = run(binary, "regions", {"PROF_OUTPUT": "/nonexistent-dir/sub/t.json"}, tmp)
    lines = [l for l in p.stderr.splitlines() if "cannot write trace" in l]
    check(len(lines) == 1 and "/nonexistent-dir/sub/t.json" in lines[0], f"stderr: {p.stderr}")


def case_long_paths(binary, tmp):
    """A path is never cut: a PROF_OUTPUT longer than a path can be (4095
    bytes) is refused at init for the default, and one that only grows too
    long when the cycle number goes in writes nothing; each says so in one line that
    ends with its explanation, and a deep but valid path's error is whole."""
    p = run(binary, "regions", {"PROF_OUTPUT": "z" * 5000}, tmp)
    check(re.search(r"^prof: PROF_OUTPUT is 5000 bytes, longer than the 4095 a path can have; "
                    r"using prof_trace_\{pid\}\.json$", p.stderr, re.M), f"stderr: {p.stderr[-300:]}")
    check(glob.glob(os.path.join(tmp, "prof_trace_*.json")), f"no default trace: {os.listdir(tmp)}")
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    # 4095 bytes fit; the cycle number that a schedule adds does not
    p = run(binary, "schedule", {"PROF_OUTPUT": "y" * 4090 + ".json", "PROF_SCHEDULE": "active=1,repeat=1"}, tmp)
    check(re.search(r"^prof: the path of cycle 1's trace would be longer than 4095 bytes; not written$",
                    p.stderr, re.M), f"stderr: {p.stderr[-300:]}")
    check(os.listdir(tmp) == [], f"files {os.listdir(tmp)}")
    deep = "d/" * 1500 + "t.json"
    p = run(binary, "regions", {"PROF_OUTPUT": deep}, tmp)
    check(re.search(r"^prof: cannot write trace '" + re.escape(deep) + r"': No such file or directory$",
                    p.stderr, re.M), f"stderr: {p.stderr[-300:]}")


def case_long_names(binary, tmp):
    """Names of 3 MiB (and 768 KiB of control characters, 4.5 MiB escaped)
    are written whole, as names and as an argument, and the trace is JSON."""
    run(binary, "long_names", {"PROF_OUTPUT": "t.json"}, tmp)
    d = load(os.path.join(tmp, "t.json"))
    n = 3 << 20
    big = "".join(chr(ord("a") + i % 26) for i in range(26)) * (n // 26 + 1)
    big = big[:n]
    by = {}
    for e in xs(d):
        by.setdefault(e["name"], []).append(e)
    check(len(by.get("short", [])) == 3, "short regions")
    check(len(by.get(big, [])) == 3 and all(e["args"]["arg"] == big for e in by[big]), "3 MiB names")
    check(len(by.get("\x01" * (n // 4), [])) == 3, "escaped names")


def case_lazy(binary, tmp):
    run(binary, "lazy", {"PROF_OUTPUT": "t.json"}, tmp)
    d = load(os.path.join(tmp, "t.json"))
    names = sorted(e["name"] for e in d["traceEvents"] if e["ph"] in "Xi")
    check(names == ["before_anything", "instant", "lazy_thread"], f"lazy events {names}")


def case_lazy_steps(binary, tmp):
    """No PROF_INIT: the profiler starts when a worker names itself, inside
    a region the main thread had begun; ProfilerStep#0 still holds all of
    step 0, with or without a schedule."""
    for sched in (None, "active=2,repeat=1", "active=1,repeat=1"):
        env = {"PROF_OUTPUT": "t.json"}
        if sched:
            env["PROF_SCHEDULE"] = sched
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        run(binary, "lazy_steps", env, tmp)
        files = os.listdir(tmp)
        check(len(files) == 1, f"{sched}: files {files}")
        d = load(os.path.join(tmp, files[0]))
        steps = {e["name"]: e for e in xs(d) if e["name"].startswith("ProfilerStep#")}
        want = ["ProfilerStep#0"] if sched == "active=1,repeat=1" else ["ProfilerStep#0", "ProfilerStep#1"]
        check(sorted(steps) == want, f"{sched}: steps {sorted(steps)}")
        s0 = steps["ProfilerStep#0"]
        step0 = [e for e in d["traceEvents"] if e["ph"] in "Xi" and e["name"] in ("worker_region", "after_decode")]
        step0.append(min(xs(d, "decode"), key=lambda e: e["ts"]))
        check(len(step0) == 3, f"{sched}: step 0 events {step0}")
        for e in step0:
            check(s0["ts"] <= e["ts"] and e["ts"] + e.get("dur", 0) <= s0["ts"] + s0["dur"] + 1e-9,
                  f"{sched}: {e['name']} [{e['ts']}, +{e.get('dur', 0)}] outside ProfilerStep#0 "
                  f"[{s0['ts']}, +{s0['dur']}]")
        check(s0["ts"] == min(e["ts"] for e in step0), f"{sched}: step 0 does not begin with its first event")
        if len(want) == 2:
            s1 = steps["ProfilerStep#1"]
            late = max(xs(d, "decode"), key=lambda e: e["ts"])
            check(contains(s1, late), f"{sched}: step 1's decode outside ProfilerStep#1")


def case_gzip(binary, tmp):
    """A .json.gz trace is the JSON trace, gzip-compressed: Python's gzip
    (zlib) reads back exactly the bytes of the same cycle written as .json
    (but the traceName), at least 6 times smaller. A schedule's cycles of a
    .json.gz PROF_OUTPUT are t.<cycle>.json.gz."""
    run(binary, "gzip", {}, tmp)
    for n in (1, 2):
        plain = open(os.path.join(tmp, f"t{n}.json"), "rb").read()
        packed = open(os.path.join(tmp, f"t{n}.json.gz"), "rb").read()
        text = gzip.decompress(packed)
        check(text.replace(f"t{n}.json.gz".encode(), b"NAME") == plain.replace(f"t{n}.json".encode(), b"NAME"),
              f"cycle {n}: the gzip trace is not the JSON trace")
        check(len(xs(load(os.path.join(tmp, f"t{n}.json")))) == 10000 + 2, f"cycle {n}: regions and steps")
        check(len(plain) >= 6 * len(packed), f"cycle {n}: {len(plain)} bytes to {len(packed)}")
    run(binary, "schedule", {"PROF_OUTPUT": "s.json.gz", "PROF_SCHEDULE": "active=1,repeat=2"}, tmp)
    names = sorted(f for f in os.listdir(tmp) if f.startswith("s."))
    check(names == ["s.1.json.gz", "s.2.json.gz"], f"files {names}")
    for f in names:
        d = json.loads(gzip.decompress(open(os.path.join(tmp, f), "rb").read()))
        check(len(xs(d, "step_work")) == 1, f"{f}: step_work")


def case_perfetto(binary, tmp):
    """Each cycle written as JSON and as Perfetto's protobuf: decoded with
    Perfetto's own compiled proto, the .pftrace says what the JSON says,
    event for event (names, tracks, times and durations to the ns, args,
    instants, counters, memory, the sync, thread and process names, rank,
    the clipped region) and its slices nest. Also: PROF_OUTPUT's extension
    and PROF_FORMAT pick the format."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pftrace
    if pftrace.pb is None:
        print("SKIP: the perfetto package (tests/readers/requirements.txt) is not installed")
        sys.exit(77)
    run(binary, "perfetto", {}, tmp)
    tool = os.environ.get("PROF_TEST_TOOL")
    for n in (1, 2):
        j = pftrace.load_json(os.path.join(tmp, f"p{n}.json"))
        p = pftrace.decode_pftrace(os.path.join(tmp, f"p{n}.pftrace"))
        diff = j.diff(p)
        check(not diff, f"cycle {n}: the formats differ:\n" + "\n".join(diff))
        if tool:    # `prof table` reads both formats of the cycle alike
            tables = [subprocess.run([tool, "table", f"p{n}{ext}", "sort=name,group=args+thread,percentiles"],
                                     cwd=tmp, capture_output=True, text=True, timeout=60) for ext in (".json", ".pftrace")]
            check(all(t.returncode == 0 for t in tables), f"cycle {n}: prof table: {[t.stderr for t in tables]}")
            check(tables[0].stdout == tables[1].stdout and tables[0].stdout.count("\n") > 10,
                  f"cycle {n}: prof table of the JSON and of the .pftrace differ:\n{tables[0].stdout}\n{tables[1].stdout}")
            print(f"cycle {n}: prof table reads the JSON and the .pftrace alike ({tables[0].stdout.count(chr(10))} lines)")
        slices = sum(j.slices.values())
        print(f"cycle {n}: {slices} slices, {sum(j.instants.values())} instants, "
              f"{sum(j.counters.values())} counter samples, {p.nested} nested slices checked")
        check(j.meta["rank"] == 1 and j.meta["world_size"] == 2, f"cycle {n}: rank {j.meta}")
        check(p.process.endswith(" rank 1"), f"cycle {n}: process {p.process!r}")
        named = lambda name: [k for k in j.slices if k[1] == name]
        # 2 steps x 300 regions, each with its leaf, plus the steps
        check(len(named("leaf")) == 600 and len(named("matmul")) == 120, f"cycle {n}: regions")
        check(sum(1 for k in j.slices if k[1].startswith("ProfilerStep#")) == 2, f"cycle {n}: steps")
        check(any(k[1] == "bad\ufffd\ufffd utf8" for k in j.slices), f"cycle {n}: invalid UTF-8 replaced")
        # every leaf in its region, every region in its step; in cycle 2 the
        # region that overlaps steps 4 and 5 holds step 5's regions, and step
        # 5 is on the overlap track with nothing nested in it
        check(p.nested >= (1200 if n == 1 else 900), f"cycle {n}: {p.nested} nested slices")
        if n == 1:
            clipped = named("spans a step")
            check(len(clipped) == 1 and ("clipped", "began before this trace") in clipped[0][4], "clipped region")
            work = named("work")
            check(len(work) == 3 and len({k[0] for k in work}) == 1, f"alike threads share a track: {work}")
            check(len({dict(k[4]).get("os_tid") for k in work}) >= 2, "os_tid kept")
            check(sum(1 for k in j.instants if k[1] == "prof_sync") == 1, "sync")
        else:
            check(len(named("overlaps the step")) == 1, "the overlapping region")
        check(any(k[0] == "Memory (GPU 0)" for k in j.counters) and any(k[0] == "Memory (CPU)" for k in j.counters),
              f"cycle {n}: memory counters")
    # The format by extension, and by PROF_FORMAT whatever the extension
    run(binary, "regions", {"PROF_OUTPUT": "r.pftrace"}, tmp)
    run(binary, "regions", {"PROF_OUTPUT": "r.perfetto-trace"}, tmp)
    run(binary, "regions", {"PROF_OUTPUT": "forced.json", "PROF_FORMAT": "perfetto"}, tmp)
    for f in ("r.pftrace", "r.perfetto-trace", "forced.json"):
        t = pftrace.decode_pftrace(os.path.join(tmp, f))
        check(sum(1 for k in t.slices.elements() if k[1] == "inner") == 1200, f"{f}: 1200 inner regions")
    r = run(binary, "regions", {"PROF_FORMAT": "protobuf"}, tmp)
    check("PROF_FORMAT='protobuf' is not json, json.gz or perfetto" in r.stderr, f"bad PROF_FORMAT: {r.stderr}")
    pid_files = glob.glob(os.path.join(tmp, "prof_trace_*.json"))
    check(len(pid_files) == 1, f"a bad PROF_FORMAT leaves the extension to decide: {pid_files}")
    run(binary, "regions", {"PROF_FORMAT": "perfetto"}, tmp)
    check(len(glob.glob(os.path.join(tmp, "prof_trace_*.pftrace"))) == 1, "PROF_FORMAT=perfetto's default name")


def case_stream(binary, tmp):
    """A Perfetto trace is appended to at every step: 80,000 regions in 40
    steps under a 1 MiB cap (16,000 records) lose nothing, where the JSON
    trace of the same run, written at the end, drops most; the region around
    the loop is whole (on an overlap track: it overlaps step 0 and the last
    step partly)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pftrace
    if pftrace.pb is None:
        print("SKIP: the perfetto package (tests/readers/requirements.txt) is not installed")
        sys.exit(77)
    r = run(binary, "stream", {"PROF_OUTPUT": "s.pftrace", "PROF_BUFFER_MB": "1"}, tmp)
    check("dropped" not in r.stderr, f"stderr: {r.stderr}")
    t = pftrace.decode_pftrace(os.path.join(tmp, "s.pftrace"))
    names = collections.Counter(k[1] for k in t.slices.elements())
    check(names["op"] == 40000 and names["leaf"] == 40000 and names["train"] == 1, f"regions {names.most_common(4)}")
    check(sorted(n for n in names if n.startswith("ProfilerStep#")) == sorted(f"ProfilerStep#{i}" for i in range(40)),
          "steps")
    check(t.meta["dropped"] == 0, f"dropped {t.meta}")
    check(t.nested == 80000, f"{t.nested} nested: every leaf in its op, every op in its step")
    train = next(k for k in t.slices if k[1] == "train")
    s1 = next(k for k in t.slices if k[1] == "ProfilerStep#1")
    s39 = next(k for k in t.slices if k[1] == "ProfilerStep#39")
    check(train[2] <= s1[2] and s39[2] + s39[3] <= train[2] + train[3], "train holds steps 1 to 39")
    r = run(binary, "stream", {"PROF_OUTPUT": "s.json", "PROF_BUFFER_MB": "1"}, tmp)
    dropped = load(os.path.join(tmp, "s.json"))["prof_dropped_events"]
    check(dropped > 40000, f"the JSON trace, written at the end, dropped only {dropped}")
    print(f"streamed: 80,000 regions, none dropped; written at the end: {dropped} dropped")


def case_dynamic(binary, tmp):
    """PROF_SCOPE_DYN: names made at run time in one reused buffer are kept
    whole (48 layers x 5 steps); prof_intern gives one pointer per text, cut
    at n, the same to 4 threads at once, and refuses past 16 MiB, counted."""
    r = run(binary, "dynamic", {"PROF_OUTPUT": "d.json"}, tmp)
    d = load(os.path.join(tmp, "d.json"))
    names = collections.Counter(e["name"] for e in xs(d) if not e["name"].startswith("ProfilerStep#"))
    check(names == {f"layer.{l}.attn": 5 for l in range(48)}, f"regions {names}")
    out = r.stdout.splitlines()
    check(out == ["same 1 other 1 cut matmul", "threads agree 1", "kept 15 refused 5"], f"stdout {out}")


def case_flight(binary, tmp):
    """PROF_FLIGHT=20: 300 steps of 2 ms, step 150 1000x as long. Exactly one
    dump, of the slow step: steps 130 to 150 (the 20 before it and itself),
    each with its 3 regions, named and marked with its reason and step, said
    on stderr; nothing else written. A trigger file dumps the ring at once;
    one that names a step makes every rank watching it dump the same steps."""
    def steps_of(d):
        return sorted(int(e["name"].split("#")[1]) for e in xs(d) if e["name"].startswith("ProfilerStep#"))

    # steps of 2 ms (spins on the clock: at least that, however loaded the
    # machine), the slow one 2 s, slow above 400x the median: another step
    # must lose its core for 800 ms to be taken for slow, and the slow one
    # is slow while the median stays under 5 ms (a load that once made a slow
    # step of 80 ms against 4 ms ones look ordinary, and a 200 ms stall look
    # slow, cannot)
    r = run(binary, "flight", {"PROF_OUTPUT": "f.json", "PROF_FLIGHT": "20", "PROF_FLIGHT_SLOW": "400",
                               "FLIGHT_STEPS": "300", "FLIGHT_SLOW_AT": "150", "FLIGHT_STEP_US": "2000",
                               "FLIGHT_SLOW_X": "1000"}, tmp)
    files = sorted(f for f in os.listdir(tmp) if f.startswith("f."))
    check(files == ["f.slow_step-150.json"], f"slow step: files {files}; stderr: {r.stderr}")
    d = load(os.path.join(tmp, files[0]))
    check(steps_of(d) == list(range(130, 151)), f"steps {steps_of(d)}")
    for name in ("step_work", "inner_a", "inner_b"):
        check(len(xs(d, name)) == 21, f"{len(xs(d, name))} {name} regions, not 21")
    check(d["prof_dump_reason"] == "slow_step" and d["prof_dump_step"] == 150 and d["prof_dump_first_step"] == 130,
          f"header {d.get('prof_dump_reason')} {d.get('prof_dump_step')} {d.get('prof_dump_first_step')}")
    said = [l for l in r.stderr.splitlines() if "flight recorder" in l]
    check(len(said) == 1 and "step 150 took" in said[0] and "dumping steps 130 to 150" in said[0], f"stderr {said}")
    # a trigger file made in step 100: the ring at the next look for it (once
    # a second at most), after step 100, named by its reason, in Perfetto's
    # format; the run steps on until the dump is there
    r = run(binary, "flight", {"PROF_OUTPUT": "t.pftrace", "PROF_FLIGHT": "20", "PROF_FLIGHT_SLOW": "0",
                               "PROF_TRIGGER": "file:go.trigger", "FLIGHT_STEPS": "101", "FLIGHT_STEP_US": "5000",
                               "FLIGHT_TRIGGER_AT": "100", "FLIGHT_UNTIL": "t.on_demand-"}, tmp)
    files = sorted(f for f in os.listdir(tmp) if f.startswith("t."))
    check(len(files) == 1 and re.fullmatch(r"t\.on_demand-\d+\.pftrace", files[0]), f"trigger: files {files}; stderr: {r.stderr}")
    step = int(files[0].split("-")[1].split(".")[0])
    check(100 < step and f"flight recorder: PROF_TRIGGER file; dumping steps {step - 20} to {step}" in r.stderr,
          f"stderr {r.stderr}")
    # a cluster: two ranks watch one trigger file, which rank 0 writes in its
    # step 100 naming step 400 and rank 1 waits for in its step 100 (as at a
    # collective); each looks for it once a second at most and steps take 5
    # ms at least, so each notices it in the 300 steps (1.5 s) before step
    # 400, and both dump steps 380 to 400, named by rank
    os.remove(os.path.join(tmp, "go.trigger"))
    procs = []
    for rank in (0, 1):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
        env.update({"PROF_OUTPUT": "r{rank}.json", "PROF_FLIGHT": "20", "PROF_FLIGHT_SLOW": "0",
                    "PROF_TRIGGER": "file:go.trigger", "RANK": str(rank), "WORLD_SIZE": "2",
                    "FLIGHT_STEPS": "450", "FLIGHT_STEP_US": "5000"})
        if rank == 0:
            env.update({"FLIGHT_TRIGGER_AT": "100", "FLIGHT_TRIGGER_TEXT": "step=400"})
        else:
            env.update({"FLIGHT_WAIT_AT": "100"})
        procs.append(subprocess.Popen([binary, "flight"], cwd=tmp, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    for rank, p in enumerate(procs):
        out, err = p.communicate(timeout=120)
        check(p.returncode == 0 and "PROF_TRIGGER file; dumping steps 380 to 400" in err, f"rank {rank}: {err}")
    files = sorted(f for f in os.listdir(tmp) if f.startswith("r"))
    check(files == ["r0.on_demand-400.json", "r1.on_demand-400.json"], f"cluster: files {files}")
    for rank in (0, 1):
        d = load(os.path.join(tmp, f"r{rank}.on_demand-400.json"))
        check(steps_of(d) == list(range(380, 401)) and d["distributedInfo"]["rank"] == rank,
              f"rank {rank}: steps {steps_of(d)}")


def case_flight_long(binary, tmp):
    """PROF_FLIGHT=20 over a million steps (three regions each) with a 4 MiB
    cap: the process's peak memory after the first thousand steps grows by
    less than the cap, and nothing is written (no slow-step dumps asked)."""
    # under ASan, freed memory waits in its quarantine (256 MB) before reuse:
    # RSS would measure the quarantine, not prof.h
    asan = os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    tsan = sanitizer(binary) == "thread"
    # Under TSan the RSS holds its shadow of each new address range, so the
    # memory is not checked there, and the million steps are for the memory:
    # 100,000 (300,000 regions, a chunk of 2,047 every 680 steps) still pass
    # the flight recorder's chunks between the threads over a hundred times.
    steps = 100000 if tsan else 1000000
    r = run(binary, "flight_long", {"PROF_OUTPUT": "l.json", "PROF_FLIGHT": "20", "PROF_FLIGHT_SLOW": "0",
                                    "PROF_BUFFER_MB": "4", "FLIGHT_STEPS": str(steps),
                                    "ASAN_OPTIONS": asan.lstrip(":")}, tmp)
    m = re.search(r"steps (\d+) rss_after_1000_kib (\d+) peak_rss_kib (\d+)", r.stdout)
    check(m and m.group(1) == str(steps), f"stdout {r.stdout}")
    early, peak = int(m.group(2)), int(m.group(3))
    print(f"flight_long: peak RSS {peak} KiB, {peak - early} KiB more than after 1000 steps")
    if tsan:
        print("flight_long: RSS not checked under ThreadSanitizer (its shadow memory is in it)")
    else:
        check(peak - early < 4096, f"peak RSS grew by {peak - early} KiB over a million steps (cap 4096)")
    check(not os.listdir(tmp), f"files {os.listdir(tmp)}")
    check(not r.stderr.strip(), f"stderr {r.stderr}")


def table_calls(tool, path):
    """`prof table`'s calls per row of a trace file: a reader of the file,
    not the writer's own count."""
    p = subprocess.run([tool, "table", path], capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"prof table {path}: {p.stderr}")
    calls = {}
    for line in p.stdout.splitlines():
        cols = line.split()
        if len(cols) == 9 and cols[-1].isdigit():
            calls[cols[0]] = int(cols[-1])
    return calls


def case_handoff(binary, tmp):
    """The step hands everything to the profiler's thread: 60 steps
    of R regions (25,000; 2,500 under a sanitizer) in each mode, one window
    written at the end, streamed Perfetto, a schedule saving every other step,
    and the flight recorder dumped on a trigger: every event is in the files,
    counted by `prof table` reading them back; nothing is dropped; the
    process's peak memory stays within the cap (512 MiB, which holds the whole
    run) and 64 MiB beside it. The hand-off is constant on the engine's
    thread: no step ran a job there (prof.h counts them), which with
    cfg.trace_ready_at_step (the steps run them, 100 regions a step) is 60.
    The step call's times are printed, not checked."""
    tool = os.environ.get("PROF_TEST_TOOL")
    if not tool:
        print("SKIP: no prof tool built (PROF_BUILD_TOOLS=OFF)")
        sys.exit(77)
    cap_mb = 512
    modes = [("end", {"PROF_OUTPUT": "end.json"}),
             ("stream", {"PROF_OUTPUT": "stream.pftrace"}),
             ("schedule", {"PROF_OUTPUT": "sched.json", "PROF_SCHEDULE": "wait=1,active=1"}),
             ("flight", {"PROF_OUTPUT": "fl.pftrace", "PROF_FLIGHT": "20", "PROF_FLIGHT_SLOW": "0",
                         "PROF_TRIGGER": "file:go", "HANDOFF_TRIGGER": "go"}),
             ("at_step", {"PROF_OUTPUT": "sched.json", "PROF_SCHEDULE": "wait=1,active=1", "HANDOFF_AT_STEP": "1",
                          "HANDOFF_REGIONS": "100"})]
    for mode, env in modes:
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        r = run(binary, "handoff", dict(env, PROF_BUFFER_MB=str(cap_mb)), tmp)
        m = re.search(r"handoff: regions (\d+) steps 60 step_call_us (.*) peak_rss_kib (\d+) jobs_at_steps (\d+)",
                      r.stdout)
        check(m, f"{mode}: stdout {r.stdout}")
        regions, rss, at_steps = int(m.group(1)), int(m.group(3)), int(m.group(4))
        check(at_steps == (60 if mode == "at_step" else 0), f"{mode}: {at_steps} jobs run by the steps")
        check("dropped" not in r.stderr and "behind" not in r.stderr, f"{mode}: {r.stderr}")
        traces = sorted(f for f in os.listdir(tmp) if f != "go")
        tables = [table_calls(tool, os.path.join(tmp, f)) for f in traces]
        if mode in ("schedule", "at_step"):     # steps 1, 3, ... 59: a cycle each
            check(len(traces) == 30, f"{mode}: files {traces}")
            want = [{"op": regions, "step_work": 1, "ProfilerStep*": 1}] * 30
        elif mode == "flight":          # the ring: the last steps, up to the trigger's
            check(traces == ["fl.on_demand-59.pftrace"], f"{mode}: files {traces}")
            n = tables[0].get("ProfilerStep*", 0)
            check(n >= 20, f"{mode}: {n} steps in the dump")
            want = [{"op": regions * n, "step_work": n, "ProfilerStep*": n}]
        else:
            check(len(traces) == 1, f"{mode}: files {traces}")
            want = [{"op": regions * 60, "step_work": 60, "ProfilerStep*": 60}]
        check(tables == want, f"{mode}: prof table counts {tables}, want {want}")
        check(rss <= (cap_mb + 64) * 1024, f"{mode}: peak RSS {rss} KiB over the cap's {cap_mb} MiB and 64")
        print(f"{mode}: {sum(t['op'] for t in tables)} regions in {len(traces)} file(s), step call (us) "
              f"{m.group(2)}, peak RSS {rss // 1024} MiB")


def case_trigger(binary, tmp):
    """PROF_TRIGGER: nothing is recorded until asked. SIGUSR2 in step 8 gives
    a trace of steps 9 to 11 (PROF_TRIGGER_STEPS=3), said on stderr; the file
    made in step 20 gives steps 21 to 25 (the default 5) and is left for
    other ranks; a step it names is where the window starts. An
    engine's own SIGUSR2 handler is left alone (said once; no trace). A
    malformed value is one line and the run records as if it were unset."""
    def steps_of(path):
        d = load(path)
        work = xs(d, "work")
        steps = sorted(int(e["name"].split("#")[1]) for e in xs(d) if e["name"].startswith("ProfilerStep#"))
        return steps, len(work)

    r = run(binary, "trigger", {"PROF_OUTPUT": "s.json", "PROF_TRIGGER": "signal", "PROF_TRIGGER_STEPS": "3"}, tmp)
    check("SIGUSR2: recording steps 9 to 11" in r.stderr, f"stderr: {r.stderr}")
    files = sorted(f for f in os.listdir(tmp) if f.startswith("s."))
    check(files == ["s.1.json"], f"files {files}")
    check(steps_of(os.path.join(tmp, "s.1.json")) == ([9, 10, 11], 3), "the signal's window")
    r = run(binary, "trigger", {"PROF_OUTPUT": "f.json", "PROF_TRIGGER": "file:go.trigger"}, tmp)
    check("PROF_TRIGGER file: recording steps 21 to 25" in r.stderr, f"stderr: {r.stderr}")
    check(steps_of(os.path.join(tmp, "f.1.json")) == ([21, 22, 23, 24, 25], 5), "the file's window")
    check(os.path.exists(os.path.join(tmp, "go.trigger")), "the trigger file was removed (other ranks read it)")
    # a file there before init is no trigger; one that names a step records
    # from it, or from now if it has passed
    r = run(binary, "trigger", {"PROF_OUTPUT": "o.json", "PROF_TRIGGER": "file:go.trigger", "TRIGGER_TEXT": "x",
                                "PROF_TRIGGER_STEPS": "3"}, tmp)
    check(steps_of(os.path.join(tmp, "o.1.json")) == ([21, 22, 23], 3), "rewritten: a trigger again")
    r = run(binary, "regions", {"PROF_OUTPUT": "p.json", "PROF_TRIGGER": "file:go.trigger"}, tmp)
    check(not [f for f in os.listdir(tmp) if f.startswith("p.")], "a file older than the run triggered it")
    for text, steps, said in (("step=27", [27, 28, 29], "recording steps 27 to 29"),
                              ("5\n", [21, 22, 23], "step 5 has passed; recording from this one")):
        r = run(binary, "trigger", {"PROF_OUTPUT": "n.json", "PROF_TRIGGER": "file:go.trigger", "TRIGGER_TEXT": text,
                                    "PROF_TRIGGER_STEPS": "3"}, tmp)
        check(said in r.stderr and steps_of(os.path.join(tmp, "n.1.json")) == (steps, 3), f"{text!r}: {r.stderr}")
        os.remove(os.path.join(tmp, "n.1.json"))
    # SIGUSR2 is the engine's: left alone, said once, nothing triggered or written
    r = run(binary, "trigger", {"PROF_OUTPUT": "e.json", "PROF_TRIGGER": "signal", "ENGINE_USR2": "1"}, tmp)
    check("SIGUSR2 has a handler already" in r.stderr and r.stdout == "the engine's handler ran\n",
          f"stderr: {r.stderr} stdout: {r.stdout}")
    check(not [f for f in os.listdir(tmp) if f.startswith("e.")], "a trace without a trigger")
    r = run(binary, "regions", {"PROF_OUTPUT": "b.json", "PROF_TRIGGER": "sometimes"}, tmp)
    check("PROF_TRIGGER='sometimes' is not signal or file:<path>" in r.stderr, f"stderr: {r.stderr}")
    check(len(xs(load(os.path.join(tmp, "b.json")), "inner")) == 1200, "recorded as if unset")


def case_short_threads(binary, tmp):
    """100 short-lived threads named alike, one after another, are one track
    holding all their events, each with its own thread id in args.os_tid; two
    alike-named threads that overlap keep a track each. PROF_MERGE_THREADS=0
    gives every thread its own track."""
    run(binary, "short_threads", {"PROF_OUTPUT": "merged.json"}, tmp)
    d = load(os.path.join(tmp, "merged.json"))
    names = {e["tid"]: e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    pool = [t for t, n in names.items() if n == "pool-worker"]
    check(len(pool) == 1, f"pool-worker tracks: {len(pool)}")
    nodes = xs(d, "node")
    check(len(nodes) == 300 and all(e["tid"] == pool[0] for e in nodes), f"{len(nodes)} nodes on {len(pool)} track")
    os_tids = {e.get("args", {}).get("os_tid", pool[0]) for e in nodes}
    check(len(os_tids) == 100, f"{len(os_tids)} thread ids kept in args.os_tid")
    check(all(sum(1 for e in nodes if e.get("args", {}).get("os_tid", pool[0]) == t) == 3 for t in os_tids),
          "3 nodes per thread")
    ns = sorted(span_ns(e) for e in nodes)
    check(all(a[1] <= b[0] for a, b in zip(ns, ns[1:])), "events overlap on the merged track")
    pair = [t for t, n in names.items() if n == "pair"]
    check(len(pair) == 2 and len({e["tid"] for e in xs(d, "overlap")}) == 2, f"overlapping alike threads: {pair}")
    run(binary, "short_threads", {"PROF_OUTPUT": "separate.json", "PROF_MERGE_THREADS": "0"}, tmp)
    d = load(os.path.join(tmp, "separate.json"))
    names = [e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    check(names.count("pool-worker") == 100, f"PROF_MERGE_THREADS=0: {names.count('pool-worker')} tracks")
    check(not any("os_tid" in e.get("args", {}) for e in xs(d)), "os_tid without merging")


def case_schedule(binary, tmp):
    env = {"PROF_OUTPUT": "cycle_{cycle}.json", "PROF_SCHEDULE": "skip_first=3,wait=5,warmup=1,active=3,repeat=2"}
    run(binary, "schedule", env, tmp)
    files = sorted(os.listdir(tmp))
    check(files == ["cycle_1.json", "cycle_2.json"], f"files {files}")
    for f, steps in (("cycle_1.json", [9, 10, 11]), ("cycle_2.json", [18, 19, 20])):
        d = load(os.path.join(tmp, f))
        got = sorted(int(e["name"].split("#")[1]) for e in xs(d) if e["name"].startswith("ProfilerStep#"))
        check(got == steps, f"{f} steps {got}")
        check(len(xs(d, "step_work")) == 3, f"{f} step_work count")
        counters = sorted(e["args"]["step"] for e in d["traceEvents"] if e["ph"] == "C")
        check(counters == steps, f"{f} counters {counters}")
        for st in xs(d):
            if st["name"].startswith("ProfilerStep#"):
                check(st["cat"] == "user_annotation", "step cat")
                check(sum(1 for w in xs(d, "step_work") if contains(st, w)) == 1, "step_work outside its step")
    # no {cycle}: one file per cycle all the same
    run(binary, "schedule", {"PROF_OUTPUT": "plain.json", "PROF_SCHEDULE": "wait=1,active=2,repeat=3"}, tmp)
    check(sorted(glob.glob(os.path.join(tmp, "plain*"))) == [os.path.join(tmp, f"plain.{i}.json") for i in (1, 2, 3)],
          f"plain files {sorted(os.listdir(tmp))}")
    p = run(binary, "schedule", {"PROF_OUTPUT": "bad.json", "PROF_SCHEDULE": "wait=x"}, tmp)
    check("PROF_SCHEDULE='wait=x'" in p.stderr, f"malformed schedule not named: {p.stderr}")
    check(os.path.exists(os.path.join(tmp, "bad.json")), "malformed schedule stopped recording")


# torch.profiler's schedule and the action map of torch.profiler.profile, as
# torch/profiler/profiler.py has them (torch 2.x): schedule() is DESIGN.md
# section 3's function (torch's `step / num_steps >= repeat` is a float
# division, the same as the integer one for an integer repeat). start() runs
# the map's actions for (NONE, schedule(0)); step() closes the record_function
# ProfilerStep#N, takes step_num + 1 and its action, runs the actions of
# (previous, current), then opens ProfilerStep#(N+1); stop() (what __exit__
# calls) closes the open ProfilerStep first, then runs the actions of
# (current, None): "used for exit action" in the map, WARMUP -> start_trace,
# stop_trace (no save); RECORD and RECORD_AND_SAVE -> stop_trace, _trace_ready
# (a save); (NONE, None) is not in the map, and _transit_action does nothing
# for a pair it lacks. So torch saves at exit whenever the step that exit interrupts
# records, and that save holds ProfilerStep#N of the interrupted step, closed
# by the exit, not by a step(): a save that began at that step holds no step
# the program completed.
T_NONE, T_WARMUP, T_RECORD, T_SAVE = "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"
T_ACTIONS = {
    (T_NONE, T_NONE): [], (T_NONE, T_WARMUP): ["prepare"], (T_NONE, T_RECORD): ["prepare", "start"],
    (T_NONE, T_SAVE): ["prepare", "start"],
    (T_WARMUP, T_NONE): ["warn", "start", "stop"], (T_WARMUP, T_WARMUP): [], (T_WARMUP, T_RECORD): ["start"],
    (T_WARMUP, T_SAVE): ["start"],
    (T_RECORD, T_NONE): ["warn", "stop"], (T_RECORD, T_WARMUP): ["warn", "stop"], (T_RECORD, T_RECORD): [],
    (T_RECORD, T_SAVE): [],
    (T_SAVE, T_NONE): ["stop", "ready"], (T_SAVE, T_WARMUP): ["stop", "ready", "prepare"],
    (T_SAVE, T_RECORD): ["stop", "ready", "prepare", "start"],
    (T_SAVE, T_SAVE): ["stop", "ready", "prepare", "start"],
    (T_WARMUP, None): ["start", "stop"], (T_RECORD, None): ["stop", "ready"], (T_SAVE, None): ["stop", "ready"],
}


def torch_schedule(skip_first, wait, warmup, active, repeat):
    def fn(step):
        if step < skip_first:
            return T_NONE
        step -= skip_first
        num = wait + warmup + active
        if repeat > 0 and step / num >= repeat:
            return T_NONE
        m = step % num
        if m < wait:
            return T_NONE
        if m < wait + warmup:
            return T_WARMUP
        return T_RECORD if m < num - 1 else T_SAVE
    return fn


def torch_saves(fn, steps):
    """The traces torch.profiler.profile(schedule=fn) hands to on_trace_ready
    for a loop of `steps` prof.step() calls, then __exit__: for each, the
    steps it holds that step() completed (ProfilerStep#N opened after the
    trace started and closed by step() before it stopped)."""
    saves, tracing, last = [], None, None
    cur, step_num = fn(0), 0

    def transit(prev, now, beginning):
        nonlocal tracing, last
        for a in T_ACTIONS.get((prev, now), []):    # _transit_action: action_map.get(), None: nothing
            if a == "start":
                tracing = beginning     # before ProfilerStep#beginning opens
            elif a == "stop":
                last, tracing = (tracing, beginning - 1 if now is not None else beginning), None
            elif a == "ready":
                saves.append(last)
    transit(T_NONE, cur, 0)             # start()
    for _ in range(steps):              # step()
        prev, step_num = cur, step_num + 1
        cur = fn(step_num)
        transit(prev, cur, step_num)
    transit(cur, None, step_num)        # __exit__ -> stop(): ProfilerStep#step_num closed by it
    # complete steps: those step() closed, all but the one exit closed
    return [[s for s in range(a, b + 1) if s < steps] for a, b in saves]


def case_schedule_torch(binary, tmp):
    """500 random schedules and step counts (a fixed seed; 100 under a
    sanitizer, below): prof.h's traces hold the steps torch.profiler's
    saves hold, less torch's saves with no step the program completed (a
    window that exit interrupts in its first step); each of those is one
    line, 'N events of the window from step S, which no PROF_STEP
    completed' (or, after a saved cycle, 'N events after the last step of
    cycle C, in no step'), with N = the 3 regions after the loop. No file
    prof.h writes lacks a step."""
    # Under a sanitizer the first 100 of the same schedules: they run every
    # line and take every branch of prof.h that the 500 do (gcov, gcc -O0),
    # and the sanitizers watch code, where the 500 are for the semantics,
    # checked in the gcc build.
    count = 100 if sanitizer(binary) else 500
    rng = random.Random(35)
    said = re.compile(r"^prof: (\d+) events? (after the last step of cycle \d+, in no step|of the window from step "
                      r"(\d+), which no PROF_STEP completed): not written \(a trace holds steps\)$", re.M)
    cases = []
    for i in range(count):
        sched = {"skip_first": rng.randint(0, 3), "wait": rng.randint(0, 3), "warmup": rng.randint(0, 2),
                 "active": rng.randint(1, 3), "repeat": rng.randint(0, 3)}
        cases.append((i, sched, rng.randint(0, 14)))

    def one(case):                      # a program run: most of it waits on the clock's calibration
        i, sched, steps = case
        d = os.path.join(tmp, f"s{i}")
        os.mkdir(d)
        return run(binary, "schedule_steps", {"PROF_OUTPUT": "t{cycle}.json", "PROF_SCHEDULE": spec_of(sched),
                                              "SCHED_STEPS": str(steps)}, d)

    def spec_of(sched):
        return ",".join(f"{k}={v}" for k, v in sched.items())

    stats = collections.Counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(one, cases))
    for (i, sched, steps), r in zip(cases, runs):
        spec = spec_of(sched)
        want = torch_saves(torch_schedule(**sched), steps)
        d = os.path.join(tmp, f"s{i}")
        files = sorted(os.listdir(d), key=lambda f: int(f[1:-5]))
        got = []
        for f in files:
            ev = xs(load(os.path.join(d, f)))
            got.append(sorted(int(e["name"][13:]) for e in ev if e["name"].startswith("ProfilerStep#")))
            check(got[-1], f"{spec} over {steps} steps: {f} holds no step")
            check(len([e for e in ev if e["name"] == "step_work"]) == len(got[-1]), f"{spec}: {f}'s regions")
        where = f"schedule {i}: {spec} over {steps} steps"
        check(got == [s for s in want if s], f"{where}: prof.h wrote {got}, torch saves {want}")
        lines = said.findall(r.stderr)
        empty = [s for s in want if not s]
        check(len(lines) == len(empty), f"{where}: {len(empty)} torch saves with no complete step, "
                                        f"lines {lines}: {r.stderr}")
        for n, _, step in lines:
            check(n == "3" and (not step or int(step) == steps), f"{where}: {r.stderr}")
        stats["saves"] += len(got)
        stats["empty"] += len(empty)
    check(stats["empty"] >= count // 25 and stats["saves"] >= 3 * count // 5,
          f"the schedules cover too little: {stats}")
    print(f"{count} schedules: {stats['saves']} traces as torch's saves, {stats['empty']} saves with no complete step "
          "said in one line each")


def case_cycles_threads(binary, tmp):
    env = {"PROF_OUTPUT": "c{cycle}.json", "PROF_SCHEDULE": "wait=1,warmup=1,active=2"}
    run(binary, "cycles_threads", env, tmp)
    files = sorted(os.listdir(tmp))
    # 12 steps in cycles of 4 (wait, warmup, 2 active): 3 cycles
    check(files == ["c1.json", "c2.json", "c3.json"], f"files {files}")
    for i, f in enumerate(files):
        d = load(os.path.join(tmp, f))
        steps = [e for e in xs(d) if e["name"].startswith("ProfilerStep#")]
        check(sorted(int(e["name"][13:]) for e in steps) == [4 * i + 2, 4 * i + 3], f"{f} steps")
        # The window is the two steps; a step is written 1 ns short of the
        # next one's start (see prof__region), so it ends 0.001 us later.
        lo = min(e["ts"] for e in steps)
        hi = max(e["ts"] + e["dur"] for e in steps) + 0.001
        busy = xs(d, "busy_region")
        # the worker records 100 regions inside each step, none between
        check(len(busy) == 200, f"{f}: {len(busy)} worker events, expected 200")
        check(all(lo <= e["ts"] and e["ts"] + e["dur"] <= hi + 1e-9 for e in busy),
              f"{f}: worker event outside the window [{lo}, {hi}]")


def case_config(binary, tmp):
    run(binary, "config", {}, tmp)
    files = sorted(os.listdir(tmp))
    check(files == ["from_config.1.json"], f"config files {files}")
    d = load(os.path.join(tmp, files[0]))
    check(sorted(e["name"] for e in xs(d)) == ["ProfilerStep#1", "ProfilerStep#2", "cfg_work", "cfg_work"],
          f"config events {[e['name'] for e in xs(d)]}")
    run(binary, "config", {"PROF_OUTPUT": "env.json", "PROF_SCHEDULE": "active=5"}, tmp)
    check(os.path.exists(os.path.join(tmp, "env.1.json")), f"env did not override config: {os.listdir(tmp)}")


def case_handler(binary, tmp):
    # wait=1, active=3 over 8 steps: cycles of steps 1-3 and 5-7, each handed
    # to the handler instead of a file, on the profiler's thread (or, with
    # cfg.trace_ready_at_step, on the thread that steps, inside PROF_STEP);
    # stacks written beside it
    for env, where in (({}, "the profiler's thread"), ({"HANDLER_AT_STEP": "1"}, "the stepping thread")):
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        p = run(binary, "handler", env, tmp)
        want = [f"cycle 1 regions 3 steps 3 counters 3 row_calls 3 row_total_matches 1 dropped 0 on {where}",
                f"cycle 2 regions 3 steps 3 counters 3 row_calls 3 row_total_matches 1 dropped 0 on {where}",
                "handler calls 2"]
        check(p.stdout.split("\n")[:3] == want, f"handler output: {p.stdout}")
        check(sorted(os.listdir(tmp)) == ["stacks_1.txt", "stacks_2.txt"], f"files {os.listdir(tmp)}")
        for f in ("stacks_1.txt", "stacks_2.txt"):
            lines = open(os.path.join(tmp, f)).read().splitlines()
            frames = sorted(l.rsplit(" ", 1)[0] for l in lines)
            check(frames == ["ProfilerStep*", "ProfilerStep*;handled"], f"{f}: {lines}")
            check(all(int(l.rsplit(" ", 1)[1]) > 0 for l in lines), f"{f}: counts {lines}")


RANK_RE = re.compile(rb'"rank":\s+(\d+)')  # how HTA finds a trace's rank


def ranked(binary, tmp, case, env):
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    p = run(binary, case, dict(env, PROF_OUTPUT="r{rank}.json"), tmp)
    files = os.listdir(tmp)
    check(len(files) == 1, f"{env}: files {files}")
    raw = open(os.path.join(tmp, files[0]), "rb").read()
    d = load(os.path.join(tmp, files[0]))
    return files[0], d, raw, p


def case_rank(binary, tmp):
    launchers = [
        {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3"},
        {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8"},
        {"PMI_RANK": "3", "PMI_SIZE": "8"},
        {"SLURM_PROCID": "3", "SLURM_NTASKS": "8"},
    ]
    for env in launchers:
        name, d, raw, _ = ranked(binary, tmp, "one_region", env)
        check(name == "r3.json", f"{env}: {{rank}} gave {name}")
        check(d.get("distributedInfo", {}).get("rank") == 3 and d["distributedInfo"]["world_size"] == 8,
              f"{env}: distributedInfo {d.get('distributedInfo')}")
        keys = list(d)
        check(keys.index("distributedInfo") < keys.index("traceEvents"), "distributedInfo after traceEvents")
        m = RANK_RE.search(raw)
        check(m and m.group(1) == b"3" and m.start() < raw.index(b'"traceEvents"'), f"{env}: HTA's regex")
    # torchrun's variables win over Slurm's, as the launcher nearest the process
    name, d, _, _ = ranked(binary, tmp, "one_region", {"RANK": "1", "WORLD_SIZE": "2", "SLURM_PROCID": "7",
                                                        "SLURM_NTASKS": "16"})
    check(d["distributedInfo"]["rank"] == 1, f"precedence: {d['distributedInfo']}")
    # no launcher: no distributedInfo, {rank} is 0
    name, d, _, _ = ranked(binary, tmp, "one_region", {})
    check(name == "r0.json" and "distributedInfo" not in d, f"no launcher: {name} {list(d)}")
    # malformed: one line naming the variable, and no rank
    name, d, _, p = ranked(binary, tmp, "one_region", {"RANK": "x", "WORLD_SIZE": "2"})
    check("RANK='x'" in p.stderr and "distributedInfo" not in d, f"malformed RANK: {p.stderr}")
    name, d, _, p = ranked(binary, tmp, "one_region", {"RANK": "4", "WORLD_SIZE": "4"})
    check("RANK='4'" in p.stderr and "distributedInfo" not in d, f"rank >= world: {p.stderr}")
    # PROF_SET_RANK wins over the environment; a bad call is refused with a message
    name, d, _, p = ranked(binary, tmp, "rank", {"RANK": "3", "WORLD_SIZE": "8"})
    check(name == "r2.json" and d["distributedInfo"]["rank"] == 2 and d["distributedInfo"]["world_size"] == 4,
          f"PROF_SET_RANK: {name} {d.get('distributedInfo')}")
    check("PROF_SET_RANK(5, 4)" in p.stderr, f"bad PROF_SET_RANK: {p.stderr}")


def case_monotonic(binary, tmp):
    run(binary, "regions", {"PROF_OUTPUT": "t.json", "PROF_CLOCK": "monotonic"}, tmp)
    d = load(os.path.join(tmp, "t.json"))
    check(len(xs(d, "outer")) == 400 and len(xs(d, "leaf")) == 1200, "monotonic clock lost events")


# ---- memory ------------------------------------------------------------------

def mems(d, tid=None):
    """The [memory] events in file order (per thread, record order)."""
    return [e for e in d["traceEvents"] if e["ph"] == "i" and e["name"] == "[memory]"
            and (tid is None or e["tid"] == tid)]


def mem_counters(d):
    return [e for e in d["traceEvents"] if e["ph"] == "C" and e["name"].startswith("Memory (")]


def check_mem_shape(d):
    """Every [memory] event as Kineto writes one, each followed by its sample
    of the device's counter track at the same time with the same total."""
    evs = d["traceEvents"]
    for i, e in enumerate(evs):
        if not (e["ph"] == "i" and e["name"] == "[memory]"):
            continue
        check(e["s"] == "t" and e["cat"] == "cpu_instant_event", f"memory event shape {e}")
        a = e["args"]
        check(list(a) == ["Device Type", "Device Id", "Addr", "Bytes", "Total Allocated", "Total Reserved"],
              f"memory args {a}")
        check((a["Device Type"], a["Device Id"] < 0) in ((0, True), (1, False)), f"device {a}")
        check(a["Total Reserved"] == a["Total Allocated"], f"reserved {a}")
        c = evs[i + 1]
        dev = "CPU" if a["Device Type"] == 0 else f"GPU {a['Device Id']}"
        check(c["ph"] == "C" and c["name"] == f"Memory ({dev})" and c["ts"] == e["ts"] and c["tid"] == e["tid"]
              and c["args"] == {"Allocated": a["Total Allocated"]}, f"counter after {e}: {c}")


# The summary table's footer line for PROF_ENERGY, one per GPU: device,
# median, p90, W average, steps, J/token
ENERGY_FOOTER = re.compile(r"GPU (\d+) energy per step: median ([\d.]+) J, p90 ([\d.]+) J, ([\d.]+) W average "
                           r"\((\d+) steps\); ([\d.e+-]+) J/token")
LEAK_HEAD = re.compile(r"^prof: (\d+) allocations? never freed, (\d+) bytes \((.+)\) in all; largest first:$")
LEAK_LINE = re.compile(r"^prof:   (\d+) bytes \((.+)\) at (0x[0-9a-f]+) on (CPU|GPU \d+), allocated in '(.*)'$")


def leak_report(stderr):
    """(count, total bytes, [(bytes, addr, device, region)], more) from stderr."""
    lines = stderr.splitlines()
    heads = [i for i, l in enumerate(lines) if LEAK_HEAD.match(l)]
    check(len(heads) == 1, f"one leak report expected: {stderr}")
    m = LEAK_HEAD.match(lines[heads[0]])
    items, more = [], 0
    for l in lines[heads[0] + 1:]:
        lm = LEAK_LINE.match(l)
        if lm:
            items.append((int(lm.group(1)), int(lm.group(3), 16), lm.group(4), lm.group(5)))
            continue
        mm = re.match(r"^prof:   \.\.\. and (\d+) more$", l)
        if mm:
            more = int(mm.group(1))
        break
    return int(m.group(1)), int(m.group(2)), items, more


def case_mem_basic(binary, tmp):
    """The issue's "done means": 64 allocations of (i+1) KiB in alloc_phase,
    every other one freed in free_phase: 96 [memory] events with the running
    total, right Bytes and Addr; the leak report and prof_leaks() name the 32
    left, largest first."""
    p = run(binary, "mem_basic", {"PROF_OUTPUT": "t.json"}, tmp)
    out = p.stdout.splitlines()
    allocs = [(int(l.split()[1], 16), int(l.split()[2])) for l in out if l.startswith("alloc ")]
    frees = [int(l.split()[1], 16) for l in out if l.startswith("free ")]
    check(len(allocs) == 64 and len(frees) == 32, f"program output {out[:5]}")
    size = dict(allocs)
    want, total = [], 0
    for addr, b in allocs:
        total += b
        want.append((addr, b, total))
    for addr in frees:
        total -= size[addr]
        want.append((addr, -size[addr], total))
    check(total == 1048576, f"expected total {total}")
    check(f"allocated {total}" in out, f"prof_mem_allocated: {out}")

    d = load(os.path.join(tmp, "t.json"))
    check_mem_shape(d)
    got = [(e["args"]["Addr"], e["args"]["Bytes"], e["args"]["Total Allocated"]) for e in mems(d)]
    check(len(got) == 96, f"{len(got)} [memory] events")
    check(got == want, f"memory events differ: first {[(a, b) for a, b in zip(got, want) if a != b][:3]}")
    check(all(e["args"]["Device Type"] == 0 and e["args"]["Device Id"] == -1 for e in mems(d)), "host events")
    check(len(mem_counters(d)) == 96, "one counter sample per event")
    # each event inside the region that made it
    phase = {n: xs(d, n)[0] for n in ("alloc_phase", "free_phase")}
    for e in mems(d):
        r = phase["alloc_phase" if e["args"]["Bytes"] > 0 else "free_phase"]
        check(r["ts"] <= e["ts"] <= r["ts"] + r["dur"], f"{e} outside {r['name']}")

    leaks = sorted(((b, a) for a, b in allocs if a not in set(frees)), key=lambda x: (-x[0], x[1]))
    n, nbytes, items, more = leak_report(p.stderr)
    check((n, nbytes, more) == (32, 1048576, 12), f"leak report head: {n} {nbytes} more {more}")
    check(len(items) == 20, f"{len(items)} leak lines")
    check([(b, a) for b, a, _, _ in items] == leaks[:20], f"leak lines {items[:3]} != {leaks[:3]}")
    check(all(dev == "CPU" and region == "alloc_phase" for _, _, dev, region in items), f"leak lines {items[:3]}")
    check("(1.00 Mb)" in p.stderr, "leak total not formatted as torch does")
    api = [l.split() for l in out if l.startswith("leak ")]
    check(f"leaks {len(leaks)}" in out and "leaks-capped 32" in out, f"prof_leaks count: {out[-40:]}")
    check([(int(l[2]), int(l[1], 16)) for l in api] == leaks, "prof_leaks() order or content")
    check(all(l[3] == "-1" and l[4] == "alloc_phase" for l in api), f"prof_leaks() device/region {api[:2]}")
    check("bad memory calls" not in p.stderr, f"spurious bad-use line: {p.stderr}")


def case_mem_threads(binary, tmp):
    """4 threads x 10,000 alloc/free pairs, then 500 allocations each freed by
    the next thread: totals exact, no event lost, every address's events
    alternate +n / -n in time."""
    p = run(binary, "mem_threads", {"PROF_OUTPUT": "t.json"}, tmp)
    check(p.stdout.splitlines() == ["allocated 12345 unknown 0 reused 0", "allocated 0"], f"totals {p.stdout}")
    check("never freed" not in p.stderr and "bad memory" not in p.stderr, f"stderr {p.stderr}")
    d = load(os.path.join(tmp, "t.json"))
    check(d["prof_dropped_events"] == 0, "dropped events")
    check_mem_shape(d)
    ev = mems(d)
    check(len(ev) == 4 * (20000 + 1000) + 2, f"{len(ev)} memory events")
    workers = {e["tid"] for e in xs(d, "mem_worker")}
    check(len(workers) == 4, f"worker threads {workers}")
    for t in workers:
        mine = mems(d, t)
        check(len(mine) == 21000, f"thread {t}: {len(mine)} events")
        check(sum(1 for e in mine if e["args"]["Bytes"] > 0) == 10500, f"thread {t}: allocations")
        cross = sorted(e["args"]["Bytes"] for e in mine if e["args"]["Bytes"] > 0)[:500]
        check(cross == list(range(1, 501)), f"thread {t}: cross allocations")
    check(sum(e["args"]["Bytes"] for e in ev) == 0, "bytes do not sum to 0")
    check(all(e["args"]["Total Allocated"] >= 0 for e in ev), "a negative total")
    by_addr = {}
    for e in sorted(ev, key=lambda e: e["ts"]):
        by_addr.setdefault(e["args"]["Addr"], []).append(e["args"]["Bytes"])
    for addr, seq in by_addr.items():
        check(all(b > 0 for b in seq[0::2]) and all(a == -b for a, b in zip(seq[0::2], seq[1::2])),
              f"address {addr:#x}: {seq[:6]}")


def case_mem_bad(binary, tmp):
    """NULL frees and allocations ignored; unknown and double frees counted,
    no event; an allocation at a live address counted, the old one freed
    first; a bad device named once."""
    p = run(binary, "mem_bad", {"PROF_OUTPUT": "t.json"}, tmp)
    check(p.stdout.splitlines() == ["gpu3 4096 host 50", "unknown 2 reused 1 host 0 gpu3 0"], f"stdout {p.stdout}")
    lines = p.stderr.splitlines()
    dev = [l for l in lines if "device" in l and "ignored" in l]
    check(dev == ["prof: memory event on device 64 ignored: devices are -1 (host) and 0 to 63"], f"stderr {lines}")
    bad = [l for l in lines if l.startswith("prof: bad memory calls")]
    check(bad == ["prof: bad memory calls: 2 PROF_FREE of a pointer not allocated or already freed (ignored), "
                  "1 PROF_ALLOC of an address still allocated (the old allocation counted as freed)"], f"{lines}")
    check("never freed" not in p.stderr, "leaks reported")
    d = load(os.path.join(tmp, "t.json"))
    check_mem_shape(d)
    got = [(e["args"]["Device Id"], e["args"]["Bytes"], e["args"]["Total Allocated"]) for e in mems(d)]
    check(got == [(-1, 100, 100), (-1, -100, 0), (-1, 200, 200), (-1, -200, 0), (-1, 50, 50), (3, 4096, 4096),
                  (3, -4096, 0), (-1, -50, 0)], f"events {got}")
    check(len({e["args"]["Addr"] for e in mems(d)}) == 2, "addresses")
    gpu = [e for e in mem_counters(d) if e["name"] == "Memory (GPU 3)"]
    check([e["args"]["Allocated"] for e in gpu] == [4096, 0], f"GPU 3 counter {gpu}")


def case_mem_window(binary, tmp):
    """wait=1, warmup=1, active=2: steps 2 and 3 recorded. Their events carry
    totals that include the allocations of steps 0 and 1; leaks made outside
    the window or in the warm-up say (not recorded)."""
    env = {"PROF_OUTPUT": "t.json", "PROF_SCHEDULE": "wait=1,warmup=1,active=2,repeat=1"}
    p = run(binary, "mem_window", env, tmp)
    check("allocated 6000" in p.stdout, f"stdout {p.stdout}")
    d = load(os.path.join(tmp, "t.1.json"))
    got = [(e["args"]["Bytes"], e["args"]["Total Allocated"]) for e in mems(d)]
    check(got == [(3000, 6000), (4000, 10000)], f"window events {got}")
    n, nbytes, items, more = leak_report(p.stderr)
    check((n, nbytes, more) == (3, 6000, 0), f"leaks {n} {nbytes}")
    check([(b, r) for b, _, _, r in items] == [(3000, "work"), (2000, "(not recorded)"), (1000, "(not recorded)")],
          f"leak regions {items}")


def table_block(text):
    """The first cycle's table, as printed on stderr, and the lines after it."""
    lines = text.splitlines()
    start = lines.index("prof: cycle 1")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("Self CPU time total:"))
    return lines[start + 1:end + 1], lines[end + 1:]


def case_mem_peak(binary, tmp):
    """The peak (3.25 MiB live) happens in 'layer' in step 1: the cycle API,
    the table's rows and printed columns, and the peak lines say so."""
    p = run(binary, "mem_peak", {}, tmp)
    out = p.stdout.splitlines()
    check(out[:3] == ["peak -1 1 3407872 layer", "peak 0 1 4096 layer", "peak 1 0 0 -"], f"peaks {out[:3]}")
    mib, kib = 1 << 20, 1 << 10
    check(out[3:7] == [f"row layer {4.5 * mib:.0f} {4.5 * mib:.0f} {8 * kib} {8 * kib}",
                       f"row forward {6.5 * mib:.0f} {2 * mib} {8 * kib} 0",
                       "row ProfilerStep* 0 0 0 0",
                       f"row backward {-6.5 * mib:.0f} {-6.5 * mib:.0f} {-8 * kib} {-8 * kib}"], f"rows {out[3:7]}")
    table, after = table_block(p.stderr)
    head = table[1].split("  ")
    head = [h.strip() for h in head if h.strip()]
    check(head == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "CPU min", "CPU max",
                   "CPU Mem", "Self CPU Mem", "GPU Mem", "Self GPU Mem", "# of Calls"], f"header {head}")
    rows = [re.split(r"\s{2,}", l.strip()) for l in table[3:-2]]
    mem_cols = [(r[0], r[8:13]) for r in rows]
    check(mem_cols == [("forward", ["6.50 Mb", "2.00 Mb", "8.00 Kb", "0 b", "2"]),
                       ("layer", ["4.50 Mb", "4.50 Mb", "8.00 Kb", "8.00 Kb", "2"]),
                       ("ProfilerStep*", ["0 b", "0 b", "0 b", "0 b", "2"]),
                       ("backward", ["-6.50 Mb", "-6.50 Mb", "-8.00 Kb", "-8.00 Kb", "2"])], f"table {mem_cols}")
    check(after[:2] == ["prof: cycle 1 peak CPU memory 3.25 Mb at 'layer' (step 1)",
                        "prof: cycle 1 peak GPU 0 memory 4.00 Kb at 'layer' (step 1)"], f"peak lines {after[:2]}")
    d = load(os.path.join(tmp, "peak.json"))
    check_mem_shape(d)
    check(max(e["args"]["Total Allocated"] for e in mems(d) if e["args"]["Device Type"] == 0) == 3407872, "peak")
    check(len(mems(d)) == 2 * 6, f"{len(mems(d))} events in the cycle")


def case_mem_lazy(binary, tmp):
    """PROF_ALLOC before PROF_INIT starts the profiler, PROF_INIT keeps the
    map (the free is found), exit() writes the trace and reports the leak."""
    p = run(binary, "mem_lazy", {"PROF_OUTPUT": "t.json"}, tmp)
    check("allocated 5000" in p.stdout, f"stdout {p.stdout}")
    d = load(os.path.join(tmp, "t.json"))
    got = [(e["args"]["Bytes"], e["args"]["Total Allocated"]) for e in mems(d)]
    check(got == [(3000, 3000), (-3000, 0), (5000, 5000)], f"events {got}")
    n, nbytes, items, more = leak_report(p.stderr)
    check((n, nbytes, [(b, r) for b, _, _, r in items]) == (1, 5000, [(5000, "lazy_leak")]), f"leak {items}")
    check("bad memory" not in p.stderr, f"stderr {p.stderr}")


def case_mem_tb(binary, tmp):
    """TensorBoard's plugin builds its memory view from mem_basic's trace:
    the curve's peak and end, its memory events table, and the operator
    memory table carry our numbers; and from mem_peak's, with GPU 0."""
    try:
        import torch_tb_profiler  # noqa: F401
    except ImportError:
        print("SKIP: the TensorBoard plugin is not installed (tests/readers/setup_venv.sh)")
        sys.exit(77)
    tb = os.path.join(tmp, "tb", "mem")
    run(binary, "mem_basic", {"PROF_OUTPUT": "t.json", "PROF_TB_DIR": tb}, tmp)
    alloc = sum((i + 1) * 1024 for i in range(64))
    freed = sum((i + 1) * 1024 for i in range(1, 64, 2))
    checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readers", "check_tb.py")
    cmd = [sys.executable, checker, os.path.dirname(tb), "--expect-memory",
           "--expect-memory-peak", f"CPU={alloc}", "--expect-memory-last", f"CPU={alloc - freed}",
           "--expect-memory-events", "CPU=64",
           "--expect-memory-op", f"alloc_phase={alloc}/64", "--expect-memory-op", f"free_phase={-freed}/0"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(r.stdout.strip())
    check(r.returncode == 0, f"check_tb failed:\n{r.stdout}\n{r.stderr}")
    # GPU memory too: mem_peak's cycle has a GPU 0 curve beside the CPU one
    tb = os.path.join(tmp, "tb_gpu", "peak")
    run(binary, "mem_peak", {"PROF_TB_DIR": tb}, tmp)
    cmd = [sys.executable, checker, os.path.dirname(tb), "--expect-memory",
           "--expect-memory-peak", "CPU=3407872", "--expect-memory-peak", "GPU0=4096",
           "--expect-memory-last", "GPU0=0", "--expect-memory-events", "GPU0=2",
           "--expect-memory-op", f"layer={9 << 19}/2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(r.stdout.strip())
    check(r.returncode == 0, f"check_tb (GPU) failed:\n{r.stdout}\n{r.stderr}")


def table(binary):
    """The table of tests/scenarios.c as BINARY has it: [(KIND, NAME)]."""
    p = subprocess.run([binary, "--list"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"{binary} --list exited {p.returncode}: {p.stderr}")
    return [tuple(l.split()) for l in p.stdout.splitlines()]


def checks():
    """The cases this file checks: the NAME of each case_NAME."""
    return {n[len("case_"):] for n, f in globals().items() if n.startswith("case_") and callable(f)}


def check_table(binary, read_by_cmake):
    compiled = table(binary)
    cmake = [tuple(e.split(":", 1)) for e in read_by_cmake]
    only_cmake = [f"{k}({n})" for k, n in cmake if (k, n) not in compiled]
    only_compiled = [f"{k}({n})" for k, n in compiled if (k, n) not in cmake]
    check(cmake == compiled, "tests/CMakeLists.txt read the table in tests/scenarios.c otherwise than it was "
          f"compiled: CMake alone has {only_cmake}, the program alone {only_compiled}"
          + ("" if only_cmake or only_compiled else ", in another order")
          + " (write each entry alone on its line, as `    KIND(name),`)")
    names = [n for _, n in compiled]
    twice = sorted(n for n in set(names) if names.count(n) > 1)
    check(not twice, f"entries twice in the table of tests/scenarios.c: {twice}")
    tests = {n for k, n in compiled if k in ("CASE", "CHECK")}
    for n in sorted(tests - checks()):
        fail(f"the table in tests/scenarios.c has the test {n}, but run_case.py has no check case_{n}")
    for n in sorted(checks() - tests):
        fail(f"run_case.py checks case_{n}, which is no test of the table in tests/scenarios.c "
             f"(add CASE({n}) or CHECK({n}) to it)")
    # a program is a `static int name(void)` of scenarios.c; CASE and
    # PROGRAM entries name theirs (the compiler sees to their existence)
    src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios.c")).read()
    programs = set(re.findall(r"^static int (\w+)\(void\)", src, re.M))
    for n in sorted(programs - {n for k, n in compiled if k in ("CASE", "PROGRAM")}):
        fail(f"tests/scenarios.c's program {n} is not in its table as CASE({n}) or PROGRAM({n})")
    print(f"ok: the table's {len(tests)} tests and {len(compiled) - len(tests)} other programs agree")


def main():
    if sys.argv[1] == "--table":
        check_table(os.path.abspath(sys.argv[2]), sys.argv[3:])
        return
    case, binary = sys.argv[1], os.path.abspath(sys.argv[2])
    fn = globals().get("case_" + case)
    if not fn:
        kinds = dict((n, k) for k, n in table(binary))
        if kinds.get(case) in ("CASE", "CHECK"):
            fail(f"the table in tests/scenarios.c has the test {case}, but run_case.py has no check case_{case}")
        if kinds.get(case) == "PROGRAM":
            fail(f"{case} is a program that other cases' checks run, not a test")
        fail(f"no case {case} in the table of tests/scenarios.c")
    with tempfile.TemporaryDirectory() as tmp:
        fn(binary, tmp)
    print(f"ok: {case}")


if __name__ == "__main__":
    main()
