// Benchmark: scaled dot-product attention in hidet (the flash-attention templates,
// include/hidet/ops/templates/attention.hpp and, for f32, attention_f32.hpp) on BERT-base,
// GPT-2 and Llama-7B-like shapes.
// PyTorch cannot be called from this process: benchmarks/bench_attention_torch.py measures
// torch.nn.functional.scaled_dot_product_attention (flash path) on the same shapes and prints
// the same table; compare the two tables of one gpu-check run.
//
// Per shape: every tiling of search space 1 is built (in parallel) and timed; the table shows
// the default tiling (space 0, what an untuned call runs) and the fastest one. Each shape is
// checked before it is timed: the default tiling's output against a double-precision host
// reference on sampled rows. Then the tuning time of search space 2 through the operator (a
// fresh tuning key, kernels compiled from scratch unless the compile cache already has them).
// Times: CUDA events around batches of launches after warm-up, the median of the batches.
// TFLOP/s = 4 B H Sq Skv D / time, halved for causal.
//
// Usage: bench_attention [--all] (--all prints every tiling's time). HIDET_BENCH_ATTENTION=<regex>
// keeps the rows whose "model dtype" matches (and skips the tuning-time line). Needs a GPU; on
// the emulator it says so and exits 0.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <hidet/hidet.hpp>
#include <hidet/ops/attention.hpp>
#include <hidet/ops/templates/attention.hpp>
#include <hidet/ops/tuning.hpp>
#include <hidet/runtime/timing.hpp>

namespace tpl = hidet::ops::templates;

double time_ms(const std::function<void()> &fn) { return hidet::median_ms(fn); }

struct Shape {
  int b, h, s, d; ///< s: the keys (and the queries unless sq_ is set)
  bool causal;
  hidet::DataType dt;
  const char *name;
  int sq_ = 0; ///< query rows when not s (decoding: 1)
  int sq() const { return sq_ ? sq_ : s; }
};

/// Max over sampled rows of |got - ref| / bound (<= 1 passes), reference in double.
double check(const Shape &sh, const hidet::Tensor &q, const hidet::Tensor &k,
             const hidet::Tensor &v, const hidet::Tensor &out, std::mt19937 &rng) {
  auto hq = q.to_double_vector(), hk = k.to_double_vector(), hv = v.to_double_vector(),
       ho = out.to_double_vector();
  const double eps = sh.dt == hidet::bf16 ? std::ldexp(1.0, -8) : sh.dt == hidet::f16 ? std::ldexp(1.0, -11) : 1e-6;
  const double scale = 1.0 / std::sqrt(double(sh.d));
  std::uniform_int_distribution<int> rb(0, sh.b - 1), rh(0, sh.h - 1), ri(0, sh.sq() - 1);
  double worst = 0;
  std::vector<double> p(std::size_t(sh.s));
  for (int n = 0; n < 24; ++n) {
    int b = rb(rng), h = rh(rng), i = n == 0 ? sh.sq() - 1 : n == 1 ? 0 : ri(rng);
    std::size_t base = (std::size_t(b) * sh.h + h) * sh.s, qbase = (std::size_t(b) * sh.h + h) * sh.sq();
    int keys = sh.causal ? i + 1 : sh.s;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < keys; ++j) {
      double acc = 0;
      for (int e = 0; e < sh.d; ++e)
        acc += hq[(qbase + i) * sh.d + e] * hk[(base + j) * sh.d + e];
      p[std::size_t(j)] = acc * scale, mx = std::max(mx, acc * scale);
    }
    for (int j = 0; j < keys; ++j)
      sum += (p[std::size_t(j)] = std::exp(p[std::size_t(j)] - mx));
    for (int e = 0; e < sh.d; ++e) {
      double ref = 0, mag = 0;
      for (int j = 0; j < keys; ++j) {
        double vv = hv[(base + j) * sh.d + e];
        ref += p[std::size_t(j)] / sum * vv, mag += p[std::size_t(j)] / sum * std::abs(vv);
      }
      double got = ho[(qbase + i) * sh.d + e];
      double bound = 1.01 * eps * std::abs(ref) + 2 * eps * mag + 1e-4 * mag + 1e-6;
      worst = std::max(worst, std::isfinite(got) ? std::abs(got - ref) / bound : INFINITY);
    }
  }
  return worst;
}

int main(int argc, char **argv) {
  if (hidet::cuda_emulated()) {
    std::printf("bench_attention needs a CUDA GPU (the 'cuda' device is the CPU emulator here); "
                "nothing measured.\n");
    return 0;
  }
  bool all = argc > 1 && std::string(argv[1]) == "--all";
  const auto &dev = hidet::runtime::device_info(0);
  std::printf("hidet scaled_dot_product_attention, %s (%s, %d SMs)\n", dev.name.c_str(),
              dev.arch().c_str(), dev.sm_count);
  std::vector<Shape> shapes = {
      {32, 12, 128, 64, false, hidet::f16, "BERT-base"},
      {32, 12, 512, 64, false, hidet::f16, "BERT-base"},
      {4, 32, 2048, 128, false, hidet::f16, "Llama-7B"},
      {4, 32, 2048, 128, true, hidet::f16, "Llama-7B"},
      {1, 32, 2048, 128, true, hidet::f16, "Llama-7B"},
      {4, 32, 2048, 128, true, hidet::bf16, "Llama-7B"},
      {1, 32, 4096, 128, false, hidet::f16, "Llama-7B", 1}, // decoding: one query row, 4096 keys
      {8, 32, 4096, 128, false, hidet::f16, "Llama-7B", 1},
      {1, 12, 128, 64, false, hidet::f32, "BERT-base"}, // f32: the CUDA-core template (attention_f32.hpp)
      {32, 12, 128, 64, false, hidet::f32, "BERT-base"},
      {8, 12, 512, 64, false, hidet::f32, "BERT-base"},
      {1, 12, 1024, 64, true, hidet::f32, "GPT-2"},
  };
  std::mt19937 rng(1234);
  int failures = 0;

  const char *filter = std::getenv("HIDET_BENCH_ATTENTION");
  // Tuning time of search space 2 through the operator, on a fresh key.
  if (!filter) {
    Shape sh{2, 32, 1024, 128, true, hidet::f16, "Llama-7B"};
    auto q = hidet::randn({sh.b, sh.h, sh.s, sh.d}, sh.dt, "cuda"),
         k = hidet::randn({sh.b, sh.h, sh.s, sh.d}, sh.dt, "cuda"),
         v = hidet::randn({sh.b, sh.h, sh.s, sh.d}, sh.dt, "cuda");
    hidet::option::search_space(2);
    const auto tuned_before = hidet::ops::tuning::stats().tuned;
    auto t0 = std::chrono::steady_clock::now();
    auto out = hidet::ops::scaled_dot_product_attention(q, k, v, std::nullopt, true);
    hidet::synchronize();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    hidet::option::search_space(0);
    tpl::AttentionProblem ap;
    ap.batch = sh.b, ap.heads = sh.h, ap.seq_q = ap.seq_kv = sh.s, ap.head_dim = sh.d,
    ap.dtype = sh.dt, ap.causal = true;
    bool tuned = hidet::ops::tuning::stats().tuned > tuned_before;
    std::printf("tuning, search space 2 (%zu candidates), %s: %.1f s (first call, compiles "
                "included%s); check %s\n",
                tpl::attention_candidates(ap, 2, dev.sm_count, tpl::wgmma_available()).size(), ap.str().c_str(), secs,
                tuned ? "" : "; NOT a tuning time: the choice came from the tuning record on disk",
                check(sh, q, k, v, out, rng) <= 1 ? "ok" : "FAILED");
  }

  std::printf("%-10s %-5s %-28s %10s %9s   %10s %9s  %s\n", "model", "dtype", "shape", "default ms",
              "TFLOP/s", "tuned ms", "TFLOP/s", "tuned tiling");
  for (auto &sh : shapes) {
    if (filter && !std::regex_search(hidet::str_cat(sh.name, " ", sh.dt), std::regex(filter))) continue;
    tpl::AttentionProblem ap;
    ap.batch = sh.b, ap.heads = sh.h, ap.seq_q = sh.sq(), ap.seq_kv = sh.s, ap.head_dim = sh.d,
    ap.dtype = sh.dt, ap.causal = sh.causal;
    auto q = hidet::randn({sh.b, sh.h, sh.sq(), sh.d}, sh.dt, "cuda"),
         k = hidet::randn({sh.b, sh.h, sh.s, sh.d}, sh.dt, "cuda"),
         v = hidet::randn({sh.b, sh.h, sh.s, sh.d}, sh.dt, "cuda"),
         out = hidet::empty({sh.b, sh.h, sh.sq(), sh.d}, sh.dt, "cuda");
    const double scale = 1.0 / std::sqrt(double(sh.d));
    auto cfgs = tpl::attention_candidates(ap, 1, dev.sm_count, tpl::wgmma_available()); // cfgs[0] is the default
    std::vector<std::shared_ptr<tpl::Attention>> built(cfgs.size());
    std::vector<std::string> errors(cfgs.size());
    {
      std::vector<std::thread> pool;
      std::atomic<std::size_t> next{0};
      for (unsigned w = 0; w < std::min<unsigned>(16, unsigned(cfgs.size())); ++w)
        pool.emplace_back([&] {
          hidet::ensure_context(0);
          for (std::size_t i; (i = next++) < cfgs.size();) {
            try {
              built[i] = std::make_shared<tpl::Attention>(ap, cfgs[i]);
            } catch (const std::exception &e) {
              errors[i] = e.what();
            }
          }
        });
      for (auto &t : pool)
        t.join();
    }
    const double flops = 4.0 * sh.b * sh.h * double(sh.sq()) * sh.s * sh.d * (sh.causal ? 0.5 : 1.0);
    auto tflops = [&](double ms) { return flops / ms * 1e-9; };
    std::string shape_s = hidet::str_cat("B=", sh.b, " H=", sh.h, sh.sq_ ? hidet::str_cat(" Sq=", sh.sq_) : "", " S=", sh.s, " D=", sh.d,
                                         sh.causal ? " causal" : "");
    if (!built[0]) {
      std::printf("%-10s %-5s %-28s default tiling failed to build: %s\n", sh.name,
                  hidet::str_cat(sh.dt).c_str(), shape_s.c_str(), errors[0].c_str());
      ++failures;
      continue;
    }
    (*built[0])(q, k, v, out, scale);
    double worst = check(sh, q, k, v, out, rng);
    if (worst > 1) {
      std::printf("%-10s %-5s %-28s CHECK FAILED (worst sample %.3g of its bound)\n", sh.name,
                  hidet::str_cat(sh.dt).c_str(), shape_s.c_str(), worst);
      ++failures;
      continue;
    }
    double def_ms = 0, best_ms = 0;
    std::size_t best = 0;
    for (std::size_t i = 0; i < cfgs.size(); ++i) {
      if (!built[i]) {
        if (all)
          std::printf("    %-56s build failed: %s\n", cfgs[i].str().c_str(), errors[i].c_str());
        continue;
      }
      double ms = time_ms([&] { (*built[i])(q, k, v, out, scale); });
      if (all)
        std::printf("    %-56s %8.3f ms %7.1f TFLOP/s\n", cfgs[i].str().c_str(), ms, tflops(ms));
      if (i == 0) def_ms = ms;
      if (i == 0 || ms < best_ms) best_ms = ms, best = i;
    }
    std::printf("%-10s %-5s %-28s %10.3f %9.1f   %10.3f %9.1f  %s\n", sh.name,
                hidet::str_cat(sh.dt).c_str(), shape_s.c_str(), def_ms, tflops(def_ms), best_ms,
                tflops(best_ms), cfgs[best].str().c_str());
  }
  return failures ? 1 : 0;
}
