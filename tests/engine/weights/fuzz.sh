#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds fuzz_safetensors.c with clang -fsanitize=fuzzer,address,undefined and runs it for
# FUZZ_SECONDS (default 20) over a seed corpus of small safetensors files and configs.
# Skips (77) when clang or libFuzzer (Debian: clang-14 + libclang-rt-14-dev) is missing.
# Usage: fuzz.sh SOURCE_ROOT
set -u
src=$1
secs=${FUZZ_SECONDS:-20}
cc=""
for c in clang clang-14 clang-15 clang-16; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
done
if [ -z "$cc" ]; then echo "1..0 # SKIP clang not installed"; exit 77; fi
dir=$(mktemp -d /tmp/arb-fuzz-st-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$dir/probe.c"
if ! "$cc" -fsanitize=fuzzer "$dir/probe.c" -o "$dir/probe" 2>/dev/null; then
    echo "1..0 # SKIP $cc has no libFuzzer runtime (Debian: apt-get install libclang-rt-14-dev)"
    exit 77
fi
if ! "$cc" -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src/include" -I"$src/engine" -I"$src/src" "$src/tests/engine/weights/fuzz_safetensors.c" \
    "$src/engine/weights/safetensors.c" "$src/engine/weights/quant.c" "$src/engine/weights/int4_ct.c" \
    -ljansson -o "$dir/fuzz" 2>"$dir/cc.log"; then
    echo "not ok 1 - build the fuzzer"; sed 's/^/# /' "$dir/cc.log" | head -20; echo "1..1"; exit 1
fi
echo "ok 1 - build the fuzzer with $cc"
mkdir -p "$dir/corpus"
# seed: selector byte 0, the 8-byte little-endian header length, the header, the data
seed() {
    local name=$1 header=$2 data_len=$3 n=${#2}
    {
        printf '\000'
        printf "\\$(printf %03o $((n & 255)))\\$(printf %03o $((n >> 8 & 255)))\\000\\000\\000\\000\\000\\000"
        printf '%s' "$header"
        head -c "$data_len" /dev/zero
    } >"$dir/corpus/$name"
}
seed two '{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}}' 12
seed int4 '{"e.weight_packed":{"dtype":"I32","shape":[2,1],"data_offsets":[0,8]},"e.weight_scale":{"dtype":"BF16","shape":[2,1],"data_offsets":[8,12]},"e.weight_shape":{"dtype":"I64","shape":[2],"data_offsets":[12,28]}}' 28
seed empty '{}' 0
printf '\001{"quantization_config":{"quant_method":"compressed-tensors","format":"pack-quantized","config_groups":{"g":{"weights":{"num_bits":4,"type":"int","symmetric":true,"strategy":"group","group_size":32}}}}}' >"$dir/corpus/config"
if (cd "$dir" && ./fuzz -max_total_time="$secs" -max_len=4096 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 corpus >fuzz.log 2>&1); then
    echo "ok 2 - ${secs}s of fuzzing: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/fuzz.log" | grep -o '[0-9]*$') inputs, no crash"
    echo "1..2"
    exit 0
fi
echo "not ok 2 - the fuzzer found a crash, leak or hang:"
grep -E 'ERROR|SUMMARY|Test unit written' "$dir/fuzz.log" | sed 's/^/# /' | head -20
cp "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* /tmp/ 2>/dev/null && echo "# reproducers copied to /tmp"
echo "1..2"
exit 1
