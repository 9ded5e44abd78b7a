#!/usr/bin/env bash
# check.sh [REPO_ROOT [WORK_DIR]] -- prof.h costs nothing when disabled.
#
#  1. annotated.c / annotated.cpp use every public macro of prof.h (and of the
#     contract), annotated_cuda.c / annotated_hip.c every macro of prof_cuda.h
#     / prof_hip.h and their allocation wrappers; strip.py removes them,
#     keeping lines and columns in place.
#  2. For {gcc, clang} x {C11, C++17} x {-O0, -O2}, the annotated source
#     compiled without PROF_ENABLE (-Wall -Wextra -Werror; with -DPROF_NVTX
#     -DPROF_ROCTX, which must change nothing then) and the stripped one
#     give objects whose allocated sections (.text*, .rodata*, .data*, .bss*,
#     .tbss, .eh_frame, ...), relocations and symbols are byte for byte equal.
#     annotated_cuda.c and annotated_hip.c (C code that is also C++) are
#     compiled as both, against the real runtime headers.
#  3. `#define PROF_IMPLEMENTATION` + `#include "prof.h"` (or prof_cuda.h,
#     prof_hip.h) without PROF_ENABLE defines and references no symbol, and
#     its object equals an empty file's.
#  4. The annotated sources also compile with PROF_ENABLE (they are real use).
# One line per check, PASS/FAIL/SKIP; exit 0 all passed, 1 a failure,
# 77 nothing failed but a compiler was missing. Missing CUDA or HIP headers
# skip only the checks that compile against them (SKIP lines, exit 0).
# Compilers: $ZC_GCC $ZC_GXX $ZC_CLANG $ZC_CLANGXX (default gcc g++ clang clang++).
# Runtime headers: cuda_runtime_api.h in $ZC_CUDA_INCLUDE, $CUDA_HOME/include,
# /usr/local/cuda/include or the default path; hip/hip_runtime_api.h in
# $ZC_HIP_INCLUDE, $ROCM_PATH/include, /opt/rocm/include or the default path.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "${1:-$here/../..}" && pwd)
if [[ -n ${2:-} ]]; then
  work=$2
  rm -rf "$work" && mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
work=$(cd "$work" && pwd)
py=${PROF_TEST_PY:-python3}

declare -A compiler=(
  [gcc.c]=${ZC_GCC:-gcc}     [gcc.cpp]=${ZC_GXX:-g++}
  [clang.c]=${ZC_CLANG:-clang} [clang.cpp]=${ZC_CLANGXX:-clang++})
declare -A std=([c]=-std=c11 [cpp]=-std=c++17)
declare -A lang=([c]=C [cpp]=C++)
warn=(-Wall -Wextra -Werror)

failed=0 skipped=0
pass() { printf 'PASS  %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; failed=1; }
skip() { printf 'SKIP  %s\n' "$*"; skipped=1; }
skip_gpu() { printf 'SKIP  %s\n' "$*"; }  # a missing runtime header: not a failure

for tool in readelf nm "$py"; do
  command -v "$tool" >/dev/null || { echo "check.sh: $tool not found" >&2; exit 1; }
done
[[ -f $repo/prof.h ]] || { echo "check.sh: no prof.h in $repo" >&2; exit 1; }

# ---- object fingerprints -----------------------------------------------------

# Allocated sections of an object, one per line: "index key type size flags
# align", key = name#n for the n-th section of that name (C++ repeats names).
alloc_sections() {
  readelf -SW "$1" | awk '
    /^ *\[ *[0-9]+\]/ {
      line = $0
      sub(/^ *\[ */, "", line); idx = line; sub(/\].*/, "", idx)
      sub(/^[0-9]+\] */, "", line)
      n = split(line, f, " ")
      if (n == 10) flags = f[7]; else if (n == 9) flags = ""; else next
      if (index(flags, "A")) print idx, f[1] "#" (++seen[f[1]]), f[2], f[5], flags, f[n]
    }'
}

# fingerprint OBJ DIR: DIR/sections (allocated sections without indices),
# DIR/contents ("key hex-dump-line" for every one that has contents),
# DIR/relocs, DIR/symbols
fingerprint() {
  local obj=$1 dir=$2
  mkdir -p "$dir"
  alloc_sections "$obj" > "$dir/alloc"
  cut -d' ' -f2- "$dir/alloc" > "$dir/sections"
  # One readelf for all contents, keyed as alloc_sections keys them.
  local args=($(awk '$3 != "NOBITS" { print "-x", $1 }' "$dir/alloc"))
  : > "$dir/contents"
  if ((${#args[@]})); then
    readelf "${args[@]}" "$obj" 2>/dev/null | awk '
      /^Hex dump of section / {
        name = $0; sub(/^Hex dump of section .\47?/, "", name); sub(/\47?:$/, "", name)
        key = name "#" (++seen[name]); next
      }
      NF && key != "" { print key, $0 }' > "$dir/contents"
  fi
  # Relocations without the Info column, which holds symbol table indices.
  readelf -rW "$obj" | sed -E 's/ at offset 0x[0-9a-f]+//; s/^([0-9a-f]+) +[0-9a-f]+ /\1 /' > "$dir/relocs"
  nm -S "$obj" > "$dir/symbols"
}

# compare_objects A.o B.o DIR -> prints what differs (empty: identical)
compare_objects() {
  local a=$1 b=$2 dir=$3 what=()
  fingerprint "$a" "$dir/a"
  fingerprint "$b" "$dir/b"
  # Sections only one object has, or with another size, type or flags, or
  # other bytes.
  what+=($(diff "$dir/a/sections" "$dir/b/sections" | awk '/^[<>]/ { print $2 }'))
  what+=($(diff "$dir/a/contents" "$dir/b/contents" | awk '/^[<>]/ { print $2 }'))
  cmp -s "$dir/a/relocs" "$dir/b/relocs" || what+=(relocations)
  cmp -s "$dir/a/symbols" "$dir/b/symbols" || what+=(symbols)
  printf '%s\n' "${what[@]}" | sed 's/#1$//' | awk 'NF && !seen[$0]++' | paste -sd' ' -
}

show_diff() {  # first lines of every difference, for the log
  local dir=$1
  diff -r "$dir/a" "$dir/b" | head -n 40 | sed 's/^/      /'
}

# ---- the runtime headers of the GPU variants -----------------------------------

# find_header HEADER FLAGS-VAR DIR...: FLAGS-VAR=(-IDIR) for the first DIR
# (empty: the compiler's default path) in which HEADER is found; 1 if none.
find_header() {
  local header=$1 var=$2 dir cc=${compiler[gcc.c]}
  shift 2
  command -v "$cc" >/dev/null || cc=${compiler[clang.c]}
  for dir in "$@"; do
    [[ -n $dir && ! -d $dir ]] && continue
    if printf '#include <%s>\n' "$header" |
         "$cc" -E -x c -D__HIP_PLATFORM_AMD__ ${dir:+-I"$dir"} - >/dev/null 2>&1; then
      if [[ -n $dir ]]; then eval "$var=(-I\"\$dir\")"; else eval "$var=()"; fi
      return 0
    fi
  done
  return 1
}
cuda_flags=() hip_flags=()
declare -A gpu_missing=()
find_header cuda_runtime_api.h cuda_flags "${ZC_CUDA_INCLUDE:-}" "${CUDA_HOME:+$CUDA_HOME/include}" \
  /usr/local/cuda/include "" || gpu_missing[cuda]="cuda_runtime_api.h not found (set ZC_CUDA_INCLUDE)"
if find_header hip/hip_runtime_api.h hip_flags "${ZC_HIP_INCLUDE:-}" "${ROCM_PATH:+$ROCM_PATH/include}" \
     /opt/rocm/include ""; then
  hip_flags+=(-D__HIP_PLATFORM_AMD__)  # as an engine built by a host compiler defines it
else
  gpu_missing[hip]="hip/hip_runtime_api.h not found (set ZC_HIP_INCLUDE)"
fi

# ---- the variants: a source, compiled as C or C++, with flags ---------------------

# variant -> source; the variant's language is its last part
variants=(c cpp cuda.c cuda.cpp hip.c hip.cpp)
declare -A v_src=([c]=annotated.c [cpp]=annotated.cpp [cuda.c]=annotated_cuda.c [cuda.cpp]=annotated_cuda.c
                  [hip.c]=annotated_hip.c [hip.cpp]=annotated_hip.c)
v_ext() { echo "${1##*.}"; }
v_gpu() { [[ $1 == *.* ]] && echo "${1%%.*}"; }     # cuda, hip or nothing
v_tag() {                                           # "C", "C++, CUDA", ...
  local g; g=$(v_gpu "$1")
  echo "${lang[$(v_ext "$1")]}${g:+, ${g^^}}"
}
v_flags() {                                         # the variant's extra flags into vflags
  case $(v_gpu "$1") in
    cuda) vflags=("${cuda_flags[@]}") ;;
    hip)  vflags=("${hip_flags[@]}") ;;
    *)    vflags=() ;;
  esac
}

# ---- 1. the annotated sources use every macro -------------------------------

contract=(PROF_INIT PROF_SHUTDOWN PROF_SCOPE PROF_FUNCTION PROF_BEGIN PROF_END
          PROF_INSTANT PROF_COUNTER PROF_THREAD_NAME PROF_STEP PROF_ARG_INT
          PROF_ARG_STR PROF_FLOPS PROF_ALLOC PROF_FREE PROF_SET_RANK PROF_SYNC)
gpu_contract=(PROF_GPU_SCOPE PROF_GPU_BEGIN PROF_GPU_END PROF_GPU_ALLOC PROF_GPU_FREE)
macros_of() {  # the function-like macros a header defines: PROF_* and prof_*
  grep -oE '^[[:space:]]*#[[:space:]]*define[[:space:]]+(PROF_[A-Z0-9][A-Z0-9_]*|prof_[A-Za-z0-9_]+)\(' "$1" |
    grep -oE '(PROF|prof)_[A-Za-z0-9_]+' | sort -u
}
declare -A expected=()
# prof.h defines the GPU macros too; annotated_cuda.c / annotated_hip.c use them
expected[annotated.c]=$(printf '%s\n' "${contract[@]}" $(macros_of "$repo/prof.h" | grep '^PROF_' | grep -v '^PROF_GPU_') | sort -u)
expected[annotated.cpp]=${expected[annotated.c]}
for g in cuda hip; do
  if [[ -f $repo/prof_$g.h ]]; then
    expected[annotated_$g.c]=$(printf '%s\n' "${gpu_contract[@]}" $(macros_of "$repo/prof_$g.h") | sort -u)
  else
    gpu_missing[$g]="no prof_$g.h in $repo"
  fi
done

declare -A used_checked=()
for v in "${variants[@]}"; do
  src=${v_src[$v]} ext=$(v_ext "$v") g=$(v_gpu "$v")
  [[ -n $g && -z ${expected[$src]:-} ]] && continue
  mkdir -p "$work/annotated.$v" "$work/plain.$v"
  cp "$here/$src" "$work/annotated.$v/zc.$ext"
  if ! "$py" "$here/strip.py" "$here/$src" "$work/plain.$v/zc.$ext" \
       > "$work/removed.$v" 2> "$work/strip.$v.err"; then
    fail "strip $src: $(cat "$work/strip.$v.err")"
    continue
  fi
  [[ -n ${used_checked[$src]:-} ]] && continue
  used_checked[$src]=1
  missing=$(comm -23 <(printf '%s\n' "${expected[$src]}") <(awk '{ print $1 }' "$work/removed.$v" | sort -u) | paste -sd' ' -)
  n=$(printf '%s\n' "${expected[$src]}" | wc -l)
  if [[ -n $missing ]]; then
    fail "$src does not use: $missing"
  else
    pass "$src uses all $n macros ($(awk '{ s += $2 } END { print s }' "$work/removed.$v") uses)"
  fi
done

# ---- 2. annotated without PROF_ENABLE == never annotated -----------------------

for cc in gcc clang; do
  for v in "${variants[@]}"; do
    ext=$(v_ext "$v") g=$(v_gpu "$v")
    comp=${compiler[$cc.$ext]}
    if ! command -v "$comp" >/dev/null; then
      [[ -z $g ]] && skip "$cc ${lang[$ext]}: $comp not found"
      continue
    fi
    if [[ -n $g && -n ${gpu_missing[$g]:-} ]]; then
      skip_gpu "$cc $(v_tag "$v"): ${gpu_missing[$g]}"
      continue
    fi
    [[ -f $work/plain.$v/zc.$ext ]] || continue
    v_flags "$v"
    for opt in -O0 -O2; do
      tag="$cc $(v_tag "$v") ${std[$ext]} $opt"
      d=$work/build-$cc-$v$opt
      mkdir -p "$d"
      ok=1
      for a in annotated plain; do
        # Same file name in both, so __FILE__ (assert) is the same string.
        # The plain source keeps variables that only macros used, unused.
        aw=("${warn[@]}")
        [[ $a == plain ]] && aw+=(-Wno-unused-variable -Wno-unused-but-set-variable)
        # forwarding to NVTX / roctx asked for, but disabled: still nothing
        # (nor an NVTX header looked for: no include path is given)
        [[ $a == annotated ]] && aw+=(-DPROF_NVTX -DPROF_ROCTX)
        if ! (cd "$work/$a.$v" && "$comp" "${std[$ext]}" "$opt" "${aw[@]}" "${vflags[@]}" -I"$repo" \
                -c "zc.$ext" -o "$d/$a.o") > "$d/$a.log" 2>&1; then
          fail "$tag: $a source does not compile"
          sed 's/^/      /' "$d/$a.log" | head -n 30
          ok=0
        fi
      done
      ((ok)) || continue
      what=$(compare_objects "$d/annotated.o" "$d/plain.o" "$d/fp")
      if [[ -z $what ]]; then
        pass "$tag: identical ($(wc -l < "$d/fp/a/sections") allocated sections, relocations, symbols)"
      else
        fail "$tag: differs in $what"
        show_diff "$d/fp"
      fi
    done
  done
done

# ---- 3. the implementation is nothing without PROF_ENABLE -----------------------

mkdir -p "$work/impl"
: > "$work/impl/empty.c"
: > "$work/impl/empty.cpp"
for header in prof.h prof_cuda.h prof_hip.h; do
  [[ -f $repo/$header ]] || continue
  base=${header%.h}
  printf '#define PROF_IMPLEMENTATION\n#include "%s"\n' "$header" > "$work/impl/$base.c"
  cp "$work/impl/$base.c" "$work/impl/$base.cpp"
  for cc in gcc clang; do
    for ext in c cpp; do
      comp=${compiler[$cc.$ext]}
      command -v "$comp" >/dev/null || continue
      for opt in -O0 -O2; do
        tag="$cc ${lang[$ext]} ${std[$ext]} $opt: $header implementation without PROF_ENABLE"
        [[ $header == prof.h ]] && tag="$cc ${lang[$ext]} ${std[$ext]} $opt: implementation without PROF_ENABLE"
        d=$work/impl/$base-$cc-$ext$opt
        mkdir -p "$d"
        if ! (cd "$work/impl" && "$comp" "${std[$ext]}" "$opt" "${warn[@]}" -I"$repo" -c "$base.$ext" -o "$d/impl.o" &&
              "$comp" "${std[$ext]}" "$opt" -c "empty.$ext" -o "$d/empty.o") > "$d/log" 2>&1; then
          fail "$tag: does not compile"
          sed 's/^/      /' "$d/log" | head -n 30
          continue
        fi
        syms=$(nm "$d/impl.o" | awk '{ print $NF }' | paste -sd' ' -)
        what=$(compare_objects "$d/impl.o" "$d/empty.o" "$d/fp")
        if [[ -n $syms ]]; then
          fail "$tag: has symbols: $syms"
        elif [[ -n $what ]]; then
          fail "$tag: differs from an empty file in $what"
          show_diff "$d/fp"
        else
          pass "$tag: no symbols, same as an empty file"
        fi
      done
    done
  done
done

# ---- 4. the annotated sources are real use: they compile enabled -----------------

for cc in gcc clang; do
  for v in "${variants[@]}"; do
    ext=$(v_ext "$v") g=$(v_gpu "$v") src=${v_src[$v]}
    comp=${compiler[$cc.$ext]}
    command -v "$comp" >/dev/null || continue
    [[ -n $g && -n ${gpu_missing[$g]:-} ]] && continue
    v_flags "$v"
    tag="$cc $(v_tag "$v") ${std[$ext]}: $src compiles with PROF_ENABLE"
    if (cd "$work/annotated.$v" && "$comp" "${std[$ext]}" -O2 "${warn[@]}" "${vflags[@]}" -DPROF_ENABLE -I"$repo" \
          -fsyntax-only "zc.$ext") > "$work/enabled-$cc.$v.log" 2>&1; then
      pass "$tag"
    else
      fail "$tag: no"
      sed 's/^/      /' "$work/enabled-$cc.$v.log" | head -n 30
    fi
  done
done

if ((failed)); then
  echo "zero_cost: FAILED (work files in $work)"
  trap - EXIT
  exit 1
fi
((skipped)) && { echo "zero_cost: passed, but some compilers were missing"; exit 77; }
if ((${#gpu_missing[@]})); then
  echo "zero_cost: all passed, without the $(printf '%s\n' "${!gpu_missing[@]}" | sort | tr a-z A-Z | paste -sd/ -) variants (headers missing)"
else
  echo "zero_cost: all passed"
fi
exit 0
