#!/bin/bash
# SPDX-License-Identifier: MIT
# model/regenerate.sh [BUILD]: rebuilds every committed output of the cost model from the
# committed 2 x H200 runs: the fit (model/fit-h200x2.csv), the check reports
# (results/model-check-h200x2*.txt), the predictions and their profiles
# (results/model-<spec>.csv, results/model-profile-<spec>.csv, the graph-mode summary
# results/model-<spec>.txt) and their figures
# (plots/figures/model/<spec>/). docs/model.md explains each step. Run from anywhere.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build}
arb=$build/harness/arbench
[ -x "$arb" ] || { echo "regenerate.sh: $arb not found: build first (meson setup $build && ninja -C $build)" >&2; exit 2; }
fit_runs="results/h200x2-default.csv results/h200x2-p2poff.csv"
heldout="results/h200x2-repeat-a.csv results/h200x2-repeat-b.csv results/h200x2-repeat2-a.csv results/h200x2-repeat2-b.csv results/h200x2-repeat2-c.csv"
"$arb" model fit --fabric model/fabrics/h200x2-nvlink.spec --out model/fit-h200x2.csv $fit_runs > model/fit-h200x2.txt
# The check exits 1 when a gated group misses by more than 25%: keep the report either way.
"$arb" model check --fit model/fit-h200x2.csv $fit_runs > results/model-check-h200x2.txt || true
"$arb" model check --fit model/fit-h200x2.csv $heldout > results/model-check-h200x2-heldout.txt || true
for s in pcie-switch-pairs-8:8 pcie-switch-quads-8:8 pcie-2socket-8:8 pcie-1socket-4:4; do
    spec=${s%:*} ranks=${s#*:}
    rm -f "results/model-$spec.csv"
    "$arb" model predict --fit model/fit-h200x2.csv --fabric "model/fabrics/$spec.spec" --ranks "$ranks" --out "results/model-$spec.csv" > "results/model-$spec.txt"
    "$arb" profile --quiet --out "results/model-profile-$spec.csv" "results/model-$spec.csv"
    if command -v gnuplot >/dev/null 2>&1; then
        plots/render-model.sh --tool "$build/plots/arb-plotdata" "results/model-$spec.csv" "plots/figures/model/$spec"
        rm -rf "plots/figures/model/$spec/data"
    fi
done
