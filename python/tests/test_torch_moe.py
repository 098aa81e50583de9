"""Mixture-of-experts layers through torch.compile(backend='hidet'): hidet.ops.grouped_matmul (the
grouped product, docs/operators.md) against a torch reference on odd shapes and routings, the
mappings of transformers' grouped_mm_fallback and torch's F.grouped_mm, and tiny Mixtral and
Qwen2-MoE models (transformers configs, random weights; python/tests/coverage_models.py) against
eager in f32 and f16, with the graph holding grouped products and no product over every expert."""
import pytest
import torch

import hidet
import hidet.torch
from coverage_models import entry
from coverage_runner import run_entry

DEVICE = 'cpu' if hidet.cuda_emulated() else 'cuda'


def reference(x, w, offs):
    """Expert e takes rows [start, end): end = offs[e] clamped to [0, S], start the largest end before."""
    out = torch.zeros(x.shape[0], w.shape[2], dtype=torch.float64)
    start = 0
    for e, end in enumerate(offs.tolist()):
        end = min(max(end, 0), x.shape[0])
        if end > start:
            out[start:end] = x[start:end].double() @ w[e].double()
        start = max(start, end)
    return out


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    hidet.torch.dynamo_config.reset()
    yield


@pytest.mark.parametrize('dtype', [torch.float32, torch.float16, torch.bfloat16])
def test_grouped_matmul_matches_reference(dtype):
    torch.manual_seed(0)
    experts, k, n = 5, 37, 29
    w = torch.randn(experts, k, n).to(dtype)
    for s in (3, 45):  # decode (the GEMV kernel) and the tiled kernels, one build each for every routing
        x = torch.randn(s, k).to(dtype)
        for offs in ([1, 1, 2, s - 1, s - 1], [0, 0, s, s, s], [s // 2, 2, s + 5, 1, s]):
            for odt in (torch.int32, torch.int64):
                o = torch.tensor(offs, dtype=odt)
                got = hidet.ops.grouped_matmul(hidet.from_torch(x.to(DEVICE)), hidet.from_torch(w.to(DEVICE)),
                                               hidet.from_torch(o.to(DEVICE))).torch().cpu()
                want = reference(x, w, o)
                tol = 1e-4 if dtype == torch.float32 else 3e-2
                torch.testing.assert_close(got.double(), want, atol=tol * (1 + want.abs().max().item()), rtol=tol)


def test_grouped_matmul_errors():
    x, w = hidet.from_torch(torch.randn(6, 8)), hidet.from_torch(torch.randn(3, 8, 5))
    with pytest.raises(ValueError, match='offs must be int32 or int64'):
        hidet.ops.grouped_matmul(x, w, hidet.from_torch(torch.tensor([1.0, 2.0, 3.0])))
    with pytest.raises(ValueError, match='the length of offs'):
        hidet.ops.grouped_matmul(x, w, hidet.from_torch(torch.tensor([1, 2], dtype=torch.int32)))
    with pytest.raises(ValueError, match='x and weight must share a dtype'):
        hidet.ops.grouped_matmul(x, hidet.from_torch(torch.randn(3, 8, 5).half()),
                                 hidet.from_torch(torch.tensor([1, 2, 3], dtype=torch.int32)))


def _graphs(monkeypatch):
    """The printed graphs that the backend optimizes (appended as it compiles)."""
    seen = []
    optimize = hidet.graph.optimize

    def spy(graph, *args, **kwargs):
        seen.append(str(graph))
        return optimize(graph, *args, **kwargs)

    monkeypatch.setattr(hidet.graph, 'optimize', spy)
    return seen


def test_grouped_mm_mappings_run_one_grouped_kernel(monkeypatch):
    """transformers' custom operator (f16) and F.grouped_mm (bf16): one GroupedMatmul node, no
    product over every expert, and the same kernels for every routing (offs is a graph input)."""
    transformers = pytest.importorskip('transformers')
    import transformers.integrations.moe  # noqa: F401  (defines torch.ops.transformers.grouped_mm_fallback)
    graphs = _graphs(monkeypatch)
    torch.manual_seed(0)
    experts, k, n, s = 4, 24, 40, 13
    cases = [(torch.float16, lambda x, w, o: torch.ops.transformers.grouped_mm_fallback(x, w, o))]
    if hasattr(torch.nn.functional, 'grouped_mm'):
        cases.append((torch.bfloat16, lambda x, w, o: torch.nn.functional.grouped_mm(x, w, offs=o)))
    for dtype, fn in cases:
        torch._dynamo.reset()
        graphs.clear()
        w = torch.randn(experts, k, n).to(dtype).to(DEVICE)
        compiled = torch.compile(fn, backend='hidet')
        for offs in ([3, 3, 9, 13], [0, 13, 13, 13], [2, 5, 7, 11]):
            x = torch.randn(s, k).to(dtype).to(DEVICE)
            o = torch.tensor(offs, dtype=torch.int32, device=DEVICE)
            got = compiled(x, w, o).cpu()
            want = reference(x.cpu(), w.cpu(), o.cpu())
            torch.testing.assert_close(got.double(), want, atol=3e-2 * (1 + want.abs().max().item()), rtol=3e-2)
        assert len(graphs) == 1, 'one compiled graph serves every routing'
        assert 'GroupedMatmul' in graphs[0] and 'Bucketize' not in graphs[0], graphs[0]


@pytest.mark.parametrize('name', ['transformers/mixtral', 'transformers/qwen2-moe'])
@pytest.mark.parametrize('dtype', [torch.float32, torch.float16], ids=['f32', 'f16'])
def test_moe_models_match_eager(name, dtype, monkeypatch):
    pytest.importorskip('transformers')
    graphs = _graphs(monkeypatch)
    r = run_entry(entry(name), dtype, small=True)
    assert r.status == 'ok', f'{name} {dtype}: {r.status}: {r.error} (err {r.err}, eager {r.eager_err}, tol {r.tol})'
    text = '\n'.join(graphs)
    # two grouped products (gate-up and down) per MoE layer; the experts' products are no batched
    # matmul over every expert any more
    assert text.count('GroupedMatmul(') >= 2 * 2, text
    assert 'Bucketize' not in text, text


def test_router_offsets_cumsum_dtype():
    """The routers' offsets: torch.cumsum(counts, dim, dtype=torch.int32) of float counts (transformers'
    histc path on the CPU) is int32, as in PyTorch; without dtype, integers sum in int64."""
    counts = torch.tensor([1.0, 0.0, 3.0, 2.0])
    f = torch.compile(lambda c: torch.cumsum(c, 0, dtype=torch.int32), backend='hidet')
    got = f(counts)
    assert got.dtype == torch.int32 and got.tolist() == [1, 1, 4, 6]
    g = torch.compile(lambda c: c.cumsum(0), backend='hidet')
    assert g(torch.tensor([1, 2], dtype=torch.int32)).dtype == torch.int64
