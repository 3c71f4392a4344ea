# SPDX-License-Identifier: MIT
# Records where gnuplot put the plot area (terminal units over the canvas) for the test:
# xmin xmax ymin ymax canvas_w canvas_h, in pixels.
set print areafile
print sprintf("%.1f %.1f %.1f %.1f %.1f %.1f", GPVAL_TERM_XMIN, GPVAL_TERM_XMAX, GPVAL_TERM_YMIN, GPVAL_TERM_YMAX, GPVAL_TERM_XSIZE / GPVAL_TERM_SCALE, GPVAL_TERM_YSIZE / GPVAL_TERM_SCALE)
set print
