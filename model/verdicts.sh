#!/bin/bash
# SPDX-License-Identifier: MIT
# model/verdicts.sh BUILD DIR ["SLOW FAST K LO:HI"]... : the seed's-shape verdicts of the engine
# runs in DIR (ci/gpu-1gpu.sh engine's e2e-<table>-k<k>.csv), host only, on stdout: each pair as
# ci/gpu-1gpu.sh engine-report runs it (every rate both ran, every k), then each extra
# "SLOW FAST K LO:HI" (a k over the stated acceptance range). docs/engine-e2e.md section 5.
set -eu
build=$1 dir=$2
shift 2
extras=("$@")
shape=$build/engine/tools/arb-engine-shape
[ -x "$shape" ] || { echo "model/verdicts.sh: $shape not built (ninja -C $build engine/tools/arb-engine-shape)" >&2; exit 2; }
ls "$dir"/e2e-*-k[0-9].csv >/dev/null 2>&1 || { echo "model/verdicts.sh: $dir: no e2e-*-k*.csv engine runs" >&2; exit 2; }
first=$(ls "$dir"/e2e-*-k[0-9].csv | head -1)
meta=$(python3 - "$first" <<'PY'
import csv, sys
r = next(csv.DictReader(open(sys.argv[1], newline="")))
print("%s, git_rev %s, run %s" % (r.get("gpu", "?"), r.get("git_rev", "?"), r.get("run_id", "?")))
PY
)
echo "# arb-engine-shape (engine/tools/engine_shape.c, host build at git $(git describe --always --dirty --abbrev=12)) on the CSVs in $dir"
echo "# (engine runs: $meta; model/verdicts.sh, called by model/regenerate.sh)"
echo "# each pair over every rate both ran and every k, then the stated ranges"
args() { for f in "$dir"/e2e-"$1"-k[0-9].csv "$dir"/e2e-"$2"-k[0-9].csv; do t=${f##*/e2e-}; printf '%s=%s ' "$f" "${t%-k*}"; done; }
for pair in "slow h200p2p" "pcie-nccl-seed pcie-p2p" "pcie-nccl pcie-p2p" "h200nccl h200p2p"; do
    set -- $pair
    ls "$dir"/e2e-"$1"-k[0-9].csv >/dev/null 2>&1 && ls "$dir"/e2e-"$2"-k[0-9].csv >/dev/null 2>&1 || continue
    a=$(args "$1" "$2")
    echo "## slow $1, fast $2"
    echo "## arb-engine-shape --slow $1 --fast $2 $a"
    rc=0
    # shellcheck disable=SC2086
    "$shape" --slow "$1" --fast "$2" $a 2>&1 || rc=$?
    echo "## exit $rc"
    echo
done
for extra in ${extras[@]+"${extras[@]}"}; do
    set -- $extra
    a=$(args "$1" "$2")
    echo "## slow $1, fast $2, k = $3 over [${4%:*}, ${4#*:}]"
    echo "## arb-engine-shape --slow $1 --fast $2 --k $3 --accept $4 $a"
    rc=0
    # shellcheck disable=SC2086
    "$shape" --slow "$1" --fast "$2" --k "$3" --accept "$4" $a 2>&1 || rc=$?
    echo "## exit $rc"
    echo
done
