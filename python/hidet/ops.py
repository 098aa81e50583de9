"""hidet's operators (the C++ hidet::ops), for tensors with data and symbolic tensors alike."""
from ._C.ops import *  # noqa: F401,F403
from ._C import ops as _ops

__all__ = [name for name in dir(_ops) if not name.startswith('_')]
