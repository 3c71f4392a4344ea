# SPDX-License-Identifier: MIT
# Sourced by engine_draft.sh and engine_draft_gpu.sh after tests/common/tap.sh, with $write
# (write_draft), $check (spec_rows_check) and $tmp set.
checked() { # CSV K ARG WHAT: spec_rows_check's lines folded into one TAP line (ARG "": no acceptance check)
    if [ -n "$3" ]; then "$check" "$1" "$2" "$3"; else "$check" "$1" "$2"; fi >"$1.tap" 2>&1
    if grep -q '^not ok' "$1.tap" || ! grep -q '^ok' "$1.tap"; then
        sed 's/^/# /' "$1.tap"
        tap FAIL "$4"
    else
        tap OK "$4 ($(grep -c '^ok' "$1.tap") checks$(grep 'measured acceptance' "$1.tap" | head -1 | sed 's/.*: /: /'))"
    fi
}
lookup_head() { # KIND: write_draft's lookup head of $tmp/chain (k 2, 10 steps) into $tmp/KIND, its expected acceptance in $x
    mkdir -p "$tmp/$1"
    if ! "$write" "$tmp/$1" lookup 1 "$tmp/chain" "$1" 2 10 >"$tmp/$1.exp" 2>&1; then
        sed 's/^/# /' "$tmp/$1.exp"
        tap FAIL "write_draft $1"
        return 1
    fi
    x=$(awk '{ print $2 }' "$tmp/$1.exp")
}
