# SPDX-License-Identifier: MIT
# Shared setup of the engine figures. Set by engine_render.sh with -e: fmt ('png' or
# 'svg'), pngterm ('pngcairo' or 'png'), out (output file), manifest (from arb-engine-plotdata).
if (fmt eq 'svg') {
    set terminal svg size 1000,620 dynamic background rgb 'white'
} else {
    set terminal @pngterm size 1000,620 background rgb 'white'
}
set output out
set termoption noenhanced
load manifest
set title title_text
set grid ytics lc rgb '#dddddd'
set key outside right top vertical font ",9"
