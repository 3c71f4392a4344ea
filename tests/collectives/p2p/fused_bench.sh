#!/bin/sh
# SPDX-License-Identifier: MIT
# Measures the fused all-reduce + residual + RMSNorm of arb-p2p.so against the unfused
# paths (NCCL's own choice + the harness's RMSNorm kernel; each p2p all-reduce + the
# same kernel) through the harness, and prints per (tokens, mode) the medians and the
# ratios fused / NCCL-unfused and fused / best-custom-unfused. Not a test (no pass
# threshold): the evidence for the fused kernel's speed. Every row must pass its check.
#
# usage: fused_bench.sh N MPIRUN ARBENCH OUT.csv [TOKENS [MODES [IMPLS]]]
set -u
n=$1 mpirun=$2 arbench=$3 csv=$4
tokens=${5:-1,3,8,64} modes=${6:-graph,context,eager}
impls=${7:-nccl:,p2p:variant=oneshot-flagfree,blocks=24,threads=256,p2p:variant=oneshot-push,blocks=24,threads=256}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
"$mpirun" --allow-run-as-root --oversubscribe -np "$n" "$arbench" sweep --quiet --op allreduce_rmsnorm \
    --impl "$impls" --tokens "$tokens" --modes "$modes" --graph-replays 100 --out "$csv"
rc=$?
python3 - "$csv" <<'EOF'
import csv, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1])))
if not rows:
    sys.exit("no rows in " + sys.argv[1])
print("# %s, %s ranks, %s" % (rows[0]["gpu"], rows[0]["ranks"], rows[0]["time"]))
pts = defaultdict(list)
for r in rows:
    pts[(int(r["tokens"] or 0), r["mode"])].append(r)
def med(r):
    try:
        return float(r["median_us"])
    except ValueError:
        return None
bad = 0
for (t, mode), rs in sorted(pts.items()):
    print("\n## tokens %d (%s B), mode %s" % (t, rs[0]["bytes"], mode))
    nccl = [med(r) for r in rs if r["impl"] == "nccl" and r["check"] == "pass" and med(r)]
    unf = [med(r) for r in rs if r["impl"] == "p2p" and r["fusion"] == "unfused" and r["check"] == "pass" and med(r)]
    base_n = min(nccl) if nccl else None
    base_c = min(unf) if unf else None
    for r in rs:
        m = med(r)
        bad += r["check"] not in ("pass", "skip")
        extra = ""
        if r["impl"] == "p2p" and r["fusion"] == "fused" and m:
            extra = "  vs NCCL unfused %s, vs best custom unfused %s" % (
                "%.2fx" % (m / base_n) if base_n else "-", "%.2fx" % (m / base_c) if base_c else "-")
        print("  %-5s %-60s %-8s %8s us  %-5s%s%s" % (r["impl"], r["params"][:60], r["fusion"], r["median_us"] or "-",
              r["check"], extra, "" if r["check"] in ("pass", "skip") else "  note=" + r["note"]))
sys.exit(1 if bad else 0)
EOF
prc=$?
[ $rc -ne 0 ] && exit $rc
exit $prc
