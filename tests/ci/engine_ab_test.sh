#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/engine-ab.sh (the engine's A/B of several trees in a device call) without a GPU:
# engine_ab_test.sh SCRIPT TAP_SH. AB_DRY=1 prints each round's order: the names rotated a round
# (no name always first), two names sharing a tree kept apart; then the refusals of bad arguments,
# each exit 2 naming it, and AB_DRY makes no OUT.
set -u
script=$1
. "$2"
AB_DRY=1 bash "$script" "$tmp/out" 4 base=. a=x b=y >"$tmp/dry" 2>&1
rc=$?
sed 's/^/# /' "$tmp/dry"
[ $rc -eq 0 ] && tap OK "dry run: exit 0" || tap FAIL "dry run: exit $rc"
printf 'round 1: base a b\nround 2: a b base\nround 3: b base a\nround 4: base a b\n' >"$tmp/want"
cmp -s "$tmp/dry" "$tmp/want" && tap OK "four rounds of three names, each round rotated by one" || tap FAIL "the rounds' order"
[ ! -e "$tmp/out" ] && tap OK "a dry run makes no OUT" || tap FAIL "a dry run made OUT"
AB_DRY=1 bash "$script" "$tmp/out" 2 base=. again=. >"$tmp/dry2" 2>&1
printf 'round 1: base again\nround 2: again base\n' >"$tmp/want2"
cmp -s "$tmp/dry2" "$tmp/want2" && tap OK "two names of one tree: both run, in turn first" || tap FAIL "two names of one tree"
tap_refused "ROUNDS 0" "ROUNDS '0': expected a whole number of rounds >= 1" env AB_DRY=1 bash "$script" "$tmp/out" 0 base=. a=x
tap_refused "ROUNDS not a number" "ROUNDS 'four'" env AB_DRY=1 bash "$script" "$tmp/out" four base=. a=x
tap_refused "one tree only" "need BASE=TREE and at least one NAME=TREE" env AB_DRY=1 bash "$script" "$tmp/out" 2 base=.
tap_refused "a NAME without a TREE" "'a=': expected NAME=TREE" env AB_DRY=1 bash "$script" "$tmp/out" 2 base=. a=
tap_refused "a NAME that cannot name ENGINE_ARGS_NAME" "'a-b=x': NAME must be letters" env AB_DRY=1 bash "$script" "$tmp/out" 2 base=. a-b=x
tap_refused "a NAME given twice" "NAME 'a' given twice" env AB_DRY=1 bash "$script" "$tmp/out" 2 base=. a=x a=y
echo "1..$n"
exit $bad
