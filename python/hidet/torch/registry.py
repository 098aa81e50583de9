"""The operator-mapping registry: how torch functions, tensor methods and modules become hidet
operators (the API of Hidet's guide to adding operator mappings).

    from hidet.torch import register_function, register_method, register_module, HidetModule

    @register_function(torch.nn.functional.relu)
    def torch_relu(x, inplace=False):          # the signature of the torch function
        return hidet.ops.relu(x)                # x is a hidet.Tensor; return hidet tensors

    @register_method(torch.Tensor.flatten)
    def tensor_flatten(self, start_dim=0, end_dim=-1):
        return hidet.ops.flatten(self, start_dim, end_dim)

    @register_module(torch.nn.Linear)
    class HidetLinear(HidetModule):
        def __init__(self, torch_module):
            super().__init__(torch_module)
            self.weight = self.param('weight')
            self.bias = self.param('bias', optional=True)
        def __call__(self, x):
            return hidet.ops.linear(x, self.weight, self.bias)

A later registration of the same target replaces the earlier one.
"""
from .convert import to_hidet_constant

__all__ = ['Registry', 'register_function', 'register_method', 'register_module', 'register_aten', 'HidetModule']


class _MethodTable(dict):
    """Tensor-method mappings keyed by the method's name: ``torch.Tensor.flatten`` and 'flatten'
    name the same entry (Hidet's guide deletes entries by the method object)."""

    @staticmethod
    def _key(method):
        return method if isinstance(method, str) else method.__name__

    def __getitem__(self, k):
        return super().__getitem__(self._key(k))

    def __setitem__(self, k, v):
        super().__setitem__(self._key(k), v)

    def __delitem__(self, k):
        super().__delitem__(self._key(k))

    def __contains__(self, k):
        return super().__contains__(self._key(k))

    def get(self, k, default=None):
        return super().get(self._key(k), default)

    def pop(self, k, *default):
        return super().pop(self._key(k), *default)


class Registry:
    """The mappings: ``registered_functions`` (by the function object), ``registered_methods`` (by
    the torch.Tensor method or its name), ``registered_modules`` (by the module class), and
    ``registered_aten`` (by the core ATen operator overload, torch.ops.aten.add.Tensor: the second
    level, for what a torch-level node decomposes into; see aten.py)."""
    registered_functions = {}
    registered_methods = _MethodTable()
    registered_modules = {}
    registered_aten = {}

    @staticmethod
    def method_key(method):
        return _MethodTable._key(method)


def register_function(*functions):
    """Registers the decorated function as the mapping of each torch function in ``functions``."""
    def decorator(mapping):
        for f in functions:
            Registry.registered_functions[f] = mapping
        return mapping
    return decorator


def register_method(*methods):
    """Registers the decorated function as the mapping of each tensor method (``torch.Tensor.x``
    or its name); it receives the tensor as ``self``."""
    def decorator(mapping):
        for m in methods:
            Registry.registered_methods[m] = mapping
        return mapping
    return decorator


def register_aten(*overloads):
    """Registers the decorated function as the mapping of each ATen operator overload
    (``torch.ops.aten.add.Tensor``); it receives the overload's arguments, hidet tensors in place
    of tensors."""
    def decorator(mapping):
        for op in overloads:
            Registry.registered_aten[op] = mapping
        return mapping
    return decorator


def register_module(*module_classes):
    """Registers the decorated HidetModule subclass as the mapping of each torch module class."""
    def decorator(cls):
        for c in module_classes:
            Registry.registered_modules[c] = cls
        return cls
    return decorator


class HidetModule:
    """Base of module mappings: holds the torch module; ``param(name)`` gives its parameter or
    buffer as a hidet tensor sharing the torch tensor's memory."""

    def __init__(self, torch_module):
        self.torch_module = torch_module

    def param(self, name, optional=False):
        value = getattr(self.torch_module, name, None)
        if value is None:
            if optional:
                return None
            raise ValueError(f'{type(self.torch_module).__name__} has no parameter {name!r}')
        return to_hidet_constant(value)

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f'{type(self).__name__} does not implement __call__')
