"""Graph passes and compiled graphs (the C++ graph layer; see docs/graph.md).

    opt = hidet.graph.optimize(graph)                        # the default passes
    with hidet.graph.PassContext() as ctx:                   # Hidet's spelling of the options
        ctx.set_precision('float16')                         # mixed precision for f32 graphs
        opt = hidet.graph.optimize(graph)
    compiled = hidet.graph.compile(opt)                      # kernels built, one planned workspace
"""
from hidet import _C

__all__ = ['PassContext', 'optimize', 'compile', 'load_compiled', 'correctness_report', 'profile']

_contexts = []


class PassContext:
    """Options of :func:`optimize`, set inside a ``with`` block (or passed to it)."""

    def __init__(self):
        self.mixed_precision = None
        self.layout_nhwc = True
        self.verbose = False
        self.save_dir = ''
        self.tensor_cores = True
        self.parallel_k = 0
        self.reduce_precision = None
        self.shape_generic = False
        self.weight_only_int8 = False

    def set_precision(self, dtype=None):
        """Run f32 matmuls, convolutions and attention in ``dtype`` ('float16' or 'bfloat16')."""
        self.mixed_precision = dtype
        return self

    def set_reduce_precision(self, dtype=None):
        """Accumulate f16 matmuls in ``dtype``: 'float16' (the tensor cores' f16 accumulators;
        faster on GPUs whose f16-accumulating tensor cores are, less accurate everywhere) or
        'float32' / None (the default). Other reductions keep f32 accumulators."""
        self.reduce_precision = dtype
        return self

    def set_layout_nhwc(self, on=True):
        """Run half-precision convolutions channels-last (on by default)."""
        self.layout_nhwc = on
        return self

    def set_use_tensor_core(self, on=True):
        """f16/bf16 matmuls on the tensor cores (default), or on the CUDA cores (``False``)."""
        self.tensor_cores = bool(on)
        return self

    def set_parallel_k(self, disabled=False, default=False, search=False, nparts=None):
        """Split-k of matmuls, as Hidet's: ``disabled=True`` never splits, ``nparts=k`` splits the
        reduction in k slices where a template can, ``default=True`` (and ``search=True``: the tuner
        of search spaces 1 and 2 times split-k candidates) leaves it to the templates."""
        if sum([bool(disabled), bool(default), bool(search), nparts is not None]) > 1:
            raise ValueError('set_parallel_k: give one of disabled, default, search or nparts')
        if nparts is not None and (not isinstance(nparts, int) or nparts < 1):
            raise ValueError(f'set_parallel_k: nparts must be a positive integer, got {nparts!r}')
        self.parallel_k = 1 if disabled else (nparts or 0)
        return self

    def set_shape_generic(self, on=True):
        """For graphs with symbolic input extents (``hidet.symbol(['n', 8])``): optimize once on the
        symbols and compile each shape over the same shape-generic kernels, instead of specializing,
        optimizing and compiling every shape (docs/graph.md, "Shape-generic kernels")."""
        self.shape_generic = bool(on)
        return self

    def set_weight_only_int8(self, on=True):
        """Products by constant f16/bf16 weights read them as int8 with per-column scales
        (graph::quantize_weights_int8): half the bytes of a decoding step, int8 rounding of the
        weights."""
        self.weight_only_int8 = bool(on)
        return self

    def save_graph_instrument(self, out_dir):
        """Write the graph after each pass to ``out_dir``."""
        self.save_dir = out_dir
        return self

    def set_verbose(self, on=True):
        """Log each pass on stderr."""
        self.verbose = on
        return self

    def __enter__(self):
        _contexts.append(self)
        return self

    def __exit__(self, *exc):
        _contexts.pop()

    @staticmethod
    def current():
        return _contexts[-1] if _contexts else PassContext()


def optimize(graph, ctx=None):
    """The optimized copy of ``graph`` (the passes of graph::optimize) under ``ctx``, or the
    innermost ``with PassContext()``."""
    ctx = ctx or PassContext.current()
    return _C.optimize(graph, ctx.mixed_precision, ctx.layout_nhwc, ctx.verbose, ctx.save_dir, ctx.tensor_cores,
                       ctx.parallel_k, ctx.reduce_precision, ctx.shape_generic, ctx.weight_only_int8)


def compile(graph):
    """``graph`` compiled: kernels built in parallel, intermediates in one planned workspace."""
    return _C.CompiledGraph(graph)


def load_compiled(path):
    """A compiled graph saved with ``CompiledGraph.save(path)``: it replays the saved kernels (no
    compiler runs). Raises ``ValueError`` for a file of another hidet version or GPU architecture,
    or a truncated or corrupt one."""
    return _C.CompiledGraph.load(str(path))


def correctness_report(graph, optimized, inputs):
    """Hidet's table comparing ``optimized`` with ``graph`` operator by operator, and the largest error."""
    return _C.correctness_report(graph, optimized, list(inputs))


def profile(graph, inputs, slowest=10):
    """Where the time of a run of ``graph`` goes: each node timed alone (CUDA graph replays on a
    GPU), summed per operator, then the ``slowest`` slowest nodes. Returns (table, total ms)."""
    return _C.profile(graph, list(inputs), slowest)
