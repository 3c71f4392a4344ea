#!/bin/sh
# SPDX-License-Identifier: MIT
# Ranks launched differently (mpirun MPMD, one rank each side): `arbench engine` and
# `arbench sweep` must refuse with exit 2 and one message naming the first differing
# argument or input file, and run when the ranks agree (also when a config is given by two
# paths to the same bytes). Ends with a seeded fuzz of option subsets per rank.
# usage: engine_agree.sh ARBENCH
set -u
arbench=$1
tmp=$(mktemp -d /tmp/arbench-agree-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpirun_args="--oversubscribe"
[ "$(id -u)" = 0 ] && mpirun_args="$mpirun_args --allow-run-as-root"
export OMPI_MCA_btl="^openib" OMPI_MCA_btl_vader_single_copy_mechanism=none
fail() { echo "FAIL: $*"; exit 1; }
common="--backend cpu --context 8 --steps 1 --quiet"
n=0

# pair CMD "RANK0 ARGS" "RANK1 ARGS": one rank each, 60 s at most (a hang is a failure)
pair() {
    cmd=$1 a0=$2 a1=$3
    n=$((n + 1))
    out="$tmp/r$n.csv"
    # shellcheck disable=SC2086
    timeout 60 mpirun $mpirun_args -np 1 "$arbench" $cmd $a0 --out "$out" : \
        -np 1 "$arbench" $cmd $a1 --out "$out" >"$tmp/out" 2>&1
    rc=$?
}

# differ CMD KEY "RANK0 ARGS" "RANK1 ARGS": exit 2, the message names KEY on one line
differ() {
    pair "$1" "$3" "$4"
    [ $rc -eq 2 ] || { cat "$tmp/out"; fail "$1 [$3] vs [$4] exited $rc, expected 2"; }
    grep -q -- "ranks disagree on $2: rank 0 has" "$tmp/out" || { cat "$tmp/out"; fail "[$3] vs [$4]: no message naming $2"; }
    [ "$(grep -c 'ranks disagree' "$tmp/out")" = 1 ] || { cat "$tmp/out"; fail "[$3] vs [$4]: not one message"; }
    echo "ok: [$3] vs [$4] -> exit 2: $(grep -m1 'ranks disagree' "$tmp/out")"
}

# agree CMD "RANK0 ARGS" "RANK1 ARGS": runs to the end, exit 0
agree() {
    pair "$1" "$2" "$3"
    [ $rc -eq 0 ] || { cat "$tmp/out"; fail "$1 [$2] vs [$3] exited $rc, expected 0"; }
    echo "ok: [$2] vs [$3] -> agree, exit 0"
}

e="engine --config tiny $common"
# one option of each class the engine used to get wrong without a word
differ "$e" --layers "--layers 2" ""                 # hung
differ "$e" --impl "--impl mpi-host" "--impl noop"  # hung
differ "$e" --dry-run "" "--dry-run"                # hung
differ "$e" --context "" "--context 12"             # MPI_ERR_TRUNCATE
differ "$e" --prefill-chunk "--prefill-chunk 2" "--prefill-chunk=3"
differ "$e" --weights "" "--weights int4"           # exit 0 with wrong tokens
differ "$e" --seed "--seed 1" "--seed 2"
differ "$e" --topk "--topk=2" "--topk 3"
# the same arguments written differently agree
agree "$e" "--steps 2 --seed 5" "--seed=5 --steps=2"

# a config by content: two paths to the same bytes agree, one name with other bytes does not
mkdir -p "$tmp/n0" "$tmp/n1" "$tmp/n2"
src=$(dirname "$0")/../../../engine/configs/tiny.json
cp "$src" "$tmp/n0/tiny.json"
cp "$src" "$tmp/n1/tiny.json"
sed 's/"rope_theta": 10000.0/"rope_theta": 20000.0/' "$src" >"$tmp/n2/tiny.json"
cmp -s "$src" "$tmp/n2/tiny.json" && fail "the test's altered config is not altered"
agree "engine $common" "--config tiny" "--config $tmp/n1/tiny.json"
differ "engine $common" --config "--config $tmp/n0/tiny.json" "--config $tmp/n2/tiny.json"

# a profile by content too
printf 'schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,fusion\n1,host,2,0,bf16,allreduce,eager,1,100000,mpi-host,algo=allreduce,\n' >"$tmp/p0.csv"
sed 's/algo=allreduce/algo=reduce-bcast/' "$tmp/p0.csv" >"$tmp/p1.csv"
differ "engine --config tiny $common" --profile "--profile $tmp/p0.csv" "--profile $tmp/p1.csv"

# sweep: arguments only (it reads no input file)
s="sweep --host --impl mpi-host --sizes 4K --iters 2 --warmup 1 --modes eager --quiet"
differ "$s" --iters "--iters 2" "--iters 3"
differ "$s" --no-check "" "--no-check"
agree "$s" "" ""

# fuzz: each rank takes a seeded random subset of these options; identical subsets must
# run (--dry-run keeps it short), different ones must be refused naming an option
set -- "--weights int4" "--seed 3" "--layers 2" "--context 12" "--steps 2" "--spec-k 1" "--prefill-chunk 4" \
    "--no-noop-replay" "--topk 2" "--vocab 256"
nopts=$#
seed=20261201
pick() { # a subset of the options from the LCG state
    sub=""
    i=1
    for o in "$@"; do
        seed=$(((seed * 1103515245 + 12345) % 2147483648))
        [ $(((seed >> 16) % 3)) = 0 ] && sub="$sub $o"
        i=$((i + 1))
    done
}
same=0 diff=0
for case in 1 2 3 4 5 6 7 8 9 10; do
    pick "$@"
    s0=$sub
    if [ $((case % 3)) = 0 ]; then s1=$s0; else pick "$@"; s1=$sub; fi
    pair "engine --config tiny $common --dry-run" "$s0" "$s1"
    if [ "$s0" = "$s1" ]; then
        [ $rc -eq 0 ] || { cat "$tmp/out"; fail "fuzz $case: identical [$s0] exited $rc"; }
        same=$((same + 1))
    else
        [ $rc -eq 2 ] && grep -q "ranks disagree on --" "$tmp/out" ||
            { cat "$tmp/out"; fail "fuzz $case: [$s0] vs [$s1] exited $rc without the message"; }
        diff=$((diff + 1))
    fi
done
[ $same -gt 0 ] && [ $diff -gt 0 ] || fail "fuzz: $same agreeing and $diff differing cases of 10 ($nopts options)"
echo "ok: fuzz: $same agreeing and $diff differing cases"
echo "PASS"
