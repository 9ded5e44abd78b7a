#!/usr/bin/env python3
"""The manual's links and test names hold:

  - every relative link in README.md, HACKING.md, docs/*.md and bench/README.md points to
    a file that exists, and its #anchor, if any, to a heading of that file
    (GitHub's rule: lower case, punctuation dropped, spaces to hyphens);
  - every test named in them (`robust_crash`, `scenario_*_trigger`,
    `gpu_*_hang`, ...) is one the suite registers, as `ctest -N` lists them in
    the build tree, or one only another stage's build registers (the fuzzers:
    OTHER_STAGES, comma-separated); a * matches any part of a name.

    check_links.py REPO_ROOT BUILD_DIR [CTEST [OTHER_STAGES]]
"""
import fnmatch
import glob
import os
import re
import subprocess
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TEST = re.compile(r"`((?:robust|scenario|fuzz|merge|gpu_(?:cuda|hip|\*)|cupti|real_(?:cuda|hip)|nvtx|roctx|readers|package|docs)"
                  r"_[a-z0-9_*]+)`")


def pages(root):
    out = [os.path.join(root, "README.md"), os.path.join(root, "HACKING.md"), os.path.join(root, "bench", "README.md")]
    out += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [p for p in out if os.path.exists(p)]


def prose(text):
    """The text outside fenced code blocks, line by line (with line numbers)."""
    fence = False
    for i, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            yield i, line


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)       # \w keeps letters, digits and _
    return s.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, line in prose(open(path, encoding="utf-8").read()):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def registered(build, ctest):
    """The names of the tests the build tree registers."""
    out = subprocess.run([ctest, "-N"], cwd=build, capture_output=True, text=True, check=True).stdout
    return re.findall(r"^\s*Test\s+#\d+: (\S+)$", out, re.M)


def main():
    root, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    tests = registered(build, sys.argv[3] if len(sys.argv) > 3 else "ctest")
    tests += [t for t in (sys.argv[4] if len(sys.argv) > 4 else "").split(",") if t]
    if not tests:
        print(f"FAIL: ctest -N lists no tests in {build}")
        return 1
    problems, nlinks, ntests = [], 0, set()
    for page in pages(root):
        rel = os.path.relpath(page, root)
        for i, line in prose(open(page, encoding="utf-8").read()):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z]+:", target):     # https:, mailto:
                    continue
                nlinks += 1
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                if not os.path.exists(dest):
                    problems.append(f"{rel}:{i}: link to {target}: {os.path.relpath(dest, root)} does not exist")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    problems.append(f"{rel}:{i}: link to {target}: no heading '#{anchor}' in "
                                    f"{os.path.relpath(dest, root)}")
            for m in TEST.finditer(line):
                name = m.group(1)
                ntests.add(name)
                if not fnmatch.filter(tests, name):
                    problems.append(f"{rel}:{i}: test {name}: no such test is registered")
    if problems:
        for p in problems:
            print(f"FAIL: {p}")
        print(f"docs_links: {len(problems)} problem(s)")
        return 1
    print(f"docs_links: {nlinks} relative links and {len(ntests)} test names hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
