#!/bin/sh
# prof-run-test.sh DIR [VAR=VALUE...] COMMAND [ARG...]
# Runs one test in DIR, emptied first so that a test never reads what an
# earlier run left there, with none of the profiler's PROF_* settings
# inherited from the caller; VAR=VALUE pairs (prof_test's ENV) are set after.
dir=$1
shift
case $dir in
  */scratch/*) ;;
  *) echo "prof-run-test.sh: refusing to empty '$dir'" >&2; exit 2 ;;
esac
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 2
unset PROF_OUTPUT PROF_SCHEDULE PROF_TABLE PROF_TB_DIR PROF_BUFFER_MB PROF_DISABLE
exec env "$@"
