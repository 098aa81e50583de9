"""Shared helpers of the Python tests (run by meson test with PYTHONPATH=<build>/python)."""
import pytest

torch = pytest.importorskip('torch')


def assert_close(got, want, atol=1e-4, rtol=1e-4):
    assert got.shape == want.shape, f'shape {tuple(got.shape)} != {tuple(want.shape)}'
    assert got.dtype == want.dtype, f'dtype {got.dtype} != {want.dtype}'
    torch.testing.assert_close(got.float(), want.float(), atol=atol, rtol=rtol)
