#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What every GPU kernel of the project costs an SM on SM90 and on SM120, from the compiler
alone (no GPU): each kernel source of a meson build directory compiled to PTX with the
build's own flags for compute_90 and compute_120, `ptxas -v` for sm_90 and sm_120, and per
kernel its registers, spill bytes, static shared memory, the threads of its
__launch_bounds__ (PTX .maxntid) and the blocks an SM can hold at those threads:

    ci/kernel-resources.py [--build DIR] [--only SUBSTR] [--jobs N] [--out FILE]

Blocks an SM = min over registers (256-register allocation per warp, 64 K registers an SM),
threads (2048 an SM on SM90, 1536 on SM120), static shared memory (228 KB an SM on SM90,
100 KB on SM120, 1 KB reserved a block) and blocks (32 on SM90, 24 on SM120: assumed for
CC 12.0). Dynamic shared memory is set at launch and not counted (the kernels that take it
are marked `dyn`); a kernel without __launch_bounds__ has no known block size (`?`).
Printed: a table of every kernel (or to --out, a CSV, written whole through a temporary
file), then the kernels that hold fewer blocks an SM on SM120 than on SM90. A report, not a
gate: a kernel's __launch_bounds__ already make ptxas fit its registers, and static shared
memory past 48 KB does not compile. Exit 2 on bad arguments or when the compiler fails.
Tested by tests/ci/kernel_resources_test.sh (the parsers on fixtures, one real source)."""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ARCH = {
    90: dict(sm_threads=2048, sm_smem=228 * 1024, sm_blocks=32),
    120: dict(sm_threads=1536, sm_smem=100 * 1024, sm_blocks=24),
}


def die(msg):
    print(f"kernel-resources: {msg}", file=sys.stderr)
    sys.exit(2)


def ptx_flags(command, out_ptx, src, arch):
    """The build's nvcc command for src, made to write compute_<arch> PTX to out_ptx."""
    args = shlex.split(command)
    keep, i = [], 1
    while i < len(args):
        a = args[i]
        if a in ("-gencode", "-o", "-c", "-MF", "-MQ", "-MT"):
            i += 2
            continue
        if a.startswith("-gencode=") or a in ("-MD", "-MMD") or a == src:
            i += 1
            continue
        keep.append(a)
        i += 1
    return [args[0]] + keep + [f"-arch=compute_{arch}", "-ptx", "-o", out_ptx, src]


def parse_ptxas(text):
    """{mangled: (registers, spill bytes, static smem)} from ptxas -v."""
    out, cur, spill = {}, None, 0
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            cur, spill = m.group(1), 0
        m = re.search(r"(\d+) bytes spill stores", line)
        if m:
            spill = int(m.group(1))
        m = re.search(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?", line)
        if m and cur:  # no smem clause: none
            out[cur] = (int(m.group(1)), spill, int(m.group(2) or 0))
            cur = None
    return out


def parse_ptx(text):
    """{mangled: (maxntid or None, uses dynamic smem)} from the PTX."""
    out = {}
    # dynamic shared memory: an .extern .shared array (declared at module scope or in the body)
    # that the kernel's body names
    externs = re.findall(r"\.extern \.shared[^;]*?(\w+)\[\]", text)
    for m in re.finditer(r"\.entry (\S+)\((.*?)\)\s*((?:\.\w+[^\n{]*\n\s*)*)\{(.*?)\n\}", text, re.S):
        mt = re.search(r"\.maxntid (\d+)", m.group(3))
        body = m.group(4)
        dyn = any(re.search(r"\b" + re.escape(x) + r"\b", body) for x in externs)
        out[m.group(1)] = (int(mt.group(1)) if mt else None, dyn)
    return out


def blocks_per_sm(regs, smem, threads, arch):
    if not threads:
        return None
    a = ARCH[arch]
    warps = (threads + 31) // 32
    per_warp = (max(regs, 1) * 32 + 255) // 256 * 256
    by_regs = 65536 // (per_warp * warps)
    by_threads = a["sm_threads"] // threads
    by_smem = a["sm_smem"] // (smem + 1024) if smem else a["sm_blocks"]
    return min(by_regs, by_threads, by_smem, a["sm_blocks"])


def compile_one(entry, arch, tmp):
    src = entry["file"]
    base = re.sub(r"[^A-Za-z0-9]+", "_", os.path.relpath(src, entry["directory"]))
    ptx = os.path.join(tmp, f"{base}.{arch}.ptx")
    cmd = ptx_flags(entry["command"], ptx, src, arch)
    r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
    if r.returncode:
        return src, arch, None, f"nvcc failed:\n{r.stderr[-2000:]}"
    r2 = subprocess.run(["ptxas", f"-arch=sm_{arch}", "-v", "-O3", ptx, "-o", os.devnull], capture_output=True, text=True)
    if r2.returncode:
        return src, arch, None, f"ptxas failed:\n{r2.stderr[-2000:]}"
    with open(ptx) as f:
        meta = parse_ptx(f.read())
    return src, arch, (parse_ptxas(r2.stderr), meta), None


def demangle(names):
    try:
        r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        return r.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return list(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="a meson build directory (its compile_commands.json)")
    ap.add_argument("--only", default="", help="only sources whose path contains this")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", help="write the table as CSV here (refused if it exists)")
    a = ap.parse_args()
    cc = os.path.join(a.build, "compile_commands.json")
    try:
        with open(cc) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        die(f"--build {a.build}: cannot read {cc} ({e}); expected a configured meson build directory")
    if a.out and os.path.exists(a.out):
        die(f"--out {a.out}: exists; expected a new file")
    srcs = [e for e in entries if e["file"].endswith(".cu") and "/tests/" not in e["file"] and a.only in e["file"]]
    if not srcs:
        die(f"no .cu sources{' matching --only ' + a.only if a.only else ''} in {cc}")
    results, errors = {}, []
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
        for src, arch, res, err in ex.map(lambda p: compile_one(p[0], p[1], tmp), [(e, x) for e in srcs for x in ARCH]):
            if err:
                errors.append(f"{src} (compute_{arch}): {err}")
            else:
                results[(src, arch)] = res
    if errors:
        die("\n".join(errors))
    rows = []
    for e in srcs:
        src = e["file"]
        res90, meta90 = results[(src, 90)]
        res120, meta120 = results[(src, 120)]
        names = sorted(set(res90) | set(res120))
        for name, pretty in zip(names, demangle(names)):
            threads, dyn = (meta90.get(name) or meta120.get(name) or (None, False))
            r = {90: res90.get(name), 120: res120.get(name)}
            path = os.path.normpath(os.path.join(e["directory"], src))
            row = dict(source=os.path.relpath(path, os.path.dirname(os.path.abspath(a.build))), kernel=pretty,
                       threads=threads, dyn=dyn)
            for arch in ARCH:
                regs, spill, smem = r[arch] or (None, None, None)
                row[arch] = dict(regs=regs, spill=spill, smem=smem,
                                 blocks=blocks_per_sm(regs, smem, threads, arch) if regs is not None else None)
            rows.append(row)

    def cell(v):
        return "?" if v is None else str(v)

    header = ("source,kernel,threads,dynamic_smem,sm90_registers,sm90_spill_bytes,sm90_static_smem,sm90_blocks_per_sm,"
              "sm120_registers,sm120_spill_bytes,sm120_static_smem,sm120_blocks_per_sm")
    lines = [header]
    for r in rows:
        vals = [r["source"], '"' + r["kernel"].replace('"', "'") + '"', cell(r["threads"]), "yes" if r["dyn"] else "no"]
        for arch in ARCH:
            vals += [cell(r[arch][k]) for k in ("regs", "spill", "smem", "blocks")]
        lines.append(",".join(vals))
    if a.out:
        tmp_out = a.out + ".tmp"
        with open(tmp_out, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp_out, a.out)
    else:
        print(f"{'blocks/SM sm90 sm120':>21}  {'regs sm90 sm120':>15}  {'spill':>9}  {'smem':>6}  thr  kernel")
        for r in rows:
            print(f"{cell(r[90]['blocks']):>16} {cell(r[120]['blocks']):>5}  {cell(r[90]['regs']):>10} "
                  f"{cell(r[120]['regs']):>4}  {cell(r[90]['spill']):>4} {cell(r[120]['spill']):>4}  "
                  f"{cell(r[90]['smem']):>6}{'+dyn' if r['dyn'] else '    '} {cell(r['threads']):>4}  {r['kernel'][:110]}")
    cliffs = [r for r in rows if r[90]["blocks"] and r[120]["blocks"] is not None and r[120]["blocks"] < r[90]["blocks"]]
    spills = [r for r in rows if (r[90]["spill"] or 0) > 0 or (r[120]["spill"] or 0) > 0]
    print(f"# {len(rows)} kernels in {len(srcs)} sources; {len(cliffs)} hold fewer blocks an SM on sm_120 than on "
          f"sm_90; {len(spills)} spill on sm_90 or sm_120")
    for r in cliffs:
        print(f"# sm_120 fewer blocks: {r[90]['blocks']} -> {r[120]['blocks']} a SM ({r[90]['regs']} -> "
              f"{r[120]['regs']} registers): {r['kernel'][:120]}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] in (["--parse"], ["--parse-ptx"]):  # tests: a parser on a file, one line a kernel
        with open(sys.argv[2]) as f:
            parsed = (parse_ptxas if sys.argv[1] == "--parse" else parse_ptx)(f.read())
        for k, v in sorted(parsed.items()):
            print(k, *v)
        sys.exit(0)
    sys.exit(main())
