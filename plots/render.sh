#!/bin/bash
# SPDX-License-Identifier: MIT
# plots/render.sh [--tool ARB_PLOTDATA] RESULTS.csv|DIR... OUTDIR
# Renders every figure of the given results files (a DIR stands for its *.csv) into OUTDIR
# as PNG and SVG: per figure an overview (latency, bus bandwidth, speedup over the fastest
# baseline variant; one line per implementation) and per implementation its variants. Needs gnuplot (gnuplot-nox) and the arb-plotdata
# tool from the build (found in build*/plots/ next to this script, or --tool / $ARB_PLOTDATA).
# Also accepted (the Makefile's form): plots/render.sh BUILD_DIR OUTDIR RESULTS...
# docs/plots.md. Exit 0 ok, 2 bad usage or missing tool, 1 a figure failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tool=${ARB_PLOTDATA:-}
if [ "${1:-}" = --tool ]; then
    tool=${2:-}
    shift 2 || true
elif [ $# -ge 3 ] && [ -f "$1/build.ninja" ]; then
    tool=$1/plots/arb-plotdata
    outdir_first=$2
    shift 2
    set -- "$@" "$outdir_first"
fi
if [ -z "$tool" ]; then
    for t in "$here"/../build*/plots/arb-plotdata; do
        if [ -x "$t" ]; then tool=$t; break; fi
    done
fi
if [ ! -x "$tool" ]; then
    echo "render.sh: arb-plotdata not found: build first (meson setup build && ninja -C build) or pass --tool PATH" >&2
    exit 2
fi
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "render.sh: gnuplot not found: install gnuplot-nox (render on a machine that has it; the GPU machines may not)" >&2
    exit 2
fi
if [ $# -lt 2 ]; then
    echo "usage: plots/render.sh [--tool ARB_PLOTDATA] RESULTS.csv|DIR... OUTDIR (expected at least one results file or directory, then the output directory)" >&2
    exit 2
fi
args=("$@")
out=${args[$#-1]}
inputs=()
for a in "${args[@]:0:$#-1}"; do
    if [ -d "$a" ]; then
        for f in "$a"/*.csv; do [ -f "$f" ] && inputs+=("$f"); done
    else
        inputs+=("$a")
    fi
done
if [ ${#inputs[@]} -eq 0 ]; then
    echo "render.sh: no results files found in: ${args[*]:0:$#-1}" >&2
    exit 2
fi
rm -rf "$out/data"
"$tool" "${inputs[@]}" "$out" || exit 2
# The previous figures of OUTDIR are replaced, so a figure of a removed series cannot linger.
for old in "$out"/*_latency.* "$out"/*_busbw.* "$out"/*_speedup.* "$out"/*_fused.* "$out"/*_variants.*; do
    case $old in *.png|*.svg) rm -f "$old" ;; esac
done
pngterm=png
if gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1; then pngterm=pngcairo; fi
failed=0
count=0
for m in "$out"/data/*.gp; do
    fig=$(basename "$m" .gp)
    name=${fig//__/_} # FIG__IMPL (a detail manifest) -> FIG_IMPL_variants
    kinds=$(sed -n 's/^kinds = "\(.*\)"$/\1/p' "$m")
    for kind in $kinds; do
        for fmt in png svg; do
            if (cd "$out/data" && gnuplot -e "plotsdir='$here'; manifest='$fig.gp'; fmt='$fmt'; pngterm='$pngterm'; out='../${name}_$kind.$fmt'; areafile='${name}_$kind.$fmt.area'" "$here/$kind.gp"); then
                count=$((count + 1))
            else
                echo "render.sh: $fig $kind ($fmt) failed" >&2
                failed=1
            fi
        done
    done
done
echo "render.sh: $count images in $out ($pngterm and svg terminals)" >&2
exit $failed
