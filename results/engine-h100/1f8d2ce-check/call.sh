#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION;
# carry [".carry/next3.sh", ".carry/tprep", ".carry/tmain", ".debs", "REVISION"]; command "bash .carry/next3.sh".
# Twenty-fifth session, third call:
#  1. ci/engine-ab.sh, four alternated rounds: main = .carry/tmain (45c96d2, the session's start),
#     base = .carry/tprep (10c18b8: the norm's weight before its wait, prep_qb the default),
#     topk = this tree (1f8d2ce: and the router's top-k reads its staged bias once, its scores' loads four at a time).
#  2. --check-steps on kimi-k2 3 layers / 32 experts (nccl sites) with main's tree, and this tree with and
#     without prep_qb, their last logits compared byte for byte; the same on tiny (main, this tree).
#  3. this tree's kimi-k2 (noop sites) with and without prep_qb: the last step's logits byte for byte.
. ci/device-call.sh 570
set -u
mkdir -p "$O/ab" "$O/d"
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for n in main base topk; do export ENGINE_ARGS_$n="--dump-tokens $O/ab/tokens-$n.txt --force"; done
timeout $(lim 330) bash ci/engine-ab.sh "$O/ab" 4 main=.carry/tmain base=.carry/tprep topk=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|gpu tests)|graph  (decode|verify)|^ *[0-9]+/[0-9]+ " "$O/ab/run.log"
grep -hE " step " "$O"/ab/diff-*.txt
cp build-gpu/meson-logs/testlog.txt "$O/ab/testlog.txt" 2>/dev/null
echo "ab done $(el)"
for n in base topk; do cmp "$O/ab/tokens-main.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to main" || echo "tokens $n: DIFFER from main"; done
eng() { # NAME TREE ARGS...: one engine run of TREE's build
    local n=$1 t=$2; shift 2
    (cd "$t" && timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --modes graph \
        --no-noop-replay --out "$O/d/$n.csv" --force --dump-logits "$O/d/logits-$n.bin") >"$O/d/$n.log" 2>&1
    echo "engine $n: rc=$? $(el)"; grep -E "check vs|selected experts|graph  (decode|verify)" "$O/d/$n.log" | tail -4
}
K3="--config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --experts 32 --context 16 --steps 4 --check-steps 2 --impl nccl"
TY="--config tiny --context 64 --steps 8 --check-steps 8 --impl nccl"
# shellcheck disable=SC2086
{
eng k3-main .carry/tmain $K3
eng k3-prep . $K3
eng k3-noprep . $K3 --fuse qb_absorb
eng tiny-main .carry/tmain $TY
eng tiny-topk . $TY
}
c() { cmp "$O/d/logits-$1.bin" "$O/d/logits-$2.bin" >/dev/null 2>&1 && echo "logits $1 = $2" || echo "logits $1 DIFFER from $2"; }
c k3-prep k3-noprep; c k3-main k3-noprep; c k3-main k3-prep; c tiny-main tiny-topk
KF="--config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --steps 8 --impl noop"
# shellcheck disable=SC2086
{
eng full-prep . $KF
eng full-noprep . $KF --fuse qb_absorb
}
c full-prep full-noprep
ls -l "$O"/d/logits-*.bin | awk '{print $5, $9}'
rm -f "$O"/d/logits-*.bin
echo "done $(el)"
