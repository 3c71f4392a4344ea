#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next1.sh", ".carry/tmain", ".debs", "REVISION"];
# command "bash .carry/next1.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twenty-fifth session (2026-12-06), first call: three names, five alternated rounds (ci/engine-ab.sh):
#   main = .carry/tmain (git archive 45c96d2 without results/ and plots/figures/: main at the session's start),
#   base = this tree (c8f9a64) default: the residual norm's weight loaded before its PDL wait (8ea406d),
#   prep = this tree with --fuse qb_absorb,prep_qb (the MLA prep in the fused q_b's launch; same bits).
# Then the rmsnorm and noop fused GPU tests of this tree, and --check-steps with prep_qb on kimi-k2 3 layers.
. ci/device-call.sh 560
set -u
mkdir -p "$O/ab" "$O/d"
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
export ENGINE_ARGS_main="--dump-tokens $O/ab/tokens-main.txt --force"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_prep="--fuse qb_absorb,prep_qb --dump-tokens $O/ab/tokens-prep.txt --force"
timeout $(lim 470) bash ci/engine-ab.sh "$O/ab" 5 main=.carry/tmain base=. prep=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|gpu tests)|graph  (decode|verify)|shown|apart|^ *[0-9]+/[0-9]+ " "$O/ab/run.log" | grep -v "^    [13] [a-z]"
echo "ab done $(el)"
for n in base prep; do
    cmp "$O/ab/tokens-main.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to main" || echo "tokens $n: DIFFER from main"
done
(ninja -C build-gpu -j16 tests/rmsnorm/test_rmsnorm_gpu tests/collectives/noop/test_noop_fused collectives/noop/arb-noop.so &&
    timeout $(lim 60) meson test -C build-gpu --no-rebuild "rmsnorm_gpu" "noop fused" --print-errorlogs) >"$O/tests.log" 2>&1
echo "rmsnorm/noop tests: rc=$? $(el)"; grep -E "^ *[0-9]+/[0-9]+ |not ok" "$O/tests.log" | head -10
run_check() { # NAME ARGS...: the engine against its CPU reference
    local n=$1; shift
    timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --impl nccl --modes graph \
        --no-noop-replay --out "$O/d/check-$n.csv" --force >"$O/d/check-$n.log" 2>&1
    echo "check $n: rc=$? $(el)"; grep -E "check vs|greedy|selected experts|agree" "$O/d/check-$n.log" | tail -4
}
run_check kimi3-prep --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 \
    --check-steps 2 --fuse qb_absorb,prep_qb
echo "done $(el)"
