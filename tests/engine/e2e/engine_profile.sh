#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine --tune` and `--profile FILE` on the CPU reference under mpirun -np 2:
# the tune sweep and its profile are written next to the results and used; a profile of
# another fabric falls back with one line per site naming what was missing; a malformed
# profile and --profile with --impl are refused (exit 2, the message names them). TAP.
# usage: engine_profile.sh ARBENCH
set -u
arbench=$1
. "$(dirname "$0")/common.sh"
common="--config tiny --backend cpu --context 16 --steps 6 --quiet"
engine() { # NP OUT ARGS...
    np=$1 out=$2; shift 2
    # shellcheck disable=SC2086
    timeout 240 mpirun $mpirun_args -np "$np" "$arbench" engine $common --out "$tmp/$out.csv" "$@" >"$tmp/$out.out" 2>&1
}
rows() { grep -c ',\(decode\|verify\),' "$1" 2>/dev/null || echo 0; }

if engine 2 tuned --tune; then tap OK "--tune exits 0"; else tap FAIL "--tune exits 0"; sed 's/^/# /' "$tmp/tuned.out"; fi
[ -s "$tmp/tuned.tune.csv" ] && [ -s "$tmp/tuned.profile.csv" ] && tap OK "tune sweep and profile written next to the results" || tap FAIL "tune sweep and profile written next to the results"
grep -q '^# call sites from .*tuned.profile.csv' "$tmp/tuned.out" && tap OK "the choices are printed" || tap FAIL "the choices are printed"
[ "$(rows "$tmp/tuned.csv")" -eq 2 ] && tap OK "decode and verify rows" || tap FAIL "decode and verify rows (got $(rows "$tmp/tuned.csv"))"
# the tuned sweep measured exactly the call-site shapes: T = 1, 3 (k = 2) and the prefill chunk 8, hidden 64
# (columns bytes,count,tokens,hidden)
grep -q ',128,64,1,64,' "$tmp/tuned.tune.csv" && grep -q ',384,192,3,64,' "$tmp/tuned.tune.csv" && grep -q ',1024,512,8,64,' "$tmp/tuned.tune.csv" \
    && tap OK "the sweep measured the call-site shapes (1, 3, 8 tokens x 64)" || tap FAIL "the sweep measured the call-site shapes"

cat >"$tmp/prof_other.csv" <<'CSV'
schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,fusion
1,nvlink,2,0,bf16,allreduce_rmsnorm,eager,0,18446744073709551615,mpi-host,,unfused
CSV
if engine 2 other --profile "$tmp/prof_other.csv"; then tap OK "--profile of another fabric exits 0"; else tap FAIL "--profile of another fabric exits 0"; sed 's/^/# /' "$tmp/other.out"; fi
grep -q 'site verify .*no entry in .*prof_other.csv for its fabric (.*has: nvlink) -> mpi-host (its own choice)' "$tmp/other.out" \
    && tap OK "fallback line names the site and the missing fabric" || { tap FAIL "fallback line names the site and the missing fabric"; sed 's/^/# /' "$tmp/other.out"; }
[ "$(rows "$tmp/other.csv")" -eq 2 ] && tap OK "rows with the fallback" || tap FAIL "rows with the fallback"

printf 'schema,fabric\n1,host\n' >"$tmp/broken.csv"
engine 1 broken --profile "$tmp/broken.csv"
rc=$?
[ $rc -eq 2 ] && grep -q "broken.csv: missing column" "$tmp/broken.out" && tap OK "a malformed profile is refused naming it: $(grep -m1 broken.csv "$tmp/broken.out")" || tap FAIL "a malformed profile is refused naming it (exit $rc)"
engine 1 both --profile "$tmp/prof_other.csv" --impl mpi-host
rc=$?
[ $rc -eq 2 ] && grep -q -- "--impl with --profile" "$tmp/both.out" && tap OK "--profile with --impl refused" || tap FAIL "--profile with --impl refused (exit $rc)"
echo "1..$n"
exit $bad
