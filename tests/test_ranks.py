#!/usr/bin/env python3
"""Checks prof merge's bounded memory and prof ranks (tools/prof), on
simulated ranks.

    test_ranks.py CASE PROF RANKS_SIM

RANKS_SIM is tests/ranks_sim.c: it launches N processes, each a rank that
links prof.h (PROF_SET_RANK, PROF_SYNC after a barrier the launcher plays)
and writes its own trace, with a known schedule (one rank computing longer
at one step, or hanging at one).

memory    64 ranks: prof merge (JSON, .pftrace) and prof ranks read them
          all with a peak RSS (the child's ru_maxrss) under a fixed bound
          far below the inputs' total, which the merge used to hold whole;
          the merged trace has every event of every rank, exactly, and the
          bytes of a merge of the traces held whole (given as pipes).
straggler 8 ranks, rank 5 computing 600 ms longer at step 3: prof ranks
          names rank 5 at step 3 and at no other step, with JSON, .json.gz
          and .pftrace traces alike; HTA still reads the ranks' files.
synthetic ranks written here with exact times (one in start order, one
          gzipped, one with a second thread): every step's line exact, the
          persistent straggler, the outliers; --table-out's CSV files exact.
duckdb    the README's query, run by DuckDB on --table-out's files of the
          synthetic ranks, names the stragglers prof ranks names (skipped,
          exit 77, without duckdb).
nccl      the synthetic ranks with NCCL's ranges (libprof_nvtx's) in their
          allreduce: each straggler's line names the collective.
hang      6 ranks, rank 4 stuck in data_load at step 2 while the others
          wait in allreduce > wait_peer: the watchdog's dump on every rank,
          grouped by what each is inside, JSON and .pftrace alike.
errors    bad input: one line on stderr and exit 2."""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pftrace  # noqa: E402
from run_case import sanitizer  # noqa: E402

MiB = 1 << 20


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(cmd, cwd):
    """Runs cmd; its stdout and stderr, once it exited 0."""
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"{' '.join(map(str, cmd))}: exit {p.returncode}:\n{p.stderr}")
    return p.stdout, p.stderr


def peak_rss(ranks_sim, cmd, cwd):
    """Runs cmd and returns its peak RSS in bytes, its stdout and stderr:
    ranks_sim rss runs it, so that its ru_maxrss is its own, not that of
    this Python it would have been forked from."""
    p = subprocess.run([ranks_sim, "rss", *cmd], cwd=cwd, capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"{' '.join(cmd)}: exit {p.returncode}:\n{p.stderr}")
    err, _, rss = p.stderr.rpartition("peak_rss_kib ")
    return int(rss) * 1024, p.stdout, err


def sim(ranks_sim, tmp, n, steps, *args, output="rank{rank}.json", env=None):
    """N simulated ranks writing into tmp (cleared of traces first)."""
    for f in os.listdir(tmp):
        if f.startswith(("rank", "h")):
            os.remove(os.path.join(tmp, f))
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run([ranks_sim, str(n), str(steps), *map(str, args)], cwd=tmp, capture_output=True, text=True,
                       env={**clean, "PROF_OUTPUT": output, **(env or {})}, timeout=300)
    check(p.returncode == 0, f"ranks_sim: exit {p.returncode}:\n{p.stderr}")
    return p.stderr


def events_of(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


# ---- memory ------------------------------------------------------------------

BOUND = 32 * MiB        # peak RSS allowed: prof merge used to hold every input whole


def case_memory(prof, ranks_sim, tmp):
    # 64 ranks, 20 steps of 600 regions: about 1.2 MB of JSON each (and
    # 1,400 regions: 0.6 MB of .pftrace); a sixth of that under a sanitizer.
    # Under ASan or TSan the runtime's own memory (shadow, quarantine) is
    # most of a process's RSS: the counts are checked there, the bound is not
    # (nor need the sizes show it).
    sanitized = sanitizer(prof) is not None

    def check_rss(rss, what):
        check(sanitized or rss < BOUND, f"{what}: peak RSS {rss >> 20} MiB, over {BOUND >> 20} MiB")

    scale = 6 if sanitized else 1
    sim(ranks_sim, tmp, 64, 20, 600 // scale)
    files = sorted(f for f in os.listdir(tmp) if f.startswith("rank"))
    check(len(files) == 64, f"{len(files)} traces")
    total = sum(os.path.getsize(os.path.join(tmp, f)) for f in files)
    check(sanitized or total > 2 * BOUND, f"the inputs ({total} bytes) are too small to tell")
    want = sum(len(events_of(os.path.join(tmp, f))) for f in files)

    rss, _, err = peak_rss(ranks_sim, [prof, "merge", "-o", "merged.json", *files], tmp)
    peaks = [rss]
    check_rss(rss, f"prof merge of {total >> 20} MiB")
    check(f"wrote merged.json: 64 ranks, {want} events" in err, f"event count: {err.splitlines()[-1]}")
    n = 0
    with open(os.path.join(tmp, "merged.json"), encoding="utf-8") as f:    # one event per line
        for line in f:
            n += line.startswith('{"ph"')
    check(n == want, f"merged trace: {n} events, the ranks' {want}")
    # the same bytes as a merge of the traces held whole: pipes cannot be
    # read twice, so prof merge reads each whole into memory first
    some = files[:8]
    run([prof, "merge", "-q", "-o", "windowed.json", *some], tmp)
    run(["bash", "-c", 'exec "$0" merge -q -o whole.json ' + " ".join(f"<(cat {f})" for f in some), prof], tmp)
    with open(os.path.join(tmp, "windowed.json"), "rb") as a, open(os.path.join(tmp, "whole.json"), "rb") as b:
        check(a.read().replace(b"windowed.json", b"whole.json") == b.read(), "a merge through the window differs")
    for f in ("merged.json", "windowed.json", "whole.json"):
        os.remove(os.path.join(tmp, f))

    rss, out, _ = peak_rss(ranks_sim, [prof, "ranks", "-j", "2", "."], tmp)
    peaks.append(rss)
    check_rss(rss, f"prof ranks of {total >> 20} MiB")
    check("64 ranks, steps 0 to 19" in out, out[:200])

    # the same ranks as .pftrace
    sim(ranks_sim, tmp, 64, 20, 1400 // scale, output="rank{rank}.pftrace")
    files = sorted(f for f in os.listdir(tmp) if f.startswith("rank"))
    total = sum(os.path.getsize(os.path.join(tmp, f)) for f in files)
    check(sanitized or total > BOUND, f"the .pftrace inputs ({total} bytes) are too small to tell")
    rss, _, err = peak_rss(ranks_sim, [prof, "merge", "-o", "merged.pftrace", *files], tmp)
    peaks.append(rss)
    check_rss(rss, f"prof merge of {total >> 20} MiB of .pftrace")
    check("wrote merged.pftrace: 64 ranks, " in err, err)
    os.remove(os.path.join(tmp, "merged.pftrace"))
    print(f"memory: 64 ranks, {want} JSON events, {total >> 20} MiB of .pftrace: peak RSS of prof merge, prof ranks, "
          f"prof merge (.pftrace): {', '.join(f'{p / MiB:.1f}' for p in peaks)} MiB "
          f"({'not bounded under a sanitizer' if sanitized else f'bound {BOUND >> 20} MiB'})")


# ---- the straggler, on simulated ranks ---------------------------------------

STRAGGLER = re.compile(r"^step (\d+): straggler rank (\d+): ", re.M)


def case_straggler(prof, ranks_sim, tmp):
    # Sleeps on a shared machine are late by a few ms, and a process's first
    # step holds its start (the profiler's, a sanitizer's runtime): step 0 is
    # not recorded (skip_first=1, as an engine's warm-up), and 600 ms is far
    # past the lateness.
    for output in ("rank{rank}.json", "rank{rank}.json.gz", "rank{rank}.pftrace"):
        sim(ranks_sim, tmp, 8, 7, "straggler=5:3:600", output=output, env={"PROF_SCHEDULE": "skip_first=1,active=100"})
        out, _ = run([prof, "ranks", "--min-lag", "300", "."], tmp)
        found = STRAGGLER.findall(out)
        check(found == [("3", "5")], f"{output}: stragglers {found}, not rank 5 at step 3 alone:\n{out}")
        line = next(l for l in out.splitlines() if l.startswith("step 3: straggler"))
        check(line.endswith("the others waited in allreduce"), line)
        for s in range(1, 7):
            check(re.search(rf"^step {s}$", out, re.M), f"{output}: step {s} missing")
        check(re.search(r"^  5 +\S+ +\S+ +\S+ +\S+ +\S+$", out, re.M), "each rank's row")
    # HTA reads the ranks' files as they are (one per rank, JSON)
    sim(ranks_sim, tmp, 8, 7, "straggler=5:3:600", env={"PROF_SCHEDULE": "skip_first=1,active=100"})
    hta = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readers", "check_hta.py")
    p = subprocess.run([sys.executable, hta, tmp, "--expect-ranks", "8"], capture_output=True, text=True, timeout=300)
    check(p.returncode in (0, 77), f"HTA: exit {p.returncode}:\n{p.stdout}\n{p.stderr}")
    print(f"straggler: rank 5 at step 3 and no other, in JSON, .json.gz and .pftrace; HTA: "
          f"{'read' if p.returncode == 0 else 'skipped'}")


# ---- synthetic ranks, exact ----------------------------------------------------

MS = 1_000_000
BASE = 1_800_000_000_000_000_000


def us(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


def synthetic_rank(rank, extra, start_order=False, loader=False, nccl=False):
    """10 steps: data_load 10 ms, compute 20 ms (+ extra[s] at step s,
    holding 4 layers), allreduce > wait_peer until the step's barrier at
    40 ms plus the step's slowest extra, its sync point, 1 ms more to the
    step's end. Events as prof.h writes them (children first), or parents
    first."""
    ev = [f'{{"ph":"M","name":"thread_name","pid":7,"tid":1,"ts":0.000,"args":{{"name":"main"}}}}']
    t = 0
    for s in range(10):
        slowest = max(e.get(s, 0) for e in EXTRA.values())
        dl, c0 = t, t + 10 * MS
        c1 = c0 + 20 * MS + extra.get(s, 0)
        barrier = t + 40 * MS + slowest
        end = barrier + 1 * MS
        group = []

        def x(name, a, b, tid=1, args=""):
            group.append((a, -(b - a), f'{{"ph":"X","cat":"user_annotation","name":"{name}","pid":7,"tid":{tid},'
                                        f'"ts":{us(a)},"dur":{us(b - a)}{args}}}'))
        x("data_load", dl, c0)
        for k in range(4):
            x("layer", c0 + k * MS, c0 + (k + 1) * MS)
        x("compute", c0, c1)
        x("allreduce", c1, barrier)
        x("wait_peer", c1 + 1000, barrier)
        if nccl:                                         # libprof_nvtx's record of NCCL's range
            x("ncclAllReduce", c1 + 500, barrier - 500,
              args=',"args":{"domain":"NCCL","Message size [bytes]":4194304,"Reduction operation":"Sum"}')
        if loader:
            x("prefetch", t + 2 * MS, t + 7 * MS, tid=2)
        group.append((barrier, 0, f'{{"ph":"i","s":"p","cat":"prof_sync","name":"prof_sync","pid":7,"tid":1,'
                                  f'"ts":{us(barrier)},"args":{{"sync":{s}}}}}'))
        x("ProfilerStep#%d" % s, t, end - 1)             # prof.h's JSON ends a step 1 ns early
        if start_order:
            group.sort(key=lambda g: (g[0], g[1]))
        else:                                            # by end, children first
            group.sort(key=lambda g: (g[0] - g[1], -g[0]))
        ev += [g[2] for g in group]
        t = end
    return ('{\n  "schemaVersion": 1,\n  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": 8},\n'
            '  "baseTimeNanoseconds": %d,\n  "traceEvents": [\n%s\n  ]\n}\n' % (rank, BASE, ",\n".join(ev)))


# rank 3 computes 30 ms more at steps 2, 5 and 7; rank 6 12 ms more at step 8
EXTRA = {3: {2: 30 * MS, 5: 30 * MS, 7: 30 * MS}, 6: {8: 12 * MS}}

def readme_query():
    """The straggler query the README shows (its sql block on ranks/*.csv)."""
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
    with open(readme, encoding="utf-8") as f:
        blocks = re.findall(r"```sql\n(.*?)```", f.read(), re.S)
    found = [b for b in blocks if "ranks/*.csv" in b]
    check(len(found) == 1, f"{len(found)} straggler queries in the README")
    return found[0]


def write_synthetic(tmp):
    for r in range(8):
        text = synthetic_rank(r, EXTRA.get(r, {}), start_order=r == 2, loader=r == 4)
        if r == 5:
            with gzip.open(os.path.join(tmp, "rank5.json.gz"), "wt") as f:
                f.write(text)
        else:
            with open(os.path.join(tmp, f"rank{r}.json"), "w") as f:
                f.write(text)


def case_synthetic(prof, _ranks_sim, tmp):
    write_synthetic(tmp)
    out, _ = run([prof, "ranks", "--table-out", "table", "."], tmp)
    lines = [l for l in out.splitlines() if re.match(r"step \d+: ", l)]
    want = []
    for s in range(10):
        lag = max(e.get(s, 0) for e in EXTRA.values())
        who = [r for r, e in EXTRA.items() if e.get(s, 0) == lag and lag]
        if who:
            work = 30 * MS + lag
            want.append(f"step {s}: straggler rank {who[0]}: work {work / MS:.3f}ms, {lag / MS:.3f}ms over the median "
                        f"of 8 ranks (30.000ms); the others waited in allreduce")
        else:
            want.append(f"step {s}: no straggler (the most work: rank 7, 0.000us over the median)")
    check(lines == want, "step lines:\n" + "\n".join(lines) + "\nwanted:\n" + "\n".join(want))
    check("  persistent stragglers: rank 3 (3 of 10 steps)\n" in out, out)
    compute = re.search(r"^  compute .*\n    outliers: (.*)$", out, re.M)
    check(compute and compute.group(1).startswith("rank 3 29.000ms") and "rank 6" not in compute.group(1),
          f"compute's outliers: {compute and compute.group(1)}")
    allreduce = re.search(r"^  allreduce .*\n    outliers: (.*)$", out, re.M)
    check(allreduce and re.fullmatch(r"rank 3 \S+ \(0\.\d\dx the median\)", allreduce.group(1)),
          f"allreduce's outliers: {allreduce and allreduce.group(1)}")
    # rank 4's step 0: its own row, the loader's region a column of its own
    row = re.search(r"^step 0\n(?:.*\n)*?  4 +(.*)$", out, re.M).group(1).split()
    check(row == ["41.000ms", "30.000ms", "10.000ms", "20.000ms", "10.000ms", "5.000ms"], f"rank 4 at step 0: {row}")

    # the table: one file per rank, one row per step and top-level region
    with open(os.path.join(tmp, "table", "rank3.csv")) as f:
        rows = f.read().splitlines()
    check(rows[0] == "rank,step,step_ns,work_ns,wait_ns,region,region_ns,calls", rows[0])
    check(rows[1:4] == ["3,0,41000000,30000000,10000000,data_load,10000000,1",
                        "3,0,41000000,30000000,10000000,compute,20000000,1",
                        "3,0,41000000,30000000,10000000,allreduce,10000000,1"], "\n".join(rows[1:4]))
    check(len(rows) == 1 + 30, f"{len(rows)} rows")
    check("3,2,71000000,60000000,10000000,compute,50000000,1" in rows, "step 2 of rank 3")

    # --ranks: a subset, in prof ranks and in prof merge
    out, _ = run([prof, "ranks", "--ranks", "2-4", "."], tmp)
    check(out.startswith("3 ranks, steps 0 to 9\n"), out[:100])
    check(STRAGGLER.findall(out) == [("2", "3"), ("5", "3"), ("7", "3")], f"{STRAGGLER.findall(out)}")
    files = sorted(f for f in os.listdir(tmp) if f.startswith("rank"))
    run([prof, "merge", "-q", "--ranks", "3,5-6", "-o", "sub.json", *files], tmp)
    with open(os.path.join(tmp, "sub.json")) as f:
        sub = json.load(f)
    check(sub["prof_merged_ranks"] == [3, 5, 6], f"merged ranks {sub['prof_merged_ranks']}")
    want = sum(len(events_of(os.path.join(tmp, f))) for f in files if f.startswith(("rank3.", "rank5.", "rank6.")))
    # prof.h's traces name their processes; these do not: a name and a sort index each
    check(len(sub["traceEvents"]) == want + 2 * 3, f"{len(sub['traceEvents'])} events, not {want} + 6")
    print("synthetic: every step's line, the summary, the tables and --ranks exact")


def case_nccl(prof, _ranks_sim, tmp):
    """The synthetic ranks with NCCL's ranges in their allreduce (as
    libprof_nvtx records them): each straggler's line names the collective."""
    for r in range(8):
        with open(os.path.join(tmp, f"rank{r}.json"), "w") as f:
            f.write(synthetic_rank(r, EXTRA.get(r, {}), nccl=True))
    out, _ = run([prof, "ranks", "."], tmp)
    lines = [l for l in out.splitlines() if re.match(r"step \d+: straggler", l)]
    check(len(lines) == 4 and all(l.endswith("; the others waited in allreduce (NCCL: ncclAllReduce)") for l in lines),
          "\n".join(lines))
    print("nccl: the straggler's peers waited in allreduce, in NCCL's ncclAllReduce")


def case_duckdb(prof, _ranks_sim, tmp):
    try:
        import duckdb
    except ImportError:
        print("duckdb is not installed (tests/readers/requirements.txt has it): skipped")
        sys.exit(77)
    write_synthetic(tmp)
    out, _ = run([prof, "ranks", "--table-out", "table", "."], tmp)
    lines = [l for l in out.splitlines() if re.match(r"step \d+: ", l)]
    got = duckdb.sql(readme_query().replace("ranks/*.csv", os.path.join(tmp, "table", "*.csv"))).fetchall()
    named = [(int(m.group(1)), int(m.group(2))) for m in map(STRAGGLER.match, lines) if m]
    check([(int(s), int(r)) for s, r, _ in got] == named, f"DuckDB: {got}; prof ranks: {named}")
    check([int(lag) for _, _, lag in got] == [30 * MS, 30 * MS, 30 * MS, 12 * MS], f"DuckDB's lags {got}")
    print(f"duckdb: DuckDB {duckdb.__version__} names the stragglers prof ranks names: {named}")


# ---- hangs ----------------------------------------------------------------------


def after_step_s(path, region):
    """Seconds from the last step's end (the last PROF_STEP) to the start of
    the REGION still open in a hang dump: the step's work before it."""
    t = pftrace.decode_pftrace(path) if path.endswith(".pftrace") else pftrace.load_json(path)
    step_end = max(ts + dur for _, name, ts, dur, _ in t.slices if name.startswith("ProfilerStep#"))
    return (max(ts for _, name, ts, _, _ in t.slices if name == region) - step_end) / 1e9


def case_hang(prof, ranks_sim, tmp):
    # the watchdog looks once a second: 1 s without a step, a dump on every
    # rank within 2 s; rank 4 stays 4 s in data_load; in either format (the
    # open regions and the dump's step: JSON args and header, Perfetto
    # annotations and trace attributes). A region open for the dump began
    # after the last step by the step's work before it (data_load, compute:
    # milliseconds), so it has been open 1 s less that, at least.
    said = []
    secs = lambda m: float(m[1]) / (1000 if m[2] == "ms" else 1)  # noqa: E731
    for ext in ("json", "pftrace"):
        if ext == "pftrace" and pftrace.pb is None:  # the dumps' times are read back with Perfetto's proto
            print("hang: " + " | ".join(said) + "; SKIP .pftrace: the perfetto package is not installed")
            sys.exit(77)
        err = sim(ranks_sim, tmp, 6, 4, "hang=4:2:4000", output="h{rank}." + ext,
                  env={"PROF_FLIGHT": "8", "PROF_WATCHDOG": "1"})
        dumps = sorted(f for f in os.listdir(tmp) if ".hang-" in f)
        check(dumps == [f"h{r}.hang-2.{ext}" for r in range(6)], f"dumps {dumps}:\n{err}")
        out, _ = run([prof, "ranks", *dumps], tmp)
        lines = out.splitlines()
        check(len(lines) == 2, out)
        late = max(after_step_s(os.path.join(tmp, f"h{r}.hang-2.{ext}"), "wait_peer") for r in (0, 1, 2, 3, 5))
        m = re.fullmatch(r"hang at step 2: 5 ranks in allreduce > wait_peer for (\d+\.\d+)(m?s) \(ranks 0-3,5\)",
                         lines[0])
        check(m and 1.0 - late <= secs(m) < 4.0, f"{ext}: {lines[0]} (wait_peer began up to {late:.6f} s after the step)")
        late = after_step_s(os.path.join(tmp, f"h4.hang-2.{ext}"), "data_load")
        m = re.fullmatch(r"hang at step 2: rank 4 in data_load for (\d+\.\d+)(m?s)", lines[1])
        check(m and 1.0 - late <= secs(m) < 4.0, f"{ext}: {lines[1]} (data_load began {late:.6f} s after the step)")
        said.append(f"{ext}: " + "; ".join(lines))
    print("hang: " + " | ".join(said))


def case_hang_tie(prof, _ranks_sim, tmp):
    # allreduce and wait_peer begun in the same nanosecond, both open to the
    # dump: the same span, written children first as prof.h writes them. The
    # later is the parent, on every rank, whatever the sort does with a tie.
    for r in range(4):
        ev = [f'{{"ph":"X","cat":"user_annotation","name":"{n}","pid":7,"tid":1,"ts":{us(5 * MS)},'
              f'"dur":{us(2000 * MS)},"args":{{"open":"still running at the dump"}}}}'
              for n in ("wait_peer", "allreduce")]
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":7,"tid":1,"ts":0.000,'
                  f'"dur":{us(2005 * MS)},"args":{{"open":"still running at the dump"}}}}')
        with open(os.path.join(tmp, f"h{r}.json"), "w") as f:
            f.write('{\n  "schemaVersion": 1,\n  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": 4},\n'
                    '  "baseTimeNanoseconds": %d,\n  "prof_dump_reason": "hang",\n  "prof_dump_step": 2,\n  "traceEvents": [\n%s\n  ]\n}\n'
                    % (r, BASE, ",\n".join(ev)))
    out, _ = run([prof, "ranks", *(f"h{r}.json" for r in range(4))], tmp)
    check(out.splitlines() == ["hang at step 2: 4 ranks in allreduce > wait_peer for 2.000s (ranks 0-3)"], out)
    print("hang_tie: " + out.strip())


# ---- errors -----------------------------------------------------------------------


def one_line(prof, args, tmp):
    p = subprocess.run([prof, "ranks", *args], cwd=tmp, capture_output=True, text=True)
    check(p.returncode == 2, f"{args}: exit {p.returncode}")
    check(p.stderr.count("\n") == 1 and p.stderr.startswith("prof ranks: "), f"{args}: {p.stderr!r}")
    return p.stderr.strip()


def case_errors(prof, _ranks_sim, tmp):
    with open(os.path.join(tmp, "a.json"), "w") as f:
        f.write(synthetic_rank(0, {}))
    with open(os.path.join(tmp, "b.json"), "w") as f:
        f.write(synthetic_rank(0, {}))
    with open(os.path.join(tmp, "bad.json"), "w") as f:
        f.write('{"traceEvents":[{"ph":"X",}]}')
    os.mkdir(os.path.join(tmp, "empty"))
    check(one_line(prof, ["nope.json"], tmp) == "prof ranks: nope.json: cannot open: No such file or directory", "missing")
    check(one_line(prof, ["a.json", "bad.json"], tmp) == "prof ranks: bad.json: not valid JSON at byte 26", "bad JSON")
    check(one_line(prof, ["a.json", "b.json"], tmp) == "prof ranks: a.json and b.json are both rank 0", "same rank")
    check(one_line(prof, ["empty"], tmp) == "prof ranks: empty: no traces in it (.json, .json.gz, .pftrace)", "empty dir")
    check(one_line(prof, [], tmp).startswith("prof ranks: no traces (usage: "), "no args")
    check(one_line(prof, ["-x", "a.json"], tmp) == "prof ranks: unknown option '-x' (prof ranks --help shows the usage)",
          "option")
    check(one_line(prof, ["--ranks", "7-", "a.json"], tmp) == "prof ranks: --ranks needs a list of ranks: 0-7,37", "list")
    check(one_line(prof, ["--ranks", "3", "a.json"], tmp) == "prof ranks: no trace is of a rank in --ranks 3", "subset")
    p = subprocess.run([prof, "merge", "--ranks", "1", "a.json"], cwd=tmp, capture_output=True, text=True)
    check(p.returncode == 2 and p.stderr == "prof merge: no trace is of a rank in --ranks 1\n", p.stderr)
    print("errors: one line each, exit 2")


def main():
    case, prof, ranks_sim = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    fn = globals().get("case_" + case)
    if not fn:
        fail("no case " + case)
    with tempfile.TemporaryDirectory(prefix="prof-ranks-") as tmp:
        fn(prof, ranks_sim, tmp)


if __name__ == "__main__":
    main()
