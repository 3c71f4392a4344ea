#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs what arbench needs to build and test, on Debian 12 / Ubuntu 24.04 as root.
#
#   ci/deps.sh                 install the missing packages with apt (registry reachable)
#   ci/deps.sh --debs DIR      air-gapped: install the missing packages from DIR/*.deb
#   ci/deps.sh --download DIR  on a connected machine: fetch the .debs an air-gapped GPU
#                              machine lacks into DIR (then carry DIR there)
#   ci/deps.sh --check         only report what is missing (exit 1 if anything is)
#
# The CUDA 13 toolkit and NCCL are not Debian packages: they come from NVIDIA. Without
# nvcc the build has the host backends only, and says so.
set -eu

# Needed to build and test; pkg-config and a C compiler included.
BUILD_PKGS="gcc make pkg-config ninja-build meson libopenmpi-dev openmpi-bin libhwloc-dev libcsv-dev libjansson-dev git"
# Nice to have: plots (gnuplot), the fuzz test (clang + its libFuzzer runtime), the PNG
# checker of the plot tests (zlib), the Python binding's NumPy case (python3-numpy).
EXTRA_PKGS="gnuplot-nox clang zlib1g-dev python3-numpy"
# What the air-gapped GPU machines lack (Ubuntu 24.04 image with MPI, hwloc, meson, ninja).
OFFLINE_PKGS="libcsv3 libcsv-dev libjansson4 libjansson-dev"

mode=apt dir=
case "${1:-}" in
--debs) mode=debs dir=${2:?--debs needs a folder of .deb files} ;;
--download) mode=download dir=${2:?--download needs a folder} ;;
--check) mode=check ;;
"") ;;
-h|--help) sed -n '3,12p' "$0"; exit 0 ;;
*) echo "ci/deps.sh: unknown option '$1' (expected --debs DIR, --download DIR or --check)" >&2; exit 2 ;;
esac

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# A package counts as present when the tool or library it provides is usable, even if
# it came from elsewhere (meson from pip, OpenMPI from a vendor stack).
provided() {
    case $1 in
    meson) command -v meson >/dev/null 2>&1 ;;
    ninja-build) command -v ninja >/dev/null 2>&1 ;;
    openmpi-bin) command -v mpirun >/dev/null 2>&1 ;;
    libopenmpi-dev) pkg-config --exists ompi-c 2>/dev/null || pkg-config --exists mpi 2>/dev/null ;;
    libhwloc-dev) pkg-config --exists hwloc 2>/dev/null ;;
    libjansson-dev) pkg-config --exists jansson 2>/dev/null ;;
    libcsv-dev) [ -f /usr/include/csv.h ] ;;
    gcc) command -v cc >/dev/null 2>&1 ;;
    make) command -v make >/dev/null 2>&1 ;;
    pkg-config) command -v pkg-config >/dev/null 2>&1 ;;
    git) command -v git >/dev/null 2>&1 ;;
    gnuplot-nox) command -v gnuplot >/dev/null 2>&1 ;;
    clang) command -v clang >/dev/null 2>&1 ;;
    zlib1g-dev) pkg-config --exists zlib 2>/dev/null ;;
    python3-numpy) python3 -c 'import numpy' 2>/dev/null ;;
    *) false ;;
    esac || installed "$1"
}
missing() { for p in "$@"; do provided "$p" || printf '%s ' "$p"; done; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
        echo "ci/deps.sh: need root to install packages: run as root or install: $*" >&2; exit 1; fi
}

case $mode in
check)
    m=$(missing $BUILD_PKGS)
    [ -z "$m" ] && { echo "deps: all build dependencies present"; exit 0; }
    echo "deps: missing: $m"; exit 1 ;;
download)
    mkdir -p "$dir"
    (cd "$dir" && apt-get download $OFFLINE_PKGS)
    echo "deps: downloaded into $dir: $(ls "$dir")" ;;
debs)
    m=$(missing $BUILD_PKGS)
    [ -z "$m" ] && { echo "deps: all build dependencies present"; exit 0; }
    echo "deps: installing from $dir: $m"
    debs=
    for p in $m; do
        found=$(ls "$dir"/"$p"_*.deb 2>/dev/null | head -n 1 || true)
        [ -n "$found" ] || { echo "ci/deps.sh: $p is missing and $dir has no ${p}_*.deb (fetch it with: ci/deps.sh --download $dir)" >&2; exit 1; }
        debs="$debs $found"
        # Its runtime library from the same folder, when not installed.
        case $p in
        libcsv-dev) installed libcsv3 || debs="$debs $(ls "$dir"/libcsv3_*.deb | head -n 1)" ;;
        libjansson-dev) installed libjansson4 || debs="$debs $(ls "$dir"/libjansson4_*.deb | head -n 1)" ;;
        esac
    done
    # A -dev package from another distribution release may pin its runtime library to an
    # exact revision (libjansson-dev 2.14-2 wants libjansson4 = 2.14-2) while the machine
    # has the same soname at another revision (Ubuntu's 2.14-3build2): accept that, and
    # nothing else.
    as_root dpkg -i --force-depends-version $debs ;;
apt)
    m=$(missing $BUILD_PKGS)
    x=$(missing $EXTRA_PKGS)
    if [ -z "$m$x" ]; then echo "deps: all dependencies present"; else
        echo "deps: installing with apt: $m$x"
        export DEBIAN_FRONTEND=noninteractive
        as_root apt-get update -qq
        as_root apt-get install -y -qq --no-install-recommends $m $x >/dev/null
    fi
    # libFuzzer's runtime for the fuzz test matches the clang version (Debian 12: 14).
    if command -v clang >/dev/null 2>&1; then
        v=$(clang --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -n 1)
        if [ -n "$v" ] && ! installed "libclang-rt-$v-dev" && apt-cache show "libclang-rt-$v-dev" >/dev/null 2>&1; then
            as_root apt-get install -y -qq --no-install-recommends "libclang-rt-$v-dev" >/dev/null || \
                echo "deps: libclang-rt-$v-dev not installed: the fuzz test will be skipped"
        fi
    fi ;;
esac
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "deps: note: no CUDA toolkit (nvcc): only the host backends will be built (the CUDA 13 toolkit and NCCL come from NVIDIA's repository)"
fi
