#!/bin/bash
# Device call 1 (2026-12-05): the engine A/B of three trees, 3 rounds each:
#   base = d450955 (main at the session's start), fz = 5e360f3 (noop's fused op: one launch a
#   call site), new = HEAD (fz + the MoE routed tiles' bulk L2 prefetch); the new tree's engine
#   GPU tests (owed since 44f4f4a's launcher change) and its noop fused / rmsnorm GPU tests.
# Everything under $OUT/r, tarred to $OUT/r.tgz.
set -u
O=$OUT/r; mkdir -p "$O/ab"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=true
T0=$(date +%s); el() { echo "$(($(date +%s) - T0)) s"; }
fin() { (cd "$OUT" && tar czf r.tgz r && rm -rf r); }
trap fin EXIT
trap 'exit 143' TERM INT
lim() { local l=$((540 - ($(date +%s) - T0))); [ "$l" -lt "$1" ] && echo $((l > 1 ? l : 1)) || echo "$1"; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION; } >"$O/machine.txt" 2>&1
cp .carry/run1.sh "$O/call.sh"
DEBS=.debs timeout $(lim 420) bash ci/engine-ab.sh "$O/ab" 3 base=.carry/base fz=.carry/fz new=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
cat "$O/ab/run.log" | grep -E "^(build|gpu tests|engine)|^ *[0-9]/[0-9]|graph  (decode|verify)"; echo "ab done $(el)"
(ninja -C build-gpu tests/collectives/noop/test_noop_fused tests/rmsnorm/test_rmsnorm_gpu >"$O/build-extra.log" 2>&1 &&
    timeout $(lim 60) meson test -C build-gpu --no-rebuild "noop fused" rmsnorm_gpu --print-errorlogs >"$O/tests-extra.log" 2>&1)
echo "extra tests rc=$? $(el)"; grep -E "^ *[0-9]/[0-9]|^(ok|FAIL)" "$O/tests-extra.log" "$O"/build-gpu-testlog.txt 2>/dev/null | head -20
cp build-gpu/meson-logs/testlog.txt "$O/testlog-extra.txt" 2>/dev/null
grep -E "^(ok|FAIL) " "$O/testlog-extra.txt" | head -20
