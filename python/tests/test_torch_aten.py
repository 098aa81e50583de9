"""The second level of the front end: core ATen.

* Coverage by construction: every overload torch itself tags as core ATen is mapped by hidet or
  refused with a reason (aten.REFUSED); a torch release that adds one fails here until it is one
  or the other.
* Each mapping against PyTorch on sample inputs: the operator traced into its core-ATen graph
  (decompose.py) and run by the interpreter on hidet tensors. On the CPU emulator (CI) a
  fixed subset of the samples runs (every kernel is compiled and interpreted there); on a GPU all
  of them.
* Torch-level operators without a mapping of their own compile through core ATen.
"""
import math

import pytest
import torch

import hidet
import hidet.torch
from hidet.torch import aten as hidet_aten
from hidet.torch.decompose import decompose
from hidet.torch.interpreter import Interpreter

from conftest import assert_close

aten = torch.ops.aten
DEVICE = 'cpu' if hidet.cuda_emulated() else 'cuda'


def test_every_core_aten_operator_is_mapped_or_refused():
    core = hidet_aten.core_aten_operators()
    assert len(core) > 150, 'torch.Tag.core lists fewer operators than expected: the query broke'
    missing = hidet_aten.unmapped_core_operators()
    assert not missing, ('core ATen operators neither mapped (hidet/torch/aten.py) nor refused (aten.REFUSED): ' +
                         ', '.join(str(op) for op in missing))


def _r(*shape, lo=-2.0, hi=2.0, dtype=torch.float32):
    return (torch.rand(*shape) * (hi - lo) + lo).to(dtype)


def _i(*shape, hi=5):
    return torch.randint(0, hi, shape, dtype=torch.int64)


# (id, the ATen call on torch tensors, its arguments): each traced into core ATen and run by hidet.
SAMPLES = [
    ('abs', lambda x: aten.abs.default(x), (_r(3, 5),)),
    ('acos', lambda x: aten.acos.default(x), (_r(3, 5, lo=-0.9, hi=0.9),)),
    ('acosh', lambda x: aten.acosh.default(x), (_r(3, 5, lo=1.1, hi=3),)),
    ('asin', lambda x: aten.asin.default(x), (_r(3, 5, lo=-0.9, hi=0.9),)),
    ('asinh', lambda x: aten.asinh.default(x), (_r(3, 5),)),
    ('atan', lambda x: aten.atan.default(x), (_r(3, 5),)),
    ('atanh', lambda x: aten.atanh.default(x), (_r(3, 5, lo=-0.9, hi=0.9),)),
    ('cosh', lambda x: aten.cosh.default(x), (_r(3, 5),)),
    ('sinh', lambda x: aten.sinh.default(x), (_r(3, 5),)),
    ('tan', lambda x: aten.tan.default(x), (_r(3, 5, lo=-1, hi=1),)),
    ('expm1', lambda x: aten.expm1.default(x), (_r(3, 5, lo=-1e-3, hi=1e-3),)),
    ('erfc', lambda x: aten.erfc.default(x), (_r(3, 5, lo=-2, hi=3),)),
    ('log1p', lambda x: aten.log1p.default(x), (_r(3, 5, lo=-1e-3, hi=1e-3),)),
    ('log2', lambda x: aten.log2.default(x), (_r(3, 5, lo=0.1, hi=4),)),
    ('log10', lambda x: aten.log10.default(x), (_r(3, 5, lo=0.1, hi=4),)),
    ('sign', lambda x: aten.sign.default(x), (_r(3, 5),)),
    ('trunc', lambda x: aten.trunc.default(x), (_r(3, 5, lo=-5, hi=5),)),
    ('round', lambda x: aten.round.default(x), (_r(3, 5, lo=-5, hi=5),)),
    ('round_decimals', lambda x: aten.round.decimals(x, decimals=1), (_r(3, 5, lo=-5, hi=5),)),
    ('bitwise_not', lambda x: aten.bitwise_not.default(x), (_i(3, 5, hi=100),)),
    ('isinf', lambda x: aten.isinf.default(x), (torch.tensor([1.0, math.inf, -math.inf, math.nan]),)),
    ('add_alpha', lambda x, y: aten.add.Tensor(x, y, alpha=2), (_r(3, 5), _r(5))),
    ('sub_scalar', lambda x: aten.sub.Scalar(x, 1.5), (_r(3, 5),)),
    ('mul_bool', lambda x, y: aten.mul.Tensor(x, y), (_r(3, 5) > 0, _r(3, 5) > 0)),
    ('div_floor', lambda x, y: aten.div.Tensor_mode(x, y, rounding_mode='floor'), (_r(3, 5), _r(3, 5, lo=0.5))),
    ('atan2', lambda x, y: aten.atan2.default(x, y), (_r(3, 5), _r(3, 5))),
    ('fmod', lambda x, y: aten.fmod.Tensor(x, y), (_r(3, 5, lo=-5, hi=5), _r(3, 5, lo=0.5, hi=2))),
    ('remainder', lambda x, y: aten.remainder.Tensor(x, y), (_r(3, 5, lo=-5, hi=5), _r(3, 5, lo=0.5, hi=2))),
    ('remainder_int', lambda x: aten.remainder.Scalar(x, 3), (torch.randint(-9, 9, (3, 5)),)),
    ('bitwise_and', lambda x, y: aten.bitwise_and.Tensor(x, y), (_i(3, 5, hi=100), _i(3, 5, hi=100))),
    ('bitwise_xor', lambda x: aten.bitwise_xor.Scalar(x, 6), (_i(3, 5, hi=100),)),
    ('logical_xor', lambda x, y: aten.logical_xor.default(x, y), (_r(3, 5) > 0, _r(3, 5))),
    ('pow_scalar', lambda x: aten.pow.Scalar(2.0, x), (_r(3, 5),)),
    ('clamp_tensor', lambda x, lo: aten.clamp.Tensor(x, lo, None), (_r(3, 5), _r(5))),
    ('elu', lambda x: aten.elu.default(x, 0.5, 2.0, 1.5), (_r(3, 5),)),
    ('amax', lambda x: aten.amax.default(x, [0, 2], True), (_r(2, 3, 4),)),
    ('any_dims', lambda x: aten.any.dims(x, [1]), (_r(3, 5) > 1.5,)),
    ('argmin', lambda x: aten.argmin.default(x, 1), (_r(3, 5),)),
    ('max_dim', lambda x: aten.max.dim(x, -1), (_r(3, 5),)),
    ('min_dim', lambda x: aten.min.dim(x, 0, True), (_r(3, 5),)),
    ('prod_dim', lambda x: aten.prod.dim_int(x, 1), (_r(3, 5, lo=0.5, hi=1.5),)),
    ('var_correction', lambda x: aten.var.correction(x, [1], correction=0, keepdim=True), (_r(3, 5),)),
    ('cumsum', lambda x: aten.cumsum.default(x, 1), (_r(3, 5),)),
    ('addmm', lambda b, x, y: aten.addmm.default(b, x, y, beta=0.5, alpha=2), (_r(4), _r(3, 5), _r(5, 4))),
    ('repeat', lambda x: aten.repeat.default(x, [2, 1, 3]), (_r(3, 4),)),
    ('flip', lambda x: aten.flip.default(x, [0, 2]), (_r(2, 3, 4),)),
    ('constant_pad_nd', lambda x: aten.constant_pad_nd.default(x, [1, -1, 2, 0], 0.5), (_r(3, 4),)),
    ('as_strided', lambda x: aten.as_strided.default(x, [3, 2], [1, 4], 1), (_r(3, 4),)),
    ('diagonal', lambda x: aten.diagonal.default(x, 1, 1, 2), (_r(2, 4, 5),)),
    ('select', lambda x: aten.select.int(x, 1, -1), (_r(3, 4),)),
    ('slice_step', lambda x: aten.slice.Tensor(x, 1, 1, 9223372036854775807, 2), (_r(3, 7),)),
    ('split_with_sizes', lambda x: aten.split_with_sizes.default(x, [1, 3], 1), (_r(3, 4),)),
    ('index_tensor', lambda x, i: aten.index.Tensor(x, [None, i]), (_r(3, 5), _i(2, 2, hi=5))),
    ('index_select', lambda x, i: aten.index_select.default(x, 0, i), (_r(3, 5), _i(4, hi=3))),
    ('gather', lambda x, i: aten.gather.default(x, 1, i), (_r(3, 5), _i(3, 2, hi=5))),
    ('slice_scatter_step', lambda x, s: aten.slice_scatter.default(x, s, 1, 0, 5, 2), (_r(3, 5), _r(3, 3))),
    ('select_scatter', lambda x, s: aten.select_scatter.default(x, s, 0, 1), (_r(3, 5), _r(5))),
    ('masked_scatter', lambda x, mk, s: aten.masked_scatter.default(x, mk, s), (_r(3, 5), _r(3, 5) > 0, _r(15))),
    ('scatter_add', lambda x, i, s: aten.scatter_add.default(x, 1, i, s), (_r(3, 5), _i(3, 4, hi=5), _r(3, 4))),
    ('scatter_value', lambda x, i: aten.scatter.value(x, 0, i, 2.5), (_r(3, 5), torch.tensor([[0, 1, 2, 0, 1]]))),
    ('index_put_acc', lambda x, i, v: aten.index_put.default(x, [i], v, True), (_r(5, 3), _i(4, hi=5), _r(4, 3))),
    ('sort', lambda x: aten.sort.default(x, 1, True), (_r(3, 37),)),
    ('topk', lambda x: aten.topk.default(x, 4, -1), (_r(3, 37),)),
    ('reflection_pad2d', lambda x: aten.reflection_pad2d.default(x, [2, 1, 1, 2]), (_r(1, 2, 4, 5),)),
    ('replication_pad2d', lambda x: aten.replication_pad2d.default(x, [2, 1, 1, 2]), (_r(1, 2, 4, 5),)),
    ('cdist', lambda a, b: aten._cdist_forward.default(a, b, 2.0, None), (_r(2, 3, 4), _r(2, 5, 4))),
    ('upsample_nearest2d', lambda x: aten.upsample_nearest2d.vec(x, [6, 4], None), (_r(1, 2, 3, 2),)),
    ('grid_sampler_2d', lambda x, g: aten.grid_sampler_2d.default(x, g, 0, 2, False),
     (_r(1, 2, 4, 5), _r(1, 3, 3, 2, lo=-1.2, hi=1.2))),
    ('max_pool3d', lambda x: aten.max_pool3d_with_indices.default(x, [3, 2, 2], [2, 1, 2], [1, 0, 1])[0],
     (_r(1, 2, 5, 4, 5),)),
    ('avg_pool3d', lambda x: aten.avg_pool3d.default(x, [2, 3, 2], [2, 2, 1], [1, 1, 0], True, False),
     (_r(1, 2, 5, 4, 5),)),
    ('adaptive_pool3d', lambda x: aten.add.Tensor(aten._adaptive_avg_pool3d.default(x, [2, 3, 1]),
                                                  aten.adaptive_max_pool3d.default(x, [2, 3, 1])[0]),
     (_r(1, 2, 5, 4, 5),)),
    ('full_like', lambda x: aten.add.Tensor(x, aten.full_like.default(x, 3)), (_r(2, 3),)),
    ('arange', lambda x: aten.add.Tensor(x, aten.arange.start_step(2, 7, 1, device=x.device)), (_r(5),)),
]

# On the emulator (CI), these samples run; on a GPU, all of them.
EMULATOR_SUBSET = {'acosh', 'expm1', 'sign', 'round_decimals', 'mul_bool', 'remainder_int', 'bitwise_and',
                   'logical_xor', 'max_dim', 'repeat', 'constant_pad_nd', 'as_strided', 'diagonal', 'slice_step',
                   'index_tensor', 'slice_scatter_step', 'masked_scatter', 'scatter_add', 'index_put_acc', 'topk',
                   'reflection_pad2d', 'cdist', 'avg_pool3d', 'grid_sampler_2d'}


def _to_device(v):
    return v.to(DEVICE) if isinstance(v, torch.Tensor) else v


def _flat(v):
    if isinstance(v, (list, tuple)):
        return [y for x in v for y in _flat(x)]
    return [v]


@pytest.mark.parametrize('name,fn,args', SAMPLES, ids=[s[0] for s in SAMPLES])
def test_core_aten_mapping_against_torch(name, fn, args):
    if hidet.cuda_emulated() and name not in EMULATOR_SUBSET:
        pytest.skip('runs on a GPU (the emulator runs EMULATOR_SUBSET)')
    args = [_to_device(a) for a in args]
    want = fn(*args)
    data = [hidet.from_torch(a) for a in args if isinstance(a, torch.Tensor)]
    syms = [hidet.symbol_like(t, name=f'x{k}') for k, t in enumerate(data)]  # traced, not folded by torch
    it = iter(syms)
    hidet_args = [next(it) if isinstance(a, torch.Tensor) else a for a in args]
    d = decompose(fn, ('test', name), tuple(hidet_args), {})
    outs = _flat(Interpreter(d.gm, decompose=False).run_graph([hidet_args[p] for p in d.positions]))
    assert all(o.is_symbolic for o in outs), 'the mapping computed a constant: nothing was tested'
    got = hidet.trace_from(outs, syms).run(data)
    for g, w in zip(got, _flat(want)):
        g = g.torch()
        if w.dtype == torch.int64 and g.dtype != torch.int64:
            raise AssertionError(f'{name}: integer result became {g.dtype}')
        assert_close(g.to(w.dtype), w, atol=1e-5, rtol=1e-5)


def test_torch_level_operators_without_mappings_compile_through_core_aten():
    """Tensor methods and functions with no torch-level mapping (the failures of issue 40's
    sweep), compiled end to end."""
    def fn(x, y):
        a, b, c = x.unbind(0)
        m = (a.ne(0.5).int() + b.gt(0).long()).float()
        f = torch.isfinite(x / (x - x[0:1])).float().sum(0)
        return torch.addcmul(a, b, c, value=0.5) + m + f + torch.swapaxes(y, 0, 1).sum(1)

    x, y = _r(3, 5).to(DEVICE), _r(4, 5).to(DEVICE)
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(fn, backend='hidet')(x, y)
    assert_close(got, fn(x, y), atol=1e-5, rtol=1e-5)


def _run_fx(build, inputs):
    """An fx graph of ATen calls (build(graph, *placeholders) returns the output) run by the
    interpreter on symbols of `inputs`, as aot_autograd's graphs and decompositions are."""
    import torch.fx
    g = torch.fx.Graph()
    phs = [g.placeholder(f'x{k}') for k in range(len(inputs))]
    g.output(build(g, *phs))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    data = [hidet.from_torch(t) for t in inputs]
    syms = [hidet.symbol_like(t, name=f'x{k}') for k, t in enumerate(data)]
    out = Interpreter(gm, decompose=True).run_graph(syms)
    return hidet.trace_from(out, syms).run(data)[0].torch()


def test_fused_rms_norm_and_inplace_aten_overloads():
    """aten._fused_rms_norm (what F.rms_norm dispatches to on CUDA; in the graphs aot_autograd makes
    of DTensor models) and in-place ATen overloads on temporaries (aten.add_.Scalar, in PyTorch's
    decomposition of rms_norm): both gave None before, and a later node failed on it."""
    import operator
    x, w = _r(3, 5, 24).to(DEVICE), _r(24).to(DEVICE)

    def fused(g, a, b):
        n = g.call_function(aten._fused_rms_norm.default, (a, [24], b, 1e-5))
        return g.call_function(aten.view.default, (g.call_function(operator.getitem, (n, 0)), [15, 24]))
    want = torch.ops.aten._fused_rms_norm(x, [24], w, 1e-5)[0].view(15, 24)
    assert_close(_run_fx(fused, [x, w]), want, atol=1e-5, rtol=1e-5)

    def inplace(g, a):
        t = g.call_function(aten.mul.Tensor, (a, 2.0))
        u = g.call_function(aten.add_.Scalar, (t, 1.0))  # updates t; u is t
        v = g.call_function(aten.mul_.Tensor, (u, u))      # updates t again
        return g.call_function(aten.sub.Tensor, (g.call_function(aten.rsqrt.default, (v,)), t))
    t = x * 2.0 + 1.0
    t = t * t
    assert_close(_run_fx(inplace, [x]), t.rsqrt() - t, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('name', ['_scaled_dot_product_flash_attention', '_scaled_dot_product_efficient_attention',
                                  '_scaled_dot_product_cudnn_attention', '_scaled_dot_product_flash_attention_for_cpu'])
def test_kernel_specific_attention_operators(name):
    """The attention operators aot_autograd records for scaled_dot_product_attention on a GPU
    (flash, memory-efficient, cuDNN; flash for the CPU): their output against F.sdpa, with a
    mask where the operator takes one."""
    import operator
    if not hasattr(aten, name):
        pytest.skip(f'this torch has no aten.{name}')
    q, k, v = _r(2, 3, 5, 16).to(DEVICE), _r(2, 3, 7, 16).to(DEVICE), _r(2, 3, 7, 16).to(DEVICE)
    mask = _r(5, 7).to(DEVICE)
    op = getattr(aten, name).default
    with_mask = name in ('_scaled_dot_product_efficient_attention', '_scaled_dot_product_cudnn_attention',
                         '_scaled_dot_product_flash_attention_for_cpu')

    def build(g, a, b, c, d):
        if name == '_scaled_dot_product_flash_attention_for_cpu':
            n = g.call_function(op, (a, b, c), {'attn_mask': d, 'scale': 0.3})
        elif with_mask:
            n = g.call_function(op, (a, b, c, d, False), {'scale': 0.3})
        else:
            n = g.call_function(op, (a, b, c, 0.0, False), {'scale': 0.3})
        return g.call_function(operator.getitem, (n, 0))
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask if with_mask else None, scale=0.3)
    assert_close(_run_fx(build, [q, k, v, mask]), want, atol=1e-5, rtol=1e-5)
