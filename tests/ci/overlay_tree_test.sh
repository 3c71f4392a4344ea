#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/overlay-tree.sh (a variant tree made on the device from the call's own tree and a few changed
# files): overlay_tree_test.sh SCRIPT TAP_SH. On a fixture tree: the copy leaves out results/,
# .carry/, .debs/ and build*/, keeps the rest byte for byte and holds each replacement at its path;
# a --patch DIFF is applied in DEST even where the tree is a git work tree and DEST lies under its
# .carry/ (where a plain git apply skips every path with exit 0); every bad argument exits 2 naming
# it and leaves no DEST.
set -u
script=$1
. "$2"
t=$tmp/tree
mkdir -p "$t/sub" "$t/results/x" "$t/.carry" "$t/build-gpu" "$t/.debs"
echo base-a >"$t/a.c"
echo base-b >"$t/sub/b.c"
echo keep >"$t/sub/c.h"
echo big >"$t/results/x/r.csv"
echo mine >"$t/.carry/new-b.c"
echo obj >"$t/build-gpu/o"
echo deb >"$t/.debs/p.deb"
(cd "$t" && bash "$script" .carry/v1 sub/b.c=.carry/new-b.c) >"$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
[ $rc -eq 0 ] && tap OK "a variant: exit 0" || tap FAIL "a variant: exit $rc"
v=$t/.carry/v1
[ "$(cat "$v/sub/b.c" 2>/dev/null)" = mine ] && tap OK "the replacement at its path" || tap FAIL "sub/b.c: $(cat "$v/sub/b.c" 2>&1)"
cmp -s "$t/a.c" "$v/a.c" && cmp -s "$t/sub/c.h" "$v/sub/c.h" && tap OK "the other files as in the tree" ||
    tap FAIL "the other files differ or are missing"
[ "$(cat "$t/sub/b.c")" = base-b ] && tap OK "the base tree untouched" || tap FAIL "the base's sub/b.c changed"
left=$(cd "$v" && ls -A | sort | tr '\n' ' ')
[ "$left" = "a.c sub " ] && tap OK "results/, .carry/, .debs/ and build*/ left out" || tap FAIL "the variant holds: $left"
# --patch: the fixture as a git work tree, DEST under its .carry/, with a replacement beside it; a
# diff in git's form (its `diff --git` line makes git apply take the paths from the repository's
# root, so without the script's guard it skips them all, exit 0)
printf -- 'diff --git a/sub/c.h b/sub/c.h\n--- a/sub/c.h\n+++ b/sub/c.h\n@@ -1 +1 @@\n-keep\n+patched\n' >"$t/.carry/c.diff"
printf -- 'diff --git a/sub/c.h b/sub/c.h\n--- a/sub/c.h\n+++ b/sub/c.h\n@@ -1 +1 @@\n-not in the tree\n+x\n' >"$t/.carry/stale.diff"
(cd "$t" && git init -q . && git add a.c sub) >/dev/null 2>&1 || tap FAIL "git init of the fixture"
(cd "$t" && bash "$script" .carry/v2 sub/b.c=.carry/new-b.c --patch .carry/c.diff) >"$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
[ $rc -eq 0 ] && [ "$(cat "$t/.carry/v2/sub/c.h" 2>/dev/null)" = patched ] && [ "$(cat "$t/.carry/v2/sub/b.c")" = mine ] &&
    tap OK "--patch applied under the work tree's .carry/, beside a replacement" ||
    tap FAIL "--patch: exit $rc, sub/c.h: $(cat "$t/.carry/v2/sub/c.h" 2>&1)"
[ "$(cat "$t/sub/c.h")" = keep ] && [ ! -e "$t/.carry/v2/.git" ] && tap OK "--patch: the base untouched, no .git copied" ||
    tap FAIL "--patch changed the base or copied .git"
refused() { # NAME PATTERN ARGS...: run in the fixture tree; exit 2, PATTERN on stderr, no .carry/bad made
    _n=$1 _p=$2; shift 2
    (cd "$t" && bash "$script" "$@") >"$tmp/r.out" 2>"$tmp/r.err"
    _rc=$?
    if [ $_rc -eq 2 ] && grep -q -- "$_p" "$tmp/r.err" && [ ! -e "$t/.carry/bad" ]; then
        tap OK "$_n: $(head -1 "$tmp/r.err")"
    else
        sed 's/^/# /' "$tmp/r.err"
        tap FAIL "$_n: exit $_rc, expected 2 and '$_p'"
    fi
}
refused "no replacement" "at least one PATH=FILE" .carry/bad
refused "no =" "expected PATH=FILE" .carry/bad sub/b.c
refused "a path the tree lacks" "the tree has no file 'sub/typo.c'" .carry/bad sub/typo.c=.carry/new-b.c
refused "a missing replacement" "no file '.carry/none.c'" .carry/bad sub/b.c=.carry/none.c
refused "an absolute path" "PATH must be relative" .carry/bad /etc/passwd=.carry/new-b.c
refused "a path out of the tree" "PATH must be relative" .carry/bad ../x=.carry/new-b.c
refused "--patch without a DIFF" "expected a DIFF after it" .carry/bad --patch
refused "a missing DIFF" "--patch '.carry/none.diff': no such file" .carry/bad --patch .carry/none.diff
refused "a DIFF that does not apply" "does not apply to the tree" .carry/bad --patch .carry/stale.diff
refused "DEST exists" "DEST '.carry/v1' exists" .carry/v1 sub/b.c=.carry/new-b.c
(cd "$t" && bash "$script" sub/v a.c=.carry/new-b.c) >"$tmp/r.out" 2>"$tmp/r.err"
rc=$?
[ $rc -eq 2 ] && grep -q "inside the tree's copied part" "$tmp/r.err" && [ ! -e "$t/sub/v" ] &&
    tap OK "DEST inside the copied part: $(head -1 "$tmp/r.err")" || tap FAIL "DEST inside the tree: exit $rc"
echo "1..$n"
exit $bad
