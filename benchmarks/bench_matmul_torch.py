"""f32 matmul TFLOP/s of torch.matmul (cuBLAS) without TF32, for when bench_matmul cannot dlopen
cuBLAS itself. Same shapes as bench_matmul; CUDA-event timing, median of 15 batches."""
import torch
from torch_timing import time_ms

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
          (333, 444, 555), (4095, 4097, 1023), (128, 768, 3072), (2048, 4096, 4096)]




print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, allow_tf32=False")
for m, n, k in SHAPES:
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    ms = time_ms(lambda: torch.matmul(a, b, out=c))
    print(f"f32 {m}x{n}x{k}: {ms:.3f} ms {2 * m * n * k / ms * 1e-9:.2f} TFLOP/s")
