#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench topo` on the XML machines: label, matrix row, export and reload, bad input.
# Usage: check_cli.sh ARBENCH XML_DIR
set -u
arbench=$1
dir=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
check() { # description, then a command that must succeed
    n=$((n + 1))
    desc=$1
    shift
    if "$@" >/dev/null 2>&1; then echo "ok $n - $desc"; else echo "not ok $n - $desc"; fail=1; fi
}

"$arbench" topo --xml "$dir/pcie8_4switch_2socket.xml" --export-xml "$tmp/x.xml" >"$tmp/out" 2>&1
echo "# exit $?"
check "8-GPU box: fabric pcie-xsocket" grep -qx 'fabric: pcie-xsocket' "$tmp/out"
check "8-GPU box: GPU0 row X PIX NODE NODE SYS SYS SYS SYS" grep -Eq '^GPU0 +X +PIX +NODE +NODE +SYS +SYS +SYS +SYS *$' "$tmp/out"
check "8-GPU box: GPU7 bus id, numa1, cpus 8-15" grep -Eq '^GPU7 +0000:74:00.0 +1 +1 +- +8-15$' "$tmp/out"
check "reasons name the worst pair" grep -q 'worst pair GPU0-GPU4 is SYS: pcie-xsocket' "$tmp/out"
check "--export-xml wrote a file" test -s "$tmp/x.xml"
"$arbench" topo --xml "$tmp/x.xml" >"$tmp/again" 2>&1
check "the export reloads with the same label" grep -qx 'fabric: pcie-xsocket' "$tmp/again"
"$arbench" topo --xml "$dir/nvlink2.xml" --no-bind >"$tmp/nvl" 2>&1
check "NVLink box: fabric nvlink" grep -qx 'fabric: nvlink' "$tmp/nvl"
check "NVLink box: --no-bind gives binding off" grep -q '^binding (near GPU0): off$' "$tmp/nvl"
"$arbench" topo --xml "$dir/pcie4_hostbridge.xml" --gpu 3 >"$tmp/hb" 2>&1
check "4-GPU box: fabric pcie-hostbridge" grep -qx 'fabric: pcie-hostbridge' "$tmp/hb"
check "--gpu 3 is the GPU the binding is about" grep -q '^binding (near GPU3): unbound: the topology is not' "$tmp/hb"
"$arbench" topo --xml "$dir/pcie4_hostbridge.xml" --gpu 9 >"$tmp/bad" 2>&1
check "--gpu past the last GPU is refused" grep -q -- '--gpu 9: there are only 4 GPUs' "$tmp/bad"
"$arbench" topo --xml "$dir/does-not-exist.xml" >"$tmp/bad" 2>&1
rc=$?
check "a missing XML file fails with a message naming it" sh -c "[ $rc -eq 1 ] && grep -q 'does-not-exist.xml' '$tmp/bad'"
"$arbench" topo --frobnicate >"$tmp/bad" 2>&1
rc=$?
check "an unknown option exits 2 naming it" sh -c "[ $rc -eq 2 ] && grep -q \"'--frobnicate'\" '$tmp/bad'"
echo "1..$n"
exit $fail
