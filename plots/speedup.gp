# SPDX-License-Identifier: MIT
# Speedup over the fastest baseline variant at each size (its median / this median),
# candidates only; the dashed line at 1 is the baseline.
load plotsdir.'/common.gp'
set ylabel "speedup over the fastest baseline (NCCL) variant (x)"
set yrange [0:*]
plot for [i=1:words(speedup_files)] word(speedup_files, i) using 1:6 with linespoints \
     lc rgb word(speedup_colors, i) lw 1.5 pt 7 ps 0.45 title columnheader(1), \
     1 with lines dt 2 lc rgb 'black' title 'baseline'
load plotsdir.'/area.gp'
