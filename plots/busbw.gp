# SPDX-License-Identifier: MIT
# Bus bandwidth (GB/s, nccl-tests definition: algbw x 2(n-1)/n) vs message size; the
# floors move no payload and are left out.
load plotsdir.'/common.gp'
set ylabel "bus bandwidth (GB/s = 1e9 B/s)"
set yrange [0:*]
plot for [i=1:words(payload_files)] word(payload_files, i) using 1:5 with linespoints \
     lc rgb word(payload_colors, i) lw 1.5 pt 7 ps 0.45 title columnheader(1)
load plotsdir.'/area.gp'
