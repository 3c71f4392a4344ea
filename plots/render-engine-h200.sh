#!/bin/bash
# SPDX-License-Identifier: MIT
# The committed engine figures of the one-H200 runs (results/README.md): kimi-k2, INT4,
# --tp-shape 8, with the modeled plugin replaying three fabrics' all-reduce latencies.
#   plots/render-engine-h200.sh [OUTDIR]      (default plots/figures/engine)
set -eu
cd "$(dirname "$0")/.."
r=results/e2e-h200
exec plots/engine_render.sh \
    "$r/e2e-slow-k2.csv=seed PCIe table (NCCL ~200 us)" "$r/e2e-slow-k3.csv=seed PCIe table (NCCL ~200 us)" \
    "$r/e2e-h200nccl-k2.csv=2xH200 NCCL auto" "$r/e2e-h200nccl-k3.csv=2xH200 NCCL auto" \
    "$r/e2e-h200p2p-k2.csv=2xH200 p2p flag-free" "$r/e2e-h200p2p-k3.csv=2xH200 p2p flag-free" \
    "${1:-plots/figures/engine}"
