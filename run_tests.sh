#!/usr/bin/env bash
# run_tests.sh -- every test, as CI runs it (.ci/run). Needs cmake, gcc, g++,
# clang, clang++ and python3 (Debian 12: apt-get install cmake clang python3).
#
#   build/        gcc    Release         all tests, zero-cost and package checks
#   build-clang/  clang  Debug           tests: clang warnings in C11 and C++17
#   build-asan/   clang  RelWithDebInfo  tests under PROF_SANITIZE=address,undefined
#   build-tsan/   clang  RelWithDebInfo  tests under PROF_SANITIZE=thread
#
# Tests compile with -Wall -Wextra -Werror, so building with both compilers is
# the warnings matrix. Every stage runs even when one fails; the exit status is
# nonzero when any failed. JOBS=N sets the parallelism (default 2); ONLY="build
# build-asan" runs only those builds; SAN_CC/SAN_CXX choose the sanitizer
# compilers.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(pwd)
jobs=${JOBS:-2}
san_cc=${SAN_CC:-clang}
san_cxx=${SAN_CXX:-clang++}

failed=()
summary=()
t_start=$SECONDS

missing=()
for tool in cmake gcc g++ clang clang++ python3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "run_tests.sh: not found: ${missing[*]}" >&2
  exit 1
fi

banner() { printf '\n==== %s\n' "$*"; }

# ---- optional system packages -----------------------------------------------------
# apt_install PKG...: installs those of the Debian packages that are missing,
# quietly, when apt-get is there and we are root; `apt-get update` first only
# when the install fails (stale or empty package lists, as in fresh
# containers). Nonzero, with the reason in $apt_why, when they could not be
# installed: the tests that need them then skip themselves.
apt_why=
apt_install() {
  local missing=() pkg log=/tmp/run_tests.apt.$$.log
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  if ! command -v apt-get >/dev/null || ((EUID != 0)); then
    apt_why="not installed: ${missing[*]} (needs apt-get as root)"
    return 1
  fi
  echo "run_tests.sh: apt-get install ${missing[*]}"
  local install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}")
  if "${install[@]}" >"$log" 2>&1 || { apt-get update -q >>"$log" 2>&1 && "${install[@]}" >>"$log" 2>&1; }; then
    rm -f "$log"
    return 0
  fi
  tail -n 5 "$log" >&2
  rm -f "$log"
  apt_why="apt-get install ${missing[*]} failed"
  return 1
}

# Open MPI, for examples/train_mlp_mpi and its tests (example_mpi_np*). Without
# it CMake finds no MPI and those tests skip (exit 77), saying why; so does
# the summary.
mpi_note=
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  apt_install libopenmpi-dev openmpi-bin ||
    mpi_note="MPI tests skipped: $apt_why"
fi
if [[ -n $mpi_note ]]; then
  echo "run_tests.sh: $mpi_note" >&2
  summary+=("$mpi_note")
fi

# HIP's headers, libamdhip64 and hipcc, for examples/train_mlp_hip{,_host}
# (example_hip*) and the HIP variants of the zero-cost check. CUDA comes from
# the machine's toolkit (/usr/local/cuda), not from a package. Without them
# those tests skip themselves; the summary says so.
gpu_notes=()
if ! command -v hipcc >/dev/null ||
   [[ ! -e /usr/include/hip/hip_runtime_api.h && ! -e /opt/rocm/include/hip/hip_runtime_api.h ]]; then
  apt_install libamdhip64-dev hipcc || gpu_notes+=("HIP tests skipped: $apt_why")
fi
if ! command -v nvcc >/dev/null && [[ -z ${CUDACXX:-} && ! -x /usr/local/cuda/bin/nvcc ]]; then
  gpu_notes+=("CUDA example skipped: no nvcc (install the CUDA toolkit or set CUDACXX)")
fi
for n in "${gpu_notes[@]}"; do
  echo "run_tests.sh: $n" >&2
  summary+=("$n")
done

# stage NAME COMMAND...: run, time, remember a failure. A command may leave
# a line for the summary in $note.
note=
stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  banner "$name"
  note=
  "$@" || rc=$?
  if ((rc == 0)); then
    summary+=("$(printf '%-62s ok      %4ss' "$name" $((SECONDS - t0)))")
  else
    summary+=("$(printf '%-62s FAILED  %4ss' "$name" $((SECONDS - t0)))")
    failed+=("$name")
  fi
  [[ -n $note ]] && summary+=("    $note")
  return "$rc"
}

# ---- Python trace readers -------------------------------------------------------
# tests/readers/setup_venv.sh makes (once; later runs reuse it) a virtualenv with
# the real trace readers (TensorBoard profiler plugin, HTA) from PyPI. Its python
# is handed to every build as -DPROF_TEST_PYTHON, so tests find it in
# $PROF_TEST_PY; tests/readers/run_checks.sh runs the readers' own checks at the
# end. PROF_TEST_PYTHON=... instead uses that interpreter and skips the venv.
venv=$root/build/venv
test_python=
if [[ -n ${PROF_TEST_PYTHON:-} ]]; then
  test_python=$(command -v "$PROF_TEST_PYTHON") ||
    { echo "run_tests.sh: PROF_TEST_PYTHON=$PROF_TEST_PYTHON not found" >&2; exit 1; }
fi
make_reader_venv() {
  local py
  py=$(bash tests/readers/setup_venv.sh "$venv") || return 1
  test_python=$(printf '%s\n' "$py" | tail -n 1)
  echo "readers venv: $test_python"
}
reader_tests() {
  bash tests/readers/run_checks.sh "$venv"
}
if [[ -z $test_python && -f tests/readers/setup_venv.sh ]]; then
  stage "readers: venv" make_reader_venv
fi

# ---- CMake builds ---------------------------------------------------------------

# build_and_test DIR CC CXX BUILD_TYPE SANITIZE [CTEST_ARG...]
build_and_test() {
  local dir=$1 cc=$2 cxx=$3 type=$4 san=$5
  shift 5
  if [[ -n ${ONLY:-} && " $ONLY " != *" $dir "* ]]; then
    return 0
  fi
  local what="$dir ($cc, $type${san:+, $san})"
  local cfg=(-S "$root" -B "$root/$dir" -DCMAKE_BUILD_TYPE="$type"
             -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx"
             -DPROF_BUILD_TESTS=ON -DPROF_BUILD_EXAMPLES=ON -DPROF_SANITIZE="$san")
  [[ -n $test_python ]] && cfg+=(-DPROF_TEST_PYTHON="$test_python")
  stage "$what: configure" cmake "${cfg[@]}" || return 0
  stage "$what: build" cmake --build "$root/$dir" -j "$jobs" || return 0
  stage "$what: ctest" run_ctest "$dir" "$@"
}

# run_ctest DIR [CTEST_ARG...]: ctest; its summary line goes in $note.
run_ctest() {
  local dir=$1 rc
  shift
  (cd "$root/$dir" && ctest --output-on-failure --no-tests=error -j "$jobs" "$@") 2>&1 |
    tee "$root/$dir/ctest.log"
  rc=${PIPESTATUS[0]}
  note=$(grep -E 'tests passed|tests failed' "$root/$dir/ctest.log" | tail -n 1)
  return "$rc"
}

build_and_test build       gcc       g++        Release        ""
build_and_test build-clang clang     clang++    Debug          ""                -LE meta
build_and_test build-asan  "$san_cc" "$san_cxx" RelWithDebInfo address,undefined -LE meta
build_and_test build-tsan  "$san_cc" "$san_cxx" RelWithDebInfo thread            -LE meta

if [[ -z ${ONLY:-} && -z ${PROF_TEST_PYTHON:-} && -f tests/readers/run_checks.sh ]]; then
  stage "readers: checks" reader_tests
fi

# ---- summary --------------------------------------------------------------------
banner "summary ($((SECONDS - t_start))s)"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  printf '\nFAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo
echo "all passed"
