#!/bin/bash
# PREPARED IN THE FORTIETH SESSION, NOT RUN (~300 s of a call; ask for `nvidia-h200`: issue 22's targets
# are an H200's, and its last H200 figures are the thirty-fourth session's). Before it, on main:
#   mkdir -p .carry/h2; cp results/engine-h100/92c6038-wide/next-h200.sh .carry/h2/call.sh
#   git rev-parse --short=12 HEAD > REVISION; carry [".carry/h2", ".debs", "REVISION"]; bash .carry/h2/call.sh
# 1. main's step on the card, twice (base=. again=.: main against itself, two rotated rounds; the kernels
#    tables with them): the issue's own figures where an H200 comes.
# 2. ci/engine-timeline.sh default= wide="--attn-wide-from 3": every CTA's start, wait return and end at
#    T = 3, to see where the wide CTAs lose (92c6038-wide: verify +2.04% on an H100): their start after
#    q_b's CTAs leave, their run after the wait, or both (the by-SM table and the CTAs' quantiles).
. ci/device-call.sh 330
set -u
mkdir -p "$O/ab" "$O/tl"
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in base again; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
timeout $(lim 170) bash ci/engine-ab.sh "$O/ab" 2 base=. again=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|round)|graph  (decode|verify)" "$O/ab/run.log"
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-again.txt" && echo "tokens again: identical"
echo "ab done $(el)"
timeout $(lim 150) bash ci/engine-timeline.sh "$O/tl" default= wide="--attn-wide-from 3" >"$O/tl/run.log" 2>&1
echo "tl rc=$? $(el)"
for n in default wide; do
    grep -E "^# /|^#   (kind|qb_absorb|attend|merge|uv) " "$O/tl/$n-summary.txt" 2>/dev/null
    grep -E "^#   attend " -A4 "$O/tl/$n-summary.txt" 2>/dev/null | grep -E "start|wait|end|run"
    grep -A4 "by SM attend" "$O/tl/$n-by-sm.txt" 2>/dev/null | head -12
done
echo "done $(el)"
