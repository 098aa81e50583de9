"""Hidet's path of the dynamo backend: :func:`hidet.torch.hidet_backend` (importing this registers
'hidet' with torch.compile)."""
from hidet.torch.backend import HidetCompiledModel, hidet_backend  # noqa: F401
