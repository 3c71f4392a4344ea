#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine --draft-dir` on the CPU reference under mpirun (mpi-host at every call
# site of the target and of the EAGLE-3 head), tiny target, seed 1, context 16, 10 steps,
# k = 2. Heads written by write_draft from the plain run's greedy chain: "right" proposes
# the target's greedy token everywhere (accepts every draft: 2 per cycle), "wrong" never
# (accepts none), "mixed" on half the draft ids (the acceptance greedy speculation must
# measure, computed by write_draft); each run's produced tokens must equal plain greedy
# decoding (spec_rows_check); "mixed" at TP=1, TP=2 and one rank standing in for two shards alike; a head of random weights
# (fc and every projection in play) keeps the tokens too. Malformed heads and --draft-dir
# with --accept-rate are refused (exit 2, the reason named); on the gpu backend it runs where
# a GPU is (engine_draft_gpu.sh), else the backend's own refusal. TAP.
# With WEIGHTS_WRITE (arb-weights-write): the target read from a checkpoint of the same seed
# (--weights-dir, two shards) with the right head (--draft-dir) still accepts every draft.
# usage: engine_draft.sh ARBENCH WRITE_DRAFT SPEC_ROWS_CHECK [WEIGHTS_WRITE]
set -u
arbench=$1 write=$2 check=$3 wwrite=${4:-}
. "$(dirname "$0")/../../common/tap.sh"
. "$(dirname "$0")/draft_runs.sh"
run() { # NP OUT EXTRA...: the engine on the tiny target
    np=$1 out=$2
    shift 2
    timeout 240 mpirun $mpirun_args -np "$np" "$arbench" engine --config tiny --backend cpu --context 16 --steps 10 \
        --spec-k 2 --out "$out" --quiet "$@" >"$out.log" 2>&1
}
if ! run 2 "$tmp/plain.csv" --dump-tokens "$tmp/chain"; then
    sed 's/^/# /' "$tmp/plain.csv.log"
    echo "Bail out! the plain run failed"
    exit 1
fi
tap OK "plain run: greedy chain $(cat "$tmp/chain")"
for kind in right wrong mixed; do
    lookup_head $kind || continue
    case $kind in
    right) [ "$x" = 2.000 ] && tap OK "the right head must accept every draft (2 per cycle)" || tap FAIL "right head: expected 2.000, got $x" ;;
    wrong) [ "$x" = 0.000 ] && tap OK "the wrong head must accept none" || tap FAIL "wrong head: expected 0.000, got $x" ;;
    mixed) awk -v x="$x" 'BEGIN { exit !(x > 0 && x < 2) }' && tap OK "the mixed head must accept some: $x" || tap FAIL "mixed head: $x" ;;
    esac
    if run 2 "$tmp/$kind.csv" --draft-dir "$tmp/$kind"; then
        checked "$tmp/$kind.csv" 2 "accepted=$x" "np 2, $kind head: measured $x per cycle, tokens = plain greedy"
    else
        sed 's/^/# /' "$tmp/$kind.csv.log"
        tap FAIL "np 2, $kind head: the run failed"
    fi
done
if run 1 "$tmp/mixed1.csv" --draft-dir "$tmp/mixed"; then
    checked "$tmp/mixed1.csv" 2 "accepted=$(awk '{ print $2 }' "$tmp/mixed.exp")" "np 1 (TP=1), mixed head: the same acceptance"
else
    sed 's/^/# /' "$tmp/mixed1.csv.log"
    tap FAIL "np 1, mixed head: the run failed"
fi
if run 1 "$tmp/mixed1s.csv" --draft-dir "$tmp/mixed" --tp-shape 2; then
    checked "$tmp/mixed1s.csv" 2 "accepted=$(awk '{ print $2 }' "$tmp/mixed.exp")" "np 1 standing in for --tp-shape 2, mixed head: the same acceptance"
else
    sed 's/^/# /' "$tmp/mixed1s.csv.log"
    tap FAIL "np 1 --tp-shape 2, mixed head: the run failed"
fi
if [ -n "$wwrite" ] && [ -d "$tmp/right" ]; then
    # the user's flow: the target from a checkpoint (the same seed: the same greedy chain) and the head
    if "$wwrite" "$tmp/ck" --config tiny --seed 1 >"$tmp/ck.log" 2>&1 &&
        timeout 240 mpirun $mpirun_args -np 2 "$arbench" engine --weights-dir "$tmp/ck" --backend cpu --context 16 --steps 10 \
            --spec-k 2 --draft-dir "$tmp/right" --out "$tmp/ckright.csv" --quiet >"$tmp/ckright.csv.log" 2>&1; then
        checked "$tmp/ckright.csv" 2 "accepted=2.000" "np 2, --weights-dir checkpoint + right head: every draft accepted, tokens = plain greedy"
    else
        sed 's/^/# /' "$tmp/ck.log" "$tmp/ckright.csv.log" | tail -20
        tap FAIL "np 2, --weights-dir checkpoint + right head: the run failed"
    fi
fi
mkdir -p "$tmp/random"
"$write" "$tmp/random" random 7 >/dev/null 2>&1
if run 2 "$tmp/random.csv" --draft-dir "$tmp/random"; then
    checked "$tmp/random.csv" 2 "" "np 2, random head: tokens = plain greedy"
else
    sed 's/^/# /' "$tmp/random.csv.log"
    tap FAIL "np 2, random head: the run failed"
fi
# the random head's own proposals (before the target decides) at TP=2 and TP=1: the sharded
# fc, q/k/v, o_proj, MLP and lm_head with the all-reduce give the same argmax as one rank
rm -f "$tmp/trace1" "$tmp/trace2"
ARBENCH_DRAFT_TRACE="$tmp/trace2" run 2 "$tmp/rt2.csv" --draft-dir "$tmp/random" --no-noop-replay
ARBENCH_DRAFT_TRACE="$tmp/trace1" run 1 "$tmp/rt1.csv" --draft-dir "$tmp/random" --no-noop-replay
if [ -s "$tmp/trace2" ] && cmp -s "$tmp/trace1" "$tmp/trace2"; then
    tap OK "random head: the same proposals at TP=1 and TP=2 ($(wc -l <"$tmp/trace2") cycles: $(head -2 "$tmp/trace2" | tr '\n' ';'))"
else
    diff "$tmp/trace1" "$tmp/trace2" | sed 's/^/# /' | head -20
    tap FAIL "random head: the same proposals at TP=1 and TP=2"
fi
for spoil in missing shape dtype d2t truncated hidden arch; do
    rm -rf "$tmp/bad" && mkdir -p "$tmp/bad"
    "$write" "$tmp/bad" random 7 $spoil >/dev/null 2>&1
    run 2 "$tmp/bad.csv" --draft-dir "$tmp/bad"
    rc=$?
    msg=$(grep -m1 'arbench engine:' "$tmp/bad.csv.log")
    if [ $rc -eq 2 ] && [ -n "$msg" ]; then tap OK "$spoil head refused: $msg"; else sed 's/^/# /' "$tmp/bad.csv.log"; tap FAIL "$spoil head refused (exit $rc)"; fi
done
timeout 60 mpirun $mpirun_args -np 1 "$arbench" engine --config tiny --draft-dir "$tmp/right" --context 16 --steps 2 --spec-k 2 --quiet >"$tmp/gpu.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then tap OK "the gpu backend runs --draft-dir (a GPU here: engine_draft_gpu.sh checks it)";
elif [ $rc -eq 2 ] && grep -q -- '--backend gpu: ' "$tmp/gpu.log"; then tap OK "no GPU engine or device here: --draft-dir on the gpu backend refused with the backend's reason: $(grep -m1 -- '--backend gpu' "$tmp/gpu.log")";
else sed 's/^/# /' "$tmp/gpu.log"; tap FAIL "--draft-dir on the gpu backend: exit $rc"; fi
timeout 60 mpirun $mpirun_args -np 1 "$arbench" engine --config tiny --backend cpu --draft-dir "$tmp/right" --accept-rate 0.5 --quiet >"$tmp/both.log" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- '--accept-rate with --draft-dir' "$tmp/both.log"; then tap OK "--draft-dir with --accept-rate refused"; else sed 's/^/# /' "$tmp/both.log"; tap FAIL "--draft-dir with --accept-rate refused (exit $rc)"; fi
echo "1..$n"
exit $bad
