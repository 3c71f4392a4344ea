#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-cv.sh", ".debs", "REVISION"].
# Twenty-eighth session, second call: --smem-carveout (every engine kernel's L1 / shared split).
# The first call's ncu said the attention's kernels ran at a 132 KiB carveout and the MoE's at 64
# KiB: PDL neighbours at different splits. (1) ncu LaunchStats of every kernel of a short run
# (2 layers, context 64), the default and --smem-carveout 132: each kernel's configuration;
# (2) ci/engine-ab.sh, four alternated rounds: driver (base) against 132, 164 and 100 KiB, the
# tokens compared; (3) the kernels test (l2_pull with a carveout) and --check-steps with 132.
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab" "$O/d" "$O/ncu"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for n in base c132 c164 c100; do
    x=""; [ "$n" != base ] && x="--smem-carveout ${n#c}"
    export ENGINE_ARGS_$n="$x --dump-tokens $O/ab/tokens-$n.txt --force"
done
AB_TESTS= timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 4 base=. c132=. c164=. c100=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^kernels diff| step | moe_gate_up | moe_down | attend | router | combine " "$O"/ab/diff-*.txt
for n in c132 c164 c100; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical" || echo "tokens $n: DIFFER"; done
echo "ab done $(el)"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for n in driver 132; do
    timeout $(lim 60) "$ncu" --clock-control none --section LaunchStats \
        build-gpu/tests/engine/gpu/engine_gpu_bench --layers 2 --context 64 --steps 1 --smem-carveout $n >"$O/ncu/all-$n.log" 2>&1
    echo "ncu $n rc=$? $(el)"
    awk '/^  [^ ].*\(.*Context/ {k=$0; sub(/\(.*/, "", k); sub(/^ *(void )?/, "", k)} /Shared Memory Configuration Size/ {print $NF, k}' \
        "$O/ncu/all-$n.log" | sort | uniq -c | sort -k3 >"$O/ncu/config-$n.txt"
    cat "$O/ncu/config-$n.txt"
done
ninja -C build-gpu tests/engine/gpu/test_engine_gpu_kernels >"$O/build-tests.log" 2>&1
timeout $(lim 40) meson test -C build-gpu --no-rebuild "engine gpu kernels" --print-errorlogs >"$O/tests.log" 2>&1
echo "gpu tests rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"
eng() { # NAME ARGS...: one engine run of this tree
    local n=$1; shift
    timeout $(lim 45) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --modes graph \
        --no-noop-replay --out "$O/d/$n.csv" --force --dump-logits "$O/d/logits-$n.bin" >"$O/d/$n.log" 2>&1
    echo "engine $n: rc=$? $(el)"; grep -E "check vs|selected experts|graph  (decode|verify)" "$O/d/$n.log" | tail -4
}
K3="--config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl"
# shellcheck disable=SC2086
{
eng k3-base $K3
eng k3-c132 $K3 --smem-carveout 132
}
cmp "$O/d/logits-k3-base.bin" "$O/d/logits-k3-c132.bin" && echo "logits k3: c132 = base" || echo "logits k3: DIFFER"
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
