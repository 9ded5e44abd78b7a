#!/usr/bin/env bash
# prof report on traces of 1,000,000 regions: the page's size, the tool's
# time and peak memory (against prof table on the same trace), and the time
# headless Chromium takes to load and draw the page.
#   bench/report.sh [build-dir]     prints a Markdown table for bench/README.md
# Two shapes: bench.c's `run` (1,000 steps of 1,000 regions of one name, as
# prof.h writes them) and a model's (1,000 steps, each a forward and backward
# of 8 layers of nested regions, 1,011 regions a step, 46 names), written
# here as prof.h lays out a JSON trace.
set -euo pipefail
source "$(dirname "$0")/common.sh"
build_bench
build_prof
cd "$out"

env -u PROF_SCHEDULE -u PROF_FLIGHT -u PROF_OUTPUT ./bench run 1000000 report_flat.json >/dev/null
python3 - <<'PY'
# 1,000 steps; a step: fwd and bwd, each 8 layers of attn (qkv, softmax,
# proj) and mlp (up, act, down), each of those 10 kernels and matmuls
steps, t, ev = 1000, 0, []
def x(name, ts, dur, tid=1):
    ev.append(f'{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":{tid},'
              f'"ts":{ts // 1000}.{ts % 1000:03d},"dur":{dur // 1000}.{dur % 1000:03d}}}')
for s in range(steps):
    t0 = t
    for phase in ("fwd", "bwd"):
        p0 = t
        for layer in range(8):
            l0 = t
            for block, ops in (("attn", ("qkv", "softmax", "proj")), ("mlp", ("up", "act", "down"))):
                b0 = t
                for op in ops:
                    n = f"{phase}.{block}.{op}"
                    for k in range(10):
                        d = 2000 + (s * 7 + layer * 13 + k * 31) % 500
                        x(f"{n}.matmul" if k % 2 else f"{n}.kernel", t, d)
                        t += d + 100
                x(f"{phase}.{block}", b0, t - b0)
                t += 50
            x(f"{phase}.layer{layer}", l0, t - l0)
        x(phase, p0, t - p0)
    x(f"ProfilerStep#{s}", t0, t - t0 - 1)
    t += 1000
with open("report_model.json", "w") as f:
    f.write('{"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [\n')
    f.write(",\n".join(ev))
    f.write("\n]}\n")
PY

machine
echo
echo "| trace | regions | trace size | prof table (CPU) | prof report (CPU) | its wall time | its peak RSS | page size | Chromium loads and draws it |"
echo "|---|---|---|---|---|---|---|---|---|"
for t in report_flat report_model; do
  regions=$(grep -o '"ph":"X"' $t.json | wc -l)
  size=$(du -m $t.json | cut -f1)
  # CPU time (user + sys): on a shared machine the wall time also counts the others' work
  /usr/bin/time -o time.txt -f '%U %S' ./prof table $t.json rows=1 >/dev/null
  tt=$(awk '{printf "%.2f", $1 + $2}' time.txt)
  /usr/bin/time -o time.txt -f '%U %S %e %M' ./prof report $t.json -o $t.html 2>/dev/null
  read -r ru rs rw rm <time.txt
  page=$(du -k $t.html | cut -f1)
  load=-
  if command -v chromium >/dev/null; then
    s=$(date +%s.%N)
    chromium --headless --no-sandbox --disable-gpu --user-data-dir="$out/chromium-profile" --dump-dom $t.html 2>/dev/null |
      grep -q 'data-rendered="yes"' && load=$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f s", b-a}')
  fi
  echo "| $t | $regions | $size MB | $tt s | $(awk -v u="$ru" -v s="$rs" 'BEGIN{printf "%.2f", u + s}') s | $rw s |" \
       "$((rm / 1024)) MB | $page KB | $load |"
done
