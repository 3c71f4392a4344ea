# SPDX-License-Identifier: MIT
# Latency vs message size, one line per implementation variant; bars span p10..p90.
load plotsdir.'/common.gp'
set logscale y
set ylabel "median latency (us), bars p10..p90"
plot for [f in files] f using 1:2:3:4 with yerrorlines pointsize 0.7 title columnheader(1)
