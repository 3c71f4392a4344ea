#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine --weights-dir` on the CPU backend under mpirun: checkpoints written by
# arb-weights-write (the synthetic weights in the published names, two shard files) and by
# write_tiny (spoilt one way at a time); --prompt-ids and --out-ids.
# usage: engine_weights.sh ARBENCH ARB_WEIGHTS_WRITE ENGINE_COMPARE WRITE_TINY CHECK_CSV TEST_NAME
set -u
arbench=$1 write=$2 compare=$3 write_tiny=$4 check=$5 name=$6
. "$(dirname "$0")/../../common/tap.sh"
. "$(dirname "$0")/engine_checks.sh"
common="--backend cpu --prefill-chunk 5 --steps 12 --quiet" ctx="--context 24" # engine_mpi.sh's: TP=1 and TP=2 agree at seed 1

# ckpt TAG ARGS...: arb-weights-write $tmp/TAG ARGS
ckpt() {
    tag=$1; shift
    "$write" "$tmp/$tag" "$@" >"$tmp/$tag.wout" 2>&1 || { cat "$tmp/$tag.wout"; fail "arb-weights-write $*"; }
}

# engine NP TAG ARGS...: writes $tmp/TAG.{csv,tok,lg,out}
engine() {
    np=$1 tag=$2; shift 2
    run -np "$np" "$arbench" engine $common $ctx --out "$tmp/$tag.csv" --dump-tokens "$tmp/$tag.tok" \
        --dump-logits "$tmp/$tag.lg" "$@" >"$tmp/$tag.out" 2>&1 || { cat "$tmp/$tag.out"; fail "engine $tag ($*) exited $?"; }
}

identical() { # A B: the same greedy tokens and bit-identical logits
    cmp -s "$tmp/$1.tok" "$tmp/$2.tok" || { cat "$tmp/$1.tok" "$tmp/$2.tok"; fail "$1 and $2: greedy tokens differ"; }
    cmp -s "$tmp/$1.lg" "$tmp/$2.lg" || fail "$1 and $2: logits are not bit-identical"
    echo "ok: $1 == $2 bit for bit: tokens $(cat "$tmp/$1.tok")"
}

case $name in
roundtrip|roundtrip_int4)
    # The synthetic generator written out and read back: bit-identical to the in-memory path,
    # at TP=1 and with two ranks each reading only its own slices.
    w=bf16; [ "$name" = roundtrip_int4 ] && w=int4
    ckpt ck --config tiny --weights $w --seed 1
    ls "$tmp/ck/model-00001-of-00002.safetensors" "$tmp/ck/model-00002-of-00002.safetensors" \
        "$tmp/ck/model.safetensors.index.json" >/dev/null || fail "expected two shard files and an index"
    engine 1 gen1 --config tiny --weights $w --seed 1
    engine 1 load1 --weights-dir "$tmp/ck" --seed 1
    identical gen1 load1
    engine 2 gen2 --config tiny --weights $w --seed 1
    engine 2 load2 --weights-dir "$tmp/ck" --seed 1
    identical gen2 load2
    same load1 load2 # the CPU reference fed the same tensors at TP=1 and TP=2
    engine 2 load2s4 --weights-dir "$tmp/ck" --seed 1 --tp-shape 4
    same load1 load2s4
    grep -q "# weights: $tmp/ck (.*): rank 0 reads" "$tmp/load2.out" || fail "no '# weights:' line"
    grep -q "impl model loaded from $tmp/ck on the cpu backend: .* GB over 2 rank(s) in .* s (slowest rank), .* GB/s per rank" \
        "$tmp/load2.out" || { cat "$tmp/load2.out"; fail "no load line with time and GB/s"; }
    "$check" "$tmp/load2.csv" --rows 2 --all "weights_source=$tmp/ck" --all weights=$w --positive load_s \
        --positive load_gbs || fail "rows: weights_source, load_s, load_gbs"
    "$check" "$tmp/gen2.csv" --rows 2 --all weights_source=seed || fail "rows of a seeded run: weights_source=seed"
    # Kimi-K2.5's layout: names under language_model., the config under text_config
    ckpt k25 --config tiny --weights $w --seed 1 --kimi-k25
    engine 2 k25 --weights-dir "$tmp/k25" --seed 1
    identical gen2 k25
    grep -q "names under language_model\." "$tmp/k25.out" || fail "the language_model. prefix was not reported"
    ;;
other_seed)
    # A checkpoint of other weights: the loaded model must differ from the seed's (the load is not ignored).
    ckpt ck --config tiny --weights int4 --seed 9
    engine 1 gen --config tiny --weights int4 --seed 1
    engine 1 load --weights-dir "$tmp/ck" --seed 1
    if cmp -s "$tmp/gen.lg" "$tmp/load.lg"; then fail "weights of seed 9 gave the logits of seed 5"; fi
    echo "ok: other weights, other logits"
    ;;
malformed)
    for s in missing shape dtype weight_shape phantom; do
        mkdir -p "$tmp/$s" && "$write_tiny" "$tmp/$s" int4 $s || fail "write_tiny $s"
    done
    expect_error 2 "tensor 'model.norm.weight' is missing (expected BF16 \[64\]: hidden_size, from $tmp/missing/config.json)" \
        --weights-dir "$tmp/missing" --backend cpu
    expect_error 2 "model-00001-of-00002.safetensors: tensor 'model.layers.1.self_attn.kv_a_layernorm.weight' has shape \[33\] but $tmp/shape/config.json gives \[32\]" \
        --weights-dir "$tmp/shape" --backend cpu
    expect_error 1 "tensor 'lm_head.weight' has dtype F16 (expected BF16)" --weights-dir "$tmp/dtype" --backend cpu
    expect_error 1 "weight_shape' holds {.*} but .*config.json gives" --weights-dir "$tmp/weight_shape" --backend cpu
    expect_error 1 "tensor 'model.layers.0.mlp.phantom.weight' is mapped to .*, which has no such tensor" \
        --weights-dir "$tmp/phantom" --backend cpu
    ckpt ck --config tiny --weights int4
    expect_error 1 "--weights bf16: $tmp/ck holds INT4 (compressed-tensors) routed experts" --weights-dir "$tmp/ck" \
        --backend cpu --weights bf16
    expect_error 1 "--config with --weights-dir" --weights-dir "$tmp/ck" --config tiny --backend cpu
    expect_error 1 "--experts with --weights-dir: the checkpoint's tensors have its config.json's n_routed_experts" \
        --weights-dir "$tmp/ck" --backend cpu --experts 8
    expect_error 1 "$tmp/nosuch/config.json" --weights-dir "$tmp/nosuch" --backend cpu
    sed 's/"quant_method": "compressed-tensors"/"quant_method": "awq"/' "$tmp/ck/config.json" >"$tmp/c.json" &&
        mv "$tmp/c.json" "$tmp/ck/config.json"
    expect_error 1 "quant_method 'awq' is not supported" --weights-dir "$tmp/ck" --backend cpu
    ;;
prompt_ids)
    ctx="" # the prompt's length
    ckpt ck --config tiny --weights bf16 --seed 1
    printf '1 2 3\n4\t5  6 7 8 9 10 11 12\n' >"$tmp/p.ids"
    engine 2 a --weights-dir "$tmp/ck" --prompt-ids "$tmp/p.ids" --out-ids "$tmp/a.ids"
    engine 1 b --weights-dir "$tmp/ck" --prompt-ids "$tmp/p.ids" --out-ids "$tmp/b.ids" --context 12
    cmp -s "$tmp/a.ids" "$tmp/b.ids" || fail "the same prompt gave other ids on 1 and 2 ranks"
    [ "$(wc -w <"$tmp/a.ids")" = 15 ] || fail "--out-ids: expected steps + spec-k + 1 = 15 ids, got $(cat "$tmp/a.ids")"
    cmp -s "$tmp/a.ids" "$tmp/a.tok" || fail "--out-ids differs from the decode chain of --dump-tokens"
    "$check" "$tmp/a.csv" --all context=12 || fail "--context is the prompt's length"
    printf '1 2 3 4 5 6 7 8 9 10 11 13\n' >"$tmp/q.ids"
    engine 1 c --weights-dir "$tmp/ck" --prompt-ids "$tmp/q.ids" --out-ids "$tmp/c.ids"
    if cmp -s "$tmp/a.lg" "$tmp/c.lg"; then fail "another prompt gave the same logits"; fi
    engine 1 d --weights-dir "$tmp/ck" --prompt-ids "$tmp/a.ids" --out-ids "$tmp/d.ids"
    echo "ok: prompt ids in, $(cat "$tmp/a.ids") out (an output is a prompt again)"
    printf '1 2 x3\n' >"$tmp/bad.ids"
    expect_error 2 "--prompt-ids $tmp/bad.ids: token 3 'x3...' is not a token id (expected decimal integers in 0..511" \
        --weights-dir "$tmp/ck" --backend cpu --prompt-ids "$tmp/bad.ids"
    printf '1 512\n' >"$tmp/big.ids"
    expect_error 2 "token 2 '512' is not a token id" --config tiny --backend cpu --prompt-ids "$tmp/big.ids"
    : >"$tmp/empty.ids"
    expect_error 2 "no token ids" --config tiny --backend cpu --prompt-ids "$tmp/empty.ids"
    expect_error 2 "--context 5 with --prompt-ids" --config tiny --backend cpu --prompt-ids "$tmp/p.ids" --context 5
    expect_error 2 "--out-ids" --config tiny --backend cpu --prompt-ids "$tmp/p.ids" --out-ids "$tmp/p.ids"
    expect_error 2 "--out-ids" --config tiny --backend cpu --prompt-ids "$tmp/p.ids" --out-ids "$tmp/a.ids"
    ;;
fp8)
    # FP8 blocks (DeepSeek-V3's form) dequantized at load: bit-identical to the same rounded
    # values stored as bf16, at TP=1, TP=2 and shards of --tp-shape 4 (blocks cut by the slices).
    ckpt f8 --config tiny --fp8
    ckpt f8d --config tiny --fp8-dequantized
    grep -q '"quant_method": "fp8"' "$tmp/f8/config.json" || fail "no fp8 quantization_config"
    engine 1 f8x1 --weights-dir "$tmp/f8"
    engine 1 f8dx1 --weights-dir "$tmp/f8d"
    identical f8x1 f8dx1
    engine 2 f8x2 --weights-dir "$tmp/f8" --tp-shape 4
    engine 2 f8dx2 --weights-dir "$tmp/f8d" --tp-shape 4
    identical f8x2 f8dx2
    grep -q "FP8 128x128-block tensors dequantized to bf16 at load" "$tmp/f8x1.out" &&
        grep -q "FP8 tensors dequantized to bf16" "$tmp/f8x1.out" || { cat "$tmp/f8x1.out"; fail "the run must say FP8 was dequantized"; }
    grep -v '"model.layers.1.self_attn.o_proj.weight_scale_inv"' "$tmp/f8/model.safetensors.index.json" >"$tmp/i.json" &&
        mv "$tmp/i.json" "$tmp/f8/model.safetensors.index.json"
    expect_error 1 "tensor 'model.layers.1.self_attn.o_proj.weight' is F8_E4M3 but 'model.layers.1.self_attn.o_proj.weight_scale_inv' is missing (expected F32 \[1, 1\]" \
        --weights-dir "$tmp/f8" --backend cpu
    ;;
*) fail "unknown test $name" ;;
esac
