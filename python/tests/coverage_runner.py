"""Runs one model of the coverage suite (coverage_models.py) through eager PyTorch and
torch.compile(backend='hidet'), and says what happened: `run_entry(entry, dtype, ...)` returns a
`Result` and never raises for the model's own failures (one model never stops a sweep).

For one row, dtype and device: the model is built with random weights (seed 0), its all-zero
weights (torchvision ViT's head) are made random, its batch norms measured on random inputs
(hidet.utils.calibrate_batch_norm's rule: without it random-weight MobileNets' outputs are
~1e-9; not in mapping-only mode), then run in eval mode and no_grad:
  * eager PyTorch in f32: the reference;
  * eager PyTorch in the dtype: its own error against the reference (f16 rounding);
  * torch.compile(model, backend='hidet') in the dtype, after torch._dynamo.reset(): the first
    call's seconds (dynamo's trace, hidet's mapping, optimization and kernel builds, one run)
    and its error against the reference.
Errors are max|out - ref| / max|ref| on the first output tensor (coverage_models.first_tensor).
Tolerances (python/tests/test_torch_zoo_gpu.py's): f32 1e-2; f16 and bf16 1.5 times eager's own
error plus 1e-2, where eager's own error is the larger of its error on the inputs and on the
inputs perturbed by one rounding step of the dtype (two draws; floating inputs only): a model
that amplifies rounding (LeViT's random weights in f16: 0.09 to 0.16 from such perturbations
alone, on the CPU) would otherwise fail any other order of the same roundings.

Statuses: 'ok' (within tolerance), 'mismatch' (outside it, or NaN, or another shape), 'error'
(torch.compile raised: `error` holds the exception's first lines, `unmapped` the operators hidet
does not map and `nodes` their fx nodes with the model's source lines), 'eager-error' (PyTorch
itself fails on the model, or its output in the dtype is not finite where f32's is: a problem of
the model or the suite, not of hidet), and in mapping-only mode
(`mode='map'`: the fx graphs are mapped to hidet and optimized, no kernel is built or run)
'mapped'."""
import gc
import re
import time
import traceback
from dataclasses import asdict, dataclass, field

import torch

import hidet
import hidet.torch
from coverage_models import first_tensor

__all__ = ['Result', 'run_entry', 'default_device', 'tolerance', 'DTYPES']

DTYPES = {'f32': torch.float32, 'f16': torch.float16, 'bf16': torch.bfloat16}


@dataclass
class Result:
    name: str
    source: str
    family: str
    dtype: str  # 'f32', 'f16', 'bf16'
    variant: str  # 'gpu' (full size) or 'small' (the emulator's inputs and configs)
    mode: str = 'run'  # 'run' or 'map'
    status: str = 'error'
    compile_s: float = None  # the compiled model's first call
    err: float = None  # hidet against eager f32
    eager_err: float = None  # eager in this dtype against eager f32
    eager_spread: float = None  # the same on inputs perturbed by one rounding step (the worst of two)
    tol: float = None
    graphs: int = None  # fx graphs dynamo handed to the backend (1 + graph breaks, roughly)
    graph_breaks: int = None
    error: str = ''  # the exception's first lines (status 'error' or 'eager-error'), or a note
    cause: str = ''  # a short key that groups failures: 'unmapped: torch.xxx', 'mapping torch.yyy: ...'
    unmapped: list = field(default_factory=list)  # operators without a mapping
    nodes: list = field(default_factory=list)  # their fx nodes: "name (File "...", line n, in f)"
    seconds: float = None  # the whole row, building and eager runs included

    def as_dict(self):
        return asdict(self)


def default_device():
    """'cpu' on the emulator (CPU tensors serve hidet's emulated 'cuda' device), else 'cuda'."""
    return 'cpu' if hidet.cuda_emulated() else 'cuda'


def tolerance(dtype, eager_err):
    return 1e-2 if dtype == torch.float32 else 1.5 * eager_err + 1e-2


def run_entry(entry, dtype=torch.float32, device=None, small=False, mode='run'):
    """Runs ``entry`` (a coverage_models.Entry) in ``dtype`` on ``device`` (default_device()) and
    returns a Result (see the top of the file). ``small`` picks the emulator's variant; ``mode``
    'map' only maps the fx graphs (no kernels: fast, for models too slow to run)."""
    device = device or default_device()
    tag = {v: k for k, v in DTYPES.items()}[dtype]
    result = Result(entry.name, entry.source, entry.family, tag, 'small' if small else 'gpu', mode)
    start = time.time()
    model = low = None
    try:
        try:
            model, args, kwargs = _prepare(entry, small, device, calibrate=mode == 'run')
            # The model in the dtype is built afresh with the f32 model's weights and statistics:
            # models that cache tensors in plain attributes on a call (LeViT's and TinyViT's
            # attention biases, ConViT's relative indices; calibration's calls fill them too) would
            # otherwise keep f32 caches that .to(dtype) does not convert.
            low = model if dtype == torch.float32 else _rebuilt(entry, small, model).to(device).eval().to(dtype)
            with torch.no_grad():
                ref = first_tensor(model(*args, **kwargs)).detach().float().clone()
                if dtype == torch.float32:
                    low_args, low_kwargs, eager = args, kwargs, ref
                else:
                    low_args, low_kwargs = _cast((args, kwargs), dtype)
                    eager = first_tensor(low(*low_args, **low_kwargs)).detach().float()
        except Exception as e:  # noqa: BLE001 - reported, not raised: PyTorch fails on the model
            result.status = 'eager-error'
            result.error = _first_lines(e)
            result.cause = f'eager: {type(e).__name__}: {_first_line(e)}'
            return result
        if not torch.isfinite(eager).all() and torch.isfinite(ref).all():
            # The model itself overflows in the dtype (random weights): nothing to compare hidet with.
            result.status = 'eager-error'
            result.error = (f'eager PyTorch in {tag} gives {int((~torch.isfinite(eager)).sum())} non-finite values '
                            '(f32 gives none): the model overflows in this dtype')
            result.cause = f'eager: non-finite output in {tag}'
            return result
        scale = ref.abs().max().item()
        result.eager_err = _error(eager, ref, scale)
        if dtype != torch.float32:
            with torch.no_grad():
                result.eager_spread = _spread(low, low_args, low_kwargs, dtype, ref, scale)
        result.tol = tolerance(dtype, max(result.eager_err, result.eager_spread or 0.0))
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        try:
            t0 = time.time()
            with torch.no_grad():
                if mode == 'map':
                    compiled = torch.compile(low, backend=_mapping_backend, dynamic=False)
                else:
                    compiled = torch.compile(low, backend='hidet')
                out = compiled(*low_args, **low_kwargs)
                got = first_tensor(out).detach().float()
                _synchronize(device)
            result.compile_s = time.time() - t0
        except Exception as e:  # noqa: BLE001 - reported: the suite goes on
            _describe_failure(result, e, low, low_args, low_kwargs)
            return result
        finally:
            _count_graphs(result)
        if mode == 'map':
            result.status = 'mapped'
            return result
        if got.shape != ref.shape:
            result.status = 'mismatch'
            result.error = f'output shape {tuple(got.shape)} != eager {tuple(ref.shape)}'
            result.cause = 'output shape'
            return result
        result.err = _error(got, ref, scale)
        if not torch.isfinite(got).all() and torch.isfinite(ref).all():
            result.status, result.cause = 'mismatch', 'non-finite output'
            result.error = f'{int((~torch.isfinite(got)).sum())} non-finite values in the output'
        elif result.err <= result.tol:
            result.status = 'ok'
        else:
            result.status, result.cause = 'mismatch', 'error above tolerance'
            spread = f', perturbed by one rounding step: {result.eager_spread:.2e}' if result.eager_spread else ''
            result.error = (f'relative error {result.err:.2e} > {result.tol:.1e} '
                            f'(eager {tag}: {result.eager_err:.2e}{spread})')
        if scale < 1e-3:
            result.error = (result.error + '; ' if result.error else '') + f'reference output is ~0 (max {scale:.1e})'
        return result
    finally:
        result.seconds = time.time() - start
        del model, low
        torch._dynamo.reset()
        gc.collect()
        if device == 'cuda':
            torch.cuda.empty_cache()


def _prepare(entry, small, device, calibrate=True):
    torch.manual_seed(0)
    model = entry.make(small)
    _randomize_zero_weights(model)
    model = model.to(device).eval()
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if norms and calibrate:
        # hidet.utils.calibrate_batch_norm's rule (cumulative statistics of two batches), with
        # only the batch norms in training mode: the rest of the model takes its eval path
        # (no auxiliary heads, which fail at small inputs, and no dropout).
        for m in norms:
            m.reset_running_stats()
            m.momentum = None
            m.train()
        cal_args, cal_kwargs = _to(entry.inputs(small, batch=4), device)
        with torch.no_grad():
            for _ in range(2):
                model(*cal_args, **cal_kwargs)
        model.eval()
    args, kwargs = _to(entry.inputs(small), device)
    if device == 'cuda':  # an f32 reference in f32 (cuDNN's and cuBLAS's defaults may be TF32)
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    return model, args, kwargs


def _rebuilt(entry, small, model):
    """A new instance of ``entry``'s model holding ``model``'s state (no attribute caches)."""
    torch.manual_seed(0)
    fresh = entry.make(small)
    fresh.load_state_dict(model.state_dict())
    return fresh


def _randomize_zero_weights(model):
    """All-zero weights (a zero-initialized classifier, as torchvision's ViT head) make every
    output zero, so any compiled output would match: they get random values (matrices and
    convolutions N(0, 1/fan_in), vectors ones)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.is_floating_point() or p.numel() == 0 or not name.endswith('weight') or p.any():
                continue
            if p.ndim >= 2:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in ** 0.5)
            else:
                p.fill_(1.0)


def _to(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    return value


def _cast(value, dtype):
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


def _spread(model, args, kwargs, dtype, ref, scale):
    """The worst error against ``ref`` of ``model`` on its floating inputs perturbed by one
    rounding step of ``dtype`` (relative noise of half an ulp, two draws); None without floating
    inputs."""
    flat = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor) and a.is_floating_point()]
    if not flat:
        return None
    step = torch.finfo(dtype).eps / 2
    worst = 0.0
    for seed in range(2):
        g = torch.Generator().manual_seed(seed)

        def perturb(a):
            if not (isinstance(a, torch.Tensor) and a.is_floating_point()):
                return a
            noise = torch.randn(a.shape, generator=g).to(a.device) * step
            return (a.float() * (1 + noise)).to(a.dtype)

        out = first_tensor(model(*[perturb(a) for a in args], **{k: perturb(v) for k, v in kwargs.items()}))
        err = _error(out.detach().float(), ref, scale)
        if err == err and err != float('inf'):  # NaN or another shape: not a measure of rounding
            worst = max(worst, err)
    return worst


def _error(out, ref, scale):
    if out.shape != ref.shape:
        return float('inf')
    diff = (out - ref).abs().max().item()
    return diff / scale if scale > 0 else diff


def _synchronize(device):
    if device == 'cuda':
        torch.cuda.synchronize()


def _count_graphs(result):
    counters = torch._dynamo.utils.counters
    result.graphs = int(counters['stats'].get('unique_graphs', 0))
    result.graph_breaks = int(sum(counters['graph_break'].values()))


def _mapping_backend(gm, example_inputs):
    """A torch.compile backend that maps the fx graph to hidet as the 'hidet' backend does (the
    same Interpreter and mappings), optimizes the FlowGraph and builds no kernel; PyTorch runs
    the graph."""
    from hidet.torch.interpreter import Interpreter, flatten_outputs
    symbols, _, output = Interpreter(gm).trace(list(example_inputs))
    outs, _ = flatten_outputs(output)
    symbolic = [o for o in outs if o.is_symbolic]
    if symbolic:
        hidet.graph.optimize(hidet.trace_from(symbolic, symbols))
    return gm.forward


def _unmapped_source_lines(model, args, kwargs):
    """{fx node name: the model's source line} of the unmapped nodes, from a mapping-only trace."""
    from hidet.torch.interpreter import UnmappedError, source_line
    lines = {}

    def backend(gm, example_inputs):
        try:
            return _mapping_backend(gm, example_inputs)
        except UnmappedError as e:
            lines.update({n.name: source_line(n) for n in e.nodes})
            return gm.forward

    try:
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(model, backend=backend, dynamic=False)(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the lines are a help; the failure is reported anyway
        pass
    return lines


def _describe_failure(result, exc, model, args, kwargs):
    from hidet.torch.interpreter import UnmappedError, source_line
    result.status = 'error'
    inner = _unwrap(exc)
    unmapped = _find(exc, UnmappedError)
    if unmapped is not None:
        result.unmapped = list(unmapped.names)
        # Dynamo clears the nodes' stack traces once the backend has raised: a second trace,
        # mapping only, reads them while they are there.
        lines = _unmapped_source_lines(model, args, kwargs)
        result.nodes = [f'{n.name} ({lines.get(n.name) or source_line(n) or "no source line"})'
                        for n in unmapped.nodes]
        result.cause = 'unmapped: ' + ', '.join(unmapped.names)
        where = {}  # fx nodes by source line
        for n in unmapped.nodes:
            where.setdefault(lines.get(n.name) or 'no source line', []).append(n.name)
        places = [f'{", ".join(names[:4])}{", ..." if len(names) > 4 else ""} ({line})' for line, names in where.items()]
        result.error = f'unmapped {", ".join(unmapped.names)} at fx nodes ' + '; '.join(places)
        return
    result.error = _first_lines(inner)
    message = str(inner)
    m = re.search(r"hidet: mapping (\S+) of fx node '([^']*)'(?: \((.*?)\))? failed: (.*)", message)
    if m:
        target, node, where, why = m.groups()
        result.nodes = [f'{node} ({where or "no source line"})']
        result.cause = f'mapping {target}: {type(inner).__name__}: {why.strip().splitlines()[0][:160]}'
        return
    result.cause = f'{type(inner).__name__}: {_first_line(inner)[:160]}'
    if not _is_backend_failure(exc):
        # Not raised inside the backend: does dynamo fail with PyTorch's own eager backend too?
        try:
            torch._dynamo.reset()
            with torch.no_grad():
                torch.compile(model, backend='eager')(*args, **kwargs)
        except Exception:  # noqa: BLE001
            result.cause = "dynamo (fails with backend='eager' too): " + result.cause


def _is_backend_failure(exc):
    from torch._dynamo.exc import BackendCompilerFailed
    return _find(exc, BackendCompilerFailed) is not None


def _chain(exc):
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = getattr(exc, 'inner_exception', None) or exc.__cause__ or exc.__context__
    return seen


def _find(exc, cls):
    return next((e for e in _chain(exc) if isinstance(e, cls)), None)


def _unwrap(exc):
    """The exception inside dynamo's wrappers (BackendCompilerFailed, ...): the backend's own,
    which for a failed mapping is the one naming the fx node and the source line."""
    for e in _chain(exc):
        if not type(e).__module__.startswith('torch._dynamo'):
            return e
    return exc


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _first_lines(exc, n=6):
    text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()][:n]
    head = f'{type(exc).__name__}: ' + ('\n'.join(lines) if lines else '')
    if not lines:  # an empty message: where it was raised
        head += ''.join(traceback.format_tb(exc.__traceback__)[-2:])
    return head
