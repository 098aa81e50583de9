"""hidet.ops bindings against torch: sort, argsort, topk, searchsorted, bucketize, the scans,
scatter, index_put and index_add (eager and traced), and their errors."""
import pytest
import torch

import hidet
from conftest import assert_close


def h(t):
    return hidet.from_torch(t)


def same(got, want):
    torch.testing.assert_close(got.torch(), want, rtol=0, atol=0, equal_nan=True)


def test_sort_argsort_topk():
    x = torch.randint(-5, 5, (3, 37)).float()
    x[1, 4] = x[2, 30] = float('nan')
    for desc in (False, True):
        v, i = hidet.ops.sort(h(x), axis=1, descending=desc)
        wv, wi = torch.sort(x, dim=1, descending=desc, stable=True)
        same(v, wv)
        same(i, wi)
    same(hidet.ops.argsort(h(x), -1), torch.argsort(x, dim=-1, stable=True))
    v, i = hidet.ops.topk(h(x), 5)
    wv, _ = torch.topk(x, 5)
    same(v, wv)
    same(v, torch.gather(x, 1, i.torch()))  # ties may pick other indices than torch's: check the values they point at
    v, i = hidet.ops.topk(h(x), 1, axis=1, largest=False)
    same(v, torch.topk(x, 1, dim=1, largest=False).values)
    n = torch.randint(-300, 300, (5, 1000), dtype=torch.int32)
    same(hidet.ops.sort(h(n), 1, descending=True)[0], torch.sort(n, 1, descending=True).values)
    with pytest.raises(ValueError, match='topk: k = 38 is out of range'):
        hidet.ops.topk(h(x), 38)


def test_searchsorted_bucketize():
    seq = torch.tensor([-3.0, -1, -1, 0, 2, 2, 2, 5, 7, 9])
    v = torch.randint(-5, 11, (3, 4)).float()
    for right in (False, True):
        same(hidet.ops.searchsorted(h(seq), h(v), right=right), torch.searchsorted(seq, v, right=right))
    same(hidet.ops.bucketize(h(v), h(seq)), torch.bucketize(v, seq))


def test_scans():
    x = torch.rand(3, 10, 4) + 0.5
    assert_close(hidet.ops.cumprod(h(x), 1).torch(), torch.cumprod(x, 1))
    m = torch.randint(-3, 3, (4, 9)).float()
    m[2, 3] = float('nan')
    for ours, theirs in ((hidet.ops.cummax, torch.cummax), (hidet.ops.cummin, torch.cummin)):
        v, i = ours(h(m), 1)
        wv, wi = theirs(m, 1)
        same(v, wv)
        same(i, wi)
    same(hidet.ops.cumsum(h(m), axis=0), torch.cumsum(m, 0))


def test_scatter_family():
    x = torch.randn(4, 6)
    index = torch.stack([torch.randperm(6)[:3] for _ in range(4)])
    src = torch.randn(4, 5)
    same(hidet.ops.scatter(h(x), 1, h(index), h(src)), torch.scatter(x, 1, index, src))
    same(hidet.ops.scatter(h(x), 1, h(index), 2.5), torch.scatter(x, 1, index, 2.5))
    base = torch.randint(-4, 4, (5, 7)).float()
    dup = torch.randint(0, 5, (8, 7))
    s = torch.randint(-4, 4, (8, 7)).float()
    for reduce, name in (('sum', 'sum'), ('add', 'sum'), ('amax', 'amax'), ('amin', 'amin')):
        same(hidet.ops.scatter(h(base), 0, h(dup), h(s), reduce=reduce), torch.scatter_reduce(base, 0, dup, s, name))
    same(hidet.ops.scatter_add(h(base), 0, h(dup), h(s)), torch.scatter_add(base, 0, dup, s))
    with pytest.raises(ValueError, match="reduce='prod' is not supported"):
        hidet.ops.scatter(h(base), 0, h(dup), h(s), reduce='prod')
    with pytest.raises(ValueError, match='scatter: index holds 9 at position'):
        hidet.ops.scatter(h(base), 0, h(torch.full((2, 7), 9)), h(s))

    y = torch.randint(-4, 4, (5, 6, 4)).float()
    i0, i2 = torch.tensor([[1], [1]]), torch.tensor([3, 0, 3])
    vals = torch.randint(-4, 4, (2, 3, 6)).float()
    same(hidet.ops.index_put(h(y), [h(i0), None, h(i2)], h(vals), accumulate=True), _index_put_ref(y, i0, i2, vals))
    mask = torch.randn(5, 6, 4) > 0
    same(hidet.ops.index_put(h(y), [h(mask)], h(torch.tensor(0.0))), y.masked_fill(mask, 0.0))
    idx = torch.tensor([0, 4, 4, 1, 0, 2, 3])
    src7 = torch.randint(-4, 4, (7, 6, 4)).float()
    same(hidet.ops.index_add(h(y), 0, h(idx), h(src7), alpha=2.0), torch.index_add(y, 0, idx, src7, alpha=2))


def _index_put_ref(y, i0, i2, vals):
    """y[i0, :, i2] += vals with i0 (2, 1) and i2 (3,) broadcast to (2, 3): the indexed shape is (2, 3, 6)."""
    ref = y.clone()
    for a in range(2):
        for b in range(3):
            ref[i0[a, 0], :, i2[b]] += vals[a, b]
    return ref


def test_traced_on_symbolic_extents():
    x = hidet.symbol(['n', 37], name='x')
    v, i = hidet.ops.topk(x, 3)
    s = hidet.ops.cumprod(x, 1)
    g = hidet.trace_from([v, i, s], [x])
    assert 'Topk(x' in str(g) and 'Cumprod(x' in str(g)
    for n in (2, 3):
        a = torch.randn(n, 37, device='cuda' if torch.cuda.is_available() else 'cpu')  # the graph's device
        got = g.run([h(a)])
        want_v, _ = torch.topk(a, 3)
        same(got[0], want_v)
        assert_close(got[2].torch(), torch.cumprod(a, 1), atol=1e-4, rtol=1e-4)
