# SPDX-License-Identifier: MIT
"""arbench: the all-reduce that `arbench sweep` + `arbench profile` chose, per size, from Python.

    import arbench
    comm = arbench.Communicator("profile.csv")          # or None: the fallback (NCCL) everywhere
    comm.all_reduce(t)                                  # in place, sum over ranks
    out = comm.all_reduce_rmsnorm(x, residual, weight, 1e-6)  # residual += sum(x); out = rmsnorm(residual) * weight

PyTorch CUDA tensors run on the current stream and may be captured in torch.cuda.graph;
the calls are the custom ops torch.ops.arbench.all_reduce and .all_reduce_rmsnorm, so
torch.compile sees them. Without torch (or with device=-1) the buffers are host memory
(NumPy arrays, array.array, any writable C-contiguous buffer) served by the MPI host
backend. bf16 host buffers are uint16 arrays holding bf16 bits (NumPy has no bfloat16).

Bootstrap: group=None spans MPI_COMM_WORLD (launch with mpirun, or as one process, world
size 1). group=a torch.distributed group bootstraps from that group without MPI:
  - on a GPU (device >= 0): rank 0 of the group makes an NCCL unique id through the library
    (arbench_nccl_unique_id), the group broadcasts it (torch.distributed.broadcast_object_list,
    any backend), and every rank creates the communicator from it
    (arbench_comm_create_nccl_id): one broadcast, after which the library's own NCCL
    communicator carries its setup collectives, with no Python callback and no
    dependence on what the group's backend can do inside a ctypes call;
  - on the host (device=-1): the group's allgather is the library's host collectives
    (arbench_comm_create_allgather over torch.distributed.all_gather of CPU tensors: a
    gloo group), the only path without a GPU; ops-host then serves the calls.
allgather=fn, rank=, size= (no torch needed) gives the library any host allgather:
fn(data: bytes) -> bytes, every rank's data concatenated in rank order. nccl_comm=an
ncclComm_t address (of the libnccl loaded in this process, e.g. torch's) bootstraps over
that communicator (arbench_comm_create_nccl).

comm.register(x) registers a buffer (arbench_register): all_reduce on it runs in place,
with no staging copy, where the chosen implementation allows (NCCL, mpi-host, ops-host).
"""
import ctypes

from . import _lib
from ._lib import ArbenchError

__all__ = ["Communicator", "ArbenchError", "api_version"]


def api_version():
    """The loaded libarbench's ARBENCH_API_VERSION (major * 10000 + minor * 100 + patch)."""
    return _lib.load().arbench_api_version()


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _is_tensor(x):
    return type(x).__module__.split(".")[0] == "torch"


def _host_view(x, writable, what):
    """(address, element count, dtype code, keep-alive) of a host buffer."""
    mv = memoryview(x)
    if not mv.c_contiguous:
        raise ArbenchError(_lib.ERR_INVALID, "%s: expected a C-contiguous buffer" % what)
    name = getattr(getattr(x, "dtype", None), "name", "")
    if mv.format == "f" and mv.itemsize == 4:
        dt = _lib.FP32
    elif (mv.format in ("H", "<H", "=H") and mv.itemsize == 2) or name == "bfloat16":
        dt = _lib.BF16
    else:
        raise ArbenchError(_lib.ERR_INVALID, "%s: buffer format '%s' (item size %d): expected float32 ('f') or bf16 bits "
                           "in uint16 ('H')" % (what, mv.format, mv.itemsize))
    count = mv.nbytes // mv.itemsize
    iface = getattr(x, "__array_interface__", None)
    if iface is not None:
        if writable and iface["data"][1]:
            raise ArbenchError(_lib.ERR_INVALID, "%s: a read-only array, expected a writable one" % what)
        return iface["data"][0], count, dt, x
    if mv.readonly:
        if writable:
            raise ArbenchError(_lib.ERR_INVALID, "%s: a read-only buffer, expected a writable one" % what)
        keep = bytearray(mv.cast("B"))
        return ctypes.addressof((ctypes.c_char * len(keep)).from_buffer(keep)), count, dt, keep
    keep = (ctypes.c_char * mv.nbytes).from_buffer(mv.cast("B"))
    return ctypes.addressof(keep), count, dt, keep


class Communicator:
    """One communicator over MPI_COMM_WORLD (arbench_comm_create).

    profile: path of a profile (CSV or JSON of `arbench profile`), or None.
    group: None, or a torch.distributed group that is the MPI world in the same order.
    device: CUDA device index, -1 for host memory; default: torch's current device when
        torch sees a GPU, else -1.
    graph: calls may be captured in CUDA graphs (default True on a GPU).
    max_bytes: largest all_reduce per rank, bytes (a larger call is an error).
    max_tokens, hidden: largest fused call, rows and row length (0, 0: no fused calls).
    fabric: the profile's fabric label (default: detected over MPI; required with a
        profile otherwise); fallback: the implementation where the profile has nothing
        (default: nccl on a GPU, mpi-host on the host, ops-host on the host without MPI).
    allgather, rank, size: a host allgather fn(bytes) -> bytes of `size` ranks instead of
        MPI or a group (see the module's doc).
    nccl_comm: an ncclComm_t (an int address) to bootstrap over instead.
    bootstrap (attribute): "mpi", "allgather", "nccl-comm", "torch-group-nccl-id" or
        "torch-group-allgather".
    """

    def __init__(self, profile=None, group=None, *, device=None, graph=None, max_bytes=64 << 20, max_tokens=0,
                 hidden=0, fabric=None, fallback=None, allgather=None, rank=None, size=None, nccl_comm=None):
        lib = _lib.load()
        torch = _torch()
        if device is None:
            device = torch.cuda.current_device() if torch is not None and torch.cuda.is_available() else -1
        if graph is None:
            graph = device >= 0
        cfg = _lib.Config()
        lib.arbench_config_init(ctypes.byref(cfg))
        keep = [s.encode() if s is not None else None for s in (str(profile) if profile is not None else None,
                                                                  fabric, fallback)]
        cfg.profile, cfg.fabric, cfg.fallback = keep
        cfg.cuda_device, cfg.graph = int(device), int(bool(graph))
        cfg.max_bytes, cfg.max_tokens, cfg.hidden = int(max_bytes), int(max_tokens), int(hidden)
        self._lib, self._h, self._gather = lib, None, None
        self._registered = {}
        handle, why = ctypes.c_void_p(), ctypes.create_string_buffer(1024)
        if sum(b is not None for b in (group, allgather, nccl_comm)) > 1:
            raise ArbenchError(_lib.ERR_INVALID, "Communicator: more than one of group, allgather and nccl_comm "
                               "given, expected one bootstrap")
        if nccl_comm is not None:
            _lib.need(lib, 10100, "an NCCL communicator bootstrap")
            _lib.check(lib.arbench_comm_create_nccl(ctypes.byref(cfg), ctypes.c_void_p(int(nccl_comm)),
                                                    ctypes.byref(handle), why, len(why)), why,
                       "arbench_comm_create_nccl")
            self.bootstrap = "nccl-comm"
        elif group is not None:
            self.bootstrap = self._create_from_group(torch, group, cfg, int(device), handle, why)
        elif allgather is not None:
            if rank is None or size is None:
                raise ArbenchError(_lib.ERR_INVALID, "Communicator(allgather=...): rank and size expected too")
            self._create_allgather(cfg, int(rank), int(size), allgather, handle, why)
            self.bootstrap = "allgather"
        else:
            _lib.check(lib.arbench_comm_create(ctypes.byref(cfg), ctypes.byref(handle), why, len(why)), why,
                       "arbench_comm_create")
            self.bootstrap = "mpi"
        self._h, self.device, self.graph = handle, int(device), bool(graph)
        self.rank, self.size = lib.arbench_comm_rank(handle), lib.arbench_comm_size(handle)
        self.hidden, self.max_tokens = int(hidden), int(max_tokens)
        self._op_id = None

    def _create_allgather(self, cfg, rank, size, fn, handle, why):
        """arbench_comm_create_allgather over fn(bytes) -> bytes (size x len, in rank order)."""
        _lib.need(self._lib, 10100, "an allgather bootstrap")
        errors = []

        def gather(ctx, send, recv, nbytes):
            try:
                out = fn(ctypes.string_at(send, nbytes) if nbytes else b"")
                if len(out) != nbytes * size:
                    raise ArbenchError(_lib.ERR_INVALID, "the allgather returned %d bytes, expected %d x %d"
                                       % (len(out), size, nbytes))
                ctypes.memmove(recv, out, len(out))
                return 0
            except Exception as e:  # noqa: BLE001 (a callback must not raise through C)
                errors.append(e)
                return -1
        self._gather = _lib.ALLGATHER_FN(gather)  # kept alive as long as the communicator
        st = self._lib.arbench_comm_create_allgather(ctypes.byref(cfg), rank, size, self._gather, None,
                                                     ctypes.byref(handle), why, len(why))
        if st != _lib.OK and errors:
            raise ArbenchError(st, "arbench_comm_create_allgather: %s (the allgather raised %r)"
                               % (why.value.decode(errors="replace"), errors[0]))
        _lib.check(st, why, "arbench_comm_create_allgather")

    def _create_from_group(self, torch, group, cfg, device, handle, why):
        if torch is None or not torch.distributed.is_initialized():
            raise ArbenchError(_lib.ERR_INVALID, "group given but torch.distributed is not initialized")
        dist = torch.distributed
        rank, size = dist.get_rank(group), dist.get_world_size(group)
        if device < 0:
            def gather(data):
                t = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
                parts = [torch.empty_like(t) for _ in range(size)]
                dist.all_gather(parts, t, group=group)
                return b"".join(bytes(p.numpy().tobytes()) for p in parts)
            self._create_allgather(cfg, rank, size, gather, handle, why)
            return "torch-group-allgather"
        _lib.need(self._lib, 10100, "a torch.distributed group bootstrap")
        uid = ctypes.create_string_buffer(_lib.NCCL_UNIQUE_ID_BYTES)
        box = [None]
        if rank == 0:
            _lib.check(self._lib.arbench_nccl_unique_id(uid, len(uid), why, len(why)), why, "arbench_nccl_unique_id")
            box[0] = uid.raw
        dist.broadcast_object_list(box, src=dist.get_global_rank(group, 0), group=group)
        uid = ctypes.create_string_buffer(box[0], _lib.NCCL_UNIQUE_ID_BYTES)
        _lib.check(self._lib.arbench_comm_create_nccl_id(ctypes.byref(cfg), rank, size, uid, len(uid),
                                                         ctypes.byref(handle), why, len(why)), why,
                   "arbench_comm_create_nccl_id")
        return "torch-group-nccl-id"

    def register(self, x):
        """arbench_register: all_reduce on x (or inside it) runs in place where the chosen
        implementation allows; a call past its end is an error. Keeps x alive until
        deregister or close. Returns x."""
        ptr, nbytes = self._address(x, "register(x)")
        why = ctypes.create_string_buffer(1024)
        _lib.check(self._lib.arbench_register(self._h, ptr, nbytes, why, len(why)), why, "arbench_register")
        self._registered[ptr] = x
        return x

    def deregister(self, x):
        ptr, _ = self._address(x, "deregister(x)")
        why = ctypes.create_string_buffer(1024)
        _lib.check(self._lib.arbench_deregister(self._h, ptr, why, len(why)), why, "arbench_deregister")
        self._registered.pop(ptr, None)

    @staticmethod
    def _address(x, what):
        if _is_tensor(x):
            if not x.is_contiguous():
                raise ArbenchError(_lib.ERR_INVALID, "%s: expected a contiguous tensor" % what)
            return x.data_ptr(), x.numel() * x.element_size()
        ptr, count, dt, _ = _host_view(x, True, what)
        return ptr, count * (4 if dt == _lib.FP32 else 2)

    def close(self):
        """Collective: frees the communicator (arbench_comm_destroy)."""
        if self._h:
            self._lib.arbench_comm_destroy(self._h)
            self._h = None
            self._registered.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def explain(self, op="allreduce", nbytes=0, graph=False):
        """(implementation or None, one line saying why) for a call of nbytes per rank."""
        note = ctypes.create_string_buffer(1024)
        code = _lib.OP_ALLREDUCE_RMSNORM if op == "allreduce_rmsnorm" else _lib.OP_ALLREDUCE
        impl = self._lib.arbench_explain(self._h, code, int(nbytes), int(bool(graph)), note, len(note))
        return (impl.decode() if impl else None), note.value.decode(errors="replace")

    # ---- raw calls on addresses (the torch ops and the host path both end here) ----

    def _raw_all_reduce(self, ptr, count, dtype, stream):
        why = ctypes.create_string_buffer(1024)
        _lib.check(self._lib.arbench_allreduce(self._h, ptr, count, dtype, stream, why, len(why)), why,
                   "arbench_allreduce")

    def _raw_rmsnorm(self, x, residual, weight, out, tokens, hidden, eps, stream):
        why = ctypes.create_string_buffer(1024)
        _lib.check(self._lib.arbench_allreduce_rmsnorm(self._h, x, residual, weight, out, tokens, hidden,
                                                       ctypes.c_float(eps), stream, why, len(why)), why,
                   "arbench_allreduce_rmsnorm")

    # ---- the API ----

    def all_reduce(self, x):
        """In place: x = sum over ranks of x. Returns x."""
        if _is_tensor(x):
            from . import _torch_ops
            _torch_ops.all_reduce(self, x)
            return x
        ptr, count, dt, keep = _host_view(x, True, "all_reduce(x)")
        self._raw_all_reduce(ptr, count, dt, None)
        del keep
        return x

    def all_reduce_rmsnorm(self, x, residual, weight, eps=1e-6, out=None):
        """residual += sum over ranks of x (in place); returns out = rmsnorm(residual) * weight.
        All bf16; x and residual [tokens, hidden], weight [hidden]."""
        if _is_tensor(x):
            from . import _torch_ops
            return _torch_ops.all_reduce_rmsnorm(self, x, residual, weight, float(eps))
        xp, n, xdt, kx = _host_view(x, False, "all_reduce_rmsnorm(x)")
        rp, nr, rdt, kr = _host_view(residual, True, "all_reduce_rmsnorm(residual)")
        wp, hidden, wdt, kw = _host_view(weight, False, "all_reduce_rmsnorm(weight)")
        if out is None:
            out = _empty_like(residual)
        op, no, odt, ko = _host_view(out, True, "all_reduce_rmsnorm(out)")
        if _lib.FP32 in (xdt, rdt, wdt, odt) or not (n == nr == no) or hidden == 0 or n % hidden:
            raise ArbenchError(_lib.ERR_INVALID, "all_reduce_rmsnorm: expected bf16 x, residual and out of one shape "
                               "[tokens, hidden] and weight [hidden] (got %d, %d, %d and %d elements)"
                               % (n, nr, no, hidden))
        self._raw_rmsnorm(xp, rp, wp, op, n // hidden, hidden, eps, None)
        del kx, kr, kw, ko
        return out


def _empty_like(buf):
    if hasattr(buf, "__array_interface__") and hasattr(buf, "copy"):
        return buf.copy()
    import array
    return array.array("H", bytes(memoryview(buf).nbytes))
