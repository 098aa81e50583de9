"""The coverage suite's models (issue 40): every torchvision classification, segmentation, video and
optical-flow model,
a broad list of timm families and of transformers families with tiny configs, all with random
weights (nothing is downloaded). `entries()` returns them as `Entry` rows; `coverage_runner.py`
runs one row through eager PyTorch and torch.compile(backend='hidet').

Each row has two variants: the GPU one (`small=False`: torchvision and timm at their default
resolution, transformers at hidden 256, 4 layers, 128 tokens, batch 2 with padding) and the
emulator one (`small=True`: 32x32 images where the model allows, transformers at hidden 64,
2 layers, 4 heads, a vocabulary of 128 and 12 tokens at batch 1, the last two padded).

The rows are data: three tables below (TORCHVISION_SIZES, TIMM, TRANSFORMERS) and one Entry
builder per source."""
import inspect
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Callable

import torch

__all__ = ['Entry', 'entries', 'entry', 'first_tensor']


@dataclass(frozen=True)
class Entry:
    """One model of the suite. ``make(small)`` builds it with random weights (train mode, on
    the CPU, f32); ``inputs(small, batch=None)`` gives (args, kwargs) on the CPU, floating
    tensors in f32 (``batch`` overrides the batch size: batch-norm calibration uses 4)."""
    name: str  # 'torchvision/resnet18', 'timm/vit_tiny_patch16_224', 'transformers/bert'
    source: str  # 'torchvision', 'timm' or 'transformers'
    family: str  # 'resnet', 'vit', 'bert', ...
    make: Callable = field(repr=False, compare=False)
    inputs: Callable = field(repr=False, compare=False)
    # Too slow for the emulator even in the small variant (minutes per kernel sweep): the
    # emulator sweep only maps it (traces the fx graph), and says so.
    heavy_small: bool = False


# ---------------------------------------------------------------------------------------------
# torchvision: every model of torchvision.models, .segmentation, .video and .optical_flow.
# (GPU resolution, emulator resolution) where the default (224, 32) does not apply.
TORCHVISION_SIZES = {
    'alexnet': (224, 64),  # three max pools of 3x3 stride 2 after a stride-4 stem
    'inception_v3': (299, 75),  # its smallest input
    'squeezenet1_0': (224, 48),
    'squeezenet1_1': (224, 48),
    'maxvit_t': (224, 224),  # windows of 7 at every stage: 224 = 7 * 32 only
    'vit_h_14': (224, 28),  # a multiple of its patch of 14
    'swin_t': (224, 64), 'swin_s': (224, 64), 'swin_b': (224, 64),
    'swin_v2_t': (256, 64), 'swin_v2_s': (256, 64), 'swin_v2_b': (256, 64),
    'deeplabv3_mobilenet_v3_large': (224, 64), 'deeplabv3_resnet50': (224, 64),
    'deeplabv3_resnet101': (224, 64), 'fcn_resnet50': (224, 64), 'fcn_resnet101': (224, 64),
    'lraspp_mobilenet_v3_large': (224, 64),
}
# Too slow on the emulator at their smallest input (FLOPs in the GFLOPs, or hundreds of MB of weights).
TORCHVISION_HEAVY_SMALL = {
    'maxvit_t', 'vit_h_14', 'vit_l_16', 'vit_l_32', 'regnet_y_128gf', 'regnet_y_32gf', 'regnet_x_32gf',
    'regnet_y_16gf', 'regnet_x_16gf', 'vgg19_bn', 'vgg19', 'vgg16_bn', 'vgg16', 'efficientnet_b7',
    'efficientnet_b6', 'efficientnet_v2_l', 'resnext101_64x4d', 'resnext101_32x8d', 'wide_resnet101_2',
    'convnext_large', 'swin_v2_b', 'swin_b', 'inception_v3', 'deeplabv3_resnet101', 'fcn_resnet101',
}
# Video models: (frames, GPU resolution) of a clip [1, 3, frames, size, size] (the emulator's: 4 frames
# of 32x32 where the model allows); every one is heavy on the emulator (3-D convolutions, 16-frame
# clips for MViT and S3D). Optical flow (RAFT): two 224x224 images (128x128 on the emulator, its least).
TORCHVISION_VIDEO = {'mvit_v1_b': (16, 224), 'mvit_v2_s': (16, 224), 's3d': (16, 224), 'swin3d_t': (8, 224),
                     'swin3d_s': (8, 224), 'swin3d_b': (8, 224)}


def _torchvision_names():
    import torchvision.models as tvm
    classification = tvm.list_models(module=tvm)
    segmentation = tvm.list_models(module=tvm.segmentation)
    video = tvm.list_models(module=tvm.video)
    flow = tvm.list_models(module=tvm.optical_flow)
    return ([(n, 'classification') for n in classification] + [(n, 'segmentation') for n in segmentation] +
            [(n, 'video') for n in video] + [(n, 'flow') for n in flow])


def _torchvision_entry(name, task):
    full, small_size = TORCHVISION_SIZES.get(name, (224, 32))

    def make(small):
        import torchvision
        kwargs = {'weights': None}
        if task == 'segmentation':
            kwargs['weights_backbone'] = None  # its default is the ImageNet backbone (a download)
        if name.startswith('vit_'):
            kwargs['image_size'] = small_size if small else full
        return torchvision.models.get_model(name, **kwargs)

    def inputs(small, batch=None):
        if task == 'video':
            frames, size = TORCHVISION_VIDEO.get(name, (16, 112))
            if small and name not in TORCHVISION_VIDEO:  # MViT's and Swin3D's shapes are fixed by their patches
                frames, size = 4, 32
            g = torch.Generator().manual_seed(frames * size)
            return [torch.randn(batch or 1, 3, frames, size, size, generator=g)], {}
        if task == 'flow':  # two frames
            size = 128 if small else 224  # its correlation pyramid needs 128
            return [_image(batch or 1, size), _image(batch or 1, size) * 0.5], {}
        return [_image(batch or 1, small_size if small else full)], {}

    family = 'wide_resnet' if name.startswith('wide_') else name.split('_')[0].rstrip('0123456789')
    heavy = name in TORCHVISION_HEAVY_SMALL or task == 'video'
    return Entry(f'torchvision/{name}', 'torchvision', family, make, inputs, heavy)


# ---------------------------------------------------------------------------------------------
# timm: (model, family, emulator resolution, pass img_size to the constructor, GPU resolution or None
# for the model's default). Small variants (tiny, small, nano) of each family.
TIMM = [
    ('vit_tiny_patch16_224', 'vit', 32, True, None),
    ('vit_small_patch14_reg4_dinov2', 'vit (dinov2, registers)', 28, True, 224),  # register tokens; its default is 518
    ('vit_relpos_small_patch16_224', 'vit (relpos)', 32, True, None),
    ('vit_medium_patch16_gap_256', 'vit (gap)', 32, True, None),
    ('flexivit_small', 'flexivit', 32, True, None),
    ('deit_tiny_distilled_patch16_224', 'deit', 32, True, None),
    ('deit3_small_patch16_224', 'deit3', 32, True, None),
    ('pit_ti_224', 'pit', 32, True, None),
    ('eva02_tiny_patch14_224', 'eva02', 28, True, None),
    ('beit_base_patch16_224', 'beit', 32, True, None),
    ('cait_xxs24_224', 'cait', 32, True, None),
    ('xcit_nano_12_p16_224', 'xcit', 32, True, None),
    ('crossvit_tiny_240', 'crossvit', 32, False, None),
    ('tnt_s_patch16_224', 'tnt', 32, True, None),
    ('convit_tiny', 'convit', 32, True, None),
    ('volo_d1_224', 'volo', 32, True, None),
    ('mixer_s32_224', 'mlp-mixer', 32, True, None),
    ('gmlp_ti16_224', 'gmlp', 32, True, None),
    ('resmlp_12_224', 'resmlp', 32, True, None),
    ('swin_tiny_patch4_window7_224', 'swin', 32, True, None),
    ('swinv2_tiny_window8_256', 'swinv2', 32, True, None),
    ('swinv2_cr_tiny_ns_224', 'swinv2-cr', 32, True, None),
    ('twins_svt_small', 'twins', 32, True, None),
    ('pvt_v2_b0', 'pvt-v2', 32, False, None),
    ('coat_lite_tiny', 'coat', 32, True, None),
    ('coatnet_nano_rw_224', 'coatnet', 32, True, None),
    ('maxvit_pico_rw_256', 'maxvit', 32, True, None),
    ('levit_128s', 'levit', 32, True, None),
    ('levit_conv_128s', 'levit (conv)', 32, True, None),
    ('mobilevit_xxs', 'mobilevit', 32, True, None),
    ('edgenext_xx_small', 'edgenext', 32, False, None),
    ('efficientformer_l1', 'efficientformer', 224, True, None),  # its attention biases are built for 7x7 tokens at 224
    ('efficientformerv2_s0', 'efficientformerv2', 32, True, None),
    ('efficientvit_b0', 'efficientvit (mit)', 32, False, None),
    ('efficientvit_m0', 'efficientvit (msra)', 32, True, None),
    ('tiny_vit_5m_224', 'tiny-vit', 32, False, None),
    ('hiera_tiny_224', 'hiera', 32, True, None),
    ('mvitv2_tiny', 'mvitv2', 32, True, None),
    ('focalnet_tiny_srf', 'focalnet', 32, False, None),
    ('davit_tiny', 'davit', 32, False, None),
    ('gcvit_xxtiny', 'gcvit', 32, True, None),
    ('nest_tiny', 'nest', 32, True, None),
    ('nextvit_small', 'nextvit', 32, False, None),
    ('visformer_tiny', 'visformer', 32, True, None),
    ('poolformer_s12', 'poolformer', 32, False, None),
    ('caformer_s18', 'metaformer (caformer)', 32, False, None),
    ('mambaout_femto', 'mambaout', 32, False, None),
    ('inception_next_atto', 'inception-next', 32, False, None),
    ('convmixer_768_32', 'convmixer', 32, False, None),
    ('sequencer2d_s', 'sequencer', 32, True, None),  # bidirectional LSTMs
    ('convnext_atto', 'convnext', 32, False, None),
    ('convnextv2_atto', 'convnextv2', 32, False, None),
    ('rdnet_tiny', 'rdnet', 32, False, None),
    ('efficientnet_b0', 'efficientnet', 32, False, None),
    ('efficientnet_lite0', 'efficientnet-lite', 32, False, None),
    ('efficientnetv2_rw_t', 'efficientnetv2', 32, False, None),
    ('tinynet_e', 'tinynet', 32, False, None),
    ('mobilenetv3_small_050', 'mobilenetv3', 32, False, None),
    ('mobilenetv3_large_100', 'mobilenetv3', 32, False, None),
    ('mobilenetv4_conv_small', 'mobilenetv4', 32, False, None),
    ('mobilenetv1_100', 'mobilenetv1', 32, False, None),
    ('mobileone_s0', 'mobileone', 32, True, None),
    ('mnasnet_small', 'mnasnet', 32, False, None),
    ('fbnetc_100', 'fbnet', 32, False, None),
    ('hardcorenas_a', 'hardcorenas', 32, False, None),
    ('lcnet_050', 'lcnet', 32, False, None),
    ('ghostnet_050', 'ghostnet', 32, False, None),
    ('ghostnetv2_100', 'ghostnetv2', 48, False, None),
    ('repghostnet_050', 'repghostnet', 32, False, None),
    ('repvit_m0_9', 'repvit', 32, True, None),
    ('fastvit_t8', 'fastvit', 32, False, None),
    ('fasternet_t0', 'fasternet', 32, False, None),
    ('shvit_s1', 'shvit', 32, False, None),
    ('starnet_s1', 'starnet', 32, False, None),
    ('rexnet_100', 'rexnet', 32, False, None),
    ('regnetx_002', 'regnetx', 32, False, None),
    ('regnety_002', 'regnety', 32, False, None),
    ('regnetz_b16', 'regnetz', 32, True, None),
    ('resnet50d', 'resnet', 32, False, None),
    ('resnetv2_50', 'resnetv2', 32, False, None),
    ('resnext26ts', 'resnext (byobnet)', 32, True, None),
    ('seresnext26d_32x4d', 'seresnext', 32, False, None),
    ('skresnet18', 'skresnet', 32, False, None),
    ('res2net50_26w_4s', 'res2net', 32, False, None),
    ('tresnet_m', 'tresnet', 32, False, None),
    ('nf_resnet26', 'nfnet (nf-resnet)', 32, False, None),
    ('dm_nfnet_f0', 'nfnet', 32, False, None),
    ('botnet26t_256', 'botnet', 32, True, None),
    ('halonet26t', 'halonet', 256, True, None),  # its halo attention blocks need 256
    ('lambda_resnet26t', 'lambda-resnet', 32, True, None),
    ('gernet_s', 'gernet', 32, True, None),
    ('densenet121', 'densenet', 32, False, None),
    ('dla34', 'dla', 32, False, None),
    ('dpn48b', 'dpn', 32, False, None),
    ('hrnet_w18_small', 'hrnet', 32, False, None),
    ('cspresnet50', 'cspnet', 32, False, None),
    ('cs3darknet_s', 'cspnet (cs3darknet)', 32, False, None),
    ('hgnetv2_b0', 'hgnetv2', 32, False, None),
    ('ese_vovnet19b_dw', 'vovnet', 32, False, None),
    ('selecsls42b', 'selecsls', 32, False, None),
    ('xception41', 'xception', 32, False, None),
    ('inception_v3', 'inception-v3', 96, False, None),
    # Added 2026-11-29: one model of each timm module the list lacked (each mapped at its default
    # resolution and at the emulator's; not yet measured on a GPU).
    ('cpubone_s0', 'cpubone', 64, False, None),
    ('csatv2', 'csatv2', 64, False, None),
    ('cspnext_s', 'cspnext', 64, False, None),
    ('deepseek_vit_412m', 'deepseek_vit', 224, False, None),
    ('efficientvim_m1', 'efficientvim', 64, False, None),
    ('gemma4_vit_167m', 'gemma4_vit', 64, False, None),
    ('hieradet_small', 'hieradet (sam2)', 64, False, None),
    ('iformer_s', 'iformer', 64, False, None),
    ('inception_resnet_v2', 'inception-resnet-v2', 299, False, None),
    ('inception_v4', 'inception-v4', 299, False, None),
    ('lcnetv2_small', 'lcnetv2', 64, False, None),
    ('lowformer_b0', 'lowformer', 64, False, None),
    ('mobilenetv5_300m', 'mobilenetv5', 64, False, None),
    ('naflexvit_base_patch16_siglip', 'naflexvit', 64, False, None),
    ('nasnetalarge', 'nasnet', 64, False, None),
    ('pnasnet5large', 'pnasnet', 64, False, None),
    ('qwen3_vit_88m', 'qwen3_vit', 64, False, None),
    ('resnest14d', 'resnest', 64, False, None),
    ('legacy_senet154', 'senet (legacy)', 64, False, None),
    ('swiftformer_s', 'swiftformer', 64, False, None),
    ('vgg11', 'vgg', 64, False, None),
    ('vit_base_r26_s32_224', 'vit (hybrid)', 224, False, None),
    ('samvit_base_patch16', 'vit (sam)', 64, False, None),
    ('vitamin_small_224', 'vitamin', 224, False, None),
    ('bat_resnext26ts', 'non-local attention (bat)', 256, False, None),
    ('legacy_xception', 'xception (legacy)', 64, False, None),
]
TIMM_HEAVY_SMALL = {'efficientformer_l1', 'halonet26t', 'beit_base_patch16_224', 'convmixer_768_32',
                    'dm_nfnet_f0', 'tresnet_m', 'inception_v3',
                    # (2026-11-29: large models, or emulator inputs of 224 or more)
                    'deepseek_vit_412m', 'gemma4_vit_167m', 'inception_resnet_v2', 'inception_v4', 'mobilenetv5_300m',
                    'naflexvit_base_patch16_siglip', 'nasnetalarge', 'pnasnet5large', 'legacy_senet154',
                    'vit_base_r26_s32_224', 'samvit_base_patch16', 'vitamin_small_224', 'bat_resnext26ts'}


def _timm_entry(name, family, small_size, img_size_arg, full_size):

    def make(small):
        import timm
        kwargs = {}
        if img_size_arg and (small or full_size):
            kwargs['img_size'] = small_size if small else full_size
        return timm.create_model(name, pretrained=False, **kwargs)

    def inputs(small, batch=None):
        if small:
            size = small_size
        else:
            import timm
            size = full_size or timm.get_pretrained_cfg(name).input_size[-1]
        return [_image(batch or 1, size)], {}

    return Entry(f'timm/{name}', 'timm', family, make, inputs, name in TIMM_HEAVY_SMALL)


# ---------------------------------------------------------------------------------------------
# transformers: tiny configs. Sizes of the two variants; schemes map them to each config's names.
Size = namedtuple('Size', 'h layers heads kv_heads inter vocab positions seq batch pad image patch widths depths')
FULL = Size(h=256, layers=4, heads=4, kv_heads=2, inter=1024, vocab=1024, positions=512, seq=128, batch=2, pad=16,
            image=224, patch=16, widths=[32, 64, 128, 256], depths=[2, 2, 2, 2])
SMALL = Size(h=64, layers=2, heads=4, kv_heads=2, inter=128, vocab=128, positions=64, seq=12, batch=1, pad=2,
             image=32, patch=8, widths=[16, 32, 48, 64], depths=[1, 1, 1, 1])


def _detr(s):
    """DETR and its variants: transformers' ResNet as the backbone (its last stage), queries 16."""
    return dict(use_timm_backbone=False, use_pretrained_backbone=False,
                backbone_config=dict(model_type='resnet', embedding_size=s.widths[0], hidden_sizes=s.widths,
                                     depths=s.depths, out_features=['stage4']),
                encoder_layers=s.layers, decoder_layers=s.layers, encoder_attention_heads=s.heads,
                decoder_attention_heads=s.heads, encoder_ffn_dim=s.inter, decoder_ffn_dim=s.inter, num_queries=16)


def _bert(s):
    return dict(hidden_size=s.h, num_hidden_layers=s.layers, num_attention_heads=s.heads, intermediate_size=s.inter,
                vocab_size=s.vocab, max_position_embeddings=s.positions)


def _llama(s):
    return dict(_bert(s), num_key_value_heads=s.kv_heads)


def _gpt2(s):
    return dict(n_embd=s.h, n_layer=s.layers, n_head=s.heads, n_positions=s.positions, vocab_size=s.vocab)


def _seq2seq(s):  # Bart, MBart, Pegasus, Marian, Blenderbot, M2M100, Whisper
    return dict(d_model=s.h, encoder_layers=s.layers, decoder_layers=s.layers, encoder_attention_heads=s.heads,
                decoder_attention_heads=s.heads, encoder_ffn_dim=s.inter, decoder_ffn_dim=s.inter, vocab_size=s.vocab,
                max_position_embeddings=s.positions)


def _t5(s):
    return dict(d_model=s.h, d_kv=s.h // s.heads, d_ff=s.inter, num_layers=s.layers, num_decoder_layers=s.layers,
                num_heads=s.heads, vocab_size=s.vocab)


def _vit(s):
    return dict(_bert(s), image_size=s.image, patch_size=s.patch)


def _stages(s):  # hierarchical vision models (ConvNext, ResNet, RegNet, PoolFormer, ...)
    return dict(hidden_sizes=s.widths, depths=s.depths)


SCHEMES = {
    'bert': _bert,
    'llama': _llama,
    'gpt2': _gpt2,
    'seq2seq': _seq2seq,
    't5': _t5,
    'vit': _vit,
    'stages': _stages,
    'distilbert': lambda s: dict(dim=s.h, n_layers=s.layers, n_heads=s.heads, hidden_dim=s.inter, vocab_size=s.vocab,
                                 max_position_embeddings=s.positions),
    'gptj': lambda s: dict(_gpt2(s), rotary_dim=s.h // s.heads // 2),
    'gpt_neo': lambda s: dict(hidden_size=s.h, num_layers=s.layers, num_heads=s.heads, vocab_size=s.vocab,
                              max_position_embeddings=s.positions, attention_types=[[['global', 'local'], s.layers // 2]],
                              window_size=s.seq // 2),
    'bloom': lambda s: dict(hidden_size=s.h, n_layer=s.layers, n_head=s.heads, vocab_size=s.vocab),
    'falcon': lambda s: dict(hidden_size=s.h, num_hidden_layers=s.layers, num_attention_heads=s.heads,
                             vocab_size=s.vocab, max_position_embeddings=s.positions),
    'opt': lambda s: dict(hidden_size=s.h, num_hidden_layers=s.layers, num_attention_heads=s.heads, ffn_dim=s.inter,
                          vocab_size=s.vocab, max_position_embeddings=s.positions, word_embed_proj_dim=s.h),
    'mpt': lambda s: dict(d_model=s.h, n_layers=s.layers, n_heads=s.heads, vocab_size=s.vocab, max_seq_len=s.positions),
    # Three stages: transformers' Swin breaks where a stage's resolution falls below its window.
    'swin': lambda s: dict(embed_dim=s.widths[0], depths=s.depths[:3], num_heads=[2, 2, 4],
                           window_size=4 if s.image < 64 else 7, image_size=max(s.image, 64), patch_size=4),
    'xglm': lambda s: dict(d_model=s.h, num_layers=s.layers, attention_heads=s.heads, ffn_dim=s.inter,
                           vocab_size=s.vocab, max_position_embeddings=s.positions),
    'clip_vision': lambda s: dict(hidden_size=s.h, num_hidden_layers=s.layers, num_attention_heads=s.heads,
                                  intermediate_size=s.inter, image_size=s.image, patch_size=s.patch),
    'clip_text': lambda s: dict(hidden_size=s.h, num_hidden_layers=s.layers, num_attention_heads=s.heads,
                                intermediate_size=s.inter, vocab_size=s.vocab, max_position_embeddings=s.positions),
    'funnel': lambda s: dict(d_model=s.h, n_head=s.heads, d_head=s.h // s.heads, d_inner=s.inter, vocab_size=s.vocab,
                             block_sizes=[1, 1], num_decoder_layers=1),
    'mobilebert': lambda s: dict(_bert(s), embedding_size=s.h // 2, intra_bottleneck_size=s.h // 2,
                                 true_hidden_size=s.h // 2, num_feedforward_networks=2),
    'mamba': lambda s: dict(hidden_size=s.h, num_hidden_layers=s.layers, vocab_size=s.vocab, intermediate_size=2 * s.h,
                            state_size=8),
    'wav2vec2': lambda s: dict(hidden_size=s.h, num_hidden_layers=s.layers, num_attention_heads=s.heads,
                               intermediate_size=s.inter, conv_dim=[s.widths[0]] * 3, conv_stride=[5, 2, 2],
                               conv_kernel=[10, 3, 3], num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4),
    'segformer': lambda s: dict(hidden_sizes=s.widths, depths=s.depths, num_attention_heads=[1, 1, 2, 2],
                                decoder_hidden_size=s.widths[-1]),
    'levit': lambda s: dict(image_size=s.image, hidden_sizes=[s.widths[1], s.widths[2], s.widths[3]],
                            num_attention_heads=[2, 2, 4], depths=s.depths[:3], key_dim=[8, 8, 8]),
    'mobilevit': lambda s: dict(image_size=s.image, hidden_sizes=[s.widths[1], s.widths[2], s.widths[3]],
                                neck_hidden_sizes=[8, 16, 24, 32, 40, 48, 64]),
    'focalnet': lambda s: dict(image_size=s.image, embed_dim=s.widths[0], hidden_sizes=s.widths[1:] + [s.widths[-1]],
                               depths=s.depths),
    # DETR-style detectors: transformers' own ResNet backbone (no timm, nothing downloaded), three
    # feature levels; deformable attention samples them with F.grid_sample.
    'deformable_detr': lambda s: dict(
        use_timm_backbone=False, use_pretrained_backbone=False,
        backbone_config=dict(model_type='resnet', embedding_size=s.widths[0], hidden_sizes=s.widths, depths=s.depths,
                             out_features=['stage2', 'stage3', 'stage4']),
        d_model=s.h, encoder_layers=s.layers, decoder_layers=s.layers, encoder_attention_heads=s.heads,
        decoder_attention_heads=s.heads, encoder_ffn_dim=s.inter, decoder_ffn_dim=s.inter, num_queries=16,
        num_feature_levels=3, encoder_n_points=2, decoder_n_points=2),
    'detr': lambda s: dict(_detr(s), d_model=s.h),
    'dab_detr': lambda s: dict(_detr(s), hidden_size=s.h),
    'mask2former': lambda s: dict(
        use_pretrained_backbone=False,
        backbone_config=dict(model_type='resnet', embedding_size=s.widths[0], hidden_sizes=s.widths, depths=s.depths,
                             out_features=['stage1', 'stage2', 'stage3', 'stage4']),
        feature_size=s.h, mask_feature_size=s.h, hidden_dim=s.h, encoder_layers=s.layers, decoder_layers=s.layers + 1,
        num_attention_heads=s.heads, dim_feedforward=s.inter, encoder_feedforward_dim=s.inter, num_queries=16),
    # OneFormer: Mask2Former's pixel decoder and queries, conditioned on a task's tokens (its own text
    # encoder of task_seq_len tokens); conv_dim and mask_dim are the pixel decoder's widths.
    'oneformer': lambda s: dict(
        use_pretrained_backbone=False,
        backbone_config=dict(model_type='resnet', embedding_size=s.widths[0], hidden_sizes=s.widths, depths=s.depths,
                             out_features=['stage1', 'stage2', 'stage3', 'stage4']),
        conv_dim=s.h, mask_dim=s.h, hidden_dim=s.h, encoder_layers=s.layers, decoder_layers=s.layers + 1,
        num_attention_heads=s.heads, dim_feedforward=s.inter, encoder_feedforward_dim=s.inter, num_queries=16,
        text_encoder_width=s.h, text_encoder_context_length=8, text_encoder_num_layers=1,
        text_encoder_vocab_size=s.vocab, text_encoder_proj_layers=1, text_encoder_n_ctx=4, task_seq_len=8),
}

# Gated delta-rule layers (Qwen3-Next, Qwen3.5) at the scheme's sizes: a linear-attention layer, then a
# full-attention one.
_LINEAR_ATTENTION = dict(head_dim=16, linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
                         linear_num_value_heads=4, linear_conv_kernel_dim=4,
                         layer_types=lambda s: ['linear_attention', 'full_attention'] * (s.layers // 2))

# DeepSeek's multi-head latent attention (low-rank keys and values, a rotary part of each head) and its MoE with a
# first dense layer, at the scheme's sizes.
_LATENT_ATTENTION = dict(kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16,
                         num_key_value_heads=lambda s: s.heads, n_routed_experts=4, num_experts_per_tok=2,
                         moe_intermediate_size=32, first_k_dense_replace=1, n_group=1, topk_group=1)

# (row name, model class, config class, scheme, extra config (a value may be a function of the
# Size), inputs). Inputs: 'text' (ids, and an attention mask when forward takes one), 'ids' (no
# mask), 'encdec' (ids, mask, decoder ids), 'image' (pixel_values), 'image-task' (pixel_values and
# the task's token ids, OneFormer's), 'whisper' (mel features, decoder ids), 'audio' (a waveform).
TRANSFORMERS = [
    ('bert', 'BertModel', 'BertConfig', 'bert', {}, 'text'),
    ('roberta', 'RobertaModel', 'RobertaConfig', 'bert', {}, 'text'),
    ('xlm-roberta', 'XLMRobertaModel', 'XLMRobertaConfig', 'bert', {}, 'text'),
    ('distilbert', 'DistilBertModel', 'DistilBertConfig', 'distilbert', {}, 'text'),
    ('albert', 'AlbertModel', 'AlbertConfig', 'bert', {'embedding_size': 32}, 'text'),
    ('electra', 'ElectraModel', 'ElectraConfig', 'bert', {'embedding_size': 32}, 'text'),
    ('deberta', 'DebertaModel', 'DebertaConfig', 'bert', {}, 'text'),
    ('deberta-v2', 'DebertaV2Model', 'DebertaV2Config', 'bert', {}, 'text'),
    ('mpnet', 'MPNetModel', 'MPNetConfig', 'bert', {}, 'text'),
    ('ernie', 'ErnieModel', 'ErnieConfig', 'bert', {}, 'text'),
    ('convbert', 'ConvBertModel', 'ConvBertConfig', 'bert', {}, 'text'),
    ('squeezebert', 'SqueezeBertModel', 'SqueezeBertConfig', 'bert', {'embedding_size': lambda s: s.h}, 'text'),
    ('mobilebert', 'MobileBertModel', 'MobileBertConfig', 'mobilebert', {}, 'text'),
    ('funnel', 'FunnelBaseModel', 'FunnelConfig', 'funnel', {}, 'text'),
    ('megatron-bert', 'MegatronBertModel', 'MegatronBertConfig', 'bert', {}, 'text'),
    ('rembert', 'RemBertModel', 'RemBertConfig', 'bert', {'input_embedding_size': 32, 'output_embedding_size': 32},
     'text'),
    ('modernbert', 'ModernBertModel', 'ModernBertConfig', 'bert', {'global_attn_every_n_layers': 2,
                                                                   'local_attention': 8}, 'text'),
    ('nystromformer', 'NystromformerModel', 'NystromformerConfig', 'bert', {'num_landmarks': 4,
                                                                           'segment_means_seq_len': lambda s: s.seq},
     'ids'),  # its landmark attention fails in eager with a padding mask
    ('fnet', 'FNetModel', 'FNetConfig', 'bert', {}, 'text'),
    ('bigbird', 'BigBirdModel', 'BigBirdConfig', 'bert', {'attention_type': 'original_full'}, 'text'),
    ('gpt2', 'GPT2Model', 'GPT2Config', 'gpt2', {}, 'text'),
    ('gpt-bigcode', 'GPTBigCodeModel', 'GPTBigCodeConfig', 'gpt2', {}, 'text'),
    ('gpt-neo', 'GPTNeoModel', 'GPTNeoConfig', 'gpt_neo', {}, 'text'),
    ('gpt-neox', 'GPTNeoXModel', 'GPTNeoXConfig', 'bert', {}, 'text'),
    ('gptj', 'GPTJModel', 'GPTJConfig', 'gptj', {}, 'text'),
    ('codegen', 'CodeGenModel', 'CodeGenConfig', 'gptj', {}, 'text'),
    ('opt', 'OPTModel', 'OPTConfig', 'opt', {}, 'text'),
    ('bloom', 'BloomModel', 'BloomConfig', 'bloom', {}, 'text'),
    ('falcon', 'FalconModel', 'FalconConfig', 'falcon', {}, 'text'),
    ('mpt', 'MptModel', 'MptConfig', 'mpt', {}, 'text'),
    ('xglm', 'XGLMModel', 'XGLMConfig', 'xglm', {}, 'text'),
    ('llama', 'LlamaModel', 'LlamaConfig', 'llama', {}, 'text'),
    ('mistral', 'MistralModel', 'MistralConfig', 'llama', {}, 'text'),
    ('qwen2', 'Qwen2Model', 'Qwen2Config', 'llama', {}, 'text'),
    ('qwen3', 'Qwen3Model', 'Qwen3Config', 'llama', {}, 'text'),
    ('gemma', 'GemmaModel', 'GemmaConfig', 'llama', {'head_dim': 16}, 'text'),
    ('gemma2', 'Gemma2Model', 'Gemma2Config', 'llama', {'head_dim': 16, 'sliding_window': 8}, 'text'),
    ('gemma3-text', 'Gemma3TextModel', 'Gemma3TextConfig', 'llama', {'head_dim': 16, 'sliding_window': 8}, 'text'),
    ('phi', 'PhiModel', 'PhiConfig', 'bert', {}, 'text'),
    ('phi3', 'Phi3Model', 'Phi3Config', 'llama', {}, 'text'),
    ('stablelm', 'StableLmModel', 'StableLmConfig', 'llama', {}, 'text'),
    ('starcoder2', 'Starcoder2Model', 'Starcoder2Config', 'llama', {}, 'text'),
    ('olmo', 'OlmoModel', 'OlmoConfig', 'llama', {}, 'text'),
    ('granite', 'GraniteModel', 'GraniteConfig', 'llama', {}, 'text'),
    ('cohere', 'CohereModel', 'CohereConfig', 'llama', {}, 'text'),
    ('helium', 'HeliumModel', 'HeliumConfig', 'llama', {'head_dim': lambda s: s.h // s.heads}, 'text'),
    ('glm', 'GlmModel', 'GlmConfig', 'llama', {}, 'text'),
    ('smollm3', 'SmolLM3Model', 'SmolLM3Config', 'llama', {}, 'text'),
    ('nemotron', 'NemotronModel', 'NemotronConfig', 'llama', {}, 'text'),
    ('mixtral', 'MixtralModel', 'MixtralConfig', 'llama', {'num_local_experts': 4, 'num_experts_per_tok': 2}, 'text'),
    ('qwen2-moe', 'Qwen2MoeModel', 'Qwen2MoeConfig', 'llama', {'num_experts': 4, 'num_experts_per_tok': 2,
                                                               'moe_intermediate_size': 64,
                                                               'shared_expert_intermediate_size': 64}, 'text'),
    ('mamba', 'MambaModel', 'MambaConfig', 'mamba', {}, 'text'),
    ('t5', 'T5Model', 'T5Config', 't5', {}, 'encdec'),
    ('t5-v1.1', 'T5Model', 'T5Config', 't5', {'feed_forward_proj': 'gated-gelu'}, 'encdec'),
    ('bart', 'BartModel', 'BartConfig', 'seq2seq', {}, 'encdec'),
    ('mbart', 'MBartModel', 'MBartConfig', 'seq2seq', {}, 'encdec'),
    ('pegasus', 'PegasusModel', 'PegasusConfig', 'seq2seq', {}, 'encdec'),
    ('marian', 'MarianModel', 'MarianConfig', 'seq2seq', {}, 'encdec'),
    ('blenderbot', 'BlenderbotModel', 'BlenderbotConfig', 'seq2seq', {}, 'encdec'),
    ('m2m100', 'M2M100Model', 'M2M100Config', 'seq2seq', {}, 'encdec'),
    ('whisper', 'WhisperModel', 'WhisperConfig', 'seq2seq', {'num_mel_bins': 16}, 'whisper'),
    ('wav2vec2', 'Wav2Vec2Model', 'Wav2Vec2Config', 'wav2vec2', {}, 'audio'),
    ('clip-text', 'CLIPTextModel', 'CLIPTextConfig', 'clip_text', {}, 'text'),
    ('clip-vision', 'CLIPVisionModel', 'CLIPVisionConfig', 'clip_vision', {}, 'image'),
    ('siglip-vision', 'SiglipVisionModel', 'SiglipVisionConfig', 'clip_vision', {}, 'image'),
    ('vit', 'ViTModel', 'ViTConfig', 'vit', {}, 'image'),
    ('dinov2', 'Dinov2Model', 'Dinov2Config', 'vit', {}, 'image'),
    ('beit', 'BeitModel', 'BeitConfig', 'vit', {'use_relative_position_bias': True}, 'image'),
    ('data2vec-vision', 'Data2VecVisionModel', 'Data2VecVisionConfig', 'vit', {}, 'image'),
    ('yolos', 'YolosModel', 'YolosConfig', 'vit', {'num_detection_tokens': 4,
                                                  'image_size': lambda s: [s.image, s.image]}, 'image'),
    ('swin', 'SwinModel', 'SwinConfig', 'swin', {}, 'image'),
    ('swinv2', 'Swinv2Model', 'Swinv2Config', 'swin', {}, 'image'),
    ('convnext', 'ConvNextModel', 'ConvNextConfig', 'stages', {}, 'image'),
    ('convnextv2', 'ConvNextV2Model', 'ConvNextV2Config', 'stages', {}, 'image'),
    ('resnet', 'ResNetModel', 'ResNetConfig', 'stages', {'embedding_size': 16}, 'image'),
    ('regnet', 'RegNetModel', 'RegNetConfig', 'stages', {'embedding_size': 16, 'groups_width': 8}, 'image'),
    ('poolformer', 'PoolFormerModel', 'PoolFormerConfig', 'stages', {}, 'image'),
    ('pvt-v2', 'PvtV2Model', 'PvtV2Config', 'segformer', {}, 'image'),
    ('segformer', 'SegformerModel', 'SegformerConfig', 'segformer', {}, 'image'),
    ('levit', 'LevitModel', 'LevitConfig', 'levit', {}, 'image'),
    ('mobilevit', 'MobileViTModel', 'MobileViTConfig', 'mobilevit', {}, 'image'),
    ('focalnet', 'FocalNetModel', 'FocalNetConfig', 'focalnet', {}, 'image'),
    # Added 2026-11-29 from a probe of families outside the list (emulator variants compiled and
    # matched eager; LayoutLM's [B, 1, 1, S] mask and LED's new_ones(size=...) were bugs then).
    ('olmo2', 'Olmo2Model', 'Olmo2Config', 'llama', {}, 'text'),
    # Added 2026-11-30: hybrids of gated delta-rule linear attention and full attention layers (their chunked
    # prefill solves triangular systems: torch.linalg.solve_triangular, unmapped before); Qwen3-Next with its MoE.
    ('qwen3-next', 'Qwen3NextModel', 'Qwen3NextConfig', 'llama', dict(
        _LINEAR_ATTENTION, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=32), 'text'),
    ('qwen3.5', 'Qwen3_5TextModel', 'Qwen3_5TextConfig', 'llama', dict(_LINEAR_ATTENTION), 'text'),
    # Rotary embeddings by complex multiplication (torch.polar, view_as_complex: pairs of reals in hidet); Llama 4's
    # chunked attention and MoE, DeepSeek's multi-head latent attention and MoE.
    ('llama4', 'Llama4TextModel', 'Llama4TextConfig', 'llama', {
        'head_dim': 16, 'num_local_experts': 4, 'intermediate_size': 32, 'intermediate_size_mlp': 64,
        'attention_chunk_size': 8}, 'text'),
    ('deepseek-v2', 'DeepseekV2Model', 'DeepseekV2Config', 'llama', dict(_LATENT_ATTENTION), 'text'),
    ('deepseek-v3', 'DeepseekV3Model', 'DeepseekV3Config', 'llama', dict(_LATENT_ATTENTION), 'text'),
    # Matched eager unchanged in the same probe (2026-11-30).
    ('olmo3', 'Olmo3Model', 'Olmo3Config', 'llama', {}, 'text'),
    ('diffllama', 'DiffLlamaModel', 'DiffLlamaConfig', 'llama', {'head_dim': 16}, 'text'),
    ('vaultgemma', 'VaultGemmaModel', 'VaultGemmaConfig', 'llama', {'head_dim': 16}, 'text'),
    ('recurrent-gemma', 'RecurrentGemmaModel', 'RecurrentGemmaConfig', 'llama', {'head_dim': 16}, 'text'),
    ('rwkv', 'RwkvModel', 'RwkvConfig', 'llama', {}, 'text'),
    ('minimax', 'MiniMaxModel', 'MiniMaxConfig', 'llama', {'num_local_experts': 4}, 'text'),
    ('glm4-moe', 'Glm4MoeModel', 'Glm4MoeConfig', 'llama', {'n_routed_experts': 4, 'num_experts_per_tok': 2,
                                                          'moe_intermediate_size': 32}, 'text'),
    ('jetmoe', 'JetMoeModel', 'JetMoeConfig', 'llama', {'num_local_experts': 4}, 'text'),
    ('cohere2-moe', 'Cohere2MoeModel', 'Cohere2MoeConfig', 'llama', {'head_dim': 16, 'num_experts': 4}, 'text'),
    ('ernie4.5-moe', 'Ernie4_5_MoeModel', 'Ernie4_5_MoeConfig', 'llama', {'moe_num_experts': 4, 'moe_k': 2,
                                                                          'moe_intermediate_size': 32}, 'text'),
    ('flex-olmo', 'FlexOlmoModel', 'FlexOlmoConfig', 'llama', {'num_experts': 4, 'num_experts_per_tok': 2}, 'text'),
    ('granitemoe-shared', 'GraniteMoeSharedModel', 'GraniteMoeSharedConfig', 'llama', {'num_local_experts': 4},
     'text'),
    # Matched eager once given the fields a generic tiny config leaves unset (2026-11-30, later): head_dim, latent
    # attention's ranks, Longcat-Flash's zero experts, DBRX's nested configs, Gemma 3n's per-layer inputs and
    # sparsity, Mamba-2's and Zamba2's heads with a chunk of 8 tokens.
    ('minicpm3', 'MiniCPM3Model', 'MiniCPM3Config', 'llama', dict(_LATENT_ATTENTION), 'text'),
    ('glm4-moe-lite', 'Glm4MoeLiteModel', 'Glm4MoeLiteConfig', 'llama', dict(_LATENT_ATTENTION), 'text'),
    ('longcat-flash', 'LongcatFlashModel', 'LongcatFlashConfig', 'llama', dict(
        _LATENT_ATTENTION, num_layers=lambda s: s.layers, ffn_hidden_size=lambda s: s.inter, expert_ffn_hidden_size=32,
        moe_topk=2, zero_expert_num=2, head_dim=8, qk_head_dim=16), 'text'),
    ('ministral', 'MinistralModel', 'MinistralConfig', 'llama', {'head_dim': 16}, 'text'),
    ('hunyuan-moe', 'HunYuanMoEV1Model', 'HunYuanMoEV1Config', 'llama', {'head_dim': 16, 'num_experts': 4, 'moe_topk': 2},
     'text'),
    ('dots1', 'Dots1Model', 'Dots1Config', 'llama', {
        'moe_intermediate_size': 32, 'n_routed_experts': 4, 'num_experts_per_tok': 2, 'n_shared_experts': 1,
        'first_k_dense_replace': 1, 'n_group': 1, 'topk_group': 1}, 'text'),
    ('dbrx', 'DbrxModel', 'DbrxConfig', 'llama', {
        'd_model': lambda s: s.h, 'n_heads': lambda s: s.heads, 'n_layers': lambda s: s.layers,
        'attn_config': lambda s: {'kv_n_heads': s.kv_heads, 'rope_theta': 10000.0, 'clip_qkv': 8.0},
        'ffn_config': lambda s: {'ffn_hidden_size': s.inter, 'moe_num_experts': 4, 'moe_top_k': 2}}, 'text'),
    ('gemma3n', 'Gemma3nTextModel', 'Gemma3nTextConfig', 'llama', {
        'head_dim': 16, 'layer_types': lambda s: ['sliding_attention', 'full_attention'] * (s.layers // 2),
        'num_kv_shared_layers': 0, 'vocab_size_per_layer_input': lambda s: s.vocab, 'hidden_size_per_layer_input': 16,
        'laurel_rank': 8, 'activation_sparsity_pattern': lambda s: [0.0] * s.layers}, 'text'),
    ('mamba2', 'Mamba2Model', 'Mamba2Config', 'llama', {
        'num_heads': 8, 'head_dim': lambda s: 2 * s.h // 8, 'state_size': 16, 'n_groups': 1, 'expand': 2,
        'chunk_size': 8}, 'text'),
    ('zamba2', 'Zamba2Model', 'Zamba2Config', 'llama', {
        'num_key_value_heads': lambda s: s.heads, 'mamba_d_state': 16, 'mamba_headdim': lambda s: 2 * s.h // 8,
        'n_mamba_heads': 8, 'mamba_expand': 2, 'layers_block_type': lambda s: ['mamba', 'hybrid'] * (s.layers // 2),
        'hybrid_layer_ids': lambda s: list(range(1, s.layers, 2)), 'chunk_size': 8}, 'text'),
    ('olmoe', 'OlmoeModel', 'OlmoeConfig', 'llama', {'num_experts': 4, 'num_experts_per_tok': 2}, 'text'),
    ('qwen3-moe', 'Qwen3MoeModel', 'Qwen3MoeConfig', 'llama', {'num_experts': 4, 'num_experts_per_tok': 2,
                                                               'moe_intermediate_size': 32}, 'text'),
    ('granitemoe', 'GraniteMoeModel', 'GraniteMoeConfig', 'llama', {'num_local_experts': 4, 'num_experts_per_tok': 2},
     'text'),
    ('phimoe', 'PhimoeModel', 'PhimoeConfig', 'llama', {'num_local_experts': 4, 'num_experts_per_tok': 2}, 'text'),
    ('gpt-oss', 'GptOssModel', 'GptOssConfig', 'llama', {'num_local_experts': 4, 'num_experts_per_tok': 2, 'head_dim': 16,
                                                         'sliding_window': 8}, 'text'),
    ('glm4', 'Glm4Model', 'Glm4Config', 'llama', {}, 'text'),
    ('cohere2', 'Cohere2Model', 'Cohere2Config', 'llama', {'sliding_window': 8}, 'text'),
    ('exaone4', 'Exaone4Model', 'Exaone4Config', 'llama', {'sliding_window': 8}, 'text'),
    ('ernie4_5', 'Ernie4_5Model', 'Ernie4_5Config', 'llama', {}, 'text'),
    ('seed-oss', 'SeedOssModel', 'SeedOssConfig', 'llama', {}, 'text'),
    ('arcee', 'ArceeModel', 'ArceeConfig', 'llama', {}, 'text'),
    ('apertus', 'ApertusModel', 'ApertusConfig', 'llama', {}, 'text'),
    ('doge', 'DogeModel', 'DogeConfig', 'llama', {}, 'text'),
    ('hunyuan-dense', 'HunYuanDenseV1Model', 'HunYuanDenseV1Config', 'llama', {'head_dim': 16}, 'text'),
    ('persimmon', 'PersimmonModel', 'PersimmonConfig', 'llama', {}, 'text'),
    ('bitnet', 'BitNetModel', 'BitNetConfig', 'llama', {}, 'text'),
    ('lfm2', 'Lfm2Model', 'Lfm2Config', 'llama', {}, 'text'),
    # Matched eager unchanged in a probe of families the list did not have (2026-11-30, later).
    ('camembert', 'CamembertModel', 'CamembertConfig', 'bert', {}, 'text'),
    ('xlm-roberta-xl', 'XLMRobertaXLModel', 'XLMRobertaXLConfig', 'bert', {}, 'text'),
    ('data2vec-text', 'Data2VecTextModel', 'Data2VecTextConfig', 'bert', {}, 'text'),
    ('nomic-bert', 'NomicBertModel', 'NomicBertConfig', 'bert', {}, 'text'),
    ('gte', 'GteModel', 'GteConfig', 'bert', {}, 'text'),
    ('biogpt', 'BioGptModel', 'BioGptConfig', 'llama', {}, 'text'),
    ('ctrl', 'CTRLModel', 'CTRLConfig', 'llama', {}, 'text'),
    ('openai-gpt', 'OpenAIGPTModel', 'OpenAIGPTConfig', 'llama', {}, 'text'),
    ('eurobert', 'EuroBertModel', 'EuroBertConfig', 'llama', {}, 'text'),
    ('deit', 'DeiTModel', 'DeiTConfig', 'vit', {}, 'image'),
    ('cvt', 'CvtModel', 'CvtConfig', 'vit', {}, 'image'),
    ('swiftformer', 'SwiftFormerModel', 'SwiftFormerConfig', 'vit', {}, 'image'),
    ('pvt', 'PvtModel', 'PvtConfig', 'vit', {
        'num_attention_heads': [1, 1, 2, 2], 'hidden_sizes': [16, 32, 64, 64], 'depths': [1, 1, 1, 1],
        'sequence_reduction_ratios': [4, 2, 1, 1], 'image_size': lambda s: s.image, 'patch_sizes': [4, 2, 2, 2],
        'strides': [4, 2, 2, 2], 'mlp_ratios': [2, 2, 2, 2]}, 'image'),
    ('hiera', 'HieraModel', 'HieraConfig', 'vit', {
        'image_size': lambda s: [s.image, s.image], 'embed_dim': 16, 'depths': [1, 1, 1, 1], 'num_heads': [1, 2, 4, 8],
        'patch_stride': lambda s: [2, 2] if s.image <= 32 else [4, 4], 'patch_size': [3, 3], 'patch_padding': [1, 1],
        'masked_unit_size': [8, 8], 'query_stride': [2, 2]}, 'image'),
    ('roformer', 'RoFormerModel', 'RoFormerConfig', 'bert', {}, 'text'),
    ('esm', 'EsmModel', 'EsmConfig', 'bert', {'pad_token_id': 1}, 'text'),
    ('ibert', 'IBertModel', 'IBertConfig', 'bert', {}, 'text'),
    ('layoutlm', 'LayoutLMModel', 'LayoutLMConfig', 'bert', {}, 'text'),
    ('yoso', 'YosoModel', 'YosoConfig', 'bert', {}, 'text'),
    ('splinter', 'SplinterModel', 'SplinterConfig', 'bert', {}, 'text'),
    ('bert-generation', 'BertGenerationEncoder', 'BertGenerationConfig', 'bert', {}, 'text'),
    ('xmod', 'XmodModel', 'XmodConfig', 'bert', {'default_language': 'en_XX', 'languages': ['en_XX']}, 'text'),
    ('led', 'LEDModel', 'LEDConfig', 'seq2seq', {'attention_window': 4,
                                                 'max_encoder_position_embeddings': lambda s: s.positions,
                                                 'max_decoder_position_embeddings': lambda s: s.positions}, 'encdec'),
    ('plbart', 'PLBartModel', 'PLBartConfig', 'seq2seq', {}, 'encdec'),
    ('mvp', 'MvpModel', 'MvpConfig', 'seq2seq', {}, 'encdec'),
    ('mt5', 'MT5Model', 'MT5Config', 't5', {}, 'encdec'),
    ('umt5', 'UMT5Model', 'UMT5Config', 't5', {}, 'encdec'),
    ('longt5', 'LongT5Model', 'LongT5Config', 't5', {}, 'encdec'),
    ('switch-transformers', 'SwitchTransformersModel', 'SwitchTransformersConfig', 't5', {'num_experts': 4}, 'encdec'),
    ('hubert', 'HubertModel', 'HubertConfig', 'wav2vec2', {}, 'audio'),
    ('wavlm', 'WavLMModel', 'WavLMConfig', 'wav2vec2', {}, 'audio'),
    ('sew', 'SEWModel', 'SEWConfig', 'wav2vec2', {}, 'audio'),
    ('data2vec-audio', 'Data2VecAudioModel', 'Data2VecAudioConfig', 'wav2vec2', {}, 'audio'),
    ('unispeech', 'UniSpeechModel', 'UniSpeechConfig', 'wav2vec2', {}, 'audio'),
    ('vit-msn', 'ViTMSNModel', 'ViTMSNConfig', 'vit', {}, 'image'),
    ('ijepa', 'IJepaModel', 'IJepaConfig', 'vit', {}, 'image'),
    ('dinov2-reg', 'Dinov2WithRegistersModel', 'Dinov2WithRegistersConfig', 'vit', {}, 'image'),
    ('mobilenet-v1', 'MobileNetV1Model', 'MobileNetV1Config', 'vit', {}, 'image'),
    ('mobilenet-v2', 'MobileNetV2Model', 'MobileNetV2Config', 'vit', {}, 'image'),
    # (its last pooling: AvgPool2d(2560, ceil_mode=True) over a 1x1 map; over 5 minutes on the emulator)
    ('efficientnet', 'EfficientNetModel', 'EfficientNetConfig', 'vit', {}, 'image'),
    ('detr', 'DetrModel', 'DetrConfig', 'detr', {}, 'image'),
    ('conditional-detr', 'ConditionalDetrModel', 'ConditionalDetrConfig', 'detr', {}, 'image'),
    ('table-transformer', 'TableTransformerModel', 'TableTransformerConfig', 'detr', {}, 'image'),
    ('dab-detr', 'DabDetrModel', 'DabDetrConfig', 'dab_detr', {}, 'image'),
    ('deformable-detr', 'DeformableDetrModel', 'DeformableDetrConfig', 'deformable_detr', {}, 'image'),
    ('mask2former', 'Mask2FormerModel', 'Mask2FormerConfig', 'mask2former', {}, 'image'),
    ('oneformer', 'OneFormerModel', 'OneFormerConfig', 'oneformer', {}, 'image-task'),
]


def _transformers_entry(name, model_cls, config_cls, scheme, extra, kind):

    def config(small):
        import transformers
        s = SMALL if small else FULL
        kwargs = dict(SCHEMES[scheme](s))
        kwargs.update({k: v(s) if callable(v) else v for k, v in extra.items()})
        cfg = getattr(transformers, config_cls)(**kwargs)
        # Special tokens inside the tiny vocabulary (the defaults are the real tokenizers' ids).
        for key, value in cfg.to_dict().items():
            if key.endswith('token_id') and isinstance(value, int) and value >= cfg.vocab_size:
                setattr(cfg, key, 0 if key.startswith('pad') else 2)
        # Deterministic forward passes (no dropout in eval anyway), no key/value caches in the outputs.
        if hasattr(cfg, 'use_cache'):
            cfg.use_cache = False
        return cfg

    def make(small):
        import transformers
        return getattr(transformers, model_cls)(config(small))

    def inputs(small, batch=None):
        s = SMALL if small else FULL
        b = batch or s.batch
        g = torch.Generator().manual_seed(0)
        if kind in ('image', 'image-task'):
            size = SCHEMES[scheme](s).get('image_size', s.image)  # the scheme's, where it sets one
            size = size[0] if isinstance(size, (list, tuple)) else size
            kwargs = {'pixel_values': _image(b, size)}
            if kind == 'image-task':
                kwargs['task_inputs'] = _ids(b, config(small).task_seq_len, s.vocab, g)
            return [], kwargs
        if kind == 'audio':
            return [torch.randn(b, 400 if small else 4000, generator=g)], {}
        if kind == 'whisper':
            cfg = config(small)
            frames = 2 * cfg.max_source_positions
            features = torch.randn(b, cfg.num_mel_bins, frames, generator=g)
            return [features], {'decoder_input_ids': _ids(b, s.seq, s.vocab, g)}
        ids = _ids(b, s.seq, s.vocab, g)
        mask = torch.ones(b, s.seq, dtype=torch.long)
        mask[-1, s.seq - s.pad:] = 0  # the last row padded at its end
        kwargs = {}
        forward = inspect.signature(getattr(__import__('transformers'), model_cls).forward).parameters
        if 'attention_mask' in forward and kind != 'ids':
            kwargs['attention_mask'] = mask
        if kind == 'encdec':
            kwargs['decoder_input_ids'] = _ids(b, s.seq, s.vocab, g)
        return [ids], kwargs

    return Entry(f'transformers/{name}', 'transformers', name, make, inputs)


def _ids(batch, seq, vocab, generator):
    return torch.randint(3, vocab, (batch, seq), generator=generator)  # above the special tokens 0-2


def _image(batch, size):
    g = torch.Generator().manual_seed(size)
    return torch.randn(batch, 3, size, size, generator=g)


def entries():
    """Every row of the suite, torchvision first, then timm, then transformers."""
    rows = [_torchvision_entry(n, task) for n, task in _torchvision_names()]
    rows += [_timm_entry(*row) for row in TIMM]
    rows += [_transformers_entry(*row) for row in TRANSFORMERS]
    return rows


def entry(name):
    """The row called ``name`` ('torchvision/resnet18'); a KeyError lists the close names."""
    rows = {e.name: e for e in entries()}
    if name not in rows:
        close = [n for n in rows if name.split('/')[-1] in n]
        raise KeyError(f'no coverage model {name!r}; close: {close[:10]}')
    return rows[name]


def first_tensor(out):
    """The output compared against eager: the tensor itself, a dict's 'out' (torchvision's
    segmentation models), a ModelOutput's last_hidden_state (or its first tensor), or the first
    tensor of a tuple or list."""
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict):  # ModelOutput is an OrderedDict
        for key in ('out', 'last_hidden_state', 'logits'):
            if isinstance(out.get(key), torch.Tensor):
                return out[key]
        for value in out.values():
            found = _first_or_none(value)
            if found is not None:
                return found
    if isinstance(out, (list, tuple)):
        for value in out:
            found = _first_or_none(value)
            if found is not None:
                return found
    raise TypeError(f'no tensor in the output of type {type(out).__name__}')


def _first_or_none(value):
    try:
        return first_tensor(value)
    except TypeError:
        return None
