"""Hidet's path of the mapping registry: the objects of :mod:`hidet.torch.registry`."""
from hidet.torch.registry import *  # noqa: F401,F403
from hidet.torch.registry import HidetModule, Registry, register_aten, register_function, register_method, \
    register_module  # noqa: F401
