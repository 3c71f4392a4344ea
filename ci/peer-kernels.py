#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Peer kernels at the engine's per-rank shapes, timed as the engine times its own.

At Kimi-K2 TP=8 per-rank shapes (hidden 7168, expert intermediate 2048 / 8 = 256 per rank,
q_a + kv_a 7168 x 2112 replicated, ...), each kernel is captured in one CUDA graph over
enough copies of its weights to exceed the L2 cache several times (so every replayed call
reads its weights from HBM, as one layer after another does in a step), the graph replayed,
and the median replay divided by the number of calls:

  - PyTorch's tinygemm INT4 kernel (torch._weight_int4pack_mm, group size 32, weights packed
    by torch._convert_weight_to_int4pack) per expert (gate|up 512 x 7168, down 7168 x 256)
    and as one matrix of 8 experts (gate|up 4096 x 7168; down 7168 x 2048, the 8 experts'
    inputs side by side, so the weighted sum is the matrix product);
  - cuBLAS bf16 GEMV/GEMM (torch.matmul) for the dense projections;

at T = 1, 3, 8 tokens. Prints a table (shape, T, us, GB/s) and writes a CSV (--out).
--engine FILE (an `arbench engine` <results>-kernels.csv) adds the engine's own time per layer
of the matching family beside the peers: its chain time where the table has the column (a
segment of the replayed step, docs/engine.md), else its graph-replay time.

Runs with no network; imports torch only when run (py_compile works without it). An existing
--out is refused unless --force is given, and --out may not be the --engine file; both, and a
bad --engine file, are refused before torch is imported (tests/ci/peer_kernels_test.sh).
Exit status: 0 done, 2 torch or CUDA missing or bad arguments.
"""
import argparse
import csv
import gzip
import math
import os
import statistics
import sys
import tempfile

HIDDEN = 7168
TP = 8
EXPERT_INTER = 2048 // TP  # per rank
TOPK = 8
GROUP = 32
INNER_K_TILES = 8  # tinygemm's packing: k a multiple of 16 x inner_k_tiles
L2_FLOOR = 60 << 20  # bytes: H200's L2 is 60 MB; the device's own figure when larger
ROTATE = 4  # weights' copies span at least this many L2s

# (name, engine family, rows N, columns K): y[T x N] = x[T x K] @ W[N x K]^T, per rank
DENSE = [
    ("q_a+kv_a", "qkv_a", 1536 + 512 + 64, HIDDEN),
    ("q_b", "q_b", 64 // TP * (128 + 64), 1536),
    ("o_proj", "o_proj", HIDDEN, 64 // TP * 128),
    ("router", "router", 384, HIDDEN),
    ("shared gate|up", "moe_gate_up", 2 * EXPERT_INTER, HIDDEN),
    ("shared down", "moe_down", HIDDEN, EXPERT_INTER),
    ("dense gate|up", "dense_mlp", 2 * 18432 // TP, HIDDEN),
    ("dense down", "dense_mlp", HIDDEN, 18432 // TP),
    ("lm_head", "lm_head", 163840 // TP, HIDDEN),
]
# (name, engine family, experts, rows N, columns K) of the INT4 experts
INT4 = [
    ("expert gate|up", "moe_gate_up", 1, 2 * EXPERT_INTER, HIDDEN),
    ("expert down", "moe_down", 1, HIDDEN, EXPERT_INTER),
    ("8 experts gate|up", "moe_gate_up", TOPK, TOPK * 2 * EXPERT_INTER, HIDDEN),
    ("8 experts down", "moe_down", TOPK, HIDDEN, TOPK * EXPERT_INTER),
]
# a layer's family as the peers would run it: the rows whose times add up
FAMILY_SUM = {
    "qkv_a": ["q_a+kv_a"],
    "q_b": ["q_b"],
    "o_proj": ["o_proj"],
    "router": ["router"],
    "moe_gate_up": ["8 experts gate|up", "shared gate|up"],
    "moe_down": ["8 experts down", "shared down"],
    "dense_mlp": ["dense gate|up", "dense down"],
    "lm_head": ["lm_head"],
}


def die(msg):
    print(f"peer-kernels: {msg}", file=sys.stderr)
    sys.exit(2)


def load_torch():
    try:
        import torch  # noqa: PLC0415 (imported here so the file compiles without torch)
    except ImportError as e:
        die(f"PyTorch is not installed here ({e}); run this on a GPU machine with torch")
    if not torch.cuda.is_available():
        die("torch.cuda.is_available() is False: no CUDA device (or a CPU-only torch build)")
    for op in ("_weight_int4pack_mm", "_convert_weight_to_int4pack"):
        if not hasattr(torch, op):
            die(f"this torch ({torch.__version__}) has no torch.{op}")
    return torch


def copies_for(nbytes, l2):
    return max(2, math.ceil(ROTATE * max(l2, L2_FLOOR) / max(nbytes, 1)))


def time_graph(torch, calls, reps):
    """Median replay time (us) of one graph holding calls() once; calls runs every copy."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture (workspaces, autotuning)
        calls()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        calls()
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t = []
    for _ in range(reps):
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) * 1e3)
    del g
    return statistics.median(t)


def bench_dense(torch, name, n, k, T, l2, reps):
    nbytes = n * k * 2
    c = copies_for(nbytes, l2)
    w = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(c)]
    x = torch.randn(T, k, device="cuda", dtype=torch.bfloat16)
    out = [None] * c

    def calls():
        for i in range(c):
            out[i] = torch.matmul(x, w[i].t())

    us = time_graph(torch, calls, reps) / c
    del w, out
    return {"kernel": "cublas-bf16", "shape": name, "n": n, "k": k, "experts": 0, "copies": c, "bytes": nbytes,
            "us": us}


def pack_int4(torch, n, k):
    """Random 4-bit weights [n x k] in tinygemm's layout: since torch 2.5 the op takes uint8
    [n x k/2] (two values a byte); older builds took int32 [n x k] (one value each)."""
    raw = torch.randint(0, 256, (n, k // 2), device="cuda", dtype=torch.uint8)
    try:
        return torch._convert_weight_to_int4pack(raw, INNER_K_TILES)
    except RuntimeError:
        vals = torch.randint(0, 16, (n, k), device="cuda", dtype=torch.int32)
        return torch._convert_weight_to_int4pack(vals, INNER_K_TILES)


def bench_int4(torch, name, experts, n, k, T, l2, reps):
    if k % (16 * INNER_K_TILES) or k % GROUP or n % 8:
        raise ValueError(f"{name}: n {n}, k {k} do not fit tinygemm's tiles")
    # tinygemm reads the packed weights (k / 2 bytes a row) and a bf16 (scale, zero) pair per group
    nbytes = n * k // 2 + (k // GROUP) * n * 2 * 2
    c = copies_for(nbytes, l2)
    packed, sz = [], []
    for _ in range(c):
        packed.append(pack_int4(torch, n, k))
        sz.append(torch.rand(k // GROUP, n, 2, device="cuda", dtype=torch.bfloat16))
    x = torch.randn(T, k, device="cuda", dtype=torch.bfloat16)
    out = [None] * c

    def calls():
        for i in range(c):
            out[i] = torch._weight_int4pack_mm(x, packed[i], GROUP, sz[i])

    us = time_graph(torch, calls, reps) / c
    del packed, sz, out
    return {"kernel": "tinygemm-int4", "shape": name, "n": n, "k": k, "experts": experts, "copies": c,
            "bytes": nbytes, "us": us}


def read_engine(path):
    """{(family, T): us per layer} from an engine <results>-kernels.csv, and the column used:
    chain_us (each family's segment of the replayed step, since 2026-12-05) where the table has
    it, else graph_us (what removing the family's nodes saves)."""
    got = {}
    with (gzip.open if path.endswith(".gz") else open)(path, "rt", newline="") as f:  # committed rounds: .csv.gz
        rows = list(csv.DictReader(f))
    col = "chain_us" if any(r.get("chain_us") for r in rows) else "graph_us"
    for row in rows:
        if row.get(col):
            got[(row["family"], int(row["tokens"]))] = (float(row[col]), row.get("experts_per_layer", ""))
    return got, col


def write_csv(path, rows, meta):
    cols = ["schema", "torch", "cuda", "gpu", "l2_bytes", "kernel", "shape", "family", "n", "k", "experts",
            "tokens", "copies", "bytes", "us", "gbs", "reps"]
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".peer-kernels.", dir=d)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow({**meta, **r})
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="CSV to write")
    ap.add_argument("--tokens", default="1,3,8", help="token counts T (default 1,3,8)")
    ap.add_argument("--reps", type=int, default=30, help="timed graph replays per shape (default 30)")
    ap.add_argument("--engine", help="an arbench engine <results>-kernels.csv to print beside the peers")
    ap.add_argument("--force", action="store_true", help="replace an existing --out file")
    a = ap.parse_args()
    try:
        Ts = [int(t) for t in a.tokens.split(",")]
    except ValueError:
        die(f"--tokens {a.tokens!r}: give comma-separated positive integers, e.g. 1,3,8")
    if not Ts or min(Ts) < 1 or a.reps < 1:
        die("--tokens need positive integers and --reps at least 1")
    # the project's output rule: an existing --out is refused unless --force; never onto an input
    if a.engine and os.path.exists(a.out) and os.path.samefile(a.engine, a.out):
        die(f"--out {a.out} is the --engine file: give another path (the engine's table would be lost)")
    if os.path.exists(a.out) and not a.force:
        die(f"--out {a.out} exists: give --force to replace it, or another path")
    if not os.path.isdir(os.path.dirname(os.path.abspath(a.out))):
        die(f"--out {a.out}: its folder does not exist")
    try:
        engine, ecol = read_engine(a.engine) if a.engine else ({}, "")
    except (OSError, EOFError, KeyError, ValueError) as e:
        die(f"--engine {a.engine}: not an arbench engine <results>-kernels.csv ({e}); expected columns family, "
            "tokens, graph_us")
    if a.engine and not engine:
        die(f"--engine {a.engine}: no rows with chain_us or graph_us; expected an arbench engine <results>-kernels.csv")
    torch = load_torch()
    torch.manual_seed(0)
    prop = torch.cuda.get_device_properties(0)
    l2 = getattr(prop, "L2_cache_size", 0) or L2_FLOOR
    meta = {"schema": "peer-kernels-1", "torch": torch.__version__, "cuda": torch.version.cuda, "gpu": prop.name,
            "l2_bytes": l2, "reps": a.reps}
    print(f"# peer kernels: {prop.name}, torch {torch.__version__}, CUDA {torch.version.cuda}, L2 {l2 / 2**20:.0f} MiB, "
          f"graph replay over weights spanning >= {ROTATE} x max(L2, 60 MiB)")
    rows = []
    for T in Ts:
        for name, fam, n, k in DENSE:
            rows.append({**bench_dense(torch, name, n, k, T, l2, a.reps), "family": fam, "tokens": T})
        for name, fam, e, n, k in INT4:
            rows.append({**bench_int4(torch, name, e, n, k, T, l2, a.reps), "family": fam, "tokens": T})
    for r in rows:
        r["gbs"] = r["bytes"] / r["us"] / 1e3
    print(f"# {'kernel':<14} {'shape':<18} {'N x K':>13} {'T':>2} {'copies':>6} {'MB':>8} {'us':>9} {'GB/s':>7}")
    for r in rows:
        print(f"# {r['kernel']:<14} {r['shape']:<18} {r['n']:>6}x{r['k']:<6} {r['tokens']:>2} {r['copies']:>6} "
              f"{r['bytes'] / 1e6:>8.3f} {r['us']:>9.2f} {r['gbs']:>7.0f}")
    by = {(r["shape"], r["tokens"]): r for r in rows}
    what = {"chain_us": "chain time (its segment of the replayed step)",
            "graph_us": "graph-replay time (what removing it saves)"}.get(ecol, "time")
    print("# per layer, by the engine's families: the peers' rows summed (8 experts as one matrix), and the "
          "engine's " + what + ("" if engine else " (give --engine <results>-kernels.csv)"))
    print(f"# {'family':<12} {'T':>2} {'peer_us':>9} {'engine_us':>10} {'engine/peer':>11}  peer rows")
    for T in Ts:
        for fam, parts in FAMILY_SUM.items():
            peer = sum(by[(p, T)]["us"] for p in parts)
            e = engine.get((fam, T))
            # a family's graph-replay time is what removing its nodes saves; under PDL a kernel that
            # overlaps its neighbours can save nothing or less than nothing: no ratio then
            es = (f"{e[0]:>10.2f} {e[0] / peer:>11.2f}" if e and e[0] > 0 else
                  f"{e[0]:>10.2f} {'n/m':>11}" if e else f"{'-':>10} {'-':>11}")
            note = f" (engine: {e[1]} experts/layer)" if e and fam.startswith("moe") and e[1] else ""
            print(f"# {fam:<12} {T:>2} {peer:>9.2f} {es}  {' + '.join(parts)}{note}")
    if engine:
        print("# n/m: the engine's time for that family is not positive (the family overlaps its neighbours "
              "under PDL; removing it saves nothing measurable): not a comparison")
    write_csv(a.out, rows, meta)
    print(f"# peer kernels: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
