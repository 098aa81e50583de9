"""hidet tensors from Python: creation, printing, operators, zero-copy exchange with torch, errors."""
import pytest
import torch

import hidet
from conftest import assert_close


def test_create_print_and_operators():
    a = hidet.randn([2, 3])
    assert a.shape == (2, 3) and a.dtype == 'float32' and a.device == 'cuda:0'
    assert repr(a).startswith("Tensor(shape=(2, 3), dtype='float32'")
    b = hidet.ones([3], dtype='float16')
    assert b.to_list() == [1.0, 1.0, 1.0]
    n = hidet.asarray([1, 2, 3, 4, 5, 6], [2, 3]).numpy()
    assert n.shape == (2, 3) and n.dtype.name == 'float32' and n[1, 2] == 6.0
    x = torch.randn(5, 7)
    h = hidet.from_torch(x)
    assert_close((h * 2.0 + 1).torch(), x * 2 + 1)
    assert_close(hidet.ops.softmax(h, -1).torch(), torch.softmax(x, -1))
    assert_close((h @ hidet.from_torch(x.t().contiguous())).torch(), x @ x.t(), atol=1e-4)


def test_zero_copy_both_ways():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    h = hidet.from_torch(x)
    back = h.torch()
    if hidet.cuda_emulated():  # host memory on both sides: one buffer
        assert back.data_ptr() == x.data_ptr()
        x[0, 0] = 100.0
        assert back[0, 0].item() == 100.0
    y = hidet.ops.relu(h).torch()
    del h
    assert y.shape == (3, 4) and y[1, 1].item() == 5.0  # hidet's memory outlives the hidet tensor


def test_non_contiguous_and_dtypes():
    x = torch.randn(4, 6).t()
    assert_close(hidet.from_torch(x).torch(), x)
    for dt in [torch.float16, torch.bfloat16, torch.int64, torch.bool]:
        t = (torch.randn(3, 3) > 0).to(dt) if dt == torch.bool else torch.randn(3, 3).to(dt)
        h = hidet.from_torch(t)
        assert h.torch().dtype == dt
        assert torch.equal(h.torch(), t)


def test_errors_are_python_exceptions():
    a = hidet.randn([2, 3])
    with pytest.raises(ValueError, match='cannot broadcast shapes'):
        hidet.ops.add(a, hidet.randn([4, 3]))
    with pytest.raises(ValueError, match='unknown dtype'):
        hidet.zeros([2], dtype='float7')
    with pytest.raises(ValueError, match='symbolic'):
        hidet.symbol([2, 3]).torch()
    assert (a + 1).shape == (2, 3)  # still usable
