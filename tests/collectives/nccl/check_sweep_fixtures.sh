#!/bin/sh
# SPDX-License-Identifier: MIT
# Unit test of check_sweep's CSV checks (no GPU): a synthetic 2-rank sweep that must
# pass, then copies with one defect each that must fail.
#   check_sweep_fixtures.sh PATH/check_sweep WORKDIR
set -u
check=$1
dir=$2/check-sweep-fixtures
mkdir -p "$dir" || exit 2
n=0
failed=0

good_csv() {
    echo "impl,params,mode,bytes,dtype,check,note,median_us,ranks"
    for v in "algo=auto,proto=auto" "algo=Ring,proto=LL" "algo=Ring,proto=LL128" "algo=Ring,proto=Simple" \
             "algo=Tree,proto=LL" "algo=Tree,proto=Simple"; do
        for b in 1024 43008 1048576; do
            for m in eager graph context; do
                echo "nccl,\"$v,nccl=2.28.3\",$m,$b,bf16,pass,,12.5,2"
            done
        done
    done
    echo "nccl,\"algo=Tree,proto=LL128\",eager,1024,bf16,skip,NCCL refuses this variant on 2 ranks: probe ncclAllReduce (bf16): no algorithm,,2"
    for b in 1024 43008 1048576; do
        echo "noop,,eager,$b,bf16,skip,,5.1,2"
        echo "noop,,graph,$b,bf16,skip,,2.2,2"
        echo "noop,,context,$b,bf16,skip,,0.4,2"
    done
}

good_log() {
    for a in Ring Tree; do echo "host:1:2 [0] NCCL INFO NCCL_ALGO set by environment to $a"; done
    for p in LL LL128 Simple; do echo "host:1:2 [0] NCCL INFO NCCL_PROTO set by environment to $p"; done
}

# expect WANT NAME CSV-FILE LOG-FILE
expect() {
    n=$((n + 1))
    "$check" --check-only "$3" --log "$4" --np 2 --dtype bf16 > "$dir/$2.out" 2>&1
    rc=$?
    if [ "$rc" = "$1" ]; then
        echo "ok $n - $2: check_sweep exits $rc"
    else
        echo "not ok $n - $2: check_sweep exits $rc, want $1"
        sed 's/^/#   | /' "$dir/$2.out"
        failed=1
    fi
}

good_csv > "$dir/good.csv"
good_log > "$dir/good.log"
expect 0 good "$dir/good.csv" "$dir/good.log"

sed '0,/,pass,,12.5,2/s//,fail,3 wrong,12.5,2/' "$dir/good.csv" > "$dir/fail-row.csv"
expect 1 fail-row "$dir/fail-row.csv" "$dir/good.log"
sed '/algo=Ring,proto=LL,nccl.*,graph,43008,/d' "$dir/good.csv" > "$dir/missing-point.csv"
expect 1 missing-point "$dir/missing-point.csv" "$dir/good.log"
sed 's/skip,NCCL refuses[^,]*,,2/skip,,,2/' "$dir/good.csv" > "$dir/decline-no-reason.csv"
expect 1 decline-no-reason "$dir/decline-no-reason.csv" "$dir/good.log"
sed '/algo=auto/s/,pass,,12.5,2/,skip,declined,,2/' "$dir/good.csv" > "$dir/auto-declined.csv"
expect 1 auto-declined "$dir/auto-declined.csv" "$dir/good.log"
sed 's/^noop,,graph,43008,bf16,skip,,2.2,2/noop,,graph,43008,bf16,skip,,7.0,2/' "$dir/good.csv" > "$dir/noop-graph-slow.csv"
expect 1 noop-graph-slow "$dir/noop-graph-slow.csv" "$dir/good.log"
sed '/algo=Ring,proto=Simple/s/,pass,,12.5,2/,pass,,0,2/' "$dir/good.csv" > "$dir/zero-median.csv"
expect 1 zero-median "$dir/zero-median.csv" "$dir/good.log"
sed '/algo=Tree,proto=Simple/d' "$dir/good.csv" > "$dir/variant-missing.csv"
expect 1 variant-missing "$dir/variant-missing.csv" "$dir/good.log"
grep -v 'to Tree$' "$dir/good.log" > "$dir/no-tree.log"
expect 1 env-not-seen "$dir/good.csv" "$dir/no-tree.log"
grep -v 'to LL$' "$dir/good.log" > "$dir/no-ll.log"
expect 1 env-ll-not-confused-with-ll128 "$dir/good.csv" "$dir/no-ll.log"

echo "1..$n"
exit $failed
