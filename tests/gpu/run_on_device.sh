#!/bin/sh
# tests/gpu/run_on_device.sh [BUILD_DIR]
#
# The GPU path on a real NVIDIA GPU, which the test suite never has: builds
# the project there (BUILD_DIR, default build-device; kernels for the GPU's
# own architecture), then
#   1. runs the GPU tests (ctest -L gpu: the doubles, and real_cuda on the
#      real runtime with a device) and the CUDA example's test (example_cuda:
#      every region, GPU regions nested on their stream, the GPU step equal
#      to the CPU reference);
#   2. measures what a GPU region costs the host against a bare launch and a
#      hand-made cudaEventRecord pair (bench/gpu_device.cu), and checks that
#      its trace holds every region;
#   3. runs the example with kernel capture (PROF_CUPTI=1) and checks its
#      trace (tests/gpu/check_cupti.py: every kernel, copy and fill with its
#      launch and flow, inside the GPU region that launched it to the ns, no
#      partial overlap on a GPU track), printing where the kernels sit in
#      their regions, and the alignment bound each device measured, with and
#      without kernel capture (deviceProperties' prof_alignment_bound_ns);
#   4. times the example's steps: the profiler compiled out, compiled in
#      with the example's schedule (3 steps recorded), every step recorded,
#      and every step recorded with kernel capture;
#   5. kernel capture as an engine uses it (tests/gpu/device_capture.cu,
#      checked by check_device_capture.py): no PROF_INIT, CPU regions only,
#      cuBLAS GEMMs (launched through the driver API), a CUDA graph made
#      before any window; every GPU event of the recorded steps has its call;
#   6. what a launch costs the host outside a window and inside one, bare,
#      in a CPU region and in a GPU region, with kernel capture and without
#      and with the profiler compiled out (bench/gpu_capture.cu), and
#      torch.profiler on the same loop (bench/gpu_torch.py, where python3
#      has torch), alternating, in rounds;
#   7. prof.h as the NVTX tool: a one-rank NCCL all-reduce (PyPI's
#      nvidia-nccl wheel, found through python3 or $NCCL_LIB) run under
#      `prof run` (libprof_nvtx.so): NCCL's own ranges, with their payload,
#      nested in the program's regions (tests/gpu/check_nccl.py);
#   8. energy (PROF_ENERGY=1): the CUDA example, 2,000 steps recorded, while
#      tests/gpu/energy_device.py reads NVML's energy counter by hand as fast
#      as it answers and nvidia-smi logs power.draw every 100 ms: each step's
#      joules and the window's against the hand reads over the same steps,
#      and the mean power against nvidia-smi's (energy_device.py check);
#      then the same run with PROF_ENERGY off, for the step time.
# Prints the figures, and writes them with the logs to $RESULTS (default
# BUILD_DIR/results). Exit 0 when all passed; without a GPU it says so and
# exits 0.
set -u
cd "$(dirname "$0")/../.." || exit 2
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "run_on_device.sh: no NVIDIA GPU here (nvidia-smi lists none); nothing to run"
  exit 0
fi
build=${1:-build-device}
results=${RESULTS:-$build/results}
mkdir -p "$results" || exit 2
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
python=$(command -v python3)
failed=0
fail() { echo "FAILED: $*"; failed=1; }

gpu=$(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -1)
arch=$(echo "$gpu" | awk -F', ' '{ gsub(/\./, "", $3); print $3 }')
echo "GPU: $gpu; $("$nvcc" --version | tail -1); $(date -u +%Y-%m-%d)"

echo "== build ($build, sm_$arch)"
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPROF_BUILD_TESTS=ON \
       -DCMAKE_CUDA_ARCHITECTURES="$arch" -DCMAKE_CUDA_COMPILER="$nvcc" \
       -DPROF_TEST_PYTHON="$python" >"$results/configure.log" 2>&1 ||
   ! cmake --build "$build" -j"$(nproc)" >"$results/build.log" 2>&1; then
  tail -30 "$results/configure.log" "$results/build.log" 2>/dev/null
  echo "FAILED: the build"
  exit 1
fi
flags="-std=c++17 -O2 -arch=sm_$arch -I. -Xcompiler -Wall,-Wextra,-Werror"
# shellcheck disable=SC2086 # $flags: several flags
"$nvcc" $flags -DPROF_ENABLE bench/gpu_device.cu -o "$build/gpu_device" &&
  "$nvcc" $flags examples/train_mlp_cuda.cu -o "$build/train_mlp_cuda_off" &&
  "$nvcc" $flags -DPROF_ENABLE bench/gpu_capture.cu -o "$build/gpu_capture" &&
  "$nvcc" $flags bench/gpu_capture.cu -o "$build/gpu_capture_off" &&
  "$nvcc" -O2 -arch=sm_$arch -shared -Xcompiler -fPIC bench/gpu_launch.cu -o "$build/libgpu_launch.so" ||
  { echo "FAILED: building the benchmarks or train_mlp_cuda_off"; exit 1; }
# shellcheck disable=SC2086
"$nvcc" $flags -DPROF_ENABLE tests/gpu/device_capture.cu -lcublas -o "$build/device_capture" 2>"$results/device_capture_build.log" ||
  echo "device_capture not built (no cuBLAS?): $(head -3 "$results/device_capture_build.log")"

echo "== 1. GPU tests and the CUDA example on the device"
ctest --test-dir "$build" -L gpu -R 'gpu_cuda|real_cuda|cupti' --output-on-failure >"$results/ctest_gpu.log" 2>&1 ||
  fail "ctest -L gpu (see $results/ctest_gpu.log)"
grep -E "tests passed|tests failed" "$results/ctest_gpu.log"
ctest --test-dir "$build" -R '^example_cuda$' --output-on-failure >"$results/ctest_example.log" 2>&1 ||
  fail "example_cuda (see $results/ctest_example.log)"
grep -E "tests passed|tests failed|skipped" "$results/ctest_example.log"

echo "== 2. host cost of a GPU region"
trace="$results/gpu_device.json"
"$build/gpu_device" "$trace" | tee "$results/gpu_device.txt" || fail "bench/gpu_device"
"$python" - "$trace" <<'EOF' || fail "gpu_device's trace"
import json, sys
d = json.load(open(sys.argv[1]))
n = sum(1 for e in d["traceEvents"] if e.get("cat") == "gpu_user_annotation" and e["name"] == "launch")
want = 21 * 1000
print(f"trace: {n} GPU regions of {want}")
sys.exit(n != want)
EOF

echo "== 3. kernel capture (PROF_CUPTI=1): the CUDA example's trace"
(cd "$results" && PROF_CUPTI=1 PROF_OUTPUT=cupti.json "$build/examples/train_mlp_cuda" >example_cupti_run.txt 2>&1) ||
  { cat "$results/example_cupti_run.txt"; fail "train_mlp_cuda with PROF_CUPTI=1"; }
grep "^prof:" "$results/example_cupti_run.txt"
# 3 recorded steps of 19 kernels and 2 copies each, every one with its launch
"$python" tests/gpu/check_cupti.py "$results/cupti.1.json" --figures --slack-us "${SLACK_US:-0}" --launches 63 \
  --kernels matmul_kernel,bias_act_kernel,softmax_xent_kernel,sgd_kernel || fail "the CUPTI trace"
"$python" - "$results/cupti.1.json" <<'EOF'
import collections, json, sys
d = json.load(open(sys.argv[1]))
k = collections.Counter(e["name"] for e in d["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy"))
print("kernels and copies of the 3 steps:", ", ".join(f"{n} x{c}" for n, c in sorted(k.items())))
EOF
(cd "$results" && PROF_OUTPUT=events.json "$build/examples/train_mlp_cuda" >example_events_run.txt 2>&1) ||
  fail "train_mlp_cuda without kernel capture"
"$python" - "$results/events.1.json" "$results/cupti.1.json" <<'EOF' || fail "the alignment bound"
import json, sys
for path, how in zip(sys.argv[1:], ("event pairs placed by polled anchors", "kernel capture, one clock")):
    b = {p["id"]: p.get("prof_alignment_bound_ns") for p in json.load(open(path))["deviceProperties"]}
    print(f"alignment bound, {how}: " + ", ".join(f"device {k}: {v} ns" for k, v in b.items()))
    if not b or None in b.values():
        sys.exit(f"{path}: no prof_alignment_bound_ns in deviceProperties")
EOF
echo "-- the host cost again, with kernel capture on"
PROF_CUPTI=1 "$build/gpu_device" "$results/gpu_device_cupti.json" | tail -2 || fail "bench/gpu_device with PROF_CUPTI=1"

echo "== 4. the example's step time"
steps=${STEPS:-2000}
for way in off on all cupti; do
  bin="$build/examples/train_mlp_cuda" env=""
  case $way in
    off) bin="$build/train_mlp_cuda_off" ;;                         # compiled out
    all) env="PROF_SCHEDULE=active=$steps PROF_OUTPUT=all.json" ;;  # every step recorded
    cupti) env="PROF_SCHEDULE=active=$steps PROF_OUTPUT=all_cupti.json PROF_CUPTI=1" ;;
  esac                                                              # on: its schedule, 3 steps recorded
  # shellcheck disable=SC2086 # $env: assignments
  (cd "$results" && env $env "$bin" $steps >"example_$way.txt" 2>&1) || fail "train_mlp_cuda ($way)"
  awk -v w=$way -v n=$steps '/steps on the GPU in/ { printf "profiler %-3s %.3f ms per step (%d steps in %s s)\n", w, 1000 * $7 / n, n, $7 }' \
    "$results/example_$way.txt"
done

echo "== 5. kernel capture as an engine uses it: no PROF_INIT, cuBLAS, a graph made before the window"
if [ -x "$build/device_capture" ]; then
  (cd "$results" && PROF_CUPTI=1 PROF_OUTPUT=device_capture.json "$build/device_capture" >device_capture_run.txt 2>&1) ||
    { cat "$results/device_capture_run.txt"; fail "device_capture"; }
  grep "^prof:" "$results/device_capture_run.txt"
  "$python" tests/gpu/check_device_capture.py "$results/device_capture.1.json" "$results/truth.json" ||
    fail "device_capture's trace"
fi

echo "== 6. a launch's host cost (ns), outside a window and inside, capture on and off, and torch.profiler"
has_torch=0
"$python" -c 'import torch' 2>/dev/null && has_torch=1
for round in 1 2 3; do
  "$build/gpu_capture_off" || fail "gpu_capture (compiled out)"
  (cd "$results" && PROF_OUTPUT=capture0.json "$build/gpu_capture") || fail "gpu_capture"
  (cd "$results" && PROF_CUPTI=1 PROF_OUTPUT=capture1.json "$build/gpu_capture") || fail "gpu_capture (PROF_CUPTI=1)"
  if [ $has_torch = 1 ]; then "$python" bench/gpu_torch.py "$build/libgpu_launch.so" || fail "gpu_torch.py"; fi
done >"$results/capture_cost.txt" 2>&1
grep -v '^prof: wrote' "$results/capture_cost.txt"
# a window's trace: its 2 steps' 6,000 kernels, each with its launch
"$python" tests/gpu/check_cupti.py "$results/capture1.1.json" --launches 6000 || fail "gpu_capture's trace"

echo "== 7. NCCL's NVTX ranges through prof run (libprof_nvtx.so)"
nccl=${NCCL_LIB:-$("$python" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)}
if [ -n "$nccl" ] && [ -f "$nccl" ] && [ -f "$build/tools/libprof_nvtx.so" ]; then
  # shellcheck disable=SC2086
  "$nvcc" $flags -DPROF_ENABLE tests/gpu/nccl_one_rank.cu -ldl -o "$build/nccl_one_rank" &&
    (cd "$results" && PROF_OUTPUT=nccl.json "$build/tools/prof" run "$build/nccl_one_rank" "$nccl" >nccl_run.txt 2>&1) &&
    "$python" tests/gpu/check_nccl.py "$results/nccl.json" || { cat "$results/nccl_run.txt"; fail "NCCL's NVTX ranges"; }
  grep "^prof: nvtx" "$results/nccl_run.txt"
else
  echo "skipped: no libnccl.so.2 (pip install nvidia-nccl-cu13, or NCCL_LIB=...) or no libprof_nvtx.so"
fi

echo "== 8. energy (PROF_ENERGY=1) against NVML read by hand and nvidia-smi over the same seconds"
if "$python" -c 'import ctypes; ctypes.CDLL("libnvidia-ml.so.1")' 2>/dev/null; then
  nvidia-smi --query-gpu=timestamp,index,pci.bus_id,power.draw --format=csv,noheader -lms 100 \
    >"$results/energy_smi.csv" 2>/dev/null &
  smi=$!
  # the hand reader runs until its stdin (a fifo, held open by a sleep) closes
  fifo=$results/energy.fifo
  rm -f "$fifo" && mkfifo "$fifo"
  "$python" tests/gpu/energy_device.py sample "$results/energy_hand.txt" <"$fifo" &
  hand=$!
  sleep 900 >"$fifo" &
  keep=$!
  sleep 1
  (cd "$results" && PROF_ENERGY=1 PROF_SCHEDULE=warmup=5,active=2000,repeat=1 PROF_OUTPUT=energy.json \
    "$build/examples/train_mlp_cuda" 2010 >example_energy.txt 2>&1) || fail "train_mlp_cuda with PROF_ENERGY=1"
  sleep 1
  kill $smi $keep 2>/dev/null
  wait $hand 2>/dev/null
  rm -f "$fifo"
  grep -E "^prof: |energy per step" "$results/example_energy.txt"
  "$python" tests/gpu/energy_device.py check "$results/energy.1.json" "$results/energy_hand.txt" \
    "$results/energy_smi.csv" || fail "PROF_ENERGY's joules against NVML read by hand"
  (cd "$results" && PROF_SCHEDULE=warmup=5,active=2000,repeat=1 PROF_OUTPUT=energy_off.json \
    "$build/examples/train_mlp_cuda" 2010 >example_energy_off.txt 2>&1) || fail "train_mlp_cuda without energy"
  for way in energy energy_off; do
    awk -v w=$way '/steps on the GPU in/ { printf "%-10s %s s for the run\n", w, $7 }' "$results/example_$way.txt"
  done
else
  echo "no libnvidia-ml.so.1 here: skipped"
fi

[ $failed = 0 ] && echo "run_on_device.sh: all passed" || echo "run_on_device.sh: some checks FAILED"
exit $failed
