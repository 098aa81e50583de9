"""Graphs from Python: tracing, printing, optimize, compiled graphs, CUDA graphs, the report."""
import torch

import hidet
from conftest import assert_close


def test_quick_start_flow():
    a, b, c = hidet.randn([2, 3]), hidet.randn([3, 2]), hidet.randn([2])
    x = hidet.symbol_like(a)
    y = hidet.ops.matmul(x, b) + c
    assert y.is_symbolic and y.op == 'Add'
    graph = hidet.trace_from(y)
    assert str(graph).startswith('Graph(x: float32[2, 3][cuda]){')
    assert graph.node_names() == ['Matmul', 'Add']
    opt = hidet.graph.optimize(graph)
    assert opt.node_names() == ['FusedMatmul']
    want = hidet.ops.matmul(a, b) + c
    assert_close(opt(a).torch(), want.torch())
    compiled = hidet.graph.compile(opt)
    assert_close(compiled(a).torch(), want.torch())
    cg = opt.cuda_graph()
    assert_close(cg.run([a])[0].torch(), want.torch())


def test_symbolic_names_and_pass_context():
    x = hidet.symbol(['n', 8], name='tokens')
    assert x.shape == ('n', 8)
    w = hidet.randn([8, 8])
    a = hidet.randn([4, 8])
    xa = hidet.symbol_like(a)
    g = hidet.trace_from(hidet.ops.gelu(hidet.ops.matmul(xa, w)))
    with hidet.graph.PassContext() as ctx:
        ctx.set_precision('float16')
        opt = hidet.graph.optimize(g)
    assert 'Cast' in str(opt)
    table, err = hidet.graph.correctness_report(g, opt, [a])
    assert 'Matmul' in table and 0 < err < 1e-2


def test_operators_trace_named_symbols():
    w = hidet.randn([8, 5])
    x = hidet.symbol(['n', 8], name='tokens')
    y = hidet.ops.gelu(hidet.ops.matmul(x, w))
    assert y.shape == ('n', 5)
    g = hidet.trace_from(y)
    assert g.has_symbolic_extents
    assert 'float32[n, 5][cuda] = Matmul(tokens, c)' in str(g)
    opt = hidet.graph.optimize(g)
    assert 'ShapeDispatch(tokens' in str(opt)
    for n in (3, 6):
        a = hidet.randn([n, 8])
        want = hidet.ops.gelu(hidet.ops.matmul(a, w)).torch()
        assert_close(g(a).torch(), want)
        assert_close(opt(a).torch(), want)
    g4 = g.specialize({'n': 4})
    assert not g4.has_symbolic_extents
    assert g4.inputs[0].shape == (4, 8)


def test_shape_generic_optimize():
    w, b = hidet.randn([8, 5]), hidet.randn([5])
    x = hidet.symbol(['n', 8], name='tokens')
    g = hidet.trace_from(hidet.ops.softmax(hidet.ops.gelu(hidet.ops.matmul(x, w) + b), -1))
    with hidet.graph.PassContext() as ctx:
        ctx.set_shape_generic(True)
        opt = hidet.graph.optimize(g)
    assert 'ShapeDispatch(tokens' in str(opt)
    for n in (2, 7, 2):
        a = hidet.randn([n, 8])
        want = hidet.ops.softmax(hidet.ops.gelu(hidet.ops.matmul(a, w) + b), -1).torch()
        assert_close(opt(a).torch(), want)


def test_compile_errors_name_the_input():
    a = hidet.randn([4, 6])
    compiled = hidet.graph.compile(hidet.trace_from(hidet.ops.exp(hidet.symbol_like(a))))
    try:
        compiled(hidet.randn([4, 5]))
        raise AssertionError('expected a ValueError')
    except ValueError as e:
        assert 'dim 1 must be 6' in str(e)
    assert_close(compiled(a).torch(), torch.exp(a.torch()))


def test_save_and_load_a_compiled_graph(tmp_path):
    a, w = hidet.randn([5, 8]), hidet.randn([8, 3])
    x = hidet.symbol_like(a)
    compiled = hidet.graph.compile(hidet.graph.optimize(hidet.trace_from(hidet.ops.relu(hidet.ops.matmul(x, w)))))
    path = tmp_path / 'graph.hidet'
    compiled.save(str(path))
    loaded = hidet.graph.load_compiled(path)
    assert loaded.graph.node_names() == ['SavedGraph']
    b = hidet.randn([5, 8])
    assert_close(loaded(b).torch(), torch.relu(b.torch() @ w.torch()))
    (tmp_path / 'bad.hidet').write_bytes(path.read_bytes()[:100])
    try:
        hidet.graph.load_compiled(tmp_path / 'bad.hidet')
        raise AssertionError('expected a ValueError')
    except ValueError as e:
        assert 'truncated or corrupt' in str(e)


def test_pass_context_kernel_options():
    a, w = hidet.randn([6, 64], dtype='float16'), hidet.randn([64, 8], dtype='float16')
    g = hidet.trace_from(hidet.ops.matmul(hidet.symbol_like(a), w))
    with hidet.graph.PassContext() as ctx:
        ctx.set_use_tensor_core(False).set_parallel_k(nparts=2)
        opt = hidet.graph.optimize(g)
    assert 'tensor_cores=false, parallel_k=2' in str(opt)
    assert_close(opt(a).torch().float(), (a.torch().float() @ w.torch().float()), atol=2e-2, rtol=2e-2)
    try:
        hidet.graph.PassContext().set_parallel_k(disabled=True, nparts=2)
        raise AssertionError('expected a ValueError')
    except ValueError as e:
        assert 'one of' in str(e)


def test_graph_updates_an_input_in_place():
    """trace_from(..., updates=[(cache, value)]): the graph writes the new value into the caller's
    tensor; compiled, the index_put stores into the cache where it lives; a CUDA graph given the
    cache as its buffer replays on it (on the emulator, the same run without a capture)."""
    dev = 'cpu' if hidet.cuda_emulated() else 'cuda'  # the graph's device (CPU tensors serve the emulator)
    cache0 = torch.randn(9, 4, device=dev)
    cache, pos, k = hidet.symbol([9, 4], name='cache'), hidet.symbol([2], 'int64', name='pos'), hidet.symbol([2, 4])
    y = hidet.ops.index_put(cache, [pos], k, False)
    graph = hidet.trace_from([hidet.ops.sum(y, [1])], [cache, pos, k], [(cache, y)])
    assert '  cache <- x_1\n' in str(graph) and len(graph.updates) == 1
    compiled = hidet.graph.compile(hidet.graph.optimize(graph))
    assert compiled.updates_in_place == 1 and compiled.updates_copied == 0
    c, want = cache0.clone(), cache0.clone()
    replay = hidet.CudaGraph(compiled, [hidet.from_torch(c), None, None])
    for step, run in enumerate([graph.run, compiled.run, lambda xs: replay.run(xs)]):
        p, v = torch.tensor([step, 8 - step], device=dev), torch.randn(2, 4, device=dev)
        total = run([hidet.from_torch(c), hidet.from_torch(p), hidet.from_torch(v)])[0]
        want[p] = v
        assert_close(c, want)
        assert_close(total.torch(), want.sum(1))
