#!/bin/bash
# SPDX-License-Identifier: MIT
# Renders the fixture results with plots/render.sh and checks every image: PNG decodes and
# is not blank, SVG is XML with drawing in it, data files hold numbers. Skips (77) without
# gnuplot. Usage: plots_test.sh RENDER_SH ARB_PLOTDATA GEN_FIXTURES PNGCHECK
set -u
render=$1 plotdata=$2 gen=$3 pngcheck=$4
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP gnuplot not installed (install gnuplot-nox)"
    exit 77
fi
dir=$(mktemp -d /tmp/arb-plots-XXXXXX) || exit 1
n=0 failed=0
tap() { n=$((n + 1)); if [ "$1" = OK ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
"$gen" "$dir/fx" || { echo "Bail out! gen_fixtures failed"; exit 1; }
if "$render" --tool "$plotdata" "$dir/fx/base.csv" "$dir/fx/rmsnorm.csv" "$dir/out" 2>"$dir/log"; then
    tap OK "render.sh exit 0"
else
    tap FAIL "render.sh exit 0"; sed 's/^/# /' "$dir/log"
fi
pngs=$(ls "$dir"/out/*.png 2>/dev/null | wc -l)
svgs=$(ls "$dir"/out/*.svg 2>/dev/null | wc -l)
# 2 allreduce figures x (latency, busbw, speedup) + 1 rmsnorm figure x (those + fused) = 10 per format
[ "$pngs" -eq 10 ] && tap OK "10 PNG figures" || tap FAIL "10 PNG figures (got $pngs)"
[ "$svgs" -eq 10 ] && tap OK "10 SVG figures" || tap FAIL "10 SVG figures (got $svgs)"
for p in "$dir"/out/*.png; do
    if "$pngcheck" "$p" 16 >/dev/null 2>"$dir/err"; then tap OK "$(basename "$p") decodes, >= 16 colours"; else tap FAIL "$(basename "$p"): $(cat "$dir/err")"; fi
done
for s in "$dir"/out/*.svg; do
    if head -c 200 "$s" | grep -q '^<?xml' && grep -q '<svg' "$s" && grep -q '</svg>' "$s" && [ "$(grep -c '<path' "$s")" -gt 10 ]; then
        tap OK "$(basename "$s") is SVG with drawing"
    else
        tap FAIL "$(basename "$s") is SVG with drawing"
    fi
done
rows=$(cat "$dir"/out/data/*__s*.dat | grep -c '^[0-9]')
[ "$rows" -ge 40 ] && tap OK "data files hold $rows numeric rows" || tap FAIL "data files hold numeric rows (got $rows)"
grep -q 'set label "3t" at 43008' "$dir"/out/data/*allreduce_graph.gp && tap OK "the 3-token size (43008 B) is marked" || tap FAIL "the 3-token size (43008 B) is marked"
# The checker itself must reject a blank image.
gnuplot -e "set terminal png size 400,300; set output '$dir/blank.png'; unset border; unset tics; unset key; set xrange [0:1]; set yrange [0:1]; plot 2" 2>/dev/null
if "$pngcheck" "$dir/blank.png" 16 2>/dev/null; then tap FAIL "pngcheck rejects a blank image"; else tap OK "pngcheck rejects a blank image"; fi
printf 'not a png' >"$dir/fake.png"
if "$pngcheck" "$dir/fake.png" 16 2>/dev/null; then tap FAIL "pngcheck rejects a non-PNG"; else tap OK "pngcheck rejects a non-PNG"; fi
if "$render" --tool "$plotdata" "$dir/fx/nan_median.csv" "$dir/out2" 2>/dev/null; then tap FAIL "render.sh refuses a malformed results file"; else tap OK "render.sh refuses a malformed results file"; fi
echo "1..$n"
[ "$failed" -eq 0 ] && rm -rf "$dir"
exit "$failed"
