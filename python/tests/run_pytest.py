"""Runs one test file with pytest for meson test (further arguments go to pytest: `-k` splits a
long file over several meson tests that run side by side): exit 77 (SKIP) when pytest or torch is
missing, and pytest's own exit code otherwise (5, no test collected, counts as a failure)."""
import sys

try:
    import pytest
    import torch  # noqa: F401
except ImportError as e:
    print(f'SKIP: {e} (scripts/setup installs pytest and torch)')
    sys.exit(77)
if sys.argv[1].endswith('_gpu.py'):
    import hidet
    if hidet.cuda_emulated():
        print('SKIP: this test file needs a GPU (the cuda device is the CPU emulator here)')
        sys.exit(77)
sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--rootdir', __file__.rsplit('/', 1)[0], sys.argv[1]] + sys.argv[2:]))
