#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/costmodel/cli_test.sh ARBENCH SOURCE_ROOT: `arbench model` end to end on the committed
# 2 x H200 runs: fit, predict a PCIe spec, the prediction is marked and banded, `arbench
# profile` accepts it, check fails when it should, bad input exits 2 with a message. TAP.
set -u
arb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") root=$2
cd "$root" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=1; fi; }
echo "1..24"
"$arb" model fit --fabric model/fabrics/h200x2-nvlink.spec --out "$tmp/fit.csv" results/h200x2-default.csv results/h200x2-p2poff.csv > "$tmp/fit.txt"
ok $? "fit on the committed runs"
"$arb" model predict --fit "$tmp/fit.csv" --fabric model/fabrics/pcie-switch-pairs-8.spec --ranks 8 --sizes 14336,43008,1M --out "$tmp/pred.csv" > /dev/null
ok $? "predict 8 ranks of pcie-switch-pairs-8"
# every row source=model: the third field from the end (source, band_lo_us, band_hi_us are
# never quoted, params earlier may hold commas)
awk -F, 'NR == 1 { if ($(NF - 2) != "source") bad = 1; next }
         { if ($(NF - 2) != "model") bad = 1 }
         END { exit bad || NR < 10 }' "$tmp/pred.csv"
ok $? "every predicted row is source=model"
grep -q ',model,.*band' "$tmp/pred.csv" && head -1 "$tmp/pred.csv" | grep -q 'band_lo_us,band_hi_us$'
ok $? "predicted rows carry their band columns"
grep -q 'LL128 on PCIe' "$tmp/pred.csv"
ok $? "LL128 rows are skips saying NCCL disables it on PCIe"
"$arb" profile --quiet --out "$tmp/prof.csv" "$tmp/pred.csv"
ok $? "arbench profile accepts the prediction"
"$arb" model check --fit "$tmp/fit.csv" --tolerance 0.01 results/h200x2-default.csv > "$tmp/check.txt"
[ $? = 1 ] && grep -q FAIL "$tmp/check.txt"
ok $? "check exits 1 when the model misses by more than the tolerance"
err=$("$arb" model predict --fit "$tmp/fit.csv" --fabric /nonexistent.spec --ranks 8 --out "$tmp/x.csv" 2>&1)
[ $? = 2 ] && echo "$err" | grep -q 'nonexistent.spec'
ok $? "a missing spec exits 2 naming it"
err=$("$arb" model predict --fit "$tmp/fit.csv" --fabric model/fabrics/pcie-1socket-4.spec --ranks 8 --out "$tmp/x.csv" 2>&1)
[ $? = 2 ] && echo "$err" | grep -q 'has 4 GPUs'
ok $? "more ranks than the fabric has GPUs exits 2"
# --observations: every recorded figure against the model (hand-made fixtures, then the committed ones)
obs=tests/costmodel/observations
"$arb" model check --fit model/fit-h200x2.csv --observations $obs/pass > "$tmp/obs.txt"
[ $? = 0 ] && grep -q '1 pass, 0 FAIL.*1 not tested' "$tmp/obs.txt"
ok $? "observations: a point within 25% passes, an unmodeled quantity is listed as not tested, exit 0"
"$arb" model check --fit model/fit-h200x2.csv --observations $obs/fail > "$tmp/obs.txt"
[ $? = 1 ] && grep -q 'fixture-slow .*-78.1%.*misses *FAIL' "$tmp/obs.txt" && grep -q 'fixture-e2e .*-50.0%.*FAIL' "$tmp/obs.txt" &&
    grep -q 'fixture-pass .* pass$' "$tmp/obs.txt"
ok $? "observations: misses are named with their error, exit 1"
err=$("$arb" model check --fit model/fit-h200x2.csv --observations $obs/bad 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q "bad/obs.csv: missing column 'source'"
ok $? "observations: a file without sources exits 2 naming it"
# The committed observations: every 2 x H200 point within 25% (the seed's figures fail: docs/model.md)
"$arb" model check --fit model/fit-h200x2.csv --observations model/observations > "$tmp/obs.txt"
n200=$(grep -c '^h200x2-' "$tmp/obs.txt") p200=$(grep -c '^h200x2-.* pass$' "$tmp/obs.txt")
[ "$n200" -ge 10 ] && [ "$n200" = "$p200" ]
ok $? "observations: all $n200 committed 2 x H200 points pass ($p200)"
# The committed per-kernel prediction is what the committed inputs give (model/regenerate.sh's command)
e2e=results/model-e2e-pcie-switch-pairs-8
"$arb" model e2e --pred results/model-pcie-switch-pairs-8.csv --out "$tmp/e2e.csv" --accept-rate 0.7 \
    --kernels results/engine-h200/ea8a519/engine-new-a-kernels.csv \
    --gpu model/gpus/rtx-pro-6000-server.spec --gpu-ref model/gpus/h200-sxm.spec \
    results/e2e-h200-ea8a519/e2e-pcie-nccl-k2.csv results/e2e-h200-ea8a519/e2e-pcie-p2p-k2.csv > "$tmp/e2e.txt"
[ $? = 0 ] && diff <(grep -v '^arbench model e2e:' "$tmp/e2e.txt") <(grep -v '^arbench model e2e:' $e2e/e2e-kernels.txt) >&2
ok $? "model e2e --kernels --gpu reproduces the committed $e2e/e2e-kernels.txt"
err=$("$arb" model e2e --pred results/model-pcie-switch-pairs-8.csv --out "$tmp/x.csv" --gpu model/gpus/rtx-pro-6000-server.spec \
    results/e2e-h200-ea8a519/e2e-pcie-nccl-k2.csv 2>&1)
[ $? = 2 ] && echo "$err" | grep -q -- '--gpu SPEC and --gpu-ref SPEC go together'
ok $? "model e2e: --gpu without --gpu-ref and --kernels exits 2"
# the compute-at-floor scenario reproduces its committed output, and refuses a multiple below 1
sc=$e2e/scenario-floor p250=$e2e/250c3c9
"$arb" model e2e --pred results/model-pcie-switch-pairs-8.csv --out "$tmp/sc.csv" --accept-rate 0.7 \
    --kernels "$(ls results/engine-h200/31fa1cc/engine-main-1-kernels-*.csv)" \
    --gpu model/gpus/rtx-pro-6000-server.spec --gpu-ref model/gpus/h200-sxm.spec --compute-at-floor 1.5 \
    "$p250/engine-nccl.csv" "$p250/engine-custom.csv" "$p250/engine-hoststaged.csv" > "$tmp/sc.txt"
[ $? = 0 ] && diff <(grep -v '^arbench model e2e:' "$tmp/sc.txt") <(grep -v '^arbench model e2e:' $sc/e2e-floor-1.5.txt) >&2 &&
    grep -q '^SCENARIO (not measured, not predicted)' "$tmp/sc.txt" && grep -q '"scenario, not measured: compute set to 1.5 x' "$tmp/sc.csv"
ok $? "model e2e --compute-at-floor 1.5 reproduces the committed $sc/e2e-floor-1.5.txt, marked a scenario"
err=$("$arb" model e2e --pred results/model-pcie-switch-pairs-8.csv --out "$tmp/x.csv" --compute-at-floor 0.5 \
    "$p250/engine-nccl.csv" 2>&1)
[ $? = 2 ] && echo "$err" | grep -q -- "--compute-at-floor '0.5': expected a multiple of the floor in \[1, 100\]"
ok $? "model e2e: --compute-at-floor below 1 exits 2"
# model compute: the H200's compute-only table (a6f2bb6) predicts the H100's (4b69337, the same step code)
h2=$(ls results/engine-h200/a6f2bb6-fused-site/ab/engine-new-1-kernels-*.csv)
specs=(--gpu model/gpus/h100-sxm.spec --gpu-ref model/gpus/h200-sxm.spec)
pass=1
for h1 in results/engine-h100/4b69337-chain/engine-*-kernels-*.csv; do
    "$arb" model compute --kernels "$h2" "${specs[@]}" --against "$h1" > "$tmp/comp.txt" || pass=0
    grep -qE '^ +3 .* inside the band$' "$tmp/comp.txt" && grep -qE '^ +1 .* not in the measured table$' "$tmp/comp.txt" &&
        grep -q '1 of 1 measured steps inside their bands' "$tmp/comp.txt" || pass=0
done
[ $pass = 1 ]
ok $? "model compute: the H100's measured T = 3 steps inside the band predicted from the H200's table"
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "family") f = i; else if ($i == "graph_us") g = i }
                  NR > 1 && $f == "step" { $g = 2 * $g } { print }' \
    results/engine-h100/4b69337-chain/engine-1-kernels-20261205T055329Z-vm-2319.csv > "$tmp/slow.csv"
"$arb" model compute --kernels "$h2" "${specs[@]}" --against "$tmp/slow.csv" > "$tmp/comp.txt"
[ $? = 1 ] && grep -qE '^ +3 .* OUTSIDE the band$' "$tmp/comp.txt"
ok $? "model compute: a measured step twice the prediction is outside its band, exit 1"
err=$("$arb" model compute --kernels "$h2" "${specs[@]}" --tokens 1 --against "$tmp/slow.csv" 2>&1 >/dev/null)
[ $? = 1 ] && echo "$err" | grep -q 'nothing compared'
ok $? "model compute: --against with no step row of the asked T exits 1 (nothing compared)"
pass=1
for t in 0 x 17 1:20 1K; do
    err=$("$arb" model compute --kernels "$h2" "${specs[@]}" --tokens "$t" 2>&1 >/dev/null)
    [ $? = 2 ] && echo "$err" | grep -q -- "--tokens '$t'" || pass=0
done
[ $pass = 1 ]
ok $? "model compute: bad --tokens (0, x, 17, 1:20, 1K) exit 2 naming the value"
sed 's/,noop,/,nccl,/' "$h2" > "$tmp/nccl.csv"
err=$("$arb" model compute --kernels "$h2" "${specs[@]}" --against "$tmp/nccl.csv" 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q "impl 'nccl', expected noop"
ok $? "model compute: --against a table that is not compute-only exits 2 naming the impl"
sed 's/,4096,/,8192,/' "$h1" >"$tmp/ctx.csv"
err=$("$arb" model compute --kernels "$h2" "${specs[@]}" --against "$tmp/ctx.csv" 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q "ctx.csv: context '8192' where .* has '4096': not the same step"
ok $? "model compute: --against a table of another step (context) exits 2 naming the field"
err=$("$arb" model compute --kernels "$h2" --gpu model/gpus/h100-sxm.spec 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q -- '--gpu-ref SPEC'
ok $? "model compute: without --gpu-ref exits 2"
exit $bad
