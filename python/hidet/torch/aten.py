"""The second level of the front end: PyTorch's core ATen operators as hidet operators.

A node of dynamo's graph without a torch-level mapping (mappings.py) is decomposed by PyTorch's
own decomposition tables into core ATen operators (decompose.py), and each of those is mapped
here. The set to cover is torch's own: every overload tagged ``torch.Tag.core``
(:func:`core_aten_operators`). Each one is either mapped (``Registry.registered_aten``) or refused
in :data:`REFUSED` with the reason (training-only, random, data-dependent output shapes, complex
numbers); tests/test_torch_aten.py fails when a torch release adds one that is neither.

Each mapping reads like the ATen schema it maps (same argument names and defaults) and receives
hidet tensors in place of tensors.
"""
import math

import torch

import hidet
from hidet import Tensor, ops
from . import mappings as m
from .convert import dtype_name, to_hidet_constant
from .interpreter import Unavailable
from .registry import Registry, register_aten

__all__ = ['REFUSED', 'core_aten_operators', 'unmapped_core_operators']

aten = torch.ops.aten


def core_aten_operators():
    """Every operator overload torch tags as core ATen (torch.Tag.core), as OpOverloads. Every
    registered aten name is looked up (torch.ops.aten lists a packet only once something used it,
    so dir() alone depends on what ran before: eager FFTs bring in aten.resize_)."""
    found = []
    all_names = getattr(torch._C, '_dispatch_get_all_op_names', lambda: [])()
    registered = {n.split('::', 1)[1].split('.', 1)[0] for n in all_names if n.startswith('aten::')}
    for name in sorted(registered | set(dir(torch.ops.aten))):
        try:
            packet = getattr(torch.ops.aten, name)
        except (AttributeError, RuntimeError):
            continue
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if torch.Tag.core in op.tags:
                found.append(op)
    return found


def unmapped_core_operators():
    """The core ATen overloads of this torch that are neither mapped nor in REFUSED."""
    return [op for op in core_aten_operators() if op not in Registry.registered_aten and str(op) not in REFUSED]


_TRAINING = 'training only (gradients or batch statistics): call model.eval() and compile under torch.no_grad()'
_RANDOM = 'random sampling: a compiled graph is deterministic (sample outside the model, or use fallback_to_torch)'
_DATA = ('the output shape depends on the values (data-dependent): run it in PyTorch with '
         'hidet.torch.dynamo_config.fallback_to_torch(True)')
_COMPLEX = 'complex numbers: hidet has no complex dtype'

# Core ATen overloads hidet does not map, and why (the names as str(op) prints them).
REFUSED = {
    'aten._adaptive_avg_pool2d_backward.default': _TRAINING,
    'aten.avg_pool2d_backward.default': _TRAINING,
    'aten.convolution_backward.default': _TRAINING,
    'aten.embedding_dense_backward.default': _TRAINING,
    'aten.max_pool2d_with_indices_backward.default': _TRAINING,
    'aten.native_group_norm_backward.default': _TRAINING,
    'aten.native_layer_norm_backward.default': _TRAINING,
    'aten._native_batch_norm_legit.default': _TRAINING,
    'aten._native_batch_norm_legit.no_stats': _TRAINING,
    'aten.rand.default': _RANDOM,
    'aten.randn.default': _RANDOM,
    'aten.randperm.default': _RANDOM,
    'aten.nonzero.default': _DATA,
    'aten._local_scalar_dense.default': _DATA + ' (.item() of a computed tensor)',
    'aten._fft_r2c.default': _COMPLEX,
    'aten._fft_c2r.default': _COMPLEX,
    'aten.atan2.out': 'an out= variant (the functional aten.atan2.default is mapped)',
    'aten.sym_numel.default': 'a size query: dynamo traces sizes as Python values',
    'aten.sym_is_contiguous.default': 'a layout query: hidet tensors are contiguous',
    'aten.resize_.default': 'an in-place resize of the storage (out= variants use it): not a value of the graph',
    'aten.sym_stride.int': 'a size query: dynamo traces sizes as Python values',
    'aten.sym_storage_offset.default': 'a size query: dynamo traces sizes as Python values',
    'aten.col2im.default': 'col2im (F.fold) has no hidet operator yet',
    'aten._pdist_forward.default': 'pdist has no hidet operator yet',
    'aten._embedding_bag.default': 'embedding_bag has no hidet operator yet',
}


# ---------------------------------------------------------------------------- helpers

def _tensor(value, like):
    """A Python scalar as a one-element tensor of `like`'s dtype (weak typing: the scalar does not
    change the dtype)."""
    return value if isinstance(value, Tensor) else hidet.full([1], float(value), like.dtype, like.device)


def _axis(dim, ndim):
    return m._axis(dim, max(ndim, 1))


def _full(shape, value, dtype):
    """A constant of `shape` (a broadcast scalar when some extent is symbolic)."""
    if dtype is None:
        dtype = 'bool' if isinstance(value, bool) else 'int64' if isinstance(value, int) else \
            dtype_name(torch.get_default_dtype())
    elif not isinstance(dtype, str):
        dtype = dtype_name(dtype)
    return m._full(list(shape), value, dtype, 'cuda')


# ---------------------------------------------------------------------------- element-wise

def _unary(name, op=None):
    fn = op or (lambda x: getattr(ops, name)(x))
    register_aten(getattr(aten, name).default)(lambda self: fn(self))


for _name in ['abs', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh', 'ceil', 'cos', 'cosh', 'erf', 'erfc',
              'exp', 'expm1', 'floor', 'isnan', 'log', 'log10', 'log1p', 'log2', 'logical_not', 'neg', 'reciprocal',
              'relu', 'rsqrt', 'sigmoid', 'sign', 'sin', 'sinh', 'sqrt', 'tan', 'tanh', 'trunc', 'bitwise_not']:
    _unary(_name)
register_aten(aten.isinf.default)(lambda self: ops.eq(ops.abs(self), math.inf))


@register_aten(aten.linalg_solve_triangular.default)
def aten_solve_triangular(self, B, *, upper, left=True, unitriangular=False):
    return ops.solve_triangular(self, B, bool(upper), bool(left), bool(unitriangular))


@register_aten(aten.round.default)
def aten_round(self):
    return ops.round(self)


@register_aten(aten.round.decimals)
def aten_round_decimals(self, *, decimals=0):
    scale = 10.0 ** decimals
    return ops.div(ops.round(ops.mul(self, scale)), scale)


def _binary(op, *overloads):
    def mapping(self, other, *, alpha=1):
        if alpha != 1:
            other = ops.mul(other, alpha)
        if not isinstance(self, Tensor):
            self = _tensor(self, other)
        return m.arithmetic(op, self, other)
    register_aten(*overloads)(mapping)


_binary(ops.add, aten.add.Tensor, aten.add.Scalar)
_binary(ops.sub, aten.sub.Tensor, aten.sub.Scalar)
_binary(ops.mul, aten.mul.Tensor, aten.mul.Scalar)
_binary(ops.div, aten.div.Tensor, aten.div.Scalar)
for _name in ['eq', 'ne', 'lt', 'le', 'gt', 'ge']:
    _binary(getattr(ops, _name), getattr(aten, _name).Tensor, getattr(aten, _name).Scalar)
for _name in ['bitwise_and', 'bitwise_or', 'bitwise_xor', 'fmod', 'remainder']:
    _packet = getattr(aten, _name)
    _binary(lambda a, b, _n=_name: getattr(ops, _n)(a, b), _packet.Tensor, _packet.Scalar)
_binary(lambda a, b: ops.atan2(a, b), aten.atan2.default)
_binary(lambda a, b: ops.logical_and(a, b), aten.logical_and.default)
_binary(lambda a, b: ops.logical_or(a, b), aten.logical_or.default)
_binary(lambda a, b: ops.logical_xor(a, b), aten.logical_xor.default)
_binary(ops.maximum, aten.maximum.default)
_binary(ops.minimum, aten.minimum.default)


@register_aten(aten.div.Tensor_mode, aten.div.Scalar_mode)
def aten_div_mode(self, other, *, rounding_mode=None):
    return m.torch_div(self, other, rounding_mode=rounding_mode)


@register_aten(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor)
def aten_pow(self, exponent):
    return m.torch_pow(self, exponent)


@register_aten(aten.pow.Scalar)
def aten_pow_scalar(self, exponent):
    return ops.pow(_tensor(self, exponent), exponent)


@register_aten(aten.where.self)
def aten_where(condition, self, other):
    return m.torch_where(condition, self, other)


@register_aten(aten.clamp.default, aten.clamp.Tensor)
def aten_clamp(self, min=None, max=None):
    return m.torch_clamp(self, min, max)


@register_aten(aten.hardtanh.default)
def aten_hardtanh(self, min_val=-1, max_val=1):
    return ops.clamp(self, float(min_val), float(max_val))


@register_aten(aten.leaky_relu.default)
def aten_leaky_relu(self, negative_slope=0.01):
    return ops.leaky_relu(self, float(negative_slope))


@register_aten(aten.gelu.default)
def aten_gelu(self, *, approximate='none'):
    return ops.gelu(self, approximate == 'tanh')


@register_aten(aten.elu.default)
def aten_elu(self, alpha=1, scale=1, input_scale=1):
    def elu(v):  # in f32 for half inputs, as PyTorch computes it
        x = ops.mul(v, float(input_scale)) if input_scale != 1 else v
        neg = ops.mul(ops.expm1(ops.minimum(x, 0.0)), float(alpha))
        y = ops.where(ops.gt(v, 0.0), v, neg)
        return ops.mul(y, float(scale)) if scale != 1 else y
    if self.dtype in ('float16', 'bfloat16'):
        return ops.cast(elu(ops.cast(self, 'float32')), self.dtype)
    return elu(self)


# ---------------------------------------------------------------------------- reductions

def _dims(dim, ndim):
    return [] if dim is None or list(dim) == [] else m._dims(list(dim), ndim)


def _reduce(op):
    def mapping(self, dim=None, keepdim=False, *, dtype=None):
        if isinstance(dim, int):
            dim = [dim]
        y = op(self, _dims(dim, self.ndim), keepdim)
        return ops.cast(y, dtype_name(dtype)) if dtype is not None else y
    return mapping


register_aten(aten.sum.dim_IntList)(_reduce(ops.sum))
register_aten(aten.mean.dim)(_reduce(ops.mean))
register_aten(aten.amax.default)(_reduce(ops.max))
register_aten(aten.amin.default)(_reduce(ops.min))
register_aten(aten.prod.dim_int)(_reduce(ops.prod))


register_aten(aten.sum.default)(lambda self, *, dtype=None: _reduce(ops.sum)(self, None, False, dtype=dtype))
register_aten(aten.mean.default)(lambda self, *, dtype=None: _reduce(ops.mean)(self, None, False, dtype=dtype))
register_aten(aten.prod.default)(lambda self, *, dtype=None: _reduce(ops.prod)(self, None, False, dtype=dtype))


def _bool_reduce(self, dims, keepdim, op):
    x = self if self.dtype == 'bool' else ops.ne(self, 0.0)
    return op(x, dims, keepdim)


@register_aten(aten.any.default)
def aten_any(self):
    return _bool_reduce(self, [], False, ops.any)


@register_aten(aten.any.dim)
def aten_any_dim(self, dim, keepdim=False):
    return _bool_reduce(self, [_axis(dim, self.ndim)], keepdim, ops.any)


@register_aten(aten.any.dims)
def aten_any_dims(self, dim=None, keepdim=False):
    return _bool_reduce(self, _dims(dim, self.ndim), keepdim, ops.any)


@register_aten(aten.argmax.default)
def aten_argmax(self, dim=None, keepdim=False):
    return m.torch_argmax(self, dim, keepdim)


@register_aten(aten.argmin.default)
def aten_argmin(self, dim=None, keepdim=False):
    if dim is None:
        return ops.argmin(ops.reshape(self, [-1]), 0, False)
    return ops.argmin(self, _axis(dim, self.ndim), keepdim)


@register_aten(aten.max.dim)
def aten_max_dim(self, dim, keepdim=False):
    d = _axis(dim, self.ndim)
    return ops.max(self, [d], keepdim), ops.argmax(self, d, keepdim)


@register_aten(aten.min.dim)
def aten_min_dim(self, dim, keepdim=False):
    d = _axis(dim, self.ndim)
    return ops.min(self, [d], keepdim), ops.argmin(self, d, keepdim)


@register_aten(aten.var.correction)
def aten_var_correction(self, dim=None, *, correction=None, keepdim=False):
    c = 1 if correction is None else correction
    return ops.var(self, _dims(dim, self.ndim), keepdim, int(c))


@register_aten(aten.var.dim)
def aten_var_dim(self, dim=None, unbiased=True, keepdim=False):
    return ops.var(self, _dims(dim, self.ndim), keepdim, 1 if unbiased else 0)


@register_aten(aten.cumsum.default)
def aten_cumsum(self, dim, *, dtype=None):
    if dtype is None:
        return ops.cumsum(self, _axis(dim, self.ndim))
    d = dtype_name(dtype)
    y = ops.cumsum(ops.cast(self, d), _axis(dim, self.ndim))  # integers sum in int64: back to d
    return y if y.dtype == d else ops.cast(y, d)


# ---------------------------------------------------------------------------- products

@register_aten(aten.mm.default, aten.bmm.default)
def aten_mm(self, mat2):
    return ops.matmul(self, mat2)


@register_aten(aten.addmm.default)
def aten_addmm(self, mat1, mat2, *, beta=1, alpha=1):
    return m.torch_addmm(self, mat1, mat2, beta=beta, alpha=alpha)


# ---------------------------------------------------------------------------- shapes and views

@register_aten(aten.alias.default, aten.clone.default)
def aten_alias(self, *, memory_format=None):
    return self


@register_aten(aten.view.default)
def aten_view(self, size):
    return m.tensor_reshape(self, list(size))


@register_aten(aten.expand.default)
def aten_expand(self, size, *, implicit=False):
    return m.tensor_expand(self, list(size))


@register_aten(aten.permute.default)
def aten_permute(self, dims):
    return ops.permute(self, [_axis(d, self.ndim) for d in dims])


@register_aten(aten.squeeze.dim)
def aten_squeeze_dim(self, dim):
    return m.torch_squeeze(self, dim)


@register_aten(aten.squeeze.dims)
def aten_squeeze_dims(self, dim):
    return m.torch_squeeze(self, list(dim))


@register_aten(aten.unsqueeze.default)
def aten_unsqueeze(self, dim):
    return ops.unsqueeze(self, _axis(dim, self.ndim + 1))


@register_aten(aten.cat.default)
def aten_cat(tensors, dim=0):
    return m.torch_cat(list(tensors), dim)


@register_aten(aten.select.int)
def aten_select(self, dim, index):
    d = _axis(dim, self.ndim)
    return m.operator_getitem(self, (slice(None),) * d + (index,))


@register_aten(aten.slice.Tensor)
def aten_slice(self, dim=0, start=None, end=None, step=1):
    d = _axis(dim, self.ndim)
    n = self.shape[d]
    if isinstance(end, int) and not m.is_symbolic_size(n) and end > n:
        end = n  # ATen's "to the end" is a huge number
    return m.operator_getitem(self, (slice(None),) * d + (slice(start, end, step),))


@register_aten(aten.split_with_sizes.default)
def aten_split_with_sizes(self, split_sizes, dim=0):
    return list(ops.split(self, [int(s) for s in split_sizes], _axis(dim, self.ndim)))


@register_aten(aten.flip.default)
def aten_flip(self, dims):
    return m.torch_flip(self, list(dims))


@register_aten(aten.repeat.default)
def aten_repeat(self, repeats):
    repeats = [int(r) for r in repeats]
    x = self
    if len(repeats) > x.ndim:
        x = ops.reshape(x, [1] * (len(repeats) - x.ndim) + list(x.shape))
    # Each axis d of extent n repeated r times: [.., 1, n, ..] broadcast to [.., r, n, ..], merged.
    shape = list(x.shape)
    expanded, merged = [], []
    for r, n in zip(repeats, shape):
        expanded += [r, n]
        merged.append(r * n)
    y = ops.broadcast_to(ops.reshape(x, [v for n in shape for v in (1, n)]), expanded)
    return ops.reshape(y, merged)


@register_aten(aten.constant_pad_nd.default)
def aten_constant_pad_nd(self, pad, value=0):
    pads = [int(p) for p in pad]
    if any(p < 0 for p in pads):  # a negative pad crops
        axes, starts, stops = [], [], []
        for k in range(len(pads) // 2):
            d = self.ndim - 1 - k
            before, after = min(pads[2 * k], 0), min(pads[2 * k + 1], 0)
            if before or after:
                axes.append(d), starts.append(-before), stops.append(self.shape[d] + after)
                pads[2 * k], pads[2 * k + 1] = max(pads[2 * k], 0), max(pads[2 * k + 1], 0)
        self = ops.slice(self, axes, starts, stops, [1] * len(axes))
    return ops.pad(self, pads, float(value)) if any(pads) else self


def _strided_index(size, stride, offset):
    """The flat element index of every position of an as_strided view (int64, shape `size`)."""
    idx = torch.full(list(size), int(offset), dtype=torch.int64)
    for d, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        idx = idx + torch.arange(n, dtype=torch.int64).reshape(shape) * int(s)
    return idx


@register_aten(aten.as_strided.default)
def aten_as_strided(self, size, stride, storage_offset=None):
    """A view of the (contiguous) input's elements: a gather by the flat indices, computed now."""
    if any(m.is_symbolic_size(v) for v in list(size) + list(stride)):
        raise NotImplementedError('as_strided with symbolic sizes is not mapped')
    idx = _strided_index(size, stride, storage_offset or 0)
    flat = ops.reshape(self, [-1])
    return ops.take(flat, to_hidet_constant(idx.contiguous()), 0) if idx.numel() else _full(size, 0, self.dtype)


@register_aten(aten.diagonal.default)
def aten_diagonal(self, offset=0, dim1=0, dim2=1):
    d1, d2 = _axis(dim1, self.ndim), _axis(dim2, self.ndim)
    rest = [d for d in range(self.ndim) if d not in (d1, d2)]
    x = ops.permute(self, rest + [d1, d2])
    n1, n2 = x.shape[-2], x.shape[-1]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    start = offset if offset >= 0 else -offset * n2
    idx = torch.arange(length, dtype=torch.int64) * (n2 + 1) + start
    flat = ops.reshape(x, list(x.shape[:-2]) + [n1 * n2])
    return ops.take(flat, to_hidet_constant(idx), len(rest))


@register_aten(aten.copy.default, aten.copy_.default)
def aten_copy(self, src, non_blocking=False):
    y = ops.cast(src, self.dtype) if src.dtype != self.dtype else src
    return ops.broadcast_to(y, list(self.shape)) if list(y.shape) != list(self.shape) else y


@register_aten(aten._to_copy.default)
def aten_to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
                 memory_format=None):
    if dtype is not None and dtype_name(dtype) != self.dtype:
        return ops.cast(self, dtype_name(dtype))
    return self


# ---------------------------------------------------------------------------- creation

@register_aten(aten.full.default)
def aten_full(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _full(list(size), fill_value, dtype)


@register_aten(aten.full_like.default)
def aten_full_like(self, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _full(list(self.shape), fill_value, dtype if dtype is not None else self.dtype)


@register_aten(aten.empty.memory_format)
def aten_empty(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return _full(list(size), 0, dtype if dtype is not None else torch.get_default_dtype())


@register_aten(aten.empty_strided.default)
def aten_empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _full(list(size), 0, dtype if dtype is not None else torch.get_default_dtype())


@register_aten(aten.scalar_tensor.default)
def aten_scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _full([], s, dtype if dtype is not None else torch.get_default_dtype())


@register_aten(aten.fill.Scalar)
def aten_fill(self, value):
    return _full(list(self.shape), value, self.dtype)


@register_aten(aten.arange.start_step)
def aten_arange(start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=None):
    return m.torch_arange(start, end, step, dtype=dtype)


# ---------------------------------------------------------------------------- neural-network operators

@register_aten(aten.convolution.default)
def aten_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    spatial = input.ndim - 2
    if transposed:
        if spatial != 2:
            raise NotImplementedError(f'a transposed convolution of {spatial} spatial dims is not mapped (2 is)')
        return m.torch_conv_transpose2d(input, weight, bias, list(stride), list(padding), list(output_padding),
                                        groups, list(dilation))
    if spatial == 1:
        return m.torch_conv1d(input, weight, bias, list(stride), list(padding), list(dilation), groups)
    if spatial == 2:
        return m.torch_conv2d(input, weight, bias, list(stride), list(padding), list(dilation), groups)
    if spatial == 3:
        return m.torch_conv3d(input, weight, bias, list(stride), list(padding), list(dilation), groups)
    raise NotImplementedError(f'a convolution of {spatial} spatial dims is not mapped (1, 2 and 3 are)')


@register_aten(aten._native_batch_norm_legit_no_training.default)
def aten_batch_norm_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    y = ops.batch_norm(input, running_mean, running_var, weight, bias, float(eps))
    return y, Unavailable('the batch mean of batch_norm'), Unavailable('the batch rstd of batch_norm')


@register_aten(aten.native_layer_norm.default)
def aten_native_layer_norm(input, normalized_shape, weight, bias, eps):
    y = ops.layer_norm(input, len(normalized_shape), weight, bias, float(eps))
    return y, Unavailable('the mean of native_layer_norm'), Unavailable('the rstd of native_layer_norm')


if hasattr(aten, '_fused_rms_norm'):
    # What F.rms_norm dispatches to on CUDA (aot_autograd's graphs of DTensor models record it).
    @register_aten(aten._fused_rms_norm.default)
    def aten_fused_rms_norm(input, normalized_shape, weight=None, eps=None):
        return m.torch_rms_norm(input, normalized_shape, weight, eps), Unavailable('the rstd of _fused_rms_norm')


@register_aten(aten.native_group_norm.default)
def aten_native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    y = ops.group_norm(input, int(group), weight, bias, float(eps))
    return y, Unavailable('the mean of native_group_norm'), Unavailable('the rstd of native_group_norm')


@register_aten(aten.native_dropout.default)
def aten_native_dropout(input, p, train):
    if train:
        raise NotImplementedError('dropout in training mode: ' + _TRAINING)
    return input, _full(list(input.shape), True, 'bool')


@register_aten(aten._softmax.default)
def aten_softmax(self, dim, half_to_float):
    x = ops.cast(self, 'float32') if half_to_float else self
    return ops.softmax(x, _axis(dim, x.ndim))


@register_aten(aten._log_softmax.default)
def aten_log_softmax(self, dim, half_to_float):
    x = ops.cast(self, 'float32') if half_to_float else self
    return ops.log_softmax(x, _axis(dim, x.ndim))


@register_aten(aten.embedding.default)
def aten_embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return ops.embedding(indices, weight)


@register_aten(aten._adaptive_avg_pool2d.default)
def aten_adaptive_avg_pool2d(self, output_size):
    return m.torch_adaptive_avg_pool2d(self, list(output_size))


def _aten_avg_pool(mapping):
    """aten.avg_pool2d / avg_pool3d: ATen's empty stride means the kernel size."""
    def aten_avg_pool(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                      divisor_override=None):
        return mapping(self, list(kernel_size), list(stride) or None, padding, ceil_mode, count_include_pad,
                       divisor_override)
    return aten_avg_pool


def _aten_max_pool_with_indices(mapping, name):
    """aten.max_pool2d_with_indices / max_pool3d_with_indices: the values (the indices are not computed)."""
    def aten_max_pool(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        y = mapping(self, list(kernel_size), list(stride) or None, padding, dilation, ceil_mode)
        return y, Unavailable(f'the indices of {name}')
    return aten_max_pool


def _aten_adaptive_max_pool(mapping, name):
    """aten.adaptive_max_pool2d / adaptive_max_pool3d: the values (the indices are not computed)."""
    return lambda self, output_size: (mapping(self, list(output_size)), Unavailable(f'the indices of {name}'))


register_aten(aten.avg_pool2d.default)(_aten_avg_pool(m.torch_avg_pool2d))
register_aten(aten.avg_pool3d.default)(_aten_avg_pool(m.torch_avg_pool3d))
register_aten(aten.max_pool2d_with_indices.default)(
    _aten_max_pool_with_indices(m.torch_max_pool2d, 'max_pool2d_with_indices'))
register_aten(aten.max_pool3d_with_indices.default)(
    _aten_max_pool_with_indices(m.torch_max_pool3d, 'max_pool3d_with_indices'))
register_aten(aten.adaptive_max_pool2d.default)(
    _aten_adaptive_max_pool(m.torch_adaptive_max_pool2d, 'adaptive_max_pool2d'))
register_aten(aten.adaptive_max_pool3d.default)(
    _aten_adaptive_max_pool(m.torch_adaptive_max_pool3d, 'adaptive_max_pool3d'))


@register_aten(aten.avg_pool1d.default)
def aten_avg_pool1d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return Registry.registered_functions[torch.nn.functional.avg_pool1d](
        self, list(kernel_size), list(stride) or None, list(padding) if isinstance(padding, (list, tuple)) else padding,
        ceil_mode, count_include_pad)


@register_aten(aten.adaptive_avg_pool1d.default)
def aten_adaptive_avg_pool1d(self, output_size):
    return m.torch_adaptive_avg_pool1d(self, list(output_size))


@register_aten(aten.grid_sampler_2d.default)
def aten_grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    return m.torch_grid_sample(input, grid, m._GRID_MODES[interpolation_mode], m._GRID_PADDINGS[padding_mode],
                               align_corners)


@register_aten(aten.adaptive_avg_pool3d.default)
@register_aten(aten._adaptive_avg_pool3d.default)
def aten_adaptive_avg_pool3d(self, output_size):
    return m.torch_adaptive_avg_pool3d(self, list(output_size))


@register_aten(aten.upsample_bilinear2d.vec)
def aten_upsample_bilinear2d(input, output_size, align_corners, scale_factors):
    return m.torch_interpolate(input, list(output_size) if output_size else None,
                               list(scale_factors) if scale_factors else None, 'bilinear', align_corners)


@register_aten(aten.upsample_nearest2d.vec)
def aten_upsample_nearest2d(input, output_size, scale_factors):
    return m.torch_interpolate(input, list(output_size) if output_size else None,
                               list(scale_factors) if scale_factors else None, 'nearest')


def _pad_index(n, before, after, mode):
    """Source positions along an axis of extent n padded by (before, after): 'reflect',
    'replicate' or 'circular'."""
    pos = torch.arange(-before, n + after)
    if mode == 'replicate':
        return pos.clamp(0, n - 1)
    if mode == 'circular':
        return pos % n
    period = 2 * (n - 1)
    pos = pos.abs() % period if period else torch.zeros_like(pos)
    return torch.where(pos >= n, period - pos, pos)


def gather_pad(x, pads, mode):
    """x padded by `pads` (PyTorch's order: the last axis first) with mode 'reflect', 'replicate'
    or 'circular': a take of each padded axis by constant source positions."""
    for k in range(len(pads) // 2):
        d = x.ndim - 1 - k
        before, after = int(pads[2 * k]), int(pads[2 * k + 1])
        if before or after:
            idx = _pad_index(x.shape[d], before, after, mode)
            x = ops.take(x, to_hidet_constant(idx.to(torch.int64)), d)
    return x


def _gather_pad(mode):
    return lambda self, padding: gather_pad(self, list(padding), mode)


for _name, _mode in [('reflection_pad1d', 'reflect'), ('reflection_pad2d', 'reflect'), ('reflection_pad3d', 'reflect'),
                     ('replication_pad2d', 'replicate'), ('replication_pad3d', 'replicate')]:
    register_aten(getattr(aten, _name).default)(_gather_pad(_mode))


@register_aten(aten._cdist_forward.default)
def aten_cdist(x1, x2, p, compute_mode=None):
    if p != 2:
        raise NotImplementedError(f'cdist with p={p} is not mapped (p=2 is)')
    # |a - b|^2 = |a|^2 - 2 a.b + |b|^2, clamped at 0 against rounding
    a2 = ops.sum(ops.mul(x1, x1), [x1.ndim - 1], True)
    b2 = ops.sum(ops.mul(x2, x2), [x2.ndim - 1], True)
    ab = ops.matmul(x1, ops.transpose(x2, x2.ndim - 2, x2.ndim - 1))
    d2 = ops.add(ops.sub(a2, ops.mul(ab, 2.0)), ops.transpose(b2, b2.ndim - 2, b2.ndim - 1))
    return ops.sqrt(ops.maximum(d2, 0.0))


# ---------------------------------------------------------------------------- indexing

@register_aten(aten.gather.default)
def aten_gather(self, dim, index, *, sparse_grad=False):
    return ops.gather(self, _axis(dim, self.ndim), index)


@register_aten(aten.index_select.default)
def aten_index_select(self, dim, index):
    return ops.take(self, index, _axis(dim, self.ndim))


@register_aten(aten.index.Tensor)
def aten_index(self, indices):
    """x[i0, i1, ...] with optional integer (or bool) tensors per axis: getitem's rule."""
    items = tuple(slice(None) if i is None else i for i in indices)
    return m.operator_getitem(self, items)


@register_aten(aten.index_put.default)
def aten_index_put(self, indices, values, accumulate=False):
    return ops.index_put(self, [i for i in indices], _tensor(values, self), bool(accumulate))


@register_aten(aten.scatter.src)
def aten_scatter_src(self, dim, index, src):
    return ops.scatter(self, _axis(dim, self.ndim), index, src)


@register_aten(aten.scatter.value)
def aten_scatter_value(self, dim, index, value):
    return ops.scatter(self, _axis(dim, self.ndim), index, float(value))


@register_aten(aten.scatter_add.default)
def aten_scatter_add(self, dim, index, src):
    return ops.scatter_add(self, _axis(dim, self.ndim), index, src)


@register_aten(aten.scatter_reduce.two)
def aten_scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    if reduce not in ('sum', 'amax', 'amin') or not include_self:
        raise NotImplementedError(f"scatter_reduce(reduce='{reduce}', include_self={include_self}) is not mapped "
                                  "(sum, amax and amin with include_self=True are)")
    return ops.scatter(self, _axis(dim, self.ndim), index, src, reduce)


@register_aten(aten.select_scatter.default)
def aten_select_scatter(self, src, dim, index):
    d = _axis(dim, self.ndim)
    return aten_slice_scatter(self, ops.unsqueeze(src, d), d, index, index + 1 if index != -1 else None, 1)


@register_aten(aten.slice_scatter.default)
def aten_slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    """self with src written into the slice [start:end:step] of axis dim: pieces concatenated for
    step 1, else a take of the merged values by a constant index."""
    d = _axis(dim, self.ndim)
    n = self.shape[d]
    start, stop, step = slice(start, end, step).indices(n)
    if step == 1:
        parts = []
        if start > 0:
            parts.append(ops.slice(self, [d], [0], [start], [1]))
        parts.append(src)
        if stop < n:
            parts.append(ops.slice(self, [d], [stop], [n], [1]))
        return parts[0] if len(parts) == 1 else ops.concat(parts, d)
    # [self, src] along d, and for each output position the index of its source in that
    merged = ops.concat([self, src], d)
    idx = torch.arange(n)
    written = torch.arange(start, stop, step)
    idx[written] = n + torch.arange(len(written))
    return ops.take(merged, to_hidet_constant(idx), d)


@register_aten(aten.masked_scatter.default)
def aten_masked_scatter(self, mask, source):
    """The positions where mask holds take source's elements in order: the k-th true position
    takes source.flatten()[k] (a running count of the mask indexes source)."""
    mask = ops.broadcast_to(mask, list(self.shape)) if list(mask.shape) != list(self.shape) else mask
    flat_mask = ops.reshape(mask, [-1])
    k = ops.sub(ops.cumsum(ops.cast(flat_mask, 'int64'), 0), 1)
    k = ops.maximum(k, 0)
    taken = ops.take(ops.reshape(source, [-1]), k, 0)
    return ops.reshape(ops.where(flat_mask, taken, ops.reshape(self, [-1])), list(self.shape))


@register_aten(aten.sort.default)
def aten_sort(self, dim=-1, descending=False):
    return tuple(ops.sort(self, _axis(dim, self.ndim), bool(descending)))


@register_aten(aten.topk.default)
def aten_topk(self, k, dim=-1, largest=True, sorted=True):
    return tuple(ops.topk(self, int(k), _axis(dim, self.ndim), bool(largest), bool(sorted)))


# ---------------------------------------------------------------------------- kept whole by hidet.torch.export
# hidet.torch.export decomposes the exported program into core ATen except these operators (export.py,
# KEPT_WHOLE), which reach the torch-level mappings: attention, products and norms stay one
# operator each, as under torch.compile.


@register_aten(aten.linear.default)
def aten_linear(input, weight, bias=None):
    return m.torch_linear(input, weight, bias)


@register_aten(aten.scaled_dot_product_attention.default)
def aten_scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                                      enable_gqa=False):
    return m.torch_sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


# The kernel-specific attention operators that aot_autograd records in place of
# scaled_dot_product_attention (a DTensor model's graph on a GPU): the output, and the statistics
# only training reads.
def _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, name, n_rest):
    if dropout_p:
        raise NotImplementedError(f'{name} with dropout_p={dropout_p}: ' + _TRAINING)
    y = m.torch_sdpa(query, key, value, attn_mask, 0.0, is_causal, scale, True)  # (fewer kv heads: read in place)
    return (y,) + tuple(Unavailable(f'output {k + 1} of {name} (for training)') for k in range(n_rest))


if hasattr(aten, '_scaled_dot_product_flash_attention'):
    @register_aten(aten._scaled_dot_product_flash_attention.default)
    def aten_sdpa_flash(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
        return _attention(query, key, value, None, dropout_p, is_causal, scale, '_scaled_dot_product_flash_attention', 8)


if hasattr(aten, '_scaled_dot_product_efficient_attention'):
    @register_aten(aten._scaled_dot_product_efficient_attention.default)
    def aten_sdpa_efficient(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *,
                            scale=None):
        return _attention(query, key, value, attn_bias, dropout_p, is_causal, scale,
                          '_scaled_dot_product_efficient_attention', 3)


if hasattr(aten, '_scaled_dot_product_cudnn_attention'):
    @register_aten(aten._scaled_dot_product_cudnn_attention.default)
    def aten_sdpa_cudnn(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False,
                        return_debug_mask=False, *, scale=None):
        return _attention(query, key, value, attn_bias, dropout_p, is_causal, scale,
                          '_scaled_dot_product_cudnn_attention', 8)

if hasattr(aten, '_scaled_dot_product_flash_attention_for_cpu'):
    @register_aten(aten._scaled_dot_product_flash_attention_for_cpu.default)
    def aten_sdpa_flash_for_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
        return _attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                          '_scaled_dot_product_flash_attention_for_cpu', 1)


@register_aten(aten.layer_norm.default)
def aten_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return m.torch_layer_norm(input, normalized_shape, weight, bias, eps)


@register_aten(aten.group_norm.default)
def aten_group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return m.torch_group_norm(input, num_groups, weight, bias, eps)


@register_aten(aten.sym_size.int)
def aten_sym_size(self, dim):
    """A size of an exported program's tensor (dynamo gives sizes as Python values instead): an
    int, or a hidet.Dim when it is symbolic."""
    return self.shape[dim]
