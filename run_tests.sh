#!/usr/bin/env bash
# run_tests.sh -- every test, as CI runs it (.ci/run).
#
#   ./run_tests.sh [--no-install] [--stage NAME]... [-j N]
#
# Needs cmake, gcc, g++, clang, clang++ and python3 (Debian 12: apt-get
# install cmake gcc g++ clang python3). Everything it builds goes under
# build-tests/, one directory per stage; it never touches build/, the
# README's example build. The stages:
#
#   gcc   gcc    Release         every test, the zero-cost and package checks,
#                                the trace readers on their fixtures
#   asan  clang  Debug           every test under ASan+UBSan: clang's warnings,
#                                -O0, the sanitizers
#   tsan  clang  Debug           every test under TSan
#
# Tests compile with -Wall -Wextra -Werror, so the stages are also the
# warnings matrix. The stages are tested one after the other; each is built
# while the one before it is tested, in the CPU's idle time only. What some tests need and a fresh machine lacks is
# installed first, after saying what and for which tests: Debian packages
# (Open MPI, HIP, zlib) and, from PyPI, the trace readers (tests/readers/
# requirements.txt) into a venv kept in ~/.cache/prof-h/ (named by the
# requirements' checksum, so clones share it; PROF_TEST_VENV=DIR puts it
# elsewhere). --no-install installs nothing: those tests
# are skipped with the reason. Every stage runs even when one fails; the run
# ends with one summary (per stage passed/failed/skipped, each skip's reason,
# each failure's first lines) and its closing line
#     tests: N passed, N failed, N skipped
# and exits 1 if anything failed. JOBS=N or -j N sets the parallelism
# (default: the number of CPUs; the tests labelled "waits", mostly asleep on
# a clock, run two more beside them); SAN_CC/SAN_CXX choose the sanitizer
# stages' compilers; PROF_TEST_PYTHON=... uses that interpreter for the
# checks and makes no venv.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(pwd)
out=$root/build-tests
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
san_cc=${SAN_CC:-clang}
san_cxx=${SAN_CXX:-clang++}
install=1
stages=()

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while (($#)); do
  case $1 in
    --no-install) install=0 ;;
    --stage) stages+=("${2:?--stage needs a name}"); shift ;;
    -j) jobs=${2:?-j needs a number}; shift ;;
    -j*) jobs=${1#-j} ;;
    -h|--help) usage ;;
    *) echo "run_tests.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
((${#stages[@]})) || stages=(gcc asan tsan)
for s in "${stages[@]}"; do
  [[ $s == gcc || $s == asan || $s == tsan ]] || { echo "run_tests.sh: no stage '$s' (gcc, asan, tsan)" >&2; exit 2; }
done

missing=()
for tool in cmake gcc g++ clang clang++ python3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "run_tests.sh: not found: ${missing[*]} (Debian: apt-get install cmake gcc g++ clang python3)" >&2
  exit 1
fi
t_start=$SECONDS
mkdir -p "$out"

# ---- what the tests need from outside ---------------------------------------
# Each entry: the Debian packages, and the tests that need them. Only what is
# missing is listed, and only that is installed.
declare -a need_pkgs=() need_why=()
installed() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'; }
want() {  # want "PKG..." "WHY": note the packages of PKG... not installed yet
  local p miss=()
  for p in $1; do installed "$p" || miss+=("$p"); done
  ((${#miss[@]})) && { need_pkgs+=("${miss[*]}"); need_why+=("$2"); }
  return 0
}
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  want "libopenmpi-dev openmpi-bin" "example_mpi_np2, example_mpi_np4 (the MPI example on 2 and 4 ranks)"
fi
if [[ ! -e /usr/include/hip/hip_runtime_api.h && ! -e /opt/rocm/include/hip/hip_runtime_api.h ]]; then
  want "libamdhip64-dev" "the HIP tests: gpu_hip_c_*, real_hip_real, example_hip_host, zero_cost's HIP builds"
fi
if [[ ! -e /usr/include/zlib.h ]]; then
  want "zlib1g-dev" "scenario_zlib_gzip (gzip JSON written through zlib: -DPROF_ZLIB)"
fi
if ! command -v chromium >/dev/null; then
  want "chromium" "report_* (prof report's pages loaded by headless Chromium)"
fi
if ! command -v hipcc >/dev/null && [[ ! -x /opt/rocm/bin/hipcc ]]; then
  want "hipcc" "example_hip (the HIP example built by hipcc; brings clang-15 and llvm-15, about 20 packages)"
fi

apt_install() {  # apt_install PKG...: quietly; `apt-get update` first only if needed
  local log=$out/apt.log
  local cmd=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@")
  "${cmd[@]}" >"$log" 2>&1 || { apt-get update -q >>"$log" 2>&1 && "${cmd[@]}" >>"$log" 2>&1; } ||
    { tail -n 3 "$log" | sed 's/^/    /' >&2; return 1; }
}
if ((${#need_pkgs[@]})); then
  if ((install)) && command -v apt-get >/dev/null && ((EUID == 0)); then
    echo "run_tests.sh: installing Debian packages for the tests that need them (--no-install: skip those tests instead):"
    for i in "${!need_pkgs[@]}"; do printf '    %-30s for %s\n' "${need_pkgs[$i]}" "${need_why[$i]}"; done
    for i in "${!need_pkgs[@]}"; do
      # shellcheck disable=SC2086
      apt_install ${need_pkgs[$i]} || echo "run_tests.sh: could not install ${need_pkgs[$i]}; those tests will be skipped" >&2
    done
  else
    why="--no-install"; ((install)) && why="installing needs apt-get as root"
    echo "run_tests.sh: not installing ($why); these tests will be skipped:"
    for i in "${!need_pkgs[@]}"; do printf '    %-30s missing: %s\n' "${need_why[$i]}" "${need_pkgs[$i]}"; done
  fi
fi

# The trace readers (TensorBoard's profiler plugin, HTA) for the checks that
# read our traces back: a venv from tests/readers/requirements.txt, made once
# per set of requirements and shared by every clone on the machine.
req_sum=$( (cat tests/readers/requirements.txt; python3 -c 'import sys; print(sys.version)') | cksum | cut -d' ' -f1)
venv=${PROF_TEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/prof-h/readers-$req_sum}
test_python=
if [[ -n ${PROF_TEST_PYTHON:-} ]]; then
  test_python=$(command -v "$PROF_TEST_PYTHON") ||
    { echo "run_tests.sh: PROF_TEST_PYTHON=$PROF_TEST_PYTHON not found" >&2; exit 1; }
elif [[ -x $venv/bin/python && -f $venv/.readers-stamp ]] && ((!install)); then
  test_python=$venv/bin/python
elif ((install)); then
  [[ -f $venv/.readers-stamp ]] ||
    echo "run_tests.sh: the trace readers, pinned in tests/readers/requirements.txt, from PyPI into $venv (once)"
  test_python=$(bash tests/readers/setup_venv.sh "$venv" | tail -n 1) || {
    echo "run_tests.sh: could not make the readers' venv; the tests that use the readers will be skipped" >&2
    test_python=
  }
else
  echo "run_tests.sh: no readers' venv (--no-install); the tests that use the readers will be skipped"
fi

# ---- the stages -------------------------------------------------------------
# Each stage is configured and built, then tested, in build-tests/NAME;
# build-tests/NAME/result says how far it got, its junit.xml what each test
# did (tests/summary.py reads both). The stages run one after the other, but
# while one stage's tests run, the next stage is built beside them in the
# CPU scheduler's idle class (chrt -i 0, where the system has it): it gets
# only the CPU time the tests leave unused (tests that wait on a clock, on a
# child, on one thread), never theirs, so their timings are as before.

# stage_spec NAME: sets cc cxx type san ctest_args for the stage NAME
stage_spec() {
  ctest_args=()
  case $1 in
    gcc)  cc=gcc       cxx=g++        type=Release        san="" ;;
    asan) cc=$san_cc   cxx=$san_cxx   type=Debug          san=address,undefined ctest_args=(-LE meta) ;;
    tsan) cc=$san_cc   cxx=$san_cxx   type=Debug          san=thread            ctest_args=(-LE meta) ;;
  esac
}

# build_stage NAME: configure and build; writes build-tests/NAME/built (one
# line: "ok", "configure failed" or "build failed", and the seconds it took)
build_stage() {
  local name=$1 dir=$out/$1 t0=$SECONDS cc cxx type san ctest_args
  stage_spec "$name"
  mkdir -p "$dir"
  rm -f "$dir/result" "$dir/junit.xml" "$dir/built"
  # The CUDA example for the GPU the device machines have (sm_90) only:
  # users' builds also embed PTX for others, which the suite need not compile.
  local cfg=(-S "$root" -B "$dir" -DCMAKE_BUILD_TYPE="$type"
             -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CUDA_ARCHITECTURES=90-real
             -DPROF_BUILD_TESTS=ON -DPROF_BUILD_EXAMPLES=ON -DPROF_SANITIZE="$san")
  # TSan at -O0 -g1 (line tables: its reports keep their lines). Its
  # tests take 6% more CPU than at -O1 and its build a third: clang -O1
  # compiles prof.h's implementation in 5 s under TSan, -O0 in 0.6 s, and
  # TSan watches every access at either (bench/README.md, "The suite's time")
  [[ $san == thread ]] && cfg+=(-DCMAKE_C_FLAGS_DEBUG="-O0 -g1" -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1")
  [[ -n $test_python ]] && cfg+=(-DPROF_TEST_PYTHON="$test_python")
  local status=ok
  if ! cmake "${cfg[@]}" >"$dir/configure.log" 2>&1; then
    status="configure failed"
  elif ! cmake --build "$dir" -j "$jobs" >"$dir/build.log" 2>&1; then
    status="build failed"
  fi
  printf '%s\n%s\n' "$status" "$((SECONDS - t0))" >"$dir/built"
}

# test_stage NAME: what its build said, then its tests
test_stage() {
  local name=$1 dir=$out/$1 t0=$SECONDS cc cxx type san ctest_args status secs
  stage_spec "$name"
  printf '\n==== %s: %s, %s%s\n' "$name" "$cc" "$type" "${san:+, -fsanitize=$san}"
  { read -r status; read -r secs; } <"$dir/built"
  case $status in
    "configure failed") echo "$status" >"$dir/result"; tail -n 20 "$dir/configure.log"; return ;;
    "build failed") echo "$status" >"$dir/result"; grep -m 20 -E 'error|warning' "$dir/build.log"; return ;;
  esac
  echo "built in $secs s (log: build-tests/$name/build.log)"
  # As many tests at once as there are CPUs, and beside them two of those
  # labelled "waits" (mostly asleep on a clock): each other test takes one
  # of the resource spec's $jobs "cpus" (prof_cpu_tests in CMakeLists.txt).
  printf '{"version": {"major": 1, "minor": 0}, "local": [{"cpus": [{"id": "0", "slots": %d}]}]}\n' "$jobs" \
    >"$dir/resources.json"
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j "$((jobs + 2))" --resource-spec-file resources.json \
                      --output-junit junit.xml "${ctest_args[@]}")
  echo ok >"$dir/result"
  echo "$name: $((secs + SECONDS - t0)) s (built in $secs s, tested in $((SECONDS - t0)) s)"
}

# the idle class, where chrt works here
idle=()
chrt -i 0 true 2>/dev/null && idle=(chrt -i -p 0)
dirs=()
build_stage "${stages[0]}"
for i in "${!stages[@]}"; do
  next=${stages[$((i + 1))]:-}
  pid=
  if [[ -n $next ]]; then
    # shellcheck disable=SC2016
    ( ((${#idle[@]})) && "${idle[@]}" "$BASHPID" >/dev/null; build_stage "$next" ) &
    pid=$!
  fi
  test_stage "${stages[$i]}"
  dirs+=("$out/${stages[$i]}")
  [[ -n $pid ]] && wait "$pid"
done

python3 tests/summary.py "$((SECONDS - t_start))" "${dirs[@]}"
