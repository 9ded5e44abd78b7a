#!/usr/bin/env bash
# PROF_SAMPLE's cost: bench/sample.c's loop (1 M regions of ~2,000 simple
# iterations, 100 steps, one window) with sampling off, at 1 kHz and at
# 10 kHz, and the same program under `perf record -g` at the same rates
# (its own sampling off), where perf is installed (Debian: linux-perf):
#   - the engine thread's CPU time per region, its slowdown against off, and
#     per sample (the time it gained over off, over the samples);
#   - the profiler's thread's CPU time per sample (its time at HZ less its
#     time off, over the samples); perf's own CPU time (perf record's user
#     + system time, children included, less the program's), and per
#     sample what 10 kHz cost it over 1 kHz;
#   - bytes per sample: the JSON trace's prof_samples (from its key to
#     traceEvents), that text gzipped alone (what it adds to a .json.gz),
#     a .pftrace's growth over off at 10 kHz (nothing while the Perfetto
#     writer keeps no samples), perf.data's size over its samples.
# Best of 5 runs of each by the engine's time; perf: best of 5 by the same.
#   bench/sample.sh [build-dir]
set -euo pipefail
source "$(dirname "$0")/common.sh"
$cc -std=c11 -O2 -g -fno-omit-frame-pointer -Wall -Wextra -DPROF_ENABLE -I"$root" "$root/bench/sample.c" \
  -o "$out/sample" -lpthread
cd "$out"
n=${REGIONS:-1000000}
machine

field() { sed -n "s/.* $1 \([^ ]*\).*/\1/p" <<<"$2"; }     # a field of sample's line
best() { for k in 1 2 3 4 5; do "$@"; done | sort -k4 -n | head -1; }     # the least engine ns per region

# prof_samples' text of a JSON trace (its key up to traceEvents', which follows it)
samples_text() {
  local o
  o=$(grep -b -o '"prof_samples"\|"traceEvents"' "$1" | cut -d: -f1 | tr '\n' ' ')
  set -- "$1" $o
  dd if="$1" iflag=skip_bytes,count_bytes skip=$2 count=$(($3 - $2)) status=none
}

echo
echo "| PROF_SAMPLE | engine ns per region | against off | samples | ns per sample (engine) | profiler's thread per sample | JSON bytes per sample | gzipped |"
echo "|---|---|---|---|---|---|---|---|"
for hz in 0 1000 10000; do
  l=$(best ./sample $hz "$n" sample_$hz.json)
  e=$(field engine_s "$l"); w=$(field worker_s "$l"); s=$(field samples "$l"); r=$(field engine_ns_per_region "$l")
  if [[ $hz == 0 ]]; then
    e0=$e; w0=$w; r0=$r
    echo "| off | $r | 1.00x | 0 | | | | |"
    continue
  fi
  js=$(samples_text sample_$hz.json | wc -c); gz=$(samples_text sample_$hz.json | gzip -c | wc -c)
  awk -v hz=$hz -v r=$r -v r0=$r0 -v e=$e -v e0=$e0 -v w=$w -v w0=$w0 -v s=$s -v js=$js -v gz=$gz 'BEGIN {
    printf "| %d | %.0f | %.2fx | %d | %.0f | %.2f us | %.1f | %.1f |\n", hz, r, r / r0, s,
      (e - e0) * 1e9 / s, (w - w0) * 1e6 / s, js / s, gz / s }'
done
l0=$(./sample 0 "$n" sample_0.pftrace); l1=$(./sample 10000 "$n" sample_10000.pftrace)
awk -v b0=$(field bytes "$l0") -v b1=$(field bytes "$l1") -v s=$(field samples "$l1") 'BEGIN {
  printf "\n.pftrace at 10 kHz: %d bytes against %d off, %d samples: %.1f bytes per sample%s\n", b1, b0, s,
    (b1 - b0) / s, (b1 - b0) < s ? " (no samples in this writer: the difference is the regions, not samples)" : "" }'

if ! command -v perf >/dev/null || ! perf record -e task-clock:u -o /dev/null -- true >/dev/null 2>&1; then
  echo
  echo "perf record: not measured (perf is not installed or may not sample here: Debian's linux-perf, perf_event_paranoid <= 2)"
  exit 0
fi
# the user + system CPU seconds of a command and its children (microseconds, where time(1) gives
# hundredths); its stdout into perf_line, its stderr into perf_said
children_cpu() {
  python3 -c 'import resource, subprocess, sys
with open("perf_line", "w") as o, open("perf_said", "w") as e: subprocess.run(sys.argv[1:], stdout=o, stderr=e)
r = resource.getrusage(resource.RUSAGE_CHILDREN); print("%.6f" % (r.ru_utime + r.ru_stime))' "$@"
}
echo
echo "perf record -g -e task-clock:u -c PERIOD (frame pointers, user space, a fixed period as prof.h's), PROF_SAMPLE off:"
echo
echo "| perf record | engine ns per region | against off | samples | ns per sample (engine) | perf's own CPU (whole run) | perf.data bytes per sample |"
echo "|---|---|---|---|---|---|---|"
for hz in 1000 10000; do
  for k in 1 2 3 4 5; do
    cpu=$(children_cpu perf record -g -e task-clock:u -c $((1000000000 / hz)) -o perf_$hz.data -- \
      ./sample 0 "$n" perf_$hz.json)
    echo "$(cat perf_line) perf_cpu $cpu perf_samples $(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' perf_said) perf_bytes $(stat -c %s perf_$hz.data)"
  done | sort -k4 -n | head -1 >perf_best_$hz
  l=$(cat perf_best_$hz)
  awk -v hz=$hz -v r=$(field engine_ns_per_region "$l") -v r0=$r0 -v e=$(field engine_s "$l") -v e0=$e0 \
      -v s=$(field perf_samples "$l") -v pc=$(field perf_cpu "$l") -v pr=$(field proc_s "$l") \
      -v pb=$(field perf_bytes "$l") 'BEGIN {
    printf "| %d Hz | %.0f | %.2fx | %d | %.0f | %.3f s | %.1f |\n", hz, r, r / r0, s, (e - e0) * 1e9 / s,
      pc - pr, pb / s }'
done
# perf's own time per sample: what 10 kHz cost it over 1 kHz (its start and its build ids' pass at the end
# are the same at both rates)
l1=$(cat perf_best_1000); l2=$(cat perf_best_10000)
awk -v c1=$(field perf_cpu "$l1") -v p1=$(field proc_s "$l1") -v s1=$(field perf_samples "$l1") \
    -v c2=$(field perf_cpu "$l2") -v p2=$(field proc_s "$l2") -v s2=$(field perf_samples "$l2") 'BEGIN {
  printf "\nperf record per sample (10 kHz over 1 kHz): %.2f us of its own CPU\n", ((c2 - p2) - (c1 - p1)) * 1e6 / (s2 - s1) }'
