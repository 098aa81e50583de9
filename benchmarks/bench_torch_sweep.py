"""Benchmark sweep (issue 35): models outside the zoo through torch.compile(backend='hidet') against
eager PyTorch and inductor (mode='reduce-overhead') in one process per model, on the GPU.

Rows: 33 models from torchvision and timm (the coverage suite's entries at their default
resolution, python/tests/coverage_models.py) and transformers (base-sized configs written here:
DistilBERT, RoBERTa, OPT-125m, GPT-Neo-125m, BART-base, ALBERT-base, an 8-layer Llama-style GQA
model, Qwen2-0.5B-shaped; 128 tokens), random weights (batch norms measured on random inputs).
Configurations: f16 batch 1, f16 batch 16, f32 batch 1.

Prints per configuration a table (eager, inductor and hidet ms; hidet's cold first-call seconds;
hidet / inductor; hidet's relative error against eager in the same dtype), the geometric mean of
hidet / inductor, the rows above 0.95, and for every row above 0.8 the three operators that cost
the most in hidet's compiled graphs (hidet.graph.profile: each node timed alone, summed per
operator). On the CPU emulator nothing is timed (no GPU): each row (the coverage suite's small
variants there: small images, tiny configs) is compiled, run and compared with eager, and the line
says that timings and profiles need a GPU.

Each model runs in a worker process that the sweep restarts after a model that crashes it or runs
past its time, so a failed model is a row with its error, never the end of the sweep.
Environment:
  HIDET_SWEEP_MODELS=<regex>      rows by name ('resnext|densenet', 'transformers/')
  HIDET_SWEEP_CONFIGS=f16b1,f16b16,f32b1   (default: all three on a GPU, f32b1 on the emulator)
  HIDET_SWEEP_MODEL_TIMEOUT=s     per model, all its configurations (default 240)
  HIDET_SWEEP_BUDGET=s            starts no model after this (default HIDET_BENCH_TIMEOUT less 30 s,
                                  else 570); the rest is listed as not run
  HIDET_SWEEP_SHARD=i/n           every n-th model from the i-th (1-based): a sweep over several calls
  HIDET_SWEEP_INDUCTOR=0          no inductor columns
  HIDET_SWEEP_PROFILES=<dir>      profiles every row (not only those above 0.8, as without inductor) and
                                  appends the full tables (every operator and the 200 slowest nodes of
                                  each compiled graph) to <dir>/profiles.txt under a line '== <model>
                                  <config>' (one file: a device call brings back few), and the worker
                                  processes' logs (hidet's tuning lines: each pick and the default) to
                                  <dir>/worker<n>.log
  HIDET_SWEEP_SPACE=n             hidet's search space (default 0: no tuning; 1 tunes at most 30 s a
                                  compiled graph, its first call's time included in the compile column)
The whole sweep takes longer than one device call on a cold machine (inductor's compile is 10-60
s a model): run it in shards, e.g.
  HIDET_BENCH_TIMEOUT=590 HIDET_SWEEP_SHARD=1/3 HIDET_GPU_CHECK_BENCH='^bench_torch_sweep$' HIDET_GPU_CHECK_TESTS=0 scripts/gpu-check
and `bench_torch_sweep.py --merge a.jsonl b.jsonl ...` prints the tables of several runs together.
On a machine of two GPUs, run one shard per GPU side by side (CUDA_VISIBLE_DEVICES=0 and 1, each
with its HIDET_SWEEP_SHARD or HIDET_SWEEP_MODELS and its own HIDET_SWEEP_OUTPUT): twice the rows
per device second (2026-11-28: 21 rows of f16 b1 in one 390-s call on 2 x H200).
Raw rows go to $HIDET_SWEEP_OUTPUT or $OUT/sweep.jsonl when set."""
import contextlib
import copy
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'python', 'tests'))

TORCHVISION = ['regnet_y_1_6gf', 'mobilenet_v3_large', 'shufflenet_v2_x1_0', 'efficientnet_v2_s', 'densenet121',
               'resnext50_32x4d', 'squeezenet1_1', 'mnasnet1_0', 'googlenet', 'wide_resnet50_2', 'vit_b_32',
               'swin_v2_t', 'convnext_small', 'efficientnet_b3']
TIMM = ['deit3_small_patch16_224', 'eva02_tiny_patch14_224', 'levit_128s', 'mobilevit_xxs', 'edgenext_xx_small',
        'poolformer_s12', 'repvit_m0_9', 'fastvit_t8', 'cspresnet50', 'hgnetv2_b0', 'regnetz_b16']
SEQ = 128
# Seconds of calls before each model is timed (eager, inductor and hidet alike): at batch 1 the
# small models sit near the host's bound, and LeViT timed after 3 s without calls was 35% slower
# than in the same process after half a second of calls (docs/torch.md, stop 58).
WARMUP_S = 0.5


def transformers_models():
    """name -> (model class, config class, the coverage suite's config scheme for the emulator's tiny
    variant, the base-sized configuration's arguments)."""
    return {
        'distilbert': ('DistilBertModel', 'DistilBertConfig', 'distilbert', {}),
        'roberta-base': ('RobertaModel', 'RobertaConfig', 'bert', {}),
        'opt-125m': ('OPTModel', 'OPTConfig', 'opt', {}),
        'gpt-neo-125m': ('GPTNeoModel', 'GPTNeoConfig', 'gpt_neo', dict(hidden_size=768, num_layers=12, num_heads=12,
                                                                      attention_types=[[['global', 'local'], 6]])),
        'bart-base': ('BartModel', 'BartConfig', 'seq2seq', dict(d_model=768, encoder_layers=6, decoder_layers=6,
                                                                 encoder_attention_heads=12, decoder_attention_heads=12,
                                                                 encoder_ffn_dim=3072, decoder_ffn_dim=3072)),
        'albert-base': ('AlbertModel', 'AlbertConfig', 'bert', dict(hidden_size=768, num_attention_heads=12,
                                                                    intermediate_size=3072, embedding_size=128)),
        'llama-gqa-8l': ('LlamaModel', 'LlamaConfig', 'llama', dict(hidden_size=1024, intermediate_size=2816,
                                                                    num_hidden_layers=8, num_attention_heads=16,
                                                                    num_key_value_heads=4, vocab_size=32000)),
        'qwen2-0.5b': ('Qwen2Model', 'Qwen2Config', 'llama', dict(hidden_size=896, intermediate_size=4864,
                                                                  num_hidden_layers=24, num_attention_heads=14,
                                                                  num_key_value_heads=2, vocab_size=32000)),
    }


def model_names():
    return ([f'torchvision/{n}' for n in TORCHVISION] + [f'timm/{n}' for n in TIMM]
            + [f'transformers/{n}' for n in transformers_models()])


def env(name, default):
    value = os.environ.get(name)
    return default if value in (None, '') else value


# ---------------------------------------------------------------------------------------------
# One model (in the worker).

def build(name, device, small):
    """(model in eval mode on device, f32; inputs(batch) -> (args, kwargs) on device). ``small``: the
    coverage suite's emulator variants (small images, tiny configs)."""
    import torch
    import coverage_models
    import coverage_runner
    source, short = name.split('/', 1)
    if source in ('torchvision', 'timm'):
        entry = coverage_models.entry(name)
        model, _, _ = coverage_runner._prepare(entry, small, device)
        # A new instance with the calibrated state: the calibration ran the model, and models that
        # cache tensors in plain attributes (LeViT's attention biases) kept f32 caches that the
        # f16 configurations' .to() would not convert.
        model = coverage_runner._rebuilt(entry, small, model).to(device).eval()
        return model, lambda b: coverage_runner._to(entry.inputs(small, batch=b), device)
    import transformers
    model_cls, config_cls, scheme, kwargs = transformers_models()[short]
    seq = coverage_models.SMALL.seq if small else SEQ
    if small:
        kwargs = coverage_models.SCHEMES[scheme](coverage_models.SMALL)
    cfg = getattr(transformers, config_cls)(**kwargs)
    if hasattr(cfg, 'use_cache'):
        cfg.use_cache = False
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(cfg).to(device).eval()

    def inputs(b):
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(3, min(cfg.vocab_size, 30000), (b, seq), generator=g).to(device)
        return [ids], ({'decoder_input_ids': ids} if model_cls == 'BartModel' else {})
    return model, inputs


def first_tensor(out):
    import coverage_models
    return coverage_models.first_tensor(out)


def top_operators(tables, count=3):
    """The `count` operators with the most time summed over the profile tables' per-operator rows."""
    sums = {}
    for table in tables:
        rows = False
        for line in table.splitlines():
            if line.strip().startswith('operator') and 'share' in line:
                rows = True
                continue
            if 'slowest nodes' in line:
                break
            parts = line.split()
            if rows and len(parts) == 4:
                sums[parts[0]] = sums.get(parts[0], 0.0) + float(parts[2])
    total = sum(sums.values()) or 1.0
    top = sorted(sums.items(), key=lambda kv: -kv[1])[:count]
    return [f'{op} {ms:.3f} ms ({100 * ms / total:.0f}%)' for op, ms in top]


class _Tee(io.StringIO):
    """Keeps what is written, and passes it on."""

    def __init__(self, out):
        super().__init__()
        self.out = out

    def write(self, text):
        self.out.write(text)
        return super().write(text)

    def text(self):
        return self.getvalue()


def slow_row_facts(said):
    """For a row far slower than inductor: dynamo's frame, graph and break counts over the compile
    and the timed calls (a frame compiled on every call shows there), and the first distinct lines hidet printed (a failed CUDA-graph
    capture, a graph compiled again), other than kernel-build progress."""
    import torch
    c = torch._dynamo.utils.counters
    breaks = sum(c['graph_break'].values())
    facts = [f"dynamo over the compile and the timed calls: {c['frames'].get('total', 0)} frames compiled, "
             f"{c['stats'].get('unique_graphs', 0)} graphs, {breaks} graph breaks"]
    seen = []
    for line in said.splitlines():
        line = line.strip()
        if line.startswith('hidet:') and 'building graph kernels' not in line and line not in seen:
            seen.append(line[:200])
    return '; '.join(facts + seen[:3])


def run_model(name, configs, inductor):
    """Yields one dict per configuration."""
    import torch
    import hidet
    import hidet.torch
    hidet.torch.dynamo_config.search_space(int(os.environ.get('HIDET_SWEEP_SPACE', '0')))
    from torch_timing import time_ms
    gpu = not hidet.cuda_emulated()
    device = 'cuda' if gpu else 'cpu'
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model32, inputs = build(name, device, small=not gpu)
    for config in configs:
        dtype = torch.float16 if config.startswith('f16') else torch.float32
        batch = int(config.split('b')[1])
        row = {'name': name, 'config': config, 'status': 'error', 'eager': None, 'inductor': None, 'hidet': None,
               'compile_s': None, 'err': None, 'top': [], 'error': '', 'note': ''}
        try:
            # A copy per configuration: models that cache tensors in plain attributes (LeViT's
            # attention biases) would keep another dtype's caches.
            model = copy.deepcopy(model32).to(dtype)
            args, kwargs = inputs(batch)
            args = [a.to(dtype) if a.is_floating_point() else a for a in args]
            kwargs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in kwargs.items()}
            with torch.no_grad():
                want = first_tensor(model(*args, **kwargs)).float()
                if gpu:
                    row['eager'] = time_ms(lambda: model(*args, **kwargs), min_calls=10, warmup_s=WARMUP_S)
                if gpu and inductor:
                    try:
                        torch._dynamo.reset()
                        c = torch.compile(model, mode='reduce-overhead')
                        for _ in range(3):
                            c(*args, **kwargs)
                        row['inductor'] = time_ms(lambda: c(*args, **kwargs), min_calls=10, warmup_s=WARMUP_S)
                        del c
                    except Exception as e:  # noqa: BLE001 - a row, not the end of the sweep
                        row['note'] = f'inductor failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}'
                torch._dynamo.reset()
                torch._dynamo.utils.counters.clear()
                said = _Tee(sys.stderr)  # what hidet says while it compiles and runs (explains a slow row)
                t0 = time.time()
                h = torch.compile(model, backend='hidet')
                with contextlib.redirect_stderr(said):
                    got = first_tensor(h(*args, **kwargs)).float()
                if gpu:
                    torch.cuda.synchronize()
                row['compile_s'] = time.time() - t0
                if torch.isfinite(want).all():
                    row['err'] = ((got - want).abs().max() / want.abs().max().clamp_min(1e-6)).item()
                else:  # random weights can overflow f16 (LeViT's small variant on the CPU)
                    row['note'] = "eager's output is not finite in this dtype: the error is not compared"
                row['status'] = 'ok'
                if gpu:
                    with contextlib.redirect_stderr(said):
                        row['hidet'] = time_ms(lambda: h(*args, **kwargs), min_calls=10, warmup_s=WARMUP_S)
                    if row['inductor'] and row['hidet'] / row['inductor'] > 2:
                        row['note'] = '; '.join(filter(None, [row['note'], slow_row_facts(said.text())]))
                    # Rows above 0.8 are profiled; every row when the profiles are asked for or
                    # there is no inductor time to compare with.
                    if (os.environ.get('HIDET_SWEEP_PROFILES') or not row['inductor'] or
                            row['hidet'] / row['inductor'] > 0.8):
                        # Compiled again with the profile on (kernels come from the disk cache).
                        torch._dynamo.reset()
                        err = io.StringIO()
                        hidet.torch.dynamo_config.profile(True, 200 if os.environ.get('HIDET_SWEEP_PROFILES') else 12)
                        try:
                            with contextlib.redirect_stderr(err):
                                torch.compile(model, backend='hidet')(*args, **kwargs)
                        finally:
                            hidet.torch.dynamo_config.profile(False)
                        tables = re.split(r'(?=^profile: )', err.getvalue(), flags=re.M)
                        if os.environ.get('HIDET_SWEEP_PROFILES'):
                            os.makedirs(os.environ['HIDET_SWEEP_PROFILES'], exist_ok=True)
                            with open(os.path.join(os.environ['HIDET_SWEEP_PROFILES'], 'profiles.txt'), 'a') as f:
                                f.write(f'== {name} {config}\n' + ''.join(t for t in tables if t.startswith('profile: ')))
                        row['top'] = top_operators([t for t in tables if t.startswith('profile: ')])
                else:
                    row['note'] = '; '.join(filter(None, [row['note'], 'no GPU (CPU emulator): compiled, run and compared '
                                                          'only; timings and profiles need a GPU']))
                del h
        except Exception as e:  # noqa: BLE001
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            row['error'] = f'{type(e).__name__}: {lines[0][:300] if lines else ""}'
        torch._dynamo.reset()
        if gpu:
            torch.cuda.empty_cache()
        yield row


def worker(jobs_path, results_path, inductor):
    jobs = json.load(open(jobs_path))
    with open(results_path, 'a') as out:
        for job in jobs:
            out.write(json.dumps({'start': job}) + '\n')
            out.flush()
            for row in run_model(job['name'], job['configs'], inductor):
                out.write(json.dumps({'row': row}) + '\n')
                out.flush()
            out.write(json.dumps({'done': job['name']}) + '\n')
            out.flush()


# ---------------------------------------------------------------------------------------------
# The sweep (parent): a worker process, restarted after a crash or a model past its time.

def sweep(jobs, inductor, model_timeout, budget, log_dir):
    rows, pending, start, round_ = [], list(jobs), time.time(), 0
    while pending and time.time() - start < budget:
        round_ += 1
        jobs_path, results_path = (os.path.join(log_dir, f'{n}{round_}.json') for n in ('jobs', 'results'))
        log_path = os.path.join(log_dir, f'worker{round_}.log')
        json.dump(pending, open(jobs_path, 'w'))
        open(results_path, 'w').close()
        with open(log_path, 'w') as log:
            proc = subprocess.Popen([sys.executable, __file__, '--worker', jobs_path, results_path, str(int(inductor))],
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        seen, current, since, why = 0, None, time.time(), None
        while True:
            lines = open(results_path).read().splitlines()
            for line in lines[seen:]:
                if not line.endswith('}'):
                    break
                seen += 1
                event = json.loads(line)
                if 'start' in event:
                    current, since = event['start'], time.time()
                elif 'row' in event:
                    rows.append(event['row'])
                    print(line_of(event['row']), flush=True)
                else:
                    pending = [j for j in pending if j['name'] != event['done']]
                    current = None
            rc = proc.poll()
            if rc is not None and seen == len(open(results_path).read().splitlines()):
                why = None if rc == 0 else f'the worker exited with {rc}'
                break
            over_budget = time.time() - start > budget
            if current is not None and (time.time() - since > model_timeout or over_budget):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                why = f'ran past {model_timeout:.0f} s' if not over_budget else 'the sweep\'s time budget ran out'
                break
            if current is None and over_budget:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.2)
        if os.environ.get('HIDET_SWEEP_PROFILES'):
            os.makedirs(os.environ['HIDET_SWEEP_PROFILES'], exist_ok=True)
            shutil.copy(log_path, os.environ['HIDET_SWEEP_PROFILES'])
        if current is not None:
            tail = open(log_path, errors='replace').read().strip().splitlines()[-6:]
            done = {r['config'] for r in rows if r['name'] == current['name']}
            for config in current['configs']:
                if config not in done:
                    row = failed(current['name'], config, f'{why or "the worker stopped"}; its log ends: '
                                 + ' | '.join(tail)[-400:])
                    rows.append(row)
                    print(line_of(row), flush=True)
            pending = [j for j in pending if j['name'] != current['name']]
        elif why and not seen:
            break  # the worker cannot start: the rest is listed as not run
    for job in pending:
        rows += [failed(job['name'], c, 'not run: the sweep\'s time budget was spent', 'not run') for c in job['configs']]
    return rows


def failed(name, config, error, status='error'):
    return {'name': name, 'config': config, 'status': status, 'eager': None, 'inductor': None, 'hidet': None,
            'compile_s': None, 'err': None, 'top': [], 'error': error, 'note': ''}


# ---------------------------------------------------------------------------------------------
# Reports.

def fmt(value, spec):
    return '-' if value is None else format(value, spec)


def ratio(row):
    return row['hidet'] / row['inductor'] if row['hidet'] and row['inductor'] else None


def line_of(row):
    r = ratio(row)
    text = (f"{row['name']:40} {row['config']:7} {fmt(row['eager'], '9.3f'):>9} {fmt(row['inductor'], '9.3f'):>9} "
            f"{fmt(row['hidet'], '9.3f'):>9} {fmt(row['compile_s'], '7.1f'):>7} {fmt(r, '6.2f'):>6} "
            f"{fmt(row['err'], '8.1e'):>8}")
    if row['status'] != 'ok':
        text += f"  {row['status']}: {row['error']}"
    elif row['note']:
        text += f"  ({row['note']})"
    return text


def report(rows):
    head = (f"{'model':40} {'config':7} {'eager ms':>9} {'inductor':>9} {'hidet ms':>9} {'comp s':>7} {'ratio':>6} "
            f"{'rel err':>8}")
    configs = [c for c in ('f16b1', 'f16b16', 'f32b1') if any(r['config'] == c for r in rows)]
    configs += sorted({r['config'] for r in rows} - set(configs))
    print('\nratio: hidet / inductor (below 1: hidet is faster); comp s: hidet\'s first call, dynamo and '
          'kernel builds included')
    for config in configs:
        part = [r for r in rows if r['config'] == config]
        print(f'\n== {config}\n{head}')
        for r in part:
            print(line_of(r))
        ratios = [ratio(r) for r in part if ratio(r)]
        ok = sum(r['status'] == 'ok' for r in part)
        if ratios:
            geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            print(f'{config}: geometric mean of hidet / inductor {geo:.2f} over {len(ratios)} models '
                  f'({ok} of {len(part)} compiled and ran)')
            above = [f"{r['name']} {ratio(r):.2f}" for r in part if ratio(r) and ratio(r) > 0.95]
            print(f'  above 0.95: {", ".join(above) if above else "none"}')
        else:
            print(f'{config}: no ratios ({ok} of {len(part)} compiled and ran)')
        slow = [r for r in part if ratio(r) and ratio(r) > 0.8]
        if slow:
            print('  where the time goes (hidet\'s three costliest operators) for the rows above 0.8:')
            for r in slow:
                print(f"    {r['name']} ({ratio(r):.2f}): " + ('; '.join(r['top']) if r['top'] else
                                                             'no profile taken'))
        cold = [f"{r['name']} {r['compile_s']:.1f} s" for r in part if r['compile_s'] and r['compile_s'] > 5]
        if cold:
            print(f'  first calls over 5 s: {", ".join(cold)}')


def main(argv):
    if argv and argv[0] == '--worker':
        return worker(argv[1], argv[2], argv[3] == '1')
    if argv and argv[0] == '--merge':
        rows = [json.loads(line) for path in argv[1:] for line in open(path) if line.strip()]
        return report(rows)
    import torch
    import hidet
    gpu = not hidet.cuda_emulated()
    names = model_names()
    pattern = env('HIDET_SWEEP_MODELS', '')
    names = [n for n in names if not pattern or re.search(pattern, n)]
    shard = env('HIDET_SWEEP_SHARD', '')
    if shard:
        i, n = (int(v) for v in shard.split('/'))
        names = names[i - 1::n]
    configs = env('HIDET_SWEEP_CONFIGS', 'f16b1,f16b16,f32b1' if gpu else 'f32b1').split(',')
    inductor = env('HIDET_SWEEP_INDUCTOR', '1') != '0'
    timeout = float(env('HIDET_SWEEP_MODEL_TIMEOUT', '240'))
    budget = float(env('HIDET_SWEEP_BUDGET', str(float(env('HIDET_BENCH_TIMEOUT', '600')) - 30)))
    where = torch.cuda.get_device_name() if gpu else 'the CPU emulator (no GPU: no timings)'
    print(f'torch {torch.__version__}, {where}; {len(names)} models x {",".join(configs)}; inductor '
          f'{"mode=reduce-overhead" if inductor else "off"}; hidet search space {env("HIDET_SWEEP_SPACE", "0")}, CUDA graphs on', flush=True)
    with tempfile.TemporaryDirectory() as log_dir:
        rows = sweep([{'name': n, 'configs': configs} for n in names], inductor, timeout, budget, log_dir)
    report(rows)
    path = env('HIDET_SWEEP_OUTPUT', os.path.join(os.environ['OUT'], 'sweep.jsonl') if os.environ.get('OUT') else '')
    if path:
        with open(path, 'w') as f:
            f.writelines(json.dumps(r) + '\n' for r in rows)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
