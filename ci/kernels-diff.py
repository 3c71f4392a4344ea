#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two trees' per-kernel tables side by side, family by family, with the runs' spread.

    ci/kernels-diff.py [--column chain_us] [--tokens 1,3] NAME=FILE[,FILE...] NAME=FILE[,FILE...]

Each side is one tree (or one set of options): the `<results>-kernels-<run_id>.csv` files of
its rounds (`arbench engine`, docs/engine.md "Per-kernel floors"). For every T and family the
script prints each side's mean per layer over its rounds, their ranges, the difference (second
minus first) and a verdict: "not shown" when the two sides' ranges overlap; when they do not
(every round of one side beyond every round of the other), the chance of that order with no
difference at all, p = 2 / C(na + nb, na) (a permutation count: 1/3 for two rounds a side, 1/10
for three, 1/35 for four), and "shown" only for p <= 0.05, "apart, too few rounds" above; "one
round" when a side has a single round. An apart verdict also gives the gap between the nearest
rounds and its multiple of the wider side's range (a large multiple with few rounds is a reason
to run more rounds, not a result). A last line counts the rows compared, the rows shown, and how many
would be shown by chance alone where nothing differs were the rounds independent draws (rows x p:
with 26 rows at four rounds a side about 0.7). They are not quite: a control of main's code against
itself in a tree of its own read 4 of 26 rows shown (results/engine-h100/9389fe4-ctl/), so a shown
row among many is a lead to re-run, not a result; the step row is the comparison a change is made
for. Columns: chain_us (default: what each family adds to the chain, docs/engine.md), graph_us or
eager_us. The tables must be of the same model, shard, context and T values (refused otherwise,
naming the file), each round given once (its run_id), and at least one family must have a value on
both sides. A FILE ending in .gz is read through gzip (the
committed rounds' tables are stored so: results/README.md). Exit 0 with the table, 2 on invalid
input.
"""
import csv
import gzip
import math
import sys

COLUMNS = ("chain_us", "graph_us", "eager_us")
SAME = ("config", "weights", "tp_shape", "context", "layers", "experts")


def p_apart(na, nb):
    """The chance that na rounds lie all above or all below nb others where nothing differs."""
    return 2 / math.comb(na + nb, na)


def fail(msg):
    print("ci/kernels-diff.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read_side(arg, column):
    if "=" not in arg:
        fail("'%s': expected NAME=FILE[,FILE...]" % arg)
    name, files = arg.split("=", 1)
    if not name or not files:
        fail("'%s': expected NAME=FILE[,FILE...]" % arg)
    runs = []
    for path in files.split(","):
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt", newline="") as f:
                rows = list(csv.DictReader(f))
        except (OSError, EOFError) as e:  # EOFError: a truncated .gz
            fail("%s: %s" % (path, getattr(e, "strerror", None) or e))
        if not rows:
            fail("%s: no rows" % path)
        missing = [c for c in ("schema", "tokens", "family", "floor_us", column) + SAME if c not in rows[0]]
        if missing:
            fail("%s: no column '%s' (a per-kernel table of `arbench engine`, docs/engine.md)" % (path, missing[0]))
        for i, r in enumerate(rows):
            if r["schema"] != "engine-kernels-1":
                fail("%s: line %d: schema '%s', expected engine-kernels-1" % (path, i + 2, r["schema"]))
        runs.append((path, rows))
    return name, runs


def number(s):
    try:
        v = float(s)
    except ValueError:
        return None
    return v if v == v else None


def main(argv):
    column, tokens, sides = "chain_us", None, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if a in ("--column", "--tokens"):
            if i + 1 >= len(argv):
                fail("%s needs a value" % a)
            if a == "--column":
                column = argv[i + 1]
                if column not in COLUMNS:
                    fail("--column '%s': expected one of %s" % (column, ", ".join(COLUMNS)))
            else:
                try:
                    tokens = [int(t) for t in argv[i + 1].split(",")]
                except ValueError:
                    fail("--tokens '%s': expected a comma list of whole numbers" % argv[i + 1])
            i += 2
            continue
        sides.append(a)
        i += 1
    if len(sides) != 2:
        fail("needs two sides, NAME=FILE[,FILE...] each (got %d)" % len(sides))
    (na, ra), (nb, rb) = read_side(sides[0], column), read_side(sides[1], column)
    seen = {}
    for path, rows in ra + rb:  # a round counted twice would fake a spread and a rank count
        rid = rows[0].get("run_id") or path
        if rid in seen:
            fail("%s: run %s already given as %s: each round once" % (path, rid, seen[rid]))
        seen[rid] = path
    ref_path, ref = ra[0][0], ra[0][1][0]
    for path, rows in ra + rb:
        for k in SAME:
            if rows[0][k] != ref[k]:
                fail("%s: %s '%s' where %s has '%s': not the same step" % (path, k, rows[0][k], ref_path, ref[k]))
    tsets = []
    for path, rows in ra + rb:
        ts_file = set()
        for i, r in enumerate(rows):
            t = number(r["tokens"])
            if t is None or t != int(t) or t < 1:
                fail("%s: line %d: tokens '%s', expected a whole number >= 1" % (path, i + 2, r["tokens"]))
            r["tokens"] = str(int(t))
            ts_file.add(int(t))
        tsets.append((path, ts_file))
    for path, ts_file in tsets[1:]:
        if ts_file != tsets[0][1]:
            fail("%s: tables of T %s where %s has T %s: not the same steps" % (
                path, sorted(ts_file), tsets[0][0], sorted(tsets[0][1])))
    ts = sorted(tsets[0][1])
    if tokens:
        ts = [t for t in ts if t in tokens]
    if not ts:
        fail("no table of the asked --tokens")
    print("# %s per layer (step: per step), us: %s (%d rounds) against %s (%d rounds)" % (column, na, len(ra), nb, len(rb)))
    print("# %3s %-12s %8s %18s %18s %9s  %s" % ("T", "family", "floor", na + " mean [range]", nb + " mean [range]", "diff", "verdict"))
    compared = shown = 0
    for t in ts:
        fams = []
        for _, rows in ra + rb:
            for r in rows:
                if int(r["tokens"]) == t and r["family"] not in fams:
                    fams.append(r["family"])
        for fam in fams:
            def values(runs):
                out = []
                for _, rows in runs:
                    for r in rows:
                        if int(r["tokens"]) == t and r["family"] == fam:
                            v = number(r[column])
                            if v is not None:
                                out.append(v)
                return out
            va, vb = values(ra), values(rb)
            floor = next((number(r["floor_us"]) for _, rows in ra + rb for r in rows
                          if int(r["tokens"]) == t and r["family"] == fam), None)
            if not va or not vb:
                continue  # not measured on a side (the embedding's chain, mla_prep)
            compared += 1
            ma, mb = sum(va) / len(va), sum(vb) / len(vb)
            if len(va) < 2 or len(vb) < 2:
                verdict = "one round"
            elif min(vb) > max(va) or max(vb) < min(va):
                p = p_apart(len(va), len(vb))
                gap = min(vb) - max(va) if min(vb) > max(va) else min(va) - max(vb)
                spread = max(max(va) - min(va), max(vb) - min(vb))
                ratio = "gap %.2f, %s the wider range" % (gap, "%.1fx" % (gap / spread) if spread > 0 else "no")
                verdict = ("shown (p=%.3f; %s)" if p <= 0.05 else "apart, too few rounds (p=%.2f; %s)") % (p, ratio)
                shown += p <= 0.05
            else:
                verdict = "not shown"
            cell = lambda m, v: "%.2f [%.2f-%.2f]" % (m, min(v), max(v))
            print("  %3d %-12s %8s %18s %18s %+9.2f  %s" % (t, fam, "%.2f" % floor if floor is not None else "-",
                                                          cell(ma, va), cell(mb, vb), mb - ma, verdict))
    if not compared:
        fail("no family has a %s value on both sides (a column left empty, e.g. chain_us of a run of several ranks)"
             % column)
    if len(ra) >= 2 and len(rb) >= 2:
        p = p_apart(len(ra), len(rb))
        if p <= 0.05:
            print("# %d rows compared, %d shown; were the rounds independent draws, each row would be shown "
                  "with chance %.3f where nothing differs, ~%.1f rows by chance alone, but a control of identical "
                  "code read 4 of 26 (results/engine-h100/9389fe4-ctl/): a shown row is a lead to re-run, not a "
                  "result" % (compared, shown, p, compared * p))
        else:
            print("# %d rows compared; at %d and %d rounds no row can be shown (p = %.2f a row)"
                  % (compared, len(ra), len(rb), p))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
