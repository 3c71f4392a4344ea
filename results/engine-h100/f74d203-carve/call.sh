#!/bin/bash
# Thirty-seventh session, second call. Before it, on main: .carry/cv/{g100,m32,r64}.patch and this
# file as .carry/cv/call.sh; git rev-parse --short=12 HEAD > REVISION; carry [".carry/cv", ".debs",
# "REVISION"]; ~360 s.
# Why: in ../11693d8-cpa/ the cp.async gate/up (48 KB of static shared memory a CTA, so a larger
# shared-memory configuration than main's 64 KiB) slowed the kernels AFTER it more than itself:
# qkv_a +2.7-2.9 us a layer, down +1.8-2.2, lm_head +2.8-3.5 (T = 1). Does the configuration alone
# do that, and does a smaller one or a neighbour's speed the step? The same code and bits, only
# cudaFuncAttributePreferredSharedMemoryCarveout set once a kernel (percent of 228 KiB, rounded up
# by the hardware):
#   m32   gate/up at T = 1 and down at 14% (32 KiB: two CTAs an SM still fit, 2 x 9.2 / 11.3 KiB);
#   r64   the router at 28% (64 KiB, gate/up's and down's configuration; the driver gives it 100).
# (g100, gate/up at 43% / 100 KiB, the configuration alone without cpa's code, was cut for the
# device time left: g100.patch is beside this file.) Then ncu LaunchStats (each tree, a short bench run) for the configurations actually chosen.
. ci/device-call.sh 370
set -u
mkdir -p "$O/ab" "$O/ncu"
rm -rf build-gpu .carry/tm32 .carry/tr64
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in m32 r64; do bash ci/overlay-tree.sh .carry/t$v --patch .carry/cv/$v.patch || echo "tree t$v: FAILED"; done
for v in base m32 r64; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export AB_TESTS=""
timeout $(lim 310) bash ci/engine-ab.sh "$O/ab" 4 base=. m32=.carry/tm32 r64=.carry/tr64 \
    >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|round)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | router | moe_| lm_head | step |rows compared" "$O"/ab/diff-*.txt
for v in m32 r64; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
echo "ab done $(el)"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in base m32 r64; do
    t=.; [ $v != base ] && t=.carry/t$v
    [ "$(lim 30)" -ge 20 ] || { echo "ncu $v: no time left"; break; }
    timeout $(lim 30) "$ncu" --clock-control none --section LaunchStats -k "regex:moe_gate_up|moe_down|router|qkva|gemv" -c 60 \
        $t/build-gpu/tests/engine/gpu/engine_gpu_bench --layers 2 --context 64 --steps 1 >"$O/ncu/all-$v.log" 2>&1
    echo "ncu $v rc=$? $(el)"
    awk '/^  [^ ].*\(.*Context/ {k=$0; sub(/\(.*/, "", k); sub(/^ *(void )?/, "", k)} /Shared Memory Configuration Size/ {print $NF, k}' \
        "$O/ncu/all-$v.log" | sort | uniq -c | sort -k3 >"$O/ncu/config-$v.txt"
    cat "$O/ncu/config-$v.txt"
done
echo "done $(el)"
