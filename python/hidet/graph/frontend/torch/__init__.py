"""``hidet.graph.frontend.torch``: Hidet's path of the PyTorch front end, the same objects as
:mod:`hidet.torch` (the registry, the backend, dynamo_config), so that code written for Hidet's
guides (``from hidet.graph.frontend.torch.registry import register_function``) runs unchanged."""
from hidet.torch import *  # noqa: F401,F403
from hidet.torch import DynamoConfig, Registry, dynamo_config  # noqa: F401
