# SPDX-License-Identifier: MIT
# Step breakdown: median step time stacked as compute (the noop replay) + all-reduce
# (the rest), one bar per (phase, implementation choice): decode (T = 1) and verify (T = k + 1).
load plotsdir.'/engine_common.gp'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb '#333333'
set boxwidth 0.7
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set key inside top left
set ylabel "median step time (us)"
set xtics rotate by -25 left font ",9" nomirror
set bmargin 7
plot datafile using 2:xtic(1) title "compute (noop at every site)" lc rgb '#4477aa', \
     '' using 3 title "all-reduce (step - compute)" lc rgb '#ee6677'
