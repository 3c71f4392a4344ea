#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/engine-check.sh (the engine's end-to-end check in a device call): engine_check_test.sh SCRIPT
# TAP_SH. No GPU: a fixture tree whose build-gpu/harness/arbench records its arguments and writes
# the logits file it is given, mpirun and timeout as they are on the machine (mpirun from the
# PATH, as the script runs it). Checked: the check's arguments and the caller's extra options
# reach the engine, its exit status comes back, --cmp says equal / DIFFER (exit 0 / 1), --trees runs
# each tree's check and compares their logits (exit 0 / 1 / 3), and every bad argument or missing
# file exits 2 naming it.
set -u
script=$1
. "$2"
t=$tmp/tree
mkdir -p "$t/build-gpu/harness" "$tmp/bin"
cat >"$t/build-gpu/harness/arbench" <<'EOA'
#!/bin/sh
echo "$@" >args.txt
while [ $# -gt 0 ]; do [ "$1" = --dump-logits ] && printf 'L%s' "${FAKE_LOGITS:-1}" >"$2"; shift; done
echo "# check vs the CPU reference: 3/3 greedy tokens equal, max |logit diff| 0.01943 (tolerance 0.250)"
exit "${FAKE_RC:-0}"
EOA
chmod +x "$t/build-gpu/harness/arbench"
cat >"$tmp/bin/mpirun" <<'EOM'
#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != build-gpu/harness/arbench ]; do shift; done
exec "$@"
EOM
chmod +x "$tmp/bin/mpirun"
PATH=$tmp/bin:$PATH
export PATH
bash "$script" "$tmp/o" a "$t" --pdl off >"$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
[ $rc -eq 0 ] && grep -q "^engine check a: rc=0$" "$tmp/out" && grep -q "max |logit diff| 0.01943" "$tmp/out" &&
    tap OK "a run: exit 0, its status and the check's line printed" || tap FAIL "a run: exit $rc"
args=$(cat "$t/args.txt" 2>/dev/null)
case "$args" in
*"engine --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl"*"--dump-logits $tmp/o/logits-a.bin --pdl off")
    tap OK "the engine's arguments: the check's, the logits file, the caller's option last" ;;
*) tap FAIL "the engine's arguments: $args" ;;
esac
[ -f "$tmp/o/a.log" ] && [ -f "$tmp/o/logits-a.bin" ] && tap OK "OUT/a.log and OUT/logits-a.bin" || tap FAIL "OUT holds: $(ls "$tmp/o")"
bash "$script" "$tmp/o" b "$t" >/dev/null 2>&1
FAKE_LOGITS=2 bash "$script" "$tmp/o" c "$t" >/dev/null 2>&1
FAKE_RC=3 bash "$script" "$tmp/o" d "$t" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 3 ] && grep -q "^engine check d: rc=3$" "$tmp/out" && tap OK "the engine's failure: its status, exit 3" ||
    tap FAIL "a failing engine: exit $rc"
out=$(bash "$script" --cmp "$tmp/o" a b)
rc=$?
[ $rc -eq 0 ] && [ "$out" = "logits b = a" ] && tap OK "--cmp equal: exit 0, '$out'" || tap FAIL "--cmp equal: exit $rc, '$out'"
out=$(bash "$script" --cmp "$tmp/o" a c)
rc=$?
[ $rc -eq 1 ] && [ "$out" = "logits c: DIFFER from a" ] && tap OK "--cmp different: exit 1, '$out'" ||
    tap FAIL "--cmp different: exit $rc, '$out'"
tap_refused "--cmp a missing run" "no logits '$tmp/o/logits-zz.bin'" bash "$script" --cmp "$tmp/o" a zz
tap_refused "--cmp short" "usage: ci/engine-check.sh --cmp" bash "$script" --cmp "$tmp/o" a
tap_refused "no TREE" "usage: ci/engine-check.sh OUT NAME TREE" bash "$script" "$tmp/o" a
tap_refused "a tree without a build" "TREE '$tmp': no build-gpu/harness/arbench" bash "$script" "$tmp/o" a "$tmp"
tap_refused "a NAME with a slash" "NAME 'x/y': expected a plain name" bash "$script" "$tmp/o" x/y "$t"
# --trees: each tree's check, then each name's logits against the first's, the logits removed
t2=$tmp/tree2
mkdir -p "$t2/build-gpu/harness"
sed 's/FAKE_LOGITS:-1/FAKE_LOGITS:-2/' "$t/build-gpu/harness/arbench" >"$t2/build-gpu/harness/arbench"
chmod +x "$t2/build-gpu/harness/arbench"
rm -f "$t/args.txt"
bash "$script" --trees "$tmp/p" base="$t" same="$t" -- --pdl off >"$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
[ $rc -eq 0 ] && grep -q "^engine check base: rc=0$" "$tmp/out" && grep -q "^engine check same: rc=0$" "$tmp/out" &&
    grep -q "^logits same = base$" "$tmp/out" && tap OK "--trees equal: both checks, 'logits same = base', exit 0" ||
    tap FAIL "--trees equal: exit $rc"
case "$(cat "$t/args.txt" 2>/dev/null)" in
*"--dump-logits $tmp/p/logits-same.bin --pdl off") tap OK "--trees: the options after -- reach each check" ;;
*) tap FAIL "--trees: the engine's arguments: $(cat "$t/args.txt" 2>/dev/null)" ;;
esac
[ -f "$tmp/p/base.log" ] && [ -f "$tmp/p/same.log" ] && [ -z "$(ls "$tmp/p"/logits-* 2>/dev/null)" ] &&
    tap OK "--trees: the logs kept, the logits files removed" || tap FAIL "--trees left: $(ls "$tmp/p")"
bash "$script" --trees "$tmp/p" base="$t" same="$t" other="$t2" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "^logits same = base$" "$tmp/out" && grep -q "^logits other: DIFFER from base$" "$tmp/out" &&
    tap OK "--trees different: 'logits other: DIFFER from base', exit 1" || tap FAIL "--trees different: exit $rc"
FAKE_RC=3 bash "$script" --trees "$tmp/p" base="$t" other="$t2" >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 3 ] && grep -q "^engine check other: rc=3$" "$tmp/out" && tap OK "--trees with a failing check: exit 3" ||
    tap FAIL "--trees with a failing check: exit $rc"
tap_refused "--trees one name" "expected BASE=TREE and at least one NAME=TREE" bash "$script" --trees "$tmp/p" base="$t" -- x
tap_refused "--trees not NAME=TREE" "'$t': expected NAME=TREE" bash "$script" --trees "$tmp/p" base="$t" "$t"
tap_refused "--trees a name twice" "NAME 'a' given twice" bash "$script" --trees "$tmp/p" a="$t" a="$t2"
tap_refused "--trees a tree without a build" "TREE '$tmp': no build-gpu/harness/arbench" \
    bash "$script" --trees "$tmp/p" a="$t" b="$tmp"
tap_refused "--trees a bad name" "NAME 'x/y': expected a plain name" bash "$script" --trees "$tmp/p" a="$t" x/y="$t"
ENGINE_CHECK_TIMEOUT=soon
export ENGINE_CHECK_TIMEOUT
tap_refused "a bad timeout" "ENGINE_CHECK_TIMEOUT 'soon': expected seconds" bash "$script" "$tmp/o" a "$t"
echo "1..$n"
exit $bad
