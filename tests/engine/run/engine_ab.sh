#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine --baseline` on the CPU reference under mpirun -np 2: baseline and
# implementation built side by side, steps interleaved; ab-decode and ab-verify rows for
# each side with the speedup interval and the token agreement (the same function on both
# sides: identical tokens); the interleaving printed. TAP.
# usage: engine_ab.sh ARBENCH
set -u
arbench=$1
. "$(dirname "$0")/../../common/tap.sh"
if timeout 240 mpirun $mpirun_args -np 2 "$arbench" engine --config tiny --backend cpu --context 16 --steps 12 \
        --impl mpi-host --baseline mpi-host --out "$tmp/ab.csv" --quiet >"$tmp/out" 2>&1; then
    tap OK "--baseline exits 0"
else
    tap FAIL "--baseline exits 0"; sed 's/^/# /' "$tmp/out"
fi
for ph in ab-decode ab-verify; do
    for role in baseline candidate; do
        c=$(grep -c ",$ph,.*,$role,mpi-host," "$tmp/ab.csv")
        [ "$c" -eq 1 ] && tap OK "one $ph row for the $role" || tap FAIL "one $ph row for the $role (got $c)"
    done
done
c=$(grep -c ',identical over 12 steps' "$tmp/ab.csv")
[ "$c" -eq 4 ] && tap OK "identical tokens on both sides, decode and verify" || tap FAIL "identical tokens on both sides (got $c rows)"
grep -q '^# A/B eager: mpi-host vs mpi-host: decode x[0-9.]* \[[0-9.]*, [0-9.]*\] (identical over 12 steps); verify x' "$tmp/out" \
    && tap OK "the comparison is printed: $(grep '^# A/B' "$tmp/out")" || tap FAIL "the comparison is printed"
# no silent stand-in: a baseline that cannot run here is refused as --impl is
for b in nosuch nccl; do
    timeout 120 mpirun $mpirun_args -np 2 "$arbench" engine --config tiny --backend cpu --context 8 --steps 2 \
        --baseline $b --out "$tmp/ab-$b.csv" --quiet >"$tmp/out-$b" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -q -- "--baseline $b: does not run here" "$tmp/out-$b" && ! grep -q ',ab-decode,' "$tmp/ab-$b.csv" 2>/dev/null \
        && tap OK "--baseline $b on the cpu backend is refused: $(grep -m1 -- '--baseline' "$tmp/out-$b")" \
        || { tap FAIL "--baseline $b on the cpu backend is refused (exit $rc)"; sed 's/^/# /' "$tmp/out-$b"; }
done
echo "1..$n"
exit $bad
