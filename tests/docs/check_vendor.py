#!/usr/bin/env python3
"""prof.h's core names no vendor's energy library: NVML (libnvidia-ml) and
AMD SMI (libamd_smi) are the bindings' (prof_cuda.h, prof_hip.h), handed
to the core as a prof_gpu_energy (>>api-gpu). prof.h's code, with its
comments taken out and its string literals kept, is searched for their
names, case-insensitively; each hit fails with its line. Comments may name
them (the header's documentation says where energy comes from).

Also fails when a binding hands the core no energy source: each of
prof_cuda.h and prof_hip.h defines a prof_gpu_energy and passes it to
PROF__GPU_RUNTIME.

    check_vendor.py [REPO_ROOT]     (default: two directories up)
"""
import os
import re
import sys

VENDOR = re.compile(r"nvml|nvidia-ml|amd[ _-]?smi|rocm[ _-]?smi", re.I)


def code_only(text):
    """text with its comments blanked (newlines kept, so lines still count);
    string and character literals are kept whole."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def self_test():
    sample = '/* NVML */ int a; // amdsmi\nconst char *s = "/* libnvidia-ml.so.1 */";\nchar q = \'"\'; int amd_smi;\n'
    hits = [(sample.count("\n", 0, m.start()) + 1, m.group(0)) for m in VENDOR.finditer(code_only(sample))]
    want = [(2, "nvidia-ml"), (3, "amd_smi")]
    if hits != want:
        raise SystemExit(f"check_vendor.py: its comment stripper is wrong: {hits}, not {want}")


def main():
    self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    problems = []
    text = open(os.path.join(root, "prof.h")).read()
    code = code_only(text)
    lines = text.split("\n")
    for m in VENDOR.finditer(code):
        ln = code.count("\n", 0, m.start()) + 1
        problems.append(f"prof.h:{ln}: names {m.group(0)!r} outside a comment: {lines[ln - 1].strip()}")
    for header in ("prof_cuda.h", "prof_hip.h"):
        body = code_only(open(os.path.join(root, header)).read())
        names = re.findall(r"\bstatic\s+const\s+prof_gpu_energy\s+(\w+)\s*=", body)
        call = re.search(r"^PROF__GPU_RUNTIME\((.*)\)\s*$", body, re.M)
        if not names or not call or not any(re.search(r"&\s*" + n + r"\b", call.group(1)) for n in names):
            problems.append(f"{header}: hands PROF__GPU_RUNTIME no prof_gpu_energy of its own")
    if problems:
        for p in problems:
            print(f"FAIL: {p}")
        print(f"docs_vendor: {len(problems)} problem(s)")
        return 1
    print("docs_vendor: prof.h's code names no vendor energy library; prof_cuda.h and prof_hip.h hand theirs over")
    return 0


if __name__ == "__main__":
    sys.exit(main())
