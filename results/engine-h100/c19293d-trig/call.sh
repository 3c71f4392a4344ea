#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-trig.sh", ".carry/ttl-rmsnorm.cu",
# ".carry/tte-rmsnorm.cu", ".debs", "REVISION"] (the variant trees are made there by ci/overlay-tree.sh).
# Twenty-eighth session, for the next one: where the call sites' residual + RMSNorm kernel (src/rmsnorm,
# noop's fused op too) lets its dependent launch. This tree triggers before its PDL wait (20d0077);
# .carry/ttl (this tree, its rmsnorm.cu replaced) triggers after pass 1's loads, .carry/tte after
# its stores (near 20d0077's measured wait-then-trigger: the bracket). The question: does qkv_a's 15 MB of pre-wait weight loads, issued from the norm's start,
# queue the norm's own loads (site B's gap 6.5 us against site A's 2.8)? ci/engine-ab.sh, four
# alternated rounds, no tests; tokens compared; --check-steps of base and ttl (ci/engine-check.sh). PREPARED IN THE TWENTY-EIGHTH SESSION, NOT RUN (no machine
# started in five tries after 12:00; ~250 s of device time left). Needs ~500 s of the call.
. ci/device-call.sh 500
set -u
mkdir -p "$O/ab"
rm -rf build-gpu build-tl .carry/ttl .carry/tte
for t in ttl tte; do bash ci/overlay-tree.sh .carry/$t src/rmsnorm/rmsnorm.cu=.carry/$t-rmsnorm.cu || echo "tree $t: FAILED"; done
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for n in base ttl tte; do export ENGINE_ARGS_$n="--dump-tokens $O/ab/tokens-$n.txt --force"; done
AB_TESTS= timeout $(lim 400) bash ci/engine-ab.sh "$O/ab" 4 base=. ttl=.carry/ttl tte=.carry/tte >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^kernels diff|site_a|site_b|qkv_a|router| step " "$O"/ab/diff-*.txt
for n in ttl tte; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical" || echo "tokens $n: DIFFER"; done
# --check-steps of base and ttl, their last logits compared (the trigger moved later: the same bits expected)
mkdir -p "$O/d"
for t in base:. ttl:.carry/ttl; do
    ENGINE_CHECK_TIMEOUT=$(lim 45) bash ci/engine-check.sh "$O/d" "k3-${t%%:*}" "${t#*:}"
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-ttl
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
