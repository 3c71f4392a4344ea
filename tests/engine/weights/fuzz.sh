#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds fuzz_safetensors.c with clang -fsanitize=fuzzer,address,undefined and runs it for
# FUZZ_SECONDS (default 20) over a seed corpus of small safetensors files and configs.
# Skips (77) when clang or libFuzzer (Debian: clang-14 + libclang-rt-14-dev) is missing.
# Usage: fuzz.sh SOURCE_ROOT
set -u
src=$1
. "$(dirname "$0")/../../common/fuzz.sh"
fuzz_setup safetensors
fuzz_build -I"$src/include" -I"$src/engine" -I"$src/src" "$src/tests/engine/weights/fuzz_safetensors.c" \
    "$src/engine/weights/safetensors.c" "$src/engine/weights/quant.c" "$src/engine/weights/int4_ct.c" \
    -ljansson
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
fuzz_run 4096
