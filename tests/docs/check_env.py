#!/usr/bin/env python3
"""The options are one table, PROF__OPTIONS(X) in prof.h's >>impl: a row per
option (variable, prof_config field, kind, default, range, the form a
malformed value must have, what happens then, one line of doc). This check
holds everything else that names them to that table:

  - prof.h's ENVIRONMENT block (the top comment): an entry per variable, its
    name (or "A, B") at the start of a line indented five spaces;
  - docs/options.md, which is generated from the table (and from the formats'
    table, PROF__FORMATS in >>write): `check_env.py --write` regenerates it;
  - prof_config's fields: each is a row's field, or a callback or a
    deprecated spelling listed below, and each row's field is one of them;
  - the code: a getenv("PROF_...") in prof.h, prof_cuda.h or prof_hip.h is
    a LIB row's (a binding's library, read where it is loaded): every other
    option is read through the table's readers, never by its own getenv; the
    string literals "PROF_..." of >>env name rows; a getenv of a computed
    name outside >>env is refused (this check could not see what it reads).

Fails naming each difference.

    check_env.py [--write] [REPO_ROOT]     (default: two directories up)
"""
import os
import re
import sys

# prof_config's fields that are not options, each with why.
NOT_OPTIONS = {
    "on_trace_ready": "a callback: replaces writing the trace",
    "user_data": "the callback's argument",
    "keep_signals": "deprecated spelling of signals = PROF_OFF, still honoured",
    "separate_threads": "deprecated spelling of merge_threads = PROF_OFF, still honoured",
    "cupti": "the CUDA spelling of kernels, still honoured",
}

KINDS = {
    "BOOL": "0 or 1", "INT": "whole number", "REAL": "number", "MIB": "MiB", "PATH": "path",
    "SPEC": "spec", "SCHED": "spec", "ALIAS": "0 or 1", "LIB": "library path",
}

ENTRY = re.compile(r"^     (PROF_[A-Z0-9_]+(?:, PROF_[A-Z0-9_]+)*)(?:\s|$)")
LITERAL = re.compile(r'"(PROF_[A-Z0-9_]+)"')
GETENV = re.compile(r"\bgetenv\s*\(\s*([^)]*)\)")


def macro_body(text, name):
    """The replacement text of `#define name(X)`, its lines joined."""
    m = re.search(r"^#define " + re.escape(name) + r"\(X\)(.*)$", text, re.M)
    if not m:
        raise SystemExit(f"prof.h: no #define {name}(X)")
    lines, pos = [m.group(1)], m.end() + 1
    while lines[-1].rstrip().endswith("\\"):
        lines[-1] = lines[-1].rstrip()[:-1]
        end = text.find("\n", pos)
        lines.append(text[pos:end])
        pos = end + 1
    return " ".join(lines), text.count("\n", 0, m.start()) + 1


def split_args(s):
    """C macro arguments at the top level: strings and parentheses kept whole."""
    args, depth, cur, i = [], 0, "", 0
    while i < len(s):
        ch = s[i]
        if ch == '"':
            j = i + 1
            while s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            cur += s[i:j + 1]
            i = j + 1
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    args.append(cur.strip())
    return args


def rows_of(body):
    """Each X(...) of a table's body, as its argument list."""
    rows, i = [], 0
    body = re.sub(r"/\*.*?\*/", " ", body)
    while True:
        i = body.find("X(", i)
        if i < 0:
            return rows
        j, depth = i + 2, 1
        while depth:
            if body[j] == '"':
                j += 1
                while body[j] != '"':
                    j += 2 if body[j] == "\\" else 1
            elif body[j] == "(":
                depth += 1
            elif body[j] == ")":
                depth -= 1
            j += 1
        rows.append(split_args(body[i + 2:j - 1]))
        i = j


def c_string(arg, defines):
    """The text of a C string literal (adjacent ones joined), a #define's
    value, or the argument as written."""
    arg = arg.strip()
    if arg in defines:
        return c_string(defines[arg], defines)
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
    if parts and re.fullmatch(r'(\s*"(?:[^"\\]|\\.)*"\s*)+', arg):
        return "".join(p.replace('\\"', '"').replace("\\\\", "\\") for p in parts)
    return arg


def defines_of(text):
    """Object-like #defines, their lines joined."""
    out = {}
    for m in re.finditer(r"^#define ([A-Z_][A-Z0-9_]*)[ \t]+((?:.*\\\n)*.*)$", text, re.M):
        out[m.group(1)] = re.sub(r"/\*.*?\*/", "", m.group(2).replace("\\\n", " ")).strip()
    return out


def options(prof_h):
    body, line = macro_body(prof_h, "PROF__OPTIONS")
    defines = defines_of(prof_h)
    fmts = formats(prof_h)
    rows = []
    for a in rows_of(body):
        if len(a) != 9:
            raise SystemExit(f"prof.h:{line}: a PROF__OPTIONS row has {len(a)} columns, not 9: {a}")
        var, field, kind, dflt, lo, hi, form, then, doc = a
        form = c_string(form, defines)
        if form == "prof__fmt_forms()":         # built from the formats' table at run time
            names = [f["name"] for f in fmts]
            form = ", ".join(names[:-1]) + " or " + names[-1]
        rows.append(dict(var=c_string(var, defines), field=field, kind=kind, default=c_string(dflt, defines),
                         lo=c_string(lo, defines), hi=c_string(hi, defines), form=form, doc=c_string(doc, defines)))
    return rows, line


def formats(prof_h):
    body, line = macro_body(prof_h, "PROF__FORMATS")
    out = []
    for a in rows_of(body):
        if len(a) != 7:
            raise SystemExit(f"prof.h:{line}: a PROF__FORMATS row has {len(a)} columns, not 7: {a}")
        out.append(dict(id=a[0], name=c_string(a[1], {}), ext=[c_string(e, {}) for e in a[2:4] if c_string(e, {})],
                        file=c_string(a[4], {}), streams=a[5] == "1", writer=a[6]))
    return out


def config_fields(prof_h):
    m = re.search(r"typedef struct prof_config \{(.*?)\} prof_config;", prof_h, re.S)
    if not m:
        raise SystemExit("prof.h: no typedef struct prof_config")
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return [re.findall(r"\w+", decl)[-1] for decl in body.split(";") if decl.strip()]


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


def code_reads(root):
    """getenv("PROF_...") calls: name -> where; >>env's literals; problems."""
    getenvs, literals, problems = {}, {}, []
    prof_h = open(os.path.join(root, "prof.h")).read()
    a, b = env_section(prof_h)
    for m in LITERAL.finditer(prof_h, a, b):
        literals.setdefault(m.group(1), f"prof.h:{line_of(prof_h, m.start())} (>>env)")
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
                getenvs.setdefault(lit.group(1), where)
            elif arg.startswith('"'):
                pass                    # a variable not of prof.h's (a launcher's, say)
            elif not (header == "prof.h" and a <= m.start() < b):
                problems.append(f"{where}: getenv({arg}) reads a computed name outside prof.h's >>env; "
                                "this check cannot tell which (read it in >>env, or teach tests/docs/check_env.py)")
    return getenvs, literals, problems


def cell(s):
    return s.replace("|", "\\|")


def options_md(rows, fmts):
    out = [
        "# Options",
        "",
        "Every option of prof.h: its environment variable, its `prof_config` field, its default",
        "and what it does. Variables are read at init and override the config. A malformed value",
        "gets one line on stderr naming the variable and the form it must have, and the run goes on",
        "as the line says. In `prof_config`, 0 is the default everywhere; where an option can also",
        "be turned off, `PROF_OFF` turns it off (`cfg.signals = PROF_OFF`). In the environment, `0`",
        "is off (`PROF_SIGNALS=0`).",
        "",
        "This file is generated from the table of options in prof.h (`PROF__OPTIONS`, in `>>impl`)",
        "and the table of formats (`PROF__FORMATS`, in `>>write`) by",
        "`python3 tests/docs/check_env.py --write`; the test `docs_env` fails when they disagree.",
        "To add an option, add its row there (the comment above the table says how) and regenerate.",
        "",
        "| variable | config field | values | default | meaning |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        var = f"`{r['var']}`" if r["var"] else "(config only)"
        field = f"`cfg.{r['field']}`" if r["field"] != "none" else "—"
        kind = r["kind"]
        if kind in ("INT", "MIB", "REAL"):
            hi = r["hi"] if r["hi"] != "0x7fffffff" else "2147483647"
            values = f"{r['lo']} to {hi}" + (" MiB" if kind == "MIB" else "")
        elif kind in ("SPEC", "SCHED"):
            form = r["form"][len("of the form "):] if r["form"].startswith("of the form ") else r["form"]
            values = " ".join(f"`{w}`" if re.search(r"[=:<|]", w) and len(w) > 2 else w for w in form.split(" "))
        else:
            values = KINDS[kind]
        default = r["default"] if r["default"] not in ("",) else "—"
        doc = r["doc"]
        if kind == "ALIAS":
            doc += f"; sets `cfg.{r['field']}`"
        if kind == "LIB":
            doc += "; read where the library is loaded"
        doc = doc.replace("<", "&lt;")          # file:<path> is text, not a tag
        out.append(f"| {var} | {field} | {cell(values)} | {cell(default)} | {cell(doc)} |")
    out += [
        "",
        "`prof_config` also has `on_trace_ready` and `user_data` (the trace-ready callback, which",
        "replaces writing the trace, and its argument), and three older spellings, still honoured:",
        "`keep_signals` (`cfg.signals = PROF_OFF`), `separate_threads` (`cfg.merge_threads = PROF_OFF`)",
        "and `cupti` (`cfg.kernels = 1`).",
        "",
        "## Formats",
        "",
        "`PROF_FORMAT` (or `cfg.format`) names one; without it the output's extension decides, and an",
        "extension no format has is JSON's.",
        "",
        "| format | extensions | default file | cycles stream into one file |",
        "|---|---|---|---|",
    ]
    for f in fmts:
        exts = ", ".join(f"`{e}`" for e in f["ext"])
        out.append(f"| `{f['name']}` | {exts} | `{f['file']}` | {'yes' if f['streams'] else 'no'} |")
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    write = "--write" in args
    args = [a for a in args if a != "--write"]
    root = os.path.abspath(args[0] if args else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    prof_h = open(os.path.join(root, "prof.h")).read()
    rows, table_line = options(prof_h)
    fmts = formats(prof_h)
    md_path = os.path.join(root, "docs", "options.md")
    md = options_md(rows, fmts)
    if write:
        with open(md_path, "w") as f:
            f.write(md)
        print(f"docs_env: wrote {md_path} ({len(rows)} options)")

    problems = []
    table_vars = {r["var"]: r for r in rows if r["var"]}
    lib_vars = {v for v, r in table_vars.items() if r["kind"] == "LIB"}
    where = f"prof.h:{table_line} (PROF__OPTIONS)"

    header = header_block(prof_h)
    for name in sorted(set(table_vars) - set(header)):
        problems.append(f"{name} is a row of {where} but has no entry in prof.h's ENVIRONMENT block")
    for name in sorted(set(header) - set(table_vars)):
        problems.append(f"{name} has an entry in prof.h's ENVIRONMENT block (prof.h:{header[name]}) "
                        f"but no row in {where}")

    if not os.path.exists(md_path) or open(md_path).read() != md:
        problems.append("docs/options.md is not what the table gives: run python3 tests/docs/check_env.py --write")

    fields = config_fields(prof_h)
    row_fields = {r["field"] for r in rows if r["field"] != "none"}
    for f in fields:
        if f not in row_fields and f not in NOT_OPTIONS:
            problems.append(f"prof_config.{f} has no row in {where} (nor is it listed in check_env.py's NOT_OPTIONS)")
    for f in sorted(row_fields - set(fields)):
        problems.append(f"{where} has a row for field {f}, which prof_config lacks")
    for f in sorted(set(NOT_OPTIONS) - set(fields)):
        problems.append(f"check_env.py's NOT_OPTIONS lists {f}, which prof_config lacks")
    for r in rows:
        if r["kind"] not in KINDS:
            problems.append(f"{where}: {r['var'] or r['field']} has kind {r['kind']}, which is none of {sorted(KINDS)}")
        if r["kind"] == "LIB" and r["field"] != "none":
            problems.append(f"{where}: {r['var']} is a LIB row: its field is none (its binding reads it)")

    getenvs, literals, code_problems = code_reads(root)
    problems += code_problems
    for name in sorted(set(getenvs) - lib_vars):
        why = "through the table's readers (>>env)" if name in table_vars else "as a row of the table"
        problems.append(f"{name} is read by its own getenv ({getenvs[name]}); read it {why}")
    for name in sorted(lib_vars - set(getenvs)):
        problems.append(f"{name} is a LIB row of {where}, but no getenv in the headers reads it")
    for name in sorted(set(literals) - set(table_vars)):
        problems.append(f"{name} is named in >>env ({literals[name]}) but has no row in {where}")

    if problems:
        for p in problems:
            print(f"FAIL: {p}")
        print(f"docs_env: {len(problems)} difference(s)")
        return 1
    print(f"docs_env: {len(rows)} options ({len(table_vars)} variables), {len(fmts)} formats: the table, "
          "prof_config, the ENVIRONMENT block, docs/options.md and the code agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
