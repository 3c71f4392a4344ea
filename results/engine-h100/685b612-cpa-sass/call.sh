#!/bin/bash
# PREPARED IN THE FORTY-FIRST SESSION, NOT RUN. Before it, on main:
#   mkdir -p .carry/cpa; cp results/engine-h100/685b612-cpa-sass/{cpa.patch,call.sh,call2.sh} .carry/cpa/
#   git apply --check .carry/cpa/cpa.patch; git rev-parse --short=12 HEAD > REVISION
#   carry [".carry/cpa", ".debs", "REVISION"]; bash .carry/cpa/call.sh [FORM]
# FORM sizes the call to the device time left (the call's own deadline; start a machine with ~100 s more):
#   full   base cpa cpa4 cpa1, four rounds, then the check   ~580 s (the default)
#   mid    base cpa cpa4, four rounds                         ~470 s
#   small  base cpa, four rounds                              ~400 s
#   tiny   base cpa, three rounds                             ~320 s
# Main is base, against:
#   cpa   cpa.patch: the attention's staging (stage_copies) as cp.async copies, a copy at a time, no
#         vector held in registers nor located twice, the copies issued before the PDL wait still in
#         flight across it (one wait_all + barrier for both sides): the same bits (tokens and logits
#         identical, or the patch is wrong); attend 80 -> 64 registers on sm_90 (4 bytes spilled outside
#         the loops; sm_120 16)
#   cpa4  cpa's tree with --attn-fill 4: four CTAs an SM (the registers now allow it; MINB 4 kernel):
#         T = 3 four groups of 6 (33e58bd-attn-fill: +2.65% with the old staging, two waves by registers)
#   cpa1  cpa's tree with --attn-min-rows 8: T = 1 one group of 8 rows (129 CTAs, each chunk staged once
#         instead of twice); T = 3 unchanged (three groups of 8)
# The cpa tree's engine GPU tests run (AB_TESTS): engine gpu mla (the grids bit for bit, the double
# reference) and engine gpu persist (the persistent forms use the same tile). Read both measurements
# for each name: the A/B's graph medians and the kernels tables' `step` rows.
form=${1:-full}
case $form in
full) deadline=580 ab=460 rounds=4 names="cpa cpa4 cpa1" ;;
mid) deadline=470 ab=390 rounds=4 names="cpa cpa4" ;;
small) deadline=400 ab=330 rounds=4 names="cpa" ;;
tiny) deadline=320 ab=270 rounds=3 names="cpa" ;;
*) echo "call.sh: FORM '$form': expected full, mid, small or tiny" >&2; exit 2 ;;
esac
. ci/device-call.sh $deadline
set -u
echo "form $form: base $names, $rounds rounds"
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tcpa
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tcpa --patch .carry/cpa/cpa.patch || echo "tree tcpa: FAILED"
for v in base $names; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export ENGINE_ARGS_cpa4="${ENGINE_ARGS_cpa4:-} --attn-fill 4"
export ENGINE_ARGS_cpa1="${ENGINE_ARGS_cpa1:-} --attn-min-rows 8"
export AB_TESTS="cpa"
trees=()
for v in $names; do trees+=("$v=.carry/tcpa"); done
timeout $(lim $ab) bash ci/engine-ab.sh "$O/ab" $rounds base=. "${trees[@]}" >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff|round)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| attend | combine | q_b | step |rows compared" "$O"/ab/diff-*.txt
for v in $names; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
cp .carry/tcpa/build-gpu/meson-logs/testlog.txt "$O/ab/testlog-cpa.txt" 2>/dev/null
grep -E "^(ok|not ok)" "$O/ab/testlog-cpa.txt" | head -40
for v in $names; do # the kernels tables' own step rows, graph column (engine-ab.sh's diffs: chain)
    python3 ci/kernels-diff.py --column graph_us "base=$(ls "$O"/ab/engine-base-*-kernels-*.csv | paste -sd,)" \
        "$v=$(ls "$O"/ab/engine-$v-*-kernels-*.csv | paste -sd,)" | grep -E "^#  *T| step | attend "
done
echo "ab done $(el)"
if [ "$(lim 100)" -ge 80 ]; then # the CPU reference, and cpa's logits against base's byte for byte
    timeout $(lim 100) bash ci/engine-check.sh --trees "$O/check" base=. cpa=.carry/tcpa || echo "check rc=$?"
else
    echo "check: no time left"
fi
echo "done $(el)"
