#!/bin/bash
# SPDX-License-Identifier: MIT
# The engine's compute A/B of several trees in one call on a one-GPU machine:
#   ci/engine-ab.sh OUT ROUNDS BASE=TREE NAME=TREE [NAME=TREE ...]
# Each TREE is a source tree (e.g. this branch and main's commit before it, unpacked by
# `git archive`); several names may share one tree, each with its own engine options in
# ENGINE_ARGS_<NAME> (e.g. ENGINE_ARGS_pers="--step-form persistent"). Each distinct tree is
# built once, for sm_90 (GENCODE overrides), in parallel: BASE's tree with only
# what the engine run needs (arbench, the noop, modeled and nccl plugins, engine_gpu_bench), the
# others with the engine's GPU tests too. Then, under OUT:
#   build-NAME.log, tests-NAME.log   the builds; each non-base tree's engine GPU tests (only
#                                    those of the names in AB_TESTS where it is set, e.g.
#                                    AB_TESTS="new": an intermediate tree built and timed only)
#   ncu-NAME.log                     Nsight Compute (--clock-control none) on the router and
#                                    attention kernels of engine_gpu_bench's first decode
#                                    steps (2 layers, context 4096), for the trees NCU names
#                                    (e.g. NCU="base new"; default none). NCU_KERNELS (an ncu
#                                    -k filter) and NCU_PER (how many of its launches a step
#                                    has) profile other kernels: e.g. NCU_KERNELS=regex:moe_gate_up
#                                    NCU_PER=1 (one MoE layer of the two; the shared-memory
#                                    configuration is in LaunchStats)
#   engine-NAME-N.{csv,log}          ROUNDS kimi-k2 engine runs of each tree, the names
#                                    alternated, round N in the order given rotated by N - 1
#                                    (round 2 starts at the second name: no name always runs
#                                    first; each still runs after the same name within a
#                                    round; run.log says each round's order), with their
#                                    -kernels-*.csv
#   diff-NAME.txt                    each name's per-kernel tables against the first name's
#                                    (ci/kernels-diff.py: chain column where both have it)
#   machine.txt                      date, GPU, driver
# Needs the machine's NCCL in /usr (ci/deps.sh --debs DEBS first if DEBS is set).
# AB_DRY=1: print each round's order and exit (no build, no GPU; OUT is not made).
set -u
die() { echo "ci/engine-ab.sh: $*" >&2; exit 2; }
out=${1:?OUT}; rounds=${2:?ROUNDS}; shift 2
case $rounds in '' | *[!0-9]* | 0) die "ROUNDS '$rounds': expected a whole number of rounds >= 1" ;; esac
[ $# -ge 2 ] || die "need BASE=TREE and at least one NAME=TREE"
names=(); trees=()
for a in "$@"; do
    case $a in *=?*) ;; *) die "'$a': expected NAME=TREE" ;; esac
    n=${a%%=*}
    case $n in '' | *[!A-Za-z0-9_]*) die "'$a': NAME must be letters, digits and _ (it names ENGINE_ARGS_NAME)" ;; esac
    case " ${names[*]-} " in *" $n "*) die "NAME '$n' given twice (its files would overwrite each other)" ;; esac
    names+=("$n"); trees+=("${a#*=}")
done
# round_order R: the indices of the names in round R's order (the given order rotated by R - 1)
round_order() {
    local k
    for ((k = 0; k < ${#names[@]}; k++)); do printf '%d ' $(((k + $1 - 1) % ${#names[@]})); done
}
# round_names R: the names in round R's order
round_names() {
    local i line=""
    for i in $(round_order "$1"); do line="$line ${names[$i]}"; done
    echo "${line# }"
}
if [ -n "${AB_DRY:-}" ]; then
    for r in $(seq 1 "$rounds"); do echo "round $r: $(round_names "$r")"; done
    exit 0
fi
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute: the engine runs --out from inside each tree
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv; } >"$out/machine.txt" 2>&1
# the first name of each distinct tree builds it (and, past BASE's tree, runs its tests)
first=()
for i in "${!trees[@]}"; do
    f=$i
    for j in "${!trees[@]}"; do [ "$j" -lt "$i" ] && [ "${trees[$j]}" = "${trees[$i]}" ] && { f=$j; break; }; done
    first+=("$f")
done
[ -n "${DEBS:-}" ] && bash "${trees[1]}/ci/deps.sh" --debs "$DEBS" >"$out/deps.log" 2>&1
gen=${GENCODE:-"['arch=compute_90,code=sm_90']"}
# nccl too: `--check-steps` needs a real all-reduce at the sites (noop is refused there)
engine_targets="harness/arbench collectives/noop/arb-noop.so collectives/modeled/arb-modeled.so collectives/nccl/arb-nccl.so tests/engine/gpu/engine_gpu_bench"
tests=("engine gpu kernels" "engine gpu moe" "engine gpu vs cpu" "engine gpu profile")
test_bins="test_engine_gpu_kernels test_engine_gpu_moe test_engine_gpu_vs_cpu test_engine_gpu_profile"
if [ -f "${trees[$#-1]}/tests/engine/gpu/test_engine_gpu_mla.cu" ]; then # a tree whose MLA cases have their own test
    tests+=("engine gpu mla"); test_bins="$test_bins test_engine_gpu_mla"
fi
if [ -f "${trees[$#-1]}/tests/engine/gpu/test_engine_gpu_persist.c" ]; then # a tree with the persistent form
    tests+=("engine gpu persist"); test_bins="$test_bins test_engine_gpu_persist"
fi
test_targets=""
for t in $test_bins; do
    test_targets="$test_targets tests/engine/gpu/$t"
done
ndistinct=0
for i in "${!trees[@]}"; do [ "${first[$i]}" -eq "$i" ] && ndistinct=$((ndistinct + 1)); done
jobs=$(( $(nproc) / ndistinct )); [ "$jobs" -ge 2 ] || jobs=2
t0=$(date +%s)
pids=()
for i in "${!trees[@]}"; do
    pids+=(0)
    [ "${first[$i]}" -eq "$i" ] || continue
    tg="$engine_targets"; [ "${trees[$i]}" != "${trees[0]}" ] && tg="$tg $test_targets"
    (cd "${trees[$i]}" && meson setup build-gpu -Dnccl_home=/usr "-Dgencode=$gen" && ninja -C build-gpu -j"$jobs" $tg) \
        >"$out/build-${names[$i]}.log" 2>&1 &
    pids[$i]=$!
done
ok=()
for i in "${!trees[@]}"; do
    if [ "${first[$i]}" -eq "$i" ]; then
        wait "${pids[$i]}"; rc=$?
        echo "build ${names[$i]}: rc=$rc ($(($(date +%s) - t0)) s)"
        [ $rc -eq 0 ] || tail -20 "$out/build-${names[$i]}.log"
    else
        rc=${ok[${first[$i]}]}
    fi
    ok+=($rc)
done

for i in "${!trees[@]}"; do
    [ "${trees[$i]}" != "${trees[0]}" ] && [ "${first[$i]}" -eq "$i" ] && [ "${ok[$i]}" -eq 0 ] || continue
    if [ -n "${AB_TESTS+x}" ]; then case " $AB_TESTS " in *" ${names[$i]} "*) ;; *) continue ;; esac; fi
    (cd "${trees[$i]}" && timeout 150 meson test -C build-gpu --no-rebuild "${tests[@]}" --print-errorlogs) \
        >"$out/tests-${names[$i]}.log" 2>&1
    echo "gpu tests ${names[$i]}: rc=$? ($(($(date +%s) - t0)) s)"
    grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail):" "$out/tests-${names[$i]}.log"
done

ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for i in "${!trees[@]}"; do
    case " ${NCU:-} " in *" ${names[$i]} "*) ;; *) continue ;; esac
    [ "${ok[$i]}" -eq 0 ] || continue
    # 512 prefill steps of 8 tokens, then decode; per step: attend x2, merge x2, the router's
    # launches (one in a tree whose router kernel is one launch, two otherwise)
    nr=2; grep -q "router_topk_kernel" "${trees[$i]}/engine/gpu/kernels/router.cu" || nr=1
    per=${NCU_PER:-$((4 + nr))}
    timeout 90 "$ncu" --clock-control none -k "${NCU_KERNELS:-regex:router|mla_attend_pos|mla_merge}" \
        --launch-skip $((512 * per)) --launch-count $((2 * per)) \
        --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
        --section SchedulerStats --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
        "${trees[$i]}/build-gpu/tests/engine/gpu/engine_gpu_bench" --layers 2 --context 4096 --steps 2 \
        >"$out/ncu-${names[$i]}.log" 2>&1
    echo "ncu ${names[$i]}: rc=$? ($(($(date +%s) - t0)) s)"
    grep -E "^  [^ ].*\(|^    Duration|^    Shared Memory Configuration Size" "$out/ncu-${names[$i]}.log" | sed 's/(const .*) (/(/' | head -36
done

for r in $(seq 1 "$rounds"); do
    echo "round $r order: $(round_names "$r")"
    for i in $(round_order "$r"); do
        [ "${ok[$i]}" -eq 0 ] || continue
        nm=${names[$i]}
        xa="ENGINE_ARGS_$nm"
        # shellcheck disable=SC2086 # the extra options split into words
        (cd "${trees[$i]}" && timeout 150 mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine \
            --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --steps 32 --impl noop --modes graph \
            --no-noop-replay ${!xa:-} --out "$out/engine-$nm-$r.csv") >"$out/engine-$nm-$r.log" 2>&1
        echo "engine $nm $r: rc=$? ($(($(date +%s) - t0)) s)"
        grep -E "^# graph  (decode|verify)|^#   (router|attend|combine|moe_gate_up|moe_down|step) |^#   chain: layer" \
            "$out/engine-$nm-$r.log"
    done
done

# Each name against the first, family by family over the rounds (ci/kernels-diff.py, from the
# last tree's ci/): the chain column where both sides' tables have it, else the graph column.
kd="${trees[$#-1]}/ci/kernels-diff.py"
if [ -f "$kd" ] && [ "${#names[@]}" -ge 2 ]; then
    sides=()
    for i in "${!names[@]}"; do
        sides+=("$(ls "$out"/engine-"${names[$i]}"-*-kernels-*.csv 2>/dev/null | paste -sd,)")
    done
    for i in "${!names[@]}"; do
        [ "$i" -gt 0 ] && [ -n "${sides[0]}" ] && [ -n "${sides[$i]}" ] || continue
        col=graph_us
        head -qn1 ${sides[0]//,/ } ${sides[$i]//,/ } | grep -qv chain_us || col=chain_us
        python3 "$kd" --column $col "${names[0]}=${sides[0]}" "${names[$i]}=${sides[$i]}" >"$out/diff-${names[$i]}.txt" 2>&1
        rc=$?
        echo "kernels diff ${names[0]} -> ${names[$i]} ($col): rc=$rc"
        if [ $rc -ne 0 ]; then
            cat "$out/diff-${names[$i]}.txt"
            continue
        fi
        echo "  shown (p <= 0.05):"
        grep -E "shown \(p=" "$out/diff-${names[$i]}.txt" || echo "    none"
        echo "  apart but too few rounds to call (see the gap against the ranges):"
        grep -E "apart, too few rounds" "$out/diff-${names[$i]}.txt" || echo "    none"
    done
fi
