#!/usr/bin/env python3
"""Runs one of the example programs (examples/) and checks what it wrote;
examples/CMakeLists.txt registers each as example_CASE.

    check_example.py CASE PROGRAM

The checks of the scenarios' traces (tests/run_case.py) serve here too."""
import glob
import os
import re
import subprocess
import sys
import tempfile

from run_case import check, check_mem_shape, contains, fail, load, mems, xs


EXAMPLE_REGIONS = {
    "make_datasets", "load_batch", "shuffle", "wait_free_slot", "loader_acquire", "forward", "linear1", "relu1",
    "linear2", "relu2", "linear3", "loss", "backward", "linear3_bwd", "relu2_bwd", "linear2_bwd", "relu1_bwd",
    "linear1_bwd", "optimizer_step", "matmul_nn", "matmul_nt", "matmul_tn", "evaluate",
}


def case_example(binary, tmp):
    """The example training program with its own schedule (skip_first=5,
    wait=5, warmup=2, active=5, repeat=2): two cycles, every region, step,
    thread and counter in each, and the table printed per cycle."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run([binary, "30"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"example exited {p.returncode}: {p.stderr}")
    files = sorted(f for f in os.listdir(tmp) if f.endswith(".json"))
    check(files == ["train_mlp_trace.1.json", "train_mlp_trace.2.json"], f"files {files}")
    # the profiler speaks on stderr only: stdout is the program's own
    check(p.stderr.count("Self CPU time total:") == 2, f"tables printed: {p.stderr}")
    check("prof" not in p.stdout and "Self CPU" not in p.stdout, f"profiler output on stdout: {p.stdout}")
    # its buffers go through PROF_ALLOC / PROF_FREE: memory columns, a peak
    # per cycle, and nothing left at exit
    check(p.stderr.count("  CPU Mem  Self CPU Mem    # of Calls") == 2, f"memory columns: {p.stderr}")
    check(len(re.findall(r"^prof: cycle [12] peak CPU memory [0-9.]+ [KMG]?b at '[a-z_]+' \(step \d+\)$",
                         p.stderr, re.M)) == 2, f"peak lines: {p.stderr}")
    check("never freed" not in p.stderr and "bad memory" not in p.stderr, f"example leaks: {p.stderr}")
    # the loader waits across steps: a wait open at a save is in its trace, not lost
    check("in no trace" not in p.stderr, f"a region lost at a cycle's edge: {p.stderr}")
    for f, first in zip(files, (12, 24)):
        d = load(os.path.join(tmp, f))
        names = {e["name"] for e in xs(d)}
        missing = EXAMPLE_REGIONS - names - {"make_datasets", "evaluate", "shuffle"}
        check(not missing, f"{f}: regions missing: {sorted(missing)}")
        steps = sorted(int(e["name"][13:]) for e in xs(d) if e["name"].startswith("ProfilerStep#"))
        check(steps == list(range(first, first + 5)), f"{f}: steps {steps}")
        threads = {e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
        check({"main", "dataloader"} <= threads, f"{f}: threads {threads}")
        losses = [e for e in d["traceEvents"] if e["ph"] == "C" and e["name"] == "loss"]
        check(len(losses) == 5, f"{f}: {len(losses)} loss samples")
        mm = [e for e in xs(d) if e["name"].startswith("matmul")]
        check(mm and all({"M", "N", "K", "flops"} <= set(e.get("args", {})) for e in mm), f"{f}: matmul args")
        check(d["prof_dropped_events"] == 0, f"{f}: dropped events")
        check_mem_shape(d)
        main = [e["tid"] for e in d["traceEvents"] if e["ph"] == "M" and e["args"].get("name") == "main"]
        m = mems(d, main[0])    # the trainer's steps free what they allocate (the loader may exit in a cycle)
        check(len(m) >= 5 * 10 and sum(e["args"]["Bytes"] for e in m) == 0, f"{f}: {len(m)} memory events")
    # PROF_LOG: all the profiler says goes to that file, none to stdout or
    # stderr (17 steps: the first cycle)
    env["PROF_LOG"] = os.path.join(tmp, "prof_{pid}.log")
    p = subprocess.run([binary, "17"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"example exited {p.returncode}: {p.stderr}")
    logs = glob.glob(os.path.join(tmp, "prof_*.log"))
    check(len(logs) == 1 and re.search(r"prof_\d+\.log$", logs[0]), f"PROF_LOG files {logs}")
    log = open(logs[0]).read()
    check(log.count("Self CPU time total:") == 1 and log.count("prof: wrote train_mlp_trace.") == 1,
          f"PROF_LOG holds: {log}")
    check("prof" not in p.stdout and "prof" not in p.stderr, f"with PROF_LOG: {p.stdout} {p.stderr}")
    # the README's "one trace of every step": one file, steps 0 to 59; the
    # frees after the loop are in no step and make no trace of their own,
    # which one line says (the loader waits across steps: nothing is lost)
    del env["PROF_LOG"]
    for f in glob.glob(os.path.join(tmp, "*.json")):
        os.remove(f)
    p = subprocess.run([binary, "60"], cwd=tmp, env=dict(env, PROF_SCHEDULE="active=60", PROF_OUTPUT="all.json"),
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"example exited {p.returncode}: {p.stderr}")
    files = sorted(f for f in os.listdir(tmp) if f.endswith(".json"))
    check(files == ["all.1.json"], f"active=60: files {files}")
    steps = sorted(int(e["name"][13:]) for e in xs(load(os.path.join(tmp, files[0]))) if e["name"].startswith("ProfilerStep#"))
    check(steps == list(range(60)), f"active=60: steps {steps}")
    said = re.findall(r"^prof: (\d+) events? after the last step of cycle 1, in no step: not written \(a trace holds "
                      r"steps\)$", p.stderr, re.M)
    check(len(said) == 1 and int(said[0]) > 0, f"active=60: stderr {p.stderr}")
    check("in no trace" not in p.stderr, f"active=60: a region lost: {p.stderr}")


def case_readers(binary, tmp):
    """TensorBoard's plugin finds the PROF_TB_DIR run and builds its overview
    with our steps and its operator view with our regions; HTA loads the
    PROF_OUTPUT traces of two ranks from a directory, rank 1's gzip JSON; the
    plugin also reads a gzip JSON trace named as it wants one. (Nesting is not asked of HTA's call
    graph: HTA rounds starts up and ends down to whole microseconds, so
    siblings less than 1 us apart can come out nested; the exact nesting is
    checked on the JSON in case_regions.)"""
    try:
        import hta  # noqa: F401
        import torch_tb_profiler  # noqa: F401
    except ImportError:
        print("SKIP: the trace readers are not installed (tests/readers/setup_venv.sh)")
        sys.exit(77)
    readers = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readers")
    tb = os.path.join(tmp, "tb", "train_mlp")
    hta_dir = os.path.join(tmp, "hta")
    os.makedirs(hta_dir)
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("PROF_")]:
        del env[k]
    env.update(PROF_SCHEDULE="skip_first=2,wait=1,warmup=1,active=3,repeat=1", WORLD_SIZE="2")
    for rank in (0, 1):  # two ranks as torchrun would start them; rank 0 also writes for TensorBoard
        env["RANK"] = str(rank)
        env["PROF_OUTPUT"] = os.path.join(hta_dir, "rank{rank}.json" + (".gz" if rank else ""))
        if rank == 0:
            env["PROF_TB_DIR"] = tb
        else:
            env.pop("PROF_TB_DIR")
        p = subprocess.run([binary, "20"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"example exited {p.returncode}: {p.stderr}")
    check(sorted(os.listdir(hta_dir)) == ["rank0.1.json", "rank1.1.json.gz"], f"rank files {os.listdir(hta_dir)}")
    tbgz = os.path.join(tmp, "tbgz", "gz_run")
    env.pop("RANK")
    env["PROF_OUTPUT"] = os.path.join(tbgz, "worker.{cycle}.pt.trace.json.gz")
    os.makedirs(tbgz)
    p = subprocess.run([binary, "20"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and os.listdir(tbgz) == ["worker.1.pt.trace.json.gz"], f"gzip run: {os.listdir(tbgz)}")
    tb_files = sorted(os.listdir(tb))
    check(len(tb_files) == 1 and all(re.fullmatch(r".+_\d+\.\d+\.pt\.trace\.json", f) for f in tb_files),
          f"TensorBoard files {tb_files}")
    ops = "forward,backward,linear1,relu1,linear3_bwd,optimizer_step,matmul_nn,load_batch"
    for cmd in ([sys.executable, os.path.join(readers, "check_tb.py"), os.path.dirname(tb),
                 "--expect-steps", "3", "--expect-ops", ops, "--expect-memory"],
                [sys.executable, os.path.join(readers, "check_hta.py"), hta_dir, "--expect-ranks", "2",
                 "--expect-names", "forward,backward,optimizer_step"],
                [sys.executable, os.path.join(readers, "check_tb.py"), os.path.dirname(tbgz), "--expect-steps", "3"]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        print(r.stdout.strip())
        check(r.returncode == 0, f"{os.path.basename(cmd[1])} failed:\n{r.stdout}\n{r.stderr}")


def case_thread_pool(binary, tmp):
    """examples/thread_pool: 4 threads run a 5-op graph per token, a barrier
    after each op. Every thread has one graph region per token holding its 5
    op regions; the waiting is the graph's self time; each step holds every
    thread's graph region of its token; the table, by thread, is on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run([binary, "12", "4"], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"thread_pool exited {p.returncode}: {p.stderr}")
    check(p.stdout.startswith("12 tokens on 4 threads") and "prof" not in p.stdout, f"stdout: {p.stdout}")
    d = load(os.path.join(tmp, "thread_pool_trace.json"))
    names = {e["tid"]: e["args"]["name"] for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    check(sorted(names.values()) == ["worker-0", "worker-1", "worker-2", "worker-3"], f"threads {names}")
    ops = ["mul_mat_up", "add_bias", "gelu", "mul_mat_down", "soft_max"]
    steps = sorted((e for e in xs(d) if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    check([e["name"] for e in steps] == [f"ProfilerStep#{i}" for i in range(12)], "12 steps")
    waited = 0.0
    for tid in names:
        graphs = sorted((e for e in xs(d, "graph") if e["tid"] == tid), key=lambda e: e["ts"])
        check(len(graphs) == 12, f"{names[tid]}: {len(graphs)} graph regions")
        for g, st in zip(graphs, steps):
            check(contains(st, g), f"{names[tid]}: a graph region outside its step")
            inner = [e for e in xs(d) if e["tid"] == tid and e["name"] in ops and contains(g, e)]
            check(sorted(e["name"] for e in inner) == sorted(ops), f"{names[tid]}: ops {[e['name'] for e in inner]}")
            self_us = g["dur"] - sum(e["dur"] for e in inner)
            check(self_us >= 0, f"{names[tid]}: negative self time")
            waited += self_us
    check(waited > 0, "no time waiting at the barriers")
    rows = [l.split() for l in p.stderr.splitlines() if l.strip().startswith("graph ")]
    check(sorted(r[-3] for r in rows) == ["worker-0", "worker-1", "worker-2", "worker-3"],
          f"the table's graph rows by thread: {rows}")
    print(f"barrier waiting: {waited / 1000:.3f} ms over 4 threads and 12 tokens")


def main():
    case, program = sys.argv[1], os.path.abspath(sys.argv[2])
    fn = globals().get("case_" + case)
    if not fn:
        fail(f"check_example.py has no check case_{case} of the example test example_{case}")
    with tempfile.TemporaryDirectory() as tmp:
        fn(program, tmp)
    print(f"ok: {case}")


if __name__ == "__main__":
    main()
