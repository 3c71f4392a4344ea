# SPDX-License-Identifier: MIT
# Predicted latency vs message size (arbench model predict): one line per implementation
# variant, its shaded band the model's uncertainty (the rows' band_lo_us..band_hi_us, which
# `arbench model predict` also writes as p10_us..p90_us). Marked as predicted in title and key.
load plotsdir.'/common.gp'
# Taller than the measured figures: up to ~20 variants in a two-column key.
if (fmt eq 'svg') { set terminal svg size 1200,900 dynamic background rgb 'white' } else { set terminal @pngterm size 1200,900 background rgb 'white' }
set output out
set title "PREDICTED, not measured (arbench model, docs/model.md)\n".title_text."\n".spec_text
set logscale y
set ylabel "predicted latency (us); shaded: model band"
set style fill transparent solid 0.08 noborder
set key below left horizontal maxcols 2 spacing 1.0 font ",8" noenhanced
plot for [i=1:words(files)] word(files, i) using 1:3:4 with filledcurves lc i notitle, \
     for [i=1:words(files)] word(files, i) using 1:2 with linespoints lc i pt i lw 1.5 \
         pointsize 0.6 title "predicted: ".columnheader(1)
