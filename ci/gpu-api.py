#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python binding on one GPU with PyTorch (world size 1): all_reduce and
all_reduce_rmsnorm eagerly and inside torch.cuda.graph capture against torch's own
result, and the per-call time beside torch.distributed.all_reduce (NCCL).

    python3 ci/gpu-api.py --lib PREFIX/lib/x86_64-linux-gnu [--profile P.csv] [--out OUT.csv]

--lib is the folder holding the installed libarbench.so (and arbench/, its plugins). At
world size 1 an all-reduce is a copy: this checks the path (staging or in place on a
registered buffer, the stream, capture), not a sum over GPUs; the two-GPU run belongs to
the two-GPU tests. The communicator bootstraps from the torch.distributed group (NCCL,
init_method file://), not MPI: rank 0 makes an NCCL unique id through the library and the
group broadcasts it; a second one over a gloo group checks the host path (ops-host).
Each CSV row carries the GPU, driver, CUDA, NCCL (the library loaded in the process) and
torch versions and --rev. Exit 0 all checks pass, 1 a check failed, 2 no CUDA or no torch
(the message says which).
"""
import argparse
import csv
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="folder of the installed libarbench.so")
    ap.add_argument("--profile", default=None, help="a profile (CSV or JSON); default: none, NCCL everywhere")
    ap.add_argument("--sizes", default="4096,65536,1048576,8388608", help="all_reduce sizes, bytes per rank (bf16)")
    ap.add_argument("--tokens", default="1,3,8", help="fused call rows")
    ap.add_argument("--hidden", type=int, default=7168, help="fused call row length")
    ap.add_argument("--iters", type=int, default=200, help="timed calls per size")
    ap.add_argument("--out", default=None, help="CSV of the timings")
    ap.add_argument("--rev", default=os.environ.get("ARBENCH_REV", ""), help="git revision recorded in the CSV")
    return ap.parse_args()


def setup(args):
    lib = os.path.join(args.lib, "libarbench.so")
    if not os.path.isfile(lib):
        sys.exit("gpu-api: %s: no libarbench.so there (meson install first; --lib is PREFIX/LIBDIR)" % args.lib)
    os.environ["ARBENCH_LIB"] = lib
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    try:
        import torch
    except ImportError:
        print("gpu-api: PyTorch is not importable: this test needs torch with CUDA", file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        print("gpu-api: torch sees no CUDA device: this test needs a GPU", file=sys.stderr)
        sys.exit(2)
    import tempfile
    import torch.distributed as dist
    torch.cuda.set_device(0)
    store = os.path.join(tempfile.mkdtemp(prefix="gpu-api-"), "store")
    dist.init_process_group("nccl", init_method="file://" + store, rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    import arbench
    return torch, dist, arbench


def metadata(torch, args):
    """What the rows were measured with: GPU, driver, CUDA, NCCL as loaded, torch, revision."""
    import ctypes
    import subprocess
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        driver = ""
    nccl = ""
    try:
        v = ctypes.c_int()
        ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(v))  # the one already in the process
        nccl = "%d.%d.%d" % (v.value // 10000, v.value // 100 % 100, v.value % 100)
    except (OSError, AttributeError):
        pass
    return {"gpu": torch.cuda.get_device_name(0), "driver": driver, "cuda_runtime": torch.version.cuda or "",
            "nccl_loaded": nccl, "nccl_torch": ".".join(map(str, torch.cuda.nccl.version())),
            "torch": torch.__version__, "git_rev": args.rev}


failures = []


def check(ok, what):
    print("%s - %s" % ("ok" if ok else "not ok", what), flush=True)
    if not ok:
        failures.append(what)


def rmsnorm_ref(torch, x, residual, weight, eps):
    """The fused op in float32 from bf16 inputs, rounded as the library does: the residual
    to bf16 first, the norm from the rounded residual."""
    r = (residual.float() + x.float()).to(torch.bfloat16)
    rf = r.float()
    out = rf * torch.rsqrt(rf.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()
    return r, out.to(torch.bfloat16)


def time_us(torch, fn, iters):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(10):
        fn()
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) * 1000.0 / iters


def graph_of(torch, fn, calls):
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # warm-up outside capture (torch's rule for capture)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return g


def allreduce_cases(torch, dist, comm, sizes, iters, rows):
    k = 16  # calls per captured graph for the graph timings
    for nbytes in sizes:
        n = nbytes // 2
        base = (torch.arange(n, device="cuda") % 17 - 8).to(torch.bfloat16)
        x = base.clone()
        comm.all_reduce(x)
        ref = base.clone()
        dist.all_reduce(ref)
        torch.cuda.synchronize()
        impl, note = comm.explain("allreduce", nbytes)
        check(torch.equal(x, ref), "all_reduce eager %d B (%s) equals torch.distributed.all_reduce" % (nbytes, impl))
        y = base.clone()
        g = graph_of(torch, lambda: comm.all_reduce(y), 1)
        y.copy_(base)
        g.replay()
        torch.cuda.synchronize()
        check(torch.equal(y, ref), "all_reduce in torch.cuda.graph %d B replayed equals torch" % nbytes)
        # A registered buffer: in place (NCCL reduces in place), eager and captured.
        z = comm.register(base.clone())
        comm.all_reduce(z)
        torch.cuda.synchronize()
        check(torch.equal(z, ref), "all_reduce eager on a registered buffer %d B equals torch" % nbytes)
        gz = graph_of(torch, lambda: comm.all_reduce(z), 1)
        z.copy_(base)
        gz.replay()
        torch.cuda.synchronize()
        check(torch.equal(z, ref), "all_reduce in torch.cuda.graph on a registered buffer %d B equals torch" % nbytes)
        t_arb = time_us(torch, lambda: comm.all_reduce(x), iters)
        t_reg = time_us(torch, lambda: comm.all_reduce(z), iters)
        t_torch = time_us(torch, lambda: dist.all_reduce(ref), iters)
        gk = graph_of(torch, lambda: comm.all_reduce(y), k)
        t_graph = time_us(torch, gk.replay, max(1, iters // k)) / k
        gkz = graph_of(torch, lambda: comm.all_reduce(z), k)
        t_reg_graph = time_us(torch, gkz.replay, max(1, iters // k)) / k
        try:  # torch's own capture of its NCCL all-reduce: a reference, not a check
            gkt = graph_of(torch, lambda: dist.all_reduce(ref), k)
            t_torch_graph = time_us(torch, gkt.replay, max(1, iters // k)) / k
        except Exception as e:  # noqa: BLE001
            print("   torch.distributed.all_reduce in torch.cuda.graph: %s: %s" % (type(e).__name__, e), flush=True)
            t_torch_graph = float("nan")
        comm.deregister(z)
        print("   %9d B  arbench eager %8.2f us (registered %8.2f)  graph %8.2f us (registered %8.2f)  "
              "torch.distributed eager %8.2f us  graph %8.2f us  [%s]"
              % (nbytes, t_arb, t_reg, t_graph, t_reg_graph, t_torch, t_torch_graph, note), flush=True)
        rows.append({"op": "allreduce", "bytes": nbytes, "impl": impl or "", "arbench_eager_us": "%.3f" % t_arb,
                     "arbench_registered_eager_us": "%.3f" % t_reg, "arbench_graph_us": "%.3f" % t_graph,
                     "arbench_registered_graph_us": "%.3f" % t_reg_graph, "torch_distributed_us": "%.3f" % t_torch,
                     "torch_distributed_graph_us": "%.3f" % t_torch_graph, "torch_reference": "dist.all_reduce"})


def rmsnorm_cases(torch, dist, comm, tokens_list, hidden, iters, rows):
    gen = torch.Generator(device="cuda").manual_seed(7)
    for tokens in tokens_list:
        def rnd(*shape):
            return (torch.randn(*shape, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
        x, res0, w = rnd(tokens, hidden), rnd(tokens, hidden), rnd(hidden)
        ref_res, ref_out = rmsnorm_ref(torch, x, res0, w, 1e-6)
        res = res0.clone()
        out = comm.all_reduce_rmsnorm(x, res, w, 1e-6)
        torch.cuda.synchronize()
        tol = dict(rtol=2 ** -7, atol=2 ** -7)
        impl, note = comm.explain("allreduce_rmsnorm", tokens * hidden * 2)
        check(torch.equal(res, ref_res), "all_reduce_rmsnorm eager %d x %d (%s): residual equals torch's" % (tokens, hidden, impl))
        check(torch.allclose(out.float(), ref_out.float(), **tol), "all_reduce_rmsnorm eager %d x %d: out within bf16 of torch's" % (tokens, hidden))
        res_g = res0.clone()
        box = {}
        g = graph_of(torch, lambda: box.__setitem__("out", comm.all_reduce_rmsnorm(x, res_g, w, 1e-6)), 1)
        res_g.copy_(res0)
        g.replay()
        torch.cuda.synchronize()
        check(torch.equal(res_g, ref_res), "all_reduce_rmsnorm in torch.cuda.graph %d x %d: residual equals torch's" % (tokens, hidden))
        check(torch.allclose(box["out"].float(), ref_out.float(), **tol), "all_reduce_rmsnorm in torch.cuda.graph %d x %d: out within bf16" % (tokens, hidden))
        t_arb = time_us(torch, lambda: comm.all_reduce_rmsnorm(x, res, w, 1e-6), iters)
        gk = graph_of(torch, lambda: comm.all_reduce_rmsnorm(x, res_g, w, 1e-6), 16)
        t_graph = time_us(torch, gk.replay, max(1, iters // 16)) / 16

        def torch_fused():
            s = x.clone()
            dist.all_reduce(s)
            return rmsnorm_ref(torch, s, res, w, 1e-6)
        t_ref = time_us(torch, torch_fused, iters)
        print("   %d x %d  arbench fused eager %8.2f us  graph %8.2f us  torch dist.all_reduce + residual + rmsnorm "
              "eager %8.2f us  [%s]" % (tokens, hidden, t_arb, t_graph, t_ref, note), flush=True)
        rows.append({"op": "allreduce_rmsnorm", "bytes": tokens * hidden * 2, "impl": impl or "",
                     "arbench_eager_us": "%.3f" % t_arb, "arbench_registered_eager_us": "",
                     "arbench_graph_us": "%.3f" % t_graph, "arbench_registered_graph_us": "",
                     "torch_distributed_us": "%.3f" % t_ref, "torch_distributed_graph_us": "",
                     "torch_reference": "dist.all_reduce + float32 residual + rmsnorm (eager torch ops)"})


def compiled_case(torch, comm):
    """torch.compile traces the custom op (fullgraph: no graph break)."""
    from arbench import _torch_ops
    if not _torch_ops.HAVE_CUSTOM_OPS:
        print("   torch.compile: skipped (torch.library.custom_op needs torch >= 2.4)")
        return
    x = torch.ones(4096, device="cuda", dtype=torch.bfloat16)

    def f(t):
        comm.all_reduce(t)
        return t * 2
    try:
        y = torch.compile(f, fullgraph=True)(x)
        torch.cuda.synchronize()
        check(torch.equal(y, torch.full_like(x, 2)), "torch.compile(fullgraph=True) of all_reduce")
    except Exception as e:  # a compile failure is a result to report, not a crash
        check(False, "torch.compile(fullgraph=True) of all_reduce: %s: %s" % (type(e).__name__, e))


def host_group_case(torch, dist, arbench):
    """A gloo group, host memory: the allgather-callback bootstrap and ops-host."""
    gloo = dist.new_group(backend="gloo")
    with arbench.Communicator(None, group=gloo, device=-1, max_bytes=1 << 16) as c:
        t = (torch.arange(4096) % 17 - 8).to(torch.bfloat16)
        want = t.clone()
        c.all_reduce(t)
        impl, _ = c.explain("allreduce", t.numel() * 2)
        check(c.bootstrap == "torch-group-allgather" and impl == "ops-host" and torch.equal(t, want),
              "host Communicator over a gloo group (bootstrap %s, %s): all_reduce of a CPU tensor" % (c.bootstrap, impl))
    dist.destroy_process_group(gloo)


def nccl_comm_case(torch, dist, arbench):
    """arbench_comm_create_nccl over torch's own NCCL communicator, where torch exposes it
    (ProcessGroupNCCL._comm_ptr): one libnccl in the process, so the pointer is valid."""
    try:
        ptr = dist.group.WORLD._get_backend(torch.device("cuda", 0))._comm_ptr()
    except Exception as e:  # noqa: BLE001
        print("   nccl_comm bootstrap: skipped (torch does not expose its ncclComm_t: %s: %s)" % (type(e).__name__, e))
        return
    with arbench.Communicator(None, nccl_comm=ptr, device=0, graph=True, max_bytes=1 << 16) as c:
        t = (torch.arange(8192, device="cuda") % 17 - 8).to(torch.bfloat16)
        want = t.clone()
        c.all_reduce(t)
        torch.cuda.synchronize()
        check(c.bootstrap == "nccl-comm" and c.size == 1 and torch.equal(t, want),
              "Communicator over torch's ncclComm_t (%s, rank %d of %d): all_reduce" % (c.bootstrap, c.rank, c.size))


def main():
    args = parse()
    torch, dist, arbench = setup(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    tokens = [int(t) for t in args.tokens.split(",")]
    print("torch %s, %s, libarbench API %d, profile %s" % (torch.__version__, torch.cuda.get_device_name(0),
                                                          arbench.api_version(), args.profile or "none"), flush=True)
    t0 = time.time()
    comm = arbench.Communicator(args.profile, group=dist.group.WORLD, device=0, graph=True, max_bytes=max(sizes),
                                max_tokens=max(tokens), hidden=args.hidden)
    check(comm.size == 1 and comm.rank == 0 and comm.bootstrap == "torch-group-nccl-id",
          "Communicator from the torch.distributed NCCL group at world size 1 (rank %d of %d, bootstrap %s)"
          % (comm.rank, comm.size, comm.bootstrap))
    rows = []
    allreduce_cases(torch, dist, comm, sizes, args.iters, rows)
    rmsnorm_cases(torch, dist, comm, tokens, args.hidden, args.iters, rows)
    meta = metadata(torch, args)
    print("metadata: %s" % ", ".join("%s=%s" % kv for kv in meta.items()), flush=True)
    if args.out:  # written before the slower checks below, so that a timeout keeps the timings
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=(list(rows[0].keys()) if rows else ["op"]) + list(meta))
            w.writeheader()
            w.writerows(dict(r, **meta) for r in rows)
    print("timings done (%.1f s)" % (time.time() - t0), flush=True)
    host_group_case(torch, dist, arbench)
    nccl_comm_case(torch, dist, arbench)
    compiled_case(torch, comm)
    comm.close()
    dist.destroy_process_group()
    print("%d checks failed (%.1f s)" % (len(failures), time.time() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
