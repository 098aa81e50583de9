"""Complex tensors inside a traced graph, as pairs of reals.

hidet has no complex dtype. Models that rotate their queries and keys by complex multiplication
(Llama 4, DeepSeek-V2: ``freqs_cis = torch.polar(ones, freqs)``, ``torch.view_as_complex(x.reshape(
..., -1, 2)) * freqs_cis``, ``torch.view_as_real(...)``) keep complex values only between real
inputs and real outputs. Here such a value is a :class:`ComplexTensor`: a real hidet tensor with one
more axis of extent 2 at the end (the real and the imaginary part, ``torch.view_as_real``'s layout),
and the operators on it are mapped on that tensor. The interpreter asks :func:`mapping_of` for every
node that takes a ComplexTensor or makes one (:data:`CREATORS`); an operator without a mapping here
is refused with its name and the mapped ones listed. Complex buffers become constant pairs and a
complex graph output is viewed as complex again; a complex graph input is refused (interpreter.py).
"""
import operator

import torch

from hidet import Tensor, ops

from .registry import Registry

_COMPLEX = {'float32': 'complex64', 'float64': 'complex128', 'float16': 'complex32'}
_REAL = {torch.complex64: 'float32', torch.complex128: 'float64', torch.complex32: 'float16'}


class ComplexTensor:
    """A complex value of a traced graph: ``pair`` is its real view, of shape ``shape + [2]``."""

    def __init__(self, pair, parts=None):
        if not isinstance(pair, Tensor) or pair.ndim < 1 or pair.shape[-1] != 2:
            raise ValueError(f'hidet: a complex tensor is a real one with a last axis of 2; got {pair}')
        self.pair = pair
        # The real and imaginary parts it was made of (_make): read as they are, not sliced out of the
        # pair again, so that a chain of complex operators stays a graph of shared values (slices of
        # stacks fused into one kernel would repeat each level's expression).
        self.parts = parts

    @property
    def shape(self):
        return list(self.pair.shape[:-1])

    @property
    def ndim(self):
        return self.pair.ndim - 1

    @property
    def dtype(self):
        return _COMPLEX.get(self.pair.dtype, 'complex of ' + self.pair.dtype)

    @property
    def is_symbolic(self):
        return True

    @property
    def real(self):
        return _part(self, 0)

    @property
    def imag(self):
        return _part(self, 1)

    def __repr__(self):
        return f'ComplexTensor({self.dtype}, {self.shape})'


def _method(name):
    return Registry.registered_methods[name]


def _getitem(x, index):
    return Registry.registered_functions[operator.getitem](x, index)


def _part(c, i):
    return c.parts[i] if c.parts is not None else _getitem(c.pair, (Ellipsis, i))


def _make(re, im):
    """The complex tensor re + i im (real tensors; shapes that differ broadcast)."""
    if list(re.shape) != list(im.shape):
        re, im = ops.add(re, ops.mul(im, 0.0)), ops.add(im, ops.mul(re, 0.0))
    return ComplexTensor(Registry.registered_functions[torch.stack]([re, im], -1), (re, im))


def _as_pair(x):
    """x (a ComplexTensor, a real tensor or a Python number) as (real, imaginary) parts."""
    if isinstance(x, ComplexTensor):
        return x.real, x.imag
    if isinstance(x, complex):
        return x.real, x.imag
    return x, 0.0


def _axis(dim, ndim):
    """A complex tensor's axis as an axis of its pair: negative axes count from before the pair's."""
    return dim - 1 if dim < 0 else dim


# ---------------------------------------------------------------------------- makers

def _polar(abs, angle, *, out=None):
    return _make(ops.mul(abs, ops.cos(angle)), ops.mul(abs, ops.sin(angle)))


def _complex(real, imag, *, out=None):
    return _make(real, imag)


def _view_as_complex(x):
    if isinstance(x, ComplexTensor):
        raise ValueError('view_as_complex: the input is complex already')
    return ComplexTensor(x)


CREATORS = {torch.polar: _polar, torch.complex: _complex, torch.view_as_complex: _view_as_complex}


# ---------------------------------------------------------------------------- arithmetic

def _mul(a, b):
    if not isinstance(b, ComplexTensor):  # complex times real (or a Python number): a first
        a, b = b, a
    if isinstance(a, complex):
        return _make(ops.sub(ops.mul(b.real, a.real), ops.mul(b.imag, a.imag)),
                     ops.add(ops.mul(b.real, a.imag), ops.mul(b.imag, a.real)))
    if not isinstance(a, ComplexTensor):  # a real tensor or number scales both parts
        return ComplexTensor(ops.mul(b.pair, _method('unsqueeze')(a, -1) if isinstance(a, Tensor) else a))
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    return _make(ops.sub(ops.mul(ar, br), ops.mul(ai, bi)), ops.add(ops.mul(ar, bi), ops.mul(ai, br)))


def _add(a, b, *, alpha=1, sign=1.0):
    ar, ai = _as_pair(a)
    br, bi = _as_pair(b)
    if alpha != 1:
        br, bi = ops.mul(br, alpha) if isinstance(br, Tensor) else br * alpha, \
            ops.mul(bi, alpha) if isinstance(bi, Tensor) else bi * alpha

    def comb(x, y):  # x + sign * y, one of them a tensor
        if not isinstance(x, Tensor):
            return ops.add(y if sign > 0 else ops.neg(y), x)
        return ops.add(x, y) if sign > 0 else ops.sub(x, y)
    return _make(comb(ar, br), comb(ai, bi))


def _sub(a, b, *, alpha=1):
    return _add(a, b, alpha=alpha, sign=-1.0)


def _neg(c):
    return ComplexTensor(ops.neg(c.pair))


def _conj(c):
    return _make(c.real, ops.neg(c.imag))


def _abs(c):
    return ops.sqrt(ops.add(ops.mul(c.real, c.real), ops.mul(c.imag, c.imag)))


# ---------------------------------------------------------------------------- views and shapes

def _view_as_real(c):
    return c.pair


def _getitem_c(c, index):
    if not isinstance(index, tuple):
        index = (index,)
    if any(isinstance(i, (Tensor, torch.Tensor, list)) for i in index):
        raise NotImplementedError('indexing a complex tensor with tensors is not mapped (slices, ints, None and '
                                  'Ellipsis are)')
    if Ellipsis not in index:
        index = index + (Ellipsis,)
    return ComplexTensor(_getitem(c.pair, index + (slice(None),)))


def _shape_args(args):
    if len(args) == 1 and isinstance(args[0], (list, tuple, torch.Size)):
        return list(args[0])
    return list(args)


def _reshape(c, *shape):
    return ComplexTensor(_method('reshape')(c.pair, _shape_args(shape) + [2]))


def _unsqueeze(c, dim):
    return ComplexTensor(_method('unsqueeze')(c.pair, _axis(dim, c.ndim)))


def _squeeze(c, dim=None):
    if dim is None:
        dims = [d for d, e in enumerate(c.shape) if e == 1]
        pair = c.pair
        for d in reversed(dims):
            pair = _method('squeeze')(pair, d)
        return ComplexTensor(pair)
    return ComplexTensor(_method('squeeze')(c.pair, _axis(dim, c.ndim)))


def _transpose(c, a, b):
    return ComplexTensor(_method('transpose')(c.pair, _axis(a, c.ndim), _axis(b, c.ndim)))


def _permute(c, *dims):
    dims = [d % c.ndim for d in _shape_args(dims)]
    return ComplexTensor(_method('permute')(c.pair, dims + [c.ndim]))


def _expand(c, *sizes):
    return ComplexTensor(_method('expand')(c.pair, _shape_args(sizes) + [2]))


def _flatten(c, start_dim=0, end_dim=-1):
    return ComplexTensor(_method('flatten')(c.pair, start_dim % c.ndim, end_dim % c.ndim))


def _to(c, *args, dtype=None, **kwargs):
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
    if dtype is None:
        return c
    if dtype not in _REAL:
        raise NotImplementedError(f'a complex tensor converted to {dtype}: only complex dtypes are mapped')
    real = _REAL[dtype]
    return c if real == c.pair.dtype else ComplexTensor(ops.cast(c.pair, real))


def _same(c, *args, **kwargs):
    return c


FUNCTIONS = {
    torch.view_as_real: _view_as_real, operator.mul: _mul, torch.mul: _mul, operator.add: _add, torch.add: _add,
    operator.sub: _sub, torch.sub: _sub, operator.neg: _neg, torch.neg: _neg, torch.conj: _conj,
    torch.abs: _abs, torch.real: lambda c: c.real, torch.imag: lambda c: c.imag, operator.getitem: _getitem_c,
    torch.reshape: _reshape, torch.unsqueeze: _unsqueeze, torch.squeeze: _squeeze, torch.transpose: _transpose,
    torch.permute: _permute, torch.flatten: _flatten,
}
METHODS = {
    'mul': _mul, '__mul__': _mul, '__rmul__': lambda a, b: _mul(b, a), 'add': _add, 'sub': _sub, 'neg': _neg,
    'conj': _conj, 'abs': _abs, 'reshape': _reshape, 'view': _reshape, 'unsqueeze': _unsqueeze,
    'squeeze': _squeeze, 'transpose': _transpose, 'permute': _permute, 'expand': _expand, 'flatten': _flatten,
    'to': _to, 'contiguous': _same, 'clone': _same, 'detach': _same, 'type_as': lambda c, other: _to(c, other.dtype)
    if isinstance(other, torch.Tensor) else c,
}
ATTRIBUTES = {'real': lambda c: c.real, 'imag': lambda c: c.imag}


def has_complex(value):
    """Whether an argument structure holds a ComplexTensor."""
    if isinstance(value, ComplexTensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_complex(v) for v in value)
    if isinstance(value, dict):
        return any(has_complex(v) for v in value.values())
    return False


def mapping_of(node, args, kwargs):
    """The complex mapping of fx node ``node`` when it makes or takes a complex tensor, else None;
    NotImplementedError (naming the operator and what is mapped) when it takes one without a
    mapping here."""
    if node.op == 'call_function' and node.target in CREATORS:
        return CREATORS[node.target]
    if not has_complex((args, kwargs)):
        return None
    if node.op == 'call_function' and node.target in FUNCTIONS:
        return FUNCTIONS[node.target]
    if node.op == 'call_function' and node.target is getattr and args[1] in ATTRIBUTES:
        return lambda c, name: ATTRIBUTES[name](c)
    if node.op == 'call_method' and node.target in METHODS:
        return METHODS[node.target]
    name = node.target if isinstance(node.target, str) else getattr(node.target, '__name__', str(node.target))
    raise NotImplementedError(
        f'hidet: {name} of a complex tensor is not mapped: complex values are pairs of reals here, and only '
        'torch.polar, torch.complex, view_as_complex, view_as_real, getitem, real, imag, +, -, *, conj, abs and '
        'the shape methods (reshape, view, unsqueeze, squeeze, transpose, permute, expand, flatten, to) are '
        'mapped on them')

