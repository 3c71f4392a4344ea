#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry/next3.sh", ".debs", "REVISION"].
# Twenty-seventh session, third call: --attn-per-sm / --merge-per-sm (at most N attend or merge
# blocks an SM). ci/engine-ab.sh, four alternated rounds of base (the default), a2 (--attn-per-sm
# 2), m1 (--merge-per-sm 1) and am (both); tokens compared; the engine GPU tests; --check-steps
# (kimi-k2 3 layers / 32 experts, nccl) default and with both caps, logits compared.
. ci/device-call.sh 540
set -u
mkdir -p "$O/ab" "$O/d"
rm -rf build-gpu build-tl
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_a2="--attn-per-sm 2 --dump-tokens $O/ab/tokens-a2.txt --force"
export ENGINE_ARGS_m1="--merge-per-sm 1 --dump-tokens $O/ab/tokens-m1.txt --force"
export ENGINE_ARGS_am="--attn-per-sm 2 --merge-per-sm 1 --dump-tokens $O/ab/tokens-am.txt --force"
AB_TESTS= timeout $(lim 320) bash ci/engine-ab.sh "$O/ab" 4 base=. a2=. m1=. am=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^# chain| step | attend | combine " "$O"/ab/diff-*.txt | head -40
for n in a2 m1 am; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to base" || echo "tokens $n: DIFFER from base"
done
echo "ab done $(el)"
ninja -C build-gpu tests/engine/gpu/test_engine_gpu_moe tests/engine/gpu/test_engine_gpu_kernels \
    tests/engine/gpu/test_engine_gpu_vs_cpu >"$O/build-tests.log" 2>&1 || echo "test build rc=$?"
timeout $(lim 100) meson test -C build-gpu --no-rebuild "engine gpu moe" "engine gpu kernels" "engine gpu vs cpu" \
    --print-errorlogs >"$O/tests.log" 2>&1; echo "gpu tests rc=$? $(el)"
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail):" "$O/tests.log"
cp build-gpu/meson-logs/testlog.txt "$O/testlog.txt" 2>/dev/null
grep -E "^not ok|DIFFERS|capped" "$O/testlog.txt" | head -20
eng() { # NAME ARGS...: one engine run of this tree
    local n=$1; shift
    timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --modes graph \
        --no-noop-replay --out "$O/d/$n.csv" --force --dump-logits "$O/d/logits-$n.bin" >"$O/d/$n.log" 2>&1
    echo "engine $n: rc=$? $(el)"; grep -E "check vs|selected experts|graph  (decode|verify)" "$O/d/$n.log" | tail -4
}
K3="--config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl"
# shellcheck disable=SC2086
{
eng k3-base $K3
eng k3-am $K3 --attn-per-sm 2 --merge-per-sm 1
}
cmp "$O/d/logits-k3-base.bin" "$O/d/logits-k3-am.bin" && echo "logits k3: am = base" || echo "logits k3: DIFFER"
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
