#!/bin/bash
# SPDX-License-Identifier: MIT
# tests/base/outputs_cli.sh ARBENCH SOURCE_ROOT: the one output rule (base/outfile.h) across
# the commands that write without MPI (model fit/predict/e2e, profile, gate, topo), and the cost
# model's readers refusing specs and fits that make no physical sense. TAP.
set -u
arb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") root=$2
cd "$root" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=1; fi; }
# refused PATTERN FILE CMD...: exit 2, PATTERN in the message, FILE (if any) unchanged
refused() {
    pattern=$1 keep=$2; shift 2
    [ -n "$keep" ] && cp "$keep" "$tmp/keep"
    err=$("$arb" "$@" 2>&1 >/dev/null)
    rc=$?
    [ $rc = 2 ] && echo "$err" | grep -q -- "$pattern" && { [ -z "$keep" ] || cmp -s "$keep" "$tmp/keep"; }
    r=$?
    [ $r = 0 ] || echo "# exit $rc: $err"
    return $r
}
echo "1..19"
spec=model/fabrics/h200x2-nvlink.spec
cp results/h200x2-default.csv "$tmp/r.csv"
refused "is the same file as the results file" "$tmp/r.csv" model fit --fabric $spec --out "$tmp/r.csv" "$tmp/r.csv"
ok $? "model fit --out onto its own input is refused, the input unchanged"
"$arb" model fit --fabric $spec --out "$tmp/fit.csv" "$tmp/r.csv" >/dev/null
ok $? "model fit writes a new file"
refused "exists: give --force" "$tmp/fit.csv" model fit --fabric $spec --out "$tmp/fit.csv" "$tmp/r.csv"
ok $? "model fit onto an existing file is refused without --force"
"$arb" model fit --fabric $spec --out "$tmp/fit.csv" --force "$tmp/r.csv" >/dev/null && ! find "$tmp" -maxdepth 1 -name '*.tmp*' | grep -q .
ok $? "model fit --force replaces it (no temporary file left)"
p="model predict --fit $tmp/fit.csv --fabric $spec --ranks 2 --sizes 14336,1M"
"$arb" $p --out "$tmp/pred.csv" >/dev/null
ok $? "model predict writes a new file"
refused "exists: give --append" "$tmp/pred.csv" $p --out "$tmp/pred.csv"
ok $? "model predict onto earlier predictions is refused without --append"
rows=$(wc -l <"$tmp/pred.csv")
"$arb" $p --out "$tmp/pred.csv" --append >/dev/null && [ "$(wc -l <"$tmp/pred.csv")" -gt "$rows" ]
ok $? "model predict --append adds rows"
head -c -9 "$tmp/pred.csv" >"$tmp/cut.csv"
refused "is an incomplete row" "$tmp/cut.csv" $p --out "$tmp/cut.csv" --append
ok $? "model predict --append onto a cut-off row is refused naming the line"
refused "is the same file as --fit" "$tmp/fit.csv" $p --out "$tmp/fit.csv" --append
ok $? "model predict --out onto its --fit is refused"
echo x >"$tmp/eng.csv"
refused "same file as the engine results file" "$tmp/eng.csv" model e2e --pred "$tmp/pred.csv" --out "$tmp/eng.csv" "$tmp/eng.csv"
ok $? "model e2e --out onto an engine results input is refused"
refused "is the same file as the results file" "$tmp/pred.csv" profile --quiet --out "$tmp/pred.csv" "$tmp/pred.csv"
ok $? "profile --out onto its input is refused"
"$arb" profile --quiet --out "$tmp/prof.csv" "$tmp/pred.csv" && refused "exists: give --force" "$tmp/prof.csv" \
    profile --quiet --out "$tmp/prof.csv" "$tmp/pred.csv" && "$arb" profile --quiet --force --out "$tmp/prof.csv" "$tmp/pred.csv"
ok $? "profile: an existing --out is refused, --force replaces it"
g="gate --baseline results/h200x2-repeat-a.csv --candidate results/h200x2-repeat-b.csv"
cp results/h200x2-repeat-b.csv "$tmp/cand.csv"
refused "same file as --candidate" "$tmp/cand.csv" gate --baseline results/h200x2-repeat-a.csv --candidate "$tmp/cand.csv" --report-md "$tmp/cand.csv"
ok $? "gate --report-md onto the candidate is refused"
echo old >"$tmp/rep.md"
refused "exists: give --force" "$tmp/rep.md" $g --report-md "$tmp/rep.md" && { "$arb" $g --report-md "$tmp/rep.md" --force >/dev/null; [ "$(cat "$tmp/rep.md")" != old ]; }
ok $? "gate: an existing report is refused, --force replaces it"
xml=tests/topo/nvlink2.xml
cp $xml "$tmp/t.xml"
refused "is the same file as --xml" "$tmp/t.xml" topo --no-bind --xml "$tmp/t.xml" --export-xml "$tmp/t.xml"
ok $? "topo --export-xml onto its --xml is refused"
"$arb" topo --no-bind --xml $xml --export-xml "$tmp/e.xml" >/dev/null && refused "exists: give --force" "$tmp/e.xml" \
    topo --no-bind --xml $xml --export-xml "$tmp/e.xml"
ok $? "topo: an existing --export-xml is refused"
"$arb" topo --no-bind --xml $xml --export-xml "$tmp/e.xml" --force >/dev/null && "$arb" topo --no-bind --xml "$tmp/e.xml" >/dev/null
ok $? "topo --export-xml --force replaces it with a readable topology"
# physical sense
sed 's/^nvlink.write_gbs = 450/nvlink.write_gbs = 0/' $spec >"$tmp/zero.spec"
line=$(grep -n '^nvlink.write_gbs' "$tmp/zero.spec" | cut -d: -f1)
refused "zero.spec:$line: nvlink.write_gbs = '0 +-0.2': expected a positive bandwidth" "" model fit --fabric "$tmp/zero.spec" --out "$tmp/z.csv" "$tmp/r.csv"
ok $? "a spec with a zero bandwidth is refused with its key and line"
awk -F, 'BEGIN { OFS = "," } $1 == "launch" && !done { $7 = "-3.5"; done = 1 } { print }' "$tmp/fit.csv" >"$tmp/neg.csv"
line=$(grep -n '^launch' "$tmp/neg.csv" | head -1 | cut -d: -f1)
refused "neg.csv: line $line: launch .* offset_us -3.5: a launch floor is a time and cannot be negative" "" \
    model predict --fit "$tmp/neg.csv" --fabric $spec --ranks 2 --out "$tmp/y.csv"
ok $? "a fit with a negative launch floor is refused with its line"
exit $bad
