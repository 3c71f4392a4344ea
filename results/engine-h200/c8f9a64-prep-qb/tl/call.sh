#!/bin/bash
# Twenty-fifth session, second call (same warm machine as next1.sh if it held): the step's timeline
# (ci/engine-timeline.sh) of this tree's default and with --fuse qb_absorb,prep_qb.
. ci/device-call.sh 300
set -u
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
timeout $(lim 280) bash ci/engine-timeline.sh "$O/tl" off= prep="--fuse qb_absorb,prep_qb" >"$O/tl-run.log" 2>&1
echo "timeline: rc=$? $(el)"; grep -v "^timeline_T\|^build" "$O/tl-run.log" | grep -v "^#   [a-z_]* *\(start\|wait\|end\|run\) \|^#  *\(start\|wait\|end\|run\) " | head -60
mkdir -p "$OUT/raw"; mv "$O"/tl/*-T*.csv.gz "$OUT"/raw/ 2>/dev/null
echo "done $(el)"
