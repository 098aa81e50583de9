"""hidet.torch.export: a PyTorch model compiled once into a model file that a C++ or C process
serves with no Python, no PyTorch and no NVRTC (hidet::Model, hidet/c_api.h; docs/deploying.md).

    import torch, torchvision, hidet
    model = torchvision.models.resnet50().cuda().half().eval()
    x = torch.randn(1, 3, 224, 224, device='cuda', dtype=torch.half)
    batch = torch.export.Dim('batch', min=1, max=64)
    hidet.torch.export(model, (x,), 'resnet50.hidet', dynamic_shapes={'x': {0: batch}},
                       sizes={'batch': [1, 8, 32]})

What happens: ``torch.export.export`` gives the ExportedProgram (the graph PyTorch's own
deployment path produces); its ``run_decompositions`` brings it to core ATen, except the operators
hidet maps whole (KEPT_WHOLE: linear, attention, layer and group norms), whose torch-level
mappings serve them as under ``torch.compile(backend='hidet')`` (aten.py maps the rest); the
interpreter of that backend traces the graph into a hidet FlowGraph, the program's parameters,
buffers and constants becoming the graph's constants. The graph is optimized and compiled with
the options of ``hidet.torch.dynamo_config`` (passed as keyword arguments: ``use_fp16=True``,
``search_space=1``, ...) and saved (``hidet.save_model``) with torch's input and output names,
dtypes and shapes.

Dynamic shapes: with ``dynamic_shapes`` (torch.export's), the graph is traced once on torch's
symbolic sizes, like ``torch.compile(dynamic=True)``, and compiled at every combination of the
``sizes`` given per dimension name ({'batch': [1, 8, 32], 'seq': [128, 512]}; a name not given
takes the example's value), each combination one program of the file: with
``dynamic_shapes('generic')`` (the default) the shapes share their shape-generic kernels, so the
file holds those once. A loaded model runs the sizes it holds and names the others in its error.
"""
import inspect
import itertools
import re
import sys
import time

import torch

import hidet
from .dynamo_config import dynamo_config
from .interpreter import Interpreter, NotSymbolic, flatten_outputs, is_symbolic_size

__all__ = ['export', 'KEPT_WHOLE']

_aten = torch.ops.aten

# The ATen operators the exported program keeps instead of decomposing them into core ATen (their
# mappings are the torch-level ones: one operator each; see aten.py).
KEPT_WHOLE = (_aten.linear.default, _aten.scaled_dot_product_attention.default, _aten.layer_norm.default,
              _aten.group_norm.default)


def _decompositions():
    """torch.export's default table without the operators hidet keeps whole."""
    table = torch.export.default_decompositions()
    for op in KEPT_WHOLE:
        table.pop(op, None)
    return table


def _flat_user_inputs(example_inputs):
    flat, _ = torch.utils._pytree.tree_flatten(example_inputs)
    return flat


def _dim_names(model, example_inputs, dynamic_shapes, fakes):
    """{torch's symbol ('s77'): the user's name ('batch')} from the torch.export.Dim objects of
    ``dynamic_shapes``, matched with the symbols of the user inputs' fake sizes (``fakes``: per
    flattened user input, its fake tensor)."""
    if not dynamic_shapes:
        return {}
    if isinstance(dynamic_shapes, dict):
        forward = model.forward if isinstance(model, torch.nn.Module) else model
        bound = inspect.signature(forward).bind(*example_inputs)
        specs = [dynamic_shapes.get(name) for name in bound.arguments]
    else:
        specs = list(dynamic_shapes)
    names = {}
    for spec, fake in zip(specs, fakes):
        if not isinstance(fake, torch.Tensor) or spec is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for d, dim in items:
            name = getattr(dim, '__name__', None)
            size = fake.shape[d]
            if name and isinstance(size, torch.SymInt):
                import sympy
                expr = size.node.expr
                if isinstance(expr, sympy.Symbol):
                    names[str(expr)] = name
    return names


def _rename(text, names):
    """`text` (a hidet.Dim printed: 's77*2') with torch's symbols replaced by the user's names."""
    return re.sub(r'\b[A-Za-z_]\w*\b', lambda m: names.get(m.group(0), m.group(0)), text)


def _info(name, dtype, shape, names):
    """A (name, dtype, shape, dims) tuple of hidet.save_model from a hidet shape (ints and Dims)."""
    extents = [int(d) if not is_symbolic_size(d) else -1 for d in shape]
    dims = ['' if not is_symbolic_size(d) else _rename(str(d), names) for d in shape]
    return (name, dtype, extents, dims)


def _size_combinations(symbols, sizes, example_values, ranges, names):
    """Every combination of values of the symbols (torch's names): from ``sizes`` by the user's
    name or torch's, else the example's value; each checked against torch's range."""
    per_symbol = []
    for s in symbols:
        user = names.get(s, s)
        values = sizes.get(user, sizes.get(s)) if sizes else None
        values = [example_values[s]] if values is None else [int(v) for v in values]
        lo, hi = ranges.get(s, (None, None))
        for v in values:
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                raise ValueError(f'hidet.torch.export: size {user} = {v} is outside the range torch.export '
                                 f'allows for it ([{lo}, {hi}])')
        per_symbol.append(sorted(set(values)))
    given = set(sizes or {}) - {names.get(s, s) for s in symbols} - set(symbols)
    if given:
        raise ValueError(f'hidet.torch.export: sizes names {sorted(given)}, which are no dynamic dimension of the '
                         f'inputs (those are {sorted(names.get(s, s) for s in symbols)})')
    return [dict(zip(symbols, combo)) for combo in itertools.product(*per_symbol)]


def _ranges(ep):
    out = {}
    for sym, vr in ep.range_constraints.items():
        lo, hi = vr.lower, vr.upper
        out[str(sym)] = (int(lo) if lo.is_finite else None, int(hi) if hi.is_finite else None)
    return out


def _placeholder_values(ep, example_inputs):
    """Per placeholder of the exported graph: its value (a parameter, buffer or constant of the
    program, or a user input) and whether it is a constant of the model."""
    from torch.export.graph_signature import InputKind
    user = iter(_flat_user_inputs(example_inputs))
    values, static = [], set()
    for i, spec in enumerate(ep.graph_signature.input_specs):
        if spec.kind == InputKind.USER_INPUT:
            value = next(user)
            if not isinstance(value, torch.Tensor):
                raise ValueError(f'hidet.torch.export: input {spec.arg.name!r} is a {type(value).__name__}; an exported '
                                 'model takes tensors (torch.export bakes Python values into the graph)')
            values.append(value)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            value = ep.state_dict.get(spec.target) if spec.target in ep.state_dict else ep.constants[spec.target]
            values.append(value)
            static.add(i)
        else:
            raise ValueError(f'hidet.torch.export: the exported program takes {spec.arg.name!r} of kind '
                             f'{spec.kind.name}, which an exported hidet model cannot hold')
    return values, static


def _check_outputs(ep):
    """The outputs' names: their keys in the model's output structure (a transformers ModelOutput's
    'last_hidden_state', a tuple's '0'), or the graph's name of a lone tensor."""
    from torch.export.graph_signature import OutputKind
    names = []
    for spec in ep.graph_signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise ValueError(f'hidet.torch.export: the model updates {spec.target!r} while it runs ({spec.kind.name}); '
                             'an exported model is pure: call model.eval() (batch norm in training mode updates its '
                             'statistics) and export under torch.no_grad()')
        names.append(getattr(spec.arg, 'name', f'output{len(names)}'))
    pytree = torch.utils._pytree
    spec = ep.call_spec.out_spec
    try:
        if spec is None or spec.is_leaf() or spec.num_leaves != len(names):
            return names
        leaves = pytree.tree_flatten_with_path(pytree.tree_unflatten(list(range(len(names))), spec))[0]
        for path, i in leaves:
            names[i] = '.'.join(str(getattr(k, 'key', getattr(k, 'idx', getattr(k, 'name', k)))) for k in path)
    except Exception:  # noqa: BLE001 - a structure pytree cannot rebuild: the graph's names
        pass
    return names


def export(model, example_inputs, path, dynamic_shapes=None, *, sizes=None, strict=False, mode=None, **options):
    """Exports ``model`` (called as ``model(*example_inputs)``) to the model file ``path`` (see the top
    of the file). ``dynamic_shapes`` is torch.export's; ``sizes`` ({dimension name: [values]}) lists the
    sizes each dynamic dimension is compiled at (default: the example's). ``mode`` and the keyword
    ``options`` are those of ``torch.compile(backend='hidet')`` (hidet.torch.dynamo_config's setters:
    ``use_fp16=True``, ``search_space=1``, ``dynamic_shapes='per_shape'``...). Returns the loaded
    model (hidet.Model) for a check in this process."""
    cfg = dynamo_config.with_options(mode, options)
    if cfg._fallback_to_torch:
        raise ValueError('hidet.torch.export: fallback_to_torch does not apply (an exported model runs without '
                         'PyTorch): every operator must have a hidet mapping')
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    t0 = time.time()
    hidet._C.set_search_space(cfg._search_space)
    hidet._C.set_tuning_budget(cfg._budget_seconds())
    with torch.no_grad():
        ep = torch.export.export(model, example_inputs, dynamic_shapes=dynamic_shapes, strict=strict)
        ep = ep.run_decompositions(_decompositions())
    gm = ep.graph_module
    output_names = _check_outputs(ep)
    values, static = _placeholder_values(ep, example_inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == 'placeholder']
    interp = Interpreter(gm, decompose=cfg._decompose, static_positions=static)
    interp.fake_values = [n.meta.get('val') for n in placeholders]
    user_fakes = [interp.fake_values[i] for i in range(len(placeholders)) if i not in static]
    names = _dim_names(model, example_inputs, dynamic_shapes, user_fakes)
    symbolic = any(isinstance(d, torch.SymInt) for f in user_fakes if isinstance(f, torch.Tensor) for d in f.shape)

    graph = None
    if symbolic:
        try:
            symbols, positions, output = interp.trace(values, symbolic=True)
            outs, _ = flatten_outputs(output)
            graph = _graph_of(outs, symbols, output_names)
        except NotSymbolic as e:
            print(f'hidet.torch.export: the model is traced per size; it does not trace once on torch\'s symbolic '
                  f'sizes: {e}', file=sys.stderr)
    if graph is None:
        symbols, positions, output = interp.trace(values)
        outs, _ = flatten_outputs(output)
        fixed = _graph_of(outs, symbols, output_names)
    inputs = [values[i] for i in positions]
    input_names = [placeholders[i].name for i in positions]

    # The sizes to compile: each symbol of the inputs, at its values.
    example = {}
    for p, x in zip(positions, inputs):
        fake = interp.fake_values[p]
        for d, size in enumerate(fake.shape if isinstance(fake, torch.Tensor) else []):
            if isinstance(size, torch.SymInt) and str(size.node.expr) not in example:
                example[str(size.node.expr)] = int(x.shape[d])
    combos = _size_combinations(sorted(example), sizes, example, _ranges(ep), names) if example else [{}]

    ctx = _pass_context(cfg)
    graphs = []
    if graph is not None:  # one symbolic trace, compiled per combination
        dispatch = hidet.ShapeDispatch(
            graph, mixed_precision=ctx.mixed_precision, layout_nhwc=ctx.layout_nhwc, verbose=cfg._verbose,
            tensor_cores=ctx.tensor_cores, parallel_k=ctx.parallel_k, reduce_precision=ctx.reduce_precision,
            shape_generic=cfg._dynamic_shapes in ('generic', 'bucket'), cuda_graph=False, max_shapes=0,
            weight_only_int8=ctx.weight_only_int8)
        for combo in combos:
            shaped = [_placeholder_of(x, combo) for x in graph.inputs]
            graphs.append(dispatch.compiled_for(shaped))
        input_infos = [_info(n, x.dtype, x.shape, names) for n, x in zip(input_names, graph.inputs)]
        output_infos = [_info(n, y.dtype, y.shape, names) for n, y in zip(output_names, graph.outputs)]
    else:  # traced per combination
        for combo in combos:
            if combo:
                shaped = [torch.zeros([_evaluate(d, combo) for d in interp.fake_values[p].shape], dtype=values[p].dtype)
                          for p in positions]
                vals = list(values)
                for p, t in zip(positions, shaped):
                    vals[p] = t
                syms, _, out = interp.trace(vals)
                g = _graph_of(flatten_outputs(out)[0], syms, output_names)
            else:
                g = fixed
            graphs.append(hidet.CompiledGraph(hidet.graph.optimize(g, ctx)))
        input_infos = _infos_across(input_names, [cg.graph.inputs for cg in graphs], names, interp, positions)
        output_infos = _infos_across(output_names, [cg.graph.outputs for cg in graphs], {}, None, None)
    hidet.save_model(path, graphs, input_infos, output_infos)
    if cfg._verbose:
        print(f'hidet.torch.export: {path}: {len(graphs)} compiled shape(s) in {time.time() - t0:.1f} s',
              file=sys.stderr)
    return hidet.Model.load(path)


def _graph_of(outs, symbols, output_names):
    if len(outs) != len(output_names) or any(not o.is_symbolic for o in outs):
        raise ValueError('hidet.torch.export: an output of the model does not depend on its inputs (a constant); '
                         'an exported model returns computed tensors only')
    return hidet.trace_from(outs, symbols)


def _placeholder_of(x, combo):
    """A tensor of x's dtype and shape at the symbol values ``combo`` (its values do not matter:
    ShapeDispatch.compiled_for reads the shapes)."""
    shape = [int(d.evaluate(combo)) if is_symbolic_size(d) else int(d) for d in x.shape]
    return hidet.zeros(shape, x.dtype, 'cuda')


def _evaluate(size, combo):
    if isinstance(size, torch.SymInt):
        import sympy
        return int(size.node.expr.subs({sympy.Symbol(k): v for k, v in combo.items()}))
    return int(size)


def _infos_across(tensor_names, per_graph, names, interp, positions):
    """(name, dtype, shape, dims) of tensors traced per shape: extents that differ across the graphs
    are -1, named after torch's symbol (inputs) or '<name>_dim<d>'."""
    infos = []
    for i, name in enumerate(tensor_names):
        first = per_graph[0][i]
        shape, dims = [], []
        for d, n in enumerate(first.shape):
            same = all(int(g[i].shape[d]) == int(n) for g in per_graph)
            shape.append(int(n) if same else -1)
            label = f'{name}_dim{d}'
            if not same and interp is not None:
                fake = interp.fake_values[positions[i]]
                if isinstance(fake, torch.Tensor) and isinstance(fake.shape[d], torch.SymInt):
                    label = _rename(str(fake.shape[d].node.expr), names)
            dims.append('' if same else label)
        infos.append((name, first.dtype, shape, dims))
    return infos


def _pass_context(cfg):
    ctx = hidet.graph.PassContext()
    if cfg._use_fp16:
        ctx.set_precision('float16')
    ctx.set_layout_nhwc(cfg._use_nhwc).set_verbose(cfg._verbose).set_use_tensor_core(cfg._use_tensor_core)
    ctx.parallel_k = cfg._parallel_k
    if cfg._use_fp16_reduction:
        ctx.set_reduce_precision('float16')
    ctx.set_weight_only_int8(cfg._weight_only_int8)
    return ctx
