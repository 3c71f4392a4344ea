#!/bin/sh
# SPDX-License-Identifier: MIT
# arb-engine-shape on the hand-made fixture (fixture_engine.csv: NCCL's cycle costs 2.83
# plain steps at k = 2, lsa's 1.93): the seed's shape holds with NCCL as the slow choice
# and lsa as the fast one (exit 0, the break-even interval printed), not the other way
# round (exit 1); bad input exits 2 naming it. TAP.
# usage: shape_test.sh ARB_ENGINE_SHAPE FIXTURE.csv
set -u
tool=$1 fx=$2
. "$(dirname "$0")/../../common/tap.sh"
lsa='lsa:variant=oneshot,pdl=1'
"$tool" --slow nccl --fast "$lsa" "$fx" >"$tmp/a" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q "reproduced$" "$tmp/a" && tap OK "slow nccl, fast lsa: reproduced (exit 0)" || { tap FAIL "slow nccl, fast lsa: reproduced (exit $rc)"; sed 's/^/# /' "$tmp/a"; }
grep -q "graph k=2: .*the shape holds for acceptance in (0.584, 0.942)" "$tmp/a" && tap OK "k=2: the interval between the two break-even rates" || tap FAIL "k=2: the interval between the two break-even rates"
grep -q "p=0.50: slow x0.619 (loses), fast x0.909 (loses): not the seed's shape" "$tmp/a" && tap OK "p=0.5: both lose, named so" || tap FAIL "p=0.5: both lose, named so"
grep -q "p=0.90: slow x1.085 (wins), fast x1.572 (wins): not the seed's shape" "$tmp/a" && tap OK "k=3 p=0.9: both win, named so" || tap FAIL "k=3 p=0.9: both win, named so"
"$tool" --slow "$lsa" --fast nccl "$fx" >"$tmp/b" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "NOT reproduced" "$tmp/b" && grep -q "no acceptance gives it" "$tmp/b" && tap OK "swapped: NOT reproduced (exit 1)" || tap FAIL "swapped: NOT reproduced (exit $rc)"
"$tool" --slow nccl --fast nothere "$fx" >"$tmp/c" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "no rows labelled 'nothere'" "$tmp/c" && tap OK "an unknown label: exit 2 naming it" || tap FAIL "an unknown label: exit 2 naming it (exit $rc)"
"$tool" --slow nccl "$fx" >"$tmp/d" 2>&1
rc=$?
[ $rc -eq 2 ] && tap OK "--slow without --fast: exit 2" || tap FAIL "--slow without --fast: exit 2 (got $rc)"
sed 's/,spec,nccl,"",3,2,0.7,,,,68.6108,/,spec,nccl,"",3,2,0.7,,,,-5,/' "$fx" >"$tmp/neg.csv"
"$tool" "$tmp/neg.csv" >"$tmp/e" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "neg.csv: line 6: bad tok_s '-5'" "$tmp/e" && tap OK "a negative tok_s: exit 2 naming file, line and column" || { tap FAIL "a negative tok_s: exit 2 naming file, line and column (exit $rc)"; sed 's/^/# /' "$tmp/e"; }
"$tool" "$fx=fx" >"$tmp/f" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c '^  fx ' "$tmp/f")" -eq 2 ] && tap OK "FILE=LABEL merges a file's choices under one label (2 groups: k = 2, 3; later rows replace)" || tap FAIL "FILE=LABEL labels (exit $rc)"
echo "1..$n"
exit $bad
