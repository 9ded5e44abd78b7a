#!/usr/bin/env bash
# Measures prof.h's hot path and writer: nanoseconds (best of 5 runs) and
# instruction counts from callgrind (exact, unaffected by other load).
#   bench/run.sh [build-dir]     prints a Markdown table for bench/README.md
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_bench
# the same with -DPROF_NVTX (NVTX3 from the CUDA toolkit), no tool attached
nvtx_inc=${CUDA_HOME:-/usr/local/cuda}/include
have_nvtx=0
if [[ -f $nvtx_inc/nvtx3/nvToolsExt.h ]]; then
  $cc -std=c11 -O2 -g -Wall -Wextra -DPROF_ENABLE -DPROF_NVTX -isystem "$nvtx_inc" -I"$root" "$root/bench/bench.c" \
    -o "$out/bench_nvtx" -lpthread -ldl && have_nvtx=1
fi
cd "$out"
b=./bench
n=2000000

ns() { "$b" "$@" | awk '{print $2}'; }
# instructions in FN per iteration of MODE over N (setup excluded); ARGS go
# to the bench: ir FN MODE N [ARGS...]
ir() {
  local fn=$1 mode=$2 iters=$3
  shift 3
  valgrind --tool=callgrind --callgrind-out-file=cg.out --collect-atstart=no \
    --toggle-collect="$fn" "$b" "$mode" "$iters" "$@" >/dev/null 2>cg.log
  awk -v n="$iters" '/summary:|totals:/ {print $2 / n; exit}' cg.out
}

floor_ns=$(ns floor $n)
region_ns=$(ns region $n)
fresh_line=$("$b" fresh $n)
fresh_ns=$(echo "$fresh_line" | awk '{print $2}')
fresh_faults=$(echo "$fresh_line" | awk '{print $7}')
off_ns=$(ns off $n)
dyn_ns=$(ns dyn $n)
threads_ns=$(ns threads $n)
mem_ns=$(ns mem $n)
mem_off_ns=$(ns mem_off $n)
# the same million regions written in each format: ns, bytes, M events/s
write_line=$("$b" write 1000000 bench_trace.json)
write_ns=$(echo "$write_line" | awk '{print $2}')
write_bytes=$(echo "$write_line" | awk '{print $6}')
write_rate=$(echo "$write_line" | awk '{print $10}')
gz_line=$("$b" write 1000000 bench_trace.json.gz)
gz_ns=$(echo "$gz_line" | awk '{print $2}')
gz_bytes=$(echo "$gz_line" | awk '{print $6}')
pf_line=$("$b" write 1000000 bench_trace.pftrace)
pf_ns=$(echo "$pf_line" | awk '{print $2}')
pf_bytes=$(echo "$pf_line" | awk '{print $6}')
pf_rate=$(echo "$pf_line" | awk '{print $10}')

# whole runs without a schedule, 1000 steps: the trace written at the end
# (JSON) against the streamed one (Perfetto); the files are removed after
run_json=$("$b" run 10000000 run_trace.json | sed 's/^run //')
run_pf=$("$b" run 10000000 run_trace.pftrace | sed 's/^run //')
run_pf50=$("$b" run 50000000 run_trace.pftrace | sed 's/^run //')
# the flight recorder: every step kept in its ring, nothing written
run_fl=$(PROF_FLIGHT=20 PROF_FLIGHT_SLOW=0 "$b" run 10000000 run_trace.json | sed 's/^run //; s/, [0-9.]* bytes per region//')
fl_ns=$(PROF_FLIGHT=20 "$b" region $n | awk '{print $2}')
rm -f run_trace.json run_trace.pftrace

# best_of runs a loop 6 times (a warm-up and 5 timed runs); the loop's own
# counter, compare and branch (3 instructions) are not the profiler's.
per_iter() { awk '{printf "%.1f", $1 / 6 - 3}'; }
gpu_floor_ns=$(ns gpu_floor $n)
gpu_region_ns=$(ns gpu_region 50000)
gpu_resolve_ns=$(ns gpu_resolve 50000)

floor_ir=$(ir loop_floor floor 200000 | per_iter)
gpu_floor_ir=$(ir loop_gpu_floor gpu_floor 50000 | per_iter)
gpu_region_ir=$(ir loop_gpu_region gpu_region 50000 | per_iter)
gpu_resolve_ir=$(ir gpu_resolve gpu_resolve 50000 | awk '{printf "%.1f", $1 / 6}')
region_ir=$(ir loop_region region 200000 | per_iter)
# into new memory: the same inline path, and the chunks the recording thread
# made itself (2,047 records each) when the reserve's helper had not made
# them first; callgrind runs one thread at a time, so how many moves from
# run to run (bench/README.md, "The recorded region into new memory")
fresh_ir=$(ir loop_region fresh 200000 | per_iter)
off_ir=$(ir loop_region off 200000 | per_iter)
dyn_ir=$(ir loop_dyn dyn 200000 | per_iter)
nvtx_rows=""
if ((have_nvtx)); then
  nvtx_ns=$(./bench_nvtx region $n | awk '{print $2}')
  nvtx_off_ns=$(./bench_nvtx off $n | awk '{print $2}')
  b=./bench_nvtx
  nvtx_ir=$(ir loop_region region 200000 | per_iter)
  nvtx_off_ir=$(ir loop_region off 200000 | per_iter)
  b=./bench
  nvtx_rows="| recorded \`PROF_SCOPE\` with -DPROF_NVTX, no tool attached | $nvtx_ir | $nvtx_ns ns |
| \`PROF_SCOPE\` outside a window with -DPROF_NVTX, no tool attached | $nvtx_off_ir | $nvtx_off_ns ns |"
fi
fl_ir=$(PROF_FLIGHT=20 ir loop_region region 200000 | per_iter)
mem_ir=$(ir loop_mem mem 200000 | per_iter)
mem_off_ir=$(ir loop_mem mem_off 200000 | per_iter)
format_ir=$(ir prof__write_trace_as write 200000 | awk '{printf "%.0f", $1}')
gz_ir=$(ir prof__write_trace_as write 200000 bench_trace.json.gz | awk '{printf "%.0f", $1}')
pf_ir=$(ir prof__write_perfetto write 200000 bench_trace.pftrace | awk '{printf "%.0f", $1}')
collect_ir=$(ir prof__collect write 200000 | awk '{printf "%.0f", $1}')

ratio=$(awk -v a="$region_ns" -v b="$floor_ns" 'BEGIN{printf "%.2f", a/b}')
machine
cat <<TABLE

| what | instructions | time |
|---|---|---|
| two bare timestamp reads (the floor) | $floor_ir | $floor_ns ns |
| recorded \`PROF_SCOPE\` | $region_ir | $region_ns ns (${ratio}x the floor) |
| recorded \`PROF_SCOPE\` into new memory (one long cycle) | $fresh_ir | $fresh_ns ns, $fresh_faults page faults per 1000 in the loop |
| \`PROF_SCOPE\` outside a recording window | $off_ir | $off_ns ns |
| recorded \`PROF_SCOPE\` in flight mode (PROF_FLIGHT=20) | $fl_ir | $fl_ns ns |
| recorded \`PROF_SCOPE_DYN\` of 48 run-time names | $dyn_ir | $dyn_ns ns |
$nvtx_rows
| recorded \`PROF_SCOPE\`, 2 threads at once | | $threads_ns ns per region per thread |
| \`PROF_ALLOC\` + \`PROF_FREE\` pair, recorded | $mem_ir | $mem_ns ns |
| \`PROF_ALLOC\` + \`PROF_FREE\` pair outside a recording window | $mem_off_ir | $mem_off_ns ns |
| writer: JSON per event | $format_ir | $write_ns ns for collection and writing, $write_rate M events/s |
| writer: gzip JSON per event | $gz_ir | $gz_ns ns |
| writer: Perfetto protobuf per event | $pf_ir | $pf_ns ns, $pf_rate M events/s |
| writer: collection per event | $collect_ir | |
| trace size: JSON, gzip JSON, Perfetto | | $write_bytes, $gz_bytes, $pf_bytes bytes per event |
| 10 M regions in 1000 steps, written at the end (JSON) | | $run_json |
| 10 M regions in 1000 steps, streamed (Perfetto) | | $run_pf |
| 50 M regions in 1000 steps, streamed (Perfetto) | | $run_pf50 |
| 10 M regions in 1000 steps, flight mode (the last 21 steps kept, nothing written) | | $run_fl |
| two event records, null GPU runtime (the GPU floor) | $gpu_floor_ir | $gpu_floor_ns ns |
| recorded \`PROF_GPU_BEGIN\`/\`PROF_GPU_END\`, null GPU runtime | $gpu_region_ir | $gpu_region_ns ns |
| resolving one GPU region at a step, null GPU runtime | $gpu_resolve_ir | $gpu_resolve_ns ns |
TABLE
