"""hidet's PyTorch front end: ``torch.compile(model, backend='hidet')``, and
``hidet.torch.export(model, example_inputs, path)`` for serving from C++ or C (export.py).

Importing it registers the 'hidet' backend with dynamo (installing the package also registers it
through the ``torch_dynamo_backends`` entry point), the operator mappings (hidet.torch.mappings)
and the registry for adding your own (register_function, register_method, register_module,
HidetModule). Options: ``hidet.torch.dynamo_config``.
"""
from . import mappings  # noqa: F401  (registers the torch-level mappings)
from . import aten  # noqa: F401  (registers the core-ATen mappings)
from . import collectives  # noqa: F401  (registers torch.distributed's functional collectives)
from .backend import HidetCompiledModel, hidet_backend
from .dynamo_config import DynamoConfig, dynamo_config
from .export import export
from .interpreter import Interpreter, UnmappedError
from .registry import HidetModule, Registry, register_aten, register_function, register_method, register_module

__all__ = ['hidet_backend', 'dynamo_config', 'DynamoConfig', 'register_function', 'register_method',
           'register_module', 'register_aten', 'HidetModule', 'Registry', 'Interpreter', 'UnmappedError', 'HidetCompiledModel',
           'export']


def _register():
    """Registers 'hidet' with dynamo unless the installed package's entry point does (torch
    registers it from there when torch.compile first asks for it)."""
    from importlib.metadata import entry_points
    import torch._dynamo
    from torch._dynamo.backends.registry import _COMPILER_FNS
    if any(ep.name == 'hidet' for ep in entry_points(group='torch_dynamo_backends')):
        return
    if 'hidet' not in _COMPILER_FNS:
        torch._dynamo.register_backend(hidet_backend, name='hidet')


_register()
