#!/bin/bash
# SPDX-License-Identifier: MIT
# On a GPU machine, from a clean checkout (air-gapped: give the .debs folder):
# install dependencies offline, build against the machine's own NCCL, run the GPU test
# suite, run a smoke sweep on all local GPUs with mpirun, print a short summary.
#
#   ci/gpu.sh [--debs DIR] [--build DIR] [--out DIR] [--tests SUITE] [--no-tests] [--no-smoke]
#
# Logs and CSVs go to --out (default gpu-out/). Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."
debs="" build=build-gpu out=gpu-out suite=gpu tests=1 smoke=1
while [ $# -gt 0 ]; do
    case $1 in
    --debs) debs=$2; shift ;;
    --build) build=$2; shift ;;
    --out) out=$2; shift ;;
    --tests) suite=$2; shift ;;
    --no-tests) tests=0 ;;
    --no-smoke) smoke=0 ;;
    *) echo "ci/gpu.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$out"
# NVLink multicast stays off on the test machines; harmless elsewhere.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CI=${CI:-true}
status=0
summary=()
note() { summary+=("$1"); echo "== $1"; }

{
    date -u; uname -a; nvidia-smi -L; nvidia-smi topo -m
    ls -l /usr/include/nccl*.h /usr/lib/x86_64-linux-gnu/libnccl* 2>/dev/null
    command -v meson ninja mpirun nvcc pkg-config
    pkg-config --modversion hwloc ompi-c jansson 2>&1
} >"$out/machine.txt" 2>&1

if [ -n "$debs" ]; then
    ci/deps.sh --debs "$debs" >"$out/deps.log" 2>&1 || { note "deps: FAILED (see deps.log)"; status=1; }
else
    ci/deps.sh --check >"$out/deps.log" 2>&1 || ci/deps.sh >>"$out/deps.log" 2>&1 || { note "deps: FAILED"; status=1; }
fi

# Build against the machine's own NCCL: the system one when present.
nccl_opt=""
[ -f /usr/include/nccl.h ] && nccl_opt="-Dnccl_home=/usr"
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" $nccl_opt >"$out/setup.log" 2>&1 || { note "meson setup: FAILED"; tail -30 "$out/setup.log"; exit 1; }
fi
if ninja -C "$build" >"$out/build.log" 2>&1; then
    note "build: ok ($(grep -m1 'NCCL header version' "$out/setup.log" 2>/dev/null | tr -s ' '))"
else
    note "build: FAILED"
    grep -E "error|FAILED" "$out/build.log" | head -20
    exit 1
fi
"$build/harness/arbench" plugins >"$out/plugins.txt" 2>&1
note "$(head -2 "$out/plugins.txt" | tr '\n' ' ')"

if [ $tests = 1 ]; then
    timeout 420 meson test -C "$build" --suite "$suite" --num-processes 1 --print-errorlogs >"$out/tests.log" 2>&1
    rc=$?
    cp "$build/meson-logs/testlog.txt" "$out/testlog.txt" 2>/dev/null
    note "tests ($suite): rc=$rc; $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/tests.log" | tr -s ' ' | tr '\n' ' ')"
    grep -E "^ *[0-9]+/[0-9]+ " "$out/tests.log" | grep -vE " OK | SKIP " | head -20
    [ $rc -eq 0 ] || status=1
fi

if [ $smoke = 1 ]; then
    rm -f "$out/smoke.csv" # a fresh file: sweeps refuse to append without --append
    if timeout 300 ci/sweep.sh "$build" --sizes 43008,1M --modes eager,graph --iters 50 --graph-replays 20 \
        --out "$out/smoke.csv" >"$out/smoke.log" 2>&1; then
        note "smoke sweep: ok, $(tail -1 "$out/smoke.log")"
    else
        note "smoke sweep: FAILED, $(tail -1 "$out/smoke.log")"
        status=1
    fi
fi
echo
echo "summary:"
printf '  %s\n' "${summary[@]}"
exit $status
