#!/usr/bin/env python3
"""Run the real trace readers (TensorBoard profiler plugin, HTA) on the
fixtures: each positive check must pass, each broken copy must fail with the
reason the check names.

    tests/readers/run_checks.py        (with the interpreter that has them)

The HTA checks run in this process (importing HTA and pandas once, not 11
times); the TensorBoard checks run as their own processes, since the plugin
loads runs in processes and threads of its own. Without the readers
installed it exits 77 (skipped), saying so. Registered as the ctest test
readers_fixtures. Ends with "readers: N passed, M failed"; exit 1 if M > 0.
"""
import contextlib
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FX = os.path.join(HERE, "fixtures")
R = "forward,matmul,relu,backward,data_load"
K = "_Z13matmul_kernelPfPKfS1_iiiii,_Z10sgd_kernelPfPKfS_iff,Memcpy HtoD (Pinned -> Device)"


@contextlib.contextmanager
def captured():
    """Everything written to fds 1 and 2 meanwhile (the readers' children's
    too), as text in the yielded list's one element."""
    out = []
    with tempfile.TemporaryFile() as f:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield out
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            f.seek(0)
            out.append(f.read().decode("utf-8", "replace"))


def hta(*args):
    import check_hta
    argv = sys.argv
    sys.argv = ["check_hta.py", *args]
    with captured() as out:
        try:
            rc = check_hta.main()
        except SystemExit as e:
            rc = e.code
        finally:
            sys.argv = argv
    return rc or 0, out[0]


def tb(*args):
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_tb.py"), *args],
                       capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


def mut(tmp, fixture, mutation):
    dst = os.path.join(tmp, mutation)
    subprocess.run([sys.executable, os.path.join(HERE, "mutate.py"), os.path.join(FX, fixture), dst, mutation],
                   check=True)
    return dst


def main():
    try:
        import hta as _  # noqa: F401
        import torch_tb_profiler as _t  # noqa: F401
    except ImportError:
        print(f"SKIP: the trace readers (HTA, torch-tb-profiler) are not installed in {sys.executable} "
              "(run_tests.sh installs them)")
        return 77
    sys.path.insert(0, HERE)
    passed = failed = 0

    def ok(name, result):
        nonlocal passed, failed
        rc, out = result
        if rc == 0:
            passed += 1
            print(f"ok   {name}: {out.strip().splitlines()[-1] if out.strip() else ''}")
        else:
            failed += 1
            print(f"FAIL {name} (expected success):\n" + re.sub("^", "    ", out, flags=re.M))

    def ko(name, pattern, result):
        nonlocal passed, failed
        rc, out = result
        hit = next((l for l in out.splitlines() if pattern in l), None)
        if rc == 0:
            failed += 1
            print(f"FAIL {name} (expected failure, got): {out}")
        elif hit is None:
            failed += 1
            print(f"FAIL {name} (failed without '{pattern}'):\n" + re.sub("^", "    ", out, flags=re.M))
        else:
            passed += 1
            print(f"ok   {name}: fails as expected ({hit[:150]})")

    ua, cpu = os.path.join(FX, "user_annotation"), os.path.join(FX, "cpu_op")
    with tempfile.TemporaryDirectory() as tmp:
        # Positive: Kineto-shaped traces.
        ok("tb-user_annotation", tb(ua, "--expect-steps", "3", "--expect-memory", "--expect-trace-names", R))
        ok("tb-cpu_op", tb(cpu, "--expect-steps", "3", "--expect-workers", "2", "--expect-memory", "--expect-ops", R))
        ok("hta-user_annotation", hta(ua, "--expect-ranks", "1", "--expect-steps", "2", "--expect-names", R,
                                      "--expect-annotations", R, "--expect-nesting",
                                      "ProfilerStep#1/forward,forward/matmul,forward/relu"))
        ok("hta-cpu_op", hta(cpu, "--expect-ranks", "2", "--expect-steps", "3", "--include-last-step",
                             "--expect-names", R, "--expect-nesting", "forward/matmul,forward/relu"))

        # Kernel capture (PROF_CUPTI=1) of the CUDA example on an H100
        # (tests/gpu/run_on_device.sh, 2026-11-24): HTA's kernel, temporal
        # and idle-time breakdowns.
        ok("hta-cupti-h100", hta(os.path.join(FX, "cupti_h100"), "--expect-ranks", "1", "--expect-kernels", K))

        # Negative: each check must notice what is missing.
        ko("tb-ops-are-not-user_annotation", "drops user_annotation", tb(ua, "--expect-ops", "forward"))
        ko("tb-no-cat", "failed to load", tb(mut(tmp, "user_annotation", "no-cat")))
        ko("tb-no-name-meta", "KeyError", tb(mut(tmp, "user_annotation", "no-name-meta")))
        ko("tb-no-memory", "view 'Memory' not offered", tb(mut(tmp, "user_annotation", "no-memory"), "--expect-memory"))
        ko("tb-no-steps", "no ProfilerStep", tb(mut(tmp, "user_annotation", "no-steps"), "--expect-steps", "3"))
        ko("tb-bad-filename", "no run discovered", tb(mut(tmp, "user_annotation", "bad-filename")))
        ko("tb-wrong-steps", "expected 4", tb(ua, "--expect-steps", "4"))
        ko("tb-missing-op", "'matmul' not in the Operator view",
           tb(mut(tmp, "cpu_op", "rename-matmul"), "--expect-ops", "matmul"))
        ko("hta-rank-no-space", "ranks", hta(mut(tmp, "cpu_op", "rank-no-space"), "--expect-ranks", "2"))
        ko("hta-only-meta", "raised KeyError", hta(mut(tmp, "user_annotation", "only-meta")))
        ko("hta-bad-step-name", "raised AttributeError", hta(mut(tmp, "user_annotation", "bad-step-name")))
        ko("hta-extra-json", "HTA ignored", hta(mut(tmp, "user_annotation", "extra-json")))
        ko("hta-missing-name", "no event named 'matmul'",
           hta(mut(tmp, "user_annotation", "rename-matmul"), "--expect-names", "matmul"))
        ko("hta-annotation", "not in HTA's user_annotation breakdown", hta(cpu, "--expect-annotations", "forward"))
        ko("hta-nesting", "CallGraph has no 'matmul' under 'relu'", hta(ua, "--expect-nesting", "relu/matmul"))
        ko("hta-no-kernels", "raised IndexError", hta(ua, "--expect-kernels", "matmul"))

        # Sub-microsecond regions: HTA's default rounding breaks its CallGraph;
        # the checks (and the README) turn it off, and then both nest where
        # they belong.
        sub = mut(tmp, "user_annotation", "sub-us")
        ok("hta-sub-us", hta(sub, "--expect-nesting", "forward/tiny,forward/short"))
        ko("hta-sub-us-rounded", "Unexpected case", hta(sub, "--hta-rounding"))

    print(f"readers: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
