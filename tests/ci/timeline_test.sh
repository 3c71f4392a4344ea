#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/timeline.py on a fixture timeline whose answer is known: timeline_test.sh SCRIPT TAP_SH.
# Two SMs whose cycle counters run at 2 GHz from different origins (the fit must put both on
# the global timer), a layer of qkva_prep, uv, a GEMV after uv (o_proj), the side branch's
# l2_pull (off the chain), a GEMV before argmax (lm_head) and argmax; --ctas's quantiles and
# --split's; --by-sm's; the same file gzipped. Then its refusals: a file
# that is not a timeline, a missing file, a bad --layers, --out onto an input.
set -u
script=$1
. "$2"
f="$tmp/t.csv"
# rec TAG LAUNCH BLOCK SM G0 GW G1: the cycle stamps from the SM's origin (0: 1000 ns, 1: 5000 ns);
# GW - for a kernel that did not wait (both wait stamps empty)
rec() {
    o=1000; [ "$4" = 1 ] && o=5000
    gw=$6 cw=""; [ "$6" = - ] && gw="" || cw=$((2 * ($6 - o)))
    echo "$1,$2,$3,$4,$5,$gw,$7,$((2 * ($5 - o))),$cw,$((2 * ($7 - o)))"
}
{
    echo "tag,launch,block,sm,g0,gw,g1,c0,cw,c1"
    rec qkva_prep 0 0 0 10000 10100 11000
    rec qkva_prep 0 1 1 10050 10120 10900
    rec l2_pull 0 0 1 10500 - 13000
    rec uv 0 0 0 10800 11100 12000
    rec gemv 0 0 1 11900 12300 14000
    rec gemv 0 1 0 11950 12400 13600
    rec gemv 1 0 0 14100 14500 16000
    rec argmax 0 0 1 15900 16200 16500
} >"$f"
python3 "$script" --layers 0:1 --out "$tmp/l.csv" "$f" >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/# /' "$tmp/out"
[ $rc -eq 0 ] && tap OK "the fixture: exit 0" || { sed 's/^/# /' "$tmp/err"; tap FAIL "the fixture: exit $rc"; }
# kind n ctas seg gap body tail pre early late ahead
row() { grep -E "^#   $1 " "$tmp/out" | awk '{$1=""; print}' | sed 's/^ *//'; }
[ "$(row o_proj)" = "o_proj 1 2 2.00 0.30 1.70 0.20 0.42 0.10 -0.05 1.00" ] && tap OK "o_proj: named after uv, its segment 2.0 us" ||
    tap FAIL "o_proj row: '$(row o_proj)'"
[ "$(row uv)" = "uv 1 1 1.00 0.10 0.90 0.00 0.30 0.20 -0.20 1.00" ] && tap OK "uv after qkva_prep (the side branch left out)" ||
    tap FAIL "uv row: '$(row uv)'"
[ "$(row lm_head)" = "lm_head 1 1 2.00 0.50 1.50 0.00 0.40 -0.10 0.10 0.00" ] && tap OK "lm_head: the GEMV before argmax" ||
    tap FAIL "lm_head row: '$(row lm_head)'"
grep -q "^#   l2_pull" "$tmp/out" && tap FAIL "l2_pull is on the chain" || tap OK "l2_pull is not on the chain"
grep -q "worst residual 0 ns" "$tmp/out" && tap OK "both SMs' clocks fit the global timer exactly" ||
    tap FAIL "clock fit: $(grep residual "$tmp/out")"
grep -q "a layer (the medians' segments summed): 5.50 us" "$tmp/out" && tap OK "a layer's segments: 5.50 us" ||
    tap FAIL "layer sum: $(grep 'a layer' "$tmp/out")"
[ "$(wc -l <"$tmp/l.csv")" = 6 ] && tap OK "--out: a header and five chain launches" || tap FAIL "--out: $(wc -l <"$tmp/l.csv") lines"
# --ctas: o_proj's two CTAs (starts 11900 and 11950, runs 1.7 and 1.2 us), quantiles by the nearest rank below
python3 "$script" --layers 0:1 --ctas "$f" >"$tmp/ctas" 2>&1
q=$(grep -A3 -E "^#   o_proj +start" "$tmp/ctas" | awk '{print $NF, $(NF-1), $(NF-4)}' | tr '\n' ' ')
[ "$q" = "0.05 0.00 0.00 0.50 0.40 0.40 2.10 1.70 1.70 1.70 1.20 1.20 " ] &&
    tap OK "--ctas: o_proj's start, wait, end and run quantiles" || tap FAIL "--ctas o_proj: '$q'"
# --split o_proj:1: block 0 (start 11900, wait 12300, end 14000) and block 1 (11950, 12400, 13600) apart
python3 "$script" --layers 0:1 --ctas --split o_proj:1 "$f" >"$tmp/split" 2>&1
lo=$(grep -A3 -E "^#   o_proj<1 +start" "$tmp/split" | awk '{print $NF}' | tr '\n' ' ')
hi=$(grep -A3 -E "^#   o_proj>=1 +start" "$tmp/split" | awk '{print $NF}' | tr '\n' ' ')
[ "$lo" = "0.00 0.40 2.10 1.70 " ] && [ "$hi" = "0.05 0.50 1.70 1.20 " ] &&
    tap OK "--split: o_proj's blocks below 1 and from 1 on apart" || tap FAIL "--split: '$lo' / '$hi'"
# --by-sm o_proj: its blocks one on each of the file's two SMs; runs 1.7 and 1.2 us; the last end
# (14000) 1.65 us after the median wait (12350); o_proj:1-: block 1 alone (SM 0), ending at 13600
python3 "$script" --layers 0:1 --by-sm o_proj --by-sm o_proj:1- "$f" >"$tmp/bysm" 2>&1
grep -q "by SM o_proj: 1 launches; SMs with 0/1/2/.. of its blocks (a launch's mean): 1: 2.0$" "$tmp/bysm" &&
    grep -q "run with 1 on its SM: median 1.20 p90 1.20 max 1.70 us (n 2)" "$tmp/bysm" &&
    grep -q "median 1.65 p90 1.65 max 1.65 us" "$tmp/bysm" &&
    tap OK "--by-sm: o_proj one block an SM, its runs and last end" || tap FAIL "--by-sm o_proj"
grep -q "by SM o_proj\[1:\]: 1 launches; SMs with 0/1/2/.. of its blocks (a launch's mean): 0: 1.0, 1: 1.0$" "$tmp/bysm" &&
    grep -q "median 1.25 p90 1.25 max 1.25 us" "$tmp/bysm" &&
    tap OK "--by-sm o_proj:1-: block 1 alone, one SM without it" || tap FAIL "--by-sm o_proj:1-"
tap_refused "--by-sm without a range's dash" "expected KIND, or KIND:LO-HI" python3 "$script" --by-sm o_proj:1 "$f"
tap_refused "--by-sm with HI <= LO" "LO < HI" python3 "$script" --by-sm o_proj:2-1 "$f"
tap_refused "--split without --ctas" "give --ctas" python3 "$script" --split o_proj:1 "$f"
tap_refused "--split without a count" "expected KIND:N" python3 "$script" --ctas --split o_proj "$f"
gzip -c "$f" >"$tmp/t.csv.gz"
python3 "$script" --layers 0:1 "$tmp/t.csv.gz" | tail -n +2 >"$tmp/gz"
tail -n +2 "$tmp/out" | cmp -s - "$tmp/gz" && tap OK "a .gz timeline reads as the plain one" || tap FAIL "the .gz timeline differs"
printf 'a,b\n1,2\n' >"$tmp/bad.csv"
tap_refused "not a timeline" "not a timeline CSV" python3 "$script" "$tmp/bad.csv"
tap_refused "missing file" "cannot read" python3 "$script" "$tmp/nosuch.csv"
{ head -1 "$f"; echo "uv,0,0,0,10,20,30,40,,60"; } >"$tmp/half.csv"
tap_refused "a wait's global stamp without its cycles" "gw and cw: both or neither" python3 "$script" "$tmp/half.csv"
tap_refused "bad --layers" "expected 0 <= A < B" python3 "$script" --layers 3:1 "$f"
tap_refused "--out onto an input" "is one of the inputs" python3 "$script" --out "$f" "$f"
head -1 "$f" | grep -q "^tag," && tap OK "the input is untouched" || tap FAIL "the input was changed"
echo "1..$n"
exit $bad
