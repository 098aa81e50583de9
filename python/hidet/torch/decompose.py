"""The second path of the front end: a node without a torch-level mapping, decomposed into core ATen.

For such a node (or one whose mapping refuses its arguments with NotImplementedError), PyTorch's
own decomposition tables (those inductor and torch.export use) trace the node's operator on fake
tensors of its inputs' shapes and dtypes into a small graph of core ATen operators, which the
interpreter then maps through aten.py. The torch-level mappings stay the fast path: attention,
convolutions and norms are mapped whole; only what they do not cover goes through here.

The decomposition of one operator at one signature (shapes, dtypes, the other arguments) is
traced once and cached.
"""
import functools

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

import hidet
from .convert import torch_dtype

__all__ = ['decompose', 'decomposition_table', 'Decomposed']


@functools.lru_cache(maxsize=None)
def decomposition_table():
    """PyTorch's table from operators to core ATen (torch._decomp.core_aten_decompositions), less
    the operators aten.py maps whole."""
    from torch._decomp import core_aten_decompositions
    from .registry import Registry
    table = dict(core_aten_decompositions())
    for op in list(table):
        if op in Registry.registered_aten:
            del table[op]
    return table


class Decomposed:
    """A node's operator as a graph of core ATen operators: ``gm`` (an fx GraphModule whose
    placeholders are the node's tensor arguments, in order) and ``positions`` (where those
    arguments sit among the flattened (args, kwargs))."""

    def __init__(self, gm, positions):
        self.gm, self.positions = gm, positions

    def operators(self):
        """The ATen operators of the decomposition, each once, in order."""
        seen = []
        for n in self.gm.graph.nodes:
            if n.op == 'call_function' and isinstance(n.target, torch._ops.OpOverload) and n.target not in seen:
                seen.append(n.target)
        return seen


_cache = {}


def _signature(value):
    if isinstance(value, hidet.Tensor):
        return ('tensor', tuple(value.shape), value.dtype)
    if isinstance(value, (int, float, bool, str, type(None))):
        return (type(value).__name__, value)
    return (type(value).__name__, repr(value))


def decompose(call, key, args, kwargs):
    """The Decomposed form of ``call(*args, **kwargs)`` (hidet tensors among the arguments), traced
    on fake tensors of the same shapes and dtypes; ``key`` identifies the operator for the cache.
    Raises NotSymbolic-like ValueError for symbolic extents (the caller traces per shape)."""
    flat, spec = tree_flatten((args, kwargs))
    positions = [i for i, v in enumerate(flat) if isinstance(v, hidet.Tensor)]
    for i in positions:
        if any(isinstance(d, hidet.Dim) and not d.is_constant for d in flat[i].shape):
            from .interpreter import NotSymbolic
            raise NotSymbolic('a node decomposed into core ATen is traced per shape')
    cache_key = (key, str(spec), tuple(_signature(v) for v in flat))
    hit = _cache.get(cache_key)
    if hit is not None:
        return hit

    def fn(*tensors):
        values = list(flat)
        for p, t in zip(positions, tensors):
            values[p] = t
        a, k = tree_unflatten(values, spec)
        return call(*a, **k)

    from torch.fx.experimental.proxy_tensor import make_fx
    examples = [torch.empty([int(d) for d in flat[i].shape], dtype=torch_dtype(flat[i].dtype)) for i in positions]
    # Outside dynamo's tracing context (the backend runs inside it): otherwise make_fx's fake
    # tensors would add guards on names of this trace to the frame being compiled.
    with torch._guards.tracing(None), torch.no_grad():
        gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode='fake')(*examples)
    result = _cache[cache_key] = Decomposed(gm, positions)
    return result
