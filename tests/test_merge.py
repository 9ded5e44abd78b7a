#!/usr/bin/env python3
"""Checks the prof tool (tools/prof): prof merge, prof table, prof diff.

    test_merge.py CASE PROF MERGE_RANKS

align   2 and 4 synthetic ranks whose clocks are off by known amounts, sync
        points with per-rank jitter (and one straggler): the offsets are the
        exact medians, every event lands on the reference clock within the
        jitter bound, times within a rank are kept to the nanosecond.
format  pids, process names, flow ids, the header, fields kept byte for byte,
        ranks from argument positions, -o -, --quiet, --help.
errors  invalid JSON at an exact byte, missing file, duplicate rank, not a
        trace, bad options: one line and exit 2; no common sync point: one
        warning and a valid trace.
real    two ranks of tests/merge_ranks.c (prof.h, PROF_SET_RANK, PROF_SYNC
        after a barrier) run side by side and merged.
gzip    a rank given as .json.gz (Python's gzip, levels 1 and 9, two members)
        merges to the very bytes of its plain .json; a broken gzip file is
        one line and exit 2.
cli     prof table (the table of a saved trace, exact against known
        durations, as the run's own) and prof diff (a region made slower on
        purpose at the top, the unchanged left out, exit 1 over --fail-over).
utest   prof diff's U test on synthetic runs of 100 calls of ~75 us: the same
        work with 4 calls held up 1 ms each (a loaded machine: +50% and more
        in total) is not significant and fails no --fail-over 50; the same
        work 3x slower is, and fails it; the p column is the normal
        approximation's, computed here again.
example prof diff on two runs of the example (examples/train_mlp.c, given
        as MERGE_RANKS), the second with its optimizer step slowed on purpose
        (TRAIN_MLP_SLOW_SGD): that region at the top (beside the loader's
        wait, which mirrors it), the largest change, named on stderr, exit 1.
perfetto  Perfetto traces: two synthetic ranks built with Perfetto's own
        compiled proto (rank 1's clock off by a known amount, sync points on
        an incremental sequence clock, one absolute timestamp) merge exactly;
        two ranks of merge_ranks.c written as .pftrace merge, decoded by
        tests/pftrace.py; mixing formats and a .json name are refused.

Synthetic traces are written as text, so the exact bytes of every event are
known; merged traces are read with Python's json (Decimal numbers, so times
compare exactly)."""
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from decimal import Decimal

NS = 10**9
J = 5_000                      # sync jitter bound per rank: +-5 us
REAL0 = 1_700_000_000_250_000_000   # a real instant (ns) the runs start near


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def us(ns):
    """ns as prof.h writes microseconds: 3 decimals, exact."""
    return f"{'-' if ns < 0 else ''}{abs(ns) // 1000}.{abs(ns) % 1000:03d}"


def ns_of(x):
    """A ts read as Decimal back to integer ns."""
    v = x * 1000
    check(v == v.to_integral_value(), f"ts {x} is not a whole number of ns")
    return int(v)


def merge(tool, args, cwd, expect_rc=0):
    """prof merge ARGS"""
    p = subprocess.run([tool, "merge"] + args, cwd=cwd, capture_output=True, encoding="utf-8", timeout=120)
    check(p.returncode == expect_rc, f"prof merge {' '.join(args)} exited {p.returncode}, not {expect_rc}:\n"
          f"{p.stderr}")
    return p


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    d = json.loads(raw.decode("utf-8"), parse_float=Decimal)   # strict: no NaN, no trailing commas
    return d, raw


# ---- synthetic ranks ------------------------------------------------------------

class Rank:
    """One rank's trace, written as text. Its clock reads real + clock; its
    base is the whole second at or before its start, as prof.h's is."""

    def __init__(self, rank, clock, start, syncs, rng, gpus=(), dist=True, pretty=False,
                 events_first=False, pid=4242, straggler=None, devprops="[]"):
        self.rank, self.clock, self.pid, self.straggler = rank, clock, pid, straggler
        self.base = (start + clock) // NS * NS
        self.events = []        # (raw text, real ns or None for metadata, kind, GPU device or None)
        self.sync_local = {}    # K -> absolute ns on this rank's clock
        self.syncs_real = {}
        p = pid
        meta = [("process_name", 0, '{"name":"trainer"}'), ("process_labels", 0, '{"labels":"CPU"}'),
                ("process_sort_index", 0, '{"sort_index":%d}' % p),
                ("thread_name", p, '{"name":"main"}'), ("thread_sort_index", p, '{"sort_index":0}'),
                ("thread_name", p + 1, '{"name":"dataloader"}'), ("thread_sort_index", p + 1, '{"sort_index":1}')]
        for name, tid, args in meta:
            self.add(f'{{"ph":"M","name":"{name}","pid":{p},"tid":{tid},"ts":0.000,"args":{args}}}', None, "M")
        if 0 in gpus:     # device 0 is labelled; device 1 is known only by its kernels
            for name, args in (("process_name", '{"name":"GPU 0"}'), ("process_labels", '{"labels":"GPU 0"}'),
                               ("process_sort_index", '{"sort_index":5000000}')):
                self.add(f'{{"ph":"M","name":"{name}","pid":0,"tid":0,"ts":0.000,"args":{args}}}', None, "M", 0)
        t = start + 1_000_000
        for s in range(4):
            step, fwd = t, t + 20_000
            self.x("user_annotation", f"ProfilerStep#{s}", p, p, step, 900_000, '{"step":%d}' % s)
            self.x("cpu_op", "forward", p, p, fwd, 300_000 + rng.randrange(1000),
                   '{"Input Dims":[[8,16]],"flops":1.5e9}')
            self.x("user_annotation", "load_batch", p, p + 1, t + 5_000, 7_777, None)
            self.add(f'{{"ph":"C","name":"loss","pid":{p},"tid":{p},"ts":{self.ts(t + 800_000)},'
                     f'"args":{{"loss":{0.5 / (s + 1)!r}}}}}', t + 800_000, "C")
            self.add(f'{{"ph":"i","s":"t","cat":"cpu_instant_event","name":"mark","pid":{p},"tid":{p},'
                     f'"ts":{self.ts(t + 850_000)}}}', t + 850_000, "i")
            if gpus:
                corr = 100 + s          # the same ids on every rank: the merge makes them unique
                self.add(f'{{"ph":"s","cat":"ac2g","name":"ac2g","id":{corr},"pid":{p},"tid":{p},'
                         f'"ts":{self.ts(fwd + 1000)}}}', fwd + 1000, "s")
                self.x("gpu_user_annotation", "forward", 0, 7, fwd + 5000, 250_000,
                       '{"device":0,"stream":7,"correlation":%d}' % corr)
                self.add(f'{{"ph":"f","bp":"e","cat":"ac2g","name":"ac2g","id":{corr},"pid":0,"tid":7,'
                         f'"ts":{self.ts(fwd + 5000)}}}', fwd + 5000, "f", 0)
                if 1 in gpus:
                    self.x("kernel", "gemm", 1, 9, fwd + 9000, 1234, '{"device":1,"stream":9}')
            t += 1_000_000
        for k, real in syncs.items():
            jit = rng.randint(-J, J) + (3_000_000 if k == straggler else 0)
            at = real + jit
            self.syncs_real[k] = real
            self.sync_local[k] = at + clock
            self.add(f'{{"ph":"i","s":"p","cat":"prof_sync","name":"prof_sync","pid":{p},"tid":{p},'
                     f'"ts":{self.ts(at)},"args":{{"sync":{k}}}}}', at, "sync")
        self.text = self.render(dist, pretty, events_first, devprops)

    def ts(self, real):
        return us(real + self.clock - self.base)

    def add(self, raw, real, kind, dev=None):
        self.events.append((raw, real, kind, dev))

    def x(self, cat, name, pid, tid, real, dur, args):
        a = f',"args":{args}' if args else ""
        self.add(f'{{"ph":"X","cat":"{cat}","name":"{name}","pid":{pid},"tid":{tid},"ts":{self.ts(real)},'
                 f'"dur":{us(dur)}{a}}}', real, "X", pid if cat in ("gpu_user_annotation", "kernel") else None)

    def render(self, dist, pretty, events_first, devprops):
        sep = ",\n    " if pretty else ","
        evs = "[\n    " + sep.join(e[0] for e in self.events) + "\n  ]" if pretty else \
              "[\n" + sep.join(e[0] for e in self.events) + "\n  ]"
        head = ['"schemaVersion": 1', f'"deviceProperties": {devprops}']
        if dist:
            head.append(f'"distributedInfo": {{"backend": "nccl", "rank": {self.rank}, "world_size": 8}}')
        head += ['"displayTimeUnit": "ms"', f'"baseTimeNanoseconds": {self.base}', '"traceName": "x"',
                 '"prof_dropped_events": 0']
        body = [f'"traceEvents": {evs}']
        parts = body + head if events_first else head + body
        return "{\n  " + ",\n  ".join(parts) + "\n}\n"

    def write(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.text)


def median_offset(ref, r):
    common = sorted(set(ref.sync_local) & set(r.sync_local))
    diffs = sorted(ref.sync_local[k] - r.sync_local[k] for k in common)
    n = len(diffs)
    if not n:
        return 0, 0, 0
    a, b = diffs[(n - 1) // 2], diffs[n // 2]
    off = a + (b - a) // 2
    return off, n, max(abs(d - off) for d in diffs)


def check_merge(tool, tmp, ranks, order, expect_base=None):
    """Merges the ranks (files given in `order`) and checks every event."""
    paths = []
    for r in ranks:
        path = f"rank{r.rank}.json"
        r.write(os.path.join(tmp, path))
        paths.append(path)
    args = [paths[i] for i in order]
    p = merge(tool, ["-o", "m.json"] + args, tmp)
    d, raw = load(os.path.join(tmp, "m.json"))
    ref = ranks[0]

    check(d["prof_merged_ranks"] == [r.rank for r in ranks], f"ranks {d['prof_merged_ranks']}")
    check("distributedInfo" not in d, "a merged trace has no distributedInfo")
    want_lines = [f"prof merge: rank {ref.rank} (rank{ref.rank}.json): reference clock, {len(ref.sync_local)} sync points"]
    offsets = {}
    for r in ranks:
        off, n, resid = median_offset(ref, r)
        offsets[r.rank] = off
        check(d["prof_merge_offsets_ns"][str(r.rank)] == off,
              f"rank {r.rank}: offset {d['prof_merge_offsets_ns'][str(r.rank)]}, the median is {off}")
        if r is not ref:
            sign = "-" if off < 0 else "+"
            want_lines.append(f"prof merge: rank {r.rank} (rank{r.rank}.json): offset {sign}{us(abs(off))} us "
                              f"from {n} sync points, residual {us(resid)} us")
    want_lines.append(f"prof merge: wrote m.json: {len(ranks)} ranks, {len(d['traceEvents'])} events")
    check(p.stderr.splitlines() == want_lines, f"report:\n{p.stderr}\nexpected:\n" + "\n".join(want_lines))

    # the merged base: the reference's, or whole seconds earlier if an event would precede it
    earliest = min(real + r.clock + offsets[r.rank] for r in ranks for _, real, _, _ in r.events if real is not None)
    base = min(ref.base, earliest // NS * NS)
    check(d["baseTimeNanoseconds"] == base, f"base {d['baseTimeNanoseconds']}, expected {base}")
    if expect_base is not None:
        check(base == expect_base(ref), f"the test meant base {expect_base(ref)}, got {base}")

    evs = d["traceEvents"]
    i = 0
    flow_ids = {}
    for r in ranks:
        for raw_in, real, kind, dev in r.events:
            e_in = json.loads(raw_in, parse_float=Decimal)
            e = evs[i]
            i += 1
            # times: exact, and within the jitter bound of the truth on the reference clock
            if kind == "M":
                check(e["ts"] == e_in["ts"], f"metadata ts changed: {e}")
            else:
                got = ns_of(e["ts"])
                local = ns_of(e_in["ts"]) + r.base
                check(got == local + offsets[r.rank] - base, f"rank {r.rank}: {raw_in} -> ts {e['ts']}")
                # real: when it happened (a straggler's sync included), so
                # the only error left is the median's: within 2 J
                err = base + got - (real + ref.clock)
                check(abs(err) <= 2 * J, f"rank {r.rank}: {e} is {err} ns from its real time on the reference clock")
            # pids
            want_pid = r.rank if dev is None else 1000 + 100 * r.rank + dev
            check(e["pid"] == want_pid, f"rank {r.rank}: pid {e['pid']} for {raw_in}")
            # flow ids: id * 1000 + rank
            if kind in ("s", "f"):
                check(e["id"] == e_in["id"] * 1000 + r.rank, f"flow id {e['id']} for {raw_in}")
                flow_ids.setdefault((e["ph"], e["id"]), []).append(e)
            # process metadata renamed, everything else as it was
            if kind == "M" and e_in["name"] == "process_name":
                want = f"rank {r.rank} (trainer)" if dev is None else f"rank {r.rank} GPU {dev}"
                check(e["args"] == {"name": want}, f"process_name {e['args']}, expected {want}")
            if kind == "M" and e_in["name"] == "process_sort_index":
                check(e["args"] == {"sort_index": e["pid"]}, f"sort index {e}")
            rest_in = {k: v for k, v in e_in.items() if k not in ("pid", "ts", "id")}
            rest = {k: v for k, v in e.items() if k not in ("pid", "ts", "id")}
            if kind == "M" and e_in["name"] in ("process_name", "process_sort_index"):
                rest_in.pop("args")
                rest.pop("args")
            check(rest == rest_in, f"fields changed: {raw_in} -> {e}")
        # a device without names gets them, right after the rank's events
        if any(ev[3] == 1 for ev in r.events):
            added = evs[i:i + 2]
            i += 2
            gp = 1000 + 100 * r.rank + 1
            check(added == [
                {"ph": "M", "name": "process_name", "pid": gp, "tid": 0, "ts": 0, "args": {"name": f"rank {r.rank} GPU 1"}},
                {"ph": "M", "name": "process_sort_index", "pid": gp, "tid": 0, "ts": 0, "args": {"sort_index": gp}}],
                f"added metadata {added}")
    check(i == len(evs), f"{len(evs) - i} unexpected events in the merged trace")
    check(all(len(v) == 1 for v in flow_ids.values()), "a flow id appears twice")

    # sync points of every rank within the tolerance of the reference's (4 J:
    # each side's jitter plus the median's), the straggler excepted
    syncs = {}
    for e in evs:
        if e.get("cat") == "prof_sync":
            syncs.setdefault(e["pid"], {})[e["args"]["sync"]] = ns_of(e["ts"])
    for r in ranks[1:]:
        for k, t in syncs[r.rank].items():
            if k == r.straggler:     # really 3 ms late: the median, not a mean, kept the offset
                check(abs(t - syncs[ref.rank][k] - 3_000_000) <= 4 * J, f"straggler at {t - syncs[ref.rank][k]} ns")
            elif k in syncs[ref.rank]:
                check(abs(t - syncs[ref.rank][k]) <= 4 * J,
                      f"rank {r.rank} sync {k} is {t - syncs[ref.rank][k]} ns from the reference's")
    return d, raw, p


def make_rank(rank, clock, start, syncs, rng, **kw):
    return Rank(rank, clock, start, syncs, rng, **kw)


def case_align(tool, _ranks_bin, tmp):
    rng = random.Random(20240601)
    # two ranks: rank 1's clock is 3.7 s behind plus 12.345 ms, and it started
    # 0.7 s before rank 0, so aligned events precede rank 0's base: the merged
    # base is one second earlier
    syncs = {k: REAL0 + 2 * NS + k * 10_000_000 for k in range(6)}
    r0 = make_rank(0, 0, REAL0 + 300_000_000, syncs, rng, gpus=(0,))
    r1 = make_rank(1, -3_700_000_000 + 12_345_000, REAL0 - 400_000_000, syncs, rng, gpus=(0,))
    check_merge(tool, tmp, [r0, r1], [1, 0], expect_base=lambda ref: ref.base - NS)

    # four ranks on four hosts, given in reverse order: rank 2 has a straggler
    # at sync 3 (the median ignores it), rank 3 missed sync 0, rank 0's trace
    # is pretty-printed with traceEvents before the header
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    syncs = {k: REAL0 + 3 * NS + k * 50_000_000 for k in range(7)}
    ranks = [
        make_rank(0, 0, REAL0 + 100_000_000, syncs, rng, gpus=(0, 1), pretty=True, events_first=True),
        make_rank(1, -3_687_655_000, REAL0 + 137_000_000, syncs, rng, gpus=(0, 1)),
        make_rank(2, 42_123_456_789, REAL0 + 274_000_000, syncs, rng, straggler=3),
        make_rank(3, -999_999_999, REAL0 + 411_000_000, {k: v for k, v in syncs.items() if k}, rng, gpus=(0,)),
    ]
    d, _, _ = check_merge(tool, tmp, ranks, [3, 2, 1, 0], expect_base=lambda ref: ref.base)
    check(d["prof_merge_offsets_ns"]["2"] != 0 and abs(d["prof_merge_offsets_ns"]["2"] + 42_123_456_789) <= 2 * J,
          f"rank 2's offset {d['prof_merge_offsets_ns']['2']} is not its clock error within the jitter")


def case_format(tool, _ranks_bin, tmp):
    rng = random.Random(7)
    syncs = {k: REAL0 + NS + k * 10_000_000 for k in range(3)}
    r0 = make_rank(0, 0, REAL0, syncs, rng, gpus=(0,), dist=False,
                   devprops='[{"id": 0, "name": "Fake GPU", "totalGlobalMem": 8589934592}, {}]')
    r1 = make_rank(1, 5_000_000, REAL0, syncs, rng, gpus=(0,), dist=False, pid=4242)
    # odd but valid fields that must come through byte for byte
    odd = ('{"ph":"X","cat":"cpu_op","name":"caf\\u00e9 \\"q\\" \u00e9\U0001f525","pid":4242,"tid":4242,'
           '"ts":%s,"dur":1.5E+1,"tts":12,"args":{"x":1.5e-7,"s":"\\ud83d\\ude00 tab\\t","nested":[1,{"a":[]},'
           'null,true,false],"big":123456789012345678901234567890,"neg":-0.0}}')
    r1.events.insert(8, (odd % r1.ts(REAL0 + 2_000_000), REAL0 + 2_000_000, "X", None))
    spans = '{"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans","tid":"PyTorch Profiler","ts":%s,"dur":5.000}'
    r1.events.insert(9, (spans % r1.ts(REAL0 + 3_000_000), REAL0 + 3_000_000, "X", None))
    r1.text = r1.render(False, False, False, "[]")
    r0.write(os.path.join(tmp, "a.json"))
    r1.write(os.path.join(tmp, "b.json"))
    p = merge(tool, ["--quiet", "-o", "m.json", "a.json", "b.json"], tmp)
    check(p.stderr == "" and p.stdout == "", f"--quiet printed: {p.stderr!r} {p.stdout!r}")
    d, raw = load(os.path.join(tmp, "m.json"))

    # header: ranks from positions, offsets, device properties of every rank
    check(d["prof_merged_ranks"] == [0, 1], f"positional ranks {d['prof_merged_ranks']}")
    check(d["prof_merge_offsets_ns"] == {"0": 0, "1": median_offset(r0, r1)[0]}, f"offsets {d['prof_merge_offsets_ns']}")
    check(d["deviceProperties"] == [{"prof_rank": 0, "id": 0, "name": "Fake GPU", "totalGlobalMem": 8589934592},
                                    {"prof_rank": 0}], f"deviceProperties {d['deviceProperties']}")
    check(list(d)[:3] == ["schemaVersion", "deviceProperties", "displayTimeUnit"] and list(d)[-1] == "traceEvents",
          f"key order {list(d)}")
    check(d["traceName"] == "m.json" and d["schemaVersion"] == 1 and d["prof_dropped_events"] == 0, f"header {d}")

    # the odd event: only pid and ts rewritten, every other byte as it was
    lines = raw.decode("utf-8").split("\n")
    off = d["prof_merge_offsets_ns"]["1"]
    want_ts = us(r1.base + int(ns_of(Decimal(r1.ts(REAL0 + 2_000_000)))) + off - d["baseTimeNanoseconds"])
    want = odd.replace('"pid":4242', '"pid":1') % want_ts
    check(want in lines or want + "," in lines, f"odd event not kept byte for byte; expected line\n{want}")
    check(any(l.startswith('{"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":1,"tid":"PyTorch Profiler"')
              for l in lines), "a string pid is rank 1's CPU process")

    # pids: one CPU process and one GPU process per rank; names and sort indices
    names = {(e["pid"], e["args"]["name"]) for e in d["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    check(names == {(0, "rank 0 (trainer)"), (1, "rank 1 (trainer)"), (1000, "rank 0 GPU 0"), (1100, "rank 1 GPU 0")},
          f"process names {names}")
    sorts = {(e["pid"], e["args"]["sort_index"]) for e in d["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_sort_index"}
    check(sorts == {(0, 0), (1, 1), (1000, 1000), (1100, 1100)}, f"sort indices {sorts}")
    check({e["pid"] for e in d["traceEvents"]} == {0, 1, 1000, 1100}, "pids")
    ids = [(e["ph"], e["id"]) for e in d["traceEvents"] if e["ph"] in "sf"]
    check(len(ids) == len(set(ids)) == 16 and {i % 1000 for _, i in ids} == {0, 1}, f"flow ids {ids}")
    for ph in "sf":
        check(sorted(i for p, i in ids if p == ph) == sorted(c * 1000 + r for c in range(100, 104) for r in (0, 1)),
              f"{ph} ids {ids}")

    # every ts with 3 decimals; counts kept
    for m in re.finditer(rb'"ts":(-?[0-9][^,}]*)', raw):
        check(re.fullmatch(rb"-?\d+\.\d{3}", m.group(1)), f"ts {m.group(1)} not in 3 decimals")
    check(len(d["traceEvents"]) == len(r0.events) + len(r1.events), "event count")

    # -o - : the same trace on stdout
    p = merge(tool, ["-q", "-o", "-", "a.json", "b.json"], tmp)
    d2 = json.loads(p.stdout, parse_float=Decimal)
    check(d2["traceName"] == "merged" and {**d2, "traceName": "m.json"} == d, "-o - differs from -o m.json")

    # exact decimal conversion of unusual ts spellings
    t = ('{"traceEvents":[{"ph":"i","name":"a","pid":1,"tid":1,"ts":1.2345678e5},'
         '{"ph":"i","name":"b","pid":1,"tid":1,"ts":10.0005},{"ph":"i","name":"c","pid":1,"tid":1,"ts":7.0004},'
         '{"ph":"i","name":"d","pid":1,"tid":1,"ts":-2.5E-3},{"ph":"i","name":"e","pid":1,"tid":1,"ts":12},'
         '{"ph":"i","name":"f","pid":1,"tid":1,"ts":"later"},{"ph":"i","name":"g","pid":1,"tid":1}],'
         '"baseTimeNanoseconds":5000000000}')
    with open(os.path.join(tmp, "t.json"), "w") as f:
        f.write(t)
    p = merge(tool, ["-q", "-o", "-", "t.json"], tmp)
    ts = {e["name"]: e.get("ts") for e in json.loads(p.stdout, parse_float=Decimal)["traceEvents"]}
    # "d" at -2.5 ns before the base moves the base back by a second
    check(json.loads(p.stdout)["baseTimeNanoseconds"] == 4 * NS, "base for an event before it")
    check(ts == {"a": Decimal("1123456.780"), "b": Decimal("1000010.001"), "c": Decimal("1000007.000"),
                 "d": Decimal("999999.997"), "e": Decimal("1000012.000"), "f": "later", "g": None,
                 "process_name": 0, "process_sort_index": 0}, f"ts {ts}")    # added: the trace had none

    # --help
    p = merge(tool, ["--help"], tmp)
    check("usage: prof merge" in p.stdout and ".json.gz" in p.stdout and ".pftrace" in p.stdout, f"--help: {p.stdout}")


INVALID = [   # (text, byte of the error)
    (b"", 0),
    (b"   ", 3),
    (b'{"traceEvents":[1,]}', 18),
    (b'{"traceEvents":[],}', 18),
    (b'{"a":01}', 6),
    (b'{"a":"\\x"}', 7),
    (b'{"a":"tab\there"}', 9),
    (b'{"a":NaN}', 5),
    (b'{"a":1} {}', 8),
    (b'\xef\xbb\xbf{}', 0),
    (b'{"a":"\xff"}', 6),
    (b'{"a":"\xc3"}', 6),
    (b'{"a":"\xed\xa0\x80"}', 6),
    (b'{"a":"\xc0\xaf"}', 6),
    (b'{"a":1e}', 7),
    (b'{"a":-}', 6),
    (b'{"a":1.}', 7),
    (b'{"a":tru}', 8),
    (b'{"a" 1}', 5),
    (b'{"a":"\\u12G4"}', 10),
    (b"{'a':1}", 1),
    (b'{"a":[1 2]}', 8),
    (b'{"a":1', 6),
]


def one_line_error(p, rc=2):
    check(p.returncode == rc, f"exit {p.returncode}, expected {rc}: {p.stderr}")
    check(p.stderr.count("\n") == 1 and p.stderr.endswith("\n") and p.stderr.startswith("prof merge: "),
          f"not one line: {p.stderr!r}")
    check(p.stdout == "", f"stdout: {p.stdout!r}")
    return p.stderr.rstrip("\n")


def run_raw(tool, args, cwd):
    """prof merge ARGS, whatever it does"""
    return subprocess.run([tool, "merge"] + args, cwd=cwd, capture_output=True, encoding="utf-8", timeout=120)


def case_errors(tool, _ranks_bin, tmp):
    rng = random.Random(3)
    syncs = {k: REAL0 + NS + k * 10_000_000 for k in range(3)}
    good = make_rank(0, 0, REAL0, syncs, rng)
    good.write(os.path.join(tmp, "good.json"))
    with open(os.path.join(tmp, "merged.json"), "w") as f:
        f.write("old")

    def bad(content, args_extra=()):
        with open(os.path.join(tmp, "bad.json"), "wb") as f:
            f.write(content)
        return one_line_error(run_raw(tool, ["good.json", "bad.json", *args_extra], tmp))

    for text, at in INVALID:
        msg = bad(text)
        check(msg == f"prof merge: bad.json: not valid JSON at byte {at}", f"{text!r}: {msg}")
    # every prefix of a valid trace is invalid at its end
    data = good.text.encode()
    for cut in range(0, len(data) - 2, 97):
        msg = bad(data[:cut])
        check(msg == f"prof merge: bad.json: not valid JSON at byte {cut}", f"cut at {cut}: {msg}")
    # nesting deeper than the parser goes: one line, not a crash
    msg = bad(b'{"traceEvents":[{"args":' + b"[" * 5000 + b"]" * 5000 + b"}]}")
    check(msg.startswith("prof merge: bad.json: JSON nested deeper than 1000 levels at byte "), msg)
    # valid JSON that is no trace
    check(bad(b"[]") == "prof merge: bad.json: not a trace: the top level is not an object", "array")
    check(bad(b'{"traceEvents":{}}') == "prof merge: bad.json: not a trace: no traceEvents array", "no events")
    check(bad(b'{"traceEvents":[{},7]}') == "prof merge: bad.json: not a trace: traceEvents[1] is not an object",
          "event not an object")
    check(bad(b'{"distributedInfo":{"rank":"x"},"traceEvents":[]}') ==
          'prof merge: bad.json: distributedInfo.rank "x" is not a rank', "bad rank")
    check(bad(b'{"distributedInfo":{"rank":1000},"traceEvents":[]}') ==
          "prof merge: bad.json: rank 1000: prof merge numbers ranks 0 to 999", "rank too large")
    check(bad(b'{"traceEvents":[{"ph":"X","cat":"kernel","pid":100,"ts":1}]}') ==
          "prof merge: bad.json: GPU process 100: prof merge needs a device index 0 to 99 as its pid", "device")
    check(bad(b'{"traceEvents":[{"ph":"X","pid":1,"ts":1e30}]}') ==
          "prof merge: bad.json: event at byte 16: ts 1e30 is out of range", "ts range")
    # the same rank twice, a missing file, bad options
    good.write(os.path.join(tmp, "again.json"))
    check(one_line_error(run_raw(tool, ["good.json", "again.json"], tmp)) ==
          "prof merge: good.json and again.json are both rank 0", "duplicate rank")
    check(one_line_error(run_raw(tool, ["good.json", "nope.json"], tmp)) ==
          "prof merge: nope.json: cannot open: No such file or directory", "missing file")
    check(one_line_error(run_raw(tool, ["good.json", "."], tmp)).startswith("prof merge: .: cannot read: "),
          "a directory")
    check(one_line_error(run_raw(tool, [], tmp)).startswith("prof merge: no traces to merge (usage: "), "no args")
    check(one_line_error(run_raw(tool, ["-x", "good.json"], tmp)) ==
          "prof merge: unknown option '-x' (prof merge --help shows the usage)", "unknown option")
    check(one_line_error(run_raw(tool, ["good.json", "-o"], tmp)) == "prof merge: -o needs a file name", "-o")
    msg = one_line_error(run_raw(tool, ["-o", "no/such/dir/m.json", "good.json"], tmp))
    check(msg == "prof merge: no/such/dir/m.json: cannot write: No such file or directory", msg)
    # after all of that the old output is untouched and nothing half-written is left
    with open(os.path.join(tmp, "merged.json")) as f:
        check(f.read() == "old", "a failed merge overwrote merged.json")
    check(not [f for f in os.listdir(tmp) if f.endswith(".part")], f"left over: {os.listdir(tmp)}")

    # no common sync point: one warning naming the rank, wall clock, a valid trace
    late = make_rank(1, 1_000_000, REAL0, {k + 10: v for k, v in syncs.items()}, rng)
    none = make_rank(2, 2_000_000, REAL0, {}, rng)
    late.write(os.path.join(tmp, "late.json"))
    none.write(os.path.join(tmp, "none.json"))
    p = run_raw(tool, ["-q", "good.json", "late.json", "none.json"], tmp)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    check(p.stderr.splitlines() == [
        "prof merge: warning: rank 1 (late.json) shares no sync point with rank 0; aligned by wall clock (offset 0)",
        "prof merge: warning: rank 2 (none.json) shares no sync point with rank 0; aligned by wall clock (offset 0)"],
        f"warnings: {p.stderr}")
    d, _ = load(os.path.join(tmp, "merged.json"))
    check(d["prof_merge_offsets_ns"] == {"0": 0, "1": 0, "2": 0}, f"offsets {d['prof_merge_offsets_ns']}")
    check(len(d["traceEvents"]) == len(good.events) + len(late.events) + len(none.events), "events lost")
    # wall clock: an event keeps its absolute time
    e = d["traceEvents"][len(good.events) + 7]
    raw7 = json.loads(late.events[7][0], parse_float=Decimal)
    check(ns_of(e["ts"]) + d["baseTimeNanoseconds"] == ns_of(raw7["ts"]) + late.base, "wall clock alignment")


def run_ranks(ranks_bin, tmp, rounds, output):
    """Two ranks of merge_ranks.c side by side, a barrier at each round."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    procs = []
    for r in (0, 1):
        procs.append(subprocess.Popen([ranks_bin, str(r), str(rounds)], cwd=tmp, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True,
                                      env={**env, "RANK": str(r), "WORLD_SIZE": "2", "PROF_OUTPUT": output}))
    try:
        for k in range(rounds):      # a barrier: both ranks are released only when both arrived
            for p in procs:
                line = p.stdout.readline()
                check(line == f"ready {k}\n", f"rank said {line!r}")
            for p in procs:
                p.stdin.write("go\n")
                p.stdin.flush()
        for p in procs:
            p.stdin.close()
            check(p.wait(timeout=60) == 0, f"merge_ranks exited {p.returncode}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def case_real(tool, ranks_bin, tmp):
    rounds = 5
    run_ranks(ranks_bin, tmp, rounds, "rank{rank}.json")
    p = merge(tool, ["-o", "merged.json", "rank1.json", "rank0.json"], tmp)
    d, _ = load(os.path.join(tmp, "merged.json"))
    print(p.stderr.strip())
    check(d["prof_merged_ranks"] == [0, 1], f"ranks {d['prof_merged_ranks']}")
    m = re.search(r"rank 1 \(rank1\.json\): offset ([+-][0-9.]+) us from 5 sync points, residual ([0-9.]+) us",
                  p.stderr)
    check(m, f"report: {p.stderr}")
    # one host, one clock: the offset is how far apart the ranks left the barrier
    check(abs(Decimal(m.group(1))) < 250_000 and Decimal(m.group(2)) < 250_000, f"offset {m.groups()}")
    evs = d["traceEvents"]
    for r in (0, 1):
        mine = [e for e in evs if e["pid"] == r]
        check(len([e for e in mine if e["ph"] == "X" and e["name"] == "work"]) == rounds, f"rank {r}: work regions")
        check(sorted(e["args"]["sync"] for e in mine if e.get("cat") == "prof_sync") == list(range(rounds)),
              f"rank {r}: sync points")
        check(any(e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"].startswith(f"rank {r} (")
                  for e in mine), f"rank {r}: process name")
    check({e["pid"] for e in evs} == {0, 1}, f"pids {sorted({e['pid'] for e in evs})}")
    # aligned: the sync points agree within the residual reported
    sync = {(e["pid"], e["args"]["sync"]): ns_of(e["ts"]) for e in evs if e.get("cat") == "prof_sync"}
    resid = int(Decimal(m.group(2)) * 1000)
    for k in range(rounds):
        check(abs(sync[(1, k)] - sync[(0, k)]) <= resid, f"sync {k}: {sync[(1, k)] - sync[(0, k)]} ns apart")


def case_gzip(tool, _ranks_bin, tmp):
    import gzip
    rng = random.Random(99)
    syncs = {k: REAL0 + NS + k * 10_000_000 for k in range(4)}
    r0 = make_rank(0, 0, REAL0, syncs, rng, gpus=(0,))
    r1 = make_rank(1, 2_500_000, REAL0, syncs, rng)
    r0.write(os.path.join(tmp, "rank0.json"))
    r1.write(os.path.join(tmp, "rank1.json"))
    plain = open(os.path.join(tmp, "rank1.json"), "rb").read()
    merge(tool, ["-o", "plain.json", "rank0.json", "rank1.json"], tmp)
    want = open(os.path.join(tmp, "plain.json"), "rb").read()
    half = len(plain) // 2
    for name, data in (("l1.json.gz", gzip.compress(plain, 1)), ("l9.json.gz", gzip.compress(plain, 9)),
                       ("two.json.gz", gzip.compress(plain[:half], 6) + gzip.compress(plain[half:], 6))):
        with open(os.path.join(tmp, name), "wb") as f:
            f.write(data)
        merge(tool, ["-o", "plain.json", "rank0.json", name], tmp)
        got = open(os.path.join(tmp, "plain.json"), "rb").read()
        check(got == want.replace(b"rank1.json", name.encode()) or got == want,
              f"{name}: the merge differs from the plain trace's")
    data = bytearray(gzip.compress(plain, 6))
    data[-8] ^= 1                                           # the CRC-32
    with open(os.path.join(tmp, "bad.json.gz"), "wb") as f:
        f.write(bytes(data))
    p = merge(tool, ["rank0.json", "bad.json.gz"], tmp, expect_rc=2)
    check(p.stderr == "prof merge: bad.json.gz: not a valid gzip file: its CRC-32 does not match\n",
          f"stderr: {p.stderr!r}")


def cli_trace(path, matmul2, fwd, step, bwd_ts):
    """One thread's step: fwd holding two matmuls (the second matmul2 us
    long), then bwd; times in us, as prof.h writes them."""
    ev = [
        '{"ph":"M","name":"thread_name","pid":1,"tid":7,"ts":0.000,"args":{"name":"main"}}',
        f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":1,"tid":7,"ts":0.000,"dur":{step - 0.001:.3f}}}',
        f'{{"ph":"X","cat":"user_annotation","name":"fwd","pid":1,"tid":7,"ts":100.000,"dur":{fwd:.3f}}}',
        '{"ph":"X","cat":"user_annotation","name":"matmul","pid":1,"tid":7,"ts":150.000,"dur":200.000,'
        '"args":{"M":64,"dtype":"f32","flops":1000000}}',
        f'{{"ph":"X","cat":"user_annotation","name":"matmul","pid":1,"tid":7,"ts":400.000,"dur":{matmul2:.3f},'
        '"args":{"M":64,"dtype":"f32"}}',
        f'{{"ph":"X","cat":"user_annotation","name":"bwd","pid":1,"tid":7,"ts":{bwd_ts:.3f},"dur":300.000}}',
        '{"ph":"X","cat":"gpu_user_annotation","name":"gpu","pid":0,"tid":7,"ts":150.000,"dur":10.000}',
    ]
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [\n' +
                ",\n".join(ev) + "\n]}\n")


def table_rows(text):
    """The data rows of a printed table, each split at runs of spaces."""
    rows = {}
    for line in text.splitlines()[3:]:
        if line.startswith("-"):        # the rule under the rows: the footer follows
            break
        if line and not line.startswith(("...", "Self", "Rows")):
            parts = re.split(r"\s{2,}", line.strip())
            rows[parts[0]] = parts
    return rows


def case_cli(tool, _ranks_bin, tmp):
    cli_trace(os.path.join(tmp, "base.json"), 150, 500, 1000, 650)
    cli_trace(os.path.join(tmp, "new.json"), 450, 800, 1300, 950)
    p = subprocess.run([tool, "table", "base.json", "sort=name,group=args,percentiles"], cwd=tmp,
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"prof table: {p.stderr}")
    rows = table_rows(p.stdout)
    # name, self %, self, total %, total, avg, min, max, p50, p90, p99, calls, args, FLOPs, GFLOPS
    check(rows["matmul"][1:13] == ["35.00%", "350.000us", "35.00%", "350.000us", "175.000us", "150.000us",
                                    "200.000us", "150.000us", "200.000us", "200.000us", "2", "M=64, dtype=f32"],
          f"matmul: {rows['matmul']}")
    check(rows["fwd"][2] == "150.000us" and rows["fwd"][4] == "500.000us", f"fwd: {rows['fwd']}")
    check(rows["ProfilerStep*"][2] == "200.000us" and rows["ProfilerStep*"][4] == "1.000ms",
          f"step: {rows['ProfilerStep*']}")
    check(rows["bwd"][2] == "300.000us" and "gpu" not in rows, f"rows {sorted(rows)}")
    check("Self CPU time total: 1.000ms" in p.stdout, p.stdout)
    # diff: the second matmul 300 us slower; fwd and the step longer by as much, bwd the same
    p = subprocess.run([tool, "diff", "base.json", "new.json", "--fail-over", "10"], cwd=tmp,
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 1, f"prof diff exited {p.returncode}: {p.stderr}")
    lines = p.stdout.splitlines()
    first = re.split(r"\s{2,}", lines[1].strip())
    check(first == ["matmul", "2", "2", "350.000us", "650.000us", "+300.000us", "+85.71%", "350.000us", "650.000us",
                    "+85.71%", "--"], f"first row {first}")
    names = [re.split(r"\s{2,}", l.strip())[0] for l in lines[1:-1]]
    check(names == ["matmul", "ProfilerStep*", "fwd"], f"rows {names}")
    check(lines[-1] == "(1 region changed by less than 5.00%: left out; --min-change 0 shows all)", lines[-1])
    said = p.stderr.splitlines()
    # one or two calls each: too few for the U test, judged on the change alone
    check(said == ["prof diff: 'matmul' slowed by 85.71% in total time (350.000us to 650.000us), over 10.00%, "
                   "too few calls to test",
                   "prof diff: 'ProfilerStep*' slowed by 30.00% in total time (1.000ms to 1.300ms), over 10.00%, "
                   "too few calls to test",
                   "prof diff: 'fwd' slowed by 60.00% in total time (500.000us to 800.000us), over 10.00%, "
                   "too few calls to test"],
          f"stderr {said}")
    p = subprocess.run([tool, "diff", "base.json", "base.json", "--fail-over", "10"], cwd=tmp,
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and "4 regions changed by less than 5.00%" in p.stdout, f"same traces: {p.stdout}")
    p = subprocess.run([tool, "table", "base.json", "sort=nope"], cwd=tmp, capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and p.stderr.count("\n") == 1 and "is not a table spec" in p.stderr, p.stderr)


def lcg(seed):
    """A deterministic stream of floats in [0, 1): the same on every machine."""
    while True:
        seed = (seed * 6364136223846793005 + 1442695040888963407) % 2**64
        yield (seed >> 11) / 2**53


def calls_trace(path, durs_ns):
    """One thread: region "work" called once per duration, 100 us apart."""
    ev = ['{"ph":"M","name":"thread_name","pid":1,"tid":7,"ts":0.000,"args":{"name":"main"}}']
    t = 0
    for d in durs_ns:
        ev.append(f'{{"ph":"X","cat":"user_annotation","name":"work","pid":1,"tid":7,"ts":{us(t)},"dur":{us(d)}}}')
        t += d + 100_000
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join(ev) + "\n]}\n")


def u_test_p(a, b):
    """Two-sided p of the Mann-Whitney U test, normal approximation with the
    tie and continuity corrections (what prof diff computes)."""
    import math
    both = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    r1, ties, i = 0.0, 0.0, 0
    while i < len(both):
        j = i
        while j < len(both) and both[j][0] == both[i][0]:
            j += 1
        t = j - i
        r1 += sum(1 for k in range(i, j) if both[k][1] == 0) * (i + (t + 1) / 2)
        ties += t ** 3 - t
        i = j
    n1, n2 = len(a), len(b)
    n = n1 + n2
    u, mu = r1 - n1 * (n1 + 1) / 2, n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    z = (abs(u - mu) - 0.5) / math.sqrt(var)
    return 1.0 if z <= 0 else math.erfc(z / math.sqrt(2))


def case_utest(tool, _ranks_bin, tmp):
    rng = lcg(1)
    work = lambda: 70_000 + int(next(rng) * 10_000)     # 70-80 us
    base = [work() for _ in range(100)]
    noisy = [work() for _ in range(100)]
    for k in (10, 35, 60, 85):                          # preempted: 1 ms more each
        noisy[k] += 1_000_000
    slow = [3 * d for d in (work() for _ in range(100))]
    for name, durs in (("base", base), ("noisy", noisy), ("slow", slow)):
        calls_trace(os.path.join(tmp, f"{name}.json"), durs)
    grew = 100 * (sum(noisy) - sum(base)) / sum(base)
    check(grew > 50, f"the noisy run grew by only {grew:.2f}%")

    p = subprocess.run([tool, "diff", "base.json", "noisy.json", "--fail-over", "50"], cwd=tmp,
                       capture_output=True, text=True, timeout=60)
    want_p = u_test_p(base, noisy)
    check(want_p > 0.05, f"the noise is significant by the test's own figure: p = {want_p}")
    check(p.returncode == 0, f"noise failed the gate: exit {p.returncode}\n{p.stdout}{p.stderr}")
    row = re.split(r"\s{2,}", p.stdout.splitlines()[1].strip())
    check(row[0] == "work" and row[-1] == f"{want_p:.4f}", f"noisy row {row}, p {want_p:.4f}")
    check(p.stderr == f"prof diff: 'work' grew by {grew:.2f}% in total time ({row[7]} to {row[8]}), but not "
          f"significantly (U test p = {want_p:.3g}): not failed\n", f"stderr {p.stderr!r}")

    p = subprocess.run([tool, "diff", "base.json", "slow.json", "--fail-over", "50"], cwd=tmp,
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 1, f"a 3x region passed the gate: exit {p.returncode}\n{p.stdout}{p.stderr}")
    row = re.split(r"\s{2,}", p.stdout.splitlines()[1].strip())
    check(u_test_p(base, slow) < 1e-4 and row[-1] == "<0.0001", f"slow row {row}")
    check(p.stderr.startswith("prof diff: 'work' slowed by ") and p.stderr.endswith(", over 50.00%, significant (U test)\n"),
          f"stderr {p.stderr!r}")


def case_example(tool, example, tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_")}
    env.update(PROF_SCHEDULE="skip_first=5,active=20,repeat=1", PROF_TABLE="")
    # 100 ms a step, 2 s in all: more than a sanitizer's slowdown and a busy
    # machine move any other region of these 20 steps
    for name, slow in (("base", "0"), ("new", "100000")):
        p = subprocess.run([example, "30"], cwd=tmp, capture_output=True, text=True, timeout=300,
                           env=dict(env, PROF_OUTPUT=f"{name}.json", TRAIN_MLP_SLOW_SGD=slow))
        check(p.returncode == 0, f"{name} run: {p.stderr}")
    p = subprocess.run([tool, "diff", "base.1.json", "new.1.json", "--fail-over", "20"], cwd=tmp,
                       capture_output=True, text=True, timeout=60)
    print(p.stdout + p.stderr)
    check(p.returncode == 1, f"prof diff exited {p.returncode}")
    # Rows by self-time change: the optimizer step first, or second behind the
    # loader thread's wait_free_slot, which waits for the slowed main thread
    # just as long (it mirrors the regression). Its new self time holds the
    # 20 sleeps of 100 ms (a sleep is never shorter than asked; a
    # region's relative change is no measure here: under a sanitizer on a
    # loaded machine a tiny region's can be as large).
    rows = [re.split(r"\s{2,}", line.strip()) for line in p.stdout.splitlines()[1:-1]]
    names = [r[0] for r in rows]
    check("optimizer_step" in names[:1] or names[:2] == ["wait_free_slot", "optimizer_step"], f"rows {names}")
    opt = rows[names.index("optimizer_step")]
    secs = lambda t: float(t.lstrip("+-").rstrip("mus")) * {"s": 1, "ms": 1e-3, "us": 1e-6}[re.sub(r"[0-9.+-]", "", t)]
    check(opt[1] == opt[2] == "20" and secs(opt[4]) >= 2.0 and opt[5].startswith("+"), f"optimizer_step {opt}")
    check(any(line.startswith("prof diff: 'optimizer_step' slowed by") for line in p.stderr.splitlines()),
          f"stderr {p.stderr}")


def pf_rank(pb, rank, offset, syncs, pid):
    """A Perfetto trace as prof.h lays one out, built with the official
    proto: rank `rank` whose clock reads `offset` ns ahead, sync points at
    the given true times (on an incremental sequence clock), a region at the
    first sync point's time (its end in absolute REALTIME), a flow."""
    t = pb.Trace()
    def packet(seq):
        p = t.packet.add()
        p.trusted_packet_sequence_id = seq
        return p
    p = packet(1)
    c = p.clock_snapshot
    c.primary_trace_clock = 1
    c.clocks.add(clock_id=1, timestamp=REAL0 + offset)
    c.clocks.add(clock_id=3, timestamp=1000 + rank)           # this host's MONOTONIC
    a = packet(1).trace_attributes
    a.attribute.add(key="rank", long_value=rank)
    a.attribute.add(key="prof_dropped_events", long_value=3 + rank)
    pt = packet(1).track_descriptor
    pt.uuid = 0xABC0000000000001
    pt.process.pid = pid
    pt.process.process_name = "trainer"
    tt = packet(1).track_descriptor
    tt.uuid = 0xABC0000000100000
    tt.parent_uuid = pt.uuid
    tt.thread.pid, tt.thread.tid, tt.thread.thread_name = pid, pid + 1, "main"
    p = packet(2)
    p.sequence_flags = 1
    p.trace_packet_defaults.timestamp_clock_id = 64
    p.trace_packet_defaults.track_event_defaults.track_uuid = tt.uuid
    p.clock_snapshot.clocks.add(clock_id=64, timestamp=REAL0 + offset, is_incremental=True)
    p.clock_snapshot.clocks.add(clock_id=1, timestamp=REAL0 + offset)
    p = packet(2)
    p.interned_data.event_names.add(iid=1, name="prof_sync")
    p.interned_data.event_names.add(iid=2, name="work")
    p.interned_data.debug_annotation_names.add(iid=3, name="sync")
    last = REAL0 + offset
    for k, when in enumerate(syncs):
        mine = when + offset
        p = packet(2)
        p.timestamp = mine - last
        last = mine
        p.track_event.type = pb.TrackEvent.TYPE_INSTANT
        p.track_event.name_iid = 1
        p.track_event.track_uuid = pt.uuid
        p.track_event.debug_annotations.add(name_iid=3, int_value=k)
    p = packet(2)                                            # a region [first sync, first sync + 500]
    p.timestamp = syncs[0] + offset
    p.timestamp_clock_id = 1
    p.track_event.type = pb.TrackEvent.TYPE_SLICE_BEGIN
    p.track_event.name_iid = 2
    p.track_event.flow_ids.append(0x77)
    p = packet(2)
    p.timestamp = syncs[0] + offset + 500
    p.timestamp_clock_id = 1
    p.track_event.type = pb.TrackEvent.TYPE_SLICE_END
    return t.SerializeToString()


def case_perfetto(tool, ranks_bin, tmp):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pftrace
    if pftrace.pb is None:
        print("SKIP: the perfetto package (tests/readers/requirements.txt) is not installed")
        sys.exit(77)
    pb = pftrace.pb
    true = [REAL0 + 10**9 * k for k in range(1, 6)]
    delta = 7_123_456_789                                   # rank 1's clock is this far ahead
    for r, off in ((0, 0), (1, delta)):
        with open(os.path.join(tmp, f"s{r}.pftrace"), "wb") as f:
            f.write(pf_rank(pb, r, off, true, 4242))         # the same pid on both hosts
    p = merge(tool, ["-o", "m.pftrace", "s1.pftrace", "s0.pftrace"], tmp)
    check(f"rank 1 (s1.pftrace): offset -{delta // 1000}.{delta % 1000:03d} us from 5 sync points, residual 0.000 us"
          in p.stderr, f"report: {p.stderr}")
    t = pftrace.decode_pftrace(os.path.join(tmp, "m.pftrace"))
    syncs = sorted(k for k in t.instants.elements() if k[1] == "prof_sync")
    check(len(syncs) == 10 and all(k[2] == true[dict(k[3])["sync"]] for k in syncs),
          f"sync points on the reference clock: {syncs}")
    work = sorted(t.slices.elements())
    check([(k[1], k[2], k[3]) for k in work] == [("work", true[0], 500)] * 2, f"regions {work}")
    check(len({k[0] for k in work}) == 2, f"the ranks' threads stay apart: {work}")
    check(t.threads == {(1 << 22) | 4243: "main", (2 << 22) | 4243: "main"}, f"threads {t.threads}")
    check(t.process in ("rank 0 (trainer)", "rank 1 (trainer)"), f"process {t.process}")
    m = t.attributes
    check(m["prof_merged_ranks"] == "0,1" and m["prof_dropped_events"] == 7 and m["rank1.rank"] == 1 and
          m["rank1.prof_merge_offset_ns"] == -delta and m["traceName"] == "m.pftrace", f"attributes {m}")
    check(sum(t.flows.values()) == 0 and len(t.slices) == 2, "flows")
    raw = pb.Trace()
    raw.ParseFromString(open(os.path.join(tmp, "m.pftrace"), "rb").read())
    seqs = {q.trusted_packet_sequence_id for q in raw.packet}
    check(seqs == {1, 2, 3, 4, 5}, f"sequences {sorted(seqs)}: each rank's own, and one for the attributes")
    uuids = [q.track_descriptor.uuid for q in raw.packet if q.HasField("track_descriptor")]
    check(len(set(uuids)) == 4, f"track uuids {uuids}")
    clocks = {c.clock_id for q in raw.packet for c in q.clock_snapshot.clocks}
    check(clocks == {1, 64}, f"clocks kept: {clocks} (each host's MONOTONIC left out)")
    # mixing formats, a JSON name for a Perfetto merge
    with open(os.path.join(tmp, "j.json"), "w") as f:
        f.write('{"traceEvents": []}')
    p = merge(tool, ["s0.pftrace", "j.json"], tmp, expect_rc=2)
    check("s0.pftrace is a Perfetto trace and j.json a JSON one: prof merge merges traces of one format" in p.stderr,
          f"stderr: {p.stderr}")
    p = merge(tool, ["-o", "m.json", "s0.pftrace", "s1.pftrace"], tmp, expect_rc=2)
    check("m.json: the inputs are Perfetto traces and so is the merged trace: name it .pftrace" in p.stderr,
          f"stderr: {p.stderr}")
    # a real run: two ranks of merge_ranks.c, streamed as .pftrace
    rounds = 5
    run_ranks(ranks_bin, tmp, rounds, "rank{rank}.pftrace")
    p = merge(tool, ["rank1.pftrace", "rank0.pftrace"], tmp)
    print(p.stderr.strip())
    mres = re.search(r"rank 1 \(rank1\.pftrace\): offset ([+-][0-9.]+) us from 5 sync points, residual ([0-9.]+) us",
                     p.stderr)
    check(mres, f"report: {p.stderr}")
    t = pftrace.decode_pftrace(os.path.join(tmp, "merged.pftrace"))
    sync = {}
    for k in t.instants.elements():
        if k[1] == "prof_sync":
            sync.setdefault(dict(k[3])["sync"], []).append(k[2])
    resid = int(Decimal(mres.group(2)) * 1000)
    check(sorted(sync) == list(range(rounds)) and all(len(v) == 2 and abs(v[0] - v[1]) <= resid for v in sync.values()),
          f"sync points aligned within {resid} ns: {sync}")
    work = [k for k in t.slices.elements() if k[1] == "work"]
    check(len(work) == 2 * rounds and len({k[0] for k in work}) == 2, f"work regions {len(work)}")


def main():
    case, tool, ranks_bin = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    fn = globals().get("case_" + case)
    if not fn:
        fail(f"no case {case}")
    with tempfile.TemporaryDirectory() as tmp:
        fn(tool, ranks_bin, tmp)
    print(f"ok: merge {case}")


if __name__ == "__main__":
    main()
