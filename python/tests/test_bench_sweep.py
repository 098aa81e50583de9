"""benchmarks/bench_torch_sweep.py (issue 35's sweep): the profile tables' parsing, and one model
through the whole sweep (worker process, report) on whatever device is here."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip('torch')
pytest.importorskip('transformers')
BENCH = os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks')
sys.path.insert(0, BENCH)
import bench_torch_sweep  # noqa: E402


def test_top_operators_sums_the_tables_per_operator():
    table = ('profile: 5 operators, 1.000 ms summed (each node timed alone), H200\n'
             '  operator                      count         ms   share\n'
             '  FusedMatmul                       3     0.5000   50.0%\n'
             '  Attention                         1     0.3000   30.0%\n'
             '  LayerNorm                         1     0.2000   20.0%\n'
             '  slowest nodes:\n'
             '      1  FusedMatmul                0.3000 ms  float16[1, 8]\n')
    other = table.replace('0.3000   30.0%', '0.0500    5.0%').replace('LayerNorm                         1     0.2000',
                                                                      'LayerNorm                         1     0.4000')
    assert bench_torch_sweep.top_operators([table, other]) == [
        'FusedMatmul 1.000 ms (51%)', 'LayerNorm 0.600 ms (31%)', 'Attention 0.350 ms (18%)']
    assert bench_torch_sweep.top_operators([]) == []


def test_one_model_through_the_sweep(tmp_path):
    """DistilBERT (tiny on the emulator) in a worker process: one row compiled, run and compared,
    and one configuration that fails (a batch size that is not a number) reported as a row with its
    error while the sweep goes on and exits 0."""
    out = tmp_path / 'sweep.jsonl'
    env = dict(os.environ, HIDET_SWEEP_MODELS='transformers/distilbert$', HIDET_SWEEP_CONFIGS='f32b1,f32bX',
               HIDET_SWEEP_INDUCTOR='0', HIDET_SWEEP_BUDGET='300', HIDET_SWEEP_OUTPUT=str(out))
    p = subprocess.run([sys.executable, os.path.join(BENCH, 'bench_torch_sweep.py')], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert '(1 of 1 compiled and ran)' in p.stdout, p.stdout
    assert "ValueError: invalid literal for int() with base 10: 'X'" in p.stdout, p.stdout
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert [(r['config'], r['status']) for r in rows] == [('f32b1', 'ok'), ('f32bX', 'error')]
    assert rows[0]['err'] < 1e-3
