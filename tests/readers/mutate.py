#!/usr/bin/env python3
"""Write a broken copy of a fixture run, for the negative reader checks.

    mutate.py SRC_DIR DST_DIR MUTATION

Copies every trace file of SRC_DIR into DST_DIR (created) with MUTATION
applied.  Standard library only.  Mutations:
  no-cat            drop "cat" from one X region       (TensorBoard fails the worker)
  no-name-meta      drop "name" from one M event       (TensorBoard KeyError)
  no-memory         drop the [memory] instant events   (no Memory view)
  no-steps          drop the ProfilerStep#N events     (no steps)
  bad-step-name     rename a region "ProfilerStepX"    (HTA crashes in add_iteration)
  rename-matmul     rename region matmul to matmul2    (expected name missing)
  rank-no-space     write "rank":N without the space   (HTA maps every file to rank 0)
  only-meta         keep only the M events             (HTA KeyError: no 'dur')
  bad-filename      name the file <worker>.json        (TensorBoard discovers no run)
  extra-json        add a non-trace config.json        (HTA reads it as a rank)
  sub-us            add two short regions inside forward, as a real run
                    has them: "tiny" (20 ns, within one whole us) and
                    "short" (0.9 us, across one), both exact in ns.  HTA's
                    default ns rounding (ceil start, floor end) turns them
                    into dur -1 and dur 0, and its CallGraph raises
                    "Unexpected case"; with HTA_DISABLE_NS_ROUNDING=1 it
                    nests both under forward.
"""
import json
import os
import sys


def main():
    src, dst, mut = sys.argv[1:4]
    os.makedirs(dst, exist_ok=True)
    for fn in sorted(os.listdir(src)):
        if not fn.endswith(".json"):
            continue
        text = open(os.path.join(src, fn)).read()
        obj = json.loads(text)
        ev = obj["traceEvents"]
        regions = [e for e in ev if e.get("ph") == "X" and e.get("name") in
                   ("forward", "matmul", "relu", "backward", "data_load")]
        out_name = fn
        if mut == "no-cat":
            regions[0].pop("cat")
        elif mut == "no-name-meta":
            next(e for e in ev if e.get("ph") == "M").pop("name")
        elif mut == "no-memory":
            obj["traceEvents"] = [e for e in ev if e.get("name") != "[memory]"]
        elif mut == "no-steps":
            obj["traceEvents"] = [e for e in ev if not e.get("name", "").startswith("ProfilerStep")]
        elif mut == "bad-step-name":
            regions[0]["name"] = "ProfilerStepX"
        elif mut == "rename-matmul":
            for e in ev:
                if e.get("name") == "matmul":
                    e["name"] = "matmul2"
        elif mut == "only-meta":
            obj["traceEvents"] = [e for e in ev if e.get("ph") == "M"]
        elif mut == "bad-filename":
            out_name = fn.split(".")[0] + ".json"
        elif mut == "sub-us":
            fwd = next(e for e in ev if e.get("name") == "forward")
            t = float(int(fwd["ts"]) + 2)     # a whole us inside forward
            for name, ts, dur in (("tiny", t + 0.2, 0.02), ("short", t + 0.3, 0.9)):
                ev.append(dict(fwd, name=name, ts=round(ts, 3), dur=dur))
        elif mut not in ("rank-no-space", "extra-json"):
            sys.exit("mutate.py: unknown mutation %r" % mut)
        text = json.dumps(obj, indent=1)
        if mut == "rank-no-space":
            text = text.replace('"rank": ', '"rank":')
        with open(os.path.join(dst, out_name), "w") as f:
            f.write(text)
    if mut == "extra-json":
        with open(os.path.join(dst, "config.json"), "w") as f:
            f.write('{"lr": 0.1}\n')


if __name__ == "__main__":
    main()
