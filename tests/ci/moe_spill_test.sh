#!/bin/sh
# SPDX-License-Identifier: MIT
# The step's default INT4 MoE kernels hold their values in registers on both targets:
# moe_spill_test.sh KERNEL_RESOURCES_PY BUILD_DIR TAP_SH. ci/kernel-resources.py compiles moe.cu with
# the build's flags (ptxas -v for sm_90 and sm_120); each kernel below must report 0 bytes of spill
# on both. At 8 pairs in flight the sm_120 pass of down spilled 36 bytes, stores that wait for a scale
# load each inside the round loop (results/kernel-resources/sm120-down-unr6.txt); moe_unr_down_arch
# keeps 6 there. Skipped (77) without nvcc.
set -u
script=$1 build=$2
. "$3"
command -v nvcc >/dev/null 2>&1 || { echo "1..0 # SKIP no nvcc"; exit 77; }
if ! python3 "$script" --build "$build" --only kernels/moe.cu --out "$tmp/moe.csv" >"$tmp/o.txt" 2>"$tmp/e.txt"; then
    sed 's/^/# /' "$tmp/e.txt"
    tap FAIL "ci/kernel-resources.py on moe.cu failed"
    echo "1..$n"
    exit $bad
fi
# the kernels of a decode (T = 1) and verify (T = 2 .. 8) step with INT4 experts and the defaults
# (--moe-early spec: down's EARLY 3, gate/up's pdl_late; its other forms' down too)
for k in 'moe_down_kernel<true, 2, 1, 8, 3>' 'moe_down_kernel<true, 2, 1, 8, 0>' 'moe_down_kernel<true, 2, 1, 8, 1>' \
    'moe_down_kernel<true, 2, 1, 8, 2>' 'moe_gate_up_kernel<true, 1, 1, 4, 7, 2, 0, arbk::pdl_late>' \
    'moe_gate_up_kernel<true, 1, 1, 4, 7, 2, 0, arbk::pdl_sync>'; do
    row=$(python3 -c '
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if "::" + sys.argv[2] + "(" in r["kernel"]]
print(" ".join(r["sm90_spill_bytes"] + " " + r["sm120_spill_bytes"] for r in rows))' "$tmp/moe.csv" "$k")
    case "$row" in
    "0 0") tap OK "$k: no spill on sm_90 or sm_120" ;;
    "") tap FAIL "$k: not in ci/kernel-resources.py's table of moe.cu" ;;
    *) tap FAIL "$k: spill bytes sm_90 / sm_120: $row" ;;
    esac
done
echo "1..$n"
exit $bad
