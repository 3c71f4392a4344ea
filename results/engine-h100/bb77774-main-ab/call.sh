#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next4.sh", ".carry/tmain", ".debs", "REVISION"].
# Twenty-seventh session, fourth call: main at the session's start (74b701d, .carry/tmain) against
# this tree (--moe-order auto the default; the split and the per-SM caps reverted), ci/engine-ab.sh,
# four alternated rounds, this tree's engine GPU tests; tokens compared; --check-steps (kimi-k2
# 3 layers / 32 experts, nccl) of both, last logits compared byte for byte.
. ci/device-call.sh 470
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu build-tl .carry/tmain/build-gpu
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for n in main new; do export ENGINE_ARGS_$n="--dump-tokens $O/ab/tokens-$n.txt --force"; done
AB_TESTS=new timeout $(lim 380) bash ci/engine-ab.sh "$O/ab" 4 main=.carry/tmain new=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|gpu tests)|graph  (decode|verify)|^ *[0-9]+/[0-9]+ " "$O/ab/run.log"
grep -hE " step | moe_gate_up | moe_down " "$O"/ab/diff-*.txt
cp build-gpu/meson-logs/testlog.txt "$O/ab/testlog.txt" 2>/dev/null
grep -E "^not ok|DIFFERS" "$O/ab/testlog.txt" | head -20
cmp "$O/ab/tokens-main.txt" "$O/ab/tokens-new.txt" && echo "tokens new: identical to main" || echo "tokens new: DIFFER from main"
echo "ab done $(el)"
eng() { # NAME TREE ARGS...: one engine run of a tree
    local n=$1 t=$2; shift 2
    (cd "$t" && timeout $(lim 45) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --modes graph \
        --no-noop-replay --out "$O/d/$n.csv" --force --dump-logits "$O/d/logits-$n.bin") >"$O/d/$n.log" 2>&1
    echo "engine $n: rc=$? $(el)"; grep -E "check vs|selected experts|graph  (decode|verify)" "$O/d/$n.log" | tail -4
}
K3="--config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl"
# shellcheck disable=SC2086
{
eng k3-new . $K3
eng k3-main .carry/tmain $K3
}
cmp "$O/d/logits-k3-new.bin" "$O/d/logits-k3-main.bin" && echo "logits k3: new = main" || echo "logits k3: DIFFER"
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
