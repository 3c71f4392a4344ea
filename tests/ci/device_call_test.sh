#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/device-call.sh, the start every device call's script sources: device_call_test.sh SCRIPT TAP_SH.
# A call script in a tree with a REVISION runs against an $OUT that already holds another call's
# leftovers (r/ab/stale.log, a dot file): everything comes back as one r.tgz with machine.txt,
# call.sh, stdout.txt (what it printed, stderr and its last line included) and the script's own file, the leftovers moved out (not in the tarball) and named in
# machine.txt; lim keeps a step inside the call's deadline. Then a call on an empty $OUT says
# nothing of leftovers. No GPU needed (nvidia-smi's absence lands in machine.txt).
set -u
script=$1
. "$2"
run_call() { # OUTDIR: the call script in $tmp/work with OUT=OUTDIR; its stdout+stderr in $tmp/log
    (cd "$tmp/work" && OUT="$1" TMPDIR="$tmp" bash call.sh) >"$tmp/log" 2>&1
}
# The clock frozen: `date +%s` (el's and lim's clock) reads $tmp/now, any other date call is the real
# one, so lim's figures do not depend on where a second boundary falls (a clean-clone run once saw 29
# for 30 when the script crossed one).
realdate=$(command -v date)
mkdir -p "$tmp/bin"
cat >"$tmp/bin/date" <<EOD
#!/bin/sh
if [ "\$*" = +%s ]; then cat "$tmp/now"; else exec "$realdate" "\$@"; fi
EOD
chmod +x "$tmp/bin/date"
echo 1800000000 >"$tmp/now"
PATH="$tmp/bin:$PATH"
mkdir -p "$tmp/work" "$tmp/out/r/ab" "$tmp/out2"
echo 0123456789ab >"$tmp/work/REVISION"
echo old >"$tmp/out/r/ab/stale.log"
echo old >"$tmp/out/.dot"
cat >"$tmp/work/call.sh" <<EOC
. "$script" 30
echo mine >"\$O/mine.txt"
echo "lim=\$(lim 100) \$(lim 5)"
echo 1800000012 >"$tmp/now"
echo "later: lim=\$(lim 100) \$(lim 5) el=\$(el)"
echo 1800000040 >"$tmp/now"
echo "past: lim=\$(lim 100)"
echo 1800000000 >"$tmp/now"
echo "to stderr" >&2
echo "last words"
EOC
run_call "$tmp/out"
rc=$?
sed 's/^/# /' "$tmp/log"
[ $rc -eq 0 ] && tap OK "the call: exit 0" || tap FAIL "the call: exit $rc"
[ "$(ls -A "$tmp/out")" = r.tgz ] && tap OK "\$OUT holds r.tgz alone" || tap FAIL "\$OUT holds: $(ls -A "$tmp/out" | tr '\n' ' ')"
list=$(tar tzf "$tmp/out/r.tgz" 2>/dev/null | sort | tr '\n' ' ')
[ "$list" = "r/ r/call.sh r/machine.txt r/mine.txt r/stdout.txt " ] &&
    tap OK "r.tgz: call.sh, machine.txt, stdout.txt and the call's file, no leftover" || tap FAIL "r.tgz holds: $list"
mkdir -p "$tmp/x" && tar xzf "$tmp/out/r.tgz" -C "$tmp/x"
grep -q "^0123456789ab$" "$tmp/x/r/machine.txt" && tap OK "machine.txt: the REVISION" || tap FAIL "machine.txt: no REVISION"
grep -q "held files before this call (not this call's): moved to $tmp/arb-out-stale" "$tmp/x/r/machine.txt" &&
    tap OK "machine.txt names where the leftovers went" || tap FAIL "machine.txt: $(cat "$tmp/x/r/machine.txt")"
stale=$(ls -d "$tmp"/arb-out-stale.* 2>/dev/null | head -1)
[ -n "$stale" ] && [ -f "$stale/r/ab/stale.log" ] && [ -f "$stale/.dot" ] && tap OK "the leftovers kept, moved out of \$OUT" ||
    tap FAIL "the leftovers: '$stale'"
grep -q "^lim=30 5$" "$tmp/log" && tap OK "lim: 100 s capped at the call's 30, 5 kept" || tap FAIL "lim: $(grep lim= "$tmp/log")"
grep -q "^later: lim=18 5 el=12 s$" "$tmp/log" && tap OK "12 s later: lim 18 of 100, 5 kept, el 12 s" ||
    tap FAIL "12 s later: $(grep later: "$tmp/log")"
grep -q "^past: lim=1$" "$tmp/log" && tap OK "past the deadline: lim 1" || tap FAIL "past the deadline: $(grep past: "$tmp/log")"
# what the script printed, its last line included, in stdout.txt as on the terminal
grep -q "^lim=30 5$" "$tmp/x/r/stdout.txt" 2>/dev/null && grep -q "^last words$" "$tmp/x/r/stdout.txt" &&
    grep -q "^to stderr$" "$tmp/x/r/stdout.txt" && grep -q "^last words$" "$tmp/log" &&
    tap OK "stdout.txt: the script's output, stderr and its last line too" ||
    tap FAIL "stdout.txt: $(cat "$tmp/x/r/stdout.txt" 2>&1)"
cmp -s "$tmp/work/call.sh" "$tmp/x/r/call.sh" && tap OK "call.sh: the script that ran" || tap FAIL "call.sh differs"
run_call "$tmp/out2"
rc=$?
mkdir -p "$tmp/y" && tar xzf "$tmp/out2/r.tgz" -C "$tmp/y" 2>/dev/null
[ $rc -eq 0 ] && ! grep -q "held files" "$tmp/y/r/machine.txt" "$tmp/log" && tap OK "an empty \$OUT: no leftovers said" ||
    tap FAIL "an empty \$OUT: exit $rc, $(grep 'held files' "$tmp/y/r/machine.txt" "$tmp/log")"
# a tarball past the tool's per-file limit (here ARB_CALL_MAX_BYTES=400000): the largest files moved out
# until it fits, each named in r/dropped.txt and on the output; the small ones kept
mkdir -p "$tmp/out3"
cat >"$tmp/work/call.sh" <<EOC
. "$script" 30
mkdir -p "\$O/tl"
head -c 300000 /dev/urandom >"\$O/tl/big1.bin"
head -c 250000 /dev/urandom >"\$O/big2.bin"
head -c 20000 /dev/urandom >"\$O/small.bin"
echo mine >"\$O/mine.txt"
EOC
(cd "$tmp/work" && OUT="$tmp/out3" TMPDIR="$tmp" ARB_CALL_MAX_BYTES=400000 bash call.sh) >"$tmp/log3" 2>&1
rc=$?
mkdir -p "$tmp/z" && tar xzf "$tmp/out3/r.tgz" -C "$tmp/z" 2>/dev/null
size=$(stat -c %s "$tmp/out3/r.tgz" 2>/dev/null || echo 0)
[ $rc -eq 0 ] && [ "$size" -gt 0 ] && [ "$size" -le 400000 ] && tap OK "a large call: r.tgz within the limit ($size bytes)" ||
    tap FAIL "a large call: exit $rc, r.tgz $size bytes"
[ ! -e "$tmp/z/r/tl/big1.bin" ] && [ -f "$tmp/z/r/big2.bin" ] && [ -f "$tmp/z/r/small.bin" ] && [ -f "$tmp/z/r/mine.txt" ] &&
    tap OK "the largest file alone left out" || tap FAIL "kept: $(cd "$tmp/z/r" 2>/dev/null && find . -type f | sort | tr '\n' ' ')"
grep -q "^device-call: r/tl/big1.bin (300000 bytes) left out of r.tgz" "$tmp/z/r/dropped.txt" 2>/dev/null &&
    grep -q "r/tl/big1.bin (300000 bytes) left out" "$tmp/log3" && tap OK "dropped.txt and the output name it" ||
    tap FAIL "dropped.txt: $(cat "$tmp/z/r/dropped.txt" 2>&1)"
side=$(ls -d "$tmp"/arb-call-dropped.* 2>/dev/null | head -1)
[ -n "$side" ] && [ "$(stat -c %s "$side/r_tl_big1.bin" 2>/dev/null)" = 300000 ] &&
    tap OK "the file kept on the machine" || tap FAIL "the dropped file: '$side'"
echo "1..$n"
exit $bad
