#!/bin/bash
# Thirty-second session, second call. Before the call: git rev-parse --short=12 HEAD > REVISION; carry
# [".carry/next-s32c.sh", ".debs", "REVISION"]; ~160 s of a call (attend and merge only).
# Where the T = 1 chain kernels' warps stall, instruction by instruction: Nsight Compute's warp-state
# sampling (SourceCounters) on one decode step of engine_gpu_bench (2 layers, context 4096: the fused
# q_b, attend, merge of both layers, MoE gate/up and down of the MoE layer), each kernel replayed alone
# (no PDL overlap: the pre-wait parts run cold). The report's details page and its SASS source page
# (CSV, per-instruction stall samples) come back; the thirty-second session's marks gave attend's and
# merge's phases in the step (docs/notes.md).
. ci/device-call.sh 160
set -u
mkdir -p "$O/ncu"
rm -rf build-gpu
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
(meson setup build-gpu -Dnccl_home=/usr "-Dgencode=['arch=compute_90,code=sm_90']" &&
    ninja -C build-gpu tests/engine/gpu/engine_gpu_bench) >"$O/build.log" 2>&1
echo "build rc=$? $(el)"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
"$ncu" --version | tail -1
# per step: attend and merge in each of the 2 layers: 4 launches
timeout $(lim 45) "$ncu" --clock-control none \
    -k "regex:mla_attend_pos_kernel|mla_merge_kernel" \
    --launch-skip $((512 * 4)) --launch-count 4 \
    --section LaunchStats --section WarpStateStats --section SourceCounters --section SpeedOfLight \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    -o "$O/ncu/rep" -f build-gpu/tests/engine/gpu/engine_gpu_bench --layers 2 --context 4096 --steps 2 \
    >"$O/ncu/run.log" 2>&1
echo "ncu rc=$? $(el)"
tail -5 "$O/ncu/run.log"
"$ncu" -i "$O/ncu/rep.ncu-rep" --page details >"$O/ncu/details.txt" 2>&1
echo "details rc=$? $(el)"
"$ncu" -i "$O/ncu/rep.ncu-rep" --page source --csv --print-source sass >"$O/ncu/source-sass.csv" 2>"$O/ncu/source.err"
echo "source rc=$? $(el) $(wc -c <"$O/ncu/source-sass.csv") bytes"
head -c 600 "$O/ncu/source.err"
head -3 "$O/ncu/source-sass.csv" | cut -c1-600
gzip -9 "$O/ncu/source-sass.csv" "$O/ncu/details.txt"
grep -E "^  [a-z_<>:0-9]|Duration|Warp Cycles Per Issued" <(zcat "$O/ncu/details.txt.gz") | sed 's/(const .*) (/(/' | head -40
echo "done $(el)"
