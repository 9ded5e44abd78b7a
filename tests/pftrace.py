"""Read a trace back the way its readers do, into one shape for both formats.

decode_pftrace(path) parses a Perfetto protobuf trace with the official
compiled proto (PyPI's `perfetto` package: perfetto_trace_pb2), applying the
format's rules itself: sequences, their default tracks, interned names,
incremental timestamps on sequence-scoped clocks, BEGIN/END slices paired on
each track. from_json(d) reads a Kineto-shaped JSON trace. Both give a Trace:
events with absolute timestamps in ns, so a test can say "no semantic
difference" with one ==.

Differences by design, undone here: the JSON's steps end 1 ns early (readers
add ts and dur as doubles); the JSON draws a partly overlapping region on its
thread (Perfetto then moves it), the protobuf on the thread's overlap track.
"""
import json
from collections import Counter, defaultdict

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError:  # the caller decides: tests skip with a reason
    pb = None

TE = pb.TrackEvent if pb else None
INCREMENTAL_CLEARED = 1


class Trace:
    """What a trace says, format aside."""

    def __init__(self):
        self.meta = {}              # dropped, clipped, rank, world_size, base
        self.process = None         # its name
        self.threads = {}           # tid -> name
        self.slices = Counter()     # (track, name, ts, dur, args)
        self.instants = Counter()   # (tid, name, ts, args)
        self.counters = Counter()   # (name, ts, value)
        self.flows = Counter()      # ((cpu track, ts), (gpu track, ts))
        self.nested = 0             # slices checked to lie inside their parent

    def diff(self, other):
        """Lines saying how other differs from self (empty: the same)."""
        out = []
        for field in ("meta", "process", "threads"):
            a, b = getattr(self, field), getattr(other, field)
            if a != b:
                out.append(f"{field}: {a!r} != {b!r}")
        for field in ("slices", "instants", "counters", "flows"):
            a, b = getattr(self, field), getattr(other, field)
            only_a, only_b = a - b, b - a
            if only_a or only_b:
                out.append(f"{field}: {sum(only_a.values())} only in the first, e.g. {list(only_a)[:3]}; "
                           f"{sum(only_b.values())} only in the second, e.g. {list(only_b)[:3]}")
        return out


def _args(d):
    return tuple(sorted((k, v) for k, v in (d or {}).items()))


def from_json(d):
    """A Kineto-shaped JSON trace (parsed) as a Trace."""
    t = Trace()
    base = int(d["baseTimeNanoseconds"])
    ns = lambda us: base + round(us * 1000)
    t.meta = {"dropped": d.get("prof_dropped_events"), "clipped": d.get("prof_clipped_regions"), "base": base}
    if "distributedInfo" in d:
        t.meta["rank"] = d["distributedInfo"]["rank"]
        t.meta["world_size"] = d["distributedInfo"]["world_size"]
    if "prof_gpu_dropped_regions" in d:
        t.meta["gpu_dropped"] = d["prof_gpu_dropped_regions"]
    cpu_pid = None
    starts, ends = {}, {}
    for e in d["traceEvents"]:
        ph, name, args = e["ph"], e.get("name"), e.get("args", {})
        if ph == "M":
            if name == "process_name" and cpu_pid is None:
                cpu_pid, t.process = e["pid"], args["name"]
            elif name == "thread_name" and e["pid"] == cpu_pid:
                t.threads[e["tid"]] = args["name"]
        elif ph == "X" and e["cat"] == "gpu_user_annotation":
            t.slices[(("gpu", e["pid"], e["tid"]), name, ns(e["ts"]), round(e["dur"] * 1000), _args(args))] += 1
        elif ph == "X" and e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"):
            # kernel capture: what both formats say (Kineto's fixed and derived
            # args aside), grid and block as Perfetto's strings
            a = {k: (f"[{v[0]}, {v[1]}, {v[2]}]" if k in ("grid", "block") else v) for k, v in args.items()
                 if k not in ("queued", "context", "memory bandwidth (GB/s)")}
            t.slices[(("gpu", e["pid"], e["tid"]), name, ns(e["ts"]), round(e["dur"] * 1000), _args(a))] += 1
        elif ph == "X" and e["cat"] == "cuda_sync":
            # a synchronisation, on its row beside its stream (tid: stream +
            # 1000000, or 999999 for none), Kineto's fixed context aside
            a = {k: v for k, v in args.items() if k != "context"}
            t.slices[(("gpu", e["pid"], e["tid"]), name, ns(e["ts"]), round(e["dur"] * 1000), _args(a))] += 1
        elif ph == "X":
            dur = round(e["dur"] * 1000) + (1 if name.startswith("ProfilerStep#") else 0)
            t.slices[(("cpu", e["tid"]), name, ns(e["ts"]), dur, _args(args))] += 1
        elif ph == "i" and e.get("cat") == "prof_sync":
            t.instants[("process", name, ns(e["ts"]), _args(args))] += 1
        elif ph == "i":
            t.instants[(e["tid"], name, ns(e["ts"]), _args(args))] += 1
        elif ph == "C":
            (value,) = args.values()
            t.counters[(name, ns(e["ts"]), value)] += 1
        elif ph == "s":
            starts[e["id"]] = (("cpu", e["tid"]), ns(e["ts"]))
        elif ph == "f":
            ends[e["id"]] = (("gpu", e["pid"], e["tid"]), ns(e["ts"]))
    for i, s in starts.items():
        if i in ends:
            t.flows[(s, ends[i])] += 1
    return t


def load_json(path):
    with open(path, "rb") as f:
        return from_json(json.loads(f.read()))


class _Seq:
    def __init__(self):
        self.names, self.keys = {}, {}
        self.track = None
        self.clock = {}             # clock id -> [last ns, incremental]
        self.clock_id = 0


def decode_pftrace(path_or_bytes, truncated_ok=False):
    """The packets of a .pftrace, checked and read into a Trace. Raises
    ValueError on what a reader would reject (an END without a BEGIN, a
    name never interned, an event on a track not described before it in
    the file: a reader in one pass, as prof's, cannot place it).
    truncated_ok: a file cut short (a killed run) is read as Perfetto reads
    it: the packets before the cut, the slices they close; t.cut says how
    many bytes of a last packet were lost."""
    raw = path_or_bytes if isinstance(path_or_bytes, bytes) else open(path_or_bytes, "rb").read()
    if not truncated_ok:
        trace = pb.Trace()
        trace.ParseFromString(raw)
        return from_packets(trace.packet)
    packets, i = [], 0
    while i < len(raw):                 # Trace.packet: tag 0x0A, varint length, bytes
        if raw[i] != 0x0A:
            raise ValueError(f"byte {i}: not a Trace.packet field")
        n, shift, j = 0, 0, i + 1
        while j < len(raw) and raw[j] & 0x80:
            n |= (raw[j] & 0x7F) << shift
            shift, j = shift + 7, j + 1
        if j >= len(raw):
            break
        n |= raw[j] << shift
        if j + 1 + n > len(raw):
            break
        p = pb.TracePacket()
        p.ParseFromString(raw[j + 1:j + 1 + n])
        packets.append(p)
        i = j + 1 + n
    t = from_packets(packets, allow_unclosed=True)
    t.cut = len(raw) - i
    return t


def from_packets(packets, allow_unclosed=False):
    t = Trace()
    seqs = defaultdict(_Seq)
    tracks = {}                     # uuid -> descriptor
    marks = defaultdict(list)       # track uuid -> BEGINs and ENDs in file order
    open_ = defaultdict(list)       # track uuid -> [(name, ts, args, flows, flow ends, id)]
    done = []                       # (track uuid, name, ts, dur, args, flows, flow ends, parent id)
    opened, interval = [], {}       # slice id -> (begin, end)
    instants, counters = [], []
    ends = {}                       # flow id -> (track uuid, ts)
    primary = None
    described = set()               # tracks described so far, in file order
    for i, p in enumerate(packets):
        s = seqs[p.trusted_packet_sequence_id]
        if p.sequence_flags & INCREMENTAL_CLEARED:
            seqs[p.trusted_packet_sequence_id] = s = _Seq()
        if p.HasField("trace_packet_defaults"):
            dflt = p.trace_packet_defaults
            s.clock_id = dflt.timestamp_clock_id
            if dflt.HasField("track_event_defaults"):
                s.track = dflt.track_event_defaults.track_uuid
        for n in p.interned_data.event_names:
            s.names[n.iid] = n.name
        for n in p.interned_data.debug_annotation_names:
            s.keys[n.iid] = n.name
        if p.HasField("clock_snapshot"):
            cs = p.clock_snapshot
            if cs.primary_trace_clock:
                primary = cs.primary_trace_clock
            real = [c.timestamp for c in cs.clocks if c.clock_id == 1]
            for c in cs.clocks:
                if c.clock_id >= 64:   # [last reading, incremental, + this: REALTIME]
                    s.clock[c.clock_id] = [c.timestamp, c.is_incremental, real[0] - c.timestamp if real else 0]
            continue
        for a in p.trace_attributes.attribute:
            t.meta[a.key] = a.string_value if a.HasField("string_value") else a.long_value
        if p.HasField("track_descriptor"):
            tracks[p.track_descriptor.uuid] = p.track_descriptor
            described.add(p.track_descriptor.uuid)
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        track = e.track_uuid if e.HasField("track_uuid") else s.track
        if track not in described:      # a reader that reads in one pass would lose the event
            raise ValueError(f"packet {i}: an event on track {track}, not described before it")
        clock = p.timestamp_clock_id or s.clock_id
        if clock >= 64:
            last, inc, to_real = s.clock[clock]
            ts = last + p.timestamp if inc else p.timestamp
            s.clock[clock][0] = ts
            ts += to_real
        elif clock in (0, primary):
            ts = p.timestamp
        else:
            raise ValueError(f"timestamp on clock {clock}, not the trace's clock {primary}")
        name = e.name if e.HasField("name") else (s.names[e.name_iid] if e.HasField("name_iid") else None)
        args = {}
        for a in e.debug_annotations:
            key = s.keys[a.name_iid] if a.HasField("name_iid") else a.name
            args[key] = (a.string_value if a.HasField("string_value") else
                         a.double_value if a.HasField("double_value") else a.int_value)
        if e.type in (TE.TYPE_SLICE_BEGIN, TE.TYPE_SLICE_END):
            marks[track].append((ts, len(marks[track]), e.type, name, args, list(e.flow_ids),
                                 list(e.terminating_flow_ids)))
        elif e.type == TE.TYPE_INSTANT:
            instants.append((track, name, ts, args))
        elif e.type == TE.TYPE_COUNTER:
            v = e.double_counter_value if e.HasField("double_counter_value") else e.counter_value
            counters.append((track, ts, v))
    # Slices as the trace processor builds them: each track's BEGINs and ENDs
    # sorted by time (ties in file order), an END closing the last BEGIN.
    for track, ms in marks.items():
        for ts, _, kind, name, args, flows, term in sorted(ms, key=lambda m: (m[0], m[1])):
            if kind == TE.TYPE_SLICE_BEGIN:
                open_[track].append((name, ts, args, flows, term, len(opened)))
                opened.append(None)
                continue
            if not open_[track]:
                raise ValueError(f"END without BEGIN on track {track}")
            bname, bts, bargs, bflows, bterm, ident = open_[track].pop()
            parent = open_[track][-1][5] if open_[track] else None
            done.append((track, bname, bts, ts - bts, {**bargs, **args}, bflows, bterm, parent))
            interval[ident] = (bts, ts)
    unclosed = {k: v for k, v in open_.items() if v}
    if unclosed and not allow_unclosed:
        raise ValueError(f"slices never ended: {unclosed}")

    pid = None
    for d in tracks.values():
        if d.HasField("process"):
            pid, t.process = d.process.pid, d.process.process_name
        if d.HasField("thread"):
            t.threads[d.thread.tid] = d.thread.thread_name

    def where(uuid):
        d = tracks[uuid]
        if d.HasField("thread"):
            return ("cpu", d.thread.tid)
        if d.HasField("process"):
            return "process"
        if d.name == "overlapping regions":
            return where(d.parent_uuid)
        if d.name == "sync" or (d.name.startswith("stream ") and d.name.endswith(" sync")):
            dev = tracks[d.parent_uuid].name    # a synchronisation's row, as the JSON's tid
            row = 999999 if d.name == "sync" else int(d.name.split()[1]) + 1000000
            return ("gpu", int(dev.split()[1]), row)
        if d.name.startswith("stream "):
            dev = tracks[d.parent_uuid].name
            return ("gpu", int(dev.split()[1]), int(d.name.split()[1]))
        raise ValueError(f"event on track {d.name!r}")

    starts = {}
    spans = {}
    for track, name, ts, dur, args, flows, term, parent in done:
        w = where(track)
        t.slices[(w, name, ts, dur, _args(args))] += 1
        spans.setdefault(track, []).append((ts, ts + dur))
        for f in flows:
            starts[f] = (w, ts)
        for f in term:
            ends[f] = (w, ts)
    for f, s in starts.items():
        if f in ends:
            t.flows[(s, ends[f])] += 1
    for track, name, ts, args in instants:
        w = where(track)
        t.instants[(w if w == "process" else w[1], name, ts, _args(args))] += 1
    for track, ts, v in counters:
        t.counters[(tracks[track].name, ts, v)] += 1
    # Nesting: on a track, a slice lies inside the one open when it began.
    for track, name, ts, dur, args, flows, term, parent in done:
        if parent is not None and parent in interval:    # (a cut file's last slices never close)
            b, e = interval[parent]
            if not (b <= ts and ts + dur <= e):
                raise ValueError(f"slice {name!r} [{ts}, {ts + dur}] is not inside its parent [{b}, {e}]")
            t.nested += 1
    # the JSON's header keys, as this format names them
    m = t.meta
    t.meta = {"dropped": m.get("prof_dropped_events"), "clipped": m.get("prof_clipped_regions"),
              "base": m.get("baseTimeNanoseconds")}
    for k in ("rank", "world_size"):
        if k in m:
            t.meta[k] = m[k]
    if "prof_gpu_dropped_regions" in m:
        t.meta["gpu_dropped"] = m["prof_gpu_dropped_regions"]
    t.attributes = m
    t.pid = pid
    return t
