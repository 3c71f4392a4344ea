#!/bin/bash
# PREPARED IN THE FORTY-FIRST SESSION (the cspm tree: the forty-second), the second call on the machine call.sh warmed (~300 s):
# timelines (every CTA's start, PDL-wait return and end: ci/engine-timeline.sh) of main and of the cspm
# tree at the engine's defaults: where the cp.async staging and the spreads move the attend's CTAs at
# T = 1 and 3 (their start after q_b's CTAs leave, their run after the wait, how many an SM: by-sm).
. ci/device-call.sh 330
set -u
mkdir -p "$O/tl" "$O/tlc"
[ -d .carry/tcspm ] || bash ci/overlay-tree.sh .carry/tcspm --patch .carry/cpa/cspm.patch
gen="['arch=compute_90,code=sm_90']"
for d in . .carry/tcspm; do
    (cd "$d" && { [ -d build-tl ] || meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=$gen" >/dev/null 2>&1; } &&
        ninja -C build-tl tests/engine/gpu/engine_gpu_bench >/dev/null 2>&1 && echo "build-tl $d ok $(el)") &
done
wait
timeout $(lim 120) bash ci/engine-timeline.sh "$O/tl" default= >"$O/tl/run.log" 2>&1; echo "tl base rc=$? $(el)"
(cd .carry/tcspm && timeout $(lim 120) bash ci/engine-timeline.sh "$O/tlc" default= >"$O/tlc/run.log" 2>&1); echo "tl cspm rc=$? $(el)"
for d in tl tlc; do
    echo "== $d"
    grep -E "^# /|^#   (kind|qb_absorb|attend|merge|uv) " "$O/$d/default-summary.txt" 2>/dev/null
    grep -E "^#   attend " -A6 "$O/$d/default-summary.txt" 2>/dev/null | grep -E "start|wait|end|run|mark"
    grep -E "^# /|by SM|run with [1-4] on|last end" "$O/$d/default-by-sm.txt" 2>/dev/null | head -120
done
echo "done $(el)"
