#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next3.sh", ".carry/tmain", ".debs", "REVISION"].
# Twenty-sixth session, third call. ci/engine-ab.sh, four alternated rounds: main = .carry/tmain
# (9291f63), new = this tree's default (the ticket, the router top-k), xs = this tree with
# --moe-stage x (the routed INT4 gate/up's token vectors in shared memory at T <= 2, 14 groups in
# flight); this tree's engine GPU tests (moe: x bit-identical at T = 1, 2); --check-steps on kimi-k2
# 3 layers / 32 experts (nccl sites) with and without x, last logits compared byte for byte.
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu build-tl .carry/tmain/build-gpu # a warm machine's builds of an earlier call: engine-ab.sh sets them up anew
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for n in main new xs; do export ENGINE_ARGS_$n="--dump-tokens $O/ab/tokens-$n.txt --force"; done
ENGINE_ARGS_xs="$ENGINE_ARGS_xs --moe-stage x"
timeout $(lim 420) bash ci/engine-ab.sh "$O/ab" 4 main=.carry/tmain new=. xs=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|gpu tests)|graph  (decode|verify)|^ *[0-9]+/[0-9]+ " "$O/ab/run.log"
grep -hE " step | router | moe_gate_up | moe_down " "$O"/ab/diff-*.txt
cp build-gpu/meson-logs/testlog.txt "$O/ab/testlog.txt" 2>/dev/null
grep -E "^(not )?ok|DIFFERS|differ from|selection errors|not zero" "$O/ab/testlog.txt" | grep -v "^ok" | head -30
echo "ab done $(el)"
for n in new xs; do
    cmp "$O/ab/tokens-main.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to main" || echo "tokens $n: DIFFER from main"
done
eng() { # NAME ARGS...: one engine run of this tree
    local n=$1; shift
    timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --modes graph \
        --no-noop-replay --out "$O/d/$n.csv" --force --dump-logits "$O/d/logits-$n.bin" >"$O/d/$n.log" 2>&1
    echo "engine $n: rc=$? $(el)"; grep -E "check vs|selected experts|graph  (decode|verify)" "$O/d/$n.log" | tail -4
}
K3="--config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl"
# shellcheck disable=SC2086
{
eng k3-new $K3
eng k3-xs $K3 --moe-stage x
}
cmp "$O/d/logits-k3-new.bin" "$O/d/logits-k3-xs.bin" && echo "logits k3: x = default" || echo "logits k3: DIFFER"
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
