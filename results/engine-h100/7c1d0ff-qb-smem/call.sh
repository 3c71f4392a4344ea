#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-qbs.sh", ".debs", "REVISION"].
# Thirtieth session: --qb-weights smem (the fused q_b's 16 rows a CTA copied into shared memory by
# cp.async before the PDL wait, 256-thread CTAs of <= 80 registers, qkv_a's and q_b's carveout set so a
# q_b CTA fits an SM beside two of qkv_a's; T <= 3) against the default (512 threads x 128 registers,
# weights in registers, a q_b CTA waiting for an empty SM): four alternated rounds of one tree, tokens
# compared; the GPU mla test (the smem form bit-identical at T = 1, 3, 8, with and without the prep);
# --check-steps kimi-k2 3 layers both ways (ci/engine-check.sh); the step's timeline both ways (does
# q_b start beside qkv_a now: its `early` and `ahead` columns), its build meanwhile on 4 cores.
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(
    meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" \
        >"$O/tl-build.log" 2>&1 && nice ninja -j4 -C build-tl tests/engine/gpu/engine_gpu_bench >>"$O/tl-build.log" 2>&1
    echo "tl build rc=$? $(el)"
) &
tlb=$!
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_qbs="--qb-weights smem --dump-tokens $O/ab/tokens-qbs.txt --force"
AB_TESTS= timeout $(lim 260) bash ci/engine-ab.sh "$O/ab" 4 base=. qbs=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | q_b | attend | step " "$O"/ab/diff-*.txt
cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-qbs.txt" && echo "tokens qbs: identical" || echo "tokens qbs: DIFFER"
ninja -C build-gpu tests/engine/gpu/test_engine_gpu_mla >"$O/build-tests.log" 2>&1 || echo "test build rc=$?"
timeout $(lim 60) meson test -C build-gpu --no-rebuild "engine gpu mla" --print-errorlogs >"$O/tests.log" 2>&1
echo "gpu tests rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"
grep -E "qb_smem|carveout|not ok|DIFFERS" build-gpu/meson-logs/testlog.txt | head -20
for t in base: qbs:--qb-weights=smem; do
    n=${t%%:*}; a=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 70) bash ci/engine-check.sh "$O/d" "k3-$n" . ${a:+${a/=/ }}
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-qbs
wait $tlb
timeout $(lim 120) bash ci/engine-timeline.sh "$O/tl" base= qbs="--qb-weights smem" >"$O/tl-run.log" 2>&1 || echo "tl rc=$?"
for n in base qbs; do
    echo "== $n"; grep -E "^# /|^#   (kind|qkva_prep|qb_absorb|attend|merge|o_proj) |a layer" "$O/tl/$n-summary.txt"
    grep -A4 "^#   qb_absorb *start" "$O/tl/$n-summary.txt" | head -8
done
echo "done $(el)"
