#!/bin/sh
# run_fuzz.sh TARGET SEED_DIR SCRATCH_DIR runs=N|seconds=N [LIBFUZZER_FLAG...]
#
# One bounded libFuzzer run, as CTest's fuzz_* tests make it. runs=N is the
# suite's: N inputs from a fixed seed, the same inputs on every machine, so
# that a run passes or fails the same way each time. seconds=N explores anew
# each time (a random seed), for longer runs by hand. The seed corpus
# is copied into SCRATCH_DIR/corpus (emptied first) and the fuzzer grows that
# copy, never the repository's; a crash, undefined behaviour, a leak, a broken
# promise, a 10 s input or 2 GiB of memory fails the run, and the input that
# did it is kept in SCRATCH_DIR/artifacts and printed in hex.
set -u
if [ $# -lt 4 ]; then
  echo "usage: run_fuzz.sh TARGET SEED_DIR SCRATCH_DIR runs=N|seconds=N [LIBFUZZER_FLAG...]" >&2
  exit 2
fi
target=$1 seeds=$2 scratch=$3 budget=$4
shift 4
case $budget in
  runs=[1-9]*) bound="-runs=${budget#runs=} -seed=1" ;;
  seconds=[1-9]*) bound="-max_total_time=${budget#seconds=}" ;;
  *) echo "run_fuzz.sh: '$budget' is neither runs=N nor seconds=N" >&2; exit 2 ;;
esac
case $scratch in
  */scratch/*) ;;
  *) echo "run_fuzz.sh: refusing to empty '$scratch' (not a .../scratch/... directory)" >&2; exit 2 ;;
esac
rm -rf "$scratch" && mkdir -p "$scratch/corpus" "$scratch/artifacts" || exit 2
cp "$seeds"/* "$scratch/corpus/" || exit 2
cd "$scratch" || exit 2

# -error_exitcode: libFuzzer's default, 77, is CTest's "skipped" here.
# shellcheck disable=SC2086 # $bound is two flags
"$target" $bound -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
  -artifact_prefix="$scratch/artifacts/" "$@" corpus
rc=$?
for f in "$scratch"/artifacts/*; do
  [ -f "$f" ] || continue
  echo "run_fuzz.sh: $f (reproduce: $target $f), hex:"
  od -An -tx1 -v "$f" | head -64
done
[ $rc -eq 0 ] || echo "run_fuzz.sh: $(basename "$target") failed (exit $rc)"
exit $rc
