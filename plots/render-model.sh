#!/bin/bash
# SPDX-License-Identifier: MIT
# plots/render-model.sh [--tool ARB_PLOTDATA] PRED.csv OUTDIR
# Renders the predicted latency vs size of one `arbench model predict` file, one figure per
# (fabric, ranks, mode), with the model's bands, marked as predicted (plots/model.gp), as PNG
# and SVG into OUTDIR. Needs gnuplot and arb-plotdata (build*/plots/ or --tool). docs/model.md.
# Exit 0 ok, 2 bad usage or missing tool, 1 a figure failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tool=${ARB_PLOTDATA:-}
if [ "${1:-}" = --tool ]; then tool=${2:-}; shift 2 || true; fi
if [ -z "$tool" ]; then
    for t in "$here"/../build*/plots/arb-plotdata; do [ -x "$t" ] && { tool=$t; break; }; done
fi
if [ ! -x "$tool" ] || ! command -v gnuplot >/dev/null 2>&1; then
    echo "render-model.sh: needs arb-plotdata (build first or --tool PATH) and gnuplot" >&2
    exit 2
fi
if [ $# -ne 2 ] || [ ! -f "$1" ]; then
    echo "usage: plots/render-model.sh [--tool ARB_PLOTDATA] PRED.csv OUTDIR (PRED.csv from arbench model predict)" >&2
    exit 2
fi
pred=$1 out=$2
if ! head -1 "$pred" | grep -q 'band_hi_us' || ! grep -q ',model,' "$pred"; then
    echo "render-model.sh: $pred has no source=model rows: not a prediction (arbench model predict writes one)" >&2
    exit 2
fi
spec=$(sed -n '2p' "$pred" | grep -o 'fabric [^ ,"]*' | head -1)
rm -rf "$out/data"
mkdir -p "$out" || exit 2
"$tool" "$pred" "$out" || exit 2
pngterm=png
gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 && pngterm=pngcairo
failed=0
for m in "$out"/data/*.gp; do
    fig=$(basename "$m" .gp)
    for fmt in png svg; do
        (cd "$out/data" && gnuplot -e "plotsdir='$here'; manifest='$fig.gp'; fmt='$fmt'; pngterm='$pngterm'; spec_text='$spec, $(basename "$pred")'; out='../${fig}_predicted.$fmt'" "$here/model.gp") || { echo "render-model.sh: $fig ($fmt) failed" >&2; failed=1; }
    done
done
exit $failed
