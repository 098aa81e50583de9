"""torch.compile(backend='hidet') on the emulator (or the GPU): operator mappings against eager
PyTorch on small odd shapes, a small CNN and a two-layer transformer end to end, the listing of
unmapped operators, the registry example of Hidet's guide, the fallback to PyTorch, and options."""
import operator

import pytest
import torch
import numpy as np
import torch.nn as nn
import torch.nn.functional as F

import hidet
import hidet.torch
from conftest import assert_close

DEVICE = 'cpu' if hidet.cuda_emulated() else 'cuda'


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    hidet.torch.dynamo_config.reset()
    yield


def _roi_align_row(a, u):
    from torchvision.ops import roi_align
    lo = u[:, :2] * 4 + 3
    hi = lo + u[:, 2:].abs() * 6
    batch = (torch.arange(u.shape[0], device=u.device) % 2).to(u.dtype)[:, None]
    rois = torch.cat([batch, lo, hi], 1)
    return sum(roi_align(a, rois, (3, 2), spatial_scale=scale, sampling_ratio=ratio, aligned=aligned)
               for scale, ratio, aligned in ((0.5, 2, False), (1.0, 1, True), (0.75, 3, False)))


def _solve_row(a, b, c, d):
    """torch.linalg.solve_triangular both ways round: lower and upper, left and right, unit diagonals, batches
    that broadcast (A [2, 1, 6, 6] against B [3, 6, 4]); and the chunk systems of gated delta-rule attention
    (Qwen3-Next: unit lower 16 x 16 here, 64 x 64 there, one per head and chunk)."""
    A = a * 0.2 + 2 * torch.eye(6, device=a.device)
    x1 = torch.linalg.solve_triangular(A, b, upper=False)
    x2 = torch.linalg.solve_triangular(A, b, upper=True, unitriangular=True)
    x3 = torch.linalg.solve_triangular(A, c, upper=False, left=False)
    x4 = torch.linalg.solve_triangular(A.transpose(-1, -2), c, upper=True, left=False, unitriangular=True)
    x5 = torch.linalg.solve_triangular(d[..., :16] * 0.1, d[..., 16:], upper=False, unitriangular=True)
    return torch.cat([(x1 + x2).flatten(), (x3 + x4).flatten(), x5.flatten()])


def _complex_rotary(x, pos):
    """Llama 4's and DeepSeek-V2's rotary embedding: freqs_cis = polar(1, angles) * scale, the heads rotated by a
    complex product (hidet.torch.complex: pairs of reals)."""
    inv = 1.0 / (10000 ** (torch.arange(0, 8, device=x.device).float() / 8))
    freqs = pos[..., None] * inv
    cis = torch.polar(torch.ones_like(freqs), freqs) * 0.9
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * cis[:, :, None, :]).flatten(3).type_as(x)


def _complex_ops(a, b):
    """Complex arithmetic (numbers on either side), views and parts, chained: each operator reads its operands'
    parts as they were made (a chain sliced out of stacks again fused into a kernel that took 34 s to build)."""
    c = torch.complex(a, b)
    d = c * c.conj() - c * 2j + (c + 1.5).transpose(0, 1).permute(1, 0, 2) - torch.polar(a.abs(), b) * a
    e = d.reshape(3, 24)[:, None, 2:10].unsqueeze(0).squeeze(0)
    f = 1.0 - e * e + 2.0 * e.conj()
    return torch.cat([torch.view_as_real(f).flatten(), f.abs().flatten(), f.real.flatten(), f.imag.flatten()])


def compiled(fn, **kw):
    return torch.compile(fn, backend='hidet', dynamic=False, **kw)


def r(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE).to(dtype)


CASES = {
    'add_mul_scalar': (lambda a, b: (a + b) * 2.0 - 1, [r(3, 17), r(17)]),
    'div_rsub_neg': (lambda a, b: -(1 - a / (b.abs() + 1)), [r(5, 9), r(5, 9)]),
    'unary': (lambda a: torch.exp(a.tanh()) + torch.sigmoid(a) + a.abs().sqrt() + torch.erf(a) + a.cos(), [r(4, 33)]),
    'activations': (lambda a: F.gelu(a) + F.silu(a) + F.relu6(a) + F.hardswish(a) + F.leaky_relu(a, 0.2),
                    [r(3, 45)]),
    'gelu_tanh': (lambda a: F.gelu(a, approximate='tanh'), [r(7, 13)]),
    'matmul_linear': (lambda a, w, b: F.linear(a @ w, w.t(), b), [r(6, 11), r(11, 11), r(11)]),
    'bmm': (lambda a, b: torch.bmm(a, b), [r(3, 5, 7), r(3, 7, 4)]),
    'softmax_log_softmax': (lambda a: F.softmax(a, -1) + F.log_softmax(a, dim=1).exp(), [r(4, 37)]),
    'reductions': (lambda a: a.sum(1, keepdim=True) + a.mean(dim=(0, 1)) + torch.var(a, dim=1, keepdim=True),
                   [r(6, 19)]),
    'shapes': (lambda a: a.view(2, 3, 10).permute(2, 0, 1).transpose(1, 2).flatten(1).unsqueeze(0).squeeze(0),
               [r(6, 10)]),
    'getitem_split_cat': (lambda a: torch.cat([a[:, :3], a[:, 5:], a[1:2].expand(4, 9)[:, :1]], dim=1), [r(4, 9)]),
    'getitem_none_ellipsis': (lambda a: a[..., 1] + a[:, None, 0, ::2].sum(-1) + a[-1, :, 0], [r(3, 4, 6)]),
    'chunk_stack': (lambda a: torch.stack(a.chunk(3, dim=1), dim=0).sum(0), [r(5, 12)]),
    # Integer tensors at adjacent positions index together (broadcast, negative entries from the end).
    'getitem_tensors': (lambda a, i, j: a[i, j] + a[:, i, j].sum(0).unsqueeze(-1),
                        [r(5, 6, 6), torch.tensor([[0], [4], [-1]], device=DEVICE),
                         torch.tensor([[1, -2, 5, 0]], device=DEVICE)]),
    'diff': (lambda a, b: torch.diff(a, dim=1) + torch.diff(a, n=2, dim=1, prepend=b[:, :1]) +
             torch.diff(a, dim=1, append=b)[:, :6],
             [r(4, 7), r(4, 2)]),
    'where_masked_fill': (lambda a, b: torch.where(a > 0, a, b).masked_fill(b < -1, 0.5), [r(6, 7), r(6, 7)]),
    'sdpa': (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [r(2, 3, 9, 16)] * 3),
    'clamp_tensor_bounds_isinf_any': (lambda a: torch.clamp(a, min=-torch.where(torch.isinf(a).any(), 2.0, 1.5),
                                                            max=torch.where(a.isnan().all(), 0.5, 1.0)), [r(4, 6)]),
    'more_activations': (lambda a: F.hardtanh(a, -0.5, 0.5) + F.hardsigmoid(a) + F.relu(a) * torch.relu(a), [r(3, 10)]),
    'addmm_pow_floordiv': (lambda b, x, w: torch.addmm(b, x, w, beta=0.5, alpha=2.0) ** 2 + torch.div(x.sum(1, keepdim=True),
                                                                                                      3.0, rounding_mode='floor'),
                           [r(7), r(5, 6), r(6, 7)]),
    'pow_integer_and_fractional': (lambda a: torch.pow(a, 3.0) + a ** 3 - a.abs().pow(1.5) + a.pow(2), [r(5, 9)]),
    'max_min_elementwise': (lambda a, b: torch.maximum(a, b) - torch.minimum(a, b) + torch.max(a, b) - a.max(), [r(4, 5), r(4, 5)]),
    'max_min_dim_argmax': (lambda a: a.max(dim=1).values + torch.min(a, 1, keepdim=True)[0].squeeze(1)
                           + a.argmax(-1).float() + torch.max(a, 0)[1].float().sum(), [r(5, 7)]),
    'gather_index_select_tensor_index': (lambda a, i: torch.gather(a, 1, i) + a.index_select(1, i[0]).sum()
                                         + a[:, i[0]].sum(-1, keepdim=True), [r(4, 6), torch.tensor([[5, 0, 2], [1, 1, 3], [0, 4, 4],
                                                                                        [2, 2, 5]], device=DEVICE)]),
    'var_cumsum_roll': (lambda a: torch.var(a, 1, keepdim=True, unbiased=False) + a.cumsum(1) + torch.roll(a, 2, 1), [r(3, 8)]),
    'norms': (lambda a, w, b: F.group_norm(a, 2, w, b) + F.layer_norm(a, a.shape[1:]), [r(2, 4, 3, 5), r(4), r(4)]),
    'pools_pad': (lambda a: F.avg_pool2d(F.pad(a, (1, 2, 0, 1)), 2) + F.max_pool2d(F.pad(a, (1, 2, 0, 1), value=0.5), 2),
                  [r(2, 3, 7, 9)]),
    'conv_padding_same': (lambda a, w: F.conv2d(a, w, padding='same') + F.conv2d(a, w[:, :, :2, :3], padding='same'),
                          [r(1, 2, 6, 7), r(3, 2, 3, 3)]),
    'split_squeeze_t': (lambda a: torch.cat([t.t() for t in a.unsqueeze(0).squeeze(0).split([2, 3], dim=1)], 0),
                        [r(4, 5)]),
    'in_graph_creation': (lambda a: a + torch.zeros_like(a) + a.new_ones(a.shape) + torch.arange(a.shape[1], device=a.device),
                          [r(3, 6)]),
    # sizes as the keyword (LED's and Longformer's masks: `float_mask.new_ones(size=float_mask.size())`)
    # (each size widens the result: a size lost would broadcast as a scalar and go unseen)
    'in_graph_creation_size_keyword': (lambda a: a * a.new_ones(size=(2,) + a.size()) + a.new_zeros(size=(4, 1, 1, 6))
                                       + a.new_full(size=(1, 6), fill_value=0.5) + a.new_empty(size=a.shape).shape[0],
                                       [r(3, 6)]),
    'adaptive_max_pool': (lambda a: F.adaptive_max_pool2d(a, (3, 4)) + F.adaptive_max_pool2d(a, 1)
                          + F.adaptive_max_pool2d(a[0], (3, None))[..., :4], [r(2, 3, 7, 10)]),
    # 3-D pooling (torchvision's video models, S3D, MViT) as two 2-D poolings: padding, stride, dilation,
    # ceil_mode, count_include_pad, adaptive sizes with None, an unbatched input
    'pools_3d': (lambda a: F.max_pool3d(a, (3, 3, 2), (2, 1, 2), (1, 1, 0), dilation=(1, 2, 1),
                                        ceil_mode=True)[..., :2, :3, :3]
                 + F.avg_pool3d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False)[..., :2, :3, :3]
                 + F.avg_pool3d(a, (2, 3, 3), (2, 2, 2), (1, 1, 1))[..., :2, :3, :3]
                 + F.adaptive_avg_pool3d(a, (3, None, 4))[..., :2, :3, :3] + F.adaptive_max_pool3d(a, 1)
                 + nn.MaxPool3d(2)(a)[..., :2, :3, :3] + F.adaptive_avg_pool3d(a[0], 2)[:, :1, :1, :1],
                 [r(2, 3, 5, 6, 7)]),
    # grid_sample (RAFT, deformable attention): every padding mode and both alignments, bilinear and nearest, with
    # points outside the input (the grid spans [-1.3, 1.3])
    'grid_sample': (lambda a, g: sum(F.grid_sample(a, g, mode, pad, align_corners=align)
                                     for mode in ('bilinear', 'nearest') for pad in ('zeros', 'border', 'reflection')
                                     for align in (False, True)), [r(2, 3, 5, 7), r(2, 4, 6, 2) * 1.3]),
    # torchvision's roi_align (the R-CNNs' box heads): rois of both images, some past the input, scales, sampling
    # ratios and both alignments
    'roi_align': (lambda a, u: _roi_align_row(a, u), [r(2, 3, 9, 11), r(6, 4)]),
    'complex_rotary': (_complex_rotary, [r(2, 5, 4, 16, dtype=torch.float16), r(2, 5) * 3]),
    'complex_ops': (_complex_ops, [r(3, 4, 6), r(3, 4, 6)]),
    'solve_triangular': (_solve_row, [r(2, 1, 6, 6), r(3, 6, 4), r(2, 3, 5, 6), r(1, 2, 3, 16, 24)]),
    # windows longer than the input under ceil_mode (transformers' EfficientNet: AvgPool2d(2560, ceil_mode=True) on 1x1)
    'pool_window_past_input': (lambda a: F.avg_pool2d(a, 5, ceil_mode=True) + F.max_pool2d(a, (5, 4), ceil_mode=True)
                               + nn.AvgPool2d(2560, ceil_mode=True)(a[..., :1, :1]), [r(2, 3, 3, 3)]),
    # 0-d tensors do not raise the dtype of a tensor with dimensions (CTRL's `inputs_embeds *= np.sqrt(d_model)`:
    # dynamo makes a 0-d float64 tensor of the NumPy scalar): f32 results, as in eager
    'numpy_scalars': (lambda a, w, i: F.layer_norm(a * np.sqrt(64) + np.float32(1.5) * a - np.float64(0.5)
                                                   + a * torch.tensor(2.0, dtype=torch.float64, device=a.device)
                                                   + (i * torch.tensor(3, device=a.device)).float(), (6,), w),
                      [r(3, 6), r(6), torch.arange(6, dtype=torch.int32, device=DEVICE)]),
    'masked_isnan': (lambda a: a.masked_fill(a > 1, 0.0) + torch.isnan(a).float() + torch.where(a < 0, 1.0, a), [r(4, 7)]),
    'cast_to': (lambda a: (a.half().float() + a.to(torch.float16).to(torch.float32)), [r(3, 8)]),
    'conv1d': (lambda a, w, b: F.conv1d(a, w, b, stride=2, padding=1) + F.conv1d(a, w, padding='same')[..., ::2]
               + F.conv1d(a[0], w, b, padding=1, stride=2), [r(2, 4, 9), r(3, 4, 3), r(3)]),
    'softplus_mish_elu': (lambda a: F.softplus(a) + F.softplus(a * 9, beta=2, threshold=5) + F.mish(a) + F.elu(a, 0.7),
                          [r(4, 7)]),
    'baddbmm': (lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=2) + c.baddbmm(a, b), [r(2, 3, 5), r(2, 3, 4), r(2, 4, 5)]),
    'interpolate_nearest': (lambda a: F.interpolate(a, scale_factor=2) + F.interpolate(a, size=(6, 10))
                            + F.interpolate(a, scale_factor=(2.0, 2.0)) + F.interpolate(a, size=(7, 4)).sum()
                            + F.interpolate(a, size=(5, 8), mode='nearest-exact').sum(), [r(1, 2, 3, 5)]),
    'instance_norm_normalize_tril': (lambda a, w, b: F.instance_norm(a, weight=w, bias=b) + F.normalize(a, dim=1)
                                     + torch.tril(a) + a.triu(1) + torch.triu(a, -1), [r(2, 3, 4, 5), r(3), r(3)]),
    'pools_1d': (lambda a: F.max_pool1d(a, 3, 2, 1) + F.avg_pool1d(a, 3, 2, 1) + F.adaptive_avg_pool1d(a, 5)[..., :5],
                 [r(2, 3, 9)]),
    'einsum': (lambda q, k, v, w: torch.einsum('bhqd,bhkd->bhqk', q, k).softmax(-1).sum()
               + torch.einsum('bhqk,bhkd->bqhd', torch.einsum('bhqd,bhkd->bhqk', q, k), v)
               + torch.einsum('...d,de->...e', q.transpose(1, 2), w).sum(-1, keepdim=True)
               + torch.einsum('ij,jk,kl', w, w.t(), w).sum() + torch.einsum('bhqd->bqh', q).unsqueeze(-1)
               + torch.einsum('bhqd,d', q, w[:, 0]).sum() + torch.einsum('i,j->ij', w[:, 0], w[0]).sum(),
               [r(2, 3, 5, 4), r(2, 3, 6, 4), r(2, 3, 6, 4), r(4, 4)]),
    'reductions_more': (lambda a: torch.std(a, 1, keepdim=True) + a.std() + torch.amax(a, 1, keepdim=True)
                        + a.amin(dim=(0, 1)) + torch.logsumexp(a * 30, 1, keepdim=True) / 30
                        + torch.linalg.vector_norm(a, dim=1, keepdim=True), [r(4, 7)]),
    'elementwise_more': (lambda a, b: torch.square(a) + torch.log1p(a.abs()) + torch.expm1(a) + torch.sign(a)
                         + F.logsigmoid(a * 50) / 50 + F.glu(torch.cat([a, b], 1), 1) + torch.outer(a[:, 0], b[0])[:, :7],
                         [r(4, 7), r(4, 7)]),
    'one_hot': (lambda i: F.one_hot(i, 6).float() * 2, [torch.tensor([[0, 5, 2], [3, 3, 1]], device=DEVICE)]),
    'interpolate_linear': (lambda a, b: F.interpolate(a, size=(7, 9), mode='bilinear', align_corners=False)
                           + F.interpolate(a, size=(7, 9), mode='bilinear', align_corners=True)
                           + F.interpolate(a, size=(7, 9), mode='bicubic', align_corners=False)
                           + F.interpolate(a, scale_factor=2.5, mode='bilinear')[..., :7, :9]
                           + F.interpolate(b, size=11, mode='linear').sum(), [r(1, 2, 4, 5), r(2, 3, 6)]),
    # The Tensor surface models use (issue 40): dtype conversions, comparisons either way round, views,
    # padding modes, attention over any leading dims.
    'casts_and_comparisons': (lambda a: a.int().float() + a.long().double().float() + a.type(torch.float16).float()
                              + a.bool().float() + a.le(0.1).float() + (2 < a).float()
                              + torch.greater_equal(a, 0.3).float() + a.ne(0.5).int().float(), [r(4, 6)]),
    'unbind_movedim_addc': (lambda a: torch.unbind(a, 1)[2].unsqueeze(1) + torch.movedim(a.reshape(2, 2, 6), 0, 2)
                            .reshape(4, 6) + torch.addcdiv(a, a, a.abs() + 3, value=2) + torch.addcmul(a, a, a)
                            + torch.swapaxes(a.t(), 0, 1) + torch.isfinite(a / (a - a[:1])).float(), [r(4, 6)]),
    'flip_repeat_shuffle': (lambda a: a.flip(0, 1).repeat(2, 1, 3).sum(0) + a.repeat_interleave(3, dim=1)
                            + F.pixel_unshuffle(F.pixel_shuffle(a.reshape(1, 8, 3, 1), 2), 2).reshape(4, 6)
                            .repeat(1, 3), [r(4, 6)]),
    'pad_modes': (lambda a: F.pad(a, (2, 3, 1, 2), mode='reflect').sum() + F.pad(a, (2, 3, 1, 2), mode='circular')
                  + F.pad(a, (2, 3, 1, 2), mode='replicate') + F.pad(a, (2, 3, 1, 2))
                  + F.pad(F.pad(a, (3, 4, 2, 3)), (-1, -1, -1, -1)), [r(1, 2, 4, 6)]),
    'sdpa_ranks_3_and_5': (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m).sum(2)
                           + F.scaled_dot_product_attention(q[0, 0], k[0, 0], v[0, 0], is_causal=True).sum(0),
                           [r(2, 3, 2, 7, 16), r(2, 3, 2, 9, 16), r(2, 3, 2, 9, 16), r(2, 1, 1, 7, 9)]),
    # Floor division of integer tensors stays integer (mixtral's `hidden_states[perm // top_k]`);
    # rounding 'trunc' of integers too; floats floor as Python's //.
    'floor_divide_integers': (lambda a, i: a[i // 3] + a[torch.div(i, 4, rounding_mode='floor')]
                              + torch.div(i - 9, 4, rounding_mode='trunc').unsqueeze(-1) + a[:4] // 0.3,
                              [r(6, 5), torch.tensor([0, 5, 17, 9], device=DEVICE)]),
    # A list of ints indexes as an integer tensor (falcon's `qkv[:, :, :, [-2]]`, fx's immutable_list).
    'getitem_lists': (lambda a: a[:, :, [-2]] + a[..., [0, 2], :].sum(2, keepdim=True) + a[[1, 0]], [r(2, 3, 4, 5)]),
    # FFTs whose real or imaginary part the model takes (FNet): products with DFT matrices.
    'fft_real_imag': (lambda a: torch.fft.fftn(a, dim=(1, 2)).real
                      + torch.fft.fft(torch.fft.fft(a, axis=2), axis=1).imag + torch.fft.fft2(a, norm='ortho').real
                      + torch.fft.fft(a, dim=1, norm='forward').imag,
                      [r(2, 5, 6)]),
    # ceil_mode with the window past the padded input (VoVNet's 3x3 stride-2 pool of a 2x2 map): one
    # window on H, a third window half past the end on W.
    'max_pool_ceil_window_past_input': (lambda a: F.max_pool2d(a, 3, 2, ceil_mode=True)
                                        + F.max_pool2d(a, (3, 2), (1, 2), (1, 0), ceil_mode=True)[..., :1, :],
                                        [r(1, 4, 2, 6)]),
    # Tensor.unfold: windows along an axis (halo attention)
    'tensor_unfold': (lambda a: a.unfold(2, 3, 2).unfold(3, 4, 3).sum(-1) + a[0].unfold(-1, 5, 5).sum(), [r(2, 3, 7, 10)]),
    # conv3d: a kernel of 1 on an axis (the lambda layer's (r, r, 1)), and strides, dilation and groups
    'conv3d': (lambda x, w, b, w2: torch.cat([F.conv3d(x, w, b, padding=(1, 1, 0)).flatten(),
                                              F.conv3d(x, w2, stride=(2, 1, 2), padding=1, dilation=(2, 1, 1),
                                                       groups=2).flatten()]),
               [r(2, 4, 5, 6, 7), r(3, 4, 3, 3, 1), r(3), r(6, 2, 3, 2, 3)]),
    # norms: Tensor.norm over two dims (ConvNeXt-V2's global response norm), 'fro' over all, p = 1, inf, 3, 0
    'norms': (lambda a: a * a.norm(p=2, dim=(1, 2), keepdim=True) + torch.norm(a) + a.norm(1, -1, True)
              + torch.linalg.vector_norm(a, float('inf'), dim=0) + a.norm(3, dim=1, keepdim=True)
              + torch.linalg.vector_norm(a.relu(), 0, dim=-1, keepdim=True), [r(3, 4, 5)]),
    # histc over a given range (MoE routers count tokens per expert): both ends, values outside
    'histc': (lambda a, i: torch.histc(a, bins=7, min=-1.5, max=2.0) + torch.histc(i.float(), 7, 0, 6),
              [r(5, 9), torch.tensor([0, 6, 3, 3, 1, 6, 7], device=DEVICE)]),
    # tensor attributes that transpose (DBRX's experts read w1.T): dynamo records them as getattr
    'transpose_attributes': (lambda a, b: torch.cat([(a.T @ a).flatten(), b.mT.flatten(), a.H.flatten(),
                                                     b.mH.flatten(), (b.mT @ a.T.T).flatten()]),
                             [r(5, 7), r(2, 5, 3)]),
    # cat and stack of mixed dtypes join in the promoted dtype (Gemma 3n stacks f16 and f32 states)
    'cat_stack_promote': (lambda a, b, i: torch.cat([torch.stack([a, b.half()], 1).flatten(),
                                                     torch.cat([b.half(), i], 1).float().flatten()]),
                          [r(3, 5), r(3, 5), torch.randint(-8, 8, (3, 2), device=DEVICE)]),
    # grouped-query attention: 6 q heads over 2 kv heads (q head h reads kv head h // 3)
    'sdpa_gqa': (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
                 [r(2, 6, 7, 16), r(2, 2, 7, 16), r(2, 2, 7, 16)]),
    # multi-query attention as broadcasting (Falcon): k and v of one head
    'sdpa_one_kv_head': (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                         [r(2, 4, 7, 16), r(2, 1, 7, 16), r(2, 1, 7, 16)]),
}


@pytest.mark.parametrize('name', list(CASES))
def test_function_mappings(name):
    fn, inputs = CASES[name]
    want = fn(*inputs)
    got = compiled(fn)(*inputs)
    assert_close(got, want, atol=2e-4, rtol=2e-4)


def test_scaled_mm_fp8():
    # small integers: exact in e4m3 and in the tensor cores' accumulator; only the output rounds
    a = torch.randint(-3, 4, (16, 64), device=DEVICE).float().to(torch.float8_e4m3fn)
    b = torch.randint(-3, 4, (32, 64), device=DEVICE).float().to(torch.float8_e4m3fn)  # torch: n % 16 == 0
    sa, sb = torch.tensor(0.5, device=DEVICE), torch.tensor(1.5, device=DEVICE)
    for out in (torch.bfloat16, torch.float32):
        def fn(a, b, sa, sb):
            return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=out)
        want = (a.float() @ b.float().t()) * 0.75
        got = compiled(fn)(a, b, sa, sb)
        assert got.dtype == out
        assert_close(got.float(), want, atol=0, rtol=1e-2 if out == torch.bfloat16 else 1e-6)
    # an fp8 output is refused with a clear message
    with pytest.raises(Exception, match='out_dtype must be f16, bf16 or f32'):
        compiled(lambda a, b, sa, sb: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb))(a, b, sa, sb)


def test_transposing_attributes_recorded_as_getattr():
    """A graph where a tensor's T, mT, H and mH are builtins.getattr nodes (dynamo records them so in DBRX's
    experts on a GPU; fx's symbolic trace records every attribute so): each a transpose; mT of a vector an error
    that says what was wrong."""
    from hidet.torch import hidet_backend

    def fn(a, b):
        return torch.cat([(a.T @ a).flatten(), b.mT.flatten(), a.H.flatten(), b.mH.flatten(), a.mT.T.flatten()])

    a, b = r(5, 7), r(2, 5, 3)
    gm = torch.fx.symbolic_trace(fn)
    assert sum(n.op == 'call_function' and n.target is getattr for n in gm.graph.nodes) == 6
    got = hidet_backend(gm, [a, b])(a, b)
    assert_close(got[0] if isinstance(got, (list, tuple)) else got, fn(a, b), atol=2e-4, rtol=2e-4)
    vec = torch.fx.symbolic_trace(lambda x: x.mT * 2)
    with pytest.raises(Exception, match=r'tensor.mT needs at least 2 dimensions'):
        hidet_backend(vec, [r(4)])(r(4))


def test_multi_head_attention_module():
    mha = nn.MultiheadAttention(32, 4, batch_first=True).to(DEVICE).eval()
    x = r(2, 9, 32)
    with torch.no_grad():
        fn = lambda t: mha(t, t, t, need_weights=False)[0]  # noqa: E731
        assert_close(compiled(fn)(x), fn(x), atol=1e-4)


def test_conv_bn_pool_and_layer_norm_embedding():
    conv = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(8, 5)).to(DEVICE)
    conv.eval()
    x = r(2, 3, 17, 15)
    with torch.no_grad():
        assert_close(compiled(conv)(x), conv(x), atol=1e-4)
    emb, ln = nn.Embedding(50, 16).to(DEVICE), nn.LayerNorm(16).to(DEVICE)
    ids = torch.randint(0, 50, (3, 7), device=DEVICE)
    with torch.no_grad():
        assert_close(compiled(lambda i: ln(emb(i)))(ids), ln(emb(ids)), atol=1e-4)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                   nn.Conv2d(16, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(self.block(x) + x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


class TinyTransformer(nn.Module):
    def __init__(self, d=32, heads=4, layers=2):
        super().__init__()
        self.heads = heads
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict(dict(qkv=nn.Linear(d, 3 * d), out=nn.Linear(d, d), ln1=nn.LayerNorm(d),
                                                  ff1=nn.Linear(d, 4 * d), ff2=nn.Linear(4 * d, d),
                                                  ln2=nn.LayerNorm(d))))

    def forward(self, x):
        b, s, d = x.shape
        for layer in self.layers:
            q, k, v = layer['qkv'](x).split(d, dim=-1)
            q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
            scores = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
            a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
            x = layer['ln1'](x + layer['out'](a))
            x = layer['ln2'](x + layer['ff2'](F.gelu(layer['ff1'](x))))
        return x


@pytest.mark.parametrize('model_cls,shape', [(SmallCNN, (2, 3, 12, 12)), (TinyTransformer, (2, 9, 32))])
def test_models_end_to_end(model_cls, shape):
    model = model_cls().to(DEVICE).eval()
    x = r(*shape)
    with torch.no_grad():
        fast = compiled(model)
        assert_close(fast(x), model(x), atol=1e-4)
        x2 = r(*shape)  # a second call, new data: the compiled graph runs again
        assert_close(fast(x2), model(x2), atol=1e-4)
        x3 = r(3, *shape[1:])  # a new batch size compiles once more
        assert_close(fast(x3), model(x3), atol=1e-4)


def test_unmapped_operators_are_listed_at_once():
    def fn(x):
        return torch.special.digamma(x) + torch.lgamma(x)

    with pytest.raises(Exception) as info:
        compiled(fn)(r(3, 4))
    text = str(info.value)
    assert 'The following operators are not supported or mapped by hidet yet:' in text
    assert 'digamma' in text and 'lgamma' in text
    assert 'register_function' in text


def test_roi_align_with_an_adaptive_sampling_ratio_says_what_is_mapped():
    from torchvision.ops import roi_align
    rois = torch.tensor([[0.0, 1.0, 1.0, 6.0, 5.0]], device=DEVICE)
    with pytest.raises(Exception) as info:
        compiled(lambda a, b: roi_align(a, b, 2))(r(1, 3, 8, 8), rois)
    text = str(info.value)
    assert 'roi_align' in text and 'adaptive sampling ratio' in text and 'sampling_ratio > 0' in text


def test_complex_outputs_and_unmapped_complex_operators():
    a, b = r(4, 5), r(4, 5)
    fn = lambda a, b: torch.complex(a, b) * torch.polar(b.abs(), a)  # noqa: E731 - a complex output
    got = compiled(fn)(a, b)
    assert got.dtype == torch.complex64
    assert_close(got, fn(a, b), atol=2e-5, rtol=2e-5)
    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        compiled(lambda a, b: torch.view_as_real(torch.exp(torch.complex(a, b))))(a, b)
    assert 'exp of a complex tensor is not mapped' in str(info.value) and 'torch.polar' in str(info.value)


class _ComplexBuffer(nn.Module):
    """Meta's reference Llama: the rotation as a complex buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer('cis', torch.polar(torch.ones(5, 4), torch.randn(5, 4)).to(DEVICE))

    def forward(self, x):
        return torch.view_as_real(torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2)) * self.cis).flatten(-2)


def test_complex_buffers_are_constants_and_complex_inputs_say_what_to_pass():
    m, x = _ComplexBuffer(), r(2, 5, 8)
    assert_close(compiled(m)(x), m(x), atol=2e-6, rtol=2e-6)
    torch._dynamo.reset()
    c = torch.polar(torch.ones(5, 4, device=DEVICE), r(5, 4))
    with pytest.raises(Exception) as info:
        compiled(lambda x, c: torch.view_as_real(torch.view_as_complex(x.reshape(2, 5, 4, 2)) * c))(x, c)
    assert 'is a complex tensor (torch.complex64)' in str(info.value) and 'torch.view_as_real(x)' in str(info.value)


def test_solve_triangular_in_f64_and_its_bad_input():
    a, b = r(3, 5, 5, dtype=torch.float64) * 0.2 + 2 * torch.eye(5, device=DEVICE), r(3, 5, 2, dtype=torch.float64)
    fn = lambda a, b: torch.linalg.solve_triangular(a, b, upper=True)  # noqa: E731
    assert_close(compiled(fn)(a, b), fn(a, b), atol=1e-12, rtol=1e-12)
    with pytest.raises(Exception) as info:  # half precision: PyTorch on CUDA has no kernel for it either
        hidet.ops.solve_triangular(hidet.from_torch(a.half()), hidet.from_torch(b.half()), True)
    assert 'solve_triangular: dtype f16 is not supported (f32 or f64' in str(info.value)
    with pytest.raises(Exception) as info:  # B's rows must be A's
        hidet.ops.solve_triangular(hidet.from_torch(a.float()), hidet.from_torch(r(3, 4, 2)), True)
    assert 'solve_triangular: B must have 5 rows' in str(info.value)
    with pytest.raises(Exception) as info:
        hidet.ops.solve_triangular(hidet.from_torch(r(3, 5, 4)), hidet.from_torch(r(3, 5, 2)), True)
    assert 'A must be square' in str(info.value)


def test_fallback_to_torch_runs_unmapped_operators():
    hidet.torch.dynamo_config.fallback_to_torch(True)

    def fn(x):
        return torch.lgamma(torch.relu(x) * 2.0 + 1.0) + x

    x = r(5, 6)
    assert_close(compiled(fn)(x), fn(x), atol=1e-5)


def test_training_mode_is_refused_with_the_way_out_and_runs_with_the_fallback(capsys):
    """A model left in training mode: batch statistics and random dropout. The error names the
    node, the user's source line and model.eval(); with the fallback, PyTorch runs those nodes
    (one log line names them) and hidet the rest."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Dropout(0.5)).to(DEVICE)
    x = r(2, 3, 6, 6)
    torch._dynamo.reset()
    with torch.no_grad(), pytest.raises(Exception) as info:
        compiled(model)(x)
    text = str(info.value)
    assert 'batch_norm' in text and "fx node '" in text and 'model.eval()' in text, text
    hidet.torch.dynamo_config.fallback_to_torch(True)
    try:
        torch._dynamo.reset()
        model.eval()
        model[1].train()  # batch statistics only (dropout in eval mode is the identity)
        with torch.no_grad():
            got = compiled(model)(x)
            model[1].train()
            want = model(x)
        assert_close(got, want, atol=1e-4)
        assert 'PyTorch runs the operators hidet does not map' in capsys.readouterr().err
    finally:
        hidet.torch.dynamo_config.fallback_to_torch(False)


def test_registry_example_of_the_guide():
    """Hidet's guide to adding mappings, through its own import paths: with the mappings removed,
    the operators go through their decomposition into core ATen (the default), or are listed in
    the error when that is off; registering them again restores the torch-level path."""
    from hidet.graph.frontend.torch.registry import Registry, register_function, register_method
    import hidet.graph.frontend.torch.register_functions  # noqa: F401
    import hidet.graph.frontend.torch.dynamo_backends  # noqa: F401
    assert Registry is hidet.torch.Registry
    saved = [dict(t) for t in (Registry.registered_functions, Registry.registered_methods, Registry.registered_modules)]
    try:
        del Registry.registered_functions[F.relu]
        del Registry.registered_functions[operator.add]
        del Registry.registered_modules[nn.Linear]
        del Registry.registered_methods[torch.Tensor.flatten]  # keyed by the method object or its name

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = nn.Linear(10, 10)

            def forward(self, x):
                x = F.relu(self.linear(x))
                return (x + x).flatten()

        model = Model().to(DEVICE)
        x = r(10, 10)
        with torch.no_grad():
            assert_close(compiled(model)(x), model(x), atol=1e-4)  # through core ATen
        hidet.torch.dynamo_config.decompose(False)
        torch._dynamo.reset()
        with pytest.raises(Exception) as info:
            compiled(model)(x)
        assert 'operator.add' in str(info.value) and 'torch.nn.functional.relu' in str(info.value)
        assert 'torch.Tensor.flatten' in str(info.value)

        @register_function(F.relu)
        def torch_relu(x, inplace=False):
            return hidet.ops.relu(x)

        @register_function(operator.add)
        def operator_add(x, y):
            return hidet.ops.add(x, y)

        @register_method(torch.Tensor.flatten)
        def tensor_flatten(self, start_dim=0, end_dim=-1):
            return hidet.ops.flatten(self, start_dim, end_dim)

        torch._dynamo.reset()
        with torch.no_grad():
            assert_close(compiled(model)(x), model(x), atol=1e-4)
    finally:
        hidet.torch.dynamo_config.decompose(True)
        for table, old in zip((Registry.registered_functions, Registry.registered_methods,
                               Registry.registered_modules), saved):
            table.clear()
            table.update(old)


def test_mapping_errors_name_the_node_and_source_line():
    def fn(x):
        return F.max_pool2d(x, 2, return_indices=True)[1]  # the indices: hidet computes the values only

    with pytest.raises(Exception) as info:
        compiled(fn)(r(1, 2, 4, 4))
    text = str(info.value)
    assert 'max_pool2d' in text and 'fx node' in text and 'test_torch.py' in text and 'fallback_to_torch' in text


def test_tuning_budget_is_set_per_compiled_graph():
    cfg = hidet.torch.dynamo_config
    with pytest.raises(ValueError, match='tuning_budget'):
        cfg.tuning_budget(-1)
    with pytest.raises(ValueError, match='tuning_budget'):
        hidet._C.set_tuning_budget(float('nan'))

    def fn(x):
        return x * 2 + 1

    x = r(3, 5)
    # (budget set, mode, options) -> the budget the compile starts
    for options, mode, want in [({'search_space': 1}, None, 30.0),
                                ({'search_space': 1, 'tuning_budget': 4}, None, 4.0),
                                ({}, 'max-autotune-no-cudagraphs', float('inf')),
                                ({'search_space': 2, 'tuning_budget': float('inf')}, None, float('inf'))]:
        torch._dynamo.reset()
        hidet._C.set_tuning_budget(123.0)
        assert_close(compiled(fn, mode=mode, options=options or None)(x), fn(x))
        assert hidet._C.tuning_budget() == want, (options, mode)
    hidet._C.set_tuning_budget(float('inf'))


def test_options_and_modes(capsys):
    model = SmallCNN().to(DEVICE).eval()
    x = r(1, 3, 8, 8)
    hidet.torch.dynamo_config.print_input_graph(True).correctness_report(True)
    with torch.no_grad():
        assert_close(compiled(model, mode='reduce-overhead')(x), model(x), atol=1e-4)
    out = capsys.readouterr().out
    assert 'opcode' in out and 'placeholder' in out  # the input graph
    assert 'kind      operator' in out  # the correctness report
    with pytest.raises(ValueError, match='unknown option'):
        hidet.torch.dynamo_config.with_options(None, {'no_such_option': 1})
    torch._dynamo.reset()
    with torch.no_grad():
        got = compiled(model, options={'use_fp16': True})(x)
    assert_close(got, model(x), atol=2e-2, rtol=2e-2)
    torch._dynamo.reset()
    with torch.no_grad():
        assert_close(compiled(model, options={'profile': True})(x), model(x), atol=1e-4)
    err = capsys.readouterr().err
    assert 'profile:' in err and 'slowest nodes' in err  # the per-kernel profile
    with pytest.raises(ValueError, match='parallel_k'):
        hidet.torch.dynamo_config.parallel_k('sometimes')
    # With dynamic shapes: the report, the profile and the log at the example's sizes.
    torch._dynamo.reset()
    hidet.torch.dynamo_config.print_input_graph(False).profile(True).verbose(True)
    x = r(2, 3, 8, 8)
    with torch.no_grad():
        assert_close(torch.compile(model, backend='hidet', dynamic=True)(x), model(x), atol=1e-4)
    captured = capsys.readouterr()
    assert 'kind      operator' in captured.out and 'slowest nodes' in captured.err
    assert 'once for all values of' in captured.err and '(generic kernels)' in captured.err


def test_save_graphs_option(tmp_path):
    model = SmallCNN().to(DEVICE).eval()
    x = r(1, 3, 8, 8)
    with torch.no_grad():
        assert_close(compiled(model, options={'save_graphs': str(tmp_path)})(x), model(x), atol=1e-4)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert '0_input.txt' in names and any(n.endswith('_fuse_operators.txt') for n in names), names
    assert 'Conv2d' in (tmp_path / '0_input.txt').read_text()


class UpcastCausalAttention(nn.Module):
    """GPT-Neo's attention (transformers' GPTNeoSelfAttention._attn): scores in f32 from half q and
    k, masked by torch.where with a causal buffer and finfo.min, the probabilities cast back."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer('bias', torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n), persistent=False)

    def forward(self, q, k, v):
        s = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(-1, -2))
        lowest = torch.tensor(torch.finfo(s.dtype).min, dtype=s.dtype, device=s.device)
        s = torch.where(self.bias[:, :, :q.shape[-2], :k.shape[-2]], s, lowest)
        return torch.matmul(torch.softmax(s, dim=-1).to(v.dtype), v)


def test_attention_with_f32_scores_and_a_where_mask_is_one_node(tmp_path):
    model = UpcastCausalAttention(32).to(DEVICE).eval()
    q, k, v = (r(1, 2, 19, 64).half() for _ in range(3))
    with torch.no_grad():
        got = compiled(model, options={'save_graphs': str(tmp_path)})(q, k, v)
        assert_close(got.float(), model(q.float(), k.float(), v.float()), atol=2e-2, rtol=2e-2)
    final = sorted(tmp_path.glob('*_fuse_operators.txt'))[-1].read_text()
    assert 'ScaledDotProductAttention' in final and 'is_causal=true' in final, final
    assert 'Softmax' not in final and 'Where' not in final, final


class LevitAttention(nn.Module):
    """timm's LeViT attention: one QKV projection split per head into q and k of 16 and v of 32, k
    permuted (0, 2, 3, 1), a learned bias per head, the heads merged, then a hardswish."""

    def __init__(self, dim=64, heads=2, n=49):
        super().__init__()
        self.heads, self.scale = heads, 16 ** -0.5
        self.qkv = nn.Linear(dim, heads * (16 + 16 + 32))
        self.bias = nn.Parameter(0.5 * torch.randn(heads, n, n))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, self.heads, -1).split([16, 16, 32], dim=3)
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1), v.permute(0, 2, 1, 3)
        attn = (q @ k * self.scale + self.bias).softmax(dim=-1)
        return F.hardswish((attn @ v).transpose(1, 2).reshape(b, n, -1))


def test_attention_whose_values_have_a_head_dim_of_their_own(tmp_path):
    # LeViT's attention (q and k of 16, v of 32) becomes one attention node; torch's own
    # scaled_dot_product_attention with v's head dim other than q's compiles as well.
    model = LevitAttention().to(DEVICE).eval()
    x = r(2, 49, 64)
    with torch.no_grad():
        want = model(x)
        got = compiled(model.half(), options={'save_graphs': str(tmp_path)})(x.half())
    assert_close(got.float(), want, atol=3e-2, rtol=3e-2)
    final = sorted(tmp_path.glob('*_fuse_operators.txt'))[-1].read_text()
    # one node that reads q, k and v in place from the projection (no permuted copies)
    assert 'ScaledDotProductAttentionPacked' in final and 'Softmax' not in final and 'Permute' not in final, final
    q, k, v = r(1, 2, 19, 16), r(1, 2, 23, 16), r(1, 2, 23, 32)
    torch._dynamo.reset()
    with torch.no_grad():
        got = compiled(lambda a, b, c: F.scaled_dot_product_attention(a, b, c))(q.half(), k.half(), v.half())
    assert tuple(got.shape) == (1, 2, 19, 32)
    assert_close(got.float(), F.scaled_dot_product_attention(q, k, v), atol=2e-2, rtol=2e-2)


def test_tensor_core_parallel_k_and_fp16_reduction_options():
    lin = torch.nn.Sequential(torch.nn.Linear(40, 24), torch.nn.ReLU()).to(DEVICE).half().eval()
    x = r(9, 40).half()
    for opts in ({'use_tensor_core': False}, {'parallel_k': 'disabled'}, {'parallel_k': 2},
                 {'use_fp16_reduction': True}):
        torch._dynamo.reset()
        with torch.no_grad():
            assert_close(compiled(lin, options=opts)(x).float(), lin(x).float(), atol=2e-2, rtol=2e-2)


def test_fp16_reduction_accumulates_in_f16():
    # A long reduction of positive products: f16 accumulators (spacing 0.25 to 1 near the sums of
    # about 500) lose far more than f32 ones, so the two compiled models must differ, each within
    # its tolerance of an f64 reference.
    lin = torch.nn.Linear(2048, 16, bias=False).to(DEVICE).half().eval()
    with torch.no_grad():
        lin.weight.uniform_(0, 1)
    x = torch.rand(8, 2048, device=DEVICE).half()
    ref = x.double() @ lin.weight.double().t()
    outs = {}
    for flag in (False, True):
        torch._dynamo.reset()
        with torch.no_grad():
            outs[flag] = compiled(lin, options={'use_fp16_reduction': flag})(x).double()
    torch._dynamo.reset()
    err32 = ((outs[False] - ref).abs() / ref.abs()).max().item()
    err16 = ((outs[True] - ref).abs() / ref.abs()).max().item()
    assert err32 < 1e-3, err32      # f32 accumulation: the f16 output's rounding only
    assert err16 < 3e-2, err16      # f16 accumulation: close, not exact
    assert err16 > 2 * err32, (err16, err32)


def test_weight_only_int8_reads_the_weights_as_int8():
    # weight_only_int8: the product reads int8 weights with a scale per output feature; the result
    # differs from f16 by the weights' rounding (at most max|w| / 254 per weight) and no more.
    lin = torch.nn.Sequential(torch.nn.Linear(128, 96), torch.nn.SiLU(), torch.nn.Linear(96, 64)).to(DEVICE).half()
    lin = lin.eval()
    for rows in (1, 16):  # the few-rows kernel over int8, and the weights converted for more rows
        x = r(rows, 128).half()
        torch._dynamo.reset()
        with torch.no_grad():
            want = lin(x).float()
            got = compiled(lin, options={'weight_only_int8': True})(x).float()
            plain = compiled(lin)(x).float()
        torch._dynamo.reset()
        err, err_plain = (got - want).abs().max().item(), (plain - want).abs().max().item()
        assert 0 < err < 5e-2, err
        assert err > err_plain, (err, err_plain)


def _counting_backend(calls):
    def backend(gm, example_inputs, **kw):
        model = hidet.torch.hidet_backend(gm, example_inputs, **kw)
        calls.append(model)
        return model
    return backend


def test_dynamic_shapes_trace_once_for_all_sizes():
    calls = []

    class Scaled(nn.Module):  # a buffer: a constant of the graph, like the parameters
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
            self.register_buffer('scale', torch.rand(4) + 0.5)

        def forward(self, x):
            return self.body(x) * self.scale

    m = Scaled().to(DEVICE).eval()
    f = torch.compile(m, backend=_counting_backend(calls), dynamic=True)
    with torch.no_grad():
        for n in [2, 3, 5, 3]:
            x = r(n, 8)
            assert_close(f(x), m(x), atol=1e-5)
    assert len(calls) == 1  # dynamo traced once (symbolic batch)
    model = calls[0]
    assert model.num_traces == 1 and not model.cache  # hidet traced the fx graph once, on the symbol
    (entry,) = model.symbolic_entries.values()
    assert entry.dispatch.num_compilations == 3  # each distinct batch size compiled once (n = 3 again: cached)
    assert len(entry.positions) == 1  # the graph takes x alone: the weights and the buffer are constants
    x = entry.graph.inputs[0]
    assert isinstance(x.shape[0], hidet.Dim) and x.shape[1] == 8


@pytest.mark.parametrize('model_cls,shapes', [
    (SmallCNN, [(2, 3, 12, 12), (3, 3, 12, 12), (5, 3, 12, 12)]),
    (TinyTransformer, [(2, 9, 32), (3, 5, 32), (4, 12, 32), (2, 9, 32)]),
])
def test_dynamic_shapes_models_compile_the_graph_once(model_cls, shapes):
    """torch.compile(dynamic=True): batch and sequence sizes are dynamo's symbols. hidet traces the
    graph once. The CNN (dynamic_shapes 'per_shape') specializes each shape; the transformer
    ('generic', the default) is optimized once and every new shape reuses its shape-generic kernels."""
    calls = []
    if model_cls is SmallCNN:
        hidet.torch.dynamo_config.dynamic_shapes('per_shape')
    model = model_cls().to(DEVICE).eval()
    f = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    with torch.no_grad():
        for shape in shapes:
            x = r(*shape)
            assert_close(f(x), model(x), atol=1e-4)
    assert len(calls) == 1 and calls[0].num_traces == 1 and not calls[0].cache
    (entry,) = calls[0].symbolic_entries.values()
    assert entry.dispatch.num_compilations == len(set(shapes))
    if model_cls is SmallCNN:
        assert entry.strategy == 'per_shape'
        return
    assert entry.strategy == 'generic'
    generic = entry.dispatch.generic_graph()  # optimized once, on the symbols
    assert generic.has_symbolic_extents and 'Fused' in ' '.join(generic.node_names())


def test_a_failing_profile_leaves_the_symbolic_trace(monkeypatch, capfd):
    """dynamo_config.profile on a graph of symbolic sizes: a profile that fails is said, and the
    graph is still traced once for all sizes (a diagnostic never changes how a graph compiles)."""
    def broken(*args, **kwargs):
        raise RuntimeError('no profile today')

    monkeypatch.setattr(hidet.graph, 'profile', broken)
    hidet.torch.dynamo_config.profile(True)
    calls = []
    model = TinyTransformer().to(DEVICE).eval()
    f = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    with torch.no_grad():
        for shape in [(2, 9, 32), (3, 5, 32)]:
            x = r(*shape)
            assert_close(f(x), model(x), atol=1e-4)
    assert len(calls) == 1 and calls[0].num_traces == 1 and not calls[0].cache
    assert 'the profile of this graph failed (no profile today)' in capfd.readouterr().err


class HalfBlock(nn.Module):
    """A transformer block in the shape of GPT-2's: one q/k/v product split three ways,
    F.scaled_dot_product_attention over heads of 32, a residual and a GELU MLP."""

    def __init__(self, d=64, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1, self.ff2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
        x = x + self.out(a)
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


def test_dynamic_shapes_generic_builds_no_kernel_for_a_new_size():
    """dynamic_shapes('generic') with use_fp16: the products run on templates built for symbolic
    rows (with their epilogues), attention on a template built for symbolic lengths, and the
    layout and element-wise operators on shape-generic kernels: after the first call, a new batch
    or sequence length builds no kernel at all (hidet.kernel_builds())."""
    calls = []
    hidet.torch.dynamo_config.dynamic_shapes('generic')
    hidet.torch.dynamo_config.use_fp16(True)
    model = HalfBlock().to(DEVICE).eval()
    f = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    first = True
    with torch.no_grad():
        # (dynamo specializes 1). Rows past 64 and sequences past 8: fewer rows (decoding) take the
        # few-rows products and the decode attention, each a build of its own per range.
        for shape in [(2, 33, 64), (3, 41, 64), (4, 17, 64), (2, 33, 64), (3, 40, 64)]:
            x = r(*shape)
            before = hidet.kernel_builds()
            got = f(x)
            built = {k: v - before[k] for k, v in hidet.kernel_builds().items()}
            if first:
                assert built['matmul_symbolic'] >= 3 and built['attention_symbolic'] == 1, built
            else:
                assert not any(built.values()), (shape, built)
            first = False
            assert_close(got, model(x), atol=3e-2, rtol=3e-2)  # f16 products and attention
    assert len(calls) == 1 and calls[0].num_traces == 1
    (entry,) = calls[0].symbolic_entries.values()
    assert entry.dispatch.num_compilations == 4
    names = ' '.join(entry.dispatch.generic_graph().node_names())
    assert 'FusedMatmul' in names and 'ScaledDotProductAttention' in names


@pytest.mark.parametrize('fp16', [False, True])
def test_dynamic_shapes_generic_cnn_builds_no_kernel_for_a_new_batch(fp16):
    """dynamic_shapes('generic') on a CNN under torch.compile(dynamic=True) (the image sizes are
    symbols too): batch norms fold into the convolutions, which run on templates built once for
    every batch with relu and the residual stored by their kernels (channels-last under use_fp16);
    the max pooling, the global pooling and the head build once too. After the first call a new
    batch builds no kernel."""
    calls = []
    hidet.torch.dynamo_config.dynamic_shapes('generic')
    hidet.torch.dynamo_config.use_fp16(fp16)
    model = nn.Sequential(SmallCNN().stem, nn.MaxPool2d(3, 2, 1), _Residual(SmallCNN().block), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(16, 10)).to(DEVICE).eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5), m.running_var.uniform_(0.5, 2.0)
    f = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    first = True
    with torch.no_grad():
        # (dynamo specializes a batch of 1). The head's product has n rows: batches that round up to
        # the same row block of the few-rows kernel (5 to 8) share its build.
        for n in [5, 6, 8, 5, 7]:
            x = r(n, 3, 14, 13)
            before = hidet.kernel_builds()
            got = f(x)
            built = {k: v - before[k] for k, v in hidet.kernel_builds().items()}
            if first:
                assert built['conv2d_symbolic'] >= 3, built
            else:
                assert not any(built.values()), (n, built)
            first = False
            tol = 3e-2 if fp16 else 1e-3
            assert_close(got, model(x), atol=tol, rtol=tol)
    assert len(calls) == 1 and calls[0].num_traces == 1
    (entry,) = calls[0].symbolic_entries.values()
    names = ' '.join(entry.dispatch.generic_graph().node_names())
    assert ('FusedConv2dNhwc' if fp16 else 'FusedConv2d') in names and 'BatchNorm' not in names, names


class _Residual(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return F.relu(self.body(x) + x)


def test_dynamic_shapes_per_shape_strategy_and_automatic_dynamic():
    """dynamic_shapes('per_shape'): traced once, each shape specialized and optimized on its own.
    Without dynamic=True dynamo compiles the first shape statically, then marks the changed size
    dynamic: the second graph is symbolic."""
    calls = []
    assert hidet.torch.dynamo_config._dynamic_shapes == 'generic'  # the default
    hidet.torch.dynamo_config.dynamic_shapes('per_shape')
    model = TinyTransformer().to(DEVICE).eval()
    f = torch.compile(model, backend=_counting_backend(calls))
    with torch.no_grad():
        for shape in [(2, 9, 32), (2, 5, 32), (2, 7, 32)]:
            x = r(*shape)
            assert_close(f(x), model(x), atol=1e-4)
    assert len(calls) == 2 and calls[0].num_traces == 1 and not calls[0].symbolic_entries
    assert calls[1].num_traces == 1 and not calls[1].cache
    (entry,) = calls[1].symbolic_entries.values()
    assert entry.dispatch.num_compilations == 2
    with pytest.raises(ValueError, match='generic_graph|shape_generic'):
        entry.dispatch.generic_graph()
    with pytest.raises(ValueError, match='dynamic_shapes'):
        hidet.torch.dynamo_config.dynamic_shapes('sometimes')


def test_dynamic_shapes_arange_and_creation_of_symbolic_sizes():
    class Positions(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = nn.Embedding(64, 8)
            self.register_buffer('ids', torch.arange(64).flip(0).reshape(1, 64))

        def forward(self, x):
            b, s, d = x.shape
            p = self.pos(torch.arange(s, device=x.device))  # [s, 8]: an Arange of the symbol
            q = self.pos(self.ids[:, 1:s + 1])  # a constant sliced at symbolic bounds (BERT's position ids)
            ones = x.new_ones(b, s, 1)
            z = torch.zeros_like(x)
            last = x[:, -1] + x[:, s // 2] + x[-1, 1:].sum(0)  # symbolic indices and slices
            return x + p * ones + z + q, torch.arange(1, s + 1, device=x.device).float().sum(0, keepdim=True), last

    calls = []
    m = Positions().to(DEVICE).eval()
    f = torch.compile(m, backend=_counting_backend(calls), dynamic=True)
    with torch.no_grad():
        for shape in [(2, 5, 8), (3, 11, 8), (4, 7, 8)]:
            x = r(*shape)
            got, want = f(x), m(x)
            for g, w in zip(got, want):
                assert_close(g, w, atol=1e-5)
    assert calls[0].num_traces == 1 and not calls[0].cache


def test_dynamic_shapes_strided_convolutions_over_symbolic_image_sizes():
    """dynamic=True makes a CNN's image sizes symbols too: strided convolutions and pooling give
    output extents like (h - 1) / 2 + 1, and the residual's two branches must agree on them."""
    class Strided(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, stride=2, padding=3), nn.ReLU(),
                                      nn.MaxPool2d(3, stride=2, padding=1))
            self.main = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.Conv2d(16, 16, 3, padding=1))
            self.down = nn.Conv2d(8, 16, 1, stride=2)
            self.head = nn.Linear(16, 5)

        def forward(self, x):
            x = self.stem(x)
            x = F.relu(self.main(x) + self.down(x))
            return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))

    calls = []
    model = Strided().to(DEVICE).eval()
    f = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    with torch.no_grad():
        for shape in [(2, 3, 32, 32), (3, 3, 40, 28), (2, 3, 33, 37)]:
            x = r(*shape)
            assert_close(f(x), model(x), atol=1e-4)
    # Dynamo itself guards on the sizes' parity here (odd 33 x 37 gives it a second graph, as with
    # any backend); hidet traces each graph once, on the symbols.
    assert all(c.num_traces == 1 and not c.cache for c in calls)
    assert sum(e.dispatch.num_compilations for c in calls for e in c.symbolic_entries.values()) == 3


def test_dynamic_shapes_trace_mask_functions_like_transformers():
    """transformers' mask functions (GPT-2, Llama) under dynamic=True: position ids, torch.diff,
    a cumsum, integer tensors indexing together, torch.Size of symbolic sizes."""
    def model(x):
        b, s, d = x.shape
        pos = torch.arange(s, device=x.device).unsqueeze(0)
        packed = (torch.diff(pos, prepend=pos[:, :1] - 1, dim=-1) != 1).cumsum(-1)
        bi = torch.arange(1, device=x.device)[:, None, None, None]
        qi = torch.arange(s, device=x.device)[None, None, :, None]
        ki = torch.arange(s, device=x.device)[None, None, None, :]
        pe = pos.expand(1, -1)
        mask = (pe[bi, ki] <= pe[bi, qi]) & (packed[bi, qi] == packed[bi, ki])
        q = x.view(torch.Size([b, s, 2, 4])).transpose(1, 2)  # d symbolic too: 2 * (d // 2) != d
        a = F.scaled_dot_product_attention(q, q, q, attn_mask=mask.expand(b, -1, s, s))
        return a.transpose(1, 2).reshape(b, s, d)

    calls = []
    f = torch.compile(model, backend=_counting_backend(calls), dynamic=True)
    for shape in [(2, 5, 8), (3, 9, 8), (2, 6, 8)]:
        x = r(*shape)
        assert_close(f(x), model(x), atol=1e-5)
    assert len(calls) == 1 and calls[0].num_traces == 1 and not calls[0].cache


def test_dynamo_size_expressions_become_dims():
    """Sizes of a graph's inputs may be expressions of dynamo's symbols (after a graph break):
    sums, products, floor division and modulo become the same Dim."""
    import sympy
    from torch.utils._sympy.functions import FloorDiv, Mod
    from hidet.torch.interpreter import NotSymbolic, _sympy_to_dim
    s0, s1 = sympy.Symbol('s0', integer=True, positive=True), sympy.Symbol('s1', integer=True, positive=True)
    n, s = hidet.Dim('s0'), hidet.Dim('s1')
    assert _sympy_to_dim(2 * s0 * s1 + 3) == 2 * n * s + 3
    assert _sympy_to_dim(FloorDiv(s0 + 1, 2)) == (n + 1) // 2
    assert _sympy_to_dim(Mod(FloorDiv(s1, 4), 7)) == (s // 4) % 7
    with pytest.raises(NotSymbolic, match='size expression'):
        _sympy_to_dim(sympy.Max(s0, s1))


def test_operator_dunder_methods_map_as_the_operators():
    """Some torch versions record `a == b` as the method call a.__eq__(b): mapped as operator.eq."""
    g = torch.fx.Graph()
    a, b = g.placeholder('a'), g.placeholder('b')
    both = g.call_method('__and__', (g.call_method('__eq__', (a, b)), g.call_method('__le__', (a, b))))
    g.output(g.call_method('__add__', (g.call_method('float', (both,)), g.call_method('__mul__', (a, b)))))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)

    def f(a, b):
        return ((a == b) & (a <= b)).float() + a * b

    a, b = r(4, 5), r(4, 5)
    b[0] = a[0]
    compiled = hidet.torch.hidet_backend(gm, [a, b])
    assert_close(compiled(a, b), f(a, b), atol=1e-6)


def test_dynamic_shapes_fall_back_to_per_shape_tracing_with_a_log_line(capsys):
    """A mapping that needs a size's value (here chunk's piece sizes) cannot trace on the symbols:
    the graph is compiled per shape, and the log says so once."""
    calls = []

    def half(x):
        return x.chunk(2, dim=1)[0] * 2

    f = torch.compile(half, backend=_counting_backend(calls), dynamic=True)
    for shape in [(2, 6), (3, 10), (4, 8)]:
        x = r(*shape)
        assert_close(f(x), half(x), atol=1e-6)
    err = capsys.readouterr().err
    assert err.count('compiled per input shape') == 1, err
    assert len(calls) == 1 and not calls[0].symbolic_entries and len(calls[0].cache) == 3


def test_dim_arithmetic_and_symbolic_shapes_in_python():
    n, s = hidet.Dim('n'), hidet.Dim('s')
    x = hidet.symbol([n, s, 16], name='x')
    assert x.shape == (n, s, 16) and x.shape == ('n', 's', 16)
    assert str(n * s) == 'n*s' and str(3 * s + 1) == '3*s + 1' and (2 * n) // 2 == n
    assert (n * 4) // 2 == 2 * n and (s + 2) - 2 == s and ((s + 2) - s) == 2 and isinstance((s + 2) - s, int)
    assert (n * s).evaluate({'n': 2, 's': 5}) == 10 and (n * s).symbols == ['n', 's']
    with pytest.raises(ValueError, match='symbolic'):
        int(s)
    y = hidet.ops.reshape(x, [n * s, 16])
    assert y.shape == (n * s, 16)
    p = hidet.ops.arange(0, s, 1, 'int64', [x])
    assert p.shape == (s,) and p.op == 'Arange'
    z = hidet.ops.unsqueeze(hidet.ops.cast(p, 'float32'), 1) + y.reshape([n, s, 16])
    graph = hidet.trace_from(z, [x])
    with pytest.raises(ValueError, match='no extent of the tensors'):
        hidet.ops.arange(0, hidet.Dim('t'), 1, 'int64', [x])
    dispatch = hidet.ShapeDispatch(graph, shape_generic=True)
    for shape in [(2, 5, 16), (3, 7, 16)]:
        a = hidet.randn(list(shape))
        got = dispatch.run([a])[0].torch()
        want = a.torch() + torch.arange(shape[1], device=got.device).float().reshape(1, -1, 1)
        assert_close(got, want, atol=1e-6)
    assert dispatch.num_compilations == 2


def test_inputs_changing_rank_or_dtype_recompile():
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU()).to(DEVICE).eval()
    f = compiled(m)
    with torch.no_grad():
        for x in [r(3, 8), r(2, 3, 8), r(5, 8)]:
            assert_close(f(x), m(x), atol=1e-5)
        m16 = m.to(torch.float16)
        x = r(4, 8, dtype=torch.float16)
        assert_close(compiled(m16)(x), m16(x), atol=2e-2, rtol=2e-2)


def test_calibrate_batch_norm_normalizes_random_weight_models():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 6, 3), nn.BatchNorm2d(6), nn.ReLU(), nn.Conv2d(6, 4, 1), nn.BatchNorm2d(4))
    for conv in (model[0], model[3]):  # badly scaled random convolutions
        conv.weight.data.mul_(7.0)
    data = torch.randn(16, 3, 9, 9) * 3 + 1
    model = hidet.utils.calibrate_batch_norm(model, lambda: data)
    assert not model.training
    assert not torch.allclose(model[1].running_var, torch.ones(6))
    with torch.no_grad():
        out = model(data)
    # Each channel of the last batch norm's output: mean ~0, variance ~1 over the calibration data
    # (not exactly: running variances are unbiased estimates, and the first normalization's
    # rounding moves the second one's input). Uncalibrated, they are off by orders of magnitude.
    assert out.mean(dim=(0, 2, 3)).abs().max().item() < 0.02
    assert (out.var(dim=(0, 2, 3), unbiased=False) - 1).abs().max().item() < 0.05
    # A model without batch norm is only put in eval mode (make_input is not called).
    plain = hidet.utils.calibrate_batch_norm(nn.Linear(3, 2).train(), lambda: 1 / 0)
    assert not plain.training


def test_unsupported_interpolate_mode_is_a_clear_error():
    def fn(x):
        return F.interpolate(x, size=(2, 3, 4), mode='trilinear')

    with pytest.raises(Exception) as info:
        compiled(fn)(r(1, 2, 3, 3, 3))
    assert "interpolate(mode='trilinear') of a 5-D tensor is not mapped yet" in str(info.value)


def test_conv_transpose2d_modules():
    # Parameters (constants of the graph): strides, paddings, output padding, groups, dilation.
    torch.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                          nn.ReLU(), nn.ConvTranspose2d(6, 3, (2, 3), stride=(1, 2), padding=(0, 1), dilation=(2, 1)),
                          nn.ConvTranspose2d(3, 2, 1)).to(DEVICE).eval()
    x = r(2, 4, 5, 6)
    with torch.no_grad():
        assert_close(compiled(model)(x), model(x), atol=1e-4, rtol=1e-4)


def test_conv_transpose2d_of_a_computed_weight_is_a_clear_error():
    def fn(x, w):
        return F.conv_transpose2d(x, w * 2.0)

    with pytest.raises(Exception) as info:
        compiled(fn)(r(1, 2, 4, 4), r(2, 3, 3, 3))
    text = str(info.value)
    assert 'conv_transpose2d with a computed weight is not mapped yet' in text and 'test_torch.py' in text


def test_two_instances_of_one_module_class_use_their_own_parameters():
    """Dynamo reuses one graph for every instance of a module class (parameters are graph inputs);
    hidet holds them as constants: each instance compiles once, and keeps its compiled graph."""
    first, second = nn.Linear(8, 4).to(DEVICE).eval(), nn.Linear(8, 4).to(DEVICE).eval()
    x = r(3, 8)
    torch._dynamo.reset()
    calls = []
    backend = _counting_backend(calls)
    with torch.no_grad():
        for _ in range(2):
            assert_close(torch.compile(first, backend=backend, dynamic=False)(x), first(x), atol=1e-5)
            assert_close(torch.compile(second, backend=backend, dynamic=False)(x), second(x), atol=1e-5)
    assert len(calls) == 1 and len(calls[0].instances) == 2 and calls[0].num_compilations == 2


class _BrokenLayer(nn.Module):
    """A layer with a graph break in its forward (BART's layers check their f16 output for
    infinities): dynamo calls one graph per layer, with that layer's parameters."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        y = torch.relu(self.fc(x)) + x
        if y.abs().max() > 1e6:  # data-dependent: a graph break
            y = y.clamp(-1e6, 1e6)
        return y


def test_layers_with_a_graph_break_each_compile_once(monkeypatch):
    """Six layers of one class, each ending in a graph break, called three times: the layers' graph
    compiled six times (once per layer's parameters) on the first call, never again (BART-base took
    160 ms a call on the H200 while it recompiled each layer on every call)."""
    model = nn.Sequential(*[_BrokenLayer() for _ in range(6)]).to(DEVICE).eval()
    x = r(2, 16)
    torch._dynamo.reset()
    calls, compiles = [], []
    compile_graph = hidet.torch.backend.HidetCompiledModel.compile

    def counted(self, args):
        compiles.append(self)
        return compile_graph(self, args)
    monkeypatch.setattr(hidet.torch.backend.HidetCompiledModel, 'compile', counted)
    f = torch.compile(model, backend=_counting_backend(calls), dynamic=False)
    with torch.no_grad():
        assert_close(f(x), model(x), atol=1e-4, rtol=1e-4)
        first = len(compiles)
        for k in range(2):
            assert_close(f(x + k), model(x + k), atol=1e-4, rtol=1e-4)
    layer_graphs = [c for c in calls if len(c.instances) > 1]
    assert len(layer_graphs) == 1 and len(layer_graphs[0].instances) == 6
    assert compiles.count(layer_graphs[0]) == 6 and len(compiles) == first


def test_graphs_of_two_shapes_share_transposed_weights_and_see_weights_loaded_in_place():
    """The linear weights' transposes (runtime/shared_constants.hpp) are computed once for the
    graphs of every input shape; after load_state_dict writes new weights in place, a graph traced
    for a new shape uses the new weights (the parameters' version counters changed)."""
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).to(DEVICE).eval()
    torch._dynamo.reset()
    f = torch.compile(model, backend='hidet', dynamic=False)
    with torch.no_grad():
        x2 = r(2, 16)
        assert_close(f(x2), model(x2), atol=1e-4, rtol=1e-4)  # compiles batch 2
        alive = hidet._C.shared_constants_alive()
        assert alive >= 2  # the two weights' transposes
        x3 = r(3, 16)
        assert_close(f(x3), model(x3), atol=1e-4, rtol=1e-4)  # batch 3: the same transposes
        assert hidet._C.shared_constants_alive() == alive
        other = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).to(DEVICE).eval()
        model.load_state_dict(other.state_dict())  # copies into the parameters' memory
        x5 = r(5, 16)
        assert_close(f(x5), other(x5), atol=1e-4, rtol=1e-4)


def test_inplace_updates_are_traced_functionally():
    """x.clamp_(...), x[...] = v, x[index] = v and x.add_(...) on tensors the model computed: the
    nodes after an update read the updated values."""
    class Model(nn.Module):
        def forward(self, x, idx):
            y = x * 2
            y.clamp_(min=-1.0, max=1.5)  # the result is unused: y itself changes
            z = y + 1
            a = x @ x.transpose(-1, -2)
            a[:, 2:, 3:] = -5.0  # slice assignment (mvitv2)
            inv = torch.empty_like(idx)
            inv[idx] = torch.arange(idx.numel(), device=idx.device)  # a permutation's inverse (MoE routing)
            y.add_(a.sum(-1, keepdim=True))
            a[:, 0] += 1  # dynamo: getitem, iadd of the view, setitem writing it back
            a[1] *= 3
            return z, a, inv, y

    x, idx = torch.randn(2, 5, 4), torch.randperm(7)
    model = Model()
    for got, want in zip(torch.compile(model, backend='hidet')(x, idx), model(x, idx)):
        assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_inplace_update_is_seen_through_views_taken_before_it():
    """A view taken before an in-place update of its base, read after it, reads the new values
    (the view is taken again); an update of a view reaches its base (x[0].mul_(2), chunks)."""
    class Model(nn.Module):
        def forward(self, x):
            y = x * 2
            v = y[0]
            t = y.t()
            y.clamp_(max=0.5)  # v and t see it
            w = y[1:]
            w.mul_(3)  # y (and v, t) see it
            a, b = y.chunk(2, dim=1)
            b.add_(1)
            return v + 1, t * 2, y, a

    x = torch.randn(3, 4)
    for got, want in zip(torch.compile(Model(), backend='hidet')(x), Model()(x)):
        assert_close(got, want, atol=1e-6, rtol=1e-6)


def test_updated_arguments_views_follow_the_tensor_across_calls():
    """The backend keeps its view of an updated argument (a cache) while the same tensor comes back
    where it was: call after call the updates accumulate in it; the same tensor object moved to
    other memory (set_), or another tensor, is updated where it now lives."""
    def step(cache, x):
        cache.add_(x)
        return cache.sum()

    f = torch.compile(step, backend='hidet')
    cache, want = torch.zeros(4, 3, device=DEVICE), torch.zeros(4, 3, device=DEVICE)
    for _ in range(3):
        x = torch.randn(4, 3, device=DEVICE)
        assert_close(f(cache, x), step(want, x), atol=1e-5, rtol=1e-5)
        assert_close(cache, want, atol=1e-5, rtol=1e-5)
    cache.set_(torch.ones(4, 3, device=DEVICE))  # the same object, other memory
    want.fill_(1)
    other, want_other = torch.full((4, 3), 2.0, device=DEVICE), torch.full((4, 3), 2.0, device=DEVICE)
    for _ in range(2):
        x = torch.randn(4, 3, device=DEVICE)
        assert_close(f(cache, x), step(want, x), atol=1e-5, rtol=1e-5)
        assert_close(f(other, x), step(want_other, x), atol=1e-5, rtol=1e-5)
    assert_close(cache, want, atol=1e-5, rtol=1e-5)
    assert_close(other, want_other, atol=1e-5, rtol=1e-5)


def test_inputs_are_read_where_they_live_at_each_call():
    """A graph compiled for one shape identifies its tensor arguments by object and address
    (hidet._C.ArgsRecord): a tensor written in place, the same object moved to other memory (set_,
    .data =) and another tensor are each read as they are at the call."""
    def f(x, y):
        return x * 2 + y

    g = torch.compile(f, backend='hidet', dynamic=False)
    x, y = torch.randn(5, 3, device=DEVICE), torch.randn(5, 3, device=DEVICE)
    assert_close(g(x, y), f(x, y), atol=1e-5, rtol=1e-5)
    x.copy_(torch.randn(5, 3, device=DEVICE))  # written in place
    assert_close(g(x, y), f(x, y), atol=1e-5, rtol=1e-5)
    x.set_(torch.randn(5, 3, device=DEVICE))  # the same object, other memory
    assert_close(g(x, y), f(x, y), atol=1e-5, rtol=1e-5)
    y.data = torch.randn(5, 3, device=DEVICE)
    assert_close(g(x, y), f(x, y), atol=1e-5, rtol=1e-5)
    z = torch.randn(5, 3, device=DEVICE)
    assert_close(g(z, y), f(z, y), atol=1e-5, rtol=1e-5)
    assert_close(g(x, y), f(x, y), atol=1e-5, rtol=1e-5)


def test_args_record_checks_identity_and_addresses():
    a, b, c = torch.zeros(3), torch.ones(3), torch.zeros(2)
    record = hidet._C.ArgsRecord([0, 2], True)
    assert len(record) == 2 and not record.same((a, 'x', b))
    assert record.update((a, 'x', b)) == [0, 1]  # everything, the first time
    assert record.same((a, 'y', b)) and record.same([a, None, b]) and record.update((a, 0, b)) == []
    assert not record.same((c, 'x', b)) and record.update((c, 'x', b)) == [0]
    b.set_(torch.ones(3))  # the same object at another address
    assert not record.same((c, 'x', b)) and record.update((c, 'x', b)) == [1]
    plain = hidet._C.ArgsRecord([1])  # identity only
    plain.update((1, b))
    assert plain.same((2, b)) and not plain.same((2, c))
    with pytest.raises(ValueError, match='2 arguments, but position 2'):
        record.same((a, b))
    with pytest.raises(TypeError, match='a tuple or a list'):
        record.update(iter((a, 'x', b)))


def _inplace_cases():
    """(name, function updating its inputs in place, its inputs): each returns a value too."""
    r3 = lambda *s: torch.randn(*s, device=DEVICE)  # noqa: E731
    idx = lambda *v: torch.tensor(v, device=DEVICE)  # noqa: E731

    def index_copy(cache, pos, k):
        cache.index_copy_(2, pos, k)
        return cache.sum(-1)

    def index_put(x, i, v):
        x.index_put_((i,), v)
        x.index_put_((i[:1],), v[:1] * 2, accumulate=True)
        return x * 1

    def copy(x, y):
        x.copy_(y.t() * 2)
        return x + 1

    def slice_assign(x, v):
        x[:, 1:3] = v
        x[0] = -1.0
        return x.sum(0)

    def scatter(x, i, s):
        x.scatter_(1, i, s)
        x.scatter_add_(0, i[:1] % 3, s[:1])
        return x.mean()

    def arithmetic(x, n):
        x.add_(1).mul_(2)
        x -= 0.5
        x[1] += 3
        n.add_(x.shape[0])  # a 0-d integer counter, as transformers' static cache keeps
        return x.relu()

    def through_views(x, c):
        x.view(-1)[:3] = 7.0  # a view of the input
        v = c.to(c.device)  # the same tensor (transformers writes its cache length through one)
        v.add_(2)
        x.t()[1].zero_()
        return x + c

    return {
        'index_copy_': (index_copy, [torch.zeros(1, 2, 8, 4, device=DEVICE), idx(5, 2, 0), r3(1, 2, 3, 4)]),
        'index_put_': (index_put, [r3(6, 3), idx(4, 1), r3(2, 3)]),
        'copy_': (copy, [r3(3, 5), r3(5, 3)]),
        'slice_assignment': (slice_assign, [r3(4, 5), r3(4, 2)]),
        'scatter_': (scatter, [r3(3, 5), idx([0, 4], [2, 1], [1, 3]), r3(3, 2)]),
        'arithmetic': (arithmetic, [r3(3, 4), torch.tensor(2, device=DEVICE)]),
        'views_of_inputs': (through_views, [r3(3, 4), torch.tensor(1.5, device=DEVICE)]),
    }


@pytest.mark.parametrize('name', list(_inplace_cases()))
def test_inplace_updates_of_graph_inputs_reach_the_caller(name):
    """index_copy_, index_put_, copy_, slice assignment, scatter_, in-place arithmetic on graph
    inputs, directly and through views: traced functionally, and the new values are written into
    the caller's tensors after each call (twice: the second call starts from the first's)."""
    fn, inputs = _inplace_cases()[name]
    mine, theirs = [x.clone() for x in inputs], [x.clone() for x in inputs]
    opt = compiled(fn)
    for _ in range(2):
        got, want = opt(*mine), fn(*theirs)
        assert_close(got, want, atol=1e-5, rtol=1e-5)
        for a, b in zip(mine, theirs):
            assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_inplace_updates_of_buffers_are_written_back():
    """A buffer the model updates (a running count, a cache it writes at positions): a graph input
    written back after each call, not a constant (which would be updated once, when traced)."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer('count', torch.zeros((), dtype=torch.int64, device=DEVICE))
            self.register_buffer('cache', torch.zeros(6, 3, device=DEVICE))

        def forward(self, x, pos):
            self.cache.index_copy_(0, pos, x)
            self.count += 1
            return self.cache.sum(0) * self.count

    mine, theirs = Model(), Model()
    opt = compiled(mine)
    for step in range(3):
        x, pos = torch.randn(2, 3, device=DEVICE), torch.tensor([2 * step, 2 * step + 1], device=DEVICE)
        assert_close(opt(x, pos), theirs(x, pos), atol=1e-5, rtol=1e-5)
        assert_close(mine.cache, theirs.cache)
        assert int(mine.count) == int(theirs.count) == step + 1


def test_inplace_update_of_an_input_under_dynamic_shapes():
    """A cache written at s positions per call, s one of dynamo's symbols: traced once with the
    update (printed 'l_cache_ <- x_1'), run by the ShapeDispatch of each size, the cache written in
    place every call."""
    calls = []

    def f(cache, pos, k):
        cache.index_copy_(0, pos, k * 2)
        return cache.sum(0) + k.sum()

    opt = torch.compile(f, backend=_counting_backend(calls), dynamic=True)
    mine = torch.randn(12, 4, device=DEVICE)
    theirs = mine.clone()
    at = 0
    for s in [3, 2, 4]:
        pos, k = torch.arange(at, at + s, device=DEVICE), r(s, 4)
        at += s
        assert_close(opt(mine, pos, k), f(theirs, pos, k), atol=1e-5, rtol=1e-5)
        assert_close(mine, theirs)
    assert len(calls) == 1 and calls[0].num_traces == 1
    (entry,) = calls[0].symbolic_entries.values()
    assert 'l_cache_ <- x_1' in str(entry.graph)


def test_inplace_update_of_a_view_over_symbolic_sizes(capsys):
    """Under dynamic shapes, an update through a reshape of a contiguous input (x.view(-1)) is the
    new value reshaped: traced once. Writing through another view needs the view's element
    positions, so constant shapes: that graph is traced per shape, and the log line names the
    update."""
    calls = []

    def reshaped(x):
        x.view(-1).mul_(2)
        return x + 1

    def sliced(x):
        x[:, 1:].mul_(2)
        return x + 1

    for fn in [reshaped, sliced]:
        torch._dynamo.reset()
        opt = torch.compile(fn, backend=_counting_backend(calls), dynamic=True)
        for n in [3, 5, 6]:
            mine = r(n, 4)
            theirs = mine.clone()
            assert_close(opt(mine), fn(theirs))
            assert_close(mine, theirs)
    assert calls[0].num_traces == 1 and calls[0].symbolic  # reshaped
    err = capsys.readouterr().err
    assert "compiled per input shape" in err and "an in-place update of 'getitem', a view of 'l_x_'" in err, err


def test_cuda_graph_replay_updates_the_cache_where_it_lives():
    """With CUDA graphs (on a GPU; here the replay is installed by hand, and the emulator runs it
    without a capture) the updated input is the replay's own buffer: calls on the same cache update
    it there; a new cache is captured again."""
    from hidet.torch import backend
    calls = []

    def f(cache, pos, k):
        cache.index_copy_(0, pos, k)
        return cache.sum(0)

    opt = torch.compile(f, backend=_counting_backend(calls), dynamic=False)
    cache, want = torch.zeros(8, 4, device=DEVICE), torch.zeros(8, 4, device=DEVICE)
    pos, k = torch.tensor([0, 1], device=DEVICE), r(2, 4)
    opt(cache, pos, k)
    f(want, pos, k)
    (entry,) = calls[0].cache.values()
    names = [n.name for n in calls[0].interpreter.placeholders]
    by_name = {'l_cache_': cache, 'l_pos_': pos, 'l_k_': k}
    args = [by_name[n] for n in names]
    entry.replay = backend._capture(entry.runner, args, entry.positions, entry.updates)
    entry.captured_at = backend._addresses(args, entry.updates)
    for step in range(2, 8, 2):
        pos, k = torch.tensor([step, step + 1], device=DEVICE), r(2, 4)
        assert_close(opt(cache, pos, k), f(want, pos, k))
        assert_close(cache, want)
    # Captured again by hand (the backend keeps views of a replay's outputs, per replay)
    entry.replay = backend._capture(entry.runner, args, entry.positions, entry.updates)
    pos, k = torch.tensor([1, 6], device=DEVICE), r(2, 4)
    assert_close(opt(cache, pos, k), f(want, pos, k))
    assert_close(cache, want)
    captured = entry.replay
    other = torch.ones(8, 4, device=DEVICE)
    other_want = other.clone()
    assert_close(opt(other, pos, k), f(other_want, pos, k))
    assert_close(other, other_want)
    assert entry.replay is not captured  # captured again at the new cache


def test_a_constant_output_is_a_fresh_tensor_per_call():
    """An output that depends on no input (a cache a model creates) is a new tensor each call: a
    graph that updates it in place does not change what the next call returns."""
    def make(x):
        return torch.zeros(3, 4, device=x.device), x + 1

    def write(cache, v):
        cache.add_(v)
        return cache.sum()

    make_opt, write_opt = compiled(make), compiled(write)
    x = r(3, 4)
    first, _ = make_opt(x)
    write_opt(first, x)
    assert_close(first, x)
    second, _ = make_opt(x)
    assert_close(second, torch.zeros(3, 4, device=DEVICE))


def test_inplace_update_of_a_view_of_a_computed_tensor():
    """x = cat(...)[:, :c]; x += shortcut (GhostNet) and p[..., :k] *= m on a product's view (Funnel):
    traced functionally; the viewed tensor read after the update sees it (the update is written
    into it)."""
    class Ghost(nn.Module):
        def forward(self, x, s, m):
            y = torch.cat([x * 2, x - 1], dim=1)[:, :5]
            y += s
            p = (x @ x.transpose(-1, -2))[:, 1:]
            p *= m
            return y.relu(), p

    class ReadsTheBase(nn.Module):
        def forward(self, x):
            y = torch.cat([x, x], dim=1)
            v = y[:, :2]
            v += 1  # y sees it
            return y * 2

    x, s, m = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 1)
    for got, want in zip(torch.compile(Ghost(), backend='hidet')(x, s, m), Ghost()(x, s, m)):
        assert_close(got, want, atol=1e-5, rtol=1e-5)
    torch._dynamo.reset()
    x = torch.randn(2, 3)
    assert_close(torch.compile(ReadsTheBase(), backend='hidet')(x), ReadsTheBase()(x))


def test_transformers_grouped_mm_fallback():
    """transformers' custom operator of mixture-of-experts layers (a name-keyed mapping: transformers
    defines it after hidet is imported): expert e takes rows offs[e - 1] to offs[e]; an expert
    without rows, and rows past offs[-1] (0)."""
    pytest.importorskip('transformers')
    import transformers.integrations.moe  # noqa: F401  (defines torch.ops.transformers.grouped_mm_fallback)
    op = torch.ops.transformers.grouped_mm_fallback
    x, w, offs = torch.randn(7, 8), torch.randn(3, 8, 5), torch.tensor([2, 2, 6], dtype=torch.int32)

    def f(x, w, offs):
        return op(x, w, offs) * 2

    assert_close(torch.compile(f, backend='hidet')(x, w, offs), f(x, w, offs), atol=1e-4, rtol=1e-4)


def test_functions_of_several_steps_round_once_in_half_precision():
    """softplus, logsigmoid, elu, mish, logsumexp in f16 compute in f32 and round once, as PyTorch's
    kernels do: hidet's error against f32 stays at eager f16's. Mamba's time steps (softplus of -8 to
    -2) computed in f16 steps (1 + exp(x) rounded) were 30% off, and the model missed eager by 1.6e-2
    (eager f16: 2.9e-3). log1p and expm1 of tiny values keep their digits in f32 too."""
    x = torch.cat([torch.linspace(-8, -2, 64), torch.linspace(-3, 3, 64)]).reshape(8, 16).to(DEVICE)
    fns = {
        'softplus': lambda a: F.softplus(a),
        'softplus_beta': lambda a: F.softplus(a, beta=2, threshold=5),
        'logsigmoid': lambda a: F.logsigmoid(a),
        'elu': lambda a: F.elu(a, 0.7),
        'mish': lambda a: F.mish(a),
        'logsumexp': lambda a: torch.logsumexp(a, 1),
    }
    for name, fn in fns.items():
        torch._dynamo.reset()
        ref = fn(x.double())
        eager = (fn(x.half()).double() - ref).abs() / (ref.abs() + 1e-3)
        got = (torch.compile(fn, backend='hidet')(x.half()).double() - ref).abs() / (ref.abs() + 1e-3)
        assert got.max().item() <= 2 * eager.max().item() + 1e-4, f'{name}: {got.max().item()} vs eager {eager.max().item()}'
    tiny = torch.tensor([1e-7, -3e-6, 2e-5, 1e-3], device=DEVICE)
    torch._dynamo.reset()
    assert_close(torch.compile(lambda a: torch.log1p(a) + torch.expm1(a) * 0.5, backend='hidet')(tiny),
                 torch.log1p(tiny) + torch.expm1(tiny) * 0.5, atol=0, rtol=1e-5)
    # erfc of 3 to 8 (values 2e-5 to 1e-29): relative accuracy where 1 - erf(x) is all rounding;
    # GELU far left, whose 0.5 x (1 + erf(x / sqrt 2)) PyTorch computes with that cancellation.
    tail = torch.linspace(3, 8, 11, device=DEVICE)
    torch._dynamo.reset()
    assert_close(torch.compile(lambda a: torch.erfc(a) + torch.special.erfc(a), backend='hidet')(tail),
                 2 * torch.erfc(tail.double()).float(), atol=0, rtol=2e-5)
    left = torch.linspace(-9, -3, 13, device=DEVICE)
    torch._dynamo.reset()
    got = torch.compile(lambda a: F.gelu(a), backend='hidet')(left).double()
    want = 0.5 * left.double() * torch.erfc(-left.double() / 2 ** 0.5)
    assert ((got - want).abs() / want.abs()).max().item() < 2e-5


def test_associative_scan_higher_order_operator():
    """torch.ops.higher_order.associative_scan (combine_mode='pointwise', what dynamo records on CUDA;
    transformers' Mamba scans its states with it under torch.compile): the combine function's graph
    mapped and applied in log2(n) levels, for lengths that leave odd halves, against eager; and the
    select_copy dynamo records beside it."""
    from torch._higher_order_ops.associative_scan import associative_scan

    def combine(left, right):
        a_left, b_left = left
        a_right, b_right = right
        return a_left * a_right, a_right * b_left + b_right

    def f(a, b):
        _, s = associative_scan(combine, (a, b), dim=2, combine_mode='pointwise')
        return s

    torch.manual_seed(0)
    # On the emulator (CI): one element, a power of two, and odd halves at several levels; on a GPU more.
    for n in ((1, 8, 13) if hidet.cuda_emulated() else (1, 2, 5, 8, 13)):
        torch._dynamo.reset()
        a, b = torch.rand(2, 3, n, 4, device=DEVICE) + 0.5, torch.randn(2, 3, n, 4, device=DEVICE)
        assert_close(torch.compile(f, backend='hidet')(a, b), f(a, b), atol=1e-5, rtol=1e-5)


def test_a_model_on_a_gpu_other_than_cuda0_is_a_clear_error():
    """On a GPU hidet runs one GPU per process, as cuda:0: a tensor on cuda:1 is refused with what to do."""
    from hidet.torch.convert import check_gpu
    for ok in (torch.device('cpu'), torch.device('cuda'), torch.device('cuda', 0)):
        check_gpu(ok)
    with pytest.raises(ValueError, match=r'on cuda:1: make that GPU the only one the process sees '
                                         r'\(CUDA_VISIBLE_DEVICES; under torchrun, hidet.distributed.use_local_gpu'):
        check_gpu(torch.device('cuda', 1))
    if hidet.cuda_emulated() or torch.cuda.device_count() < 2:
        return  # the check above is what a GPU host runs; below, a model on the second GPU of one
    model = torch.nn.Linear(8, 4).to('cuda:1')
    with pytest.raises(Exception, match=r'cuda:1.*CUDA_VISIBLE_DEVICES'):
        torch.compile(model, backend='hidet')(torch.randn(2, 8, device='cuda:1'))
    torch._dynamo.reset()
