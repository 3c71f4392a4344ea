#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/engine/run/kernels_diff.sh SOURCE_ROOT: ci/kernels-diff.py on the committed per-kernel
# tables (two trees of two rounds each; the chain column's two H100 rounds) and on copies made
# to differ: ranges apart with few rounds are not called shown, four rounds a side apart are,
# and tables of another step or without the column are refused. TAP.
set -u
root=$1
cd "$root" || exit 1
py=ci/kernels-diff.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=1; fi; }
echo "1..12"
A=results/engine-h200/a6f2bb6-fused-site/ab
base=$(ls $A/engine-base-*-kernels-*.csv | paste -sd,) new=$(ls $A/engine-new-*-kernels-*.csv | paste -sd,)
python3 $py --column graph_us base="$base" new="$new" >"$tmp/o.txt"
[ $? = 0 ] && grep -qE '^ +1 qkv_a .* -0\.60  apart, too few rounds \(p=0\.33; gap 0\.[0-9]+, [0-9.]+x the wider range\)$' "$tmp/o.txt" &&
    grep -qE '^ +1 step ' "$tmp/o.txt" && ! grep -q 'shown (p=' "$tmp/o.txt" &&
    tail -1 "$tmp/o.txt" | grep -qE '^# [0-9]+ rows compared; at 2 and 2 rounds no row can be shown \(p = 0\.33 a row\)$'
ok $? "two rounds a side: ranges apart are not called shown (p = 1/3), the last line says none can be"
h=results/engine-h100/4b69337-chain
python3 $py one=$(ls $h/engine-1-kernels-*.csv) two=$(ls $h/engine-2-kernels-*.csv) >"$tmp/o.txt"
[ $? = 0 ] && grep -qE '^ +3 attend .* one round$' "$tmp/o.txt" && ! grep -qE '^ +3 embed' "$tmp/o.txt"
ok $? "the chain column, one round a side: said so; the embedding (not measured) left out"
# four rounds a side: the same table, and copies with attend's chain time 2 us higher
f=$(ls $h/engine-1-kernels-*.csv)
python3 - "$f" "$tmp" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
fa, c, rid = rows[0].index("family"), rows[0].index("chain_us"), rows[0].index("run_id")
for i in range(1, 5):
    for side, shift in (("a", 0), ("b", 2)):
        with open("%s/%s%d.csv" % (sys.argv[2], side, i), "w", newline="") as o:
            w = csv.writer(o, lineterminator="\n")
            for j, r in enumerate(rows):
                r = list(r)
                if j:
                    r[rid] = "copy-%s%d" % (side, i)  # each copy its own round
                if j and r[fa] == "attend":
                    r[c] = "%.4f" % (float(r[c]) + shift + i / 100)
                w.writerow(r)
PY
python3 $py a="$tmp/a1.csv,$tmp/a2.csv,$tmp/a3.csv,$tmp/a4.csv" b="$tmp/b1.csv,$tmp/b2.csv,$tmp/b3.csv,$tmp/b4.csv" >"$tmp/o.txt"
[ $? = 0 ] && grep -qE '^ +3 attend .* \+2\.00  shown \(p=0\.029; gap [0-9.]+, [0-9.]+x the wider range\)$' "$tmp/o.txt" && grep -qE '^ +3 router .* not shown$' "$tmp/o.txt"
ok $? "four rounds a side, 2 us apart: shown (p = 0.029); an equal family not shown"
rows=$(grep -cE '^ +[0-9]+ [a-z_]+ ' "$tmp/o.txt")
chance=$(python3 -c "print('%.1f' % ($rows * 2 / 70))")
tail -1 "$tmp/o.txt" | grep -qx "# $rows rows compared, 1 shown; were the rounds independent draws, each row would be shown with chance 0.029 where nothing differs, ~$chance rows by chance alone, but a control of identical code read 4 of 26 (results/engine-h100/9389fe4-ctl/): a shown row is a lead to re-run, not a result"
ok $? "the last line: $rows rows, 1 shown, ~$chance by chance alone"
sed 's/,4096,/,8192,/; s/,20261205T055329Z-vm-2319,/,ctx-copy,/' "$f" >"$tmp/ctx.csv"
err=$(python3 $py a="$f" b="$tmp/ctx.csv" 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q "ctx.csv: context '8192'"
ok $? "a table of another context is refused, naming the file"
err=$(python3 $py --column chain_us a="$f" b=$(ls $A/engine-new-1-kernels-*.csv) 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q "no column 'chain_us'"
ok $? "a table without the column is refused (a6f2bb6's tables predate the chain column)"
err=$(python3 $py a="$f,$f" b=$(ls $h/engine-2-kernels-*.csv) 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q 'already given as'
ok $? "a round given twice is refused (it would fake the round count)"
err=$(python3 $py --column graph_us a="$f" b=$(ls $A/engine-new-1-kernels-*.csv) 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q 'tables of T \[1, 3\] where .* has T \[3\]: not the same steps'
ok $? "tables of other T values are refused (the H100's has T = 3 only)"
python3 - "$f" "$tmp/empty.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
c, rid = rows[0].index("chain_us"), rows[0].index("run_id")
with open(sys.argv[2], "w", newline="") as o:
    w = csv.writer(o, lineterminator="\n")
    for j, r in enumerate(rows):
        if j:
            r[c], r[rid] = "", "empty-copy"
        w.writerow(r)
PY
err=$(python3 $py a="$f" b="$tmp/empty.csv" 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q "no family has a chain_us value on both sides"
ok $? "a side whose column is empty throughout is refused, not an empty table with exit 0"
err=$(python3 $py a="$f" 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q 'needs two sides'
ok $? "one side is refused"
# the committed rounds' tables are stored gzipped (results/README.md): read the same
python3 $py a="$tmp/a1.csv,$tmp/a2.csv,$tmp/a3.csv,$tmp/a4.csv" b="$tmp/b1.csv,$tmp/b2.csv,$tmp/b3.csv,$tmp/b4.csv" >"$tmp/plain.txt"
for i in 1 2 3 4; do gzip -c "$tmp/b$i.csv" >"$tmp/b$i.csv.gz"; done
python3 $py a="$tmp/a1.csv,$tmp/a2.csv,$tmp/a3.csv,$tmp/a4.csv" b="$tmp/b1.csv.gz,$tmp/b2.csv.gz,$tmp/b3.csv.gz,$tmp/b4.csv.gz" >"$tmp/gz.txt"
[ $? = 0 ] && [ -s "$tmp/gz.txt" ] && cmp -s "$tmp/plain.txt" "$tmp/gz.txt" && grep -q ' shown (p=0.029' "$tmp/gz.txt"
ok $? "tables given as .csv.gz read as the plain files (the same output)"
head -c 100 "$tmp/b1.csv.gz" >"$tmp/cut.csv.gz"
err=$(python3 $py a="$f" b="$tmp/cut.csv.gz" 2>&1 >/dev/null)
[ $? = 2 ] && echo "$err" | grep -q "cut.csv.gz: "
ok $? "a truncated .csv.gz is refused, naming the file"
exit $bad
