#!/usr/bin/env bash
# Create (idempotently) the Python virtual environment used by the trace-reader
# checks (check_tb.py, check_hta.py): torch-tb-profiler and
# holistictraceanalysis from PyPI plus what they need to import and run,
# pinned in requirements.txt beside this script.  torch is not installed:
# neither reader's loader imports it.
#
#   tests/readers/setup_venv.sh [VENV]      (default: <repo>/build-tests/venv)
#
# Needs python3 (3.11 on Debian 12) and network access to PyPI.  On Debian,
# where `python3 -m venv` needs the python3-venv package, it installs that
# with apt-get when run as root.  A second run with the same requirements is a
# no-op (a stamp in the venv holds the requirements' checksum).  On success it
# prints exactly one line: the venv's python.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${1:-$repo/build-tests/venv}
req=$here/requirements.txt
py=${PYTHON:-python3}

die() { echo "setup_venv.sh: $*" >&2; exit 1; }

command -v "$py" >/dev/null || die "$py not found"
sum=$( (cat "$req"; "$py" -c 'import sys; print(sys.version)') | cksum | cut -d' ' -f1)
stamp=$venv/.readers-stamp

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
  echo "$venv/bin/python"
  exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

make_venv() { rm -rf "$venv"; "$py" -m venv "$venv" >"$log" 2>&1; }

if ! make_venv; then
  # Debian/Ubuntu ship ensurepip separately (python3-venv).
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q "python$ver-venv" python3-venv ||
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "python$ver-venv" python3-venv; }
    } >>"$log" 2>&1 || { cat "$log" >&2; die "could not install python3-venv"; }
    make_venv || { cat "$log" >&2; die "python3 -m venv failed"; }
  else
    cat "$log" >&2
    die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
  fi
fi

vpy=$venv/bin/python
# --no-deps: requirements.txt is the full closure; this keeps HTA's declared
# but unneeded jupyterlab/pytest/pydot out and skips the resolver.
if ! "$vpy" -m pip install -q --disable-pip-version-check --no-input \
       --only-binary=:all: --no-deps -r "$req" >"$log" 2>&1; then
  cat "$log" >&2
  die "pip install failed"
fi

# Smoke test: the modules the checks use import without torch.
if ! "$vpy" -c '
import torch_tb_profiler.plugin, torch_tb_profiler.profiler.loader
import hta.trace_analysis, hta.common.trace_call_graph
' >"$log" 2>&1; then
  cat "$log" >&2
  die "reader packages do not import"
fi

echo "$sum" >"$stamp"
echo "$vpy"
