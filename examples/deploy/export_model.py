"""Step 1 of the deployment example: export a torchvision classifier to a hidet model file, once,
on a machine with Python, PyTorch and hidet. classify.cpp and classify.c (step 2) serve the file
with libhidet alone.

    python3 export_model.py model.hidet                 # ResNet-50, f16, batch 1..8 (on a GPU)
    python3 export_model.py model.hidet --input x.bin   # also writes an input image and prints
                                                        # PyTorch's top-5 classes for it

On the CPU emulator (no GPU) the model is a small ResNet of torchvision's BasicBlocks (8 to 32
channels, 10 classes) on a 16x16 image, since the emulator interprets every kernel on the CPU; the
file then holds the kernels' IR. The weights are random: the batch norms' statistics are
calibrated on random images so that the classes depend on the image (a pretrained model, such as
torchvision's weights='DEFAULT', needs no such step).
"""
import argparse

import torch
import torchvision

import hidet
import hidet.torch


def tiny_resnet(num_classes):
    """A ResNet of torchvision's BasicBlocks with 8 to 32 channels: small enough for the emulator."""
    from torchvision.models.resnet import BasicBlock
    nn = torch.nn

    def down(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 1, 2, bias=False), nn.BatchNorm2d(cout))

    return nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                         BasicBlock(8, 8), BasicBlock(8, 16, 2, down(8, 16)), BasicBlock(16, 32, 2, down(16, 32)),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, num_classes))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('path', help='the model file to write')
    parser.add_argument('--input', help='also write a random input image (raw float32 or float16, NCHW) here')
    parser.add_argument('--model', default=None, help='a torchvision classifier (default: resnet50 on a GPU, '
                        'tiny_resnet on the emulator)')
    args = parser.parse_args()

    emulated = hidet.cuda_emulated()
    name = args.model or ('tiny_resnet' if emulated else 'resnet50')
    classes, size = (10, 16) if emulated else (1000, 224)
    device, dtype = ('cpu', torch.float32) if emulated else ('cuda', torch.float16)
    torch.manual_seed(0)
    model = tiny_resnet(classes) if name == 'tiny_resnet' else getattr(torchvision.models, name)(num_classes=classes)
    model.train()
    with torch.no_grad():  # batch-norm statistics of random images (see the top of the file)
        for _ in range(4):
            model(torch.randn(16, 3, size, size))
    model = model.to(device, dtype).eval()
    # The batch is symbolic in torch.export (traced at 2: torch specializes sizes of 1); the file
    # holds programs for the sizes listed.
    x = torch.randn(2, 3, size, size, device=device, dtype=dtype)
    batch = torch.export.Dim('batch', min=1, max=64)
    sizes = {'batch': [1]} if emulated else {'batch': [1, 2, 4, 8]}
    loaded = hidet.torch.export(model, (x,), args.path, dynamic_shapes=({0: batch},), sizes=sizes)
    print(f'wrote {args.path}: {name}, inputs {loaded.inputs}, outputs {loaded.outputs}, '
          f'target {loaded.target}, compiled shapes {loaded.compiled_shapes()}')

    if args.input:  # one image
        x = x[:1]
        x.cpu().numpy().tofile(args.input)
        with torch.no_grad():
            probs = torch.softmax(model(x).float(), dim=-1)[0]
        top = torch.topk(probs, 5)
        for p, i in zip(top.values.tolist(), top.indices.tolist()):
            print(f'  class {i}: {p:.4f}')


if __name__ == '__main__':
    main()
