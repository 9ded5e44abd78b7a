#!/usr/bin/env bash
# PROF_SAMPLE's cost: bench/sample.c's loop (1 M regions of ~2,000 simple
# iterations, 100 steps, one window) with sampling off, at 1 kHz and at 10 kHz:
# the engine thread's CPU time per region, the profiler's thread's CPU time
# (per sample: its time at HZ less its time off, over the samples), and the
# JSON trace's prof_samples bytes (over the samples: bytes per sample). Best of 3 runs of each (the engine's time).
#   bench/sample.sh [build-dir]
set -euo pipefail
source "$(dirname "$0")/common.sh"
$cc -std=c11 -O2 -g -fno-omit-frame-pointer -Wall -Wextra -DPROF_ENABLE -I"$root" "$root/bench/sample.c" \
  -o "$out/sample" -lpthread
cd "$out"
n=${REGIONS:-1000000}
machine
for hz in 0 1000 10000; do
  for k in 1 2 3; do ./sample $hz $n sample_$hz.json; done | sort -k4 -n | head -1
  if [[ $hz != 0 ]]; then   # prof_samples' bytes (the key to traceEvents) over its samples
    grep -b -o '"prof_samples"\|"traceEvents"' sample_$hz.json | tr ':' ' ' |
      awk -v f=sample_$hz.json '{o[NR] = $1} END {printf "prof_samples: %d bytes\n", o[2] - o[1]}'
  fi
done
