"""hidet: GPU kernels as C++ code, and a deep-learning compiler reachable from PyTorch.

The C++ library does the work (``hidet._C``); this package adds the Pythonic surface:

    import hidet
    a = hidet.randn([2, 3], device='cuda')
    x = hidet.symbol_like(a)                      # a symbolic tensor: operators record a graph
    y = hidet.ops.relu(hidet.ops.matmul(x, b) + c)
    graph = hidet.trace_from(y)                   # FlowGraph, printed in Hidet's form
    opt = hidet.graph.optimize(graph)             # fusion and the other passes
    y1 = opt(a)

and ``torch.compile(model, backend='hidet')`` (see :mod:`hidet.torch`).
Without a GPU the 'cuda' device is served by hidet's CPU emulator.
"""
from . import _C
from ._C import (CompiledGraph, CudaGraph, Dim, FlowGraph, HidetError, Model, ShapeDispatch, Tensor, arange, asarray,
                 cuda_emulated, full, kernel_builds, manual_seed, ones, randn, save_model, synchronize, zeros)
from . import distributed, graph, ops, utils

__version__ = '0.1.0'

__all__ = ['Tensor', 'Dim', 'FlowGraph', 'CompiledGraph', 'CudaGraph', 'ShapeDispatch', 'Model', 'save_model', 'HidetError', 'randn',
           'zeros', 'ones', 'full', 'asarray', 'arange', 'symbol', 'symbol_like', 'trace_from', 'from_torch', 'from_dlpack', 'graph', 'ops',
           'utils', 'distributed', 'cuda_emulated', 'synchronize', 'manual_seed', 'kernel_builds']


def __getattr__(name):
    """``hidet.torch`` after a plain ``import hidet`` (as Hidet's tutorials write it): the PyTorch
    front end is imported on first use, so that importing hidet does not need torch."""
    if name == 'torch':
        import importlib
        return importlib.import_module('hidet.torch')
    raise AttributeError(f"module 'hidet' has no attribute {name!r}")


def symbol(shape, dtype='float32', device='cuda', name='x'):
    """A symbolic tensor (a graph input): extents are ints or names of symbolic dimensions."""
    return _C.symbol(list(shape), str(dtype), device, name)


def symbol_like(tensor, name='x'):
    """A symbolic tensor with the shape, dtype and device of ``tensor``."""
    return _C.symbol_like(tensor, name)


def trace_from(outputs, inputs=None, updates=None):
    """The FlowGraph computing ``outputs`` (a tensor or a list) from ``inputs`` (found when omitted)
    and updating in place each input of ``updates`` ((input, new value) pairs;
    docs/graph.md, "Updates of inputs in place")."""
    if isinstance(outputs, Tensor):
        outputs = [outputs]
    if isinstance(updates, dict):
        raise TypeError('trace_from: give updates as a list of (input, value) pairs')
    return _C.trace_from(list(outputs), list(inputs or []), [tuple(u) for u in (updates or [])])


def from_dlpack(array):
    """A hidet tensor viewing the memory of a DLPack tensor (no copy; contiguous tensors only)."""
    return _C.from_dlpack(array)


def from_torch(tensor):
    """A hidet tensor viewing a torch tensor's memory (no copy when it is contiguous)."""
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    return _C.from_dlpack(tensor.detach())


def _binary(op, reverse=False):
    def method(self, other):
        return op(other, self) if reverse else op(self, other)
    return method


# Python's operators on tensors: (dunder name, operator, has the reflected form __r<name>__).
for _name, _op, _reflected in [
        ('add', _C.ops.add, True), ('sub', _C.ops.sub, True), ('mul', _C.ops.mul, True),
        ('truediv', _C.ops.div, True), ('mod', _C.ops.remainder, True), ('floordiv', _C.ops.floor_divide, True),
        ('and', _C.ops.bitwise_and, True), ('or', _C.ops.bitwise_or, True), ('xor', _C.ops.bitwise_xor, True),
        ('lshift', _C.ops.bitwise_left_shift, True), ('rshift', _C.ops.bitwise_right_shift, True),
        ('matmul', _C.ops.matmul, False), ('pow', _C.ops.pow, False)]:
    setattr(Tensor, f'__{_name}__', _binary(_op))
    if _reflected:
        setattr(Tensor, f'__r{_name}__', _binary(_op, True))
del _name, _op, _reflected
Tensor.__neg__ = lambda self: _C.ops.neg(self)
Tensor.__invert__ = lambda self: _C.ops.bitwise_not(self)
FlowGraph.__call__ = lambda self, *xs: (lambda outs: outs[0] if len(outs) == 1 else outs)(self.run(list(xs)))
CompiledGraph.__call__ = lambda self, *xs: (lambda outs: outs[0] if len(outs) == 1 else outs)(self.run(list(xs)))
FlowGraph.cuda_graph = lambda self: CudaGraph(CompiledGraph(self))


def _register_torch_backend():
    """``torch.compile(model, backend='hidet')`` after ``import torch, hidet`` without installing the
    package (its entry point registers the backend otherwise): a stand-in that imports hidet.torch
    on the first compile. Nothing happens when torch is not imported yet."""
    import sys
    if 'torch' not in sys.modules:
        return
    try:
        from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend
    except Exception:  # a torch without dynamo: hidet.torch says so when it is imported
        return
    if 'hidet' in _COMPILER_FNS:
        return

    def hidet(gm, example_inputs, **kwargs):
        from hidet.torch import hidet_backend
        return hidet_backend(gm, example_inputs, **kwargs)

    hidet.__doc__ = 'hidet (hidet.torch.hidet_backend, imported on first use).'
    register_backend(hidet, name='hidet')


_register_torch_backend()
