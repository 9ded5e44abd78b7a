#!/usr/bin/env python3
"""Checks kernel capture's synchronisations (cupti_test.c's cupti_sync),
read back by Python's json, the .pftrace's decoder and HTA.

Steps 2-4 of six are recorded (step 1 warms up); each makes four
synchronising calls (cudaStreamWaitEvent of stream 14 on an event recorded
on stream 13, cudaEventSynchronize on it, cudaStreamSynchronize of stream
14, cudaDeviceSynchronize). Each recorded one is exactly one cuda_sync
event, as Kineto writes it:
  - its name and args Kineto's: cuda_sync_kind, stream (CUPTI's id, -1 for
    none), correlation (its call's), device; on an event, wait_on_cuda_event_id,
    wait_on_stream and wait_on_cuda_event_record_corr_id: the stream and
    call of the event's last record before it;
  - at its true time: CUPTI's start and end of the host's wait, placed as
    its call is (its start after its call's by what CUPTI says, to 1 us, and
    its length to 1 us), and a host wait ends once the device has run what it
    waited for (the kernel's end in the trace, to 2 ns of rounding); the
    kernel after cudaStreamWaitEvent starts after the one it waited for;
  - on its row beside its stream: tid stream + 1000000 ("stream N (sync)"),
    or 999999 ("sync") for those of no stream;
  - an ac2g flow from its call, and on an event a wait_on_event flow from the
    cudaEventRecord call that recorded it;
  - CUPTI took the synchronisations of the warm-up and recorded steps only
    (16), none of the steps outside the window.
The .pftrace says the same (tests/pftrace.py); HTA parses the trace without
error, its cuda_sync rows carrying the wait columns its critical path
reads, its kernel and idle-time breakdowns run on it, and its critical path
of each step has the 5 sync edges the waits make."""
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from run_case import check  # noqa: E402

ROW = 1000000


def ns(us):
    return round(us * 1000)


def check_json(d, truth):
    from check_cupti import check_trace
    check_trace(d, launches=9)          # the kernels as every capture case's, no track overlapping partially
    ev = d["traceEvents"]
    syncs = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_sync"]
    calls = {e["args"]["correlation"]: e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"}
    kernels = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"), key=lambda e: e["ts"])
    want = truth["sync"]
    check(len(syncs) == len(want) == 12, f"{len(syncs)} cuda_sync events, {len(want)} synchronisations recorded, not 12")
    got = collections.Counter(e["name"] for e in syncs)
    check(got == {"Stream Wait Event": 3, "Event Sync": 3, "Stream Sync": 3, "Context Sync": 3}, f"kinds {dict(got)}")
    by_corr = {e["args"]["correlation"]: e for e in syncs}
    check(len(by_corr) == 12, "two cuda_sync events share a correlation")
    records = sorted((r["record"] for r in truth["record"]), key=lambda r: r["corr"])
    flows = collections.defaultdict(dict)
    for e in ev:
        if e.get("ph") in ("s", "f") and e.get("cat") in ("ac2g", "cuda_sync"):
            check(e["ph"] not in flows[(e["cat"], e["id"])], f"flow {e['id']} has two {e['ph']}")
            flows[(e["cat"], e["id"])][e["ph"]] = e
    names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"
             and e["pid"] == 0}
    for w in (x["sync"] for x in want):
        e = by_corr.get(w["corr"])
        check(e is not None, f"no cuda_sync for {w['name']} (correlation {w['corr']})")
        a = e["args"]
        check(e["name"] == w["name"] == a["cuda_sync_kind"], f"{e['name']} / {a['cuda_sync_kind']}, not {w['name']}")
        check(a["stream"] == w["stream"] and a["device"] == 0 and e["pid"] == 0, f"{w['name']}: args {a}")
        row = w["stream"] + ROW if w["stream"] >= 0 else ROW - 1
        label = f"stream {w['stream']} (sync)" if w["stream"] >= 0 else "sync"
        check(e["tid"] == row and names.get(row) == label, f"{w['name']} on tid {e['tid']} ({names.get(e['tid'])}), "
              f"not {row} ({label})")
        if w["event"] >= 0:
            rec = [r for r in records if r["corr"] < w["corr"] and r["event"] == w["event"]][-1]
            check(a["wait_on_cuda_event_id"] == w["event"] and a["wait_on_cuda_event_record_corr_id"] == rec["corr"]
                  and a["wait_on_stream"] == rec["stream"], f"{w['name']}: waits on {a}, not the record {rec}")
            f = flows.get(("cuda_sync", next((k[1] for k, v in flows.items() if k[0] == "cuda_sync" and "f" in v
                                              and v["f"]["ts"] == e["ts"] and v["f"]["tid"] == e["tid"]), None)))
            check(f and set(f) == {"s", "f"} and f["s"]["ts"] == calls[rec["corr"]]["ts"]
                  and calls[rec["corr"]]["name"] == "cudaEventRecord",
                  f"{w['name']}: no wait_on_event flow from its cudaEventRecord: {f}")
        else:
            check("wait_on_stream" not in a and "wait_on_cuda_event_id" not in a, f"{w['name']}: args {a}")
        call = calls.get(w["corr"])
        check(call is not None, f"{w['name']}: its call (correlation {w['corr']}) is not in the trace")
        f = [v for k, v in flows.items() if k[0] == "ac2g" and "f" in v and v["f"]["ts"] == e["ts"]
             and v["f"]["tid"] == e["tid"]]
        check(len(f) == 1 and set(f[0]) == {"s", "f"} and f[0]["s"]["ts"] == call["ts"]
              and f[0]["s"]["tid"] == call["tid"], f"{w['name']}: no ac2g flow from its call: {f}")
        # its true time: CUPTI's, placed as its call is
        lead, dur = ns(e["ts"]) - ns(call["ts"]), ns(e["dur"])
        check(abs(lead - (w["t0"] - w["call_t0"])) <= 1000 and abs(dur - (w["t1"] - w["t0"])) <= 1000,
              f"{w['name']}: {lead} ns after its call, {dur} ns long; CUPTI's {w['t0'] - w['call_t0']}, "
              f"{w['t1'] - w['t0']}")
        check(ns(e["ts"]) >= ns(call["ts"]) and ns(e["ts"]) + dur <= ns(call["ts"]) + ns(call["dur"]),
              f"{w['name']} [{e['ts']}, +{e['dur']}] is not inside its call [{call['ts']}, +{call['dur']}]")
    # a host wait ends once what it waited for has run; a stream made to
    # wait runs its next kernel after the event's
    for step in range(3):
        produce, consume, update = kernels[3 * step:3 * step + 3]
        check("produce" in produce["name"] and "consume" in consume["name"] and "update" in update["name"],
              f"kernels of step {step}: {[k['name'] for k in (produce, consume, update)]}")
        end = lambda k: ns(k["ts"]) + ns(k["dur"])
        check(ns(consume["ts"]) >= end(produce) - 2, f"step {step}: consume starts before produce ends")
        ws = sorted((e for e in syncs if e["name"] != "Stream Wait Event"), key=lambda e: e["ts"])[3 * step:3 * step + 3]
        for e, k in zip(ws, (produce, consume, update)):
            check(ns(e["ts"]) + ns(e["dur"]) >= end(k) - 2,
                  f"step {step}: {e['name']} ends at {e['ts'] + e['dur']} us, before {k['name']} at "
                  f"{(ns(k['ts']) + ns(k['dur'])) / 1000} us")
    return syncs


def check_pftrace(json_path, pf_path, nsyncs):
    import pftrace
    if pftrace.pb is None:
        print("cupti_sync: the .pftrace not checked (the perfetto package is not installed)")
        return
    j, pf = pftrace.load_json(json_path), pftrace.decode_pftrace(pf_path)
    diff = j.diff(pf)
    check(not diff, "the .pftrace and the JSON differ:\n" + "\n".join(diff))
    n = sum(c for k, c in pf.slices.items() if k[0][0] == "gpu" and k[0][2] >= ROW - 1)
    check(n == nsyncs, f"{n} synchronisation slices in the .pftrace, not {nsyncs}")
    check(sum(pf.flows.values()) == 9 + 12 + 6, f"{sum(pf.flows.values())} flows, not 9 launches + 12 syncs + 6 waits")


def check_hta(json_path):
    try:
        import hta  # noqa: F401
    except ImportError:
        print("cupti_sync: HTA not checked (the readers' venv is not in use)")
        return
    os.makedirs("hta", exist_ok=True)
    with open(json_path) as src, open(os.path.join("hta", "sync.1.json"), "w") as dst:
        dst.write(src.read())
    readers = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "readers")
    r = subprocess.run([sys.executable, os.path.join(readers, "check_hta.py"), "hta", "--include-last-step",
                        "--expect-kernels", "produce(),consume(),update()"], capture_output=True, text=True,
                       timeout=600)
    print(r.stdout.strip())
    check(r.returncode == 0, f"check_hta.py failed:\n{r.stdout}\n{r.stderr}")
    os.environ.setdefault("HTA_DISABLE_NS_ROUNDING", "1")
    from hta.trace_analysis import TraceAnalysis
    t = TraceAnalysis(trace_dir=os.path.abspath("hta"), include_last_profiler_step=True).t
    df, sym = t.get_trace(0), t.symbol_table.get_sym_id_map()
    rows = df[df["cat"] == sym["cuda_sync"]]
    check(len(rows) == 12, f"HTA read {len(rows)} cuda_sync rows, not 12")
    ev = rows[rows["name"].isin([sym["Event Sync"], sym["Stream Wait Event"]])]
    check(len(ev) == 6 and (ev["wait_on_stream"] == 113).all() and (ev["wait_on_cuda_event_record_corr_id"] > 0).all(),
          f"HTA's wait columns: {ev[['wait_on_stream', 'wait_on_cuda_event_record_corr_id']].values.tolist()}")
    linked = (rows["index_correlation"] >= 0).sum() if "index_correlation" in rows else 12
    check(linked == 12, f"HTA linked {linked} of 12 cuda_sync rows to their calls")
    # HTA's critical path of each step: a sync edge per wait, GPU to CPU for
    # the event's, the stream's and (one per stream) the device's, kernel to
    # kernel for the stream made to wait
    import logging
    import warnings
    from hta.analyzers.critical_path_analysis import CPEdgeType
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    ta = TraceAnalysis(trace_dir=os.path.abspath("hta"), include_last_profiler_step=True)
    for step in range(3):
        cp, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=step)
        n = sum(1 for e in cp.edges(data=True) if e[2]["object"].type == CPEdgeType.SYNC_DEPENDENCY)
        check(ok and n == 5, f"HTA's critical path of step {step}: ok {ok}, {n} sync edges, not 5")


def check_case(p, read_truth):
    truth = read_truth()
    taken = truth["taken"][0]["taken"]
    check(taken["syncs"] == 16 and taken["records"] == 4,
          f"CUPTI took {taken['syncs']} synchronisations and {taken['records']} event records, not 16 and 4 "
          "(the warm-up and recorded steps')")
    check(taken["enabled_after"] == 0, "CUPTI's kinds still enabled after shutdown")
    with open("sync.1.json") as f:
        d = json.load(f)
    check(not os.path.exists("sync.2.json"), "more than one cycle saved")
    check(d["prof_gpu_dropped_activities"] == 0, "activities dropped")
    syncs = check_json(d, truth)
    check_pftrace("sync.1.json", "sync.1.pftrace", len(syncs))
    check_hta("sync.1.json")
    print(f"cupti_sync: {len(syncs)} cuda_sync events, each at its time with its call's flow; "
          f"{sum(1 for e in syncs if 'wait_on_stream' in e['args'])} on an event, each with its record's")


def check_refused(p, read_truth, stderr_lines):
    """CUPTI refused SYNCHRONIZATION: one line, asked once only; the
    kernels in the trace, no synchronisation taken or written."""
    lines = stderr_lines(p)
    check(lines == ["prof: CUPTI: cuptiActivityEnable of synchronisations failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES "
                    "(fake); kernels are captured, synchronisations (cuda_sync) are not"], f"stderr {p.stderr}")
    taken = read_truth()["taken"][0]["taken"]
    check(taken["syncs"] == 0 and taken["records"] == 0, f"CUPTI took {taken}")
    with open("sync.1.json") as f:
        ev = json.load(f)["traceEvents"]
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
    check(len(kernels) == 9 and not [e for e in ev if e.get("cat") == "cuda_sync"],
          f"{len(kernels)} kernels, {sum(1 for e in ev if e.get('cat') == 'cuda_sync')} cuda_sync events")
    print("cupti_sync_refused: one line; 9 kernels captured, no synchronisation")
