// The template implementations of ops::matmul, and their search spaces.
//
// For c[M, n] = a[M, k] @ b[k, n] with a, b and c all f32, all f16 or all bf16:
//  * M = 1 (decoding) with b under 32M elements, f32 at M <= 8, or n or k not a multiple of 8, and
//    b a matrix: the few-rows kernel on the CUDA cores (templates/matmul_gemv.hpp), which streams
//    b at the memory bandwidth with split-k and an in-kernel fixup; the other templates join it as
//    candidates in spaces 1 and 2;
//  * f16 / bf16 with 2 to 8 rows (decoding a batch), one row of a larger b, and 9 to 32 rows
//    without Hopper: the mma.sync
//    kernel with a tile of the rows and split-k summed in the kernel (matmul_f16_few_rows_config);
//    9 to 32 rows on Hopper take the wgmma heuristic, which splits k for them;
//  * f32: the FMA kernel (templates/matmul_f32.hpp), with split-k for shapes with few tiles;
//  * f16 / bf16 on a Hopper GPU (sm_90a): the TMA + wgmma kernel (templates/matmul_wgmma.hpp),
//    and in the larger spaces the mma.sync kernel too;
//  * f16 / bf16 elsewhere (older GPUs, the CPU emulator): the mma.sync kernel
//    (templates/matmul_f16.hpp);
//  * f16 under reduce precision f16 (option::KernelOptions::f16_accumulation): the mma.sync kernel
//    with f16 accumulators, on every GPU.
// Space 0 is each template's heuristic configuration for the shape; space 1 a small set (up to
// about 20); space 2 a larger one (up to about 50). tuning::pick chooses among them and records
// the choice on disk; the built kernel is kept per (shape, dtype, configuration), so later calls
// compile and tune nothing.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <type_traits>

#include "hidet/ops/templates/matmul_f16.hpp"
#include "hidet/ops/templates/matmul_f32.hpp"
#include "hidet/ops/templates/matmul_gemv.hpp"
#include "hidet/ops/templates/matmul_wgmma.hpp"
#include "hidet/ops/tuning.hpp"
#include "hidet/util/env.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

/// A built template kernel for fixed sizes: run(a, b, c, extras) launches c = a @ b on the current
/// stream; with an epilogue, c is the epilogue's output and `extras` its other inputs.
using MatmulRun =
    std::function<void(const Tensor &a, const Tensor &b, const Tensor &c, const std::vector<Tensor> &extras)>;

/// A built template kernel whose row count is symbolic (templates/matmul_rows.hpp): run(a, b, c,
/// extras, values) launches c = a @ b for the symbols' `values`.
using MatmulRowsRun = std::function<void(const Tensor &a, const Tensor &b, const Tensor &c,
                                         const std::vector<Tensor> &extras, const SymbolValues &values)>;

/// One configuration of one template for a fixed problem: its label ("wgmma 128x256x64 (...)")
/// and a function that builds it (compiles its kernels); build_rows, where the template takes a
/// symbolic row count (the mma.sync and wgmma ones), builds the same configuration for rows
/// `rows` instead of the problem's m.
struct MatmulCandidate {
  std::string label;
  std::function<MatmulRun()> build;
  std::function<MatmulRowsRun(const Dim &rows)> build_rows;
};

/// True when the Hopper kernel can run here: a real sm_90a GPU.
inline bool matmul_wgmma_available() { return templates::wgmma_available(); }

/// The candidates of space `space` (0, 1 or 2) for c[m, n] = a[m, k] @ b[k, n] in dtype `dt`
/// (f32, f16 or bf16), in order of preference: the first is the heuristic configuration. With a
/// batch, c[z] = a[z] @ b[z] (see templates::MatmulBatch). With an epilogue `epi`, each candidate
/// stores through it.
inline std::vector<MatmulCandidate> matmul_candidates(int m, int n, int k, DataType dt, int space,
                                                      const templates::MatmulBatch &batch = {},
                                                      std::shared_ptr<const Epilogue> epi = nullptr) {
  using namespace templates;
  const int mb = m * batch.count; // the heuristics see the batch as more rows
  const auto &dev = runtime::device_info(0);
  const int sms = dev.emulated || dev.sm_count <= 0 ? 132 : dev.sm_count;
  std::vector<MatmulCandidate> out;
  std::set<std::string> seen;
  auto push = [&](std::string label, std::function<MatmulRun()> build,
                  std::function<MatmulRowsRun(const Dim &)> build_rows = nullptr) {
    if (seen.insert(label).second) out.push_back({std::move(label), std::move(build), std::move(build_rows)});
  };
  // build_rows of a template class T (MatmulF16, MatmulWgmma) with configuration c
  auto rows_builder = [=]<class T, class C>(std::type_identity<T>, C c) {
    return [=](const Dim &rows) {
      auto mm = std::make_shared<T>(MatmulRows(rows), n, k, dt, c, batch, epi);
      return MatmulRowsRun([mm](const Tensor &a, const Tensor &b, const Tensor &y, const std::vector<Tensor> &e,
                                const SymbolValues &v) { (*mm)(a, b, y, e, v); });
    };
  };
  // KernelOptions: tensor cores off leaves f16/bf16 to the auto-scheduled kernel; a forced
  // split-k replaces each candidate's (a candidate that cannot take it keeps its own).
  const auto &opts = option::kernel_options();
  if (dt != dtypes::f32 && !opts.tensor_cores) return out;
  auto f32_ok = [&](const MatmulF32Config &c) {
    try {
      check_matmul_f32_config(c);
    } catch (const ValueError &) {
      return false;
    }
    return !(c.split_k > 1 && k / c.split_k < 2 * c.block_k) && std::int64_t(c.split_k) * batch.count <= 65535;
  };
  auto add_f32 = [&](MatmulF32Config c) {
    if (opts.parallel_k > 0) {
      auto forced = c;
      forced.split_k = opts.parallel_k;
      if (f32_ok(forced)) c = forced;
    }
    if (!f32_ok(c)) return;
    push("fma " + c.str() + batch.str(), [=] {
      auto mm = std::make_shared<MatmulF32>(m, n, k, c, batch, epi);
      return MatmulRun([mm](const Tensor &a, const Tensor &b, const Tensor &y, const std::vector<Tensor> &e) {
        (*mm)(a, b, y, e);
      });
    }, [=](const Dim &rows) {
      auto mm = std::make_shared<MatmulF32>(MatmulRows(rows), n, k, c, batch, epi);
      return MatmulRowsRun([mm](const Tensor &a, const Tensor &b, const Tensor &y, const std::vector<Tensor> &e,
                                const SymbolValues &v) { (*mm)(a, b, y, e, v); });
    });
  };
  // Reduce precision f16: f16 products accumulate in f16, on the mma.sync template only.
  const bool acc16 = opts.f16_accumulation && dt == dtypes::f16;
  auto add_mma = [&](MatmulF16Config c) {
    c.acc_f16 = acc16;
    try {
      check_matmul_f16_config(c);
    } catch (const ValueError &) {
      return;
    }
    if (batch.count > 65535) return; // grid z
    push("mma.sync " + c.str() + batch.str(), [=] {
      auto mm = std::make_shared<MatmulF16>(m, n, k, dt, c, batch, epi);
      return MatmulRun([mm](const Tensor &a, const Tensor &b, const Tensor &y, const std::vector<Tensor> &e) {
        (*mm)(a, b, y, e);
      });
    }, rows_builder(std::type_identity<MatmulF16>{}, c));
  };
  auto add_wgmma = [&](MatmulWgmmaConfig c) {
    if (opts.parallel_k > 0) {
      const int k_tiles = lang::ceil_div(k, MatmulWgmmaConfig::block_k);
      if (opts.parallel_k == 1 || k_tiles / opts.parallel_k >= 2) c.split_k = opts.parallel_k;
    }
    try {
      check_matmul_wgmma_config(c);
    } catch (const ValueError &) {
      return;
    }
    push("wgmma " + c.str() + batch.str(), [=] {
      auto mm = std::make_shared<MatmulWgmma>(m, n, k, dt, c, batch, epi);
      return MatmulRun([mm](const Tensor &a, const Tensor &b, const Tensor &y, const std::vector<Tensor> &e) {
        (*mm)(a, b, y, e);
      });
    }, c.split_fixup ? std::function<MatmulRowsRun(const Dim &)>() : rows_builder(std::type_identity<MatmulWgmma>{}, c));
  };

  // Few rows (decoding): the product reads each element of b once for at most 16 flops, so it is
  // bound by b's bytes; the few-rows kernel keeps them in flight on every multiprocessor, where
  // the templates below would pad their 64- or 128-row tiles and leave most SMs idle at these n.
  // HIDET_MATMUL_FEW_ROWS=0 leaves products of few rows to the tiled templates (to bisect on a GPU).
  static const bool few_rows = util::env_bool("HIDET_MATMUL_FEW_ROWS", true);
  // 2 to 8 rows (decoding a batch) in f16/bf16 with n and k multiples of 8 (no padding copies of
  // b): the few-rows mma.sync kernel first, the gemv second. H200, bf16, 8 rows, weights read from
  // memory (bench_decode, 2026-11-28): 4096x4096 11.6 against the gemv's 16.3 us, 2048x8192 11.3
  // against 16.2, 8192x2048 12.6 against 16.4, 4096x1024 7.8 against 11.9. One row too where b
  // has 32M elements or more (the mma.sync kernel's time does not depend on the rows up to 16):
  // 4096x14336 29.3 against the gemv's 35.3 at one row, 14336x4096 30.4 against 33.9; below
  // that the gemv's shorter start wins at one row (4096x1024: 6.3 against 7.8).
  const bool few_rows_mma = few_rows && mb <= 32 && !batch.batched() && opts.parallel_k <= 1 && !acc16 &&
                            dt != dtypes::f32;
  if (few_rows_mma && mb <= 8 && n % 8 == 0 && k % 8 == 0 &&
      (mb >= 2 || std::int64_t(n) * k >= (std::int64_t(1) << 25))) {
    add_mma(matmul_f16_few_rows_config(mb, n, k, sms));
    if (space == 0 && !out.empty()) return out;
  }
  if (few_rows && mb <= 8 && !batch.batched() && !acc16) {
    auto add_gemv = [&](MatmulGemvConfig c) {
      if (opts.parallel_k > 0) c.split_k = opts.parallel_k;
      try {
        check_matmul_gemv_config(c);
      } catch (const ValueError &) {
        return;
      }
      push("gemv " + c.str(), [=] {
        auto mm = std::make_shared<MatmulGemv>(m, n, k, dt, c, epi);
        return MatmulRun([mm](const Tensor &a, const Tensor &b, const Tensor &y, const std::vector<Tensor> &e) {
          (*mm)(a, b, y, e);
        });
      }, [=](const Dim &rows) {
        auto mm = std::make_shared<MatmulGemv>(MatmulRows(rows), n, k, dt, c, epi);
        return MatmulRowsRun([mm](const Tensor &a, const Tensor &b, const Tensor &y, const std::vector<Tensor> &e,
                                  const SymbolValues &v) { (*mm)(a, b, y, e, v); });
      });
    };
    const MatmulGemvConfig h = matmul_gemv_heuristic_config(mb, n, k, dt, sms);
    add_gemv(h);
    if (space == 0 && !out.empty()) return out;
    // Space 1: the lanes along n, the warps, the loads in flight (with and without the pipeline)
    // and the split around the heuristic's; space 2 also the neighbouring splits of each.
    for (int lanes : {8, 16, 32})
      for (int warps : {4, 8})
        for (int unroll : {2, 4, 8})
          for (bool pipeline : {false, true}) {
            MatmulGemvConfig c = h;
            c.lanes_n = lanes, c.warps = warps, c.unroll = unroll, c.pipeline = pipeline;
            c.split_k = matmul_gemv_split(c, mb, n, k, dt, sms);
            add_gemv(c);
            if (space == 2)
              for (int f : {2, 4}) {
                MatmulGemvConfig v = c;
                v.split_k = std::min(256, c.split_k * f);
                add_gemv(v);
                v.split_k = std::max(1, c.split_k / f);
                add_gemv(v);
              }
          }
  }

  if (dt == dtypes::f32) {
    add_f32(matmul_f32_heuristic_config(mb, n, k, sms));
    if (space == 0) return out;
    // Space 1: every tile shape of the heuristic with split-k 1, 2 and 4; space 2 adds 8 and 16,
    // block_k 16, 2 and 4 stages, the other min_blocks, and register staging (v1).
    for (const auto &tile : matmul_f32_tiles())
      for (int split : {1, 2, 4, 8, 16}) {
        if (space == 1 && split > 4) break;
        auto c = tile;
        c.split_k = split;
        add_f32(c);
        if (space == 2 && split <= 2) {
          for (int st : {0, 2, 4}) {
            auto v = c;
            v.stages = st;
            add_f32(v);
          }
          auto v = c;
          v.block_k = 16;
          add_f32(v);
          v = c;
          v.min_blocks = c.min_blocks == 1 ? 2 : 1;
          add_f32(v);
        }
      }
    return out;
  }

  // 9 to 32 rows (a batch of decoding steps) without Hopper: the mma.sync kernel with a tile of
  // the rows and split-k summed in the kernel, so that b streams on every SM (the tiles alone are
  // a few dozen). On Hopper the wgmma heuristic below splits k about as well and is far faster
  // here: H200, bf16, 32 rows, weights read from memory (bench_decode, 2026-11-28): 4096x4096
  // 11.9 against 27.9 us, 8192x2048 11.8 against 34.6, 4096x1024 11.2 against 42.7.
  // Not past 32 rows: with it on 33 to 64 (49-row products in the last stage of ConvNeXt-T and
  // Swin-T at batch 1), both models ran about 0.1 ms slower on the H200 (2026-11-28) than with the
  // kernels below, the only change to their graphs; the completing block's sum over the slices
  // (one block reading every slice's partial tile) is the likely cost.
  // In spaces 1 and 2 the same kernel is a candidate from 1 to 32 rows, with half and twice its
  // split, and 128-column tiles (four warps). (f16 accumulation: unsplit, so not this kernel.)
  if (few_rows_mma && (space > 0 || (mb > 8 && !matmul_wgmma_available()))) {
    const MatmulF16Config h = matmul_f16_few_rows_config(mb, n, k, sms);
    add_mma(h);
    if (space == 0 && !out.empty()) return out;
    const int k_tiles = lang::ceil_div(k, h.block_k);
    for (int wn : {2, 4})
      for (int split : {h.split_k / 2, h.split_k, h.split_k * 2}) {
        MatmulF16Config c = h;
        c.warps_n = wn, c.split_k = std::max(1, wn == 4 ? split / 2 : split);
        if (k_tiles / c.split_k >= 2) add_mma(c);
      }
  }
  if (matmul_wgmma_available() && !acc16) {
    // Few rows and a short k (a transformer's projections at batch 1): the mma.sync kernel with
    // 32- or 64-row tiles. Timed alone (weights resident in L2), 64x128 wgmma tiles are faster
    // (H200, 128x3072x768: 5.1 against 6.3 us), but in BERT-base's CUDA graph at batch 1, where
    // each product reads its weights from HBM, routing them to wgmma made the model slower
    // (0.476 against 0.467 ms, docs/notes/matmul_wgmma.md).
    // Not past one wave of 64 x 64 tiles: Qwen2-0.5B's MLP products at 128 tokens (128 x 4864 x
    // 896: 152 tiles, two waves on 132 SMs) ran 12.6 us on mma.sync in its CUDA graph (H200),
    // where one wave of the wgmma heuristic's 64 x 128 tiles is modelled at 4 (and its space-2
    // tuning of the merged 128 x 9728 x 896 product picked 64 x 256 wgmma tiles, 11.7 us).
    const std::int64_t tiles64 = std::int64_t(lang::ceil_div(mb, 64)) * lang::ceil_div(n, 64);
    if (mb <= 256 && k <= 1024 && opts.parallel_k <= 1 && tiles64 <= sms) {
      add_mma(tiles64 >= 64 ? MatmulF16Config{2, 2, 32, 32, 64, 4, 1} : MatmulF16Config{1, 2, 32, 32, 64, 4, 1});
      if (space == 0 && !out.empty()) return out;
    }
    add_wgmma(matmul_wgmma_heuristic_config(mb, n, k, sms, epi ? epilogue_math_calls(*epi) : 0));
    if (space == 0) return out;
    const int k_tiles = lang::ceil_div(k, MatmulWgmmaConfig::block_k);
    struct Shape {
      int consumers, block_n, stages;
    };
    for (Shape s : {Shape{2, 256, 4}, Shape{2, 128, 6}, Shape{1, 128, 6}, Shape{1, 256, 5}, Shape{2, 192, 4},
                    Shape{3, 192, 4}})
      for (int split : {1, 2, 4, 8}) {
        MatmulWgmmaConfig c;
        c.consumers = s.consumers, c.block_n = s.block_n, c.stages = s.stages, c.split_k = split;
        std::int64_t tiles = std::int64_t(lang::ceil_div(m, c.block_m())) * lang::ceil_div(n, c.block_n) * batch.count;
        if (split > 1 && (tiles * split > 2 * sms || k_tiles / split < 2)) continue;
        add_wgmma(c);
        if (space == 2) {
          auto v = c;
          v.persistent = false;
          add_wgmma(v);
          v = c;
          v.stages = std::max(2, c.stages - 1);
          add_wgmma(v);
          for (int g : {4, 16}) {
            v = c;
            v.group_m = g;
            add_wgmma(v);
          }
          v = c; // a cluster of two blocks along m multicasting b's tile
          v.cluster_m = 2;
          add_wgmma(v);
          v = c; // the accumulator pairs stored straight from the registers
          v.smem_epilogue = false;
          add_wgmma(v);
        }
      }
    if (space == 2) { // 256-row tiles: two consumers of two m64 atoms each
      for (int bn : {128, 192}) {
        MatmulWgmmaConfig c{2, bn, bn == 128 ? 4 : 3};
        c.atoms = 2;
        add_wgmma(c);
      }
      // Ping-pong, where the blocks get more than one tile each: each consumer owns 64x256,
      // 128x128 or 128x192 tiles (8192^3: 128x192 1.396 ms against 1.426 for the default).
      struct Ping {
        int bn, atoms, stages;
      };
      for (Ping p : {Ping{256, 1, 4}, Ping{128, 2, 5}, Ping{192, 2, 4}}) {
        MatmulWgmmaConfig c{2, p.bn, p.stages};
        c.atoms = p.atoms, c.pingpong = true;
        if (std::int64_t(lang::ceil_div(m, c.block_m())) * lang::ceil_div(n, c.block_n) * batch.count > sms) add_wgmma(c);
      }
    }
  } else {
    add_mma(matmul_f16_heuristic_config(mb, n, k, sms));
    if (space == 0) return out;
  }
  // mma.sync tilings (the only template off Hopper; more candidates on Hopper).
  add_mma(MatmulF16Config{});                   // 128 x 128 x 32, 4 warps of 64 x 64, 3 stages
  add_mma(MatmulF16Config{2, 2, 32, 32, 32, 3, 1}); // 64 x 64 x 32
  if (!matmul_wgmma_available() || acc16 || space == 2) {
    add_mma(MatmulF16Config{2, 4, 64, 64, 32, 3, 1}); // 128 x 256
    add_mma(MatmulF16Config{2, 2, 64, 64, 32, 4, 1});
    add_mma(MatmulF16Config{2, 2, 64, 64, 64, 3, 1});
    add_mma(MatmulF16Config{2, 2, 32, 32, 64, 3, 1});
    add_mma(MatmulF16Config{4, 2, 64, 64, 32, 3, 1});
    add_mma(MatmulF16Config{2, 2, 32, 32, 32, 2, 1});
  }
  if (space == 2)
    for (int wm : {1, 2, 4})
      for (int wn : {1, 2, 4})
        for (int tile : {32, 64})
          for (int bk : {32, 64})
            for (int stages : {2, 3, 4})
              if (wm * wn >= 2 && wm * wn <= 8) add_mma(MatmulF16Config{wm, wn, tile, tile, bk, stages, 1});
  return out;
}

namespace detail {
struct MatmulKernelCache {
  std::mutex mu;
  std::map<std::string, MatmulRun> runs; ///< "dtype m x n x k space S" -> the chosen kernel
  /// "dtype rows x n x k label epilogue" -> a kernel over symbolic rows
  std::map<std::string, MatmulRowsRun> rows_runs;
  /// the same problem with this call's m instead of the label -> that kernel (no candidate
  /// listing on later calls at a value seen before)
  std::map<std::string, MatmulRowsRun> rows_at_value;
  std::size_t rows_builds = 0;
};
inline MatmulKernelCache &matmul_kernel_cache() {
  static MatmulKernelCache c;
  return c;
}
} // namespace detail

/// The kernel for c[m, n] = a[m, k] @ b[k, n] under the current search space: built once per
/// problem, space and epilogue; with more than one candidate, tuned on these very tensors (or
/// answered from the tuning record, which an epilogue shares with the plain product). Empty when
/// no candidate could be built (logged on stderr): the caller falls back to the auto-scheduled
/// kernel. With an epilogue `epi`, c is its output and `extras` its other inputs.
/// The problem key under which matmul_template_kernel tunes (and records) c[m, n] = a[m, k] @ b[k, n]
/// at the current search space and kernel options: tuning::stored_label(tuning::make_key("matmul",
/// key)) is then the configuration it chose (benchmarks print it).
inline std::string matmul_tuning_problem(int m, int n, int k, DataType dt, const templates::MatmulBatch &batch = {}) {
  std::string opts = option::kernel_options().str();
  return str_cat(dt, " ", m, "x", n, "x", k, batch.str(), " space ", option::search_space(), opts.empty() ? "" : " ",
                 opts);
}

inline MatmulRun matmul_template_kernel(int m, int n, int k, DataType dt, const Tensor &a, const Tensor &b,
                                        const Tensor &c, const templates::MatmulBatch &batch = {},
                                        std::shared_ptr<const Epilogue> epi = nullptr,
                                        const std::vector<Tensor> &extras = {}) {
  int space = option::search_space();
  std::string key = matmul_tuning_problem(m, n, k, dt, batch);
  std::string cache_key = epi ? str_cat(key, " epilogue ", epi->key) : key;
  auto &cache = detail::matmul_kernel_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto it = cache.runs.find(cache_key); it != cache.runs.end()) return it->second;
  }
  auto cands = matmul_candidates(m, n, k, dt, space, batch, epi);
  MatmulRun run; // stays empty without candidates (tensor cores off): the auto-scheduled kernel
  try {
    if (cands.size() == 1) run = cands[0].build();
  } catch (const Error &e) {
    std::fprintf(stderr, "hidet: matmul %s: template %s failed (%s); using the auto-scheduled kernel\n", key.c_str(),
                 cands[0].label.c_str(), e.what());
  }
  if (cands.size() > 1) {
    std::vector<MatmulRun> built(cands.size());
    std::vector<tuning::Candidate> tc;
    for (std::size_t i = 0; i < cands.size(); ++i)
      tc.push_back({cands[i].label, [&, i]() -> tuning::Launch {
                      built[i] = cands[i].build();
                      return [&, i] { built[i](a, b, c, extras); };
                    }});
    try {
      std::size_t best = tuning::pick(str_cat("matmul ", key), tuning::make_key("matmul", key), tc);
      run = built[best] ? built[best] : cands[best].build(); // a record from disk: nothing was built
    } catch (const Error &e) {
      std::fprintf(stderr, "hidet: matmul %s: no template candidate could be built (%s); using the auto-scheduled "
                           "kernel\n", key.c_str(), e.what());
    }
  }
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.runs.emplace(cache_key, std::move(run)).first->second;
}

/// The template kernel for c[rows, n] = a[rows, k] @ b[k, n] whose row count `rows` is symbolic
/// (a batch times a sequence length), for a call where it is `m`: the configuration that search
/// space 0 picks for m (the template's heuristic), built once for symbolic rows
/// (templates/matmul_rows.hpp) and shared by every later value of the symbols that picks the same
/// configuration. Tuning (spaces 1 and 2) would time each value: the symbolic path always takes
/// the heuristic. `epi` may be over the same symbols. Empty where no such template serves (tensor
/// cores off for f16/bf16, a build that failed: logged on stderr); the caller then runs the
/// constant-shape path.
inline MatmulRowsRun matmul_template_kernel_rows(const Dim &rows, int m, int n, int k, DataType dt,
                                                 const templates::MatmulBatch &batch = {},
                                                 std::shared_ptr<const Epilogue> epi = nullptr) {
  std::string opts = option::kernel_options().str();
  std::string problem = str_cat(dt, " ", rows.str(), "x", n, "x", k, batch.str(), opts.empty() ? "" : " ", opts,
                                epi ? " epilogue " + epi->key : std::string());
  std::string at_value = str_cat(problem, " at m=", m);
  auto &cache = detail::matmul_kernel_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto it = cache.rows_at_value.find(at_value); it != cache.rows_at_value.end()) return it->second;
  }
  auto cands = matmul_candidates(m, n, k, dt, 0, batch, epi);
  if (cands.empty() || !cands[0].build_rows) return nullptr;
  std::string key = str_cat(problem, " ", cands[0].label);
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto it = cache.rows_runs.find(key); it != cache.rows_runs.end())
      return cache.rows_at_value.emplace(at_value, it->second).first->second;
  }
  MatmulRowsRun run;
  try {
    run = cands[0].build_rows(rows);
  } catch (const Error &e) {
    std::fprintf(stderr, "hidet: matmul %s: the template for symbolic rows failed (%s); built per shape instead\n",
                 key.c_str(), e.what());
  }
  std::lock_guard<std::mutex> lock(cache.mu);
  if (run) ++cache.rows_builds;
  auto &stored = cache.rows_runs.emplace(key, std::move(run)).first->second;
  return cache.rows_at_value.emplace(at_value, stored).first->second;
}

/// Template kernels built for symbolic rows so far in this process (matmul_template_kernel_rows).
inline std::size_t matmul_rows_builds() {
  auto &cache = detail::matmul_kernel_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.rows_builds;
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
