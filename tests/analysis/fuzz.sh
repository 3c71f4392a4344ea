#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds fuzz_results.c with clang -fsanitize=fuzzer,address,undefined and runs it for
# FUZZ_SECONDS (default 20) over a seed corpus of generated fixtures. Skips (77) when clang
# or libFuzzer (Debian: clang-14 + libclang-rt-14-dev) is missing.
# Usage: fuzz.sh SOURCE_ROOT GEN_FIXTURES
set -u
src=$1 gen=$2
. "$(dirname "$0")/../common/fuzz.sh"
fuzz_setup results
# arb_config.h is not needed by these sources; results.h, stats.h and plugin.h are.
fuzz_build -I"$src/include" -I"$src/src" "$src/tests/analysis/fuzz_results.c" \
    "$src/src/results/results.c" "$src/src/base/stats.c" "$src/src/analysis/points.c" \
    "$src/src/analysis/resample.c" "$src/src/analysis/profile.c" "$src/src/analysis/profile_io.c" \
    "$src/src/results/profile_row.c" "$src/src/results/role.c" "$src/src/base/outfile.c" \
    "$src/src/analysis/gate.c" "$src/src/analysis/gate_report.c" \
    -lcsv -ljansson -lm
mkdir -p "$dir/fx"
"$gen" "$dir/fx" >/dev/null 2>&1
for f in "$dir"/fx/*.csv; do
    [ "$(stat -c %s "$f")" -le 65536 ] || continue
    { printf '\000'; cat "$f"; } >"$dir/corpus/r_$(basename "$f")"
done
printf '\001schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params\n1,pcie,2,1,bf16,allreduce,graph,0,64512,p2p,"variant=oneshot-push,blocks=8"\n1,pcie,2,1,bf16,allreduce,graph,64513,18446744073709551615,nccl,"algo=Ring,proto=LL"\n' >"$dir/corpus/profile.csv"
fuzz_run 65536
