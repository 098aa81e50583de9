"""The layer of bench_graph.cpp (a BERT-base encoder layer, f16, seq 128) with PyTorch: eager and
torch.compile (inductor, mode reduce-overhead) on the same GPU. Prints one row per batch size."""
import math

import torch
import torch.nn.functional as F

from torch_timing import time_ms


def make_layer(batch, seq=128, hidden=768, heads=12, ffn=3072, dt=torch.float16):
    dev = "cuda"
    w = lambda i, j: torch.randn(i, j, device=dev, dtype=dt) / math.sqrt(i)
    v = lambda n: torch.randn(n, device=dev, dtype=dt) * 0.1
    p = dict(wq=w(hidden, hidden), wk=w(hidden, hidden), wv=w(hidden, hidden), wo=w(hidden, hidden),
             bq=v(hidden), bk=v(hidden), bv=v(hidden), bo=v(hidden), w1=w(hidden, ffn), c1=v(ffn),
             w2=w(ffn, hidden), c2=v(hidden), g1=torch.ones(hidden, device=dev, dtype=dt), b1=v(hidden),
             g2=torch.ones(hidden, device=dev, dtype=dt), b2=v(hidden))

    def layer(x):
        def heads_of(t):
            return t.reshape(batch, seq, heads, hidden // heads).transpose(1, 2)
        q, k, vv = heads_of(x @ p["wq"] + p["bq"]), heads_of(x @ p["wk"] + p["bk"]), heads_of(x @ p["wv"] + p["bv"])
        a = F.scaled_dot_product_attention(q, k, vv).transpose(1, 2).reshape(batch * seq, hidden)
        h = F.layer_norm(a @ p["wo"] + p["bo"] + x, (hidden,), p["g1"], p["b1"])
        f = F.gelu(h @ p["w1"] + p["c1"])
        return F.layer_norm(f @ p["w2"] + p["c2"] + h, (hidden,), p["g2"], p["b2"])
    return layer


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'model':28} {'eager ms':>10} {'inductor':>10}")
    for batch in (1, 16):
        layer = make_layer(batch)
        x = torch.randn(batch * 128, 768, device="cuda", dtype=torch.float16)
        with torch.no_grad():
            eager = time_ms(lambda: layer(x))
            try:
                compiled = torch.compile(layer, mode="reduce-overhead")
                for _ in range(3):
                    compiled(x)
                ind = f"{time_ms(lambda: compiled(x)):10.3f}"
            except Exception as e:  # no triton / compiler: say so
                ind = f"{'n/a':>10}  ({type(e).__name__})"
        print(f"{'BERT layer f16 b%d s128' % batch:28} {eager:10.3f} {ind}")


if __name__ == "__main__":
    main()
