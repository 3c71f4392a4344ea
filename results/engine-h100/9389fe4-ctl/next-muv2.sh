#!/bin/bash
# PREPARED IN THE THIRTY-NINTH SESSION, NOT RUN (~470 s of a call). It also does next-land.sh's work
# (the landed carveout's first device run: the muv2 tree is main plus one line, and its engine GPU
# tests run), so run this one instead of that where the time allows. Before it, on main:
#   mkdir -p .carry/muv2; cp results/engine-h100/9389fe4-ctl/muv2.patch .carry/muv2/;
#   cp results/engine-h100/9389fe4-ctl/next-muv2.sh .carry/muv2/call.sh; git rev-parse --short=12 HEAD > REVISION
#   git apply --check .carry/muv2/muv2.patch; carry [".carry/muv2", ".debs", "REVISION"]; bash .carry/muv2/call.sh
# Main (with down's carveout, fc9fcae) is base, against:
#   muv   main's tree with --fuse qb_absorb,prep_qb,merge_uv (9389fe4-ctl: verify -0.52% / -0.46%
#         apart, decode +0.32% apart / -0.10%)
#   muv2  muv2.patch (the fused merge + W_uv only in steps of T >= 2: decode keeps the two launches)
#         with the same option: verify's gain without decode's loss? (and on top of d14, unmeasured)
#   af2   main's tree with --attn-fill 2 (the attention's grid at 2 CTAs an SM: at T = 3 two row groups
#         of 12 instead of three of 8, each chunk staged twice instead of three times; T = 1 the same
#         grid): is verify's largest excess, the T = 3 attend (notes, thirty-ninth session), its grid?
# Read both measurements for each name: the A/B's graph medians and the kernels tables' `step` rows.
. ci/device-call.sh 520
set -u
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tmuv2
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tmuv2 --patch .carry/muv2/muv2.patch || echo "tree tmuv2: FAILED"
for v in base muv muv2 af2; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export ENGINE_ARGS_muv="$ENGINE_ARGS_muv --fuse qb_absorb,prep_qb,merge_uv"
export ENGINE_ARGS_muv2="$ENGINE_ARGS_muv2 --fuse qb_absorb,prep_qb,merge_uv"
export ENGINE_ARGS_af2="$ENGINE_ARGS_af2 --attn-fill 2"
export AB_TESTS="muv2"
timeout $(lim 410) bash ci/engine-ab.sh "$O/ab" 4 base=. muv=. muv2=.carry/tmuv2 af2=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff|round)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| attend | combine | o_proj | step |rows compared" "$O"/ab/diff-*.txt
for v in muv muv2 af2; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
cmp results/engine-h100/9389fe4-ctl/ab/tokens-base.txt "$O/ab/tokens-base.txt" &&
    echo "tokens base: identical to 9389fe4's base (before the carveout)" || echo "tokens base: differ from 9389fe4's"
cp .carry/tmuv2/build-gpu/meson-logs/testlog.txt "$O/ab/testlog-muv2.txt" 2>/dev/null
grep -E "^(ok|not ok)" "$O/ab/testlog-muv2.txt" | head -40
for v in muv muv2 af2; do # the kernels tables' own step rows, graph column (engine-ab.sh's diffs: chain)
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
