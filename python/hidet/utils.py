"""Utilities: benchmark_func (as in Hidet's tutorials)."""
import statistics
import time

__all__ = ['benchmark_func']


def _synchronize():
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except ImportError:
        pass
    from . import _C
    _C.synchronize()


def benchmark_func(run_func, warmup=1, number=5, repeat=5, median=True):
    """Milliseconds per call of ``run_func``: ``warmup`` calls, then ``repeat`` timings of
    ``number`` calls each (device work synchronized); the median (or the list) of the repeats."""
    for _ in range(warmup):
        run_func()
    _synchronize()
    results = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            run_func()
        _synchronize()
        results.append((time.perf_counter() - start) * 1000.0 / number)
    return statistics.median(results) if median else results
