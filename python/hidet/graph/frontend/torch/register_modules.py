"""Hidet's path of the module that registers the torch-level mappings (all of them live in
:mod:`hidet.torch.mappings`; importing this registers them)."""
from hidet.torch import mappings  # noqa: F401
