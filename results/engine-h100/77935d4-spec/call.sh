#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next-spec.sh", ".debs", "REVISION"].
# Twenty-ninth session: --moe-early spec (down's first round of routed weights issued before its PDL wait
# from a guess of the selection, read again after the wait and issued again where it differs; gate/up
# triggers after its own wait) and spec-sync (the same down, gate/up triggering at its start), against
# the default, four alternated rounds of one tree (the default's down and gate/up kernels byte-identical
# to main's, sm_90 cubin); tokens compared; the GPU moe test (spec asserted with the selection published
# late); --check-steps: kimi-k2 3 layers (ci/engine-check.sh) and tiny with nccl sites (where on failed).
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_spec="--moe-early spec --dump-tokens $O/ab/tokens-spec.txt --force"
export ENGINE_ARGS_ss="--moe-early spec-sync --dump-tokens $O/ab/tokens-ss.txt --force"
AB_TESTS= timeout $(lim 300) bash ci/engine-ab.sh "$O/ab" 4 base=. spec=. ss=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T|^kernels diff| moe_down | moe_gate_up | step " "$O"/ab/diff-*.txt
for n in spec ss; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical" || echo "tokens $n: DIFFER"; done
ninja -C build-gpu tests/engine/gpu/test_engine_gpu_moe >"$O/build-tests.log" 2>&1
timeout $(lim 60) meson test -C build-gpu --no-rebuild "engine gpu moe" --print-errorlogs >"$O/tests.log" 2>&1
echo "gpu tests rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ " "$O/tests.log"; grep -E "early [34]|not ok" build-gpu/meson-logs/testlog.txt | head -20
ninja -C build-gpu collectives/nccl/arb-nccl.so >>"$O/build-tests.log" 2>&1
for t in base: spec:--moe-early=spec; do
    n=${t%%:*}; a=${t#*:}
    ENGINE_CHECK_TIMEOUT=$(lim 70) bash ci/engine-check.sh "$O/d" "k3-$n" . ${a:+${a/=/ }}
done
bash ci/engine-check.sh --cmp "$O/d" k3-base k3-spec
run_d() { # NAME ARGS...
    local n=$1; shift
    timeout $(lim 40) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" \
        --modes graph --no-noop-replay --dump-logits "$O/d/logits-$n.bin" --dump-tokens "$O/d/tokens-$n.txt" \
        --force --out "$O/d/$n.csv" >"$O/d/$n.log" 2>&1
    echo "$n: rc=$? $(el)"; grep -E "check vs|^arbench" "$O/d/$n.log"
}
tiny="--config tiny --context 64 --steps 8 --impl nccl --check-steps 8"
run_d t-off $tiny
run_d t-spec $tiny --moe-early spec
run_d t-spec2 $tiny --moe-early spec
run_d t-ss $tiny --moe-early spec-sync
run_d t-ss2 $tiny --moe-early spec-sync
for n in t-spec t-spec2 t-ss t-ss2; do
    for f in logits tokens; do cmp -s "$O/d/$f-$n."* "$O/d/$f-t-off."* && echo "$f $n = t-off" || echo "$f $n != t-off"; done
done
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
