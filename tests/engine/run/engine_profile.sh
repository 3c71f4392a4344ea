#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine --tune` and `--profile FILE` on the CPU reference under mpirun -np 2:
# the tune sweep and its profile are written next to the results and used; a profile of
# another fabric falls back with one line per site naming what was missing; a malformed
# profile and --profile with --impl are refused (exit 2, the message names them); a
# profile whose decode and verify shapes choose differently (mpi-host's two algorithms)
# runs as one configuration, one-token steps (decode, the draft) on the decode choice and
# the others on the verify choice, with the same greedy tokens (bitwise equal sums on two
# ranks). TAP.
# usage: engine_profile.sh ARBENCH
set -u
arbench=$1
. "$(dirname "$0")/../../common/tap.sh"
common="--config tiny --backend cpu --context 16 --steps 6 --quiet"
engine() { # NP OUT ARGS...
    np=$1 out=$2; shift 2
    # shellcheck disable=SC2086
    timeout 240 mpirun $mpirun_args -np "$np" "$arbench" engine $common --out "$tmp/$out.csv" "$@" >"$tmp/$out.out" 2>&1
}
rows() { grep -c ',\(decode\|verify\),' "$1" 2>/dev/null || echo 0; }

if engine 2 tuned --tune; then tap OK "--tune exits 0"; else tap FAIL "--tune exits 0"; sed 's/^/# /' "$tmp/tuned.out"; fi
tune_csv=$(ls "$tmp"/tuned-*.tune.csv 2>/dev/null | head -1) prof_csv=$(ls "$tmp"/tuned-*.profile.csv 2>/dev/null | head -1)
[ -s "$tune_csv" ] && [ -s "$prof_csv" ] && tap OK "tune sweep and profile written next to the results, named after the run" || tap FAIL "tune sweep and profile written next to the results"
grep -q '^# call sites from .*tuned-.*\.profile\.csv' "$tmp/tuned.out" && tap OK "the choices are printed" || tap FAIL "the choices are printed"
[ "$(rows "$tmp/tuned.csv")" -eq 2 ] && tap OK "decode and verify rows" || tap FAIL "decode and verify rows (got $(rows "$tmp/tuned.csv"))"
# the tuned sweep measured exactly the call-site shapes: T = 1, 3 (k = 2) and the prefill chunk 8, hidden 64
# (columns bytes,count,tokens,hidden)
grep -q ',128,64,1,64,' "$tune_csv" && grep -q ',384,192,3,64,' "$tune_csv" && grep -q ',1024,512,8,64,' "$tune_csv" \
    && tap OK "the sweep measured the call-site shapes (1, 3, 8 tokens x 64)" || tap FAIL "the sweep measured the call-site shapes"
cp "$prof_csv" "$tmp/first-profile"
engine 2 tuned --tune --append && [ "$(ls "$tmp"/tuned-*.profile.csv | wc -l)" -eq 2 ] && [ "$(ls "$tmp"/tuned-*.tune.csv | wc -l)" -eq 2 ] \
    && cmp -s "$prof_csv" "$tmp/first-profile" && tap OK "an appending --tune rerun keeps the first run's sweep and profile" \
    || { tap FAIL "an appending --tune rerun keeps the first run's sweep and profile"; ls "$tmp" | sed 's/^/# /'; }

cat >"$tmp/prof_other.csv" <<'CSV'
schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,fusion
1,nvlink,2,0,bf16,allreduce_rmsnorm,eager,0,18446744073709551615,mpi-host,,unfused
CSV
if engine 2 other --profile "$tmp/prof_other.csv"; then tap OK "--profile of another fabric exits 0"; else tap FAIL "--profile of another fabric exits 0"; sed 's/^/# /' "$tmp/other.out"; fi
grep -q 'site verify .*no entry in .*prof_other.csv for its fabric (.*has: nvlink) -> mpi-host (its own choice)' "$tmp/other.out" \
    && tap OK "fallback line names the site and the missing fabric" || { tap FAIL "fallback line names the site and the missing fabric"; sed 's/^/# /' "$tmp/other.out"; }
[ "$(rows "$tmp/other.csv")" -eq 2 ] && tap OK "rows with the fallback" || tap FAIL "rows with the fallback"
[ "$(grep -c ',fallback mpi-host at site verify: no entry in ' "$tmp/other.csv")" -eq 2 ] \
    && tap OK "every row's note records the fallback" || { tap FAIL "every row's note records the fallback"; sed 's/^/# /' "$tmp/other.csv"; }
grep -q '^# fallback mpi-host at site verify' "$tmp/other.out" && tap OK "the summary records the fallback" \
    || tap FAIL "the summary records the fallback"

cat >"$tmp/prof_split.csv" <<'CSV'
schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,fusion
1,host,2,0,bf16,allreduce,eager,1,128,mpi-host,algo=reduce-bcast,
1,host,2,0,bf16,allreduce,eager,129,100000,mpi-host,algo=allreduce,
CSV
if engine 2 split --profile "$tmp/prof_split.csv" --accept-rate 0.7; then tap OK "--profile split by shape exits 0"; else tap FAIL "--profile split by shape exits 0"; sed 's/^/# /' "$tmp/split.out"; fi
[ "$(grep -c ',\(decode\|verify\|spec\),' "$tmp/split.csv")" -eq 3 ] && tap OK "one configuration: one decode, one verify, one spec row" \
    || tap FAIL "one configuration: one decode, one verify, one spec row (got $(grep -c ',\(decode\|verify\|spec\),' "$tmp/split.csv"))"
case "$(grep ',decode,' "$tmp/split.csv")" in *algo=reduce-bcast,transport=mpi*) tap OK "the decode row ran on the decode choice (reduce-bcast)";; *) tap FAIL "the decode row ran on the decode choice";; esac
case "$(grep ',verify,' "$tmp/split.csv")" in *reduce-bcast,transport*) tap FAIL "the verify row ran on the verify choice (allreduce)";; *transport=mpi,memory=host*) tap OK "the verify row ran on the verify choice (allreduce)";; *) tap FAIL "the verify row ran on the verify choice";; esac
grep -q 'T=1 mpi-host:algo=reduce-bcast; T>1 mpi-host:algo=allreduce' "$tmp/split.csv" && tap OK "rows name both choices in sites" || tap FAIL "rows name both choices in sites"
for ph in verify spec; do
    a=$(grep ",$ph," "$tmp/split.csv" | grep -o ',[0-9]*/[0-9]*,' | head -1 | tr -d ,)
    [ -n "$a" ] && [ "${a%/*}" = "${a#*/}" ] && tap OK "$ph reproduces the decode chain across the two choices ($a)" || tap FAIL "$ph reproduces the decode chain across the two choices (${a:-none})"
done
engine 1 badmh --impl mpi-host:algo=bogus
rc=$?
[ $rc -eq 2 ] && grep -q "algo=bogus" "$tmp/badmh.out" && tap OK "mpi-host algo=bogus refused naming it" || tap FAIL "mpi-host algo=bogus refused naming it (exit $rc)"

printf 'schema,fabric\n1,host\n' >"$tmp/broken-prof.csv"
engine 1 broken --profile "$tmp/broken-prof.csv"
rc=$?
[ $rc -eq 2 ] && grep -q "broken-prof.csv: missing column" "$tmp/broken.out" && tap OK "a malformed profile is refused naming it: $(grep -m1 broken-prof.csv "$tmp/broken.out")" || tap FAIL "a malformed profile is refused naming it (exit $rc)"
engine 1 both --profile "$tmp/prof_other.csv" --impl mpi-host
rc=$?
[ $rc -eq 2 ] && grep -q -- "--impl with --profile" "$tmp/both.out" && tap OK "--profile with --impl refused" || tap FAIL "--profile with --impl refused (exit $rc)"
echo "1..$n"
exit $bad
