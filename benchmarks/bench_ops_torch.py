"""PyTorch timings of the operators in bench_ops.cpp, printed in the same table format."""
import os
import torch

small = os.environ.get("HIDET_BENCH_SMALL") is not None
n = 256 if small else 8192
iters = 1 if small else 20
x = torch.randn(n, n, device="cuda")
row = torch.randn(n, device="cuda")
w = torch.ones(n, device="cuda")
dst = torch.empty_like(x)
nbytes = n * n * 4


def time_us(f):
    f()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        f()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / iters


copy_us = time_us(lambda: dst.copy_(x))
copy_gbs = 2 * nbytes / copy_us / 1e3
print(f"{'op':<24} {'shape':<14} {'time_us':>10} {'GB/s':>10} {'vs_copy':>8}")


def row_out(op, moved, us):
    gbs = moved / us / 1e3
    print(f"{op:<24} {f'{n}x{n}':<14} {us:>10.1f} {gbs:>10.1f} {gbs / copy_gbs:>8.2f}")


row_out("copy", 2 * nbytes, copy_us)
row_out("add_broadcast_row", 2 * nbytes, time_us(lambda: x + row))
row_out("relu", 2 * nbytes, time_us(lambda: torch.relu(x)))
row_out("sum_last_axis", nbytes, time_us(lambda: x.sum(1)))
row_out("sum_first_axis", nbytes, time_us(lambda: x.sum(0)))
row_out("transpose_2d", 2 * nbytes, time_us(lambda: x.t().contiguous()))
row_out("softmax_last_axis", 2 * nbytes, time_us(lambda: torch.softmax(x, -1)))
row_out("layer_norm_last_axis", 2 * nbytes, time_us(lambda: torch.nn.functional.layer_norm(x, (n,), w)))
