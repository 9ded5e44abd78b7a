#!/usr/bin/env python3
"""Runs examples/train_mlp_mpi under MPI and checks the ranks' traces.

    check_mpi.py --np N --mpiexec PATH [--prof PROF] BINARY

In the current directory (a scratch directory, emptied by the caller):
  1. mpiexec -n N BINARY 16: 16 steps, two recorded cycles (steps 6-8 and
     12-14); the program itself checks that every rank ends with the same
     weights, and only rank 0 prints the table;
  2. each rank's trace of each cycle, parsed by Python's json: distributedInfo
     with this rank before traceEvents (as HTA's regex finds it), the rank in
     the process name, the cycle's steps, one allreduce region and one
     prof_sync per step, the same sync numbers on every rank;
  3. with --prof: prof merge on cycle 1's files, each first put on a clock
     seconds off the others (as on different hosts), gives one trace with a
     process per rank (pid = rank), each rank's events all moved by one
     offset that puts it back on the true clock as closely as its barrier
     exits allow, and the sync points in their order: every rank's sync K
     before any rank's sync K+1, as on the true clock, where a barrier
     stands between them (unchecked with more ranks than CPUs or with
     --no-spread-check). The largest spread is printed, as is the spread
     before merging;
  4. HTA's TraceAnalysis loads cycle 1's files from a directory as N ranks
     (tests/readers/check_hta.py). Exit 77 (skipped) when HTA is not
     installed in this Python (run_tests.sh's venv has it).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_case import check, contains, fail, load, xs  # noqa: E402

STEPS = 16
CYCLES = {1: [6, 7, 8], 2: [12, 13, 14]}  # the program's schedule over 16 steps
# The MLP's parameters, 32 -> 128 -> 128 -> 8 with biases, as float32: what
# each step's allreduce sums.
GRAD_BYTES = 4 * ((32 + 1) * 128 + (128 + 1) * 128 + (128 + 1) * 8)

# How the tests launch MPI, in one place. Open MPI must be allowed what a CI
# container does: run as root, put more ranks than cores on the machine (4 on
# 2), and do without CMA single-copy transfers (process_vm_readv needs ptrace
# rights that containers often lack). All ranks are on this machine, so the
# shared-memory transport is the only one needed; the TCP one is left out
# (its add_procs and del_procs take two locks in opposite orders, which
# ThreadSanitizer reports as a potential deadlock inside Open MPI). Set in
# the environment, not as flags, so that another MPI's mpiexec (MPICH's needs
# none of them) ignores them.
OPEN_MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_btl": "self,vader",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
}


def launch(mpiexec, np, binary):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    env.update(OPEN_MPI_ENV)
    cmd = [mpiexec, "-n", str(np), binary, str(STEPS)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    check(p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def abs_ns(d, e):
    """An event's time in ns on its trace's clock: baseTimeNanoseconds + ts."""
    return d["baseTimeNanoseconds"] + round(e["ts"] * 1000)


def sync_ns(d):
    """{sync number: time in ns} of one rank's trace."""
    return {e["args"]["sync"]: abs_ns(d, e) for e in d["traceEvents"] if e.get("cat") == "prof_sync"}


def spreads(times_by_rank):
    """{sync number: the latest minus the earliest rank's time of it}."""
    return {k: max(t[k] for t in times_by_rank) - min(t[k] for t in times_by_rank) for k in times_by_rank[0]}


def check_rank_trace(path, rank, np, steps):
    raw = open(path, "rb").read()
    d = load(path)
    name = os.path.basename(path)
    check(d.get("distributedInfo") == {"backend": "unknown", "rank": rank, "world_size": np},
          f"{name}: distributedInfo {d.get('distributedInfo')}")
    keys = list(d)
    check(keys.index("distributedInfo") < keys.index("traceEvents"), f"{name}: distributedInfo after traceEvents")
    m = re.search(rb'"rank":\s+(\d+)', raw)  # HTA's regex: the first match names the rank
    check(m and int(m.group(1)) == rank and m.start() < raw.index(b'"traceEvents"'), f"{name}: HTA's rank regex")

    procs = [e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    check(len(procs) == 1 and procs[0].endswith(f" rank {rank}"), f"{name}: process name {procs}")
    threads = {e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    check({"main", "dataloader"} <= threads, f"{name}: threads {threads}")

    step_events = [e for e in xs(d) if e["name"].startswith("ProfilerStep#")]
    got = sorted(int(e["name"][13:]) for e in step_events)
    check(got == steps, f"{name}: steps {got}, expected {steps}")
    by_step = {int(e["name"][13:]): e for e in step_events}

    # one allreduce of all the gradients in every step
    ar = xs(d, "allreduce")
    check(len(ar) == len(steps), f"{name}: {len(ar)} allreduce regions for {len(steps)} steps")
    for s, st in by_step.items():
        inside = [e for e in ar if contains(st, e)]
        check(len(inside) == 1, f"{name}: {len(inside)} allreduce regions in step {s}")
        check(inside[0].get("args") == {"bytes": GRAD_BYTES}, f"{name}: allreduce args {inside[0].get('args')}")
    check(len(xs(d, "barrier")) == len(steps), f"{name}: {len(xs(d, 'barrier'))} barrier regions")
    check(xs(d, "forward") and xs(d, "optimizer_step"), f"{name}: model regions missing")

    # the program syncs at the start of every step, sync K in step K
    syncs = [e for e in d["traceEvents"] if e.get("cat") == "prof_sync"]
    for e in syncs:
        check(e["ph"] == "i" and e["s"] == "p" and e["name"] == "prof_sync", f"{name}: sync event {e}")
        k = e["args"]["sync"]
        check(k in by_step and by_step[k]["ts"] <= e["ts"] <= by_step[k]["ts"] + by_step[k]["dur"],
              f"{name}: sync {k} at {e['ts']} is not in step {k}")
    check(sorted(e["args"]["sync"] for e in syncs) == steps, f"{name}: sync numbers {[e['args'] for e in syncs]}")
    return d


def clock_skew_ns(r):
    """Rank r's made-up clock error: 0, -1.23 s, +2.47 s, -3.70 s, ..."""
    return (-1) ** r * r * 1_234_567_891


def check_merge(prof, files, np, rank_traces, no_spread_check):
    # The ranks here share one machine's clock, on which a merge that ignored
    # the sync points would pass. So each rank's trace is first put on a clock
    # of its own, as on hosts whose clocks disagree by seconds: its
    # baseTimeNanoseconds moved by clock_skew_ns(r), nothing else changed.
    os.makedirs("skewed")
    skewed = []
    for r, f in enumerate(files):
        text = open(f, encoding="utf-8").read()
        text, n = re.subn(r'"baseTimeNanoseconds": (\d+)',
                          lambda m: f'"baseTimeNanoseconds": {int(m.group(1)) + clock_skew_ns(r)}', text, count=1)
        check(n == 1, f"{f}: no baseTimeNanoseconds")
        skewed.append(os.path.join("skewed", f))
        open(skewed[-1], "w", encoding="utf-8").write(text)

    out = "merged.json"
    cmd = [prof, "merge", "-o", out] + skewed
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    with open(out, "rb") as f:
        d = json.loads(f.read().decode("utf-8"))
    timed = [e for e in d["traceEvents"] if e["ph"] in "XiC"]
    pids = sorted({e["pid"] for e in timed})
    check(pids == list(range(np)), f"merged: pids {pids}, expected one CPU process per rank 0..{np - 1}")
    names = {e["pid"]: e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    check(all(f"rank {r}" in names.get(r, "") for r in range(np)), f"merged: process names {names}")

    # Every event of a rank, in its order, moved by one offset. Against the
    # unskewed trace, that offset is how far the merge put the rank from the
    # true (shared) clock.
    error = []
    for r in range(np):
        mine = [e for e in timed if e["pid"] == r]
        own = [e for e in rank_traces[r]["traceEvents"] if e["ph"] in "XiC"]
        check([e["name"] for e in mine] == [e["name"] for e in own],
              f"merged: rank {r}'s events differ from its trace's ({len(mine)} and {len(own)})")
        shifts = {abs_ns(d, m) - abs_ns(rank_traces[r], o) for m, o in zip(mine, own)}
        check(len(shifts) == 1, f"merged: rank {r} moved by {len(shifts)} different offsets")
        error.append(shifts.pop())

    # Sync points can place a rank only as well as the ranks left the barrier
    # together: off by no more than its barrier exits were from rank 0's. A
    # merge that ignored them would be off by the made-up seconds.
    raw = [sync_ns(t) for t in rank_traces]
    for r in range(1, np):
        bound = max(abs(raw[r][k] - raw[0][k]) for k in raw[0])
        check(abs(error[r] - error[0]) <= bound + 1,
              f"merged: rank {r} is {(error[r] - error[0]) / 1000:.3f} us off the true clock (its clock was "
              f"{clock_skew_ns(r) / 1e9:+.3f} s off), more than its barrier exits were apart ({bound / 1000:.3f} us)")

    merged = []
    for r in range(np):
        t = {}
        for e in timed:
            if e["pid"] == r and e.get("cat") == "prof_sync":
                check(e["args"]["sync"] not in t, f"merged: rank {r} has sync {e['args']['sync']} twice")
                t[e["args"]["sync"]] = abs_ns(d, e)
        merged.append(t)
    check(all(sorted(t) == sorted(raw[0]) for t in merged), f"merged: sync numbers per rank {merged}")
    after, before = spreads(merged), spreads(raw)
    worst = max(after.values())
    print(f"merged: {np} ranks on clocks up to {max(abs(clock_skew_ns(r)) for r in range(np)) / 1e9:.2f} s apart, "
          f"each placed within {max(abs(x - error[0]) for x in error) / 1000:.1f} us of the true clock; "
          f"largest spread of a sync point between ranks {worst / 1000:.1f} us "
          f"(barrier exits on the true clock: {max(before.values()) / 1000:.1f} us)")

    # The sync points in order across the ranks: on the true clock each
    # rank's sync K comes before the barrier of step K+1, which every rank
    # leaves before its sync K+1; a merge that placed a rank off by more
    # than that step puts them out of order. With more ranks than CPUs, and
    # under a sanitizer (slower ranks, its own threads), a rank may lose its
    # CPU at a barrier's exit for longer than a step: there the spread is
    # printed only.
    cpus = len(os.sched_getaffinity(0))
    if np > cpus:
        no_spread_check = f"{np} ranks on {cpus} CPUs"
    if no_spread_check:
        print(f"merged: the sync points' order not checked: {no_spread_check}")
        return
    order = sorted(merged[0])
    for k, k1 in zip(order, order[1:]):
        last = max(t[k] for t in merged)
        first = min(t[k1] for t in merged)
        check(last < first, f"merged: sync {k} of some rank is {(last - first) / 1000:.1f} us after sync {k1} of "
              f"another: out of order")


def check_hta(files, np):
    try:
        import hta  # noqa: F401
    except ImportError:
        print(f"SKIP: HTA is not installed in {sys.executable} (tests/readers/setup_venv.sh); "
              "everything before this passed")
        sys.exit(77)
    hta_dir = "hta"
    os.makedirs(hta_dir)
    for f in files:
        shutil.copy(f, hta_dir)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readers", "check_hta.py")
    cmd = [sys.executable, script, hta_dir, "--expect-ranks", str(np),
           "--expect-names", "allreduce,barrier,forward,backward,optimizer_step"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(r.stdout.strip())
    check(r.returncode == 0, f"check_hta.py failed:\n{r.stdout}\n{r.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--prof", default="", help="the prof tool; empty: none in this build, the merge not checked")
    ap.add_argument("--no-spread-check", default="", metavar="REASON",
                    help="print the merged sync spread but do not check it, saying why")
    ap.add_argument("binary")
    args = ap.parse_args()
    np = args.np

    p = launch(args.mpiexec, np, os.path.abspath(args.binary))
    check("weights identical on every rank" in p.stdout, f"no weight check in the output:\n{p.stdout}")
    check(p.stderr.count("Self CPU time total:") == len(CYCLES), f"rank 0's tables, one per cycle:\n{p.stderr}")

    want = sorted(f"train_mlp_mpi_rank{r}.{c}.json" for r in range(np) for c in CYCLES)
    got = sorted(f for f in os.listdir(".") if f.endswith(".json"))
    check(got == want, f"trace files {got}, expected {want}")

    traces = {}
    for c, steps in CYCLES.items():
        traces[c] = [check_rank_trace(f"train_mlp_mpi_rank{r}.{c}.json", r, np, steps) for r in range(np)]
        print(f"cycle {c}: {np} rank traces, steps {steps}; ranks left the barriers at most "
              f"{max(spreads([sync_ns(d) for d in traces[c]]).values()) / 1000:.1f} us apart")

    files = [f"train_mlp_mpi_rank{r}.1.json" for r in range(np)]
    if args.prof:
        check(os.path.exists(args.prof), f"{args.prof} is not built (cmake --build ... --target prof_cli)")
        check_merge(args.prof, files, np, traces[1], args.no_spread_check)
    else:
        print("merge: not checked, this build has no prof tool (target prof_cli)")
    check_hta(files, np)
    print(f"ok: mpi np={np}")


if __name__ == "__main__":
    try:
        main()
    except subprocess.TimeoutExpired as e:
        fail(f"timed out: {e}")
