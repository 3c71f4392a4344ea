#!/bin/bash
# SPDX-License-Identifier: MIT
# A variant source tree for an A/B on a device machine, made there from the tree the call runs in:
#   ci/overlay-tree.sh DEST PATH=FILE ...
# copies the current directory's source tree into DEST (not results/, .carry/, .debs/, .git/ nor
# build*/: a device call's copy of the working tree is capped at 64 MiB, and two carried trees of
# 5.7 MB each already passed it beside results/), then puts each FILE at DEST/PATH, the variant's
# changed files. PATH must name a file the tree has (a typo would otherwise leave a tree that is
# the base unchanged and time it as the variant) and FILE must exist; DEST must not exist yet, nor
# lie inside the tree's own copied part. Exit 2 with a message naming the argument otherwise.
# Then run ci/engine-ab.sh with NAME=DEST (see .carry scripts in results/*/call.sh).
set -u
die() { echo "ci/overlay-tree.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: ci/overlay-tree.sh DEST PATH=FILE ... (at least one PATH=FILE)"
dest=$1; shift
[ -e "$dest" ] && die "DEST '$dest' exists; expected a new directory"
for a in "$@"; do
    case "$a" in *=*) ;; *) die "'$a': expected PATH=FILE" ;; esac
    p=${a%%=*} f=${a#*=}
    case "$p" in /* | ../* | */../* | *"/.." | .. | "") die "'$a': PATH must be relative, inside the tree" ;; esac
    [ -f "$p" ] || die "'$a': the tree has no file '$p'"
    [ -f "$f" ] || die "'$a': no file '$f' to put there"
done
case "$(cd "$(dirname "$dest")" 2>/dev/null && pwd)/" in
    "$(pwd)/.carry/"* | "$(pwd)/results/"* | "$(pwd)/build"*) ;;
    "$(pwd)/"*) die "DEST '$dest' inside the tree's copied part; expected one under .carry/, or outside the tree" ;;
esac
mkdir -p "$dest" || die "cannot make '$dest'"
tar -c --exclude=./results --exclude=./.carry --exclude=./.debs --exclude=./.git --exclude='./build*' . |
    tar -x -C "$dest" || die "copying the tree into '$dest' failed"
for a in "$@"; do
    cp "${a#*=}" "$dest/${a%%=*}" || die "'$a': copying failed"
done
echo "ci/overlay-tree.sh: $dest = $(pwd) with $*"
