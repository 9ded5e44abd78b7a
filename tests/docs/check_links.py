#!/usr/bin/env python3
"""The manual's links and test names hold:

  - every relative link in README.md, docs/*.md and bench/README.md points to
    a file that exists, and its #anchor, if any, to a heading of that file
    (GitHub's rule: lower case, punctuation dropped, spaces to hyphens);
  - every test named in them (`robust_crash`, `scenario_*_trigger`,
    `gpu_*_hang`, ...) is one the suite registers: its name, or its case, is in
    a CMakeLists.txt (or, for robust_<case>, tests/robustness/<case>.c or .sh
    exists; for a scenario, run_case.py has case_<case>).

    check_links.py [REPO_ROOT]     (default: two directories up)
"""
import glob
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TEST = re.compile(r"`((?:robust|scenario|fuzz|merge|gpu_(?:cuda|hip|\*)|cupti|real_(?:cuda|hip)|nvtx|roctx|readers|package|docs)"
                  r"_[a-z0-9_*]+)`")


def pages(root):
    out = [os.path.join(root, "README.md"), os.path.join(root, "bench", "README.md")]
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


def cmake_text(root):
    texts = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git" and not d.startswith("build")]
        if "CMakeLists.txt" in filenames:
            texts.append(open(os.path.join(dirpath, "CMakeLists.txt"), encoding="utf-8").read())
    return "\n".join(texts)


def word_in(word, text):
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?![A-Za-z0-9_])", text) is not None


def test_known(root, name, cmake, cases_py):
    if "*" not in name and word_in(name, cmake):
        return True
    family, rest = name.split("_", 1)
    if name.endswith("*"):                  # a family: fuzz_*
        return re.search(r"(?<![A-Za-z0-9_])" + re.escape(name[:-1]) + r"[a-z0-9_]", cmake) is not None
    if "*" in name:
        rest = name.rsplit("*_", 1)[1]
    elif family == "scenario":
        rest = re.sub(r"^(c|cpp)_", "", rest)
    if family == "robust":
        return any(os.path.exists(os.path.join(root, "tests", "robustness", rest + ext)) for ext in (".c", ".sh")) \
            and (word_in(name, cmake) or word_in(rest, cmake))
    if family == "scenario" and f"def case_{rest}(" in cases_py:
        return True
    return "*" not in rest and word_in(rest, cmake)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    cmake = cmake_text(root)
    cases_py = "\n".join(open(p, encoding="utf-8").read() for p in glob.glob(os.path.join(root, "tests", "*.py")))
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
                if not test_known(root, name, cmake, cases_py):
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
