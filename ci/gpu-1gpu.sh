#!/bin/bash
# SPDX-License-Identifier: MIT
# What one GPU can prove, in two phases that fit a device call each (logs and CSVs in OUT):
#
#   ci/gpu-1gpu.sh suite  OUT [OLD_TREE]   deps, build, the GPU test suite, one-rank sweeps of
#                                          the redesign against OLD_TREE (a source tree of the
#                                          previous main, built beside it) alternated A/B/A/B,
#                                          and the issue-14 engine run (kimi-k2, INT4, tp-shape 8)
#   ci/gpu-1gpu.sh fused  OUT [OLD_TREE]   the fused-path check: p2p fused tests, the register
#                                          kernel and pull (opened second) old vs new, A/B/A/B
#   ci/gpu-1gpu.sh engine OUT              speculative cycles with another machine's latencies
#                                          replayed by the modeled plugin (a slow PCIe table and
#                                          the 2 x H200 NCCL and p2p results), k = 2 and 3
#
# Builds sm_90 only (the H200 machines) to keep the call short; DEBS (default .debs) is the
# folder of .debs for air-gapped machines. The engine phase reuses the suite phase's build.
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:?phase: suite or engine}; out=${2:?OUT}; old=${3:-}
debs=${DEBS:-.debs}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=${CI:-true}
mpi="mpirun --allow-run-as-root --oversubscribe -np 1 -x NCCL_NVLS_ENABLE -x CI"
status=0
note() { echo "== $1"; }
arb=b/harness/arbench
gencode="-Dgencode=['arch=compute_90,code=sm_90']"

build() { # name srcdir
    if [ ! -f "$2/b/build.ninja" ]; then
        (cd "$2" && meson setup b -Dnccl_home=/usr "$gencode") >"$out/setup-$1.log" 2>&1 || return 1
    fi
    ninja -C "$2/b" >"$out/build-$1.log" 2>&1
}

if [ "$phase" = suite ]; then
    { date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; } >"$out/machine.txt" 2>&1
    [ -d "$debs" ] && ci/deps.sh --debs "$debs" >"$out/deps.log" 2>&1
    build new . & pn=$!
    [ -n "$old" ] && { build old "$old" & po=$!; }
    wait $pn && note "build: ok" || { note "build: FAILED"; tail -20 "$out/build-new.log"; exit 1; }
    [ -n "$old" ] && { wait $po && note "old build: ok" || { note "old build: FAILED"; old=; }; }
    $arb plugins -v >"$out/plugins.txt" 2>&1
    timeout 260 meson test -C b --suite gpu --num-processes 1 --print-errorlogs >"$out/gpu-tests.log" 2>&1
    note "gpu tests: rc=$? $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/gpu-tests.log" | tr -s ' ' | tr '\n' ' ')"
    grep -E "^ *[0-9]+/[0-9]+ " "$out/gpu-tests.log" | grep -vE " OK | SKIP " | head -20
    # The redesign against the previous main, one rank, alternated to cancel drift.
    sw="--impl noop,ping,nccl,p2p,hoststaged --sizes 14336,43008 --modes graph,eager --iters 200"
    fz="--op allreduce_rmsnorm --impl p2p --tokens 3 --modes graph,context --iters 200"
    for r in a b; do
        for t in old new; do
            [ $t = old ] && { [ -n "$old" ] || continue; a="$old/b/harness/arbench"; } || a=$arb
            timeout 120 $mpi "$a" sweep $sw --out "$out/h200x1-$t-$r.csv" >"$out/h200x1-$t-$r.log" 2>&1 || note "sweep $t $r: FAILED"
            timeout 120 $mpi "$a" sweep $fz --out "$out/h200x1-fused-$t-$r.csv" >"$out/h200x1-fused-$t-$r.log" 2>&1 || note "fused sweep $t $r: FAILED"
        done
    done
    if [ -n "$old" ]; then
        $arb gate --baseline "$out/h200x1-old-a.csv" --baseline "$out/h200x1-old-b.csv" --candidate "$out/h200x1-new-b.csv" \
            >"$out/gate-h200x1-old-vs-new.txt" 2>&1
        note "gate old a+b vs new b: exit $? ($(grep -m1 -i '^result' "$out/gate-h200x1-old-vs-new.txt"))"
    fi
    grep -c $'\033' "$out/h200x1-new-a.log" | sed 's/^/escape sequences in a sweep log: /'
    # Issue 14's run: one TP=8 rank of kimi-k2 with noop at every site (compute only).
    timeout 200 $mpi $arb engine --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --steps 32 --impl noop \
        --modes graph --out "$out/engine-kimi-k2-int4-tp8-h200.csv" >"$out/engine-kimi-k2-int4-tp8-h200.log" 2>&1
    note "engine kimi-k2: rc=$?"; tail -25 "$out/engine-kimi-k2-int4-tp8-h200.log"
    exit $status
fi

if [ "$phase" = engine ]; then
    [ -x $arb ] || build new . || { note "build: FAILED"; exit 1; }
    # Speculative decoding with another machine's all-reduce latencies (modeled plugin):
    # a slow PCIe fabric (the seed's hand-made table) and the committed 2 x H200 results of
    # NCCL (auto) and of the best custom kernel (p2p flag-free). E2E_TABLES picks some.
    declare -A tab=(
        [slow]="modeled:table=model/tables/pcie-latency-example.csv,ranks=8,offset_us=0.7"
        [h200nccl]="modeled:table=results/h200x2-default.csv,impl=nccl,mode=graph,offset_us=0.7,params=algo=auto,proto=auto,nccl=2.28.3"
        [h200p2p]="modeled:table=results/h200x2-default.csv,impl=p2p,mode=graph,offset_us=0.7,params=variant=oneshot-flagfree,blocks=24,threads=256,row_blocks=auto"
    )
    for f in ${E2E_TABLES:-slow h200nccl h200p2p}; do
        for k in 2 3; do
            nr="--no-noop-replay"; [ $k = 2 ] && nr=""
            timeout 120 $mpi $arb engine --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --steps 16 --modes graph \
                --spec-k $k --accept-rate 0.7 $nr --impl "${tab[$f]}" --out "$out/e2e-$f-k$k.csv" >"$out/e2e-$f-k$k.log" 2>&1
            note "e2e $f k=$k: rc=$?"; grep -E "^# graph|arbench engine:" "$out/e2e-$f-k$k.log" | tail -4
        done
    done
    exit $status
fi
if [ "$phase" = fused ]; then
    # The fused-path regression check: the register kernel (flag-free 64x1024 row_blocks=1)
    # and pull opened second (the first variant's buffers land elsewhere), old vs new, A/B/A/B.
    [ -d "$debs" ] && ci/deps.sh --debs "$debs" >"$out/deps.log" 2>&1
    build new . & pn=$!
    [ -n "$old" ] && { build old "$old" & po=$!; }
    wait $pn && note "build: ok" || { note "build: FAILED"; tail -20 "$out/build-new.log"; exit 1; }
    [ -n "$old" ] && { wait $po || old=; }
    timeout 200 meson test -C b p2p-fused-check-np1 p2p-fused-stress-np1 symm-fused-np1-h7168 symm-fused-np1-h1001 \
        --num-processes 1 --print-errorlogs >"$out/fused-tests.log" 2>&1
    note "fused tests: rc=$? $(grep -E '^(Ok|Fail|Skipped):' "$out/fused-tests.log" | tr -s ' ' | tr '\n' ' ')"
    impls='p2p:variant=oneshot-push,blocks=24,threads=256,p2p:variant=oneshot-pull,blocks=8,threads=512,p2p:variant=oneshot-flagfree,blocks=64,threads=1024,row_blocks=1,p2p:variant=oneshot-flagfree,blocks=24,threads=256'
    for r in a b; do
        for t in old new; do
            [ $t = old ] && { [ -n "$old" ] || continue; a="$old/b/harness/arbench"; } || a=$arb
            timeout 120 $mpi "$a" sweep --op allreduce_rmsnorm --impl "$impls" --tokens 3 --modes graph,context --iters 200 \
                --out "$out/h200x1-fused2-$t-$r.csv" >"$out/h200x1-fused2-$t-$r.log" 2>&1 || note "fused sweep $t $r: FAILED"
        done
    done
    [ -n "$old" ] && { $arb gate --baseline "$out/h200x1-fused2-old-a.csv" --baseline "$out/h200x1-fused2-old-b.csv" \
        --candidate "$out/h200x1-fused2-new-b.csv" >"$out/gate-h200x1-fused2-old-vs-new.txt" 2>&1;
        note "gate fused2 old a+b vs new b: exit $? ($(grep -m1 -i '^result' "$out/gate-h200x1-fused2-old-vs-new.txt"))"; }
    grep -E "^(REGRESSION|ok|improved)" "$out/gate-h200x1-fused2-old-vs-new.txt" | cut -c1-160
    exit $status
fi
echo "ci/gpu-1gpu.sh: unknown phase '$phase' (expected suite or engine)" >&2
exit 2
