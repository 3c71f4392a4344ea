#!/bin/bash
# THIRTY-NINTH SESSION: run as prepared below, but g100 dropped (device time: three refused starts
# and one call taken back before it finished).
# PREPARED IN THE THIRTY-EIGHTH SESSION, NOT RUN (its device time was spent). ~430 s of a call. Before
# it, on main: mkdir -p .carry/ctl; cp results/engine-h100/ed8cc3d-emb-d14/{ctl,d14}.patch
# results/engine-h100/f74d203-carve/g100.patch .carry/ctl/; cp results/engine-h100/ed8cc3d-emb-d14/next-ctl.sh
# .carry/ctl/call.sh; git rev-parse --short=12 HEAD > REVISION; carry [".carry/ctl", ".debs", "REVISION"];
# run `bash .carry/ctl/call.sh`. `git apply --check` each patch on main first (ci/overlay-tree.sh
# refuses one that no longer applies).
# Why (README.md beside this file): d14 (MoE down at a 14% carveout preference) read verify -0.67%
# apart in the A/B's step rows and in the kernels tables' (-56 us), but decode +0.7% apart in the
# kernels tables' step row and even in the A/B's; and the base is always the tree the call runs in.
#   ctl   main's code in a tree of its own (ctl.patch: one comment line of a README): whether a
#         variant tree reads faster than `.` with nothing changed (the thirty-seventh session saw
#         -0.36% "apart" at verify from identical T = 3 code)
#   d14   down at 14% (d14.patch, f74d203-carve's carve_once)
#   g100  gate/up at 43% (100 KiB, every T; f74d203-carve's g100.patch): the cp.async variants'
#         configuration without their code (were qkv_a, down and lm_head slowed by it alone?)
#   muv   main's tree with --fuse qb_absorb,prep_qb,merge_uv (a run-time option; last measured at
#         a4a07aa, decode +0.84%, verify -0.23%, on compute ~18% slower than main's)
# Read both measurements for each name: the A/B's graph medians (run.log) and the kernels tables'
# `step` rows (engine-*-kernels-*.csv.gz), against base and against ctl.
. ci/device-call.sh 420
set -u
mkdir -p "$O/ab"
rm -rf build-gpu .carry/tctl .carry/td14
bash ci/deps.sh --debs .debs >"$O/deps.log" 2>&1 || echo "deps rc=$?"
for v in ctl d14; do bash ci/overlay-tree.sh .carry/t$v --patch .carry/ctl/$v.patch || echo "tree t$v: FAILED"; done
for v in base ctl d14 muv; do export "ENGINE_ARGS_$v=--dump-tokens $O/ab/tokens-$v.txt --force"; done
export ENGINE_ARGS_muv="$ENGINE_ARGS_muv --fuse qb_absorb,prep_qb,merge_uv"
export AB_TESTS=""
timeout $(lim 400) bash ci/engine-ab.sh "$O/ab" 4 base=. ctl=.carry/tctl d14=.carry/td14 muv=. \
    >"$O/ab/run.log" 2>&1 || echo "ab rc=$?"
grep -E "^(build|engine|kernels diff|round)|graph  (decode|verify)" "$O/ab/run.log"
grep -hE "^#  *T| qkv_a | q_b | attend | combine | o_proj | moe_| lm_head | step |rows compared" "$O"/ab/diff-*.txt
for v in ctl d14 muv; do
    cmp "$O/ab/tokens-base.txt" "$O/ab/tokens-$v.txt" && echo "tokens $v: identical" || echo "tokens $v: differ"
done
for f in "$O"/ab/engine-*-kernels-*.csv; do # the kernels tables' own step rows
    python3 -c "import csv,sys
for r in csv.DictReader(open(sys.argv[1])):
    if r['family'] == 'step': print(sys.argv[1].split('/')[-1][:14], 'T', r['tokens'], 'graph', r['graph_us'], 'chain', r['chain_us'])" "$f"
done | sort -k3,3 -k1,1
echo "done $(el)"
