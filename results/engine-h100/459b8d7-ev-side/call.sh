#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; .carry/base = `git archive 2443bb8`
# (results/ left out); carry [".carry", ".debs", "REVISION"], command "bash .carry/next14.sh".
# Twenty-first session (2026-12-05), second call: the attention's E V four columns a warp at a
# time (459b8d7, the same operations per column) against 2443bb8; and on the new tree --l2-side
# in smaller sets than next13's (o_proj alone, 14.7 MB; router and shared, 12.8 MB: next13's 31 MB
# lost 3.1% at verify and showed nothing at decode); four alternated rounds; the new tree's
# engine GPU tests (engine-ab.sh runs them).
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_ev="--dump-tokens $O/ab/tokens-ev.txt --force"
export ENGINE_ARGS_so="--l2-side o_proj --dump-tokens $O/ab/tokens-so.txt --force"
export ENGINE_ARGS_srs="--l2-side router,shared --dump-tokens $O/ab/tokens-srs.txt --force"
DEBS=.debs timeout $(lim 500) bash ci/engine-ab.sh "$O/ab" 4 base=.carry/base ev=. so=. srs=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff)|^ *[0-9]+/[0-9]+ |graph  (decode|verify)|shown|apart" "$O/ab/run.log"; echo "ab done $(el)"
for n in ev so srs; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to base"; done
cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^not ok" "$O/testlog.txt" | head
