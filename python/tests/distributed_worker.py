"""One rank of test_distributed.py's runs under torchrun (gloo on the CPU, hidet on its emulator):
torch's functional collectives and a DTensor-parallelized MLP compiled with backend='hidet'
against eager PyTorch, and hidet's own communicator, collectives and tensor-parallel pass. Prints
'ok <check>' per check; any failure raises (a non-zero exit)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fc

import hidet
import hidet.distributed as hd
import hidet.torch  # noqa: F401  (the backend and the collective mappings)


def check_close(got, want, what, tol=1e-5):
    if got.shape != want.shape or not torch.allclose(got, want, rtol=tol, atol=tol):
        raise AssertionError(f'{what}: rank {dist.get_rank()}: got {got}, want {want}')
    if not want.abs().sum() > 0:
        raise AssertionError(f'{what}: an all-zero reference')
    print(f'ok {what}', flush=True)


def functional_collectives():
    world = dist.get_world_size()

    # all_gather_single and reduce_scatter_single in newer torch, *_tensor before (same arguments)
    gather = getattr(fc, 'all_gather_single', None) or fc.all_gather_tensor
    scatter = getattr(fc, 'reduce_scatter_single', None) or fc.reduce_scatter_tensor

    def f(x):
        y = fc.all_reduce(x * 2, 'sum', dist.group.WORLD)
        g = gather(y, 0, dist.group.WORLD)
        s = scatter(g + 1, 'sum', 0, dist.group.WORLD)
        m = fc.all_reduce(x, 'max', dist.group.WORLD)
        return torch.relu(s) + m.sum(0)

    torch.manual_seed(dist.get_rank())
    x = torch.randn(3 * world, 5)
    compiled = torch.compile(f, backend='hidet')
    check_close(compiled(x), f(x), 'functional collectives')


def dtensor_mlp():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = torch.nn.Linear(16, 32)
            self.down = torch.nn.Linear(32, 16)

        def forward(self, x):
            return self.down(torch.nn.functional.silu(self.up(x)))

    torch.manual_seed(0)  # the same weights on every rank before they are sharded
    model = Mlp()
    mesh = init_device_mesh('cpu', (dist.get_world_size(),))
    parallelize_module(model, mesh, {'up': ColwiseParallel(), 'down': RowwiseParallel()})
    x = torch.randn(2, 5, 16)
    from hidet.torch import backend
    before = len(backend.LOCAL_DTENSOR_GRAPHS)
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend='hidet')(x)
    check_close(got, want, 'DTensor MLP (ColwiseParallel, RowwiseParallel)', tol=1e-4)
    # compiled on the parameters' local shards (no flattening of DTensors per call), which are the
    # graph's constants: the two weights and two biases
    assert backend.LOCAL_DTENSOR_GRAPHS[before:] == [4], backend.LOCAL_DTENSOR_GRAPHS


def dtensor_cache():
    """DTensor parameters and a plain cache updated in place (index_copy_) by the compiled graph,
    over two calls: the cache holds both calls' rows, as eager's does."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

    class Writer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.k = torch.nn.Linear(16, 8 * dist.get_world_size(), bias=False)

        def forward(self, x, pos, cache):
            k = self.k(x)  # [b, 1, 8] on each rank: its columns
            cache.index_copy_(1, pos, k)
            return cache.sum(1) * 2

    torch.manual_seed(3)
    model = Writer()
    mesh = init_device_mesh('cpu', (dist.get_world_size(),))
    parallelize_module(model, mesh, {'k': ColwiseParallel()})
    compiled = torch.compile(model, backend='hidet')
    want_cache, got_cache = torch.zeros(2, 5, 8), torch.zeros(2, 5, 8)
    with torch.no_grad():
        for step in (0, 3):
            x, pos = torch.randn(2, 1, 16), torch.tensor([step])
            want = model(x, pos, want_cache)
            got = compiled(x, pos, got_cache)
            check_close(got, want, f'DTensor parameters, a cache written in place (call at {step})', tol=1e-4)
    check_close(got_cache, want_cache, 'the cache after both calls', tol=1e-4)


def hidet_collectives_and_sharding():
    comm = hd.communicator()
    r, world = comm.rank, comm.world_size
    x = hidet.asarray([float(r + 1)] * 4, [4])
    check_close(hidet.ops.all_reduce(x, comm).torch(), torch.full((4,), float(world * (world + 1) // 2)),
                'hidet.ops.all_reduce')
    torch.manual_seed(1)
    w1, w2 = torch.randn(8, 12), torch.randn(12, 8)
    xs = torch.randn(3, 8)
    s = hidet.symbol([3, 8], 'float32')
    whole = hidet.trace_from(hidet.ops.matmul(hidet.ops.relu(hidet.ops.matmul(s, hidet.from_torch(w1))),
                                              hidet.from_torch(w2)))
    mine, report = hd.shard_tensor_parallel(whole, comm)
    assert report['column_parallel'] == 1 and report['row_parallel'] == 1, report
    compiled = hidet.graph.compile(hidet.graph.optimize(mine))
    check_close(compiled.run([hidet.from_torch(xs)])[0].torch(), torch.relu(xs @ w1) @ w2,
                'shard_tensor_parallel from Python', tol=1e-4)


if __name__ == '__main__':
    dist.init_process_group('gloo')
    checks = sys.argv[1:] or ['functional_collectives', 'dtensor_mlp', 'dtensor_cache', 'hidet_collectives_and_sharding']
    for name in checks:
        globals()[name]()
    torch._dynamo.reset()  # the compiled graphs, which hold communicators too
    hd.release_communicators()
    dist.destroy_process_group()
