# SPDX-License-Identifier: MIT
"""The Python binding on host buffers under mpirun: exact sums through the profile's choice
and its fallbacks, the fused op against a float64 reference, the errors a server sees.
array.array always; NumPy arrays too when NumPy is importable.
usage: mpirun -np N python3 binding_test.py DIR   (DIR holds api_test.sh's profiles)"""
import array
import math
import os
import struct
import sys

import arbench

DIR = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL rank %s: %s" % (os.environ.get("OMPI_COMM_WORLD_RANK", "?"), what), flush=True)


def bf16(v):
    return struct.unpack("<I", struct.pack("<f", v))[0] >> 16  # exact for small integers


def f32(h):
    return struct.unpack("<f", struct.pack("<I", int(h) << 16))[0]  # int: a NumPy uint16 would overflow


def value(i, rank):
    return (i * 7 + rank * 3) % 17 - 8


def comm(profile=None, max_bytes=1 << 20):
    return arbench.Communicator(os.path.join(DIR, profile) if profile else None, device=-1, fabric="host",
                                max_bytes=max_bytes, max_tokens=4, hidden=96)


def exact_allreduce(c, count, kind, make=array.array):
    data = [value(i, c.rank) for i in range(count)]
    buf = make("f", data) if kind == "f" else make("H", [bf16(v) for v in data])
    check(c.all_reduce(buf) is buf, "all_reduce returns its argument")
    got = list(buf) if kind == "f" else [f32(h) for h in buf]
    want = [sum(value(i, r) for r in range(c.size)) for i in range(count)]
    wrong = sum(g != w for g, w in zip(got, want))
    check(wrong == 0, "all_reduce %s x %d: %d wrong elements" % (kind, count, wrong))


def exact_allreduce_in(c, view):
    """An in-place all-reduce of a bf16 view (a memoryview of 'H'), exact sums checked."""
    n = len(view)
    for i in range(n):
        view[i] = bf16(value(i, c.rank))
    c.all_reduce(view)
    want = [sum(value(i, r) for r in range(c.size)) for i in range(n)]
    wrong = sum(f32(view[i]) != want[i] for i in range(n))
    check(wrong == 0, "all_reduce in place of %d bf16: %d wrong elements" % (n, wrong))


def expect_error(fn, status, text):
    try:
        fn()
    except arbench.ArbenchError as e:
        check(e.status == status and text in str(e), "error %d '%s', expected %d with '%s'" % (e.status, e, status, text))
        return
    check(False, "no error, expected one with '%s'" % text)


def t_no_profile():
    with comm() as c:
        check(c.size == int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")), "size %d" % c.size)
        exact_allreduce(c, 4099, "f")
        exact_allreduce(c, 4099, "H")
        impl, note = c.explain("allreduce", 4096)
        check(impl == "mpi-host" and "no profile entries" in note, "no profile: %s %s" % (impl, note))


def t_profiled():
    with comm("prof.csv") as c:
        impl, note = c.explain("allreduce", 4096)
        check(impl == "mpi-host" and "mpi-host:algo=reduce-bcast from" in note, "4096 B: %s" % note)
        exact_allreduce(c, 2048, "H")
        impl, note = c.explain("allreduce", 16384)
        check("it did not open here" in note, "16384 B (floor entry): %s" % note)
        exact_allreduce(c, 8192, "H")
        impl, note = c.explain("allreduce", 1 << 19)
        check("size range" in note, "512 KiB: %s" % note)
        exact_allreduce(c, 1 << 18, "H")
        expect_error(lambda: c.all_reduce(array.array("H", bytes(2 << 20))), arbench._lib.ERR_INVALID,
                     "over this communicator's registered max_bytes")
        expect_error(lambda: c.all_reduce(array.array("d", [1.0])), arbench._lib.ERR_INVALID, "buffer format 'd'")


def t_other_ranks():
    with comm("other-ranks.csv") as c:
        impl, note = c.explain("allreduce", 4096)
        check(impl == "mpi-host" and "for its ranks" in note, "other ranks: %s" % note)
        exact_allreduce(c, 2048, "H")


def t_bad_profile():
    expect_error(lambda: comm("broken.csv"), arbench._lib.ERR_INVALID, "broken.csv")


def t_rmsnorm(make=array.array):
    tokens, hidden = 3, 96
    with comm("prof.csv") as c:
        n = tokens * hidden
        x = make("H", [bf16(value(i, c.rank)) for i in range(n)])
        res0 = [i % 5 - 2 for i in range(n)]
        residual = make("H", [bf16(v) for v in res0])
        weight = make("H", [bf16((i % 3 + 1) * 0.5) for i in range(hidden)])
        out = c.all_reduce_rmsnorm(x, residual, weight, 1e-6)
        ref = [res0[i] + sum(value(i, r) for r in range(c.size)) for i in range(n)]
        wrong_res = sum(f32(residual[i]) != ref[i] for i in range(n))
        wrong_out = 0
        for t in range(tokens):
            row = ref[t * hidden:(t + 1) * hidden]
            inv = 1.0 / math.sqrt(sum(v * v for v in row) / hidden + 1e-6)
            for i, v in enumerate(row):
                want = v * inv * f32(weight[i])
                wrong_out += abs(f32(out[t * hidden + i]) - want) > 1e-2 * abs(want) + 1e-3
        check(wrong_res == 0, "rmsnorm residual: %d wrong" % wrong_res)
        check(wrong_out == 0, "rmsnorm out: %d wrong" % wrong_out)
        impl, note = c.explain("allreduce_rmsnorm", n * 2)
        check("mpi-host:algo=allreduce unfused from" in note, "fused: %s" % note)


def t_numpy():
    try:
        import numpy as np
    except ImportError:
        return "skipped (no numpy)"

    def make(kind, data):
        return np.array(data, dtype=np.float32 if kind == "f" else np.uint16)
    with comm("prof.csv") as c:
        exact_allreduce(c, 4099, "f", make)
        exact_allreduce(c, 2048, "H", make)
    t_rmsnorm(make)
    return "ok"


def t_server_route():
    """arbench.server on a stand-in for vLLM's and SGLang's parallel_state module."""
    import types
    import arbench.server

    class GroupCoordinator:
        def __init__(self, world_size, rank_in_group):
            self.world_size, self.rank_in_group = world_size, rank_in_group

        def _all_reduce_out_place(self, input_):
            return "original"

    with comm() as c:
        tp, other = GroupCoordinator(c.size, c.rank), GroupCoordinator(c.size, c.rank)
        ps = types.SimpleNamespace(GroupCoordinator=GroupCoordinator, get_tp_group=lambda: tp)
        undo = arbench.server._route_tp(ps, c)
        x = array.array("f", [float(value(i, c.rank)) for i in range(1000)])
        y = tp._all_reduce_out_place(x)
        want = [float(sum(value(i, r) for r in range(c.size))) for i in range(1000)]
        check(list(y) == want, "routed TP all-reduce: exact sum")
        check(list(x) == [float(value(i, c.rank)) for i in range(1000)], "routed TP all-reduce: out of place")
        check(other._all_reduce_out_place(x) == "original", "another group keeps the original")
        undo()
        check(tp._all_reduce_out_place(x) == "original", "undo restores the original")
        bad = types.SimpleNamespace(GroupCoordinator=GroupCoordinator, get_tp_group=lambda: GroupCoordinator(c.size + 1, 0))
        expect_error(lambda: arbench.server._route_tp(bad, c), arbench._lib.ERR_INVALID, "the tensor-parallel group is")


class TcpAllgather:
    """A host allgather that is not MPI, as a server's own collectives would be: every rank
    connects to rank 0 (its port in DIR/gather-port), sends its bytes; rank 0 sends back
    the concatenation in rank order."""

    def __init__(self, rank, size):
        import socket
        import time
        self.rank, self.size, self.calls = rank, size, 0
        path = os.path.join(DIR, "gather-port")
        if rank == 0:
            self.srv = socket.socket()
            self.srv.bind(("127.0.0.1", 0))
            self.srv.listen(size)
            with open(path + ".tmp", "w") as f:
                f.write(str(self.srv.getsockname()[1]))
            os.rename(path + ".tmp", path)
            self.peers = {}
            for _ in range(size - 1):
                conn, _ = self.srv.accept()
                self.peers[int(self._recv(conn, 4).decode())] = conn
        else:
            for _ in range(600):
                if os.path.exists(path):
                    break
                time.sleep(0.05)
            self.sock = socket.create_connection(("127.0.0.1", int(open(path).read())))
            self.sock.sendall(b"%04d" % rank)

    @staticmethod
    def _recv(conn, n):
        buf = b""
        while len(buf) < n:
            chunk = conn.recv(n - len(buf))
            if not chunk:
                raise OSError("peer closed")
            buf += chunk
        return buf

    def __call__(self, data):
        self.calls += 1
        if self.rank == 0:
            parts = [data] + [self._recv(self.peers[r], len(data)) for r in range(1, self.size)]
            out = b"".join(parts)
            for r in range(1, self.size):
                self.peers[r].sendall(out)
            return out
        self.sock.sendall(data)
        return self._recv(self.sock, len(data) * self.size)


def t_allgather_bootstrap():
    """No MPI in the library: the caller's allgather (TCP here) bootstraps; ops-host sums."""
    rank, size = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0")), int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    g = TcpAllgather(rank, size)
    kw = dict(device=-1, allgather=g, rank=rank, size=size, max_bytes=1 << 20, max_tokens=4, hidden=96)
    with arbench.Communicator(None, **kw) as c:
        check(c.bootstrap == "allgather" and c.rank == rank and c.size == size, "allgather bootstrap: %s %d/%d"
              % (c.bootstrap, c.rank, c.size))
        impl, note = c.explain("allreduce", 4096)
        check(impl == "ops-host", "allgather bootstrap serves host memory with ops-host: %s" % note)
        calls = g.calls
        exact_allreduce(c, 4099, "f")
        exact_allreduce(c, 4099, "H")
        check(g.calls > calls, "host calls go through the caller's allgather")
        big = array.array("H", bytes(2 * 4096))
        mv = memoryview(big)
        c.register(mv[:2048])  # the first half registered
        exact_allreduce_in(c, mv[:2048])
        exact_allreduce_in(c, mv[1024:2048])  # inside it, to its end
        expect_error(lambda: c.all_reduce(mv[1024:3072]), arbench._lib.ERR_INVALID,
                     "runs past the end of its registered buffer")
        exact_allreduce_in(c, mv[2048:])  # not registered: staged
        c.deregister(mv[:2048])
        expect_error(lambda: c.deregister(mv[:2048]), arbench._lib.ERR_INVALID, "not a registered buffer")
    expect_error(lambda: arbench.Communicator(None, fallback="mpi-host", **kw), arbench._lib.ERR_DECLINE,
                 "bootstrapped without MPI")


tests = [t_server_route, t_no_profile, t_profiled, t_other_ranks, t_bad_profile, t_rmsnorm, t_numpy,
         t_allgather_bootstrap]
for t in tests:
    before = len(failures)
    status = t()
    print("%s %s%s" % ("ok" if len(failures) == before else "not ok", t.__name__[2:],
                       " # " + status if isinstance(status, str) and status != "ok" else ""), flush=True)
sys.exit(1 if failures else 0)
