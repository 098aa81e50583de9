"""transformers' generate with a static cache through torch.compile (docs/torch.md, "Generation with
a static cache"): ``model.forward = torch.compile(model.forward, backend='hidet')`` then
``model.generate(ids, cache_implementation='static', do_sample=False)``. Tiny GPT-2-, Llama-,
Mistral-, Qwen2- and Gemma-style models give eager's greedy tokens in f32 (and in f16 wherever
eager's top two logits are not tied within f16 rounding); the prefill and the decode step are
each compiled once (the cache position is a tensor, so a new token compiles nothing), and the
decode step writes each layer's keys and values into the cache where it lives."""
import copy

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


def tiny(family, dtype=torch.float32, layers=None, sliding_window=None):
    """A model of the family with LAYERS[family] layers (or ``layers``): hidden 64, 4 heads (2
    key-value heads where the family has them), a vocabulary of 128, weights large enough that the
    logits are far apart. ``sliding_window``: Mistral's window on every layer; Gemma-2's on every
    other layer (a hybrid cache: sliding and full layers)."""
    tf = transformers
    layers = layers or LAYERS.get(family, 2)
    common = dict(vocab_size=VOCAB, initializer_range=0.2, bos_token_id=0, eos_token_id=None, pad_token_id=0)
    if family == 'gpt2':
        model = tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=64, n_layer=layers, n_head=4, n_positions=64, **common))
    else:
        kw = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, **common)
        if family == 'llama':
            model = tf.LlamaForCausalLM(tf.LlamaConfig(**kw))
        elif family == 'mistral':
            model = tf.MistralForCausalLM(tf.MistralConfig(sliding_window=sliding_window, **kw))
        elif family == 'qwen2':
            model = tf.Qwen2ForCausalLM(tf.Qwen2Config(**kw))
        elif family == 'gemma2':
            model = tf.Gemma2ForCausalLM(tf.Gemma2Config(head_dim=16, sliding_window=sliding_window, **kw))
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
    # Each layer's keys and values are written where the cache lives, and so is the cache length
    # (a 0-d tensor: its + 1 is one thread's read then store): nothing is copied after the run.
    (decode,) = graphs[1].cache.values()
    in_place, copied = decode.runner.updates_in_place, decode.runner.updates_copied
    assert (in_place, copied) == (3 * LAYERS[family], 0), (in_place, copied)


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


def generate_in_a_cache(model, ids, new_tokens, cache_len):
    """generate with a static cache of cache_len positions (the same length for every prompt)."""
    cache = transformers.StaticCache(config=model.config, max_cache_len=cache_len)
    with torch.no_grad():
        return model.generate(ids, max_new_tokens=new_tokens, do_sample=False, past_key_values=cache)


def test_prompt_lengths_compile_the_prefill_once_per_bucket(capfd):
    """Prompts of 5, 7, 12 and 13 tokens with a cache of a fixed length (a StaticCache) under
    dynamic_shapes('bucket'): dynamo's first prefill graph has the first length's constant shapes;
    the second length makes dynamo hand over a graph of a symbolic length, which hidet traces once
    and compiles once per power-of-two bucket of lengths (7: bucket 8; 12: bucket 16; 13 runs on
    12's), each compilation logged; the decode step compiles once."""
    torch.manual_seed(2)
    model = tiny('llama', layers=1)
    reference = copy.deepcopy(model)
    hidet.torch.dynamo_config.dynamic_shapes('bucket').verbose(True)
    graphs = compile_forward(model)
    for n in (5, 7, 12, 13):
        ids = torch.randint(1, VOCAB, (1, n))
        want = generate_in_a_cache(reference, ids, 3, 24)
        got = generate_in_a_cache(model, ids, 3, 24)
        assert torch.equal(got, want), (n, got.tolist(), want.tolist())
    err = capfd.readouterr().err
    first, decode, prefill = graphs  # the prefill at 5 tokens, the decode step, the prefill of any length
    assert [first.num_compilations, decode.num_compilations] == [1, 1]
    assert prefill.num_traces == 1 and prefill.num_compilations == 2, (prefill.num_traces, prefill.num_compilations)
    assert prefill.num_shared_runs == 1  # 13 tokens on the graph compiled for 12
    assert err.count('for the bucket') == 2, err


@pytest.mark.parametrize('family', ['mistral', 'gemma2'])
def test_sliding_window_caches_compile_the_decode_step_once(family):
    """transformers' sliding-window cache layers (Mistral's window, Gemma-2's sliding and full
    layers) count their length in a Python int that dynamo makes a symbolic size and the graph
    returns plus one: the decode step still compiles once (the size is evaluated per call), over a
    window that fills (a prompt of 6 tokens, a window of 4)."""
    torch.manual_seed(3)
    model = tiny(family, layers=2 if family == 'gemma2' else 1, sliding_window=4)
    ids = torch.randint(1, VOCAB, (1, 6))
    want = generate(model, ids, 4)
    graphs = compile_forward(model)
    got = generate(model, ids, 4)
    assert torch.equal(got, want), (got.tolist(), want.tolist())
    assert len(graphs) == 2 and [g.num_compilations for g in graphs] == [1, 1], \
        (len(graphs), [g.num_compilations for g in graphs])


def _skip_on_a_gpu():
    if not hidet.cuda_emulated():
        pytest.skip('on a GPU the indices are checked by the kernels, reported at the next call: '
                    'test_a_cache_position_beyond_the_cache_is_reported_by_the_kernels')


def test_a_cache_position_beyond_the_cache_is_an_error():
    """A cache of 8 positions for a prompt of 6 and 5 new tokens: the decode step that writes
    position 8 raises (as eager's index_copy_ does) instead of writing anywhere."""
    _skip_on_a_gpu()
    torch.manual_seed(4)
    model = tiny('llama', layers=1)
    reference = copy.deepcopy(model)
    ids = torch.randint(1, VOCAB, (1, 6))
    compile_forward(model)
    cache = transformers.StaticCache(config=model.config, max_cache_len=8)
    with pytest.raises(ValueError, match='holds 8 at position .*out of range for axis 2 of x of size 8'):
        with torch.no_grad():
            model.generate(ids, max_new_tokens=5, do_sample=False, past_key_values=cache)
    assert torch.equal(generate(model, ids, 2), generate(reference, ids, 2))  # still usable


def _position_beyond_the_cache_reported_by_the_kernels():
    torch.manual_seed(4)
    model = tiny('llama', layers=1)
    reference = copy.deepcopy(model)
    ids = torch.randint(1, VOCAB, (1, 6))
    compile_forward(model)
    device = 'cpu' if hidet.cuda_emulated() else 'cuda'
    model, reference, ids = model.to(device), reference.to(device), ids.to(device)
    cache = transformers.StaticCache(config=model.config, max_cache_len=8)
    # The step that writes position 8 skips it; the kernel's record is raised at a later call.
    with pytest.raises(ValueError, match=r'index_put: indices\[2\]: index 8 is out of range for an axis of size 8 '
                                         r'\(found on cuda:0 by a kernel launched before this call'):
        with torch.no_grad():
            model.generate(ids, max_new_tokens=6, do_sample=False, past_key_values=cache)
            hidet.synchronize()
    hidet.synchronize()  # reported once
    assert torch.equal(generate(model, ids, 2), generate(reference, ids, 2))  # still usable


def test_a_cache_position_beyond_the_cache_is_reported_by_the_kernels():
    """As above, where the kernels check the indices (a GPU, whose indices the host cannot read
    without a synchronization; on the emulator with $HIDET_HOST_INDEX_CHECKS=0, in a process of its
    own): the write is skipped and the error raised at the next call into hidet."""
    if not hidet.cuda_emulated():
        _position_beyond_the_cache_reported_by_the_kernels()
        return
    import os
    import subprocess
    import sys
    env = dict(os.environ, HIDET_HOST_INDEX_CHECKS='0')
    code = ('import sys; sys.path.insert(0, %r); import test_torch_generate as t; '
            't._position_beyond_the_cache_reported_by_the_kernels(); print("reported")' % os.path.dirname(__file__))
    r = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and 'reported' in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


def test_a_prompt_longer_than_the_cache_is_an_error():
    _skip_on_a_gpu()
    torch.manual_seed(5)
    model = tiny('llama', layers=1)
    ids = torch.randint(1, VOCAB, (1, 6))
    compile_forward(model)
    cache = transformers.StaticCache(config=model.config, max_cache_len=4)
    # Raised by the first run: the runs on scratch inputs while the graph compiles report nothing.
    with pytest.raises(ValueError, match='out of range for axis 2 of x of size 4'):
        with torch.no_grad():
            model.generate(ids, max_new_tokens=2, do_sample=False, past_key_values=cache)


def test_a_dtype_change_recompiles_and_a_cache_of_another_dtype_is_refused(capfd):
    """A model converted to f16 between two generate calls: dynamo hands over new graphs (its
    guards check dtypes) and hidet compiles them, logged; a cache of another dtype than the model's
    is refused as in eager (index_copy_ of f32 keys into an f16 cache)."""
    torch.manual_seed(6)
    model = tiny('llama', layers=1)
    ids = torch.randint(1, VOCAB, (1, 6))
    hidet.torch.dynamo_config.verbose(True)
    graphs = compile_forward(model)
    generate(model, ids, 1)  # the prefill alone
    assert len(graphs) == 1
    model.half()
    assert generate(model, ids, 1).shape == (1, 7)
    assert len(graphs) == 2 and all(g.num_compilations == 1 for g in graphs)
    err = capfd.readouterr().err  # a graph at constant shapes, or one shape of a symbolic graph
    assert err.count('hidet: compiled a graph') + err.count('hidet: ShapeDispatch: compiled') == 2, err
    model.float()
    cache = transformers.StaticCache(config=model.config, max_cache_len=16)
    cache.early_initialization(batch_size=1, num_heads=2, head_dim=16, dtype=torch.float16, device='cpu')
    with pytest.raises(Exception, match='same dtype|dtype'):
        with torch.no_grad():
            model.generate(ids, max_new_tokens=2, do_sample=False, past_key_values=cache)


def test_an_input_updated_in_place_and_returned_is_the_input_itself():
    def f(x):
        x.add_(1)
        return x

    x = torch.arange(4.0)
    y = torch.compile(f, backend='hidet')(x)
    assert y is x and x.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_an_updated_input_that_shares_memory_with_another_input_is_an_error():
    """Eager PyTorch lets b, a view of a, see a's update; the compiled graph reads every input as
    given: refused with an error naming both (nothing is written), unless the inputs are apart."""
    def f(a, b):
        a.add_(1)
        return b * 2

    g = torch.compile(f, backend='hidet')
    x = torch.arange(6.0).reshape(2, 3)
    assert g(x, torch.arange(3.0)).tolist() == [0.0, 2.0, 4.0] and x[0].tolist() == [1.0, 2.0, 3.0]
    x = torch.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match=r"updates L\['a'\] in place, and the input L\['b'\] shares its memory"):
        g(x, x[0])
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(ValueError, match='shares its memory'):  # the same call again: checked again
        g(x, x[0])
    # The updated input stays where it was and only the other one moves (a decode step's new
    # input_ids beside its cache): checked against the updated one's memory alone.
    c = torch.arange(6.0).reshape(2, 3)
    assert g(c, torch.arange(3.0)).tolist() == [0.0, 2.0, 4.0]
    assert g(c, torch.ones(3)).tolist() == [2.0, 2.0, 2.0] and c[0].tolist() == [2.0, 3.0, 4.0]
    with pytest.raises(ValueError, match=r"updates L\['a'\] in place, and the input L\['b'\] shares its memory"):
        g(c, c[1])
    assert c.tolist() == [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]]
    assert g(c, torch.ones(3)).tolist() == [2.0, 2.0, 2.0] and c[0].tolist() == [3.0, 4.0, 5.0]
    y = torch.arange(8.0).reshape(2, 4)
    assert g(y[0], y[1]).tolist() == [8.0, 10.0, 12.0, 14.0]  # one storage, apart: as eager
    # The same tensor given twice is one input to dynamo: as eager.
    z = torch.arange(3.0)
    assert g(z, z).tolist() == [2.0, 4.0, 6.0]


def test_caches_made_before_generate_at_two_batch_sizes_give_eager_tokens():
    # bench_llm.py's flow: a StaticCache per batch, made before generate and passed to it
    torch.manual_seed(0)
    model = tiny('llama', layers=1)
    ids = {b: torch.randint(1, VOCAB, (b, 8)) for b in (1, 3)}

    def cache_for(b):
        cache = transformers.StaticCache(config=model.config, max_cache_len=12)
        if hasattr(cache, 'early_initialization'):
            cache.early_initialization(batch_size=b, num_heads=model.config.num_key_value_heads, head_dim=16,
                                       dtype=model.dtype, device=model.device)
        return cache

    caches = {b: cache_for(b) for b in (1, 3)}

    def run(b):
        caches[b].reset()
        with torch.no_grad():
            return model.generate(ids[b], max_new_tokens=4, min_new_tokens=4, do_sample=False,
                                  past_key_values=caches[b], disable_compile=True)

    want = {b: run(b) for b in (1, 3)}
    compile_forward(model)
    for b in (1, 3):
        got = run(b)
        assert torch.equal(got, want[b]), (b, got.tolist(), want[b].tolist())
