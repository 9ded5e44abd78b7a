#!/usr/bin/env bash
# Run the real trace readers (TensorBoard profiler plugin, HTA) on the
# fixtures: each positive check must pass, each broken copy must fail.
#
#   tests/readers/run_checks.sh [PYTHON]   (default: $PROF_TEST_PY, else python3)
#
# PYTHON is an interpreter with the readers installed (run_tests.sh makes one
# with tests/readers/setup_venv.sh); without them it exits 77 (skipped),
# saying so. Registered as the ctest test readers_fixtures.
# Ends with the line "readers: N passed, M failed"; exit status 1 if M > 0.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vpy=${1:-${PROF_TEST_PY:-python3}}
if ! "$vpy" -c 'import hta, torch_tb_profiler' 2>/dev/null; then
  echo "SKIP: the trace readers (HTA, torch-tb-profiler) are not installed in $vpy (run_tests.sh installs them)"
  exit 77
fi
fx=$here/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass=0 fail=0
ok() {  # ok NAME CMD...: CMD must succeed
  local name=$1; shift
  if out=$("$@" 2>&1); then pass=$((pass+1)); echo "ok   $name: ${out##*$'\n'}"
  else fail=$((fail+1)); echo "FAIL $name (expected success):"; echo "$out" | sed 's/^/    /'; fi
}
ko() {  # ko NAME PATTERN CMD...: CMD must fail and print PATTERN
  local name=$1 pat=$2; shift 2
  if out=$("$@" 2>&1); then fail=$((fail+1)); echo "FAIL $name (expected failure, got): $out"
  elif ! grep -q -- "$pat" <<<"$out"; then
    fail=$((fail+1)); echo "FAIL $name (failed without '$pat'):"; echo "$out" | sed 's/^/    /'
  else pass=$((pass+1)); echo "ok   $name: fails as expected ($(grep -m1 -- "$pat" <<<"$out" | cut -c1-150))"; fi
}
tb()  { "$vpy" "$here/check_tb.py" "$@"; }
hta() { "$vpy" "$here/check_hta.py" "$@"; }
mut() { "$vpy" "$here/mutate.py" "$fx/$1" "$tmp/$2" "$2" && echo "$tmp/$2"; }

R=forward,matmul,relu,backward,data_load
# Positive: Kineto-shaped traces.
ok tb-user_annotation  tb "$fx/user_annotation" --expect-steps 3 --expect-memory --expect-trace-names "$R"
ok tb-cpu_op           tb "$fx/cpu_op" --expect-steps 3 --expect-workers 2 --expect-memory --expect-ops "$R"
ok hta-user_annotation hta "$fx/user_annotation" --expect-ranks 1 --expect-steps 2 --expect-names "$R" \
                         --expect-annotations "$R" --expect-nesting ProfilerStep#1/forward,forward/matmul,forward/relu
ok hta-cpu_op          hta "$fx/cpu_op" --expect-ranks 2 --expect-steps 3 --include-last-step --expect-names "$R" \
                         --expect-nesting forward/matmul,forward/relu

# Negative: each check must notice what is missing.
ko tb-ops-are-not-user_annotation "drops user_annotation" tb "$fx/user_annotation" --expect-ops forward
ko tb-no-cat        "failed to load"          tb "$(mut user_annotation no-cat)"
ko tb-no-name-meta  "KeyError"                tb "$(mut user_annotation no-name-meta)"
ko tb-no-memory     "view 'Memory' not offered" tb "$(mut user_annotation no-memory)" --expect-memory
ko tb-no-steps      "no ProfilerStep"         tb "$(mut user_annotation no-steps)" --expect-steps 3
ko tb-bad-filename  "no run discovered"       tb "$(mut user_annotation bad-filename)"
ko tb-wrong-steps   "expected 4"              tb "$fx/user_annotation" --expect-steps 4
ko tb-missing-op    "'matmul' not in the Operator view" tb "$(mut cpu_op rename-matmul)" --expect-ops matmul
ko hta-rank-no-space "ranks"                  hta "$(mut cpu_op rank-no-space)" --expect-ranks 2
ko hta-only-meta     "raised KeyError"        hta "$(mut user_annotation only-meta)"
ko hta-bad-step-name "raised AttributeError"  hta "$(mut user_annotation bad-step-name)"
ko hta-extra-json    "HTA ignored"            hta "$(mut user_annotation extra-json)"
ko hta-missing-name  "no event named 'matmul'" hta "$(mut user_annotation rename-matmul)" --expect-names matmul
ko hta-annotation    "not in HTA's user_annotation breakdown" hta "$fx/cpu_op" --expect-annotations forward
ko hta-nesting       "CallGraph has no 'matmul' under 'relu'" hta "$fx/user_annotation" --expect-nesting relu/matmul

# Sub-microsecond regions: HTA's default rounding breaks its CallGraph; the
# checks (and the README) turn it off, and then both nest where they belong.
ok hta-sub-us         hta "$(mut user_annotation sub-us)" --expect-nesting forward/tiny,forward/short
ko hta-sub-us-rounded "Unexpected case" hta "$tmp/sub-us" --hta-rounding

echo "readers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
