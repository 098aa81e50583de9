"""The hidet backend of torch.compile: ``torch.compile(model, backend='hidet')``.

For each fx graph dynamo captures, the backend checks that every operator has a mapping (or, with
dynamo_config.fallback_to_torch, hands the unmapped ones to PyTorch), and returns a callable
that, for each distinct set of input shapes and dtypes, traces the graph into a hidet FlowGraph,
optimizes it (fusion, layout, mixed precision), compiles it (kernels built in parallel, one
planned workspace) and, with CUDA graphs on, captures it. Calls then hand the inputs over
without copies (DLPack), run on torch's current stream and return torch tensors.

A graph with dynamo's symbolic sizes (dynamic shapes) is traced once on the symbols into a
FlowGraph with symbolic extents and run by a hidet.ShapeDispatch: with
dynamo_config.dynamic_shapes('generic') (the default) the graph is optimized once and each new
shape reuses its kernels built for symbolic sizes; with 'bucket' the shapes of a power-of-two
bucket also share one compiled graph; with 'per_shape' each new shape is specialized, optimized
and compiled (docs/torch.md, "Dynamic shapes"). When its mappings need a size's value,
it is traced per shape as above, and the log says why.
"""
import bisect
import gc
import itertools
import operator
import sys
import time

import torch

import hidet
from .dynamo_config import dynamo_config
from .interpreter import (Interpreter, NotSymbolic, UnmappedError, flatten_outputs, has_symbolic_sizes,
                          is_symbolic_size, output_symbols, size_hint, size_input, to_hidet)
from .registry import Registry

__all__ = ['hidet_backend', 'HidetCompiledModel']

_raw_stream = getattr(torch._C, '_cuda_getCurrentRawStream', None) or \
    (lambda device: torch.cuda.current_stream(device).cuda_stream)


def print_tabular(gm):
    rows = [('opcode', 'name', 'target', 'args', 'kwargs')]
    for n in gm.graph.nodes:
        target = n.target if isinstance(n.target, str) else getattr(n.target, '__name__', str(n.target))
        rows.append((n.op, n.name, str(target), str(n.args), str(n.kwargs)))
    widths = [min(max(len(r[i]) for r in rows), 60) for i in range(5)]
    lines = []
    for k, r in enumerate(rows):
        lines.append('  '.join(c[:60].ljust(w) for c, w in zip(r, widths)).rstrip())
        if k == 0:
            lines.append('  '.join('-' * w for w in widths))
    print('\n'.join(lines))


class _Compiled:
    """One input signature compiled: the graph, and how to run it."""

    def __init__(self, graph, runner, replay, positions, rebuild, symbolic_outputs, constants, dispatch=None,
                 updates=(), sizes_at=()):
        self.graph, self.runner, self.replay = graph, runner, replay
        self.positions, self.rebuild = positions, rebuild
        self.symbolic_outputs, self.constants = symbolic_outputs, constants
        self.dispatch = dispatch  # a hidet.ShapeDispatch: the graph traced on symbolic sizes
        # The argument positions of the graph inputs it updates in place (the compiled graph writes
        # them where they live; an argument hidet got a copy of is copied back).
        self.updates = list(updates)
        self.captured_at = ()  # the addresses of those arguments that the CUDA graph replay was captured at
        self.strategy = None  # its dynamo_config.dynamic_shapes: 'generic', 'bucket' or 'per_shape'
        self.sizes = []  # the symbols of the sizes it returns (evaluated per call)
        self.tensor_positions = [i for i in positions if i not in sizes_at]  # the tensor arguments among them
        # The last call's record (_LastCall): a tensor that comes back unchanged (a model's cache,
        # call after call) keeps its view (a 1B Llama's decode step gives 48 such tensors; a DLPack
        # view each cost about 10 us on the host).
        self.last = None
        self.pick_tensors = _picker(self.tensor_positions)
        self.all_tensors = len(self.tensor_positions) == len(positions)
        tensor_set = set(self.tensor_positions)
        self.tensor_slots = [k for k, i in enumerate(positions) if i in tensor_set]  # their graph inputs
        self.size_slots = [(k, i) for k, i in enumerate(positions) if i not in tensor_set]
        self.changed = None  # the tensor arguments (indices into tensor_positions) new at the last call
        self.update_spans = None  # the updated arguments' sorted spans (check_moved)
        self.update_set = frozenset(self.updates)
        self.copies = []  # (argument position, graph input) of the last call's updated copies
        self.returned = []  # (symbolic output, argument position): an input it returns (x.add_(1); return x)
        self.pinned = False  # found by its arguments' shapes and dtypes (compiled per shape): graph_inputs
        self.record = None  # pinned: the tensor arguments of the last call and their addresses (hidet._C.ArgsRecord)
        self.replay_views = None  # (replay, torch views of its outputs): its own buffers, the same every replay


    def graph_inputs(self, args, pinned=False):
        """The graph's inputs for ``args``: the views made on an earlier call for the tensor arguments
        that come back as they were (the same tensor at the same address, shape, strides and dtype);
        size arguments (a graph of symbolic sizes) converted on every call. ``pinned``: the entry
        was found by the arguments' shapes and dtypes (key_of) and dynamo guards their strides (a
        graph compiled per shape), so a tensor is identified by its id and address alone, which
        ``record`` (hidet._C.ArgsRecord) checks in C++ (a decode step's 66 tensors: a few us, where
        the keys below take about 45 on the CI machine's host)."""
        last = self.last
        if pinned:
            if self.record is None:
                self.record = hidet._C.ArgsRecord(self.tensor_positions, True)
            ts, keys = None, None  # the record keeps the objects (their ids stay theirs)
            self.changed = self.record.update(args)  # all of them the first time
            if last is None and len(self.changed) < len(self.tensor_positions):
                self.changed = list(range(len(self.tensor_positions)))  # recorded, but not converted yet
        else:
            ts = self.pick_tensors(args)
            keys = tuple(zip(map(id, ts), map(_data_ptr, ts), map(_shape, ts), map(_strides, ts), map(_dtype, ts)))
            if last is None:
                self.changed = list(range(len(ts)))
            elif keys == last.keys:
                self.changed = []
            else:  # the tensors that are new or moved (check_moved)
                self.changed = list(itertools.compress(range(len(ts)), map(operator.ne, keys, last.keys)))
        if last is not None and not self.changed and not last.copied:  # everything as it was, all views
            tensors, copies = last.inputs, []
        else:
            fresh = last is None
            if fresh:
                count = len(self.tensor_positions)
                last = _LastCall(ts, keys, [None] * count, [False] * count)
                convert = range(count)
            else:  # the new or moved tensors, and those hidet copied (copied again on every call), in place
                last.args, last.keys = ts, keys
                convert = sorted(set(self.changed).union(last.copied)) if last.copied else self.changed
            tensors, shared = last.inputs, last.shared
            copies, flags = [], fresh
            slots, positions, update_set = self.tensor_slots, self.tensor_positions, self.update_set
            try:
                for j in convert:
                    a = args[positions[j]]
                    tensors[j] = to_hidet(a)
                    view = _shared_with_hidet(a)
                    if view != shared[j]:
                        shared[j], flags = view, True
                    if not view and positions[j] in update_set:
                        copies.append((positions[j], slots[j]))  # hidet runs on a copy: written back after the run
            except Exception:
                self.record = self.last = None  # the same arguments again are converted again
                raise
            if flags:
                last.copied = list(itertools.compress(range(len(shared)), map(operator.not_, shared)))
            self.last = last
        self.copies = copies
        if self.all_tensors:
            return tensors  # (the C++ run copies the list)
        inputs = [None] * len(self.positions)
        for j, k in enumerate(self.tensor_slots):
            inputs[k] = tensors[j]
        for k, i in self.size_slots:
            inputs[k] = size_input(args[i])
        return inputs


class _LastCall:
    """What graph_inputs recorded of a call: the tensor arguments (kept, so that their ids stay
    theirs) and what identifies each (id, address, shape, strides, dtype), both None for a pinned
    entry (its ArgsRecord keeps them), their graph inputs, whether each input views its argument,
    and the indices of those that do not (copies)."""
    __slots__ = ('args', 'keys', 'inputs', 'shared', 'copied')

    def __init__(self, args, keys, inputs, shared):
        self.args, self.keys, self.inputs, self.shared = args, keys, inputs, shared
        self.copied = []  # graph_inputs sets it once the flags are known


def _picker(positions):
    """A function of args returning the tuple of args at ``positions`` (operator.itemgetter's loop
    in C; it returns a bare item for one position)."""
    if not positions:
        return lambda args: ()
    if len(positions) == 1:
        i = positions[0]
        return lambda args: (args[i],)
    return operator.itemgetter(*positions)


_data_ptr = torch.Tensor.data_ptr
_strides = torch.Tensor.stride
_shape = operator.attrgetter('shape')
_dtype = operator.attrgetter('dtype')


# The version counters of the parameters and buffers traced so far, by address: a change means
# the weights were written in place (load_state_dict, an update under no_grad), and the constants
# hidet derives from weights and shares among graphs (transposes, merged projections:
# runtime/shared_constants.hpp) are computed again by the next trace.
_static_versions = {}


def _check_static_versions(static):
    changed = False
    for a in static:
        if isinstance(a, torch.Tensor):
            try:
                version = a._version
            except RuntimeError:  # an inference tensor (torch.inference_mode): no version counter
                continue
            key = a.data_ptr()
            changed = changed or _static_versions.get(key, version) != version
            _static_versions[key] = version
    if changed:
        hidet._C.forget_shared_constants()


# The instances of a module (sets of parameters) whose compiled graphs one fx graph keeps; the
# least recently used is dropped past this (its parameters compile again when it comes back).
MAX_INSTANCES = 256


class _Instance:
    """The compiled graphs of one set of parameters and buffers (HidetCompiledModel.instances)."""
    __slots__ = ('static_args', 'cache', 'symbolic_entries')

    def __init__(self, static_args):
        self.static_args = static_args  # kept: their ids stay theirs
        self.cache, self.symbolic_entries = {}, {}


class HidetCompiledModel:
    """The callable handed back to dynamo for one fx graph (see the top of the file)."""

    def __init__(self, gm, config, static_positions=None):
        self.gm = gm
        self.config = config
        self.interpreter = Interpreter(gm, decompose=config._decompose, static_positions=static_positions)
        self.cache = {}
        self.key_positions = None  # the arguments that are not parameters or buffers
        self.key_tensors = None  # whether they are all tensors (key_of's fast path)
        self.pick_keys = None
        self.scalar_positions = None  # the arguments that are Python floats made 0-d tensors
        # Dynamo's dynamic shapes: traced once on the symbols (compile_symbolic) unless that fails.
        self.symbolic = has_symbolic_sizes(gm)
        self.one_shape = not self.symbolic  # dynamo guards the shapes of every call: entry_for
        # The _Compiled of the symbolic trace, per value of the scalar inputs (and partition of the
        # input extents into equal values, once a trace needed them unified: ``unify``).
        self.symbolic_entries = {}
        self.unify = False
        # The parameters and buffers the compiled graphs hold as constants. Dynamo hands another
        # instance of the same module class to this graph with its own parameters (it guards on the
        # class, not on the instance: the layers of a model whose layer has a graph break, BART's
        # encoder, call one graph each): each instance has its own compiled graphs (its own
        # `cache` and `symbolic_entries`), kept per instance in `instances`, the most recently used
        # last, at most MAX_INSTANCES of them.
        self.static_positions = None
        self.pick_static = None
        self.static_record = None  # the static arguments of the last call (hidet._C.ArgsRecord)
        self.static_args = None
        self.instances = {}  # the ids of the static arguments -> _Instance

    def compile_symbolic(self, args, unify=False):
        """The graph traced once on dynamo's symbolic sizes, run by a ShapeDispatch (see the top);
        ``unify``: input extents of equal values traced as one symbol (Interpreter.trace)."""
        cfg = self.config
        t0 = time.time()
        _check_static_versions(self.pick_static(args))
        hidet._C.set_search_space(cfg._search_space)
        hidet._C.set_tuning_budget(cfg._budget_seconds())
        symbols, positions, output = self.interpreter.trace(args, symbolic=True, unify=unify)
        self.log_decomposed()
        outs, rebuild = flatten_outputs(output)
        sizes = output_symbols(output)  # a Python int the graph returns (cumulative_length_int + 1)
        symbolic = [o for o in outs if o.is_symbolic]
        constants = {id(o): o.torch() for o in outs if not o.is_symbolic}
        updates = [(symbols[k], value) for k, value in self.interpreter.updates]
        updated = [positions[k] for k, _ in self.interpreter.updates]
        if not symbolic and not updates:
            entry = _Compiled(None, None, None, positions, rebuild, [], constants)
            entry.sizes = sizes
            return entry
        graph = hidet.trace_from(symbolic, symbols, updates)
        # The size inputs of symbols the graph does not depend on (a sliding-window cache's Python
        # count, which only guards dynamo's branches and is returned plus one) are left out: their
        # values then compile nothing.
        used = set(graph.node_symbols())
        fakes = self.interpreter.fake_values
        keep = [k for k, x in enumerate(symbols)
                if not isinstance(fakes[positions[k]], torch.SymInt) or x.shape[1].symbols[0] in used]
        if len(keep) < len(symbols):
            symbols, positions = [symbols[k] for k in keep], [positions[k] for k in keep]
            graph = hidet.trace_from(symbolic, symbols, updates)
        if not graph.has_symbolic_extents:  # compiled at its constant shapes, for every value of the sizes
            entry = self.compile_graph(graph, args, positions, updated, rebuild, symbolic, constants, t0)
            entry.sizes, entry.returned = sizes, self.returned_inputs(output)
            return entry
        strategy = cfg._dynamic_shapes
        dispatch = hidet.ShapeDispatch(
            graph, mixed_precision='float16' if cfg._use_fp16 else None, layout_nhwc=cfg._use_nhwc,
            verbose=cfg._verbose, tensor_cores=cfg._use_tensor_core, parallel_k=cfg._parallel_k,
            reduce_precision='float16' if cfg._use_fp16_reduction else None,
            shape_generic=strategy in ('generic', 'bucket'), buckets=strategy == 'bucket',
            cuda_graph=cfg._use_cuda_graph and not hidet.cuda_emulated(), weight_only_int8=cfg._weight_only_int8)
        sizes_at = [i for i in positions if isinstance(self.interpreter.fake_values[i], torch.SymInt)]
        entry = _Compiled(graph, None, None, positions, rebuild, symbolic, constants, dispatch, updated, sizes_at)
        entry.strategy, entry.sizes, entry.returned = strategy, sizes, self.returned_inputs(output)
        # Optimizes and compiles now, at the example's sizes, without running (the inputs it updates
        # are updated when dynamo calls the graph; a CUDA graph captures them where they live).
        dispatch.prepare([_graph_input(args[i]) for i in positions])
        inputs = _scratch_inputs(args, positions, updated)
        if cfg._correctness_report or cfg._profile:
            # At the example's sizes: the graph specialized to them, optimized as one shape.
            def specialized():
                fixed = graph.specialize(_symbol_values(symbols, inputs))
                return fixed, hidet.graph.optimize(fixed, self.pass_context())
            self.diagnose(specialized, inputs)
        if cfg._verbose:
            names = sorted({n for x in symbols for d in x.shape if is_symbolic_size(d) for n in d.symbols})
            kernels = 'generic kernels, a compiled graph per power-of-two bucket' if strategy == 'bucket' else \
                f'{strategy} kernels'
            print(f'hidet: traced a graph of {graph.num_nodes} operators once for all values of '
                  f'{", ".join(names)} ({kernels}); first shape compiled in '
                  f'{time.time() - t0:.2f} s', file=sys.stderr)
        return entry

    def diagnose(self, graphs, inputs):
        """dynamo_config.correctness_report and profile of a compiled graph: ``graphs()`` gives the
        traced and the optimized graph. A report that fails says so and changes nothing else: the
        graph compiles as it would without it (bench_llm's batch-8 graph once fell back to per-shape
        compiles because its profile failed)."""
        cfg = self.config
        try:
            graph, opt = graphs()
            if cfg._correctness_report:
                print(hidet.graph.correctness_report(graph, opt, inputs)[0])
            if cfg._profile:
                print(hidet.graph.profile(opt, inputs, cfg._profile_slowest)[0], file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - a diagnostic only
            what = 'correctness report' if cfg._correctness_report else 'profile'
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            print(f'hidet: the {what} of this graph failed ({reason}); the graph is compiled as usual',
                  file=sys.stderr)

    def log_decomposed(self):
        """With verbose on: which operators went through core ATen in the last trace."""
        done = self.interpreter.decomposed
        if done and self.config._verbose:
            counts = {}
            for _, target in done:
                counts[target] = counts.get(target, 0) + 1
            names = ', '.join(f'{t} ({n})' if n > 1 else t for t, n in counts.items())
            print(f'hidet: mapped through core ATen (no torch-level mapping): {names}', file=sys.stderr)
        done.clear()

    def pass_context(self):
        cfg = self.config
        ctx = hidet.graph.PassContext()
        if cfg._use_fp16:
            ctx.set_precision('float16')
        ctx.set_layout_nhwc(cfg._use_nhwc).set_verbose(cfg._verbose).set_use_tensor_core(cfg._use_tensor_core)
        ctx.parallel_k = cfg._parallel_k
        if cfg._use_fp16_reduction:
            ctx.set_reduce_precision('float16')
        ctx.set_weight_only_int8(cfg._weight_only_int8)
        if cfg._save_graphs:
            ctx.save_graph_instrument(cfg._save_graphs)
        return ctx

    def key_of(self, args):
        # Parameters and buffers (most arguments of a model's graph) keep their shapes: dynamo
        # guards them. Only the other arguments make the key, so a call costs O(inputs).
        if self.key_positions is None:
            self.key_positions = [i for i, a in enumerate(args) if not self.interpreter.is_static(i, a)]
        scalars = self.scalar_positions_of(args)
        if not scalars:
            if self.key_tensors is None:  # all tensors (a model's inputs, its cache): the key in C loops
                self.key_tensors = all(isinstance(args[i], torch.Tensor) for i in self.key_positions)
                self.pick_keys = _picker(self.key_positions)
            if self.key_tensors:
                try:
                    ts = self.pick_keys(args)
                    return ('tensors', tuple(map(_shape, ts)), tuple(map(_dtype, ts)))
                except AttributeError:  # not a tensor where the first call had one
                    pass
        key = []
        for i in self.key_positions:
            a = args[i]
            if i in scalars:
                key.append(('scalar', a.item()))
            else:
                key.append((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else ('value', a))
        return tuple(key)

    def scalar_positions_of(self, args):
        """The positions of the scalar inputs (Interpreter.is_scalar), found on the first call
        (parameters are most of a model's arguments)."""
        if self.scalar_positions is None:
            self.scalar_positions = [i for i, a in enumerate(args) if self.interpreter.is_scalar(a)]
        return self.scalar_positions

    def scalar_key(self, args):
        """The values of the scalar inputs: a symbolic trace's key."""
        return tuple(args[i].item() for i in self.scalar_positions_of(args))

    def compile(self, args):
        cfg = self.config
        t0 = time.time()
        _check_static_versions(self.pick_static(args))
        hidet._C.set_search_space(cfg._search_space)
        hidet._C.set_tuning_budget(cfg._budget_seconds())
        symbols, positions, output = self.interpreter.trace(args)
        self.log_decomposed()
        outs, rebuild = flatten_outputs(output)
        symbolic = [o for o in outs if o.is_symbolic]
        constants = {id(o): o.torch() for o in outs if not o.is_symbolic}
        # The inputs updated in place: the graph's updates, each written where the input lives.
        updates = [(symbols[k], value) for k, value in self.interpreter.updates]
        updated = [positions[k] for k, _ in self.interpreter.updates]
        if not symbolic and not updates:  # nothing depends on the inputs
            return _Compiled(None, None, None, positions, rebuild, [], constants)
        graph = hidet.trace_from(symbolic, symbols, updates)
        entry = self.compile_graph(graph, args, positions, updated, rebuild, symbolic, constants, t0)
        entry.returned = self.returned_inputs(output)
        entry.pinned = True  # its key (key_of) fixes the shapes and dtypes of its tensor arguments
        return entry

    def returned_inputs(self, output):
        """Interpreter.returned_inputs of the last trace; the views of updated inputs it returns as
        copies are said under verbose."""
        returned, views = self.interpreter.returned_inputs(output)
        if views and self.config._verbose:
            print(f'hidet: the graph returns {", ".join(views)}, views of inputs it updates in place, as copies '
                  '(eager PyTorch returns views)', file=sys.stderr)
        return returned

    def compile_graph(self, graph, args, positions, updated, rebuild, symbolic, constants, t0):
        """A traced graph of constant shapes optimized, compiled and (with CUDA graphs) captured."""
        cfg = self.config
        updates = graph.updates
        opt = hidet.graph.optimize(graph, self.pass_context())
        runner = hidet.CompiledGraph(opt)
        replay = None
        if cfg._use_cuda_graph and not hidet.cuda_emulated():
            try:
                replay = _capture(runner, args, positions, updated)
            except hidet.HidetError as e:  # an operator that cannot be captured: run without
                print(f'hidet: CUDA-graph capture failed, this graph runs without CUDA graphs: {e}', file=sys.stderr)
        if cfg._correctness_report or cfg._profile:
            self.diagnose(lambda: (graph, opt), _scratch_inputs(args, positions, updated))
        if cfg._verbose:
            in_place = f'; inputs updated in place: {runner.updates_in_place}, by a copy: {runner.updates_copied}' \
                if updates else ''
            print(f'hidet: compiled a graph of {graph.num_nodes} operators ({opt.num_nodes} after optimization) in '
                  f'{time.time() - t0:.2f} s; {runner.memory_plan()}{in_place}', file=sys.stderr)
        entry = _Compiled(graph, runner, replay, positions, rebuild, symbolic, constants, updates=updated)
        entry.captured_at = _addresses(args, updated)
        return entry

    def same_constants(self, args):
        """Whether ``args`` carry the parameters and buffers of the last call; when they do not,
        ``cache`` and ``symbolic_entries`` become those of the instance that ``args`` carry (its
        compiled graphs hold its parameters as constants), empty for an instance not seen yet."""
        if self.static_positions is None:
            self.static_positions = [i for i, a in enumerate(args) if self.interpreter.is_static(i, a)]
            self.pick_static = _picker(self.static_positions)
            self.static_record = hidet._C.ArgsRecord(self.static_positions)
        if self.static_record.same(args):  # the objects of the last call (a C++ loop over them)
            return True
        static = self.pick_static(args)
        key = tuple(map(id, static))
        instance = self.instances.pop(key, None)  # re-inserted last: the most recently used
        if instance is None or not all(map(operator.is_, static, instance.static_args)):
            instance = _Instance(static)
            if self.instances and self.config._verbose:
                print(f'hidet: this graph is given other parameters (another instance of the module, '
                      f'{len(self.instances) + 1} so far): compiled for them too', file=sys.stderr)
            while len(self.instances) >= MAX_INSTANCES:  # the least recently used is dropped
                del self.instances[next(iter(self.instances))]
        self.instances[key] = instance
        self.static_args, self.cache, self.symbolic_entries = instance.static_args, instance.cache, \
            instance.symbolic_entries
        self.static_record.update(args)
        return False

    def entry_for(self, args):
        self.same_constants(args)
        if self.symbolic:
            # Per value of the scalar inputs; and when the trace needs input extents of equal
            # values to be one symbol (a cache's key and value lengths, which attention needs
            # equal: Interpreter.symbol_partition), per partition of the extents into equal values.
            skey = (self.scalar_key(args), None)
            if self.unify:
                skey = (skey[0], self.interpreter.symbol_partition(args))
            if skey not in self.symbolic_entries:
                try:
                    try:
                        entry = None if self.unify else self.compile_symbolic(args)
                    except Exception:  # noqa: BLE001 - traced again with equal extents as one symbol
                        entry = None
                    if entry is None:
                        entry = self.compile_symbolic(args, unify=True)
                        self.unify, skey = True, (skey[0], self.interpreter.symbol_partition(args))
                    self.symbolic_entries[skey] = entry
                except Exception as e:  # noqa: BLE001 - any reason: traced per shape, and said so. An
                    # operator unmapped here may be one PyTorch evaluates at constant shapes
                    # (torch.ones(s0, s1)); one unmapped at every shape raises there.
                    reason = str(e).splitlines()[0] if str(e) else type(e).__name__
                    if isinstance(e, UnmappedError):
                        reason = f'no mapping on symbolic sizes for {", ".join(e.names)}'
                    # Per shape from now on, once that works: inputs that fail at every shape (a
                    # prompt longer than the cache) raise their error and change nothing.
                    key = self.key_of(args)
                    entry = self.cache.get(key) or self.compile(args)
                    self.cache[key], self.symbolic = entry, False
                    print(f'hidet: this graph is compiled per input shape; it does not trace once on dynamo\'s '
                          f'symbolic sizes: {reason}', file=sys.stderr)
                    return entry
            if self.symbolic:
                return self.symbolic_entries[skey]
        if self.one_shape and len(self.cache) == 1 and not self.scalar_positions_of(args):
            # Dynamo's graph has constant shapes: its guards admit no other shapes, dtypes or
            # strides, so the one entry compiled is the one (key_of costs about 15 us a call for a
            # decode step's 66 tensors on the CI machine's host).
            return next(iter(self.cache.values()))
        key = self.key_of(args)
        entry = self.cache.get(key)
        if entry is None:
            entry = self.cache[key] = self.compile(args)
        return entry

    def __call__(self, *args):
        entry = self.entry_for(args)
        sizes = self.interpreter.size_values(args, entry.sizes) if entry.sizes else None
        if entry.runner is None and entry.dispatch is None:
            return entry.rebuild([], entry.constants, sizes)
        moved = False  # the tensor arguments are not where the last call had them
        inputs = entry.graph_inputs(args, entry.pinned)
        if entry.updates:  # an updated input that shares memory with another input: refused
            moved = self.check_moved(args, entry)
        stream = 0
        if not hidet.cuda_emulated():  # the raw handle, as inductor's code gets it; torch.cuda.current_stream()
            # builds a Stream object (ResNet-50's call on the host: 0.155 -> 0.147 ms on the H200)
            stream = _raw_stream(torch.cuda.current_device())
        if entry.dispatch is not None:
            outs = [o.torch() for o in entry.dispatch.run(inputs, stream)]
            if self.config._use_cuda_graph and not hidet.cuda_emulated():
                outs = [o.clone() for o in outs]  # a replay's static outputs: copied out
        elif entry.replay is not None:  # static outputs, overwritten by the next replay: copied out
            if moved and entry.captured_at != _addresses(args, entry.updates):
                # Other tensors to update (a new cache): captured again where they live.
                entry.replay = _capture(entry.runner, args, entry.positions, entry.updates)
                entry.captured_at = _addresses(args, entry.updates)
            replay = entry.replay
            outs = replay.run(inputs, stream)
            views = entry.replay_views
            if views is None or views[0] is not replay:  # the same buffers every replay: viewed once per capture
                views = entry.replay_views = (replay, [o.torch() for o in outs])
            outs = [v.clone() for v in views[1]]
        else:
            outs = [o.torch() for o in entry.runner.run(inputs, stream)]
        for i, k in entry.copies:  # an argument hidet ran on a copy of (not contiguous, or moved)
            args[i].copy_(inputs[k].torch())
        if not hidet.cuda_emulated() and entry.tensor_positions and \
                args[entry.tensor_positions[0]].device.type == 'cpu':
            outs = [o.cpu() for o in outs]  # inputs given on the CPU (moved to the GPU): results come back as in eager
        for j, i in entry.returned:  # an input the graph returns (updated in place): the input itself
            outs[j] = args[i]
        return entry.rebuild(outs, entry.constants, sizes)

    def check_moved(self, args, entry):
        """Whether updated arguments may have moved since the last call (graph_inputs' record: then
        the CUDA graph's capture addresses are compared), with the arguments that moved checked for
        shared memory with the updated ones: the whole sweep (check_aliasing) when an updated
        argument moved, else each moved one against the sorted spans of the updated ones (a decode
        step's new input_ids and position against its 64 cache tensors; False: the updated ones
        are where they were)."""
        changed = entry.changed
        if not changed:
            return False
        try:
            return self._check_moved(args, entry, changed)
        except ValueError:  # the same arguments again are checked again
            entry.last = entry.update_spans = None
            raise

    def _check_moved(self, args, entry, changed):
        positions = entry.tensor_positions
        if entry.update_spans is None or any(positions[j] in entry.update_set for j in changed):
            self.check_aliasing(args, entry)
            spans = sorted(sp for sp in map(_span, (args[i] for i in entry.updates)) if sp[1] > sp[0])
            los, ends, end = [], [], 0
            for lo, hi in spans:
                end = max(end, hi)
                los.append(lo)
                ends.append(end)  # the furthest end of the spans up to this one
            entry.update_spans = (los, ends)
            return True
        los, ends = entry.update_spans
        for j in changed:
            lo, hi = _span(args[positions[j]])
            k = bisect.bisect_left(los, hi)  # the updated spans that begin before this one ends
            if hi > lo and k and ends[k - 1] > lo:
                self.check_aliasing(args, entry)  # shares memory or only addresses (another device)
                break
        return False

    def check_aliasing(self, args, entry):
        """A ValueError when an input the graph updates in place shares memory with another input:
        eager PyTorch lets the other see the update (or the update see the other's), the compiled
        graph reads every input as given. The inputs' spans of memory, sorted, are swept once
        (distinct allocations never share addresses; a 1B Llama's decode step checks 49 inputs,
        48 of them updated, on every call that gives a new input_ids)."""
        spans = []
        for i in entry.tensor_positions:
            lo, hi = _span(args[i])
            if hi > lo:
                spans.append((lo, hi, i))
        spans.sort()
        active = []  # (end, position) of the spans that may still overlap the next one
        for lo, hi, i in spans:
            active = [(h, j) for h, j in active if h > lo]
            for _, j in active:
                if (i in entry.update_set or j in entry.update_set) and args[i].device == args[j].device and \
                        _overlap(args[i], args[j]):
                    u, other = (i, j) if i in entry.update_set else (j, i)
                    names = self.interpreter.source_names
                    what = names[u] or self.interpreter.placeholders[u].name
                    other = names[other] or self.interpreter.placeholders[other].name
                    raise ValueError(
                        f'hidet: the compiled graph updates {what} in place, and the input {other} shares its memory '
                        '(a view of the same tensor): PyTorch would let one see the update of the other, the '
                        'compiled graph reads each input as given. Pass tensors that do not share memory '
                        '(clone() one of them).')
            active.append((hi, i))

    @property
    def num_compilations(self):
        """Graphs compiled so far (over the instances kept): one per shape traced per shape, and
        the shapes the symbolic trace's ShapeDispatch compiled."""
        return sum(len(k.cache) + sum(e.dispatch.num_compilations if e.dispatch is not None
                                      else int(e.runner is not None) for e in k.symbolic_entries.values())
                   for k in self.instances.values())

    @property
    def num_shared_runs(self):
        """Runs of a shape on the compiled graph of its bucket compiled for another shape (with
        dynamo_config.dynamic_shapes('bucket'))."""
        return sum(e.dispatch.num_shared_runs for k in self.instances.values() for e in k.symbolic_entries.values()
                   if e.dispatch is not None)

    @property
    def num_traces(self):
        """fx-graph traces so far (over the instances kept): one per shape, or one for all shapes
        (dynamic shapes)."""
        return sum(len(k.cache) + len(k.symbolic_entries) for k in self.instances.values())


def _capture(runner, args, positions, updated):
    """The CUDA graph of a compiled graph, with the inputs it updates (a model's cache) captured
    where they live: replays on the same tensors update them in place, without copies in or out."""
    buffers = [to_hidet(args[i]) if i in updated and _shared_with_hidet(args[i]) else None for i in positions]
    return hidet.CudaGraph(runner, buffers)


def _addresses(args, positions):
    """Where the arguments at ``positions`` live (a replay captured at other addresses copies)."""
    return tuple(args[i].data_ptr() for i in positions)


def _span(t):
    """The bytes tensor t spans from its first element: (start, end); empty for no elements."""
    lo = t.data_ptr()
    n = t.numel()
    if n and not t.is_contiguous():
        n = sum((d - 1) * st for d, st in zip(t.shape, t.stride())) + 1
    return lo, lo + n * t.element_size()


def _overlap(a, b):
    """Whether tensors a and b share memory: the same storage, and their spans of it intersect."""
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    if a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False

    def span(t):
        lo = t.data_ptr()
        return lo, lo + (sum((n - 1) * st for n, st in zip(t.shape, t.stride())) + 1) * t.element_size()

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def _scratch_inputs(args, positions, updated):
    """The graph's inputs for a run at compile time (a report, a profile, the first shape): copies
    of those it updates, which the run must not change."""
    return [_graph_input(args[i].clone() if i in updated else args[i]) for i in positions]


def _graph_input(a):
    """A graph input for argument ``a``: a tensor as hidet's, a size (an int) as its size input."""
    return to_hidet(a) if isinstance(a, torch.Tensor) else size_input(a)


def _shared_with_hidet(tensor):
    """Whether to_hidet(tensor) views the tensor's memory (it copies one that is not contiguous, and
    one on the CPU when a GPU runs hidet)."""
    return tensor.is_contiguous() and (tensor.device.type != 'cpu' or hidet.cuda_emulated())


def _symbol_values(symbols, inputs):
    """{symbol: value} that the symbolic inputs' extents take at the concrete inputs."""
    values = {}
    for x, t in zip(symbols, inputs):
        for d, n in zip(x.shape, t.shape):
            if is_symbolic_size(d) and len(d.symbols) == 1 and str(d) == d.symbols[0]:
                values[str(d)] = n
    return values


def _partition_for_fallback(gm, cfg, unmapped_nodes):
    """Splits ``gm`` into hidet-mapped parts (compiled by hidet) and the rest (run by PyTorch)."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupport

    class Support(OperatorSupport):
        def is_node_supported(self, submodules, node):
            return node.op in ('call_function', 'call_method') and node not in unmapped_nodes

    partitioner = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    for node in fused.graph.nodes:
        if node.op == 'call_module' and node.target.startswith('fused_'):
            sub = fused.get_submodule(node.target)
            setattr(fused, node.target, _HidetSubmodule(sub, cfg))
    fused.recompile()
    return fused


class _HidetSubmodule(torch.nn.Module):
    """A fused partition of mapped operators, run by hidet."""

    def __init__(self, gm, cfg):
        super().__init__()
        self.compiled = HidetCompiledModel(gm, cfg)

    def forward(self, *args):
        return self.compiled(*args)


def _concrete(a):
    return size_hint(a) if isinstance(a, torch.SymInt) else a


def _has_dtensors(example_inputs):
    """Whether dynamo hands the graph DTensors (a model parallelized with torch.distributed.tensor):
    their operators and redistributions are desugared by aot_autograd first."""
    try:
        from torch.distributed.device_mesh import DeviceMesh
        from torch.distributed.tensor import DTensor
    except ImportError:
        return False
    return any(isinstance(a, (DTensor, DeviceMesh)) for a in example_inputs)


def _compile_through_aot(gm, example_inputs, cfg):
    """A graph of DTensors: aot_autograd traces it into ATen operators on plain tensors and
    torch's functional collectives (hidet/torch/collectives.py maps them), as inductor gets it. Its
    example inputs are fake, so the hidet graph is traced and compiled on the first call. The
    graph is traced on the DTensors' local shards where it can be (_local_shards)."""
    from torch._dynamo.backends.common import aot_autograd

    def aot(module, inputs, static_positions=None):
        """aot_autograd of `module` with hidet's compiler; `static_positions`: the parameters'
        positions among aot's inputs when `module` is not dynamo's graph (aot finds them only there)."""
        def compiler(aot_gm, fake_inputs):
            static = None
            context = torch._guards.TracingContext.try_get()
            meta = getattr(context, 'fw_metadata', None) if context is not None else None
            if static_positions is not None:
                static = set(static_positions)
            elif meta is not None and getattr(meta, 'static_input_indices', None) is not None:
                static = set(meta.static_input_indices)  # the parameters and buffers: constants
            if static is not None and meta is not None:
                # An input at a static address that the graph updates (a cache marked with
                # torch._dynamo.mark_static_address) is no constant: it stays an input.
                for i, info in enumerate(getattr(meta, 'input_info', None) or []):
                    if getattr(info, 'mutates_data', False) or getattr(info, 'mutates_metadata', False):
                        static.discard(i)
            if static_positions is not None:
                LOCAL_DTENSOR_GRAPHS.append(len(static))
            model = HidetCompiledModel(aot_gm, cfg, static_positions=static)

            def run(args):
                return model(*args)
            run._boxed_call = True
            return run

        # Inputs updated in place (a cache) stay updates of the graph (aten.copy_ at its end), which
        # hidet writes where the input lives, instead of new values that aot's wrapper copies back.
        return aot_autograd(fw_compiler=compiler, inference_compiler=compiler,
                            keep_inference_input_mutations=True)(module, inputs)

    shards = _local_shards(gm, example_inputs)
    if shards is None:
        return aot(gm, example_inputs)
    module, local_inputs, keep = shards
    try:
        compiled = aot(module, local_inputs, _dynamo_static_positions(gm))
    except Exception as e:  # noqa: BLE001 - traced on the DTensors instead
        print(f'hidet: the graph is compiled on its DTensor inputs, which torch flattens on every call '
              f'(taking their local shards failed: {type(e).__name__}: {e})', file=sys.stderr)
        return aot(gm, example_inputs)

    def run(*args):
        return compiled(*[a if k else a._local_tensor for a, k in zip(args, keep)])
    return run


LOCAL_DTENSOR_GRAPHS = []  # per graph compiled on its DTensor inputs' local shards: its constants (tests read it)


class _FromLocal(torch.nn.Module):
    """Dynamo's graph with its DTensor inputs taken as their local shards: each is made a DTensor
    again (DTensor.from_local, with the placements, size and strides it was traced with) inside the
    traced function, where aot_autograd desugars it like the rest."""

    def __init__(self, gm, specs):
        super().__init__()
        self.inner = gm
        self.specs = specs

    def forward(self, *args):
        from torch.distributed.tensor import DTensor
        args = list(args)
        for i, (mesh, placements, shape, stride) in self.specs:
            args[i] = DTensor.from_local(args[i], mesh, placements, run_check=False, shape=shape, stride=stride)
        return self.inner(*args)


def _dynamo_static_positions(gm):
    """The positions of aot_autograd's inputs that are dynamo's parameters and buffers (as aot
    finds them on dynamo's own graph): the ones it lifts from the module, then the fx placeholders
    (graph inputs) that dynamo marked static."""
    lifted = len(list(gm.named_parameters(remove_duplicate=False))) + \
        len(list(gm.named_buffers(remove_duplicate=False)))
    graph_inputs = [n for n in gm.graph.nodes if n.op == 'placeholder']
    return list(range(lifted)) + [lifted + pos for pos, n in enumerate(graph_inputs)
                                  if (n.meta.get('tensor_dict') or {}).get('_dynamo_static_input_type')]


def _local_shards(gm, example_inputs):
    """aot_autograd's runtime wrapper flattens every DTensor argument of every call (a
    tensor-parallel model's parameters: 113 for a 16-layer Llama, about 1.5 ms a call on the GPU
    machine's host at TP = 2, more than the step's kernels take). The graph is compiled instead
    on the DTensors' local shards (_FromLocal), and each call hands over the shards: one attribute
    read per DTensor. Dynamo's guards check each DTensor's placements and mesh, as for the graph
    traced on them. Returns (the module, its example inputs, per argument whether it is passed as
    it is) or None when no input is a DTensor."""
    from torch.distributed.tensor import DTensor
    positions = [i for i, a in enumerate(example_inputs) if type(a) is DTensor]
    if not positions:
        return None
    specs = [(i, (example_inputs[i].device_mesh, tuple(example_inputs[i].placements),
                  example_inputs[i].shape, example_inputs[i].stride())) for i in positions]
    local_inputs = list(example_inputs)
    for i in positions:
        local_inputs[i] = example_inputs[i]._local_tensor
    position_set = frozenset(positions)
    keep = [i not in position_set for i in range(len(example_inputs))]
    return _FromLocal(gm, specs), local_inputs, keep


def hidet_backend(gm, example_inputs, mode=None, options=None, name=None):
    """The torch.compile backend (registered as 'hidet' through the torch_dynamo_backends entry
    point, and on import of hidet.torch)."""
    cfg = dynamo_config.with_options(mode, options)
    if cfg._print_input_graph:
        print_tabular(gm)
    if _has_dtensors(example_inputs):
        return _compile_through_aot(gm, example_inputs, cfg)
    model = HidetCompiledModel(gm, cfg)
    # Dynamic shapes (torch.compile(dynamic=True)): sizes come as SymInts; their hints are the
    # example's values. The graph is traced once on the symbols (HidetCompiledModel.compile_symbolic).
    example_inputs = [_concrete(a) for a in example_inputs]
    try:
        model.entry_for(example_inputs)  # trace and compile now, for the example shapes (nothing runs)
    except UnmappedError as e:
        if not cfg._fallback_to_torch:
            raise
        print(f'hidet: PyTorch runs the operators hidet does not map: {", ".join(e.names)}', file=sys.stderr)
        return _partition_for_fallback(gm, cfg, set(e.nodes)).forward
    # Tracing (dynamo's and ours) leaves many Python objects behind; the young generations are
    # collected now, so that their collection is part of compiling instead of landing in one of
    # the first calls (on BERT-base with dynamic shapes, a collection inside the first few hundred
    # calls cost about 0.4 ms a call, averaged). Not a full collection: its cost grows with every
    # object of the process (0.24 s with torch, transformers and a few compiled models loaded, on
    # the 2-core CI machine), where the young generations take about a millisecond; it was a
    # third of test_torch.py's time. A full collection can still come once after this, a single
    # pause of that size.
    gc.collect(1)
    return model
