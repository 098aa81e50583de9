"""Shared helpers of the Python tests (run by meson test with PYTHONPATH=<build>/python)."""
import pytest

torch = pytest.importorskip('torch')


def assert_close(got, want, atol=1e-4, rtol=1e-4):
    assert got.shape == want.shape, f'shape {tuple(got.shape)} != {tuple(want.shape)}'
    assert got.dtype == want.dtype, f'dtype {got.dtype} != {want.dtype}'
    torch.testing.assert_close(got.float(), want.float(), atol=atol, rtol=rtol)


# Eager references in exact f32: PyTorch's default lets cuDNN convolutions round their inputs to
# TF32 (about 1e-3 relative), which the tolerances of f32 tests do not allow for.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
