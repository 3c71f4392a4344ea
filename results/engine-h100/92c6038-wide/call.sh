#!/bin/bash
# PREPARED IN THE FORTIETH SESSION (~400 s of a call). It replaces next-muv2.sh (af2 dropped: two
# groups of 12 at T = 3 is 7a9a7ff-attn-rows/'s r12, measured slower; muv dropped: measured twice,
# muv2 is the form to decide on) and adds the wide attention CTAs. Before it, on main:
#   mkdir -p .carry/wide; cp results/engine-h100/9389fe4-ctl/muv2.patch .carry/wide/;
#   cp results/engine-h100/9389fe4-ctl/next-wide.sh .carry/wide/call.sh; git rev-parse --short=12 HEAD > REVISION
#   git apply --check .carry/wide/muv2.patch; carry [".carry/wide", ".debs", "REVISION"]; bash .carry/wide/call.sh
# Main (with down's carveout, fc9fcae, and the wide kernel behind its option) is base, against:
#   muv2  muv2.patch (the fused merge + W_uv only in steps of T >= 2: decode keeps the two launches)
#         with --fuse qb_absorb,prep_qb,merge_uv: verify's gain without decode's loss? (muv, every T
#         fused: 9389fe4-ctl verify -0.52% / -0.46% apart, decode +0.32% apart / -0.10%)
#   wide  main's tree with --attn-wide-from 3: the T = 3 attention in 129 CTAs of 16 warps holding all
#         24 rows (each chunk staged once, not three times; each warp the work of an 8-warp CTA's
#         warp); decode unchanged by construction (T = 1's 8 rows keep the 8-warp grid), the bits the
#         same (tokens identical to base's, or the kernel is wrong). Verify's attend row (chain 15.7 us a
#         layer at T = 3 against 4.9 at T = 1) is where it should show.
# The muv2 tree's GPU tests run (AB_TESTS): main's kernels plus one line, so they are the landed
# carveout's and the wide kernel's first device run (engine gpu mla: the wide grid at T = 3 and 8
# bit-identical to the others).
# Read both measurements for each name: the A/B's graph medians and the kernels tables' `step` rows.
. ci/device-call.sh 470
set -u
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tmuv2
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tmuv2 --patch .carry/wide/muv2.patch || echo "tree tmuv2: FAILED"
for v in base muv2 wide; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export ENGINE_ARGS_muv2="$ENGINE_ARGS_muv2 --fuse qb_absorb,prep_qb,merge_uv"
export ENGINE_ARGS_wide="$ENGINE_ARGS_wide --attn-wide-from 3"
export AB_TESTS="muv2"
timeout $(lim 360) bash ci/engine-ab.sh "$O/ab" 4 base=. muv2=.carry/tmuv2 wide=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff|round)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| attend | combine | o_proj | step |rows compared" "$O"/ab/diff-*.txt
grep -o "attn_wide_from=[0-9]*" "$O"/ab/engine-wide-1.csv 2>/dev/null | sort -u | grep . || echo "wide: its rows name no attn_wide_from"
for v in muv2 wide; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
cmp results/engine-h100/9389fe4-ctl/ab/tokens-base.txt "$O/ab/tokens-base.txt" &&
    echo "tokens base: identical to 9389fe4's base (before the carveout)" || echo "tokens base: differ from 9389fe4's"
cp .carry/tmuv2/build-gpu/meson-logs/testlog.txt "$O/ab/testlog-muv2.txt" 2>/dev/null
grep -E "^(ok|not ok)" "$O/ab/testlog-muv2.txt" | head -40
for v in muv2 wide; do # the kernels tables' own step rows, graph column (engine-ab.sh's diffs: chain)
    python3 ci/kernels-diff.py --column graph_us "base=$(ls "$O"/ab/engine-base-*-kernels-*.csv | paste -sd,)" \
        "$v=$(ls "$O"/ab/engine-$v-*-kernels-*.csv | paste -sd,)" | grep -E "^#  *T| step "
done
echo "ab done $(el)"
if [ "$(lim 100)" -ge 80 ]; then # muv2 against the CPU reference with the option (its logits differ from base's by design)
    timeout $(lim 100) bash ci/engine-check.sh --trees "$O/check" base=. muv2=.carry/tmuv2 -- --fuse qb_absorb,prep_qb,merge_uv ||
        echo "check rc=$?"
else
    echo "check: no time left"
fi
echo "done $(el)"
