# What the bench scripts share, sourced by each: the build folder is the
# script's first argument (default build-bench/ at the top); sets root, out
# and cc, and gives the builds and the line naming the machine.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/build-bench}
mkdir -p "$out"
cc=${CC:-cc}

# bench/bench.c as it is measured, into $out/bench
build_bench() { $cc -std=c11 -O2 -g -Wall -Wextra -DPROF_ENABLE -I"$root" "$root/bench/bench.c" -o "$out/bench" -lpthread; }

# the prof tool, into $out/prof
build_prof() { $cc -std=c11 -O2 -I"$root" -o "$out/prof" "$root"/tools/prof/[a-z]*.c -lpthread -lm; }

# "Machine: <cpu>, <n> cores; <compiler>; -O2."
machine() {
  echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; $($cc --version | head -1); -O2."
}
