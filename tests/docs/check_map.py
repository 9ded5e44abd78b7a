#!/usr/bin/env python3
"""prof.h's map and its function-length rule hold:

  - the MAP in prof.h's top comment lists every section banner of the file
    (a comment line that begins "/* ---- >>tag" or "/*  >>tag"), no tag it
    lists lacks a banner, and it lists them in the file's order; the same for
    prof_cuda.h and prof_hip.h where they have banners (in their own MAP);
  - no function in prof.h is over MAX_LINES lines (its first line to its
    closing brace) unless the comment right above it has a line that begins
    "Long because", saying why.

Before reading the headers it runs both checks on a small text with a defect
of each kind and fails if one goes unseen, so that it cannot pass by
matching nothing.

    check_map.py [REPO_ROOT]     (default: two directories up)
"""
import os
import re
import sys

MAX_LINES = 80
REASON = re.compile(r"^\s*(?:/\*+)?\s*Long because\b")
BANNER = re.compile(r"^/\*(?: ----)?\s+>>([a-z][a-z0-9-]*)\s")
MAP_ENTRY = re.compile(r"^\s+>>([a-z][a-z0-9-]*)\s")
# Functions over MAX_LINES that another change is rewriting, each with what
# it is: name -> why. The option table's parser replaces this one.
EXEMPT = {}


def map_tags(text):
    """The tags of the MAP block at the top of the file, with line numbers, or None."""
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines[:400]) if l.strip().startswith("MAP")), None)
    if start is None:
        return None
    tags = []
    for i in range(start + 1, len(lines)):
        if not lines[i].strip() or "*/" in lines[i]:
            break
        m = MAP_ENTRY.match(lines[i])
        if m:
            tags.append((m.group(1), i + 1))
    return tags


def banners(text):
    return [(m.group(1), i + 1) for i, l in enumerate(text.split("\n")) for m in [BANNER.match(l)] if m]


def check_map(name, text):
    errs = []
    found = banners(text)
    listed = map_tags(text)
    if listed is None:
        return ["%s: banners %s but no MAP in its top comment" % (name, ", ".join(t for t, _ in found))] if found else []
    bt = [t for t, _ in found]
    mt = [t for t, _ in listed]
    for t, line in found:
        if t not in mt:
            errs.append("%s:%d: banner >>%s is not in the MAP" % (name, line, t))
    for t, line in listed:
        if t not in bt:
            errs.append("%s:%d: the MAP lists >>%s, which has no banner" % (name, line, t))
    for t in set(bt):
        if bt.count(t) > 1:
            errs.append("%s: more than one banner >>%s" % (name, t))
    common_b = [t for t in bt if t in mt]
    common_m = [t for t in mt if t in bt]
    if common_b != common_m:
        at = next(i for i, (a, b) in enumerate(zip(common_b, common_m)) if a != b)
        errs.append("%s: the MAP's order is not the file's: the file has >>%s where the MAP has >>%s"
                    % (name, common_b[at], common_m[at]))
    return errs


def code_only(lines):
    """Each line without its comments and literals; a preprocessor line (and
    its continuations) as empty."""
    out, in_comment, in_pp = [], False, False
    for line in lines:
        if in_pp or (not in_comment and line.lstrip().startswith("#")):
            in_pp = line.rstrip().endswith("\\")
            out.append("")
            continue
        s, i, n = [], 0, len(line)
        while i < n:
            if in_comment:
                j = line.find("*/", i)
                if j < 0:
                    i = n
                    break
                in_comment, i = False, j + 2
            elif line.startswith("/*", i):
                in_comment, i = True, i + 2
            elif line.startswith("//", i):
                break
            elif line[i] in "\"'":
                q, i = line[i], i + 1
                while i < n and line[i] != q:
                    i += 2 if line[i] == "\\" else 1
                s.append("0")
                i += 1
            else:
                s.append(line[i])
                i += 1
        out.append("".join(s))
    return out


def functions(text):
    """(name, first line, last line) of each function defined at file scope."""
    lines = text.split("\n")
    code = code_only(lines)
    depth, start, out = 0, None, []
    for i, s in enumerate(code):
        if re.match(r'^extern 0 \{', s) or re.match(r'^\}\s*$', s) and lines[i].startswith("} /* extern"):
            continue
        for ch in s:
            if ch == "{":
                if depth == 0:
                    start = i
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0 and start is not None:
                    k = start
                    while k > 0 and not re.match(r"^[A-Za-z_]", code[k]):
                        k -= 1
                    sig = re.sub(r"__attribute__\s*\(\(.*?\)\)", "", " ".join(code[k:start + 1]))
                    m = re.search(r"(\w+)\s*\([^;{]*\)\s*(?:[A-Z_]+\s*)*\{", sig)
                    if m and not re.match(r"^\s*(typedef|struct|union|enum)\b", sig) and "=" not in sig[:m.start()]:
                        out.append((m.group(1), k + 1, i + 1))
                    start = None
    return out


def comment_above(lines, first):
    """The comment block that ends on the line right above line `first` (1-based)."""
    i = first - 2
    if i < 0 or "*/" not in lines[i]:
        return []
    block = [lines[i]]
    while "/*" not in lines[i] and i > 0:
        i -= 1
        block.insert(0, lines[i])
    return block


def check_lengths(name, text):
    lines = text.split("\n")
    errs = []
    for fn, a, b in functions(text):
        if b - a + 1 <= MAX_LINES or fn in EXEMPT:
            continue
        if not any(REASON.match(l) for l in comment_above(lines, a)):
            errs.append("%s:%d: %s is %d lines (over %d) and the comment above it does not say why"
                        " (a line beginning \"Long because\")" % (name, a, fn, b - a + 1, MAX_LINES))
    return errs


def self_test():
    body = "".join("    x += %d;\n" % i for i in range(MAX_LINES))
    text = ("/* t.h\n   MAP\n     >>two   second\n     >>one   first\n     >>three third\n\n*/\n"
            "/* ---- >>one  first ---- */\n/* ---- >>two  second ---- */\n/* ---- >>four  none ---- */\n"
            "/* a long one */\nstatic int long_one(void) {\n    int x = 0;\n" + body + "    return x;\n}\n"
            "/* Long because it must be. */\nstatic int long_two(void) {\n    int x = 0;\n" + body + "    return x;\n}\n"
            "static int short_one(void) { return 1; }\n")
    m = check_map("t.h", text)
    want = ["banner >>four is not in the MAP", "lists >>three, which has no banner", "order is not the file's"]
    missed = [w for w in want if not any(w in e for e in m)]
    ln = check_lengths("t.h", text)
    if len(ln) != 1 or "long_one" not in ln[0]:
        missed.append("the long function without a reason (got %r)" % ln)
    if [f[0] for f in functions(text)] != ["long_one", "long_two", "short_one"]:
        missed.append("the functions (got %r)" % functions(text))
    if missed:
        raise SystemExit("check_map.py's own check missed: " + "; ".join(missed))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    self_test()
    errs = []
    for name in ("prof.h", "prof_cuda.h", "prof_hip.h"):
        path = os.path.join(root, name)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        errs += check_map(name, text)
        if name == "prof.h":
            if not banners(text):
                errs.append("prof.h: no section banners found")
            errs += check_lengths(name, text)
    for e in errs:
        print(e)
    if errs:
        return 1
    print("MAP and banners agree; no function over %d lines without a reason" % MAX_LINES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
