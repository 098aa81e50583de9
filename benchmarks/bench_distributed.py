"""Tensor-parallel inference over NCCL (issue 38, item 5), one torchrun per tensor-parallel size:

    torchrun --nproc-per-node 1 benchmarks/bench_distributed.py --out tp.json    # TP = 1
    torchrun --nproc-per-node 2 benchmarks/bench_distributed.py --out tp.json    # TP = 2
    torchrun --nproc-per-node 4 benchmarks/bench_distributed.py --out tp.json    # TP = 4
    python benchmarks/bench_distributed.py --report tp.json                       # the table
    python benchmarks/bench_distributed.py   # all of it: TP = 1, 2, 4 up to the GPU count, then the table

Model: Llama-3.1-8B's shapes (hidden 4096, 32 layers, 32 heads, 8 KV heads, head_dim 128, MLP
14336, vocabulary 128256) with random weights in float16, written here in plain PyTorch with a
static KV cache (passed as inputs, updated in place with index_copy_) and parallelized with
torch.distributed.tensor (parallelize_module: Q, K, V, gate and up ColwiseParallel; O and down
RowwiseParallel; the LM head ColwiseParallel gathered to replicated logits; heads split). The
same DTensor model runs under eager PyTorch, torch.compile(backend='hidet') and
torch.compile(backend='inductor', mode='reduce-overhead'): aot_autograd turns the DTensors into
functional collectives, which hidet runs on its own NCCL communicator inside its CUDA graph.

Rows per run: prefill of 512 tokens at batch 1 (ms), decode at batch 1 and 8 (ms per token: the
median of the timed steps, CUDA events on rank 0, every rank in step), and the all-reduce bus
bandwidth for 1 to 256 MB float16 buffers: hidet's (a compiled graph of one AllReduce node,
replayed as a CUDA graph) against NCCL's own (torch.distributed.all_reduce on the same buffers);
bus bandwidth = bytes / time * 2 (n - 1) / n, as nccl-tests reports it.

Correctness: each run keeps the prefill's last-position logits (the first 512 of them) and greedy
token per backend; --report compares every TP > 1 against TP = 1 (max |difference| over max
|logit|; f16 tolerance 2e-2) and hidet against eager in the same run.

Targets (the issue): decode batch 1, TP = 2 at most 0.6x of TP = 1's ms per token, TP = 4 at
most 0.4x, and at most 0.8x of inductor's at the same TP; hidet's all-reduce at least 0.9x NCCL's
bus bandwidth from 16 MB up.

Knobs: HIDET_TP_CONFIG (8b; 'small' for a quick GPU check of the flow; 'tiny' for the emulator), HIDET_TP_LAYERS (the config's; fewer for a
quick run: the per-token ratios hold), HIDET_TP_BACKENDS (eager,hidet,inductor), HIDET_TP_ROWS
(prefill,decode1,decode8,allreduce), HIDET_TP_SKIP_GUARDS (1: the timed calls skip dynamo's guards, see
skip_guards()), HIDET_TP_PROFILE=1 (each decode row's kernels
per step, NCCL's among them, from torch.profiler on rank 0), HIDET_TP_HOST_PROFILE=1 (where a decode
call's host time goes: cProfile on rank 0), HIDET_TP_DTENSOR=1 (TP = 1 parallelized too: a mesh of one GPU, to
see what DTensors cost), HIDET_TP_STEPS (50 timed decode steps), HIDET_BENCH_TIMEOUT
(540 s: nothing new starts 60 s before it; the rest is listed as not run). A failing row prints
its error and the run goes on. Runs at one TP add up in the --out file (HIDET_TP_BACKENDS=hidet,
then =eager,inductor: each fits a shorter budget). Without a GPU (HIDET_EMULATE, gloo on the CPU) the 'tiny' config
checks the flow; its times mean nothing.
"""
import argparse
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # torch_timing

START = time.monotonic()
BUDGET = float(os.environ.get('HIDET_BENCH_TIMEOUT', '540'))
GPU = False  # set by run(), once this rank sees only its own GPU
DEVICE = 'cpu'

CONFIGS = {
    '8b': dict(hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=128256, prompt=512,
               max_len=640, dtype='float16'),
    'small': dict(hidden=256, layers=2, heads=4, kv_heads=2, head_dim=64, ffn=512, vocab=1024, prompt=64, max_len=96,
                  dtype='float16'),
    'tiny': dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=256, prompt=16, max_len=32,
                 dtype='float32'),
}


def env_list(name, default):
    return [s.strip() for s in os.environ.get(name, default).split(',') if s.strip()]


def sync():
    if GPU:
        torch.cuda.synchronize()


def log(*args):
    if dist.get_rank() == 0:
        print(*args, flush=True)


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        h, d = c['hidden'], c['head_dim']
        self.heads, self.kv_heads, self.head_dim = c['heads'], c['kv_heads'], d
        self.q = torch.nn.Linear(h, c['heads'] * d, bias=False)
        self.k = torch.nn.Linear(h, c['kv_heads'] * d, bias=False)
        self.v = torch.nn.Linear(h, c['kv_heads'] * d, bias=False)
        self.o = torch.nn.Linear(c['heads'] * d, h, bias=False)

    def forward(self, x, cos, sin, mask, pos, k_cache, v_cache):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, -1, self.head_dim).transpose(1, 2)  # the local heads under TP
        k = self.k(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        k_cache.index_copy_(2, pos, k)
        v_cache.index_copy_(2, pos, v)
        rep = q.shape[1] // k_cache.shape[1]
        kk = k_cache[:, :, None].expand(-1, -1, rep, -1, -1).reshape(b, q.shape[1], -1, self.head_dim)
        vv = v_cache[:, :, None].expand(-1, -1, rep, -1, -1).reshape(b, q.shape[1], -1, self.head_dim)
        a = torch.nn.functional.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
        return self.o(a.transpose(1, 2).reshape(b, s, -1))


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Mlp(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate = torch.nn.Linear(c['hidden'], c['ffn'], bias=False)
        self.up = torch.nn.Linear(c['hidden'], c['ffn'], bias=False)
        self.down = torch.nn.Linear(c['ffn'], c['hidden'], bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm1 = torch.nn.RMSNorm(c['hidden'], eps=1e-5)
        self.attn = Attention(c)
        self.norm2 = torch.nn.RMSNorm(c['hidden'], eps=1e-5)
        self.mlp = Mlp(c)

    def forward(self, x, cos, sin, mask, pos, k_cache, v_cache):
        x = x + self.attn(self.norm1(x), cos, sin, mask, pos, k_cache, v_cache)
        return x + self.mlp(self.norm2(x))


class Llama(torch.nn.Module):
    """Llama-style decoder with a static cache given as inputs: forward(tokens [b, s], pos [s],
    k_caches, v_caches) writes positions `pos` of every layer's cache and returns the logits."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = torch.nn.Embedding(c['vocab'], c['hidden'])
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c['layers'])])
        self.norm = torch.nn.RMSNorm(c['hidden'], eps=1e-5)
        self.head = torch.nn.Linear(c['hidden'], c['vocab'], bias=False)
        inv = 1.0 / (500000.0 ** (torch.arange(0, c['head_dim'], 2).float() / c['head_dim']))
        freqs = torch.outer(torch.arange(c['max_len']).float(), inv)
        emb = torch.cat([freqs, freqs], dim=-1)
        self.register_buffer('cos', emb.cos(), persistent=False)
        self.register_buffer('sin', emb.sin(), persistent=False)
        self.register_buffer('slots', torch.arange(c['max_len']), persistent=False)

    def forward(self, tokens, pos, k_caches, v_caches):
        x = self.embed(tokens)
        cos, sin = self.cos[pos].to(x.dtype), self.sin[pos].to(x.dtype)
        visible = self.slots[None, :] <= pos[:, None]  # [s, max_len]: the causal mask over the cache
        mask = torch.zeros(visible.shape, dtype=x.dtype, device=x.device).masked_fill(~visible, float('-inf'))
        for layer, kc, vc in zip(self.layers, k_caches, v_caches):
            x = layer(x, cos, sin, mask, pos, kc, vc)
        return self.head(self.norm(x))


def build_model(c, tp):
    torch.manual_seed(0)  # the same weights on every rank (and at every TP) before sharding
    dtype = getattr(torch, c['dtype'])
    with torch.device(DEVICE):
        model = Llama(c)
    for p in model.parameters():
        p.data.normal_(0, 0.02)
    model = model.to(dtype).eval()
    if tp > 1 or os.environ.get('HIDET_TP_DTENSOR') == '1':
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
        mesh = init_device_mesh(DEVICE, (tp,))
        plan = {'head': ColwiseParallel(output_layouts=Replicate())}
        for i in range(c['layers']):
            plan.update({f'layers.{i}.attn.q': ColwiseParallel(), f'layers.{i}.attn.k': ColwiseParallel(),
                         f'layers.{i}.attn.v': ColwiseParallel(), f'layers.{i}.attn.o': RowwiseParallel(),
                         f'layers.{i}.mlp.gate': ColwiseParallel(), f'layers.{i}.mlp.up': ColwiseParallel(),
                         f'layers.{i}.mlp.down': RowwiseParallel()})
        parallelize_module(model, mesh, plan)
    return model


def caches(c, tp, batch, static):
    """Every layer's K and V cache; `static`: at addresses marked static (as transformers'
    StaticCache does), so that inductor's CUDA graphs take the in-place updates."""
    dtype = getattr(torch, c['dtype'])
    shape = (batch, c['kv_heads'] // tp, c['max_len'], c['head_dim'])
    kc = [torch.zeros(shape, dtype=dtype, device=DEVICE) for _ in range(c['layers'])]
    vc = [torch.zeros(shape, dtype=dtype, device=DEVICE) for _ in range(c['layers'])]
    if static:
        for t in kc + vc:
            torch._dynamo.mark_static_address(t)
    return kc, vc


def compiled(model, backend):
    if backend == 'eager':
        return model
    if backend == 'hidet':
        import hidet.torch  # noqa: F401  (registers the backend)
        return torch.compile(model, backend='hidet', dynamic=False)
    return torch.compile(model, backend='inductor', mode='reduce-overhead' if GPU else None, dynamic=False)


def skip_guards():
    """Whether the timed calls skip dynamo's guards (torch.compiler.set_stance(skip_guard_eval_unsafe=True),
    as a serving loop whose shapes are settled may). A DTensor parameter's guard runs Python: with the 225 of
    the 8B model's shapes (32 layers), the guards and aot_autograd's wrappers cost 1.3 ms a call on one core of
    the CI machine (0.18 ms without DTensors, 0.24 ms with the guards skipped); both compilers pay it.
    HIDET_TP_SKIP_GUARDS=0 keeps them."""
    return os.environ.get('HIDET_TP_SKIP_GUARDS', '1') == '1'


def time_ms(fn, steps):
    """Median ms of `steps` calls (CUDA events on the GPU), every rank in step, and the median ms the
    call itself took on the host (the launch: when it is near the first, the host is the bound)."""
    import contextlib
    stance = torch.compiler.set_stance(skip_guard_eval_unsafe=True) if skip_guards() else contextlib.nullcontext()
    with stance:
        return _time_ms(fn, steps)


def _time_ms(fn, steps):
    times, host = [], []
    for _ in range(steps):
        dist.barrier()
        sync()
        if GPU:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            t0 = time.perf_counter()
            fn()
            host.append((time.perf_counter() - t0) * 1e3)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
            host.append(times[-1])
    times.sort()
    host.sort()
    return times[len(times) // 2], host[len(host) // 2]


def bench_model(c, tp, backend, rows, results):
    model = build_model(c, tp)
    fn = compiled(model, backend)
    g = torch.Generator(device='cpu').manual_seed(1)
    prompt = torch.randint(0, c['vocab'], (1, c['prompt']), generator=g).to(DEVICE)
    steps = int(os.environ.get('HIDET_TP_STEPS', '50' if GPU else '3'))
    if backend == 'eager':  # the reference: DTensors' eager dispatch takes about 30 ms a layer on the host at TP = 2
        steps = min(steps, 5)
    with torch.no_grad():
        kc, vc = caches(c, tp, 1, backend == 'inductor')
        pos = torch.arange(c['prompt'], device=DEVICE)
        t0 = time.monotonic()
        logits = fn(prompt, pos, kc, vc)  # compiles (prefill's shapes)
        sync()
        compile_s = time.monotonic() - t0
        last = logits[0, -1].float()
        results['logits'][backend] = last[:512].cpu().tolist()
        results['token'][backend] = int(last.argmax())
        log(f'  {backend}: prefill compiled and run in {compile_s:.1f} s; greedy token {results["token"][backend]}')
        if 'prefill' in rows:
            ms, host = time_ms(lambda: fn(prompt, pos, kc, vc), max(3, steps // 10))
            results['rows'].append(dict(row=f'prefill {c["prompt"]}, batch 1', backend=backend, ms=ms, host_ms=host))
            log(f'  {backend}: prefill {ms:.3f} ms (host {host:.3f} ms)')
        for batch in (1, 8):
            if f'decode{batch}' not in rows or out_of_time():
                continue
            kc, vc = caches(c, tp, batch, backend == 'inductor')
            tokens = torch.randint(0, c['vocab'], (batch, 1), generator=g).to(DEVICE)
            positions = [torch.tensor([c['prompt'] + i % (c['max_len'] - c['prompt'])], device=DEVICE)
                         for i in range(steps + 3)]
            it = iter(range(10 ** 9))
            step = lambda: fn(tokens, positions[next(it) % len(positions)], kc, vc)  # noqa: E731
            for _ in range(3):
                step()  # compile and warm up (CUDA graphs captured)
            ms, host = time_ms(step, steps)
            results['rows'].append(dict(row=f'decode batch {batch}', backend=backend, ms=ms, host_ms=host))
            log(f'  {backend}: decode batch {batch}: {ms:.3f} ms per token (host {host:.3f} ms)')
            if GPU and os.environ.get('HIDET_TP_PROFILE') == '1':  # where a step's GPU time goes, per kernel
                import torch_timing
                busy, kernels, table = torch_timing.kernel_profile(step, 5)
                results.setdefault('profiles', []).append(dict(row=f'decode batch {batch}', backend=backend,
                                                               busy_ms=busy, kernels=kernels, top=table[:25]))
                log(f'  {backend}: decode batch {batch}: GPU busy {busy:.3f} ms in {kernels} kernels per step')
                if dist.get_rank() == 0:
                    torch_timing.print_kernel_rows(table, top=25, indent='    ')
            if os.environ.get('HIDET_TP_HOST_PROFILE') == '1':  # every rank calls (the collectives)
                host_profile(step, f'{backend} decode batch {batch}')
    del fn, model
    torch._dynamo.reset()


def host_split(step, calls):
    """The host time of a call and of hidet's parts of it, from timers around them (no profiler):
    the whole call, hidet's backend (HidetCompiledModel.__call__) and its C++ run (the CUDA
    graph's replay: input checks and the launch). Empty without hidet."""
    if 'hidet' not in sys.modules:
        return {}
    import hidet
    from hidet.torch import backend
    totals = dict(call=0.0, hidet=0.0, run=0.0)
    clock = time.perf_counter
    patched = []

    def timed(owner, name, key):
        orig = getattr(owner, name)

        def wrapper(*a, _orig=orig, **k):
            t = clock()
            try:
                return _orig(*a, **k)
            finally:
                totals[key] += clock() - t
        setattr(owner, name, wrapper)
        patched.append((owner, name, orig))

    timed(backend.HidetCompiledModel, '__call__', 'hidet')
    for cls in (hidet.CudaGraph, hidet.CompiledGraph, hidet.ShapeDispatch):
        timed(cls, 'run', 'run')
    try:
        for _ in range(calls):
            sync()
            t = clock()
            step()
            totals['call'] += clock() - t
        sync()
    finally:
        for owner, name, orig in reversed(patched):
            setattr(owner, name, orig)
    split = {k: v * 1e6 / calls for k, v in totals.items()}
    split['outside hidet'] = split['call'] - split['hidet']
    split['hidet without run'] = split['hidet'] - split['run']
    return split


def host_profile(step, what, calls=20):
    """Where a call's host time goes (cProfile over `calls` calls, the GPU synchronized after each,
    under the timed rows' guard stance; every rank runs them, rank 0 prints): the functions with the
    most time of their own, then the most time in all."""
    import contextlib
    import cProfile
    import pstats
    stance = torch.compiler.set_stance(skip_guard_eval_unsafe=True) if skip_guards() else contextlib.nullcontext()
    with stance:
        split = host_split(step, 200)
    if dist.get_rank() == 0 and split:
        print(f'  host time of {what} (200 calls, no profiler, us per call): ' +
              ', '.join(f'{k} {v:.1f}' for k, v in split.items()), flush=True)
    prof = cProfile.Profile()
    # hidet's compiled runs (C++ behind nanobind, which cProfile does not see as calls of their
    # own) behind Python wrappers for the profile: their own time is the C++ side's
    wrapped = []
    if 'hidet' in sys.modules:
        import hidet
        for cls in (hidet.CudaGraph, hidet.CompiledGraph, hidet.ShapeDispatch):
            orig = cls.run

            def run(self, *a, _orig=orig):
                return _orig(self, *a)
            cls.run = run
            wrapped.append((cls, orig))
    try:
        with stance:
            for _ in range(calls):
                prof.enable()
                step()
                prof.disable()
                sync()
    finally:
        for cls, orig in wrapped:
            cls.run = orig
    if dist.get_rank() != 0:
        return
    # The process's CPUs and threads: a rank whose main thread shares its CPUs with busy threads
    # (NCCL's proxies, a second communicator's) pays for it in every Python call.
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else -1
    threads = len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else -1
    print(f'  host profile of {what}: {calls} calls (cProfile; times are totals over the calls); '
          f'this process may run on {cpus} CPUs and has {threads} threads; "bench_distributed.py:N(run)" is '
          f'hidet\'s compiled run (a CUDA graph\'s launch on the GPU): its own time is the C++ side\'s', flush=True)
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.sort_stats('tottime').print_stats(30)
    stats.sort_stats('cumulative').print_stats(40)
    sys.stdout.flush()


def bench_allreduce(results):
    """hidet's in-graph all-reduce against NCCL's own, bus bandwidth per size."""
    import hidet
    import hidet.distributed as hd
    comm = hd.communicator()
    n = dist.get_world_size()
    sizes = [1 << k for k in range(20, 29)] if GPU else [1 << 12]
    for size in sizes:
        if out_of_time():
            break
        x = torch.randn(size // 2, dtype=torch.float16, device=DEVICE)
        x_h = hidet.from_torch(x)
        graph = hidet.trace_from(hidet.ops.all_reduce(hidet.symbol_like(x_h), comm))
        runner = hidet.CompiledGraph(graph)
        replay = hidet.CudaGraph(runner, [None]) if GPU else None
        stream = torch.cuda.current_stream().cuda_stream if GPU else 0
        hidet_run = (lambda: replay.run([x_h], stream)) if replay else (lambda: runner.run([x_h], stream))
        steps = 20 if GPU else 2
        for _ in range(3):
            hidet_run()
            dist.all_reduce(x)
        t_hidet = time_ms(hidet_run, steps)
        t_nccl = time_ms(lambda: dist.all_reduce(x), steps)
        bus = lambda ms: size / (ms / 1e3) * 2 * (n - 1) / n / 1e9 if n > 1 else float('nan')  # noqa: E731
        results['allreduce'].append(dict(bytes=size, hidet_ms=t_hidet, nccl_ms=t_nccl, hidet_gbs=bus(t_hidet),
                                         nccl_gbs=bus(t_nccl)))
        log(f'  all-reduce {size >> 20} MiB: hidet {t_hidet:.3f} ms ({bus(t_hidet):.1f} GB/s), '
            f'NCCL {t_nccl:.3f} ms ({bus(t_nccl):.1f} GB/s)')


def out_of_time():
    return time.monotonic() - START > BUDGET - 60


def run(out_path):
    global GPU, DEVICE
    import hidet.distributed as hd
    hd.use_local_gpu()  # before CUDA starts: this rank's GPU is the process's cuda:0
    GPU = torch.cuda.is_available()
    DEVICE = 'cuda' if GPU else 'cpu'
    dist.init_process_group('nccl' if GPU else 'gloo')
    if GPU:
        torch.cuda.set_device(0)
    tp = dist.get_world_size()
    name = os.environ.get('HIDET_TP_CONFIG', '8b' if GPU else 'tiny')
    c = dict(CONFIGS[name])
    if 'HIDET_TP_LAYERS' in os.environ:
        c['layers'] = int(os.environ['HIDET_TP_LAYERS'])
    rows = env_list('HIDET_TP_ROWS', 'prefill,decode1,decode8,allreduce')
    results = dict(tp=tp, config=name, layers=c['layers'], skip_guards=skip_guards(), dtensor=tp > 1 or os.environ.get('HIDET_TP_DTENSOR') == '1',
                   gpu=torch.cuda.get_device_name() if GPU else 'emulator',
                   rows=[], allreduce=[], logits={}, token={}, not_run=[], errors=[])
    log(f'bench_distributed: TP={tp}, config {name} ({c["layers"]} layers), {results["gpu"]}'
        f'{", timed calls skip dynamo guards" if skip_guards() else ""}')
    for backend in env_list('HIDET_TP_BACKENDS', 'eager,hidet,inductor'):
        if out_of_time():
            results['not_run'].append(backend)
            continue
        try:
            bench_model(c, tp, backend, rows, results)
        except Exception as e:  # noqa: BLE001 - the row fails, the run goes on
            results['errors'].append(f'{backend}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}')
            log(f'  {backend} FAILED:\n' + traceback.format_exc())
            torch._dynamo.reset()
    if 'allreduce' in rows and tp > 1:
        try:
            bench_allreduce(results)
        except Exception:  # noqa: BLE001
            results['errors'].append('allreduce: ' + traceback.format_exc().splitlines()[-1])
            log('  all-reduce FAILED:\n' + traceback.format_exc())
    if dist.get_rank() == 0 and out_path:
        old = json.load(open(out_path)) if os.path.exists(out_path) else {}
        old[str(tp)] = merge(old.get(str(tp)), results)
        with open(out_path, 'w') as f:
            json.dump(old, f)
        log(f'results for TP={tp} written to {out_path}')
    torch._dynamo.reset()
    if 'hidet.distributed' in sys.modules:
        sys.modules['hidet.distributed'].release_communicators()
    dist.destroy_process_group()
    return results


def merge(old, new):
    """A run's results added to an earlier run's at the same TP (another set of backends or rows):
    the new rows, logits and all-reduce sizes replace the old ones they repeat."""
    if old is None or any(old.get(k) != new[k] for k in ('config', 'layers', 'dtensor', 'skip_guards')):
        return new
    keys = {(r['row'], r['backend']) for r in new['rows']}
    new['rows'] = [r for r in old['rows'] if (r['row'], r['backend']) not in keys] + new['rows']
    new['logits'] = {**old['logits'], **new['logits']}
    new['token'] = {**old['token'], **new['token']}
    new['allreduce'] = new['allreduce'] or old['allreduce']
    return new


def report(path):
    """The table over the TP runs in `path`; returns whether the correctness checks passed."""
    data = {int(k): v for k, v in json.load(open(path)).items()}
    ok = True
    print(f'Tensor-parallel decode and prefill ({next(iter(data.values()))["gpu"]}, ms; lower is better)')
    print(f'{"row":24} {"backend":9} ' + ' '.join(f'{"TP=" + str(t):>9}' for t in sorted(data)) +
          '   ' + ' '.join(f'{"x TP=1 @" + str(t):>10}' for t in sorted(data) if t > 1))
    keys = []
    for t in sorted(data):
        for r in data[t]['rows']:
            if (r['row'], r['backend']) not in keys:
                keys.append((r['row'], r['backend']))
    ms = {(t, r['row'], r['backend']): r['ms'] for t in data for r in data[t]['rows']}
    for row, backend in keys:
        vals = [ms.get((t, row, backend)) for t in sorted(data)]
        base = ms.get((1, row, backend))
        ratios = [f'{ms[(t, row, backend)] / base:10.2f}' if base and (t, row, backend) in ms else f'{"-":>10}'
                  for t in sorted(data) if t > 1]
        print(f'{row:24} {backend:9} ' + ' '.join(f'{v:9.3f}' if v else f'{"-":>9}' for v in vals) + '   ' +
              ' '.join(ratios))
    host = {(t, r['row'], r['backend']): r['host_ms'] for t in data for r in data[t]['rows'] if 'host_ms' in r}
    if host:
        print('host ms per call (returning before the GPU is done; near the time above: the host is the bound)')
        for row, backend in keys:
            print(f'{row:24} {backend:9} ' + ' '.join(f'{host[(t, row, backend)]:9.3f}' if (t, row, backend) in host
                                                      else f'{"-":>9}' for t in sorted(data)))
    for t in sorted(data):
        if data[t].get('dtensor') and t == 1:
            print('TP=1 ran as DTensors on a mesh of one GPU (HIDET_TP_DTENSOR=1)')
        for row, backend in keys:
            if backend == 'hidet' and (t, row, 'inductor') in ms and (t, row, 'hidet') in ms:
                print(f'TP={t} {row}: hidet / inductor = {ms[(t, row, "hidet")] / ms[(t, row, "inductor")]:.2f}')
    print('\nAll-reduce bus bandwidth (GB/s), hidet in a CUDA graph against torch.distributed (NCCL)')
    for t in sorted(data):
        for a in data[t]['allreduce']:
            print(f'TP={t} {a["bytes"] >> 20:4d} MiB: hidet {a["hidet_gbs"]:7.1f}  NCCL {a["nccl_gbs"]:7.1f}  '
                  f'ratio {a["hidet_gbs"] / a["nccl_gbs"]:.2f}')
    print('\nCorrectness (max |logits - reference| / max |reference|, first 512 logits of the last prompt position)')
    ref = data.get(1, {}).get('logits', {})
    for t in sorted(data):
        for backend, logits in data[t]['logits'].items():
            for what, want in (('TP=1 same backend', ref.get(backend)), ('eager same TP', data[t]['logits'].get('eager'))):
                if want is None or (what.startswith('TP=1') and t == 1) or (what.startswith('eager') and backend == 'eager'):
                    continue
                err = max(abs(a - b) for a, b in zip(logits, want)) / max(max(abs(b) for b in want), 1e-6)
                good = err < 2e-2
                ok = ok and good
                print(f'TP={t} {backend:9} vs {what:18}: {err:.2e} {"ok" if good else "FAILED"}')
        for e in data[t]['errors']:
            print(f'TP={t} error: {e}')
        if data[t]['not_run']:
            print(f'TP={t} not run (time budget): {", ".join(data[t]["not_run"])}')
    return ok


def launch(a):
    """Run directly (not under torchrun): one torchrun per TP size, adding to a fresh --out, then the
    report; the exit status is the report's (or a run's failure)."""
    import socket
    import subprocess
    if a.sizes:
        sizes = [int(t) for t in a.sizes.split(',')]
    elif torch.cuda.is_available():
        sizes = [t for t in (1, 2, 4) if t <= torch.cuda.device_count()]
    else:
        sizes = [2]
    if os.path.exists(a.out):
        os.remove(a.out)
    env = dict(os.environ, NCCL_NVLS_ENABLE=os.environ.get('NCCL_NVLS_ENABLE', '0'))
    failed = False
    for i, t in enumerate(sizes):
        # The time left, shared by the sizes still to run (each run's budget: HIDET_BENCH_TIMEOUT).
        env['HIDET_BENCH_TIMEOUT'] = str(max(60, int((BUDGET - (time.monotonic() - START) - 10) / (len(sizes) - i))))
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            port = sock.getsockname()[1]
        cmd = [sys.executable, '-m', 'torch.distributed.run', '--nproc-per-node', str(t), '--master-addr',
               '127.0.0.1', '--master-port', str(port), os.path.abspath(__file__), '--out', a.out]
        print(f'== TP={t}: {" ".join(cmd[1:])}', flush=True)
        failed = subprocess.run(cmd, env=env).returncode != 0 or failed
    if not os.path.exists(a.out):
        print('bench_distributed: no run wrote results')
        return 1
    return 0 if report(a.out) and not failed else 1


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default='bench_distributed.json', help='JSON file the run adds its TP size to')
    ap.add_argument('--report', help='print the table of a JSON file and exit')
    ap.add_argument('--sizes', default=os.environ.get('HIDET_TP_SIZES'),
                    help='without torchrun: the TP sizes to launch (default 1, 2 and 4 up to the GPU count; 2 on '
                         'the emulator), each under torchrun, then the report')
    a = ap.parse_args()
    if a.report:
        sys.exit(0 if report(a.report) else 1)
    if 'RANK' in os.environ:
        run(a.out)
    else:
        sys.exit(launch(a))
