#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next10.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twentieth session (2026-12-05): the attention's row groups, --attn-min-rows 8 / 12 / 16 against
# the default (4): T = 1 one group of 8 rows (128 CTAs at context 4096) instead of two of 4; T = 3
# three of 8 (8), two of 12 (12), one of 24 (16). One tree, four alternated rounds each.
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
for n in 8 12 16; do export ENGINE_ARGS_r$n="--attn-min-rows $n --dump-tokens $O/ab/tokens-r$n.txt --force"; done
DEBS=.debs timeout $(lim 480) bash ci/engine-ab.sh "$O/ab" 4 base=. r8=. r12=. r16=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart" "$O/ab/run.log"; echo "ab done $(el)"
for n in 8 12 16; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-r$n.txt" && echo "tokens r$n: identical to base"; done
