"""hidet.torch.export and the deployment example (examples/deploy): a torchvision classifier
exported by export_model.py is served by the C++ and C programs (built against this build's
libhidet), which print PyTorch's top-5 classes and link neither libpython nor libnvrtc nor load
NVRTC; a model with a symbolic batch exported at two sizes runs both from hidet.Model and names
the sizes it holds for another; a transformer layer keeps linear, attention and layer norm whole.
On the emulator the file carries the kernels' IR, so the programs run it there too."""
import contextlib
import io
import os
import re
import runpy
import subprocess
import sys

import pytest
import torch

import hidet
import hidet.torch

from conftest import assert_close

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, 'examples', 'deploy')
PROGRAMS = [os.environ.get('HIDET_DEPLOY_CLASSIFY'), os.environ.get('HIDET_DEPLOY_CLASSIFY_C')]
DEVICE = 'cpu' if hidet.cuda_emulated() else 'cuda'


def _top5(text):
    """[(class, probability)] of the lines '  class 3: 0.1172' that the programs and the exporter print."""
    return [(int(c), float(p)) for c, p in re.findall(r'^\s+class (\d+): ([0-9.]+)$', text, re.MULTILINE)]


def _same_top5(got, want):
    return [c for c, _ in got] == [c for c, _ in want] and all(abs(p - q) <= 2e-4 for (_, p), (_, q) in zip(got, want))


@pytest.mark.skipif(not all(PROGRAMS), reason='the example programs are built by meson (HIDET_DEPLOY_CLASSIFY)')
def test_exported_classifier_is_served_by_the_cpp_and_c_programs(tmp_path):
    pytest.importorskip('torchvision')
    path, image = str(tmp_path / 'model.hidet'), str(tmp_path / 'x.bin')
    out = io.StringIO()  # export_model.py run here (a second process would import torch again)
    argv = sys.argv
    try:
        sys.argv = ['export_model.py', path, '--input', image]
        with contextlib.redirect_stdout(out):
            runpy.run_path(os.path.join(DEPLOY, 'export_model.py'), run_name='__main__')
    finally:
        sys.argv = argv
    out = out.getvalue()
    want = _top5(out)
    assert len(want) == 5, out
    for program in PROGRAMS:
        libs = subprocess.run(['ldd', program], capture_output=True, text=True, check=True).stdout
        assert 'libhidet' in libs
        for lib in ('libpython', 'libnvrtc', 'libtorch'):
            assert lib not in libs, f'{program} links {lib}:\n{libs}'
        # LD_DEBUG lists every library the process opens (dlopen included): NVRTC is never loaded,
        # even with the emulator asked to compile kernels with it.
        env = dict(os.environ, LD_DEBUG='files', HIDET_EMULATOR_NVRTC='1')
        run = subprocess.run([program, path, image], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr[-2000:]
        assert 'libnvrtc' not in run.stderr
        assert _same_top5(_top5(run.stdout), want), f'{program}:\n{run.stdout}\nPyTorch:\n{out}'
    # A file it cannot use: a clear message and a failing status, no crash.
    with open(path, 'r+b') as f:
        f.truncate(os.path.getsize(path) - 100)
    for program in PROGRAMS:
        run = subprocess.run([program, path, image], capture_output=True, text=True)
        assert run.returncode == 1 and 'truncated or corrupt' in run.stderr, run.stderr


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3))), y.flatten(1).sum(-1)


def test_export_with_a_symbolic_batch_runs_each_size(tmp_path):
    torch.manual_seed(0)
    model = _Net().to(DEVICE).eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 6, 6, device=DEVICE)
    batch = torch.export.Dim('batch', min=1, max=16)
    path = str(tmp_path / 'net.hidet')
    loaded = hidet.torch.export(model, (x,), path, dynamic_shapes={'x': {0: batch}}, sizes={'batch': [1, 3]})
    assert loaded.inputs == [('x', 'float32', [-1, 3, 6, 6], ['batch', '', '', ''])]
    assert [o[1:] for o in loaded.outputs] == [('float32', [-1, 5], ['batch', '']), ('float32', [-1], ['batch'])]
    assert sorted(s[0][0] for s in loaded.compiled_shapes()) == [1, 3]
    model_file = hidet.Model.load(path)
    for n in (3, 1):
        xs = torch.randn(n, 3, 6, 6, device=DEVICE)
        with torch.no_grad():
            want = model(xs)
        got = model_file.run([hidet.from_torch(xs)])
        for g, w in zip(got, want):
            assert_close(g.torch(), w, atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match=r'no compiled program for the input shapes \(\(2, 3, 6, 6\),\).*\(\(1, 3, 6, 6\),\)'):
        model_file.run([hidet.from_torch(torch.randn(2, 3, 6, 6, device=DEVICE))])
    with pytest.raises(ValueError, match='outside the range'):
        hidet.torch.export(model, (x,), path, dynamic_shapes={'x': {0: batch}}, sizes={'batch': [32]})
    with pytest.raises(ValueError, match='no dynamic dimension'):
        hidet.torch.export(model, (x,), path, dynamic_shapes={'x': {0: batch}}, sizes={'seq': [4]})


def test_export_keeps_attention_linear_and_layer_norm_whole(tmp_path, monkeypatch):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).to(DEVICE).eval()
    x = torch.randn(2, 8, 16, device=DEVICE)
    path = str(tmp_path / 'layer.hidet')
    saved = []
    save_model = hidet.save_model
    monkeypatch.setattr(hidet, 'save_model', lambda p, graphs, *a: saved.extend(graphs) or save_model(p, graphs, *a))
    loaded = hidet.torch.export(layer, (x,), path)
    nodes = saved[0].graph.node_names()
    assert 'ScaledDotProductAttention' in nodes and 'LayerNorm' in nodes, nodes
    assert loaded.inputs[0][:3] == ('src', 'float32', [2, 8, 16])
    xs = torch.randn(2, 8, 16, device=DEVICE)
    with torch.no_grad():
        want = layer(xs)
    got = loaded.run([hidet.from_torch(xs)])[0]
    assert_close(got.torch(), want, atol=1e-4, rtol=1e-4)


def test_export_refuses_what_a_deployed_model_cannot_do(tmp_path):
    model = _Net().to(DEVICE)  # training mode: batch norm updates its statistics
    x = torch.randn(2, 3, 6, 6, device=DEVICE)
    with pytest.raises(ValueError, match='model.eval()'):
        hidet.torch.export(model, (x,), str(tmp_path / 'train.hidet'))
    with pytest.raises(ValueError, match='fallback_to_torch does not apply'):
        hidet.torch.export(model.eval(), (x,), str(tmp_path / 'f.hidet'), fallback_to_torch=True)
