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
# started now ends before SECONDS (the call's own deadline, below the tool's limit). The tool returns
# no file over 16 MiB: where r.tgz would be larger than ARB_CALL_MAX_BYTES (default 15 MiB), the
# largest files under $O are moved out of it one at a time (to a folder under TMPDIR on the machine)
# until it is not, each named with its size in r/dropped.txt and on the call's output (a call once
# came back as its printed output alone: results/engine-h100/8a3d3fb-qb-marks/).
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
    local max=${ARB_CALL_MAX_BYTES:-15728640} side="" f
    (cd "$OUT" && tar czf r.tgz r) || return
    while [ "$(stat -c %s "$OUT/r.tgz")" -gt "$max" ]; do
        f=$(find "$OUT/r" -type f ! -path "$OUT/r/dropped.txt" -printf '%s %p\n' | sort -rn | head -1 | cut -d' ' -f2-)
        [ -n "$f" ] || break
        [ -n "$side" ] || side=$(mktemp -d "${TMPDIR:-/tmp}/arb-call-dropped.XXXXXX") || break
        echo "device-call: ${f#"$OUT"/} ($(stat -c %s "$f") bytes) left out of r.tgz (over $max bytes with it): moved to $side" |
            tee -a "$OUT/r/dropped.txt"
        mv "$f" "$side/$(echo "${f#"$OUT"/}" | tr / _)" || break
        (cd "$OUT" && tar czf r.tgz r) || return
    done
    (cd "$OUT" && rm -rf r)
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
