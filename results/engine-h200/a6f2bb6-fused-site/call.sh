#!/bin/bash
# Device call 2 (2026-12-05): the engine A/B of three trees, 2 rounds each, with every step's
# greedy tokens dumped: base = d450955 (main at the session's start), new = HEAD (noop's fused
# op with a zero sum: one launch a call site, the same bits), pf2 = HEAD + the MoE routed
# tiles' bulk L2 prefetch issued after the first round's loads (an experiment); the trees'
# engine GPU tests, HEAD's noop fused / rmsnorm GPU tests; then the e2e verdicts (E2E_K=2) on
# HEAD's build. Everything under $OUT/r, tarred to $OUT/r.tgz.
set -u
O=$OUT/r; mkdir -p "$O/ab" "$O/e2e"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=true
T0=$(date +%s); el() { echo "$(($(date +%s) - T0)) s"; }
fin() { (cd "$OUT" && tar czf r.tgz r && rm -rf r); }
trap fin EXIT
trap 'exit 143' TERM INT
lim() { local l=$((555 - ($(date +%s) - T0))); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION; } >"$O/machine.txt" 2>&1
cp .carry/run2.sh "$O/call.sh"
for t in base new pf2; do export "ENGINE_ARGS_$t=--dump-tokens $O/ab/tokens-$t.txt --force"; done
DEBS=.debs timeout $(lim 270) bash ci/engine-ab.sh "$O/ab" 2 base=.carry/base new=. pf2=.carry/pf2 >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|gpu tests|engine)|^ *[0-9]/[0-9]|graph  (decode|verify)" "$O/ab/run.log"; echo "ab done $(el)"
for t in new pf2; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$t.txt" && echo "tokens $t: identical to base ($(wc -l <"$O/ab/tokens-$t.txt") lines)"; done
(ninja -C build-gpu tests/collectives/noop/test_noop_fused tests/rmsnorm/test_rmsnorm_gpu engine/tools/arb-engine-shape >"$O/build-extra.log" 2>&1 &&
    timeout $(lim 60) meson test -C build-gpu --no-rebuild "noop fused" rmsnorm_gpu --print-errorlogs >"$O/tests-extra.log" 2>&1)
echo "extra tests rc=$? $(el)"; cp build-gpu/meson-logs/testlog.txt "$O/testlog-extra.txt" 2>/dev/null
grep -E "^ *[0-9]/[0-9]" "$O/tests-extra.log"; grep -E "^(ok|FAIL) .*(noop|declined)" "$O/testlog-extra.txt" | head -16
E2E_K=2 ARB_BUILD=build-gpu timeout $(lim 290) bash ci/gpu-1gpu.sh engine "$O/e2e" >"$O/e2e/e2e-call.log" 2>&1
echo "e2e rc=$? $(el)"; grep -E "^== " "$O/e2e/e2e-call.log" | head -20
