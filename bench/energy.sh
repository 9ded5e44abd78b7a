#!/usr/bin/env bash
# What PROF_ENERGY costs, and whom (bench/energy.c): 300 steps of 20 ms, the
# step call timed on the engine's thread and its instructions counted
# (callgrind, inside prof_step only, the engine's thread apart), energy off,
# and on with NVML reads that cost nothing, an H200's median (2.8 ms) and
# its worst (206 ms). NVML is the tests' double (tests/gpu/fake_nvml.c),
# built from NVIDIA's nvml.h: PROF_NVML_INCLUDE_DIR, else the test python's
# nvidia-nvml-dev (PROF_TEST_PYTHON, default python3).
#   bench/energy.sh [build-dir]     prints a Markdown table for bench/README.md
set -euo pipefail
source "$(dirname "$0")/common.sh"
inc=${PROF_NVML_INCLUDE_DIR:-}
if [[ -z $inc ]]; then
  h=$("${PROF_TEST_PYTHON:-python3}" -c "import glob, os, nvidia; print(([h for p in nvidia.__path__ for h in sorted(glob.glob(os.path.join(p, '*', 'include', 'nvml.h')))] + [''])[0])" 2>/dev/null || true)
  inc=$(dirname "${h:-/nonexistent/x}")
fi
[[ -f $inc/nvml.h ]] || { echo "energy.sh: no nvml.h (pip install nvidia-nvml-dev, or set PROF_NVML_INCLUDE_DIR)" >&2; exit 1; }
$cc -std=c11 -O2 -g -shared -fPIC -I"$inc" -I"$root/tests/gpu" "$root/tests/gpu/fake_nvml.c" -o "$out/libfake_nvml.so" -lpthread
$cc -std=c11 -O2 -g -Wall -Wextra -DPROF_ENABLE -I"$root" "$root/bench/energy.c" -o "$out/energy" \
  -L"$out" -Wl,-rpath,"$out" -lfake_nvml -lpthread -ldl
cd "$out"
run() { env -u PROF_SCHEDULE -u PROF_OUTPUT "$@"; }
field() { sed -E "s/.*$1 ([0-9.]+).*/\1/"; }
instr() {
  rm -f cg.out*
  run "$@" valgrind --tool=callgrind --toggle-collect=prof_step --separate-threads=yes --callgrind-out-file=cg.out \
    ./energy 60 20000 ${off:-} >/dev/null 2>&1
  awk '/^totals:/ { printf "%.0f", $2 / 60 }' cg.out-01
}

machine
echo
echo "| energy | one NVML read | step call p50 | p99 | max | instructions a step call | NVML calls on the engine's thread | reads | read cost median / max (prof.h's) |"
echo "|---|---|---|---|---|---|---|---|---|"
for mode in off 0 2800 206000; do
  off=""; [[ $mode == off ]] && off=off
  line=$(run FAKE_NVML_READ_US=${mode/off/0} ./energy 300 20000 $off)
  n=$(off=$off instr FAKE_NVML_READ_US=${mode/off/0})
  label=$([[ $mode == off ]] && echo "off" || echo "on")
  cost=$([[ $mode == off ]] && echo "-" || echo "$(awk -v u="$mode" 'BEGIN{printf "%.1f ms", u/1000}')")
  echo "| $label | $cost | $(echo "$line" | field p50) us | $(echo "$line" | field p99) us | $(echo "$line" | sed -E 's/.*p99 [0-9.]+ us, max ([0-9.]+) us;.*/\1/') us | $n |" \
       "$(echo "$line" | sed -E "s/.*thread ([0-9]+);.*/\1/") | $(echo "$line" | sed -E 's/.*reads ([0-9]+),.*/\1/') |" \
       "$(echo "$line" | sed -E 's/.*median ([0-9.]+) us, max ([0-9.]+) us.*/\1 us \/ \2 us/') |"
  echo "$line" >&2
done
rm -f cg.out*
