#!/bin/sh
# SPDX-License-Identifier: MIT
# `arbench engine` under the one output rule (base/outfile.h), mpirun -np 2 on the CPU
# reference: an output is never an input or another output, an existing --out only with
# --append (and then only with complete rows), dumps replaced only with --force, one
# memory plan per run written only once --out was accepted.
# usage: engine_outputs.sh ARBENCH
set -u
arbench=$1
tmp=$(mktemp -d /tmp/arbench-outputs-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mpirun_args="--oversubscribe"
[ "$(id -u)" = 0 ] && mpirun_args="$mpirun_args --allow-run-as-root"
export OMPI_MCA_btl="^openib" OMPI_MCA_btl_vader_single_copy_mechanism=none
fail() { echo "FAIL: $*"; exit 1; }
engine() { timeout 120 mpirun $mpirun_args -np 2 "$arbench" engine --config tiny --backend cpu --context 8 --steps 1 \
    --quiet "$@" >"$tmp/out" 2>&1; }
# refused PATTERN ARGS...: exit 2 with PATTERN in the message
refused() {
    pattern=$1; shift
    engine "$@"
    rc=$?
    [ $rc -eq 2 ] || { cat "$tmp/out"; fail "engine $* exited $rc, expected 2"; }
    grep -q -- "$pattern" "$tmp/out" || { cat "$tmp/out"; fail "engine $*: no '$pattern' in the message"; }
    echo "ok: $* -> exit 2: $(grep -m1 -- "$pattern" "$tmp/out")"
}
memplans() { ls "$tmp"/r-memplan-*.txt 2>/dev/null | wc -l; }

# a refused run writes nothing: no results, no memory plan
refused "is the same file as --dump-logits" --out "$tmp/r.csv" --dump-logits "$tmp/r.csv"
[ ! -e "$tmp/r.csv" ] && [ "$(memplans)" = 0 ] || fail "a refused run left files: $(ls "$tmp")"
cfg=$(dirname "$0")/../../../engine/configs/tiny.json
cp "$cfg" "$tmp/c.json"
refused "is the same file as --config" --config "$tmp/c.json" --out "$tmp/c.json" --append
cmp -s "$cfg" "$tmp/c.json" || fail "the config was written over"

engine --out "$tmp/r.csv" || { cat "$tmp/out"; fail "first run"; }
[ "$(memplans)" = 1 ] || fail "first run: $(memplans) memory plans"
cp "$tmp/r.csv" "$tmp/r.orig"
refused "exists: give --append" --out "$tmp/r.csv"
cmp -s "$tmp/r.csv" "$tmp/r.orig" && [ "$(memplans)" = 1 ] || fail "a refused run changed the results or the plans"
engine --out "$tmp/r.csv" --append || { cat "$tmp/out"; fail "--append run"; }
[ "$(wc -l <"$tmp/r.csv")" -gt "$(wc -l <"$tmp/r.orig")" ] || fail "--append added no rows"
[ "$(memplans)" = 2 ] || fail "the appending run replaced the first memory plan ($(memplans) plans)"
echo "ok: an appending run keeps the first run's rows and memory plan"

# a cut-off last row is refused naming the line
head -c -7 "$tmp/r.orig" >"$tmp/cut.csv"
refused "line $(wc -l <"$tmp/r.orig" | tr -d ' ') is an incomplete row" --out "$tmp/cut.csv" --append
# another schema is refused
printf 'a,b\n1,2\n' >"$tmp/other.csv"
refused "line 1 is not this command's header" --out "$tmp/other.csv" --append

# dumps: an existing file only with --force, written whole
echo old >"$tmp/t.tok"
refused "exists: give --force" --out "$tmp/d1.csv" --dump-tokens "$tmp/t.tok"
[ "$(cat "$tmp/t.tok")" = old ] || fail "a refused run replaced the dump"
engine --out "$tmp/d2.csv" --dump-tokens "$tmp/t.tok" --force || { cat "$tmp/out"; fail "--force"; }
[ "$(wc -w <"$tmp/t.tok")" -gt 1 ] || fail "--force did not replace the dump"
ls "$tmp"/.*.tmp.* >/dev/null 2>&1 && fail "temporary files left: $(ls -a "$tmp")"
echo "PASS"
