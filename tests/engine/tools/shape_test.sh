#!/bin/sh
# SPDX-License-Identifier: MIT
# arb-engine-shape on hand-made rows (shape_fixture.csv; every figure below derived by hand).
# Plain decode: samples 990 1000 1010 (median 1000) for both choices; each spec row's cycle
# samples are its median +-10 us, so its bootstrap interval of R is exactly
# [(c - 10) / 1010, (c + 10) / 990] (each extreme median has probability 7/27 > 2.5%).
#   slow k=2: p=0.6 cycle 1800 (R 1.8: x1.96/1.8 = 1.089, wins), p=0.7 2600 (x0.842), p=0.8
#             3000 (x0.813). The last row's medians at every rate (R 3.0) would make p=0.6 a
#             loss (x0.653) and the shape hold at all three rates.
#   slow k=3: R 2.7 at every rate: x0.806, x0.938, x1.093 (wins at 0.8).
#   fast k=2: R 1.5, wins at all; fast k=3: R 2.4: x0.907 (loses at 0.6), x1.055, x1.230.
# So at k=3 the shape holds at p=0.7 alone: "one rate or more" would pass it. Over [0.6, 0.8]
# it is not shown (exit 1); over [0.7, 0.7] it holds at both k (slow k=2 p* interval
# [0.847, 0.873] at p=0.7, fast k=3 p* up to 0.674 < 0.7 < 0.733 the slow k=3 p* from).
# A measured ratio on the wrong side, a spread that straddles 1, a 10% run-to-run spread
# (shape_rerun.csv: a second slow run, decode 1100), rows without samples: not shown.
# Bad input exits 2 naming it. TAP.
# usage: shape_test.sh ARB_ENGINE_SHAPE SHAPE_FIXTURE.csv SHAPE_RERUN.csv FIXTURE_ENGINE.csv
set -u
tool=$1 fx=$2 rerun=$3 old=$4
. "$(dirname "$0")/../../common/tap.sh"
check() { # name, expected exit, file, grep patterns...
    name=$1 want=$2 f=$3
    shift 3
    ok=1
    [ "$(cat "$f.rc")" -eq "$want" ] || ok=0
    for pat in "$@"; do grep -qF -- "$pat" "$f" || ok=0; done
    [ $ok = 1 ] && tap OK "$name" || { tap FAIL "$name (exit $(cat "$f.rc"), expected $want)"; sed 's/^/# /' "$f"; }
}
run() { out=$1; shift; "$tool" "$@" >"$out" 2>&1; echo $? >"$out.rc"; }

run "$tmp/a" --slow slow --fast fast "$fx"
check "every rate run (0.6 to 0.8), k = 2 and 3: not shown (exit 1)" 1 "$tmp/a" \
    "at graph k=2,graph k=3 over acceptance [0.60, 0.80] (every rate both ran): not shown"
check "k=2 p=0.6 on its own medians: slow wins x1.089, not the last row's x0.653" 1 "$tmp/a" \
    "p=0.60: slow x1.089 [1.072, 1.106] measured x1.050, fast x1.307 [1.285, 1.329] measured x1.300: not shown: slow wins"
check "k=2 p=0.7: R 2.6, p* 0.860 with its bootstrap interval [0.847, 0.873]" 1 "$tmp/a" \
    "p=0.70: R 2.6000  p* 0.860 [0.847, 0.873]  ratio 0.8423 [0.8307, 0.8540]  measured 0.8400"
run "$tmp/b" --slow slow --fast fast --k 3 --accept 0.6:0.8 "$fx"
check "k=3 holds at p=0.7 alone: one rate is not a range (exit 1)" 1 "$tmp/b" \
    "p=0.70: slow x0.938 [0.925, 0.951] measured x0.930, fast x1.055 [1.041, 1.070] measured x1.050: the seed's shape" \
    "p=0.60: slow x0.806" "not shown: fast loses" "p=0.80: slow x1.093" "at graph k=3 over acceptance [0.60, 0.80]: not shown"
run "$tmp/c" --slow slow --fast fast --accept 0.7:0.7 "$fx"
check "over [0.7, 0.7] at k = 2 and 3: holds (exit 0)" 0 "$tmp/c" \
    "at graph k=2,graph k=3 over acceptance [0.70, 0.70]: holds"
sed 's/^\(engine-1,graph,spec,fast,,4,3,0.7,2400,150,2250,\)1.05,/\10.98,/' "$fx" >"$tmp/meas.csv"
run "$tmp/d" --slow slow --fast fast --accept 0.7:0.7 "$tmp/meas.csv"
check "fast k=3 measured x0.98 against x1.055 by the medians: not shown (exit 1)" 1 "$tmp/d" \
    "not shown: a measured ratio contradicts the medians" "measured 0.9800 (contradicts the medians)" \
    "over acceptance [0.70, 0.70]: not shown"
sed 's/^\(engine-1,graph,spec,slow,,4,3,0.7,.*,\)2690 2700 2710$/\12500 2700 2900/' "$fx" >"$tmp/wide.csv"
run "$tmp/e" --slow slow --fast fast --k 3 --accept 0.7:0.7 "$tmp/wide.csv"
check "slow k=3 p=0.7 cycles 2500..2900: x0.938 in [0.865, 1.023] straddles 1: not shown" 1 "$tmp/e" \
    "slow x0.938 [0.865, 1.023]" "not shown: slow loses within the spread"
run "$tmp/f" --slow slow --fast fast --k 3 --accept 0.7:0.7 "$fx" "$rerun"
check "a second slow run 10% slower widens R by 10%: x0.938 in [0.842, 1.045]: not shown" 1 "$tmp/f" \
    "run-to-run spread 10.00% over 2 run(s)" "slow x0.938 [0.842, 1.045]" "not shown: slow loses within the spread"
run "$tmp/g" --slow nccl --fast 'lsa:variant=oneshot,pdl=1' --accept 0.7:0.8 "$old"
check "rows without samples_us: the spread is unknown, not shown" 1 "$tmp/g" "no samples, the spread is unknown" "not shown"
run "$tmp/h" --slow slow --fast nothere "$fx"
check "an unknown label: exit 2 naming it" 2 "$tmp/h" "no rows labelled 'nothere'"
run "$tmp/i" --slow slow "$fx"
check "--slow without --fast: exit 2" 2 "$tmp/i" "usage:"
run "$tmp/j" --slow slow --fast fast --accept 0.8:0.7 "$fx"
check "--accept 0.8:0.7: exit 2 naming the accepted form" 2 "$tmp/j" "--accept '0.8:0.7': expected LO:HI"
run "$tmp/k" --slow slow --fast fast --k 2,5 "$fx"
check "--k 5 that no rows have: exit 2" 2 "$tmp/k" "--k 5: no spec rows of both 'slow' and 'fast' at k = 5"
sed 's/2590 2600 2610$/2590 x 2610/' "$fx" >"$tmp/bad.csv"
run "$tmp/l" "$tmp/bad.csv"
check "a bad sample: exit 2 naming file and line" 2 "$tmp/l" "bad.csv: line 4: bad samples_us near 'x 2610'"
sed 's/,spec,nccl,"",3,2,0.7,,,,68.6108,/,spec,nccl,"",3,2,0.7,,,,-5,/' "$old" >"$tmp/neg.csv"
run "$tmp/m" "$tmp/neg.csv"
check "a negative tok_s: exit 2 naming file, line and column" 2 "$tmp/m" "neg.csv: line 6: bad tok_s '-5'"
run "$tmp/n" "$old=fx"
[ "$(cat "$tmp/n.rc")" -eq 0 ] && [ "$(grep -c '^  fx graph k=' "$tmp/n")" -eq 2 ] &&
    tap OK "FILE=LABEL merges a file's choices under one label (2 groups: k = 2, 3)" || tap FAIL "FILE=LABEL labels"
echo "1..$n"
exit $bad
