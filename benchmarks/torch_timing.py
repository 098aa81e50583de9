"""Shared by the torch reference scripts (benchmarks/bench_*_torch.py): CUDA-event timing with a
warm-up, batches sized to about 2 ms, and the median batch; the same method as hidet::median_ms."""
import gc

import torch


def time_ms(fn, batches=15, min_calls=1):
    """Median over `batches` of the mean time of a batch of back-to-back calls (about 2 ms, at
    least `min_calls`). Whole models pass min_calls=10: with one call per batch the host's time to
    enter the call (dynamo's guards, the Python wrapper: 0.1-0.2 ms) lands between the start
    event and the first kernel and is counted, while back to back it overlaps the GPU's work as it
    does in a model's serving loop. Garbage is collected first: a collection of what compiling left
    behind must not land among the timed calls."""
    for _ in range(3):
        fn()
    gc.collect()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    per = max(min_calls, min(200, int(2.0 / max(1e-3, s.elapsed_time(e)))))
    times = []
    for _ in range(batches):
        s.record()
        for _ in range(per):
            fn()
        e.record(); torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / per)
    return sorted(times)[len(times) // 2]
