"""Benchmark: deploying without Python (docs/deploying.md, "Performance"), against the targets of
issue 37, on the GPU. For ResNet-50 (batch 1, 224x224) and BERT-base (batch 1, sequence 128), f16,
random weights:

1. hidet.torch.export writes the model file (timed);
2. build/benchmarks/bench_deploy loads it in a fresh process and prints the C++ path's numbers
   (init_ms, load_ms, first_ms, steady_ms, single_ms, four threads checked against one);
3. the same model through torch.compile(backend='hidet') is timed here, in this process, with the
   same method as the C++ steady time (benchmarks/torch_timing.py: CUDA events around
   back-to-back batches, the median batch) and as its single-run time (synchronized calls).

Prints a table and each target: load (Model::load) < 200 ms, first run <= 1.1x a steady
synchronized run, steady C++ <= 1.03x the Python path, four threads correct. HIDET_BENCH_MODELS=<regex>
selects rows. Needs the build's python/ folder on PYTHONPATH and the benchmarks built
(meson configure build -Dbenchmarks=true && ninja -C build benchmarks/bench_deploy); the program
of the build hidet is imported from is used (HIDET_BENCH_DEPLOY=<path> names another)."""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from torch_timing import time_ms  # noqa: E402

import hidet  # noqa: E402
import hidet.torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The program of the build whose python/ folder hidet came from (build/python/hidet), else build/.
_BUILT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(hidet.__file__)))),
                      'benchmarks', 'bench_deploy')
BENCH = os.environ.get('HIDET_BENCH_DEPLOY', _BUILT if os.path.exists(_BUILT) else
                       os.path.join(ROOT, 'build', 'benchmarks', 'bench_deploy'))


def models():
    import torchvision
    import transformers as t
    img = torch.randn(1, 3, 224, 224, device='cuda', dtype=torch.float16)
    ids = torch.randint(0, 1000, (1, 128), device='cuda')

    def resnet50():
        m = torchvision.models.resnet50(weights=None).cuda().half().eval()
        return hidet.utils.calibrate_batch_norm(m, lambda: torch.randn(8, 3, 224, 224, device='cuda', dtype=torch.half))

    yield 'resnet50 f16 b1', resnet50, (img,)
    yield 'bert-base f16 b1', lambda: t.BertModel(t.BertConfig()).cuda().half().eval(), (ids,)


def single_ms(fn, n=20):
    """One synchronized call, the median of n: the first call's measure, at steady state."""
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main():
    if hidet.cuda_emulated():
        print('bench_deploy: needs a GPU (the emulator measures nothing of interest)')
        return 0
    if not os.path.exists(BENCH):
        print(f'bench_deploy: {BENCH} is missing: meson configure build -Dbenchmarks=true && ninja -C build')
        return 1
    pattern = re.compile(os.environ.get('HIDET_BENCH_MODELS', '.'))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, args in models():
            if not pattern.search(name):
                continue
            model = make()
            path = os.path.join(tmp, name.split()[0] + '.hidet')
            t0 = time.time()
            hidet.torch.export(model, args, path)
            export_s = time.time() - t0
            run = subprocess.run([BENCH, path], capture_output=True, text=True)
            if run.returncode != 0:
                print(f'{name}: bench_deploy failed:\n{run.stderr}')
                return 1
            cpp = json.loads(run.stdout.strip().splitlines()[-1])
            with torch.no_grad():
                compiled = torch.compile(model, backend='hidet')
                compiled(*args)
                py_steady = time_ms(lambda: compiled(*args), min_calls=10)
                py_single = single_ms(lambda: compiled(*args))
            rows.append((name, export_s, cpp, py_steady, py_single))
            del compiled, model
            torch.cuda.empty_cache()

    print(f'{"model":18} {"export s":>8} {"init ms":>8} {"load ms":>8} {"first ms":>9} {"single ms":>9} '
          f'{"steady ms":>9} {"python ms":>9} {"ratio":>6} {"4 threads":>14}')
    ok = True
    for name, export_s, c, py_steady, py_single in rows:
        ratio = c['steady_ms'] / py_steady
        threads = 'ok' if not c['thread_error'] and c['max_rel_diff'] < 1e-2 else 'FAILED'
        print(f'{name:18} {export_s:8.1f} {c["init_ms"]:8.1f} {c["load_ms"]:8.1f} {c["first_ms"]:9.3f} '
              f'{c["single_ms"]:9.3f} {c["steady_ms"]:9.4f} {py_steady:9.4f} {ratio:6.3f} '
              f'{threads:>6} {c["thread_runs_per_s"]:6.0f}/s')
        checks = [('load < 200 ms', c['load_ms'] < 200),
                  ('first run <= 1.1x a synchronized steady run', c['first_ms'] <= 1.1 * c['single_ms']),
                  ('steady <= 1.03x the Python path', ratio <= 1.03),
                  (f'python single run {py_single:.3f} ms vs C++ {c["single_ms"]:.3f} ms', True),
                  ('four threads on four streams correct', threads == 'ok')]
        for what, good in checks:
            print(f'    {"ok  " if good else "MISS"} {what}')
            ok = ok and good
        if c['thread_error']:
            print(f'    thread error: {c["thread_error"]}')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
