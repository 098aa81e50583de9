"""Shared by the torch reference scripts (benchmarks/bench_*_torch.py): CUDA-event timing with a
warm-up, batches sized to about 2 ms, and the median batch; the same method as hidet::median_ms."""
import torch


def time_ms(fn, batches=15):
    for _ in range(3):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    per = max(1, min(200, int(2.0 / max(1e-3, s.elapsed_time(e)))))
    times = []
    for _ in range(batches):
        s.record()
        for _ in range(per):
            fn()
        e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / per)
    return sorted(times)[len(times) // 2]
