#!/usr/bin/env python3
"""Checks prof report's pages: each made from one of the suite's traces, then
loaded by headless Chromium (offline), its rendered DOM read back and a
screenshot taken.

    test_report.py CASE PROF SCENARIOS [CUPTI_PROGRAM [ENERGY_PROGRAM]]

cpu      a synthetic trace of two threads and 4 steps: the Operators table's
         cells are prof table's (sort=self_cpu,percentiles), by name and by
         thread; the steps' times are the trace's; the charts are drawn; no
         script error; nothing in the page points to the network; a frame
         named in the address selected with its row; bad use, one line.
formats  one run of tests/scenarios.c (case regions) as JSON, gzip JSON and
         Perfetto's format: each page's table is prof table's of that file.
gpu      the CUPTI double's trace (tests/gpu/cupti_test.c, cupti_kernels):
         kernels, copies and launches as the trace's own events sum them;
         the GPU time per step drawn; the same from the cycle's .pftrace.
         Skipped without CUDA's headers.
memory   scenarios.c's mem_basic: the peak and its region, the 32 blocks not
         freed (1 MiB), the curve drawn; the same from a .pftrace.
ranks    4 synthetic ranks with known step times: the heatmap's cells, and
         the slowest rank of each step outlined.
flight   a flight recorder's dump of a slow step (scenarios.c, flight), as
         JSON and as Perfetto's format: its reason and step first on the
         page.
diff     prof report --diff on synthetic runs: the rows and the U test's p as
         prof diff prints them.
outlier  step #0 800x the median: the step charts keep the other steps'
         columns their height (the axis ends at the tallest step within 4x
         the median), #0 cut at the top with its true time and a note.
energy   PROF_ENERGY's run on the NVML double (tests/gpu/energy_test.c,
         ENERGY_PROGRAM): prof table's footer of its JSON and of its
         .pftrace is the one the run printed (J/step median and p90, W,
         J/token); the page's overview gives each GPU's J/step and J/token
         beside the step time, each step's joules (the trace's) in the
         steps table and the energy chart; the same from the .pftrace.
         Skipped without the double (no CUDA headers or no nvml.h).

Exit 77 (skipped) where Chromium is not installed (Debian: apt-get install
chromium; run_tests.sh installs it)."""
import html
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_merge import calls_trace, check, fail, lcg, table_rows, u_test_p, us  # noqa: E402
from run_case import ENERGY_FOOTER  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SVG_NS = "http://www.w3.org/2000/svg"


# ---- the page, rendered --------------------------------------------------

class Dom(html.parser.HTMLParser):
    """The rendered page: its tables by id (rows of cells, and each row's
    attributes), elements by id, and every attribute that could load
    something."""

    def __init__(self, text):
        super().__init__()
        self.tables, self.ids, self.loads, self.rects = {}, {}, [], 0
        self._table, self._row, self._cell, self._stack = None, None, None, []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids[a["id"]] = a
        for k in ("src", "href", "srcset", "data", "action"):
            if k in a and a[k] and re.match(r"[a-z]+:", a[k]) and not a[k].startswith(("javascript:", "#")):
                self.loads.append(f"{tag} {k}={a[k]}")
        if tag == "link":
            self.loads.append(f"link {a}")
        if tag == "rect":
            self.rects += 1
        if tag == "table":
            self._stack.append(self._table)
            self._table = self.tables.setdefault(a.get("id", f"table{len(self.tables)}"), [])
        elif tag == "tr" and self._table is not None:
            self._row = {"attrs": a, "cells": []}
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row["cells"].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = self._stack.pop() if self._stack else None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def chromium(args, tmp):
    profile = tempfile.mkdtemp(dir=tmp)
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={profile}", "--hide-scrollbars"] + args,
                       capture_output=True, text=True, timeout=120)
    return p


def render(page, tmp, shot=True, frag=""):
    """The page loaded offline by Chromium (at #frag, when given): its DOM
    after the script ran (no script error, drawn to the end); a screenshot
    beside it."""
    url = "file://" + urllib.parse.quote(page) + ("#" + urllib.parse.quote(frag) if frag else "")
    p = chromium(["--virtual-time-budget=5000", "--dump-dom", url], tmp)
    check(p.returncode == 0 and "</html>" in p.stdout, f"chromium --dump-dom {page}: {p.returncode}\n{p.stderr[-2000:]}")
    dom = Dom(p.stdout)
    dom.text = p.stdout
    if "script-errors" in dom.ids:
        errors = re.findall(r"script error: [^<]*", p.stdout)
        fail(f"{page}: {errors}")
    check('data-rendered="yes"' in p.stdout, f"{page}: the script did not run to its end")
    check(not dom.loads, f"{page} loads from outside: {dom.loads}")
    raw = open(page, encoding="utf-8").read()
    check(set(re.findall(r"https?://[^\s\"'`)]+", raw)) <= {SVG_NS}, "the page names a URL other than SVG's namespace: "
          f"{set(re.findall(r'https?://[^ ]+', raw)) - {SVG_NS}}")
    if shot:
        png = page[:-5] + ".png"
        p = chromium(["--virtual-time-budget=5000", f"--screenshot={png}", "--window-size=1280,1600", page], tmp)
        check(p.returncode == 0 and os.path.getsize(png) > 20000, f"screenshot {png}: {p.stderr[-2000:]}")
        with open(png, "rb") as f:
            check(f.read(8) == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG")
    return dom


def page_data(page):
    """The JSON object the page was made with."""
    raw = open(page, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="report-data">\n(.*?)\n</script>', raw, re.S)
    check(m, f"{page}: no report-data")
    return json.loads(m.group(1))


def run(args, cwd, rc=0):
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)
    check(p.returncode == rc, f"{' '.join(args)} exited {p.returncode}, not {rc}: {p.stderr}")
    return p


def report(tool, tmp, *args):
    """prof report ARGS: the page's path (said on stderr)."""
    p = run([tool, "report", *args], tmp)
    m = re.fullmatch(r"prof report: (.*)\n", p.stderr)
    check(m, f"prof report said {p.stderr!r}")
    return os.path.join(tmp, m.group(1))


def ops_match_table(tool, tmp, trace, dom, data):
    """The rendered Operators table is prof table's, cell for cell (names in
    full on the page, cut at 55 bytes by the table); grouped by thread too."""
    for spec, rows in (("sort=self_cpu,percentiles", None), ("sort=self_cpu,group=thread,percentiles", data["ops_thread"]["rows"])):
        text = run([tool, "table", trace, spec], tmp).stdout
        body = text.splitlines()[3:]
        body = body[:next((i for i, line in enumerate(body) if line.startswith("-")), len(body))]  # not the footer
        want = [re.split(r"\s{2,}", line.strip()) for line in body
                if line and not line.startswith(("-", "Self CPU time", "Self GPU time", "Rows sum"))]
        heads = re.split(r"\s{2,}", text.splitlines()[1].strip())
        if rows is None:
            got_heads = dom.tables["ops-table"][0]["cells"]
            got = [r["cells"] for r in dom.tables["ops-table"][1:]]
        else:                           # the table the checkbox shows: its data
            got_heads, got = data["ops_thread"]["heads"], [r["cells"] for r in rows]
        check(got_heads == heads, f"{spec}: heads {got_heads} != {heads}")
        check(got == want, f"{spec}: rows differ:\n page  {got[:3]}\n table {want[:3]}")
        check(len(got) >= 2, f"{spec}: {len(got)} rows")
    return want


# ---- the cases -----------------------------------------------------------

def cpu_trace(path):
    """Two threads; 4 steps on the main one (400, 500, 900, 450 us), each
    holding fwd and bwd, a matmul inside fwd; a loader thread's waits."""
    ev = ['{"ph":"M","name":"thread_name","pid":1,"tid":7,"ts":0.000,"args":{"name":"main"}}',
          '{"ph":"M","name":"thread_name","pid":1,"tid":8,"ts":0.000,"args":{"name":"loader"}}']
    steps, t = [400_000, 500_000, 900_000, 450_000], 1_000_000
    for n, d in enumerate(steps):
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","pid":1,"tid":7,"ts":{us(t)},"dur":{us(d - 1)}}}')
        fwd = d // 2
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"fwd","pid":1,"tid":7,"ts":{us(t + 10_000)},"dur":{us(fwd)}}}')
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"matmul <f32>","pid":1,"tid":7,"ts":{us(t + 20_000)},'
                  f'"dur":{us(fwd // 2)},"args":{{"flops":{1000 * (n + 1)},"bytes":4096}}}}')
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"bwd","pid":1,"tid":7,"ts":{us(t + 20_000 + fwd)},'
                  f'"dur":{us(d // 3)}}}')
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"wait_batch","pid":1,"tid":8,"ts":{us(t)},"dur":{us(d // 4)}}}')
        t += d
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"backend": "unknown", "rank": 0, "world_size": 1},\n'
                ' "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [\n' + ",\n".join(ev) + "\n]}\n")
    return steps


def case_cpu(tool, _scen, _cupti, tmp):
    steps = cpu_trace(os.path.join(tmp, "cpu.json"))
    page = report(tool, tmp, "cpu.json")
    check(page == os.path.join(tmp, "cpu.html"), f"default page {page}")
    dom, data = render(page, tmp), page_data(page)
    ops_match_table(tool, tmp, "cpu.json", dom, data)
    # the steps' times are the trace's (prof.h's JSON ends a step 1 ns early: its dur + 1 ns)
    rows = dom.tables["steps-table"][1:]
    check([(r["attrs"]["data-step"], int(r["attrs"]["data-ns"])) for r in rows] == [(str(n), d) for n, d in enumerate(steps)],
          f"steps {[r['attrs'] for r in rows]}")
    check([r["cells"][1] for r in rows] == ["400.000us", "500.000us", "900.000us", "450.000us"], f"{rows}")
    # fwd and bwd are the steps' parts; the 900 us step is marked slow
    check(data["steps"]["parts"] == ["fwd", "bwd"] and data["steps"]["rows"][2]["parts"] == [450_000, 300_000],
          f"parts {data['steps']}")
    check("step-chart" in dom.ids and dom.rects >= 4 * 3, f"step chart: {dom.rects} rects")
    check("Slowest steps (\u25bc): #2 900.000us" in dom.text, "the slow step not named")
    # the flame graph: the main thread's path ProfilerStep* > fwd > matmul <f32>, with its total
    F = data["flame"]
    path = {(F[f[0]][1] if f[0] >= 0 else None, f[1]): f for f in F}
    check(path[("fwd", "matmul <f32>")][2:] == [sum(d // 4 for d in steps), 4], f"flame {F}")
    check(any(f[0] < 0 and f[1] == "loader (tid 8)" for f in F), f"flame roots {[f for f in F if f[0] < 0]}")
    # a frame selected (the page's address names it) shows its row of the table
    dom = render(page, tmp, shot=False, frag="frame=main (tid 7)/ProfilerStep*/fwd/matmul <f32>")
    sel = [r for r in dom.tables["ops-table"] if r["attrs"].get("class") == "selected"]
    check([r["attrs"]["data-name"] for r in sel] == ["matmul <f32>"], f"selected rows {[r['attrs'] for r in sel]}")
    m = re.search(r'<div class="note" id="flame-info"><b>([^<]*)</b>([^<]*)', dom.text)
    row = sel[0]["cells"]
    check(m and html.unescape(m.group(1)) == "matmul <f32>" and
          m.group(2) == f" \u2014 {row[4]} in 4 calls on this path; table row: self {row[2]}, total {row[4]}, 4 calls",
          f"flame info {m and m.groups()}")
    # the trace linked, beside the page
    check('<a href="cpu.json" class="trace-link">cpu.json</a>' in dom.text, "no link to the trace")
    # bad use: one line, exit 2, no page left behind
    for args, said in ((["report"], "prof report: usage: prof report TRACE..."),
                       (["report", "--diff", "cpu.json"], "prof report: usage: prof report TRACE..."),
                       (["report", "nope.json"], "prof report: nope.json: cannot open: No such file or directory"),
                       (["report", "cpu.json", "-o", "no/such/dir.html"],
                        "prof report: no/such/dir.html: cannot write: No such file or directory")):
        p = run([tool] + args, tmp, rc=2)
        check(p.stderr.count("\n") == 1 and p.stderr.startswith(said), f"{args}: {p.stderr!r}")


def outlier_trace(path, durs):
    """One thread's steps of durs ns, each holding fwd (half of it) and a
    kernel launched in fwd that runs for half the step (a runtime call, its
    kernel on device 0 stream 7)."""
    ev = ['{"ph":"M","name":"thread_name","pid":1,"tid":7,"ts":0.000,"args":{"name":"main"}}']
    t = 1_000_000
    for n, d in enumerate(durs):
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","pid":1,"tid":7,"ts":{us(t)},"dur":{us(d - 1)}}}')
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"fwd","pid":1,"tid":7,"ts":{us(t)},"dur":{us(d // 2)}}}')
        ev.append(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":7,"ts":{us(t + 10)},'
                  f'"dur":{us(1000)},"args":{{"cbid":211,"correlation":{n + 1}}}}}')
        ev.append(f'{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{us(t + 2000)},"dur":{us(d // 2)},'
                  f'"args":{{"device":0,"stream":7,"correlation":{n + 1}}}}}')
        t += d
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [\n' +
                ",\n".join(ev) + "\n]}\n")


def chart_columns(text, chart):
    """The columns of the chart in div#chart: {x: (drawn height, data-clipped or None)}."""
    m = re.search(rf'<div id="{chart}">(.*?)</div>', text, re.S)
    check(m, f"no {chart}")
    cols = {}
    for attrs, body in re.findall(r'<g ([^>]*class="col"[^>]*)>(.*?)</g>', m.group(1), re.S):
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', attrs))
        h = sum(float(v) for v in re.findall(r'<rect [^>]*height="([\d.e+-]+)"', body))
        cols[a["data-x"]] = (h, int(a["data-clipped"]) if "data-clipped" in a else None)
    return cols


def case_outlier(tool, _scen, _cupti, tmp):
    """Step #0 800x the median: both step charts keep the other steps
    readable, #0 cut at the top with its true time, said on the page."""
    durs = [80_000_000, 100_000, 110_000, 90_000, 105_000, 95_000, 100_000, 120_000]
    outlier_trace(os.path.join(tmp, "outlier.json"), durs)
    page = report(tool, tmp, "outlier.json")
    dom = render(page, tmp)
    top = max(durs[1:])                 # the axis ends at the tallest step within 4x the median (100 us)
    for chart, ih in (("step-chart", 240 - 28 - 24), ("gpu-step-chart", 200 - 28 - 24)):
        cols = chart_columns(dom.text, chart)
        check(sorted(cols) == sorted(f"#{n}" for n in range(len(durs))), f"{chart}: columns {sorted(cols)}")
        h0, cut0 = cols["#0"]
        check(cut0 == durs[0] and abs(h0 - ih) < 1e-6, f"{chart}: #0 {cols['#0']}, not cut at {ih} px")
        for n, d in enumerate(durs[1:], 1):
            h, cut = cols[f"#{n}"]
            check(cut is None and abs(h - ih * d / top) < 1e-6 and h > ih / 2,
                  f"{chart}: #{n} drawn {h} px high, not {ih * d / top} (cut {cut})")
        m = re.search(rf'<p class="note" id="{chart}-cut">([^<]*)</p>', dom.text)
        check(m and "#0 80.000ms (800\u00d7 the median)" in html.unescape(m.group(1)), f"{chart}: note {m and m.group(1)}")
    # without an outlier nothing is cut (cpu's 900 us step is 2x the median)
    cpu_trace(os.path.join(tmp, "cpu.json"))
    dom = render(report(tool, tmp, "cpu.json"), tmp, shot=False)
    cols = chart_columns(dom.text, "step-chart")
    check(all(c is None for _, c in cols.values()) and "step-chart-cut" not in dom.ids, f"cpu: cut {cols}")
    check(abs(cols["#2"][0] - (240 - 28 - 24)) < 1e-6, f"cpu: the tallest step {cols['#2']}, not to the top")


def case_formats(tool, scen, _cupti, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    for out in ("r.json", "r.json.gz", "r.pftrace"):
        p = subprocess.run([scen, "regions"], cwd=tmp, env=dict(env, PROF_OUTPUT=out), capture_output=True, text=True,
                           timeout=120)
        check(p.returncode == 0 and os.path.exists(os.path.join(tmp, out)), f"scenarios regions -> {out}: {p.stderr}")
        page = report(tool, tmp, out, "-o", out.replace(".", "_") + ".html")
        dom, data = render(page, tmp, shot=out.endswith("pftrace")), page_data(page)
        ops_match_table(tool, tmp, out, dom, data)
        check(data["traces"][0]["file"] == out, f"{out}: {data['traces'][0]}")


def case_gpu(tool, _scen, cupti, tmp):
    if not cupti:
        print("report_gpu skipped: no CUPTI double (CUDA's headers are not installed)")
        sys.exit(77)
    p = subprocess.run([cupti, "cupti_kernels", "run"], cwd=tmp, capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if not k.startswith("PROF_")})
    check(p.returncode == 0, f"cupti_kernels: {p.stderr}")
    page = report(tool, tmp, "cupti.1.json")
    dom, data = render(page, tmp), page_data(page)
    ops_match_table(tool, tmp, "cupti.1.json", dom, data)
    ev = json.load(open(os.path.join(tmp, "cupti.1.json")))["traceEvents"]
    ns = lambda x: round(x * 1000)
    kern = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            k = kern.setdefault(e["name"], [0, 0])
            k[0] += 1
            k[1] += ns(e["dur"])
    got = {r["cells"][0]: (int(r["cells"][1]), r["cells"][2]) for r in dom.tables["kernels-table"][1:]}
    want = {name: (n, f"{t / 1000:.3f}us") for name, (n, t) in kern.items()}
    check(got == want, f"kernels {got} != {want}")
    launches = sum(int(r["cells"][1]) for r in dom.tables["launch-table"][1:])
    check(launches == 15, f"{launches} launches, not 15")
    # every launch was made inside "layer" but the loss kernel's, outside any region but the step
    regions = {r["cells"][0]: int(r["cells"][1]) for r in dom.tables["gpu-region-table"][1:]}
    check(regions == {"layer": 12, "ProfilerStep*": 3}, f"GPU time per region {regions}")
    copies = {r["cells"][0]: r["cells"][1:3] for r in dom.tables["copies-table"][1:]}
    check(copies == {"Memcpy HtoD": ["3", "3.00 MiB"], "Memset (Device)": ["3", "12.00 KiB"]}, f"copies {copies}")
    check("gpu-step-chart" in dom.ids and all("gpu" in r for r in data["steps"]["rows"]), "GPU per step")
    check(data["traces"][0]["devices"] == ["Fake GPU 0"], f"devices {data['traces'][0]}")
    # the same cycle as a .pftrace: the same GPU views and steps (their start aside: another origin)
    pf = page_data(report(tool, tmp, "cupti.1.pftrace"))
    check(pf["gpu"] == data["gpu"], f"GPU views of the .pftrace:\n {pf['gpu']}\n JSON's:\n {data['gpu']}")
    strip = lambda rows: [{k: v for k, v in r.items() if k != "t0"} for r in rows]
    check(strip(pf["steps"]["rows"]) == strip(data["steps"]["rows"]), f"steps {pf['steps']} != {data['steps']}")
    # a library's kernels, launched through the driver API (cuda_driver), count as launches too
    p = subprocess.run([cupti, "cupti_driver", "run"], cwd=tmp, capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if not k.startswith("PROF_")})
    check(p.returncode == 0, f"cupti_driver: {p.stderr}")
    dom = render(report(tool, tmp, "driver.1.json", "-o", "driver.html"), tmp, shot=False)
    launches = sum(int(r["cells"][1]) for r in dom.tables["launch-table"][1:])
    check(launches == 6, f"{launches} launches of the driver case's 6 kernels (4 by cuLaunchKernelEx)")


def case_idle(tool, _scen, program, tmp):
    """The GPU view's idle time is prof table's footer, cell for cell, and
    its critical paths the run's: the idle test program's engines
    (tests/gpu/idle_test.c) that wait on an event, synchronise, and run an
    NCCL kernel beside compute."""
    if not program:
        print("report_idle skipped: no CUPTI double (CUDA's headers are not installed)")
        sys.exit(77)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    for case in ("idle_sync_event", "idle_sync_host", "idle_path", "idle_nccl"):
        p = subprocess.run([program, case, "run"], cwd=tmp, capture_output=True, text=True, timeout=120, env=env)
        check(p.returncode == 0, f"{case}: {p.stderr}")
        text = run([tool, "table", "idle.json"], tmp).stdout
        foot = re.findall(r"^GPU (\d+) stream (\d+) busy (\S+) \((\S+) of its span\)(.*)$", text, re.M)
        check(foot, f"{case}: no idle footer in\n{text}")
        page = report(tool, tmp, "idle.json", "-o", case + ".html")
        dom = render(page, tmp, shot=case == "idle_sync_event")
        rows = dom.tables["idle-table"]
        heads = rows[0]["cells"]
        got = {(r["cells"][0], r["cells"][1]): dict(zip(heads, r["cells"])) for r in rows[1:]}
        check(len(got) == len(foot), f"{case}: idle-table {got}, footer {foot}")
        names = {"host late": "Host late", "host in a sync": "Host in a sync", "waiting on an event":
                 "Waiting on an event", "launch gaps": "Launch gaps", "other": "Other"}
        for dev, stream, busy, _share, rest in foot:
            r = got[(dev, stream)]
            check(r["Busy"] == busy, f"{case}: stream {stream}: busy {r['Busy']} != the footer's {busy}")
            causes = dict((names[m[0]], m[1]) for m in re.findall(r"(host late|host in a sync|waiting on an event|"
                                                                   r"launch gaps|other) (\S+) \(", rest))
            for h in names.values():
                want = causes.get(h, "0.000us")
                check(r[h] == want, f"{case}: stream {stream}: {h} {r[h]} != the footer's {want}")
        steps = dom.tables["idle-steps-table"][1:]
        check(len(steps) >= 4 * len(foot), f"{case}: {len(steps)} rows per step for {len(foot)} streams")
        want = [json.loads(line)["path"] for line in open(os.path.join(tmp, "truth.jsonl")) if '"path"' in line]
        fmt = lambda v: f"{v / 1e6:.3f}ms" if v >= 1e6 else f"{v / 1e3:.3f}us"
        cells = [r["cells"] for r in dom.tables["path-table"][1:]]
        check([[c[0], c[2].split()[0], c[4].split()[0], c[6]] for c in cells] ==
              [[str(r["step"]), fmt(r["host"]), fmt(r["gpu"]), str(r["work"])] for r in want],
              f"{case}: path-table {cells} != the run's {want}")
        if case == "idle_nccl":
            m = re.search(r"GPU 0 NCCL kernels: (\S+), (\S+) of it overlapped", text)
            ov = dom.tables["overlap-table"][1]["cells"]
            check(m and ov[1] == m.group(1), f"{case}: overlap table {ov}, footer {m and m.group(0)}")
        else:
            check("overlap-table" not in dom.ids, f"{case}: an NCCL overlap table without NCCL kernels")


def case_energy(tool, _scen, program, tmp):
    if not program:
        print("report_energy skipped: no NVML double (CUDA's headers or NVIDIA's nvml.h are not installed)")
        sys.exit(77)
    p = subprocess.run([program, "energy", "run"], cwd=tmp, capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if not k.startswith("PROF_")})
    check(p.returncode == 0, f"energy: {p.stderr}")
    footer = [line for line in open(os.path.join(tmp, "table.txt")).read().splitlines() if " energy per step: " in line]
    check(len(footer) == 2, f"the run's table: {footer}")
    steps = sorted((e for e in json.load(open(os.path.join(tmp, "energy.1.json")))["traceEvents"]
                    if e["ph"] == "X" and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    want_j = [[e["args"][f"GPU {d} energy (J)"] for d in (0, 1)] for e in steps]
    for trace in ("energy.1.json", "energy.1.pftrace"):
        text = run([tool, "table", trace], tmp).stdout
        got = [line for line in text.splitlines() if " energy per step: " in line]
        check(got == footer, f"prof table {trace}'s footer {got} != the run's {footer}")
        page = report(tool, tmp, trace, "-o", trace.replace(".", "_") + ".html")
        dom, data = render(page, tmp, shot=trace.endswith("json")), page_data(page)
        en = data["energy"]
        for d, line in enumerate(footer):
            # the table's numbers, as printed, against the page's (rounded
            # once more: compared within the printed precision, not as text)
            e = en[d]
            m = ENERGY_FOOTER.fullmatch(line)
            check(m, f"the table's energy line {line!r}")
            close = (abs(float(m[2]) - e["p50"]) <= 6e-4 and abs(float(m[3]) - e["p90"]) <= 6e-4 and
                     abs(float(m[4]) - e["watts"]) <= 0.06 and abs(float(m[6]) - e["per_token"]) <= 6e-4 * e["per_token"])
            check(int(m[1]) == e["device"] and int(m[5]) == e["steps"] and close,
                  f"{trace}: the page's energy {e} is not the table's {line!r}")
        check([r["j"] for r in data["steps"]["rows"]] == want_j, f"{trace}: steps' joules {data['steps']['rows'][:2]}")
        check("energy-step-chart" in dom.ids, f"{trace}: no energy chart")
        rows = dom.tables["steps-table"]
        heads = rows[0]["cells"]
        check(heads[-2:] == ["GPU 0 J", "GPU 1 J"], f"{trace}: steps table heads {heads}")
        check([r["cells"][-2:] for r in rows[1:]] == [[f"{j:.3f}" for j in js] for js in want_j],
              f"{trace}: steps table's joules {[r['cells'][-2:] for r in rows[1:3]]}")
        for d in (0, 1):
            check(f"{en[d]['p50']:.2f} J" in dom.text and f"GPU {d} per token" in dom.text,
                  f"{trace}: overview cards lack GPU {d}'s J/step or J/token")


def case_memory(tool, scen, _cupti, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    p = subprocess.run([scen, "mem_basic"], cwd=tmp, env=dict(env, PROF_OUTPUT="m.json"), capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, f"mem_basic: {p.stderr}")
    page = report(tool, tmp, "m.json")
    dom, data = render(page, tmp), page_data(page)
    ops_match_table(tool, tmp, "m.json", dom, data)
    mem = [e for e in json.load(open(os.path.join(tmp, "m.json")))["traceEvents"] if e["name"] == "[memory]"]
    peak = max(e["args"]["Total Allocated"] for e in mem)
    dev = data["memory"]["devices"]
    check(len(dev) == 1 and dev[0]["peak"] == peak and dev[0]["peak_region"] == "alloc_phase" and dev[0]["events"] == 96,
          f"memory {dev}")
    row = dom.tables["memory-table"][1]["cells"]
    check(row[0] == "CPU (host)" and row[1] == "96" and row[4] == "alloc_phase", f"memory row {row}")
    leaks = data["memory"]["leaks"]
    check(leaks["count"] == 32 and leaks["bytes"] == 1 << 20 and len(dom.tables["leaks-table"]) == 21, f"leaks {leaks}")
    check(dom.tables["leaks-table"][1]["cells"][0] == "63.00 KiB", f"largest leak {dom.tables['leaks-table'][1]}")
    check("memory-chart" in dom.ids, "no memory chart")
    # the same run as a .pftrace: the same figures, but the region at the peak (its events have no thread)
    p = subprocess.run([scen, "mem_basic"], cwd=tmp, env=dict(env, PROF_OUTPUT="m.pftrace"), capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, f"mem_basic: {p.stderr}")
    pf = page_data(report(tool, tmp, "m.pftrace"))["memory"]
    d = pf["devices"][0]
    check((d["dev"], d["events"], d["peak"], d["peak_region"]) == (-1, 96, peak, "(not known: no thread in the trace)")
          and (pf["leaks"]["count"], pf["leaks"]["bytes"]) == (32, 1 << 20), f".pftrace memory {pf}")


def case_ranks(tool, _scen, _cupti, tmp):
    """Rank r's step n takes 100 + 10 n + (50 if r == n % 4) us: the slowest
    rank of step n is n % 4."""
    names = []
    for r in range(4):
        ev, t = [], 0
        for n in range(6):
            d = 100_000 + 10_000 * n + (50_000 if r == n % 4 else 0)
            ev.append(f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","pid":{r},"tid":1,"ts":{us(t)},'
                      f'"dur":{us(d - 1)}}}')
            ev.append(f'{{"ph":"X","cat":"user_annotation","name":"compute","pid":{r},"tid":1,"ts":{us(t + 1000)},'
                      f'"dur":{us(d // 2)}}}')
            t += d
        names.append(f"rank{r}.json")
        with open(os.path.join(tmp, names[-1]), "w") as f:
            f.write(f'{{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {r}, "world_size": 4}},\n'
                    ' "traceEvents": [\n' + ",\n".join(ev) + "\n]}\n")
    page = report(tool, tmp, *names, "-o", "ranks.html")
    dom = render(page, tmp)
    rows = dom.tables["ranks-table"]
    check(rows[0]["cells"][1:] == [f"#{n}" for n in range(6)], f"heads {rows[0]}")
    for r, row in enumerate(rows[1:]):
        check(row["attrs"]["data-rank"] == str(r), f"row {r}: {row['attrs']}")
    cells = re.findall(r'<td class="(slowest|)" data-ns="(\d+)"', dom.text)
    check(len(cells) == 24, f"{len(cells)} cells")
    for i, (cls, v) in enumerate(cells):
        r, n = divmod(i, 6)
        check(int(v) == 100_000 + 10_000 * n + (50_000 if r == n % 4 else 0), f"rank {r} step {n}: {v}")
        check((cls == "slowest") == (r == n % 4), f"rank {r} step {n} marked {cls!r}")


def case_flight(tool, scen, _cupti, tmp):
    for ext in ("json", "pftrace"):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
        env.update(PROF_OUTPUT=f"f.{ext}", PROF_FLIGHT="20", PROF_FLIGHT_SLOW="100", FLIGHT_STEP_US="2000",
                   FLIGHT_STEPS="200", FLIGHT_SLOW_AT="100", FLIGHT_SLOW_X="1000")
        p = subprocess.run([scen, "flight"], cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
        # step 100 is the slow one; a machine loaded enough to stall another
        # step 200 ms makes that one the dump (and step 100 falls in its
        # cooldown): each dump written is checked against its own step
        dumps = sorted(f for f in os.listdir(tmp) if re.fullmatch(rf"f\.slow_step-\d+\.{ext}", f))
        check(p.returncode == 0 and dumps, f"flight: {p.stderr}")
        for trace in dumps:
            step = int(trace.split("-")[1].split(".")[0])
            first = max(0, step - 20)
            page = report(tool, tmp, trace)
            dom = render(page, tmp, shot=ext == "json")
            m = re.search(r'<main id="main">\s*<noscript>.*?</noscript>\s*<div class="banner" id="dump-reason"><b>([^<]*)</b>'
                          r'([^<]*)</div>', dom.text, re.S)
            check(m and m.group(1) == "Flight recorder dump: slow_step"
                  and m.group(2) == f" at step {step} (steps {first} to {step} kept)",
                  f"{trace}: dump banner: {m and m.groups()}")
            steps = [int(r["attrs"]["data-step"]) for r in dom.tables["steps-table"][1:]]
            check(steps == list(range(first, step + 1)), f"{trace}: steps {steps}")


def case_diff(tool, _scen, _cupti, tmp):
    rng = lcg(7)
    base = [70_000 + int(next(rng) * 10_000) for _ in range(50)]
    new = [3 * (70_000 + int(next(rng) * 10_000)) for _ in range(50)]
    calls_trace(os.path.join(tmp, "base.json"), base)
    calls_trace(os.path.join(tmp, "new.json"), new)
    page = report(tool, tmp, "--diff", "base.json", "new.json")
    check(page == os.path.join(tmp, "new.html"), f"page {page}")
    dom = render(page, tmp)
    printed = run([tool, "diff", "base.json", "new.json", "--min-change", "0"], tmp).stdout.splitlines()
    want = re.split(r"\s{2,}", printed[1].strip())
    got = dom.tables["diff-table"][1]["cells"]
    check(got == want, f"diff row {got} != {want}")
    check(got[-1] == "<0.0001" and u_test_p(base, new) < 1e-4, f"p {got[-1]}")
    check("diff-chart" in dom.ids, "no diff chart")


def main():
    case, tool, scen = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    cupti = os.path.abspath(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] else None
    if case == "energy":                # the program it runs is the fifth argument
        cupti = os.path.abspath(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else None
    if not CHROMIUM:
        print(f"report_{case} skipped: no headless Chromium (Debian: apt-get install chromium)")
        sys.exit(77)
    fn = globals().get("case_" + case)
    if not fn:
        fail(f"no case {case}")
    with tempfile.TemporaryDirectory() as tmp:
        fn(tool, scen, cupti, tmp)
    print(f"ok: report {case}")


if __name__ == "__main__":
    main()
