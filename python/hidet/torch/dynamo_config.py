"""Options of the hidet backend of torch.compile (Hidet's hidet.torch.dynamo_config):

    import hidet
    hidet.torch.dynamo_config.search_space(2)          # tune templates per shape (0, 1, 2)
    hidet.torch.dynamo_config.tuning_budget(60)        # seconds of tuning per compiled graph
    hidet.torch.dynamo_config.use_cuda_graph(True)     # replay each compiled graph as a CUDA graph
    hidet.torch.dynamo_config.use_fp16(True)           # f32 matmuls/convs/attention in f16
    hidet.torch.dynamo_config.print_input_graph(True)  # print each fx graph received, as a table
    hidet.torch.dynamo_config.correctness_report(True) # print the per-operator error table
    hidet.torch.dynamo_config.profile(True)            # print a per-kernel profile of each graph
    hidet.torch.dynamo_config.dynamic_shapes('bucket') # dynamic sizes: 'generic' (default), 'bucket', 'per_shape'

torch.compile's ``mode`` ('default', 'reduce-overhead': CUDA graphs, 'max-autotune': search space 2
and CUDA graphs) and ``options={'search_space': 1, 'use_fp16': True, ...}`` set the same options
for one compiled model.
"""
import copy

__all__ = ['DynamoConfig', 'dynamo_config']


class DynamoConfig:
    def __init__(self):
        self.reset()

    def reset(self):
        self._search_space = 0
        self._tuning_budget = None
        self._use_cuda_graph = True
        self._use_fp16 = False
        self._use_nhwc = True
        self._print_input_graph = False
        self._correctness_report = False
        self._fallback_to_torch = False
        self._verbose = False
        self._profile = False
        self._profile_slowest = 12
        self._use_tensor_core = True
        self._parallel_k = 0
        self._use_fp16_reduction = False
        self._dynamic_shapes = 'generic'
        self._decompose = True
        self._weight_only_int8 = False
        self._save_graphs = ''
        return self

    def search_space(self, level=2):
        """Template tuning per shape: 0 (default configurations, no tuning), 1 or 2."""
        if level not in (0, 1, 2):
            raise ValueError(f'search_space: expected 0, 1 or 2, got {level!r}')
        self._search_space = level
        return self

    def tuning_budget(self, seconds=30.0):
        """At most ``seconds`` of template tuning per compiled graph (search spaces 1 and 2); the
        operators left when it is spent keep their default configuration and are not recorded,
        so a later process with time left tunes them. ``None`` (the default): 30 s at search
        space 1, no limit at 2 (``max-autotune``); ``float('inf')``: no limit."""
        if seconds is not None:
            seconds = float(seconds)
            if not seconds >= 0:
                raise ValueError(f'tuning_budget: expected seconds >= 0 or None, got {seconds!r}')
        self._tuning_budget = seconds
        return self

    def _budget_seconds(self):
        """The tuning budget of one compile in seconds (see tuning_budget)."""
        if self._tuning_budget is not None:
            return self._tuning_budget
        return 30.0 if self._search_space == 1 else float('inf')

    def decompose(self, flag=True):
        """Map operators without a torch-level mapping through PyTorch's decomposition into core
        ATen (on by default; off: such operators are listed in an UnmappedError)."""
        self._decompose = bool(flag)
        return self

    def use_cuda_graph(self, flag=True):
        """Replay each compiled graph as a CUDA graph (one launch per call; on by default)."""
        self._use_cuda_graph = bool(flag)
        return self

    def use_fp16(self, flag=True):
        """Mixed precision: f32 matmuls, convolutions and attention compute in f16 (f32 accumulation)."""
        self._use_fp16 = bool(flag)
        return self

    def use_nhwc(self, flag=True):
        """Run half-precision convolutions channels-last (on by default)."""
        self._use_nhwc = bool(flag)
        return self

    def use_tensor_core(self, flag=True):
        """f16/bf16 matmuls on the tensor cores (default); ``False`` runs them on the CUDA cores."""
        self._use_tensor_core = bool(flag)
        return self

    def weight_only_int8(self, flag=True):
        """Weight-only int8: products by the model's f16/bf16 weights read them as int8 with a
        scale per output feature (quantized when compiling; the activations stay f16/bf16). Half
        the weight bytes of a decoding step; the weights' int8 rounding changes the results."""
        self._weight_only_int8 = bool(flag)
        return self

    def use_fp16_reduction(self, flag=True):
        """f16 matmuls accumulate in f16 (the tensor cores' f16 accumulators; PassContext's
        reduce precision). Other reductions (sums, softmax, norms), convolutions and attention keep
        f32 accumulators."""
        self._use_fp16_reduction = bool(flag)
        return self

    def parallel_k(self, strategy='default'):
        """Split-k of matmuls: 'default' (the templates' heuristics; 'search' is the same, and the
        tuner of search spaces 1 and 2 times split-k candidates), 'disabled' (never split), or an
        integer k (split the reduction in k slices where a template can)."""
        if strategy in ('default', 'search'):
            self._parallel_k = 0
        elif strategy == 'disabled':
            self._parallel_k = 1
        elif isinstance(strategy, int) and not isinstance(strategy, bool) and strategy >= 1:
            self._parallel_k = strategy
        else:
            raise ValueError(f"parallel_k: expected 'default', 'search', 'disabled' or a positive integer, "
                             f"got {strategy!r}")
        return self

    def dynamic_shapes(self, strategy='generic'):
        """What a graph with dynamo's symbolic sizes (torch.compile(dynamic=True), mark_dynamic, or a
        size dynamo saw change) compiles. It is traced once on the symbols, then:

        - 'generic' (default): optimized once on the symbols, and each new shape reuses kernels
          built for symbolic sizes: element-wise, reductions, norms, softmax, layout operators and
          their fusions; products over symbolic rows, attention over symbolic lengths and
          convolutions over a symbolic batch, each with its fused epilogue (a new size builds
          nothing, or a template's new tiling). Not the fusions that need constant shapes (merged
          q/k/v products, a squeeze-and-excite's products).
        - 'bucket': 'generic', and the shapes whose sizes round up to the same powers of two share
          one compiled graph (graph::ShapeDispatch's buckets): the first shape of a bucket
          compiles it, the others of the bucket run on it (their memory from the caching
          allocator, no CUDA graph) until one has run 3 times, which then gets its own compiled
          graph (no new kernel). For prompts of many lengths (generate's prefill): one
          compilation per bucket of lengths.
        - 'per_shape': each new shape specializes the traced graph, optimizes and compiles it:
          every fusion and layout at constant shapes (about a second per new size on BERT-base
          or ResNet-50), the fastest replays where those fusions matter.

        A graph whose mappings need a size's value is traced per shape instead (logged)."""
        if strategy not in ('generic', 'bucket', 'per_shape'):
            raise ValueError(f"dynamic_shapes: expected 'generic', 'bucket' or 'per_shape', got {strategy!r}")
        self._dynamic_shapes = strategy
        return self

    def print_input_graph(self, flag=True):
        """Print each fx graph the backend receives, as a table."""
        self._print_input_graph = bool(flag)
        return self

    def correctness_report(self, flag=True):
        """After compiling, print the error of every operator of the optimized graph against the
        traced graph (Hidet's table) on the example inputs."""
        self._correctness_report = bool(flag)
        return self

    def fallback_to_torch(self, flag=True):
        """Run operators hidet does not map through PyTorch inside the compiled model instead of
        failing (logged once per graph). Off by default."""
        self._fallback_to_torch = bool(flag)
        return self

    def profile(self, flag=True, slowest=12):
        """After compiling, print where the time of each compiled graph goes (hidet.graph.profile:
        each kernel timed alone, summed per operator, and the ``slowest`` slowest nodes) on stderr."""
        self._profile = bool(flag)
        self._profile_slowest = int(slowest)
        return self

    def verbose(self, flag=True):
        """Log the graph passes and compile times."""
        self._verbose = bool(flag)
        return self

    def save_graphs(self, directory=''):
        """Write each graph that hidet optimizes to ``directory`` after every pass (the pass
        instrument of graph::optimize: one text file per pass, the last one the graph that is
        compiled); '' turns it off."""
        self._save_graphs = str(directory or '')
        return self

    def with_options(self, mode=None, options=None):
        """A copy with torch.compile's ``mode`` and ``options`` applied."""
        cfg = copy.copy(self)
        if mode in (None, 'default'):
            pass
        elif mode == 'reduce-overhead':
            cfg._use_cuda_graph = True
        elif mode == 'max-autotune' or mode == 'max-autotune-no-cudagraphs':
            cfg._search_space = 2
            cfg._use_cuda_graph = mode == 'max-autotune'
        else:
            raise ValueError(f"hidet backend: unknown mode {mode!r} (default, reduce-overhead, max-autotune)")
        for key, value in (options or {}).items():
            setter = getattr(DynamoConfig, key, None)
            if key.startswith('_') or key in ('reset', 'with_options') or not callable(setter):
                raise ValueError(f'hidet backend: unknown option {key!r}')
            setter(cfg, value)
        return cfg

    def __repr__(self):
        items = ', '.join(f'{k[1:]}={v!r}' for k, v in vars(self).items())
        return f'DynamoConfig({items})'


dynamo_config = DynamoConfig()
