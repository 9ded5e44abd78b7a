#!/usr/bin/env bash
# What a captured NVTX range costs (bench/nvtx.c) against a PROF_SCOPE
# region, recorded and outside a window: ns (best of 5 runs of 1 M) and the
# instructions of one loop iteration from callgrind (NVTX's dispatch,
# libprof_nvtx's callbacks and prof.h's record together), with libprof_nvtx
# as the tool and with no tool (NVTX's no-op).
#   bench/nvtx.sh [build-dir]     prints a Markdown table for bench/nvtx.md
set -euo pipefail
source "$(dirname "$0")/common.sh"
nvtx_inc=${CUDA_HOME:-/usr/local/cuda}/include
$cc -std=c11 -O2 -g -Wall -Wextra -DPROF_ENABLE -isystem "$nvtx_inc" -I"$root" "$root/bench/nvtx.c" \
  -o "$out/bench_nvtx_tool" -lpthread -ldl
$cc -std=c11 -O2 -g -Wall -Wextra -fPIC -shared -fvisibility=hidden -isystem "$nvtx_inc" -I"$root" \
  "$root/prof_nvtx.c" "$root/tools/impl_private.c" -o "$out/libprof_nvtx.so" -lpthread -ldl
cd "$out"
lib=$out/libprof_nvtx.so
n=1000000
ns() { NVTX_INJECTION64_PATH=${tool-$lib} ./bench_nvtx_tool "$@" | awk '{print $2}'; }
# instructions per iteration of loop_<what> in MODE, the loop's own 3 aside
ir() {
  NVTX_INJECTION64_PATH=${tool-$lib} valgrind --tool=callgrind --callgrind-out-file=cg.out --collect-atstart=no \
    --toggle-collect="loop_$1" ./bench_nvtx_tool "$2" 100000 >/dev/null 2>cg.log
  awk '/summary:|totals:/ {printf "%.1f", $2 / 600000 - 3; exit}' cg.out
}
row() {  # row LABEL LOOP MODE
  echo "| $1 | $(ir "$2" "$3") | $(ns "$3" $n) ns |"
}
machine
echo
echo "| what | instructions | time |"
echo "|---|---|---|"
row "recorded \`PROF_SCOPE\`" scope scope
row "\`PROF_SCOPE\` outside a recording window" scope scope_off
row "captured NVTX push/pop, registered name (libprof_nvtx), recorded" range range
row "captured NVTX push/pop, outside a recording window" range range_off
row "captured NCCL-like push/pop: category, 3-field payload schema, recorded" payload payload
row "captured NCCL-like push/pop, outside a recording window" payload payload_off
tool="" row "NVTX push/pop, no tool attached (NVTX's no-op)" range range
