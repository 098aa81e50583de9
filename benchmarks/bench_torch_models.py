"""Benchmark: models through torch.compile(backend='hidet') against PyTorch eager and inductor
(mode reduce-overhead) in the same run, on the GPU: latency (CUDA events, median of batches),
compile time (first three calls), and hidet's relative error against eager (max|d| / max|eager|).
Random weights (torchvision and transformers constructors and configs; nothing is downloaded).

HIDET_BENCH_MODELS=<regex> selects rows (default: all); HIDET_BENCH_BATCH16=all adds batch 16 for
every model (default: ResNet-50 and BERT); HIDET_BENCH_INDUCTOR=0 skips inductor;
HIDET_BENCH_SPACES=<list> are hidet's search spaces, one pair of columns each (default 0; "0,2"
adds tuned rows); HIDET_BENCH_PROFILE=<regex> prints the per-kernel profile of hidet's compiled
graphs (space 0) for the rows it matches. The build's python/ folder must be on PYTHONPATH
(scripts/gpu-check sets it)."""
import os
import re
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from torch_timing import time_ms  # noqa: E402

import hidet  # noqa: E402
import hidet.torch  # noqa: E402


def text_models():
    """The transformers models of the zoo (python/tests/test_torch_zoo_gpu.py), by row name."""
    import transformers as t
    return {
        'bert-base': lambda: t.BertModel(t.BertConfig()),
        'gpt2': lambda: t.GPT2Model(t.GPT2Config(use_cache=False)),
        't5-small': lambda: t.T5Model(t.T5Config(d_model=512, d_ff=2048, num_layers=6, num_heads=8, use_cache=False)),
        'llama': lambda: t.LlamaModel(t.LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                                                    num_attention_heads=8, num_key_value_heads=8, vocab_size=32000,
                                                    use_cache=False)),
    }


def rows():
    """Every model of the zoo at batch 1; at batch 16 ResNet-50 and BERT, or every model with
    HIDET_BENCH_BATCH16=all."""
    import torchvision
    all16 = os.environ.get('HIDET_BENCH_BATCH16') == 'all'
    vision = ['resnet18', 'resnet50', 'mobilenet_v2', 'efficientnet_b0', 'convnext_tiny', 'vit_b_16', 'swin_t']
    for dtype, tag in [(torch.float16, 'f16'), (torch.float32, 'f32')]:
        for batch in (1, 16):
            img = torch.randn(batch, 3, 224, 224, device='cuda', dtype=dtype)
            ids = torch.randint(0, 1000, (batch, 128), device='cuda')
            for name in vision:
                if batch == 16 and name != 'resnet50' and not all16:
                    continue
                yield f'{name} {tag} b{batch}', lambda n=name: getattr(torchvision.models, n)(weights=None), (img,)
            for name, make in text_models().items():
                if batch == 16 and name != 'bert-base' and not all16:
                    continue
                # T5 runs its encoder and decoder: the ids feed both (attention_mask None).
                args = (ids, None, ids) if name == 't5-small' else (ids,)
                yield f'{name} {tag} b{batch}', make, args


def first(out):
    if isinstance(out, torch.Tensor):
        return out
    return out.last_hidden_state if hasattr(out, 'last_hidden_state') else out[0]


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    pattern = os.environ.get('HIDET_BENCH_MODELS')
    inductor = os.environ.get('HIDET_BENCH_INDUCTOR', '1') != '0'
    spaces = [int(v) for v in os.environ.get('HIDET_BENCH_SPACES', '0').split(',')]
    profile = os.environ.get('HIDET_BENCH_PROFILE')
    print(f'torch {torch.__version__}, {torch.cuda.get_device_name()}; hidet search spaces {spaces}, CUDA graphs on')
    head = ''.join(f" {'hidet s' + str(sp):>9} {'comp s':>7} {'vs ind':>7}" for sp in spaces)
    print(f"{'model':26} {'eager ms':>9} {'inductor':>9} {'comp s':>7}{head} {'rel err':>8}")
    for name, make, args in rows():
        if pattern and not re.search(pattern, name):
            continue
        dtype = torch.float16 if ' f16 ' in name else torch.float32
        with torch.no_grad():
            # Random weights: batch-norm statistics measured and ViT's zero head dropped, so that
            # the compared output (rel err) is O(1) and depends on the input (see test_torch_zoo_gpu).
            # (The text models have no batch norm: the images are not used for them.)
            model = hidet.utils.calibrate_batch_norm(make().cuda(), lambda: torch.randn(8, 3, 224, 224, device='cuda'))
            if hasattr(model, 'heads'):
                model.heads = torch.nn.Identity()
            model = model.to(dtype)
            want = first(model(*args)).float()
            eager = time_ms(lambda: model(*args), min_calls=10)
            ind, ind_s = float('nan'), float('nan')
            if inductor:
                try:
                    torch._dynamo.reset()
                    t0 = time.time()
                    c = torch.compile(model, mode='reduce-overhead')
                    for _ in range(3):
                        c(*args)
                    torch.cuda.synchronize()
                    ind_s = time.time() - t0
                    ind = time_ms(lambda: c(*args), min_calls=10)
                except Exception as e:
                    print(f'  inductor failed: {type(e).__name__}: {str(e)[:200]}')
            cols, err, failure = '', 0.0, None
            for sp in spaces:
                try:
                    torch._dynamo.reset()
                    t0 = time.time()
                    opts = {'search_space': sp, 'profile': bool(sp == 0 and profile and re.search(profile, name))}
                    h = torch.compile(model, backend='hidet', options=opts)
                    for _ in range(3):
                        got = first(h(*args)).float()
                    torch.cuda.synchronize()
                    hid_s = time.time() - t0
                    hid = time_ms(lambda: h(*args), min_calls=10)
                    err = max(err, ((got - want).abs().max() / want.abs().max().clamp_min(1e-6)).item())
                    cols += f' {hid:9.3f} {hid_s:7.1f} {hid / ind:7.2f}'
                except Exception as e:
                    cols += f" {'failed':>9} {'':7} {'':7}"
                    failure = f'  hidet (space {sp}) failed: {type(e).__name__}: {str(e)[:300]}'
            print(f'{name:26} {eager:9.3f} {ind:9.3f} {ind_s:7.1f}{cols} {err:8.1e}', flush=True)
            if failure:
                print(failure, flush=True)
            del model
            torch.cuda.empty_cache()


if __name__ == '__main__':
    main()
