# SPDX-License-Identifier: MIT
"""PyTorch tensors: the calls as torch.library custom ops (torch.ops.arbench.all_reduce,
torch.ops.arbench.all_reduce_rmsnorm) on the current CUDA stream, so that torch.compile
traces them and torch.cuda.graph captures them. A communicator is passed to the ops by a
small integer id (ops take tensors and scalars only)."""
import torch

from . import _lib

_comms = {}


def _comm_id(comm):
    if comm._op_id is None:
        comm._op_id = len(_comms) + 1
        _comms[comm._op_id] = comm
    return comm._op_id


def _dtype(t, what):
    if t.dtype == torch.bfloat16:
        return _lib.BF16
    if t.dtype == torch.float32:
        return _lib.FP32
    raise _lib.ArbenchError(_lib.ERR_INVALID, "%s: dtype %s, expected torch.bfloat16 or torch.float32" % (what, t.dtype))


def _check(comm, t, what):
    if not t.is_contiguous():
        raise _lib.ArbenchError(_lib.ERR_INVALID, "%s: expected a contiguous tensor" % what)
    if comm.device >= 0 and (not t.is_cuda or t.device.index != comm.device):
        raise _lib.ArbenchError(_lib.ERR_INVALID, "%s: a tensor on %s, expected cuda:%d (the communicator's device)"
                                % (what, t.device, comm.device))
    if comm.device < 0 and t.is_cuda:
        raise _lib.ArbenchError(_lib.ERR_INVALID, "%s: a CUDA tensor on a host-memory communicator (device -1)" % what)


def _stream(comm):
    return torch.cuda.current_stream().cuda_stream if comm.device >= 0 else None


def _all_reduce_impl(x, comm_id):
    comm = _comms[comm_id]
    _check(comm, x, "all_reduce(x)")
    comm._raw_all_reduce(x.data_ptr(), x.numel(), _dtype(x, "all_reduce(x)"), _stream(comm))


def _rmsnorm_impl(x, residual, weight, eps, comm_id):
    comm = _comms[comm_id]
    for t, what in ((x, "x"), (residual, "residual"), (weight, "weight")):
        _check(comm, t, "all_reduce_rmsnorm(%s)" % what)
        if t.dtype != torch.bfloat16:
            raise _lib.ArbenchError(_lib.ERR_INVALID, "all_reduce_rmsnorm(%s): dtype %s, expected torch.bfloat16"
                                    % (what, t.dtype))
    hidden = weight.numel()
    if x.shape != residual.shape or hidden == 0 or x.numel() % hidden:
        raise _lib.ArbenchError(_lib.ERR_INVALID, "all_reduce_rmsnorm: x %s and residual %s of one shape [tokens, %d]"
                                " expected" % (tuple(x.shape), tuple(residual.shape), hidden))
    out = torch.empty_like(residual)
    comm._raw_rmsnorm(x.data_ptr(), residual.data_ptr(), weight.data_ptr(), out.data_ptr(), x.numel() // hidden,
                      hidden, eps, _stream(comm))
    return out


if hasattr(torch.library, "custom_op"):  # torch >= 2.4
    @torch.library.custom_op("arbench::all_reduce", mutates_args=("x",))
    def _all_reduce_op(x: torch.Tensor, comm_id: int) -> None:
        _all_reduce_impl(x, comm_id)

    @_all_reduce_op.register_fake
    def _(x, comm_id):
        return None

    @torch.library.custom_op("arbench::all_reduce_rmsnorm", mutates_args=("residual",))
    def _rmsnorm_op(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                    comm_id: int) -> torch.Tensor:
        return _rmsnorm_impl(x, residual, weight, eps, comm_id)

    @_rmsnorm_op.register_fake
    def _(x, residual, weight, eps, comm_id):
        return torch.empty_like(residual)

    HAVE_CUSTOM_OPS = True
else:
    _all_reduce_op, _rmsnorm_op, HAVE_CUSTOM_OPS = _all_reduce_impl, _rmsnorm_impl, False


def all_reduce(comm, x):
    _all_reduce_op(x, _comm_id(comm))


def all_reduce_rmsnorm(comm, x, residual, weight, eps):
    return _rmsnorm_op(x, residual, weight, eps, _comm_id(comm))
