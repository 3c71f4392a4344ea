#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-marks.sh", ".carry/qbmarks.py", ".debs", "REVISION"].
# Thirtieth session: where the fused q_b's ~4.2 us after its PDL wait go (results/engine-h100/7c1d0ff-qb-smem/:
# the same with its weights already in shared memory): timelines of main's step with the wait's stamp
# moved to mla_qb.cu's marks (ARB_TL_MARK=k: 1 the prep done, 2 the q rows stored, 3 a nope CTA's
# absorption part stored, 4 the head's last CTA past its ticket; m0 the PDL wait), read by qbmarks.py;
# the same build's timelines with --moe-early off and spec-sync (qkv_a under spec against off, and how
# often spec-sync's guess is wrong: moe_down_reissues); the GPU moe test (its merged late-selection loop
# has not run on a GPU).
. ci/device-call.sh 480
set -u
mkdir -p "$O/tl"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
timeout $(lim 220) bash ci/engine-timeline.sh "$O/tl" m0= off="--moe-early off" ss="--moe-early spec-sync" \
    >"$O/tl-run.log" 2>&1 || echo "tl rc=$?"
grep -E "^build-tl|rc=" "$O/tl-run.log"
grep -h "timeline_T=" "$O"/tl/*.log | sed 's/file=[^ ]*\/\([^/]*\) /\1 /'
for k in 1 2 3 4; do
    ARB_TL_MARK=$k timeout $(lim 60) bash ci/engine-timeline.sh "$O/tl" "m$k=" >>"$O/tl-run.log" 2>&1 || echo "m$k rc=$?"
done
echo "marks $(el)"
python3 .carry/qbmarks.py "$O"/tl/m[0-4]-T1.csv.gz "$O"/tl/m[0-4]-T3.csv.gz
for n in m0 off ss; do
    echo "== $n"; grep -E "^# /|^#   (qkva_prep|qb_absorb|attend|router|gate_up|down) |a layer" "$O/tl/$n-summary.txt"
done
ARB_TL_MARK=9 build-tl/tests/engine/gpu/engine_gpu_bench --steps 1 --timeline "$O/tl/bad" 2>&1 | tail -1
ninja -C build-tl tests/engine/gpu/test_engine_gpu_moe >"$O/build-tests.log" 2>&1 || echo "moe test build rc=$?"
timeout $(lim 90) meson test -C build-tl --no-rebuild "engine gpu moe" --print-errorlogs >"$O/tests.log" 2>&1
echo "moe test rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"
grep -E "not ok|^ok" build-tl/meson-logs/testlog.txt | head -20
rm -f "$O"/tl/m[1-4]-T*.csv.gz "$O"/tl/bad*
echo "done $(el)"
