#!/usr/bin/env bash
# linkage.sh REPO_ROOT WORK_DIR -- prof.h's linkage promises, on the objects:
#
#  1. A translation unit built with -DPROF_NO_TSC does not link against an
#     implementation built without it: the linker names the missing
#     prof__emit_slow_mono (before: it linked, and recorded nothing).
#  2. -fPIC code (a shared library) reaches the hot path's thread-local
#     through the initial-exec model: a recorded PROF_SCOPE calls no
#     __tls_get_addr. -DPROF_TLS_DYNAMIC gives the general model back.
#  3. -DPROF_PRIVATE keeps a shared library's copy of prof.h its own: no
#     prof_ or prof__ symbol is exported; without it, they are.
#  4. A public copy carries the ELF note libprof_nvtx.so finds it by, with
#     no text relocation; a private one none.
#  5. A -fPIC copy's thread-local storage is the 80 bytes prof.h says (with
#     -DPROF_NVTX too where NVTX3's headers are; gcc's layout: clang packs
#     the same variables in fewer, so there it is at most 80): initial-exec
#     puts all of it in glibc's static reserve, which libraries loaded later
#     share (robust_plugins loads several).
#  6. PROF_API decorates every declaration: a copy built with
#     -fvisibility=hidden and PROF_API naming the default visibility exports
#     the same prof_ and prof__ symbols as one built with neither.
# One line per check, PASS/FAIL; exit 0 when all passed. $CC: the compiler.
set -uo pipefail
repo=$(cd "$1" && pwd)
work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
cc=${CC:-cc}
fail=0
say() { echo "$1: $2"; [[ $1 == PASS ]] || fail=1; }
flags=(-std=c11 -O2 -DPROF_ENABLE -I"$repo")

cat >use.c <<'C'
#include "prof.h"
void work(void);
void work(void) { PROF_SCOPE("work"); }
int main(void) { work(); return 0; }
C
printf '#define PROF_IMPLEMENTATION\n#include "prof.h"\n' >impl.c

# 1. the clock mode is in the names (the implementation built once, -fPIC:
#    the executables here and public.so below link the same object)
"$cc" "${flags[@]}" -fPIC -c impl.c -o impl.o && "$cc" "${flags[@]}" -DPROF_NO_TSC -c use.c -o use_mono.o || exit 1
if "$cc" use_mono.o impl.o -o mixed -lpthread -lm 2>link.log; then
  say FAIL "a -DPROF_NO_TSC unit linked against a TSC implementation"
elif grep -q "prof__emit_slow_mono" link.log; then
  say PASS "clock modes do not mix: the linker names prof__emit_slow_mono"
else
  say FAIL "the link failed for another reason: $(head -n 3 link.log)"
fi
"$cc" "${flags[@]}" -c use.c -o use.o && "$cc" use.o impl.o -o same -lpthread -lm &&
  say PASS "the same clock mode links" || say FAIL "the same clock mode does not link"

# 2. initial-exec TLS in -fPIC code
tls_calls() {  # tls_calls OBJ: __tls_get_addr relocations in work()
  objdump -dr --no-show-raw-insn "$1" | awk '/<work>:/{on=1; next} /^$/{on=0} on' | grep -c '__tls_get_addr'
}
"$cc" "${flags[@]}" -fPIC -c use.c -o use_pic.o || exit 1
n=$(tls_calls use_pic.o)
[[ $n == 0 ]] && say PASS "-fPIC: PROF_SCOPE calls no __tls_get_addr" ||
  say FAIL "-fPIC: PROF_SCOPE calls __tls_get_addr ($n)"
"$cc" "${flags[@]}" -fPIC -DPROF_TLS_DYNAMIC -c use.c -o use_dyn.o || exit 1
n=$(tls_calls use_dyn.o)
[[ $n != 0 ]] && say PASS "-DPROF_TLS_DYNAMIC: the general model (__tls_get_addr)" ||
  say FAIL "-DPROF_TLS_DYNAMIC: no __tls_get_addr call, the check above proves nothing"

# 3. PROF_PRIVATE
exported() {  # exported SO: its dynamic symbols named prof_*
  nm -D --defined-only "$1" | awk '{print $3}' | grep -c '^prof_'
}
"$cc" "${flags[@]}" -fPIC -shared -DPROF_PRIVATE impl.c use.c -o private.so -lpthread || exit 1
"$cc" -shared impl.o use_pic.o -o public.so -lpthread || exit 1
n=$(exported private.so)
[[ $n == 0 ]] && say PASS "-DPROF_PRIVATE: no prof_ symbol exported" || say FAIL "-DPROF_PRIVATE: $n prof_ symbols exported"
n=$(exported public.so)
[[ $n -gt 20 ]] && say PASS "default: the API is exported ($n symbols)" || say FAIL "default: only $n prof_ symbols exported"

# 4. the note that leads libprof_nvtx.so to a copy (prof.h, >>process, TOOLS):
#    in a public copy, with no text relocation and no symbol exported for
#    it; not in a private one
note() { readelf -n "$1" 2>/dev/null | grep -c 'prof\.h'; }
textrel=$(readelf -d public.so | grep -c TEXTREL)
n=$(nm -D --defined-only public.so | grep -c prof__tool_table)
[[ $(note public.so) -ge 1 && $textrel == 0 && $n == 0 ]] &&
  say PASS "the tool note: in a public copy, no text relocation, its table not exported" ||
  say FAIL "the tool note: $(note public.so) notes, $textrel TEXTREL, $n exported"
[[ $(note private.so) == 0 ]] && say PASS "-DPROF_PRIVATE: no tool note" || say FAIL "-DPROF_PRIVATE: a tool note"

# 5. the static TLS a copy takes
tls_bytes() {  # tls_bytes SO: its PT_TLS segment's size in memory
  local hex
  hex=$(readelf -lW "$1" | awk '$1 == "TLS" {print $6}')
  printf '%d' "${hex:-0}"
}
tls_ok() {  # tls_ok BYTES: the documented 80 (gcc), or at most that (other compilers)
  if "$cc" --version 2>/dev/null | head -n 1 | grep -qiE 'clang'; then (($1 > 0 && $1 <= 80)); else (($1 == 80)); fi
}
n=$(tls_bytes private.so)
tls_ok "$n" && say PASS "a -fPIC copy's TLS: $n bytes" || say FAIL "a -fPIC copy's TLS: $n bytes (prof.h says 80)"
nvtx_inc=${CUDA_HOME:-/usr/local/cuda}/include
if [[ -f $nvtx_inc/nvtx3/nvToolsExt.h ]]; then
  "$cc" "${flags[@]}" -DPROF_NVTX -isystem "$nvtx_inc" -fPIC -shared -DPROF_PRIVATE impl.c use.c -o nvtx.so \
    -lpthread -ldl || exit 1
  n=$(tls_bytes nvtx.so)
  tls_ok "$n" && say PASS "-DPROF_NVTX: a -fPIC copy's TLS: $n bytes" ||
    say FAIL "-DPROF_NVTX: a -fPIC copy's TLS: $n bytes (prof.h says 80)"
else
  echo "SKIP: -DPROF_NVTX's TLS (no NVTX3 headers in $nvtx_inc)"
fi

# 6. PROF_API on every declaration
symbols() {  # symbols SO: its exported prof_ and prof__ names, sorted
  nm -D --defined-only "$1" | awk '{print $3}' | grep '^prof_' | sort
}
"$cc" "${flags[@]}" -fPIC -shared -fvisibility=hidden -DPROF_API='__attribute__((visibility("default")))' \
  impl.c use.c -o api.so -lpthread || exit 1
symbols public.so >public.syms
symbols api.so >api.syms
if [[ $(wc -l <api.syms) -gt 20 ]] && cmp -s public.syms api.syms; then
  say PASS "PROF_API: the same $(wc -l <api.syms) symbols exported under -fvisibility=hidden"
else
  say FAIL "PROF_API: not on every declaration; exported without it only: $(comm -23 public.syms api.syms | head -n 5 |
    tr '\n' ' ')with it only: $(comm -13 public.syms api.syms | head -n 5 | tr '\n' ' ')"
fi
exit $fail
