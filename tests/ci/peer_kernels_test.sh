#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/peer-kernels.py's refusals, all before it imports torch (so they run anywhere):
# peer_kernels_test.sh SCRIPT TAP_SH. An existing --out without --force, --out onto the
# --engine file, --out in a folder that does not exist, and an --engine file that is not an
# engine kernels CSV each exit 2 naming the input; the existing --out is left as it was.
set -u
script=$1
. "$2"
kcsv="$tmp/k.csv"
printf 'schema,family,tokens,graph_us,experts_per_layer\nengine-kernels-1,qkv_a,1,11.6,8.000\n' >"$kcsv"
printf 'keep\n' >"$tmp/old.csv"
# expect NAME PATTERN ARGS...: exit 2 and PATTERN on stderr
expect() {
    name=$1 pattern=$2; shift 2
    python3 "$script" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pattern" "$tmp/err"; then
        tap OK "$name: exit 2, $(head -1 "$tmp/err")"
    else
        sed 's/^/# /' "$tmp/err"
        tap FAIL "$name: exit $rc, expected 2 and '$pattern'"
    fi
}
expect "existing --out" "--out $tmp/old.csv exists: give --force" --out "$tmp/old.csv" --engine "$kcsv"
[ "$(cat "$tmp/old.csv")" = keep ] && tap OK "the existing --out is untouched" || tap FAIL "the existing --out was changed"
expect "--out onto --engine" "is the --engine file" --out "$kcsv" --engine "$kcsv" --force
grep -q qkv_a "$kcsv" && tap OK "the --engine file is untouched" || tap FAIL "the --engine file was changed"
expect "--out in a missing folder" "its folder does not exist" --out "$tmp/nosuch/p.csv"
printf 'a,b\n1,2\n' >"$tmp/notk.csv"
expect "--engine not a kernels CSV" "--engine $tmp/notk.csv: no rows with chain_us or graph_us" --out "$tmp/p.csv" --engine "$tmp/notk.csv"
expect "--engine missing" "--engine $tmp/nosuch.csv: not an arbench engine" --out "$tmp/p.csv" --engine "$tmp/nosuch.csv"
expect "--tokens bad" "--tokens" --out "$tmp/p.csv" --tokens 1,x
[ -e "$tmp/p.csv" ] && tap FAIL "a refused run wrote --out" || tap OK "no refused run wrote --out"
echo "1..$n"
exit $bad
