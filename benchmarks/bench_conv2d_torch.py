"""cuDNN's conv2d (torch.nn.functional.conv2d) on the ResNet-50 layers of bench_conv2d (and on its
table of ResNeXt-50's grouped layers), same table format: f32 NCHW (allow_tf32=False), f16 NCHW, f16
NHWC (channels_last), bias included, torch.backends.cudnn.benchmark=True. CUDA-event timing, median
of 7 batches after warm-up, two ways: the calls replayed from a CUDA graph (GPU time, no Python
launch overhead: compare these with bench_conv2d) and eager calls (what a PyTorch program sees;
small layers are launch-bound). `--grouped`: the grouped table alone; `--depthwise`: the
depthwise layers of bench_conv2d's last table alone (f16 NHWC, CUDA graph replay); `--wide`: the
dense layers of ResNeXt-50 32x4d and Wide ResNet-50-2 at batch 16 alone (bench_conv2d --wide);
`--effnet`: EfficientNetV2-S's alone (bench_conv2d --effnet)."""
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("bench_conv2d_torch: torch is not installed; nothing to time")
    sys.exit(0)

if not torch.cuda.is_available():
    print("bench_conv2d_torch: no GPU; nothing to time")
    sys.exit(0)

from torch_timing import time_ms as _time_ms  # noqa: E402


def time_ms(fn):
    return _time_ms(fn, batches=7)

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False

# name, in channels, input size, out channels, kernel, stride, padding, occurrences in ResNet-50
LAYERS = [
    ("stem 7x7 3-64 s2", 3, 224, 64, 7, 2, 3, 1), ("s1 1x1 64-64", 64, 56, 64, 1, 1, 0, 1),
    ("s1 3x3 64-64", 64, 56, 64, 3, 1, 1, 3), ("s1 1x1 64-256", 64, 56, 256, 1, 1, 0, 4),
    ("s1 1x1 256-64", 256, 56, 64, 1, 1, 0, 2), ("s2 1x1 256-128", 256, 56, 128, 1, 1, 0, 1),
    ("s2 3x3 128-128 s2", 128, 56, 128, 3, 2, 1, 1), ("s2 1x1 128-512", 128, 28, 512, 1, 1, 0, 4),
    ("s2 ds 1x1 256-512 s2", 256, 56, 512, 1, 2, 0, 1), ("s2 1x1 512-128", 512, 28, 128, 1, 1, 0, 3),
    ("s2 3x3 128-128", 128, 28, 128, 3, 1, 1, 3), ("s3 1x1 512-256", 512, 28, 256, 1, 1, 0, 1),
    ("s3 3x3 256-256 s2", 256, 28, 256, 3, 2, 1, 1), ("s3 1x1 256-1024", 256, 14, 1024, 1, 1, 0, 6),
    ("s3 ds 1x1 512-1024 s2", 512, 28, 1024, 1, 2, 0, 1), ("s3 1x1 1024-256", 1024, 14, 256, 1, 1, 0, 5),
    ("s3 3x3 256-256", 256, 14, 256, 3, 1, 1, 5), ("s4 1x1 1024-512", 1024, 14, 512, 1, 1, 0, 1),
    ("s4 3x3 512-512 s2", 512, 14, 512, 3, 2, 1, 1), ("s4 1x1 512-2048", 512, 7, 2048, 1, 1, 0, 3),
    ("s4 ds 1x1 1024-2048 s2", 1024, 14, 2048, 1, 2, 0, 1), ("s4 1x1 2048-512", 2048, 7, 512, 1, 1, 0, 2),
    ("s4 3x3 512-512", 512, 7, 512, 3, 1, 1, 2),
]
MODES = [("f32 NCHW", torch.float32, False), ("f16 NCHW", torch.float16, False), ("f16 NHWC", torch.float16, True)]


GRAPH_CALLS = 20


def time_graph_ms(fn):
    """Per-call time of GRAPH_CALLS calls captured in one CUDA graph (after eager warm-up)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(GRAPH_CALLS):
            fn()
    return time_ms(g.replay) / GRAPH_CALLS




print(f"bench_conv2d_torch: torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
      f"{torch.cuda.get_device_name()}, cudnn.benchmark=True, allow_tf32=False")
results = {}
GROUPED_ONLY = '--grouped' in sys.argv[1:]  # the ResNeXt table alone, as bench_conv2d --grouped
DEPTHWISE_ONLY = '--depthwise' in sys.argv[1:]  # the depthwise table alone
WIDE_ONLY = '--wide' in sys.argv[1:]  # the dense ResNeXt-50 / WRN-50-2 layers alone
EFFNET_ONLY = '--effnet' in sys.argv[1:]  # the dense EfficientNetV2-S layers alone
ONE_TABLE = GROUPED_ONLY or DEPTHWISE_ONLY or WIDE_ONLY or EFFNET_ONLY
for batch in () if ONE_TABLE else (1, 16):
    for name, c, h, o, k, s, p, count in LAYERS:
        for i, (_, dt, nhwc) in enumerate(MODES):
            x = torch.randn(batch, c, h, h, device="cuda", dtype=dt)
            w = torch.randn(o, c, k, k, device="cuda", dtype=dt)
            b = torch.randn(o, device="cuda", dtype=dt)
            if nhwc:
                x = x.to(memory_format=torch.channels_last)
                w = w.to(memory_format=torch.channels_last)
            fn = lambda: F.conv2d(x, w, b, s, p)
            eager = time_ms(fn)
            try:
                graph = time_graph_ms(fn)
            except RuntimeError as e:  # capture failed: report eager
                print(f"{name} {MODES[i][0]}: CUDA graph capture failed ({e}); eager time used")
                graph = eager
            results[(batch, name, i)] = (graph, eager)

for how, which in (("CUDA graph replay: GPU time", 0), ("eager calls", 1)):
    for batch in () if ONE_TABLE else (1, 16):
        print(f"\ncuDNN batch {batch}, {how} (ms per conv, bias included)\n{'layer':<26s}" +
              "".join(f" {m[0]:>10s}" for m in MODES))
        total = [0.0] * len(MODES)
        net = [0.0] * len(MODES)
        for name, c, h, o, k, s, p, count in LAYERS:
            row = f"{name:<26s}"
            for i in range(len(MODES)):
                ms = results[(batch, name, i)][which]
                total[i] += ms
                net[i] += ms * count
                row += f" {ms:10.4f}"
            print(row)
        print(f"{'sum (distinct layers)':<26s}" + "".join(f" {v:10.4f}" for v in total))
        print(f"{'net (x occurrences)':<26s}" + "".join(f" {v:10.4f}" for v in net))

# ResNeXt-50 32x4d's grouped 3x3 layers (bench_conv2d's last table): f16 NHWC, CUDA graph replay.
GROUPED = [("s1 3x3 128 g32", 128, 56, 1, 3), ("s2 3x3 256 g32 s2", 256, 56, 2, 1), ("s2 3x3 256 g32", 256, 28, 1, 3),
           ("s3 3x3 512 g32 s2", 512, 28, 2, 1), ("s3 3x3 512 g32", 512, 14, 1, 5),
           ("s4 3x3 1024 g32 s2", 1024, 14, 2, 1), ("s4 3x3 1024 g32", 1024, 7, 1, 2)]
for batch in () if ONE_TABLE and not GROUPED_ONLY else (1, 16):
    print(f"\ncuDNN ResNeXt-50 32x4d grouped layers, batch {batch}, f16 NHWC, CUDA graph replay (ms per conv, bias "
          f"included)\n{'layer':<22s} {'cuDNN':>10s}")
    net = 0.0
    for name, c, h, s, count in GROUPED:
        x = torch.randn(batch, c, h, h, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
        w = torch.randn(c, c // 32, 3, 3, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
        b = torch.randn(c, device="cuda", dtype=torch.float16)
        ms = time_graph_ms(lambda: F.conv2d(x, w, b, s, 1, 1, 32))
        net += ms * count
        print(f"{name:<22s} {ms:10.4f}")
    print(f"{'net (x occurrences)':<22s} {net:10.4f}")

# The depthwise layers of bench_conv2d's last table: f16 NHWC, CUDA graph replay.
DEPTHWISE = [("convnext 7x7 96 @56", 96, 56, 7, 1), ("convnext 7x7 192 @28", 192, 28, 7, 1),
             ("convnext 7x7 384 @14", 384, 14, 7, 1), ("convnext 7x7 768 @7", 768, 7, 7, 1),
             ("mbv2 3x3 144 @56", 144, 56, 3, 1), ("mbv2 3x3 144 @56 s2", 144, 56, 3, 2),
             ("mbv2 3x3 576 @14", 576, 14, 3, 1), ("effnet 5x5 240 @28 s2", 240, 28, 5, 2),
             ("effnet 5x5 672 @14", 672, 14, 5, 1), ("mbv3 5x5 960 @7", 960, 7, 5, 1)]
for batch in () if ONE_TABLE and not DEPTHWISE_ONLY else (1, 16):
    print(f"\ncuDNN depthwise layers, batch {batch}, f16 NHWC, CUDA graph replay (ms per conv, bias included)\n"
          f"{'layer':<24s} {'cuDNN':>10s}")
    total = 0.0
    for name, c, h, k, s in DEPTHWISE:
        x = torch.randn(batch, c, h, h, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
        w = torch.randn(c, 1, k, k, device="cuda", dtype=torch.float16).to(memory_format=torch.channels_last)
        b = torch.randn(c, device="cuda", dtype=torch.float16)
        ms = time_graph_ms(lambda: F.conv2d(x, w, b, s, k // 2, 1, c))
        total += ms
        print(f"{name:<24s} {ms:10.4f}")
    print(f"{'sum':<24s} {total:10.4f}")

# The dense layers of ResNeXt-50 32x4d and Wide ResNet-50-2 (bench_conv2d --wide) and of EfficientNetV2-S
# (--effnet): f16 NHWC (the 3-channel stem NCHW, as the model runs it), batch 16, CUDA graph replay.
# name, in channels, size, out channels, kernel, stride, padding, count.
WIDE = [("s1 1x1 64-128", 64, 56, 128, 1, 1, 0, 1), ("s1 1x1 256-128", 256, 56, 128, 1, 1, 0, 2),
        ("s1 1x1 128-256", 128, 56, 256, 1, 1, 0, 3), ("s1 ds 1x1 64-256", 64, 56, 256, 1, 1, 0, 1),
        ("s2 1x1 256-256", 256, 56, 256, 1, 1, 0, 1), ("s2 1x1 512-256", 512, 28, 256, 1, 1, 0, 3),
        ("s2 1x1 256-512", 256, 28, 512, 1, 1, 0, 4), ("s2 ds 1x1 256-512 s2", 256, 56, 512, 1, 2, 0, 1),
        ("s3 1x1 512-512", 512, 28, 512, 1, 1, 0, 1), ("s3 1x1 1024-512", 1024, 14, 512, 1, 1, 0, 5),
        ("s3 1x1 512-1024", 512, 14, 1024, 1, 1, 0, 6), ("s3 ds 1x1 512-1024 s2", 512, 28, 1024, 1, 2, 0, 1),
        ("s4 1x1 1024-1024", 1024, 14, 1024, 1, 1, 0, 1), ("s4 1x1 2048-1024", 2048, 7, 1024, 1, 1, 0, 2),
        ("s4 1x1 1024-2048", 1024, 7, 2048, 1, 1, 0, 3), ("s4 ds 1x1 1024-2048 s2", 1024, 14, 2048, 1, 2, 0, 1),
        ("wrn s1 3x3 128", 128, 56, 128, 3, 1, 1, 3), ("wrn s2 3x3 256 s2", 256, 56, 256, 3, 2, 1, 1),
        ("wrn s2 3x3 256", 256, 28, 256, 3, 1, 1, 3), ("wrn s3 3x3 512 s2", 512, 28, 512, 3, 2, 1, 1),
        ("wrn s3 3x3 512", 512, 14, 512, 3, 1, 1, 5), ("wrn s4 3x3 1024 s2", 1024, 14, 1024, 3, 2, 1, 1),
        ("wrn s4 3x3 1024", 1024, 7, 1024, 3, 1, 1, 2)]
EFFNET = [("stem 3x3 3-24 s2 (NCHW)", 3, 224, 24, 3, 2, 1, 1), ("s1 3x3 24-24", 24, 112, 24, 3, 1, 1, 2),
          ("s2 3x3 24-96 s2", 24, 112, 96, 3, 2, 1, 1), ("s2 1x1 96-48", 96, 56, 48, 1, 1, 0, 1),
          ("s2 3x3 48-192", 48, 56, 192, 3, 1, 1, 3), ("s2 1x1 192-48", 192, 56, 48, 1, 1, 0, 3),
          ("s3 3x3 48-192 s2", 48, 56, 192, 3, 2, 1, 1), ("s3 1x1 192-64", 192, 28, 64, 1, 1, 0, 1),
          ("s3 3x3 64-256", 64, 28, 256, 3, 1, 1, 3), ("s3 1x1 256-64", 256, 28, 64, 1, 1, 0, 3),
          ("s4 1x1 64-256", 64, 28, 256, 1, 1, 0, 1), ("s4 1x1 256-128", 256, 14, 128, 1, 1, 0, 1),
          ("s4 1x1 128-512", 128, 14, 512, 1, 1, 0, 5), ("s4 1x1 512-128", 512, 14, 128, 1, 1, 0, 5),
          ("s5 1x1 128-768", 128, 14, 768, 1, 1, 0, 1), ("s5 1x1 768-160", 768, 14, 160, 1, 1, 0, 1),
          ("s5 1x1 160-960", 160, 14, 960, 1, 1, 0, 9), ("s5 1x1 960-160", 960, 14, 160, 1, 1, 0, 8),
          ("s6 1x1 960-256", 960, 7, 256, 1, 1, 0, 1), ("s6 1x1 256-1536", 256, 7, 1536, 1, 1, 0, 14),
          ("s6 1x1 1536-256", 1536, 7, 256, 1, 1, 0, 14), ("head 1x1 256-1280", 256, 7, 1280, 1, 1, 0, 1)]
for title, layers, wanted in (("ResNeXt-50 / WRN-50-2", WIDE, WIDE_ONLY), ("EfficientNetV2-S", EFFNET, EFFNET_ONLY)):
    if not (wanted or not ONE_TABLE):
        continue
    print(f"\ncuDNN {title} dense layers, batch 16, f16 NHWC, CUDA graph replay (ms per conv, bias "
          f"included)\n{'layer':<24s} {'cuDNN':>10s}")
    net = 0.0
    for name, c, h, o, k, s, p, count in layers:
        x = torch.randn(16, c, h, h, device="cuda", dtype=torch.float16)
        w = torch.randn(o, c, k, k, device="cuda", dtype=torch.float16)
        if c != 3:  # the stem reads the NCHW image
            x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
        b = torch.randn(o, device="cuda", dtype=torch.float16)
        ms = time_graph_ms(lambda: F.conv2d(x, w, b, s, p))
        net += ms * count
        print(f"{name:<24s} {ms:10.4f}")
    print(f"{'net (x count)':<24s} {net:10.4f}")
