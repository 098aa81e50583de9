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
import operator

import torch

import hidet
from .convert import dtype_name, to_hidet, to_hidet_constant, torch_dtype
from .registry import Registry

__all__ = ['Interpreter', 'UnmappedError', 'to_hidet_constant', 'to_hidet', 'dtype_name', 'unmapped_message',
           'symbolic_inputs', 'is_symbolic_size', 'has_symbolic_sizes', 'NotSymbolic', 'size_hint']

_tracing_inputs = []  # the symbolic graph inputs of the trace in progress (see symbolic_inputs)


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
        return hidet.Dim(str(expr))
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

    def is_static(self, i, example):
        """Whether placeholder i, of value ``example``, is a parameter or buffer that dynamo lifted
        into the graph's inputs: a constant of the model."""
        if self.static_positions is not None:
            return i in self.static_positions
        if isinstance(example, torch.nn.Parameter):
            return True
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
                # core ATen by the overload; other namespaces' custom operators by name
                return Registry.registered_aten.get(node.target) or Registry.registered_aten.get(str(node.target))
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

    def trace(self, example_inputs, symbolic=False):
        """Runs the mappings on symbolic inputs of the examples' shapes (``symbolic``: of dynamo's
        symbolic sizes, see the top of the file). Returns (the symbolic inputs, their positions
        among the placeholders, the output structure with hidet tensors). With ``symbolic``,
        NotSymbolic says why a graph cannot be traced once for all sizes."""
        env = {}
        symbols, positions = [], []
        for i, (node, ex) in enumerate(zip(self.placeholders, example_inputs)):
            fake = self.fake_values[i]
            if isinstance(ex, torch.Tensor):
                if self.is_static(i, ex):
                    env[node] = to_hidet_constant(ex)
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
            for node in self.placeholders:
                d = env.get(node)
                if is_symbolic_size(d) and not set(d.symbols) <= given:
                    raise NotSymbolic(f'the size {node.name} = {d} is no extent of an input tensor')
        with _tracing(symbols):
            output = self._run_nodes(env, symbolic)
        return symbols, positions, output

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

        for node in self.nodes:
            if node.op == 'placeholder':
                continue
            if node.op == 'output':
                output = load(node.args[0])
                break
            if node.op == 'get_attr':
                value = getattr(self.gm, node.target) if '.' not in node.target else \
                    self.gm.get_parameter(node.target)
                env[node] = to_hidet_constant(value) if isinstance(value, torch.Tensor) else value
                continue
            args, kwargs = load(node.args, node), load(node.kwargs, node)
            base = _inplace_base(node)
            if base is not None and _any_symbolic((args, kwargs)):  # (PyTorch updates constants itself)
                why = _inplace_refusal(node, base, self.order)
                if why is not None:
                    unmapped(node, why)
                    # With fallback_to_torch, PyTorch runs the tensors that share memory with the
                    # updated one too, so that the update reaches them as in eager.
                    missing_nodes.extend(n for n in _alias_group(base) if n not in missing_nodes)
                    continue
            mapping = self.mapping_of(node)
            needs_mapping = _any_symbolic((args, kwargs)) or node.op == 'call_module'
            if mapping is None and needs_mapping:
                why = self._try_decomposition(node, args, kwargs, env, symbolic)
                if why is not None:
                    unmapped(node, why)
                elif base is not None and isinstance(env[node], hidet.Tensor):
                    env[base] = env[node]  # later reads of the updated tensor see the update
                continue
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
                raise type(e)(f'hidet: mapping {target_name(node)} of fx node {node.name!r}'
                              f'{" (" + where + ")" if where else ""} failed: {e}') from e
            if base is not None and isinstance(env.get(node), hidet.Tensor):
                # An in-place update (x.clamp_(...), x[i] = v, x += y) traced functionally: its value
                # replaces the updated tensor's for the nodes after it.
                env[base] = env[node]
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
        except NotSymbolic:
            raise
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
                      operator.ipow, operator.setitem}


def _inplace_base(node):
    """The fx node whose tensor an in-place node updates (``x.clamp_()``, ``x[i] = v``, ``x += y``):
    its first argument; None for other nodes."""
    if node.op == 'call_method' and node.target.endswith('_') and not node.target.startswith('_'):
        pass
    elif not (node.op == 'call_function' and node.target in _INPLACE_OPERATORS):
        return None
    base = node.args[0] if node.args else None
    return base if isinstance(base, torch.fx.Node) else None


def _is_view(n):
    """True when fx node n's tensor may share another tensor's memory."""
    if n.op == 'call_method':
        return n.target in _VIEW_METHODS
    if n.op != 'call_function':
        return False
    if n.target is operator.getitem:
        src = n.args[0]
        if not isinstance(src, torch.fx.Node):
            return False
        if not isinstance(src.meta.get('example_value'), torch.Tensor):  # an item of a tuple result
            return _is_view(src)
        items = n.args[1] if isinstance(n.args[1], tuple) else (n.args[1],)
        return not any(isinstance(i, (torch.fx.Node, list)) for i in items)  # basic indexing
    return n.target in _VIEW_FUNCTIONS


def _alias_group(base):
    """The computed fx nodes that may share memory with `base`: the views it comes from and the
    views of each of them (graph inputs and attributes left out)."""
    root = base
    while _is_view(root) and isinstance(root.args[0], torch.fx.Node):
        root = root.args[0]
    group, todo = {}, [root]  # a dict: the graph's order, each node once
    while todo:
        n = todo.pop()
        if n not in group:
            group[n] = None
            todo.extend(u for u in n.users if _is_view(u))
    return [n for n in group if n.op not in ('placeholder', 'get_attr')]


def _written_back(node, view):
    """True for ``x[i] += y`` as dynamo records it: the in-place `node` updates view = x[i], and
    its value is stored back by x[i] = node (so x sees the update through the setitem)."""
    if not (view.op == 'call_function' and view.target is operator.getitem):
        return False
    return any(u.op == 'call_function' and u.target is operator.setitem and u.args[0] is view.args[0] and
               u.args[1] == view.args[1] and u.args[2] is node for u in node.users)


def _inplace_refusal(node, base, order):
    """Why the in-place update `node` of `base` cannot be traced functionally (None when it can): the
    updated tensor is a view of another, or a view of it is read after the update (either would
    have to see the new values too)."""
    at = order[node]
    if _is_view(base) and not _written_back(node, base):
        # Traced functionally when nothing reads the viewed tensor, or another view of it, after the
        # update (GhostNet's `x = cat(...)[:, :c]; x += shortcut`): only the view's value changes.
        root = base
        while _is_view(root) and isinstance(root.args[0], torch.fx.Node):
            root = root.args[0]
        seen_later = root.op in ('placeholder', 'get_attr') or any(
            order.get(u, -1) > at for m in _alias_group(base) if m is not base for u in m.users)
        if seen_later:
            return (f"an in-place update ({target_name(node)}) of fx node '{base.name}', a view of another tensor "
                    'that is read after it: not mapped (the tensor it views would change too)')
    for user in base.users:
        if user is node or order.get(user, -1) > at or not _is_view(user):
            continue
        if any(order.get(u, -1) > at for u in user.users):
            return (f"an in-place update ({target_name(node)}) of fx node '{base.name}', whose view '{user.name}' "
                    'is read after it: not mapped')
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

    ex = node.meta.get('example_value')
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
    """True when ``value`` holds a symbolic tensor or a symbolic size: the mapping runs."""
    return bool(_leaves(value, lambda v: (isinstance(v, hidet.Tensor) and v.is_symbolic) or is_symbolic_size(v), []))


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


def _to_hidet_value(x):
    if isinstance(x, torch.Tensor):
        return to_hidet_constant(x.contiguous())
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

    collect(output)

    def rebuild(values, constants):
        it = iter(values)

        def build(x):
            if isinstance(x, (list, tuple)):
                return type(x)(build(y) for y in x)
            if isinstance(x, hidet.Tensor):
                return constants[id(x)] if id(x) in constants else next(it)
            return x

        return build(output)

    return tensors, rebuild

