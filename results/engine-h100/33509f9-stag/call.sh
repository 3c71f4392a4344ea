#!/bin/bash
# Thirty-sixth session, fifth call, on the last 289 s of device time (status said a start was
# possible): the prepared next-st.sh cut to its first question. Before the call, on main:
# .carry/s2/{stag.patch,call.sh}; REVISION; carry [".carry/s2", ".debs", "REVISION"]; ~200 s.
# stag: odd warps take a first round of UNRQ / 2 groups (the same bits), so that their adds fall
# in the even warps' waits; four alternated rounds against main; no GPU tests (tokens compared).
. ci/device-call.sh 235
set -u
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tstag
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tstag --patch .carry/s2/stag.patch || echo "tree tstag: FAILED"
for v in base stag; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export AB_TESTS=""
timeout $(lim 225) bash ci/engine-ab.sh "$O/ab" 4 base=. stag=.carry/tstag >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|round)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| moe_| step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-stag.txt" && echo "tokens stag: identical" || echo "tokens stag: differ"
echo "done $(el)"
