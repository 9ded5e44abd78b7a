#!/bin/sh
# run_off.sh PROGRAM [ARG...] -- a program built with the profiler compiled
# out (-DPROF_ENABLE=0 or no PROF_ENABLE) runs as it would without prof.h:
# it exits 0, writes no file (no trace, whatever PROF_OUTPUT and the
# program's prof_config ask) and prints no "prof:" line. Run it in an empty
# directory (examples/CMakeLists.txt runs it through prof-run-test.sh, with
# PROF_* variables set that an enabled build would obey).
[ $# -ge 1 ] || { echo "usage: run_off.sh PROGRAM [ARG...]" >&2; exit 2; }
mkdir run || exit 2
(cd run && exec "$@") > out.txt 2> err.txt
rc=$?
fail=0
if [ $rc -ne 0 ]; then
  echo "FAIL: $1 exited $rc"
  fail=1
fi
files=$(cd run && find . -mindepth 1 | sort)
if [ -n "$files" ]; then
  echo "FAIL: $1 wrote files:"
  echo "$files" | sed 's/^/    /'
  fail=1
fi
if grep -q '^prof:' err.txt out.txt; then
  echo "FAIL: $1 printed what prof.h says:"
  grep -h '^prof:' err.txt out.txt | head -n 5 | sed 's/^/    /'
  fail=1
fi
if [ $fail -ne 0 ]; then
  echo "--- its stderr:"
  tail -n 20 err.txt
  exit 1
fi
echo "PASS: $1 exited 0, wrote nothing, said nothing of prof.h ($(wc -l < out.txt) lines of its own output)"
