#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next16.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twenty-first session (2026-12-05), fourth call: next15 measured --l2-side router --l2-side-upto 1
# at decode -0.97% (4 rounds, ranges apart); a second call, five alternated rounds, to confirm or not,
# and the router's pull in every step (r8: at verify too).
. ci/device-call.sh 480
set -u
mkdir -p "$O/ab"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_r8="--l2-side router --dump-tokens $O/ab/tokens-r8.txt --force"
export ENGINE_ARGS_r1="--l2-side router --l2-side-upto 1 --dump-tokens $O/ab/tokens-r1.txt --force"
DEBS=.debs timeout $(lim 440) bash ci/engine-ab.sh "$O/ab" 5 base=. r1=. r8=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)|shown|apart" "$O/ab/run.log" | grep -v "^    [13] [a-z]" ; echo "ab done $(el)"
for n in r1 r8; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to base"; done
