#!/usr/bin/env bash
# What HIP kernel capture adds per runtime call and per record (prof.h's
# side; bench/hip_capture.c): ns per launch with capture off and on (best of
# 5 batches), and callgrind's instructions per call of each callback.
#   bench/hip_capture.sh BUILD_DIR   (a build of the tests: it holds the
#                                     rocprofiler-sdk double, fake_rocm/lib)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: bench/hip_capture.sh BUILD_DIR}" && pwd)
export PROF_ROCPROFILER_SDK=$build/tests/fake_rocm/lib/librocprofiler-sdk.so
[[ -f $PROF_ROCPROFILER_SDK ]] || { echo "no $PROF_ROCPROFILER_SDK: build the target fake_rocprofiler"; exit 2; }
out=$build/bench-hip
mkdir -p "$out"
cd "$out"
${CC:-cc} -std=c11 -O2 -g -Wall -Wextra -DPROF_ENABLE -I"$root" -I"$root/tests/gpu" -isystem /usr/include \
  "$root/bench/hip_capture.c" "$root/tests/gpu/fake_gpu.c" "$root/tests/gpu/fake_hip.c" -o hip_capture \
  -lpthread -ldl -Wl,--export-dynamic-symbol=rocprofiler_configure
n=200000
off=$(./hip_capture off $n | awk '{print $2}')
on=$(./hip_capture on $n | awk '{print $2}')
# callgrind, collecting inside FN only, over 5 x 20,000 launches: its
# instructions per call, and the share of them spent in the SDK's functions
# (the double's argument listing and clock), which a real SDK has too
cg() {
  valgrind --tool=callgrind --callgrind-out-file=cg.out --collect-atstart=no --toggle-collect="$1" \
    ./hip_capture on 20000 >/dev/null 2>cg.log
  callgrind_annotate --inclusive=yes --auto=no cg.out 2>/dev/null | awk -v n="$2" '
    /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
    /:rocprofiler_(iterate_callback_tracing_kind_operation_args|get_timestamp) / { gsub(",", "", $1); sdk += $1 }
    /:prof__roc_arg / { gsub(",", "", $1); mine += $1 }
    END { printf "%.0f instructions (%.0f of them in the SDK)", total / n, (sdk - mine) / n }'
}
echo "| launch with its SDK callbacks, capture off | $off ns |"
echo "| the same, capture on | $on ns (+$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.1f", a - b}') ns) |"
echo "| prof__roc_api, ENTER + EXIT of one launch | $(cg prof__roc_api 100000) |"
echo "| prof__roc_buffer, per kernel record | $(cg prof__roc_buffer 20000) |"
