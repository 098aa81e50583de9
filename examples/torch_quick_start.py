"""The flows of Hidet's PyTorch tutorials with this package: compile a torchvision ResNet-18 with
torch.compile(backend='hidet'), time it against eager with hidet.utils.benchmark_func, print the
input graph and the correctness report, and hit (then fix) an unmapped operator as in the guide to
adding operator mappings.

    python3 examples/torch_quick_start.py        # GPU when there is one, else the CPU emulator

On the emulator (every kernel interpreted on the CPU) the model is torchvision's ShuffleNetV2 x0.5
on a 32x32 image: a ResNet's 512-channel layers alone take the emulator tens of seconds."""
import operator

import torch
import torchvision

import hidet
import hidet.torch
from hidet.torch import Registry, register_function

device = 'cpu' if hidet.cuda_emulated() else 'cuda'
size = 32 if hidet.cuda_emulated() else 224

# 1. Compile a model and compare with eager PyTorch.
if hidet.cuda_emulated():
    model = torchvision.models.shufflenet_v2_x0_5(num_classes=10)
else:
    model = torchvision.models.resnet18(weights=None)
model = model.to(device).eval()
x = torch.randn(1, 3, size, size, device=device)
with torch.no_grad():
    model_opt = torch.compile(model, backend='hidet')
    y1, y2 = model_opt(x), model(x)
print(f'max |hidet - eager| = {(y1 - y2).abs().max().item():.2e}')
if not hidet.cuda_emulated():
    with torch.no_grad():
        print(f'eager: {hidet.utils.benchmark_func(lambda: model(x)):.3f} ms')
        print(f'hidet: {hidet.utils.benchmark_func(lambda: model_opt(x)):.3f} ms')

# 2. The input graph and the correctness report of a small model.
torch._dynamo.reset()
hidet.torch.dynamo_config.print_input_graph(True)
hidet.torch.dynamo_config.correctness_report(True)
small = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).to(device).eval()
with torch.no_grad():
    torch.compile(small, backend='hidet')(torch.randn(4, 16, device=device))
hidet.torch.dynamo_config.reset()

# 3. An unmapped operator, as in the guide: remove two mappings, see the error, add them back.
saved_relu = Registry.registered_functions.pop(torch.nn.functional.relu)
saved_add = Registry.registered_functions.pop(operator.add)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(10, 10)

    def forward(self, x):
        x = torch.nn.functional.relu(self.linear(x))
        return (x + x).flatten()


m = Model().to(device)
torch._dynamo.reset()
try:
    torch.compile(m, backend='hidet')(torch.randn(10, 10, device=device))
except Exception as e:
    print(e)


@register_function(torch.nn.functional.relu)
def torch_relu(x, inplace=False):
    return hidet.ops.relu(x)


@register_function(operator.add)
def operator_add(x, y):
    return hidet.ops.add(x, y)


torch._dynamo.reset()
x = torch.randn(10, 10, device=device)
with torch.no_grad():
    ok = torch.allclose(torch.compile(m, backend='hidet')(x), m(x), atol=1e-4)
print('success!' if ok else 'MISMATCH')
Registry.registered_functions[torch.nn.functional.relu] = saved_relu
Registry.registered_functions[operator.add] = saved_add
raise SystemExit(0 if ok else 1)
