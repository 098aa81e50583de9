"""fx graph -> hidet FlowGraph.

The interpreter walks a torch.fx graph from dynamo and calls, for every node, the mapping
registered for its target (registry.py) on hidet tensors: graph inputs are hidet symbolic tensors
of the example inputs' shapes, so the mappings record a FlowGraph instead of running anything.
Parameters and buffers (dynamo passes them as graph inputs) become constants that share the torch
tensors' memory. Every unmapped target is found before anything runs and reported at once.
"""
import operator

import torch

import hidet
from .registry import Registry

__all__ = ['Interpreter', 'UnmappedError', 'to_hidet_constant', 'to_hidet', 'dtype_name', 'unmapped_message']

_DTYPES = {
    torch.float32: 'float32', torch.float16: 'float16', torch.bfloat16: 'bfloat16', torch.float64: 'float64',
    torch.int64: 'int64', torch.int32: 'int32', torch.int16: 'int16', torch.int8: 'int8', torch.uint8: 'uint8',
    torch.bool: 'bool', torch.float8_e4m3fn: 'float8_e4m3', torch.float8_e5m2: 'float8_e5m2',
}


def dtype_name(dtype):
    """'float32' for torch.float32; a ValueError for a dtype hidet does not have."""
    if dtype not in _DTYPES:
        raise ValueError(f'hidet has no dtype for {dtype}')
    return _DTYPES[dtype]


def torch_dtype(name):
    for k, v in _DTYPES.items():
        if v == name:
            return k
    raise ValueError(f'no torch dtype for {name!r}')


_moved_logged = False


def to_hidet(tensor):
    """A hidet tensor sharing ``tensor``'s memory (made contiguous first when it is not). On the
    emulator, CPU tensors serve the 'cuda' device as they are; with a GPU, CPU tensors are moved
    to it (logged once)."""
    global _moved_logged
    if hidet.cuda_emulated():
        if tensor.device.type != 'cpu':
            raise ValueError(f'hidet runs on the CPU emulator here (no GPU driver), but a tensor on {tensor.device} '
                             'was given')
    elif tensor.device.type == 'cpu':
        if not _moved_logged:
            print('hidet: tensors on the CPU are moved to cuda (give the model and inputs on cuda to avoid the copy)')
            _moved_logged = True
        tensor = tensor.cuda()
    return hidet.from_torch(tensor)


def to_hidet_constant(tensor):
    """A parameter or buffer as a hidet constant (sharing its memory)."""
    return to_hidet(tensor.detach())


class UnmappedError(NotImplementedError):
    """Operators without a mapping: ``names`` (each once) and the fx ``nodes``."""

    def __init__(self, names, nodes=()):
        super().__init__(unmapped_message(names))
        self.names, self.nodes = list(names), list(nodes)


def unmapped_message(names):
    lines = ['The following operators are not supported or mapped by hidet yet:']
    lines += [f'  {n}' for n in names]
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
    """Maps one fx GraphModule to hidet (see the top of the file)."""

    def __init__(self, gm):
        self.gm = gm
        self.nodes = list(gm.graph.nodes)
        self.placeholders = [n for n in self.nodes if n.op == 'placeholder']
        self.source_names = [source_name(n) for n in self.placeholders]

    def is_static(self, i, example):
        """Whether placeholder i, of value ``example``, is a parameter or buffer that dynamo lifted
        into the graph's inputs: a constant of the model."""
        if isinstance(example, torch.nn.Parameter):
            return True
        name = self.source_names[i]
        return isinstance(example, torch.Tensor) and ('._parameters[' in name or '._buffers[' in name)

    def mapping_of(self, node):
        if node.op == 'call_function':
            return Registry.registered_functions.get(node.target)
        if node.op == 'call_method':
            return Registry.registered_methods.get(node.target)
        if node.op == 'call_module':
            module = self.gm.get_submodule(node.target)
            cls = Registry.registered_modules.get(type(module))
            return None if cls is None else cls
        return True

    def trace(self, example_inputs):
        """Runs the mappings on symbolic inputs of the examples' shapes. Returns (graph, positions of
        the symbolic inputs among the placeholders, the output structure with hidet tensors)."""
        env = {}
        symbols, positions = [], []
        for i, (node, ex) in enumerate(zip(self.placeholders, example_inputs)):
            if isinstance(ex, torch.Tensor):
                if self.is_static(i, ex):
                    env[node] = to_hidet_constant(ex)
                else:
                    sym = hidet.symbol(list(ex.shape), dtype_name(ex.dtype), 'cuda', name=node.name)
                    env[node] = sym
                    symbols.append(sym)
                    positions.append(i)
            else:
                env[node] = int(ex) if isinstance(ex, torch.SymInt) else ex

        def load(a):
            return torch.fx.node.map_arg(a, lambda n: env[n])

        output = None
        missing, missing_nodes = [], []
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
            args, kwargs = load(node.args), load(node.kwargs)
            mapping = self.mapping_of(node)
            if mapping is None and (_any_symbolic((args, kwargs)) or node.op == 'call_module'):
                # Listed with the others at the end; a stand-in of the right type lets tracing go on.
                name = target_name(node)
                if node.op == 'call_module':
                    cls = type(self.gm.get_submodule(node.target))
                    name = f'{cls.__module__}.{cls.__name__}'
                if name not in missing:
                    missing.append(name)
                missing_nodes.append(node)
                env[node] = _stand_in(node)
                continue
            try:
                if not _any_symbolic((args, kwargs)) and node.op != 'call_module':
                    env[node] = _evaluate_with_torch(node, args, kwargs)
                elif node.op == 'call_module':
                    env[node] = mapping(self.gm.get_submodule(node.target))(*args, **kwargs)
                else:
                    env[node] = mapping(*args, **kwargs)
            except Exception as e:
                where = source_line(node)
                raise type(e)(f'hidet: mapping {target_name(node)} of fx node {node.name!r}'
                              f'{" (" + where + ")" if where else ""} failed: {e}') from e
        if missing:
            raise UnmappedError(missing, missing_nodes)
        return symbols, positions, output


def _stand_in(node):
    """A symbolic tensor shaped like the node's example value (or None)."""
    ex = node.meta.get('example_value')
    if isinstance(ex, torch.Tensor):
        return hidet.symbol([int(s) for s in ex.shape], dtype_name(ex.dtype), 'cuda', name=node.name)
    if isinstance(ex, (list, tuple)):
        return type(ex)(hidet.symbol([int(s) for s in t.shape], dtype_name(t.dtype), 'cuda', name=node.name)
                        if isinstance(t, torch.Tensor) else t for t in ex)
    return ex


def _any_symbolic(value):
    found = []

    def visit(x):
        if isinstance(x, (list, tuple)):
            for y in x:
                visit(y)
        elif isinstance(x, dict):
            for y in x.values():
                visit(y)
        elif isinstance(x, hidet.Tensor) and x.is_symbolic:
            found.append(x)

    visit(value)
    return bool(found)


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

