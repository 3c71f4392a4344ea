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
# from NAME_A", exit 1.
#   ci/engine-check.sh --trees OUT BASE=TREE NAME=TREE [NAME=TREE ...] [-- ENGINE OPTIONS ...]
# the block a call script repeated for an A/B's trees: the check of each (as above, the options
# given to every one), then each NAME's logits against BASE's (--cmp), and the logits files removed
# (a call's output stays small). Exit 0 when every check exited 0 and every NAME's logits equal
# BASE's; else 1 (3 where a check could not run). Bad arguments and missing files exit 2 with a
# message naming them.
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
check_name() {
    case "$1" in "" | */* | -* | *=*) die "NAME '$1': expected a plain name (it names OUT/NAME.csv)" ;; esac
}
check_tree() {
    [ -x "$1/build-gpu/harness/arbench" ] || die "TREE '$1': no build-gpu/harness/arbench (build it first)"
}
t=${ENGINE_CHECK_TIMEOUT:-90}
case "$t" in '' | *[!0-9]*) die "ENGINE_CHECK_TIMEOUT '$t': expected seconds" ;; esac
# run_check OUT NAME TREE [ENGINE OPTIONS ...]: one check, its status and lines printed; returns its status
run_check() {
    local o=$1 n=$2 tr=$3
    shift 3
    (cd "$tr" && timeout "$t" mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine --config kimi-k2 \
        --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl \
        --modes graph --no-noop-replay --out "$o/$n.csv" --force --dump-logits "$o/logits-$n.bin" "$@") \
        >"$o/$n.log" 2>&1
    local rc=$?
    echo "engine check $n: rc=$rc"
    grep -E "check vs|selected experts|graph  (decode|verify)" "$o/$n.log" | tail -4
    return $rc
}
make_out() {
    mkdir -p "$1" || die "cannot make OUT '$1'"
    (cd "$1" && pwd) # absolute: the engine runs from inside the tree
}
if [ "${1:-}" = --trees ]; then
    shift
    [ $# -ge 3 ] || die "usage: ci/engine-check.sh --trees OUT BASE=TREE NAME=TREE [NAME=TREE ...] [-- ENGINE OPTIONS ...]"
    out=$1
    shift
    names=() trees=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case "$1" in *=?*) ;; *) die "'$1': expected NAME=TREE" ;; esac
        check_name "${1%%=*}"
        for n in "${names[@]}"; do [ "$n" != "${1%%=*}" ] || die "NAME '$n' given twice"; done
        check_tree "${1#*=}"
        names+=("${1%%=*}") trees+=("${1#*=}")
        shift
    done
    [ "${#names[@]}" -ge 2 ] || die "--trees: expected BASE=TREE and at least one NAME=TREE before any --"
    [ $# -eq 0 ] || shift # the --
    out=$(make_out "$out") || exit 2
    worst=0
    for i in "${!names[@]}"; do
        run_check "$out" "${names[$i]}" "${trees[$i]}" "$@" || worst=3
    done
    for i in "${!names[@]}"; do
        [ "$i" -gt 0 ] || continue
        if [ ! -f "$out/logits-${names[$i]}.bin" ] || [ ! -f "$out/logits-${names[0]}.bin" ]; then
            echo "logits ${names[$i]}: not compared (a check wrote none)"
            worst=3
        elif cmp -s "$out/logits-${names[0]}.bin" "$out/logits-${names[$i]}.bin"; then
            echo "logits ${names[$i]} = ${names[0]}"
        else
            echo "logits ${names[$i]}: DIFFER from ${names[0]}"
            [ $worst -ne 0 ] || worst=1
        fi
    done
    rm -f "$out"/logits-*.bin
    exit $worst
fi
[ $# -ge 3 ] || die "usage: ci/engine-check.sh OUT NAME TREE [ENGINE OPTIONS ...] (or --cmp OUT NAME_A NAME_B, or --trees OUT BASE=TREE NAME=TREE ...)"
out=$1 name=$2 tree=$3
shift 3
check_name "$name"
check_tree "$tree"
out=$(make_out "$out") || exit 2
run_check "$out" "$name" "$tree" "$@"
