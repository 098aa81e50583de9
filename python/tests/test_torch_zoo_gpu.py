"""The model zoo of issue 13 through torch.compile(backend='hidet') on a GPU, against eager PyTorch
(random weights; nothing is downloaded): torchvision's ResNet-18/50, MobileNet-V2,
EfficientNet-B0, ConvNeXt-Tiny, ViT-B/16, Swin-T and transformers' BERT-base, GPT-2, T5-small and
a Llama-style decoder (HIDET_ZOO_DTYPES=f16 limits the dtypes). Errors are max|out - ref| / max|ref|
against the model run by PyTorch in f32. f32: hidet within 1e-2 (the seed tutorial's end-to-end
bound). f16: hidet within 1.5 times PyTorch's own f16 error plus 1e-2 (half-precision rounding
through dozens of layers is about 3e-2 for MobileNet-V2 in either implementation)."""
import copy
import os

import pytest
import torch

import hidet
import hidet.torch

torchvision = pytest.importorskip('torchvision')
transformers = pytest.importorskip('transformers')

VISION = ['resnet18', 'resnet50', 'mobilenet_v2', 'efficientnet_b0', 'convnext_tiny', 'vit_b_16', 'swin_t']


def text_model(name):
    t = transformers
    if name == 'bert':
        return t.BertModel(t.BertConfig()), {}
    if name == 'gpt2':
        return t.GPT2Model(t.GPT2Config(use_cache=False)), {}
    if name == 't5-small':
        return t.T5Model(t.T5Config(d_model=512, d_ff=2048, num_layers=6, num_heads=8, use_cache=False)), \
            {'decoder_input_ids': True}
    if name == 'llama':
        return t.LlamaModel(t.LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
                                          num_attention_heads=8, num_key_value_heads=8, vocab_size=32000,
                                          use_cache=False)), {}
    raise ValueError(name)


def first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, 'last_hidden_state'):
        return out.last_hidden_state
    return out[0]


def check(model, args, kwargs, dtype):
    torch.backends.cudnn.allow_tf32 = False  # an f32 reference in f32 (cuDNN's default is TF32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch._dynamo.reset()
    model = model.cuda().eval()
    as_f32 = [a.float() if a.is_floating_point() else a for a in args]
    with torch.no_grad():
        ref = first_tensor(copy.deepcopy(model).float()(*as_f32, **kwargs)).float()
        model = model.to(dtype)
        eager = first_tensor(model(*args, **kwargs)).float()
        got = first_tensor(torch.compile(model, backend='hidet')(*args, **kwargs)).float()
    assert ref.abs().max().item() > 1e-2, 'the reference output is too small to compare'

    def error(out):
        return ((out - ref).abs().max() / ref.abs().max()).item()

    err, eager_err = error(got), error(eager)
    tol = 1e-2 if dtype == torch.float32 else 1.5 * eager_err + 1e-2
    assert err <= tol, f'relative error {err:.2e} > {tol:.1e} (PyTorch eager in this dtype: {eager_err:.2e})'


DTYPES = [d for d, tag in [(torch.float16, 'f16'), (torch.float32, 'f32')]
          if tag in os.environ.get('HIDET_ZOO_DTYPES', 'f16,f32').split(',')]


@pytest.mark.parametrize('dtype', DTYPES, ids=lambda d: str(d).split('.')[-1])
@pytest.mark.parametrize('name', VISION)
def test_vision(name, dtype):
    model = getattr(torchvision.models, name)(weights=None)
    # Random weights: batch-norm statistics measured (else MobileNet's and EfficientNet's logits
    # are ~1e-9, zero in f16), and ViT's zero-initialized head dropped (its logits are exactly
    # zero): the compared outputs are O(1) and depend on the input.
    model = hidet.utils.calibrate_batch_norm(model.cuda(), lambda: torch.randn(8, 3, 224, 224, device='cuda'))
    if hasattr(model, 'heads'):
        model.heads = torch.nn.Identity()
    check(model, [torch.randn(1, 3, 224, 224, device='cuda', dtype=dtype)], {}, dtype)


@pytest.mark.parametrize('dtype', DTYPES, ids=lambda d: str(d).split('.')[-1])
@pytest.mark.parametrize('name', ['bert', 'gpt2', 't5-small', 'llama'])
def test_text(name, dtype):
    model, extra = text_model(name)
    ids = torch.randint(0, 1000, (1, 128), device='cuda')
    kwargs = {'decoder_input_ids': ids} if extra.get('decoder_input_ids') else {}
    check(model, [ids], kwargs, dtype)
