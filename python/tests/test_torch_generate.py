"""transformers' generate with a static cache through torch.compile (docs/torch.md, "Generation with
a static cache"): ``model.forward = torch.compile(model.forward, backend='hidet')`` then
``model.generate(ids, cache_implementation='static', do_sample=False)``. Tiny GPT-2-, Llama-,
Mistral-, Qwen2- and Gemma-style models give eager's greedy tokens in f32 (and in f16 wherever
eager's top two logits are not tied within f16 rounding); the prefill and the decode step are
each compiled once (the cache position is a tensor, so a new token compiles nothing), and the
decode step writes each layer's keys and values into the cache where it lives."""
import pytest

torch = pytest.importorskip('torch')
transformers = pytest.importorskip('transformers')

import hidet  # noqa: E402
import hidet.torch  # noqa: E402

VOCAB = 128
# Two layers for GPT-2 and Llama (the cache of each layer is updated); one for the families that
# differ from Llama inside a layer (Mistral, Qwen2's q/k/v biases, Gemma's norms and scaling):
# dynamo's tracing is most of the test's time.
LAYERS = {'gpt2': 2, 'llama': 2, 'mistral': 1, 'qwen2': 1, 'gemma': 1}


def tiny(family, dtype=torch.float32):
    """A model of the family with LAYERS[family] layers: hidden 64, 4 heads (2 key-value heads where
    the family has them), a vocabulary of 128, weights large enough that the logits are far apart."""
    tf = transformers
    common = dict(vocab_size=VOCAB, initializer_range=0.2, bos_token_id=0, eos_token_id=None, pad_token_id=0)
    if family == 'gpt2':
        model = tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=64, n_layer=LAYERS[family], n_head=4, n_positions=64, **common))
    else:
        kw = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS[family], num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, **common)
        if family == 'llama':
            model = tf.LlamaForCausalLM(tf.LlamaConfig(**kw))
        elif family == 'mistral':  # full attention: a sliding window keeps a Python int in the cache
            model = tf.MistralForCausalLM(tf.MistralConfig(sliding_window=None, **kw))
        elif family == 'qwen2':
            model = tf.Qwen2ForCausalLM(tf.Qwen2Config(**kw))
        else:
            model = tf.GemmaForCausalLM(tf.GemmaConfig(head_dim=16, **kw))
    return model.to(dtype).eval()


def compile_forward(model):
    """The documented recipe, with hidet's compiled graphs kept to count them."""
    graphs = []

    def backend(gm, example_inputs, **kw):
        compiled = hidet.torch.hidet_backend(gm, example_inputs, **kw)
        graphs.append(compiled)
        return compiled

    model.forward = torch.compile(model.forward, backend=backend)
    return graphs


def generate(model, ids, new_tokens, **kw):
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new_tokens, do_sample=False, cache_implementation='static', **kw)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    hidet.torch.dynamo_config.reset()
    yield


@pytest.mark.parametrize('family', ['gpt2', 'llama', 'mistral', 'qwen2', 'gemma'])
def test_generate_with_a_static_cache_gives_eager_tokens(family):
    torch.manual_seed(0)
    model = tiny(family)
    ids = torch.randint(1, VOCAB, (1, 6))
    want = generate(model, ids, 5)
    graphs = compile_forward(model)
    got = generate(model, ids, 5)
    assert torch.equal(got, want), (got.tolist(), want.tolist())
    # The prefill and the decode step: two graphs, each compiled once for its four decode steps.
    assert len(graphs) == 2, len(graphs)
    assert [g.num_compilations for g in graphs] == [1, 1]
    # Each layer's keys and values are written where the cache lives; the cache length (a 0-d
    # tensor read before its update) is copied.
    (decode,) = graphs[1].cache.values()
    in_place, copied = decode.runner.updates_in_place, decode.runner.updates_copied
    assert (in_place, copied) == (2 * LAYERS[family], LAYERS[family]), (in_place, copied)


def _ulp16(value):
    """The spacing of f16 numbers at |value|."""
    return float(torch.finfo(torch.float16).eps) * max(abs(float(value)), float(torch.finfo(torch.float16).tiny))


def test_generate_in_f16_gives_eager_tokens_unless_the_top_two_logits_tie():
    """f16 (Llama): each greedy token equals eager's; a first difference is allowed only at a step
    where eager's two largest logits are within a few f16 roundings of each other (where both
    computations may pick either)."""
    torch.manual_seed(1)
    model = tiny('llama', torch.float16)
    ids = torch.randint(1, VOCAB, (1, 6))
    kw = dict(return_dict_in_generate=True, output_logits=True)
    want = generate(model, ids, 5, **kw)
    compile_forward(model)
    got = generate(model, ids, 5, **kw)
    for step, (a, b) in enumerate(zip(want.sequences[0, 6:].tolist(), got.sequences[0, 6:].tolist())):
        if a == b:
            continue
        top = want.logits[step][0].float().topk(2).values
        gap = float(top[0] - top[1])
        assert gap <= 8 * _ulp16(top[0]), f'step {step}: hidet picks {b}, eager {a} with a lead of {gap}'
        break
