"""Benchmark: dynamic shapes through torch.compile(dynamic=True) on the GPU. Each model is called
at a series of new sizes (BERT-base and GPT-2: sequence lengths at batch 1; ResNet-50: batch
sizes), and each strategy runs in its own process on a fresh hidet kernel cache (inductor's
caches off), so that every new shape's compile is counted. Every model is compiled with
torch.compile(dynamic=True) (ResNet-50's image sizes are then symbols too; they stay 224 here).

- hidet per_shape: traced once on dynamo's symbols, each shape specialized, optimized and
                   compiled (hidet.torch.dynamo_config.dynamic_shapes('per_shape'))
- hidet generic:   traced once, optimized once, kernels built for symbolic sizes
                   (dynamic_shapes('generic'), the default)
- hidet static:    torch.compile(dynamic=False): dynamo and hidet trace every shape anew
- inductor:        torch.compile(dynamic=True), mode default (no CUDA graphs: one graph serves
                   every shape)

Columns: the first call at the first size (trace and compile), the slowest and the mean first
call at each later new size, their total, hidet's fx traces, the replay latency at the first
size (CUDA events, hidet with CUDA graphs), and the largest error against eager over all sizes
(max|d| / max|eager|); for hidet, the kernels built per later new size (task kernels and templates
built for symbolic sizes, hidet.kernel_builds()) and the NVRTC compiles per later new size.
Random weights, f16 (and BERT-base in f32: its attention has no flash template, so 'generic' runs
it as shape-generic tasks). HIDET_BENCH_PROFILE_NEW=1 prints the Python profile (cProfile, top 12 by
cumulative time) of the second size's first call.

HIDET_BENCH_MODELS=<regex> selects models; HIDET_BENCH_MODES=<regex> selects strategies;
HIDET_BENCH_ROUNDS=2 runs the strategies a second time in the reverse order (on the H200 the
strategy run first for a model measured up to twice slower per new size than the same code run
later, so compare strategies over both orders). The driver's JIT cache is off in the children
(CUDA_CACHE_DISABLE=1). The build's python/ folder must be on PYTHONPATH (scripts/gpu-check sets
it)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))

MODELS = {
    'bert-base f16': [128, 96, 200, 64, 160, 77],
    'bert-base f32': [128, 96, 200, 64, 160, 77],
    'gpt2 f16': [128, 96, 200, 64, 160, 77],
    'resnet50 f16': [8, 4, 16, 2, 12, 6],
}
MODES = ['hidet per_shape', 'hidet generic', 'hidet static', 'inductor']


def make(name):
    torch.manual_seed(0)
    if name.startswith('resnet50'):
        import torchvision
        import hidet
        model = torchvision.models.resnet50(weights=None).cuda()
        model = hidet.utils.calibrate_batch_norm(model, lambda: torch.randn(8, 3, 224, 224, device='cuda'))
        return model.half().eval(), lambda n: (torch.randn(n, 3, 224, 224, device='cuda', dtype=torch.half),)
    import transformers as t
    model = t.BertModel(t.BertConfig()) if name.startswith('bert') else t.GPT2Model(t.GPT2Config(use_cache=False))
    model = model.cuda().eval()
    return (model if name.endswith('f32') else model.half()), lambda s: (torch.randint(0, 1000, (1, s), device='cuda'),)


def first(out):
    if isinstance(out, torch.Tensor):
        return out
    return out.last_hidden_state if hasattr(out, 'last_hidden_state') else out[0]


def run_one(name, mode):
    """One model and strategy (a child process): prints one JSON line."""
    from torch_timing import time_ms
    import hidet
    import hidet.torch
    calls = []

    def backend(gm, example_inputs, **kw):
        calls.append(hidet.torch.hidet_backend(gm, example_inputs, **kw))
        return calls[-1]

    model, inputs = make(name)
    sizes = MODELS[name]
    dynamic = mode != 'hidet static'
    with torch.no_grad():
        if mode == 'inductor':
            f = torch.compile(model, dynamic=dynamic)
        else:
            hidet.torch.dynamo_config.dynamic_shapes('per_shape' if mode == 'hidet per_shape' else 'generic')
            f = torch.compile(model, backend=backend, dynamic=dynamic)
        firsts, builds, err = [], [], 0.0
        for s in sizes:
            args = inputs(s)
            before = hidet.kernel_builds()
            profile = os.environ.get('HIDET_BENCH_PROFILE_NEW') == '1' and len(firsts) == 1
            if profile:
                import cProfile
                prof = cProfile.Profile()
                prof.enable()
            torch.cuda.synchronize()
            t0 = time.time()
            got = first(f(*args)).float()
            torch.cuda.synchronize()
            firsts.append(time.time() - t0)
            if profile:
                import io
                import pstats
                prof.disable()
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats('cumulative').print_stats(12)
                for ln in out.getvalue().splitlines():
                    print(f'PROFILE| {ln}', file=sys.stderr)
            after = hidet.kernel_builds()
            builds.append({k: after[k] - before[k] for k in after})
            want = first(model(*args)).float()
            err = max(err, ((got - want).abs().max() / want.abs().max().clamp_min(1e-6)).item())
        args = inputs(sizes[0])
        replay = time_ms(lambda: f(*args), min_calls=10)
    traces = sum(m.num_traces for m in calls) if calls else None
    later = builds[1:]
    kernels = sum(b['tasks'] + b['matmul_symbolic'] + b['attention_symbolic'] + b['conv2d_symbolic']
                  for b in later) / len(later)
    nvrtc = sum(b['nvrtc_compiles'] for b in later) / len(later)
    kinds = {k: sum(b[k] for b in later) / len(later)
             for k in ('tasks', 'matmul_symbolic', 'attention_symbolic', 'conv2d_symbolic')}
    print(json.dumps(dict(first=firsts[0], later=firsts[1:], traces=traces, replay=replay, err=err,
                          kernels=kernels if calls else None, nvrtc=nvrtc if calls else None,
                          kinds=kinds if calls else None)), flush=True)


def main():
    pattern, modes = os.environ.get('HIDET_BENCH_MODELS'), os.environ.get('HIDET_BENCH_MODES')
    print(f'torch {torch.__version__}, {torch.cuda.get_device_name()}; random weights (dtype: the model column); each strategy in its '
          'own process on a fresh kernel cache')
    print(f"{'model':14} {'sizes':28} {'strategy':16} {'first s':>8} {'new max':>8} {'new mean':>8} {'total s':>8} "
          f"{'traces':>6} {'replay ms':>9} {'rel err':>8} {'kernels/new':>11} {'nvrtc/new':>9}")
    rounds = int(os.environ.get('HIDET_BENCH_ROUNDS', '1'))
    for name, sizes in MODELS.items():
        if pattern and not re.search(pattern, name):
            continue
        selected = [m for m in MODES if not modes or re.search(modes, m)]
        for mode in (selected + selected[::-1])[:len(selected) * max(1, min(rounds, 2))]:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, HIDET_CACHE_DIR=os.path.join(cache, 'hidet'),
                           TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, 'inductor'),
                           TORCHINDUCTOR_FORCE_DISABLE_CACHES='1', CUDA_CACHE_DISABLE='1')
                p = subprocess.run([sys.executable, __file__, '--run', name, mode], env=env, capture_output=True,
                                   text=True)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith('{')]
            label = ','.join(str(s) for s in sizes)
            if p.returncode != 0 or not lines:
                tail = (p.stderr.strip().splitlines() or ['?'])[-1]
                print(f'{name:14} {label:28} {mode:16} failed: {tail[:200]}', flush=True)
                continue
            r = json.loads(lines[-1])
            later = r['later']
            traces = '-' if r['traces'] is None else str(r['traces'])
            print(f"{name:14} {label:28} {mode:16} {r['first']:8.2f} {max(later):8.2f} "
                  f"{sum(later) / len(later):8.2f} {r['first'] + sum(later):8.2f} {traces:>6} {r['replay']:9.3f} "
                  f"{r['err']:8.1e} {'-' if r['kernels'] is None else format(r['kernels'], '.1f'):>11} "
                  f"{'-' if r['nvrtc'] is None else format(r['nvrtc'], '.1f'):>9}", flush=True)
            if r.get('kinds') and r['kernels']:  # what the kernels per new size were
                print('  kernels/new by kind: ' + ', '.join(f'{k} {v:.1f}' for k, v in r['kinds'].items() if v),
                      flush=True)
            for ln in p.stderr.splitlines():  # the backend's reason for tracing per shape, if any
                if 'compiled per input shape' in ln:
                    print(f'  {ln.strip()[:300]}', flush=True)
                    break
            for ln in p.stderr.splitlines():
                if ln.startswith('PROFILE| ') and ln[9:].strip():
                    print(f'  {ln[9:][:160]}', flush=True)


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == '--run':
        run_one(sys.argv[2], sys.argv[3])
    else:
        main()
