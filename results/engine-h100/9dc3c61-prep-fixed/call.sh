#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next4.sh", ".carry/tmain", ".debs", "REVISION"].
# Twenty-fifth session, fourth call: the prep_qb race fixed (ldcg_bf16). ci/engine-ab.sh, four alternated
# rounds: main = .carry/tmain (45c96d2), new = this tree (its default: norm weight before the wait,
# prep_qb, the router top-k change); this tree's engine GPU tests; --check-steps on kimi-k2 3 layers /
# 32 experts (nccl sites) with and without prep_qb, their last logits compared byte for byte.
. ci/device-call.sh 440
set -u
mkdir -p "$O/ab" "$O/d"
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for n in main new; do export ENGINE_ARGS_$n="--dump-tokens $O/ab/tokens-$n.txt --force"; done
timeout $(lim 300) bash ci/engine-ab.sh "$O/ab" 4 main=.carry/tmain new=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|gpu tests)|graph  (decode|verify)|^ *[0-9]+/[0-9]+ " "$O/ab/run.log"
grep -hE " step " "$O"/ab/diff-*.txt
cp build-gpu/meson-logs/testlog.txt "$O/ab/testlog.txt" 2>/dev/null
grep -E "^(not )?ok|DIFFERS|differ from" "$O/ab/testlog.txt" | head -30
echo "ab done $(el)"
cmp "$O/ab/tokens-main.txt" "$O/ab/tokens-new.txt" && echo "tokens new: identical to main" || echo "tokens new: DIFFER from main"
eng() { # NAME ARGS...: one engine run of this tree
    local n=$1; shift
    timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --modes graph \
        --no-noop-replay --out "$O/d/$n.csv" --force --dump-logits "$O/d/logits-$n.bin" >"$O/d/$n.log" 2>&1
    echo "engine $n: rc=$? $(el)"; grep -E "check vs|selected experts|graph  (decode|verify)" "$O/d/$n.log" | tail -4
}
K3="--config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl"
# shellcheck disable=SC2086
{
eng k3-prep $K3
eng k3-noprep $K3 --fuse qb_absorb
}
cmp "$O/d/logits-k3-prep.bin" "$O/d/logits-k3-noprep.bin" && echo "logits k3: prep_qb = qb_absorb alone" || echo "logits k3: DIFFER"
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
