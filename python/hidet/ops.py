"""hidet's operators (the C++ hidet::ops), for tensors with data and symbolic tensors alike.

A few take Hidet's Python spellings as well: ``transpose(x, [1, 0])`` (a permutation) beside
``transpose(x, 0, 1)``, and ``flatten(x, start_dim=..., end_dim=...)``.
"""
from ._C.ops import *  # noqa: F401,F403
from ._C import ops as _ops

__all__ = [name for name in dir(_ops) if not name.startswith('_')]


def transpose(x, dim0, dim1=None):
    """x with axes dim0 and dim1 exchanged, or permuted by the list ``dim0`` (Hidet's spelling)."""
    if dim1 is None:
        axes = list(dim0)
        return _ops.permute(x, [a + x.ndim if a < 0 else a for a in axes])
    return _ops.transpose(x, dim0, dim1)


def flatten(x, start_dim=0, end_dim=-1, *, start=None, end=None):
    """x with axes start_dim..end_dim merged into one."""
    return _ops.flatten(x, start_dim if start is None else start, end_dim if end is None else end)
