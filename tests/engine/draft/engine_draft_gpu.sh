#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine --backend gpu --draft-dir` (exit 77 without a GPU): the EAGLE-3 head on
# the GPU (engine/draft/draft_gpu.h), reading the GPU target's kept states on the device.
# One rank, nccl at the call sites (a one-rank all-reduce), tiny target, seed 1, context 16,
# 10 steps, k = 2, as engine_draft.sh. Heads written by write_draft from the GPU's own plain
# greedy chain: "right" must accept every draft (2 per cycle), "wrong" none, "mixed" what
# write_draft computed; every run's tokens must equal plain greedy decoding (spec_rows_check),
# in graph and eager modes. A head of random weights proposes on the GPU what the CPU head
# proposes on the CPU backend: the proposals before the target decides (ARBENCH_DRAFT_TRACE)
# compared entry by entry; the GPU head accumulates in fp32 where the CPU head uses float64,
# and the two targets' states differ by their own rounding, so a near tie of draft logits may
# break the other way: at least 90% of the entries must agree (the count is printed). TAP.
# With WEIGHTS_WRITE (arb-weights-write): the target read from a checkpoint of the same seed
# (--weights-dir) with the right head still accepts every draft, tokens = plain greedy.
# usage: engine_draft_gpu.sh ARBENCH WRITE_DRAFT SPEC_ROWS_CHECK [WEIGHTS_WRITE]
set -u
arbench=$1 write=$2 check=$3 wwrite=${4:-}
. "$(dirname "$0")/../../common/tap.sh"
. "$(dirname "$0")/draft_runs.sh"
run() { # BACKEND OUT EXTRA... (IMPL: the sites' implementation, nccl unless set)
    be=$1 out=$2
    shift 2
    timeout 240 mpirun $mpirun_args -np 1 "$arbench" engine --config tiny --backend "$be" --impl "${IMPL:-nccl}" --no-noop-replay \
        --context 16 --steps 10 --spec-k 2 --out "$out" --quiet "$@" >"$out.log" 2>&1
}
timeout 120 mpirun $mpirun_args -np 1 "$arbench" engine --config tiny --backend gpu --impl nccl --no-noop-replay \
    --context 4 --steps 1 --out "$tmp/probe.csv" --quiet >"$tmp/probe.csv.log" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--backend gpu: " "$tmp/probe.csv.log"; then
    echo "SKIP: $(grep -m1 -- "--backend gpu: " "$tmp/probe.csv.log")"
    exit 77
fi
[ $rc -eq 0 ] || { sed 's/^/# /' "$tmp/probe.csv.log"; echo "Bail out! the probe run exited $rc"; exit 1; }
if ! run gpu "$tmp/plain.csv" --dump-tokens "$tmp/chain"; then
    sed 's/^/# /' "$tmp/plain.csv.log"
    echo "Bail out! the plain gpu run failed"
    exit 1
fi
tap OK "plain gpu run: greedy chain $(cat "$tmp/chain")"
for kind in right wrong mixed; do
    lookup_head $kind || continue
    for mode in graph eager; do
        if run gpu "$tmp/$kind-$mode.csv" --draft-dir "$tmp/$kind" --modes $mode; then
            checked "$tmp/$kind-$mode.csv" 2 "accepted=$x" "gpu $mode, $kind head: measured $x per cycle, tokens = plain greedy"
        else
            sed 's/^/# /' "$tmp/$kind-$mode.csv.log"
            tap FAIL "gpu $mode, $kind head: the run failed"
        fi
    done
done
if [ -n "$wwrite" ] && [ -d "$tmp/right" ]; then
    if "$wwrite" "$tmp/ck" --config tiny --seed 1 >"$tmp/ck.log" 2>&1 &&
        timeout 240 mpirun $mpirun_args -np 1 "$arbench" engine --weights-dir "$tmp/ck" --backend gpu --impl nccl --no-noop-replay \
            --context 16 --steps 10 --spec-k 2 --draft-dir "$tmp/right" --modes graph --out "$tmp/ckright.csv" --quiet \
            >"$tmp/ckright.csv.log" 2>&1; then
        checked "$tmp/ckright.csv" 2 "accepted=2.000" "gpu graph, --weights-dir checkpoint + right head: every draft accepted, tokens = plain greedy"
    else
        sed 's/^/# /' "$tmp/ck.log" "$tmp/ckright.csv.log" | tail -20
        tap FAIL "gpu, --weights-dir checkpoint + right head: the run failed"
    fi
fi
mkdir -p "$tmp/random"
"$write" "$tmp/random" random 7 >/dev/null 2>&1
rm -f "$tmp/trace-gpu" "$tmp/trace-cpu"
ARBENCH_DRAFT_TRACE="$tmp/trace-gpu" run gpu "$tmp/rg.csv" --draft-dir "$tmp/random" --modes graph
rg=$?
ARBENCH_DRAFT_TRACE="$tmp/trace-cpu" IMPL=mpi-host run cpu "$tmp/rc.csv" --draft-dir "$tmp/random"
rc=$?
if [ $rg -eq 0 ] && [ $rc -eq 0 ] && [ -s "$tmp/trace-gpu" ]; then
    checked "$tmp/rg.csv" 2 "" "gpu, random head: tokens = plain greedy"
    # entries: every proposal of every cycle at the same position in both traces
    same=$(paste -d'|' "$tmp/trace-gpu" "$tmp/trace-cpu" | awk -F'|' '{ n = split($1, a, " "); m = split($2, b, " ");
        if (a[1] != b[1]) { bad++; next } for (i = 2; i <= n && i <= m; i++) { tot++; ok += a[i] == b[i] } }
        END { printf "%d %d %d\n", ok, tot, bad }')
    set -- $same
    if [ "$2" -gt 0 ] && [ "$3" -eq 0 ] && [ $(($1 * 10)) -ge $(($2 * 9)) ]; then
        tap OK "random head: gpu proposals = cpu proposals in $1 of $2 entries ($(wc -l <"$tmp/trace-gpu") cycles; first: $(head -1 "$tmp/trace-gpu") / $(head -1 "$tmp/trace-cpu"))"
    else
        diff "$tmp/trace-gpu" "$tmp/trace-cpu" | sed 's/^/# /' | head -20
        tap FAIL "random head: gpu proposals = cpu proposals in $1 of $2 entries, $3 cycles at other positions"
    fi
else
    sed 's/^/# /' "$tmp/rg.csv.log" "$tmp/rc.csv.log" | tail -30
    tap FAIL "random head on gpu and cpu: a run failed ($rg, $rc)"
fi
echo "1..$n"
exit $bad
