"""Shared by the torch reference scripts (benchmarks/bench_*_torch.py): CUDA-event timing with a
warm-up, batches sized to about 2 ms, and the median batch; the same method as hidet::median_ms."""
import gc
import time

import torch


def time_ms(fn, batches=15, min_calls=1, warmup_s=0.0):
    """Median over `batches` of the mean time of a batch of back-to-back calls (about 2 ms, at
    least `min_calls`). Whole models pass min_calls=10: with one call per batch the host's time to
    enter the call (dynamo's guards, the Python wrapper: 0.1-0.2 ms) lands between the start
    event and the first kernel and is counted, while back to back it overlaps the GPU's work as it
    does in a model's serving loop. Garbage is collected first: a collection of what compiling left
    behind must not land among the timed calls. `warmup_s`: calls for at least that long first
    (a model near the host's bound at batch 1 measured 0.38 ms after its compile or after half a
    second of calls, 0.52 after 3 s idle, H200, 2026-11-29: the sweep warms each model up)."""
    for _ in range(3):
        fn()
    if warmup_s > 0:
        torch.cuda.synchronize()
        end = time.perf_counter() + warmup_s
        while time.perf_counter() < end:
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


def kernel_profile(fn, calls=10):
    """The GPU kernels of `calls` calls of fn in torch.profiler: (busy ms per call, kernels per call,
    [(name, count per call, us per call, us each)] slowest first)."""
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    per = {}
    for e in events:
        c, t = per.get(e.name, (0, 0.0))
        per[e.name] = (c + 1, t + e.device_time)
    rows = [(k, c // calls, t / calls, t / c) for k, (c, t) in sorted(per.items(), key=lambda kv: -kv[1][1])]
    return sum(e.device_time for e in events) / 1e3 / calls, len(events) // calls, rows


def print_kernel_rows(rows, top=30, indent='  '):
    print(f'{indent}{"kernel":60} {"count":>6} {"us/call":>9} {"us each":>8}')
    for name, count, per_call, each in rows[:top]:
        print(f'{indent}{name[:60]:60} {count:6} {per_call:9.1f} {each:8.2f}')
