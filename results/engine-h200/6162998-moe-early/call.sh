#!/bin/bash
# Before the call: git rev-parse --short=12 HEAD > REVISION; carry [".carry", ".debs", "REVISION"],
# command "bash .carry/next18.sh"; ask for nvidia-h200 (an H100 also answers: say which).
# Twenty-second session (2026-12-05), first call: --moe-early (MoE down's selection and first round
# of routed weights before its PDL wait; gate/up triggers it after its own wait) on and l2 against
# main before it (.carry/base = git archive acb8cf1), five alternated rounds; the engine GPU tests
# of this tree (engine-ab.sh: kernels, moe, vs cpu, profile, persist); --check-steps with it on.
# Then the step's timeline (a build with -Dengine_timeline=true, made meanwhile on 4 cores):
# engine_gpu_bench --timeline with the default and with --moe-early on, summarized by ci/timeline.py.
. ci/device-call.sh 570
set -u
mkdir -p "$O/ab" "$O/tl"
# the timeline build meanwhile (4 cores; the GPU stays the A/B's alone), its runs after the A/B
(meson setup build-tl -Dnccl_home=/usr -Dengine_timeline=true "-Dgencode=['arch=compute_90,code=sm_90']" &&
    ninja -C build-tl -j4 tests/engine/gpu/engine_gpu_bench) >"$O/tl/build-bg.log" 2>&1 &
tlpid=$!
export ENGINE_ARGS_base="--dump-tokens $O/ab/tokens-base.txt --force"
export ENGINE_ARGS_on="--moe-early on --dump-tokens $O/ab/tokens-on.txt --force"
export ENGINE_ARGS_l2="--moe-early l2 --dump-tokens $O/ab/tokens-l2.txt --force"
DEBS=.debs timeout $(lim 420) bash ci/engine-ab.sh "$O/ab" 5 base=.carry/base on=. l2=. >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|gpu tests)|graph  (decode|verify)|shown|apart|^ *[0-9]+/[0-9]+ " "$O/ab/run.log" | grep -v "^    [13] [a-z]"; echo "ab done $(el)"
for n in on l2; do cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$n.txt" && echo "tokens $n: identical to base"; done
python3 -c "
import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print('step_form:', r[0]['step_form'])" "$O/ab/engine-on-1.csv"
wait $tlpid; echo "timeline build: rc=$? $(el)"
timeout $(lim 110) bash ci/engine-timeline.sh "$O/tl" off= on="--moe-early on" >"$O/tl/run.log" 2>&1
echo "timeline: rc=$? $(el)"; cat "$O/tl/run.log"
# the raw records beside r.tgz, one file each (16 MiB a file, 8 files a call: ~4 MB each gzipped)
mv "$O"/tl/*-T*.csv.gz "$OUT"/ 2>/dev/null; ls -la "$OUT"
run_check() { # NAME ARGS...: the engine against its CPU reference
    local n=$1; shift
    timeout $(lim 60) mpirun --allow-run-as-root -np 1 build-gpu/harness/arbench engine "$@" --impl nccl --modes graph \
        --no-noop-replay --moe-early on --out "$O/check-$n.csv" --force >"$O/check-$n.log" 2>&1
    echo "check $n: rc=$? $(el)"; grep -E "check vs|greedy|selected experts|^#   " "$O/check-$n.log" | grep -v "memory\|bytes\|GB" | tail -4
}
run_check tiny --config tiny --steps 8 --check-steps 8
run_check kimi3 --config kimi-k2 --weights int4 --tp-shape 8 --layers 3 --context 16 --steps 4 --check-steps 2
