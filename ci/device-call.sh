#!/bin/bash
# SPDX-License-Identifier: MIT
# The common start of a script run on a device machine through the workplace's device tool
# (one call, its output returned from $OUT, at most 8 files): source it first,
#   . ci/device-call.sh SECONDS
# It makes $O (= $OUT/r), sets the NVLink-multicast-off variables and CI=true, writes
# $O/machine.txt (date, GPU, driver, REVISION), copies the calling script to $O/call.sh (the
# record of what ran), copies everything the script prints to $O/stdout.txt, and tars $O into
# $OUT/r.tgz at exit, so that everything comes back as one file. Anything $OUT held before (a
# killed call's leftovers) is moved out first and named in machine.txt. el prints the seconds since the start; lim N prints N, or less so that a step
# started now ends before SECONDS (the call's own deadline, below the tool's limit).
: "${OUT:?OUT: the output folder of the device tool}"
# $OUT may hold files a call before this one left (one killed before its trap ran left its r/ on
# the machine, and this session's results once took them in): moved out of the way, and said.
ARB_CALL_STALE=""
if [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
    ARB_CALL_STALE=$(mktemp -d "${TMPDIR:-/tmp}/arb-out-stale.XXXXXX")
    for f in "$OUT"/* "$OUT"/.[!.]*; do [ -e "$f" ] && mv "$f" "$ARB_CALL_STALE"/; done
fi
O=$OUT/r
mkdir -p "$O"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CI=true
ARB_CALL_T0=$(date +%s)
ARB_CALL_DEADLINE=${1:-540}
el() { echo "$(($(date +%s) - ARB_CALL_T0)) s"; }
lim() {
    local l=$((ARB_CALL_DEADLINE - ($(date +%s) - ARB_CALL_T0)))
    if [ "$l" -lt "$1" ]; then echo $((l > 1 ? l : 1)); else echo "$1"; fi
}
# The call's own stdout and stderr also go to $O/stdout.txt (the tool returns only their tail, and
# what a script prints without writing a file, return codes and cmp verdicts, was otherwise lost);
# at exit the original streams come back and tee has ended before the tarball is made.
exec 3>&1 4>&2
exec > >(tee -a "$O/stdout.txt") 2>&1
ARB_CALL_TEE=$!
arb_call_fin() {
    exec 1>&3 2>&4
    for _ in $(seq 50); do kill -0 "$ARB_CALL_TEE" 2>/dev/null || break; sleep 0.1; done
    (cd "$OUT" && tar czf r.tgz r && rm -rf r)
}
trap arb_call_fin EXIT
trap 'exit 143' TERM INT
{
    date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total,clocks.max.sm --format=csv; cat REVISION
    if [ -n "$ARB_CALL_STALE" ]; then
        echo "device-call: \$OUT held files before this call (not this call's): moved to $ARB_CALL_STALE"
    fi
} >"$O/machine.txt" 2>&1
if [ -n "$ARB_CALL_STALE" ]; then
    echo "device-call: \$OUT held files before this call: moved to $ARB_CALL_STALE"
fi
cp "$0" "$O/call.sh"
