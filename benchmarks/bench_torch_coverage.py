"""Coverage sweep (issue 40): every model of python/tests/coverage_models.py (every torchvision
classification and segmentation model, timm families, transformers families with tiny configs;
random weights) through torch.compile(backend='hidet') against eager PyTorch, in f16 and f32
(python/tests/coverage_runner.py runs one model). Prints one line per model and dtype as it
goes, then a table, the failures grouped by cause and the summary lines ("N of M compile and
match eager (f16)"), and writes the table as markdown for docs/torch.md ("Coverage").

Each model runs in a worker process that the sweep restarts after a model that crashes it or
runs past the time limit (then reported as 'timeout' or 'crash'), so one model never stops the
sweep. Environment:
  HIDET_COVERAGE_FILTER=<regex>   rows by name: 'torchvision/', 'timm/', 'transformers/(bert|gpt2)$'
  HIDET_COVERAGE_DTYPES=f16,f32   (default f16,f32 on a GPU, f32 on the emulator)
  HIDET_COVERAGE_SMALL=1          the emulator's variants: 32x32 images, hidden 64 (default on the emulator)
  HIDET_COVERAGE_MODE=map         map the fx graphs only (no kernels built or run; fast)
  HIDET_COVERAGE_MODEL_TIMEOUT=s  per model and dtype (default 300)
  HIDET_COVERAGE_BUDGET=s         starts no model after this (default: HIDET_BENCH_TIMEOUT, 240 under
                                  scripts/gpu-check, less 30 s; the rest is listed as not run)
  HIDET_COVERAGE_SHARD=i/n        every n-th row from the i-th (1-based): split a sweep over calls
  HIDET_COVERAGE_WORKERS=n        n sweeps side by side in one call (each a worker process taking every
                                  n-th row): on the 16-core GPU machine 6-8 finish all 270 rows in one
                                  dtype in about 5 minutes; compile seconds are then measured under load
  HIDET_COVERAGE_SKIP_HEAVY=1     on the emulator, map (not run) the rows marked heavy_small
Output: the markdown table to the path given as the first argument, else $HIDET_COVERAGE_OUTPUT,
else $OUT/coverage.md when $OUT is set; the raw results beside it (.jsonl).
`bench_torch_coverage.py --merge out.md a.jsonl b.jsonl ...` makes one table of several runs.

The full sweep takes longer than gpu-check's default limit per benchmark: run it as
  HIDET_COVERAGE_WORKERS=8 HIDET_COVERAGE_DTYPES=f16 HIDET_BENCH_TIMEOUT=590 HIDET_GPU_CHECK_BENCH='^bench_torch_coverage$' HIDET_GPU_CHECK_TESTS=0 scripts/gpu-check
(one dtype per device call), or in shards. The build's python/ folder must be on PYTHONPATH (scripts/gpu-check sets it)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'python', 'tests'))

ORDER = ['ok', 'mismatch', 'error', 'timeout', 'crash', 'eager-error', 'mapped', 'not run']


def env(name, default):
    value = os.environ.get(name)
    return default if value in (None, '') else value


def select_jobs(emulated):
    import coverage_models
    pattern = env('HIDET_COVERAGE_FILTER', '')
    dtypes = env('HIDET_COVERAGE_DTYPES', 'f32' if emulated else 'f16,f32').split(',')
    rows = [e for e in coverage_models.entries() if not pattern or re.search(pattern, e.name)]
    shard = env('HIDET_COVERAGE_SHARD', '')
    if shard:
        i, n = (int(v) for v in shard.split('/'))
        rows = rows[i - 1::n]
    mode = env('HIDET_COVERAGE_MODE', 'run')
    skip_heavy = env('HIDET_COVERAGE_SKIP_HEAVY', '0') == '1'
    return [{'name': e.name, 'dtype': d, 'mode': 'map' if skip_heavy and e.heavy_small else mode}
            for e in rows for d in dtypes]


# ---------------------------------------------------------------------------------------------
# The worker: runs jobs one after another, one JSON line per event in the results file.

def worker(jobs_path, results_path, small):
    import coverage_models
    import coverage_runner
    jobs = json.load(open(jobs_path))
    with open(results_path, 'a') as out:
        for job in jobs:
            out.write(json.dumps({'start': job}) + '\n')
            out.flush()
            entry = coverage_models.entry(job['name'])
            r = coverage_runner.run_entry(entry, coverage_runner.DTYPES[job['dtype']], small=small, mode=job['mode'])
            out.write(json.dumps({'result': r.as_dict()}) + '\n')
            out.flush()


# ---------------------------------------------------------------------------------------------
# The sweep: starts workers, watches the time of each model, restarts after a timeout or crash.

def sweep(jobs, small, model_timeout, budget, log_dir):
    results = []
    pending = list(jobs)
    start = time.time()
    round_ = 0
    while pending:
        if time.time() - start > budget:
            break
        round_ += 1
        jobs_path = os.path.join(log_dir, f'jobs{round_}.json')
        results_path = os.path.join(log_dir, f'results{round_}.jsonl')
        log_path = os.path.join(log_dir, f'worker{round_}.log')
        json.dump(pending, open(jobs_path, 'w'))
        open(results_path, 'w').close()
        with open(log_path, 'w') as log:
            proc = subprocess.Popen([sys.executable, __file__, '--worker', jobs_path, results_path, str(int(small))],
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        seen, current, since = 0, None, time.time()
        while True:
            lines = open(results_path).read().splitlines()
            for line in lines[seen:]:
                if not line.endswith('}'):
                    break  # written in part: read again
                seen += 1
                event = json.loads(line)
                if 'start' in event:
                    current, since = event['start'], time.time()
                else:
                    r = event['result']
                    results.append(r)
                    pending = [j for j in pending if not (j['name'] == r['name'] and j['dtype'] == r['dtype'])]
                    current = None
                    print(line_of(r), flush=True)
            rc = proc.poll()
            if rc is not None and seen == len(open(results_path).read().splitlines()):
                break
            if current is not None and time.time() - since > model_timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = 'timeout'
                break
            if current is None and time.time() - start > budget:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.2)
        if current is not None:  # the model that ran past its time or crashed the worker
            tail = open(log_path, errors='replace').read().strip().splitlines()[-8:]
            status = 'timeout' if rc == 'timeout' else 'crash'
            why = f'ran past {model_timeout:.0f} s' if status == 'timeout' else f'the worker exited with {rc}'
            r = failed_row(current, status, f'{why}; its log ends: ' + ' | '.join(tail)[-600:], small,
                           time.time() - since)
            results.append(r)
            pending = [j for j in pending if j != current]
            print(line_of(r), flush=True)
        elif rc not in (0, None) and pending:  # died between models
            tail = open(log_path, errors='replace').read().strip().splitlines()[-8:]
            print(f'the worker exited with {rc} between models; its log ends:\n  ' + '\n  '.join(tail), flush=True)
            if seen == 0:  # not one model: it cannot start; the rest is listed as not run
                break
    for job in pending:
        results.append(failed_row(job, 'not run', 'the sweep\'s time budget was spent', small, None))
    return results


def failed_row(job, status, error, small, seconds):
    import coverage_models
    e = coverage_models.entry(job['name'])
    return {'name': e.name, 'source': e.source, 'family': e.family, 'dtype': job['dtype'],
            'variant': 'small' if small else 'gpu', 'mode': job['mode'], 'status': status, 'compile_s': None,
            'err': None, 'eager_err': None, 'eager_spread': None, 'tol': None, 'graphs': None, 'graph_breaks': None, 'error': error,
            'cause': status if status != 'timeout' else 'timeout', 'unmapped': [], 'nodes': [], 'seconds': seconds}


# ---------------------------------------------------------------------------------------------
# Reports.

def fmt(value, spec):
    return '-' if value is None else format(value, spec)


def short(text, n=200):
    text = re.sub(r'File "[^"]*?site-packages/', 'File "', text or '')
    text = ' '.join(text.split())
    return text if len(text) <= n else text[:n - 3] + '...'


def line_of(r):
    return (f"{r['name']:45} {r['dtype']:4} {r['status']:9} compile {fmt(r['compile_s'], '7.1f')} s  "
            f"err {fmt(r['err'], '.1e'):>7}  eager {fmt(r['eager_err'], '.1e'):>7}  {short(r['error'], 160)}")


def summary(results):
    lines = []
    for dtype in sorted({r['dtype'] for r in results}, key=lambda d: ['f16', 'f32', 'bf16'].index(d)):
        rows = [r for r in results if r['dtype'] == dtype]
        counts = {s: sum(r['status'] == s for r in rows) for s in ORDER}
        counted = [r for r in rows if r['status'] not in ('eager-error', 'not run')]
        if any(r['mode'] == 'map' for r in rows):
            mapped = counts['mapped'] + counts['ok'] + counts['mismatch']
            lines.append(f'{mapped} of {len(counted)} map to hidet ({dtype}; mapping only for {counts["mapped"]})')
        compiled = counts['ok'] + counts['mismatch']
        ran = [r for r in counted if r['mode'] == 'run']
        if ran:
            lines.append(f'{counts["ok"]} of {len(ran)} compile and match eager ({dtype}); '
                         f'{compiled} of {len(ran)} compile')
        rest = ', '.join(f'{counts[s]} {s}' for s in ORDER if counts[s] and s not in ('ok',))
        if rest:
            lines.append(f'  ({dtype}: {rest})')
    return lines


def causes(results):
    """Failures grouped by cause: an unmapped operator counts once per model that has it."""
    groups = {}
    for r in results:
        if r['status'] in ('ok', 'mapped', 'not run'):
            continue
        keys = [f'unmapped {op}' for op in r['unmapped']] or [r['cause'] or r['status']]
        for key in keys:
            groups.setdefault(key, []).append(f"{r['name']} {r['dtype']}")
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def by_model(results):
    rows = {}
    for r in results:
        rows.setdefault(r['name'], {})[r['dtype']] = r
    return rows


def markdown(results, title):
    dtypes = [d for d in ('f32', 'f16', 'bf16') if any(r['dtype'] == d for r in results)]
    head = ['model', 'source']
    for d in dtypes:
        head += [f'{d}', f'{d} compile s', f'{d} err']
    if 'f16' in dtypes:
        head.append('eager f16 err')
    head += ['graphs', 'error']
    lines = [f'{title}', '', '| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for name, per in by_model(results).items():
        first = next(iter(per.values()))
        cells = [name.split('/', 1)[1], first['source']]
        for d in dtypes:
            r = per.get(d)
            cells += [r['status'] if r else '', fmt(r and r['compile_s'], '.1f'), fmt(r and r['err'], '.1e')]
        if 'f16' in dtypes:
            cells.append(fmt(per.get('f16') and per['f16']['eager_err'], '.1e'))
        graphs = {r['graphs'] for r in per.values() if r['graphs'] is not None}
        cells.append('/'.join(str(g) for g in sorted(graphs)) or '-')
        errors = [f"{d}: {short(per[d]['error'], 160)}" for d in dtypes if d in per and per[d]['error']]
        if len(errors) == 2 and errors[0].split(': ', 1)[1] == errors[1].split(': ', 1)[1]:
            errors = [errors[0].split(': ', 1)[1]]
        cells.append('; '.join(errors).replace('|', '\\|'))
        lines.append('| ' + ' | '.join(cells) + ' |')
    lines += [''] + summary(results) + ['', 'Failures by cause (models):', '']
    for key, models in causes(results):
        lines.append(f'- {short(key, 200)} ({len(models)}): {", ".join(models)}')
    return '\n'.join(lines) + '\n'


def output_path(argv):
    if argv:
        return argv[0]
    if os.environ.get('HIDET_COVERAGE_OUTPUT'):
        return os.environ['HIDET_COVERAGE_OUTPUT']
    if os.environ.get('OUT'):
        return os.path.join(os.environ['OUT'], 'coverage.md')
    return None


def write(results, path, title):
    text = markdown(results, title)
    if path:
        with open(path, 'w') as f:
            f.write(text)
        with open(os.path.splitext(path)[0] + '.jsonl', 'w') as f:
            for r in results:
                f.write(json.dumps(r) + '\n')
    return text


def main(argv):
    if argv and argv[0] == '--worker':
        worker(argv[1], argv[2], argv[3] == '1')
        return 0
    if argv and argv[0] == '--merge':
        results = [json.loads(line) for p in argv[2:] for line in open(p) if line.strip()]
        print(write(results, argv[1], '(merged)'))
        return 0
    import torch
    import hidet
    emulated = hidet.cuda_emulated()
    small = env('HIDET_COVERAGE_SMALL', '1' if emulated else '0') == '1'
    model_timeout = float(env('HIDET_COVERAGE_MODEL_TIMEOUT', '300'))
    budget = float(env('HIDET_COVERAGE_BUDGET', str(float(env('HIDET_BENCH_TIMEOUT', '240')) - 30)))
    jobs = select_jobs(emulated)
    device = 'the CPU emulator' if emulated else torch.cuda.get_device_name()
    git = subprocess.run(['git', '-C', HERE, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
    title = (f'torch {torch.__version__}, {device}, hidet at {git or "?"}; '
             f'{"small (emulator) variants" if small else "GPU variants"}; {len(jobs)} runs')
    print(title, flush=True)
    workers = max(1, int(env('HIDET_COVERAGE_WORKERS', '1')))
    with tempfile.TemporaryDirectory(prefix='hidet-coverage-') as log_dir:
        # Several sweeps side by side (each with its own worker process and every n-th job): the
        # GPU machine's cores build kernels for several models at once.
        parts = [None] * workers

        def run_part(i):
            os.makedirs(os.path.join(log_dir, str(i)))
            parts[i] = sweep(jobs[i::workers], small, model_timeout, budget, os.path.join(log_dir, str(i)))
        threads = [threading.Thread(target=run_part, args=(i,)) for i in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        order = {(j['name'], j['dtype']): k for k, j in enumerate(jobs)}
        results = sorted((r for part in parts for r in part or []),
                         key=lambda r: order.get((r['name'], r['dtype']), len(order)))
    text = write(results, output_path(argv), title)
    print()
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
