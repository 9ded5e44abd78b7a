#!/usr/bin/env python3
"""The one summary that run_tests.sh ends with.

    summary.py SECONDS STAGE_DIR...

Each STAGE_DIR is a build-tests/<stage> directory, holding what run_tests.sh
left there: `result` (one line: "ok", or "configure failed" / "build failed"
with the log beside it) and ctest's `junit.xml` (ctest --output-junit).
Prints, per stage, the tests passed, failed and skipped; every skipped test
with its reason (the line where it says why); every failed test with its first
error lines; and ends with the closing line

    tests: N passed, N failed, N skipped

Exit status 1 when a test or a stage failed. Standard library only."""
import os
import re
import sys
import xml.etree.ElementTree as ET

ERROR = re.compile(r"FAIL|[Ee]rror|Traceback|assert|ERROR:|Sanitizer|WARNING: ThreadSanitizer|differs|runtime error")


def skip_reason(out):
    """The line that says why a test skipped (exit 77)."""
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    for l in lines:
        if re.search(r"skip", l, re.I):
            return l
    return lines[-1] if lines else "(it printed no reason)"


def first_errors(out, n=3):
    lines = [l.rstrip() for l in out.splitlines() if l.strip()]
    hits = [l for l in lines if ERROR.search(l)]
    pick = (hits or lines[-n:])[:n]
    return [l[:200] for l in pick] or ["(no output)"]


def log_errors(path, n=5):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ["(no log at %s)" % path]
    hits = [l for l in lines if re.search(r"error|Error|CMake Error|warning:", l)]
    return [l[:200] for l in (hits or lines[-n:])[:n]]


def main():
    secs, dirs = sys.argv[1], sys.argv[2:]
    totals = [0, 0, 0]
    rows, skipped, failed = [], [], []
    for d in dirs:
        stage = os.path.basename(d.rstrip("/"))
        try:
            result = open(os.path.join(d, "result")).read().strip()
        except OSError:
            result = "not run"
        p = f = s = 0
        junit = os.path.join(d, "junit.xml")
        if result == "ok" and os.path.exists(junit):
            for tc in ET.parse(junit).getroot().iter("testcase"):
                name, status = tc.get("name"), tc.get("status")
                out = tc.findtext("system-out") or ""
                if status == "run":
                    p += 1
                elif status in ("notrun", "disabled") or tc.find("skipped") is not None:
                    s += 1
                    skipped.append((stage, name, skip_reason(out)))
                else:
                    f += 1
                    failed.append((stage, name, first_errors(out)))
        elif result != "ok":
            f += 1
            what = result.split()[0] if result != "not run" else "stage"
            failed.append((stage, "(" + result + ")", log_errors(os.path.join(d, what + ".log"))))
        rows.append((stage, p, f, s, result))
        totals[0] += p
        totals[1] += f
        totals[2] += s

    print(f"\n==== summary ({secs} s)")
    print(f"{'stage':<8} {'passed':>7} {'failed':>7} {'skipped':>8}")
    for stage, p, f, s, result in rows:
        extra = "" if result == "ok" else "  " + result
        print(f"{stage:<8} {p:>7} {f:>7} {s:>8}{extra}")
    if skipped:
        print("\nskipped:")
        for stage, name, why in skipped:
            print(f"  [{stage}] {name}: {why}")
    if failed:
        print("\nFAILED:")
        for stage, name, lines in failed:
            print(f"  [{stage}] {name}")
            for l in lines:
                print(f"      {l}")
    print(f"\ntests: {totals[0]} passed, {totals[1]} failed, {totals[2]} skipped")
    return 1 if totals[1] else 0


if __name__ == "__main__":
    sys.exit(main())
