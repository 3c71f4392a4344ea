#!/bin/bash
# Before the call: carry [".carry/next2.sh", ".carry/topk.py", ".carry/tmain", ".carry/ttkt", ".debs", "REVISION"].
# Twenty-sixth session, second call: the step's timeline (ci/engine-timeline.sh, default options)
# of main (9291f63), tkt (c61e900: the ticket) and new (this tree: the ticket and the top-k), built
# side by side; .carry/topk.py on the router's top-k block of each.
. ci/device-call.sh 540
set -u
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
pids=() # the three timeline builds side by side (as ci/engine-timeline.sh makes them), then the runs one at a time
for d in .carry/tmain .carry/ttkt .; do
    (cd "$d" && meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" &&
        ninja -C build-tl -j5 tests/engine/gpu/engine_gpu_bench) >"$O/build-tl-${d//[.\/]/_}.log" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; echo "build rc=$? $(el)"; done
for t in main:.carry/tmain tkt:.carry/ttkt new:.; do
    n=${t%%:*} d=${t#*:}
    (cd "$d" && timeout $(lim 120) bash ci/engine-timeline.sh "$O/tl-$n" "$n=" >"$O/tl-$n.log" 2>&1; echo "timeline $n: rc=$? $(el)")
done
for n in main tkt new; do
    grep -v "^timeline_T\|^build" "$O/tl-$n.log" | grep -v "^#   [a-z_<>=0-9]* *\(start\|wait\|end\|run\) \|^#  *\(start\|wait\|end\|run\) " | head -30
    python3 .carry/topk.py "$O/tl-$n/$n-T1.csv.gz" "$O/tl-$n/$n-T3.csv.gz"
done
mkdir -p "$OUT/raw"; for n in main tkt new; do mv "$O"/tl-$n/*-T*.csv.gz "$OUT"/raw/ 2>/dev/null; done
echo "done $(el)"
