"""Utilities: benchmark_func (as in Hidet's tutorials), calibrate_batch_norm (random-weight models)."""
import statistics
import time

__all__ = ['benchmark_func', 'calibrate_batch_norm']


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


def calibrate_batch_norm(model, make_input, steps=2):
    """Sets the running statistics of every BatchNorm of ``model`` from ``steps`` forward passes
    on ``make_input()`` (training mode, cumulative averages) and returns the model in eval mode.

    For models with random weights: with the default statistics (mean 0, variance 1) the
    activations of a randomly initialized MobileNet-V2 or EfficientNet-B0 shrink to about 1e-9 at
    the logits, below float16's range, so any output (a wrong one too) compares as equal. After
    calibration every layer's output is normalized, as in a trained model."""
    import torch
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    if norms:
        model.train()
        with torch.no_grad():
            for _ in range(steps):
                model(make_input())
    return model.eval()
