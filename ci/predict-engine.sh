#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Predicted decode and speculative tok/s of kimi-k2 INT4 at TP=8 on a PCIe target, per
# all-reduce choice, from ONE GPU (docs/model.md, "End to end"):
#   ci/predict-engine.sh SPEC_OR_TABLE OUTDIR [BUILD [KERNELS.csv]]
# SPEC_OR_TABLE: a prediction table (results/model-pcie-*-8.csv) or a fabric spec
# (model/fabrics/*.spec, predicted first with model/fit-h200x2.csv). Runs `arbench engine`
# at --tp-shape 8 once per choice (nccl auto, the fastest custom implementation the table
# predicts at the decode size, the fastest hoststaged) with the modeled plugin replaying the
# table's graph-mode latencies; the first run also replays noop (the compute-only step the
# others share), then `arbench model e2e --kernels KERNELS.csv --gpu model/gpus/rtx-pro-6000-server.spec
# --gpu-ref model/gpus/h200-sxm.spec` writes OUTDIR/e2e.csv and prints the table: compute on the
# target by kernel family from the per-kernel table of a compute-only (impl noop) engine run.
# KERNELS.csv: default the committed table of ea8a519 (results/engine-h200/ea8a519/
# engine-new-a-kernels.csv, today's compute); the engine-floor issue's re-run replaces it.
# Device time: three runs of about a minute each (a 4096-token prefill is ~27 s of it).
set -eu
[ $# -ge 2 ] || { echo "usage: ci/predict-engine.sh SPEC_OR_TABLE OUTDIR [BUILD [KERNELS.csv]]" >&2; exit 2; }
in=$1 out=$2 build=${3:-build} kernels=${4:-results/engine-h200/ea8a519/engine-new-a-kernels.csv}
arbench="$build/harness/arbench"
[ -x "$arbench" ] || { echo "ci/predict-engine.sh: $arbench not built (run: make build)" >&2; exit 2; }
[ -f "$kernels" ] || { echo "ci/predict-engine.sh: $kernels: no such file (the per-kernel table of a compute-only engine run)" >&2; exit 2; }
[ -f "$in" ] || { echo "ci/predict-engine.sh: $in: no such file (a prediction CSV or a fabric .spec)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "ci/predict-engine.sh: needs python3 (to read the prediction table)" >&2; exit 2; }
mkdir -p "$out"
case "$in" in
*.csv) table=$in ;;
*.spec)
    table="$out/pred.csv"
    rm -f "$table" # this script's own derived file, remade on every run
    "$arbench" model predict --fit model/fit-h200x2.csv --fabric "$in" --ranks 8 --out "$table" >"$out/pred.txt" ;;
*) echo "ci/predict-engine.sh: $in: expected a prediction .csv or a fabric .spec" >&2; exit 2 ;;
esac

# The choices: "label<TAB>impl<TAB>params" from the table's graph-mode rows at 14336 B (decode).
choices=$(python3 - "$table" <<'PY'
import csv, sys
best = {}
for r in csv.DictReader(open(sys.argv[1], newline="")):
    if r.get("source") != "model" or r["mode"] != "graph" or r["bytes"] != "14336" or not r["median_us"]:
        continue
    group = "hoststaged" if r["impl"] == "hoststaged" else "nccl" if r["impl"] == "nccl" else "custom"
    if group == "nccl" and r["params"] != "algo=auto,proto=auto":
        continue
    if r["impl"] in ("noop", "ping", "modeled"):
        continue
    us = float(r["median_us"])
    if group not in best or us < best[group][0]:
        best[group] = (us, r["impl"], r["params"])
missing = [g for g in ("nccl", "custom", "hoststaged") if g not in best]
if missing:
    sys.exit("ci/predict-engine.sh: %s: no graph-mode source=model rows at 14336 B for %s" % (sys.argv[1], ", ".join(missing)))
for g in ("nccl", "custom", "hoststaged"):
    print("%s\t%s\t%s" % (g, best[g][1], best[g][2]))
PY
)
echo "# choices from $table (graph mode, 14336 B):"
echo "$choices" | sed 's/^/#   /'

files=() first=1
while IFS=$'\t' read -r label impl params; do
    f="$out/engine-$label.csv"
    rm -f "$f"
    extra=()
    [ "$first" = 1 ] || extra=(--no-noop-replay)
    first=0
    echo "# engine: $label = $impl:$params"
    start=$(date +%s)
    "$arbench" engine --config kimi-k2 --weights int4 --tp-shape 8 --context 4096 --modes graph --steps 16 \
        --spec-k 2 --accept-rate 0.7 "${extra[@]}" \
        --impl "modeled:table=$table,impl=$impl,mode=graph,ranks=8,offset_us=0.7,params=$params" \
        --out "$f" >"$out/engine-$label.log" 2>&1 || { echo "ci/predict-engine.sh: engine run $label failed, see $out/engine-$label.log" >&2; tail -5 "$out/engine-$label.log" >&2; exit 1; }
    echo "#   $(( $(date +%s) - start )) s"
    files+=("$f")
done <<<"$choices"

"$arbench" model e2e --pred "$table" --out "$out/e2e.csv" --force --accept-rate 0.7 --kernels "$kernels" \
    --gpu model/gpus/rtx-pro-6000-server.spec --gpu-ref model/gpus/h200-sxm.spec "${files[@]}" | tee "$out/e2e.txt"
