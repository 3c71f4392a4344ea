#!/bin/bash
# SPDX-License-Identifier: MIT
# The engine's end-to-end check in a device call (one GPU), the block each call script repeated:
#   ci/engine-check.sh OUT NAME TREE [ENGINE OPTIONS ...]
# runs TREE's build-gpu/harness/arbench engine on Kimi-K2's shapes at 3 layers and 32 experts with
# `--check-steps 2` and the nccl sites (noop is refused there), graph mode, writing OUT/NAME.csv,
# OUT/NAME.log and the last step's logits OUT/logits-NAME.bin; prints its exit status and the
# check's lines (the reference's agreement: expect max |logit diff| 0.01943 on main since the
# twenty-fifth session). ENGINE_CHECK_TIMEOUT seconds (default 90; the CPU reference alone took
# 32-38 s on an H100 machine, results/engine-h100/c19293d-trig) bound the run.
#   ci/engine-check.sh --cmp OUT NAME_A NAME_B
# compares two runs' logits byte for byte: "logits NAME_B = NAME_A", exit 0; "logits NAME_B: DIFFER
# from NAME_A", exit 1. Bad arguments and missing files exit 2 with a message naming them.
set -u
die() { echo "ci/engine-check.sh: $*" >&2; exit 2; }
if [ "${1:-}" = --cmp ]; then
    [ $# -eq 4 ] || die "usage: ci/engine-check.sh --cmp OUT NAME_A NAME_B"
    a=$2/logits-$3.bin b=$2/logits-$4.bin
    [ -f "$a" ] || die "no logits '$a' (run ci/engine-check.sh $2 $3 TREE first)"
    [ -f "$b" ] || die "no logits '$b' (run ci/engine-check.sh $2 $4 TREE first)"
    if cmp -s "$a" "$b"; then echo "logits $4 = $3"; exit 0; fi
    echo "logits $4: DIFFER from $3"
    exit 1
fi
[ $# -ge 3 ] || die "usage: ci/engine-check.sh OUT NAME TREE [ENGINE OPTIONS ...] (or --cmp OUT NAME_A NAME_B)"
out=$1 name=$2 tree=$3
shift 3
case "$name" in "" | */* | -*) die "NAME '$name': expected a plain name (it names OUT/NAME.csv)" ;; esac
[ -x "$tree/build-gpu/harness/arbench" ] || die "TREE '$tree': no build-gpu/harness/arbench (build it first)"
mkdir -p "$out" || die "cannot make OUT '$out'"
out=$(cd "$out" && pwd) # absolute: the engine runs from inside the tree
t=${ENGINE_CHECK_TIMEOUT:-90}
case "$t" in '' | *[!0-9]*) die "ENGINE_CHECK_TIMEOUT '$t': expected seconds" ;; esac
(cd "$tree" && timeout "$t" mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine --config kimi-k2 \
    --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl \
    --modes graph --no-noop-replay --out "$out/$name.csv" --force --dump-logits "$out/logits-$name.bin" "$@") \
    >"$out/$name.log" 2>&1
rc=$?
echo "engine check $name: rc=$rc"
grep -E "check vs|selected experts|graph  (decode|verify)" "$out/$name.log" | tail -4
exit $rc
