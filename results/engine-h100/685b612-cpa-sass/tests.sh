#!/bin/bash
# RUN 2026-12-08 01:23 UTC on an H100 (87 s) as `bash tests.sh` (PATCH cpa, the default): the cpa patch's
# engine GPU tests alone (the session's last ~340 s of device time): correctness, no timing. `bash tests.sh
# cspm` (the forty-second session's form, not run) applies .carry/cpa/cspm.patch instead. Carry
# [".carry/cpa", ".debs", "REVISION"] with this file and the patch there.
p=${1:-cpa}
. ci/device-call.sh 250
set -u
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
{ git apply .carry/cpa/$p.patch 2>/dev/null || patch -p1 <.carry/cpa/$p.patch >/dev/null; } && grep -q "cp_async16(cp\[q\]" engine/gpu/kernels/attend_ops.cuh && echo "patch $p applied" || echo "patch $p: FAILED"
nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
gen="['arch=compute_${cc},code=sm_${cc}']"
timeout $(lim 170) bash -c "meson setup build-gpu -Dnccl_home=/usr -Dgencode=\"$gen\" >'$O/setup.log' 2>&1 && ninja -C build-gpu -j16 tests/engine/gpu/test_engine_gpu_mla tests/engine/gpu/test_engine_gpu_persist >'$O/build.log' 2>&1" && echo "built $(el)" || { echo "build failed $(el)"; tail -5 "$O/build.log"; }
timeout $(lim 70) meson test -C build-gpu --no-rebuild 'engine gpu mla' 'engine gpu persist' --print-errorlogs >"$O/tests.log" 2>&1; echo "tests rc=$? $(el)"
grep -E "^ *[0-9]+/[0-9]+ |Ok:|Fail:|Skipped:|Timeout:" "$O/tests.log"
cp build-gpu/meson-logs/testlog.txt "$O/" 2>/dev/null
echo "done $(el)"
