#!/usr/bin/env python3
"""check_nccl.py TRACE: nccl_one_rank's trace under `prof run` holds NCCL's
own NVTX ranges: 5 ncclAllReduce, each inside an all_reduce region on its
thread, domain NCCL, 4 MiB, Sum; ncclCommInitRank inside init, 1 rank."""
import json
import sys

ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
def inside(e, name):
    return any(p["name"] == name and p["tid"] == e["tid"] and p["ts"] <= e["ts"] and
               e["ts"] + e["dur"] <= p["ts"] + p["dur"] for p in ev)
ar = [e for e in ev if e["name"] == "ncclAllReduce"]
ok = len(ar) == 5 and all(inside(e, "all_reduce") for e in ar)
ok = ok and all(e["args"].get("domain") == "NCCL" and e["args"].get("Message size [bytes]") == 4 << 20 and
                e["args"].get("Reduction operation") == "Sum" for e in ar)
ci = [e for e in ev if e["name"] == "ncclCommInitRank"]
ok = ok and len(ci) == 1 and inside(ci[0], "init") and ci[0]["args"].get("No. of ranks") == 1
for e in ar[:1] + ci:
    print(f"{e['name']}: {e['args']}")
print("check_nccl: " + ("ok" if ok else f"FAILED: {len(ar)} ncclAllReduce, {len(ci)} ncclCommInitRank"))
sys.exit(0 if ok else 1)
