#!/usr/bin/env python3
"""Load a trace directory with PyTorch's TensorBoard profiler plugin and check it.

    check_tb.py DIR [--expect-steps N] [--expect-ops a,b,...] [--expect-memory]
                    [--expect-workers N] [--expect-trace-names a,b,...]
                    [--expect-memory-peak DEV=BYTES] [--expect-memory-last DEV=BYTES]
                    [--expect-memory-events DEV=N] [--expect-memory-op NAME=BYTES/COUNT]

Runs the real plugin (torch_tb_profiler.plugin.TorchProfilerPlugin): its run
discovery (_get_run_dirs: directories holding <worker>[.<span>].pt.trace.json[.gz]),
its RunLoader (one spawned process per file: RunProfileData.parse +
RunGenerator), and the HTTP routes the TensorBoard UI calls (/runs, /views,
/workers, /spans, /overview, /operation/table, /memory, /memory_curve,
/memory_events, /trace), through werkzeug's test client.

Checks, for every run under DIR and every trace file in it:
  * the run is discovered and loaded, and each file's worker is listed
    (the loader drops a worker whose file fails to parse; the parse error is
    reproduced in-process and printed);
  * --expect-steps N: the Overview lists N steps, and they come from
    ProfilerStep#<n> events (without any, the plugin invents one step "0");
  * --expect-ops: each name is a row of the Operator view.  Only events with
    cat "cpu_op" (or "operator") are operators there; cat "user_annotation"
    regions other than ProfilerStep#N are dropped by the plugin;
  * --expect-memory: the Memory view is offered and its curve and event table
    have rows (needs [memory] instant events with Addr, Total Allocated,
    Total Reserved, Device Type 0/1); every curve point's Reserved is at least
    its Allocated, as the plugin's curves mean them;
  * --expect-memory-peak / --expect-memory-last DEV=BYTES: the memory curve of
    device DEV (CPU, GPU0, ...) peaks at / ends at BYTES allocated;
  * --expect-memory-events DEV=N: the memory events table of DEV has N rows
    (an allocation with its free is one row);
  * --expect-memory-op NAME=BYTES/COUNT: in the Memory view (CPU), operator
    NAME has Self Size Increase BYTES and Self Allocation Count COUNT;
  * --expect-trace-names: each name is an X event in what /trace serves to the
    trace viewer (the only view where user_annotation regions appear);
  * --expect-workers N: exactly N workers per run.
Prints one summary line and exits 0 on success; prints the failures and exits 1
otherwise (2 for usage errors).  Run it with the venv from setup_venv.sh.
"""
import argparse
import gzip
import json
import logging
import os
import sys
import tempfile
import time
from urllib.parse import urlencode


def csv(s):
    return [x for x in s.split(",") if x]


def dev_value(s):
    dev, _, v = s.partition("=")
    return dev, int(v)


def op_memory(s):
    name, _, v = s.rpartition("=")
    size, _, count = v.partition("/")
    return name, int(size), int(count)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--expect-steps", type=int)
    ap.add_argument("--expect-ops", type=csv, default=[])
    ap.add_argument("--expect-memory", action="store_true")
    ap.add_argument("--expect-workers", type=int)
    ap.add_argument("--expect-trace-names", type=csv, default=[])
    ap.add_argument("--expect-memory-peak", type=dev_value, action="append", default=[])
    ap.add_argument("--expect-memory-last", type=dev_value, action="append", default=[])
    ap.add_argument("--expect-memory-events", type=dev_value, action="append", default=[])
    ap.add_argument("--expect-memory-op", type=op_memory, action="append", default=[])
    ap.add_argument("--timeout", type=float, default=180.0,
                    help="seconds to wait for the plugin to load (default 180)")
    return ap.parse_args()


class Failures(list):
    def add(self, msg):
        self.append(msg)


def main():
    args = parse_args()
    if not os.path.isdir(args.dir):
        print("check_tb: %s is not a directory" % args.dir, file=sys.stderr)
        return 2

    # Quiet the plugin's own INFO chatter; its warnings (e.g. a worker that
    # failed to parse) still reach stderr.
    logging.getLogger("pytorch_profiler").setLevel(logging.WARNING)
    # pandas FutureWarnings from the plugin's loader processes (spawned; they
    # inherit the environment) are noise here.
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")

    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client
    from torch_tb_profiler import consts, io as tbio
    from torch_tb_profiler.plugin import TorchProfilerPlugin
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.node import ProfilerStepNode
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    fails = Failures()
    logdir = os.path.abspath(args.dir)
    plugin = TorchProfilerPlugin(base_plugin.TBContext(logdir=logdir))
    apps = plugin.get_plugin_apps()

    def get(route, **params):
        resp = Client(apps[route]).get("/?" + urlencode(params))
        body = resp.get_data()
        if resp.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if resp.status_code != 200:
            raise RuntimeError("%s %s -> HTTP %d: %s" % (route, params, resp.status_code,
                                                         body[:300].decode("utf-8", "replace")))
        return json.loads(body)

    # Discovery, with the plugin's own code.
    run_dirs = sorted(set(plugin._get_run_dirs()))
    if not run_dirs:
        print("check_tb: FAIL: no run discovered under %s: TensorBoard needs files named "
              "<worker>[.<span>].pt.trace.json[.gz] (pattern %s)"
              % (args.dir, consts.WORKER_PATTERN.pattern.split("#")[0].strip()), file=sys.stderr)
        return 1
    run_names = {d: plugin._get_run_name(d) for d in run_dirs}

    deadline = time.time() + args.timeout
    while True:
        runs = get("/runs")
        if set(run_names.values()) <= set(runs["runs"]) and not runs["loading"]:
            break
        if time.time() > deadline:
            print("check_tb: FAIL: plugin did not finish loading %s within %.0fs (loaded: %s)"
                  % (sorted(run_names.values()), args.timeout, runs["runs"]), file=sys.stderr)
            return 1
        time.sleep(0.2)

    summary = []
    for run_dir in run_dirs:
        name = run_names[run_dir]
        files = [f for f in tbio.listdir(run_dir)
                 if not tbio.isdir(tbio.join(run_dir, f)) and consts.WORKER_PATTERN.match(f)]
        want_workers = sorted({consts.WORKER_PATTERN.match(f).group(1) for f in files})
        run = plugin._get_run(name)
        loaded = sorted({w for (w, _span) in run.profiles.keys()}) if run.profiles else []
        missing = [w for w in want_workers if w not in loaded]
        for w in missing:
            # The loader only logs a worker's parse failure; reproduce it here.
            for f in files:
                if consts.WORKER_PATTERN.match(f).group(1) != w:
                    continue
                try:
                    d = RunProfileData.parse(w, None, os.path.join(run_dir, f), tempfile.mkdtemp())
                    RunGenerator(w, None, d).generate_run_profile()
                    why = "loader dropped it (no error when re-parsed in-process)"
                except Exception as e:  # noqa: BLE001 - report whatever the reader raised
                    why = "%s: %s" % (type(e).__name__, e)
                fails.add("run %r: worker %r (%s) failed to load: %s" % (name, w, f, why))
        if not loaded:
            fails.add("run %r: no worker loaded" % name)
            continue
        if args.expect_workers is not None and len(loaded) != args.expect_workers:
            fails.add("run %r: %d workers %s, expected %d"
                      % (name, len(loaded), loaded, args.expect_workers))

        views = get("/views", run=name)
        need_views = ["Overview", "Operator", "Trace"] + (["Memory"] if args.expect_memory else [])
        for v in need_views:
            if v not in views:
                why = ""
                if v == "Memory":
                    why = " (needs ph 'i' events named [memory] in at least one worker)"
                fails.add("run %r: view %r not offered; views=%s%s" % (name, v, views, why))

        workers = get("/workers", run=name, view="Overview")
        for w in want_workers:
            if w not in workers:
                fails.add("run %r: worker %r not listed by /workers (got %s)" % (name, w, workers))

        steps_seen = set()
        for w in loaded:
            spans = get("/spans", run=name, worker=w)
            for span in spans or [None]:
                q = dict(run=name, worker=w)
                if span is not None:
                    q["span"] = span
                where = "run %r worker %r span %s" % (name, w, span)
                profile = run.get_profile(w, span)

                ov = get("/overview", **q)
                rows = ov["steps"]["rows"]
                steps_seen.add(len(rows))
                n_step_nodes = sum(
                    1 for root in profile.tid2tree.values()
                    for node in _walk(root) if isinstance(node, ProfilerStepNode))
                if args.expect_steps is not None:
                    if n_step_nodes == 0:
                        fails.add("%s: no ProfilerStep#<n> X event recognised (cat user_annotation "
                                  "or cpu_op, name 'ProfilerStep#<integer>'); overview shows "
                                  "synthesized step(s) %s" % (where, [r[0] for r in rows]))
                    elif len(rows) != args.expect_steps:
                        fails.add("%s: overview has %d steps %s, expected %d"
                                  % (where, len(rows), [r[0] for r in rows], args.expect_steps))

                if args.expect_ops:
                    table = get("/operation/table", group_by="Operation", **q)
                    ops = {r["name"]: r for r in table["data"]}
                    for op in args.expect_ops:
                        if op not in ops:
                            fails.add("%s: %r not in the Operator view (%d operators: %s)%s"
                                      % (where, op, len(ops), sorted(ops)[:10],
                                         _why_not_op(run_dir, op)))
                        elif ops[op]["calls"] < 1:
                            fails.add("%s: operator %r has %d calls" % (where, op, ops[op]["calls"]))

                if args.expect_memory:
                    if not any(v.name == "memory" for v in profile.views):
                        fails.add("%s: no Memory view for this worker (no [memory] events)" % where)
                    else:
                        curve = get("/memory_curve", **q)
                        n_curve = sum(len(v) for v in curve["rows"].values())
                        if n_curve == 0:
                            fails.add("%s: memory curve is empty ([memory] events need args "
                                      "Addr, Total Allocated, Total Reserved)" % where)
                        events = get("/memory_events", **q)
                        if sum(len(v) for v in events["rows"].values()) == 0:
                            fails.add("%s: memory events table is empty ([memory] events need "
                                      "args Addr and Bytes)" % where)
                        get("/memory", **q)  # must not raise; per-operator table
                        for dev, pts in curve["rows"].items():
                            bad = [p for p in pts if p[2] < p[1]]
                            if bad:
                                fails.add("%s: %s curve has Reserved below Allocated at %s" % (where, dev, bad[:3]))
                    _check_memory_numbers(args, get, q, where, fails)

                if args.expect_trace_names:
                    tr = get("/trace", **q)
                    evs = tr["traceEvents"] if isinstance(tr, dict) else tr
                    names = {e.get("name") for e in evs if e.get("ph") == "X"}
                    for n in args.expect_trace_names:
                        if n not in names:
                            fails.add("%s: no X event named %r in the trace view" % (where, n))

        summary.append("run=%s workers=%s steps=%s" % (
            name, ",".join(loaded), "/".join(str(s) for s in sorted(steps_seen))))

    if fails:
        for f in fails:
            print("check_tb: FAIL: " + f, file=sys.stderr)
        return 1
    extra = []
    if args.expect_ops:
        extra.append("ops=%s" % ",".join(args.expect_ops))
    if args.expect_memory:
        extra.append("memory=ok")
    n_mem = len(args.expect_memory_peak + args.expect_memory_last + args.expect_memory_events
                + args.expect_memory_op)
    if n_mem:
        extra.append("memory_figures=%d" % n_mem)
    if args.expect_trace_names:
        extra.append("trace_names=%d" % len(args.expect_trace_names))
    print(("check_tb: OK %s %s" % ("; ".join(summary), " ".join(extra))).rstrip())
    return 0


def _check_memory_numbers(args, get, q, where, fails):
    """The --expect-memory-* figures, in bytes and microseconds."""
    if not (args.expect_memory_peak or args.expect_memory_last or args.expect_memory_events
            or args.expect_memory_op):
        return
    curve = get("/memory_curve", memory_metric="B", time_metric="us", **q)["rows"]
    for dev, want in args.expect_memory_peak + args.expect_memory_last:
        if not curve.get(dev):
            fails.add("%s: no memory curve for %s (devices %s)" % (where, dev, sorted(curve)))
    for dev, want in args.expect_memory_peak:
        got = max((p[1] for p in curve.get(dev, [])), default=None)
        if got != want:
            fails.add("%s: %s curve peaks at %s bytes, expected %d" % (where, dev, got, want))
    for dev, want in args.expect_memory_last:
        pts = curve.get(dev, [])
        got = pts[-1][1] if pts else None
        if got != want:
            fails.add("%s: %s curve ends at %s bytes, expected %d" % (where, dev, got, want))
    if args.expect_memory_events:
        rows = get("/memory_events", memory_metric="B", time_metric="us", **q)["rows"]
        for dev, want in args.expect_memory_events:
            if len(rows.get(dev, [])) != want:
                fails.add("%s: %s memory events table has %d rows, expected %d"
                          % (where, dev, len(rows.get(dev, [])), want))
    if args.expect_memory_op:
        table = get("/memory", memory_metric="B", **q)
        cols = [c["name"] for c in table["columns"]]
        rows = {r[0]: dict(zip(cols, r)) for r in table["rows"].get("CPU", [])}
        for name, size, count in args.expect_memory_op:
            r = rows.get(name)
            got = (r["Self Size Increase (B)"], r["Self Allocation Count"]) if r else None
            if got != (size, count):
                fails.add("%s: Memory view row %r has (Self Size Increase, Self Allocation Count) %s, "
                          "expected %s (rows: %s)" % (where, name, got, (size, count), sorted(rows)))


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(getattr(n, "children", []) or [])


def _why_not_op(run_dir, op):
    """Explain a missing operator by looking at the raw events with that name."""
    cats = set()
    for f in os.listdir(run_dir):
        p = os.path.join(run_dir, f)
        try:
            raw = gzip.open(p).read() if f.endswith(".gz") else open(p, "rb").read()
            obj = json.loads(raw)
        except Exception:  # noqa: BLE001
            continue
        evs = obj.get("traceEvents", []) if isinstance(obj, dict) else obj
        cats |= {e.get("cat") for e in evs if e.get("name") == op and e.get("ph") == "X"}
    if not cats:
        return "; no X event with that name in the trace files"
    if cats & {"user_annotation", "gpu_user_annotation"}:
        return ("; the trace has it with cat %s: torch_tb_profiler drops user_annotation "
                "regions (profiler/trace.py create_trace_event); the Operator view lists only "
                "cat cpu_op/operator events" % sorted(c for c in cats if c))
    return "; the trace has it with cat %s" % sorted(str(c) for c in cats)


if __name__ == "__main__":
    sys.exit(main())
