"""fx graph -> hidet FlowGraph.

The interpreter walks a torch.fx graph from dynamo and calls, for every node, the mapping
registered for its target (registry.py) on hidet tensors: graph inputs are hidet symbolic tensors
of the example inputs' shapes, so the mappings record a FlowGraph instead of running anything.
Parameters and buffers (dynamo passes them as graph inputs) become constants that share the torch
tensors' memory. Every unmapped target is found before anything runs and reported at once.

With dynamic shapes (torch.compile(dynamic=True), or dynamo marking a size dynamic after it
changed) the fx graph's sizes are SymInts: trace(symbolic=True) then gives each of dynamo's symbols
(s0, s1, ...) a hidet.Dim of the same name, so the inputs are hidet.symbol(['s0', 's1', 768]) and
the mappings see Dims where they would see ints (x.size(1), view(s0, s1, 12, 64), arange(s1)):
one FlowGraph for every value of the symbols.
"""
import contextlib
import functools
import math
import operator

import torch

import hidet
from .convert import dtype_name, to_hidet, to_hidet_constant, torch_dtype
from .complex import ComplexTensor
from .complex import mapping_of as complex_mapping_of
from .registry import Registry

__all__ = ['Interpreter', 'UnmappedError', 'to_hidet_constant', 'to_hidet', 'dtype_name', 'unmapped_message',
           'symbolic_inputs', 'is_symbolic_size', 'has_symbolic_sizes', 'NotSymbolic', 'size_hint', 'size_input',
           'output_symbols']

_tracing_inputs = []  # the symbolic graph inputs of the trace in progress (see symbolic_inputs)
# {dynamo symbol: the symbol it is traced as} of the trace in progress: input extents of equal
# values may share one symbol (Interpreter.symbol_partition).
_symbol_aliases = []


def symbolic_inputs():
    """The symbolic inputs of the graph being traced: mappings that create a tensor of a symbolic
    extent (arange(s1)) give them to the operator, whose extents bind the symbols."""
    return list(_tracing_inputs[-1]) if _tracing_inputs else []


@contextlib.contextmanager
def _tracing(inputs):
    _tracing_inputs.append(inputs)
    try:
        yield
    finally:
        _tracing_inputs.pop()


@contextlib.contextmanager
def _aliasing(aliases):
    _symbol_aliases.append(aliases)
    try:
        yield
    finally:
        _symbol_aliases.pop()


def is_symbolic_size(value):
    """True for a hidet.Dim that is not a constant (a size of dynamo's dynamic shapes)."""
    return isinstance(value, hidet.Dim) and not value.is_constant


class NotSymbolic(Exception):
    """The graph cannot be traced once for all sizes (the reason says why): it is traced per shape."""


def _dim_of(size):
    """A hidet extent for one of dynamo's sizes: an int, or a Dim for a SymInt whose expression is
    a symbol, an integer, or sums, products, floor divisions and moduli of them."""
    if isinstance(size, int):
        return size
    if isinstance(size, torch.SymInt):
        return _sympy_to_dim(size.node.expr)
    raise NotSymbolic(f'a size {size!r} of type {type(size).__name__}')


def _sympy_to_dim(expr):
    import sympy
    if isinstance(expr, sympy.Integer):
        return int(expr)
    if isinstance(expr, sympy.Symbol):
        name = str(expr)
        return hidet.Dim(_symbol_aliases[-1].get(name, name) if _symbol_aliases else name)
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        terms = [_sympy_to_dim(a) for a in expr.args]
        out = terms[0]
        for t in terms[1:]:
            out = out + t if isinstance(expr, sympy.Add) else out * t
        return out
    kind = type(expr).__name__  # torch.utils._sympy.functions: floor division and modulo of sizes
    if kind in ('FloorDiv', 'CleanDiv') and len(expr.args) == 2:
        return _sympy_to_dim(expr.args[0]) // _sympy_to_dim(expr.args[1])
    if kind in ('Mod', 'PythonMod') and len(expr.args) == 2:
        return _sympy_to_dim(expr.args[0]) % _sympy_to_dim(expr.args[1])
    raise NotSymbolic(f'the size expression {expr} (symbols, sums, products, floor division and modulo '
                      'are traced symbolically)')


def _symbol_name(size):
    """The name of dynamo's symbol when ``size`` is a SymInt that is one symbol, else None."""
    if not isinstance(size, torch.SymInt):
        return None
    import sympy
    expr = size.node.expr
    return str(expr) if isinstance(expr, sympy.Symbol) else None


def size_input(value):
    """The graph input that gives a size placeholder's value ``value`` to a symbolic trace: an
    empty tensor of shape [0, value] (no memory; its extent binds the symbol)."""
    t = _size_inputs.get(value)
    if t is None:
        if len(_size_inputs) > 1024:
            _size_inputs.clear()
        t = _size_inputs[value] = hidet.zeros([0, int(value)], 'int8', 'cuda')
    return t


_size_inputs = {}


def has_symbolic_sizes(gm):
    """True when dynamo gave ``gm`` symbolic sizes (dynamic shapes)."""
    for n in gm.graph.nodes:
        if n.op != 'placeholder':
            continue
        ex = n.meta.get('example_value')
        if isinstance(ex, torch.SymInt):
            return True
        if isinstance(ex, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in ex.shape):
            return True
    return False


class Unavailable:
    """An output of an operator that hidet does not compute (the indices of max_pool2d, the
    statistics of a layer norm): a node that uses it is an error naming it."""

    def __init__(self, what):
        self.what = what


class UnmappedError(NotImplementedError):
    """Operators without a mapping: ``names`` (each once), the fx ``nodes``, and per name the
    ``details`` (the first node's name and source line, and why its decomposition into core ATen
    did not serve)."""

    def __init__(self, names, nodes=(), details=None):
        self.names, self.nodes = list(names), list(nodes)
        self.details = dict(details or {})
        super().__init__(unmapped_message(self.names, self.details))


def unmapped_message(names, details=None):
    details = details or {}
    lines = ['The following operators are not supported or mapped by hidet yet:']
    for n in names:
        lines.append(f'  {n}')
        lines += [f'      {d}' for d in details.get(n, [])]
    lines += [
        'Please see the following guide to add the conversion rules:',
        '  docs/torch.md, "Adding an operator mapping" (hidet.torch.register_function, register_method, '
        'register_module)',
        'or let PyTorch run them inside the compiled model: hidet.torch.dynamo_config.fallback_to_torch(True)',
    ]
    return '\n'.join(lines)


def target_name(node):
    t = node.target
    if node.op == 'call_method':
        return f'torch.Tensor.{t}'
    if node.op == 'call_module':
        return t
    module = getattr(t, '__module__', None) or ''
    name = getattr(t, '__name__', str(t))
    if module in ('_operator', 'operator'):
        return f'operator.{name}'
    if module.startswith('torch._C._nn'):
        return f'torch.nn.functional.{name}'
    if module.startswith('torch._C._VariableFunctions') or module == 'torch':
        return f'torch.{name}'
    return f'{module}.{name}' if module else name


def source_line(node):
    """The user's source line that made ``node`` ('model.py:12, in forward'), when dynamo kept it."""
    trace = node.meta.get('stack_trace') or ''
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip().startswith('File ')]
    return lines[-1] if lines else ''


def source_name(node):
    """Dynamo's description of where a placeholder's value comes from, such as
    "L['self']._modules['fc']._parameters['weight']", or ''. Dynamo drops it from the node after
    the backend returns, so an Interpreter records the names when it is made."""
    grapharg = node.meta.get('grapharg')
    source = getattr(grapharg, 'source', None)
    name = getattr(source, 'name', None)
    if callable(name):
        name = name()
    return name if isinstance(name, str) else ''


class Interpreter:
    """Maps one fx GraphModule to hidet (see the top of the file). With ``decompose`` (the
    default), a node without a mapping, or whose mapping refuses its arguments, is decomposed into
    core ATen operators (decompose.py) and those are mapped (aten.py)."""

    def __init__(self, gm, decompose=True, static_positions=None):
        self.gm = gm
        self.decompose = decompose
        # The placeholders that are the model's parameters, buffers and constants when the caller
        # knows them (hidet.torch.export, from the exported program's signature); else found from
        # dynamo's sources (is_static).
        self.static_positions = static_positions
        self.decomposed = []  # (node name, target name) of the nodes that went through core ATen
        self.nodes = list(gm.graph.nodes)
        self.order = {n: i for i, n in enumerate(self.nodes)}
        self.placeholders = [n for n in self.nodes if n.op == 'placeholder']
        self.source_names = [source_name(n) for n in self.placeholders]
        # Dynamo's fake values of the placeholders (their sizes are SymInts with dynamic shapes).
        self.fake_values = [n.meta.get('example_value') for n in self.placeholders]
        # The placeholders that in-place nodes update (directly or through views): graph inputs,
        # parameters and buffers alike, they are traced as inputs and written back after each run.
        self.mutated = {_alias_root(b) for n in self.nodes if (b := _inplace_base(n)) is not None} & \
            set(self.placeholders)
        self.updated = set()  # the placeholders the last trace updated
        self.updates = []  # after trace(): (position among the symbolic inputs, the hidet value written back)
        self._size_symbols = None  # size_symbols, found on first use (hidet.torch.export sets fake_values)

    def is_static(self, i, example):
        """Whether placeholder i, of value ``example``, is a parameter or buffer that dynamo lifted
        into the graph's inputs: a constant of the model."""
        if self.static_positions is not None:
            return i in self.static_positions
        if isinstance(example, torch.nn.Parameter):
            return True
        if self.placeholders[i] in self.mutated:  # updated in place: an input written back
            return False
        name = self.source_names[i]
        return isinstance(example, torch.Tensor) and ('._parameters[' in name or '._buffers[' in name)

    @staticmethod
    def is_scalar(example):
        """A Python float that dynamo passes as a 0-d float64 CPU tensor (torch.compile(dynamic=True)
        does so for modules' float attributes, LayerNorm's eps): traced as the constant it is, and
        part of the compiled graph's key (another value compiles again)."""
        return isinstance(example, torch.Tensor) and example.ndim == 0 and example.dtype == torch.float64 and \
            example.device.type == 'cpu'

    def mapping_of(self, node):
        if node.op == 'call_function':
            if isinstance(node.target, torch._ops.OpOverload):
                # core ATen by the overload; other namespaces' custom operators by name; an in-place
                # ATen overload as its functional one (the interpreter rebinds the updated tensor)
                mapping = Registry.registered_aten.get(node.target) or Registry.registered_aten.get(str(node.target))
                functional = _aten_functional(node.target) if mapping is None else None
                if functional is not None:
                    mapping = Registry.registered_aten.get(functional) or Registry.registered_aten.get(str(functional))
                return mapping
            mapping = Registry.registered_functions.get(node.target)
            if mapping is None and isinstance(node.target, torch._ops.OpOverloadPacket):
                mapping = Registry.registered_aten.get(str(node.target))
            return mapping
        if node.op == 'call_method':
            mapping = Registry.registered_methods.get(node.target)
            if mapping is None and node.target.startswith('__') and node.target.endswith('__'):
                # x.__eq__(y), x.__and__(y) (some torch versions record operators so): operator.eq's
                mapping = Registry.registered_functions.get(getattr(operator, node.target, None))
            if mapping is None and _inplace_base(node) is not None:
                # x.clamp_(...) as x.clamp(...): the interpreter rebinds x to the result
                mapping = Registry.registered_methods.get(node.target[:-1])
            return mapping
        if node.op == 'call_module':
            module = self.gm.get_submodule(node.target)
            cls = Registry.registered_modules.get(type(module))
            return None if cls is None else cls
        return True

    @property
    def size_symbols(self):
        """Where each of dynamo's size symbols is first given: [(name, placeholder position, axis of
        its tensor, or None for a size placeholder)], tensor extents first (a size placeholder of
        an input's extent, x.size(1), is that extent)."""
        if self._size_symbols is None:
            self._size_symbols, seen = [], set()
            for tensors in (True, False):
                for i, fake in enumerate(self.fake_values):
                    if tensors and isinstance(fake, torch.Tensor):
                        sizes = list(enumerate(fake.shape))
                    elif not tensors and isinstance(fake, torch.SymInt):
                        sizes = [(None, fake)]
                    else:
                        continue
                    for axis, size in sizes:
                        name = _symbol_name(size)
                        if name is not None and name not in seen:
                            seen.add(name)
                            self._size_symbols.append((name, i, axis))
            self.symbol_sources = {name: (i, axis) for name, i, axis in self._size_symbols}
        return self._size_symbols

    def symbol_partition(self, args):
        """Which of the symbols of dynamo's input extents take equal values in the call ``args``:
        per such symbol of size_symbols, the index of the first one of the same value. A symbolic
        trace gives the symbols of one value one hidet symbol (dynamo gives the lengths of a
        cache's keys and values two symbols; attention needs them equal), so it serves the calls of
        its partition. Size placeholders (a Python int dynamo made dynamic, which may change every
        call) keep their own symbols."""
        first = {}
        return tuple(first.setdefault(args[i].shape[axis], k)
                     for k, (_, i, axis) in enumerate(s for s in self.size_symbols if s[2] is not None))

    def size_values(self, args, names):
        """{symbol: its value in the call ``args``} for the symbols ``names`` of size_symbols."""
        values = {}
        _ = self.size_symbols  # symbol_sources
        for name in names:
            i, axis = self.symbol_sources[name]
            values[name] = int(args[i]) if axis is None else args[i].shape[axis]
        return values

    def trace(self, example_inputs, symbolic=False, unify=False):
        """Runs the mappings on symbolic inputs of the examples' shapes (``symbolic``: of dynamo's
        symbolic sizes, see the top of the file). Returns (the symbolic inputs, their positions
        among the placeholders, the output structure with hidet tensors). With ``symbolic``,
        NotSymbolic says why a graph cannot be traced once for all sizes; with ``unify`` the input
        extents of equal values in ``example_inputs`` are traced as one symbol (symbol_partition:
        the trace then serves the calls of that partition only); a size placeholder that no input
        tensor's extent gives (a cache's length, a Python int dynamo made dynamic) becomes a size
        input: a graph input of shape [0, s] (size_input) that the caller gives for it."""
        aliases = {}
        if symbolic and unify:
            names = [name for name, _, axis in self.size_symbols if axis is not None]
            aliases = {names[k]: names[j] for k, j in enumerate(self.symbol_partition(example_inputs)) if j != k}
        with _aliasing(aliases):
            return self._trace(example_inputs, symbolic)

    def _trace(self, example_inputs, symbolic):
        env = {}
        symbols, positions = [], []
        for i, (node, ex) in enumerate(zip(self.placeholders, example_inputs)):
            fake = self.fake_values[i]
            if isinstance(ex, torch.Tensor):
                if self.is_static(i, ex):
                    env[node] = _constant(ex)
                elif ex.is_complex():
                    raise NotImplementedError(
                        f'hidet: the graph input {node.name} is a complex tensor ({ex.dtype}); complex values are '
                        'mapped inside a graph (as pairs of reals: torch.polar, view_as_complex, ...) and as its '
                        'buffers, not as its inputs: pass torch.view_as_real(x) and call torch.view_as_complex '
                        'inside the model')
                elif self.is_scalar(ex):
                    env[node] = hidet.full([], float(ex.item()), 'float64', 'cuda')
                else:
                    shape = list(ex.shape)
                    if symbolic and isinstance(fake, torch.Tensor):
                        shape = [_dim_of(d) for d in fake.shape]
                    sym = hidet.symbol(shape, dtype_name(ex.dtype), 'cuda', name=node.name)
                    env[node] = sym
                    symbols.append(sym)
                    positions.append(i)
            elif symbolic and isinstance(fake, torch.SymInt):
                env[node] = _dim_of(fake)
            else:
                env[node] = int(ex) if isinstance(ex, torch.SymInt) else ex
        if symbolic:
            given = {name for x in symbols for d in x.shape if isinstance(d, hidet.Dim) for name in d.symbols}
            for i, node in enumerate(self.placeholders):
                d = env.get(node)
                if not is_symbolic_size(d) or set(d.symbols) <= given:
                    continue
                if len(d.symbols) != 1 or str(d) != d.symbols[0]:
                    raise NotSymbolic(f'the size {node.name} = {d} is no extent of an input tensor')
                symbols.append(hidet.symbol([0, d], 'int8', 'cuda', name=node.name))  # its size input
                positions.append(i)
                given.add(str(d))
        originals = dict(env)
        self.updated = set()
        with _tracing(symbols):
            output = self._run_nodes(env, symbolic)
        self.updates = []
        for k, i in enumerate(positions):
            node = self.placeholders[i]
            if node in self.updated and env[node] is not originals[node]:
                self.updates.append((k, env[node]))
        return symbols, positions, output

    def returned_inputs(self, output):
        """The outputs that are graph inputs themselves (an input the graph updates in place and
        returns, as ``x.add_(1); return x`` does): [(index among the symbolic outputs, placeholder
        position)], for the caller to return the input as eager does, after the update. An output
        that is another view of such an input (``return x[0]``) is returned as a copy (said once
        under verbose: ``views``)."""
        out_node = next(n for n in self.nodes if n.op == 'output')
        fx_leaves = _leaves(out_node.args[0], lambda v: True, [])
        found, views, j = [], [], 0
        hidet_leaves = _leaves(output, lambda v: True, [])
        if len(fx_leaves) != len(hidet_leaves):
            return found, views
        for fx, value in zip(fx_leaves, hidet_leaves):
            if not (isinstance(value, hidet.Tensor) and value.is_symbolic):
                continue
            if isinstance(fx, torch.fx.Node):
                root = _alias_root(fx)
                if root.op == 'placeholder' and root in self.placeholders:
                    chain = [v for v in _view_chain(fx, root) if not _is_identity_view(v)]
                    if not chain:
                        found.append((j, self.placeholders.index(root)))
                    elif root in self.updated:
                        views.append(fx.name)
            j += 1
        return found, views

    def run_graph(self, inputs):
        """Runs the mappings of this graph on ``inputs`` (one per placeholder: hidet tensors or
        values) and returns the output structure; for the core-ATen graph of a decomposition."""
        env = dict(zip(self.placeholders, inputs))
        return self._run_nodes(env, symbolic=False, inner=True)

    def _decomposed(self, node, args, kwargs):
        """The node's value through its decomposition into core ATen (decompose.py)."""
        from .decompose import decompose
        if node.op == 'call_method':
            def call(self_, *a, **k):
                return getattr(self_, node.target)(*a, **k)
            key = ('method', node.target)
        elif node.op == 'call_module':
            module = self.gm.get_submodule(node.target)
            call, key = module, ('module', id(module))
        else:
            call, key = node.target, ('function', node.target)
        d = decompose(call, key, args, kwargs)
        flat, _ = torch.utils._pytree.tree_flatten((args, kwargs))
        inner = Interpreter(d.gm, decompose=False)
        out = inner.run_graph([flat[p] for p in d.positions])
        self.decomposed.append((node.name, target_name(node)))
        return out

    def _run_nodes(self, env, symbolic, inner=False):
        """Runs the nodes; ``inner``: the graph of a decomposition, whose outputs may include values
        hidet does not compute (the outer graph's nodes that use them fail)."""

        def load(a, user=None):
            def value(n):
                v = env[n]
                if isinstance(v, Unavailable) and not (inner and user is None):
                    where = source_line(n)
                    raise NotImplementedError(
                        f"hidet: fx node '{n.name}'{' (' + where + ')' if where else ''} is {v.what}, which hidet "
                        f"does not compute (used by {'the output' if user is None else repr(user.name)}); "
                        'let PyTorch run it with hidet.torch.dynamo_config.fallback_to_torch(True)')
                return v
            return torch.fx.node.map_arg(a, value)

        output = None
        missing, missing_nodes, details = [], [], {}

        def unmapped(node, why):
            # Listed with the others at the end; a stand-in of the right type lets tracing go on.
            name = target_name(node)
            if node.op == 'call_module':
                cls = type(self.gm.get_submodule(node.target))
                name = f'{cls.__module__}.{cls.__name__}'
            if name not in missing:
                missing.append(name)
                where = source_line(node)
                details[name] = [f"fx node '{node.name}'" + (f' ({where})' if where else '')] + ([why] if why else [])
            missing_nodes.append(node)
            env[node] = _stand_in(node, symbolic)

        def evaluate(node):
            """Maps one node into env[node]."""
            args, kwargs = load(node.args, node), load(node.kwargs, node)
            base = _inplace_base(node)
            if base is not None and _any_symbolic((args, kwargs)):  # (PyTorch updates constants itself)
                why = _inplace_refusal(node, base, env)
                if why is not None:
                    unmapped(node, why)
                    # With fallback_to_torch, PyTorch runs the tensors that share memory with the
                    # updated one too, so that the update reaches them as in eager.
                    missing_nodes.extend(n for n in _alias_group(_alias_root(base)) if n not in missing_nodes)
                    return
            needs_mapping = _any_symbolic((args, kwargs)) or node.op == 'call_module'
            if needs_mapping:  # complex values as pairs of reals (hidet.torch.complex)
                try:
                    complex_mapping = complex_mapping_of(node, args, kwargs)
                except NotImplementedError as e:
                    unmapped(node, str(e))
                    return
                if complex_mapping is not None:
                    try:
                        env[node] = complex_mapping(*args, **kwargs)
                    except Exception as e:
                        where = source_line(node)
                        raise type(e)(f'hidet: mapping {target_name(node)} of fx node {node.name!r}'
                                      f'{" (" + where + ")" if where else ""} (complex values) failed: {e}') from e
                    return
            mapping = self.mapping_of(node)
            if mapping is None and needs_mapping:
                why = self._try_decomposition(node, args, kwargs, env, symbolic)
                if why is not None:
                    unmapped(node, why)
                elif base is not None and isinstance(env[node], hidet.Tensor):
                    update(node, base)
                return
            try:
                if _sizes_only(node, args, kwargs):  # s0 * s1, x.size(1) // 12: Python's arithmetic on Dims
                    env[node] = node.target(*args, **kwargs)
                elif not _any_symbolic((args, kwargs)) and node.op != 'call_module':
                    env[node] = _evaluate_with_torch(node, args, kwargs)
                elif node.op == 'call_module':
                    env[node] = mapping(self.gm.get_submodule(node.target))(*args, **kwargs)
                else:
                    env[node] = mapping(*args, **kwargs)
            except (NotImplementedError, TypeError) as e:
                # The mapping refuses these arguments (or takes them in a form it does not know):
                # PyTorch's decomposition may serve them.
                why = self._try_decomposition(node, args, kwargs, env, symbolic)
                if why is not None:
                    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    unmapped(node, f'its mapping does not take these arguments: {first}; {why}')
            except NotSymbolic:
                raise
            except Exception as e:
                where = source_line(node)
                # An argument without a value (its node gave None) is named with the node that gave it.
                empty = [f"fx node {a.name!r} ({target_name(a)}) gave None"
                         for a in node.all_input_nodes if a in env and env[a] is None]
                raise type(e)(f'hidet: mapping {target_name(node)} of fx node {node.name!r}'
                              f'{" (" + where + ")" if where else ""} failed: {e}'
                              f'{"; its argument " + ", ".join(empty) if empty else ""}') from e
            if base is not None and isinstance(env.get(node), hidet.Tensor):
                update(node, base)

        def update(node, base):
            """An in-place update (x.clamp_(...), x[i] = v, x += y) traced functionally: its value
            env[node] becomes the value of the tensor it updates, and, through the views that
            tensor is taken from, of the tensor that owns the memory (a graph input: written back
            after the graph runs); the views of it that were taken before are taken again, so
            that the nodes after the update read the new values."""
            root = _alias_root(base)
            value = env[node]
            if isinstance(value, hidet.Tensor) and base is not root:
                try:
                    value = _write_through(base, root, value, env, load)
                except NotImplementedError as e:
                    unmapped(node, f"an in-place update ({target_name(node)}) of fx node '{base.name}', a view of "
                                   f"'{root.name}': {e}: not mapped")
                    missing_nodes.extend(n for n in _alias_group(root) if n not in missing_nodes)
                    return
            if not isinstance(value, hidet.Tensor):
                return
            old = env.get(root)
            if isinstance(old, hidet.Tensor) and value.dtype != old.dtype:
                value = hidet.ops.cast(value, old.dtype)
            env[root] = value
            at = self.order[node]
            for view in _alias_group(root, computed_only=False):
                if view is root or self.order.get(view, at) >= at or view is node:
                    continue
                if _inplace_base(view) is not None or _is_identity_view(view):
                    source = _inplace_base(view) or view.args[0]
                    if isinstance(env.get(view), hidet.Tensor) and isinstance(env.get(source), hidet.Tensor):
                        env[view] = env[source]
                elif view in env and not isinstance(env[view], Unavailable):
                    evaluate(view)
            if root.op == 'placeholder':
                self.updated.add(root)

        for node in self.nodes:
            if node.op == 'placeholder':
                continue
            if node.op == 'output':
                output = load(node.args[0])
                break
            if node.op == 'get_attr':
                value = getattr(self.gm, node.target) if '.' not in node.target else \
                    self.gm.get_parameter(node.target)
                env[node] = _constant(value) if isinstance(value, torch.Tensor) else value
                continue
            evaluate(node)
        if missing:
            raise UnmappedError(missing, missing_nodes, details)
        return output

    def _try_decomposition(self, node, args, kwargs, env, symbolic):
        """Maps the node through core ATen into env[node]; None when that worked, else why not."""
        if not self.decompose:
            return 'not decomposed into core ATen (hidet.torch.dynamo_config.decompose(False) is set)'
        try:
            env[node] = self._decomposed(node, args, kwargs)
            return None
        except NotSymbolic as e:
            where = source_line(node)
            raise NotSymbolic(f"{e}: fx node '{node.name}' ({target_name(node)}"
                              f"{', ' + where if where else ''})") from e
        except UnmappedError as e:
            from .aten import REFUSED
            names = [f'{n} ({REFUSED[n]})' if n in REFUSED else n for n in e.names]
            return f'decomposed into core ATen, which has no mapping for: {"; ".join(names)}'
        except Exception as e:  # noqa: BLE001 - PyTorch's decomposition or a core-ATen mapping refused it
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if 'DynamicOutputShape' in type(e).__name__ or 'DataDependent' in type(e).__name__:
                first = ('the output shape depends on the values (data-dependent); let PyTorch run it with '
                         'hidet.torch.dynamo_config.fallback_to_torch(True)')
            return f'its decomposition into core ATen failed: {type(e).__name__}: {first}'


# Operations whose result may share the memory of their input (an in-place update of one is seen
# through the other).
_VIEW_METHODS = {'view', 'view_as', 'reshape', 'reshape_as', 'transpose', 'permute', 'expand', 'expand_as', 'narrow',
                 'select', 'unsqueeze', 'squeeze', 't', 'flatten', 'unflatten', 'split', 'chunk', 'unbind', 'as_strided',
                 'detach', 'contiguous', 'swapaxes', 'swapdims', 'movedim', 'moveaxis', 'mT', 'T', 'diagonal', 'unfold',
                 'split_with_sizes', 'tensor_split', 'view_as_real', 'real', 'imag', 'to', 'type_as', 'float', 'half'}
_VIEW_FUNCTIONS = {torch.reshape, torch.transpose, torch.permute, torch.narrow, torch.select, torch.unsqueeze,
                   torch.squeeze, torch.flatten, torch.split, torch.chunk, torch.unbind, torch.t, torch.swapaxes,
                   torch.movedim, torch.diagonal, torch.as_strided, torch.detach, torch.tensor_split}
_INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift,
                      operator.ipow, operator.setitem,
                      # aot_autograd's write-back of an input it updates (keep_inference_input_mutations)
                      torch.ops.aten.copy_.default}


def _aten_functional(target):
    """The functional overload of an in-place ATen overload (aten.add_.Scalar: aten.add.Scalar), which
    PyTorch's decompositions use on their temporaries (rms_norm's ``mean.add_(eps)``); None for others."""
    if not isinstance(target, torch._ops.OpOverload) or target is torch.ops.aten.copy_.default:
        return None
    return _aten_functional_of(target)


@functools.lru_cache(maxsize=None)
def _aten_functional_of(target):
    """_aten_functional of an OpOverload, once per overload (nodes ask it often while tracing)."""
    name = target._schema.name
    if not name.startswith('aten::') or not name.endswith('_') or name.endswith('__'):
        return None
    args = target._schema.arguments
    if not args or args[0].alias_info is None or not args[0].alias_info.is_write:
        return None
    packet = getattr(torch.ops.aten, name[len('aten::'):-1], None)
    return getattr(packet, target._overloadname, None) if packet is not None else None


def _inplace_base(node):
    """The fx node whose tensor an in-place node updates (``x.clamp_()``, ``x[i] = v``, ``x += y``,
    ``aten.add_.Scalar(x, 1)``): its first argument; None for other nodes."""
    if node.op == 'call_method' and node.target.endswith('_') and not node.target.startswith('_'):
        pass
    elif not (node.op == 'call_function' and (node.target in _INPLACE_OPERATORS or
                                              _aten_functional(node.target) is not None)):
        return None
    base = node.args[0] if node.args else None
    return base if isinstance(base, torch.fx.Node) else None


def _storage_of(n):
    """An id of the memory fx node n's tensor lives in (dynamo's fake tensors track it; for a tuple
    of views, split's, their one storage), or None when unknown."""
    ex = n.meta.get('example_value') if isinstance(n, torch.fx.Node) else None
    try:
        if isinstance(ex, torch.Tensor):
            return torch.multiprocessing.reductions.StorageWeakRef(ex.untyped_storage()).cdata
        if isinstance(ex, (list, tuple)) and ex and all(isinstance(t, torch.Tensor) for t in ex):
            ids = {torch.multiprocessing.reductions.StorageWeakRef(t.untyped_storage()).cdata for t in ex}
            return ids.pop() if len(ids) == 1 else None
    except Exception:  # noqa: BLE001 - a tensor without storage (a subclass): unknown
        return None
    return None


def _is_view(n):
    """True when fx node n's tensor shares the memory of its first argument's (a view, or an
    in-place node's result). Dynamo's fake tensors say so; without them (the graphs of
    decompositions), the operations that may return a view."""
    if n.op not in ('call_method', 'call_function') or not n.args or not isinstance(n.args[0], torch.fx.Node):
        return False
    if _inplace_base(n) is not None:
        return n.target is not operator.setitem  # x.add_(y) returns x; setitem returns None
    mine, theirs = _storage_of(n), _storage_of(n.args[0])
    if mine is not None and theirs is not None:
        return mine == theirs
    if n.op == 'call_method':
        return n.target in _VIEW_METHODS
    if n.target is operator.getitem:
        src = n.args[0]
        if not isinstance(src.meta.get('example_value'), torch.Tensor):  # an item of a tuple result
            return _is_view(src)
        items = n.args[1] if isinstance(n.args[1], tuple) else (n.args[1],)
        return not any(isinstance(i, (torch.fx.Node, list)) for i in items)  # basic indexing
    return n.target in _VIEW_FUNCTIONS


def _same_sizes(a, b):
    return len(a) == len(b) and all(x is y or str(x) == str(y) for x, y in zip(a, b))


def _is_identity_view(n):
    """A view that is its argument element for element (x.to(x.device), x.contiguous() of a
    contiguous x, x.detach(), an in-place node's result): same shape, strides and offset."""
    if _inplace_base(n) is not None:
        return n.target is not operator.setitem
    if not _is_view(n):
        return False
    mine, theirs = n.meta.get('example_value'), n.args[0].meta.get('example_value')
    if not (isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor)):
        return False
    return mine.dtype == theirs.dtype and _same_sizes(mine.shape, theirs.shape) and \
        _same_sizes(mine.stride(), theirs.stride()) and str(mine.storage_offset()) == str(theirs.storage_offset())


def _same_elements_in_order(view, root):
    """A view that holds all of root's elements in root's order (a reshape of a contiguous tensor):
    both contiguous, of one element count and offset."""
    mine, theirs = view.meta.get('example_value'), root.meta.get('example_value')
    if not (isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor)):
        return False
    try:
        return mine.dtype == theirs.dtype and mine.is_contiguous() and theirs.is_contiguous() and \
            str(mine.numel()) == str(theirs.numel()) and str(mine.storage_offset()) == str(theirs.storage_offset())
    except Exception:  # noqa: BLE001 - a size dynamo cannot decide: not known to be one
        return False


def _alias_root(n):
    """The fx node whose memory n's tensor lives in: n's first argument, followed through views
    (and in-place nodes, which return what they update) to a graph input or a computed tensor."""
    while _is_view(n):
        n = n.args[0]
    return n


def _alias_group(root, computed_only=True):
    """The fx nodes that share memory with `root` (the views taken from it, and views of those),
    in graph order; ``computed_only`` leaves graph inputs and attributes out."""
    group, todo = {}, [root]
    while todo:
        n = todo.pop()
        if n not in group:
            group[n] = None
            todo.extend(u for u in n.users if _is_view(u) and u.args[0] is n)
    order = {n: i for i, n in enumerate(root.graph.nodes)}
    nodes = sorted(group, key=lambda n: order.get(n, 0))
    return [n for n in nodes if not computed_only or n.op not in ('placeholder', 'get_attr')]


def _view_chain(base, root):
    """The views from root down to base (root excluded), in the order they are taken."""
    chain = []
    while base is not root:
        chain.append(base)
        base = base.args[0]
    return chain[::-1]


def _write_through(base, root, value, env, load):
    """The value of `root` after `value` is written into its view `base`: the views between them
    replayed by PyTorch on root's element positions (constant shapes) give the positions that
    base's elements occupy in root, where an index_put stores value; when base is root element
    for element (x.to(...), a reshape of a contiguous x), value reshaped."""
    old = env[root]
    chain = [v for v in _view_chain(base, root) if not _is_identity_view(v)]
    if not chain:
        return value
    if isinstance(old, hidet.Tensor) and _same_elements_in_order(base, root):  # x.view(-1), x.flatten(1)
        return hidet.ops.reshape(value, list(old.shape))
    if not isinstance(old, hidet.Tensor) or not all(isinstance(d, int) for d in old.shape):
        raise NotSymbolic(f"an in-place update of '{base.name}', a view of '{root.name}', over symbolic sizes")
    numel = math.prod(old.shape)
    positions = torch.arange(numel, dtype=torch.int64).reshape(list(old.shape))
    for v in chain:
        rest_args, kwargs = _to_torch_value(load(v.args[1:], v)), _to_torch_value(load(v.kwargs, v))
        if v.op == 'call_method':
            positions = getattr(positions, v.target)(*rest_args, **kwargs)
        else:
            positions = v.target(positions, *rest_args, **kwargs)
    positions = positions.cpu()
    if positions.dtype != torch.int64:
        raise NotImplementedError(f"the view '{base.name}' of '{root.name}' reinterprets its dtype")
    if positions.numel() == numel and bool((positions.reshape(-1) == torch.arange(numel)).all()):
        return hidet.ops.reshape(value, list(old.shape))
    device = 'cpu' if hidet.cuda_emulated() else 'cuda'  # where hidet's 'cuda' tensors live
    flat = hidet.from_torch(positions.reshape(-1).contiguous().to(device))
    if value.dtype != old.dtype:
        value = hidet.ops.cast(value, old.dtype)
    values = hidet.ops.reshape(hidet.ops.broadcast_to(value, list(positions.shape)), [-1])
    updated = hidet.ops.index_put(hidet.ops.reshape(old, [-1]), [flat], values, False)
    return hidet.ops.reshape(updated, list(old.shape))


def _inplace_refusal(node, base, env):
    """Why the in-place update `node` of `base` cannot be traced functionally (None when it can):
    base is a view of a tensor hidet does not hold, or of one whose views cannot be replayed."""
    root = _alias_root(base)
    if base is root:
        return None
    if not isinstance(env.get(root), hidet.Tensor):
        return (f"an in-place update ({target_name(node)}) of fx node '{base.name}', a view of '{root.name}', "
                'which hidet does not hold as a tensor: not mapped')
    for v in _view_chain(base, root):
        if v.op not in ('call_method', 'call_function'):
            return (f"an in-place update ({target_name(node)}) of fx node '{base.name}', a view of "
                    f"'{root.name}' through '{v.name}' ({v.op}): not mapped")
    return None


def size_hint(size):
    """The example's value of one of dynamo's sizes (a SymInt's hint), without adding a guard."""
    if isinstance(size, torch.SymInt):
        hint = getattr(size.node, 'hint', None)
        return int(hint) if hint is not None else int(size)
    return size


def _stand_in(node, symbolic):
    """A symbolic tensor shaped like the node's example value (or None); its sizes are Dims when
    tracing ``symbolic``, else the example's values."""
    def extent(size):
        return _dim_of(size) if symbolic else size_hint(size)

    ex = node.meta.get('example_value', node.meta.get('val'))  # (make_fx's graphs: 'val')
    if isinstance(ex, torch.Tensor) and ex.is_complex():  # a pair of reals (hidet.torch.complex)
        real = dtype_name(torch.empty(0, dtype=ex.dtype).real.dtype)
        return ComplexTensor(hidet.symbol([extent(s) for s in ex.shape] + [2], real, 'cuda', name=node.name))
    if isinstance(ex, torch.Tensor):
        return hidet.symbol([extent(s) for s in ex.shape], dtype_name(ex.dtype), 'cuda', name=node.name)
    if isinstance(ex, (list, tuple)):
        items = [hidet.symbol([extent(s) for s in t.shape], dtype_name(t.dtype), 'cuda', name=node.name)
                 if isinstance(t, torch.Tensor) else extent(t) if isinstance(t, torch.SymInt) else t for t in ex]
        return items if isinstance(ex, list) else tuple(items)
    return extent(ex) if isinstance(ex, torch.SymInt) else ex


def _leaves(value, keep, found):
    """The leaves of an argument structure (lists, tuples, dicts, slices) for which ``keep`` holds."""
    if isinstance(value, (list, tuple)):
        for y in value:
            _leaves(y, keep, found)
    elif isinstance(value, dict):
        for y in value.values():
            _leaves(y, keep, found)
    elif isinstance(value, slice):
        _leaves((value.start, value.stop, value.step), keep, found)
    elif keep(value):
        found.append(value)
    return found


def _any_symbolic(value):
    """True when ``value`` holds a symbolic tensor, a complex one (hidet.torch.complex: always mapped) or a
    symbolic size: the mapping runs."""
    return bool(_leaves(value, lambda v: (isinstance(v, hidet.Tensor) and v.is_symbolic) or is_symbolic_size(v)
                        or isinstance(v, ComplexTensor), []))


def _sizes_only(node, args, kwargs):
    """A Python operator (operator.mul, getitem, ...) on sizes, some of them symbolic: no tensor."""
    if node.op != 'call_function' or getattr(node.target, '__module__', None) not in ('_operator', 'operator'):
        return False
    found = _leaves((args, kwargs), lambda v: isinstance(v, hidet.Tensor) or is_symbolic_size(v), [])
    return bool(found) and not any(isinstance(v, hidet.Tensor) for v in found)


def _to_torch_value(x):
    if isinstance(x, hidet.Tensor):
        return x.torch()
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch_value(y) for y in x)
    if isinstance(x, dict):
        return {k: _to_torch_value(v) for k, v in x.items()}
    return x


def _constant(t):
    """A torch tensor as a constant of the graph: a complex one as its pair of reals (hidet.torch.complex)."""
    if t.is_complex():
        return ComplexTensor(to_hidet_constant(torch.view_as_real(t).contiguous()))
    return to_hidet_constant(t)


def _to_hidet_value(x):
    if isinstance(x, torch.Tensor):
        return _constant(x.contiguous())
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        return type(x)(_to_hidet_value(y) for y in x) if not hasattr(x, '_fields') else x
    return x


def _evaluate_with_torch(node, args, kwargs):
    """A node that reads no graph input (masks, position ids, constants' shapes): PyTorch computes
    it now and the result is a constant of the graph."""
    targs, tkwargs = _to_torch_value(args), _to_torch_value(kwargs)
    if node.op == 'call_method':
        out = getattr(targs[0], node.target)(*targs[1:], **tkwargs)
    else:
        out = node.target(*targs, **tkwargs)
    if node.op == 'call_function' and node.target is operator.setitem:
        return None
    return _to_hidet_value(out)


def output_symbols(output):
    """The symbols of the symbolic sizes in an output structure (sorted)."""
    return sorted({name for d in _leaves(output, is_symbolic_size, []) for name in d.symbols})


def flatten_outputs(output):
    """The hidet tensors of an output structure, in order, and a function rebuilding the
    structure from their torch counterparts."""
    tensors = []

    def collect(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                collect(y)
        elif isinstance(x, hidet.Tensor):
            tensors.append(x)
        elif isinstance(x, ComplexTensor):  # its pair of reals, viewed as complex again (rebuild)
            tensors.append(x.pair)

    collect(output)

    def rebuild(values, constants, sizes=None):
        """The output structure of the torch tensors ``values`` (and ``constants``); a symbolic
        size in it (a Python int the model updates, cache.cumulative_length_int + 1) is evaluated
        at the symbol values ``sizes``."""
        it = iter(values)

        def build(x):
            if isinstance(x, (list, tuple)):
                return type(x)(build(y) for y in x)
            if isinstance(x, hidet.Tensor):
                # A constant output is a fresh tensor per call, as in eager: the caller may update
                # it in place (a cache the model creates and a later graph writes).
                return constants[id(x)].clone() if id(x) in constants else next(it)
            if isinstance(x, ComplexTensor):
                return torch.view_as_complex(build(x.pair).contiguous())
            if is_symbolic_size(x):
                return int(x.evaluate(sizes))
            return x

        return build(output)

    return tensors, rebuild

