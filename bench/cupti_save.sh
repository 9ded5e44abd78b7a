#!/usr/bin/env bash
# What the step that saves a cycle costs the engine's thread under kernel
# capture, by the kernels its window launched (bench/cupti_save.c), on the
# CUPTI double: the saving step's and a plain step's median ms.
#   bench/cupti_save.sh BUILD_DIR   (a build of the tests: it holds the
#                                    double, tests/libfake_cupti.so)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: bench/cupti_save.sh BUILD_DIR}" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
export PROF_CUPTI_LIB=$build/tests/libfake_cupti.so
[[ -f $PROF_CUPTI_LIB ]] || { echo "no $PROF_CUPTI_LIB: build the target fake_cupti"; exit 2; }
out=$build/bench-cupti-save
mkdir -p "$out"
cd "$out"
${CC:-cc} -std=c11 -O2 -g -Wall -Wextra -DPROF_ENABLE -I"$root" -I"$root/tests/gpu" -isystem "$cuda/include" \
  -isystem "$cuda/extras/CUPTI/include" "$root/bench/cupti_save.c" "$root/tests/gpu/fake_gpu.c" "$root/tests/gpu/fake_cuda.c" -o cupti_save -lpthread -ldl -lm
echo "| kernels in the window | the saving step | a step of the window |"
echo "|---|---|---|"
for n in 1000 10000 100000; do
  ./cupti_save $n 2>/dev/null | awk '{printf "| %d | %.3f ms | %.3f ms |\n", $1, $2, $3}'
done
