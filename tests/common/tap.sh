# SPDX-License-Identifier: MIT
# Sourced by shell tests (tests/engine/run, tests/engine/tools, tests/ci): a temporary directory removed on exit, mpirun's
# arguments for this machine, and a TAP line helper (n, bad).
tmp=$(mktemp -d /tmp/arbench-engine-e2e-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
mpirun_args="--oversubscribe"
[ "$(id -u)" = 0 ] && mpirun_args="$mpirun_args --allow-run-as-root"
export OMPI_MCA_btl="^openib" OMPI_MCA_btl_vader_single_copy_mechanism=none
n=0 bad=0
tap() { n=$((n + 1)); if [ "$1" = OK ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=1; fi; }
# tap_refused NAME PATTERN CMD...: one TAP line, OK when CMD exits 2 with PATTERN on its stderr (its
# stderr shown otherwise)
tap_refused() {
    _name=$1 _pattern=$2; shift 2
    "$@" >"$tmp/refused.out" 2>"$tmp/refused.err"
    _rc=$?
    if [ $_rc -eq 2 ] && grep -q -- "$_pattern" "$tmp/refused.err"; then
        tap OK "$_name: exit 2, $(head -1 "$tmp/refused.err")"
    else
        sed 's/^/# /' "$tmp/refused.err"
        tap FAIL "$_name: exit $_rc, expected 2 and '$_pattern'"
    fi
}
