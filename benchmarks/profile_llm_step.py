"""Where a compiled decode step's time goes (issue 36): the 1B-shaped Llama of bench_llm.py at batch
1 (HIDET_LLM_BATCHES picks others), f16, a static cache; generate once (compiles), then the last
decode call's arguments are replayed on the compiled forward:

1. 'sync ms': the median wall time of a call followed by a device synchronize;
2. 'event ms': CUDA events around back-to-back calls (what bench_llm's 'step ms' measures);
3. 'host ms': the median wall time of a call without synchronizing (the host's dispatch, when the
   GPU keeps up), and 'gpu busy ms': the kernels' summed time per call in torch.profiler;
4. with HIDET_PROFILE_PY=1, cProfile's top functions over 50 calls (the host path's cost);
5. a real generate of 16 tokens: its wall time, the decode calls' CUDA-event time (bench_llm's
   'step ms') and, with HIDET_PROFILE_PY=1, its cProfile.

HIDET_PROFILE_KERNELS=1 adds the kernels by name (count and time per call, from torch.profiler);
HIDET_LLM_GUARD_FILTER as in bench_llm.py.
Backends: HIDET_LLM_BACKENDS (hidet,inductor). GPU only."""
import cProfile
import os
import pstats
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import bench_llm as bl  # noqa: E402
import torch_timing  # noqa: E402


class Keep:
    def __init__(self, model):
        self.forward, self.kwargs = model.forward, None
        model.forward = self

    def __call__(self, *args, **kwargs):
        self.kwargs = (args, kwargs)
        return self.forward(*args, **kwargs)


def main():
    if not bl.GPU:
        print('profile_llm_step: needs a GPU')
        return 0
    name = os.environ.get('HIDET_LLM_MODELS', '1b')
    dtype = getattr(torch, os.environ.get('HIDET_LLM_DTYPE', 'float16'))
    prompt = int(os.environ.get('HIDET_LLM_PROMPT', '512'))
    model = bl.make_model(name, dtype)
    guards = os.environ.get('HIDET_LLM_GUARD_FILTER', '')
    print(f'{torch.cuda.get_device_name()}, {name}, {dtype}, prompt {prompt}'
          f'{", guard filter " + guards if guards else ""}')
    print(f'{"backend":9} {"batch":>5} {"sync ms":>8} {"event ms":>9} {"host ms":>8} {"gpu busy ms":>12} {"kernels":>8}')
    for backend in bl.env_list('HIDET_LLM_BACKENDS', 'hidet,inductor'):
        for batch in [int(b) for b in bl.env_list('HIDET_LLM_BATCHES', '1')]:
            counter = bl.Counter()
            model.forward = model.__class__.forward.__get__(model)
            bl.compile_forward(model, backend, counter)
            keep = Keep(model)
            ids = torch.randint(1, model.config.vocab_size, (batch, prompt), device=bl.DEVICE)
            cache = bl.static_cache(model, batch, prompt + 256)  # room for the replays below
            bl.generate(model, ids, 8, cache)
            args, kwargs = keep.kwargs
            fwd = keep.forward
            with torch.no_grad():
                for _ in range(5):
                    fwd(*args, **kwargs)
                torch.cuda.synchronize()
                sync_times = []
                for _ in range(30):
                    t = time.perf_counter()
                    fwd(*args, **kwargs)
                    torch.cuda.synchronize()
                    sync_times.append((time.perf_counter() - t) * 1e3)
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(30):
                    fwd(*args, **kwargs)
                end.record()
                end.synchronize()
                event_ms = start.elapsed_time(end) / 30
                host = []
                for _ in range(30):
                    torch.cuda.synchronize()
                    t = time.perf_counter()
                    fwd(*args, **kwargs)
                    host.append((time.perf_counter() - t) * 1e3)
                busy, kernels, rows = torch_timing.kernel_profile(lambda: fwd(*args, **kwargs), 10)
                print(f'{backend:9} {batch:5} {statistics.median(sync_times):8.3f} {event_ms:9.3f} '
                      f'{statistics.median(host):8.3f} {busy:12.3f} {kernels:8}', flush=True)
                if os.environ.get('HIDET_PROFILE_KERNELS'):  # per kernel name: count and time per call
                    torch_timing.print_kernel_rows(rows)
                if os.environ.get('HIDET_PROFILE_PY'):
                    pr = cProfile.Profile()
                    pr.enable()
                    for _ in range(50):
                        fwd(*args, **kwargs)
                    torch.cuda.synchronize()
                    pr.disable()
                    pstats.Stats(pr, stream=sys.stdout).sort_stats('tottime').print_stats(25)
                # A real generate: the decode calls timed by CUDA events (bench_llm's 'step ms'),
                # and with HIDET_PROFILE_PY its host path in cProfile.
                rec = bl.Recorder(model)
                rec.timing = True
                t = time.perf_counter()
                bl.generate(model, ids, 16, cache)
                wall = (time.perf_counter() - t) * 1e3
                print(f'{backend:9} {batch:5} generate: 16 tokens in {wall:.1f} ms, step ms (events) {rec.step_ms():.3f}',
                      flush=True)
                if os.environ.get('HIDET_PROFILE_PY'):
                    rec.timing = False
                    pr = cProfile.Profile()
                    pr.enable()
                    bl.generate(model, ids, 16, cache)
                    pr.disable()
                    pstats.Stats(pr, stream=sys.stdout).sort_stats('tottime').print_stats(30)
                model.forward = rec.forward
            del cache, keep
            torch.cuda.empty_cache()
    return 0


if __name__ == '__main__':
    sys.exit(main())
