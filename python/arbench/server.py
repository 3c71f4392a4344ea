# SPDX-License-Identifier: MIT
"""Routing a server's tensor-parallel all-reduce to an arbench Communicator.

vLLM and SGLang funnel every all-reduce of a process group, the eager call and the
torch.compile custom op alike, through GroupCoordinator._all_reduce_out_place(input_)
(out of place: it returns the sum). route_method replaces that method, for the one group
that matches, with a clone + Communicator.all_reduce; every other group, and any call
with more arguments, keeps the original.

    import arbench, arbench.server
    from vllm.distributed import parallel_state  # SGLang: sglang.srt.distributed
    tp = parallel_state.get_tp_group()           # after the server set up its TP group
    comm = arbench.Communicator(os.environ.get("ARBENCH_PROFILE"), group=tp.device_group, max_bytes=..., ...)
    undo = arbench.server.route_vllm(comm)
"""
from . import _lib


def _clone(x):
    if hasattr(x, "clone"):
        return x.clone()
    if hasattr(x, "copy"):
        return x.copy()
    import copy
    return copy.copy(x)


def route_method(cls, name, comm, applies):
    """cls.name(self, input_) -> sum is served by comm where applies(self). Returns undo()."""
    orig = getattr(cls, name)

    def routed(self, input_, *args, **kwargs):
        if args or kwargs or not applies(self):
            return orig(self, input_, *args, **kwargs)
        out = _clone(input_)
        comm.all_reduce(out)
        return out

    routed.__wrapped__ = orig
    setattr(cls, name, routed)
    return lambda: setattr(cls, name, orig)


def _route_tp(parallel_state, comm):
    tp = parallel_state.get_tp_group()
    if tp.world_size != comm.size or tp.rank_in_group != comm.rank:
        raise _lib.ArbenchError(_lib.ERR_INVALID, "the tensor-parallel group is rank %d of %d, the communicator rank %d of "
                                "%d: create the communicator from that group (arbench.Communicator(profile, group=tp.device_group)), "
                                "or launch the server so that its TP group is the MPI world"
                                % (tp.rank_in_group, tp.world_size, comm.rank, comm.size))
    return route_method(parallel_state.GroupCoordinator, "_all_reduce_out_place", comm, lambda g: g is tp)


def route_vllm(comm):
    """vLLM (vllm.distributed.parallel_state): the TP group's all-reduce to comm. Returns undo()."""
    from vllm.distributed import parallel_state
    return _route_tp(parallel_state, comm)


def route_sglang(comm):
    """SGLang (sglang.srt.distributed.parallel_state): the TP group's all-reduce to comm. Returns undo()."""
    from sglang.srt.distributed import parallel_state
    return _route_tp(parallel_state, comm)
