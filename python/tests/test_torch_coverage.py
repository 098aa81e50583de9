"""The coverage suite's CI subset (issue 40): small models of python/tests/coverage_models.py
through torch.compile(backend='hidet') against eager PyTorch in f32, on the emulator (or the GPU),
with the emulator's variants (transformers at hidden 64, 2 layers, 12 tokens; 32x32 images).
Each model runs the whole path (dynamo, mapping, optimization, kernels, a run) except the vision
models of torchvision and timm, whose convolutions take a minute or more on the emulator: those
are only mapped (every fx node mapped to hidet and the graph optimized; no kernel built).

A model that fails fails its test. The ones that fail today are marked xfail(strict=True) with
the error they raise now: the list says what the front end misses, a fix makes the test XPASS,
which fails (strict) until the mark is removed, and a different error fails the test too (the
reason would be stale). The whole list runs on a GPU with benchmarks/bench_torch_coverage.py."""
import pytest
import torch

import hidet
from coverage_models import Entry, entries, entry
from coverage_runner import run_entry

# (row of coverage_models, mode, the error it raises today or None). 'run': compiled, run and
# compared; 'map': mapped only (see the top of the file).
CI_MODELS = [
    ('transformers/bert', 'run', None),
    ('transformers/distilbert', 'run', None),
    ('transformers/albert', 'run', None),
    ('transformers/gpt2', 'run', None),
    ('transformers/llama', 'run', None),
    ('transformers/qwen2', 'run', None),
    ('transformers/t5', 'run', None),
    ('transformers/vit', 'run', None),
    ('transformers/clip-vision', 'run', None),
    ('transformers/resnet', 'run', None),
    ('transformers/convnext', 'run', None),
    ('transformers/mixtral', 'run', None),  # MoE: in-place updates, transformers' grouped_mm_fallback
    ('transformers/qwen3-next', 'run', None),  # gated delta-rule layers: torch.linalg.solve_triangular, a MoE
    ('torchvision/resnet18', 'map', None),
    ('timm/vit_tiny_patch16_224', 'map', None),
]


class FailureChanged(Exception):
    """A model marked xfail failed with another error than its mark says: not an expected failure."""


def _params():
    for name, mode, known in CI_MODELS:
        marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=known)] if known else []
        yield pytest.param(name, mode, known, marks=marks, id=f'{name.split("/", 1)[1]}-{mode}')


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    hidet.torch.dynamo_config.reset()
    yield


@pytest.mark.parametrize('name,mode,known', list(_params()))
def test_model_compiles_and_matches_eager(name, mode, known):
    pytest.importorskip(name.split('/')[0])
    r = run_entry(entry(name), torch.float32, small=True, mode=mode)
    message = f'{name} ({mode}): {r.status}: {r.error}'
    if known and r.status not in ('ok', 'mapped') and known not in r.error:
        raise FailureChanged(f'{message}\nits xfail mark says: {known}')
    assert r.status in (('ok',) if mode == 'run' else ('mapped',)), message
    assert r.graphs and r.graphs >= 1


def test_failures_name_the_operator_the_fx_node_and_the_source_line():
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.lgamma(x.abs() + 1) * 2  # no mapping for lgamma

    bad = Entry('test/lgamma', 'test', 'test', lambda small: Model(), lambda small, batch=None: ([torch.randn(3, 4)], {}))
    r = run_entry(bad, torch.float32, small=True)
    assert r.status == 'error'
    assert r.unmapped == ['torch.lgamma'] and r.cause == 'unmapped: torch.lgamma'
    assert len(r.nodes) == 1 and r.nodes[0].startswith('lgamma (') and 'test_torch_coverage.py' in r.nodes[0], r.nodes
    assert 'torch.lgamma' in r.error and 'test_torch_coverage.py' in r.error


def test_half_precision_tolerance_counts_eager_spread_under_rounding_noise():
    """A model that amplifies rounding (here sin(4000 x): half an f16 ulp of x moves it far) gets a
    tolerance from eager's error on inputs perturbed by one rounding step too, not from its error
    on the given inputs alone (which a different order of the same roundings may exceed)."""
    from coverage_runner import tolerance

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.sin(x * 4000)

    def inputs(small, batch=None):
        return [torch.randn(4, 8, generator=torch.Generator().manual_seed(3))], {}

    r = run_entry(Entry('test/sin', 'test', 'test', lambda small: Model(), inputs), torch.float16, small=True)
    assert r.eager_spread is not None and r.eager_spread > 0.05, r
    assert r.tol == pytest.approx(tolerance(torch.float16, max(r.eager_err, r.eager_spread)))
    assert r.status == 'ok', r.error
    # Integer inputs (token ids) cannot be perturbed: no spread, eager's own error alone.
    r = run_entry(entry('transformers/bert'), torch.float16, small=True)
    assert r.eager_spread is None and r.tol == pytest.approx(tolerance(torch.float16, r.eager_err))


def test_the_list_covers_every_torchvision_model_and_broad_families():
    torchvision = pytest.importorskip('torchvision')
    rows = entries()
    names = [e.name for e in rows]
    assert len(names) == len(set(names)), 'row names are unique'
    models = torchvision.models
    listed = {n.split('/', 1)[1] for n in names if n.startswith('torchvision/')}
    every = set()
    for module in (models, models.segmentation, models.video, models.optical_flow):
        every |= set(models.list_models(module=module))
    assert every <= listed, f'torchvision models missing from the list: {sorted(every - listed)}'
    assert len({e.family for e in rows if e.source == 'timm'}) >= 25
    assert len({e.family for e in rows if e.source == 'transformers'}) >= 25


def test_torchvision_detection_models_map_with_graph_breaks_around_their_data_dependent_steps():
    """torchvision's detection models are not in the list (box counts depend on the data): Faster
    R-CNN maps every fx graph dynamo gives (graph breaks around NMS; roi_align in its box head)."""
    torchvision = pytest.importorskip('torchvision')
    from coverage_runner import _mapping_backend
    torch.manual_seed(0)
    model = torchvision.models.get_model('fasterrcnn_mobilenet_v3_large_320_fpn', weights=None,
                                         weights_backbone=None).eval()
    images = [torch.rand(3, 96, 128)]
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return _mapping_backend(gm, example_inputs)

    with torch.no_grad():
        want = model(images)
        got = torch.compile(model, backend=backend)(images)
    assert any('roi_align' in str(n.target) for g in graphs for n in g.graph.nodes)
    assert len(got) == len(want) and set(got[0]) == set(want[0])
    for key in want[0]:
        assert torch.equal(got[0][key], want[0][key])
