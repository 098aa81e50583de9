"""A Mixtral-8x7B-shaped mixture-of-experts layer (transformers' MixtralSparseMoeBlock: hidden 4096,
8 experts of intermediate 14336, top-2; random weights) at decode (1 and 8 tokens) and prefill (512
tokens): eager PyTorch, torch.compile with inductor, with hidet (ops.grouped_matmul: one grouped
kernel per projection reading offs on the device) and with hidet's previous mapping of the experts'
grouped_mm (every expert's full product and a one-hot choice per row: E times the work).

    python benchmarks/bench_moe.py                      # bf16 and f16, every row
    python benchmarks/bench_moe.py --dtype bf16 --tokens 1 8
    python benchmarks/bench_moe.py --small             # a tiny layer on the CPU emulator: checks the script

In bf16, transformers calls torch.nn.functional.grouped_mm under torch.compile (inductor lowers it
to its grouped GEMM; hidet maps it); in f16 it calls its custom operator grouped_mm_fallback (a
loop over experts with one host synchronization, opaque to inductor; hidet maps it). Per row: the
median milliseconds of a layer call (torch_timing.time_ms, CUDA events, 10 calls per batch) and,
for decode, the expert weights' bytes that the routing needs (the experts that got tokens) over the
time: the bandwidth a GEMV-like path should approach (H100 HBM3: about 3.35 TB/s)."""
import argparse
import sys

import torch

from torch_timing import time_ms

HIDDEN, INTER, EXPERTS, TOP_K = 4096, 14336, 8, 2
DEVICE = 'cuda'


def every_expert_mapping(x, weight, offs):
    """The previous mapping: every expert's product [E, S, N] and a one-hot choice per row."""
    import hidet
    from hidet import ops
    from hidet.torch.mappings import torch_arange
    experts = weight.shape[0]
    rows = torch_arange(x.shape[0])
    expert_of_row = ops.bucketize(rows, ops.cast(offs, 'int64'), True)
    pick = ops.cast(ops.eq(ops.unsqueeze(expert_of_row, 0), ops.unsqueeze(torch_arange(experts), 1)), x.dtype)
    every = ops.matmul(ops.unsqueeze(x, 0), weight)
    return ops.sum(ops.mul(every, ops.unsqueeze(pick, 2)), [0])


class EveryExpert:
    """Maps the experts' grouped products with every_expert_mapping while active."""

    def __enter__(self):
        from hidet.torch.registry import Registry
        self.saved = {}
        targets = ['transformers.grouped_mm_fallback', 'transformers.grouped_mm_fallback.default']
        for name in targets:
            self.saved[('aten', name)] = Registry.registered_aten.get(name)
            Registry.registered_aten[name] = every_expert_mapping
        for f in (getattr(torch.nn.functional, 'grouped_mm', None), getattr(torch, '_grouped_mm', None)):
            if f is not None:
                self.saved[('fn', f)] = Registry.registered_functions.get(f)
                Registry.registered_functions[f] = lambda a, b, *, offs=None, bias=None, out_dtype=None: \
                    every_expert_mapping(a, b, offs)
        return self

    def __exit__(self, *exc):
        from hidet.torch.registry import Registry
        for (kind, key), v in self.saved.items():
            table = Registry.registered_aten if kind == 'aten' else Registry.registered_functions
            table[key] = v


def build_layer(dtype):
    import transformers
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
    cfg = transformers.MixtralConfig(hidden_size=HIDDEN, intermediate_size=INTER, num_local_experts=EXPERTS,
                                     num_experts_per_tok=TOP_K)
    cfg._experts_implementation = 'grouped_mm'
    torch.manual_seed(0)
    with torch.device(DEVICE):
        layer = MixtralSparseMoeBlock(cfg).to(dtype).eval()
    with torch.no_grad():
        for p in layer.parameters():
            p.normal_(0, 0.02)
    return layer


def active_experts(layer, x):
    with torch.no_grad():
        _, _, idx = layer.gate(x.view(-1, HIDDEN))
    return int(idx.unique().numel())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--dtype', nargs='+', default=['bf16', 'f16'], choices=['bf16', 'f16'])
    ap.add_argument('--tokens', nargs='+', type=int, default=[1, 8, 512])
    ap.add_argument('--impls', nargs='+', default=['eager', 'inductor', 'hidet', 'hidet-every-expert'])
    ap.add_argument('--small', action='store_true', help='hidden 64, intermediate 96, on the emulator when no GPU')
    args = ap.parse_args()
    import hidet
    import hidet.torch
    global HIDDEN, INTER, DEVICE
    timer = time_ms
    if args.small:
        HIDDEN, INTER = 64, 96
        if hidet.cuda_emulated():
            DEVICE, timer = 'cpu', _wall_ms
            args.impls = [i for i in args.impls if i != 'inductor']
    gpu = torch.cuda.get_device_name() if DEVICE == 'cuda' else 'the CPU emulator'
    print(f'torch {torch.__version__}, {gpu}; Mixtral-8x7B-shaped MoE layer: hidden {HIDDEN}, '
          f'{EXPERTS} experts x intermediate {INTER}, top-{TOP_K}')
    print(f"{'dtype':<5} {'tokens':>6} {'experts':>7} {'impl':<20} {'ms':>9} {'weights GB/s':>13}")
    for dname in args.dtype:
        dtype = {'bf16': torch.bfloat16, 'f16': torch.float16}[dname]
        layer = build_layer(dtype)
        expert_bytes = (2 * INTER * HIDDEN + HIDDEN * INTER) * torch.finfo(dtype).bits // 8
        for tokens in args.tokens:
            torch.manual_seed(1)
            x = torch.randn(1, tokens, HIDDEN, device=DEVICE, dtype=dtype)
            active = active_experts(layer, x)
            for impl in args.impls:
                torch._dynamo.reset()
                hidet.torch.dynamo_config.reset()
                try:
                    if impl == 'eager':
                        fn = layer
                    elif impl == 'inductor':
                        fn = torch.compile(layer)
                    else:
                        fn = torch.compile(layer, backend='hidet')
                    with torch.no_grad(), (EveryExpert() if impl == 'hidet-every-expert' else _null()):
                        fn(x)  # compile
                        ms = timer(lambda: fn(x), min_calls=10)
                    bw = f'{active * expert_bytes / ms * 1e-6:>13.0f}' if tokens <= 8 else f"{'':>13}"
                    print(f'{dname:<5} {tokens:>6} {active:>7} {impl:<20} {ms:>9.3f} {bw}')
                except Exception as e:  # one implementation's failure never stops the table
                    print(f'{dname:<5} {tokens:>6} {active:>7} {impl:<20} {"failed":>9}  {type(e).__name__}: '
                          f'{str(e).splitlines()[0][:120]}')
                sys.stdout.flush()
        del layer
        if DEVICE == 'cuda':
            torch.cuda.empty_cache()


def _wall_ms(fn, min_calls=1):
    """The median wall time of a few calls (the emulator's --small check: no CUDA events)."""
    import time
    fn()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[1]


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == '__main__':
    main()
