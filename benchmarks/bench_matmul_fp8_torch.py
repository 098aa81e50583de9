"""FP8 matmul of torch._scaled_mm (cuBLASLt's FP8 GEMM): c = scale_a * scale_b * (a @ b^T) for
a: [m, k] and b: [n, k] in float8_e4m3fn with per-tensor f32 scales, bf16 (and f16, f32) output;
the same shapes and timing method as bench_matmul_fp8 (hidet's kernel), whose numbers it is
compared with in the same scripts/gpu-check run. CUDA-event timing, median of 15 batches.
Each product is timed twice: with torch's default (use_fast_accum=False: cuBLASLt adds the tensor
cores' partial sums into f32 every few k steps, more accurate and slower) and with
use_fast_accum=True (the tensor cores' own accumulator for the whole k loop, as hidet's kernel
does). The error column is the max |c - ref| / max |ref| against an f32 product of the fp8
values."""
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
        ref = (a.double() @ b.double().t()) * 0.625
        for fast in (False, True):
            mode = 'fast_accum' if fast else 'default'
            def run():
                return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=out, use_fast_accum=fast)
            try:
                got = run()
            except Exception as e:  # an fp8 shape or dtype this torch/cuBLASLt does not serve
                print(f"e4m3->{name} {m}x{n}x{k} {mode}: not served ({type(e).__name__}: {str(e).splitlines()[0]})")
                continue
            err = ((got.double() - ref).abs().max() / ref.abs().max()).item()
            ms = time_ms(run)
            print(f"e4m3->{name} {m}x{n}x{k} {mode}: {ms:.3f} ms {2 * m * n * k / ms * 1e-9:.1f} TFLOP/s "
                  f"(max err {err:.1e})")
