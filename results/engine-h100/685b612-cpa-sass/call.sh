#!/bin/bash
# PREPARED IN THE FORTY-FIRST SESSION (cpa3, csp and cspm: the forty-second), NOT RUN. Before it, on main:
#   mkdir -p .carry/cpa; cp results/engine-h100/685b612-cpa-sass/{cpa3.patch,csp.patch,cspm.patch,call.sh,call2.sh,tests.sh} .carry/cpa/
#   for p in cpa3 csp cspm; do git apply --check .carry/cpa/$p.patch; done
#   git rev-parse --short=12 HEAD > REVISION; [ -d .debs ] || bash ci/deps.sh --download .debs
#   carry [".carry/cpa", ".debs", "REVISION"]; bash .carry/cpa/call.sh [FORM]
# FORM sizes the call to the device time left (the call's own deadline; start a machine with ~100 s more):
#   full   base cpa3 csp cspm, four rounds, then the check  ~580 s (the default)
#   mid    base cpa3 cspm, four rounds                       ~470 s
#   small  base cpa3 cspm, three rounds                      ~400 s
#   tiny   base cspm, three rounds                           ~320 s
# Main is base, against:
#   cpa3  cpa3.patch: the attention's staging (stage_copies) as cp.async copies, a copy at a time, no
#         vector held in registers nor located twice, the copies issued before the PDL wait still in
#         flight across it (one wait_all + barrier for both sides), and the default attend kernel
#         bounded to three CTAs an SM (__launch_bounds__(256, 3): 69 / 80 registers on sm_90 / sm_120,
#         no spill). The same bits (tokens and logits identical, or the patch is wrong). Its staging
#         code (cpa.patch, unbounded) passed the engine GPU tests on an H100 (2026-12-08 01:23 UTC)
#   csp   csp.patch: cpa3 and the attend grid spread over the SMs (spread_fit.h, mla_split.cu's
#         spread_smem: where the grid needs fewer CTAs an SM than fit, its dynamic shared memory
#         padded so that no more fit; at T = 1 258 CTAs two an SM on 129 SMs instead of three on ~84,
#         every committed timeline's placement; T = 3's 387 need three an SM: unchanged). The same bits
#   cspm  cspm.patch: csp and the merge spread the same way (T = 1: 64 CTAs one an SM instead of up to
#         four on ~27 SMs; T = 3: 192 CTAs at most two an SM). The same bits
# The cspm tree's engine GPU tests run (AB_TESTS; cspm holds cpa3's kernels and both spreads): engine gpu
# mla (the grids bit for bit, the double reference) and engine gpu persist (the persistent forms use
# the same tile). Read both measurements for each name: the A/B's graph medians and the kernels
# tables' `step` rows.
form=${1:-full}
case $form in
full) deadline=580 ab=460 rounds=4 names="cpa3 csp cspm" ;;
mid) deadline=470 ab=390 rounds=4 names="cpa3 cspm" ;;
small) deadline=400 ab=330 rounds=3 names="cpa3 cspm" ;;
tiny) deadline=320 ab=270 rounds=3 names="cspm" ;;
*) echo "call.sh: FORM '$form': expected full, mid, small or tiny" >&2; exit 2 ;;
esac
. ci/device-call.sh $deadline
set -u
echo "form $form: base $names, $rounds rounds"
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tcpa3 .carry/tcsp .carry/tcspm
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in $names; do
    bash ci/overlay-tree.sh .carry/t$v --patch .carry/cpa/$v.patch || echo "tree t$v: FAILED"
done
for v in base $names; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export AB_TESTS="cspm"
trees=()
for v in $names; do trees+=("$v=.carry/t$v"); done
timeout $(lim $ab) bash ci/engine-ab.sh "$O/ab" $rounds base=. "${trees[@]}" >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine|kernels diff|round)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| attend | combine | q_b | step |rows compared" "$O"/ab/diff-*.txt
for v in $names; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
cp .carry/tcspm/build-gpu/meson-logs/testlog.txt "$O/ab/testlog-cspm.txt" 2>/dev/null
grep -E "^(ok|not ok)" "$O/ab/testlog-cspm.txt" | head -40
for v in $names; do # the kernels tables' own step rows, graph column (engine-ab.sh's diffs: chain)
    python3 ci/kernels-diff.py --column graph_us "base=$(ls "$O"/ab/engine-base-*-kernels-*.csv | paste -sd,)" \
        "$v=$(ls "$O"/ab/engine-$v-*-kernels-*.csv | paste -sd,)" | grep -E "^#  *T| step | attend "
done
echo "ab done $(el)"
if [ "$(lim 100)" -ge 80 ]; then # the CPU reference, and cspm's logits against base's byte for byte
    timeout $(lim 100) bash ci/engine-check.sh --trees "$O/check" base=. cspm=.carry/tcspm || echo "check rc=$?"
else
    echo "check: no time left"
fi
echo "done $(el)"
