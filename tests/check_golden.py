#!/usr/bin/env python3
"""The writers' golden files (tests/golden/, written by test_writers) read
back: each variant's .pftrace, decoded with Perfetto's compiled proto
(pftrace.py: slices paired as the trace processor pairs them, every track
described before its first event), says what its .json says, event for
event; its .json.gz is its .json. A golden file that no reader reads alike
would keep a writer's mistake as the expected bytes.

    check_golden.py [GOLDEN_DIR]"""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pftrace  # noqa: E402
from run_case import check  # noqa: E402


def main():
    golden = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
    if pftrace.pb is None:
        print("SKIP: the perfetto package (tests/readers/requirements.txt) is not installed")
        sys.exit(77)
    variants = sorted(f[:-len(".pftrace")] for f in os.listdir(golden) if f.endswith(".pftrace"))
    check(len(variants) == 4, f"golden variants: {variants}")
    for v in variants:
        path = os.path.join(golden, v)
        try:
            p = pftrace.decode_pftrace(path + ".pftrace")
        except ValueError as e:
            check(False, f"{v}.pftrace: {e}")
        diff = pftrace.load_json(path + ".json").diff(p)
        check(not diff, f"{v}: the .pftrace and the .json differ:\n" + "\n".join(diff))
        if os.path.exists(path + ".json.gz"):
            with gzip.open(path + ".json.gz", "rt") as f, open(path + ".json") as g:
                z, j = json.load(f), json.load(g)
            check(z.pop("traceName") == f"{v}.json.gz" and j.pop("traceName") == f"{v}.json" and z == j,
                  f"{v}: the .json.gz is not the .json")
        print(f"{v}: .pftrace and .json alike ({sum(p.slices.values())} slices)")


if __name__ == "__main__":
    main()
