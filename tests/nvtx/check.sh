#!/usr/bin/env bash
# check.sh nvtx PROGRAM TOOL  -- prof.h's regions reach an NVTX tool (-DPROF_NVTX)
# check.sh roctx PROGRAM      -- and roctx (-DPROF_ROCTX, PROGRAM linked to fake_roctx)
# Runs nvtx_regions.c's program under the tool (NVTX: fake_tool loaded by
# NVTX_INJECTION64_PATH, as Nsight loads itself) and checks what it saw,
# exactly; for NVTX also without a tool, where the program must run the same
# and write the same regions.
set -euo pipefail
mode=$1 prog=$2 tool=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# a run of the program: its stderr (prof.h's lines) kept, and shown with the
# exit status if it fails
run() { "$@" 2>err || { s=$?; echo "FAIL: $* exited $s:"; cat err; exit 1; }; }
if [[ $mode == nvtx ]]; then
  run env NVTX_INJECTION64_PATH="$tool" FAKE_NVTX_LOG=log PROF_OUTPUT=with.json "$prog"
  # the literal names registered once on each thread that uses them (main:
  # outer, inner, explicit; the worker: work); the 10 run-time ones as text
  pre="prof:"; head=$'domain prof\nregistered strings 4, ranges named by one 70'
else
  run env FAKE_ROCTX_LOG=log PROF_OUTPUT=with.json "$prog"
  pre=""; head=""
fi
sort log > got
{ [[ -n $head ]] && echo "$head"
  echo "pops 80 unmatched 0 deepest 2"
  for r in "dyn.0 6" "dyn.1 4" "explicit 10" "inner 30" "outer 10" "work 20"; do echo "range $pre$r"; done
} | sort > want
if ! diff -u want got; then echo "FAIL: what the $mode tool saw"; exit 1; fi
runs=(with)
if [[ $mode == nvtx ]]; then
  run env -u NVTX_INJECTION64_PATH PROF_OUTPUT=without.json "$prog"
  runs+=(without)
fi
for f in "${runs[@]}"; do
  n=$(grep -o '"name":"inner"' "$f.1.json" | wc -l)
  [[ $n == 15 ]] || { echo "FAIL: $f.1.json holds $n inner regions, not 15 (step 1's)"; exit 1; }
done
echo "ok: 80 $mode ranges, balanced, as many as the regions; the trace the same"
