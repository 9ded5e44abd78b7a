#!/usr/bin/env python3
"""The environment variables are written in two places and read in a third:

  - prof.h's ENVIRONMENT block (the top comment): an entry per variable, its
    name (or "A, B") at the start of a line indented five spaces;
  - README.md's table of environment variables (the table whose header is
    "| variable | meaning |"): the names in its first column;
  - the code: the string literals "PROF_..." of prof.h's >>env section (its
    getenv calls, and the names tables and helpers it hands them to) and every
    getenv("PROF_...") in prof.h, prof_cuda.h and prof_hip.h.

Fails, naming each difference, when a variable the code reads is missing
from a document, a documented variable is not read, or the two documents
disagree. Also fails when prof.h calls getenv with a computed name outside
>>env, where this check cannot see which names it reads.

    check_env.py [REPO_ROOT]     (default: two directories up)
"""
import os
import re
import sys

# Variables read on purpose without being documented (none today), each with
# the reason: name -> why.
INTERNAL = {}

ENTRY = re.compile(r"^     (PROF_[A-Z0-9_]+(?:, PROF_[A-Z0-9_]+)*)(?:\s|$)")
LITERAL = re.compile(r'"(PROF_[A-Z0-9_]+)"')
GETENV = re.compile(r"\bgetenv\s*\(\s*([^)]*)\)")


def header_block(text):
    """The names of the ENVIRONMENT block's entries, with their line numbers."""
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("   ENVIRONMENT")), None)
    if start is None:
        raise SystemExit("prof.h: no ENVIRONMENT block in the top comment")
    names = {}
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if re.match(r"^   [A-Z]", line) or "*/" in line:     # the next heading, or the comment's end
            break
        m = ENTRY.match(line)
        if m:
            for name in m.group(1).split(", "):
                names.setdefault(name, i + 1)
    return names


def env_section(text):
    """prof.h's >>env section: from its banner to the next banner."""
    m = re.search(r"^/\* ---- >>env\b.*$", text, re.M)
    if not m:
        raise SystemExit("prof.h: no >>env banner")
    end = re.search(r"^/\* ---- >>", text[m.end():], re.M)
    stop = m.end() + end.start() if end else len(text)
    return m.start(), stop


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def code_names(root):
    """Variables the code reads: name -> where, and problems found."""
    names, problems = {}, []
    prof_h = open(os.path.join(root, "prof.h")).read()
    a, b = env_section(prof_h)
    for m in LITERAL.finditer(prof_h, a, b):
        names.setdefault(m.group(1), f"prof.h:{line_of(prof_h, m.start())} (>>env)")
    for header in ("prof.h", "prof_cuda.h", "prof_hip.h"):
        path = os.path.join(root, header)
        if not os.path.exists(path):
            continue
        text = open(path).read()
        for m in GETENV.finditer(text):
            arg = m.group(1).strip()
            where = f"{header}:{line_of(text, m.start())}"
            lit = LITERAL.fullmatch(arg)
            if lit:
                names.setdefault(lit.group(1), where)
            elif arg.startswith('"'):
                pass                    # a variable not of prof.h's (a launcher's, say)
            elif not (header == "prof.h" and a <= m.start() < b):
                problems.append(f"{where}: getenv({arg}) reads a computed name outside prof.h's >>env; "
                                "this check cannot tell which (read it in >>env, or teach tests/docs/check_env.py)")
    return names, problems


def readme_table(text):
    """The names in the first column of README.md's environment table."""
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if re.match(r"^\|\s*variable\s*\|\s*meaning\s*\|", l)), None)
    if start is None:
        raise SystemExit("README.md: no environment table (header '| variable | meaning |')")
    names = {}
    for i in range(start + 2, len(lines)):
        line = lines[i]
        if not line.startswith("|"):
            break
        first = line.split("|")[1]
        for name in re.findall(r"`(PROF_[A-Z0-9_]+)`", first):
            names.setdefault(name, i + 1)
    return names


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    header = header_block(open(os.path.join(root, "prof.h")).read())
    readme = readme_table(open(os.path.join(root, "README.md")).read())
    code, problems = code_names(root)
    for name in sorted(set(code) - set(header) - set(INTERNAL)):
        problems.append(f"{name} is read ({code[name]}) but has no entry in prof.h's ENVIRONMENT block")
    for name in sorted(set(code) - set(readme) - set(INTERNAL)):
        problems.append(f"{name} is read ({code[name]}) but is not in README.md's environment table")
    for name in sorted(set(header) - set(code)):
        problems.append(f"{name} has an entry in prof.h's ENVIRONMENT block (prof.h:{header[name]}) "
                        "but no code reads it")
    for name in sorted(set(readme) - set(code)):
        problems.append(f"{name} is in README.md's environment table (README.md:{readme[name]}) but no code reads it")
    for name in sorted(set(INTERNAL) - set(code)):
        problems.append(f"{name} is listed as internal in tests/docs/check_env.py but no code reads it")
    for name in sorted(set(INTERNAL) & (set(header) | set(readme))):
        problems.append(f"{name} is listed as internal in tests/docs/check_env.py but is documented")
    if problems:
        for p in problems:
            print(f"FAIL: {p}")
        print(f"docs_env: {len(problems)} difference(s)")
        return 1
    print(f"docs_env: {len(code)} variables, read by the code and documented alike in prof.h and README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
