#!/bin/bash
# SPDX-License-Identifier: MIT
# What one GPU can prove, in two phases that fit a device call each (logs and CSVs in OUT):
#
#   ci/gpu-1gpu.sh suite  OUT [OLD_TREE]   deps, build, the GPU test suite, one-rank sweeps of
#                                          the redesign against OLD_TREE (a source tree of the
#                                          previous main, built beside it) alternated A/B/A/B,
#                                          and the compute-only engine run (kimi-k2, INT4, tp-shape 8)
#   ci/gpu-1gpu.sh fused  OUT [OLD_TREE]   the fused-path check: p2p fused tests, the register
#                                          kernel and pull (opened second) old vs new, A/B/A/B
#   ci/gpu-1gpu.sh engine OUT              the engine in one command: plain and speculative decoding
#                                          (k = 2, 3; acceptance 0.5..0.9) with other machines'
#                                          latencies replayed by the modeled plugin, the seed's-
#                                          shape verdicts (OUT/e2e-shape.txt) and the figures
#   ci/gpu-1gpu.sh engine-report OUT       only the verdicts and figures from OUT's CSVs
#   (E2E_TABLES, E2E_K (default "2 3") and E2E_STEPS (default 48) narrow the engine phase)
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
bd=${ARB_BUILD:-build-gpu} # git-ignored (/build*/): kept on the device between calls
arb=$bd/harness/arbench
gencode="-Dgencode=['arch=compute_90,code=sm_90']"

build() { # name srcdir
    if [ ! -f "$2/$bd/build.ninja" ]; then
        (cd "$2" && meson setup "$bd" -Dnccl_home=/usr "$gencode") >"$out/setup-$1.log" 2>&1 || return 1
    fi
    ninja -C "$2/$bd" >"$out/build-$1.log" 2>&1
}

if [ "$phase" = suite ]; then
    { date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; } >"$out/machine.txt" 2>&1
    [ -d "$debs" ] && ci/deps.sh --debs "$debs" >"$out/deps.log" 2>&1
    build new . & pn=$!
    [ -n "$old" ] && { build old "$old" & po=$!; }
    wait $pn && note "build: ok" || { note "build: FAILED"; tail -20 "$out/build-new.log"; exit 1; }
    [ -n "$old" ] && { wait $po && note "old build: ok" || { note "old build: FAILED"; old=; }; }
    $arb plugins -v >"$out/plugins.txt" 2>&1
    timeout 260 meson test -C "$bd" --suite gpu --num-processes 1 --print-errorlogs >"$out/gpu-tests.log" 2>&1
    note "gpu tests: rc=$? $(grep -E '^(Ok|Fail|Skipped|Timeout):' "$out/gpu-tests.log" | tr -s ' ' | tr '\n' ' ')"
    grep -E "^ *[0-9]+/[0-9]+ " "$out/gpu-tests.log" | grep -vE " OK | SKIP " | head -20
    # The redesign against the previous main, one rank, alternated to cancel drift.
    sw="--impl noop,ping,nccl,p2p,hoststaged --sizes 14336,43008 --modes graph,eager --iters 200"
    fz="--op allreduce_rmsnorm --impl p2p --tokens 3 --modes graph,context --iters 200"
    for r in a b; do
        for t in old new; do
            [ $t = old ] && { [ -n "$old" ] || continue; a="$old/$bd/harness/arbench"; } || a=$arb
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
    # The engine alone: one TP=8 rank of kimi-k2 with noop at every site (compute only).
    timeout 200 $mpi $arb engine --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --steps 32 --impl noop \
        --modes graph --out "$out/engine-kimi-k2-int4-tp8-h200.csv" >"$out/engine-kimi-k2-int4-tp8-h200.log" 2>&1
    note "engine kimi-k2: rc=$?"; tail -25 "$out/engine-kimi-k2-int4-tp8-h200.log"
    exit $status
fi

# The seed's-shape verdicts and the figures from the engine phase's CSVs (no GPU needed).
report() {
    shape=$bd/engine/tools/arb-engine-shape
    [ -x $shape ] || ninja -C "$bd" engine/tools/arb-engine-shape >/dev/null || return 1
    : >"$out/e2e-shape.txt"
    for pair in "slow h200p2p" "pcie-nccl-seed pcie-p2p" "pcie-nccl pcie-p2p" "h200nccl h200p2p"; do
        set -- $pair
        ls "$out"/e2e-"$1"-k[0-9].csv >/dev/null 2>&1 && ls "$out"/e2e-"$2"-k[0-9].csv >/dev/null 2>&1 || continue
        args=$(for f in "$out"/e2e-"$1"-k[0-9].csv "$out"/e2e-"$2"-k[0-9].csv; do t=${f##*/e2e-}; printf '%s=%s ' "$f" "${t%-k*}"; done)
        # shellcheck disable=SC2086
        { echo "## slow $1, fast $2"; $shape --slow "$1" --fast "$2" $args; echo "## exit $?"; echo; } >>"$out/e2e-shape.txt" 2>&1
    done
    grep -E "^## |seed's shape|the shape holds|no acceptance gives" "$out/e2e-shape.txt"
    # a build dir another script made for some targets only (ci/engine-ab.sh's) may lack the tool
    [ -x "$bd/engine/tools/arb-engine-plotdata" ] || ninja -C "$bd" engine/tools/arb-engine-plotdata >/dev/null
    plots/engine_render.sh --tool $bd/engine/tools/arb-engine-plotdata \
        $(for f in "$out"/e2e-*-k2.csv "$out"/e2e-*-k3.csv; do [ -f "$f" ] || continue; t=${f##*/e2e-}; printf '%s=%s ' "$f" "${t%-k*}"; done) \
        "$out/figures" >"$out/plots.log" 2>&1 || note "plots: FAILED (see plots.log)"
}

if [ "$phase" = engine ] || [ "$phase" = engine-report ]; then
    [ -x $arb ] || build new . || { note "build: FAILED"; exit 1; }
    # Speculative decoding with other machines' all-reduce latencies (modeled plugin), plain
    # and speculative (k = 2 and 3, acceptance 0.5 to 0.9 in one run each):
    #   slow            the seed's hand-made slow-PCIe table (model/tables/pcie-latency-example.csv)
    #   pcie-nccl       NCCL's choice predicted for 8 x RTX PRO 6000 behind switch pairs (docs/model.md)
    #   pcie-nccl-seed  the seed reading: NCCL Ring/LL at one token, Ring/Simple at more (model/scenarios/)
    #   pcie-p2p        the p2p one-shot push predicted for the same machine
    #   h200nccl, h200p2p  the committed 2 x H200 results of NCCL and of the p2p flag-free kernel
    # E2E_TABLES picks some (default all); engine-report only renders verdicts and figures.
    pred="table=results/model-pcie-switch-pairs-8.csv,mode=graph,ranks=8,offset_us=0.7"
    declare -A tab=(
        [slow]="--impl modeled:table=model/tables/pcie-latency-example.csv,ranks=8,offset_us=0.7"
        [pcie-nccl]="--impl modeled:$pred,impl=nccl,params=algo=auto,proto=auto"
        [pcie-nccl-seed]="--profile model/scenarios/seed-nccl-ll-then-simple.csv"
        [pcie-p2p]="--impl modeled:$pred,impl=p2p,params=variant=oneshot-push,blocks=24,threads=256"
        [h200nccl]="--impl modeled:table=results/h200x2-default.csv,impl=nccl,mode=graph,offset_us=0.7,params=algo=auto,proto=auto,nccl=2.28.3"
        [h200p2p]="--impl modeled:table=results/h200x2-default.csv,impl=p2p,mode=graph,offset_us=0.7,params=variant=oneshot-flagfree,blocks=24,threads=256,row_blocks=auto"
    )
    if [ "$phase" = engine ]; then
        for f in ${E2E_TABLES:-slow pcie-nccl pcie-nccl-seed pcie-p2p h200nccl h200p2p}; do
            for k in ${E2E_K:-2 3}; do
                nr="--no-noop-replay"; [ $k = 2 ] && nr=""
                # shellcheck disable=SC2086
                timeout 170 $mpi $arb engine --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --steps ${E2E_STEPS:-48} --modes graph \
                    --spec-k $k --accept-rate 0.5,0.6,0.7,0.8,0.9 $nr ${tab[$f]} --out "$out/e2e-$f-k$k.csv" >"$out/e2e-$f-k$k.log" 2>&1
                note "e2e $f k=$k: rc=$? ($(date -u +%T))"; grep -E "^# graph|^# call sites|^(decode|verify) |arbench engine:" "$out/e2e-$f-k$k.log" | cut -c1-150 | tail -12
                # a site that fell back ran another plugin than the table names: not this fabric's figures
                if grep -q "^# fallback" "$out/e2e-$f-k$k.log"; then
                    note "e2e $f k=$k: FAILED: call sites fell back (see its log); its rows are not $f's"
                    grep "^# fallback" "$out/e2e-$f-k$k.log" | cut -c1-200
                    status=1
                fi
            done
        done
    fi
    report
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
    timeout 200 meson test -C "$bd" p2p-fused-check-np1 p2p-fused-stress-np1 symm-fused-np1-h7168 symm-fused-np1-h1001 \
        --num-processes 1 --print-errorlogs >"$out/fused-tests.log" 2>&1
    note "fused tests: rc=$? $(grep -E '^(Ok|Fail|Skipped):' "$out/fused-tests.log" | tr -s ' ' | tr '\n' ' ')"
    impls='p2p:variant=oneshot-push,blocks=24,threads=256,p2p:variant=oneshot-pull,blocks=8,threads=512,p2p:variant=oneshot-flagfree,blocks=64,threads=1024,row_blocks=1,p2p:variant=oneshot-flagfree,blocks=24,threads=256'
    for r in a b; do
        for t in old new; do
            [ $t = old ] && { [ -n "$old" ] || continue; a="$old/$bd/harness/arbench"; } || a=$arb
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
echo "ci/gpu-1gpu.sh: unknown phase '$phase' (expected suite, fused, engine or engine-report)" >&2
exit 2
