"""Element-wise math, integer division and bitwise operators from Python, against torch on the CPU
(a few of each: tests/ops/test_elementwise.cpp covers them all)."""
import pytest
import torch

import hidet
from conftest import assert_close


def h(x):
    return hidet.from_torch(x)


def test_float_math_matches_torch():
    x = torch.rand(3, 37) * 1.8 - 0.9  # inside every domain below
    for name in ['tan', 'erfinv', 'erfc']:
        assert_close(getattr(hidet.ops, name)(h(x)).torch(), getattr(torch, name)(x), atol=1e-5, rtol=1e-5)
    x[0, :2] = torch.tensor([float('nan'), -0.0])
    assert_close(hidet.ops.sign(h(x)).torch(), torch.sign(x))  # sign(nan) = 0
    i = torch.randint(1, 100, (3, 37), dtype=torch.int32)
    assert_close(hidet.ops.log2(h(i)).torch(), torch.log2(i))  # integers give float32


def test_division_family_matches_torch():
    a = torch.randn(3, 37) * 10
    b = torch.randn(1, 37).clamp(-3, 3)
    b = torch.where(b.abs() < 0.05, torch.full_like(b, 0.75), b)
    a[0, 0], b[0, 0] = 1.0, 0.1  # 1 // 0.1 is 9
    assert_close(hidet.ops.remainder(h(a), h(b)).torch(), torch.remainder(a, b))
    assert_close((h(a) // h(b)).torch(), a // b)
    assert (h(a) // h(b)).torch()[0, 0].item() == 9.0
    ai = torch.randint(-50, 50, (3, 37), dtype=torch.int32)
    bi = torch.randint(1, 7, (1, 37), dtype=torch.int16) * (torch.randint(0, 2, (1, 37), dtype=torch.int16) * 2 - 1)
    assert_close(hidet.ops.fmod(h(ai), h(bi)).torch(), torch.fmod(ai, bi))
    # Python scalars are weakly typed: an int keeps int32, a float gives float32.
    assert_close((h(ai) % -7).torch(), ai % -7)
    assert_close(hidet.ops.floor_divide(h(ai), 2.5).torch(), torch.floor_divide(ai, 2.5))


def test_bitwise_and_logical_xor_match_torch():
    a = torch.randint(-1000, 1000, (3, 37), dtype=torch.int32)
    b = torch.randint(-1000, 1000, (37,), dtype=torch.int32)
    assert torch.equal((h(a) & h(b)).torch(), a & b)
    assert torch.equal((~h(a)).torch(), ~a)
    n = torch.randint(-2, 40, (37,), dtype=torch.int32)
    assert torch.equal(hidet.ops.bitwise_right_shift(h(a), h(n)).torch(), torch.bitwise_right_shift(a, n))
    u = torch.randint(0, 256, (37,), dtype=torch.uint8)
    assert torch.equal(hidet.ops.bitwise_or(h(u), 0x41).torch(), torch.bitwise_or(u, 0x41))
    f, g = torch.randint(-1, 1, (3, 37)).float(), torch.randint(-1, 2, (37,), dtype=torch.int32)
    assert torch.equal(hidet.ops.logical_xor(h(f), h(g)).torch(), torch.logical_xor(f, g))


def test_bitwise_on_floats_is_a_value_error():
    with pytest.raises(ValueError, match='bitwise_and: expected an integer or bool tensor, got dtype f32'):
        hidet.ops.bitwise_and(hidet.randn([2, 3]), 3)
    with pytest.raises(ValueError, match='bitwise_left_shift: expected an integer tensor, got dtype bool'):
        hidet.from_torch(torch.tensor([True])) << 1
