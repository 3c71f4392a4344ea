#!/bin/sh
# SPDX-License-Identifier: MIT
# Layering check: ci/layering.sh [ROOT [RULES]]. Every #include "..." under the scanned folders
# must name a file in a folder its own folder may include (ci/layering.rules), and no two
# modules may include each other, directly or round a circle. Exit 0 clean, 1 on a violation
# (each named as file:line, the include and the rule), 2 on unreadable rules.
# ROOT defaults to this checkout, RULES to ROOT/ci/layering.rules.
exec python3 "$(dirname "$0")/layering.py" "$@"
