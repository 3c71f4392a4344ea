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
tap_refused "existing --out" "--out $tmp/old.csv exists: give --force" python3 "$script" --out "$tmp/old.csv" --engine "$kcsv"
[ "$(cat "$tmp/old.csv")" = keep ] && tap OK "the existing --out is untouched" || tap FAIL "the existing --out was changed"
tap_refused "--out onto --engine" "is the --engine file" python3 "$script" --out "$kcsv" --engine "$kcsv" --force
grep -q qkv_a "$kcsv" && tap OK "the --engine file is untouched" || tap FAIL "the --engine file was changed"
tap_refused "--out in a missing folder" "its folder does not exist" python3 "$script" --out "$tmp/nosuch/p.csv"
printf 'a,b\n1,2\n' >"$tmp/notk.csv"
tap_refused "--engine not a kernels CSV" "--engine $tmp/notk.csv: no rows with chain_us or graph_us" python3 "$script" --out "$tmp/p.csv" --engine "$tmp/notk.csv"
tap_refused "--engine missing" "--engine $tmp/nosuch.csv: not an arbench engine" python3 "$script" --out "$tmp/p.csv" --engine "$tmp/nosuch.csv"
tap_refused "--tokens bad" "--tokens" python3 "$script" --out "$tmp/p.csv" --tokens 1,x
[ -e "$tmp/p.csv" ] && tap FAIL "a refused run wrote --out" || tap OK "no refused run wrote --out"
echo "1..$n"
exit $bad
