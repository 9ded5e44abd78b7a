#!/usr/bin/env python3
"""Checks the readers of PROF_SAMPLE's samples against prof table
group=function (itself held to the run's own counts by test_sample):

    test_sample_readers.py CASE PROF TEST_SAMPLE SAMPLE_SPLIT

report  test_sample's trace (three leaves at 60/30/10% in region "shares",
        a half-asleep region, a thread that exits): prof report's flame
        graph holds the samples' native frames under their regions, each
        leaf function's samples under its region exactly the table's, every
        sample once; the page rendered by headless Chromium draws the hot
        leaves with those counts.
diff    two runs of sample_split.c, the hot function at 25% and at 75% of
        the CPU time: prof diff group=function gives each function's
        samples exactly as the table counts them in each trace, their
        shares (of the trace's samples) within 3 points of the CPU time
        each run measured, the hot function's share 3x in the second within
        10%, the rows sorted by the change of share; a gzipped trace reads
        the same; bad use, one line.
large   a synthetic trace of 250,000 samples (prof_samples over 20 MB, more
        than one window of the tool's reader): prof table, prof table
        group=function, prof diff group=function and prof report read it,
        the samples counted exactly, a file that cannot be read said once.

Exit 77 (skipped) where perf_event_open is refused (the programs say so),
or, for report, where Chromium is not installed."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_merge import check, fail  # noqa: E402
import test_report  # noqa: E402


def run(args, cwd, rc=0):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=150)
    if p.returncode == 77:
        print(f"skipped: {' '.join(args)}: {p.stdout.strip()}")
        sys.exit(77)
    check(p.returncode == rc, f"{' '.join(args)} exited {p.returncode}, not {rc}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def functions(tool, tmp, trace):
    """prof table TRACE group=function: {(region, function): samples}, and the total it states."""
    out = run([tool, "table", trace, "group=function"], tmp).stdout
    rows, total = {}, None
    for line in out.splitlines()[1:]:
        m = re.fullmatch(r"(\d+) samples", line)
        if m:
            total = int(m.group(1))
            continue
        parts = line.split()
        check(len(parts) >= 4 and parts[-1].endswith("%"), f"table row {line!r}")
        rows[(parts[0], " ".join(parts[1:-2]))] = int(parts[-2])
    check(total == sum(rows.values()) and total > 0, f"table total {total} != {sum(rows.values())}")
    return rows, total


def refused(path):
    with open(path) as f:
        return json.load(f)["prof_samples"]["refused"]


def wide_frames(F, width):
    """The flame graph's frames that report.js draws unzoomed: a child's
    width is its parent's share by time, drawn from half a pixel up; the
    same doubles in the same order as the page computes them."""
    kids = [[] for _ in F]
    for i, f in enumerate(F):
        if f[0] >= 0:
            kids[f[0]].append(i)
    for k in kids:
        k.sort(key=lambda c: -F[c][2])
    out = []

    def layout(i, w):
        whole = max(F[i][2], sum(F[c][2] for c in kids[i]))
        for c in kids[i]:
            cw = w * F[c][2] / whole if whole else 0
            if cw >= 0.5:
                out.append(c)
                layout(c, cw)
    for i, f in enumerate(F):
        if f[0] < 0:
            layout(i, width)
    return out


def case_report(tool, test_sample, _split, tmp):
    if not test_report.CHROMIUM:
        print("sample_report skipped: no headless Chromium (Debian: apt-get install chromium)")
        sys.exit(77)
    run([test_sample], tmp)
    rows, total = functions(tool, tmp, "sample.json")
    page = test_report.report(tool, tmp, "sample.json")
    F = test_report.page_data(page)["flame"]
    check(all(len(f) in (4, 6) for f in F) and any(len(f) == 6 and f[5] for f in F), f"frames {F[:3]}")
    F = [f if len(f) == 6 else f + [0, 0] for f in F]      # a path without samples: [parent, name, total, calls]

    def region_of(i):                   # a native frame's region: its nearest ancestor that is not native
        while F[i][5]:
            i = F[i][0]
        return F[i][1] if F[i][0] >= 0 else "(none)"
    # every sample once: its outermost native frame's, under a region or a thread
    tops = sum(f[4] for f in F if f[5] and not F[f[0]][5])
    check(tops == total, f"native frames under regions hold {tops} samples, the table {total}")
    got = {}
    for i, f in enumerate(F):
        if f[5]:
            check(f[2] == f[4] * 1_000_000, f"{f[1]}: {f[2]} ns for {f[4]} samples at 1 kHz")
            got[(region_of(i), f[1])] = got.get((region_of(i), f[1]), 0) + f[4]
    leaves = [("shares", "leaf60"), ("shares", "leaf30"), ("shares", "leaf10"), ("half_asleep", "busy"),
              ("short_work", "busy")]
    for key in leaves:                  # leaves: their samples on every path are their self samples
        check(rows.get(key, 0) > 50 and got.get(key) == rows[key], f"{key}: flame {got.get(key)}, table {rows.get(key)}")
    # a region's frame counts the samples under it: the table's rows of that region
    for r in ("shares", "half_asleep", "short_work"):
        want = sum(n for (reg, _), n in rows.items() if reg == r)
        have = sum(f[4] for f in F if f[1] == r and not f[5])
        check(have == want, f"region {r}: {have} samples in the flame graph, {want} in the table")
    # the page as drawn: the leaves' rectangles, native, with their counts. A
    # frame under half a pixel wide is not drawn (a sample taken in a
    # prologue, its caller not yet on the stack, makes such a path).
    dom = test_report.render(page, tmp)
    widths = {int(w) for w in re.findall(r'<svg width="(\d+)"[^>]*class="flame"', dom.text)}
    check(len(widths) == 1, f"flame graphs' widths {widths}")
    drawn = {}
    for a in re.findall(r"<rect ([^>]*data-native=\"1\"[^>]*)>", dom.text):
        at = dict(re.findall(r'([\w-]+)="([^"]*)"', a))
        drawn[at["data-name"]] = drawn.get(at["data-name"], 0) + int(at["data-samples"])
    visible = {}
    for i in wide_frames(F, widths.pop()):
        if F[i][5]:
            visible[F[i][1]] = visible.get(F[i][1], 0) + F[i][4]
    for name in ("leaf60", "leaf30", "leaf10"):
        want = rows[("shares", name)]
        check(drawn.get(name) == visible.get(name) and visible.get(name, 0) >= 0.99 * want,
              f"{name}: drawn with {drawn.get(name)} samples, the frames wide enough hold {visible.get(name)}, "
              f"the table {want}")
    busy = rows[("half_asleep", "busy")] + rows[("short_work", "busy")]
    check(drawn.get("busy") == visible.get("busy") and visible.get("busy", 0) >= 0.99 * busy,
          f"busy: drawn {drawn.get('busy')}, wide enough {visible.get('busy')}, the table {busy}")
    check("the native call stacks of its CPU samples" in dom.text, "the flame graph's note says nothing of samples")
    print(f"flame graph: {total} samples; leaves {[(k, got[k]) for k in leaves]}")


def diff_rows(text):
    """prof diff group=function's rows: [(function, n base, share base, n new, share new, change)]."""
    rows = []
    lines = text.splitlines()
    check(lines[0].split() == ["function", "(self)", "samples", "base", "share", "base", "samples", "new", "share",
                               "new", "share", "change"], f"head {lines[0]!r}")
    for line in lines[1:]:
        m = re.fullmatch(r"(.+?)\s+(\d+)\s+([\d.]+)%\s+(\d+)\s+([\d.]+)%\s+([+-][\d.]+)%", line)
        if m:
            rows.append((m.group(1), int(m.group(2)), float(m.group(3)), int(m.group(4)), float(m.group(5)),
                         float(m.group(6))))
    return rows, lines[-1]


def case_diff(tool, _test_sample, split, tmp):
    measured = {}
    for pct, out in ((25, "a.json"), (75, "b.json")):
        p = run([split, str(pct), "1200", out], tmp)
        if refused(os.path.join(tmp, out)):
            print("sample_diff skipped: perf_event_open is refused here")
            sys.exit(77)
        m = re.search(r"hot (\d+) cold (\d+)", p.stdout)
        check(m, f"sample_split said {p.stdout!r}")
        measured[out] = int(m.group(1)) / (int(m.group(1)) + int(m.group(2)))
    per_fn, totals = [], []
    for out in ("a.json", "b.json"):
        rows, total = functions(tool, tmp, out)
        fn = {}
        for (_, name), n in rows.items():
            fn[name] = fn.get(name, 0) + n
        per_fn.append(fn)
        totals.append(total)
    text = run([tool, "diff", "a.json", "b.json", "group=function", "--min-change", "0"], tmp).stdout
    print(text)
    rows, last = diff_rows(text)
    check(last == f"{totals[0]} samples in base, {totals[1]} in new", f"last line {last!r}")
    names = set(per_fn[0]) | set(per_fn[1])
    check(sorted(r[0] for r in rows) == sorted(names), f"functions {sorted(r[0] for r in rows)} != {sorted(names)}")
    for name, na, sa, nb, sb, d in rows:
        check(na == per_fn[0].get(name, 0) and nb == per_fn[1].get(name, 0),
              f"{name}: {na} and {nb} samples, the tables {per_fn[0].get(name, 0)} and {per_fn[1].get(name, 0)}")
        check(abs(sa - 100 * na / totals[0]) <= 0.051 and abs(sb - 100 * nb / totals[1]) <= 0.051, f"{name}: shares")
        check(abs(d - (100 * nb / totals[1] - 100 * na / totals[0])) <= 0.051, f"{name}: change {d}")
    check([r[5] for r in rows] == sorted((r[5] for r in rows), reverse=True), "rows not sorted by the change")
    check(rows[0][0] == "hot" and rows[-1][0] == "cold", f"first {rows[0][0]}, last {rows[-1][0]}")
    hot = {r[0]: r for r in rows}["hot"]
    sa, sb = hot[2] / 100, hot[4] / 100
    print(f"hot's share: {sa:.3f} then {sb:.3f} ({sb / sa:.2f}x); measured {measured['a.json']:.3f} then "
          f"{measured['b.json']:.3f} ({measured['b.json'] / measured['a.json']:.2f}x)")
    check(abs(sa - measured["a.json"]) < 0.03 and abs(sb - measured["b.json"]) < 0.03, "shares off the CPU time")
    want = measured["b.json"] / measured["a.json"]
    check(2.8 < want < 3.2 and abs(sb / sa - want) < 0.1 * want, f"hot's factor {sb / sa:.2f}, measured {want:.2f}")
    # by default the rows whose share moved by less than 5 points are left out, and said
    text5 = run([tool, "diff", "a.json", "b.json", "group=function"], tmp).stdout
    rows5, _ = diff_rows(text5)
    kept = [r for r in rows if abs(r[5]) >= 5]
    check(rows5 == kept, f"default rows {rows5} != {kept}")
    if len(kept) < len(rows):
        n = len(rows) - len(kept)
        check(f"({n} function{'' if n == 1 else 's'} whose share changed by less than 5.00 points: left out;" in text5,
              f"no note of the rows left out:\n{text5}")
    # a gzipped trace reads the same
    with open(os.path.join(tmp, "b.json"), "rb") as f, open(os.path.join(tmp, "b.json.gz"), "wb") as g:
        g.write(subprocess.run(["gzip", "-c"], stdin=f, capture_output=True, check=True).stdout)
    check(run([tool, "diff", "a.json", "b.json.gz", "group=function", "--min-change", "0"], tmp).stdout == text,
          "the gzipped trace diffs otherwise")
    # bad use: one line, exit 2
    with open(os.path.join(tmp, "plain.json"), "w") as f:
        f.write('{"traceEvents": []}\n')
    for args, said in ((["a.json", "b.json", "group=function", "--fail-over", "5"],
                        "prof diff: --fail-over checks regions' times: not with group=function"),
                       (["a.json", "plain.json", "group=function"],
                        "prof diff: plain.json: no samples in this trace (it was recorded without PROF_SAMPLE)")):
        p = run([tool, "diff", *args], tmp, rc=2)
        check(p.stderr == said + "\n", f"{args}: {p.stderr!r}")


def case_large(tool, _test_sample, _split, tmp):
    n, addrs = 250_000, (0x400100, 0x400110, 0x400120)
    with open(os.path.join(tmp, "big.json"), "w") as f:
        f.write('{"schemaVersion": 1, "baseTimeNanoseconds": 1000000000000,\n "prof_samples": {"period_ns": 100000, '
                '"lost": 0, "refused": 0,\n "mappings": [{"path": "/nonexistent/app", "start": "0x400000", '
                '"end": "0x500000", "offset": "0x0", "build_id": "ab"}],\n "samples": [')
        f.write(",".join(f'\n  [7, {1000 + i * 1000}, 0, "work", ["0x{addrs[i % 3]:x}", "0x401000", "0x402000", "0x7fff0000"]]'
                         for i in range(n)))
        f.write(']},\n "traceEvents": [\n'
                '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":7,"ts":0.000,"dur":300000.000},\n'
                '{"ph":"X","cat":"user_annotation","name":"work","pid":1,"tid":7,"ts":0.500,"dur":299000.000}\n]}\n')
    check(os.path.getsize(os.path.join(tmp, "big.json")) > 17 << 20, "the trace is smaller than a window")
    p = run([tool, "table", "big.json"], tmp)
    check(re.search(r"\bwork\b.*299\.000ms", p.stdout), f"prof table:\n{p.stdout}")
    rows, total = functions(tool, tmp, "big.json")
    want = {("work", f"app+0x{a - 0x400000:x}"): (n - k + 2) // 3 for k, a in enumerate(addrs)}
    check(rows == want and total == n, f"group=function {rows}, not {want}")
    p = run([tool, "table", "big.json", "group=function"], tmp)
    check(p.stderr == "prof table: /nonexistent/app: cannot read (No such file or directory): its addresses stay "
          "file+offset\n", f"said {p.stderr!r}")
    rows, last = diff_rows(run([tool, "diff", "big.json", "big.json", "group=function", "--min-change", "0"], tmp).stdout)
    check(last == f"{n} samples in base, {n} in new" and sorted((r[0], r[1], r[3]) for r in rows) ==
          sorted((f, c, c) for (_, f), c in want.items()), f"diff {rows} {last}")
    p = run([tool, "report", "big.json"], tmp)
    check(p.stderr.endswith("prof report: big.html\n"), f"prof report said {p.stderr!r}")
    F = [f if len(f) == 6 else f + [0, 0] for f in test_report.page_data(os.path.join(tmp, "big.html"))["flame"]]
    parents = {f[0] for f in F}
    leaves = {f[1]: f[4] for i, f in enumerate(F) if f[5] and i not in parents}
    check(leaves == {name: c for (_, name), c in want.items()}, f"flame leaves {leaves}")


def main():
    case, tool, test_sample, split = sys.argv[1], *(os.path.abspath(a) for a in sys.argv[2:5])
    fn = globals().get("case_" + case)
    if not fn:
        fail(f"no case {case}")
    with tempfile.TemporaryDirectory() as tmp:
        fn(tool, test_sample, split, tmp)
    print(f"ok: sample {case}")


if __name__ == "__main__":
    main()
