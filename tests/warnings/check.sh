#!/usr/bin/env bash
# The warnings matrix: prof.h's implementation and a file that uses every
# macro (every_macro.c), built with the warning sets real engines build with,
# and -Werror, for gcc and clang, C11 and C++17, enabled and disabled; the
# program must then run. Any warning fails the test.
#
#   check.sh SOURCE_DIR WORK_DIR
#
# The sets: ggml's (GGML_ALL_WARNINGS, its CI adds -Werror) for C and for C++,
# and for C++ also the casts and null pointers that stricter C++ engines
# reject. With NVTX3's headers, also -DPROF_NVTX (C11 and C++17). Exit 77
# (skipped) when neither compiler is there.
set -uo pipefail
src=$1
work=$2
mkdir -p "$work" && cd "$work" || exit 2

c_ggml="-Wall -Wextra -Wpedantic -Wcast-qual -Wshadow -Wstrict-prototypes -Wpointer-arith
        -Wmissing-prototypes -Wdouble-promotion"
c_ggml_clang="-Wunreachable-code-break -Wunreachable-code-return"
cxx_ggml="-Wall -Wextra -Wpedantic -Wcast-qual -Wmissing-declarations -Wmissing-noreturn -Wextra-semi"
cxx_ggml_clang="-Wmissing-prototypes"
cxx_strict="-Wold-style-cast -Wzero-as-null-pointer-constant"
cxx_strict_gcc="-Wuseless-cast"

# The GPU headers against the real runtime headers, where installed (as
# system headers, -isystem, the way engines include them): compiled, not run.
gpu=()
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
[[ -f $cuda_inc/cuda_runtime_api.h ]] && gpu+=("cuda:-isystem $cuda_inc")
for d in /usr/include /opt/rocm/include; do
  # and prof_hip.h's implementation (its rocprofiler-sdk tracer) in the file that defines PROF_IMPLEMENTATION
  [[ -f $d/hip/hip_runtime_api.h ]] && { gpu+=("hip:-isystem $d -DWARN_HIP" "hip_impl:-isystem $d -DWARN_HIP -DPROF_IMPLEMENTATION"); break; }
done
echo "GPU headers checked: ${gpu[*]:-none}"

pass=0 fail=0 ran=0
failed() {  # failed NAME LOG CMD...: count and show a failure
  local name=$1 log=$2
  shift 2
  fail=$((fail + 1))
  echo "FAIL $name: $*"
  grep -m 8 -E 'warning|error|note' "$log" | sed 's/^/    /'
}
build() {  # build [-gpu] NAME COMPILER FLAGS...: the program, run; with -gpu the GPU file too
  local with_gpu=0
  [[ $1 == -gpu ]] && { with_gpu=1; shift; }
  local name=$1 cc=$2 log=$work/$1.log g
  shift 2
  ran=$((ran + 1))
  # shellcheck disable=SC2068
  if "$cc" $@ -Werror -I"$src" "$src/tests/warnings/main.c" "$src/tests/warnings/every_macro.c" \
       -o "$work/$name" -pthread -lm >"$log" 2>&1 && "$work/$name" >>"$log" 2>&1; then
    pass=$((pass + 1))
  else
    failed "$name" "$log" "$cc" "$@"
  fi
  ((with_gpu)) || return 0
  for g in "${gpu[@]}"; do
    ran=$((ran + 1))
    # shellcheck disable=SC2068,SC2086
    if "$cc" $@ ${g#*:} -Werror -I"$src" -c "$src/tests/warnings/every_gpu_macro.c" \
         -o "$work/$name.${g%%:*}.o" >"$log.${g%%:*}" 2>&1; then
      pass=$((pass + 1))
    else
      failed "$name ${g%%:*}" "$log.${g%%:*}" "$cc" "$@" ${g#*:}
    fi
  done
}

# The optimised builds are at -O2 with gcc, some of whose warnings come from
# its optimiser (-Wmaybe-uninitialized, -Wstringop-overflow, -Warray-bounds
# ...), and at -O0 with clang: its warnings in these sets come from its
# front end, the same at every -O, and its -O2 build takes ten times as
# long. (The api test builds the implementation with clang -O2 and these
# sets, -Werror.)
for cc in gcc clang; do
  command -v "$cc" >/dev/null || { echo "SKIP: $cc not found"; continue; }
  cxx=g++; extra_c=""; extra_cxx=$cxx_strict_gcc; opt=-O2
  if [[ $cc == clang ]]; then cxx=clang++; extra_c=$c_ggml_clang; extra_cxx="$cxx_ggml_clang"; opt=-O0; fi
  for mode in on off; do
    def=""; [[ $mode == on ]] && def="-DPROF_ENABLE"
    # the GPU headers in the strict dialects (their code has no dialect branch)
    build -gpu "${cc}_c11_${mode}"    "$cc"  -std=c11 $opt $def $c_ggml $extra_c
    build "${cc}_gnu11_${mode}"       "$cc"  -std=gnu11 -O0 $def $c_ggml $extra_c
    build -gpu "${cxx}_cxx17_${mode}" "$cxx" -x c++ -std=c++17 $opt $def $cxx_ggml $cxx_strict $extra_cxx
    build "${cxx}_gnuxx17_${mode}"    "$cxx" -x c++ -std=gnu++17 -O0 $def $cxx_ggml $cxx_strict $extra_cxx
  done
  # -DPROF_NVTX: the hot path includes NVTX3 (a system header, as engines include it)
  if [[ -f $cuda_inc/nvtx3/nvToolsExt.h ]]; then
    build "${cc}_c11_nvtx"    "$cc"  -std=c11 $opt -DPROF_ENABLE -DPROF_NVTX -isystem "$cuda_inc" $c_ggml $extra_c
    build "${cxx}_cxx17_nvtx" "$cxx" -x c++ -std=c++17 $opt -DPROF_ENABLE -DPROF_NVTX -isystem "$cuda_inc" \
          $cxx_ggml $cxx_strict $extra_cxx
  fi
done
((ran)) || { echo "SKIP: no compiler"; exit 77; }
echo "warnings: $pass passed, $fail failed"
((fail == 0))
