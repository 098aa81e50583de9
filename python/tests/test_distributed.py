"""hidet.distributed: communicators, collectives and the tensor-parallel pass from Python on the
emulator; and, under torchrun with two processes (gloo on the CPU), torch's functional
collectives and a DTensor-parallelized MLP compiled with backend='hidet' against eager PyTorch
(distributed_worker.py)."""
import os
import socket
import subprocess
import sys

import pytest

import hidet
import hidet.distributed as hd


@pytest.fixture(autouse=True)
def emulated():
    if not hidet.cuda_emulated():
        pytest.skip('the emulator tests run without a GPU (the GPU runs benchmarks/bench_distributed.py)')


def test_a_world_of_one():
    comm = hd.Communicator(hd.get_unique_id(), 0, 1, 'cuda')
    assert 'emulator' in repr(comm) and comm.world_size == 1 and comm.rank == 0
    x = hidet.asarray([1.0, -2.0, 3.5], [3])
    assert hidet.ops.all_reduce(x, comm, 'avg').torch().tolist() == [1.0, -2.0, 3.5]
    assert hidet.ops.all_gather(x, comm).torch().tolist() == [1.0, -2.0, 3.5]
    graph = hidet.trace_from(hidet.ops.all_reduce(hidet.symbol([2, 3]) * 2.0, comm))
    assert 'AllReduce(x_1, op=sum, rank=0, world_size=1)' in str(graph)
    part, report = hd.shard_tensor_parallel(graph, comm)
    assert str(part) == str(graph) and report['column_parallel'] == 0
    assert comm.collectives_issued == 2


def test_errors_name_what_is_wrong():
    comm = hd.Communicator(hd.get_unique_id(), 0, 1, 'cuda')
    x = hidet.asarray([1.0, 2.0], [2])
    with pytest.raises(ValueError, match="unknown reduction 'bxor'"):
        hidet.ops.all_reduce(x, comm, 'bxor')
    with pytest.raises(ValueError, match='multiple of the world size 2'):
        hidet.ops.reduce_scatter(hidet.asarray([1.0, 2.0, 3.0], [3]), _pair()[0])
    with pytest.raises(hd.DistributedError, match=r'rank\(s\) 0 did not join within 0.2 s'):
        hd.Communicator(hd.get_unique_id(), 1, 2, 'cuda', timeout=0.2)
    with pytest.raises(ValueError, match='256 hexadecimal digits'):
        hd.Communicator('abc', 0, 1, 'cuda')
    assert issubclass(hd.DistributedError, hidet.HidetError)


_pair_cache = []


def _pair():
    """A two-rank communicator whose collectives a Python function carries out (rank 0 of a world
    of two, the other rank pretended)."""
    if not _pair_cache:
        calls = []

        def fn(call):
            calls.append((call.kind, call.dtype, call.input_count, call.output_count))
            # pretend the other rank holds the same values
            import ctypes
            src = (ctypes.c_float * call.input_count).from_address(call.input)
            dst = (ctypes.c_float * call.output_count).from_address(call.output)
            for i in range(call.output_count):
                dst[i] = 2 * src[i] if call.kind == 'all_reduce' else src[i % call.input_count]
        _pair_cache.append(hd.Communicator.from_host_function(0, 2, 'cuda', fn))
        _pair_cache.append(calls)
    return _pair_cache


def test_a_host_function_carries_the_collectives():
    comm, calls = _pair()
    x = hidet.asarray([1.0, 2.0, 3.0], [3])
    assert hidet.ops.all_reduce(x, comm).torch().tolist() == [2.0, 4.0, 6.0]
    assert hidet.ops.all_gather(x, comm).torch().tolist() == [1.0, 2.0, 3.0] * 2
    assert calls[-2:] == [('all_reduce', 'float32', 3, 3), ('all_gather', 'float32', 3, 6)]


def test_use_local_gpu(monkeypatch):
    monkeypatch.delenv('LOCAL_RANK', raising=False)
    assert hd.use_local_gpu() is None
    monkeypatch.setenv('LOCAL_RANK', '1')
    monkeypatch.setenv('CUDA_VISIBLE_DEVICES', '4,5,6')
    assert hd.use_local_gpu() == '5' and os.environ['CUDA_VISIBLE_DEVICES'] == '5'
    monkeypatch.delenv('CUDA_VISIBLE_DEVICES')
    assert hd.use_local_gpu() == '1'


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_torchrun_two_processes():
    torch = pytest.importorskip('torch')
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip('torch.distributed with gloo is not available')
    worker = os.path.join(os.path.dirname(__file__), 'distributed_worker.py')
    env = dict(os.environ, HIDET_EMULATE='1', OMP_NUM_THREADS='1')
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--nproc-per-node', '2', '--master-addr', '127.0.0.1',
           '--master-port', str(_free_port()), worker]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    for check in ('functional collectives', 'DTensor MLP (ColwiseParallel, RowwiseParallel)',
                  'DTensor parameters, a cache written in place (call at 0)',
                  'DTensor parameters, a cache written in place (call at 3)', 'the cache after both calls',
                  'hidet.ops.all_reduce', 'shard_tensor_parallel from Python'):
        assert out.count(f'ok {check}') == 2, out[-6000:]


def test_bench_distributed_tiny(tmp_path):
    """benchmarks/bench_distributed.py's flow on the emulator (TP = 2, one layer, decode batch 1),
    run as a user runs it (no torchrun given: it starts one per TP size, then reports): the DTensor
    model under eager PyTorch and hidet, and the report's logits check, also from the saved file."""
    torch = pytest.importorskip('torch')
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip('torch.distributed with gloo is not available')
    bench = os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks', 'bench_distributed.py')
    out = str(tmp_path / 'tp.json')
    env = dict(os.environ, HIDET_EMULATE='1', OMP_NUM_THREADS='1', HIDET_TP_BACKENDS='eager,hidet',
               HIDET_TP_ROWS='decode1', HIDET_TP_LAYERS='1', HIDET_TP_STEPS='1')
    r = subprocess.run([sys.executable, bench, '--out', out, '--sizes', '2'], env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    assert '== TP=2:' in r.stdout, r.stdout[-6000:]
    rep = subprocess.run([sys.executable, bench, '--report', out], capture_output=True, text=True, timeout=60)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert 'TP=2 hidet     vs eager same TP     : ' in rep.stdout and 'FAILED' not in rep.stdout, rep.stdout
    assert 'decode batch 1           hidet' in rep.stdout, rep.stdout
