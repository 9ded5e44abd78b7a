#!/usr/bin/env bash
# The public API in every build: user.c, an engine's use of prof.h's types
# and functions with no #if around it, built as C11 and C++17 with gcc and
# clang, with PROF_ENABLE defined empty (as `#define PROF_ENABLE`), =1, =0
# and absent, -Werror and the warning sets of tests/warnings/check.sh; then
# run, each in an empty directory:
#   enabled   exits 0, writes its trace from the trace-ready handler (JSON,
#             with its regions) and nothing else, prints "cycles 1";
#   disabled  exits 0, writes no file, prints nothing on stderr and
#             "cycles 0 events 0 leaks 0 live 0", and has no prof_ symbol
#             (the functions are inline no-ops, gone at -O2).
#
#   check.sh SOURCE_DIR WORK_DIR
#
# One line per build, PASS/FAIL; exit 0 all passed, 1 a failure, 77 no
# compiler at all. Compilers: gcc g++ clang clang++.
set -uo pipefail
src=$(cd "$1" && pwd)
work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
py=${PROF_TEST_PY:-python3}
# the run must see none of the caller's PROF_* settings
unset PROF_OUTPUT PROF_SCHEDULE PROF_TABLE PROF_TB_DIR PROF_BUFFER_MB PROF_DISABLE PROF_FORMAT \
      PROF_STACKS PROF_RANKS PROF_LOG PROF_FLIGHT PROF_WATCHDOG PROF_TRIGGER PROF_CUPTI PROF_KERNELS

# the sets of tests/warnings/check.sh: ggml's, and strict C++ casts and nulls
c_warn="-Wall -Wextra -Wpedantic -Wcast-qual -Wshadow -Wstrict-prototypes -Wpointer-arith
        -Wmissing-prototypes -Wdouble-promotion"
c_warn_clang="-Wunreachable-code-break -Wunreachable-code-return"
cxx_warn="-Wall -Wextra -Wpedantic -Wcast-qual -Wmissing-declarations -Wmissing-noreturn -Wextra-semi
          -Wold-style-cast -Wzero-as-null-pointer-constant"
cxx_warn_gcc="-Wuseless-cast"
cxx_warn_clang="-Wmissing-prototypes"

# mode -> how PROF_ENABLE is given, and whether that enables
modes=(empty one zero absent)
declare -A mode_def=([empty]="-DPROF_ENABLE=" [one]="-DPROF_ENABLE=1" [zero]="-DPROF_ENABLE=0" [absent]="")
declare -A mode_on=([empty]=1 [one]=1 [zero]=0 [absent]=0)

pass=0 fail=0 ran=0
declare -A built_from=()                # preprocessed text's checksum -> the build made from it
ok() { pass=$((pass + 1)); echo "PASS  $*"; }
bad() { fail=$((fail + 1)); echo "FAIL  $*"; }

# check NAME ON DIR: the run in DIR (exit code in DIR/../NAME.rc) did what
# its build should; prints why not
check() {
  local name=$1 on=$2 dir=$3 rc files line
  rc=$(cat "$work/$name.rc")
  [[ $rc == 0 ]] || { echo "exited $rc"; return 1; }
  files=$(cd "$dir" && find . -mindepth 1 | sort | paste -sd' ' -)
  line=$(head -n 1 "$work/$name.out")
  if ((on)); then
    [[ $files == ./trace.json ]] || { echo "wrote '$files', not just ./trace.json"; return 1; }
    [[ $line == "cycles 1 events "* ]] || { echo "printed '$line'"; return 1; }
    "$py" -c '
import json, sys
names = {e.get("name") for e in json.load(open(sys.argv[1]))["traceEvents"]}
missing = {"matmul", "train_step"} - names
sys.exit("trace lacks " + ", ".join(sorted(missing)) if missing else 0)' "$dir/trace.json" || return 1
  else
    [[ -z $files ]] || { echo "wrote '$files'"; return 1; }
    [[ $line == "cycles 0 events 0 leaks 0 live 0 "* ]] || { echo "printed '$line'"; return 1; }
    [[ ! -s $work/$name.err ]] || { echo "said on stderr: $(head -n 3 "$work/$name.err")"; return 1; }
    if nm "$work/$name" | grep -q ' prof_'; then
      echo "has prof_ symbols: $(nm "$work/$name" | grep ' prof_' | head -n 5 | paste -sd' ' -)"
      return 1
    fi
  fi
}

for cc in gcc clang; do
  cxx=g++; [[ $cc == clang ]] && cxx=clang++
  for lang in c cxx; do
    if [[ $lang == c ]]; then
      comp=$cc; flags="-x c -std=c11 $c_warn"; [[ $cc == clang ]] && flags+=" $c_warn_clang"
    else
      comp=$cxx; flags="-x c++ -std=c++17 $cxx_warn"
      if [[ $cc == clang ]]; then flags+=" $cxx_warn_clang"; else flags+=" $cxx_warn_gcc"; fi
    fi
    command -v "$comp" >/dev/null || { echo "SKIP  $comp not found"; continue; }
    for mode in "${modes[@]}"; do
      name=${comp}_${lang}_${mode} on=${mode_on[$mode]}
      tag="$name (${mode_def[$mode]:-no PROF_ENABLE}):"
      ran=$((ran + 1))
      # shellcheck disable=SC2086
      cflags=($flags -O2 -Werror ${mode_def[$mode]} -I"$src")
      # Two spellings that preprocess to the same text (=1 and empty; =0 and
      # absent) are one compilation: the second takes the first's program,
      # still run and checked as its own.
      same=$({ echo "$comp ${cflags[*]}" | sed 's/-DPROF_ENABLE[^ ]*//'
               "$comp" "${cflags[@]}" -E "$src/tests/api/user.c" 2>/dev/null || echo "no -E: $name"
             } | cksum)
      if [[ -n ${built_from[$same]:-} ]]; then
        cp "$work/${built_from[$same]}" "$work/$name"
        tag+=" (${built_from[$same]}'s build: the same preprocessed text)"
      elif "$comp" "${cflags[@]}" "$src/tests/api/user.c" -o "$work/$name" -pthread -lm > "$work/$name.log" 2>&1; then
        built_from[$same]=$name
      else
        bad "$tag does not build"
        grep -m 8 -E 'warning|error' "$work/$name.log" | sed 's/^/      /'
        continue
      fi
      dir=$work/run.$name
      mkdir -p "$dir"
      (cd "$dir" && "$work/$name" trace.json) > "$work/$name.out" 2> "$work/$name.err"
      echo $? > "$work/$name.rc"
      if why=$(check "$name" "$on" "$dir" 2>&1); then
        if ((on)); then ok "$tag trace written ($(head -n 1 "$work/$name.out"))"
        else ok "$tag nothing written, no prof_ symbol"; fi
      else
        bad "$tag $why"
        tail -n 5 "$work/$name.err" | sed 's/^/      /'
      fi
    done
  done
done
((ran)) || { echo "SKIP: no compiler"; exit 77; }
echo "api: $pass passed, $fail failed"
((fail == 0))
