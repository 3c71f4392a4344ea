#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine --accept-rate p` with the draft model (engine/run/run_draft.h) on the CPU
# reference under mpirun -np 2 (mpi-host at every call site of the target and of the
# one-layer draft) at three acceptance rates in one run (0, 0.7, 1: the ends accept
# nothing and everything), checked by spec_rows_check; --accept-rate and --baseline with
# bad values refused. TAP.
# usage: engine_spec.sh ARBENCH SPEC_ROWS_CHECK
set -u
arbench=$1 check=$2
. "$(dirname "$0")/../../common/tap.sh"
if ! timeout 240 mpirun $mpirun_args -np 2 "$arbench" engine --config tiny --backend cpu --context 16 --steps 10 \
        --spec-k 2 --accept-rate 0,0.7,1 --out "$tmp/e.csv" --quiet >"$tmp/out" 2>&1; then
    sed 's/^/# /' "$tmp/out"
    echo "Bail out! arbench engine --accept-rate failed"
    exit 1
fi
"$check" "$tmp/e.csv" 2 0,0.7,1 | sed '$d' >"$tmp/tap"
n=$(grep -c '^\(not \)\?ok' "$tmp/tap")
bad=0
grep -q '^not ok' "$tmp/tap" && bad=1
cat "$tmp/tap"
n=$((n + 1))
timeout 60 mpirun $mpirun_args -np 1 "$arbench" engine --backend cpu --config tiny --baseline 'a|b' --quiet >"$tmp/o2" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q -- "--baseline" "$tmp/o2"; then echo "ok $n - --baseline 'a|b' refused: $(grep -m1 -- --baseline "$tmp/o2")"; else echo "not ok $n - --baseline 'a|b' refused (exit $rc)"; bad=1; fi
for bad_rate in 0.5,0.5 0.5,,0.7 1.5 0.5, x; do
    n=$((n + 1))
    timeout 60 mpirun $mpirun_args -np 1 "$arbench" engine --backend cpu --config tiny --accept-rate "$bad_rate" --quiet >"$tmp/o3" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -q -- "--accept-rate '$bad_rate'" "$tmp/o3"; then echo "ok $n - --accept-rate '$bad_rate' refused: $(grep -m1 -- --accept-rate "$tmp/o3")"; else echo "not ok $n - --accept-rate '$bad_rate' refused (exit $rc)"; bad=1; fi
done
echo "1..$n"
exit $bad
