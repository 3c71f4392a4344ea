# SPDX-License-Identifier: MIT
# Latency vs message size, one line per series of the manifest (an implementation's fastest
# variant per size in the overview, every variant in a detail figure); bars span p10..p90;
# reference floors dashed.
load plotsdir.'/common.gp'
set logscale y
set yrange [lat_lo:lat_hi]
# 1-2-5 ticks: a log axis fitted to the data may span less than a decade.
set ytics ("0.1" 0.1, "0.2" 0.2, "0.5" 0.5, "1" 1, "2" 2, "5" 5, "10" 10, "20" 20, "50" 50, "100" 100, \
           "200" 200, "500" 500, "1000" 1000, "2000" 2000, "5000" 5000, "10000" 10000)
set ylabel "median latency (us), bars p10..p90"
plot for [i=1:words(files)] word(files, i) using 1:2:3:4 with yerrorlines lc rgb word(colors, i) \
     dt int(word(dts, i)) lw 1.5 pt 7 ps 0.45 title value(sprintf('title_%d', i))
load plotsdir.'/area.gp'
