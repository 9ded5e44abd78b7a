#!/usr/bin/env python3
"""prof table's GPU columns on a saved trace, each number computed here from
the trace's own events (not from the tool's output).

    test_table_gpu.py CASE PROF [CUPTI_PROGRAM]

kernels  the real H100 trace (tests/readers/fixtures/cupti_h100): a region's
         GPU total is the time of the kernels, copies and fills whose launch
         call (the runtime call of the same correlation) lies inside it on
         its thread, its self GPU the part launched in no child region
         (torch's key_averages()); a row per kernel name; the GPU region
         events (gpu_user_annotation) counted nowhere, as torch counts
         kernels, not annotations. The same from its .json.gz.
regions  a trace with GPU regions and no kernels: a region's GPU total is
         its own GPU region's time (matched by correlation), else its
         children's; self GPU: minus its children's.
cupti    the CUPTI double's cycle (tests/gpu/cupti_test.c, cupti_kernels) as
         JSON and as .pftrace: both tables' GPU columns are the JSON's
         events', and both tables are the run's own (PROF_TABLE) line for
         line, but its line on the clocks' bound (skipped without the
         double).
sync     the same of cupti_sync's cycle, whose synchronisations (cuda_sync)
         count in no GPU time."""
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_merge import check, fail  # noqa: E402

H100 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "readers", "fixtures", "cupti_h100",
                    "h100_train_mlp_cuda.json")
RUNTIME = ("cuda_runtime", "cuda_driver", "hip_runtime")
LAUNCHED = ("kernel", "gpu_memcpy", "gpu_memset")


def ns(x):
    return int(Decimal(str(x)) * 1000)


def fmt_time(t):
    """torch's _format_time, as prof.h's table prints times."""
    if t >= 1e9:
        return f"{t / 1e9:.3f}s"
    if t >= 1e6:
        return f"{t / 1e6:.3f}ms"
    return f"{t / 1e3:.3f}us"


def load(path):
    import json
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)["traceEvents"]


def regions_of(ev):
    """CPU regions per thread: [name, t0, t1, correlation, children]. prof.h's
    JSON ends a step 1 ns early; the reader gives it that 1 ns back."""
    regs = {}
    for e in ev:
        if e.get("ph") != "X" or e.get("cat") in RUNTIME + LAUNCHED + ("gpu_user_annotation", "cuda_sync"):
            continue
        name, t0 = e["name"], ns(e["ts"])
        t1 = t0 + ns(e["dur"]) + (1 if name.startswith("ProfilerStep#") else 0)
        if name.startswith("ProfilerStep#"):
            name = "ProfilerStep*"
        regs.setdefault(e["tid"], []).append([name, t0, t1, e.get("args", {}).get("correlation", 0), []])
    for rs in regs.values():              # the outer one first at a tie
        rs.sort(key=lambda r: (r[1], -r[2]))
        stack = []
        for r in rs:
            while stack and not (stack[-1][1] <= r[1] and r[2] <= stack[-1][2]):
                stack.pop()
            if stack:
                stack[-1][4].append(r)
            stack.append(r)
    return regs


def expected(ev):
    """{row name: (self GPU ns, GPU total ns, calls)}, and the self GPU sum."""
    regs = regions_of(ev)
    launch = {e["args"]["correlation"]: (e["tid"], ns(e["ts"])) for e in ev
              if e.get("ph") == "X" and e.get("cat") in RUNTIME}
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") in LAUNCHED]
    rows = {}

    def row(name):
        return rows.setdefault(name, [0, 0, 0])

    own = {}                             # id(region) -> its own GPU total
    if kernels:
        for k in kernels:
            d = ns(k["dur"])
            r = row(k["name"])
            r[0] += d
            r[1] += d
            r[2] += 1
            if k["args"]["correlation"] not in launch:
                continue
            tid, t = launch[k["args"]["correlation"]]
            inside = [g for g in regs.get(tid, []) if g[1] <= t <= g[2]]
            for g in inside:
                own[id(g)] = own.get(id(g), 0) + d
        total = lambda g: own.get(id(g), 0)  # noqa: E731
    else:
        gpu = {e["args"]["correlation"]: ns(e["dur"]) for e in ev
               if e.get("ph") == "X" and e.get("cat") == "gpu_user_annotation"}

        def total(g):
            if g[3] in gpu:
                return gpu[g[3]]
            return sum(total(c) for c in g[4])
    self_sum = 0
    for rs in regs.values():
        for g in rs:
            t, kids = total(g), sum(total(c) for c in g[4])
            r = row(g[0])
            r[0] += max(t - kids, 0)
            r[1] += t
            r[2] += 1
            self_sum += 0 if kernels else max(t - kids, 0)
    if kernels:
        self_sum = sum(ns(k["dur"]) for k in kernels)
    return rows, self_sum


def table(tool, trace, tmp, spec="sort=self_cpu"):
    p = subprocess.run([tool, "table", trace, spec], cwd=tmp, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"prof table {trace}: {p.stderr}")
    return p.stdout


def check_table(text, ev, what):
    """The printed GPU columns are the events' numbers, row for row."""
    lines = text.splitlines()
    heads = re.split(r"\s{2,}", lines[1].strip())
    for h in ("Self GPU", "Self GPU %", "GPU total", "GPU time avg"):
        check(h in heads, f"{what}: no {h} column in {heads}")
    col = {h: heads.index(h) for h in heads}
    check(heads.index("Self GPU") == heads.index("CPU max") + 1 and heads[-1] == "# of Calls",
          f"{what}: columns {heads}, not prof.h's order")
    want, self_sum = expected(ev)
    got = {}
    for line in lines[3:]:
        if line.startswith("-"):        # the rule under the rows: the footer follows
            break
        if not line or line.startswith(("-", "...", "Self", "Rows", "GPU times")):
            continue
        c = re.split(r"\s{2,}", line.strip())
        got[c[0]] = c
    check(set(got) == set(want), f"{what}: rows {sorted(got)} != {sorted(want)}")
    for name, (s, t, n) in want.items():
        c = got[name]
        cells = [c[col["Self GPU"]], c[col["Self GPU %"]], c[col["GPU total"]], c[col["GPU time avg"]], c[col["# of Calls"]]]
        pct = f"{100.0 * s / self_sum:.2f}%" if self_sum else "NaN"
        exp = [fmt_time(s), pct, fmt_time(t), fmt_time(t / n), str(n)]
        check(cells == exp, f"{what}: {name}: {cells} != {exp}")
    tot = [line for line in lines if line.startswith("Self GPU time total: ")]
    check(tot == [f"Self GPU time total: {fmt_time(self_sum)}"], f"{what}: {tot}, not {fmt_time(self_sum)}")
    return want, self_sum


def case_kernels(tool, _cupti, tmp):
    ev = load(H100)
    want, self_sum = check_table(table(tool, H100, tmp), ev, "h100")
    # the numbers themselves, for the record: 20 rows, 3 steps, every kernel launched in a step
    steps = want["ProfilerStep*"]
    check(steps[2] == 3 and steps[1] == self_sum, f"steps {steps}, self GPU sum {self_sum}")
    check(want["_Z13matmul_kernelPfPKfS1_iiiii"][2] == 24, f"matmul kernels {want['_Z13matmul_kernelPfPKfS1_iiiii']}")
    # no runtime call is a row (prof.h's own table has none); GPU regions neither
    names = set(want)
    check(not any(n.startswith("cuda") for n in names), f"runtime calls as rows: {sorted(names)}")
    gz = os.path.join(tmp, "h100.json.gz")
    with open(H100, "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    check(table(tool, gz, tmp) == table(tool, H100, tmp), "the .json.gz's table differs from the JSON's")
    # sorted by GPU total: the steps first, then forward (its linears' kernels)
    rows = [re.split(r"\s{2,}", l.strip())[0] for l in table(tool, H100, tmp, "sort=gpu_total").splitlines()[3:6]]
    check(rows[0] == "ProfilerStep*", f"sort=gpu_total: {rows}")


def regions_trace(path):
    """Two steps; fwd (a GPU region) holding matmul (another) and a plain
    region holding a third; bwd a GPU region; GPU sides on device 0."""
    ev, corr, t = [], 0, 1_000_000
    cpu = lambda name, t0, d, c=0: ev.append(  # noqa: E731
        f'{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":7,"ts":{t0 / 1000:.3f},"dur":{d / 1000:.3f}'
        + (f',"args":{{"correlation":{c}}}}}' if c else "}"))
    gpu = lambda name, t0, d, c: ev.append(  # noqa: E731
        f'{{"ph":"X","cat":"gpu_user_annotation","name":"{name}","pid":0,"tid":7,"ts":{t0 / 1000:.3f},'
        f'"dur":{d / 1000:.3f},"args":{{"device":0,"stream":7,"correlation":{c}}}}}')
    for n in range(2):
        cpu(f"ProfilerStep#{n}", t, 999_999)
        corr += 1
        cpu("fwd", t + 1000, 400_000, corr)
        gpu("fwd", t + 5000, 300_000 + 1000 * n, corr)
        corr += 1
        cpu("matmul", t + 2000, 100_000, corr)
        gpu("matmul", t + 6000, 123_456 + n, corr)
        cpu("plain", t + 200_000, 100_000)
        corr += 1
        cpu("attn", t + 210_000, 50_000, corr)
        gpu("attn", t + 140_000, 77_777, corr)
        corr += 1
        cpu("bwd", t + 500_000, 400_000, corr)
        gpu("bwd", t + 505_000, 450_000, corr)
        t += 1_000_000
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [\n' +
                ",\n".join(ev) + "\n]}\n")


def case_regions(tool, _cupti, tmp):
    path = os.path.join(tmp, "regions.json")
    regions_trace(path)
    want, self_sum = check_table(table(tool, path, tmp), load(path), "regions")
    # by hand: fwd 300 + 301 us of GPU, of which matmul 246.913 us and attn 155.554 us (through plain)
    check(want["fwd"] == [601_000 - 246_913 - 155_554, 601_000, 2] and want["plain"] == [0, 155_554, 2] and
          want["ProfilerStep*"] == [0, 601_000 + 900_000, 2], f"regions {want}")
    check(self_sum == 601_000 + 900_000, f"self GPU sum {self_sum}")


def case_cupti(tool, cupti, tmp):
    if not cupti:
        print("table_gpu_cupti skipped: no CUPTI double (CUDA's headers are not installed)")
        sys.exit(77)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run([cupti, "cupti_kernels", "run"], cwd=tmp, capture_output=True, text=True, timeout=120,
                       env=dict(env, PROF_TABLE="sort=name"))
    check(p.returncode == 0, f"cupti_kernels: {p.stderr}")
    ev = load(os.path.join(tmp, "cupti.1.json"))
    # the run's own table (PROF_TABLE), but the line on the clocks' bound, which a trace does not hold
    own = [line for line in p.stderr.splitlines() if not line.startswith(("prof:", "GPU times are within"))]
    check(own and own[0].startswith("---"), f"the run's table: {p.stderr}")
    for trace in ("cupti.1.json", "cupti.1.pftrace"):
        text = table(tool, trace, tmp, "sort=name")
        check_table(text, ev, trace)
        check(text.splitlines() == own, f"{trace}: prof table differs from the run's own:\n{text}\nrun's:\n" +
              "\n".join(own))


def case_sync(tool, cupti_sync, tmp):
    """The CUPTI double's cycle with synchronisations (cupti_test.c,
    cupti_sync): a host's wait is no GPU time, in the run's own table and in
    prof table's of both formats, which read the cuda_sync events back."""
    if not cupti_sync:
        print("table_gpu_sync skipped: no CUPTI double (CUDA's headers are not installed)")
        sys.exit(77)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run([cupti_sync, "cupti_sync", "run"], cwd=tmp, capture_output=True, text=True, timeout=120,
                       env=dict(env, PROF_TABLE="sort=name"))
    check(p.returncode == 0, f"cupti_sync: {p.stderr}")
    ev = load(os.path.join(tmp, "sync.1.json"))
    check(sum(1 for e in ev if e.get("cat") == "cuda_sync" and e["ph"] == "X") == 12, "the trace lacks its 12 cuda_sync events")
    own = [line for line in p.stderr.splitlines() if not line.startswith(("prof:", "GPU times are within"))]
    check(own and own[0].startswith("---"), f"the run's table: {p.stderr}")
    for trace in ("sync.1.json", "sync.1.pftrace"):
        text = table(tool, trace, tmp, "sort=name")
        check_table(text, ev, trace)
        check(text.splitlines() == own, f"{trace}: prof table differs from the run's own:\n{text}\nrun's:\n" +
              "\n".join(own))


def main():
    case, tool = sys.argv[1], os.path.abspath(sys.argv[2])
    cupti = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else ""
    fn = globals().get("case_" + case)
    if not fn:
        fail(f"no case {case}")
    with tempfile.TemporaryDirectory() as tmp:
        fn(tool, cupti, tmp)
    print(f"ok: table_gpu {case}")


if __name__ == "__main__":
    main()
