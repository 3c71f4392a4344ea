# SPDX-License-Identifier: MIT
# Every variant of one implementation (the detail behind the overview's fastest-per-size
# line), with the reference floors: the latency figure on a detail manifest.
load plotsdir.'/latency.gp'
