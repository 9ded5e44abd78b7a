#!/usr/bin/env python3
"""strip.py IN OUT -- write OUT: IN as if it had never mentioned prof.h.

Removes, keeping every line and column where it was (so __LINE__ and assert()
see the same numbers):
  - `#include "prof.h"` (or prof_cuda.h, prof_hip.h) and
    `#define PROF_IMPLEMENTATION`;
  - `#if defined(PROF_ENABLE)` / `#ifdef` / `#ifndef` / `#if !defined(...)`
    blocks, keeping the branch a build without PROF_ENABLE compiles;
  - every statement `PROF_NAME(args);`, arguments and semicolon included;
    one that is the sole body of if/else/for/while/do becomes `{}` (the
    empty body code without the profiler would have);
  - the prof_ prefix of the runtime wrappers (prof_cudaMalloc is cudaMalloc,
    right-aligned in the same columns).
Anything it cannot remove faithfully is an error (exit 1): a PROF_ name that
is not a call statement, PROF_ in other directives. A variable that only a
macro used is left in place, unused: check.sh builds the stripped source with
-Wno-unused-variable -Wno-unused-but-set-variable.
Prints the macros it removed, "NAME COUNT" per line.
"""
import collections
import re
import sys

DIRECTIVE = re.compile(r"^\s*#\s*(\w+)(.*)$")
PROF_NAME = re.compile(r"\bPROF_\w*")
HEADERS = {f'{q[0]}{h}{q[1]}' for h in ("prof.h", "prof_cuda.h", "prof_hip.h") for q in ('""', "<>")}
# the allocation wrappers of prof_cuda.h / prof_hip.h and what they wrap
WRAPPERS = {"prof_cudaMalloc": "cudaMalloc", "prof_cudaFree": "cudaFree",
            "prof_hipMalloc": "hipMalloc", "prof_hipFree": "hipFree"}
PROF_COND = {
    # condition text (spaces removed) -> is the branch live without PROF_ENABLE
    ("ifdef", "PROF_ENABLE"): False,
    ("ifndef", "PROF_ENABLE"): True,
    ("if", "defined(PROF_ENABLE)"): False,
    ("if", "definedPROF_ENABLE"): False,
    ("if", "!defined(PROF_ENABLE)"): True,
    ("if", "!definedPROF_ENABLE"): True,
}


def die(path, line, msg):
    sys.exit(f"{path}:{line}: strip.py: {msg}")


def strip_directives(path, lines):
    """Resolve the PROF_ENABLE conditionals and drop the prof.h lines."""
    out = []
    stack = []  # per open #if: [is_prof_conditional, live]
    for no, line in enumerate(lines, 1):
        live = all(f[1] for f in stack)
        m = DIRECTIVE.match(line)
        if not m:
            out.append(line if live else "")
            continue
        word, rest = m.group(1), re.sub(r"/\*.*?\*/|//.*", "", m.group(2))
        cond = rest.replace(" ", "").replace("\t", "")
        if word in ("if", "ifdef", "ifndef"):
            if PROF_NAME.search(cond):
                if (word, cond) not in PROF_COND:
                    die(path, no, f"unsupported conditional: {line.strip()}")
                stack.append([True, PROF_COND[(word, cond)]])
                out.append("")
            else:
                stack.append([False, True])
                out.append(line if live else "")
            continue
        if word in ("elif", "else", "endif") and not stack:
            die(path, no, f"#{word} without #if")
        if word == "elif":
            if stack[-1][0]:
                die(path, no, "#elif in a PROF_ENABLE conditional")
            out.append(line if live else "")
            continue
        if word == "else":
            if stack[-1][0]:
                stack[-1][1] = not stack[-1][1]
                out.append("")
            else:
                out.append(line if live else "")
            continue
        if word == "endif":
            prof = stack.pop()[0]
            out.append("" if prof or not live else line)
            continue
        if word == "include" and cond in HEADERS:
            out.append("")
            continue
        if word == "define" and cond == "PROF_IMPLEMENTATION":
            out.append("")
            continue
        if PROF_NAME.search(rest) and live:
            die(path, no, f"PROF_ in a directive: {line.strip()}")
        out.append(line if live else "")
    if stack:
        die(path, len(lines), "unterminated #if")
    return out


def blank(text):
    return re.sub(r"[^\n]", " ", text)


def skip_literal(src, i):
    """src[i] opens a string or character literal: index just past it."""
    q = src[i]
    i += 1
    while src[i] != q:
        i += 2 if src[i] == "\\" else 1
    return i + 1


def strip_calls(path, src):
    removed = collections.Counter()
    out = []
    i, n = 0, len(src)
    last = ";"     # last significant character of code before i
    last_word = ""  # last identifier or keyword before i
    line_of = lambda pos: src.count("\n", 0, pos) + 1
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.index("*/", i) + 2
        elif c in "\"'":
            j = skip_literal(src, i)
            last, last_word = c, ""
        elif c.isalpha() or c == "_":
            j = re.compile(r"\w+").match(src, i).end()
            word = src[i:j]
            if word.startswith("PROF_"):
                sole = last_word in ("else", "do") or last == ")"
                j = strip_call(path, src, i, j, word, last, last_word, line_of)
                removed[word] += 1
                out.append(("{}" + blank(src[i + 2:j])) if sole else blank(src[i:j]))
                i = j
                last, last_word = ";", ""
                continue
            if word in WRAPPERS:
                removed[word] += 1
                out.append(WRAPPERS[word].rjust(len(word)))
                i = j
                last, last_word = word[-1], WRAPPERS[word]
                continue
            last, last_word = word[-1], word
        else:
            j = i + 1
            if not c.isspace():
                last, last_word = c, ""
        out.append(src[i:j])
        i = j
    return "".join(out), removed


def strip_call(path, src, start, i, word, last, last_word, line_of):
    """PROF_NAME at src[start:i]: index just past its `( ... );`."""
    line = line_of(start)
    if word.startswith("PROF__"):
        die(path, line, f"private name {word} in user code")
    if last not in ";{}:)" and last_word not in ("else", "do"):
        die(path, line, f"{word} is not a statement of its own")
    m = re.compile(r"\s*\(").match(src, i)
    if not m:
        die(path, line, f"{word} is not a call")
    i, depth = m.end(), 1
    while depth:
        c = src[i]
        if c in "\"'":
            i = skip_literal(src, i)
            continue
        if src.startswith("/*", i):
            i = src.index("*/", i) + 2
            continue
        depth += {"(": 1, ")": -1}.get(c, 0)
        i += 1
    m = re.compile(r"\s*;").match(src, i)
    if not m:
        die(path, line, f"{word}(...) is not followed by ';'")
    return m.end()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src_path, out_path = sys.argv[1], sys.argv[2]
    with open(src_path) as f:
        lines = f.read().split("\n")
    text = "\n".join(strip_directives(src_path, lines))
    text, removed = strip_calls(src_path, text)
    with open(out_path, "w") as f:
        f.write(text)
    for name in sorted(removed):
        print(name, removed[name])


if __name__ == "__main__":
    main()
