#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next5.sh", ".carry/tcv", ".debs", "REVISION"].
# Twenty-sixth session, fifth call: every engine kernel launched with the same shared-memory carveout
# (cudaSharedmemCarveoutMaxShared, set once per kernel in arbk::launch: .carry/tcv = this tree with
# that patch) against this tree, three alternated rounds (ci/engine-ab.sh, no tests); the tokens compared.
. ci/device-call.sh 225
set -u
mkdir -p "$O/ab"
rm -rf build-gpu build-tl .carry/tcv/build-gpu
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for n in new cv; do export ENGINE_ARGS_$n="--dump-tokens $O/ab/tokens-$n.txt --force"; done
AB_TESTS= timeout $(lim 215) bash ci/engine-ab.sh "$O/ab" 3 new=. cv=.carry/tcv >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE " shown| step " "$O"/ab/diff-*.txt | head -30
cmp "$O/ab/tokens-new.txt" "$O/ab/tokens-cv.txt" && echo "tokens cv: identical to new" || echo "tokens cv: DIFFER"
echo "done $(el)"
