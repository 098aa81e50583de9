"""Step 1 of the deployment example: export a torchvision classifier to a hidet model file, once,
on a machine with Python, PyTorch and hidet. classify.cpp and classify.c (step 2) serve the file
with libhidet alone.

    python3 export_model.py model.hidet                 # ResNet-50, f16, batch 1..8 (on a GPU)
    python3 export_model.py model.hidet --input x.bin   # also writes an input image and prints
                                                        # PyTorch's top-5 classes for it

On the CPU emulator (no GPU) the model is torchvision's ShuffleNetV2 x0.5 with 10 classes on a
32x32 image (the emulator interprets every kernel on the CPU), and the file holds the kernels' IR.
"""
import argparse

import torch
import torchvision

import hidet
import hidet.torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('path', help='the model file to write')
    parser.add_argument('--input', help='also write a random input image (raw float32 or float16, NCHW) here')
    parser.add_argument('--model', default=None, help='a torchvision classifier (default: resnet50 on a GPU, '
                        'shufflenet_v2_x0_5 on the emulator)')
    args = parser.parse_args()

    emulated = hidet.cuda_emulated()
    name = args.model or ('shufflenet_v2_x0_5' if emulated else 'resnet50')
    classes, size = (10, 32) if emulated else (1000, 224)
    device, dtype = ('cpu', torch.float32) if emulated else ('cuda', torch.float16)
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(num_classes=classes).to(device, dtype).eval()
    x = torch.randn(1, 3, size, size, device=device, dtype=dtype)

    # The batch is symbolic in torch.export; the file holds programs for the sizes listed.
    batch = torch.export.Dim('batch', min=1, max=64)
    sizes = {'batch': [1]} if emulated else {'batch': [1, 2, 4, 8]}
    loaded = hidet.torch.export(model, (x,), args.path, dynamic_shapes={'x': {0: batch}}, sizes=sizes)
    print(f'wrote {args.path}: {name}, inputs {loaded.inputs}, outputs {loaded.outputs}, '
          f'target {loaded.target}, compiled shapes {loaded.compiled_shapes()}')

    if args.input:
        x.cpu().numpy().tofile(args.input)
        with torch.no_grad():
            probs = torch.softmax(model(x).float(), dim=-1)[0]
        top = torch.topk(probs, 5)
        for p, i in zip(top.values.tolist(), top.indices.tolist()):
            print(f'  class {i}: {p:.4f}')


if __name__ == '__main__':
    main()
