#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/pdl-loads.py: pdl_loads_test.sh SCRIPT BUILD_DIR TAP_SH. Fixture PTX: a kernel whose bf16
# __ldcg the compiler put before its griddepcontrol.wait (the prep_qb race's shape) must be named
# and exit 1; the same loads after the wait, weights through ld.global.nc and cp.async before it,
# and a kernel with no wait pass; an allowed name (a persistent kernel's counter poll) passes. Then
# every engine kernel source of this build (exit 0: none loads before its wait), and the refusals
# (no compile_commands.json, a filter that matches nothing, a missing PTX file), each exit 2
# naming the input. The build's sources are skipped without nvcc.
set -u
script=$1 build=$2
. "$3"
cat >"$tmp/bad.ptx" <<'TXT'
.visible .entry _Z6racy_kv(
	.param .u64 _Z6racy_kv_param_0
)
{
	ld.global.nc.v4.u32 	{%r1, %r2, %r3, %r4}, [%rd1];
	ld.global.cg.b16 %rs15, [%rd52];
	griddepcontrol.wait;
	ld.global.cg.v4.u32 	{%r5, %r6, %r7, %r8}, [%rd2];
	ret;
}
TXT
cat >"$tmp/good.ptx" <<'TXT'
.visible .entry _Z4goodv(
	.param .u64 _Z4goodv_param_0
)
{
	ld.global.nc.v4.u32 	{%r1, %r2, %r3, %r4}, [%rd1];
	cp.async.cg.shared.global [%r9], [%rd3], 16;
	griddepcontrol.wait;
	ld.global.cg.b16 %rs15, [%rd52];
	ld.acquire.gpu.global.u32 %r10, [%rd4];
	ret;
}
.visible .entry _Z6nowaitv(
	.param .u64 _Z6nowaitv_param_0
)
{
	ld.global.cg.b16 %rs1, [%rd1];
	ret;
}
.visible .entry _ZN4arbk14persist_moe_kernelEv(
	.param .u64 _ZN4arbk14persist_moe_kernelEv_param_0
)
{
	ld.acquire.gpu.global.u32 %r1, [%rd1];
	griddepcontrol.wait;
	ret;
}
TXT
python3 "$script" --ptx "$tmp/bad.ptx" "$tmp/good.ptx" >"$tmp/o.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "_Z6racy_kv: 1 load(s) before its first griddepcontrol.wait, e.g. ld.global.cg.b16" "$tmp/o.txt" &&
    ! grep -q "_Z4goodv\|_Z6nowaitv\|persist_moe" "$tmp/o.txt"; then
    tap OK "a bf16 ld.global.cg before the wait named, exit 1; loads after it, weights before it, no wait, an allowed name pass"
else
    sed 's/^/# /' "$tmp/o.txt"
    tap FAIL "fixtures: exit $rc"
fi
python3 "$script" --ptx "$tmp/good.ptx" >"$tmp/o2.txt" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "0 kernel(s) loading before their PDL wait" "$tmp/o2.txt"; then
    tap OK "the clean fixture alone: exit 0"
else
    sed 's/^/# /' "$tmp/o2.txt"
    tap FAIL "the clean fixture alone: exit $rc"
fi
if command -v nvcc >/dev/null 2>&1 && [ -f "$build/compile_commands.json" ]; then
    python3 "$script" --build "$build" --jobs 2 >"$tmp/b.txt" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        tap OK "this build's engine kernels: $(tail -1 "$tmp/b.txt")"
    else
        sed 's/^/# /' "$tmp/b.txt"
        tap FAIL "this build's engine kernels: exit $rc"
    fi
    tap_refused "a filter that matches nothing" "matches --only" python3 "$script" --build "$build" --only no_such_kernel.cu
else
    echo "ok 3 # SKIP no nvcc or no compile_commands.json"
    echo "ok 4 # SKIP no nvcc or no compile_commands.json"
    n=4
fi
mkdir -p "$tmp/empty"
tap_refused "a build directory without compile_commands.json" "compile_commands.json: no such file" \
    python3 "$script" --build "$tmp/empty"
tap_refused "a missing PTX file" "cannot read PTX file $tmp/none.ptx" python3 "$script" --ptx "$tmp/none.ptx"
echo "1..$n"
exit $bad
