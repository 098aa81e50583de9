"""benchmarks/bench_llm.py (issue 36's LLM generation benchmark) on whatever device is here: without
a GPU, the tiny Llama through the benchmark's own code path (eager and hidet, batch 1, prompt 8, 3
new tokens; batch 2 as well doubles the time, most of it dynamo's tracing); hidet's greedy tokens
must equal eager's, and nothing may compile after warm-up. hidet runs there with dynamo's guards on
the modules filtered (HIDET_LLM_GUARD_FILTER, as the GPU rows of docs/torch.md were measured); the
plain recipe is test_torch_generate.py's."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip('torch')
pytest.importorskip('transformers')
BENCH = os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks', 'bench_llm.py')


def test_bench_llm_gives_eager_tokens_on_the_tiny_model():
    if torch.cuda.is_available():
        pytest.skip('on a GPU the benchmark runs from scripts/gpu-check with its full models')
    env = dict(os.environ, HIDET_LLM_BACKENDS='eager,hidet', HIDET_LLM_BATCHES='1',
               HIDET_LLM_GUARD_FILTER='skip_guard_on_all_nn_modules_unsafe')
    p = subprocess.run([sys.executable, BENCH], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if line.startswith('tiny ')]
    assert [(r[1], r[2]) for r in rows] == [('eager', '1'), ('hidet', '1')], p.stdout
    for r in rows:
        assert r[-2] == '0', f'compiled after warm-up: {r}'  # the compiles column
    assert [r[-1] for r in rows[1:]] == ['yes'], p.stdout
    assert 'the timings need a GPU' in p.stdout


def test_an_unknown_guard_filter_is_named_before_any_model_is_made():
    env = dict(os.environ, HIDET_LLM_GUARD_FILTER='skip_nothing')
    p = subprocess.run([sys.executable, BENCH], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode != 0
    assert "HIDET_LLM_GUARD_FILTER: 'skip_nothing' is not a guard filter of torch.compiler" in p.stderr, p.stderr
    assert 'skip_guard_on_all_nn_modules_unsafe' in p.stderr  # the choices are listed
    assert 'tiny ' not in p.stdout  # no row ran
