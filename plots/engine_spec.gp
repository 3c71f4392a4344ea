# SPDX-License-Identifier: MIT
# Speculative decoding: tok/s against acceptance rate p per (choice, k). Lines: the model
# (1 + sum_{i=1..k} p^i) / (k t_draft + t_verify) from the measured medians; points: measured
# runs at --accept-rate p; dotted: plain decode of the same choice; dashed verticals: the
# break-even acceptance (where the model meets plain decode).
load plotsdir.'/engine_common.gp'
set key below left vertical maxrows 4 font ",9"
set xrange [0:1]
set yrange [0:*]
set xlabel "acceptance rate p (each draft token accepted with probability p)"
set ylabel "tokens per second"
do for [i=1:nseries] {
    be = value(sprintf("be_%d", i))
    if (be >= 0 && be <= 1) {
        set arrow i from be, graph 0 to be, graph 1 nohead dt 2 lw 1.5 lc i
        set label i sprintf("break-even %.2f", be) at be, graph 0.03 + 0.05 * i left offset 0.5, 0 font ",8" tc lt i
    }
    if (be > 1) {
        set label i sprintf("%s: never breaks even", value(sprintf("title_%d", i))) at graph 0.02, graph 0.97 - 0.05 * i left font ",8" tc lt i
    }
}
plot for [i=1:nseries] value(sprintf("curve_%d", i)) using 1:2 with lines lw 2 lc i title value(sprintf("title_%d", i)), \
     for [i=1:nseries] value(sprintf("points_%d", i)) using 1:2 with points pt 7 ps 1.2 lc i notitle, \
     for [i=1:nseries] (value(sprintf("plain_draw_%d", i)) ? value(sprintf("plain_%d", i)) : NaN) with lines dt 3 lw 1.5 lc i \
         title (value(sprintf("plain_draw_%d", i)) ? "plain decode, ".value(sprintf("choice_%d", i)) : "")
