#!/bin/bash
# SPDX-License-Identifier: MIT
# Renders the engine figures from the hand-made fixture (fixture_engine.csv: not a
# measurement) with plots/engine_render.sh and checks them: PNGs decode and are not blank,
# SVGs hold drawing, the break-even marks and the model curve carry the formula's values,
# the step split is the fixture's, malformed inputs are refused naming file and line.
# Skips (77) without gnuplot. Usage: plots_test.sh ENGINE_RENDER_SH ARB_ENGINE_PLOTDATA PNGCHECK FIXTURE
set -u
render=$1 tool=$2 pngcheck=$3 fixture=$4
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP gnuplot not installed (install gnuplot-nox)"
    exit 77
fi
dir=$(mktemp -d /tmp/arb-engine-plots-XXXXXX) || exit 1
n=0 failed=0
tap() { n=$((n + 1)); if [ "$1" = OK ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
if "$render" --tool "$tool" "$fixture" "$dir/out" 2>"$dir/log"; then tap OK "engine_render.sh exit 0"; else tap FAIL "engine_render.sh exit 0"; sed 's/^/# /' "$dir/log"; fi
# graph mode: steps + spec; eager mode (decode and verify rows only): steps
for f in engine_steps_graph engine_spec_graph engine_steps_eager; do
    if "$pngcheck" "$dir/out/$f.png" 16 >/dev/null 2>"$dir/err"; then tap OK "$f.png decodes, >= 16 colours"; else tap FAIL "$f.png: $(cat "$dir/err")"; fi
    s=$dir/out/$f.svg
    if [ -f "$s" ] && grep -q '<svg' "$s" && [ "$(grep -c '<path' "$s")" -gt 10 ]; then tap OK "$f.svg is SVG with drawing"; else tap FAIL "$f.svg is SVG with drawing"; fi
done
[ ! -e "$dir/out/engine_spec_eager.png" ] && tap OK "no spec figure without spec rows" || tap FAIL "no spec figure without spec rows"
m=$dir/out/data/engine_spec_graph.gp
# nccl k=2: t_cycle = 2 x 800 + 30000 us, plain 11173 us: 1 + p + p^2 = R
want=$(awk 'BEGIN { R = (1600 + 30000) / 11173; printf "%.4f", (-1 + sqrt(1 + 4 * (R - 1))) / 2 }')
got=$(awk -F' = ' '$1 == "be_1" { printf "%.4f", $2 }' "$m")
[ -n "$got" ] && [ "$got" = "$want" ] && tap OK "break-even of nccl k=2 is $want" || tap FAIL "break-even of nccl k=2: got '$got', expected $want"
grep -q '^title_1 = "nccl k=2"' "$m" && grep -q '^title_4 = "lsa:variant=oneshot,pdl=1 k=3"' "$m" && grep -q '^nseries = 4' "$m" \
    && tap OK "one series per (choice, k)" || tap FAIL "one series per (choice, k)"
grep -q '^plain_draw_1 = 1' "$m" && grep -q '^plain_draw_2 = 0' "$m" && tap OK "plain decode drawn once per choice" || tap FAIL "plain decode drawn once per choice"
# the model curve at p = 0 is one token per cycle, at p = 1 k + 1
c0=$(awk '$1 == "0.00" { printf "%.3f", $2 } $1 == "1.00" { printf " %.3f", $2 }' "$dir/out/data/engine_spec_graph__c0.dat")
[ "$c0" = "$(awk 'BEGIN { printf "%.3f %.3f", 1e6 / 31600, 3e6 / 31600 }')" ] && tap OK "model curve endpoints" || tap FAIL "model curve endpoints (got '$c0')"
grep -q '^"decode nccl" 3000 8173$' "$dir/out/data/engine_steps_graph.dat" && tap OK "decode split: compute 3000 + all-reduce 8173 (the rest)" || tap FAIL "decode split"
grep -q '^"verify nccl" 6600 26400$' "$dir/out/data/engine_steps_eager.dat" && tap OK "verify split from compute_only_us alone" || tap FAIL "verify split from compute_only_us alone"
! grep -q noop "$dir/out/data/engine_steps_eager.dat" && tap OK "rows without a split are not drawn" || tap FAIL "rows without a split are not drawn"
# malformed inputs: exit 2, the message names the file, the line and the column
bad() { # NAME EXPECT SED-EXPRESSION
    sed "$3" "$fixture" >"$dir/$1.csv"
    if "$tool" "$dir/$1.csv" "$dir/bad" 2>"$dir/err"; then tap FAIL "$1 refused"; return; fi
    grep -q "$dir/$1.csv" "$dir/err" && grep -q -- "$2" "$dir/err" && tap OK "$1 refused: $(cat "$dir/err")" || tap FAIL "$1 refused naming file and '$2' (got: $(cat "$dir/err"))"
}
bad bad_phase "line 3: bad phase" '3s/,verify,/,prefill,/'
bad bad_number "line 4: bad tok_s" '4s/,55.3797,/,fast,/'
bad bad_mode "line 2: bad mode" '2s/,graph,/,turbo,/'
bad no_choice "missing column 'choice' or 'impl'" '1s/,impl,/,label,/'
bad bad_k "bad spec_k" '4s/,3,2,0.5,/,3,2.5,0.5,/'
# PATH.csv=LABEL: every row of that file under the short label; an empty label is refused
"$tool" "$fixture=short name" "$dir/lab" 2>"$dir/err" && grep -q '^title_1 = "short name k=2"' "$dir/lab/data/engine_spec_graph.gp" \
    && ! grep -q 'title_[0-9]* = "nccl' "$dir/lab/data/engine_spec_graph.gp" && tap OK "FILE=LABEL relabels the file's rows" || tap FAIL "FILE=LABEL relabels the file's rows ($(cat "$dir/err"))"
"$tool" "$fixture=" "$dir/lab2" 2>"$dir/err" && tap FAIL "an empty label is refused" || { grep -q "empty label" "$dir/err" && tap OK "an empty label is refused" || tap FAIL "an empty label is refused naming it"; }
if "$render" --tool "$tool" "$dir/bad_phase.csv" "$dir/out2" 2>/dev/null; then tap FAIL "engine_render.sh refuses a malformed file"; else tap OK "engine_render.sh refuses a malformed file"; fi
echo "1..$n"
[ "$failed" -eq 0 ] && rm -rf "$dir"
exit "$failed"
