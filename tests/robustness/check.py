#!/usr/bin/env python3
"""Robustness cases: each runs its program (tests/robustness/CASE.c) the way
the case needs and checks exactly what the promise says.

    check.py CASE BINARY         (in a scratch directory, emptied by the caller)
    check.py --table CASE...     every CASE has its check here, every check its CASE
"""
import os
import re
import resource
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from run_case import check, fail, load  # noqa: E402


def clean_env(env):
    """The test's environment without PROF_ variables, plus env."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    full.update(env)
    return full


def empty_dir():
    for f in os.listdir("."):
        os.remove(f)


def run(binary, env=None, limit_bytes=None, args=()):
    full = clean_env(env or {})

    def limit():
        if limit_bytes is not None:   # as a full disk does: writes fail (EFBIG), no signal
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.run([binary, *args], env=full, capture_output=True, text=True, timeout=60, preexec_fn=limit)


def case_full_disk(binary):
    p = run(binary, {"PROF_OUTPUT": "t.json"})
    check(p.returncode == 0, f"first run: {p.stderr}")
    good = open("t.json", "rb").read()
    check(len(load("t.json")["traceEvents"]) > 20000, "first trace")
    p = run(binary, {"PROF_OUTPUT": "t.json"}, limit_bytes=256 << 10)
    check(p.returncode == 0 and "engine still running" in p.stdout, f"the engine was stopped: {p.returncode}")
    lines = [l for l in p.stderr.splitlines() if l.startswith("prof: failed writing trace")]
    check(lines == ["prof: failed writing trace 't.json': File too large; a file there before is left as it was"],
          f"stderr: {p.stderr}")
    check(open("t.json", "rb").read() == good, "the good trace was changed")
    check(sorted(os.listdir(".")) == ["t.json"], f"files left: {os.listdir('.')}")
    # a path in a directory that does not exist: said, nothing written
    p = run(binary, {"PROF_OUTPUT": "no/such/dir/t.json"})
    check(p.returncode == 0 and "prof: cannot write trace 'no/such/dir/t.json': No such file or directory" in p.stderr,
          f"stderr: {p.stderr}")
    streamed_full_disk(binary)


def pftrace_steps(path):
    """The whole steps of a .pftrace read strictly: [step numbers], each
    checked to hold its 2,000 regions."""
    import pftrace
    t = pftrace.decode_pftrace(path)
    steps = sorted(int(k[1].split("#")[1]) for k in t.slices if k[1].startswith("ProfilerStep#"))
    for n in steps:
        s = next(k for k in t.slices if k[1] == f"ProfilerStep#{n}")
        inside = [k for k in t.slices.elements() if k[1] == "work" and s[2] <= k[2] and k[2] + k[3] <= s[2] + s[3]]
        check(len(inside) == 2000, f"{path}: step {n} holds {len(inside)} regions")
    return steps


def streamed_full_disk(binary):
    """A streamed .pftrace: its first part replaces the file there, a later
    part that fails is cut off again, and the file keeps the steps before;
    a first part that fails leaves the file that was there."""
    import pftrace
    if pftrace.pb is None:
        print("SKIP: the perfetto package (tests/readers/requirements.txt) is not installed: a streamed part")
        return
    empty_dir()
    p = run(binary, {"PROF_OUTPUT": "t.pftrace"}, args=["steps"])
    check(p.returncode == 0 and pftrace_steps("t.pftrace") == list(range(20)), f"free: {p.returncode} {p.stderr}")
    good = open("t.pftrace", "rb").read()
    check(len(good) > 256 << 10, f"the whole trace is {len(good)} bytes, not more than the limit")
    p = run(binary, {"PROF_OUTPUT": "t.pftrace"}, limit_bytes=256 << 10, args=["steps"])
    check(p.returncode == 0 and "engine still running" in p.stdout, f"streamed: exit {p.returncode}")
    said = [l for l in p.stderr.splitlines() if l.startswith("prof: failed writing")]
    check(said == ["prof: failed writing cycle 1's trace 't.pftrace': File too large; it holds the steps written "
                   "before"], f"streamed: stderr {p.stderr}")
    steps = pftrace_steps("t.pftrace")
    check(steps and steps == list(range(len(steps))) and len(steps) < 20, f"streamed: steps in the file {steps}")
    check(os.path.getsize("t.pftrace") <= 256 << 10 and sorted(os.listdir(".")) == ["t.pftrace"],
          f"streamed: files {os.listdir('.')}, {os.path.getsize('t.pftrace')} bytes")
    # the first part fails: the good trace stays
    open("t.pftrace", "wb").write(good)
    p = run(binary, {"PROF_OUTPUT": "t.pftrace"}, limit_bytes=4 << 10, args=["steps"])
    said = [l for l in p.stderr.splitlines() if l.startswith("prof: failed writing")]
    check(p.returncode == 0 and said == ["prof: failed writing cycle 1's trace 't.pftrace': File too large; a file "
                                         "there before is left as it was"], f"first part: stderr {p.stderr}")
    check(open("t.pftrace", "rb").read() == good and os.listdir(".") == ["t.pftrace"],
          f"first part: the good trace was changed, files {os.listdir('.')}")


def case_behind(binary):
    """A sink stuck until the engine's last step: every step returned first
    (the sink was released, not timed out); 20 steps of 2,000 regions and
    their ProfilerStep events are each either in a cycle's file or counted
    dropped, all of the drops as the writer's, which the cycle's line says."""
    p = run(binary, {})
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    out = p.stdout.splitlines()
    check(out[:2] == ["engine: 20 steps made", "sink: released after the engine's last step"], f"stdout: {out}")
    m = re.fullmatch(r"dropped (\d+) behind (\d+)", out[-1])
    check(m and int(m.group(1)) > 0 and m.group(1) == m.group(2), f"stats: {out[-1]}")
    dropped = int(m.group(1))
    files = sorted(os.listdir("."), key=lambda f: int(f.split(".")[1]))
    check(files == [f"b.{i}.json" for i in range(1, 21)], f"files {files}")
    written, told = 0, 0                # 2,000 regions and a ProfilerStep a step
    for f in files:
        d = load(f)
        n = sum(1 for e in d["traceEvents"] if e.get("name") == "work")
        steps = sum(1 for e in d["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
        check(n <= 2000 and steps <= 1, f"{f}: {n} regions, {steps} steps")
        written += n + steps
        told += d["prof_dropped_events"]
    check(written + dropped == 40020 and told == dropped, f"{written} written + {dropped} dropped ({told} in the files)")
    # said at the end of each cycle that counted some (the first, if the cap
    # filled before the profiler's thread began it; the second, for the
    # rest: a drop being counted as a collection reads the counters may be
    # told as the writer's with the next), every one of them the writer's
    said = [tuple(map(int, m)) for m in
            re.findall(r"prof: the profiler's thread fell behind the engine: (\d+) of those (\d+) were dropped",
                       p.stderr)]
    check(said and all(a <= b for a, b in said) and sum(a for a, _ in said) == sum(b for _, b in said) == dropped,
          f"stderr: {p.stderr}")
    behind_modes(binary)


def slow_writer(binary, mode):
    """behind exit / sigint: exit() and SIGINT's shutdown wait for a sink
    that is stuck until check.py sends a line, sent only once the process
    is in exit() or SIGINT's shutdown: each of the 5 cycles is written."""
    empty_dir()
    p = subprocess.Popen([binary, mode], env=clean_env({}), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    check(p.stdout.readline() == ("exiting\n" if mode == "exit" else "ready\n"), f"{mode}: not ready")
    if mode == "sigint":
        p.send_signal(signal.SIGINT)
        line = p.stderr.readline()
        check(line == "prof: SIGINT: writing the trace before the process ends (PROF_SIGNALS=0 turns this off)\n",
              f"{mode}: stderr {line!r}")
    try:
        p.stdin.write("go\n")
        p.stdin.close()
    except BrokenPipeError:
        pass                            # gone: it did not wait, which the checks below say
    p.stdin = None
    out, err = p.communicate(timeout=30)
    want = 0 if mode == "exit" else -signal.SIGINT
    check(p.returncode == want and out == "sink: released\n", f"{mode}: exit {p.returncode}, stdout {out!r}: {err}")
    files = sorted(os.listdir("."))
    check(files == [f"s.{i}.json" for i in range(1, 6)], f"{mode}: files {files}")
    for f in files:
        check(trace_names(f).get("work") == 100, f"{mode}: {f}: {trace_names(f)}")


def behind_modes(binary):
    for mode in ("exit", "sigint"):
        slow_writer(binary, mode)
    # a writer stuck for good: PROF_SHUTDOWN waits its limit (here 1 s),
    # says what is not written, and returns
    empty_dir()
    p = run(binary, args=["limit"])
    check(p.returncode == 0 and p.stdout == "shutdown returned\n", f"limit: exit {p.returncode}, stdout {p.stdout!r}")
    check(p.stderr.splitlines() == ["prof: the profiler's thread has not finished writing in 1 s (5 steps still "
                                    "queued); what it has not written is lost (a file it was writing is left as it "
                                    "was)"], f"limit: stderr {p.stderr}")
    check(os.listdir(".") == [], f"limit: files {os.listdir('.')}")


def case_handler_exit(binary):
    """prof_flush() and exit(3) inside the trace-ready handler, on the
    profiler's thread and on the stepping thread: prof_flush returns 0 at
    once, saying why, the process ends with status 3 (nothing waits on
    itself), and the exit-time shutdown says what is not written."""
    for env in ({}, {"AT_STEP": "1"}):
        p = run(binary, env)
        check(p.returncode == 3, f"{env}: exit {p.returncode}: {p.stderr}")
        check(p.stdout == "handler: cycle 1, prof_flush 0, exit(3)\n", f"{env}: stdout {p.stdout!r}")
        check("prof: PROF_SHUTDOWN or exit() inside a trace-ready handler: the cycles after this one are not written"
              in p.stderr and "prof: prof_flush inside a trace-ready handler: not waited for" in p.stderr,
              f"{env}: stderr {p.stderr}")


def case_huge_alloc(binary):
    p = run(binary, {"PROF_OUTPUT": "t.json"})
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    check(p.stdout.splitlines() == ["allocated 64"], f"stdout: {p.stdout}")
    said = [l for l in p.stderr.splitlines() if "PROF_ALLOC of" in l]
    check(said == ["prof: PROF_ALLOC of 18446744073709551615 bytes ignored: "
                   "no allocation is larger than PTRDIFF_MAX"], f"stderr: {p.stderr}")
    d = load("t.json")
    sizes = [e["args"]["Bytes"] for e in d["traceEvents"] if e.get("name") == "[memory]"]
    check(sizes == [64, -64], f"memory events {sizes}")


def case_env_messages(binary):
    env = {"PROF_OUTPUT": "t.json", "PROF_SCHEDULE": "active=1\nwait=\x01x", "PROF_TABLE": "sort=" + "y" * 5000,
           "PROF_DISABLE": "yes\x1b[31m", "PROF_PEAK_TFLOPS": "fast", "PROF_PEAK_GBPS": "-3",
           "PROF_TRIGGER_STEPS": "0", "PROF_CUPTI": "yes", "PROF_FLIGHT": "many", "PROF_FLIGHT_SLOW": "-1",
           "PROF_FLIGHT_COOLDOWN": "soon"}
    p = run(binary, env)
    check(p.returncode == 0, f"exit {p.returncode}")
    lines = p.stderr.splitlines()
    want = [
        "prof: PROF_DISABLE='yes\\x1b[31m' is not 0 or 1; ignoring it",
        "prof: PROF_SCHEDULE='active=1\\nwait=\\x01x' is not of the form "
        "skip_first=N,wait=N,warmup=N,active=N,repeat=N with active >= 1; ignoring it",
        "prof: PROF_TABLE='sort=" + "y" * 195 + "...(5005 bytes)' is not of the form sort=self_cpu|cpu_total|"
        "cpu_avg|cpu_min|cpu_max|calls|flops|name|self_gpu|gpu_total|gpu_avg|cpu_mem|self_cpu_mem|gpu_mem|"
        "self_gpu_mem,rows=N[,group=args|thread|args+thread|domain|capture][,ranks=all][,percentiles]; no table",
    ]
    want += [
        "prof: PROF_TRIGGER_STEPS='0' is not a number of steps from 1 to 999999; using 5",
        "prof: PROF_PEAK_TFLOPS='fast' is not a positive number; no peak",
        "prof: PROF_PEAK_GBPS='-3' is not a positive number; no peak",
    ]
    want += [
        "prof: PROF_FLIGHT='many' is not a number of steps from 0 to 99999; no flight recorder",
        "prof: PROF_FLIGHT_SLOW='-1' is not a number from 0; using 3",
        "prof: PROF_FLIGHT_COOLDOWN='soon' is not a number from 0; using 300",
    ]
    cupti = "prof: PROF_CUPTI='yes' is not 0 or 1; ignoring it"
    check(cupti in lines, "messages:\n" + "\n".join(lines))
    lines.remove(cupti)
    check(lines[:9] == want, "messages:\n" + "\n".join(lines[:9]))
    check(len(load("t.json")["traceEvents"]) > 0, "no trace with the defaults")


def case_spanning(binary):
    import glob
    # a cycle per step: region i (1..10) began in step i-1 and ended in step
    # i. Step i-1's trace draws it from its start to the trace's end, marked
    # open; step i's from the trace's start, marked clipped. Step 0's has
    # region 1 open only, step 10's region 10 clipped only; the window after
    # the last step has no step, and no trace.
    p = run(binary, {"PROF_OUTPUT": "every.json", "PROF_SCHEDULE": "active=1"})
    check(p.returncode == 0 and p.stdout.split("\n")[0] == "clipped 10 lost 0", f"stdout {p.stdout} {p.stderr}")
    files = sorted(glob.glob("every.*.json"), key=lambda f: int(f.split(".")[1]))
    check(len(files) == 11, f"traces {files}")
    for f in files:
        d = load(f)
        st = [x for x in d["traceEvents"] if x["name"].startswith("ProfilerStep#")]
        check(len(st) == 1, f"{f}: steps {st}")
        n = int(st[0]["name"][13:])
        loads = sorted((e for e in d["traceEvents"] if e["name"] == "load"), key=lambda e: e["ts"])
        want = ([{"clipped": "began before this trace"}] if n >= 1 else []) + \
               ([{"open": "still running at the end of this trace"}] if n <= 9 else [])
        check([e["args"] for e in loads] == want and d["prof_clipped_regions"] == (n >= 1),
              f"{f}: step {n}, loads {loads}")
        for e in loads:
            if "clipped" in e["args"]:
                check(abs(e["ts"] - st[0]["ts"]) < 0.002, f"{f}: clipped at {e['ts']}, the window at {st[0]['ts']}")
            else:                       # to the end of the step, which ends 1 ns early
                check(abs(e["ts"] + e["dur"] - (st[0]["ts"] + st[0]["dur"])) < 0.002 and e["ts"] > st[0]["ts"],
                      f"{f}: open {e}, the step {st[0]}")
    # wait, active, wait, ...: a region begun in an active step ends in a
    # wait step: it is in the active step's trace, drawn to its end, marked
    # open, and nothing is lost (those begun in a wait step record nothing:
    # outside a window a region costs one branch)
    p = run(binary, {"PROF_OUTPUT": "alt.json", "PROF_SCHEDULE": "wait=1,active=1"})
    check(p.returncode == 0 and p.stdout.split("\n")[0] == "clipped 0 lost 0", f"stdout {p.stdout}")
    check("in steps not recorded" not in p.stderr, f"stderr {p.stderr}")
    loads = [e for f in glob.glob("alt.*.json") for e in load(f)["traceEvents"] if e["name"] == "load"]
    check(len(loads) == 5 and all(e["args"] == {"open": "still running at the end of this trace"} for e in loads),
          f"{len(loads)} load regions written: {loads}")


def case_unclosed(binary):
    p = run(binary, {"PROF_OUTPUT": "t.json"})
    check(p.returncode == 0 and p.stdout.splitlines() == ["unclosed 300 dropped 0"], f"stdout {p.stdout}")
    said = [l for l in p.stderr.splitlines() if "never closed" in l]
    check(said == ["prof: cycle 1: 300 regions never closed (PROF_BEGIN without PROF_END): 'leaky_parse' x300"],
          f"stderr {p.stderr}")
    d = load("t.json")
    names = [e["name"] for e in d["traceEvents"] if e["ph"] == "X"]
    check(names.count("balanced") == 1000 and "leaky_parse" not in names, f"{names.count('balanced')} balanced")


def case_churn(binary):
    def counts(threads, per_thread=3):
        p = run(binary, args=[str(threads), str(per_thread)])
        check(p.returncode == 0, f"{threads} threads: exit {p.returncode}: {p.stderr}")
        check(p.stderr == "", f"{threads} threads: stderr {p.stderr}")
        w = p.stdout.split()
        return dict(zip(w[::2], map(int, w[1::2])))
    # every region of every thread (tids are not reused within 5,000 threads)
    c = counts(5000)
    check((c["regions"], c["threads"], c["dropped"]) == (15000, 5000, 0), f"5,000 threads: {c}")
    # exited threads' memory comes back: 20,000 threads fit the default 64 MiB
    # in little memory (each held a 64 KiB chunk and a 4 KiB struct before:
    # 1,024 threads kept, and 50,000 took 267 MB)
    c = counts(20000)
    check((c["regions"], c["dropped"]) == (60000, 0), f"20,000 threads: {c}")
    check(c["sanitized"] or c["maxrss_mb"] < 32, f"20,000 threads: peak RSS {c['maxrss_mb']} MB")
    # threads of more than a chunk each (left to the collector, not copied)
    c = counts(20, 5000)
    check((c["regions"], c["threads"], c["dropped"]) == (100000, 20, 0), f"20 threads x 5,000: {c}")


def trace_names(path):
    """Counts of the complete ("X") events' names in a trace."""
    counts = {}
    for e in load(path)["traceEvents"]:
        if e.get("ph") == "X":
            counts[e["name"]] = counts.get(e["name"], 0) + 1
    return counts


def case_fork(binary):
    # forks after init, while 2 threads record and take the lock: every child
    # exits, records nothing, and leaves the parent's file to the parent
    for out in ("t.json", "t_{pid}.json"):
        p = run(binary, {"PROF_OUTPUT": out, "PROF_BUFFER_MB": "256"})
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
        w = p.stdout.split()
        forks, nhung, busy, dropped = int(w[1]), int(w[3]), int(w[5]), int(w[7])
        check(forks in (3, 100) and nhung == 0 and dropped == 0, f"stdout {p.stdout}")
        files = os.listdir(".")
        check(len(files) == 1, f"files {files}")
        check(trace_names(files[0]) == {"busy": busy}, f"{files[0]}: {trace_names(files[0])} (busy {busy})")
        os.remove(files[0])
    # a fork before init: a fresh process, with a file of its own
    p = run(binary, {"PROF_OUTPUT": "t.json"}, args=["early"])
    check(p.returncode == 0, f"early: exit {p.returncode}: {p.stderr}")
    child = p.stdout.split()[1]
    check(sorted(os.listdir(".")) == sorted(["t.json", f"t-{child}.json"]), f"files {os.listdir('.')}")
    check(trace_names("t.json") == {"parent": 1}, f"parent's {trace_names('t.json')}")
    check(trace_names(f"t-{child}.json") == {"child": 1}, f"child's {trace_names(f't-{child}.json')}")
    # a child forked after init that exec()s starts afresh: it records,
    # takes SIGTERM (its trace written, then the signal ends it) and writes
    # its own trace; the parent's holds the parent's regions
    empty_dir()
    p = run(binary, {"PROF_OUTPUT": "t_{pid}.json"}, args=["exec"])
    m = re.fullmatch(r"child ([0-9]+) status ([0-9]+)\n", p.stdout)
    check(p.returncode == 0 and m and int(m[2]) == signal.SIGTERM, f"exec: exit {p.returncode}, stdout {p.stdout!r}, "
          f"stderr {p.stderr}")
    check(f"prof: SIGTERM: writing the trace before the process ends (PROF_SIGNALS=0 turns this off)" in p.stderr,
          f"exec: stderr {p.stderr}")
    parent = [f for f in os.listdir(".") if f != f"t_{m[1]}.json"]
    check(f"t_{m[1]}.json" in os.listdir(".") and len(parent) == 1, f"exec: files {os.listdir('.')}")
    check(trace_names(f"t_{m[1]}.json") == {"fresh": 1}, f"exec: the child's {trace_names(f't_{m[1]}.json')}")
    names = trace_names(parent[0])
    check(names.get("parent") == 1 and set(names) <= {"parent", "busy"}, f"exec: the parent's {names}")


def default_signals():
    """In the child before exec: SIGINT and SIGTERM at their defaults, as in a
    program started from a terminal. A shell without job control starts its
    background jobs with SIGINT ignored, and the child would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def case_signals(binary):
    def interrupted(mode, sig, env):
        empty_dir()
        p = subprocess.Popen([binary, mode], env=clean_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=default_signals)
        check(p.stdout.readline() == "ready\n", f"{mode}: not ready")
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        return p.returncode, out, err
    env = {"PROF_OUTPUT": "t.json"}
    for sig in (signal.SIGINT, signal.SIGTERM):
        name = signal.Signals(sig).name
        rc, out, err = interrupted("wait", sig, env)
        check(rc == -sig, f"{name}: exit {rc}, not the signal's: {err}")
        check(err.splitlines() == [f"prof: {name}: writing the trace before the process ends "
                                   "(PROF_SIGNALS=0 turns this off)", "prof: wrote t.json (1005 events)"],
              f"{name}: stderr {err}")
        check(os.listdir(".") == ["t.json"] and trace_names("t.json") == {"work": 1000}, f"{name}: trace")
        # opted out: the signal's default action alone
        rc, out, err = interrupted("wait", sig, dict(env, PROF_SIGNALS="0"))
        check(rc == -sig and err == "" and os.listdir(".") == [], f"{name}, PROF_SIGNALS=0: {rc} {err}")
        # cfg.keep_signals, PROF_SIGNALS=0's config form: the same
        rc, out, err = interrupted("keep", sig, env)
        check(rc == -sig and err == "" and os.listdir(".") == [], f"{name}, cfg.keep_signals: {rc} {err}")
        # a second signal while the first one's shutdown waits (on a
        # trace-ready handler that never returns) ends the process at once
        empty_dir()
        p = subprocess.Popen([binary, "second"], env=clean_env(env), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
        check(p.stdout.readline() == "ready\n", "second: not ready")
        p.send_signal(sig)
        check(p.stdout.readline() == "handler\n", f"second: the first {name} did not reach the handler")
        p.send_signal(sig)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            fail(f"second {name}: the process went on waiting for the handler: {p.communicate()[1]}")
        check(p.returncode == -sig and err.splitlines() == [f"prof: {name}: writing the trace before the process "
                                                            "ends (PROF_SIGNALS=0 turns this off)"],
              f"second {name}: exit {p.returncode}, stderr {err}")
        check(os.listdir(".") == [], f"second {name}: files {os.listdir('.')}")
    # SIG_IGN is left alone: the SIGINT sent first is ignored, the SIGTERM
    # after it writes the trace
    empty_dir()
    p = subprocess.Popen([binary, "ignored"], env=clean_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=default_signals)
    check(p.stdout.readline() == "ready\n", "ignored: not ready")
    p.send_signal(signal.SIGINT)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    check(p.returncode == -signal.SIGTERM and err.splitlines() == [
        "prof: SIGTERM: writing the trace before the process ends (PROF_SIGNALS=0 turns this off)",
        "prof: wrote t.json (1005 events)"], f"SIGINT ignored: exit {p.returncode}, stderr {err}")
    # SIGUSR2 (PROF_TRIGGER=signal) is taken while running, each time it
    # comes, and its default action (the end of the process) is back after
    # shutdown
    empty_dir()
    p = run(binary, dict(env, PROF_TRIGGER="signal"), args=["usr2"])
    check(p.stdout == "ready\ntriggered twice\nshut down\n" and p.returncode == -signal.SIGUSR2,
          f"usr2: exit {p.returncode}, stdout {p.stdout!r}, stderr {p.stderr}")
    # the engine's own handler is left alone; its clean exit writes the trace
    rc, out, err = interrupted("user", signal.SIGINT, env)
    check(rc == 0 and out == "user handler\n", f"user handler: exit {rc}, stdout {out}")
    check(err == "prof: wrote t.json (1005 events)\n" and trace_names("t.json") == {"work": 1000}, f"user: {err}")
    # crashes: where the thread was and what is lost are said, the crash goes
    # on as before (strict C: prof.h takes only signals left at the default)
    for mode, sig in (("abort", signal.SIGABRT), ("segv", signal.SIGSEGV), ("bus", signal.SIGBUS),
                      ("fpe", signal.SIGFPE), ("ill", signal.SIGILL)):
        empty_dir()
        p = run(binary, env, args=[mode])
        if "sanitized" in p.stdout:
            continue
        name = signal.Signals(sig).name
        check(p.returncode == -sig, f"{mode}: exit {p.returncode}: {p.stderr}")
        check(re.fullmatch(f"prof: {name}: thread [0-9]+ is inside no region\n"
                           f"prof: {name}: the process is crashing; up to 2047 events recorded since the last "
                           "trace are lost \\(a schedule writes one per cycle\\)\n", p.stderr), f"{mode}: stderr {p.stderr}")
        check(os.listdir(".") == [], f"{mode}: files {os.listdir('.')}")
    # under a schedule, a crash loses only the current cycle: the three
    # written before it stay whole, and what is lost is the one chunk
    # holding step 3's 500 regions, not the 11,000 before
    empty_dir()
    p = run(binary, env, args=["cycles"])
    if "sanitized" not in p.stdout:
        check(p.returncode == -signal.SIGSEGV, f"cycles: exit {p.returncode}: {p.stderr}")
        m = re.fullmatch("prof: wrote t\\.1\\.json \\(1006 events\\)\n"
                         "prof: wrote t\\.2\\.json \\(5006 events\\)\n"
                         "prof: wrote t\\.3\\.json \\(5006 events\\)\n"
                         "prof: SIGSEGV: thread [0-9]+ is inside no region\n"
                         "prof: SIGSEGV: the process is crashing; up to ([0-9]+) events recorded since the last "
                         "trace are lost \\(a schedule writes one per cycle\\)\n", p.stderr)
        check(m and int(m[1]) == 2047, f"cycles: stderr {p.stderr}")
        check(sorted(os.listdir(".")) == ["t.1.json", "t.2.json", "t.3.json"], f"cycles: files {os.listdir('.')}")
        for f, n in (("t.1.json", 1000), ("t.2.json", 5000), ("t.3.json", 5000)):
            check(trace_names(f).get("work") == n, f"cycles: {f}: {trace_names(f)}")


def case_crash(binary):
    """A fault inside nested regions: the crashing thread's regions, then the
    other thread's (also while another thread holds the profiler's lock for
    a moment), then what is lost; then the previous handler (here the
    default action: death by SIGSEGV, or the engine's own, with the fault's
    address)."""
    def crashed(mode):
        empty_dir()
        p = run(binary, {"PROF_OUTPUT": "t.json"}, args=[mode])
        if "sanitized" in p.stdout:
            print("SKIP: a sanitizer owns SIGSEGV")
            sys.exit(77)
        lines = p.stderr.splitlines()
        check(os.listdir(".") == [], f"{mode}: files {os.listdir('.')}")
        return p, lines
    secs = r"\([0-9]+\.[0-9]{3} s\)"
    lost = ("prof: SIGSEGV: the process is crashing; up to [0-9]+ events recorded since the last trace are lost "
            r"\(a schedule writes one per cycle\)")
    # and the same while another thread holds the profiler's lock for a moment
    for mode in ("nested", "busy"):
        p, lines = crashed(mode)
        check(p.returncode == -signal.SIGSEGV, f"{mode}: exit {p.returncode}: {p.stderr}")
        check(len(lines) == 3, f"{mode}: stderr {p.stderr}")
        inside = " > ".join(f"{n} {secs}" for n in ("train_step", "forward", "layer_3", "matmul"))
        check(re.fullmatch(f"prof: SIGSEGV: thread [0-9]+ \\(main\\) is inside {inside}", lines[0]), f"{mode}: {lines[0]}")
        inside = " > ".join(f"{n} {secs}" for n in ("load_batch", "read_file"))
        check(re.fullmatch(f"prof:   and thread [0-9]+ \\(loader\\) is inside {inside}", lines[1]),
              f"{mode}: {lines[1]}")
        check(re.fullmatch(lost, lines[2]), f"{mode}: {lines[2]}")
    # 100 deep: the outermost 64 frames, and that there are more
    p, lines = crashed("deep")
    check(p.returncode == -signal.SIGSEGV and len(lines) == 2, f"deep: exit {p.returncode}: {p.stderr}")
    inside = " > ".join([f"level {secs}"] * 64)
    check(re.fullmatch(f"prof: SIGSEGV: thread [0-9]+ \\(main\\) is inside {inside} > \\(deeper ones not kept\\)",
                       lines[0]), f"deep: {lines[0][:300]}")
    # the engine's handler runs after the report, with the fault's siginfo
    p, lines = crashed("chained")
    check(p.returncode == 42 and p.stdout == "engine handler: fault at 0x10\n", f"chained: exit {p.returncode}, "
          f"stdout {p.stdout!r}, stderr {p.stderr}")
    check(len(lines) == 3 and lines[0].startswith("prof: SIGSEGV: thread ") and " > matmul (" in lines[0] and
          re.fullmatch(lost, lines[2]), f"chained: stderr {p.stderr}")


def case_watchdog(binary):
    """A worker blocked forever inside a region, the main thread going on:
    one watchdog report and dump, after the last step and no sooner than
    PROF_WATCHDOG by the watchdog's own count, naming the region and the
    thread; the main thread never stops (it records after the dump)."""
    empty_dir()
    env = {"PROF_OUTPUT": "t.json", "PROF_FLIGHT": "5", "PROF_WATCHDOG": "1", "PROF_FLIGHT_SLOW": "0"}
    p = run(binary, env)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    m = re.fullmatch(r"dump after ([0-9.]+) s, main went on ([0-9]+)\n", p.stdout)
    check(m and float(m[1]) > 0 and int(m[2]) > 0, f"stdout {p.stdout!r}")
    check(os.listdir(".") == ["t.hang-20.json"], f"files {os.listdir('.')}")
    lines = p.stderr.splitlines()
    secs = r"\([0-9]+\.[0-9]{3} s\)"
    m = re.fullmatch(r"prof: watchdog: no PROF_STEP for ([0-9.]+) s \(step 20 is running\); "
                     "what each thread is inside now:", lines[0])
    check(m and float(m[1]) >= 1.0, f"stderr {p.stderr}")
    threads = [l for l in lines if l.startswith("prof: watchdog:   thread")]
    stuck = [l for l in threads if re.fullmatch(f"prof: watchdog:   thread [0-9]+ \\(allreduce\\) is inside "
                                                f"collective {secs} > wait_peer {secs}", l)]
    others = [l for l in threads if l not in stuck]   # the main thread, if inside host_work just then
    check(len(stuck) == 1 and all(re.fullmatch(f"prof: watchdog:   thread [0-9]+ \\(main\\) is inside host_work {secs}",
                                               l) for l in others), f"stderr {p.stderr}")
    check(lines[1 + len(threads)] == "prof: watchdog: dumping steps 15 to 20 and the regions open now" and
          re.fullmatch(r"prof: wrote t\.hang-20\.json \([0-9]+ events\)", lines[2 + len(threads)]) and
          len(lines) == 3 + len(threads), f"stderr {p.stderr}")
    d = load("t.hang-20.json")
    check((d["prof_dump_reason"], d["prof_dump_step"], d["prof_dump_first_step"]) == ("hang", 20, 15),
          f"header {d.get('prof_dump_reason')} {d.get('prof_dump_step')} {d.get('prof_dump_first_step')}")
    xs = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    steps = sorted(e["name"] for e in xs if e["name"].startswith("ProfilerStep#"))
    check(steps == [f"ProfilerStep#{s}" for s in range(15, 20)], f"steps {steps}")
    tid = {e["args"]["name"]: e["tid"] for e in d["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"}
    for name in ("collective", "wait_peer"):
        mine = [e for e in xs if e["name"] == name]
        open_ = [e for e in mine if e.get("args", {}).get("open") == "still running at the end of this trace"]
        check(len(open_) == 1 and open_[0]["tid"] == tid["allreduce"], f"{name}: open {open_}")
        check(len(mine) >= 6, f"{name}: {len(mine)} events (5 steps whole, and the open one)")
    c, w = (next(e for e in xs if e["name"] == n and "open" in e.get("args", {})) for n in ("collective", "wait_peer"))
    check(c["ts"] <= w["ts"] and w["ts"] + w["dur"] <= c["ts"] + c["dur"] + 1e-3, f"wait_peer outside collective: {c} {w}")
    # without the flight recorder: the same report (threads by their names,
    # though no cycle has been collected yet), said in PROF_LOG's file, which
    # the main thread reads until it is there; and no dump: only the run's
    # trace, at its end
    empty_dir()
    del env["PROF_FLIGHT"]
    p = run(binary, dict(env, PROF_LOG="wd.log"))
    check(p.returncode == 0 and re.fullmatch(r"dump after -1\.000 s, main went on [1-9][0-9]*\n", p.stdout),
          f"no flight: exit {p.returncode}, stdout {p.stdout!r}")
    check(sorted(os.listdir(".")) == ["t.json", "wd.log"], f"no flight: files {os.listdir('.')}")
    lines = [l for l in open("wd.log").read().splitlines() if l.startswith("prof: watchdog:")]
    threads = [l for l in lines if l.startswith("prof: watchdog:   thread")]
    check(len(lines) == 1 + len(threads) and any(re.fullmatch(
        f"prof: watchdog:   thread [0-9]+ \\(allreduce\\) is inside collective {secs} > wait_peer {secs}", l)
        for l in threads), f"no flight: the log {lines}")


def case_dlclose(binary, plugin):
    # Two copies in one process, one unloaded while its thread lives on. That
    # thread's buffer (one chunk and its struct) stays behind, as the README
    # says, which LeakSanitizer would report.
    # The plugin's threads, its watchdog among them with PROF_WATCHDOG, are
    # all gone when dlclose returns: the count after it is the host's and
    # the worker's, and the plugin held one more thread with a watchdog.
    asan = os.environ.get("ASAN_OPTIONS", "")
    held = {}
    for wd in ("", "1"):
        empty_dir()
        env = {"ASAN_OPTIONS": asan + ":detect_leaks=0"}
        if wd:
            env["PROF_WATCHDOG"] = wd
        p = run(binary, env, args=[plugin])
        m = re.fullmatch(r"threads ([0-9]+) loaded ([0-9]+) unloaded ([0-9]+)\nok\n", p.stdout)
        check(p.returncode == 0 and m, f"PROF_WATCHDOG={wd}: exit {p.returncode}, stdout {p.stdout!r}: {p.stderr}")
        before, loaded, after = map(int, m.groups())
        check(after == before + 1 and loaded >= before + 2, f"PROF_WATCHDOG={wd}: threads {before} before dlopen, "
              f"{loaded} loaded, {after} after dlclose (the worker's, which outlives it, is one)")
        held[wd] = loaded - before - 1
    check(held["1"] == held[""] + 1, f"the plugin's threads: {held[''] } and {held['1']} with PROF_WATCHDOG")
    files = sorted(os.listdir("."))
    check(len(files) == 2, f"files {files}")
    host, copy2 = files[1], files[0]            # prof_trace_<pid>-2.json sorts first
    check(copy2 == host.replace(".json", "-2.json"), f"files {files}")
    check(trace_names(host) == {"host": 5, "host_thread": 1}, f"host's trace {trace_names(host)}")
    check(trace_names(copy2) == {"plugin_work": 100}, f"plugin's trace {trace_names(copy2)}")
    said = [l for l in p.stderr.splitlines() if "copy" in l]
    check(said == ["prof: this is copy 2 of prof.h in this process (a library with its own PROF_IMPLEMENTATION): "
                   "its traces get '-2' before the extension"], f"stderr {p.stderr}")


def case_plugins(binary, *plugins):
    # Libraries with their own prof.h beside the program's, 4 copies of the
    # plugin: each loads (its TLS fits glibc's static reserve; robust_linkage
    # checks its size, with -DPROF_NVTX too), records into its own copy and
    # writes its own trace, numbered in load order. The program's thread
    # recorded into each copy and outlives its unloading: its buffer there
    # stays behind (see case_dlclose), which LeakSanitizer would report.
    asan = os.environ.get("ASAN_OPTIONS", "")
    p = run(binary, {"ASAN_OPTIONS": asan + ":detect_leaks=0"}, args=list(plugins))
    check(p.returncode == 0 and p.stdout == "ok\n", f"exit {p.returncode}: {p.stderr}")
    files = sorted(os.listdir("."))
    copies = 4 * len(plugins)
    check(len(files) == 1 + copies, f"files {files}")
    host = [f for f in files if not re.search(r"-\d+\.json$", f)]
    check(len(host) == 1 and trace_names(host[0]) == {"host": 1}, f"host's trace: {host}")
    for n in range(2, 2 + copies):      # copy n, loaded (n-1)-th, recorded 10(n-1) regions
        copy = host[0].replace(".json", f"-{n}.json")
        check(copy in files and trace_names(copy) == {"plugin_work": 10 * (n - 1)},
              f"copy {n}: {copy in files and trace_names(copy)}")
    print(f"plugins: {copies} copies of {len(plugins)} plugin(s) loaded, each with its own trace")


def case_races(binary):
    # concurrent steps, and exit() during a step; the sanitizers judge races
    for clock in ("tsc", "monotonic"):
        empty_dir()
        p = run(binary, {"PROF_SCHEDULE": "active=1", "PROF_OUTPUT": "t.json", "PROF_CLOCK": clock})
        check(p.returncode == 0 and "Sanitizer" not in p.stderr, f"{clock}: exit {p.returncode}: {p.stderr}")
        traces = [f for f in os.listdir(".") if f.endswith(".json")]
        check(len(traces) >= 50, f"{clock}: {len(traces)} traces")
        # every file at its final path is whole (a window between two
        # threads' steps may be empty)
        for f in traces:
            check(isinstance(load(f)["traceEvents"], list), f)


def case_killed(binary):
    """SIGKILL mid-run: the streamed .pftrace holds every step whose part was
    written, each whole (200 regions, 100 with their argument, nested in
    their step); only a last packet cut by the kill can be lost."""
    import pftrace
    if pftrace.pb is None:
        print("SKIP: the perfetto package (tests/readers/requirements.txt) is not installed")
        sys.exit(77)
    import threading
    proc = subprocess.Popen([binary], env=clean_env({"PROF_OUTPUT": "k.pftrace", "PROF_BUFFER_MB": "1"}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    late = threading.Timer(30, proc.kill)       # a run that never reaches step 5 says so, not ctest's timeout
    late.start()
    reached = False
    for line in proc.stdout:
        if line.strip() == "step 5":
            reached = True
            break
    late.cancel()
    proc.kill()
    proc.wait(timeout=60)
    err = proc.stderr.read()
    check(reached, f"the run never said 'step 5' in 30 s (exit {proc.returncode}); stderr: {err[-2000:]}")
    check(proc.returncode == -signal.SIGKILL, f"exit {proc.returncode}; stderr: {err[-2000:]}")
    raw = open("k.pftrace", "rb").read()

    def whole_steps(data):
        t = pftrace.decode_pftrace(data, truncated_ok=True)
        steps = sorted(int(k[1].split("#")[1]) for k in t.slices if k[1].startswith("ProfilerStep#"))
        check(steps == list(range(len(steps))), f"steps in the file: {steps}")
        for n in steps:
            s = next(k for k in t.slices if k[1] == f"ProfilerStep#{n}")
            inside = [k for k in t.slices.elements() if k[1] in ("forward", "matmul") and s[2] <= k[2] and
                      k[2] + k[3] <= s[2] + s[3]]
            fwd = [k for k in inside if k[1] == "forward"]
            check(len(fwd) == 100 and len(inside) == 200, f"step {n}: {len(fwd)} forward, {len(inside)} regions")
            check(sorted(dict(k[4])["i"] for k in fwd) == list(range(100)), f"step {n}: forward's arguments")
        return t, steps

    t, steps = whole_steps(raw)
    check(len(steps) >= 6, f"steps 0 to 5 were flushed before the kill, the file has {steps}")
    # a kill can cut the file anywhere: each cut loses only its last packet
    # and the steps it had not closed
    for k in range(1, 41):
        whole_steps(raw[:len(raw) * k // 41])
    print(f"killed after step {len(steps) - 1}'s part: {len(steps)} whole steps in the file, "
          f"{t.cut} bytes of a cut packet, {t.nested} nested slices; 40 cuts of it read back")


def checks():
    """The cases this file checks: the CASE of each case_CASE."""
    return {n[len("case_"):] for n, f in globals().items() if n.startswith("case_") and callable(f)}


def check_table(cases):
    """CASES, the programs tests/CMakeLists.txt registers, each have a
    check here, and each check here its program."""
    for case in sorted(set(cases) - checks()):
        fail(f"tests/robustness/{case}.c is the case robust_{case}, but check.py has no check case_{case}")
    for case in sorted(checks() - set(cases)):
        fail(f"check.py checks case_{case}, but no tests/robustness/{case}.c is registered as robust_{case}")
    print(f"ok: {len(cases)} cases, each with its check")


def main():
    if sys.argv[1] == "--table":
        check_table(sys.argv[2:])
        return
    case, binary = sys.argv[1], os.path.abspath(sys.argv[2])
    fn = globals().get("case_" + case)
    if not fn:
        fail(f"check.py has no check case_{case} of tests/robustness/{case}.c")
    fn(binary, *map(os.path.abspath, sys.argv[3:]))
    print(f"ok: {case}")


if __name__ == "__main__":
    main()
