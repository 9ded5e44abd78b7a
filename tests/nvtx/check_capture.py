#!/usr/bin/env python3
"""libprof_nvtx.so, prof.h as the NVTX tool, checked on the traces.

    check_capture.py CASE PROF NVTX_CAPTURE NVTX_PLAIN LIBPROF_NVTX FAKE_TOOL

nvtx_capture (tests/nvtx/nvtx_capture.c) calls fake_nccl, a library built
with -fvisibility=hidden that speaks NVTX as NCCL does, inside its regions
on two threads. Every run goes through `prof run`, which finds the library
beside itself (PROF_NVTX_LIB unset); the traces are read back by Python's
json and tests/pftrace.py (the JSON and the .pftrace of a run alike).

capture   every NVTX range once, on the thread that made it, nested in the
          region around it, with its domain, category and payload (NCCL's
          schema fields by name, the op by its enum name, an int64); marks
          as instants inside their range; the default domain's; a start/
          end range begun on main and ended on worker 1; thread names from
          nvtxNameOsThread; the program's own regions (also forwarded to
          NVTX, domain "prof") exactly as without the library; the misuses
          counted in prof's one line
schedule  PROF_SCHEDULE: only the recorded steps' collectives, inside them;
          PROF_RANKS: none on a rank that does not record
fork      a child forked with ranges open calls NVTX: records nothing, says
          nothing, never waits; the parent's trace whole
without   no NVTX_INJECTION64_PATH: the same regions, no NVTX range, no line
other     another tool named (fake_tool, as Nsight is): one line from prof
          run, the tool gets NCCL's ranges, the trace none; the library
          preloaded (LD_PRELOAD) beside it says the same line itself
plain     a program with no prof.h: the library's own recorder writes them
plugin    prof.h inside a library the program loads RTLD_LOCAL (a Python
          extension's shape) is the recorder; an NVTX call after that
          library's dlclose is recorded, nothing unmapped is touched
tools     prof table group=domain (and --group=domain), PROF_TABLE=group=domain,
          prof report"""
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pftrace  # noqa: E402
from run_case import check, fail  # noqa: E402

NVTX_NAMES = {"ncclAllReduce", "ncclGroupEnd", "ncclCommInitRank", "default_range", "async_range", "wide_\u03b1\u03b2"}
OWN = Counter({"work": 10, "all_reduce": 10, "init": 1, "start_async": 1, "end_async": 1})
LINE = ("prof: nvtx: 34 ranges and 20 marks recorded (libprof_nvtx, into the program's prof.h); not kept: "
        "1 ranges still open at exit (or when their thread ended), 1 pops with no range open, "
        "1 ends of no range open, 1 payloads with no schema registered")


def run(cmd, cwd, env=None, ok=True):
    e = dict(os.environ)
    e.pop("NVTX_INJECTION64_PATH", None)
    e.pop("PROF_NVTX_LIB", None)
    e.update(env or {})
    p = subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=120)
    if ok:
        check(p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def prof_lines(stderr):
    """prof's own lines (a sanitizer's or NVTX's aside)."""
    return [l for l in stderr.splitlines() if l.startswith("prof")]


def slices(t):
    """(tid, name, ts, end, args dict) of each CPU slice."""
    return [(track[1], name, ts, ts + dur, dict(args))
            for (track, name, ts, dur, args), n in t.slices.items() if track[0] == "cpu" for _ in range(n)]


def parent(all_, s):
    """The innermost other slice on s's thread around s (but the start/end
    range, drawn on the thread that ended it from when main began it: it
    may lie across that thread's regions)."""
    best = None
    for o in all_:
        if o is s or o[0] != s[0] or not (o[2] <= s[2] and s[3] <= o[3]) or o[1] == "async_range":
            continue
        if best is None or o[3] - o[2] < best[3] - best[2]:
            best = o
    return best


def check_capture(t, what):
    sl = slices(t)
    names = Counter(s[1] for s in sl)
    own = Counter({n: c for n, c in names.items() if n not in NVTX_NAMES})
    check(own == OWN, f"{what}: the program's regions {dict(own)}, not {dict(OWN)}")
    want = {"ncclAllReduce": 10, "ncclGroupEnd": 11, "ncclCommInitRank": 1, "default_range": 10, "async_range": 1,
            "wide_\u03b1\u03b2": 1}
    check({n: names[n] for n in want} == want, f"{what}: NVTX ranges {dict(names)}")
    ar = [s for s in sl if s[1] == "ncclAllReduce"]
    by_bytes = {}
    for s in ar:
        p = parent(sl, s)
        check(p and p[1] == "all_reduce", f"{what}: ncclAllReduce in {p and p[1]}")
        a = s[4]
        check(a.get("domain") == "NCCL" and a.get("category") == "Collective", f"{what}: args {a}")
        check(a.get("NCCL communicator ID") == 0xc0ffee, f"{what}: comm {a}")
        by_bytes.setdefault(s[0], set()).add((a.get("Message size [bytes]"), a.get("Reduction operation")))
    check(sorted(map(sorted, by_bytes.values())) == [[(1 << 20, "Sum")], [(2 << 20, "Max")]],
          f"{what}: per thread, size and op {by_bytes}")
    workers = {next(iter(v))[0] >> 20: tid for tid, v in by_bytes.items()}    # worker w + 1 -> tid
    check(t.threads.get(workers[1]) == "nccl-worker-0" and t.threads.get(workers[2]) == "nccl-worker-1",
          f"{what}: thread names {t.threads}")
    for s in sl:
        if s[1] in ("ncclGroupEnd", "default_range") and s[0] in workers.values():
            p = parent(sl, s)
            check(p and p[1] == "work", f"{what}: {s[1]} in {p and p[1]}")
    ge = sorted((s[0], s[4].get("payload")) for s in sl if s[1] == "ncclGroupEnd" and s[0] in workers.values())
    check(ge == sorted((tid, i) for tid in workers.values() for i in range(5)), f"{what}: int64 payloads {ge}")
    check(all(s[4] == {"domain": "(default)"} for s in sl if s[1] == "default_range"), f"{what}: default ranges")
    main = [s for s in sl if s[1] == "init"][0][0]
    ci = [s for s in sl if s[1] == "ncclCommInitRank"][0]
    check(ci[0] == main and parent(sl, ci)[1] == "init", f"{what}: ncclCommInitRank on main in init")
    check(ci[4] == {"domain": "NCCL", "NCCL communicator ID": 0xc0ffee, "No. of ranks": 4, "Rank": 1, "CUDA device": 0},
          f"{what}: comm init args {ci[4]}")
    (wide,) = [s for s in sl if s[1] == "wide_\u03b1\u03b2"]
    check(wide[0] == main and wide[4] == {"domain": "(default)", "category": "cat\u00e9gorie", "payload": "0.25"},
          f"{what}: wide {wide}")
    misuse = [s for s in sl if s[1] == "ncclGroupEnd" and s[0] == main]
    check(len(misuse) == 1 and misuse[0][4] == {"domain": "NCCL"}, f"{what}: the range of an unknown schema {misuse}")
    (asy,) = [s for s in sl if s[1] == "async_range"]
    (start,) = [s for s in sl if s[1] == "start_async"]
    (end,) = [s for s in sl if s[1] == "end_async"]
    check(asy[0] == workers[2] and asy[4].get("started on thread") == main, f"{what}: async range {asy}")
    check(start[2] <= asy[2] <= start[3] and end[2] <= asy[3] <= end[3], f"{what}: async range's times")
    inst = Counter(name for (tid, name, ts, args), n in t.instants.items() for _ in range(n))
    check(inst == Counter({"nccl_mark": 10, "default_mark": 10}), f"{what}: marks {dict(inst)}")
    for (tid, name, ts, args), n in t.instants.items():
        around = {"nccl_mark": "ncclAllReduce", "default_mark": "default_range"}[name]
        check(any(s[0] == tid and s[1] == around and s[2] <= ts <= s[3] for s in sl), f"{what}: {name} outside")
    check(not t.meta.get("dropped"), f"{what}: dropped {t.meta}")


def traces(tmp, stem, env, cmd):
    if pftrace.pb is None:
        print("skipped: PROF_TEST_PYTHON has no perfetto module to read the .pftrace")
        sys.exit(77)
    """The run as JSON and as .pftrace: [(what, Trace)], and prof's lines."""
    out = []
    for ext in ("json", "pftrace"):
        p = run(cmd, tmp, dict(env, PROF_OUTPUT=f"{stem}.{ext}"))
        lines = prof_lines(p.stderr)
        if ext == "json":
            out.append((f"{stem}.json", pftrace.load_json(os.path.join(tmp, f"{stem}.json")), lines))
        elif pftrace.pb is not None:
            out.append((f"{stem}.pftrace", pftrace.decode_pftrace(os.path.join(tmp, f"{stem}.pftrace")), lines))
    return out


def case_capture(a, tmp):
    for what, t, lines in traces(tmp, "cap", {}, [a.prof, "run", "--", a.capture, "threads"]):
        check(LINE in lines, f"{what}: prof's lines {lines}")
        check_capture(t, what)
    print("capture: every range once, nested, with its payload and domain; marks, names, the misuses counted")


def case_schedule(a, tmp):
    env = {"PROF_SCHEDULE": "wait=1,warmup=1,active=2,repeat=1", "PROF_OUTPUT": "steps.json"}
    run([a.prof, "run", a.capture, "steps"], tmp, env)
    files = sorted(f for f in os.listdir(tmp) if f.startswith("steps"))
    check(files == ["steps.1.json"], f"files {files}")
    sl = slices(pftrace.load_json(os.path.join(tmp, "steps.1.json")))
    ar = [s for s in sl if s[1] == "ncclAllReduce"]
    steps = sorted(s[1] for s in sl if s[1].startswith("ProfilerStep#"))
    check(steps == ["ProfilerStep#2", "ProfilerStep#3"], f"steps {steps}")
    check(len(ar) == 2, f"{len(ar)} collectives recorded, not 2 (steps 2 and 3)")
    for s in ar:
        chain, p = [], parent(sl, s)
        while p:
            chain.append(p[1])
            p = parent(sl, p)
        check(chain[:2] == ["all_reduce", "step_work"] and chain[2].startswith("ProfilerStep#"), f"chain {chain}")
    # PROF_RANKS: a rank that does not record captures nothing; one that does, every step's
    p = run([a.prof, "run", a.capture, "steps"], tmp, {"RANK": "0", "WORLD_SIZE": "2", "PROF_RANKS": "1",
                                                       "PROF_OUTPUT": "rank0.json"})
    check("prof: nvtx: 0 ranges and 0 marks recorded (libprof_nvtx, into the program's prof.h)" in prof_lines(p.stderr)
          and not os.path.exists(os.path.join(tmp, "rank0.json")), f"rank 0, not recording: {p.stderr}")
    p = run([a.prof, "run", a.capture, "steps"], tmp, {"RANK": "1", "WORLD_SIZE": "2", "PROF_RANKS": "1",
                                                       "PROF_OUTPUT": "rank1.json"})
    sl = slices(pftrace.load_json(os.path.join(tmp, "rank1.json")))
    check(Counter(s[1] for s in sl)["ncclAllReduce"] == 6, f"rank 1: {Counter(s[1] for s in sl)}")
    print("schedule: the collectives of the recorded steps only, inside them")


def case_fork(a, tmp):
    p = run([a.prof, "run", a.capture, "fork"], tmp, {"PROF_OUTPUT": "fork.json"})
    said = [l for l in prof_lines(p.stderr) if "nvtx:" in l]
    check(said == ["prof: nvtx: 3 ranges and 2 marks recorded (libprof_nvtx, into the program's prof.h)"],
          f"lines {p.stderr}")
    sl = slices(pftrace.load_json(os.path.join(tmp, "fork.json")))
    names = Counter(s[1] for s in sl)
    check(names == Counter({"before_fork": 1, "after_fork": 1, "ncclAllReduce": 2, "async_range": 1}), f"{dict(names)}")
    check(all(parent(sl, s)[1] in ("before_fork", "after_fork") for s in sl if s[1] == "ncclAllReduce"), "nesting")
    check(sorted(f for f in os.listdir(tmp) if f.endswith(".json")) == ["fork.json"], f"{os.listdir(tmp)}")
    print("fork: the child records and says nothing; the parent's trace whole")


def case_without(a, tmp):
    p = run([a.capture, "threads"], tmp, {"PROF_OUTPUT": "plain.json"})
    check(not [l for l in prof_lines(p.stderr) if "nvtx" in l], f"lines {p.stderr}")
    sl = slices(pftrace.load_json(os.path.join(tmp, "plain.json")))
    names = Counter(s[1] for s in sl)
    check(names == OWN, f"without the library: {dict(names)}")
    t = pftrace.load_json(os.path.join(tmp, "plain.json"))
    check(not t.instants, f"instants {t.instants}")
    print("without: the program's regions only, no line")


def case_other(a, tmp):
    p = run([a.prof, "run", a.capture, "threads"], tmp,
            {"NVTX_INJECTION64_PATH": a.fake_tool, "FAKE_NVTX_LOG": "tool.log", "PROF_OUTPUT": "other.json"})
    said = [l for l in prof_lines(p.stderr) if "NVTX" in l]
    check(said == [f"prof run: NVTX_INJECTION64_PATH names another tool ({a.fake_tool}): prof.h leaves NVTX to it"],
          f"lines {p.stderr}")
    names = Counter(s[1] for s in slices(pftrace.load_json(os.path.join(tmp, "other.json"))))
    check(names == OWN, f"beside another tool: {dict(names)}")
    with open(os.path.join(tmp, "tool.log")) as f:
        log = f.read()
    check("range NCCL:ncclAllReduce 10\n" in log, f"the other tool's log:\n{log}")
    # the library loaded some other way (LD_PRELOAD) while another is named: the same, said by it
    asan = os.environ.get("ASAN_OPTIONS", "")
    p = run([a.capture, "threads"], tmp,
            {"NVTX_INJECTION64_PATH": a.fake_tool, "FAKE_NVTX_LOG": "tool2.log", "PROF_OUTPUT": "other2.json",
             "LD_PRELOAD": a.lib, "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"})
    said = [l for l in prof_lines(p.stderr) if "NVTX" in l]
    check(said == [f"prof: NVTX_INJECTION64_PATH names another tool ({a.fake_tool}): prof.h leaves NVTX to it"],
          f"preloaded: lines {p.stderr}")
    names = Counter(s[1] for s in slices(pftrace.load_json(os.path.join(tmp, "other2.json"))))
    check(names == OWN, f"preloaded beside another tool: {dict(names)}")
    print("other: one line, NVTX left to the other tool")


def case_plain(a, tmp):
    p = run([a.prof, "run", a.plain], tmp, {"PROF_OUTPUT": "plain.json"})
    check(any("into its own recorder" in l for l in prof_lines(p.stderr)), f"lines {p.stderr}")
    sl = slices(pftrace.load_json(os.path.join(tmp, "plain.json")))
    check(Counter(s[1] for s in sl) == Counter({"ncclAllReduce": 3}), f"regions {sl}")
    check(all(s[4].get("Message size [bytes]") == 1024 and s[4].get("Reduction operation") == "Sum" for s in sl),
          f"args {sl}")
    print("plain: a program with no prof.h, recorded by the library's own copy")


def case_plugin(a, tmp):
    host = os.path.join(os.path.dirname(a.plain), "nvtx_host")
    plugin = os.path.join(os.path.dirname(a.plain), "libnvtx_plugin.so")
    p = run([a.prof, "run", host, plugin], tmp, {"PROF_OUTPUT": "plugin.json"})
    check(any("into the program's prof.h" in l for l in prof_lines(p.stderr)), f"lines {p.stderr}")
    sl = slices(pftrace.load_json(os.path.join(tmp, "plugin.json")))
    ar = sorted((s for s in sl if s[1] == "ncclAllReduce"), key=lambda s: s[2])
    check(Counter(s[1] for s in sl) == Counter({"plugin_step": 1, "ncclAllReduce": 2}), f"{sl}")
    check(parent(sl, ar[0])[1] == "plugin_step" and parent(sl, ar[1]) is None, "nesting")
    check([s[4].get("Message size [bytes]") for s in ar] == [256, 512], f"{ar}")
    print("plugin: prof.h in a library loaded RTLD_LOCAL found; NVTX after its dlclose recorded, nothing unmapped")


def case_tools(a, tmp):
    run([a.prof, "run", a.capture, "threads"], tmp, {"PROF_OUTPUT": "cap.json"})
    outs = [run([a.prof, "table", "cap.json", spec], tmp).stdout for spec in ("group=domain", "--group=domain")]
    check(outs[0] == outs[1], "group=domain and --group=domain differ")
    rows = {}
    for line in outs[0].splitlines():
        f = line.split()
        if len(f) >= 9 and f[0] in NVTX_NAMES | set(OWN):
            rows[f[0]] = (f[8], f[9] if len(f) > 9 else "")
    want = {"ncclAllReduce": ("10", "domain=NCCL"), "ncclGroupEnd": ("11", "domain=NCCL"),
            "ncclCommInitRank": ("1", "domain=NCCL"), "default_range": ("10", "domain=(default)")}
    check({n: rows.get(n) for n in want} == want, f"table rows {rows}\n{outs[0]}")
    check(rows.get("work") == ("10", "") and rows.get("all_reduce") == ("10", ""), f"own rows {rows}")
    # the run's own table (PROF_TABLE), grouped the same way
    p = run([a.prof, "run", a.capture, "threads"], tmp, {"PROF_OUTPUT": "cap2.json", "PROF_TABLE": "group=domain"})
    row = [l.split() for l in p.stderr.splitlines() if l.split()[:1] == ["ncclAllReduce"]]
    check(len(row) == 1 and row[0][-2:] == ["10", "domain=NCCL"], f"PROF_TABLE=group=domain: {row}\n{p.stderr}")
    run([a.prof, "report", "cap.json", "-o", "cap.html"], tmp)
    with open(os.path.join(tmp, "cap.html"), encoding="utf-8") as f:
        html = f.read()
    check("ncclAllReduce" in html and "ncclCommInitRank" in html, "the report has no NVTX ranges")
    print("tools: prof table group=domain, prof report")


class Args:
    pass


def main():
    a = Args()
    case = sys.argv[1]
    a.prof, a.capture, a.plain, a.lib, a.fake_tool = map(os.path.abspath, sys.argv[2:7])
    fn = globals().get("case_" + case)
    if not fn:
        fail("no case " + case)
    with tempfile.TemporaryDirectory(prefix="prof-nvtx-") as tmp:
        fn(a, tmp)


if __name__ == "__main__":
    main()
