"""LLM generation benchmark (issue 36): Llama-3.2-1B- and Llama-3.1-8B-shaped models with random
weights, run with transformers' generate and a static cache (docs/torch.md, "Generation with a
static cache") under eager PyTorch, inductor (mode='reduce-overhead') and hidet in one run.

Per model, backend and batch: the prefill of the prompt (ms, tokens/s), the decode step (ms per
token, tokens/s = batch / ms per token), the compilations after warm-up (dynamo's graphs plus
hidet's compiles; 0 expected), the model bandwidth utilization (MBU: bytes read per decode step /
ms per step / the copy bandwidth measured in this run) and whether the greedy tokens equal eager's.

Timing: one warm-up generate, then one timed generate whose streamer records the time (after a
device synchronize) when the prompt goes in and when each token comes out. Prefill = the first
token's time; decode = the median of the later tokens' intervals (the first decode step, which
may capture a CUDA graph for the new cache, is left out). Those include transformers' generate
loop (logits processing, stopping criteria, the streamer's synchronize). 'step ms' is the model's
forward alone in the same timed generate (the median of CUDA-event intervals around each decode
call: the model's dispatch and GPU time, without generate's work between the calls), and
'stepMBU' the bandwidth utilization of that time: what the compiled model reaches per token.
Every backend gets a StaticCache made before generate (early_initialization), reset in place
before each generate.

Bytes per decode step at batch b: every parameter (the embedding table only where it is tied to the
output projection, else b rows of it, neglected) plus the keys and values read,
2 * layers * kv_heads * head_dim * (prompt + half the new tokens) * b * dtype size. The copy
bandwidth is (bytes read + bytes written) / time of a 1 GiB device copy.

Knobs: HIDET_LLM_MODELS (regex over '1b', '8b'), HIDET_LLM_BATCHES (1,8,32), HIDET_LLM_BACKENDS
(eager,hidet,inductor: eager first for the tokens column, hidet before inductor's long compile when
the budget is short; 'hidet-int8' adds hidet with weight-only int8, whose MBU counts the bytes the
f16 weights would take, so that it compares with the other rows: above 1 is faster than the f16
limit), HIDET_LLM_NEW_TOKENS (64), HIDET_LLM_PROMPT (512), HIDET_LLM_DTYPE (bfloat16),
HIDET_LLM_GUARD_FILTER (a torch.compiler guard filter by name, such as
skip_guard_on_inbuilt_nn_modules_unsafe, given to inductor and hidet alike: dynamo's guards on the
model's modules are checked before every call, on the host, while the GPU waits),
HIDET_LLM_PROFILE (1: hidet prints each compiled graph's per-kernel profile on stderr, the decode
step's included), HIDET_BENCH_TIMEOUT (240 s: nothing new starts after 30 s before it; the rest is
listed as not run). A failing row prints its error and the run goes on.

Without a GPU (the CPU emulator): a tiny Llama (hidden 64, 2 layers) in f32, prompt 8, 3 new
tokens, eager and hidet; the exit code says whether hidet's greedy tokens equal eager's. The
timings printed there mean nothing: they need a GPU."""
import gc
import os
import re
import statistics
import sys
import time
import traceback

import torch
import transformers

START = time.monotonic()
BUDGET = float(os.environ.get('HIDET_BENCH_TIMEOUT', '240'))
GPU = torch.cuda.is_available()
DEVICE = 'cuda' if GPU else 'cpu'

# Llama-3.2-1B and Llama-3.1-8B shapes (their config.json); 'tiny' is the emulator's model.
MODELS = {
    '1b': dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True,
               rope_theta=500000.0, max_position_embeddings=131072, rms_norm_eps=1e-5),
    '8b': dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=False,
               rope_theta=500000.0, max_position_embeddings=131072, rms_norm_eps=1e-5),
    'tiny': dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, vocab_size=128, tie_word_embeddings=False,
                 max_position_embeddings=64, initializer_range=0.2),
}


def env_list(name, default):
    return [s.strip() for s in os.environ.get(name, default).split(',') if s.strip()]


def sync():
    if GPU:
        torch.cuda.synchronize()


def copy_bandwidth_gbs():
    """(bytes read + bytes written) / time of a device copy of 1 GiB (GPU only), the median of 10, in GB/s."""
    n = 1 << 30
    src, dst = torch.empty(n, dtype=torch.uint8, device=DEVICE), torch.empty(n, dtype=torch.uint8, device=DEVICE)
    times = []
    for i in range(13):  # CUDA events: the copy takes under a millisecond on an H100
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end) / 1e3)
    del src, dst
    return 2 * n / statistics.median(times) / 1e9


def make_model(name, dtype):
    config = transformers.LlamaConfig(bos_token_id=0, eos_token_id=None, pad_token_id=0, **MODELS[name])
    with torch.device(DEVICE):
        model = transformers.LlamaForCausalLM._from_config(config, dtype=dtype)
    return model.to(DEVICE).eval()


class Clock(transformers.generation.streamers.BaseStreamer):
    """Records the time of each put (the prompt, then each new token) after a device synchronize."""

    def __init__(self):
        self.times = []

    def put(self, value):
        sync()
        self.times.append(time.perf_counter())

    def end(self):
        pass


def static_cache(model, batch, length):
    """A StaticCache for `batch` sequences of `length` tokens, its layers made now where transformers
    allows it: inductor's CUDA graphs (mode='reduce-overhead') fail on a cache made lazily inside
    the compiled forward (its tensors are then outputs of a graph, overwritten by the next replay).
    Every backend gets the same cache."""
    cfg = model.config
    cache = transformers.StaticCache(config=cfg, max_cache_len=length)
    if hasattr(cache, 'early_initialization'):
        head_dim = getattr(cfg, 'head_dim', None) or cfg.hidden_size // cfg.num_attention_heads
        cache.early_initialization(batch_size=batch, num_heads=cfg.num_key_value_heads, head_dim=head_dim,
                                   dtype=model.dtype, device=model.device)
    return cache


def generate(model, ids, new_tokens, cache, streamer=None):
    cache.reset()  # zeros in place: the tensors keep their addresses
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                              past_key_values=cache, disable_compile=True, streamer=streamer)


class Recorder:
    """Wraps the model's forward (compiled or not); while `timing`, CUDA events on the stream around
    each call measure it alone, without transformers' generate loop between the calls."""

    def __init__(self, model):
        self.forward, self.timing, self.events = model.forward, False, []
        model.forward = self

    def __call__(self, *args, **kwargs):
        if not (self.timing and GPU):
            return self.forward(*args, **kwargs)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = self.forward(*args, **kwargs)
        end.record()
        self.events.append((start, end))
        return out

    def step_ms(self):
        """The median time of the decode calls (the prefill and the first decode step left out)."""
        if not GPU or len(self.events) < 3:
            return float('nan')
        sync()
        return statistics.median(s.elapsed_time(e) for s, e in self.events[2:])


class Counter:
    """dynamo's graphs plus hidet's compiles of every graph the hidet backend made."""

    def __init__(self):
        self.hidet_graphs = []

    def hidet_backend(self, gm, example_inputs, **kw):
        import hidet.torch
        compiled = hidet.torch.hidet_backend(gm, example_inputs, **kw)
        self.hidet_graphs.append(compiled)
        return compiled

    def count(self):
        graphs = torch._dynamo.utils.counters['stats']['unique_graphs']
        return graphs + sum(g.num_compilations for g in self.hidet_graphs)


def guard_filter():
    """HIDET_LLM_GUARD_FILTER: the torch.compiler function (by name) that filters dynamo's guards for
    the compiled backends (inductor and hidet alike), or None (every guard: the plain recipe)."""
    name = os.environ.get('HIDET_LLM_GUARD_FILTER', '')
    if not name:
        return None
    fn = getattr(torch.compiler, name, None)
    if not callable(fn) or 'guard' not in name:
        raise ValueError(f"HIDET_LLM_GUARD_FILTER: '{name}' is not a guard filter of torch.compiler "
                         f"({', '.join(n for n in dir(torch.compiler) if n.endswith('_unsafe'))})")
    return fn


def compile_forward(model, backend, counter):
    if backend == 'eager':
        return
    torch._dynamo.reset()
    guards = guard_filter()
    if backend == 'inductor':
        forward = model.__class__.forward.__get__(model)
        if guards:  # mode='reduce-overhead' is triton.cudagraphs; torch.compile takes a mode or options
            model.forward = torch.compile(forward, options={'triton.cudagraphs': True, 'guard_filter_fn': guards})
        else:
            model.forward = torch.compile(forward, mode='reduce-overhead')
    elif backend in ('hidet', 'hidet-int8'):
        import hidet.torch
        hidet.torch.dynamo_config.reset()
        options = {'weight_only_int8': True} if backend == 'hidet-int8' else {}
        if os.environ.get('HIDET_LLM_PROFILE'):  # each compiled graph's per-kernel profile on stderr
            options['profile'] = True
        if guards:
            options['guard_filter_fn'] = guards  # torch.compile takes it out before the backend
        options = options or None
        model.forward = torch.compile(model.__class__.forward.__get__(model), backend=counter.hidet_backend,
                                      options=options)
    else:
        raise ValueError(f"HIDET_LLM_BACKENDS: unknown backend '{backend}' (eager, inductor, hidet, hidet-int8)")


def run_row(model, backend, batch, prompt, new_tokens, counter, eager_tokens):
    torch.manual_seed(batch)
    ids = torch.randint(1, model.config.vocab_size, (batch, prompt), device=DEVICE)
    cache = static_cache(model, batch, prompt + new_tokens)
    recorder = Recorder(model)
    try:
        generate(model, ids, new_tokens, cache)  # warm-up: compiles, captures
        before = counter.count()
        clock = Clock()
        sync()
        recorder.timing = True
        out = generate(model, ids, new_tokens, cache, clock)
        recorder.timing = False
        step_ms = recorder.step_ms()
        compiles = counter.count() - before
    finally:
        model.forward = recorder.forward
    t = clock.times
    prefill_ms = (t[1] - t[0]) * 1e3
    steps = [(b - a) * 1e3 for a, b in zip(t[2:], t[3:])] or [(t[-1] - t[1]) * 1e3]
    decode_ms = statistics.median(steps)
    tokens = out[:, prompt:].cpu()
    if backend == 'eager':
        eager_tokens[batch] = tokens
        same = '-'
    elif batch in eager_tokens:
        same = 'yes' if torch.equal(tokens, eager_tokens[batch]) else (
            f'{(tokens == eager_tokens[batch]).float().mean().item():.0%} of tokens')
    else:
        same = '?'
    return dict(prefill_ms=prefill_ms, decode_ms=decode_ms, step_ms=step_ms, compiles=compiles, same=same)


def decode_bytes(model, batch, prompt, new_tokens):
    """Bytes read by one decode step at this batch (see the module's docstring)."""
    cfg = model.config
    params = {p.data_ptr(): p.numel() * p.element_size() for p in model.parameters()}
    embed = model.get_input_embeddings().weight
    if not cfg.tie_word_embeddings:
        params.pop(embed.data_ptr(), None)
    size = embed.element_size()
    head_dim = getattr(cfg, 'head_dim', None) or cfg.hidden_size // cfg.num_attention_heads
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * (prompt + new_tokens / 2) * batch * size
    return sum(params.values()) + kv


HEADER = (f"{'model':5} {'backend':8} {'batch':>5} {'prefill ms':>11} {'prefill tok/s':>14} {'ms/token':>9} "
          f"{'tok/s':>9} {'MBU':>6} {'step ms':>8} {'stepMBU':>7} {'compiles':>8}  tokens==eager")


def print_row(name, backend, batch, r=None, error=None, bw=None, nbytes=None, prompt=0):
    head = f'{name:5} {backend:8} {batch:5}'
    if error is not None:
        print(f'{head}  {error}', flush=True)
        return
    mbu = f"{nbytes / (r['decode_ms'] / 1e3) / (bw * 1e9):6.1%}" if bw else f"{'-':>6}"
    step_mbu = f"{nbytes / (r['step_ms'] / 1e3) / (bw * 1e9):7.1%}" if bw else f"{'-':>7}"
    print(f"{head} {r['prefill_ms']:11.2f} {batch * prompt / (r['prefill_ms'] / 1e3):14.0f} {r['decode_ms']:9.3f} "
          f"{batch / (r['decode_ms'] / 1e3):9.1f} {mbu} {r['step_ms']:8.3f} {step_mbu} {r['compiles']:8}  {r['same']}",
          flush=True)


def main():
    guards = guard_filter()  # a bad name fails here, before any model is made
    if GPU:
        names = [m for m in ('1b', '8b') if re.search(os.environ.get('HIDET_LLM_MODELS', '.'), m)]
        batches = [int(b) for b in env_list('HIDET_LLM_BATCHES', '1,8,32')]
        backends = env_list('HIDET_LLM_BACKENDS', 'eager,hidet,inductor')
        new_tokens = int(os.environ.get('HIDET_LLM_NEW_TOKENS', '64'))
        prompt = int(os.environ.get('HIDET_LLM_PROMPT', '512'))
        dtype = getattr(torch, os.environ.get('HIDET_LLM_DTYPE', 'bfloat16'))
        print(f'{torch.cuda.get_device_name()}, torch {torch.__version__}, transformers {transformers.__version__}, '
              f'{dtype}, prompt {prompt}, {new_tokens} new tokens'
              f'{", guard filter " + guards.__name__ if guards else ""}')
        bw = copy_bandwidth_gbs()
        print(f'copy bandwidth (read + write): {bw:.0f} GB/s')
    else:
        names, batches = ['tiny'], [int(b) for b in env_list('HIDET_LLM_BATCHES', '1')]
        backends = env_list('HIDET_LLM_BACKENDS', 'eager,hidet')
        new_tokens, prompt, dtype, bw = 3, 8, torch.float32, None
        print('no GPU: a tiny Llama on the CPU emulator, checking tokens only; the timings need a GPU')
    print(HEADER, flush=True)
    mismatches, errors, not_run = 0, 0, []
    for name in names:
        if time.monotonic() - START > BUDGET - 30:
            not_run += [f'{name} {b} batch {n}' for b in backends for n in batches]
            continue
        try:
            torch.manual_seed(0)
            model = make_model(name, dtype)
        except Exception as e:  # noqa: BLE001: a row with the error, the run goes on
            errors += 1
            print_row(name, 'all', 0, error=f'model: {type(e).__name__}: {e}')
            continue
        eager_tokens = {}
        for backend in backends:
            counter = Counter()
            compiled = False
            for batch in batches:
                if time.monotonic() - START > BUDGET - 30:
                    not_run.append(f'{name} {backend} batch {batch}')
                    continue
                try:
                    if not compiled:
                        compile_forward(model, backend, counter)
                        compiled = True
                    r = run_row(model, backend, batch, prompt, new_tokens, counter, eager_tokens)
                    if r['same'] not in ('yes', '-', '?'):
                        mismatches += 1
                    print_row(name, backend, batch, r, bw=bw, nbytes=decode_bytes(model, batch, prompt, new_tokens),
                              prompt=prompt)
                except Exception as e:  # noqa: BLE001
                    errors += 1
                    msg = str(e).strip().splitlines()
                    print_row(name, backend, batch, error=f"{type(e).__name__}: {msg[0] if msg else ''}")
                    if os.environ.get('HIDET_LLM_TRACEBACK'):
                        traceback.print_exc()
                    if GPU:
                        torch.cuda.empty_cache()
            model.__dict__.pop('forward', None)  # back to the class's forward for the next backend
            torch._dynamo.reset()
        del model
        gc.collect()
        if GPU:
            torch.cuda.empty_cache()
    if not_run:
        print(f'not run (HIDET_BENCH_TIMEOUT={BUDGET:.0f} s): ' + ', '.join(not_run))
    if not GPU:
        print(f'tokens: {mismatches} rows differ from eager, {errors} rows failed')
        return 1 if mismatches or errors else 0
    return 0


if __name__ == '__main__':
    sys.exit(main())
