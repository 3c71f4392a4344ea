#!/bin/bash
# SPDX-License-Identifier: MIT
# plots/engine_render.sh [--tool ARB_ENGINE_PLOTDATA] ENGINE.csv[=LABEL]... OUTDIR
# (=LABEL: a short legend name for every row of that file)
# Renders the engine figures of `arbench engine` results into OUTDIR as PNG and SVG, per
# mode: engine_steps_MODE (step breakdown, compute vs all-reduce, stacked, per choice,
# decode and verify) and engine_spec_MODE (tok/s against acceptance, plain and speculative,
# break-even marked). Needs gnuplot and arb-engine-plotdata (build*/engine/tools/, or --tool,
# or $ARB_ENGINE_PLOTDATA). docs/engine-e2e.md. Exit 0 ok, 2 bad usage/input or missing
# tool, 1 a figure failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tool=${ARB_ENGINE_PLOTDATA:-}
if [ "${1:-}" = --tool ]; then
    tool=${2:-}
    shift 2 || true
fi
if [ -z "$tool" ]; then
    for t in "$here"/../build*/engine/tools/arb-engine-plotdata; do
        if [ -x "$t" ]; then tool=$t; break; fi
    done
fi
if [ ! -x "$tool" ]; then
    echo "engine_render.sh: arb-engine-plotdata not found: build first (ninja -C build) or pass --tool PATH" >&2
    exit 2
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "engine_render.sh: gnuplot not found: install gnuplot-nox" >&2
    exit 2
fi
if [ $# -lt 2 ]; then
    echo "usage: plots/engine_render.sh [--tool ARB_ENGINE_PLOTDATA] ENGINE.csv... OUTDIR (expected at least one engine results file, then the output directory)" >&2
    exit 2
fi
args=("$@")
out=${args[$#-1]}
rm -rf "$out/data"
"$tool" "${args[@]:0:$#-1}" "$out" || exit 2
pngterm=png
if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then pngterm=pngcairo; fi
failed=0 count=0
for m in "$out"/data/engine_steps_*.gp "$out"/data/engine_spec_*.gp; do
    [ -f "$m" ] || continue
    fig=$(basename "$m" .gp)
    case $fig in engine_steps_*) script=engine_steps.gp ;; *) script=engine_spec.gp ;; esac
    for fmt in png svg; do
        if (cd "$out/data" && gnuplot -e "plotsdir='$here'; manifest='$fig.gp'; fmt='$fmt'; pngterm='$pngterm'; out='../$fig.$fmt'" "$here/$script"); then
            count=$((count + 1))
        else
            echo "engine_render.sh: $fig ($fmt) failed" >&2
            failed=1
        fi
    done
done
echo "engine_render.sh: $count images in $out ($pngterm and svg terminals)" >&2
exit $failed
