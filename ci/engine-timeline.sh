#!/bin/bash
# SPDX-License-Identifier: MIT
# Where the engine's step spends its time, CTA by CTA, on one GPU (issue 22):
#   ci/engine-timeline.sh OUT [NAME=OPTIONS ...]
# builds engine_gpu_bench in build-tl (git-ignored) with -Dengine_timeline=true (every kernel's
# CTAs stamp their start, PDL-wait return and end: engine/gpu/kernels/timeline.cuh), then for each
# NAME (default: one run named `default` with no options) runs
#   engine_gpu_bench --steps 4 --timeline OUT/NAME OPTIONS
# (kimi-k2, INT4, tp-shape 8, context 4096 unless OPTIONS say otherwise; OPTIONS are the bench's:
# --moe-early on, --l2-side none, --fuse none, ...) and summarizes its decode and verify steps
# with ci/timeline.py: OUT/NAME.log, OUT/NAME-T1.csv.gz and -T3.csv.gz (the records),
# OUT/NAME-summary.txt (a layer's launches: segment of the critical path, release gap, body,
# tail, time before the wait; then quantiles over each kind's CTAs: ci/timeline.py --ctas),
# OUT/NAME-launches.csv (every launch), OUT/NAME-by-sm.txt (ci/timeline.py --by-sm: where gate/up's
# routed tiles, down, attend, merge, uv, o_proj, the router, qkv_a and q_b ran, SM by SM: a grid
# needing fewer CTAs an SM than fit lands packed, the scheduler filling an SM before the next). The stamps cost time of
# their own: the bench's step times in this build are not the engine's (time those with
# `arbench engine` or ci/engine-ab.sh in a plain build). GENCODE (default sm_90) sets the build's
# nvcc -gencode list as meson's gencode option takes it; the machine's NCCL in /usr.
set -u
out=${1:?OUT}; shift
[ $# -ge 1 ] || set -- default=
for a in "$@"; do
    case "$a" in *=*) ;; *) echo "ci/engine-timeline.sh: '$a': expected NAME=OPTIONS" >&2; exit 2 ;; esac
done
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$out" && out=$(cd "$out" && pwd) || { echo "ci/engine-timeline.sh: cannot make $1" >&2; exit 2; }
gen=${GENCODE:-"['arch=compute_90,code=sm_90']"}
t0=$(date +%s)
if [ ! -d build-tl ]; then
    meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=$gen" >"$out/build.log" 2>&1 ||
        { tail -20 "$out/build.log"; exit 1; }
else # a build-tl made otherwise: the timeline on (its gencode kept)
    meson configure build-tl -Dengine_timeline=true >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
fi
ninja -C build-tl tests/engine/gpu/engine_gpu_bench >>"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
echo "build-tl: $(($(date +%s) - t0)) s"
rc=0
for a in "$@"; do
    name=${a%%=*} opts=${a#*=}
    # shellcheck disable=SC2086 # the options split into words
    build-tl/tests/engine/gpu/engine_gpu_bench --steps 4 --timeline "$out/$name" $opts >"$out/$name.log" 2>&1
    r=$?
    echo "$name: rc=$r ($(($(date +%s) - t0)) s)"
    [ $r -eq 0 ] || { tail -5 "$out/$name.log"; rc=1; continue; }
    grep -E "^timeline" "$out/$name.log"
    # --split gate_up:112: the shared expert's 112 parts (Kimi-K2 at tp-shape 8, every T) and the routed tiles apart
    # where the shared parts come first (T = 3; --moe-order shared-first). Under the default order at T = 1 the
    # routed tiles come first (moe.cu): gate_up<112 are then routed tiles and gate_up>=112 16 routed tiles and
    # the 112 parts (results/engine-h100/e65d516-moe-order/tl/place.py reads the records by the order instead)
    python3 ci/timeline.py --ctas --split gate_up:112 --out "$out/$name-launches.csv" "$out"/"$name"-T*.csv \
        >"$out/$name-summary.txt" 2>&1 || rc=1
    grep -v "^#   .*  \(start\|wait\|end\|run\) " "$out/$name-summary.txt" # the CTAs' quantiles: in the file
    # where the MoE's and the attention's blocks ran, SM by SM: gate/up's routed tiles by the grid's
    # order (moe.cu: at Kimi-K2's tp-shape 8 the first 128 at T = 1 under the default, from 112 on at T = 3)
    r1=0-128 r3=112-
    # (--moe-order spread at T = 3: the first as many as SMs, then from 112 + that on: not one range,
    # so its T = 3 gate/up row mixes the shared parts in)
    case " $opts " in
    *" --moe-order shared-first "*) r1=112- ;;
    *" --moe-order routed-first "*) r3=0-384 ;;
    *" --moe-order spread "*) r3=0- ;;
    esac
    for t in 1:$r1 3:$r3; do
        python3 ci/timeline.py --by-sm "gate_up:${t#*:}" --by-sm down --by-sm attend --by-sm merge --by-sm uv \
            --by-sm o_proj --by-sm router --by-sm qkva_prep --by-sm qb_absorb "$out/$name-T${t%%:*}.csv" |
            grep -E "^# /|by SM|run with|last end"
    done >"$out/$name-by-sm.txt" 2>&1 || rc=1
    grep -E "by SM|last end" "$out/$name-by-sm.txt"
    gzip -f "$out"/"$name"-T*.csv
done
exit $rc
