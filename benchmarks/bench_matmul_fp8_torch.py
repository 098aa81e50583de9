"""FP8 matmul of torch._scaled_mm (cuBLASLt's FP8 GEMM): c = scale_a * scale_b * (a @ b^T) for
a: [m, k] and b: [n, k] in float8_e4m3fn with per-tensor f32 scales, bf16 (and f16, f32) output;
the same shapes and timing method as bench_matmul_fp8 (hidet's kernel), whose numbers it is
compared with in the same scripts/gpu-check run. CUDA-event timing, median of 15 batches."""
import torch
from torch_timing import time_ms

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (2048, 4096, 4096), (128, 768, 3072),
          (4096, 4096, 1024)]
OUTS = {'bf16': torch.bfloat16, 'f16': torch.float16, 'f32': torch.float32}

print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
for m, n, k in SHAPES:
    for name, out in OUTS.items():
        if name != 'bf16' and (m, n, k) != (4096, 4096, 4096):
            continue
        a = torch.randn(m, k, device='cuda').to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device='cuda').to(torch.float8_e4m3fn)
        sa = torch.tensor(0.5, device='cuda')
        sb = torch.tensor(1.25, device='cuda')
        ref = (a.float() @ b.float().t()) * 0.625
        try:
            got = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=out)
        except Exception as e:  # an fp8 shape or dtype this torch/cuBLASLt does not serve
            print(f"e4m3->{name} {m}x{n}x{k}: not served ({type(e).__name__}: {str(e).splitlines()[0]})")
            continue
        err = ((got.float() - ref).abs().max() / ref.abs().max()).item()
        ms = time_ms(lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=out))
        print(f"e4m3->{name} {m}x{n}x{k}: {ms:.3f} ms {2 * m * n * k / ms * 1e-9:.1f} TFLOP/s (max err {err:.1e})")
