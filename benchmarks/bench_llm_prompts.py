"""Prompts of many lengths (issue 36 item 2): transformers' generate with a static cache of a fixed
length (max_cache_len) over prompts of several lengths, Llama-3.2-1B-shaped with random weights,
under hidet's dynamic_shapes('generic') (each new length compiles the prefill at its shape: no new
kernel, a plan and a warm-up run) and dynamic_shapes('bucket') (once per power-of-two bucket of
lengths; the others of a bucket run on its graph), and eager for the tokens
(docs/torch.md, "Generation with a static cache").

Per strategy and prompt, in the order given, from one generate each (a streamer records when the
prompt goes in and each token comes out, after a device synchronize): the prefill (s, the first
token's time, with whatever it compiles), hidet's compilations so far (all graphs: the first
length's prefill at constant shapes, the symbolic prefill's, the decode step's), the runs on a
bucket's graph compiled for another length, the decode step (ms per token: the median interval
after the first), and whether the greedy tokens equal eager's. Expected: 'bucket'
compiles the symbolic prefill once per bucket (the default prompts 100, 120, 200, 250, 400, 500:
buckets 128 (120; 100 is dynamo's first graph at constant shapes), 256 and 512), 'generic' once per
length; the decode step once either way, and the same ms per token.

Knobs: HIDET_LLM_PROMPTS (100,120,200,250,400,500), HIDET_LLM_NEW_TOKENS (16), HIDET_LLM_MAX_CACHE
(1024), HIDET_LLM_STRATEGIES (generic,bucket), HIDET_LLM_DTYPE (bfloat16).

Without a GPU (the CPU emulator): a tiny Llama (hidden 64, 1 layer) in f32, prompts 5, 7, 12, 13,
3 new tokens; the exit code says whether hidet's tokens equal eager's and 'bucket' compiled the
symbolic prefill twice (buckets 8 and 16). Its timings mean nothing."""
import os
import statistics
import sys
import time

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_llm import Clock  # noqa: E402  (the prompt-then-tokens timer)

GPU = torch.cuda.is_available()
DEVICE = 'cuda' if GPU else 'cpu'


def env_list(name, default):
    return [s.strip() for s in os.environ.get(name, default).split(',') if s.strip()]


def sync():
    if GPU:
        torch.cuda.synchronize()


def make_model(dtype):
    if GPU:
        cfg = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                   num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True,
                   rope_theta=500000.0, max_position_embeddings=131072, rms_norm_eps=1e-5)
    else:
        cfg = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, vocab_size=128, tie_word_embeddings=False,
                   max_position_embeddings=64, initializer_range=0.2)
    config = transformers.LlamaConfig(bos_token_id=0, eos_token_id=None, pad_token_id=0, **cfg)
    torch.manual_seed(0)
    with torch.device(DEVICE):
        model = transformers.LlamaForCausalLM(config)
    return model.to(dtype).eval()


def generate(model, ids, new_tokens, max_cache_len, streamer=None):
    """generate in a static cache of max_cache_len positions (one length for every prompt; given as
    past_key_values, which transformers 5.17 and later take)."""
    cache = transformers.StaticCache(config=model.config, max_cache_len=max_cache_len)
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                             past_key_values=cache, disable_compile=True, streamer=streamer)
    sync()
    return out


def main():
    import hidet
    import hidet.torch

    prompts = [int(n) for n in env_list('HIDET_LLM_PROMPTS', '100,120,200,250,400,500' if GPU else '5,7,12,13')]
    new_tokens = int(os.environ.get('HIDET_LLM_NEW_TOKENS', '16' if GPU else '3'))
    max_cache = int(os.environ.get('HIDET_LLM_MAX_CACHE', '1024' if GPU else '24'))
    strategies = env_list('HIDET_LLM_STRATEGIES', 'generic,bucket')
    dtype = getattr(torch, os.environ.get('HIDET_LLM_DTYPE', 'bfloat16' if GPU else 'float32'))
    model = make_model(dtype)
    vocab = model.config.vocab_size
    torch.manual_seed(1)
    inputs = [torch.randint(1, vocab, (1, n), device=DEVICE) for n in prompts]
    eager = [generate(model, ids, new_tokens, max_cache) for ids in inputs]
    eager_forward = model.forward
    ok = True
    print(f'device: {torch.cuda.get_device_name() if GPU else "CPU emulator"}; prompts {prompts}, '
          f'{new_tokens} new tokens, cache of {max_cache}, {dtype}')
    print(f'{"strategy":>8} {"prompt":>6} {"prefill s":>9} {"compiles":>8} {"shared":>6} {"ms/token":>8} {"tokens":>6}')
    for strategy in strategies:
        torch._dynamo.reset()
        hidet.torch.dynamo_config.reset().dynamic_shapes(strategy)
        graphs = []

        def backend(gm, example_inputs, **kw):
            compiled = hidet.torch.hidet_backend(gm, example_inputs, **kw)
            graphs.append(compiled)
            return compiled

        model.forward = torch.compile(eager_forward, backend=backend)
        intervals = []
        for ids, want in zip(inputs, eager):
            clock = Clock()
            got = generate(model, ids, new_tokens, max_cache, clock)
            prefill = clock.times[1] - clock.times[0]  # the prompt in, the first token out
            # The decode step: the median interval after the first (which may compile or capture).
            per_token = statistics.median(b - a for a, b in zip(clock.times[2:], clock.times[3:])) * 1e3 \
                if len(clock.times) > 3 else float('nan')
            intervals.append(per_token)
            same = torch.equal(got, want)
            ok = ok and (same or GPU)  # bf16 on a GPU: ties may differ; the emulator's f32 must match
            compiles = sum(g.num_compilations for g in graphs)
            shared = sum(g.num_shared_runs for g in graphs)
            print(f'{strategy:>8} {ids.shape[1]:>6} {prefill:>9.3f} {compiles:>8} {shared:>6} {per_token:>8.3f} '
                  f'{"same" if same else "differ":>6}', flush=True)
        symbolic = [g for g in graphs if g.num_traces and g.symbolic_entries]
        print(f'{strategy:>8}: {len(graphs)} dynamo graphs; symbolic prefill compiled '
              f'{[g.num_compilations for g in symbolic]}; median decode {statistics.median(intervals):.3f} ms/token')
        if not GPU and strategy == 'bucket':
            ok = ok and [g.num_compilations for g in symbolic] == [2]
    model.forward = eager_forward
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
