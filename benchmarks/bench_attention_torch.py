"""torch.nn.functional.scaled_dot_product_attention on the shapes of bench_attention, for
comparison with hidet's table: the flash-attention backend for f16 and bf16, PyTorch's own choice
for f32 (flash takes no f32; the memory-efficient kernel serves it). CUDA-event timing, median of 15
batches; TFLOP/s = 4 B H Sq Skv D / time, halved for causal."""
import contextlib

import torch
from torch_timing import time_ms
import torch.nn.functional as F

SHAPES = [  # model, B, H, S (keys), D, causal, dtype[, query rows when not S]
    ("BERT-base", 32, 12, 128, 64, False, torch.float16),
    ("BERT-base", 32, 12, 512, 64, False, torch.float16),
    ("Llama-7B", 4, 32, 2048, 128, False, torch.float16),
    ("Llama-7B", 4, 32, 2048, 128, True, torch.float16),
    ("Llama-7B", 1, 32, 2048, 128, True, torch.float16),
    ("Llama-7B", 4, 32, 2048, 128, True, torch.bfloat16),
    ("Llama-7B", 1, 32, 4096, 128, False, torch.float16, 1),  # decoding: one query row
    ("Llama-7B", 8, 32, 4096, 128, False, torch.float16, 1),
    ("BERT-base", 1, 12, 128, 64, False, torch.float32),
    ("BERT-base", 32, 12, 128, 64, False, torch.float32),
    ("BERT-base", 8, 12, 512, 64, False, torch.float32),
    ("GPT-2", 1, 12, 1024, 64, True, torch.float32),
]


def flash_only():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:  # older PyTorch
        return torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False)




print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
      "scaled_dot_product_attention restricted to the flash backend (f16, bf16; f32: torch's choice, TF32 off)")
print(f"{'model':<10} {'dtype':<5} {'shape':<28} {'torch ms':>10} {'TFLOP/s':>9}")
for name, b, h, s, d, causal, dt, *rest in SHAPES:
    sq = rest[0] if rest else s
    q = torch.randn(b, h, sq, d, device="cuda", dtype=dt)
    k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dt) for _ in range(2))
    with flash_only() if dt != torch.float32 else contextlib.nullcontext():
        ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    flops = 4 * b * h * sq * s * d * (0.5 if causal else 1.0)
    dname = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}[dt]
    shape = f"B={b} H={h}" + (f" Sq={sq}" if rest else "") + f" S={s} D={d}" + (" causal" if causal else "")
    print(f"{name:<10} {dname:<5} {shape:<28} {ms:>10.3f} {flops / ms * 1e-9:>9.1f}")
