# SPDX-License-Identifier: MIT
# Bus bandwidth (GB/s, nccl-tests definition: algbw x 2(n-1)/n) vs message size.
load plotsdir.'/common.gp'
set ylabel "bus bandwidth (GB/s = 1e9 B/s)"
set yrange [0:*]
plot for [f in payload_files] f using 1:5 with linespoints pointsize 0.7 title columnheader(1)
