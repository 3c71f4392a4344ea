#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine --weights-dir` on the GPU backend (exit 77 without a GPU): the tiny model
# written by arb-weights-write (bf16 and INT4, two shard files) loaded on the GPU
#   - gives the same greedy tokens as the CPU reference fed the same tensors, logits within
#     the tolerance (--check-steps: both models read the checkpoint);
#   - gives bit-identical tokens and logits to the GPU's own generated weights of that seed
#     (graph and eager), at TP=1 and (INT4) as shard 0 of --tp-shape 2 (this rank's slices only);
#   - from FP8 blocks, bit-identical to the same values stored as bf16.
# One rank with nccl at the sites (a one-rank all-reduce: the full model's arithmetic, as the
# CPU reference's local residual; noop would leave the partial sums out).
# usage: engine_gpu_weights.sh ARBENCH ARB_WEIGHTS_WRITE CHECK_CSV
set -u
arbench=$1 write=$2 check=$3
. "$(dirname "$0")/../../common/tap.sh"
one() { timeout 240 mpirun $mpirun_args -np 1 "$arbench" engine "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
common="--backend gpu --impl nccl --no-noop-replay --context 16 --prefill-chunk 5 --steps 8 --quiet"

one --config tiny $common --steps 1 --context 4 --out "$tmp/probe.csv" >"$tmp/probe.out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--backend gpu: " "$tmp/probe.out"; then
    echo "SKIP: $(grep -m1 -- "--backend gpu: " "$tmp/probe.out")"
    exit 77
fi
[ $rc -eq 0 ] || { cat "$tmp/probe.out"; fail "the probe run exited $rc"; }

engine() { # TAG ARGS...
    tag=$1; shift
    one $common --out "$tmp/$tag.csv" --dump-tokens "$tmp/$tag.tok" --dump-logits "$tmp/$tag.lg" "$@" \
        >"$tmp/$tag.out" 2>&1 || { cat "$tmp/$tag.out"; fail "engine $tag ($*) exited $?"; }
}
identical() {
    cmp -s "$tmp/$1.tok" "$tmp/$2.tok" || { cat "$tmp/$1.tok" "$tmp/$2.tok"; fail "$1 and $2: greedy tokens differ"; }
    cmp -s "$tmp/$1.lg" "$tmp/$2.lg" || fail "$1 and $2: logits are not bit-identical"
    echo "ok: $1 == $2 bit for bit: tokens $(cat "$tmp/$1.tok")"
}

for w in bf16 int4; do
    "$write" "$tmp/ck-$w" --config tiny --weights $w --seed 1 >/dev/null || fail "arb-weights-write $w"
    engine load-$w --weights-dir "$tmp/ck-$w" --seed 1 --check-steps 8
    # every checked token agrees with the CPU reference, logits within logit_tol
    "$check" "$tmp/load-$w.csv" --where phase=decode --all check_agree=9/9 --all weights=$w \
        --all "weights_source=$tmp/ck-$w" --positive load_gbs ||
        { cat "$tmp/load-$w.out"; fail "$w: GPU from the checkpoint vs the CPU reference from it"; }
    line=$(grep -m1 '^# check vs the CPU reference: ' "$tmp/load-$w.out")
    [ -n "$line" ] && echo "$line" | awk '{ d = $(NF - 2); t = $NF; sub(/\)/, "", t); exit !(d ~ /^[0-9.]+$/ && d + 0 <= t + 0) }' ||
        { cat "$tmp/load-$w.out"; fail "$w: logits differ from the CPU reference's beyond the tolerance ($line)"; }
    echo "ok: $w: GPU == CPU reference fed the same tensors: $line"
    grep -q "model loaded from $tmp/ck-$w on the gpu backend: .* GB/s per rank" "$tmp/load-$w.out" ||
        { cat "$tmp/load-$w.out"; fail "$w: no load line with GB/s"; }
    engine gen-$w --config tiny --weights $w --seed 1
    engine load2-$w --weights-dir "$tmp/ck-$w" --seed 1
    identical gen-$w load2-$w
done
# shard 0 of --tp-shape 2: this rank's slices only (INT4 experts split by columns in down_proj)
engine gens2 --config tiny --weights int4 --seed 1 --tp-shape 2
engine loads2 --weights-dir "$tmp/ck-int4" --seed 1 --tp-shape 2
identical gens2 loads2
# FP8 blocks dequantized at load: bit-identical to the same rounded values stored as bf16
"$write" "$tmp/f8" --config tiny --fp8 >/dev/null && "$write" "$tmp/f8d" --config tiny --fp8-dequantized >/dev/null ||
    fail "arb-weights-write --fp8"
engine f8 --weights-dir "$tmp/f8"
engine f8d --weights-dir "$tmp/f8d"
identical f8 f8d
echo "ok: all"
