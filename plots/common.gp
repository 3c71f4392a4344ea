# SPDX-License-Identifier: MIT
# Shared setup, loaded by each figure script. Variables set by render.sh with -e:
#   fmt ('png' or 'svg'), pngterm ('pngcairo' or 'png'), out (output file),
#   manifest (FIG.gp from arb-plotdata: title_text, files, fusion_dt, token marks).
if (fmt eq 'svg') {
    set terminal svg size 1000,620 dynamic background rgb 'white'
} else {
    set terminal @pngterm size 1000,620 background rgb 'white'
}
set output out
set termoption noenhanced
load manifest
set title title_text
set logscale x 2
set format x "%.0b%BB"
set xlabel "message bytes per rank (dotted: token counts x 7168 x element size)"
set grid xtics ytics lc rgb '#dddddd'
set key below left vertical spacing 1.1 font ",9"
set datafile missing "NaN"
set tmargin 4
