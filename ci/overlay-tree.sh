#!/bin/bash
# SPDX-License-Identifier: MIT
# A variant source tree for an A/B on a device machine, made there from the tree the call runs in:
#   ci/overlay-tree.sh DEST [PATH=FILE ...] [--patch DIFF ...]
# copies the current directory's source tree into DEST (not results/, .carry/, .debs/, .git/ nor
# build*/: a device call's copy of the working tree is capped at 64 MiB, and two carried trees of
# 5.7 MB each already passed it beside results/), then puts each FILE at DEST/PATH, the variant's
# changed files, then applies each DIFF (a `git diff` of the tree) in DEST. PATH must name a file the
# tree has (a typo would otherwise leave a tree that is the base unchanged and time it as the
# variant) and FILE must exist; DIFF must exist, apply, and leave every file it names different from
# the tree's (git apply run inside another repository's work tree, as DEST under .carry/ is, resolves
# the diff's paths from that repository's root and skips them all with exit 0: it runs here with the
# discovery stopped at DEST, and the check after it would catch a silent skip anyway); DEST must
# not exist yet, nor lie inside the tree's own copied part. Exit 2 with a message naming the
# argument otherwise (DEST removed again where a DIFF failed). At least one PATH=FILE or DIFF.
# Then run ci/engine-ab.sh with NAME=DEST (see .carry scripts in results/*/call.sh).
set -u
die() { echo "ci/overlay-tree.sh: $*" >&2; exit 2; }
usage="usage: ci/overlay-tree.sh DEST [PATH=FILE ...] [--patch DIFF ...] (at least one PATH=FILE or DIFF)"
[ $# -ge 2 ] || die "$usage"
dest=$1; shift
[ -e "$dest" ] && die "DEST '$dest' exists; expected a new directory"
files=() diffs=()
while [ $# -gt 0 ]; do
    a=$1; shift
    if [ "$a" = --patch ]; then
        [ $# -ge 1 ] || die "--patch: expected a DIFF after it"
        [ -f "$1" ] || die "--patch '$1': no such file"
        diffs+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift
        continue
    fi
    case "$a" in *=*) ;; *) die "'$a': expected PATH=FILE or --patch DIFF" ;; esac
    p=${a%%=*} f=${a#*=}
    case "$p" in /* | ../* | */../* | *"/.." | .. | "") die "'$a': PATH must be relative, inside the tree" ;; esac
    [ -f "$p" ] || die "'$a': the tree has no file '$p'"
    [ -f "$f" ] || die "'$a': no file '$f' to put there"
    files+=("$a")
done
[ ${#files[@]} -gt 0 ] || [ ${#diffs[@]} -gt 0 ] || die "$usage"
case "$(cd "$(dirname "$dest")" 2>/dev/null && pwd)/" in
    "$(pwd)/.carry/"* | "$(pwd)/results/"* | "$(pwd)/build"*) ;;
    "$(pwd)/"*) die "DEST '$dest' inside the tree's copied part; expected one under .carry/, or outside the tree" ;;
esac
mkdir -p "$dest" || die "cannot make '$dest'"
tar -c --exclude=./results --exclude=./.carry --exclude=./.debs --exclude=./.git --exclude='./build*' . |
    tar -x -C "$dest" || die "copying the tree into '$dest' failed"
for a in ${files[@]+"${files[@]}"}; do
    cp "${a#*=}" "$dest/${a%%=*}" || die "'$a': copying failed"
done
abs=$(cd "$dest" && pwd)
for d in ${diffs[@]+"${diffs[@]}"}; do
    if ! err=$(cd "$dest" && GIT_CEILING_DIRECTORIES=$(dirname "$abs") git apply "$d" 2>&1); then
        rm -rf "$dest"
        die "--patch '$d' does not apply to the tree: $err"
    fi
    # every file the diff names now differs from the tree's (or appeared, or went)
    while IFS=$'\t' read -r _ _ p; do
        if [ -e "$p" ] && [ -e "$dest/$p" ] && cmp -s "$p" "$dest/$p"; then
            rm -rf "$dest"
            die "--patch '$d': '$p' unchanged after git apply (a silent skip)"
        fi
    done < <(cd "$dest" && GIT_CEILING_DIRECTORIES=$(dirname "$abs") git apply --numstat "$d")
done
echo "ci/overlay-tree.sh: $dest = $(pwd) with" ${files[@]+"${files[@]}"} ${diffs[@]+"patched by ${diffs[*]}"}
