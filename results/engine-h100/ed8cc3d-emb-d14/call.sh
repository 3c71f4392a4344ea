#!/bin/bash
# Thirty-eighth session's call (one H100 or H200; from the thirty-seventh's prepared next-down.sh,
# cut to fit the device time left after refused starts), main (base) against:
#   d14   down alone at a 14% carveout preference (32 KiB asked), every T (d14.patch): does m32's
#         verify -0.77% stay without its T = 1 gate/up loss?
#   emb   the embedding's row and norm weights held in registers, one round trip each
#         (emb.patch: embed.cu's HELD form, the same bits by construction; its test case
#         `engine gpu kernels` embed checks the bits against a host emulation of the fixed order)
# g100 (gate/up at 43%, every T), muv (--fuse qb_absorb,prep_qb,merge_uv) and the ncu pass of d14
# were dropped for time (seven refused starts cost 900 s of the session's device time first). The
# logits check runs only if the A/B leaves it 90 s.
# Then emb's logits against base's (ci/engine-check.sh --trees: --check-steps 2, byte for byte).
. ci/device-call.sh 400
set -u
mkdir -p "$O/ab"
rm -rf build-gpu .carry/td14 .carry/temb
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in d14 emb; do bash ci/overlay-tree.sh .carry/t$v --patch .carry/dn/$v.patch || echo "tree t$v: FAILED"; done
for v in base d14 emb; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export AB_TESTS="emb"
timeout $(lim 340) bash ci/engine-ab.sh "$O/ab" 4 base=. d14=.carry/td14 emb=.carry/temb \
    >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff|round|ncu)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| embed | qkv_a | q_b | attend | combine | o_proj | moe_| lm_head | step |rows compared" "$O"/ab/diff-*.txt
for v in d14 emb; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
cp .carry/temb/build-gpu/meson-logs/testlog.txt "$O/ab/testlog-emb.txt" 2>/dev/null
grep -E "^(ok|not ok)|# embed" "$O/ab/testlog-emb.txt" | head -40
echo "ab done $(el)"
if [ "$(lim 100)" -ge 90 ]; then
    timeout $(lim 100) bash ci/engine-check.sh --trees "$O/check" base=. emb=.carry/temb || echo "check rc=$?"
else
    echo "check: no time left"
fi
echo "done $(el)"
