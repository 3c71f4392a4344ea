#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# model/observations/from-results.py > model/observations/h200x2.csv: the observation rows
# (schema observation-1, README.md here) of the committed 2 x H200 runs, each copied from its
# results file with the file, the run's git_rev and the commit that added the file. Which
# points: below (graph mode at 14,336 and 43,008 B, the decode and verify calls; NCCL auto eager
# at 43,008). Run from the repository root; needs git.
import csv, subprocess, sys

SPEC = "model/fabrics/h200x2-nvlink.spec"
# file, role, [(impl, params prefix, mode)]
PICK = [
    ("results/h200x2-default.csv", "fit", [
        ("nccl", "algo=auto,proto=auto", "graph"), ("nccl", "algo=Ring,proto=LL", "graph"),
        ("nccl", "algo=auto,proto=auto", "eager"),
        ("p2p", "variant=oneshot-flagfree,blocks=24,threads=256", "graph"),
        ("p2p", "variant=oneshot-push,blocks=8,threads=512", "graph"),
        ("hoststaged", "algo=oneshot,blocks=16,threads=512", "graph")]),
    ("results/h200x2-p2poff.csv", "fit", [
        ("nccl", "algo=auto,proto=auto", "graph"), ("hoststaged", "algo=oneshot,blocks=16,threads=512", "graph")]),
    ("results/h200x2-repeat2-a.csv", "held out", [
        ("nccl", "algo=auto,proto=auto", "graph"), ("p2p", "variant=oneshot-flagfree,blocks=24,threads=256", "graph")]),
]
SIZES = ("14336", "43008")

cols = ["schema", "id", "machine", "what", "quantity", "fabric_spec", "ranks", "impl", "params", "mode", "phase",
        "env", "bytes", "calls", "measured", "measured_lo", "measured_hi", "unit", "model_input", "source", "rev", "note"]
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(cols)
for path, role, picks in PICK:
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%h", "-1", "--", path], capture_output=True,
                           text=True, check=True).stdout.strip()
    if not added:
        sys.exit("from-results.py: %s is not committed" % path)
    rows = list(csv.DictReader(open(path, newline="")))
    for impl, params, mode in picks:
        for size in SIZES:
            if mode == "eager" and size != "43008":
                continue
            hit = [r for r in rows if r["impl"] == impl and (r["params"] == params or r["params"].startswith(params + ",")) and r["mode"] == mode
                   and r["bytes"] == size and r["op"] == "allreduce" and r["check"] == "pass"]
            if len(hit) != 1:
                sys.exit("from-results.py: %s: %d rows of %s %s %s %s B (expected 1)" % (path, len(hit), impl, params, mode, size))
            r = hit[0]
            p2poff = "NCCL_P2P_DISABLE=1" in r["env"]
            tag = path.split("/")[-1][:-4]  # h200x2-default, h200x2-p2poff, h200x2-repeat2-a
            ident = "%s-%s-%s-%s-%s" % (tag, impl, params.split(",")[0].split("=")[1], mode, size)
            w.writerow(["observation-1", ident, "2 x H200 SXM, NV18 (%s)" % r["host"], "measured", "allreduce", SPEC,
                        r["ranks"], impl, r["params"], mode, "", "NCCL_P2P_DISABLE=1" if p2poff else "", size, 1,
                        r["median_us"], r["p10_us"], r["p90_us"], "us", "",
                        "%s (run %s, %s role), row impl=%s mode=%s bytes=%s" % (path, r["run_id"], role, impl, mode, size),
                        "run git_rev %s; file added in %s" % (r["git_rev"], added),
                        "median of the run; range p10-p90"])
