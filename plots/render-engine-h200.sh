#!/bin/bash
# SPDX-License-Identifier: MIT
# The committed engine figures of the one-H200 runs (results/e2e-h200/, from
# ci/gpu-1gpu.sh engine): kimi-k2, INT4, --tp-shape 8, the modeled plugin replaying six
# fabrics' all-reduce latencies, plain and speculative (k = 2, 3; acceptance 0.5..0.9).
#   plots/render-engine-h200.sh [OUTDIR]      (default plots/figures/engine)
set -eu
cd "$(dirname "$0")/.."
r=results/e2e-h200
out=${1:-plots/figures/engine}
# two figure sets of at most 8 series: the PCIe tables (hand-made and predicted), the 2 x H200 ones
render() { # OUTDIR NAME=LABEL...
    local dir=$1 args=() f k
    shift
    for f in "$@"; do
        for k in 2 3; do args+=("$r/e2e-${f%%=*}-k$k.csv=${f#*=}"); done
    done
    plots/engine_render.sh "${args[@]}" "$dir"
}
render "$out/pcie" "slow=seed table (NCCL 150-200 us)" "pcie-nccl-seed=NCCL LL/Simple (seed reading)" \
    "pcie-nccl=NCCL auto (predicted)" "pcie-p2p=p2p push (predicted)"
render "$out/h200" "h200nccl=2xH200 NCCL auto" "h200p2p=2xH200 p2p flag-free"
