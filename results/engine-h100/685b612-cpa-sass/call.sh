#!/bin/bash
# PREPARED IN THE FORTY-FIRST SESSION (cpa3: the forty-second), NOT RUN. Before it, on main:
#   mkdir -p .carry/cpa; cp results/engine-h100/685b612-cpa-sass/{cpa.patch,cpa3.patch,call.sh,call2.sh,tests.sh,tests3.sh} .carry/cpa/
#   git apply --check .carry/cpa/cpa.patch; git apply --check .carry/cpa/cpa3.patch
#   git rev-parse --short=12 HEAD > REVISION
#   carry [".carry/cpa", ".debs", "REVISION"]; bash .carry/cpa/call.sh [FORM]
# FORM sizes the call to the device time left (the call's own deadline; start a machine with ~100 s more):
#   full   base cpa3 cpa cpa4, four rounds, then the check  ~580 s (the default)
#   mid    base cpa3 cpa, four rounds                        ~470 s
#   small  base cpa3, four rounds                            ~400 s
#   tiny   base cpa3, three rounds                           ~320 s
# Main is base, against:
#   cpa   cpa.patch: the attention's staging (stage_copies) as cp.async copies, a copy at a time, no
#         vector held in registers nor located twice, the copies issued before the PDL wait still in
#         flight across it (one wait_all + barrier for both sides): the same bits (tokens and logits
#         identical, or the patch is wrong); attend 80 -> 64 registers on sm_90 (4 bytes spilled outside
#         the loops; sm_120 16)
#   cpa4  cpa's tree with --attn-fill 4: four CTAs an SM (the registers now allow it; MINB 4 kernel):
#         T = 3 four groups of 6 (33e58bd-attn-fill: +2.65% with the old staging, two waves by registers)
#   cpa3  cpa3.patch: cpa.patch and the default attend kernel bounded to three CTAs an SM
#         (__launch_bounds__(256, 3), mla_split.cu): 69 / 80 registers on sm_90 / sm_120, no spill
#         (cpa's 64 spill 4 / 16 bytes); three CTAs an SM by registers as main's 80. The landing
#         candidate: the same code as cpa, whose GPU tests passed on an H100 (2026-12-08 01:23 UTC)
# The cpa3 tree's engine GPU tests run (AB_TESTS): engine gpu mla (the grids bit for bit, the double
# reference) and engine gpu persist (the persistent forms use the same tile). Read both measurements
# for each name: the A/B's graph medians and the kernels tables' `step` rows.
form=${1:-full}
case $form in
full) deadline=580 ab=460 rounds=4 names="cpa3 cpa cpa4" ;;
mid) deadline=470 ab=390 rounds=4 names="cpa3 cpa" ;;
small) deadline=400 ab=330 rounds=4 names="cpa3" ;;
tiny) deadline=320 ab=270 rounds=3 names="cpa3" ;;
*) echo "call.sh: FORM '$form': expected full, mid, small or tiny" >&2; exit 2 ;;
esac
. ci/device-call.sh $deadline
set -u
echo "form $form: base $names, $rounds rounds"
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tcpa .carry/tcpa3
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
bash ci/overlay-tree.sh .carry/tcpa3 --patch .carry/cpa/cpa3.patch || echo "tree tcpa3: FAILED"
case " $names " in *" cpa "* | *" cpa4 "*)
    bash ci/overlay-tree.sh .carry/tcpa --patch .carry/cpa/cpa.patch || echo "tree tcpa: FAILED" ;;
esac
for v in base $names; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export ENGINE_ARGS_cpa4="${ENGINE_ARGS_cpa4:-} --attn-fill 4"
export AB_TESTS="cpa3"
trees=()
for v in $names; do
    case $v in cpa3) trees+=("$v=.carry/tcpa3") ;; *) trees+=("$v=.carry/tcpa") ;; esac
done
timeout $(lim $ab) bash ci/engine-ab.sh "$O/ab" $rounds base=. "${trees[@]}" >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff|round)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| attend | combine | q_b | step |rows compared" "$O"/ab/diff-*.txt
for v in $names; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
cp .carry/tcpa3/build-gpu/meson-logs/testlog.txt "$O/ab/testlog-cpa3.txt" 2>/dev/null
grep -E "^(ok|not ok)" "$O/ab/testlog-cpa3.txt" | head -40
for v in $names; do # the kernels tables' own step rows, graph column (engine-ab.sh's diffs: chain)
    python3 ci/kernels-diff.py --column graph_us "base=$(ls "$O"/ab/engine-base-*-kernels-*.csv | paste -sd,)" \
        "$v=$(ls "$O"/ab/engine-$v-*-kernels-*.csv | paste -sd,)" | grep -E "^#  *T| step | attend "
done
echo "ab done $(el)"
if [ "$(lim 100)" -ge 80 ]; then # the CPU reference, and cpa3's logits against base's byte for byte
    timeout $(lim 100) bash ci/engine-check.sh --trees "$O/check" base=. cpa3=.carry/tcpa3 || echo "check rc=$?"
else
    echo "check: no time left"
fi
echo "done $(el)"
