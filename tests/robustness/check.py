#!/usr/bin/env python3
"""Robustness cases: each runs its program (tests/robustness/CASE.c) the way
the case needs and checks exactly what the promise says.

    check.py CASE BINARY         (in a scratch directory, emptied by the caller)
"""
import os
import resource
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from run_case import check, load  # noqa: E402


def run(binary, env=None, limit_bytes=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    full.update(env or {})

    def limit():
        if limit_bytes is not None:   # as a full disk does: writes fail (EFBIG), no signal
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return subprocess.run([binary], env=full, capture_output=True, text=True, timeout=60, preexec_fn=limit)


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
           "PROF_DISABLE": "yes\x1b[31m"}
    p = run(binary, env)
    check(p.returncode == 0, f"exit {p.returncode}")
    lines = p.stderr.splitlines()
    want = [
        "prof: PROF_DISABLE='yes\\x1b[31m' is not 0 or 1; ignoring it",
        "prof: PROF_SCHEDULE='active=1\\nwait=\\x01x' is not of the form "
        "skip_first=N,wait=N,warmup=N,active=N,repeat=N with active >= 1; ignoring it",
        "prof: PROF_TABLE='sort=" + "y" * 195 + "...(5005 bytes)' is not of the form sort=self_cpu|cpu_total|"
        "cpu_avg|cpu_min|cpu_max|calls|flops|name|self_gpu|gpu_total|gpu_avg|cpu_mem|self_cpu_mem|gpu_mem|"
        "self_gpu_mem,rows=N[,group=args|thread|args+thread][,ranks=all]; no table",
    ]
    check(lines[:3] == want, "messages:\n" + "\n".join(lines[:3]))
    check(len(load("t.json")["traceEvents"]) > 0, "no trace with the defaults")


def case_spanning(binary):
    import glob
    # a cycle per step: region i (1..10) began in step i-1, is written in step
    # i's trace from its start, marked; step 0's trace and step 11's have none
    p = run(binary, {"PROF_OUTPUT": "every.json", "PROF_SCHEDULE": "active=1"})
    check(p.returncode == 0 and p.stdout.split("\n")[0] == "clipped 10 lost 0", f"stdout {p.stdout} {p.stderr}")
    for f in sorted(glob.glob("every.*.json")):
        d = load(f)
        steps = [int(e["name"][13:]) for e in d["traceEvents"] if e["name"].startswith("ProfilerStep#")]
        loads = [e for e in d["traceEvents"] if e["name"] == "load"]
        want = 1 if steps and 1 <= steps[0] <= 10 else 0
        check(len(loads) == want and d["prof_clipped_regions"] == want, f"{f}: steps {steps}, loads {loads}")
        for e in loads:
            st = next(x for x in d["traceEvents"] if x["name"].startswith("ProfilerStep#"))
            check(e["args"] == {"clipped": "began before this trace"}, f"{f}: {e}")
            check(abs(e["ts"] - st["ts"]) < 0.002, f"{f}: clipped at {e['ts']}, the window at {st['ts']}")
    # wait, active, wait, ...: a region begun in an active step ends in a
    # wait step: counted and said, never silent (those begun in a wait step
    # record nothing: outside a window a region costs one branch)
    p = run(binary, {"PROF_OUTPUT": "alt.json", "PROF_SCHEDULE": "wait=1,active=1"})
    check(p.returncode == 0 and p.stdout.split("\n")[0] == "clipped 0 lost 5", f"stdout {p.stdout}")
    said = [l for l in p.stderr.splitlines() if "in steps not recorded" in l]
    check(len(said) == 5 and all(l == "prof: 1 region began in a saved cycle and ended after it, in steps not "
                                        "recorded: in no trace (close regions before PROF_STEP)" for l in said),
          f"stderr {p.stderr}")
    loads = sum(len([e for e in load(f)["traceEvents"] if e["name"] == "load"]) for f in glob.glob("alt.*.json"))
    check(loads == 0, f"{loads} load regions written")


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
    def counts(threads):
        p = subprocess.run([binary, str(threads)], env={k: v for k, v in os.environ.items() if not k.startswith("PROF_")},
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, f"{threads} threads: exit {p.returncode}: {p.stderr}")
        check(p.stderr == "", f"{threads} threads: stderr {p.stderr}")
        w = p.stdout.split()
        return dict(zip(w[::2], map(int, w[1::2])))
    # every region of every thread (tids are not reused within 5,000 threads)
    c = counts(5000)
    check((c["regions"], c["threads"], c["dropped"]) == (15000, 5000, 0), f"5,000 threads: {c}")
    # exited threads' memory comes back: 50,000 threads fit the default 64 MiB
    # (each held a 64 KiB chunk and a 4 KiB struct before: 267 MB, 1,024 kept)
    c = counts(50000)
    check((c["regions"], c["dropped"]) == (150000, 0), f"50,000 threads: {c}")
    check(c["sanitized"] or c["maxrss_mb"] < 64, f"50,000 threads: peak RSS {c['maxrss_mb']} MB")


def main():
    case, binary = sys.argv[1], os.path.abspath(sys.argv[2])
    globals()["case_" + case](binary)
    print(f"ok: {case}")


if __name__ == "__main__":
    main()
