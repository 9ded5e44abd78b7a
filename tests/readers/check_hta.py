#!/usr/bin/env python3
"""Load a trace directory with Holistic Trace Analysis (HTA) and check it.

    check_hta.py DIR [--expect-ranks N] [--expect-names a,b,...]
                     [--expect-steps N] [--expect-nesting parent/child,...]
                     [--expect-annotations a,b,...] [--include-last-step]
                     [--hta-rounding]

Uses the real reader: hta.trace_analysis.TraceAnalysis(trace_dir=DIR), which
maps every *.json / *.gz directly in DIR to a rank (regex '"rank":\\s+(\\d+)',
first match in the file; a file without one becomes rank 0), parses each into
a DataFrame (events without "dur" or "cat" are dropped: M, C, i, flow events),
and by default drops every event at or after the start of the last
ProfilerStep when a rank has 2 or more of them.

Checks:
  * every trace file in DIR got its own rank (HTA silently keeps only one file
    per rank) and --expect-ranks N ranks were loaded;
  * each rank has events, and each --expect-names name is among them;
  * --expect-steps N: TraceAnalysis.get_profiler_steps() lists N steps (with
    the last step dropped unless --include-last-step);
  * --expect-nesting parent/child: HTA's CallGraph (per-thread call stacks,
    works on CPU-only traces) has an event `child` whose parent is `parent`;
  * --expect-annotations: each name is a row of HTA's user-annotation
    breakdown (get_gpu_user_annotation_breakdown(use_gpu_annotation=False),
    which summarises cat "user_annotation" events per rank; CPU-only is fine);
  * when the trace has GPU kernels (stream >= 0 and correlation >= 0), that
    get_gpu_kernel_breakdown() finds them;
  * --expect-kernels a,b: each name is a row of that kernel breakdown, and
    get_temporal_breakdown() and get_idle_time_breakdown() (which raise
    IndexError on a trace without kernels) give a row per rank.
HTA 0.5 rounds every ts up and every end down to a whole microsecond when a
trace's times have decimals (Kineto's since PyTorch 2.4, and ours): a region
that starts and ends within one microsecond gets dur -1, and its CallGraph
raises "ValueError: Unexpected case" when such a region meets one rounded to
dur 0 (tests/readers/mutate.py sub-us shows it on a fixture).  Our times are
exact nanoseconds, so this script sets HTA's own switch against it,
HTA_DISABLE_NS_ROUNDING=1, unless --hta-rounding asks for the default.

Prints one summary line and exits 0 on success; prints failures (and HTA's own
warnings) and exits 1 otherwise; 2 for usage errors.  Run it with the venv
from setup_venv.sh.
"""
import argparse
import logging
import os
import sys
import warnings


def csv(s):
    return [x for x in s.split(",") if x]


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.msgs = []

    def emit(self, record):
        msg = record.getMessage().splitlines()[0][:300]
        if msg not in self.msgs and not msg.startswith(("Parsed ", "Overall parsing", "leaving ",
                                                        "Rounding down")):
            self.msgs.append(msg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--expect-ranks", type=int)
    ap.add_argument("--expect-names", type=csv, default=[])
    ap.add_argument("--expect-steps", type=int)
    ap.add_argument("--expect-nesting", type=csv, default=[],
                    help="comma-separated parent/child name pairs")
    ap.add_argument("--expect-annotations", type=csv, default=[],
                    help="names that get_gpu_user_annotation_breakdown(use_gpu_annotation=False) "
                         "must list (cat user_annotation events)")
    ap.add_argument("--expect-kernels", type=csv, default=[],
                    help="kernel names get_gpu_kernel_breakdown() must list; also runs the "
                         "temporal and idle-time breakdowns")
    ap.add_argument("--include-last-step", action="store_true",
                    help="pass include_last_profiler_step=True to TraceAnalysis")
    ap.add_argument("--hta-rounding", action="store_true",
                    help="keep HTA's default rounding of ns times to whole us")
    args = ap.parse_args()
    # read by HTA at each parse (hta/configs/env_options.py)
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "0" if args.hta_rounding else "1"
    if not os.path.isdir(args.dir):
        print("check_hta: %s is not a directory" % args.dir, file=sys.stderr)
        return 2
    for pair in args.expect_nesting:
        if pair.count("/") != 1:
            print("check_hta: --expect-nesting wants parent/child, got %r" % pair, file=sys.stderr)
            return 2

    warnings.filterwarnings("ignore", category=FutureWarning)
    from hta.common.trace_call_graph import CallGraph
    from hta.common.trace_file import get_trace_files
    from hta.trace_analysis import TraceAnalysis

    # HTA logs INFO/WARNING to stdout; keep them for the failure report only.
    collect = Collect()
    hta_log = logging.getLogger("hta")
    hta_log.handlers[:] = [collect]
    hta_log.setLevel(logging.WARNING)
    hta_log.propagate = False

    fails = []
    files = sorted(f for f in os.listdir(args.dir) if f.endswith((".gz", ".json")))
    # HTA's own file -> rank mapping (what TraceAnalysis uses).
    rank_map = get_trace_files(os.path.abspath(args.dir))
    if files and len(rank_map) < len(files):
        used = {os.path.basename(p) for p in rank_map.values()}
        fails.append("%d trace files but %d ranks: HTA ignored %s (each file needs a distinct "
                     "'\"rank\": N' (with a space after the colon) before its events, e.g. in "
                     "distributedInfo; the directory must hold only trace files)"
                     % (len(files), len(rank_map), sorted(set(files) - used)))

    try:
        ta = TraceAnalysis(trace_dir=os.path.abspath(args.dir),
                           include_last_profiler_step=args.include_last_step)
    except Exception as e:  # noqa: BLE001 - report whatever the reader raised
        fails.append("TraceAnalysis(trace_dir=%r) raised %s: %s" % (args.dir, type(e).__name__, e))
        return report(fails, collect)
    t = ta.t
    ranks = t.get_ranks()
    if args.expect_ranks is not None and len(ranks) != args.expect_ranks:
        fails.append("loaded %d ranks %s, expected %d" % (len(ranks), ranks, args.expect_ranks))

    sym = t.symbol_table.get_sym_table()
    n_events = {}
    gpu_events = 0
    for r in ranks:
        df = t.get_trace(r)
        n_events[r] = len(df)
        if len(df) == 0:
            fails.append("rank %d: no events left after parsing (HTA keeps only events with "
                         "dur and cat)" % r)
            continue
        names = {sym[i] for i in df["name"].unique()}
        for n in args.expect_names:
            if n not in names:
                fails.append("rank %d: no event named %r among %d events (HTA keeps events with "
                             "dur and cat, and drops those from the last ProfilerStep on unless "
                             "--include-last-step)" % (r, n, len(df)))
        if "stream" in df.columns and "correlation" in df.columns:
            gpu_events += int(((df["stream"] >= 0) & (df["correlation"] >= 0)).sum())

    steps = []
    try:
        steps = [int(s) for s in ta.get_profiler_steps()]
    except Exception as e:  # noqa: BLE001
        fails.append("get_profiler_steps() raised %s: %s" % (type(e).__name__, e))
    if args.expect_steps is not None and len(steps) != args.expect_steps:
        fails.append("get_profiler_steps() = %s, expected %d steps" % (steps, args.expect_steps))

    depth = 0
    if args.expect_nesting or ranks:
        try:
            cg = CallGraph(t)
            for r in ranks:
                df = t.get_trace(r)
                if "depth" in df.columns and len(df):
                    depth = max(depth, int(df["depth"].max()) + 1)
                for pair in args.expect_nesting:
                    parent, child = pair.split("/")
                    children = df[df["name"].map(lambda i: sym[i]) == child]
                    parents = set(children["parent"]) if "parent" in children else set()
                    pnames = {sym[df.loc[p, "name"]] for p in parents if p in df.index}
                    if parent not in pnames:
                        fails.append("rank %d: CallGraph has no %r under %r (parents of %r: %s)"
                                     % (r, child, parent, child, sorted(pnames)))
            if not cg.call_stacks:
                fails.append("CallGraph built no call stacks")
        except Exception as e:  # noqa: BLE001
            fails.append("CallGraph(trace) raised %s: %s" % (type(e).__name__, e))

    annotations = None
    if args.expect_annotations:
        try:
            ua = ta.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False,
                                                      num_kernels=1 << 30)
            annotations = set() if ua is None else set(ua["name"])
            for n in args.expect_annotations:
                if n not in annotations:
                    fails.append("%r not in HTA's user_annotation breakdown (%s)"
                                 % (n, sorted(annotations)[:10] if annotations else
                                    "no cat user_annotation events"))
        except Exception as e:  # noqa: BLE001
            fails.append("get_gpu_user_annotation_breakdown(use_gpu_annotation=False) raised "
                         "%s: %s" % (type(e).__name__, e))

    kernels = None
    if gpu_events:
        try:
            kt, kd = ta.get_gpu_kernel_breakdown(visualize=False)
            kernels = float(kt["sum"].sum()) if len(kt) else 0.0
            if not len(kt):
                fails.append("trace has %d GPU events but get_gpu_kernel_breakdown() is empty"
                             % gpu_events)
            listed = set(kd["name"]) if len(kd) else set()
            for n in args.expect_kernels:
                if n not in listed:
                    fails.append("%r not in get_gpu_kernel_breakdown() (%s)" % (n, sorted(listed)[:10]))
        except Exception as e:  # noqa: BLE001
            fails.append("get_gpu_kernel_breakdown() raised %s: %s" % (type(e).__name__, e))
    if args.expect_kernels:
        for what in ("get_temporal_breakdown", "get_idle_time_breakdown"):
            try:
                r = getattr(ta, what)(visualize=False)
                df = r[0] if isinstance(r, tuple) else r
                if len(df) < len(ranks):
                    fails.append("%s() has %d rows for %d ranks" % (what, len(df), len(ranks)))
            except Exception as e:  # noqa: BLE001
                fails.append("%s() raised %s: %s" % (what, type(e).__name__, e))

    if fails:
        return report(fails, collect)
    print("check_hta: OK ranks=%s events=%s steps=%s call_depth=%d gpu_events=%d%s%s%s" % (
        ranks, [n_events[r] for r in ranks], steps, depth, gpu_events,
        (" names=%s" % ",".join(args.expect_names)) if args.expect_names else "",
        (" annotations=%d" % len(annotations)) if annotations is not None else "",
        (" kernel_time_us=%.3f" % kernels) if kernels is not None else ""))
    return 0


def report(fails, collect):
    for f in fails:
        print("check_hta: FAIL: " + f, file=sys.stderr)
    for m in collect.msgs[:10]:
        print("check_hta:   hta warning: " + m, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
