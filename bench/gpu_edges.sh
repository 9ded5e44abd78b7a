#!/usr/bin/env bash
# What a GPU region costs the engine's thread (bench/gpu_edges.c) on the
# CUDA runtime double: runtime calls per region, and callgrind's
# instructions per region in the steady state (PROF_GPU_BEGIN and
# PROF_GPU_END, inclusive), and of that inside each runtime call (the
# double's own work included: its lock, its bookkeeping), the engine's
# thread apart.
#   bench/gpu_edges.sh [build-dir] [N]
set -euo pipefail
source "$(dirname "$0")/common.sh"
n=${2:-20000}
inc=${CUDA_HOME:-/usr/local/cuda}/include
$cc -std=c11 -O2 -g -Wall -Wextra -DPROF_ENABLE -I"$root" -I"$root/tests/gpu" -isystem "$inc" \
  "$root/bench/gpu_edges.c" "$root/tests/gpu/fake_gpu.c" "$root/tests/gpu/fake_cuda.c" -o "$out/gpu_edges" -lpthread -ldl
cd "$out"
machine
./gpu_edges "$n"
rm -f cg.out*
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=cg.out --collect-atstart=no \
  ./gpu_edges "$n" >/dev/null 2>cg.log
main=$(ls cg.out-01 2>/dev/null || ls cg.out* | head -1)
callgrind_annotate --inclusive=yes --auto=no "$main" 2>/dev/null | awk -v n="$n" '
  /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
  NF >= 2 && $(NF-1) ~ /:(cudaEventRecord|cudaStreamIsCapturing|cudaPeekAtLastError|cudaGetLastError)$/ {
    gsub(",", "", $1); f = $(NF-1); sub(/.*:/, "", f); in_rt[f] = $1; rt += $1 }
  END {
    printf "instructions per region, PROF_GPU_BEGIN + PROF_GPU_END inclusive: %.1f; prof.h and its binding: %.1f\n",
           total / n, (total - rt) / n
    for (f in in_rt) printf "  in %s (the double): %.1f\n", f, in_rt[f] / n }'
rm -f cg.out* gpu_edges.json
