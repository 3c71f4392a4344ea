#!/bin/sh
# SPDX-License-Identifier: MIT
# The sensitivity table of docs/model.md: each assumption of a fabric spec moved to the ends
# of its range (one at a time, the rest nominal), `arbench model predict` rerun, and what
# that does to NCCL's choice and the fastest custom kernel at 14,336 B (one decode token) and
# 43,008 B (a 3-token verify), graph mode, and to the all-reduce saving of the fastest custom
# kernel over NCCL per decode step and per verify (122 calls: 61 layers x 2).
# usage: model/sensitivity.sh ARBENCH SPEC RANKS   (prints a markdown table)
set -eu
arb=$1 spec=$2 ranks=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# name | key | low | high | source of the range
cat >"$tmp/list" <<'EOF'
NCCL transport beyond a switch (spec: SHM) | nccl_p2p | xsocket | nvlink | P2P on every pair: one upstream switch (PXB) or NCCL_P2P_LEVEL=SYS; SHM on every pair: NVML P2P off (ACS/IOMMU) or NCCL_P2P_DISABLE=1 (NCCL v2.28.3 src/graph/paths.cc:315-356)
SHM hop: host latency (us) | host.lat_us | 0.45 | 1.35 | the spec's +-50% (assumed)
SHM hop: host round trip (us) | host.rtt_us | 0.7 | 2.1 | the spec's +-50% (assumed)
host memory bandwidth for PCIe (GB/s) | host_gbs | 140 | 260 | the spec's +-30% (assumed)
GPU link (GB/s) | link_gbs | 40.8 | 55.2 | NCCL 48 GB/s for Gen5 x16 (topo.cc), +-15%
P2P write through a switch (GB/s) | switch.write_gbs | 47.7 | 58.3 | design notes 53-56 GB/s, +-10%
P2P read through a switch (GB/s) | switch.read_gbs | 14 | 56 | assumed 35, +-60%
P2P write latency in a switch (us) | switch.lat_us | 0.315 | 0.585 | design notes 0.4-0.5 us, +-30%
P2P write through the root complex (GB/s) | hostbridge.write_gbs | 28 | 52 | NCCL topo.h INTEL_P2P_OVERHEAD 40, +-30%
root-complex latency (us) | hostbridge.lat_us | 0.35 | 1.05 | assumed 0.7, +-50%
switch uplink (GB/s) | uplink_gbs | 40.8 | 55.2 | assumed x16, +-15%
inter-socket link for GPU traffic (GB/s) | xsocket_gbs | 11 | 33 | NCCL topo.h SRP_QPI_BW 22, +-50%
P2P write across sockets (GB/s) | xsocket.write_gbs | 11 | 33 | the spec's +-50%
inter-socket latency (us) | xsocket.lat_us | 0.6 | 1.8 | assumed 1.2, +-50%
EOF
run() { # spec file -> "nccl14 best14 nccl43 best43"
    "$arb" model predict --fit model/fit-h200x2.csv --fabric "$1" --ranks "$ranks" --out "$tmp/p.csv" >"$tmp/p.txt" 2>&1 ||
        { echo "model/sensitivity.sh: predict failed on $1:" >&2; cat "$tmp/p.txt" >&2; exit 1; }
    rm -f "$tmp/p.csv"
    # "bytes impl params us (band) nccl_us (band) ratio (..)": drop the bands, keep the figures
    sed -E 's/\([^)]*\)//g' "$tmp/p.txt" | awk '$1 == 14336 || $1 == 43008 { printf "%s %s ", $5, $4 }'
}
set_key() { # spec key value -> new spec on stdout
    if [ "$2" = link_gbs ]; then
        grep -vE '^(link_gen|link_width|link_gbs) ' "$1"
        echo "link_gbs = $3 # sensitivity"
    elif grep -qE "^$2 " "$1"; then
        sed -E "s|^$2 *=.*|$2 = $3 # sensitivity|" "$1"
    else
        cat "$1"
        echo "$2 = $3 # sensitivity"
    fi
}
row() { # label values(nominal) values(variant) -> saving per step (ms)
    echo "$1" | awk '{ printf "%.2f", 122 * ($1 - $2) / 1000 }'
}
base=$(run "$spec")
set -- $base
n14=$1 b14=$2 n43=$3 b43=$4
echo "| assumption | range | NCCL 14 KB us | custom 14 KB us | NCCL 43 KB us | custom 43 KB us | saving / decode step ms | saving / verify ms | range's source |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
printf '| nominal (%s) | | %s | %s | %s | %s | %s | %s | |\n' "$(basename "$spec")" "$n14" "$b14" "$n43" "$b43" \
    "$(row "$n14 $b14")" "$(row "$n43 $b43")"
while IFS='|' read -r name key lo hi src; do
    key=$(echo $key) lo=$(echo $lo) hi=$(echo $hi)
    [ "$key" = link_gbs ] || grep -qE "^$key " "$spec" || continue # not a constant of this spec
    vals=""
    for v in "$lo" "$hi"; do
        set_key "$spec" "$key" "$v" >"$tmp/s.spec"
        vals="$vals$(run "$tmp/s.spec")|"
    done
    a=${vals%%|*} b=${vals#*|}
    b=${b%|}
    set -- $a
    A14=$1 a14=$2 A43=$3 a43=$4
    set -- $b
    B14=$1 c14=$2 B43=$3 c43=$4
    printf '|%s| %s = %s .. %s | %s .. %s | %s .. %s | %s .. %s | %s .. %s | %s .. %s | %s .. %s |%s|\n' "$name" "$key" "$lo" "$hi" \
        "$A14" "$B14" "$a14" "$c14" "$A43" "$B43" "$a43" "$c43" "$(row "$A14 $a14")" "$(row "$B14 $c14")" \
        "$(row "$A43 $a43")" "$(row "$B43 $c43")" "$src"
done <"$tmp/list"
