#!/usr/bin/env bash
# prof ranks and prof merge on 1,000 ranks: wall time, CPU time and peak RSS
# (/usr/bin/time). The ranks are played by tests/ranks_sim.c (8 processes
# with a barrier; rank 5 computes 30 ms longer at step 12), and each of the
# 8 traces is copied to 125 ranks, its distributedInfo rank rewritten: 1,000
# traces of SIZE_MB each (default 10: 10 GB on disk under the build dir).
#   bench/ranks.sh [build-dir] [SIZE_MB]   prints a Markdown table for bench/README.md
set -euo pipefail
source "$(dirname "$0")/common.sh"
size=${2:-10}
build_prof
$cc -std=c11 -O2 -DPROF_ENABLE -I"$root" -o "$out/ranks_sim" "$root/tests/ranks_sim.c" -lpthread -lm
cd "$out"
rm -rf ranks8 ranks1000 ranks-table
mkdir -p ranks8 ranks1000

# 8 ranks, 20 steps; about 100 bytes of JSON per region: SIZE_MB of regions
layers=$((size * 1000000 / 20 / 100))
(cd ranks8 && env -u PROF_SCHEDULE -u PROF_FLIGHT PROF_OUTPUT='rank{rank}.json' \
   ../ranks_sim 8 20 "$layers" straggler=5:12:30 2>/dev/null)
python3 - "$out" <<'EOF'
import re, sys
out = sys.argv[1]
tmpl = [open(f"{out}/ranks8/rank{r}.json", "rb").read() for r in range(8)]
for r in range(1000):
    t = tmpl[r % 8]
    data = re.sub(rb'"rank": \d+, "world_size": \d+', b'"rank": %d, "world_size": 1000' % r, t, count=1)
    open(f"{out}/ranks1000/rank{r}.json", "wb").write(data)
EOF
total=$(du -sm ranks1000 | cut -f1)

measure() {     # label, command...: one table row
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o time.txt "$@" > cmd.out 2> cmd.err
  read -r wall user sys rss < time.txt
  echo "| $label | $wall s | $(echo "$user + $sys" | bc) s | $((rss / 1024)) MiB |"
}

machine
echo "1,000 traces of $(du -m ranks1000/rank0.json | cut -f1) MB (JSON, $((layers * 20 + 100)) regions each): $total MB."
echo
echo "| what | wall | CPU | peak RSS |"
echo "|---|---|---|---|"
cat ranks1000/*.json > /dev/null      # in the page cache, as the second read of a run is
measure "prof ranks, 1,000 ranks, -j 2" ./prof ranks -j 2 --table-out ranks-table ranks1000
grep "^step 12: " cmd.out > step12.txt || true
measure "prof ranks, 1,000 ranks, -j 1" ./prof ranks -j 1 ranks1000
measure "prof merge --ranks 0-7,37 (9 of 1,000)" ./prof merge -q --ranks 0-7,37 -o merged9.json ranks1000/rank*.json
measure "prof merge, 64 ranks" ./prof merge -q -o merged64.json $(for r in $(seq 0 63); do echo ranks1000/rank$r.json; done)
measure "prof merge, 1,000 ranks (to /dev/null)" sh -c 'exec ./prof merge -q -o - ranks1000/rank*.json > /dev/null'
echo
echo "prof ranks at step 12 (rank 5 of the 8 computed 30 ms longer; ranks 5, 13, ... 997 are its copies):"
echo
echo "    $(cat step12.txt)"
rm -f merged9.json merged64.json
