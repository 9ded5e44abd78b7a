#!/usr/bin/env python3
"""Counts the translation units of a build that compile prof.h's
implementation, from the build's compile_commands.json: each unit is
preprocessed with its own command (-E -dM instead of -c -o) and counts when
PROF__IMPLEMENTED is defined at its end (prof.h defines it where the
implementation is compiled in: PROF_IMPLEMENTATION with PROF_ENABLE on)
and not by its command line (which skips the implementation).
Nothing is compiled, so a configured build directory is enough.

    python3 bench/impl_units.py BUILD_DIR [-v]
    python3 bench/impl_units.py --meta WORK_DIR [-v] [--recount]

BUILD_DIR must have been configured with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
(Makefile or Ninja generators); if it has no compile_commands.json, that
option is set there (cmake BUILD_DIR again) first. Prints the count, of how
many units; the custom commands that compile it too (a compiler CMake does
not know, as hipcc; Makefile generator only); and with -v each implementing
unit: its language, file, target and -D defines. Units that a test compiles
itself (tests/warnings, tests/api, tests/zero_cost, robustness/linkage.sh,
tests/consumer) are not in the build's database and so not counted: they
are tests of the header under other compilers, not the build. --meta
counts those apart: it runs tests/warnings, tests/api, tests/zero_cost and
robustness/linkage.sh in WORK_DIR with gcc, g++, clang and clang++ (and cc,
c++) behind shims on the PATH that log each command, then preprocesses each
logged unit the same way (the packages' CMake builds are left out);
--recount counts an earlier run's logs again."""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

DROP_WITH_ARG = {"-o", "-MT", "-MF", "-MQ"}
DROP = {"-c", "-MD", "-MMD", "-fsyntax-only", "-shared", "-rdynamic"}
LINK_ONLY = ("-l", "-L", "-Wl,")
COMPILER = re.compile(r"\b(hipcc|nvcc|cc|c\+\+|gcc|g\+\+|clang)\b")


def preprocess_command(args):
    """the unit's command with -E -dM in place of its outputs"""
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in DROP_WITH_ARG:
            skip = True
            continue
        if a in DROP or a.startswith(LINK_ONLY) or a.endswith((".o", ".a", ".so")):
            continue
        out.append(a)
    compiler = os.path.basename(out[0])
    if compiler.startswith("nvcc"):
        return out + ["-E", "-Xcompiler", "-dM"]
    return out + ["-E", "-dM", "-Wno-error"]


def implements(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    cmd = preprocess_command(args)
    r = subprocess.run(cmd, cwd=entry["directory"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1:] or ["exit %d" % r.returncode]
    # -DPROF__IMPLEMENTED on the command line: the guard set from outside,
    # the implementation skipped (an example linking the suite's)
    defined = any(line.startswith("#define PROF__IMPLEMENTED") for line in r.stdout.splitlines())
    return defined and "-DPROF__IMPLEMENTED" not in args, args


def describe(entry, args, root):
    f = entry["file"]
    lang = "C++" if f.endswith((".cpp", ".cc", ".cxx")) else "CUDA" if f.endswith(".cu") else "C"
    target = ""
    out = entry.get("output", "")
    for i, a in enumerate(args):
        if a == "-o" and i + 1 < len(args):
            out = args[i + 1]
    if ".dir/" in out:
        target = os.path.basename(out.split(".dir/")[0])
    defines = [a for a in args if a.startswith("-D")]
    return "%-4s %-32s %-26s %s" % (lang, os.path.relpath(f, root), target, " ".join(defines))


def custom_compiles(build):
    """custom commands (Makefile generator) that run a compiler CMake does not
    know, with -DPROF_ENABLE on their line and not -DPROF__IMPLEMENTED
    (which links the suite's): not in the database, counted apart
    (examples/: train_mlp_hip by hipcc, outside the suite). Normal rules
    take their defines from flags.make, so only such commands spell them
    here."""
    found = []
    for mk in sorted(glob.glob(os.path.join(build, "**", "CMakeFiles", "*.dir", "build.make"), recursive=True)):
        with open(mk) as f:
            for line in f:
                if line.startswith("\t") and "-DPROF_ENABLE" in line and COMPILER.search(line) and \
                        "-DPROF__IMPLEMENTED" not in line:
                    found.append(os.path.basename(os.path.dirname(mk))[:-len(".dir")])
    return found


META = [("warnings", ["bash", "tests/warnings/check.sh", "{src}", "{work}/warnings"]),
        ("api", ["bash", "tests/api/check.sh", "{src}", "{work}/api"]),
        ("zero_cost", ["bash", "tests/zero_cost/check.sh", "{src}", "{work}/zero_cost"]),
        ("robust_linkage", ["bash", "tests/robustness/linkage.sh", "{src}", "{work}/robust_linkage"])]
SHIM = """#!/bin/sh
f=$(mktemp "{log}/XXXXXXXX")
printf '%s\\0' "$PWD" "{real}" "$@" >"$f"
exec "{real}" "$@"
"""


def meta(work, verbose, recount):
    """the meta tests' own compiles of the implementation, per test"""
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = os.path.abspath(work)
    shim = os.path.join(work, "shim")
    os.makedirs(shim, exist_ok=True)
    total = 0
    for name, cmd in META:
        log = os.path.join(work, "log", name)
        if not recount:
            shutil.rmtree(log, ignore_errors=True)
        os.makedirs(log, exist_ok=True)
        for cc in ("gcc", "g++", "clang", "clang++", "cc", "c++"):
            real = subprocess.run(["sh", "-c", "command -v " + cc], stdout=subprocess.PIPE,
                                  universal_newlines=True).stdout.strip()
            if real and not real.startswith(shim):
                with open(os.path.join(shim, cc), "w") as f:
                    f.write(SHIM.replace("{log}", log).replace("{real}", real))
                os.chmod(os.path.join(shim, cc), 0o755)
        env = dict(os.environ, PATH=shim + os.pathsep + os.environ["PATH"], CC=os.path.join(shim, "cc"))
        if recount:                     # the logs of an earlier run
            r = subprocess.CompletedProcess(cmd, 0)
        else:
            r = subprocess.run([a.format(src=src, work=work) for a in cmd], cwd=src, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        entries = []
        for rec in sorted(os.listdir(log)):
            with open(os.path.join(log, rec), "rb") as f:
                args = f.read().decode().split("\0")[:-1]
            if not args or "-E" in args or "-M" in args or "-MM" in args:
                continue
            sources = [a for a in args[2:] if a.endswith((".c", ".cpp", ".cc", ".cu")) and not a.startswith("-")]
            for s in sources:               # one unit each, in its place (after its -x)
                entries.append({"directory": args[0], "file": s,
                                "arguments": [a for a in args[1:] if a == s or a not in sources]})
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(implements, entries))
        for e, (yes, info) in zip(entries, results):
            if yes is None:
                print("cannot preprocess %s: %s" % (e["file"], info[0]), file=sys.stderr)
        units = [describe(e, info, src) for e, (yes, info) in zip(entries, results) if yes]
        total += len(units)
        print("%-15s %3d of %3d units compile prof.h's implementation (exit %d)"
              % (name, len(units), len(entries), r.returncode))
        if verbose:
            for line in units:
                print("  " + line)
    print("%-15s %3d" % ("meta, in all", total))
    return 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--meta":
        return meta(sys.argv[2], "-v" in sys.argv[3:], "--recount" in sys.argv[3:])
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    verbose = "-v" in sys.argv[2:]
    db = os.path.join(build, "compile_commands.json")
    if not os.path.exists(db):
        subprocess.run(["cmake", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", build], check=True,
                       stdout=subprocess.DEVNULL)
    with open(db) as f:
        entries = json.load(f)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(implements, entries))
    units, failed = [], 0
    for entry, (yes, info) in zip(entries, results):
        if yes is None:
            failed += 1
            print("cannot preprocess %s: %s" % (entry["file"], info[0]), file=sys.stderr)
        elif yes:
            units.append(describe(entry, info, root))
    custom = custom_compiles(build)
    print("%d of %d translation units compile prof.h's implementation" % (len(units), len(entries)), end="")
    if custom:
        print(", and %d custom command%s (%s)" % (len(custom), "s" * (len(custom) > 1), " ".join(custom)))
    else:
        print()
    if verbose:
        for line in sorted(units):
            print("  " + line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
