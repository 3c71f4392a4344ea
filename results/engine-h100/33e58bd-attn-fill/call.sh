#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next11.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twentieth session (2026-12-05): the attention's row groups, --attn-fill 4 / 6 (CTAs an SM) against
# the default (3 an SM): at T = 3 (24 rows, 128 chunks) four groups of 6 (512 CTAs) and six of 4
# (768: two waves at three resident an SM) instead of three of 8; T = 1 keeps two of 4 (the rows'
# floor). One tree, three alternated rounds each (the device time left).
. ci/device-call.sh 300
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
for n in 4 6; do export ENGINE_ARGS_f$n="--attn-fill $n --dump-tokens $O/ab/tokens-f$n.txt --force"; done
DEBS=.debs timeout $(lim 290) bash ci/engine-ab.sh "$O/ab" 3 base=. f4=. f6=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart" "$O/ab/run.log"; echo "ab done $(el)"
for n in 4 6; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-f$n.txt" && echo "tokens f$n: identical to base"; done
