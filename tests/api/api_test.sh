#!/bin/sh
# SPDX-License-Identifier: MIT
# libarbench as a server gets it: `meson install --destdir` into a temporary directory, a C
# client compiled against `pkg-config arbench` of that install and run under mpirun -np NP,
# then the Python binding (python/arbench, ctypes over the installed library) on host
# arrays under mpirun -np NP. Exact sums are checked by the client and by binding_test.py;
# here: the exit codes, the one choice line per size and what a server must not get.
# usage: api_test.sh BUILD_ROOT SOURCE_ROOT PREFIX LIBDIR NP FLOOR_PLUGIN_DIR
set -u
build=$1 src=$2 prefix=$3 libdir=$4 np=$5 floor_dir=$6
. "$src/tests/common/tap.sh"
dest=$tmp/dest
lib=$dest$prefix/$libdir

# Profiles for NP ranks on the host fabric; one of other ranks; one cut off mid-row.
head='schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,median_us,baseline_impl,baseline_params,baseline_median_us,speedup,confidence,sources,fusion'
{
    echo "$head"
    echo "1,host,$np,0,bf16,allreduce,eager,0,8192,mpi-host,algo=reduce-bcast,,,,,,synthetic,hand-written,"
    echo "1,host,$np,0,bf16,allreduce,eager,8194,65536,floor,,,,,,,synthetic,hand-written,"
    echo "1,host,$np,0,bf16,allreduce_rmsnorm,eager,0,65536,mpi-host,algo=allreduce,,,,,,synthetic,hand-written,unfused"
} >"$tmp/prof.csv"
{
    echo "$head"
    echo "1,host,$((np + 3)),0,bf16,allreduce,eager,0,65536,mpi-host,algo=reduce-bcast,,,,,,synthetic,hand-written,"
} >"$tmp/other-ranks.csv"
{
    echo "$head"
    printf '1,host,%s,0,bf16,allreduce,eager,0,8192,mpi-' "$np"
} >"$tmp/broken.csv"
cat >"$tmp/prof.json" <<JSON
{"schema": 1, "entries": [
 {"fabric": "host", "ranks": $np, "nodes": 0, "dtype": "bf16", "op": "allreduce", "mode": "eager",
  "min_bytes": 0, "max_bytes": null, "impl": "mpi-host", "params": "algo=reduce-bcast", "confidence": "synthetic", "sources": "hand-written"}
]}
JSON

if meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >"$tmp/install.log" 2>&1 &&
    [ -f "$lib/libarbench.so" ] && [ -f "$dest$prefix/include/arbench/arbench.h" ] &&
    [ -f "$lib/pkgconfig/arbench.pc" ] && [ -f "$lib/arbench/arb-mpi-host.so" ] && [ -f "$lib/arbench/arb-ops-host.so" ]; then
    tap OK "meson install --destdir: libarbench.so, arbench.h, arbench.pc and the plugins in place"
else
    sed 's/^/# /' "$tmp/install.log"; tap FAIL "meson install --destdir"
fi

exported=$(nm -D --defined-only "$lib/libarbench.so" | awk '{print $3}' | grep -v '^arbench_' | tr '\n' ' ')
[ -z "$exported" ] && tap OK "libarbench.so exports only arbench_* functions" || tap FAIL "libarbench.so also exports: $exported"

# The client passes MPI_Allgather as the caller's allgather (API 1.1), so it also uses MPI.
mpi_flags=$(pkg-config --cflags --libs ompi-c 2>/dev/null || pkg-config --cflags --libs mpi 2>/dev/null)
export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
cc=${CC:-cc}
if flags=$(pkg-config --cflags --libs arbench) &&
    $cc -std=c11 -Wall -Wextra -Werror -I"$src/tests/common" "$src/tests/api/client.c" $flags $mpi_flags -lm \
        -Wl,-rpath,"$lib" -o "$tmp/client" >"$tmp/cc.log" 2>&1; then
    tap OK "a C client compiles against pkg-config arbench ($flags)"
else
    sed 's/^/# /' "$tmp/cc.log"; tap FAIL "a C client compiles against pkg-config arbench"
fi

export ARBENCH_PLUGIN_PATH="$lib/arbench:$floor_dir"
mpirun $mpirun_args -np "$np" "$tmp/client" "$tmp" >"$tmp/client.out" 2>"$tmp/client.err"
rc=$?
sed 's/^/# client: /' "$tmp/client.out"
[ $rc = 0 ] && tap OK "C client under mpirun -np $np: exact sums, fallbacks, errors" || { sed 's/^/# /' "$tmp/client.err"; tap FAIL "C client under mpirun -np $np (exit $rc)"; }
lines=$(grep 'arbench: allreduce 4096 B bf16 eager: .*reduce-bcast' "$tmp/client.err" | grep -vc 'did not open here')
[ "$lines" = 1 ] && tap OK "the choice for 4096 B is logged once for three calls" || tap FAIL "the choice for 4096 B logged $lines times, expected 1"
grep -q 'floor for allreduce cannot serve here.*reference floor' "$tmp/client.err" && tap OK "a profile entry naming a reference floor is refused and logged" || tap FAIL "no line refusing the floor entry"
grep -q 'allreduce 4000 B fp32 eager: profiles are measured in bf16 -> mpi-host' "$tmp/client.err" && tap OK "an fp32 call is stated to go to the fallback" || tap FAIL "no fallback line for the fp32 call"
for impl in mpi-host ops-host; do
    grep -q "allreduce on registered buffers by $impl: in place, no staging copy" "$tmp/client.err" && tap OK "registered buffers on $impl run in place (said once)" || tap FAIL "no in-place line for registered buffers on $impl"
done

unset ARBENCH_PLUGIN_PATH  # the binding finds the plugins next to the library
mpirun $mpirun_args -np "$np" env PYTHONPATH="$src/python" python3 "$src/tests/api/binding_test.py" "$tmp" >"$tmp/py.out" 2>"$tmp/py.err"
rc=$?
sed 's/^/# python: /' "$tmp/py.out"
[ $rc = 0 ] && tap OK "Python binding under mpirun -np $np on host arrays: exact sums" || { sed 's/^/# /' "$tmp/py.err"; tap FAIL "Python binding under mpirun -np $np (exit $rc)"; }

echo "1..$n"
exit $bad
