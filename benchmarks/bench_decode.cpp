// Benchmark: the kernels of one decoding step of Llama-3.2-1B- and Llama-3.1-8B-shaped models
// against the memory bandwidth, in one run (issue 36: decode at the bandwidth limit).
//
// 1. The copy bandwidth: (read + write) bytes / time of a 1 GiB device copy (what bench_llm.py
//    divides by).
// 2. The projections at batch 1, 8 and 32 (x [M, K] @ W [K, N], bf16): the kernel
//    hidet::ops::matmul dispatches to (the few-rows kernel for M <= 8, templates/matmul_gemv.hpp),
//    launched as a compiled graph launches it (without the operator's dispatch on the host), and
//    cuBLAS GemmEx, each as time and as the fraction of the copy bandwidth its bytes (W, x, the
//    output) take: 1.0 is the limit. Every result is checked against cuBLAS first. Both are timed
//    over copies of the weights of at least 256 MB together, so that each call reads its weights
//    from memory (until 2026-11-28 one copy: weights up to the L2's size were read from the L2,
//    fractions past 1).
// 3. Attention over a static cache of 576 and 4096 slots of which 544 are valid (a bool mask, as
//    transformers makes it), 32 q heads on 8 kv heads: the decode kernel (ops::
//    scaled_dot_product_attention's path for few query rows, templates/attention_decode.hpp)
//    against the tiled flash template on the same grouped heads and mask (the path before it),
//    with the bandwidth fraction of the valid keys' bytes; both kernels launched directly (until
//    2026-11-28 the decode kernel was timed through the operator, its host dispatch included).
//
// Usage: bench_decode   (HIDET_BENCH_MODELS=1b|8b selects; HIDET_SEARCH_SPACE=1 tunes the products
// and prints the configuration each tuning chose; HIDET_BENCH_CANDIDATES=1 also times every
// candidate of search space 1 at 8 and 32 rows (and at every M of HIDET_BENCH_SHAPES) over the same
// copies and prints the five fastest (HIDET_BENCH_CANDIDATE_SPACE=2: space 2's; HIDET_BENCH_TOP=N:
// the N fastest);
// HIDET_BENCH_SHAPES="128x4864x896,197x1536x384" (M x N x K) times these products instead of the
// models, the same way: kernels launched directly, weights read from memory, with the candidates
// under HIDET_BENCH_CANDIDATES=1: the data for the defaults of small-M products, whose time
// through the operator, ops::matmul's dispatch included, bench_matmul_ops reports)
// With HIDET_BENCH_CANDIDATES=1 (or =attention, for these alone) the attention rows at batch 1 also
// time other tilings of the decode kernel (keys per tile, warps, splits around the heuristic's)
// and print the fastest.
// HIDET_BENCH_EPILOGUE="silu_mul,residual,bias_silu" (with HIDET_BENCH_SHAPES) also times, for
// each product, the kernel with that chain fused into its store (silu(x @ w) * u with u [M, N],
// x @ w + r with r [M, N], silu(x @ w + bias) with bias [N]), as ops::matmul dispatches it,
// checked against the unfused operators.
// Needs a GPU; on the emulator it says so and exits 0.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <hidet/hidet.hpp>
#include <hidet/ops.hpp>
#include <hidet/ops/matmul_templates.hpp>
#include <hidet/ops/templates/attention.hpp>
#include <hidet/ops/templates/attention_decode.hpp>

#include "bench_matmul_common.hpp"

namespace {
namespace o = hidet::ops;

/// The epilogue `kind` after an [m, n] product of dtype dt: its chain and the reference from the
/// unfused operators (y: the plain product; extras: the chain's other inputs).
struct BenchEpilogue {
  std::shared_ptr<const o::Epilogue> epi;
  std::vector<hidet::Tensor> extras;
  hidet::Tensor want;
};
std::optional<BenchEpilogue> bench_epilogue(const std::string &kind, std::int64_t m, std::int64_t n, hidet::DataType dt,
                                            const hidet::Tensor &y) {
  using hidet::lang::Expr;
  o::Shape shape{m, n};
  auto x = o::input("x", shape, dt);
  auto silu = [&](const Expr &v) { return v / (hidet::lang::cast(1.0f, dt) + hidet::lang::exp(-v)); };
  BenchEpilogue b;
  o::Task t;
  if (kind == "silu_mul") {
    auto u = o::input("u", shape, dt);
    t = o::Task{"silu_mul", {x, u}, {o::compute("silu_mul", shape, [&](const o::Idx &i) { return silu(x.at(i)) * u.at(i); })}, ""};
    b.extras = {hidet::ops::mul(hidet::randn({m, n}, dt, "cuda"), 0.5)};
    b.want = o::silu(y) * b.extras[0];
  } else if (kind == "residual") {
    auto r = o::input("r", shape, dt);
    t = o::Task{"residual", {x, r}, {o::compute("residual", shape, [&](const o::Idx &i) { return x.at(i) + r.at(i); })}, ""};
    b.extras = {hidet::randn({m, n}, dt, "cuda")};
    b.want = y + b.extras[0];
  } else if (kind == "bias_silu") {
    auto bias = o::input("bias", {n}, dt);
    t = o::Task{"bias_silu", {x, bias},
                {o::compute("bias_silu", shape, [&](const o::Idx &i) { return silu(x.at(i) + bias.at({i.back()})); })}, ""};
    b.extras = {hidet::randn({n}, dt, "cuda")};
    b.want = o::silu(y + b.extras[0]);
  } else {
    return std::nullopt;
  }
  auto next = o::Epilogue::identity(shape, dt).then(t, 0, t.str(), t.name);
  if (!next) return std::nullopt;
  b.epi = std::make_shared<const o::Epilogue>(*next);
  return b;
}

/// The largest difference of got and want over (1 + want's largest magnitude).
double rel_diff(const hidet::Tensor &got, const hidet::Tensor &want) {
  auto g = got.to_double_vector(), w = want.to_double_vector();
  double err = 0, mag = 0;
  for (std::size_t i = 0; i < g.size(); ++i) err = std::max(err, std::abs(g[i] - w[i])), mag = std::max(mag, std::abs(w[i]));
  return err / (1 + mag);
}

struct Model {
  const char *name;
  int hidden, inter, heads, kv_heads, head_dim, vocab;
};

double gbs(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }
} // namespace

int main() {
  if (hidet::cuda_emulated()) {
    std::printf("bench_decode needs a CUDA GPU (the 'cuda' device is the CPU emulator here); "
                "nothing measured.\n");
    return 0;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0); // rows as they come (a timeout keeps what was printed)
  const auto &dev = hidet::runtime::device_info(0);
  const char *every = std::getenv("HIDET_BENCH_CANDIDATES");
  const bool every_candidate = every && std::string(every) == "1";
  // HIDET_BENCH_CANDIDATES=attention: the attention rows' candidates only (the products' are many builds)
  const bool attention_candidates = every_candidate || (every && std::string(every) == "attention");
  const char *space_env = std::getenv("HIDET_BENCH_CANDIDATE_SPACE"),
             *top_env = std::getenv("HIDET_BENCH_TOP");
  const int candidate_space = space_env ? std::atoi(space_env) : 1;
  const std::size_t top = top_env ? std::size_t(std::max(1, std::atoi(top_env))) : 5;
  // The `top` fastest of timed candidates (us, label), and how many there were.
  auto print_fastest = [top](std::vector<std::pair<double, std::string>> &rows) {
    std::sort(rows.begin(), rows.end());
    for (std::size_t i = 0; i < rows.size() && i < top; ++i)
      std::printf("    candidate %9.2f us  %s\n", rows[i].first, rows[i].second.c_str());
    std::printf("    (%zu candidates)\n", rows.size());
  };
  auto cb = cublas::load();
  std::printf("device: %s, %d SMs; cuBLAS: %s\n", dev.name.c_str(), dev.sm_count,
              cb.ok() ? cb.path.c_str() : ("NOT LOADED (" + cb.why + ")").c_str());
  std::mt19937 rng(std::random_device{}());

  // 1. copy bandwidth
  const std::int64_t gib = std::int64_t(1) << 30;
  hidet::Tensor src = hidet::zeros({gib}, hidet::u8, "cuda"),
                dst = hidet::empty({gib}, hidet::u8, "cuda");
  const double copy_ms = hidet::median_ms(
      [&] {
        hidet::runtime::detail::copy_bytes(dst.data_ptr(), dst.device(), false, src.data_ptr(),
                                           src.device(), false, std::size_t(gib));
      },
      10, 5.0);
  const double bw = gbs(2.0 * double(gib), copy_ms);
  std::printf("copy bandwidth (read + write): %.0f GB/s (1 GiB in %.3f ms)\n\n", bw, copy_ms);
  src = hidet::Tensor(), dst = hidet::Tensor();

  const std::regex pick(std::getenv("HIDET_BENCH_MODELS") ? std::getenv("HIDET_BENCH_MODELS")
                                                          : ".");
  std::vector<Model> models{{"1b", 2048, 8192, 32, 8, 64, 128256},
                            {"8b", 4096, 14336, 32, 8, 128, 128256}};
  // HIDET_BENCH_SHAPES: given products (M x N x K) instead of the models' projections.
  struct Given {
    int m, n, k;
  };
  std::vector<Given> given;
  if (const char *env = std::getenv("HIDET_BENCH_SHAPES")) {
    const std::string list = env;
    for (std::size_t pos = 0; pos < list.size();) {
      const std::size_t end = std::min(list.find(',', pos), list.size());
      Given g{};
      if (std::sscanf(list.substr(pos, end - pos).c_str(), "%dx%dx%d", &g.m, &g.n, &g.k) == 3 && g.m > 0 && g.n > 0 &&
          g.k > 0)
        given.push_back(g);
      else
        std::printf("HIDET_BENCH_SHAPES: '%s' is not M x N x K; skipped\n", list.substr(pos, end - pos).c_str());
      pos = end + 1;
    }
    models = {{"given", 0, 0, 0, 0, 0, 0}};
  }
  std::vector<std::string> epilogues;
  if (const char *env = std::getenv("HIDET_BENCH_EPILOGUE")) {
    std::string list = env;
    for (std::size_t pos = 0; pos < list.size();) {
      const std::size_t end = std::min(list.find(',', pos), list.size());
      if (end > pos) epilogues.push_back(list.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  int failures = 0;
  for (const auto &md : models) {
    if (!std::regex_search(md.name, pick)) continue;
    struct Proj {
      const char *what;
      int k, n;
      int m = 0; ///< the rows to time (0: 1, 8 and 32)
    };
    const int q = md.heads * md.head_dim, kv = md.kv_heads * md.head_dim;
    std::vector<Proj> projs{{"q", md.hidden, q},           {"k, v", md.hidden, kv},
                            {"o", q, md.hidden},           {"gate, up", md.hidden, md.inter},
                            {"down", md.inter, md.hidden}, {"lm_head", md.hidden, md.vocab}};
    if (!given.empty()) {
      projs.clear();
      for (const Given &g : given) projs.push_back({"given", g.k, g.n, g.m});
    }
    std::printf("%s: projections, bf16 (fraction: bytes / time / copy bandwidth; the weights rotate over copies\n"
                "of at least 256 MB together, so that each call reads them from memory, not from the L2)\n",
                md.name);
    std::printf("%-9s %5s %6s %6s | %-48s %9s %6s | %9s %6s\n", "proj", "M", "K", "N",
                "hidet kernel", "hidet us", "frac", "cuBLAS us", "frac");
    for (const auto &p : projs)
      for (int m : p.m > 0 ? std::vector<int>{p.m} : std::vector<int>{1, 8, 32}) {
        // Copies of the weights (views into one allocation), at least 256 MB together: a decode
        // step reads each weight once, from memory; timing one copy over and over would read a
        // weight of up to the L2's size (50 MB on the H100) from the L2 (fractions past 1).
        const std::int64_t wbytes = 2 * std::int64_t(p.k) * p.n;
        const int copies = int(std::clamp<std::int64_t>(((std::int64_t(256) << 20) + wbytes - 1) / wbytes, 1, 256));
        hidet::Tensor x = hidet::randn({m, p.k}, hidet::bf16, "cuda");
        // One copy drawn on the host, the others copied from it on the device.
        hidet::Tensor all_w = hidet::empty({copies, p.k, p.n}, hidet::bf16, "cuda");
        {
          hidet::Tensor w0 = hidet::ops::mul(hidet::randn({p.k, p.n}, hidet::bf16, "cuda"), 0.05);
          for (int i = 0; i < copies; ++i)
            hidet::runtime::detail::copy_bytes(static_cast<char *>(all_w.data_ptr()) + std::size_t(i) * wbytes,
                                               all_w.device(), false, w0.data_ptr(), w0.device(), false,
                                               std::size_t(wbytes));
        }
        std::vector<hidet::Tensor> ws;
        for (int i = 0; i < copies; ++i) ws.push_back(all_w.narrow(i, 1).reshape({p.k, p.n}));
        const hidet::Tensor &w = ws[0];
        int turn = 0; // the copy the next timed call reads
        auto next_w = [&]() -> const hidet::Tensor & { return ws[std::size_t(turn++ % copies)]; };
        auto cands =
            hidet::ops::matmul_candidates(m, p.n, p.k, hidet::bf16, hidet::option::search_space());
        std::string label = cands.empty() ? "auto-scheduled" : cands[0].label;
        hidet::Tensor y = hidet::empty({m, p.n}, hidet::bf16, "cuda");
        // The kernel ops::matmul dispatches to (tuned in spaces 1 and 2), timed without the
        // operator's dispatch on the host: as a compiled graph launches it.
        hidet::ops::MatmulRun run = hidet::ops::matmul_template_kernel(m, p.n, p.k, hidet::bf16, x, w, y);
        if (!run) throw hidet::Error("bench_decode: no template kernel for the product");
        run(x, w, y, {});
        if (cands.size() > 1) { // the configuration the tuning chose (recorded on disk)
          auto chosen = hidet::ops::tuning::stored_label(hidet::ops::tuning::make_key(
              "matmul", hidet::ops::matmul_tuning_problem(m, p.n, p.k, hidet::bf16)));
          label = chosen ? "tuned: " + *chosen
                         : "tuned (search space " + std::to_string(hidet::option::search_space()) + ")";
        }
        hidet::Tensor ref = hidet::empty({m, p.n}, hidet::bf16, "cuda");
        double cublas_us = -1;
        if (cb.ok() && cb.gemm_ex && cublas::gemm_ex_row_major(cb, m, p.n, p.k, x, w, ref) == 0) {
          hidet::Tensor timed = hidet::empty({m, p.n}, hidet::bf16, "cuda"); // ref keeps w's product
          cublas_us = 1e3 * time_ms([&] { cublas::gemm_ex_row_major(cb, m, p.n, p.k, x, next_w(), timed); });
        }
        auto chk = check_half(m, p.n, p.k, x, w, y, cublas_us >= 0 ? &ref : nullptr, rng);
        if (!chk.ok) ++failures;
        hidet::Tensor timed_y = hidet::empty({m, p.n}, hidet::bf16, "cuda");
        const double us = 1e3 * time_ms([&] { run(x, next_w(), timed_y, {}); });
        const double bytes = 2.0 * (double(p.k) * p.n + double(m) * p.k + double(m) * p.n);
        std::printf("%-9s %5d %6d %6d | %-48.48s %9.2f %6.2f | %9.2f %6.2f%s\n", p.what, m, p.k,
                    p.n, label.c_str(), us, gbs(bytes, us * 1e-3) / bw, cublas_us,
                    cublas_us > 0 ? gbs(bytes, cublas_us * 1e-3) / bw : 0.0,
                    chk.ok ? "" : "  WRONG (differs from cuBLAS / the reference)");
        for (const std::string &kind : epilogues) {
          auto be = bench_epilogue(kind, m, p.n, hidet::bf16, y);
          if (!be) {
            std::printf("    epilogue '%s': unknown (silu_mul, residual, bias_silu) or not fusable\n", kind.c_str());
            continue;
          }
          hidet::Tensor fy = hidet::empty({m, p.n}, hidet::bf16, "cuda");
          // Fused kernels are checked on copy 0 (y's weights), then timed over the copies.
          auto time_fused = [&](const hidet::ops::MatmulRun &f, const std::string &what) {
            f(x, w, fy, be->extras);
            const double err = rel_diff(fy, be->want);
            const bool ok = err <= 2e-2;
            if (!ok) ++failures;
            const double fus = 1e3 * time_ms([&] { f(x, next_w(), fy, be->extras); });
            std::printf("    %-9s %-44.44s %9.2f us (plain %.2f: +%.2f)%s\n", kind.c_str(), what.c_str(), fus, us,
                        fus - us, ok ? "" : "  WRONG (differs from the unfused operators)");
          };
          auto fused = hidet::ops::matmul_template_kernel(m, p.n, p.k, hidet::bf16, x, w, fy, {}, be->epi, be->extras);
          if (fused) time_fused(fused, "fused, as dispatched");
        }
        if (every_candidate && (m > 1 || !given.empty()) && (!given.empty() || p.n < md.vocab)) {
          // Each candidate of space 1, built side by side, timed the same way (the tuning times
          // them one launch at a time on one copy, with the L2 emptied before each: to compare).
          auto all = hidet::ops::matmul_candidates(m, p.n, p.k, hidet::bf16, candidate_space);
          std::vector<std::future<hidet::ops::MatmulRun>> built;
          for (auto &c : all)
            built.push_back(std::async(std::launch::async, [&c] {
              hidet::ensure_context(0); // (each thread's build loads its module)
              return c.build();
            }));
          std::vector<std::pair<double, std::string>> rows;
          for (std::size_t i = 0; i < all.size(); ++i) {
            try {
              auto r = built[i].get();
              r(x, w, timed_y, {});
              rows.push_back({1e3 * hidet::median_ms([&] { r(x, next_w(), timed_y, {}); }, 7, 1.0), all[i].label});
            } catch (const hidet::Error &e) {
              rows.push_back({INFINITY, all[i].label + ": " + e.what()});
            }
          }
          print_fastest(rows);
        }
      }

    if (!given.empty()) break; // no attention for given products
    // 3. attention over the static cache
    std::printf("\n%s: attention over a static cache, %d q heads on %d kv heads, head dim %d, "
                "bf16, 544 valid keys\n",
                md.name, md.heads, md.kv_heads, md.head_dim);
    std::printf("%5s %6s | %-34s %9s %6s | %9s %6s\n", "batch", "slots", "decode kernel", "us",
                "frac", "tiled us", "frac");
    for (int b : {1, 8, 32})
      for (int slots : {576, 4096}) {
        const int valid = 544, D = md.head_dim;
        hidet::Tensor qt = hidet::randn({b, md.heads, 1, D}, hidet::bf16, "cuda");
        hidet::Tensor k = hidet::randn({b, md.kv_heads, slots, D}, hidet::bf16, "cuda");
        hidet::Tensor v = hidet::randn({b, md.kv_heads, slots, D}, hidet::bf16, "cuda");
        std::vector<double> mv(std::size_t(b) * slots);
        for (std::size_t i = 0; i < mv.size(); ++i)
          mv[i] = int(i % std::size_t(slots)) < valid ? 1 : 0;
        hidet::Tensor mask =
            hidet::asarray(mv, {b, 1, 1, slots}, hidet::boolean).to(hidet::Device::cuda());
        hidet::Tensor fmask = hidet::asarray(
                                  [&] {
                                    for (auto &x : mv)
                                      x = x > 0 ? 0.0 : -INFINITY;
                                    return mv;
                                  }(),
                                  {b, 1, 1, slots}, hidet::f32)
                                  .to(hidet::Device::cuda());
        const double scale = 1.0 / std::sqrt(double(D));
        hidet::Tensor got = hidet::ops::scaled_dot_product_attention(qt, k, v, mask, false, scale);
        hidet::ops::templates::AttentionProblem p;
        p.batch = b, p.heads = md.heads, p.kv_heads = md.kv_heads, p.seq_q = 1, p.seq_kv = slots,
        p.head_dim = D;
        p.dtype = hidet::bf16, p.has_mask = true, p.mask_dtype = hidet::f32, p.mask_batch = b,
        p.mask_heads = 1;
        auto cfg = hidet::ops::templates::attention_heuristic_config(
            p, dev.sm_count, hidet::ops::templates::wgmma_available());
        hidet::ops::templates::Attention tiled(p, cfg);
        hidet::Tensor out = hidet::empty({b, md.heads, 1, D}, hidet::bf16, "cuda");
        tiled(qt, k, v, fmask, out, scale);
        auto g = got.to_double_vector(), t = out.to_double_vector();
        double err = 0, mag = 0;
        for (std::size_t i = 0; i < g.size(); ++i)
          err = std::max(err, std::abs(g[i] - t[i])), mag = std::max(mag, std::abs(t[i]));
        bool ok = err <= 2e-2 * (1 + mag);
        if (!ok) ++failures;
        const double tiled_us = 1e3 * hidet::median_ms([&] { tiled(qt, k, v, fmask, out, scale); });
        // The decode kernel ops::scaled_dot_product_attention dispatched to (the bool mask), timed
        // like the tiled one: launched directly, without the operator's dispatch on the host.
        hidet::ops::templates::AttentionProblem pd = p;
        pd.mask_dtype = hidet::boolean;
        const auto dcfg = hidet::ops::templates::attention_decode_heuristic_config(pd, b, slots, dev.sm_count);
        hidet::ops::templates::AttentionDecode decode(pd, dcfg);
        hidet::Tensor dout = hidet::empty({b, md.heads, 1, D}, hidet::bf16, "cuda");
        const double us = 1e3 * hidet::median_ms([&] { decode(qt, k, v, mask, dout, scale); });
        const auto dv = dout.to_double_vector();
        double derr = 0;
        for (std::size_t i = 0; i < dv.size(); ++i) derr = std::max(derr, std::abs(dv[i] - t[i]));
        if (ok && derr > 2e-2 * (1 + mag)) ++failures, ok = false;
        const double bytes =
            2.0 * 2.0 * double(b) * md.kv_heads * valid * D; // the valid keys of K and V
        std::printf("%5d %6d | %-34.34s %9.2f %6.2f | %9.2f %6.2f%s\n", b, slots,
                    dcfg.str().c_str(), us, gbs(bytes, us * 1e-3) / bw, tiled_us,
                    gbs(bytes, tiled_us * 1e-3) / bw,
                    ok ? "" : "  WRONG (differs from the tiled kernel)");
        if (attention_candidates && b == 1) {
          // Other tilings around the heuristic's at batch 1: keys per tile, warps and splits (built
          // side by side, each checked against the tiled kernel's output, then timed the same way).
          std::vector<hidet::ops::templates::AttentionDecodeConfig> cs;
          for (int bkv : {32, 64})
            for (int w : {2, 4, 8})
              for (int sp : {dcfg.splits / 2, dcfg.splits, dcfg.splits * 2, dcfg.splits * 4}) {
                hidet::ops::templates::AttentionDecodeConfig c = dcfg;
                c.block_kv = bkv, c.warps = w, c.splits = std::clamp(sp, 1, 64);
                cs.push_back(c);
              }
          std::vector<std::future<std::shared_ptr<hidet::ops::templates::AttentionDecode>>> built;
          for (const auto &c : cs)
            built.push_back(std::async(std::launch::async, [&pd, c] {
              hidet::ensure_context(0);
              return std::make_shared<hidet::ops::templates::AttentionDecode>(pd, c);
            }));
          std::vector<std::pair<double, std::string>> rows;
          for (std::size_t i = 0; i < cs.size(); ++i) {
            try {
              auto alt = built[i].get();
              (*alt)(qt, k, v, mask, dout, scale);
              const auto av = dout.to_double_vector();
              double e = 0;
              for (std::size_t j = 0; j < av.size(); ++j)
                e = std::max(e, std::abs(av[j] - t[j]));
              if (e > 2e-2 * (1 + mag)) {
                rows.push_back({INFINITY, cs[i].str() + ": WRONG"});
                ++failures;
                continue;
              }
              rows.push_back({1e3 * hidet::median_ms([&] { (*alt)(qt, k, v, mask, dout, scale); }),
                              cs[i].str()});
            } catch (const hidet::Error &e) {
              rows.push_back({INFINITY, cs[i].str() + ": " + e.what()});
            }
          }
          print_fastest(rows);
        }
      }
    std::printf("\n");
  }
  if (failures) std::printf("%d results differ from the references\n", failures);
  return failures ? 1 : 0;
}
