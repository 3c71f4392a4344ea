#!/bin/sh
# SPDX-License-Identifier: MIT
# CI regression gate: ci/gate.sh BASELINE.csv CANDIDATE.csv [arbench gate options...]
# More baseline runs go among the options (--baseline B2.csv ...): run-to-run noise is
# then measured per point instead of the per-mode defaults (docs/gate.md).
# Runs `arbench gate`, prints the text report, writes the markdown report to
# $GATE_REPORT (default gate-report.md, replaced on every run) and appends it to $GITHUB_STEP_SUMMARY when set.
# Exit status is arbench gate's: 0 pass, 1 regression, failed check or lost coverage, 2 invalid input.
# The arbench binary: $ARBENCH, else build/harness/arbench. docs/gate.md
set -u
if [ $# -lt 2 ]; then
    echo "usage: ci/gate.sh BASELINE.csv CANDIDATE.csv [arbench gate options...] (expected two results files)" >&2
    exit 2
fi
baseline=$1 candidate=$2
shift 2
arbench=${ARBENCH:-build/harness/arbench}
if [ ! -x "$arbench" ]; then
    echo "ci/gate.sh: $arbench not built (run: make build, or set ARBENCH=path/to/arbench)" >&2
    exit 2
fi
report=${GATE_REPORT:-gate-report.md}
# the report is this script's own output, rewritten on every run (--force)
"$arbench" gate --baseline "$baseline" --candidate "$candidate" --report-md "$report" --force "$@"
rc=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$report" ]; then
    cat "$report" >>"$GITHUB_STEP_SUMMARY"
fi
case $rc in
0) echo "ci/gate.sh: PASS (report: $report)" ;;
1) echo "ci/gate.sh: FAIL: a regression, a failed check or lost coverage (report: $report)" >&2 ;;
*) echo "ci/gate.sh: invalid input (exit $rc): see the message above" >&2 ;;
esac
exit $rc
