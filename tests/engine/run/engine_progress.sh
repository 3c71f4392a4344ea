#!/bin/sh
# SPDX-License-Identifier: MIT
# Long engine runs say how far they got: live progress when the launcher (mpirun) writes
# to a terminal, a heartbeat line in a log otherwise (base/heartbeat.h), nothing extra in
# a short logged run. TAP.
# usage: engine_progress.sh ARBENCH
set -u
arbench=$1
. "$(dirname "$0")/../../common/tap.sh"
cmd="mpirun $mpirun_args -np 2 $arbench engine --config tiny --backend cpu --context 48 --steps 2"

ARBENCH_HEARTBEAT_S=0 timeout 120 $cmd --out "$tmp/h.csv" >"$tmp/h.log" 2>&1
grep -q '^# heartbeat: compute-only: prefill [0-9]*/48 after' "$tmp/h.log" && grep -q '^# heartbeat: impl: prefill 48/48' "$tmp/h.log" \
    && tap OK "a log gets heartbeat lines: $(grep -c '^# heartbeat' "$tmp/h.log") lines" \
    || { tap FAIL "a log gets heartbeat lines"; sed 's/^/# /' "$tmp/h.log"; }
[ "$(tr '\r' '\n' <"$tmp/h.log" | grep -c '^# .*prefill  ')" = 0 ] && tap OK "no terminal progress line in a log" || tap FAIL "no terminal progress line in a log"

timeout 120 $cmd --out "$tmp/q.csv" >"$tmp/q.log" 2>&1
! grep -q heartbeat "$tmp/q.log" && tap OK "a short run in a log: no heartbeat (every 30 s by default)" || tap FAIL "a short run in a log: no heartbeat"

if command -v script >/dev/null 2>&1; then
    # CI set (as .ci/run sets it) turns live progress off by design: a person's terminal here
    timeout 120 script -qc "env -u CI -u ARBENCH_PROGRESS $cmd --out $tmp/t.csv" "$tmp/t.log" >/dev/null 2>&1
    tr '\r' '\n' <"$tmp/t.log" | grep -q '^# compute-only: prefill  *[0-9]*/48' \
        && tap OK "mpirun on a terminal: live progress of the prefill" \
        || { tap FAIL "mpirun on a terminal: live progress of the prefill"; tr '\r' '\n' <"$tmp/t.log" | sed 's/^/# /' | tail -20; }
else
    n=$((n + 1)); echo "ok $n # SKIP mpirun on a terminal: no script(1) to give it one"
fi
echo "1..$n"
exit $bad
