# SPDX-License-Identifier: MIT
# Speedup over the best NCCL variant at each size (best NCCL median / this median).
load plotsdir.'/common.gp'
set ylabel "speedup over the best NCCL variant (x)"
plot for [f in payload_files] f using 1:6 with linespoints pointsize 0.7 title columnheader(1), \
     1 with lines dt 2 lc rgb 'black' title 'best NCCL variant'
