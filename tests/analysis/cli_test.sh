#!/bin/sh
# SPDX-License-Identifier: MIT
# CLI tests of `arbench profile` and `arbench gate` on generated fixtures: exit codes,
# messages for hostile inputs, written files; the gate on the committed repeat runs.
# Usage: cli_test.sh GEN_FIXTURES ANALYSIS_CLI REPEAT_A.csv REPEAT_B.csv
set -u
abspath() { (cd "$(dirname "$1")" && echo "$(pwd)/$(basename "$1")"); }
gate_sh=$(abspath "$(dirname "$0")/../../ci/gate.sh")
gen=$(abspath "$1")
cli=$(abspath "$2")
repeat_a=$(abspath "$3")
repeat_b=$(abspath "$4")
dir=$(mktemp -d /tmp/arb-cli-XXXXXX) || exit 1
n=0
failed=0
tap() { # tap OK|FAIL description
    n=$((n + 1))
    if [ "$1" = OK ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
expect() { # expect RC DESCRIPTION CMD...
    want=$1; what=$2; shift 2
    "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    if [ "$rc" -eq "$want" ]; then tap OK "$what (exit $rc)"; else tap FAIL "$what: exit $rc, expected $want"; sed 's/^/# /' "$dir/err" | head -5; fi
}
has() { # has FILE PATTERN DESCRIPTION
    if grep -q -- "$2" "$1"; then tap OK "$3"; else tap FAIL "$3: '$2' not in $(basename "$1")"; sed 's/^/# /' "$1" | head -5; fi
}

"$gen" "$dir" "$repeat_b" || { echo "Bail out! gen_fixtures failed"; exit 1; }
cd "$dir" || exit 1

# ---- profile ----
expect 0 "profile of base.csv + rmsnorm.csv" "$cli" profile --out p.csv --json p.json base.csv rmsnorm.csv
has p.csv '^schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,median_us,baseline_impl,baseline_params,baseline_median_us,speedup,confidence,sources' "profile CSV header in the shared column order"
has p.csv '^1,pcie-gen5,2,1,bf16,allreduce,graph,0,64512,p2p,' "graph 0..64512 goes to p2p"
has p.csv ',allreduce_rmsnorm,graph,0,18446744073709551615,p2p,variant=oneshot-push,.*,fused,' "rmsnorm: fused p2p wins every size"
has p.json '"schema": 1' "JSON has schema 1"
has p.json '"run_ids"' "JSON records run_ids"
if find . -maxdepth 1 -name '*.tmp.*' | grep -q .; then tap FAIL "no temporary files left"; else tap OK "no temporary files left"; fi
expect 0 "profile --min-speedup 2: p2p's 1.36-1.67x leads no longer count" "$cli" profile --quiet --min-speedup 2 --out p2.csv base.csv
if grep -q ',p2p,' p2.csv; then tap FAIL "no p2p rows at --min-speedup 2"; else tap OK "no p2p rows at --min-speedup 2"; fi
expect 0 "profile --exclude '': nothing excluded by name" "$cli" profile --quiet --exclude , --out p3.csv base.csv
if grep -q ',noop,' p3.csv; then tap FAIL "the reference floor (role=reference) never wins"; else tap OK "the reference floor (role=reference) never wins"; fi
# The same rows with role=candidate on the noop floor: it wins (so the role is what keeps it out).
sed 's/,reference,,,$/,candidate,,,/' base.csv | sed 's/,skip,0,,"reference floor: no payload, not checked",/,pass,0,exact,,/' >noop_candidate.csv
expect 0 "profile of the floor relabelled candidate" "$cli" profile --quiet --out p4.csv noop_candidate.csv
has p4.csv ',noop,' "relabelled as a candidate, the no-payload floor would win: the role matters"
expect 0 "profile --exclude noop: names still exclude" "$cli" profile --quiet --exclude noop --out p5.csv noop_candidate.csv
if grep -q ',noop,' p5.csv; then tap FAIL "--exclude noop keeps it out"; else tap OK "--exclude noop keeps it out"; fi

# ---- hostile inputs: exit 2 with a message naming the file ----
for f in empty nan_median inf_median neg_median text_bytes neg_bytes schema2 bad_samples zero_ranks \
         huge_field missing_col foreign binary truncated wrong_count cut_mid_row inconsistent short_samples \
         bad_role; do
    expect 2 "profile rejects $f.csv" "$cli" profile "$f.csv"
    has err "$f.csv" "the message names $f.csv"
    expect 2 "gate rejects $f.csv as candidate" "$cli" gate --baseline base.csv --candidate "$f.csv"
done
"$cli" gate --baseline base.csv --candidate wrong_count.csv 2>err
has err "line 2 has 2 fields, the header has" "wrong field count: the message says which line and what is wrong"
"$cli" gate --baseline base.csv --candidate cut_mid_row.csv 2>err
has err "cut_mid_row.csv: line 33 (the last row) is cut off" "a file cut mid-row: the message names the file and the row"
"$cli" profile inconsistent.csv 2>err
has err "inconsistent.csv: line [0-9]* (p2p graph allreduce 43008 B): statistics disagree with the row's own samples: median_us" "statistics x1.3 without their samples: the message names the file, row and column"
"$cli" gate --baseline base.csv --candidate short_samples.csv 2>err
has err "samples_us holds 3 samples, but iters=" "fewer samples than iters implies: refused"
expect 0 "profile of a file with strided samples (10000 taken, every 3rd stored)" "$cli" profile --quiet --out ps.csv strided.csv
expect 0 "gate: strided samples against themselves" "$cli" gate --baseline strided.csv --candidate strided.csv
expect 2 "profile of a missing file" "$cli" profile no_such_file.csv
has err "cannot open" "missing file: 'cannot open'"
expect 2 "profile with no files" "$cli" profile
expect 2 "profile --alpha 7 is refused" "$cli" profile --alpha 7 base.csv
has err "alpha" "the message names --alpha"
expect 1 "profile to an unwritable path" "$cli" profile --quiet --out /nonexistent/dir/p.csv base.csv
expect 0 "profile --emit env" "$cli" profile --emit env --out pe.csv base.csv
has out "^export ARBENCH_PROFILE=$dir/pe.csv\$" "--emit env names the written profile for libarbench"
has out "^export ARBENCH_TUNER_PROFILE=$dir/pe.csv\$" "--emit env names it for the NCCL tuner plugin"
has out "^export NCCL_TUNER_PLUGIN=/.*/libnccl-tuner-arbench.so\$" "--emit env names the tuner plugin"
if grep -qv '^export ' out; then tap FAIL "--emit env prints only export lines"; else tap OK "--emit env prints only export lines"; fi
expect 2 "profile --emit env without --out" "$cli" profile --emit env base.csv
expect 2 "profile --emit yaml is refused" "$cli" profile --emit yaml --out pe.csv base.csv

# ---- gate ----
expect 0 "gate: resampled-identical candidate passes" "$cli" gate --baseline base.csv --candidate cand_same.csv
has out "result: PASS" "the report says PASS"
expect 1 "gate: planted 20% regression fails" "$cli" gate --baseline base.csv --candidate cand_regress.csv --report-md r.md
has out "^REGRESSION *p2p *variant=oneshot-push,blocks=8 *allreduce *bf16 *graph *43008" "the regression row names p2p 43008 graph"
has out "1 regressions" "exactly one regression"
has r.md "^## arbench gate: FAIL" "markdown report written"
has r.md "| REGRESSION | p2p |" "markdown table row"
expect 0 "gate: the 20% slowdown passes under --threshold 0.3" "$cli" gate --threshold 0.3 --baseline base.csv --candidate cand_regress.csv
expect 1 "gate: failed check in the candidate" "$cli" gate --baseline base.csv --candidate cand_fail.csv
has out "FAILED-CHECK" "the failed check is listed"
expect 0 "gate: NCCL version change in params still matches" "$cli" gate --baseline base.csv --candidate cand_upgrade.csv
has out "matched 32 points" "all 32 points matched"
expect 1 "gate --volatile '': no params key ignored, NCCL rows no longer match: lost coverage fails" "$cli" gate --volatile , --baseline base.csv --candidate cand_upgrade.csv
has out "only in the baseline (16" "16 NCCL points listed as only in the baseline"
has out "coverage lost: 16 measured baseline points are missing" "the report says coverage was lost"
expect 0 "gate --volatile '' --allow-missing: the same, accepted" "$cli" gate --allow-missing --volatile , --baseline base.csv --candidate cand_upgrade.csv
# A candidate that lost coverage: base.csv's header and first row (a sweep that died after one point).
head -n 2 base.csv >one_row.csv
expect 1 "gate: a candidate with 1 of 32 points fails (missing coverage)" "$cli" gate --baseline base.csv --candidate one_row.csv
has out "31 measured baseline points are missing" "the report counts the 31 missing points"
has out "result: FAIL" "the report says FAIL"
expect 0 "gate --allow-missing: the same candidate passes" "$cli" gate --allow-missing --baseline base.csv --candidate one_row.csv
# Zero comparisons: every row skipped on both sides (nothing was measured).
sed 's/,pass,0,/,skip,0,/' base.csv >all_skip.csv
expect 1 "gate: nothing compared fails" "$cli" gate --baseline all_skip.csv --candidate all_skip.csv
has out "0 were compared" "the report says nothing was compared"
expect 0 "gate --allow-missing: nothing compared is accepted" "$cli" gate --allow-missing --baseline all_skip.csv --candidate all_skip.csv
# A candidate that skips what the baseline measured (an implementation that now declines).
sed 's/,p2p,\(.*\),pass,0,/,p2p,\1,skip,0,/' base.csv >p2p_skip.csv
expect 1 "gate: a candidate that skips p2p fails (skipped coverage)" "$cli" gate --baseline base.csv --candidate p2p_skip.csv
has out "8 were skipped by it" "the report counts the 8 skipped p2p points"
expect 1 "gate without samples_us: p10/p90 fallback still catches 20%" "$cli" gate --baseline base_nosamples.csv --candidate cand_regress_nosamples.csv
has out "p10/p90 fallback" "the report says the fallback was used"
expect 2 "gate: no common points" "$cli" gate --baseline base.csv --candidate other_fabric.csv
has err "no point in common" "the message says why"
expect 2 "gate without --candidate" "$cli" gate --baseline base.csv
expect 2 "gate --threshold abc" "$cli" gate --threshold abc --baseline base.csv --candidate cand_same.csv
"$cli" gate --baseline base.csv --candidate cand_regress.csv >g1.txt 2>&1
"$cli" gate --baseline base.csv --candidate cand_regress.csv >g2.txt 2>&1
if cmp -s g1.txt g2.txt; then tap OK "gate reports are reproducible"; else tap FAIL "gate reports are reproducible"; fi

# ---- run-to-run noise: the committed 2 x H200 repeat sweeps (identical code, two runs) ----
expect 0 "gate: repeat run b against repeat run a passes (eager medians moved up to 1.20x)" "$cli" gate --baseline "$repeat_a" --candidate "$repeat_b"
has out "run-to-run noise cannot be estimated" "one baseline run: the report says noise cannot be estimated"
has out "^ok *nccl *algo=auto,proto=auto,nccl=2.28.3 *allreduce *bf16 *eager *86016 .* 1.201 *1.250 *default" "the 1.201x eager point is within the eager default 1.25"
expect 1 "gate: same files with an eager allowance of 1.05 fail (the default is what passes them)" "$cli" gate --default-noise eager=1.05 --baseline "$repeat_a" --candidate "$repeat_b"
expect 1 "gate: a planted 30% graph slowdown in a copy of repeat b fails" "$cli" gate --baseline "$repeat_a" --candidate repeat_b_slow30.csv
has out "^REGRESSION *p2p *variant=oneshot-flagfree,blocks=24,threads=256 *allreduce *bf16 *graph *43008" "the regression row names p2p flag-free 43008 graph"
has out "1 regressions" "exactly one regression"
expect 1 "gate: baselines a and b (2 runs) still catch the 30% graph slowdown" "$cli" gate --baseline "$repeat_a" --baseline "$repeat_b" --candidate repeat_b_slow30.csv
has out "2 baseline runs" "the report counts 2 baseline runs"
has out "pooled between-run sd of log medians, eager" "the report gives the pooled eager spread"
has out "^ok *nccl *algo=auto,proto=auto,nccl=2.28.3 *allreduce *bf16 *eager *86016 .*2 runs, spread 1.201" "the noisy eager point shows its spread"
expect 0 "gate: baselines a and b, candidate a: pass" "$cli" gate --baseline "$repeat_a" --baseline "$repeat_b" --candidate "$repeat_a"

# ---- several baseline runs on fixtures (eager sd 6%, graph 1% between runs) ----
runs="--baseline base_run1.csv --baseline base_run2.csv --baseline base_run3.csv"
# shellcheck disable=SC2086
expect 0 "gate: 3 baseline runs, a fourth run of the same code passes" "$cli" gate $runs --candidate cand_runs_same.csv
has out "3 baseline runs" "the report counts 3 baseline runs"
# shellcheck disable=SC2086
expect 0 "gate: 12% eager slowdown is within the measured eager run-to-run noise" "$cli" gate $runs --candidate cand_runs_eager12.csv
# shellcheck disable=SC2086
expect 1 "gate: 12% graph slowdown is beyond the measured graph noise" "$cli" gate $runs --candidate cand_runs_graph12.csv
has out "^REGRESSION *p2p *variant=oneshot-push,blocks=8 *allreduce *bf16 *graph *43008 .*3 runs" "the regression row names p2p 43008 graph and its 3 runs"
cp out runs3.txt
expect 1 "gate: one file holding 3 run_ids is 3 runs" "$cli" gate --baseline base_runs_all.csv --candidate cand_runs_graph12.csv
has out "3 baseline runs" "3 run_ids in one file: 3 baseline runs"
grep -v '^baseline:' out >runs1.txt
if grep -v '^baseline:' runs3.txt | cmp -s - runs1.txt; then tap OK "3 files and 1 file with 3 run_ids give the same verdicts"; else tap FAIL "3 files and 1 file with 3 run_ids give the same verdicts"; fi
expect 2 "gate --default-noise graph=0.9 is refused" "$cli" gate --default-noise graph=0.9 --baseline base.csv --candidate cand_same.csv
has err "default-noise" "the message names --default-noise"
expect 2 "gate --default-noise warm=1.1 is refused" "$cli" gate --default-noise warm=1.1 --baseline base.csv --candidate cand_same.csv
expect 2 "gate: a bad second baseline file" "$cli" gate --baseline base.csv --baseline nan_median.csv --candidate cand_same.csv
has err "nan_median.csv" "the message names the bad baseline"

# ---- every committed results file passes the readers (a damaged one would be refused) ----
for f in "$(dirname "$repeat_a")"/*.csv; do
    case $(basename "$f") in *profile-*|sweep-*) continue ;; esac # sweep-*: local, git-ignored runs
    expect 0 "committed $(basename "$f") reads (gate against itself)" "$cli" gate --reps 100 --baseline "$f" --candidate "$f"
done

# ---- ci/gate.sh (with this CLI standing in for arbench: same `gate` subcommand) ----
expect 1 "ci/gate.sh: regression exits 1" env ARBENCH="$cli" GATE_REPORT=ci.md GITHUB_STEP_SUMMARY=summary.md "$gate_sh" base.csv cand_regress.csv
has ci.md "^## arbench gate: FAIL" "ci/gate.sh writes the markdown report"
has summary.md "REGRESSION" "ci/gate.sh appends the report to GITHUB_STEP_SUMMARY"
expect 0 "ci/gate.sh: identical data exits 0" env ARBENCH="$cli" GATE_REPORT=ci.md "$gate_sh" base.csv cand_same.csv
expect 2 "ci/gate.sh: invalid input exits 2" env ARBENCH="$cli" GATE_REPORT=ci.md "$gate_sh" base.csv empty.csv
expect 2 "ci/gate.sh: one argument is a usage error" "$gate_sh" base.csv
expect 1 "ci/gate.sh: more baselines among the options (3 runs, 12% graph slowdown)" env ARBENCH="$cli" GATE_REPORT=ci.md "$gate_sh" base_run1.csv cand_runs_graph12.csv --baseline base_run2.csv --baseline base_run3.csv
has ci.md "3 baseline runs" "ci/gate.sh passes the extra baselines on"

echo "1..$n"
[ "$failed" -eq 0 ] && rm -rf "$dir"
exit "$failed"
