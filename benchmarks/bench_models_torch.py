"""The models of bench_models.cpp in PyTorch (random weights): torchvision's resnet50 and a BERT-base
encoder (transformers' BertModel encoder on hidden states, 12 layers, seq 128), batch 1 and 16,
f16 and f32, eager and torch.compile (inductor, mode reduce-overhead) on the same GPU.
HIDET_BENCH_MODELS=<regex> selects rows; HIDET_BENCH_INDUCTOR=0 skips torch.compile."""
import os
import re
import time

import torch

from torch_timing import time_ms


def rows():
    import torchvision
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertEncoder
    for dt, short in ((torch.float16, "f16"), (torch.float32, "f32")):
        resnet = torchvision.models.resnet50().cuda().eval().to(dt)
        try:
            config = BertConfig(attn_implementation="sdpa")
        except TypeError:  # older transformers
            config = BertConfig()
        encoder = BertEncoder(config).cuda().eval().to(dt)
        for batch in (1, 16):
            yield f"resnet50 {short} b{batch}", resnet, torch.randn(batch, 3, 224, 224, device="cuda", dtype=dt)
            yield (f"bert-base s128 {short} b{batch}", lambda h, e=encoder: e(h)[0],
                   torch.randn(batch, 128, 768, device="cuda", dtype=dt))


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    pattern = os.environ.get("HIDET_BENCH_MODELS")
    inductor = os.environ.get("HIDET_BENCH_INDUCTOR", "1") != "0"
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'model':24} {'eager ms':>9} {'inductor':>9} {'compile s':>10}")
    with torch.no_grad():
        for name, model, x in rows():
            if pattern and not re.search(pattern, name):
                continue
            eager = time_ms(lambda: model(x), min_calls=10)
            ind, secs = "n/a", float("nan")
            if inductor:
                try:
                    t0 = time.time()
                    compiled = torch.compile(model, mode="reduce-overhead")
                    for _ in range(3):
                        compiled(x)
                    torch.cuda.synchronize()
                    secs = time.time() - t0
                    ind = f"{time_ms(lambda: compiled(x), min_calls=10):.3f}"
                except Exception as e:  # no triton / compiler here: say so
                    ind = f"n/a ({type(e).__name__})"
            print(f"{name:24} {eager:9.3f} {ind:>9} {secs:10.1f}", flush=True)


if __name__ == "__main__":
    main()
