"""torch.distributed's functional collectives as hidet's (ops/collective.hpp).

Dynamo records collectives as ``torch.ops._c10d_functional`` operators (a model's
``torch.distributed._functional_collectives`` calls, ``dist.all_reduce`` rewritten by dynamo, and
DTensor's redistributions once aot_autograd has desugared them): each returns a tensor that
``wait_tensor`` waits for. hidet's collectives are stream-ordered like its kernels, so ``wait_tensor``
is the identity. The group is resolved by name to its process group, and hidet's communicator of
that group (hidet.distributed.communicator) carries the collective: NCCL on a GPU, torch.distributed
on host memory on the emulator.
"""
import torch

import hidet
from .registry import register_aten

__all__ = []

_c10d = torch.ops._c10d_functional


def _communicator(group_name, group_size=None):
    from hidet.distributed import communicator
    comm = communicator(group_name)
    if group_size is not None and group_size != comm.world_size:
        raise ValueError(f'_c10d_functional: group_size={group_size} but the process group {group_name!r} has '
                         f'{comm.world_size} ranks')
    return comm


def _reduce_op(reduce_op):
    op = str(reduce_op).lower()
    if op not in ('sum', 'avg', 'max', 'min', 'product', 'prod'):
        raise ValueError(f"_c10d_functional: reduce_op={reduce_op!r} is not supported by hidet's collectives; "
                         "use 'sum', 'avg', 'max', 'min' or 'product'")
    return op


@register_aten(_c10d.all_reduce.default, str(_c10d.all_reduce))
def c10d_all_reduce(input, reduce_op, group_name):
    return hidet.ops.all_reduce(input, _communicator(group_name), _reduce_op(reduce_op))


@register_aten(_c10d.all_gather_into_tensor.default, str(_c10d.all_gather_into_tensor))
def c10d_all_gather_into_tensor(input, group_size, group_name):
    return hidet.ops.all_gather(input, _communicator(group_name, group_size), 0)


@register_aten(_c10d.reduce_scatter_tensor.default, str(_c10d.reduce_scatter_tensor))
def c10d_reduce_scatter_tensor(input, reduce_op, group_size, group_name):
    return hidet.ops.reduce_scatter(input, _communicator(group_name, group_size), _reduce_op(reduce_op), 0)


@register_aten(_c10d.wait_tensor.default, str(_c10d.wait_tensor))
def c10d_wait_tensor(tensor):
    return tensor
