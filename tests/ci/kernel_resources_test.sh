#!/bin/sh
# SPDX-License-Identifier: MIT
# ci/kernel-resources.py: kernel_resources_test.sh SCRIPT BUILD_DIR TAP_SH. Its ptxas parser on
# a fixture (a kernel with shared memory and spills, one whose report has no shared-memory
# clause), its PTX parser on another (.maxntid; dynamic shared memory through a module-scope
# .extern array the body names, and a kernel with neither), one real source of this build (argmax.cu: one kernel, 1024 threads, so one block an
# SM on SM120's 1536 threads and two on SM90's 2048), and its refusals (a build directory
# without compile_commands.json, an existing --out, a filter that matches nothing), each exit 2
# naming the input. Skipped (77) without nvcc.
set -u
script=$1 build=$2
. "$3"
command -v nvcc >/dev/null 2>&1 || { echo "1..0 # SKIP no nvcc"; exit 77; }
cat >"$tmp/ptxas.txt" <<'TXT'
ptxas info    : Compiling entry function '_Z1av' for 'sm_90'
ptxas info    : Function properties for _Z1av
    8 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 8196 bytes smem
ptxas info    : Compiling entry function '_Z1bv' for 'sm_90'
ptxas info    : Function properties for _Z1bv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers, used 0 barriers
TXT
python3 "$script" --parse "$tmp/ptxas.txt" >"$tmp/p.txt"
if [ "$(cat "$tmp/p.txt")" = "$(printf '_Z1av 128 12 8196\n_Z1bv 30 0 0')" ]; then
    tap OK "ptxas report parsed: registers, spill stores, static smem (none when the clause is absent)"
else
    tap FAIL "ptxas report parsed: got $(tr '\n' ';' <"$tmp/p.txt")"
fi
cat >"$tmp/k.ptx" <<'TXT'
.extern .shared .align 16 .b8 _ZN1x4ringE[];
.visible .entry _Z1av(
	.param .u64 _Z1av_param_0
)
.maxntid 256, 1, 1
.minnctapersm 2
{
	mov.u32 	%r1, _ZN1x4ringE;
	ret;
}
.visible .entry _Z1bv(
	.param .u64 _Z1bv_param_0
)
{
	ret;
}
TXT
python3 "$script" --parse-ptx "$tmp/k.ptx" >"$tmp/p.txt"
if [ "$(cat "$tmp/p.txt")" = "$(printf '_Z1av 256 True\n_Z1bv None False')" ]; then
    tap OK "PTX parsed: a kernel's .maxntid and its dynamic shared memory (a module-scope .extern it names)"
else
    tap FAIL "PTX parsed: got $(tr '\n' ';' <"$tmp/p.txt")"
fi
if python3 "$script" --build "$build" --only kernels/argmax.cu --out "$tmp/a.csv" >"$tmp/o.txt" 2>"$tmp/e.txt" &&
    grep -q '^engine/gpu/kernels/argmax.cu,"arbk::(anonymous namespace)::argmax_kernel(.*)",1024,no,[0-9]*,0,[0-9]*,2,[0-9]*,0,[0-9]*,1$' "$tmp/a.csv" &&
    [ "$(wc -l <"$tmp/a.csv")" -eq 2 ] && grep -q '^# 1 kernels in 1 sources; 1 hold fewer blocks' "$tmp/o.txt"; then
    tap OK "argmax.cu: one kernel, 1024 threads, 2 blocks an SM on sm_90 and 1 on sm_120"
else
    tap FAIL "argmax.cu: $(head -3 "$tmp/a.csv" "$tmp/o.txt" "$tmp/e.txt" 2>&1 | tr '\n' ';')"
fi
expect2() { # NAME PATTERN ARGS...
    name=$1 pattern=$2; shift 2
    python3 "$script" "$@" >/dev/null 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pattern" "$tmp/err"; then
        tap OK "$name: exit 2, $(head -1 "$tmp/err")"
    else
        tap FAIL "$name: exit $rc, $(head -1 "$tmp/err")"
    fi
}
expect2 "no build" "cannot read" --build "$tmp/none"
expect2 "existing --out" "exists" --build "$build" --only kernels/argmax.cu --out "$tmp/a.csv"
expect2 "no source matched" "no .cu sources matching" --build "$build" --only no-such-file.cu
echo "1..$n"
exit $bad
