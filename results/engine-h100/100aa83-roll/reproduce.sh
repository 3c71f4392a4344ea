#!/bin/bash
# SPDX-License-Identifier: MIT
# The committed sass-sb-*-sm90.txt from their inputs, with the tool as it is now (thirty-eighth
# session): tree 100aa83 (git archive), its variants by one.patch / split.patch, moe.cu compiled to
# an sm_90 cubin with the build's flags (a configured build/ of the current tree supplies
# arb_config.h), `cuobjdump -sass`, then `ci/sass-loops.py --sb` on gate/up's T = 1 and T = 2..3
# kernels, phase lines left out as committed. The anonymous namespace's hash in the mangled names
# depends on the source's path, so it is replaced by H on both sides before the comparison.
#   bash results/engine-h100/100aa83-roll/reproduce.sh WORKDIR   (cuobjdump on PATH or in CUOBJDUMP)
set -u
w=${1:?WORKDIR}; root=$(cd "$(dirname "$0")/../../.." && pwd); d=$root/results/engine-h100/100aa83-roll
cuobjdump=${CUOBJDUMP:-cuobjdump}
k1='moe_gate_up_kernelILb1ELi1ELi1ELi4ELi7ELi2ELi0ENS_8pdl_lateE'
k2='moe_gate_up_kernelILb1ELi2ELi1ELi2ELi4ELi2ELi0ENS_8pdl_lateE'
norm() { sed -E 's/GLOBAL__N__[0-9a-f]+_6_moe_cu/GLOBAL__N__H_6_moe_cu/'; }
for v in base one split; do
    rm -rf "$w/$v" && mkdir -p "$w/$v" && git -C "$root" archive 100aa83 | tar x -C "$w/$v" || exit 2
    [ $v = base ] || (cd "$w/$v" && patch -p1 -s <"$d/$v.patch") || exit 2
    (cd "$root/build" && nvcc -Iengine/libarbench_engine.a.p -lineinfo -O2 -std=c++17 --expt-relaxed-constexpr \
        -isystem=/usr/local/cuda/include -I"$w/$v/src" -Isrc -I"$w/$v/include" -I"$w/$v/engine" -I. \
        -cubin -gencode arch=compute_90,code=sm_90 -o "$w/$v.cubin" "$w/$v/engine/gpu/kernels/moe.cu") 2>"$w/$v.nvcc.log" ||
        { echo "$v: nvcc failed ($w/$v.nvcc.log)" >&2; exit 2; }
    "$cuobjdump" -sass "$w/$v.cubin" >"$w/$v.sass" || exit 2
    { python3 "$root/ci/sass-loops.py" --sb --kernel "$k1" "$w/$v.sass"
      python3 "$root/ci/sass-loops.py" --sb --kernel "$k2" "$w/$v.sass"; } | grep -v '^  phase' | norm >"$w/$v-now.txt"
    tail -n +2 "$d/sass-sb-$v-sm90.txt" | norm >"$w/$v-committed.txt"
    if cmp -s "$w/$v-committed.txt" "$w/$v-now.txt"; then
        echo "$v: identical to sass-sb-$v-sm90.txt"
    else
        echo "$v: differs from sass-sb-$v-sm90.txt:"
        diff "$w/$v-committed.txt" "$w/$v-now.txt" | sed 's/^/    /'
    fi
done
