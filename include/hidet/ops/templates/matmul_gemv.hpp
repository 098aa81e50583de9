// Matrix products with few rows (decoding: a batch of 1 to 8 tokens times a weight), streamed at
// the memory bandwidth: c[m][n] = a[m][k] @ b[k][n], all row-major, f16, bf16 or f32, f32
// accumulation, output in the input dtype (or through an epilogue).
//
// At m <= 8 a product reads each element of b once and does at most 16 flops with it: the time is
// the bytes of b over the bandwidth, and a tensor-core tile of 64 or 128 rows would be mostly
// padding. This kernel runs on the CUDA cores and spends everything on keeping b's bytes in flight:
//  * A block owns a strip of block_n = lanes_n * vec columns of b and a slice of k (split-k): its
//    threads are lanes_n columns of vectors (vec elements, 16 bytes for f16/bf16 when n allows)
//    by k_threads() rows. Each step a thread loads `unroll` consecutive rows of its column vector
//    (16-byte loads, all issued before any is used) and the matching `unroll` elements of each
//    of a's rows (one vector load per row of a, from L1), and accumulates rows x vec f32 sums.
//    A warp reads 32 / lanes_n rows of 2 * lanes_n * vec bytes each per load: whole 128-byte lines.
//    Pipelined (the heuristic at one row of a), a thread keeps two such buffers and issues the
//    next step's loads before it sums the current step: loads stay in flight across steps.
//  * The block's partial sums meet across its k threads: a butterfly of warp shuffles over the
//    lanes of one column, then shared memory across the warps, each output added in a fixed order.
//  * split_k > 1: each block writes its f32 partial tile to a workspace [splits][m][n], counts
//    itself on its tile's counter, and the block that completes the count adds the slices in
//    order (the result does not depend on which block is last), stores through the epilogue and
//    takes the count back for the next launch (in-kernel fixup: no second kernel, which at decode
//    sizes would cost as much as the product).
//  * rows of a per block: 1 to 8 (grid z covers more, each reading b again: for more rows the
//    tensor-core templates pay off). Symbolic rows (matmul_rows.hpp): rows past m are guarded.
//  * Before its grid_dependency_wait() (lang/cuda.hpp) a block prefetches into the L2 the rows of
//    b its first step reads: launched while the kernel before it ends (a norm of few blocks
//    triggers its dependents at its start: backend/cuda_prelude.hpp), it starts reading weights.
// Partial vectors (n not a multiple of the vector), partial k slices and partial row blocks are
// guarded; a and b need 16-byte aligned data (MatmulGemv's callers ensure it).
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/templates/matmul_rows.hpp"
#include "hidet/ops/templates/split_reduce.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Tiling of the few-rows product (see the top of the file).
struct MatmulGemvConfig {
  int rows = 1;     ///< rows of a per block: 1 to 8 (rows * vec f32 accumulators per thread)
  int lanes_n = 32; ///< threads along n: 8, 16 or 32 (block_n = lanes_n * vec)
  int warps = 4;    ///< warps of a block: 1 to 16
  int unroll = 4;   ///< consecutive rows of b a thread loads per step: 1, 2, 4 or 8
  int split_k = 1;  ///< k slices, each a block (1 to 256); the last block of a tile adds them
  /// Two register buffers of b's rows used in turn: a thread issues the next step's loads before
  /// it adds up the current one's, so a step's loads are in flight while the step before them is
  /// summed (without: each step waits a whole round trip to memory after the one before)
  bool pipeline = false;
  /// b is int8 (weight-only quantization: a's dtype times int8 weights, accumulated in f32; the
  /// per-column scales are the caller's epilogue)
  bool int8_b = false;

  int threads() const { return warps * 32; }
  /// Threads along k: the block's rows of b per load.
  int k_threads() const { return threads() / lanes_n; }
  /// Rows of b one step of the block covers.
  int step_rows() const { return k_threads() * unroll; }
  /// "rows 1, 32 lanes x 4 warps, unroll 4, split-k 8"
  std::string str() const {
    return str_cat("rows ", rows, ", ", lanes_n, " lanes x ", warps, " warps, unroll ", unroll,
                   split_k > 1 ? str_cat(", split-k ", split_k) : std::string(),
                   pipeline ? ", pipelined" : "", int8_b ? ", int8 b" : "");
  }
};

/// Throws ValueError naming the config when it cannot be built.
inline void check_matmul_gemv_config(const MatmulGemvConfig &c) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("matmul_gemv config ", c.str(), ": ", why));
  };
  if (c.rows < 1 || c.rows > 8)
    bad("rows must be in [1, 8] (more rows: the tensor-core templates)");
  if (c.lanes_n != 8 && c.lanes_n != 16 && c.lanes_n != 32) bad("lanes_n must be 8, 16 or 32");
  if (c.warps < 1 || c.warps > 16) bad("warps must be in [1, 16]");
  if (c.unroll != 1 && c.unroll != 2 && c.unroll != 4 && c.unroll != 8)
    bad("unroll must be 1, 2, 4 or 8");
  if (c.split_k < 1 || c.split_k > 256) bad("split_k must be in [1, 256]");
}

/// Elements of b's column vector per thread for n columns of a product in dtype `dt` (b's: int8
/// with c.int8_b): 16 bytes where n is a multiple of it (rows stay 16-byte aligned), else the
/// widest of 8, 4 bytes or one element; int8 b with more than 2 rows of a: 8 bytes at most (8
/// accumulators per row).
inline int matmul_gemv_vector(int n, DataType dt, const MatmulGemvConfig &c = {}) {
  const int bytes = c.int8_b ? 1 : int(dt.nbytes()), widest = c.int8_b && c.rows > 2 ? 8 : 16;
  for (int v = widest / bytes; v > 1; v /= 2)
    if (n % v == 0) return v;
  return 1;
}

/// The k slice of each block (a multiple of the config's step_rows) and the number of slices
/// (split_k, fewer where the slices would run past k).
inline std::pair<int, int> matmul_gemv_slices(int k, const MatmulGemvConfig &c) {
  const int step = c.step_rows();
  const int slice = lang::ceil_div(lang::ceil_div(k, c.split_k), step) * step;
  return {slice, lang::ceil_div(k, slice)};
}

/// Dynamic shared memory of the kernel: the warps' partial tiles, f32[warps][rows][block_n].
inline int matmul_gemv_smem_bytes(int n, DataType dt, const MatmulGemvConfig &c) {
  return c.warps * c.rows * c.lanes_n * matmul_gemv_vector(n, dt, c) * 4;
}

/// Adds kernel `name`: c = a @ b for a: dt[m][k], b: dt[k][n] (dt f16, bf16 or f32; b i8 with
/// cfg.int8_b), then the
/// epilogue's output and extra inputs (EpilogueEmitter::param_specs; c itself without one), then,
/// when the k slices are more than one, ws: f32[slices][m][n] and counters: i32[row blocks *
/// column blocks] (zero before the first launch; each launch leaves them a multiple of the
/// slices), then the symbols (matmul_symbols) when m is symbolic.
inline void add_matmul_gemv_kernel(lang::ScriptModule &mod, const std::string &name,
                                   const MatmulRows &rows, int n, int k, DataType dt,
                                   const MatmulGemvConfig &cfg, const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  check_matmul_gemv_config(cfg);
  if (!(dt.is_half() || dt == dtypes::f32))
    throw ValueError(
        str_cat("matmul_gemv '", name, "': dtype is ", dt, "; it takes f16, bf16 or f32"));
  if ((!rows.symbolic() && rows.value() <= 0) || n <= 0 || k <= 0)
    throw ValueError(str_cat("matmul_gemv '", name, "': m, n, k must be positive, got ", rows.str(),
                             ", ", n, ", ", k));
  const Expr m = rows.expr();
  const bool sym = rows.symbolic();
  const int MB = cfg.rows, Ln = cfg.lanes_n, U = cfg.unroll, threads = cfg.threads(), W = cfg.warps;
  const DataType bdt = cfg.int8_b ? dtypes::i8 : dt; // b's dtype
  const int V = matmul_gemv_vector(n, dt, cfg), block_n = Ln * V, esize = int(dt.nbytes());
  const int besize = int(bdt.nbytes());
  const auto [slice, splits] = matmul_gemv_slices(k, cfg);
  const int steps = slice / cfg.step_rows(), col_blocks = ceil_div(n, block_n);
  const bool guard_n = n % block_n != 0, guard_k = k % slice != 0;
  const bool guard_m = sym || rows.value() % MB != 0;
  // a's elements of one step as one vector per row: the group of U rows lies wholly inside or
  // wholly outside k (k and the slices are multiples of U), aligned to U elements.
  const bool a_vector = k % U == 0 && (U * esize == 4 || U * esize == 8 || U * esize == 16);
  const Expr row_blocks = sym ? Expr(max(ceil_div(m, MB), 1)) : Expr(ceil_div(rows.value(), MB));

  std::vector<ParamSpec> specs{TensorSpec(dt, {})[m][k], TensorSpec(bdt, {})[k][n]};
  const SymShape c_shape{rows.dim, n};
  for (auto &p : ops::detail::EpilogueEmitter::param_specs(epi, c_shape, dt))
    specs.push_back(p);
  if (splits > 1) {
    specs.push_back(TensorSpec(dtypes::f32, {})[splits][m][n]);
    specs.push_back(TensorSpec(dtypes::i32, {})[row_blocks * col_blocks]);
  }
  push_symbol_params(specs, matmul_symbols(rows, epi));
  mod.kernel(name, specs, [&](const std::vector<ParamHandle> &params) {
    lang::Tensor a = params[0], b = params[1];
    const std::size_t n_extra = epi ? epi->inputs.size() : 0;
    std::vector<ir::Var> extras;
    for (std::size_t i = 3; i < 3 + n_extra; ++i)
      extras.push_back(params[i].v);
    ops::detail::EpilogueEmitter out(epi, c_shape, params[2].v, std::move(extras));
    attrs.cuda.grid_dim = {col_blocks, splits, row_blocks};
    attrs.cuda.block_dim = threads;
    attrs.cuda.dynamic_smem_bytes = matmul_gemv_smem_bytes(n, dt, cfg);

    auto acc = register_tensor(f32[MB][V], "acc");
    auto bv = register_tensor(TensorSpec(bdt, {})[U][V], "b_vec");
    auto av = register_tensor(TensorSpec(dt, {})[MB][U], "a_vec");
    auto red = dynamic_shared_tensor(f32[W][MB][block_n], 0, "partial");

    Var n0 = blockIdx.x * block_n, split = blockIdx.y, m0 = blockIdx.z * MB;
    Var tid = threadIdx.x, ln = tid % Ln, tk = tid / Ln;
    Var warp = tid / 32, lane = tid % 32;
    Var col = n0 + ln * V;
    Var k_begin = split * slice;
    Var k_end = guard_k ? Expr(min(k_begin + slice, k)) : Expr(k_begin + slice);
    Expr col_ok = guard_n ? Expr(col < n) : Expr(true);
    auto row_ok = [&](int r) { return guard_m ? Expr(m0 + r < m) : Expr(true); };

    // Before waiting for the kernel before this one, which may still be running (a programmatic
    // launch, docs/notes/programmatic_launch.md), the rows of b of this block's first step go to
    // the L2: one 128-byte line per thread, clamped to b. The weights start streaming while the
    // kernel before (a norm, attention) ends.
    const int lines_per_row = ceil_div(block_n * besize, 128);
    const int pf_rows = std::min(cfg.step_rows(), threads / lines_per_row);
    if_(tid < pf_rows * lines_per_row, [&] {
      Var pr = min(k_begin + tid / lines_per_row, k - 1);
      Var pc = min(n0 + (tid % lines_per_row) * (128 / besize), n - 1);
      prefetch_l2(b[pr][pc]);
    });
    grid_dependency_wait();

    for (int r = 0; r < MB; ++r)
      for (int v = 0; v < V; ++v)
        acc[r][v] = 0.0f;
    // One step: the U rows of b of this thread's column vector at row kb (all loads issued
    // before any is used), then the same U elements of each of a's rows, then the sums.
    auto load_b = [&](lang::Tensor buf, const Expr &kb) {
      for (int u = 0; u < U; ++u) {
        auto load = [&] {
          if (V * besize >= 4) return load_vector(buf[u][0], b[kb + u][col], V * besize);
          buf[u][0] = b[kb + u][col];
        };
        Expr ok = col_ok;
        if (guard_k) ok = ok && kb + u < k_end;
        if (guard_k || guard_n)
          if_(ok, load).else_([&] {
            for (int v = 0; v < V; ++v)
              buf[u][v] = 0.0f;
          });
        else
          load();
      }
    };
    auto add_step = [&](lang::Tensor buf, const Expr &kb) {
      for (int r = 0; r < MB; ++r) {
        if (a_vector) {
          Expr ok = row_ok(r);
          if (guard_k) ok = ok && kb < k_end;
          auto load = [&] { load_vector(av[r][0], a[m0 + r][kb], U * esize); };
          if (guard_k || guard_m)
            if_(ok, load).else_([&] {
              for (int u = 0; u < U; ++u)
                av[r][u] = 0.0f;
            });
          else
            load();
        } else {
          for (int u = 0; u < U; ++u) {
            Expr ok = row_ok(r);
            if (guard_k) ok = ok && kb + u < k_end;
            if (guard_k || guard_m)
              av[r][u] =
                  select(ok, a[min(m0 + r, m - 1)][min(kb + u, k - 1)], cast(Expr(0.0f), dt));
            else
              av[r][u] = a[m0 + r][kb + u];
          }
        }
      }
      for (int u = 0; u < U; ++u)
        for (int v = 0; v < V; ++v) {
          Var bf = cast(buf[u][v], f32);
          for (int r = 0; r < MB; ++r)
            acc[r][v] = fma(cast(av[r][u], f32), bf, acc[r][v]);
        }
    };
    const int step = cfg.step_rows();
    if (!cfg.pipeline) {
      for_(range(steps), [&](Var it) {
        Var kb = k_begin + it * step + tk * U;
        load_b(bv, kb);
        add_step(bv, kb);
      });
    } else {
      // Steps in pairs, buffers bv and bw in turn: step it + 1's loads go out before step it is
      // summed, step it + 2's before step it + 1 is.
      auto bw = register_tensor(TensorSpec(bdt, {})[U][V], "b_next");
      load_b(bv, k_begin + tk * U);
      for_(range(ceil_div(steps, 2)), [&](Var pair) {
        Var it = pair * 2;
        Var kb = k_begin + it * step + tk * U;
        // (an odd count of steps: the last pair has one)
        auto when_second = [&](const std::function<void()> &f) {
          if (steps % 2)
            if_(it + 1 < steps, f);
          else
            f();
        };
        when_second([&] { load_b(bw, kb + step); });
        add_step(bv, kb);
        if_(it + 2 < steps, [&] { load_b(bv, kb + 2 * step); });
        when_second([&] { add_step(bw, kb + step); });
      });
    }

    // The lanes of one column (lane % Ln) add up, then the warps through shared memory.
    for (int off = Ln; off < 32; off *= 2)
      for (int r = 0; r < MB; ++r)
        for (int v = 0; v < V; ++v)
          acc[r][v] = acc[r][v] + shfl_xor_sync(0xffffffffu, acc[r][v], off);
    if_(lane < Ln, [&] {
      for (int r = 0; r < MB; ++r)
        for (int v = 0; v < V; ++v)
          red[warp][r][ln * V + v] = acc[r][v];
    });
    syncthreads();
    const int outputs = MB * block_n, rounds = ceil_div(outputs, threads);
    // Thread tid's outputs: o = tid + i * threads of the block's MB x block_n tile (round i).
    auto each_output = [&](const std::function<void(Expr r, Expr c, int i)> &f) {
      for (int i = 0; i < rounds; ++i) {
        Expr o = tid + i * threads;
        Expr r = o / block_n, c = o % block_n;
        Expr ok = Expr(m0 + r < m) && n0 + c < n;
        if ((i + 1) * threads > outputs) ok = Expr(o < outputs) && ok;
        if_(ok, [&] { f(r, c, i); });
      }
    };
    auto block_sum = [&](const Expr &r, const Expr &c) {
      Var s = var(f32, red[0][r][c], "sum");
      for (int w = 1; w < W; ++w)
        s = s + red[w][r][c];
      return s;
    };
    if (splits == 1)
      return each_output([&](Expr r, Expr c, int) {
        out.store({m0 + r, n0 + c}, block_sum(r, c));
      });

    lang::Tensor ws = params[3 + n_extra], counters = params[4 + n_extra];
    each_output([&](Expr r, Expr c, int) { ws[split][m0 + r][n0 + c] = block_sum(r, c); });
    // Count this slice; the block that completes the count adds every slice and stores.
    Var tile = blockIdx.z * col_blocks + blockIdx.x;
    last_block_of_splits(counters[tile], tid, splits, shared_tensor(i32[1], "done"), [&] {
      // Each output's slices loaded at clamped indices before any bounds branch, the rounds'
      // loads in flight together (a sum under each output's branch waited for one round trip to
      // L2 per round and slice), then the stores in range.
      std::vector<Var> totals;
      for (int i = 0; i < rounds; ++i) {
        Expr o = min(tid + i * threads, outputs - 1);
        Expr r = min(m0 + o / block_n, m - 1), c = min(n0 + o % block_n, n - 1);
        Var s = var(f32, ws[0][r][c], "total");
        if (splits <= 16) {
          for (int sl = 1; sl < splits; ++sl) s = s + ws[sl][r][c];
        } else {
          for_(range(1, splits).unroll(8), [&](Var sl) { s = s + ws[sl][r][c]; });
        }
        totals.push_back(s);
      }
      each_output([&](Expr r, Expr c, int i) { out.store({m0 + r, n0 + c}, totals[std::size_t(i)]); });
    });
  });
}

/// The split-k for config `c` (its split_k ignored) on a GPU with `num_sms` multiprocessors:
/// doubled from 1 while the doubled grid stays within about four blocks per multiprocessor (all
/// resident at once: one wave, each block's loads in flight together) and each slice keeps at
/// least one step. Products with enough column strips (an LM head) are not split.
inline int matmul_gemv_split(const MatmulGemvConfig &c, int m, int n, int k, DataType dt,
                             int num_sms) {
  const std::int64_t blocks =
      std::int64_t(lang::ceil_div(n, c.lanes_n * matmul_gemv_vector(n, dt, c))) *
      lang::ceil_div(std::max(m, 1), c.rows);
  int split = 1;
  while (blocks * split * 2 <= 4 * std::int64_t(std::max(1, num_sms)) && split < 256 &&
         k / (2 * split) >= c.step_rows())
    split *= 2;
  return split;
}

/// A tiling for c[m, n] = a[m, k] @ b[k, n] (m <= 8) on a GPU with `num_sms` multiprocessors.
/// One row of a (decoding at batch 1): 8 warps, 2 rows of b per load step, pipelined (the next
/// step's loads in flight while the current one is summed); 32 lanes along n where that gives a
/// block per multiprocessor, else 16 where that gives a column strip per sixth of them, else 8;
/// then the split of matmul_gemv_split. H200, bf16, weights read from memory (bench_decode's
/// candidates, 2026-11-30), against the tiling before (4 warps, 8 rows per step, not pipelined):
/// 4096x6144 (Llama-3.1-8B's merged q/k/v) 15.2 against 19.1 us, 4096x4096 10.9 against 12.8,
/// 2048x8192 11.0 against 12.8, 8192x2048 11.2 against 12.8, 2048x3072 6.6 against 7.3, 768x768
/// 3.9 against 6.6, 896x4864 5.4 against 9.4, 4864x896 6.5 against 8.3.
/// More rows (a product the few-rows mma.sync kernel cannot take) and int8 b keep that earlier
/// tiling (not measured against this one): all m rows in one block (rounded up to 1, 2, 4 or 8:
/// symbolic rows share a build across the values that round alike), 16-byte vectors, 4 warps, 8
/// rows of b per load step (4 from 4 rows of a on: registers), so that a thread has 64 to 128
/// bytes in flight and a multiprocessor's blocks together 32 to 64 KB; 32 lanes along n (512-byte
/// runs of a row) when that gives a block per multiprocessor, else 16 or 8.
inline MatmulGemvConfig matmul_gemv_heuristic_config(int m, int n, int k, DataType dt, int num_sms,
                                                     bool int8_b = false) {
  MatmulGemvConfig c;
  c.int8_b = int8_b;
  c.rows = m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : 8;
  const int vec = matmul_gemv_vector(n, dt, c);
  if (c.rows == 1 && !int8_b) {
    c.warps = 8, c.unroll = 2, c.pipeline = true;
    c.lanes_n = lang::ceil_div(n, 32 * vec) >= num_sms       ? 32
                : 6 * lang::ceil_div(n, 16 * vec) >= num_sms ? 16
                                                             : 8;
  } else {
    c.unroll = c.rows <= 2 ? 8 : 4;
    for (int lanes : {32, 16, 8}) {
      c.lanes_n = lanes;
      if (lang::ceil_div(n, lanes * vec) >= num_sms) break;
    }
  }
  c.split_k = matmul_gemv_split(c, m, n, k, dt, num_sms);
  return c;
}

/// A script module with kernel "matmul_gemv" (add_matmul_gemv_kernel). MatmulGemv runs it.
inline lang::ScriptModule matmul_gemv_module(const MatmulRows &m, int n, int k, DataType dt,
                                             const MatmulGemvConfig &cfg,
                                             const Epilogue *epi = nullptr) {
  auto mod = lang::script_module(str_cat("matmul_gemv_", dt, cfg.int8_b ? "_i8b_" : "_",
                                         m.symbolic() ? "rows" : m.str(), "x", n, "x", k,
                                         epi ? "_epilogue" : ""));
  add_matmul_gemv_kernel(mod, "matmul_gemv", m, n, k, dt, cfg, epi);
  return mod;
}

/// A built few-rows product for fixed n, k, dtype (and epilogue): f(a, b, c) computes c = a @ b
/// (a: [m, k], b: [k, n], c: [m, n], one dtype of f16, bf16, f32, b int8 with cfg.int8_b; on
/// cuda, 16-byte aligned).
/// With split-k, the workspace and the counters are kept per value of m (symbolic rows: one build
/// serves every value, each call passes the symbols' values).
class MatmulGemv {
public:
  MatmulGemv(const MatmulRows &m, int n, int k, DataType dt, const MatmulGemvConfig &cfg,
             std::shared_ptr<const Epilogue> epi = nullptr)
      : cfg_(cfg), epi_(epi), rows_(m), n_(n), k_(k), dt_(dt),
        slices_(matmul_gemv_slices(k, cfg).second), symbols_(matmul_symbols(m, epi.get())),
        cm_(matmul_gemv_module(m, n, k, dt, cfg, epi.get()).build()) {}
  /// Launches the kernel on the current stream.
  void operator()(const Tensor &a, const Tensor &b, const Tensor &c) const { (*this)(a, b, c, {}); }
  /// With an epilogue: c is its output, `extras` its other inputs. `values`: the symbols' values
  /// (symbolic rows).
  void operator()(const Tensor &a, const Tensor &b, const Tensor &c,
                  const std::vector<Tensor> &extras, const SymbolValues &values = {}) const {
    const std::int64_t m = rows_.at(values);
    Tensor out = epilogue_out_arg(epi_.get(), c, Shape{m, n_});
    std::vector<LaunchArg> args{a, b, out};
    for (const auto &t : extras)
      args.emplace_back(t);
    if (slices_ > 1) {
      const std::int64_t tiles =
          std::int64_t(lang::ceil_div(m, std::int64_t(cfg_.rows))) *
          lang::ceil_div(n_, cfg_.lanes_n * matmul_gemv_vector(n_, dt_, cfg_));
      args.emplace_back(buffers_.get("ws", m, [&] {
        return hidet::empty({slices_, m, n_}, hidet::f32, "cuda");
      }));
      args.emplace_back(
          buffers_.get("counters", m, [&] { return hidet::zeros({tiles}, hidet::i32, "cuda"); }));
    }
    push_symbol_args(args, symbols_, values);
    cm_["matmul_gemv"].launch(args);
  }
  const MatmulGemvConfig &config() const { return cfg_; }
  /// The k slices the kernel runs (split_k, or fewer where k is short).
  int slices() const { return slices_; }
  const CompiledModule &module() const { return cm_; }

private:
  MatmulGemvConfig cfg_;
  std::shared_ptr<const Epilogue> epi_;
  MatmulRows rows_;
  int n_, k_;
  DataType dt_;
  int slices_;
  std::vector<std::string> symbols_;
  CompiledModule cm_;
  mutable RowBuffers buffers_; // split-k: the workspace and the counters, per value of m
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
