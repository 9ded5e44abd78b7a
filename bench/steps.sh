#!/usr/bin/env bash
# What an engine's thread pays at PROF_STEP(), per mode, at 1,000, 10,000
# and 100,000 regions a step (60 steps): the step call's p50 and max (with
# 60 steps the p99 is the max), the instructions one call executes on the
# engine's thread (callgrind, collecting inside prof_step only, the engine's
# thread apart from the profiler's: exact where nanoseconds on a shared
# machine are not), and the engine thread's whole time per region, regions
# and steps, against a run that writes once at exit.
#   bench/steps.sh [build-dir]     prints a Markdown table for bench/README.md
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_bench
cd "$out"

# run [VAR=VALUE...] ./bench steps R PATH: one line of the bench
run() { env -u PROF_SCHEDULE -u PROF_FLIGHT -u PROF_OUTPUT "$@"; }
field() { sed -E "s/.*$1 ([0-9.]+).*/\1/"; }
# instructions per PROF_STEP() call on the engine's thread (thread 1), the
# same command under callgrind
step_instr() {
  rm -f cg.out*
  run "${@:1:$#-4}" valgrind --tool=callgrind --toggle-collect=prof_step --separate-threads=yes \
    --callgrind-out-file=cg.out "${@: -4}" >/dev/null 2>&1
  awk '/^totals:/ { printf "%.0f", $2 / 60 }' cg.out-01
}

machine
echo
echo "| mode | regions a step | step call p50 | step call max | instructions a step call | engine ns per region | against writing at exit |"
echo "|---|---|---|---|---|---|---|"
for r in 1000 10000 100000; do
  base=""
  for mode in exit stream schedule flight; do
    case $mode in
      exit)     cmd=(./bench steps $r steps_trace.json) ;;
      stream)   cmd=(./bench steps $r steps_trace.pftrace) ;;
      schedule) cmd=(PROF_SCHEDULE=wait=1,active=1 ./bench steps $r steps_trace.json) ;;
      flight)   cmd=(PROF_FLIGHT=20 PROF_FLIGHT_SLOW=0 ./bench steps $r steps_trace.json) ;;
    esac
    line=$(run "${cmd[@]}")
    instr=$(step_instr "${cmd[@]}")
    p50=$(echo "$line" | field p50)
    max=$(echo "$line" | field max)
    per=$(echo "$line" | sed -E 's/.*engine ([0-9.]+) ns per region.*/\1/')
    [[ -z $base ]] && base=$per
    ratio=$(awk -v a="$per" -v b="$base" 'BEGIN{printf "%.2fx", a/b}')
    label=$(case $mode in exit) echo "one window, written at exit (JSON)";; stream) echo "streamed (Perfetto)";;
            schedule) echo "a JSON cycle saved every other step (wait=1,active=1)";; flight) echo "flight (PROF_FLIGHT=20)";; esac)
    echo "| $label | $r | $p50 ms | $max ms | $instr | $per | $ratio |"
  done
  rm -f steps_trace* cg.out*
done
