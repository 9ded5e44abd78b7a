#!/usr/bin/env bash
# PROF_COUNTERS's cost on the engine's thread: bench/counters.c's steps (one
# empty region each, one window) without and with the five counters: the
# step call's time (median; best of 3 runs) and, under callgrind, its
# instructions per call (prof_step, inclusive, over the run's steps).
#   bench/counters.sh [build-dir]
set -euo pipefail
source "$(dirname "$0")/common.sh"
$cc -std=c11 -O2 -g -Wall -Wextra -DPROF_ENABLE -I"$root" "$root/bench/counters.c" -o "$out/counters" -lpthread
cd "$out"
machine
all=task-clock,context-switches,page-faults,cycles,instructions
for c in "" "$all"; do
  for k in 1 2 3; do PROF_COUNTERS=$c PROF_OUTPUT=counters.json ./counters 1000 2>/dev/null; done | sort -k4 -n | head -1
  PROF_COUNTERS=$c PROF_OUTPUT=counters.json valgrind --tool=callgrind --callgrind-out-file=cg.out \
    --toggle-collect=prof_step ./counters 1000 >/dev/null 2>&1
  callgrind_annotate cg.out 2>/dev/null | awk -v c="${c:-off}" '/PROGRAM TOTALS/ {gsub(",", "", $1);
    printf "counters: %s  %.1f instructions per step call (callgrind)\n", c, $1 / 1000}'
done
