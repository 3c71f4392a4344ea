# SPDX-License-Identifier: MIT
# Shared setup, loaded by each figure script. Variables set by render.sh with -e:
#   fmt ('png' or 'svg'), pngterm ('pngcairo' or 'png'), out (output file), areafile
#   (where the plot area is recorded for the test), manifest (FIG.gp from arb-plotdata:
#   title_text, files, colors, dts, payload_files, speedup_files, token marks).
# The legend sits right of the plot with short names, so the plot keeps most of the picture.
canvas_w = 1000
canvas_h = 620
if (fmt eq 'svg') {
    set terminal svg size canvas_w,canvas_h dynamic background rgb 'white' font 'sans,11'
} else {
    set terminal @pngterm size canvas_w,canvas_h background rgb 'white' font 'sans,10'
}
set output out
set termoption noenhanced
load manifest
# A second title line with the NCCL_* settings every row ran with (e.g. NCCL_P2P_DISABLE=1).
if (strlen(title_env) > 0) {
    set title title_text."\n".title_env
    set tmargin 5
} else {
    set title title_text
    set tmargin 4
}
set logscale x 2
set format x "%.0b%BB"
set xlabel "message bytes per rank (dotted: tokens x 7168 x element size; red: the 3-token verify step)"
set grid xtics ytics lc rgb '#e4e4e4'
if (exists('key_below') && key_below) {
    # Variant names are long: two columns under the plot keep its width.
    set key below center vertical Left reverse maxrows key_rows spacing 1.0 font ',8' samplen 2 width -2
} else {
    set key outside right top vertical Left reverse spacing 1.15 font ',9' samplen 2.5
}
set datafile missing "NaN"
set lmargin 9
