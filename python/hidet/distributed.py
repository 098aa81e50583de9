"""Several GPUs: hidet's communicators and collectives (docs/distributed.md).

    import hidet, hidet.distributed as hd
    hd.use_local_gpu()                      # under torchrun, before CUDA starts: one GPU per process
    torch.distributed.init_process_group('nccl')
    comm = hd.communicator()                # hidet's communicator of torch's default process group
    y = hidet.ops.all_reduce(x, comm)       # an operator (a graph node on symbolic tensors)
    part, report = hd.shard_tensor_parallel(graph, comm)   # this rank's part of a traced model

On a GPU a communicator is NCCL's, made from a unique id that rank 0 of the process group draws and
broadcasts through it; NCCL then moves the data on hidet's streams. On the emulator (no GPU, or
HIDET_EMULATE=1) each collective is handed to torch.distributed on host memory (the gloo backend
serves the CPU), so the same program runs on CPUs under torchrun. ``torch.compile(model,
backend='hidet')`` maps torch's functional collectives to hidet's with :func:`communicator`
(hidet/torch/collectives.py).
"""
import ctypes
import os

from . import _C
from ._C.distributed import Communicator, DistributedError, emulated_device_count, nccl_version, \
    set_emulated_device_count

__all__ = ['Communicator', 'DistributedError', 'get_unique_id', 'communicator', 'release_communicators',
           'shard_tensor_parallel', 'use_local_gpu', 'set_emulated_device_count', 'emulated_device_count', 'nccl_version']

_communicators = {}  # by process group name


def get_unique_id():
    """A new communicator id (256 hexadecimal digits) to hand to every rank."""
    _point_at_nccl_wheel()
    return _C.distributed.get_unique_id()


def use_local_gpu():
    """Makes this process see only its own GPU, ``LOCAL_RANK`` (set by torchrun), as cuda:0: hidet
    runs one GPU per process. Call it before anything starts CUDA (torch.cuda, hidet's tensors);
    a no-op without LOCAL_RANK. Returns the physical GPU index, or None."""
    local = os.environ.get('LOCAL_RANK')
    if local is None:
        return None
    visible = os.environ.get('CUDA_VISIBLE_DEVICES')
    if visible:
        gpus = [g for g in visible.split(',') if g.strip()]
        if len(gpus) == 1:
            return gpus[0]  # already one GPU
        os.environ['CUDA_VISIBLE_DEVICES'] = gpus[int(local)]
    else:
        os.environ['CUDA_VISIBLE_DEVICES'] = local
    return os.environ['CUDA_VISIBLE_DEVICES']


def communicator(group=None, timeout=None, check=None):
    """hidet's communicator for a torch.distributed process group (default: the world), made once
    per group. ``group``: a ProcessGroup or its name (as torch's functional collectives give it).
    On a GPU: NCCL, from an id rank 0 broadcasts through the group (every rank of the group must
    call this, as for any collective). On the emulator: collectives on host memory through
    torch.distributed. ``timeout`` (seconds) and ``check``: CommunicatorOptions."""
    import torch.distributed as dist
    pg = _process_group(group)
    key = pg.group_name
    comm = _communicators.get(key)
    if comm is not None:
        return comm
    rank, world = pg.rank(), pg.size()
    if _C.cuda_emulated():
        comm = Communicator.from_host_function(rank, world, 'cuda', lambda call: _host_collective(pg, call),
                                               timeout)
    else:
        ids = [get_unique_id() if rank == 0 else None]
        dist.broadcast_object_list(ids, src=dist.get_global_rank(pg, 0), group=pg)
        comm = Communicator(ids[0], rank, world, 'cuda:0', timeout, check)
    _communicators[key] = comm
    return comm


def release_communicators():
    """Drops hidet's communicators of torch's process groups (the ones :func:`communicator` made),
    with what they hold (on the emulator, the group itself). Call it before
    ``torch.distributed.destroy_process_group()``, so that the groups end there and not while the
    interpreter shuts down; graphs compiled with them keep theirs."""
    import gc
    _communicators.clear()
    gc.collect()


def shard_tensor_parallel(graph, comm):
    """This rank's part of ``graph`` (Megatron-style tensor parallelism; graph/tensor_parallel.hpp):
    returns (the graph, a dict saying how many products were cut by columns and by rows, ...)."""
    return _C.shard_tensor_parallel(graph, comm)


def _process_group(group):
    import torch.distributed as dist
    if group is None:
        return dist.group.WORLD
    if isinstance(group, str):
        from torch.distributed.distributed_c10d import _resolve_process_group
        return _resolve_process_group(group)
    return group


def _point_at_nccl_wheel():
    """Tells hidet's loader (runtime/nccl.hpp) where this Python's NCCL wheel is."""
    if 'HIDET_NCCL_LIBRARY' in os.environ or 'HIDET_NCCL_SEARCH_PATH' in os.environ:
        return
    import site
    import sys
    dirs = [p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))]
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # virtualenv's old site module
        pass
    os.environ['HIDET_NCCL_SEARCH_PATH'] = ':'.join(dict.fromkeys(dirs))


_torch_dtypes = None


def _host_view(address, count, dtype):
    """A torch tensor of ``count`` elements viewing host memory at ``address`` (no copy)."""
    import torch
    global _torch_dtypes
    if _torch_dtypes is None:
        _torch_dtypes = {name: getattr(torch, name) for name in (
            'bool', 'int8', 'int16', 'int32', 'int64', 'uint8', 'float16', 'bfloat16', 'float32', 'float64')}
    dt = _torch_dtypes.get(dtype)
    if dt is None:
        raise ValueError(f'hidet.distributed: no torch dtype for {dtype}')
    nbytes = count * torch.empty((), dtype=dt).element_size()
    buffer = (ctypes.c_char * nbytes).from_address(address)
    return torch.frombuffer(buffer, dtype=dt, count=count)


def _host_collective(pg, call):
    """Carries out one of hidet's collectives (HostCollective) with torch.distributed on host memory."""
    import torch
    import torch.distributed as dist
    world = pg.size()
    inp = _host_view(call.input, call.input_count, call.dtype) if call.input_count else None
    out = _host_view(call.output, call.output_count, call.dtype) if call.output_count else None
    ops = {'sum': dist.ReduceOp.SUM, 'avg': dist.ReduceOp.SUM, 'prod': dist.ReduceOp.PRODUCT,
           'max': dist.ReduceOp.MAX, 'min': dist.ReduceOp.MIN}

    def reduce(t):
        dist.all_reduce(t, op=ops[call.op], group=pg)
        if call.op == 'avg':
            if t.is_floating_point():
                t.div_(world)
            else:
                t.copy_(torch.div(t, world, rounding_mode='trunc'))
        return t

    kind = call.kind
    if kind == 'all_reduce':
        if out is not None:
            out.copy_(inp)
            reduce(out)
    elif kind == 'all_gather':
        dist.all_gather(list(out.chunk(world)) if out is not None else [], inp, group=pg)
    elif kind == 'reduce_scatter':  # gloo has no reduce_scatter: the whole reduction, then this rank's part
        whole = reduce(inp.clone())
        out.copy_(whole.chunk(world)[pg.rank()])
    elif kind == 'broadcast':
        if inp is not None and pg.rank() == call.root:
            out.copy_(inp)
        dist.broadcast(out, src=dist.get_global_rank(pg, call.root), group=pg)
    elif kind == 'send':
        dist.send(inp, dst=dist.get_global_rank(pg, call.root), group=pg)
    elif kind == 'recv':
        dist.recv(out, src=dist.get_global_rank(pg, call.root), group=pg)
    else:
        raise ValueError(f'hidet.distributed: unknown collective {kind}')
