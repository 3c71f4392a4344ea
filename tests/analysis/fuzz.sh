#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds fuzz_results.c with clang -fsanitize=fuzzer,address,undefined and runs it for
# FUZZ_SECONDS (default 20) over a seed corpus of generated fixtures. Skips (77) when clang
# or libFuzzer (Debian: clang-14 + libclang-rt-14-dev) is missing.
# Usage: fuzz.sh SOURCE_ROOT GEN_FIXTURES
set -u
src=$1 gen=$2
secs=${FUZZ_SECONDS:-20}
cc=""
for c in clang clang-14 clang-15 clang-16; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
done
if [ -z "$cc" ]; then echo "1..0 # SKIP clang not installed"; exit 77; fi
dir=$(mktemp -d /tmp/arb-fuzz-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$dir/probe.c"
if ! "$cc" -fsanitize=fuzzer "$dir/probe.c" -o "$dir/probe" 2>/dev/null; then
    echo "1..0 # SKIP $cc has no libFuzzer runtime (Debian: apt-get install libclang-rt-14-dev)"
    exit 77
fi
# arb_config.h is not needed by these sources; results.h, stats.h and plugin.h are.
if ! "$cc" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src/include" -I"$src/src" "$src/tests/analysis/fuzz_results.c" \
    "$src/src/results/results.c" "$src/src/base/stats.c" "$src/src/analysis/points.c" \
    "$src/src/analysis/resample.c" "$src/src/analysis/profile.c" "$src/src/analysis/profile_io.c" \
    "$src/src/results/profile_row.c" "$src/src/results/role.c" "$src/src/base/outfile.c" \
    "$src/src/analysis/gate.c" "$src/src/analysis/gate_report.c" \
    -lcsv -ljansson -lm -o "$dir/fuzz" 2>"$dir/cc.log"; then
    echo "not ok 1 - build the fuzzer"; sed 's/^/# /' "$dir/cc.log" | head -20; echo "1..1"; exit 1
fi
echo "ok 1 - build the fuzzer with $cc"
mkdir -p "$dir/corpus" "$dir/fx"
"$gen" "$dir/fx" >/dev/null 2>&1
for f in "$dir"/fx/*.csv; do
    [ "$(stat -c %s "$f")" -le 65536 ] || continue
    { printf '\000'; cat "$f"; } >"$dir/corpus/r_$(basename "$f")"
done
printf '\001schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params\n1,pcie,2,1,bf16,allreduce,graph,0,64512,p2p,"variant=oneshot-push,blocks=8"\n1,pcie,2,1,bf16,allreduce,graph,64513,18446744073709551615,nccl,"algo=Ring,proto=LL"\n' >"$dir/corpus/profile.csv"
if (cd "$dir" && ./fuzz -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 corpus >fuzz.log 2>&1); then
    echo "ok 2 - ${secs}s of fuzzing: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/fuzz.log" | grep -o '[0-9]*$') inputs, no crash"
    echo "1..2"
    exit 0
fi
echo "not ok 2 - the fuzzer found a crash, leak or hang:"
grep -E 'ERROR|SUMMARY|Test unit written' "$dir/fuzz.log" | sed 's/^/# /' | head -20
cp "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* /tmp/ 2>/dev/null && echo "# reproducers copied to /tmp"
echo "1..2"
exit 1
