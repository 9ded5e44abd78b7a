#!/usr/bin/env python3
"""docs/guarantees.md's table holds: every row names at least one test in
its last column ("tested by"), each as `name` (a * matches any part of a
name), and each name is a test the suite registers, as `ctest -N` lists
them in the build tree, or one only another stage's build registers (the
fuzzers: OTHER_STAGES, comma-separated).

    check_guarantees.py REPO_ROOT BUILD_DIR [CTEST [OTHER_STAGES]]
"""
import fnmatch
import os
import re
import subprocess
import sys

NAME = re.compile(r"`([^`\s]+)`")


def registered(build, ctest):
    """The names of the tests the build tree registers."""
    out = subprocess.run([ctest, "-N"], cwd=build, capture_output=True, text=True, check=True).stdout
    return re.findall(r"^\s*Test\s+#\d+: (\S+)$", out, re.M)


def rows(path):
    """(line number, first cell, last cell) of each row of the table whose
    header's last column is "tested by"."""
    out, inside = [], False
    for i, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if not line.startswith("|"):
            inside = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if cells[-1] == "tested by":
            inside = True
        elif inside and not re.fullmatch(r"[-|: ]+", line):
            out.append((i, cells[0], cells[-1] if len(cells) > 1 else ""))
    return out


def main():
    root, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tests = registered(build, sys.argv[3] if len(sys.argv) > 3 else "ctest")
    tests += [t for t in (sys.argv[4] if len(sys.argv) > 4 else "").split(",") if t]
    path = os.path.join(root, "docs", "guarantees.md")
    if not tests:
        print(f"FAIL: ctest -N lists no tests in {build}")
        return 1
    if not os.path.exists(path):
        print("FAIL: there is no docs/guarantees.md")
        return 1
    table = rows(path)
    problems = [] if table else ["docs/guarantees.md: no table with a 'tested by' column, or no rows in it"]
    named = set()
    for i, when, tested in table:
        names = NAME.findall(tested)
        if not names:
            problems.append(f"docs/guarantees.md:{i}: the row '{when}' names no test")
        for name in names:
            named.add(name)
            if not fnmatch.filter(tests, name):
                problems.append(f"docs/guarantees.md:{i}: the row '{when}' names {name}, which no build registers")
    for p in problems:
        print(f"FAIL: {p}")
    if problems:
        return 1
    print(f"docs_guarantees: {len(table)} rows, each tested; {len(named)} test names, each registered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
