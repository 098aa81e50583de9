"""The operator mappings: torch functions, tensor methods and modules as hidet operators.

Each mapping takes the torch operator's arguments (hidet tensors in place of torch tensors) and
returns hidet tensors. Sizes are Python ints, except with dynamic shapes (interpreter.py): a
symbolic size is a hidet.Dim (``x.size(1)`` is the Dim s1), which takes Python's integer
arithmetic and goes where an int goes in view, reshape, expand, arange and the *_like creations.
A mapping that needs a size's value (int(d), a comparison) raises on a Dim, and the graph is then
traced per shape.
"""
import collections
import functools
import math
import operator

import torch
import torch.nn.functional as F

import hidet
from hidet import Tensor, ops
from .interpreter import dtype_name, is_symbolic_size, symbolic_inputs, torch_dtype
from .registry import HidetModule, Registry, register_function, register_method, register_module

# ---------------------------------------------------------------------------- helpers


def _axis(dim, ndim):
    return dim + ndim if dim < 0 else dim


def _dims(dim, ndim):
    if dim is None:
        return list(range(ndim))
    if isinstance(dim, int):
        dim = [dim]
    return [_axis(d, ndim) for d in dim]


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple, torch.Size)):
        shape = shape[0]
    return [s if is_symbolic_size(s) else int(s) for s in shape]


def _size_tuple(shape):
    """x.shape for torch: a torch.Size, or a tuple when a size is symbolic (a hidet.Dim)."""
    shape = tuple(shape)
    return shape if any(is_symbolic_size(s) for s in shape) else torch.Size(shape)


# ---------------------------------------------------------------------------- arithmetic

def _is_bool(v):
    return isinstance(v, bool) or (isinstance(v, Tensor) and v.dtype == 'bool')


def _category(dtype):
    return 0 if dtype == 'bool' else 2 if dtype.startswith('float') or dtype == 'bfloat16' else 1


def _zero_dim_promotion(a, b):
    """PyTorch's promotion of a 0-d tensor against a tensor with dimensions: of the same category
    or a lower one (bool < integer < floating), it takes the other's dtype (f32[3, 6] * f64[] is
    f32: the 0-d float64 that dynamo makes of `np.sqrt(64)`, CTRL's scale)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and (a.ndim == 0) != (b.ndim == 0) and a.dtype != b.dtype:
        z, d = (a, b) if a.ndim == 0 else (b, a)
        if _category(z.dtype) <= _category(d.dtype):
            z = ops.cast(z, d.dtype)
            return (z, d) if a.ndim == 0 else (d, z)
    return a, b


def arithmetic(op, a, b):
    """op(a, b) with PyTorch's rule for two booleans (add is or, mul is and: a bool result) and
    for 0-d tensors (_zero_dim_promotion)."""
    a, b = _zero_dim_promotion(a, b)
    if _is_bool(a) and _is_bool(b) and (isinstance(a, Tensor) or isinstance(b, Tensor)):
        if op is ops.add:
            return ops.logical_or(*_bool_tensors(a, b))
        if op is ops.mul:
            return ops.logical_and(*_bool_tensors(a, b))
    return op(a, b)


def _bool_tensors(a, b):
    t = a if isinstance(a, Tensor) else b
    a = a if isinstance(a, Tensor) else hidet.full([1], float(a), 'bool', t.device)
    b = b if isinstance(b, Tensor) else hidet.full([1], float(b), 'bool', t.device)
    return a, b


def _binary(op):
    def mapping(a, b, *, alpha=1, out=None):
        if out is not None:
            raise ValueError('out= is not supported')
        if alpha != 1:
            b = ops.mul(b, alpha)
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            return {'add': operator.add, 'sub': operator.sub, 'mul': operator.mul,
                    'div': operator.truediv}[op.__name__](a, b)
        if is_symbolic_size(a):  # a tensor and a symbolic size (cache_length.add_(s0))
            a = _size_scalar(a, b.dtype)
        if is_symbolic_size(b):
            b = _size_scalar(b, a.dtype)
        return arithmetic(op, a, b)
    return mapping


def _size_scalar(n, dtype):
    """A symbolic size as a 0-d tensor of ``dtype`` (a tensor's dtype, as PyTorch keeps it for a
    Python int operand): its value read from the shape-generic arange(n, n + 1)."""
    t = ops.reshape(ops.arange(n, n + 1, 1, 'int64', symbolic_inputs()), [])
    return t if dtype == 'int64' else ops.cast(t, dtype)


register_function(operator.add, torch.add, operator.iadd)(_binary(ops.add))
register_function(operator.sub, torch.sub, operator.isub)(_binary(ops.sub))
register_function(operator.mul, torch.mul, operator.imul, torch.multiply)(_binary(ops.mul))
register_function(operator.truediv, torch.true_divide, operator.itruediv)(_binary(ops.div))
register_method('add', 'add_')(_binary(ops.add))
register_method('sub')(_binary(ops.sub))
register_method('mul', 'mul_')(_binary(ops.mul))
register_method('truediv')(_binary(ops.div))


def _is_integer(v):
    return isinstance(v, int) or (isinstance(v, Tensor) and not v.dtype.startswith('float') and v.dtype != 'bfloat16')


@register_function(torch.div)
@register_method('div')
def torch_div(a, b, *, rounding_mode=None, out=None):
    """a / b; rounding_mode 'floor' is PyTorch's floor_divide and 'trunc' rounds toward zero (both
    keep integer dtypes, as PyTorch does)."""
    if rounding_mode is None:
        return _binary(ops.div)(a, b)
    if rounding_mode == 'floor':
        return operator_floordiv(a, b)
    if rounding_mode != 'trunc':
        raise ValueError(f"div: rounding_mode={rounding_mode!r} is not one of None, 'floor', 'trunc'")
    if _is_integer(a) and _is_integer(b):  # a - fmod(a, b) is a multiple of b: its floor quotient is exact
        return ops.floor_divide(ops.sub(a, ops.fmod(a, b)), b)
    return ops.trunc(ops.div(a, b))


@register_function(operator.floordiv, torch.floor_divide)
@register_method('floor_divide', '__floordiv__')
def operator_floordiv(a, b):
    """Python's a // b (PyTorch's floor_divide): integer tensors stay integers (perm // top_k
    indexes a tensor)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return a // b
    return ops.floor_divide(a, b)


@register_function(torch.rsub)
def torch_rsub(a, b, alpha=1):
    return ops.sub(b, ops.mul(a, alpha) if alpha != 1 else a)


@register_function(operator.neg, torch.neg)
@register_method('neg')
def torch_neg(x):
    return ops.neg(x) if isinstance(x, Tensor) else -x


@register_function(operator.pow, torch.pow)
@register_method('pow')
def torch_pow(a, b):
    # Small integer powers as products (GPT-2's gelu cubes its input in a matmul epilogue: powf
    # is tens of instructions per element there).
    if isinstance(b, (int, float)) and b == 2:
        return ops.mul(a, a)
    if isinstance(b, (int, float)) and b == 3:
        return ops.mul(ops.mul(a, a), a)
    if isinstance(b, (int, float)) and b == 0.5:
        return ops.sqrt(a)
    return ops.pow(a, b)


@register_function(operator.matmul, torch.matmul, torch.mm, torch.bmm)
@register_method('matmul', 'mm', 'bmm')
def torch_matmul(a, b, out=None):
    return ops.matmul(a, b)


@register_function(torch._scaled_mm)
def torch_scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
    """FP8 products with per-tensor scales: b is [k, n] (column-major in torch), hidet's scaled_mm takes
    it as [n, k]. The tensor cores accumulate as with use_fast_accum=True either way."""
    if scale_result is not None:
        raise NotImplementedError('torch._scaled_mm with scale_result (an fp8 output) is not supported by hidet; '
                                  'use an f16, bf16 or f32 out_dtype')
    out = dtype_name(out_dtype) if out_dtype is not None else a.dtype
    y = ops.scaled_mm(a, ops.transpose(b, 0, 1), scale_a, scale_b, out)
    return y if bias is None else ops.add(y, bias)


def _einsum_parse(equation, operands):
    """Subscripts per operand and of the output, '...' spelled out as capital letters."""
    eq = equation.replace(' ', '')
    lhs, arrow, rhs = eq.partition('->')
    terms = lhs.split(',')
    if len(terms) != len(operands):
        raise ValueError(f"einsum: '{equation}' names {len(terms)} operands, {len(operands)} given")
    ell = 0
    for t, x in zip(terms, operands):
        if '...' in t:
            ell = max(ell, len(x.shape) - (len(t) - 3))
    dots = ''.join(chr(ord('A') + i) for i in range(ell))
    subs = []
    for t, x in zip(terms, operands):
        if '...' in t:
            n = len(x.shape) - (len(t) - 3)
            t = t.replace('...', dots[ell - n:])
        if len(t) != len(x.shape):
            raise ValueError(f"einsum: subscripts '{t}' for an operand of shape {list(x.shape)}")
        if len(set(t)) != len(t):
            raise NotImplementedError(f"einsum: a letter repeated within one operand ('{t}', a diagonal) is not mapped yet")
        subs.append(t)
    if arrow:
        out = rhs.replace('...', dots)
    else:  # implicit: the ellipsis, then the letters used once, in order
        counts = collections.Counter(''.join(subs))
        out = dots + ''.join(sorted(c for c in counts if counts[c] == 1 and c not in dots))
    return subs, out


def _einsum_pair(a, sa, b, sb, keep):
    """a (letters sa) and b (letters sb) multiplied and summed over the letters that are in both
    but not in `keep`: one batched product. Returns the tensor and its letters."""
    batch = [c for c in sa if c in sb and c in keep]
    contract = [c for c in sa if c in sb and c not in keep]
    free_a = [c for c in sa if c not in sb]
    free_b = [c for c in sb if c not in sa]
    size = {}  # each letter's extent (an extent of 1 broadcasts)
    for c, n in list(zip(sa, a.shape)) + list(zip(sb, b.shape)):
        size[c] = max(size.get(c, 1), n)

    def prod(cs):
        return int(math.prod(size[c] for c in cs))

    def arrange(x, sx, order):
        x = ops.permute(x, [sx.index(c) for c in order]) if list(sx) != order else x
        shape = [size[c] for c in order]
        return ops.broadcast_to(x, shape) if list(x.shape) != shape else x
    a3 = ops.reshape(arrange(a, sa, batch + free_a + contract), [prod(batch), prod(free_a), prod(contract)])
    b3 = ops.reshape(arrange(b, sb, batch + contract + free_b), [prod(batch), prod(contract), prod(free_b)])
    y = ops.reshape(ops.matmul(a3, b3), [size[c] for c in batch + free_a + free_b])
    return y, ''.join(batch + free_a + free_b)


@register_function(torch.einsum)
def torch_einsum(equation, *operands):
    """Operands contracted left to right, each pair as one batched product (permutes and views
    around ops.matmul); letters that only one operand has and nothing later needs are summed
    first. Mapped: any number of operands, '...' and implicit outputs; not yet: a letter repeated
    within one operand (a diagonal)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    subs, out = _einsum_parse(equation, operands)
    xs = list(operands)

    def needed(i):  # letters that operands after i, or the output, use
        return set(out).union(*[set(t) for t in subs[i + 1:]])

    def sum_unused(x, sx, keep):
        drop = [k for k, c in enumerate(sx) if c not in keep]
        if not drop:
            return x, sx
        return ops.sum(x, drop, False), ''.join(c for c in sx if c in keep)
    x, sx = sum_unused(xs[0], subs[0], needed(0) | set(''.join(subs[1:2])))
    for i in range(1, len(xs)):
        later = needed(i)
        y, sy = sum_unused(xs[i], subs[i], later | set(sx))
        x, sx = sum_unused(x, sx, later | set(sy))
        x, sx = _einsum_pair(x, sx, y, sy, later)
    x, sx = sum_unused(x, sx, set(out))
    if sx != out:
        x = ops.permute(x, [sx.index(c) for c in out])
    return x


@register_function(torch.addmm)
def torch_addmm(bias, a, b, *, beta=1, alpha=1):
    y = ops.matmul(a, b)
    if alpha != 1:
        y = ops.mul(y, alpha)
    return ops.add(y, ops.mul(bias, beta) if beta != 1 else bias)


for _name in ['exp', 'log', 'sqrt', 'rsqrt', 'sin', 'cos', 'tanh', 'erf', 'sigmoid', 'abs', 'floor', 'ceil',
              'reciprocal']:
    _op = getattr(ops, _name)
    register_function(getattr(torch, _name))(lambda x, *, out=None, _op=_op: _op(x))
    register_method(_name)(lambda x, _op=_op: _op(x))
register_function(F.sigmoid)(lambda x: ops.sigmoid(x))
register_function(F.tanh)(lambda x: ops.tanh(x))


@register_function(torch.relu, F.relu)
@register_method('relu')
def torch_relu(x, inplace=False):
    return ops.relu(x)


@register_function(F.relu6)
def torch_relu6(x, inplace=False):
    return ops.clamp(x, 0.0, 6.0)


@register_function(F.hardtanh)
def torch_hardtanh(x, min_val=-1.0, max_val=1.0, inplace=False):
    return ops.clamp(x, float(min_val), float(max_val))


@register_function(F.gelu)
def torch_gelu(x, approximate='none'):
    return ops.gelu(x, approximate == 'tanh')


@register_function(F.silu)
def torch_silu(x, inplace=False):
    return ops.silu(x)


@register_function(F.leaky_relu)
def torch_leaky_relu(x, negative_slope=0.01, inplace=False):
    return ops.leaky_relu(x, negative_slope)


@register_function(F.hardswish)
def torch_hardswish(x, inplace=False):
    return ops.mul(x, ops.div(ops.clamp(ops.add(x, 3.0), 0.0, 6.0), 6.0))


@register_function(F.hardsigmoid)
def torch_hardsigmoid(x, inplace=False):
    return ops.div(ops.clamp(ops.add(x, 3.0), 0.0, 6.0), 6.0)


@register_function(torch.clamp, torch.clip)
@register_method('clamp', 'clip')
def torch_clamp(x, min=None, max=None):
    if isinstance(min, Tensor) or isinstance(max, Tensor):  # tensor bounds (broadcast)
        if min is not None:
            x = ops.maximum(x, ops.cast(min, x.dtype) if isinstance(min, Tensor) else min)
        if max is not None:
            x = ops.minimum(x, ops.cast(max, x.dtype) if isinstance(max, Tensor) else max)
        return x
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    return ops.clamp(x, lo, hi)


@register_function(torch.where)
def torch_where(cond, a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):  # two Python scalars: float32
        a = hidet.full([1], float(a), 'float32', cond.device)
    if not isinstance(a, Tensor):
        a = hidet.full([1], float(a), b.dtype, b.device)
    if not isinstance(b, Tensor):
        b = hidet.full([1], float(b), a.dtype, a.device)
    return ops.where(cond, a, b)


@register_function(torch.isinf)
@register_method('isinf')
def torch_isinf(x):
    return ops.eq(ops.abs(x), math.inf)


@register_function(torch.isnan)
@register_method('isnan')
def torch_isnan(x):
    return ops.isnan(x)


def _bool_reduce(op):
    def mapping(x, dim=None, keepdim=False):
        if x.dtype != 'bool':
            x = ops.ne(x, 0.0)
        return op(x, _dims(dim, x.ndim), keepdim)
    return mapping


register_function(torch.any)(_bool_reduce(ops.any))
register_method('any')(_bool_reduce(ops.any))
register_function(torch.all)(_bool_reduce(ops.all))
register_method('all')(_bool_reduce(ops.all))


@register_method('masked_fill', 'masked_fill_')
def tensor_masked_fill(x, mask, value):
    fill = hidet.full([1], float(value), x.dtype, x.device)
    return ops.where(mask, fill, x)


for _fn, _op in [(operator.eq, ops.eq), (operator.ne, ops.ne), (operator.lt, ops.lt), (operator.le, ops.le),
                 (operator.gt, ops.gt), (operator.ge, ops.ge), (torch.eq, ops.eq), (torch.ne, ops.ne),
                 (torch.lt, ops.lt), (torch.gt, ops.gt)]:
    register_function(_fn)(lambda a, b, _op=_op: _op(a, b))

# ---------------------------------------------------------------------------- dtype and creation


@register_method('to')
def tensor_to(x, *args, dtype=None, device=None, **kwargs):
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
    if dtype is not None and dtype_name(dtype) != x.dtype:
        return ops.cast(x, dtype_name(dtype))
    return x


register_method('float')(lambda x: ops.cast(x, 'float32') if x.dtype != 'float32' else x)
register_method('half')(lambda x: ops.cast(x, 'float16') if x.dtype != 'float16' else x)
register_method('bfloat16')(lambda x: ops.cast(x, 'bfloat16') if x.dtype != 'bfloat16' else x)
register_method('type_as')(lambda x, other: ops.cast(x, other.dtype) if x.dtype != other.dtype else x)
register_method('contiguous', 'detach', 'clone')(lambda x, *a, **k: x)
@register_function(F.dropout, torch.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout)
def torch_dropout(x, p=0.5, training=False, inplace=False):
    if training and p > 0:
        raise NotImplementedError('dropout in training mode (random): call model.eval() and compile under '
                                  'torch.no_grad(), or let PyTorch run it with '
                                  'hidet.torch.dynamo_config.fallback_to_torch(True)')
    return x


@register_method('size')
def tensor_size(x, dim=None):
    shape = tuple(x.shape)
    return _size_tuple(shape) if dim is None else shape[dim]


register_method('dim')(lambda x: x.ndim)
register_function(torch.Size)(lambda sizes=(): _size_tuple(sizes))  # torch.Size([1, s0, 192]) of symbolic sizes


@register_function(getattr)
def tensor_getattr(obj, name):
    """getattr(x, name) as dynamo records a tensor's attributes: the shape as a tuple of sizes, and the transposes
    (T: every axis reversed, mT: the last two swapped; H and mH the same on real values), which a hidet tensor
    has no attribute for (DBRX's experts read ``w1.T``)."""
    if name == 'shape':
        return _size_tuple(obj.shape)
    if isinstance(obj, Tensor) and name in ('T', 'H'):
        return ops.permute(obj, list(range(obj.ndim))[::-1]) if obj.ndim >= 2 else obj
    if isinstance(obj, Tensor) and name in ('mT', 'mH'):
        if obj.ndim < 2:
            raise ValueError(f'tensor.{name} needs at least 2 dimensions, got a tensor of shape {list(obj.shape)}')
        return ops.transpose(obj, obj.ndim - 2, obj.ndim - 1)
    return getattr(obj, name)


@register_function(torch.arange)
def torch_arange(start, end=None, step=1, *, dtype=None, device=None, **kwargs):
    if end is None:
        start, end = 0, start
    name = dtype_name(dtype) if dtype is not None else (
        'int64' if all(isinstance(v, (int, hidet.Dim)) for v in (start, end, step)) else 'float32')
    if is_symbolic_size(start) or is_symbolic_size(end):  # arange(s1): a shape-generic operator
        return ops.arange(start, end, int(step), name, symbolic_inputs())
    return hidet.arange(float(start), float(end), float(step), name, 'cuda')


# ---------------------------------------------------------------------------- shapes


@register_method('view', 'reshape')
@register_function(torch.reshape)
def tensor_reshape(x, *shape):
    shape = _shape_arg(shape)
    if all(isinstance(d, int) for d in x.shape):
        return x.reshape(shape)  # a view (hidet tensors are contiguous): no kernel, no copy
    return ops.reshape(x, shape)


@register_function(torch.flatten)
@register_method('flatten')
def torch_flatten(x, start_dim=0, end_dim=-1):
    return ops.flatten(x, start_dim, end_dim)


@register_method('permute')
@register_function(torch.permute)
def tensor_permute(x, *dims):
    return ops.permute(x, [_axis(d, x.ndim) for d in _shape_arg(dims)])


@register_function(torch.transpose)
@register_method('transpose')
def torch_transpose(x, dim0, dim1):
    return ops.transpose(x, dim0, dim1)


register_method('t')(lambda x: ops.transpose(x, 0, 1) if x.ndim == 2 else x)


@register_function(torch.unsqueeze)
@register_method('unsqueeze')
def torch_unsqueeze(x, dim):
    return ops.unsqueeze(x, _axis(dim, x.ndim + 1))


@register_function(torch.squeeze)
@register_method('squeeze')
def torch_squeeze(x, dim=None):
    if dim is None:
        axes = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        axes = [d for d in _dims(dim, x.ndim) if x.shape[d] == 1]
    return ops.squeeze(x, axes) if axes else x


@register_method('expand')
def tensor_expand(x, *sizes):
    sizes = _shape_arg(sizes)
    lead = len(sizes) - x.ndim
    shape = [s if s != -1 else x.shape[i - lead] for i, s in enumerate(sizes)]
    return ops.broadcast_to(x, shape)


@register_method('expand_as')
def tensor_expand_as(x, other):
    return ops.broadcast_to(x, list(other.shape))


def _promoted(tensors):
    """The tensors of torch.cat or torch.stack cast to the dtype PyTorch joins them in (torch.promote_types over
    theirs: Gemma 3n stacks f16 and f32 hidden states into f32)."""
    tensors = list(tensors)
    if len({t.dtype for t in tensors}) <= 1:
        return tensors
    name = dtype_name(functools.reduce(torch.promote_types, [torch_dtype(t.dtype) for t in tensors]))
    return [t if t.dtype == name else ops.cast(t, name) for t in tensors]


@register_function(torch.cat, torch.concat)
def torch_cat(tensors, dim=0):
    # Like torch, 1-D empty tensors (an empty cache) are skipped.
    tensors = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors)[:1]
    return tensors[0] if len(tensors) == 1 else ops.concat(_promoted(tensors), dim)


@register_function(torch.stack)
def torch_stack(tensors, dim=0):
    ndim = tensors[0].ndim + 1
    return ops.concat([ops.unsqueeze(t, _axis(dim, ndim)) for t in _promoted(tensors)], dim)


@register_function(torch.split)
@register_method('split')
def torch_split(x, split_size_or_sections, dim=0):
    size = x.shape[_axis(dim, x.ndim)]
    if isinstance(split_size_or_sections, int):
        s = split_size_or_sections
        sizes = [s] * (size // s) + ([size % s] if size % s else [])
    else:
        sizes = list(split_size_or_sections)
    return tuple(ops.split(x, sizes, dim))


@register_function(torch.gather)
@register_method('gather')
def torch_gather(x, dim, index, *, sparse_grad=False):
    return ops.gather(x, dim, index)


@register_function(torch.index_select)
@register_method('index_select')
def torch_index_select(x, dim, index):
    return ops.take(x, index, _axis(dim, x.ndim))


@register_function(torch.chunk)
@register_method('chunk')
def torch_chunk(x, chunks, dim=0):
    size = x.shape[_axis(dim, x.ndim)]
    s = (size + chunks - 1) // chunks
    return torch_split(x, s, dim)


def _whole_axis(item):
    """True for ``:`` (slice(None)); a slice's == would compare its bounds, symbolic sizes too."""
    return isinstance(item, slice) and item.start is None and item.stop is None and item.step is None


@register_function(operator.getitem)
def operator_getitem(x, index):
    if not isinstance(x, Tensor):
        return x[index]
    if not isinstance(index, tuple):
        index = (index,)
    # A list of ints (x[..., [-2]], fx's immutable_list) indexes as the integer tensor of its values.
    index = tuple(_index_list(i) if isinstance(i, list) else i for i in index)
    if any(i is Ellipsis for i in index):
        k = index.index(Ellipsis)
        fill = x.ndim - (len(index) - 1 - sum(1 for i in index if i is None))
        index = index[:k] + (slice(None),) * (fill - k + sum(1 for i in index[:k] if i is None)) + index[k + 1:]
    axes, starts, stops, steps, squeeze, unsqueeze = [], [], [], [], [], []
    takes = []  # (axis, start, stop, step) of symbolic slices
    dim = 0
    out_dim = 0
    for item in index:
        if item is None:
            unsqueeze.append(out_dim)
            out_dim += 1
            continue
        if isinstance(item, Tensor):
            # x[..., i0, i1, ..., rest]: integer tensors at adjacent positions index their axes
            # together (broadcast against each other, numpy's rule); their broadcast shape
            # replaces those axes.
            first = next(k for k, i in enumerate(index) if i is item)
            last = first
            while last < len(index) and isinstance(index[last], Tensor):
                last += 1
            tensors = list(index[first:last])
            if any(isinstance(i, Tensor) for i in index[last:]) or any(t.dtype == 'bool' for t in tensors):
                raise NotImplementedError('indexing with a boolean tensor, or with integer tensors at positions '
                                          'that are not adjacent, is not mapped yet')
            y = ops.slice(x, axes, starts, stops, steps) if axes else x
            y = _take_ranges(y, takes)
            flat = tensors[0] if len(tensors) == 1 else _flat_index(y, tensors, dim)
            if len(tensors) > 1:  # the indexed axes merged into one, indexed by the flat index
                y = ops.reshape(y, list(y.shape[:dim]) + [math.prod(y.shape[dim:dim + len(tensors)])] +
                                list(y.shape[dim + len(tensors):]))
            y = ops.take(y, flat, dim)
            rest = index[last:]
            if rest:
                y = operator_getitem(y, (slice(None),) * (dim + flat.ndim) + tuple(rest))
            if squeeze:
                y = ops.squeeze(y, squeeze)
            for d in unsqueeze:
                y = ops.unsqueeze(y, d)
            return y
        n = x.shape[dim]
        if _whole_axis(item):  # a whole axis (of any size, symbolic too)
            out_dim += 1
            dim += 1
            continue
        if _symbolic_item(item, n):  # bounds or extent symbolic: a take of an arange (shape-generic)
            start, stop, step = _symbolic_bounds(item, n)
            takes.append((dim, start, stop, step))
            if not isinstance(item, slice):  # an index (an int or a size): the axis goes
                squeeze.append(dim)
            else:
                out_dim += 1
        elif isinstance(item, int):
            i = item + n if item < 0 else item
            axes.append(dim), starts.append(i), stops.append(i + 1), steps.append(1)
            squeeze.append(dim)
        else:
            start, stop, step = item.indices(n)
            if (start, stop, step) != (0, n, 1):
                axes.append(dim), starts.append(start), stops.append(stop), steps.append(step)
            out_dim += 1
        dim += 1
    y = ops.slice(x, axes, starts, stops, steps) if axes else x
    y = _take_ranges(y, takes)
    if squeeze:
        y = ops.squeeze(y, squeeze)
    for d in unsqueeze:
        y = ops.unsqueeze(y, d)
    return y


@register_function(torch.diff)
@register_method('diff')
def torch_diff(x, n=1, dim=-1, prepend=None, append=None):
    axis = _axis(dim, x.ndim)
    parts = [p for p in (prepend, x, append) if p is not None]
    y = ops.concat(parts, axis) if len(parts) > 1 else x
    lead = (slice(None),) * axis
    for _ in range(n):
        y = ops.sub(operator_getitem(y, lead + (slice(1, None),)), operator_getitem(y, lead + (slice(None, -1),)))
    return y


def _index_list(items):
    """A list index as a constant tensor: int64 for ints, bool for bools (refused by getitem)."""
    if not all(isinstance(v, (int, bool)) for v in items):
        raise NotImplementedError(f'indexing with the list {items!r} (of other than ints) is not mapped')
    dtype = torch.bool if items and all(isinstance(v, bool) for v in items) else torch.int64
    device = 'cpu' if hidet.cuda_emulated() else 'cuda'  # where hidet's 'cuda' tensors live
    return hidet.from_torch(torch.tensor(list(items), dtype=dtype, device=device))


def _take_ranges(x, takes):
    """x with each (axis, start, stop, step) of `takes` applied as a take of a shape-generic arange:
    a slice whose bounds or axis are symbolic."""
    for d, start, stop, step in takes:
        x = ops.take(x, ops.arange(start, stop, step, 'int64', symbolic_inputs()), d)
    return x


def _size_operand(n):
    """An extent as an operand of index arithmetic: the int, or a one-element int64 tensor holding a
    symbolic size's value (a shape-generic arange of length 1)."""
    return n if not is_symbolic_size(n) else ops.arange(n, n + 1, 1, 'int64', symbolic_inputs())


def _flat_index(x, tensors, dim):
    """The index into x's axes dim, dim+1, ... merged into one, of the integer tensors indexing them
    (negative entries count from their axis' end)."""
    flat = None
    for k, t in enumerate(tensors):
        n = _size_operand(x.shape[dim + k])
        t = ops.cast(t, 'int64') if t.dtype != 'int64' else t
        t = ops.where(ops.lt(t, 0.0), ops.add(t, n), t)
        flat = t if flat is None else ops.add(ops.mul(flat, n), t)
    return flat


def _symbolic_item(item, n):
    if isinstance(item, slice):
        return any(is_symbolic_size(v) for v in (n, item.start, item.stop, item.step))
    return is_symbolic_size(n) or is_symbolic_size(item)


def _symbolic_bounds(item, n):
    """(start, stop, step) of an index or slice on an axis of extent n, where n or a bound is a
    symbolic size: negative ints count from the end; symbolic bounds are taken to lie in [0, n]
    (Python would clamp them; dynamo's sizes do)."""
    if not isinstance(item, slice):
        i = item + n if isinstance(item, int) and item < 0 else item
        return i, i + 1, 1
    step = 1 if item.step is None else item.step
    if not isinstance(step, int) or step <= 0:
        raise NotImplementedError(f'a slice of step {step} on a symbolic axis')

    def bound(v, default):
        if v is None:
            return default
        return v + n if isinstance(v, int) and v < 0 else v

    return bound(item.start, 0), bound(item.stop, n), step


# ---------------------------------------------------------------------------- reductions


def _reduce(op):
    def mapping(x, dim=None, keepdim=False, *, dtype=None):
        y = op(x, _dims(dim, x.ndim), keepdim)
        return ops.cast(y, dtype_name(dtype)) if dtype is not None else y
    return mapping


register_function(torch.sum)(_reduce(ops.sum))
register_method('sum')(_reduce(ops.sum))
register_function(torch.mean)(_reduce(ops.mean))
register_method('mean')(_reduce(ops.mean))


@register_method('var')
@register_function(torch.var)
def torch_var(x, dim=None, unbiased=True, keepdim=False, *, correction=None):
    c = correction if correction is not None else (1 if unbiased else 0)
    return ops.var(x, _dims(dim, x.ndim), keepdim, c)


@register_method('std')
@register_function(torch.std)
def torch_std(x, dim=None, unbiased=True, keepdim=False, *, correction=None):
    return ops.sqrt(torch_var(x, dim, unbiased, keepdim, correction=correction))


def _amax_amin(reduce):
    def mapping(x, dim=(), keepdim=False, *, out=None):
        dims = [] if dim is None or dim == () or dim == [] else _dims(dim, x.ndim)
        return reduce(x, dims, keepdim)
    return mapping


register_function(torch.amax)(_amax_amin(ops.max))
register_method('amax')(_amax_amin(ops.max))
register_function(torch.amin)(_amax_amin(ops.min))
register_method('amin')(_amax_amin(ops.min))


def _in_opmath(x, fn):
    """fn(x) computed in f32 for an f16 or bf16 x and rounded once at the end, as PyTorch's kernels
    compute a function of several steps (softplus, logsigmoid, elu, mish, logsumexp) in their
    "opmath" type: a chain of hidet operators in f16 rounds after each one (softplus's 1 + exp(x)
    of a negative x keeps about three digits of exp(x) in f16)."""
    if x.dtype in ('float16', 'bfloat16'):
        return ops.cast(fn(ops.cast(x, 'float32')), x.dtype)
    return fn(x)


@register_function(torch.logsumexp)
@register_method('logsumexp')
def torch_logsumexp(x, dim, keepdim=False, *, out=None):
    """max + log(sum(exp(x - max))): no overflow for large x; in f32 for half inputs."""
    dims = _dims(dim, x.ndim)

    def lse(v):
        m = ops.max(v, dims, True)
        y = ops.add(ops.log(ops.sum(ops.exp(ops.sub(v, m)), dims, True)), m)
        return y if keepdim else ops.squeeze(y, dims)
    return _in_opmath(x, lse)


@register_function(torch.linalg.solve_triangular)
def torch_solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (left) or X A = B, A triangular (ops.solve_triangular: one thread per column
    of X, row by row; for the small systems of chunked linear attention: Qwen3-Next's and Qwen3.5's
    gated delta rule solves 64 x 64 chunks). f32 and f64, as PyTorch on CUDA."""
    return ops.solve_triangular(A, B, bool(upper), bool(left), bool(unitriangular))


@register_function(torch.linalg.vector_norm)
def torch_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The p-norm over dims (every dim for None): 2, 1, inf, -inf, 0 (the count of non-zeros) and
    any other p as sum(|x|^p)^(1/p). f16 and bf16 inputs accumulate in f32, as PyTorch's do."""
    if dtype is not None:
        x = ops.cast(x, dtype_name(dtype))
    out_dtype = x.dtype
    if x.dtype in ('float16', 'bfloat16'):
        x = ops.cast(x, 'float32')
    dims = _dims(dim, x.ndim)
    ord = float(ord)
    if ord == 2:
        y = ops.sqrt(ops.sum(ops.mul(x, x), dims, keepdim))
    elif ord == 1:
        y = ops.sum(ops.abs(x), dims, keepdim)
    elif ord == math.inf:
        y = ops.max(ops.abs(x), dims, keepdim)
    elif ord == -math.inf:
        y = ops.min(ops.abs(x), dims, keepdim)
    elif ord == 0:
        y = ops.sum(ops.cast(ops.ne(x, 0.0), x.dtype), dims, keepdim)
    else:
        y = ops.pow(ops.sum(ops.pow(ops.abs(x), ord), dims, keepdim), 1.0 / ord)
    return ops.cast(y, out_dtype) if y.dtype != out_dtype else y


@register_function(torch.norm)
@register_method('norm')
def torch_norm(x, p='fro', dim=None, keepdim=False, dtype=None, *, out=None):
    """torch.norm / Tensor.norm: 'fro' and numbers as vector norms over dim (ConvNeXt-V2's global
    response norm); the nuclear norm is not mapped."""
    if p == 'nuc':
        raise NotImplementedError("torch.norm with p='nuc' is not mapped (it needs a singular value decomposition)")
    return torch_vector_norm(x, 2 if p in ('fro', None) else p, dim, keepdim, dtype=dtype)


@register_function(torch.square)
@register_method('square')
def torch_square(x, *, out=None):
    return ops.mul(x, x)


@register_function(torch.log1p)
@register_method('log1p')
def torch_log1p(x, *, out=None):
    return ops.log1p(x)  # log(1 + x) would lose every digit of a small x


@register_function(torch.expm1)
@register_method('expm1')
def torch_expm1(x, *, out=None):
    return ops.expm1(x)


@register_function(torch.erfc, torch.special.erfc)
@register_method('erfc')
def torch_erfc(x, *, out=None):
    return ops.erfc(x)  # 1 - erf(x) would lose the digits of a small erfc (x > 2)


@register_function(torch.sign)
@register_method('sign')
def torch_sign(x, *, out=None):
    one = hidet.full([1], 1.0, x.dtype, x.device)
    zero = hidet.full([1], 0.0, x.dtype, x.device)
    return ops.sub(ops.where(ops.gt(x, 0.0), one, zero), ops.where(ops.lt(x, 0.0), one, zero))


@register_function(F.logsigmoid)
def torch_logsigmoid(x):
    # log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)): no overflow either way; in f32 for half inputs.
    return _in_opmath(x, lambda v: ops.sub(ops.minimum(v, 0.0), ops.log1p(ops.exp(ops.neg(ops.abs(v))))))


@register_function(F.glu)
def torch_glu(x, dim=-1):
    a, b = ops.split(x, [x.shape[_axis(dim, x.ndim)] // 2] * 2, _axis(dim, x.ndim))
    return ops.mul(a, ops.sigmoid(b))


@register_function(torch.outer, torch.ger)
@register_method('outer')
def torch_outer(a, b):
    return ops.mul(ops.unsqueeze(a, 1), ops.unsqueeze(b, 0))


@register_function(F.one_hot)
def torch_one_hot(x, num_classes=-1):
    if num_classes < 0:
        raise NotImplementedError('one_hot needs num_classes (the class count is data)')
    classes = hidet.arange(0.0, float(num_classes), 1.0, 'int64', x.device)
    return ops.cast(ops.eq(ops.unsqueeze(x, len(x.shape)), classes), 'int64')


_Extremum = collections.namedtuple('Extremum', ['values', 'indices'])


def _extremum(reduce, elementwise, arg):
    def mapping(x, dim=None, keepdim=False):
        if isinstance(dim, Tensor):  # torch.max(a, b): element-wise
            return elementwise(x, dim)
        if dim is None:
            return reduce(x, [], False)
        d = _axis(dim, x.ndim)
        return _Extremum(reduce(x, [d], keepdim), arg(x, d, keepdim))
    return mapping


register_function(torch.max)(_extremum(ops.max, ops.maximum, ops.argmax))
register_method('max')(_extremum(ops.max, ops.maximum, ops.argmax))
register_function(torch.min)(_extremum(ops.min, ops.minimum, ops.argmin))
register_method('min')(_extremum(ops.min, ops.minimum, ops.argmin))


@register_function(torch.argmax)
@register_method('argmax')
def torch_argmax(x, dim=None, keepdim=False):
    if dim is None:
        return ops.argmax(ops.reshape(x, [-1]), 0, False)
    return ops.argmax(x, _axis(dim, x.ndim), keepdim)


@register_function(torch.maximum)
def torch_maximum(a, b):
    return ops.maximum(a, b)


@register_function(torch.minimum)
def torch_minimum(a, b):
    return ops.minimum(a, b)


@register_function(torch.cumsum)
@register_method('cumsum')
def torch_cumsum(x, dim, *, dtype=None, out=None):
    """With dtype, x is cast first (PyTorch's rule; MoE routers take int32 offsets of float counts
    by cumsum(counts, dtype=torch.int32)); integers and bool sum in int64."""
    if dtype is None:
        return ops.cumsum(x, _axis(dim, x.ndim))
    d = dtype_name(dtype)
    y = ops.cumsum(ops.cast(x, d), _axis(dim, x.ndim))  # integers sum in int64: back to d
    return y if y.dtype == d else ops.cast(y, d)


def _softmax(op):
    def mapping(x, dim=-1, _stacklevel=3, dtype=None):
        if dtype is not None:
            x = ops.cast(x, dtype_name(dtype))
        return op(x, dim)
    return mapping


register_function(torch.softmax, F.softmax)(_softmax(ops.softmax))
register_method('softmax')(_softmax(ops.softmax))
register_function(torch.log_softmax, F.log_softmax)(_softmax(ops.log_softmax))
register_method('log_softmax')(_softmax(ops.log_softmax))


# ---------------------------------------------------------------------------- neural-network functions


@register_function(F.linear, torch._C._nn.linear)
def torch_linear(x, weight, bias=None):
    return ops.linear(x, weight, bias)


def _pair(v):
    return [int(v)] * 2 if isinstance(v, int) else [int(a) for a in v]


@register_function(F.conv2d, torch.conv2d)
def torch_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if isinstance(padding, str):
        if padding == 'valid':
            padding = 0
        else:  # 'same' (stride 1): PyTorch pads the extra element at the end
            kh, kw = weight.shape[2], weight.shape[3]
            d = _pair(dilation)
            total = [d[0] * (kh - 1), d[1] * (kw - 1)]
            if total[0] % 2 or total[1] % 2:  # the extra element at the end (W pair, then H)
                x = ops.pad(x, [0, total[1] % 2, 0, total[0] % 2])
            padding = [total[0] // 2, total[1] // 2]
    return ops.conv2d(x, weight, bias, _pair(stride), _pair(padding), _pair(dilation), int(groups))


def _single(v):
    return int(v[0]) if isinstance(v, (list, tuple)) else int(v)


@register_function(F.conv1d, torch.conv1d)
def torch_conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A conv2d of height 1: x [N, C, L] as [N, C, 1, L] (an unbatched [C, L] too)."""
    unbatched = len(x.shape) == 2
    if unbatched:
        x = x.reshape([1] + list(x.shape))
    n, c, length = x.shape
    o, cg, k = weight.shape
    if isinstance(padding, str):
        if padding == 'valid':
            padding = 0
        else:  # 'same' (stride 1): the extra element at the end
            total = _single(dilation) * (k - 1)
            if total % 2:
                x = ops.pad(x, [0, 1])
                length += 1
            padding = total // 2
    y = ops.conv2d(x.reshape([n, c, 1, length]), weight.reshape([o, cg, 1, k]), bias, [1, _single(stride)],
                   [0, _single(padding)], [1, _single(dilation)], int(groups))
    y = y.reshape([n, o, y.shape[3]])
    return y.reshape(list(y.shape[1:])) if unbatched else y


@register_function(F.softplus)
def torch_softplus(x, beta=1.0, threshold=20.0):
    """log1p(exp(beta x)) / beta, x itself past the threshold (PyTorch's rule); in f32 for half inputs
    and rounded once, as PyTorch computes it (Mamba's time steps, softplus of about -7 to -2: in
    f16 steps, 1 + exp(x) kept three digits of exp(x) and the model missed eager by 1.6e-2)."""
    def soft(v):
        bv = ops.mul(v, float(beta)) if beta != 1 else v
        y = ops.log1p(ops.exp(ops.minimum(bv, float(threshold))))
        if beta != 1:
            y = ops.div(y, float(beta))
        return ops.where(ops.gt(bv, float(threshold)), v, y)
    return _in_opmath(x, soft)


@register_function(F.mish)
def torch_mish(x, inplace=False):
    return _in_opmath(x, lambda v: ops.mul(v, ops.tanh(torch_softplus(v))))


@register_function(F.elu)
def torch_elu(x, alpha=1.0, inplace=False):
    return _in_opmath(x, lambda v: ops.where(ops.gt(v, 0.0), v, ops.mul(ops.expm1(ops.minimum(v, 0.0)), float(alpha))))


@register_function(torch.baddbmm)
@register_method('baddbmm')
def torch_baddbmm(inp, batch1, batch2, *, beta=1, alpha=1):
    y = ops.matmul(batch1, batch2)
    if alpha != 1:
        y = ops.mul(y, float(alpha))
    if beta == 0:
        return y
    return ops.add(y, ops.mul(inp, float(beta)) if beta != 1 else inp)


def _resize_matrix(n, out, mode, align_corners, scale, antialias):
    """How PyTorch resizes one axis of extent n to `out`: the [out, n] matrix of weights, computed
    by PyTorch itself on the identity (every mode is separable and linear in the input)."""
    eye = torch.eye(n, dtype=torch.float64).reshape(n, 1, n, 1)
    kwargs = {} if mode.startswith('nearest') else {'align_corners': align_corners}
    if antialias:
        kwargs['antialias'] = True
    if scale is not None:
        m = F.interpolate(eye, scale_factor=(float(scale), 1.0), mode=mode, **kwargs)
    else:
        m = F.interpolate(eye, size=(out, 1), mode=mode, **kwargs)
    return m.reshape(n, -1).t().contiguous()  # [out, n]


@register_function(F.interpolate, F.upsample, F.upsample_nearest, F.upsample_bilinear)
def torch_interpolate(x, size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None,
                      antialias=False):
    """Resizing of [N, C, L] ('nearest', 'linear') or [N, C, H, W] ('nearest', 'nearest-exact',
    'bilinear', 'bicubic'), axis by axis: PyTorch computes each axis' weights once (at compile
    time); nearest-neighbour axes gather (ops.take), the others are products with the weights."""
    spatial = len(x.shape) - 2
    modes2d = {'linear': 'bilinear', 'nearest': 'nearest', 'nearest-exact': 'nearest-exact'}
    if spatial not in (1, 2) or (spatial == 1 and mode not in modes2d) or \
            (spatial == 2 and mode not in ('nearest', 'nearest-exact', 'bilinear', 'bicubic')):
        raise NotImplementedError(f"interpolate(mode='{mode}') of a {len(x.shape)}-D tensor is not mapped yet "
                                  f"(mapped: 'nearest', 'nearest-exact', 'linear' of [N, C, L]; 'nearest', "
                                  f"'nearest-exact', 'bilinear', 'bicubic' of [N, C, H, W])")
    mode2d = modes2d.get(mode, mode) if spatial == 1 else mode
    extents = list(x.shape[2:])
    if size is not None:
        outs = [int(v) for v in (size if isinstance(size, (list, tuple)) else [size] * spatial)]
        scales = [None] * spatial
    else:
        factors = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * spatial
        outs = [int(math.floor(n * float(f))) for n, f in zip(extents, factors)]
        # With recompute_scale_factor, PyTorch maps coordinates by the sizes, else by the factors.
        scales = [None if recompute_scale_factor else f for f in factors]
    device = 'cpu' if hidet.cuda_emulated() else 'cuda'  # where hidet's 'cuda' tensors live
    for k in range(spatial):
        axis = 2 + k
        n, out = extents[k], outs[k]
        if n == out and scales[k] in (None, 1, 1.0) and not antialias:
            continue
        m = _resize_matrix(n, out, mode2d, align_corners, scales[k], antialias)
        if mode.startswith('nearest'):
            x = ops.take(x, hidet.from_torch(m.argmax(dim=1).to(device)), axis)
            continue
        w = hidet.from_torch(m.t().to(torch_dtype(x.dtype)).to(device))
        # The axis to the end, a product with the [n, out] weights, the axis back.
        perm = [d for d in range(len(x.shape)) if d != axis] + [axis]
        inverse = [perm.index(d) for d in range(len(x.shape))]
        x = ops.permute(ops.matmul(ops.permute(x, perm), w), inverse)
    return x


class _ComplexPair(collections.namedtuple('_ComplexPair', ['real', 'imag'])):
    """A complex tensor as its real and imaginary parts (hidet has no complex dtype): the value of
    an FFT, of which a model takes .real or .imag (FNet's ``torch.fft.fftn(x, dim=(1, 2)).real``).
    A tuple, so that the interpreter sees the hidet tensors in it."""

    @property
    def ndim(self):
        return self.real.ndim


def _dft_axis(re, im, axis, norm):
    """The DFT along `axis` of re + i im (im None: a real input), X[k] = sum_n x[n] exp(-2 pi i n k / N),
    as real products with the [N, N] cosine and sine matrices (computed now, in double precision)."""
    n = re.shape[axis]
    if not isinstance(n, int):
        raise NotImplementedError(f'an FFT over a symbolic extent {n} is not mapped')
    k = torch.arange(n, dtype=torch.float64)
    angle = 2 * math.pi * torch.outer(k, k).remainder(n) / n  # nk mod N keeps the angle exact
    scale = {'backward': 1.0, 'ortho': 1.0 / math.sqrt(n), 'forward': 1.0 / n}[norm or 'backward']
    device = 'cpu' if hidet.cuda_emulated() else 'cuda'  # where hidet's 'cuda' tensors live
    cos, sin = (hidet.from_torch((f(angle) * scale).to(torch_dtype(re.dtype)).to(device).contiguous())
                for f in (torch.cos, torch.sin))
    perm = [d for d in range(re.ndim) if d != axis] + [axis]
    inverse = [perm.index(d) for d in range(re.ndim)]

    def product(t, w):  # t's `axis` times the matrix w
        return ops.permute(ops.matmul(ops.permute(t, perm), w), inverse)
    # (a + ib)(cos - i sin) = (a cos + b sin) + i (b cos - a sin)
    out_re, out_im = product(re, cos), ops.neg(product(re, sin))
    if im is not None:
        out_re = ops.add(out_re, product(im, sin))
        out_im = ops.add(out_im, product(im, cos))
    return out_re, out_im


def _fft(default_dims):
    def mapping(input, s=None, dim=default_dims, norm=None, *, n=None, axis=None, out=None):
        re, im = (input.real, input.imag) if isinstance(input, _ComplexPair) else (input, None)
        if re.dtype not in ('float32', 'float16', 'bfloat16', 'float64'):
            re = ops.cast(re, 'float32')
        if isinstance(s, int) and default_dims == -1:  # fft(x, n, dim, norm): n positional
            s, n = None, s
        if s is not None or n is not None:
            raise NotImplementedError('an FFT with a signal size (s= or n=, padding or trimming) is not mapped yet')
        if norm not in (None, 'backward', 'ortho', 'forward'):
            raise ValueError(f"FFT: norm={norm!r} is not one of 'backward', 'ortho', 'forward'")
        dims = dim if axis is None else axis
        dims = list(range(re.ndim)) if dims is None else [dims] if isinstance(dims, int) else list(dims)
        for d in dims:
            re, im = _dft_axis(re, im, _axis(d, re.ndim), norm)
        return _ComplexPair(re, im)
    return mapping


register_function(torch.fft.fft)(_fft(-1))
register_function(torch.fft.fft2)(_fft((-2, -1)))
register_function(torch.fft.fftn)(_fft(None))
register_function(torch.real)(lambda input: input.real if isinstance(input, _ComplexPair) else input)  # as PyTorch


@register_function(torch.imag)
def torch_imag(input):
    if not isinstance(input, _ComplexPair):
        raise ValueError(f'imag of a real tensor (dtype {input.dtype}): PyTorch refuses it too')
    return input.imag


@register_function(F.max_pool2d, torch.max_pool2d)
def torch_max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise NotImplementedError('max_pool2d with return_indices=True is not mapped yet')
    stride = _pair(kernel_size) if stride is None or stride == [] else _pair(stride)
    k, p, d = _pair(kernel_size), _pair(padding), _pair(dilation)
    extents = list(x.shape[-2:])
    if ceil_mode and all(isinstance(n, int) for n in extents) and \
            any(d[i] * (k[i] - 1) + 1 > extents[i] + 2 * p[i] for i in range(2)):
        # ceil_mode with a window past the padded input (VoVNet's 3x3 pool of a 2x2 map): PyTorch
        # gives one window at the start. The input padded by -inf to exactly the windows PyTorch
        # takes, then pooled without padding or ceil_mode.
        pads = []
        for i in (1, 0):  # PyTorch's order: the last axis first
            n, window = extents[i], d[i] * (k[i] - 1) + 1
            out = -(-(n + 2 * p[i] - window) // stride[i]) + 1
            if (out - 1) * stride[i] >= n + p[i]:  # the last window starts in the right padding
                out -= 1
            pads += [p[i], max(p[i], (out - 1) * stride[i] + window - n - p[i])]
        return ops.max_pool2d(ops.pad(x, pads, -math.inf), k, stride, [0, 0], d, False)
    return ops.max_pool2d(x, k, stride, p, d, ceil_mode)


@register_function(F.avg_pool2d, torch._C._nn.avg_pool2d)
def torch_avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                     divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError('avg_pool2d with divisor_override is not mapped yet')
    stride = _pair(kernel_size) if stride is None or stride == [] else _pair(stride)
    return ops.avg_pool2d(x, _pair(kernel_size), stride, _pair(padding), ceil_mode, count_include_pad)


def _adaptive_size(x, output_size):
    return _pair(output_size) if not isinstance(output_size, (list, tuple)) else \
        [x.shape[2 + i] if s is None else int(s) for i, s in enumerate(output_size)]


@register_function(F.adaptive_avg_pool2d, torch._C._nn.adaptive_avg_pool2d)
def torch_adaptive_avg_pool2d(x, output_size):
    return ops.adaptive_avg_pool2d(x, _adaptive_size(x, output_size))


@register_function(F.adaptive_max_pool2d)
def torch_adaptive_max_pool2d(x, output_size, return_indices=False):
    if return_indices:
        raise NotImplementedError('adaptive_max_pool2d with return_indices=True is not mapped yet (the indices)')
    if x.ndim == 3:  # [C, H, W]
        x4 = ops.unsqueeze(x, 0)
        return ops.squeeze(ops.adaptive_max_pool2d(x4, _adaptive_size(x4, output_size)), [0])
    return ops.adaptive_max_pool2d(x, _adaptive_size(x, output_size))


@register_function(F.batch_norm, torch.batch_norm)
def torch_batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5,
                     *args):
    if training:
        raise NotImplementedError('batch_norm in training mode is not mapped (call model.eval())')
    return ops.batch_norm(x, running_mean, running_var, weight, bias, float(eps))


@register_function(F.layer_norm, torch.layer_norm)
def torch_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, *args):
    return ops.layer_norm(x, len(normalized_shape), weight, bias, float(eps))


@register_function(F.group_norm, torch.group_norm)
def torch_group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, *args):
    return ops.group_norm(x, int(num_groups), weight, bias, float(eps))


@register_function(F.instance_norm)
def torch_instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                        momentum=0.1, eps=1e-5):
    """Each channel of each sample normalized on its own: a group norm of one channel per group."""
    if not use_input_stats:  # normalized by running statistics: a batch norm
        return ops.batch_norm(x, running_mean, running_var, weight, bias, float(eps))
    return ops.group_norm(x, int(x.shape[1]), weight, bias, float(eps))


@register_function(F.normalize)
def torch_normalize(x, p=2.0, dim=1, eps=1e-12, out=None):
    if p != 2:
        raise NotImplementedError(f'normalize with p={p} is not mapped yet (p=2 is)')
    norm = ops.sqrt(ops.sum(ops.mul(x, x), [_axis(dim, x.ndim)], True))
    return ops.div(x, ops.maximum(norm, float(eps)))


def _triangle(upper):
    def mapping(x, diagonal=0, *, out=None):
        rows, cols = x.shape[-2], x.shape[-1]
        i = torch.arange(rows).reshape(rows, 1)
        j = torch.arange(cols).reshape(1, cols)
        keep = (j - i >= diagonal) if upper else (j - i <= diagonal)
        device = 'cpu' if hidet.cuda_emulated() else 'cuda'
        return ops.where(hidet.from_torch(keep.to(device)), x, hidet.full([1], 0.0, x.dtype, x.device))
    return mapping


register_function(torch.tril)(_triangle(False))
register_method('tril')(_triangle(False))
register_function(torch.triu)(_triangle(True))
register_method('triu')(_triangle(True))


def _as_2d(pool2d):
    """A 1-D pooling of [N, C, L] (or [C, L]) as the 2-D one of [N, C, 1, L]."""
    def mapping(x, kernel_size, stride=None, padding=0, *args, **kwargs):
        unbatched = len(x.shape) == 2
        x4 = x.reshape(([1] if unbatched else []) + list(x.shape[:-1]) + [1, x.shape[-1]])
        stride = kernel_size if stride is None or stride == [] else stride
        y = pool2d(x4, [1, _single(kernel_size)], [1, _single(stride)], [0, _single(padding)], *args, **kwargs)
        shape = list(y.shape[:2]) + [y.shape[3]]
        return y.reshape(shape[1:] if unbatched else shape)
    return mapping


register_function(F.max_pool1d, torch.max_pool1d)(_as_2d(torch_max_pool2d))
register_function(F.avg_pool1d, torch.avg_pool1d)(_as_2d(torch_avg_pool2d))


@register_function(F.adaptive_avg_pool1d, torch.adaptive_avg_pool1d)
def torch_adaptive_avg_pool1d(x, output_size):
    n, c, length = x.shape
    y = ops.adaptive_avg_pool2d(x.reshape([n, c, 1, length]), [1, _single(output_size)])
    return y.reshape([n, c, y.shape[3]])


def _grid_reflect(v, twice_low, twice_high):
    """PyTorch's reflection of grid coordinates v into [twice_low / 2, twice_high / 2]."""
    if twice_low == twice_high:
        return ops.mul(v, 0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    v = ops.abs(ops.sub(v, low))
    extra = ops.fmod(v, span)
    even = ops.eq(ops.fmod(ops.floor(ops.div(v, span)), 2.0), 0.0)
    return ops.where(even, ops.add(extra, low), ops.add(ops.neg(extra), span + low))


_GRID_MODES = ['bilinear', 'nearest', 'bicubic']
_GRID_PADDINGS = ['zeros', 'border', 'reflection']


@register_function(F.grid_sample)
def torch_grid_sample(input, grid, mode='bilinear', padding_mode='zeros', align_corners=None):
    """2-D grid_sample (RAFT's correlation lookups, the deformable attention of DETR-style models)
    as gathers: the grid's coordinates in f32, unnormalized, clamped or reflected as PyTorch does;
    each output pixel reads its nearest or four neighbouring input pixels from input viewed as
    [N, C, H * W] and weighs them, taps outside the input giving 0 (padding_mode 'zeros')."""
    if len(input.shape) != 4:
        raise NotImplementedError('grid_sample of a 5-D input (volumetric) is not mapped yet (4-D is)')
    if mode not in ('bilinear', 'nearest'):
        raise NotImplementedError(f"grid_sample with mode='{mode}' is not mapped yet (bilinear and nearest are)")
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError(f"grid_sample: padding_mode must be one of {_GRID_PADDINGS}, got '{padding_mode}'")
    if len(grid.shape) != 4 or grid.shape[3] != 2 or grid.shape[0] != input.shape[0]:
        raise ValueError(f'grid_sample: expected a grid of shape [N, H_out, W_out, 2] with N = {input.shape[0]}, '
                         f'got {list(grid.shape)}')
    align = bool(align_corners)
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    g = ops.cast(grid, 'float32')
    coords = []
    for axis, size in ((0, w), (1, h)):
        v = ops.squeeze(ops.slice(g, [3], [axis], [axis + 1], [1]), [3])  # [N, H_out, W_out]
        if align:
            v = ops.mul(ops.add(v, 1.0), (size - 1) / 2)
        else:
            v = ops.sub(ops.mul(ops.add(v, 1.0), size / 2), 0.5)
        if padding_mode == 'reflection':
            v = _grid_reflect(v, 0, 2 * (size - 1)) if align else _grid_reflect(v, -1, 2 * size - 1)
        if padding_mode != 'zeros':
            v = ops.clamp(v, 0.0, float(size - 1))
        coords.append(v)
    ix, iy = coords
    flat = ops.reshape(input, [n, c, h * w])
    zero = hidet.full([1], 0.0, 'float32', input.device)

    def tap(xi, yi):
        """The input at integral coordinates (xi, yi) [N, H_out, W_out] as f32 [N, C, H_out * W_out],
        0 where they lie outside it."""
        inside = ops.logical_and(ops.logical_and(ops.ge(xi, 0.0), ops.le(xi, float(w - 1))),
                                 ops.logical_and(ops.ge(yi, 0.0), ops.le(yi, float(h - 1))))
        xc = ops.cast(ops.clamp(xi, 0.0, float(w - 1)), 'int64')
        yc = ops.cast(ops.clamp(yi, 0.0, float(h - 1)), 'int64')
        idx = ops.reshape(ops.add(ops.mul(yc, w), xc), [n, 1, ho * wo])
        v = ops.cast(ops.gather(flat, 2, ops.broadcast_to(idx, [n, c, ho * wo])), 'float32')
        return ops.where(ops.reshape(inside, [n, 1, ho * wo]), v, zero)

    if mode == 'nearest':  # nearest-even rounding, as PyTorch's nearbyint
        out = tap(ops.round(ix), ops.round(iy))
    else:
        x0, y0 = ops.floor(ix), ops.floor(iy)
        x1, y1 = ops.add(x0, 1.0), ops.add(y0, 1.0)
        wx1, wy1 = ops.sub(ix, x0), ops.sub(iy, y0)
        wx0, wy0 = ops.sub(x1, ix), ops.sub(y1, iy)
        out = None
        for xi, yi, wx, wy in ((x0, y0, wx0, wy0), (x1, y0, wx1, wy0), (x0, y1, wx0, wy1), (x1, y1, wx1, wy1)):
            term = ops.mul(tap(xi, yi), ops.reshape(ops.mul(wx, wy), [n, 1, ho * wo]))
            out = term if out is None else ops.add(out, term)
    return ops.cast(ops.reshape(out, [n, c, ho, wo]), input.dtype)


def torchvision_roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio=-1,
                          aligned=False):
    """torchvision's roi_align (the box heads of Faster, Mask and Keypoint R-CNN, through
    MultiScaleRoIAlign) with a fixed sampling ratio, as torchvision's kernel computes it: each output
    bin of roi k averages sampling_ratio x sampling_ratio bilinear samples of image rois[k, 0]. The
    sample positions (f32) and their weights are separable per axis, [K, pooled * ratio]; each of the
    four neighbours is gathered from input viewed channels-last [N * H * W, C]."""
    if sampling_ratio is None or int(sampling_ratio) <= 0:
        raise NotImplementedError(
            'roi_align with an adaptive sampling ratio (sampling_ratio <= 0: a sample count per roi that '
            'depends on its size) is not mapped; pass sampling_ratio > 0 (torchvision\'s R-CNNs use 2) or '
            'let PyTorch run it: hidet.torch.dynamo_config.fallback_to_torch(True)')
    if len(input.shape) != 4 or len(rois.shape) != 2 or rois.shape[1] != 5:
        raise ValueError(f'roi_align: expected input [N, C, H, W] and rois [K, 5], got {list(input.shape)} and '
                         f'{list(rois.shape)}')
    n, c, h, w = input.shape
    k = rois.shape[0]
    ph, pw, sr = int(pooled_height), int(pooled_width), int(sampling_ratio)
    r = ops.cast(rois, 'float32')
    dev = input.device

    def col(i):
        return ops.reshape(ops.slice(r, [1], [i], [i + 1], [1]), [k])

    offset = 0.5 if aligned else 0.0
    zero = hidet.full([1], 0.0, 'float32', dev)

    def axis(lo, hi, pooled, size):
        """Neighbours (int64) and weights (f32, 0 for samples outside [-1, size]) along one axis,
        each [K, pooled * sr]: torchvision's bilinear_interpolate."""
        start = ops.sub(ops.mul(col(lo), float(spatial_scale)), offset)
        length = ops.sub(ops.sub(ops.mul(col(hi), float(spatial_scale)), offset), start)
        if not aligned:
            length = ops.maximum(length, 1.0)
        step = hidet.asarray([p + (i + 0.5) / sr for p in range(pooled) for i in range(sr)], [1, pooled * sr],
                             'float32', dev)
        pos = ops.add(ops.reshape(start, [k, 1]), ops.mul(step, ops.reshape(ops.div(length, float(pooled)), [k, 1])))
        valid = ops.logical_and(ops.ge(pos, -1.0), ops.le(pos, float(size)))
        pos = ops.maximum(pos, 0.0)
        low = ops.floor(pos)
        end = ops.ge(low, float(size - 1))  # at or past the last pixel: both neighbours are it
        last = hidet.full([1], float(size - 1), 'float32', dev)
        low = ops.where(end, last, low)
        frac = ops.where(end, zero, ops.sub(pos, low))
        w_low = ops.where(valid, ops.sub(1.0, frac), zero)
        w_high = ops.where(valid, frac, zero)
        high = ops.where(end, last, ops.add(low, 1.0))
        return ops.cast(low, 'int64'), ops.cast(high, 'int64'), w_low, w_high

    y_lo, y_hi, wy_lo, wy_hi = axis(2, 4, ph, h)
    x_lo, x_hi, wx_lo, wx_hi = axis(1, 3, pw, w)
    base = ops.reshape(ops.mul(ops.cast(col(0), 'int64'), h * w), [k, 1, 1])
    pixels = ops.reshape(ops.permute(input, [0, 2, 3, 1]), [n * h * w, c])
    s = ph * sr * pw * sr
    out = None
    for yi, wy in ((y_lo, wy_lo), (y_hi, wy_hi)):
        for xi, wx in ((x_lo, wx_lo), (x_hi, wx_hi)):
            idx = ops.add(ops.add(base, ops.reshape(ops.mul(yi, w), [k, ph * sr, 1])), ops.reshape(xi, [k, 1, pw * sr]))
            v = ops.cast(ops.take(pixels, ops.reshape(idx, [k * s]), 0), 'float32')  # [K * S, C]
            weight = ops.mul(ops.reshape(wy, [k, ph * sr, 1]), ops.reshape(wx, [k, 1, pw * sr]))
            term = ops.mul(v, ops.reshape(weight, [k * s, 1]))
            out = term if out is None else ops.add(out, term)
    out = ops.sum(ops.reshape(out, [k, ph, sr, pw, sr, c]), [2, 4], False)  # [K, PH, PW, C]
    out = ops.mul(ops.permute(out, [0, 3, 1, 2]), 1.0 / (sr * sr))
    return ops.cast(out, input.dtype)


# torchvision's operators, looked up by name (torchvision is imported after hidet, if at all).
for _name in ('torchvision.roi_align', 'torchvision.roi_align.default'):
    Registry.registered_aten[_name] = torchvision_roi_align


def _pool3d(x, pool_hw, pool_d):
    """A 3-D pooling of [N, C, D, H, W] (or [C, D, H, W]) as two 2-D ones, which is exact for max
    and average pooling alike (their windows, padding, ceil_mode and divisors are products of
    per-axis ones): H and W pooled by pool_hw on [N, C * D, H, W], then D by pool_d on
    [N, C, D, H' * W'] (a window of 1 along its last axis)."""
    unbatched = len(x.shape) == 4
    if unbatched:
        x = ops.unsqueeze(x, 0)
    n, c, d, h, w = x.shape
    y = pool_hw(ops.reshape(x, [n, c * d, h, w]))
    h2, w2 = y.shape[2], y.shape[3]
    y = pool_d(ops.reshape(y, [n, c, d, h2 * w2]))
    y = ops.reshape(y, [n, c, y.shape[2], h2, w2])
    return ops.squeeze(y, [0]) if unbatched else y


@register_function(F.max_pool3d, torch.max_pool3d)
def torch_max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise NotImplementedError('max_pool3d with return_indices=True is not mapped yet')
    k = _triple(kernel_size)
    s = k if stride is None or stride == [] else _triple(stride)
    p, d = _triple(padding), _triple(dilation)
    return _pool3d(x, lambda t: torch_max_pool2d(t, k[1:], s[1:], p[1:], d[1:], ceil_mode),
                   lambda t: torch_max_pool2d(t, [k[0], 1], [s[0], 1], [p[0], 0], [d[0], 1], ceil_mode))


@register_function(F.avg_pool3d, torch._C._nn.avg_pool3d)
def torch_avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                     divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError('avg_pool3d with divisor_override is not mapped yet')
    k = _triple(kernel_size)
    s = k if stride is None or stride == [] else _triple(stride)
    p = _triple(padding)
    return _pool3d(x, lambda t: torch_avg_pool2d(t, k[1:], s[1:], p[1:], ceil_mode, count_include_pad),
                   lambda t: torch_avg_pool2d(t, [k[0], 1], [s[0], 1], [p[0], 0], ceil_mode, count_include_pad))


def _adaptive_size3(x, output_size):
    spatial = list(x.shape[-3:])
    if not isinstance(output_size, (list, tuple)):
        return [int(output_size)] * 3
    return [spatial[i] if s is None else int(s) for i, s in enumerate(output_size)]


def _adaptive_pool3d(x, output_size, pool2d):
    """An adaptive 3-D pooling by the adaptive 2-D one `pool2d` (H and W, then D with the last axis kept)."""
    o = _adaptive_size3(x, output_size)
    return _pool3d(x, lambda t: pool2d(t, o[1:]), lambda t: pool2d(t, [o[0], t.shape[3]]))


@register_function(F.adaptive_avg_pool3d, torch._C._nn.adaptive_avg_pool3d)
def torch_adaptive_avg_pool3d(x, output_size):
    return _adaptive_pool3d(x, output_size, ops.adaptive_avg_pool2d)


@register_function(F.adaptive_max_pool3d)
def torch_adaptive_max_pool3d(x, output_size, return_indices=False):
    if return_indices:
        raise NotImplementedError('adaptive_max_pool3d with return_indices=True is not mapped yet (the indices)')
    return _adaptive_pool3d(x, output_size, ops.adaptive_max_pool2d)


@register_function(F.conv_transpose2d, torch.conv_transpose2d)
def torch_conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """A convolution of the input spread out by the stride (zeros between the pixels, inserted by a
    pad and a view) with the weight flipped and its in/out axes exchanged per group (at compile
    time, on the weight's data)."""
    if not isinstance(weight, Tensor) or weight.is_symbolic:
        raise NotImplementedError('conv_transpose2d with a computed weight is not mapped yet (a parameter is)')
    s, p, op, d = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    n, c, h, w = x.shape
    cin, cout_g, kh, kw = weight.shape
    g = int(groups)
    if s != [1, 1]:  # spread: [N, C, H, 1, W, 1] padded to [N, C, H, sh, W, sw], then cut to the last pixel
        x = ops.pad(x.reshape([n, c, h, 1, w, 1]), [0, s[1] - 1, 0, 0, 0, s[0] - 1])
        x = ops.slice(x.reshape([n, c, h * s[0], w * s[1]]), [2, 3], [0, 0], [(h - 1) * s[0] + 1, (w - 1) * s[1] + 1])
    # Each side: dilation (k - 1) - padding; output_padding more at the end (negative: a crop).
    before = [d[0] * (kh - 1) - p[0], d[1] * (kw - 1) - p[1]]
    after = [before[0] + op[0], before[1] + op[1]]
    if min(before + after) < 0:
        raise NotImplementedError('conv_transpose2d with padding past dilation * (kernel - 1) is not mapped yet')
    if max(before + after) > 0:
        x = ops.pad(x, [before[1], after[1], before[0], after[0]])
    # [Cin, Cout/g, KH, KW] -> [Cout, Cin/g, KH, KW], flipped.
    wt = weight.torch().reshape(g, cin // g, cout_g, kh, kw).transpose(1, 2).reshape(g * cout_g, cin // g, kh, kw)
    wt = hidet.from_torch(wt.flip(2, 3).contiguous())
    return ops.conv2d(x, wt, bias, [1, 1], [0, 0], d, g)


if hasattr(F, 'rms_norm'):
    # torch.rms_norm: what F.rms_norm (and nn.RMSNorm) call in recent torch, recorded by dynamo
    @register_function(F.rms_norm, *([torch.rms_norm] if hasattr(torch, 'rms_norm') else []))
    def torch_rms_norm(x, normalized_shape, weight=None, eps=None):
        if eps is None:  # PyTorch's default: the machine epsilon of the input's dtype
            eps = torch.finfo(torch_dtype(x.dtype)).eps
        return ops.rms_norm(x, len(normalized_shape), weight, float(eps))


@register_function(F.embedding, torch.embedding)
def torch_embedding(indices, weight, padding_idx=None, max_norm=None, *args, **kwargs):
    if isinstance(indices, Tensor) and isinstance(weight, Tensor) and indices.dtype.startswith('float'):
        indices, weight = weight, indices  # torch.embedding(weight, indices)
    if max_norm is not None:
        raise NotImplementedError('embedding with max_norm is not mapped yet')
    return ops.embedding(indices, weight)


def _as_4d(x, lead):
    """x [*lead, S, D] as [B, H, S, D]: rank 3 gets a head axis of 1, rank 5 and more merge the
    leading axes into the batch."""
    if len(lead) == 2:
        return x
    if len(lead) == 1:
        return ops.unsqueeze(x, 1)
    return ops.reshape(x, [math.prod(lead[:-1]), lead[-1]] + list(x.shape[-2:]))


def _check_kv_heads(q, x, name):
    """Grouped-query attention's k or v [..., Hkv, S, D]: Hkv must divide q's heads H (q head h
    reads kv head h // (H / Hkv); the kernels read it in place, K and V are not repeated)."""
    heads, hkv = q.shape[-3], x.shape[-3]
    if not isinstance(heads, int) or not isinstance(hkv, int):
        raise NotImplementedError(f'scaled_dot_product_attention with enable_gqa over symbolic head counts '
                                  f'({heads} and {hkv})')
    if heads % hkv != 0:
        raise ValueError(f'scaled_dot_product_attention with enable_gqa: q has {heads} heads, which {name}\'s '
                         f'{hkv} heads do not divide')


@register_function(F.scaled_dot_product_attention)
def torch_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Attention over any leading dims (q [..., L, D], k and v [..., S, D]): rank 3 and rank 5 and
    more as the 4-D operator's batch and heads. With enable_gqa, k and v have fewer heads than q
    (a divisor of them): q head h attends with kv head h // (H / Hkv), read in place by the kernels."""
    if q.ndim < 3 or k.ndim != q.ndim or v.ndim != q.ndim:
        raise NotImplementedError(f'scaled_dot_product_attention of q, k, v of ranks {q.ndim}, {k.ndim}, {v.ndim} '
                                  'is not mapped (equal ranks of at least 3 are)')
    lead = list(q.shape[:-2])
    if list(k.shape[:-3]) != lead[:-1] or list(v.shape[:-3]) != lead[:-1]:
        raise NotImplementedError('scaled_dot_product_attention with leading dims broadcast between q, k and v '
                                  'is not mapped')
    # k and v of one head broadcast over q's (multi-query attention written as broadcasting, as
    # Falcon does); other head counts need enable_gqa.
    broadcast = k.shape[-3] == 1 and v.shape[-3] == 1
    if not enable_gqa and not broadcast and (k.shape[-3] != q.shape[-3] or v.shape[-3] != q.shape[-3]) and q.ndim > 3:
        raise ValueError(f'scaled_dot_product_attention: q has {q.shape[-3]} heads, k {k.shape[-3]} and v '
                         f'{v.shape[-3]}; pass enable_gqa=True for grouped-query attention')
    if (enable_gqa or broadcast) and q.ndim > 3 and (k.shape[-3] != q.shape[-3] or v.shape[-3] != q.shape[-3]):
        _check_kv_heads(q, k, 'k'), _check_kv_heads(q, v, 'v')
    mask = attn_mask
    if mask is not None and mask.ndim > 2 and len(lead) != 2:
        mask = ops.broadcast_to(mask, lead + list(mask.shape[-2:]))
        mask = _as_4d(mask, lead)
    y = ops.scaled_dot_product_attention(_as_4d(q, lead), _as_4d(k, list(k.shape[:-2])),
                                         _as_4d(v, list(v.shape[:-2])), mask, bool(is_causal), scale)
    return y if len(lead) == 2 else ops.reshape(y, lead + list(y.shape[-2:]))


@register_function(F.pad)
def torch_pad(x, pad, mode='constant', value=None):
    pads = [int(p) for p in pad]  # hidet's pad takes PyTorch's order: last axis first
    if mode in ('reflect', 'replicate', 'circular'):  # a take of each padded axis by constant indices
        from .aten import gather_pad
        return gather_pad(x, pads, mode)
    if mode != 'constant':
        raise NotImplementedError(f'pad mode {mode!r} is not mapped')
    if any(p < 0 for p in pads):
        from .aten import aten_constant_pad_nd
        return aten_constant_pad_nd(x, pads, 0.0 if value is None else float(value))
    return ops.pad(x, pads, 0.0 if value is None else float(value))


@register_method('unfold')
def tensor_unfold(x, dimension, size, step):
    """Windows of `size` every `step` along `dimension` (Tensor.unfold, halo attention's windows):
    that axis becomes the window count and a last axis of `size` is added; a take by the constant
    positions i * step + j."""
    d = _axis(dimension, x.ndim)
    n = (x.shape[d] - size) // step + 1
    device = 'cpu' if hidet.cuda_emulated() else 'cuda'  # where hidet's 'cuda' tensors live
    idx = (torch.arange(n).unsqueeze(1) * step + torch.arange(size).unsqueeze(0)).to(device)
    y = ops.take(x, hidet.from_torch(idx.contiguous()), d)  # [..., n, size, ...]
    if d + 1 == x.ndim:
        return y
    return ops.permute(y, [a for a in range(x.ndim + 1) if a != d + 1] + [d + 1])


@register_function(torch.histc)
@register_method('histc')
def torch_histc(input, bins=100, min=0, max=0, *, out=None):
    """Counts of the elements in `bins` equal bins over [min, max] (the MoE routers' tokens per
    expert), in the input's dtype; PyTorch's rule: bin (x - min) / (max - min) * bins, the last bin
    closed. min == max (the data's own range) is data-dependent and not mapped."""
    lo, hi = float(min), float(max)
    if lo == hi:
        raise NotImplementedError('histc with min == max (the range of the data) is not mapped; pass the range')
    x = ops.reshape(input, [-1])
    pos = ops.floor(ops.mul(ops.div(ops.sub(x, lo), hi - lo), float(bins)))
    pos = ops.minimum(pos, float(bins - 1))  # x == max: the last bin
    inside = ops.logical_and(ops.ge(x, lo), ops.le(x, hi))
    classes = hidet.arange(0.0, float(bins), 1.0, x.dtype, x.device)
    hits = ops.logical_and(ops.eq(ops.unsqueeze(pos, 1), classes), ops.unsqueeze(inside, 1))
    return ops.sum(ops.cast(hits, x.dtype), [0], False)


def _triple(v):
    return [int(v)] * 3 if isinstance(v, int) else [int(a) for a in v]


@register_function(F.conv3d, torch.conv3d)
def torch_conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A conv2d over two spatial axes: the third (the one of the smallest kernel, as the lambda
    layer's 1 of (r, r, 1)) goes into the batch, its K taps stacked into the channels (K strided
    slices of the padded input; channels stay group-major: [g, C/g, K])."""
    if isinstance(padding, str):
        if padding != 'valid':
            raise NotImplementedError(f"conv3d with padding='{padding}' is not mapped yet (numbers and 'valid' are)")
        padding = 0
    unbatched = x.ndim == 4
    if unbatched:
        x = ops.unsqueeze(x, 0)
    k, s, p, dl = list(weight.shape[2:]), _triple(stride), _triple(padding), _triple(dilation)
    a = min(range(3), key=lambda i: (k[i], s[i] != 1))  # the axis folded into the batch
    b, c = [i for i in range(3) if i != a]
    order = [0, 1, 2 + a, 2 + b, 2 + c]
    x, w = ops.permute(x, order), ops.permute(weight, order)
    n, ch, depth, h, wd = x.shape
    o, cg, kd, kh, kw = w.shape
    if p[a]:
        x = ops.pad(x, [0, 0, 0, 0, p[a], p[a]])
        depth += 2 * p[a]
    out_d = (depth - dl[a] * (kd - 1) - 1) // s[a] + 1
    taps = [ops.slice(x, [2], [t * dl[a]], [t * dl[a] + (out_d - 1) * s[a] + 1], [s[a]]) for t in range(kd)]
    x = taps[0] if kd == 1 else ops.concat([ops.unsqueeze(t, 2) for t in taps], 2)  # [N, C, K, D', H, W]
    x = ops.reshape(ops.permute(ops.reshape(x, [n, ch * kd, out_d, h, wd]), [0, 2, 1, 3, 4]),
                    [n * out_d, ch * kd, h, wd])
    y = ops.conv2d(x, ops.reshape(w, [o, cg * kd, kh, kw]), bias, [s[b], s[c]], [p[b], p[c]], [dl[b], dl[c]],
                   int(groups))
    y = ops.permute(ops.reshape(y, [n, out_d, o] + list(y.shape[2:])), [0, 2, 1, 3, 4])  # [N, O, a, b, c]
    y = ops.permute(y, [order.index(i) for i in range(5)])
    return ops.squeeze(y, [0]) if unbatched else y


# ---------------------------------------------------------------------------- modules (call_module nodes)


@register_module(torch.nn.Linear)
class HidetLinear(HidetModule):
    def __init__(self, m):
        super().__init__(m)
        self.weight = self.param('weight')
        self.bias = self.param('bias', optional=True)

    def __call__(self, x):
        return ops.linear(x, self.weight, self.bias)


@register_module(torch.nn.Conv2d)
class HidetConv2d(HidetModule):
    def __call__(self, x):
        m = self.torch_module
        return torch_conv2d(x, self.param('weight'), self.param('bias', optional=True), m.stride, m.padding,
                            m.dilation, m.groups)


@register_module(torch.nn.ReLU)
class HidetReLU(HidetModule):
    def __call__(self, x):
        return ops.relu(x)


@register_module(torch.nn.Identity, torch.nn.Dropout)
class HidetIdentity(HidetModule):
    def __call__(self, x):
        m = self.torch_module
        if isinstance(m, torch.nn.Dropout) and m.training and m.p > 0:
            return torch_dropout(x, m.p, True)
        return x


# ---------------------------------------------------------------------------- more functions

register_function(torch._C._log_api_usage_once)(lambda *args, **kwargs: None)
register_function(torch._C._nn.pad)(torch_pad)


@register_function(torch.roll)
@register_method('roll')
def torch_roll(x, shifts, dims=None):
    if dims is None:
        flat = ops.reshape(x, [-1])
        return ops.reshape(torch_roll(flat, shifts, 0), list(x.shape))
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    for s, d in zip(shifts, dims):
        d = _axis(d, x.ndim)
        n = x.shape[d]
        s %= n
        if s:
            x = ops.concat([ops.slice(x, [d], [n - s], [n]), ops.slice(x, [d], [0], [n - s])], d)
    return x


def _full(shape, value, dtype, device):
    if any(is_symbolic_size(s) for s in shape):  # a scalar broadcast to the symbolic shape
        return ops.broadcast_to(hidet.full([1] * len(shape), float(value), dtype, device), shape)
    return hidet.full(shape, float(value), dtype, device)


def _like(x, value, dtype=None):
    return _full(list(x.shape), value, dtype_name(dtype) if dtype is not None else x.dtype, x.device)


def _new(x, size, value, dtype=None):
    return _full(_shape_arg(size), value, dtype_name(dtype) if dtype is not None else x.dtype, x.device)


def _size_arg(size, kwargs):
    """The size of a creation call: positional (`x.new_ones(2, 3)`, `(2, 3)`) or the keyword
    (`x.new_ones(size=(2, 3))`: LED's and Longformer's masks)."""
    return kwargs['size'] if not size and 'size' in kwargs else size


def _creation(value):
    def mapping(*size, dtype=None, **kwargs):  # reached with a symbolic size (else PyTorch makes a constant)
        dtype = dtype_name(dtype) if dtype is not None else dtype_name(torch.get_default_dtype())
        return _full(_shape_arg(_size_arg(size, kwargs)), value, dtype, 'cuda')
    return mapping


register_function(torch.zeros, torch.empty)(_creation(0))
register_function(torch.ones)(_creation(1))
register_function(torch.full)(lambda size, fill_value, *, dtype=None, **kw: _full(
    _shape_arg([size]), fill_value, dtype_name(dtype) if dtype is not None else (
        'float32' if isinstance(fill_value, float) else 'bool' if isinstance(fill_value, bool) else 'int64'), 'cuda'))
register_function(torch.zeros_like)(lambda x, *, dtype=None, **kw: _like(x, 0, dtype))
register_function(torch.ones_like)(lambda x, *, dtype=None, **kw: _like(x, 1, dtype))
register_function(torch.full_like)(lambda x, value, *, dtype=None, **kw: _like(x, value, dtype))
register_method('new_zeros', 'new_empty')(lambda x, *size, dtype=None, **kw: _new(x, _size_arg(size, kw), 0, dtype))
register_method('new_ones')(lambda x, *size, dtype=None, **kw: _new(x, _size_arg(size, kw), 1, dtype))
register_method('new_full')(lambda x, size, value, dtype=None, **kw: _new(x, size, value, dtype))


def _logical(op, python_op, name):
    def mapping(a, b):
        if not isinstance(a, Tensor):
            return python_op(a, b)
        if a.dtype == 'bool' and b.dtype == 'bool':
            return op(a, b)
        raise NotImplementedError(f'bitwise {name} of integer tensors is not mapped yet')
    return mapping


register_function(operator.and_, torch.logical_and)(_logical(ops.logical_and, lambda a, b: a and b, 'and'))
register_function(operator.or_, torch.logical_or)(_logical(ops.logical_or, lambda a, b: a or b, 'or'))


@register_function(F.multi_head_attention_forward)
def torch_multi_head_attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                               bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                               training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                               use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                               v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                               is_causal=False):
    if need_weights:
        raise NotImplementedError('multi_head_attention_forward with need_weights=True is not mapped yet '
                                  '(pass need_weights=False)')
    if bias_k is not None or bias_v is not None or add_zero_attn or key_padding_mask is not None or \
            static_k is not None or static_v is not None:
        raise NotImplementedError('multi_head_attention_forward with bias_k/bias_v, add_zero_attn, '
                                  'key_padding_mask or static_k/v is not mapped yet')
    L, N, E = query.shape  # sequence first
    S = key.shape[0]
    D = E // num_heads
    if query is key and key is value and not use_separate_proj_weight:  # self-attention: one product
        q, k, v = ops.split(ops.linear(query, in_proj_weight, in_proj_bias), [E, E, E], 2)
    else:  # (the weights split only here: a split of a constant is a kernel built while tracing)
        if use_separate_proj_weight:
            ws = [q_proj_weight, k_proj_weight, v_proj_weight]
        else:
            ws = ops.split(in_proj_weight, [E, E, E], 0)
        bs = ops.split(in_proj_bias, [E, E, E], 0) if in_proj_bias is not None else [None] * 3
        q, k, v = (ops.linear(t, w, b) for t, w, b in zip((query, key, value), ws, bs))

    def heads(t, n):  # [n, N, E] -> [N, H, n, D]
        return ops.permute(ops.reshape(t, [n, N, num_heads, D]), [1, 2, 0, 3])

    o = ops.scaled_dot_product_attention(heads(q, L), heads(k, S), heads(v, S), attn_mask, bool(is_causal), None)
    o = ops.reshape(ops.permute(o, [2, 0, 1, 3]), [L, N, E])
    return ops.linear(o, out_proj_weight, out_proj_bias), None


# ---------------------------------------------------------------------------- the Tensor surface models use
# (each also reachable through core ATen; mapped directly, they cost no decomposition at compile time)

def _cast_method(name):
    return lambda x, *args, **kwargs: ops.cast(x, name) if x.dtype != name else x


for _method, _dtype in [('int', 'int32'), ('long', 'int64'), ('short', 'int16'), ('char', 'int8'), ('byte', 'uint8'),
                        ('bool', 'bool'), ('double', 'float64')]:
    register_method(_method)(_cast_method(_dtype))


_TYPE_NAMES = {'FloatTensor': torch.float32, 'DoubleTensor': torch.float64, 'HalfTensor': torch.float16,
               'BFloat16Tensor': torch.bfloat16, 'LongTensor': torch.int64, 'IntTensor': torch.int32,
               'ShortTensor': torch.int16, 'CharTensor': torch.int8, 'ByteTensor': torch.uint8, 'BoolTensor': torch.bool}


@register_method('type')
def tensor_type(x, dtype=None, non_blocking=False, **kwargs):
    if isinstance(dtype, str):
        dtype = _TYPE_NAMES.get(dtype.rsplit('.', 1)[-1])
    if dtype is None:
        raise NotImplementedError('Tensor.type() without a dtype or a known tensor type name is not mapped')
    return ops.cast(x, dtype_name(dtype)) if dtype_name(dtype) != x.dtype else x


def _compare(op):
    def mapping(a, b, *, out=None):
        if not isinstance(a, Tensor):  # 2 < x
            return {ops.lt: ops.gt, ops.gt: ops.lt, ops.le: ops.ge, ops.ge: ops.le}.get(op, op)(b, a)
        return op(a, b)
    return mapping


for _names, _op in [(('eq', '__eq__'), ops.eq), (('ne', '__ne__'), ops.ne), (('lt', 'less', '__lt__'), ops.lt),
                    (('le', 'less_equal', '__le__'), ops.le), (('gt', 'greater', '__gt__'), ops.gt),
                    (('ge', 'greater_equal', '__ge__'), ops.ge)]:
    register_method(*_names)(_compare(_op))
    register_function(*[getattr(torch, n) for n in _names if hasattr(torch, n) and not n.startswith('_')])(
        _compare(_op))


@register_function(torch.unbind)
@register_method('unbind')
def torch_unbind(x, dim=0):
    d = _axis(dim, x.ndim)
    return tuple(ops.squeeze(t, [d]) for t in ops.split(x, [1] * x.shape[d], d))


@register_function(torch.swapaxes, torch.swapdims)
@register_method('swapaxes', 'swapdims')
def torch_swapaxes(x, axis0, axis1):
    return ops.transpose(x, _axis(axis0, x.ndim), _axis(axis1, x.ndim))


@register_function(torch.movedim, torch.moveaxis)
@register_method('movedim', 'moveaxis')
def torch_movedim(x, source, destination):
    src = [_axis(d, x.ndim) for d in ([source] if isinstance(source, int) else source)]
    dst = [_axis(d, x.ndim) for d in ([destination] if isinstance(destination, int) else destination)]
    rest = [d for d in range(x.ndim) if d not in src]
    order = [None] * x.ndim
    for s_, d_ in zip(src, dst):
        order[d_] = s_
    it = iter(rest)
    return ops.permute(x, [o if o is not None else next(it) for o in order])


@register_function(torch.addcmul)
@register_method('addcmul')
def torch_addcmul(x, tensor1, tensor2, *, value=1):
    p = ops.mul(tensor1, tensor2)
    return ops.add(x, ops.mul(p, value) if value != 1 else p)


@register_function(torch.addcdiv)
@register_method('addcdiv')
def torch_addcdiv(x, tensor1, tensor2, *, value=1):
    q = ops.div(tensor1, tensor2)
    return ops.add(x, ops.mul(q, value) if value != 1 else q)


@register_function(torch.isfinite)
@register_method('isfinite')
def torch_isfinite(x):
    if not x.dtype.startswith('float') and x.dtype != 'bfloat16':
        return _full(list(x.shape), True, 'bool', x.device)
    return ops.logical_and(ops.eq(x, x), ops.ne(ops.abs(x), math.inf))


@register_function(torch.flip)
@register_method('flip')
def torch_flip(x, *dims):
    """Each axis of `dims` reversed: a take by the constant positions n-1, ..., 0."""
    for d in [_axis(a, x.ndim) for a in _shape_arg(dims)]:
        n = x.shape[d]
        x = ops.take(x, hidet.arange(float(n - 1), -1.0, -1.0, 'int64', 'cuda'), d)
    return x


@register_method('repeat')
def tensor_repeat(x, *sizes):
    from .aten import aten_repeat
    return aten_repeat(x, _shape_arg(sizes))


@register_function(torch.repeat_interleave)
@register_method('repeat_interleave')
def torch_repeat_interleave(x, repeats, dim=None, *, output_size=None):
    """Each element repeated `repeats` times along `dim` (an int count; a tensor of counts gives a
    data-dependent shape and goes through core ATen)."""
    if not isinstance(repeats, int):
        raise NotImplementedError('repeat_interleave with a tensor of repeats (a data-dependent shape)')
    if dim is None:
        x, dim = ops.reshape(x, [-1]), 0
    d = _axis(dim, x.ndim)
    shape = list(x.shape)
    y = ops.broadcast_to(ops.unsqueeze(x, d + 1), shape[:d + 1] + [repeats] + shape[d + 1:])
    return ops.reshape(y, shape[:d] + [shape[d] * repeats] + shape[d + 1:])


@register_function(F.pixel_shuffle)
def torch_pixel_shuffle(x, upscale_factor):
    r = int(upscale_factor)
    *lead, c, h, w = x.shape
    y = ops.reshape(x, lead + [c // (r * r), r, r, h, w])
    n = len(lead)
    y = ops.permute(y, list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2])
    return ops.reshape(y, lead + [c // (r * r), h * r, w * r])


@register_function(F.pixel_unshuffle)
def torch_pixel_unshuffle(x, downscale_factor):
    r = int(downscale_factor)
    *lead, c, h, w = x.shape
    y = ops.reshape(x, lead + [c, h // r, r, w // r, r])
    n = len(lead)
    y = ops.permute(y, list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3])
    return ops.reshape(y, lead + [c * r * r, h // r, w // r])


_Sorted = collections.namedtuple('Sorted', ['values', 'indices'])


@register_function(torch.sort)
@register_method('sort')
def torch_sort(x, dim=-1, descending=False, stable=False, *, out=None):
    return _Sorted(*ops.sort(x, _axis(dim, x.ndim), bool(descending)))


@register_function(torch.argsort)
@register_method('argsort')
def torch_argsort(x, dim=-1, descending=False, stable=False):
    return ops.argsort(x, _axis(dim, x.ndim), bool(descending))


@register_function(torch.topk)
@register_method('topk')
def torch_topk(x, k, dim=-1, largest=True, sorted=True, *, out=None):
    return _Sorted(*ops.topk(x, int(k), _axis(dim, x.ndim), bool(largest), bool(sorted)))


def _run_subgraph(gm, args):
    """Runs the body of a higher-order operator (a torch.fx.GraphModule of torch-level calls, as
    dynamo records associative_scan's combine_fn) on hidet tensors through the mappings; returns its
    outputs."""
    env = {}
    inputs = iter(args)

    def load(a):
        return torch.fx.node.map_arg(a, lambda n: env[n])

    for node in gm.graph.nodes:
        if node.op == 'placeholder':
            env[node] = next(inputs)
        elif node.op == 'output':
            return load(node.args[0])
        elif node.op == 'get_attr':
            from .convert import to_hidet_constant
            value = getattr(gm, node.target)
            env[node] = to_hidet_constant(value) if isinstance(value, torch.Tensor) else value
        else:
            if node.op == 'call_function':
                mapping = Registry.registered_functions.get(node.target)
                if mapping is None and isinstance(node.target, torch._ops.OpOverload):
                    mapping = Registry.registered_aten.get(node.target)
            elif node.op == 'call_method':
                mapping = Registry.registered_methods.get(node.target)
            else:
                mapping = None
            if mapping is None:
                raise NotImplementedError(f'the body of a higher-order operator calls {node.op} {node.target}, '
                                          'which hidet does not map')
            env[node] = mapping(*load(node.args), **load(node.kwargs))
    raise NotImplementedError('the body of a higher-order operator has no output')


def _slice0(x, start, stop, step=1):
    return ops.slice(x, [0], [start], [stop], [step])


def _interleave0(a, b):
    """a[0], b[0], a[1], b[1], ... along axis 0; a has as many rows as b or one more."""
    nb = b.shape[0]
    rest = list(a.shape[1:])
    pairs = ops.reshape(ops.concat([ops.unsqueeze(_slice0(a, 0, nb), 1), ops.unsqueeze(b, 1)], 1), [2 * nb] + rest)
    return pairs if a.shape[0] == nb else ops.concat([pairs, _slice0(a, nb, nb + 1)], 0)


def _associative_scan0(combine, elems):
    """The inclusive scan of the leaves `elems` along axis 0 by the associative `combine` (lists of
    leaves in and out) in log2(n) levels (PyTorch's generic_associative_scan): combine neighbours
    pairwise, scan the half, then fill in the elements between."""
    n = elems[0].shape[0]
    if n < 2:
        return elems
    reduced = combine([_slice0(e, 0, n - 1, 2) for e in elems], [_slice0(e, 1, n, 2) for e in elems])
    odd = _associative_scan0(combine, reduced)  # the prefixes ending at 1, 3, 5, ...
    if n == 2:
        return [_interleave0(_slice0(e, 0, 1), o) for e, o in zip(elems, odd)]
    upto = [_slice0(o, 0, (n - 1) // 2) for o in odd]  # prefixes ending before 2, 4, ...
    even = combine(upto, [_slice0(e, 2, n, 2) for e in elems])  # the prefixes ending at 2, 4, ...
    even = [ops.concat([_slice0(e, 0, 1), v], 0) for e, v in zip(elems, even)]
    return [_interleave0(v, o) for v, o in zip(even, odd)]


def torch_associative_scan(combine_fn, xs, additional_inputs=()):
    """torch.ops.higher_order.associative_scan (torch._higher_order_ops.associative_scan with
    combine_mode='pointwise', what dynamo records for it on CUDA: transformers' Mamba scans its
    states so): the scan along axis 0 of the leaves xs, combine_fn (a GraphModule of left leaves,
    right leaves, then additional_inputs) run through the mappings, in log2(n) levels of whole-tensor
    operators."""
    xs = list(xs)
    extra = list(additional_inputs or ())
    if not xs or any(not isinstance(x, Tensor) for x in xs):
        raise NotImplementedError('associative_scan of other leaves than tensors is not mapped')

    def combine(left, right):
        out = _run_subgraph(combine_fn, list(left) + list(right) + extra)
        return list(out) if isinstance(out, (list, tuple)) else [out]
    return _associative_scan0(combine, xs)


if hasattr(torch.ops, 'higher_order') and hasattr(torch.ops.higher_order, 'associative_scan'):
    Registry.registered_functions[torch.ops.higher_order.associative_scan] = torch_associative_scan


@register_function(torch.select_copy)
def torch_select_copy(x, dim, index):
    """x.select(dim, index) as a new tensor."""
    d = _axis(dim, x.ndim)
    i = int(index) + (x.shape[d] if int(index) < 0 else 0)
    return ops.squeeze(ops.slice(x, [d], [i], [i + 1]), [d])


@register_function(torch.cumprod)
@register_method('cumprod')
def torch_cumprod(x, dim, *, dtype=None, out=None):
    x = ops.cast(x, dtype_name(dtype)) if dtype is not None else x
    return ops.cumprod(x, _axis(dim, x.ndim))


def _cumulative_extremum(op):
    def mapping(x, dim, *, out=None):
        return _Sorted(*op(x, _axis(dim, x.ndim)))
    return mapping


register_function(torch.cummax)(_cumulative_extremum(ops.cummax))
register_method('cummax')(_cumulative_extremum(ops.cummax))
register_function(torch.cummin)(_cumulative_extremum(ops.cummin))
register_method('cummin')(_cumulative_extremum(ops.cummin))


@register_function(torch.scatter)
@register_method('scatter')
def torch_scatter(x, dim, index, src=None, *, value=None, reduce=None):
    if reduce is not None:
        raise NotImplementedError(f"scatter(reduce='{reduce}') is deprecated in PyTorch; use scatter_reduce")
    src = src if src is not None else value
    return ops.scatter(x, _axis(dim, x.ndim), index, src if isinstance(src, Tensor) else float(src))


@register_function(torch.scatter_add)
@register_method('scatter_add')
def torch_scatter_add(x, dim, index, src):
    return ops.scatter_add(x, _axis(dim, x.ndim), index, src)


@register_function(torch.scatter_reduce)
@register_method('scatter_reduce')
def torch_scatter_reduce(x, dim, index, src, reduce, *, include_self=True):
    if reduce not in ('sum', 'amax', 'amin') or not include_self:
        raise NotImplementedError(f"scatter_reduce(reduce='{reduce}', include_self={include_self}) is not mapped "
                                  "(sum, amax and amin with include_self=True are)")
    return ops.scatter(x, _axis(dim, x.ndim), index, src, reduce)


@register_function(torch.index_add)
@register_method('index_add')
def torch_index_add(x, dim, index, source, *, alpha=1):
    return ops.index_add(x, _axis(dim, x.ndim), index, source, float(alpha))


@register_function(operator.setitem)
def operator_setitem(x, index, value):
    """``x[index] = value`` as a new tensor (the interpreter rebinds x's node to it: later reads of
    x see the update). Integer tensors (with None for whole axes) go to index_put; basic indexing
    (ints, slices, None, Ellipsis) to an index_put of x's flat positions, which PyTorch selects at
    compile time (constant shapes)."""
    if not isinstance(x, Tensor):
        raise NotImplementedError('setitem on a value that is not a tensor')
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(_index_list(i) if isinstance(i, list) else i for i in items)
    if not isinstance(value, Tensor):
        value = hidet.full([1], float(value), x.dtype, x.device)
    elif value.dtype != x.dtype:
        value = ops.cast(value, x.dtype)
    if all(isinstance(i, Tensor) or _whole_axis(i) for i in items) and \
            any(isinstance(i, Tensor) for i in items):
        if any(i.dtype == 'bool' for i in items if isinstance(i, Tensor)):
            raise NotImplementedError('setitem with a boolean mask is not mapped (a data-dependent selection)')
        return ops.index_put(x, [i if isinstance(i, Tensor) else None for i in items], value, False)
    if any(isinstance(i, Tensor) for i in items) or not all(isinstance(d, int) for d in x.shape):
        raise NotImplementedError('setitem mixing integer tensors with slices, or over symbolic sizes, is not mapped')
    positions = torch.arange(math.prod(x.shape), dtype=torch.int64).reshape(list(x.shape))[items]
    device = 'cpu' if hidet.cuda_emulated() else 'cuda'  # where hidet's 'cuda' tensors live
    flat = hidet.from_torch(positions.reshape(-1).contiguous().to(device))
    values = ops.reshape(ops.broadcast_to(value, list(positions.shape)), [-1])
    y = ops.index_put(ops.reshape(x, [-1]), [flat], values, False)
    return ops.reshape(y, list(x.shape))


@register_function(torch.index_put)
@register_method('index_put')
def torch_index_put(x, indices, values, accumulate=False):
    if not isinstance(values, Tensor):
        values = hidet.full([1], float(values), x.dtype, x.device)
    return ops.index_put(x, list(indices), values, bool(accumulate))


@register_function(torch.index_copy)
@register_method('index_copy')
def torch_index_copy(x, dim, index, source):
    """x with x[..., index[i], ...] = source[..., i, ...] along dim (transformers' static cache
    writes its keys and values so): an index_put of index at axis dim."""
    axis = _axis(dim, x.ndim)
    if index.ndim == 0:
        index = ops.reshape(index, [1])
        if source.ndim == x.ndim - 1:
            source = ops.reshape(source, list(source.shape[:axis]) + [1] + list(source.shape[axis:]))
    if index.ndim != 1:
        raise NotImplementedError(f'index_copy with an index of {index.ndim} dimensions (PyTorch takes 1)')
    return ops.index_put(x, [None] * axis + [index], source, False)


@register_method('copy_')
def tensor_copy_(x, src, non_blocking=False):
    """x.copy_(src): src converted to x's dtype and broadcast to x's shape is x's new value."""
    if not isinstance(src, Tensor):
        return _like(x, src)
    y = src if src.dtype == x.dtype else ops.cast(src, x.dtype)
    if list(y.shape) != list(x.shape):
        y = ops.broadcast_to(y, list(x.shape))
    return y


@register_method('fill_')
def tensor_fill_(x, value):
    if isinstance(value, Tensor):
        return tensor_copy_(x, value)
    return _like(x, value)


@register_method('zero_')
def tensor_zero_(x):
    return _like(x, 0)


def transformers_grouped_mm(x, weight, offs):
    """transformers' ``grouped_mm_fallback`` (mixture-of-experts layers: Mixtral, Qwen2-MoE, ...):
    rows of x [S, K] sorted by expert, expert e taking rows offs[e - 1] to offs[e] (cumulative
    counts [E]) through weight[e] [K, N]; rows past offs[-1] are 0. One grouped kernel
    (``ops.grouped_matmul``) reads offs on the device: each expert reads only its rows, and only the
    experts that have rows read their weights."""
    if x.ndim != 2 or weight.ndim != 3 or offs.ndim != 1:
        raise NotImplementedError('grouped_mm_fallback of other ranks than x [S, K], weight [E, K, N], offs [E]: got '
                                  f'{list(x.shape)}, {list(weight.shape)}, {list(offs.shape)}')
    return ops.grouped_matmul(x, weight, offs)


def torch_grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """torch.nn.functional.grouped_mm / torch._grouped_mm (transformers' MoE experts in bf16 take it
    under torch.compile) in its forward form: a 2-D mat_a [S, K] sliced by offs, a 3-D mat_b
    [E, K, N]; the other forms (3-D mat_a, 2-D mat_b, a bias, another out_dtype) are not mapped."""
    if offs is None or mat_a.ndim != 2 or mat_b.ndim != 3:
        raise NotImplementedError('grouped_mm is mapped for a 2-D mat_a [S, K], a 3-D mat_b [E, K, N] and offs [E] '
                                  f'(the MoE forward), got mat_a {list(mat_a.shape)}, mat_b {list(mat_b.shape)}, '
                                  f'offs {None if offs is None else list(offs.shape)}')
    if bias is not None:
        raise NotImplementedError('grouped_mm with bias is not mapped; add the bias after the product')
    if out_dtype is not None and dtype_name(out_dtype) != mat_a.dtype:
        raise NotImplementedError(f'grouped_mm with out_dtype={out_dtype} (inputs {mat_a.dtype}) is not mapped; '
                                  'the product is given in the inputs\' dtype')
    return ops.grouped_matmul(mat_a, mat_b, offs)


for _f in (getattr(F, 'grouped_mm', None), getattr(torch, '_grouped_mm', None)):
    if _f is not None:
        Registry.registered_functions[_f] = torch_grouped_mm
for _name in ('aten._grouped_mm', 'aten._grouped_mm.default'):
    Registry.registered_aten[_name] = torch_grouped_mm


# A custom operator that transformers defines when its MoE integration is imported (after hidet,
# often): looked up by name.
for _name in ('transformers.grouped_mm_fallback', 'transformers.grouped_mm_fallback.default'):
    Registry.registered_aten[_name] = transformers_grouped_mm
