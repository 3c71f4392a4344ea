# SPDX-License-Identifier: MIT
# All-reduce + RMSNorm: fused kernels (solid) against all-reduce then RMSNorm (dashed).
load plotsdir.'/common.gp'
set logscale y
set ylabel "median latency of all-reduce + RMSNorm (us); dashed = unfused"
plot for [i=1:words(files)] word(files, i) using 1:2 with linespoints pointsize 0.7 \
     dt int(word(fusion_dt, i)) title columnheader(1)
