#!/usr/bin/env bash
# check.sh [REPO_ROOT [WORK_DIR]] -- prof.h costs nothing when disabled.
#
#  1. annotated.c / annotated.cpp use every public macro of prof.h (and of the
#     contract); strip.py removes them, keeping lines and columns in place.
#  2. For {gcc, clang} x {C11, C++17} x {-O0, -O2}, the annotated source
#     compiled without PROF_ENABLE (-Wall -Wextra -Werror) and the stripped one
#     give objects whose allocated sections (.text*, .rodata*, .data*, .bss*,
#     .tbss, .eh_frame, ...), relocations and symbols are byte for byte equal.
#  3. `#define PROF_IMPLEMENTATION` + `#include "prof.h"` without PROF_ENABLE
#     defines and references no symbol, and its object equals an empty file's.
#  4. The annotated sources also compile with PROF_ENABLE (they are real use).
# One line per check, PASS/FAIL/SKIP; exit 0 all passed, 1 a failure,
# 77 nothing failed but a compiler was missing.
# Compilers: $ZC_GCC $ZC_GXX $ZC_CLANG $ZC_CLANGXX (default gcc g++ clang clang++).
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

# ---- 1. the annotated sources use every macro -------------------------------

contract=(PROF_INIT PROF_SHUTDOWN PROF_SCOPE PROF_FUNCTION PROF_BEGIN PROF_END
          PROF_INSTANT PROF_COUNTER PROF_THREAD_NAME PROF_STEP PROF_ARG_INT
          PROF_ARG_STR PROF_FLOPS PROF_ALLOC PROF_FREE PROF_SET_RANK PROF_SYNC)
public=($(grep -oE '^[[:space:]]*#[[:space:]]*define[[:space:]]+PROF_[A-Z0-9][A-Z0-9_]*\(' "$repo/prof.h" |
          grep -oE 'PROF_[A-Z0-9_]+' | sort -u))
expected=($(printf '%s\n' "${contract[@]}" "${public[@]}" | sort -u))

for ext in c cpp; do
  mkdir -p "$work/annotated.$ext" "$work/plain.$ext"
  cp "$here/annotated.$ext" "$work/annotated.$ext/zc.$ext"
  if ! "$py" "$here/strip.py" "$here/annotated.$ext" "$work/plain.$ext/zc.$ext" \
       > "$work/removed.$ext" 2> "$work/strip.$ext.err"; then
    fail "strip annotated.$ext: $(cat "$work/strip.$ext.err")"
    continue
  fi
  missing=$(comm -23 <(printf '%s\n' "${expected[@]}") <(awk '{ print $1 }' "$work/removed.$ext" | sort -u) | paste -sd' ' -)
  if [[ -n $missing ]]; then
    fail "annotated.$ext does not use: $missing"
  else
    pass "annotated.$ext uses all ${#expected[@]} macros ($(awk '{ s += $2 } END { print s }' "$work/removed.$ext") uses)"
  fi
done

# ---- 2. annotated without PROF_ENABLE == never annotated -----------------------

for cc in gcc clang; do
  for ext in c cpp; do
    comp=${compiler[$cc.$ext]}
    if ! command -v "$comp" >/dev/null; then
      skip "$cc ${lang[$ext]}: $comp not found"
      continue
    fi
    [[ -f $work/plain.$ext/zc.$ext ]] || continue
    for opt in -O0 -O2; do
      tag="$cc ${lang[$ext]} ${std[$ext]} $opt"
      d=$work/build-$cc-$ext$opt
      mkdir -p "$d"
      ok=1
      for v in annotated plain; do
        # Same file name in both, so __FILE__ (assert) is the same string.
        if ! (cd "$work/$v.$ext" && "$comp" "${std[$ext]}" "$opt" "${warn[@]}" -I"$repo" \
                -c "zc.$ext" -o "$d/$v.o") > "$d/$v.log" 2>&1; then
          fail "$tag: $v source does not compile"
          sed 's/^/      /' "$d/$v.log" | head -n 30
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
printf '#define PROF_IMPLEMENTATION\n#include "prof.h"\n' > "$work/impl/impl.c"
cp "$work/impl/impl.c" "$work/impl/impl.cpp"
: > "$work/impl/empty.c"
: > "$work/impl/empty.cpp"
for cc in gcc clang; do
  for ext in c cpp; do
    comp=${compiler[$cc.$ext]}
    command -v "$comp" >/dev/null || continue
    for opt in -O0 -O2; do
      tag="$cc ${lang[$ext]} ${std[$ext]} $opt: implementation without PROF_ENABLE"
      d=$work/impl/$cc-$ext$opt
      mkdir -p "$d"
      if ! (cd "$work/impl" && "$comp" "${std[$ext]}" "$opt" "${warn[@]}" -I"$repo" -c "impl.$ext" -o "$d/impl.o" &&
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

# ---- 4. the annotated sources are real use: they compile enabled -----------------

for cc in gcc clang; do
  for ext in c cpp; do
    comp=${compiler[$cc.$ext]}
    command -v "$comp" >/dev/null || continue
    tag="$cc ${lang[$ext]} ${std[$ext]}: annotated.$ext compiles with PROF_ENABLE"
    if (cd "$here" && "$comp" "${std[$ext]}" -O2 "${warn[@]}" -DPROF_ENABLE -I"$repo" \
          -fsyntax-only "annotated.$ext") > "$work/enabled-$cc.$ext.log" 2>&1; then
      pass "$tag"
    else
      fail "$tag: no"
      sed 's/^/      /' "$work/enabled-$cc.$ext.log" | head -n 30
    fi
  done
done

if ((failed)); then
  echo "zero_cost: FAILED (work files in $work)"
  trap - EXIT
  exit 1
fi
((skipped)) && { echo "zero_cost: passed, but some compilers were missing"; exit 77; }
echo "zero_cost: all passed"
exit 0
