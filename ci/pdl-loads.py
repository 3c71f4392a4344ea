#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Loads that must come after a PDL wait, checked in the PTX: every kernel source under
engine/gpu/kernels of a meson build directory is compiled to compute_90 PTX with the build's own
flags (ci/kernel-resources.py's), and in every kernel that executes `griddepcontrol.wait` no load
of data another launch or block writes may come before its first wait: `ld.global.cg`, `.cv`,
`.lu`, `.ca` and the ordered loads (`ld.acquire`, `ld.relaxed`, `ld.volatile`). Weights come
through `ld.global.nc` (`__ldg`, `ld_stream`) or `cp.async` and may be read before the wait.

    ci/pdl-loads.py [--build DIR] [--only SUBSTR] [--jobs N]
    ci/pdl-loads.py --ptx FILE ...    (check PTX files as they are)

Why: `cuda_bf16.hpp`'s `__ldcg(const __nv_bfloat16 *)` is a plain asm with no memory operand,
which the compiler moved above the wait in mla_qb.cu's prep (results/engine-h100/1f8d2ce-check/);
nothing in the source shows such a move. Kernels whose early loads are their design are listed in
ALLOWED with the reason. Prints each offending kernel and its first such loads; exit 1 when there
is one, 2 on bad arguments or when the compiler fails, 0 otherwise.
Tested by tests/ci/pdl_loads_test.sh (fixtures, one real source, the refusals)."""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

# (regex on the mangled name, why its loads before the wait are intended)
ALLOWED = [
    (r"persist_", "persistent forms: their stages poll counters (ld.acquire) after one launch-wide wait"),
    (r"moe_down_kernelILb[01]ELi\d+ELi\d+ELi\d+ELi[12]E", "--moe-early on|l2 (withdrawn): the selection read before the wait by design"),
    (r"moe_down_kernelILb[01]ELi\d+ELi\d+ELi\d+ELi3E", "--moe-early spec: a guess of the selection before the wait, read again after it"),
]
EARLY_LOAD = re.compile(r"^\s*(@%p\d+\s+)?ld\.(global\.(cg|cv|lu|ca)\b|acquire\b|relaxed\b|volatile\b)")
ENTRY = re.compile(r"\.entry\s+([A-Za-z0-9_$]+)")


def die(msg):
    print(f"pdl-loads: {msg}", file=sys.stderr)
    sys.exit(2)


def check_ptx(text):
    """[(kernel, [early load lines])] for the kernels of one PTX text that load before their first wait."""
    bad = []
    starts = [(m.start(), m.group(1)) for m in ENTRY.finditer(text)]
    for i, (pos, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        lines = text[pos:end].split("\n")
        wait = next((k for k, l in enumerate(lines) if "griddepcontrol.wait" in l), None)
        if wait is None:
            continue
        early = [l.strip() for l in lines[:wait] if EARLY_LOAD.match(l)]
        if early and not any(re.search(rx, name) for rx, _ in ALLOWED):
            bad.append((name, early))
    return bad


def load_kernel_resources():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel-resources.py")
    spec = importlib.util.spec_from_file_location("kernel_resources", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="meson build directory (default build)")
    ap.add_argument("--only", help="only the kernel sources whose path contains this")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--ptx", nargs="+", help="check these PTX files instead of compiling")
    a = ap.parse_args()
    results = []  # (source, [(kernel, early)])
    if a.ptx:
        for f in a.ptx:
            try:
                with open(f) as fh:
                    results.append((f, check_ptx(fh.read())))
            except OSError as e:
                die(f"cannot read PTX file {f}: {e.strerror}")
    else:
        cc_path = os.path.join(a.build, "compile_commands.json")
        if not os.path.isfile(cc_path):
            die(f"{cc_path}: no such file; expected a configured meson build directory (--build)")
        if a.jobs < 1:
            die(f"--jobs {a.jobs}: expected 1 or more")
        with open(cc_path) as fh:
            cc = json.load(fh)
        kr = load_kernel_resources()
        srcs = []
        for e in cc:
            full = os.path.normpath(os.path.join(e["directory"], e["file"]))
            if full.endswith(".cu") and "/engine/gpu/kernels/" in full and (not a.only or a.only in full):
                srcs.append(e)
        if not srcs:
            die(f"no engine kernel source in {cc_path}" + (f" matches --only {a.only}" if a.only else ""))

        def one(e):
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "k.ptx")
                cmd = kr.ptx_flags(e["command"], out, e["file"], 90)
                r = subprocess.run(cmd, cwd=e["directory"], capture_output=True, text=True)
                if r.returncode != 0:
                    return e["file"], None, r.stderr[-2000:]
                with open(out) as fh:
                    return e["file"], check_ptx(fh.read()), ""

        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
            for src, bad, err in ex.map(one, srcs):
                if bad is None:
                    die(f"nvcc failed on {src}:\n{err}")
                results.append((src, bad))
    nbad = 0
    for src, bad in results:
        for name, early in bad:
            nbad += 1
            print(f"{src}: {name}: {len(early)} load(s) before its first griddepcontrol.wait, e.g. {early[0]}")
    print(f"# pdl-loads: {len(results)} source(s), {nbad} kernel(s) loading before their PDL wait")
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main())
