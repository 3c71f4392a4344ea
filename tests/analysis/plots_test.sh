#!/bin/bash
# SPDX-License-Identifier: MIT
# Renders the fixture results and the committed results with plots/render.sh and checks
# what a reader sees: PNGs decode and are not blank, SVGs are drawings, overview figures
# hold at most 8 series in distinct colours with short names and dashed floors, the plot
# area is most of the picture, the 3-token size is marked, damaged files are refused,
# and plots/figures holds exactly what `make plots` renders. Skips (77) without gnuplot.
# Usage: plots_test.sh RENDER_SH ARB_PLOTDATA GEN_FIXTURES PNGCHECK SOURCE_ROOT
set -u
render=$1 plotdata=$2 gen=$3 pngcheck=$4 src=$5
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP gnuplot not installed (install gnuplot-nox)"
    exit 77
fi
dir=$(mktemp -d /tmp/arb-plots-XXXXXX) || exit 1
n=0 failed=0
tap() { n=$((n + 1)); if [ "$1" = OK ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
check() { if eval "$1"; then tap OK "$2"; else tap FAIL "$2"; fi; }

# series SVG: the plotted series (gnuplot_plot_N groups); colours SVG: their distinct strokes.
series() { grep -o 'id="gnuplot_plot_[0-9]*"' "$1" | sort -u | wc -l; }
colours() {
    awk '/<g id="gnuplot_plot_/{p=1} p&&/stroke=.rgb/{match($0,/rgb\([0-9, ]*\)/); print substr($0,RSTART,RLENGTH); p=0}' "$1" | sort -u | wc -l
}
# titles SVG: the legend text of each series (the first text drawn in its group).
titles() { awk '/<g id="gnuplot_plot_/{p=1} p&&/<text>/{sub(/.*<text>/, ""); sub(/<\/text>.*/, ""); print; p=0}' "$1"; }
# share AREAFILE: the plot area over the canvas (gnuplot's own layout, recorded by area.gp).
share() { awk '{ printf "%.3f", ($2 - $1) * ($4 - $3) / ($5 * $6) }' "$1"; }

# Checks every image of a rendered OUTDIR; $2 names it in the messages.
check_images() {
    local out=$1 what=$2 bad=0 p s a
    for p in "$out"/*.png; do
        "$pngcheck" "$p" 16 >/dev/null 2>"$dir/err" || { echo "# $(cat "$dir/err")"; bad=1; }
    done
    check "[ $bad -eq 0 ]" "$what: every PNG decodes with >= 16 colours"
    bad=0
    for s in "$out"/*.svg; do
        head -c 200 "$s" | grep -q '^<?xml' && grep -q '</svg>' "$s" && [ "$(grep -c '<path' "$s")" -gt 10 ] || { echo "# $s: not an SVG drawing"; bad=1; }
    done
    check "[ $bad -eq 0 ]" "$what: every SVG is XML with drawing"
    bad=0
    for a in "$out"/data/*.png.area; do
        if ! awk '{ exit !(($2 - $1) * ($4 - $3) / ($5 * $6) >= 0.5) }' "$a"; then echo "# $(basename "$a" .area): plot area $(share "$a") of the picture"; bad=1; fi
    done
    check "[ $bad -eq 0 ] && [ \$(ls $out/data/*.png.area | wc -l) -eq \$(ls $out/*.png | wc -l) ]" "$what: the plot area is at least half of every picture"
    bad=0
    for s in "$out"/*_latency.svg "$out"/*_busbw.svg "$out"/*_speedup.svg; do
        local k c
        k=$(series "$s") c=$(colours "$s")
        if [ "$k" -lt 1 ] || [ "$k" -gt 8 ]; then echo "# $(basename "$s"): $k series"; bad=1; fi
        case $s in *_speedup.svg) c=$((c + 1)) ;; esac # the baseline line at 1 is black like the baseline
        if [ "$c" -ne "$k" ]; then echo "# $(basename "$s"): $k series in $c colours"; bad=1; fi
        if titles "$s" | grep -q '='; then echo "# $(basename "$s"): legend carries parameters: $(titles "$s" | grep '=' | head -1)"; bad=1; fi
    done
    check "[ $bad -eq 0 ]" "$what: overview figures: 1..8 series, distinct colours, short names (no params)"
    bad=0
    for s in "$out"/*_latency.svg; do
        # A floor's group draws its line with a dash pattern.
        # Per series group: its legend text says whether it is a floor; floors dashed, the rest solid.
        if ! awk 'function done() { if (n && (f != d)) bad = 1 }
                  /<g id="gnuplot_plot_/ { done(); n = 1; g = 1; f = 0; d = 0 }
                  g && /<text>/ { f = /\(floor\)/; g = 0 }
                  n && /stroke-dasharray/ { d = 1 }
                  /<\/svg>/ { done(); n = 0 }
                  END { exit bad }' "$s"; then
            echo "# $(basename "$s"): floors not dashed or payload dashed"; bad=1
        fi
    done
    check "[ $bad -eq 0 ]" "$what: reference floors dashed, implementations solid"
}

"$gen" "$dir/fx" || { echo "Bail out! gen_fixtures failed"; exit 1; }
if "$render" --tool "$plotdata" "$dir/fx/base.csv" "$dir/fx/rmsnorm.csv" "$dir/out" 2>"$dir/log"; then
    tap OK "render.sh exit 0"
else
    tap FAIL "render.sh exit 0"; sed 's/^/# /' "$dir/log"
fi
# 3 figures: eager and graph allreduce (nccl baseline, p2p, noop floor) and graph rmsnorm (nccl,
# p2p): each an overview (latency, busbw, speedup) and 2 variant figures = 5 images per format.
pngs=$(ls "$dir"/out/*.png 2>/dev/null | wc -l)
svgs=$(ls "$dir"/out/*.svg 2>/dev/null | wc -l)
check "[ $pngs -eq 15 ]" "15 PNG figures (got $pngs)"
check "[ $svgs -eq 15 ]" "15 SVG figures (got $svgs)"
check_images "$dir/out" fixtures
lat="$dir/out/pcie-gen5_r2_n1_bf16_allreduce_graph_latency.svg"
check "[ \"\$(titles $lat | tr '\n' '|')\" = 'nccl (baseline)|p2p|noop (floor)|' ]" "overview legend: baseline, candidate, floor (got $(titles "$lat" | tr '\n' '|'))"
check "grep -q 'set label \"3 tokens = 43008 B\" at 43008' $dir/out/data/pcie-gen5_r2_n1_bf16_allreduce_graph.gp" "the 3-token size (43008 B) is marked"
check "grep -q '3 tokens = 43008 B' $lat" "the 3-token mark is drawn"
check "grep -q 'nccl variants; all with algo=Ring,nccl=2.28.3' $dir/out/data/pcie-gen5_r2_n1_bf16_allreduce_graph__nccl.gp" "detail figure: shared params move to the title"
rows=$(cat "$dir"/out/data/*__s*.dat | grep -c '^[0-9]')
check "[ $rows -ge 40 ]" "data files hold $rows numeric rows"

# More implementations than an overview may draw (a baseline, 10 candidates, 2 floors): 8 lines.
"$render" --tool "$plotdata" "$dir/fx/many_impls.csv" "$dir/many" 2>"$dir/log"
many="$dir/many/pcie-gen5_r2_n1_bf16_allreduce_graph_latency.svg"
check "[ \$(series $many) -eq 8 ]" "11 implementations + 2 floors: the overview draws 8 series (got $(series "$many"))"
check "grep -q 'the overview draws 6' $dir/log" "render says how many implementations the overview left out"
check "[ \$(ls $dir/many/*_variants.png | wc -l) -eq 11 ]" "every implementation keeps its variant figure"
check "! titles $many | grep -q timeout_ms" "no timeout_ms=... in overview names"

# The checkers must be able to fail: a blank image, a non-PNG.
gnuplot -e "set terminal png size 400,300; set output '$dir/blank.png'; unset border; unset tics; unset key; set xrange [0:1]; set yrange [0:1]; plot 2" 2>/dev/null
check "! $pngcheck $dir/blank.png 16 2>/dev/null" "pngcheck rejects a blank image"
printf 'not a png' >"$dir/fake.png"
check "! $pngcheck $dir/fake.png 16 2>/dev/null" "pngcheck rejects a non-PNG"
echo '10 20 30 300 1000 620' >"$dir/small.area"
check "! awk '{ exit !((\$2 - \$1) * (\$4 - \$3) / (\$5 * \$6) >= 0.5) }' $dir/small.area" "the area check rejects a plot squeezed into a strip"
# Damaged results are refused (exit 2) with a message naming the file.
for f in nan_median cut_mid_row inconsistent; do
    "$render" --tool "$plotdata" "$dir/fx/$f.csv" "$dir/out2" 2>"$dir/err"
    rc=$?
    check "[ $rc -eq 2 ] && grep -q '$f.csv' $dir/err" "render.sh refuses $f.csv (exit $rc)"
done

# The committed results render, pass the same checks, and plots/figures is exactly that set.
committed_ok=1
"$render" --tool "$plotdata" "$src/results/h200x2-default.csv" "$src/results/h200x2-rmsnorm.csv" "$dir/c1" 2>"$dir/log" || committed_ok=0
"$render" --tool "$plotdata" "$src/results/h200x2-p2poff.csv" "$dir/c2" 2>>"$dir/log" || committed_ok=0
check "[ $committed_ok -eq 1 ]" "the committed results render (make plots' inputs)"
check_images "$dir/c1" "committed results"
check_images "$dir/c2" "committed results, NCCL P2P disabled"
(cd "$dir/c1" && ls ./*.png ./*.svg) >"$dir/want1"
(cd "$src/plots/figures" && ls ./*.png ./*.svg) >"$dir/have1"
(cd "$dir/c2" && ls ./*.png ./*.svg) >"$dir/want2"
(cd "$src/plots/figures/nccl-p2p-disabled" && ls ./*.png ./*.svg) >"$dir/have2"
check "cmp -s $dir/want1 $dir/have1 && cmp -s $dir/want2 $dir/have2" "plots/figures holds exactly the figures make plots renders (no stale ones; run make plots)"
check "[ \$(series $src/plots/figures/nvlink_r2_n1_bf16_allreduce_graph_latency.svg) -le 8 ]" "the committed overview has at most 8 series"

echo "1..$n"
[ "$failed" -eq 0 ] && rm -rf "$dir"
exit "$failed"
