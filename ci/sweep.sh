#!/bin/sh
# SPDX-License-Identifier: MIT
# The default sweep on every local GPU under mpirun; without a GPU, the host backends
# on 2 ranks. usage: ci/sweep.sh BUILD_DIR [arbench sweep options...]
set -eu
build=${1:-build}
shift || true
arbench="$build/harness/arbench"
[ -x "$arbench" ] || { echo "ci/sweep.sh: $arbench not built (run: make build)" >&2; exit 2; }
ngpu=$("$arbench" plugins | sed -n 's/^GPUs visible: \([0-9]*\).*/\1/p')
opts="--oversubscribe"
[ "$(id -u)" = 0 ] && opts="$opts --allow-run-as-root"
# NVLink multicast stays off (test machines; harmless elsewhere).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
if [ "${ngpu:-0}" -gt 0 ]; then
    echo "sweep: $ngpu GPU(s) visible: mpirun -np $ngpu"
    exec mpirun $opts -np "$ngpu" -x NCCL_NVLS_ENABLE "$arbench" sweep "$@"
fi
echo "sweep: no GPU visible ($("$arbench" plugins | sed -n 's/^GPUs visible: 0 - //p')): running the host backends on 2 ranks"
exec mpirun $opts -np 2 "$arbench" sweep --host "$@"
