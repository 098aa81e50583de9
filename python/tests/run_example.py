"""Runs an example script for meson test: exit 77 (SKIP) when torch or torchvision is missing."""
import runpy
import sys

try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401
except ImportError as e:
    print(f'SKIP: {e} (pip install torch torchvision)')
    sys.exit(77)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__')
