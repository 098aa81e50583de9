"""Where hidet's logits leave eager's in a Llama-shaped model (bench_llm.py's configs): the prefill,
then decode steps fed the same tokens (eager's greedy ones) in both, each compared by the largest
logit difference relative to the largest logit, the top-1 agreement, and eager's top-2 margin
where they disagree (a margin within the difference is rounding; one far past it is a bug).

  PYTHONPATH=build/python python3 benchmarks/check_llm_logits.py

Knobs: HIDET_LLM_MODELS (regex over '1b', '8b'), HIDET_LLM_LAYERS (2: the first layers only; 0 all),
HIDET_LLM_BATCHES (1,8,32: compiled in this order, as bench_llm.py does, so that batch 8 and 32
run the graph traced over a symbolic batch), HIDET_LLM_DTYPE (float16), HIDET_LLM_PROMPT (64),
HIDET_LLM_STEPS (4), HIDET_LLM_BACKEND (hidet or hidet-int8). To bisect, run it again with one of
hidet's decode paths off: HIDET_ATTENTION_DECODE=0 (the decode attention kernel),
HIDET_MATMUL_FEW_ROWS=0 (the few-rows products: matmul_gemv for up to 8 rows, mma.sync with split-k
for 9 to 64), HIDET_GRAPH_RULES_OFF=attention_repeated_kv (K/V read unrepeated). Without a GPU: the
tiny model on the emulator in float32."""
import importlib.util
import os
import pathlib
import re
import sys

import torch

spec = importlib.util.spec_from_file_location('bench_llm', pathlib.Path(__file__).with_name('bench_llm.py'))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def forward(model, ids, cache, start):
    """Logits of the last position of `ids` fed at cache positions start.. (f32)."""
    pos = torch.arange(start, start + ids.shape[1], device=ids.device)
    with torch.no_grad():
        out = model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)
    return out.logits[:, -1].float()


def compare(name, want, got):
    scale = want.abs().max().item()
    diff = (got - want).abs().max().item() / max(scale, 1e-30)
    top_w, top_g = want.argmax(-1), got.argmax(-1)
    agree = (top_w == top_g).float().mean().item()
    worst_margin = ''
    if agree < 1:
        two = want.topk(2, -1).values
        bad = top_w != top_g
        margin = ((two[:, 0] - two[:, 1])[bad] / scale).max().item()
        worst_margin = f', eager top-2 margin where they differ up to {margin:.2e} (relative)'
    print(f'  {name}: max |diff| / max |logit| = {diff:.2e}, top-1 agreement {agree:.0%}{worst_margin}', flush=True)
    return diff


def main():
    gpu = torch.cuda.is_available()
    names = [m for m in ('1b', '8b') if re.search(os.environ.get('HIDET_LLM_MODELS', '.'), m)] if gpu else ['tiny']
    layers = int(os.environ.get('HIDET_LLM_LAYERS', '2'))
    batches = [int(b) for b in bench.env_list('HIDET_LLM_BATCHES', '1,8,32' if gpu else '1,3')]
    dtype = getattr(torch, os.environ.get('HIDET_LLM_DTYPE', 'float16' if gpu else 'float32'))
    prompt = int(os.environ.get('HIDET_LLM_PROMPT', '64' if gpu else '6'))
    steps = int(os.environ.get('HIDET_LLM_STEPS', '4' if gpu else '2'))
    backend = os.environ.get('HIDET_LLM_BACKEND', 'hidet')
    for name in names:
        if layers:
            bench.MODELS[name] = dict(bench.MODELS[name], num_hidden_layers=layers)
        torch.manual_seed(0)
        model = bench.make_model(name, dtype)
        print(f'{name} ({model.config.num_hidden_layers} layers), {dtype}, prompt {prompt}, {backend}', flush=True)
        eager_forward = model.forward
        counter = bench.Counter()
        bench.compile_forward(model, backend, counter)
        compiled_forward = model.forward
        for b in batches:
            torch.manual_seed(b)
            ids = torch.randint(1, model.config.vocab_size, (b, prompt), device=bench.DEVICE)
            length = prompt + steps + 1
            caches = [bench.static_cache(model, b, length) for _ in range(2)]
            for c in caches:
                c.reset()
            print(f' batch {b}:', flush=True)
            model.forward = eager_forward
            want = forward(model, ids, caches[0], 0)
            model.forward = compiled_forward
            got = forward(model, ids, caches[1], 0)
            compare('prefill', want, got)
            for s in range(steps):
                tok = want.argmax(-1, keepdim=True)  # eager's token, fed to both
                model.forward = eager_forward
                want = forward(model, tok, caches[0], prompt + s)
                model.forward = compiled_forward
                got = forward(model, tok, caches[1], prompt + s)
                compare(f'decode step {s + 1}', want, got)
        model.forward = eager_forward
    return 0


if __name__ == '__main__':
    sys.exit(main())
