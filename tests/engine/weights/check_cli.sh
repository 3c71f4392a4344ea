#!/bin/bash
# SPDX-License-Identifier: MIT
# arb-weights-check on written tiny checkpoints: bf16 at tp-shape 2, INT4 at 4 and INT4 in
# Kimi-K2.5's layout accepted with one line per rank, a shape disagreeing with config.json and a name the index places
# in the wrong shard refused (exit 1) naming file and tensor, bad usage exit 2.
# Usage: check_cli.sh WRITE_TINY ARB_WEIGHTS_CHECK
set -u
write=$1 check=$2
dir=$(mktemp -d /tmp/arb-wcheck-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
run() { # NAME FORMAT SPOIL ARGS...: writes the checkpoint, runs the check; sets rc and out
    local d="$dir/$1" fmt=$2 spoil=$3; shift 3
    mkdir -p "$d" && "$write" "$d" "$fmt" $spoil || { rc=99; out="write_tiny failed"; return; }
    out=$("$check" "$d" "$@" 2>&1); rc=$?
}
run bf16 bf16 "" --tp-shape 2
[ $rc = 0 ] && [ "$(grep -c '^rank [01] of 2: [0-9]* tensors, [0-9]* bytes' <<<"$out")" = 2 ] && grep -q 'routed experts bf16' <<<"$out"
ok $? "bf16, two shards, tp-shape 2: accepted, one line per rank"
[ $rc = 0 ] || sed 's/^/# /' <<<"$out"
run int4 int4 "" --tp-shape 4
[ $rc = 0 ] && [ "$(grep -c '^rank [0-3] of 4:' <<<"$out")" = 4 ] && grep -q 'INT4 (compressed-tensors)' <<<"$out"
ok $? "int4, tp-shape 4: accepted, one line per rank"
[ $rc = 0 ] || sed 's/^/# /' <<<"$out"
run k25 int4-k25 "" --tp-shape 2
[ $rc = 0 ] && grep -q 'config under text_config); names under language_model\.' <<<"$out" && [ "$(grep -c '^rank [01] of 2:' <<<"$out")" = 2 ]
ok $? "Kimi-K2.5 layout (language_model. names, text_config): accepted"
[ $rc = 0 ] || sed 's/^/# /' <<<"$out"
run layers bf16 "" --layers 2
[ $rc = 0 ] && grep -q '2 layers' <<<"$out"
ok $? "--layers 2 checks the first two layers only"
run shape bf16 shape
[ $rc = 1 ] && grep -q "model-00001-of-00002.safetensors: tensor 'model.layers.1.self_attn.kv_a_layernorm.weight' has shape \[33\] but .*config.json gives \[32\]" <<<"$out"
ok $? "a shape disagreeing with config.json: refused naming file and tensor"
[ $rc = 1 ] || sed 's/^/# /' <<<"$out"
run phantom int4 phantom
[ $rc = 1 ] && grep -q "tensor 'model.layers.0.mlp.phantom.weight' is mapped to .*, which has no such tensor" <<<"$out"
ok $? "a name in the index missing from its shard: refused"
"$check" >/dev/null 2>&1; rc=$?
[ $rc = 2 ]; ok $? "no folder: usage, exit 2"
"$check" "$dir/bf16" --tp-shape 0 >/dev/null 2>&1; rc=$?
[ $rc = 2 ]; ok $? "--tp-shape 0: exit 2"
echo "1..$n"
exit $failed
