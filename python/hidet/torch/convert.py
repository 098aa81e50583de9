"""Conversions between torch and hidet values: dtypes, and tensors shared without copies.

The lowest module of hidet.torch: the registry (HidetModule.param), the interpreter and the
mappings all convert through it, and it imports none of them.
"""
import torch

import hidet

__all__ = ['dtype_name', 'torch_dtype', 'to_hidet', 'to_hidet_constant']

_DTYPES = {
    torch.float32: 'float32', torch.float16: 'float16', torch.bfloat16: 'bfloat16', torch.float64: 'float64',
    torch.int64: 'int64', torch.int32: 'int32', torch.int16: 'int16', torch.int8: 'int8', torch.uint8: 'uint8',
    torch.bool: 'bool', torch.float8_e4m3fn: 'float8_e4m3', torch.float8_e5m2: 'float8_e5m2',
}
_TORCH_DTYPES = {v: k for k, v in _DTYPES.items()}


def dtype_name(dtype):
    """'float32' for torch.float32; a ValueError for a dtype hidet does not have."""
    if dtype not in _DTYPES:
        raise ValueError(f'hidet has no dtype for {dtype}')
    return _DTYPES[dtype]


def torch_dtype(name):
    """torch.float32 for 'float32'."""
    if name not in _TORCH_DTYPES:
        raise ValueError(f'no torch dtype for {name!r}')
    return _TORCH_DTYPES[name]


_moved_logged = False


def to_hidet(tensor, log=True):
    """A hidet tensor sharing ``tensor``'s memory (made contiguous first when it is not). On the
    emulator, CPU tensors serve the 'cuda' device as they are; with a GPU, CPU tensors are moved
    to it (logged once; ``log=False`` for the constants a mapping makes, moved once when tracing)."""
    global _moved_logged
    if hidet.cuda_emulated():
        if tensor.device.type != 'cpu':
            raise ValueError(f'hidet runs on the CPU emulator here (no GPU driver), but a tensor on {tensor.device} '
                             'was given')
    elif tensor.device.type == 'cuda':
        check_gpu(tensor.device)
    elif tensor.device.type == 'cpu':
        if log and not _moved_logged:
            print('hidet: tensors on the CPU are moved to cuda, and results back to the CPU (give the model and '
                  'inputs on cuda to avoid the copies)')
            _moved_logged = True
        tensor = tensor.cuda()
    return hidet.from_torch(tensor)


def check_gpu(device):
    """Raises ValueError for a torch device on a GPU other than cuda:0: on a GPU hidet runs one GPU per
    process, as cuda:0 (its kernels' modules and scratch memory belong to that GPU)."""
    if device.type == 'cuda' and device.index not in (None, 0):
        raise ValueError(f'hidet runs its kernels on cuda:0, one GPU per process, but a tensor of this model is on '
                         f'{device}: make that GPU the only one the process sees (CUDA_VISIBLE_DEVICES; under '
                         'torchrun, hidet.distributed.use_local_gpu() before CUDA starts), where it is cuda:0, or '
                         'move the model and its inputs to cuda:0')


def to_hidet_constant(tensor):
    """A parameter, buffer or a mapping's index table as a hidet constant (sharing its memory; one
    on the CPU is copied to the GPU once, here)."""
    return to_hidet(tensor.detach(), log=False)
