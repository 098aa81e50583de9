// The kernels of the conv2d templates (conv2d.hpp puts them together), written in Hidet Script.
//
// Implicit GEMM: for group g, C[m][n] = sum_k A[m][k] B[k][n] with
//   m = (img, oh, ow) over N * OH * OW,  n = output channel in the group (O / groups),
//   k = the reduction over the window and the group's input channels, B[k][n] = w[g OG + n][k],
//   A[m][k] = x[img, oh sh - ph + kh dh, ow sw - pw + kw dw, channel] (0 outside: padding).
// Nothing is materialized: the A tiles are gathered from x by the loads of each k tile.
//
//  * Tensor cores (f16/bf16, add_conv2d_mma_kernel): x is NHWC with the group's channels padded
//    to cgp (CG when CG % 8 == 0, else CG rounded up to 4; x: [N][H][W][groups * cgp]) and w is
//    [O][kw_len] with k = (kh, kw, c), c fastest, rows zero-padded to kw_len = KH * KW * cgp
//    rounded up to 8. Then 8 (cgp % 8 == 0) or 4 consecutive k are contiguous halves of one
//    pixel: one 16- or 8-byte cp.async, zero-filled (src_bytes 0) where the pixel lies in the
//    padding or past the tiles (the 4-wide copies halve the padding of the RGB stem: C = 3 -> 4).
//    The pipeline, swizzles and mma.sync/ldmatrix fragments are matmul_f16.hpp's; the B tile is
//    stored n-major ([n][k], as w is) and read by ldmatrix without .trans, which yields the
//    col-major B fragment of mma.m16n8k16 directly.
//  * FMA units (f32, add_conv2d_fma_kernel): matmul_f32.hpp's register-blocked SGEMM with the
//    tile loads replaced by guarded gathers from x in its own layout (NCHW: k = (c, kh, kw),
//    the weight as PyTorch stores it; NHWC: k = (kh, kw, c)); the B tile is stored transposed
//    with padded rows (loads along k are coalesced, the transposing stores conflict-free).
//  * Depthwise (groups == C == O): conv2d_depthwise.hpp, a direct kernel, not a GEMM.
//  * Repacks for the tensor-core path (NCHW -> padded NHWC, the weight into [O][k_pack]):
//    conv2d_pack.hpp.
// The epilogues add the bias in f32 and store NHWC (packed pairs) or NCHW (y[img][o][oh OW + ow]).
#pragma once

#include <functional>
#include <string>

#include "hidet/error.hpp"
#include "hidet/lang.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/templates/matmul_f16.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Memory layout of conv2d's x and y (and of its weight: [O, C/groups, KH, KW] for NCHW,
/// [O, KH, KW, C/groups] for NHWC).
enum class Conv2dLayout { NCHW, NHWC };

/// The problem: sizes, stride, padding, dilation, groups (output sizes derived).
struct Conv2dShape {
  int n = 1, c = 1, h = 1, w = 1; ///< input
  int o = 1, kh = 1, kw = 1;      ///< output channels, window
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
  /// A symbolic batch (N*2, n): the kernels are built once for every value of its symbols and
  /// take them as i32 parameters after their own (matmul_rows.hpp's convention); n is then the
  /// value the tiling was chosen for. A constant (the default) is not used: n is the batch.
  Dim batch = 0;

  bool symbolic_batch() const { return !batch.is_constant(); }
  /// The batch as a Dim, and as an i32 expression of the symbols (n when constant).
  Dim batch_dim() const { return symbolic_batch() ? batch : Dim(n); }
  lang::Expr n_expr() const { return symbolic_batch() ? dim_expr(batch) : lang::Expr(n); }
  /// The GEMM rows N * OH * OW as an expression (a constant unless the batch is symbolic).
  lang::Expr m_expr() const {
    return symbolic_batch() ? lang::Expr(n_expr() * (oh() * ow())) : lang::Expr(int(gemm_m()));
  }
  /// The symbols the kernels take (the batch's, sorted; none for a constant batch).
  std::vector<std::string> symbols() const { return batch.symbols(); }

  int oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  int cg() const { return c / groups; } ///< input channels per group
  int og() const { return o / groups; } ///< output channels per group
  /// cg padded for the tensor-core path's copies: cg when a multiple of 8, else a multiple of 4
  int cgp() const { return cg() % 8 == 0 ? cg() : (cg() + 3) / 4 * 4; }
  int vec() const { return cgp() % 8 == 0 ? 8 : 4; }           ///< halves per A copy
  int k_pack() const { return (kh * kw * cgp() + 7) / 8 * 8; } ///< packed weight row length
  std::int64_t gemm_m() const { return std::int64_t(n) * oh() * ow(); }
  std::int64_t gemm_k() const { return std::int64_t(kh) * kw * cg(); }
  bool depthwise() const { return groups == c && groups == o && groups > 1; }
  /// "x 1x64x56x56, w 64x3x3 s1x1 p1x1 d1x1 g1"
  std::string str() const {
    return str_cat("x ", symbolic_batch() ? batch.str() : std::to_string(n), "x", c, "x", h, "x", w, ", w ", o, "x", kh,
                   "x", kw, " s", sh, "x", sw,
                   " p", ph, "x", pw, " d", dh, "x", dw, " g", groups);
  }
};

/// Tiling of the tensor-core kernel (as MatmulF16Config): block_m = warps_m * warp_m, etc.
struct Conv2dMmaConfig {
  int warps_m = 2, warps_n = 2; ///< warps of a block
  int warp_m = 64, warp_n = 64; ///< sub-tile of one warp (multiples of 16)
  int block_k = 32;             ///< k extent of one shared tile (16, 32 or 64)
  int stages = 3;               ///< shared buffers of the cp.async pipeline (2..4)
  int split_k = 1;              ///< slices of k computed by separate blocks, then summed

  int block_m() const { return warps_m * warp_m; }
  int block_n() const { return warps_n * warp_n; }
  int threads() const { return warps_m * warps_n * 32; }
  int smem_bytes() const { return stages * (block_m() + block_n()) * block_k * 2; }
  /// "mma 128x128x32 (warps 2x2 of 64x64, 3 stages)"
  std::string str() const {
    return str_cat("mma ", block_m(), "x", block_n(), "x", block_k, " (warps ", warps_m, "x",
                   warps_n, " of ", warp_m, "x", warp_n, ", ", stages, " stages",
                   split_k > 1 ? str_cat(", split-k ", split_k) : "", ")");
  }
};

/// Tiling of the FMA kernel (as MatmulF32Config, without split-k).
struct Conv2dFmaConfig {
  int warps_m = 4, warps_n = 2;
  int repeat_m = 2, repeat_n = 2;
  int lanes_m = 4, lanes_n = 8;
  int thread_m = 4, thread_n = 4;
  int block_k = 8;
  int split_k = 1; ///< slices of k computed by separate blocks, then summed

  int block_m() const { return warps_m * repeat_m * lanes_m * thread_m; }
  int block_n() const { return warps_n * repeat_n * lanes_n * thread_n; }
  int threads() const { return warps_m * warps_n * 32; }
  /// "fma 128x128x8 (warps 4x2, repeat 2x2, lanes 4x8, thread 4x4)"
  std::string str() const {
    return str_cat("fma ", block_m(), "x", block_n(), "x", block_k, " (warps ", warps_m, "x",
                   warps_n, ", repeat ", repeat_m, "x", repeat_n, ", lanes ", lanes_m, "x", lanes_n,
                   ", thread ", thread_m, "x", thread_n,
                   split_k > 1 ? str_cat(", split-k ", split_k) : "", ")");
  }
};

/// Throws ValueError naming the config when it cannot be built.
inline void check_conv2d_mma_config(const Conv2dMmaConfig &c) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("conv2d config ", c.str(), ": ", why));
  };
  if (c.warps_m <= 0 || c.warps_n <= 0) bad("warps_m and warps_n must be positive");
  if (c.warp_m <= 0 || c.warp_m % 16 || c.warp_n <= 0 || c.warp_n % 16)
    bad("warp_m and warp_n must be positive multiples of 16");
  if (c.block_k != 16 && c.block_k != 32 && c.block_k != 64) bad("block_k must be 16, 32 or 64");
  if (c.stages < 2 || c.stages > 4) bad("stages must be 2, 3 or 4");
  if (c.split_k < 1 || c.split_k > 32) bad("split_k must be 1..32");
  if (c.threads() > 1024) bad("more than 1024 threads per block");
  if (c.smem_bytes() > 227 * 1024)
    bad(str_cat(c.smem_bytes(), " bytes of shared memory; an H100 block may use 232448"));
  if ((c.block_m() * c.block_k / 8) % c.threads() || (c.block_n() * c.block_k / 8) % c.threads())
    bad("the threads must copy the tiles in whole rounds of 16-byte vectors");
}

/// Throws ValueError naming the config when its tiles cannot be split over its threads.
inline void check_conv2d_fma_config(const Conv2dFmaConfig &c) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("conv2d config ", c.str(), ": ", why));
  };
  for (int v : {c.warps_m, c.warps_n, c.repeat_m, c.repeat_n, c.lanes_m, c.lanes_n, c.thread_m,
                c.thread_n, c.block_k})
    if (v <= 0) bad("every extent must be positive");
  if (c.lanes_m * c.lanes_n != 32) bad("lanes_m * lanes_n must be 32");
  if (c.split_k < 1 || c.split_k > 32) bad("split_k must be 1..32");
  if (c.threads() > 1024) bad("more than 1024 threads per block");
  int t = c.threads();
  if (t % c.block_k != 0 || c.block_m() % (t / c.block_k) != 0 ||
      c.block_n() % (t / c.block_k) != 0)
    bad(str_cat("block_k must divide the ", t, " threads and ", t / c.block_k,
                " must divide block_m and block_n"));
}

namespace conv2d_detail {
/// Defines kernel `name` with parameters (x, w, [bias,] y, [epilogue inputs...], [symbols...]):
/// `body(x, w, bias or nullptr, y, epilogue inputs)`. A symbolic batch's symbols (s.symbols())
/// and the epilogue's (`epi`) are appended to `params` here, as i32 parameters.
template <class Body>
void define_kernel(lang::ScriptModule &mod, const std::string &name, std::vector<lang::ParamSpec> params,
                   bool has_bias, const std::vector<std::string> &symbols, Body &&body) {
  push_symbol_params(params, symbols);
  mod.kernel(name, params, [&](const std::vector<lang::ParamHandle> &p) {
    lang::Tensor x = p[0], w = p[1], b = p[has_bias ? 2 : 1], y = p[has_bias ? 3 : 2];
    std::vector<ir::Var> extras;
    for (std::size_t i = has_bias ? 4 : 3; i + symbols.size() < p.size(); ++i) extras.push_back(p[i].v);
    body(x, w, has_bias ? &b : nullptr, y, extras);
  });
}
/// The coordinates of the single task of `worker` in a spatial mapping (emits no statement).
inline std::vector<lang::Expr> spatial_task(const lang::TaskMapping &m, const lang::Expr &worker) {
  std::vector<lang::Expr> out;
  lang::for_(m.on(worker, -1), [&](lang::Expr i, lang::Expr j) { out = {i, j}; });
  return out;
}
/// Position of GEMM row `row` in the output: image, oh, ow (and oh * OW + ow).
struct Pixel {
  lang::Expr img, oh, ow, p;
};
inline Pixel pixel_of(const Conv2dShape &s, const lang::Expr &row) {
  int P = s.oh() * s.ow();
  lang::Expr p = row % P;
  return {row / P, p / s.ow(), p % s.ow(), p};
}
/// The output of an implicit-GEMM conv2d as its kernels index it: [M][O] (NHWC, M = N OH OW) or
/// [N][O][OH OW] (NCHW), and the index of GEMM element (row, ch) in it; gemm_out_shape at a
/// batch's value `n` (a run's), gemm_out_extents over the batch's symbols (a kernel's).
inline Shape gemm_out_shape(const Conv2dShape &s, Conv2dLayout layout, std::int64_t n) {
  const std::int64_t p = std::int64_t(s.oh()) * s.ow();
  if (layout == Conv2dLayout::NHWC) return {n * p, s.o};
  return {n, s.o, p};
}
inline SymShape gemm_out_extents(const Conv2dShape &s, Conv2dLayout layout) {
  const std::int64_t p = std::int64_t(s.oh()) * s.ow();
  if (layout == Conv2dLayout::NHWC) return {s.batch_dim() * p, s.o};
  return {s.batch_dim(), s.o, p};
}
/// The symbols of a conv2d kernel: its batch's and its epilogue's, sorted, each once.
inline std::vector<std::string> kernel_symbols(const Conv2dShape &s, const Epilogue *epi) {
  return matmul_symbols(MatmulRows(s.batch_dim()), epi);
}
/// The grid's row tiles: ceil(M / bm), an expression of the symbols with a symbolic batch (at
/// least 1: a launch of zero blocks fails).
inline lang::Expr row_tiles(const Conv2dShape &s, int bm) {
  if (!s.symbolic_batch()) return lang::Expr(int(lang::ceil_div(s.gemm_m(), std::int64_t(bm))));
  return lang::max(lang::ceil_div(s.m_expr(), bm), 1);
}
inline Idx gemm_out_index(const Conv2dShape &s, Conv2dLayout layout, const lang::Expr &row, const lang::Expr &ch) {
  if (layout == Conv2dLayout::NHWC) return {row, ch};
  auto px = pixel_of(s, row);
  return {px.img, ch, px.p};
}
/// The output parameters of a conv2d kernel that stores the result: y (the anchor's shape) or,
/// with an epilogue, its output and inputs.
inline std::vector<lang::ParamSpec> out_params(const Epilogue *epi, const SymShape &anchor, DataType dt) {
  return ops::detail::EpilogueEmitter::param_specs(epi, anchor, dt);
}
/// Input coordinates and validity of window offset (kh, kw) at pixel px (no check on the row).
struct Tap {
  lang::Expr ih, iw, inside;
};
inline Tap tap_of(const Conv2dShape &s, const Pixel &px, const lang::Expr &kh,
                  const lang::Expr &kw) {
  lang::Expr ih = px.oh * s.sh - s.ph + kh * s.dh, iw = px.ow * s.sw - s.pw + kw * s.dw;
  lang::Expr inside = true;
  // Without padding every tap of a valid output pixel lies inside the input.
  if (s.ph > 0) inside = inside && ih >= 0 && ih < s.h;
  if (s.pw > 0) inside = inside && iw >= 0 && iw < s.w;
  return {ih, iw, inside};
}
} // namespace conv2d_detail

/// Adds kernel `name` (f16/bf16 tensor cores, see the top of the file): parameters
/// x: dt[N * H * W * groups * cgp] (NHWC, flattened), w: dt[O][k_pack], [bias: dt[O]], y: dt[N * OH
/// * OW][O] (NHWC) or dt[N][O][OH * OW] (NCHW). Grid: (n tiles, m tiles, groups).
inline void add_conv2d_mma_kernel(lang::ScriptModule &mod, const std::string &name,
                                  const Conv2dShape &s, DataType dt, Conv2dLayout out_layout,
                                  bool has_bias, const Conv2dMmaConfig &cfg,
                                  const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  check_conv2d_mma_config(cfg);
  if (!dt.is_half())
    throw ValueError(
        str_cat("conv2d '", name, "': the tensor-core kernel takes f16 or bf16, got ", dt));
  const int bm = cfg.block_m(), bn = cfg.block_n(), bk = cfg.block_k, threads = cfg.threads(),
            stages = cfg.stages;
  const int mt = cfg.warp_m / 16, nt = cfg.warp_n / 8;
  const int OG = s.og(), cgp = s.cgp(), K = s.kh * s.kw * cgp;
  const Expr M = s.m_expr();
  const int vec = s.vec(), kw_len = s.k_pack();
  const int split = cfg.split_k, k_slice = ceil_div(ceil_div(K, split), bk) * bk,
            k_tiles = k_slice / bk;
  const bool guard_m = s.symbolic_batch() || s.gemm_m() % bm != 0, guard_n = OG % bn != 0,
             guard_k = k_slice * split != K;
  if (split > 1 && has_bias)
    throw ValueError(str_cat("conv2d '", name, "': split-k adds the bias in the sum kernel"));
  auto T = [&](std::vector<ir::Expr> shape) { return TensorSpec(dt, std::move(shape)); };
  // x flattened: element ((img H + ih) W + iw) (groups cgp) + g cgp + c
  const Expr x_len = s.n_expr() * (s.h * s.w * s.groups * cgp);
  std::vector<ParamSpec> params{T({})[x_len], T({})[s.o][kw_len]};
  if (has_bias) params.push_back(T({})[s.o]);
  const SymShape anchor = conv2d_detail::gemm_out_extents(s, out_layout);
  if (split > 1)
    params.push_back(f32[split][M][s.o]); // partial sums (add_split_k_sum_kernel)
  else
    for (auto &p : conv2d_detail::out_params(epi, anchor, dt)) params.push_back(p);

  conv2d_detail::define_kernel(
      mod, name, params, has_bias, conv2d_detail::kernel_symbols(s, split > 1 ? nullptr : epi),
      [&](lang::Tensor x_flat, lang::Tensor w, const lang::Tensor *bias, lang::Tensor y,
          const std::vector<ir::Var> &extras) {
        ops::detail::EpilogueEmitter out(split > 1 ? nullptr : epi, anchor, y.var(), extras);
        auto y_idx = [&](Expr row, Expr ch) { return conv2d_detail::gemm_out_index(s, out_layout, row, ch); };
        attrs.cuda.grid_dim = {ceil_div(OG, bn), conv2d_detail::row_tiles(s, bm), s.groups * split};
        attrs.cuda.block_dim = threads;
        attrs.cuda.dynamic_smem_bytes = cfg.smem_bytes();
        attrs.cuda.min_blocks = 1;

        auto sa = dynamic_shared_tensor(
            T({})[stages][bm][bk].with_layout(matmul_f16_detail::swizzled_tile(stages, bm, bk)), 0,
            "smem_a");
        auto sb = dynamic_shared_tensor(
            T({})[stages][bn][bk].with_layout(matmul_f16_detail::swizzled_tile(stages, bn, bk)),
            stages * bm * bk * 2, "smem_b");
        auto acc = register_tensor(f32[mt][nt][4], "acc");
        auto af = register_tensor(T({})[mt][8], "a_frag");
        auto bf = register_tensor(T({})[nt][4], "b_frag");

        Var m0 = blockIdx.y * bm, n0 = blockIdx.x * bn;
        Var grp = split > 1 ? Expr(blockIdx.z / split) : Expr(blockIdx.z);
        Var k_base = split > 1 ? Expr(blockIdx.z % split * k_slice) : Expr(0);
        Var warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        auto wt = conv2d_detail::spatial_task(spatial(cfg.warps_m, cfg.warps_n), warp);
        Var wm0 = wt[0] * cfg.warp_m, wn0 = wt[1] * cfg.warp_n;

        // The A copies: thread t copies vector v = t % vecs of rows ri * a_rows + t / vecs. The
        // output pixel of each of its rows is decoded once, before the k loop: the image's
        // first element and the window's top-left corner (rows past M get a corner far above
        // the input, so the bounds check zero-fills them).
        const int vecs = bk / vec, a_rows = threads / vecs, a_reps = bm / a_rows;
        if (threads % vecs || bm % a_rows || a_reps == 0) // implied by check_conv2d_mma_config
          throw ValueError(
              str_cat("conv2d '", name, "': config ", cfg.str(), " cannot copy its A tiles"));
        auto a_base = register_tensor(i32[a_reps], "a_base");
        auto a_ih = register_tensor(i32[a_reps], "a_ih");
        auto a_iw = register_tensor(i32[a_reps], "a_iw");
        const bool check_h = s.ph > 0 || guard_m, check_w = s.pw > 0;
        for_(repeat(a_reps, 1).on(0), [&](Expr ri, Expr) {
          for_(spatial(a_rows, vecs).on(threadIdx.x), [&](Expr i, Expr) {
            Expr row = m0 + ri * a_rows + i;
            auto px = conv2d_detail::pixel_of(s, row);
            Expr ih0 = px.oh * s.sh - s.ph;
            a_base[ri] = select(row < M, px.img, 0) * (s.h * s.w * s.groups * cgp) + grp * cgp;
            a_ih[ri] = guard_m ? select(row < M, ih0, -(1 << 20)) : ih0;
            a_iw[ri] = px.ow * s.sw - s.pw;
          });
        });
        auto load_tiles = [&](Expr stage, Expr k0) {
          for_(repeat(a_reps, 1).on(0), [&](Expr ri, Expr) {
            for_(spatial(a_rows, vecs).on(threadIdx.x), [&](Expr i, Expr v) {
              Expr r = ri * a_rows + i, kidx = k0 + v * vec;
              Expr rs = kidx / cgp, c = kidx % cgp;
              Expr ih = a_ih[ri] + rs / s.kw * s.dh, iw = a_iw[ri] + rs % s.kw * s.dw;
              Expr ok = true;
              if (check_h) ok = ok && ih >= 0 && ih < s.h;
              if (check_w) ok = ok && iw >= 0 && iw < s.w;
              if (guard_k) ok = ok && kidx < K;
              Expr off = a_base[ri] + (ih * s.w + iw) * (s.groups * cgp) + c;
              if (!check_h && !check_w && !guard_k)
                return cp_async(sa[stage][r][v * vec], x_flat[off], vec * 2);
              cp_async(sa[stage][r][v * vec], x_flat[select(ok, off, 0)], vec * 2,
                       select(ok, vec * 2, 0));
            });
          });
          for_(auto_map({bn, bk / 8}, threads).on(threadIdx.x), [&](Expr r, Expr v) {
            Expr col = n0 + r, kidx = k0 + v * 8;
            if (!guard_n && !guard_k)
              return cp_async(sb[stage][r][v * 8], w[grp * OG + col][kidx], 16);
            Expr ok = true;
            if (guard_n) ok = ok && col < OG;
            if (guard_k) ok = ok && kidx < K;
            cp_async(sb[stage][r][v * 8], w[grp * OG + select(ok, col, 0)][select(ok, kidx, 0)], 16,
                     select(ok, 16, 0));
          });
        };
        auto compute = [&](Expr stage) {
          for_(range(bk / 16).unroll(), [&](Var kk) {
            for_(repeat(mt, 1).on(0), [&](Expr i, Expr) {
              ldmatrix(af[i][0], sa[stage][wm0 + i * 16 + lane % 16][kk * 16 + lane / 16 * 8], 4);
            });
            // Matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) of the
            // [n][k] tile: the B fragments of n tiles 2j and 2j + 1.
            for_(repeat(1, nt / 2).on(0), [&](Expr, Expr j) {
              ldmatrix(
                  bf[j * 2][0],
                  sb[stage][wn0 + j * 16 + lane / 16 * 8 + lane % 8][kk * 16 + lane / 8 % 2 * 8],
                  4);
            });
            for_(repeat(mt, nt).on(0),
                 [&](Expr i, Expr j) { mma_sync(acc[i][j][0], af[i][0], bf[j][0], acc[i][j][0]); });
          });
        };

        for_(grid(mt, nt, 4).unroll(), [&](Var i, Var j, Var e) { acc[i][j][e] = 0.0f; });
        for (int st = 0; st < stages - 1; ++st) {
          if (st < k_tiles) load_tiles(Expr(st), k_base + st * bk);
          cp_async_commit_group();
        }
        for_(range(k_tiles), [&](Var kt) {
          cp_async_wait_group(stages - 2);
          syncthreads();
          Var next = kt + (stages - 1);
          if_(next < k_tiles, [&] { load_tiles(next % stages, k_base + next * bk); });
          cp_async_commit_group();
          compute(kt % stages);
        });
        cp_async_wait_all();

        // Epilogue: lane (g, q) of an m16n8 tile holds rows g, g + 8 and columns 2q, 2q + 1.
        auto pair = register_tensor(u32[1], "pair");
        Var g = lane / 4, q = lane % 4;
        for_(repeat(mt, nt, 2).on(0), [&](Expr i, Expr j, Expr h) {
          Expr row = m0 + wm0 + i * 16 + h * 8 + g, col = n0 + wn0 + j * 8 + q * 2;
          Expr ch = grp * OG + col;
          auto value = [&](int e) -> Expr {
            Expr v = acc[i][j][h * 2 + e];
            if (!has_bias) return v;
            Expr bi = guard_n ? select(col + e < OG, ch + e, 0) : ch + e;
            return v + cast((*bias)[bi], f32);
          };
          Expr ok_m = guard_m ? Expr(row < M) : Expr(true);
          if (split > 1) { // f32 partial sums of this slice
            for (int e = 0; e < 2; ++e) {
              auto store = [&] { y[blockIdx.z % split][row][ch + e] = acc[i][j][h * 2 + e]; };
              if (guard_m || guard_n || OG % 2)
                if_(ok_m && col + e < OG, store);
              else
                store();
            }
            return;
          }
          if (out_layout == Conv2dLayout::NHWC && OG % 2 == 0 && out.keeps_layout()) {
            auto store = [&] {
              pair[0] = half2_pack(out.value(y_idx(row, ch), value(0)), out.value(y_idx(row, ch + 1), value(1)), dt);
              store_vector(out.at(y_idx(row, ch)), pair, 4);
            };
            if (guard_m || guard_n)
              if_(ok_m && col < OG, store);
            else
              store();
            return;
          }
          for (int e = 0; e < 2; ++e) {
            auto store = [&] { out.store(y_idx(row, ch + e), value(e)); };
            Expr ok = ok_m && col + e < OG;
            if (guard_m || guard_n || OG % 2)
              if_(ok, store);
            else
              store();
          }
        });
      });
}

/// Adds kernel `name` (f32 on the FMA units, see the top of the file): parameters
/// x: f32 [N][C][H][W] (NCHW) or [N][H][W][C] (NHWC), w: f32[O][CG * KH * KW] (the weight in the
/// layout's order, flattened), [bias: f32[O]], y: f32[N][O][OH * OW] (NCHW) or [N * OH * OW][O].
inline void add_conv2d_fma_kernel(lang::ScriptModule &mod, const std::string &name,
                                  const Conv2dShape &s, Conv2dLayout layout, bool has_bias,
                                  const Conv2dFmaConfig &cfg, const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  check_conv2d_fma_config(cfg);
  const int bm = cfg.block_m(), bn = cfg.block_n(), bk = cfg.block_k, threads = cfg.threads();
  const int rm = cfg.repeat_m, rn = cfg.repeat_n, tm = cfg.thread_m, tn = cfg.thread_n;
  const int frag_m = rm * tm, frag_n = rn * tn;
  const int load_rows = threads / bk, a_rounds = bm / load_rows, b_rounds = bn / load_rows;
  const int a_pitch = bm + 4, b_pitch = bn + 4;
  const int OG = s.og(), CG = s.cg(), K = int(s.gemm_k());
  const Expr M = s.m_expr(), N = s.n_expr();
  const int split = cfg.split_k, k_slice = ceil_div(ceil_div(K, split), bk) * bk,
            k_tiles = k_slice / bk;
  const bool nchw = layout == Conv2dLayout::NCHW;
  const bool guard_m = s.symbolic_batch() || s.gemm_m() % bm != 0, guard_n = OG % bn != 0,
             guard_k = k_slice * split != K;
  if (split > 1 && has_bias)
    throw ValueError(str_cat("conv2d '", name, "': split-k adds the bias in the sum kernel"));
  std::vector<ParamSpec> params{nchw ? f32[N][s.c][s.h][s.w] : f32[N][s.h][s.w][s.c], f32[s.o][K]};
  if (has_bias) params.push_back(f32[s.o]);
  const SymShape anchor = conv2d_detail::gemm_out_extents(s, layout);
  if (split > 1)
    params.push_back(f32[split][M][s.o]);
  else
    for (auto &p : conv2d_detail::out_params(epi, anchor, f32)) params.push_back(p);

  conv2d_detail::define_kernel(
      mod, name, params, has_bias, conv2d_detail::kernel_symbols(s, split > 1 ? nullptr : epi),
      [&](lang::Tensor x, lang::Tensor w, const lang::Tensor *bias, lang::Tensor y,
          const std::vector<ir::Var> &extras) {
        ops::detail::EpilogueEmitter out(split > 1 ? nullptr : epi, anchor, y.var(), extras);
        attrs.cuda.grid_dim = {ceil_div(OG, bn), conv2d_detail::row_tiles(s, bm), s.groups * split};
        attrs.cuda.block_dim = threads;
        attrs.cuda.min_blocks = 2;

        auto pitched = [&](int pitch, int rows) {
          return strided(std::vector<std::int64_t>{2, bk, rows},
                         std::vector<std::int64_t>{std::int64_t(bk) * pitch, pitch, 1});
        };
        auto smem_a = shared_tensor(f32[2][bk][bm].with_layout(pitched(a_pitch, bm)), "smem_a");
        auto smem_b = shared_tensor(f32[2][bk][bn].with_layout(pitched(b_pitch, bn)), "smem_b");
        auto acc = register_tensor(f32[frag_m][frag_n], "acc");
        auto a_frag = register_tensor(f32[frag_m], "a_frag");
        auto b_frag = register_tensor(f32[frag_n], "b_frag");
        auto a_next = register_tensor(f32[a_rounds], "a_next");
        auto b_next = register_tensor(f32[b_rounds], "b_next");

        Var m0 = blockIdx.y * bm, n0 = blockIdx.x * bn;
        Var grp = split > 1 ? Expr(blockIdx.z / split) : Expr(blockIdx.z);
        Var k_base = split > 1 ? Expr(blockIdx.z % split * k_slice) : Expr(0);
        Var warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        auto wt = conv2d_detail::spatial_task(spatial(cfg.warps_m, cfg.warps_n), warp);
        auto lt = conv2d_detail::spatial_task(spatial(cfg.lanes_m, cfg.lanes_n), lane);
        Var row0 = wt[0] * (rm * cfg.lanes_m * tm) + lt[0] * tm;
        Var col0 = wt[1] * (rn * cfg.lanes_n * tn) + lt[1] * tn;
        auto row_of = [&](Expr ri, Expr ti) { return row0 + ri * (cfg.lanes_m * tm) + ti; };
        auto col_of = [&](Expr rj, Expr tj) { return col0 + rj * (cfg.lanes_n * tn) + tj; };

        // The A tile's thread mapping: NHWC reads along k (contiguous channels), NCHW along m
        // (contiguous ow). (i, kk) is the task's row and k within the round.
        auto a_map = [&](const std::function<void(Expr, Expr)> &f) {
          if (nchw)
            for_(spatial(bk, load_rows).on(threadIdx.x), [&](Expr kk, Expr i) { f(i, kk); });
          else
            for_(spatial(load_rows, bk).on(threadIdx.x), [&](Expr i, Expr kk) { f(i, kk); });
        };
        auto load_a = [&](Expr k0) {
          for_(repeat(a_rounds, 1).on(0), [&](Expr r, Expr) {
            a_map([&](Expr i, Expr kk) {
              Expr row = m0 + r * load_rows + i, kidx = k0 + kk;
              auto px = conv2d_detail::pixel_of(s, row);
              Expr c, kh, kw;
              if (nchw)
                c = kidx / (s.kh * s.kw), kh = kidx / s.kw % s.kh, kw = kidx % s.kw;
              else
                c = kidx % CG, kh = kidx / CG / s.kw, kw = kidx / CG % s.kw;
              auto tap = conv2d_detail::tap_of(s, px, kh, kw);
              Expr ok = tap.inside;
              if (guard_m) ok = ok && row < M;
              if (guard_k) ok = ok && kidx < K;
              Expr ch = grp * CG + c;
              a_next[r] = 0.0f;
              if_(ok, [&] {
                a_next[r] = nchw ? x[px.img][ch][tap.ih][tap.iw] : x[px.img][tap.ih][tap.iw][ch];
              });
            });
          });
        };
        auto load_b = [&](Expr k0) {
          for_(repeat(b_rounds, 1).on(0), [&](Expr r, Expr) {
            for_(spatial(load_rows, bk).on(threadIdx.x), [&](Expr j, Expr kk) {
              Expr col = n0 + r * load_rows + j, kidx = k0 + kk;
              Expr ok = true;
              if (guard_n) ok = ok && col < OG;
              if (guard_k) ok = ok && kidx < K;
              if (guard_n || guard_k) {
                b_next[r] = 0.0f;
                if_(ok, [&] { b_next[r] = w[grp * OG + col][kidx]; });
              } else {
                b_next[r] = w[grp * OG + col][kidx];
              }
            });
          });
        };
        auto store_tiles = [&](Expr buf) {
          for_(repeat(a_rounds, 1).on(0), [&](Expr r, Expr) {
            a_map([&](Expr i, Expr kk) { smem_a[buf][kk][r * load_rows + i] = a_next[r]; });
          });
          for_(repeat(b_rounds, 1).on(0), [&](Expr r, Expr) {
            for_(spatial(load_rows, bk).on(threadIdx.x),
                 [&](Expr j, Expr kk) { smem_b[buf][kk][r * load_rows + j] = b_next[r]; });
          });
        };

        for_(grid(frag_m, frag_n).unroll(), [&](Var i, Var j) { acc[i][j] = 0.0f; });
        load_a(k_base);
        load_b(k_base);
        store_tiles(Expr(0));
        syncthreads();
        for_(range(k_tiles), [&](Var kt) {
          Var buf = kt % 2;
          if (k_tiles > 1) {
            if_(kt + 1 < k_tiles, [&] {
              load_a(k_base + (kt + 1) * bk);
              load_b(k_base + (kt + 1) * bk);
            });
          }
          for_(range(bk).unroll(), [&](Var kk) {
            for_(repeat(rm, tm).on(0),
                 [&](Expr ri, Expr ti) { a_frag[ri * tm + ti] = smem_a[buf][kk][row_of(ri, ti)]; });
            for_(repeat(rn, tn).on(0),
                 [&](Expr rj, Expr tj) { b_frag[rj * tn + tj] = smem_b[buf][kk][col_of(rj, tj)]; });
            for_(grid(frag_m, frag_n).unroll(),
                 [&](Var i, Var j) { acc[i][j] += a_frag[i] * b_frag[j]; });
          });
          if (k_tiles > 1) {
            if_(kt + 1 < k_tiles, [&] { store_tiles(1 - buf); });
          }
          syncthreads();
        });

        for_(repeat(rm, tm).on(0), [&](Expr ri, Expr ti) {
          for_(repeat(rn, tn).on(0), [&](Expr rj, Expr tj) {
            Expr row = m0 + row_of(ri, ti), col = n0 + col_of(rj, tj);
            Expr ok = true;
            if (guard_m) ok = ok && row < M;
            if (guard_n) ok = ok && col < OG;
            auto store = [&] {
              Expr v = acc[ri * tm + ti][rj * tn + tj];
              Expr ch = grp * OG + col;
              if (has_bias) v = v + (*bias)[ch];
              if (split > 1) y[blockIdx.z % split][row][ch] = v;
              else out.store(conv2d_detail::gemm_out_index(s, layout, row, ch), v);
            };
            if (guard_m || guard_n)
              if_(ok, store);
            else
              store();
          });
        });
      });
}

/// Adds kernel `name`: y = sum of the split-k partials ws: f32[split][N * OH * OW][O] (+ bias),
/// in dt and `out_layout` (y: dt[N * OH * OW][O] or dt[N][O][OH * OW]); one thread per output.
inline void add_split_k_sum_kernel(lang::ScriptModule &mod, const std::string &name,
                                   const Conv2dShape &s, DataType dt, Conv2dLayout out_layout,
                                   bool has_bias, int split, const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  const int O = s.o, threads = 256;
  const bool sym = s.symbolic_batch();
  const Expr M = s.m_expr(), total = sym ? Expr(M * O) : Expr(int(s.gemm_m() * O));
  const SymShape anchor = conv2d_detail::gemm_out_extents(s, out_layout);
  std::vector<ParamSpec> params{f32[split][M][O]};
  if (has_bias) params.push_back(TensorSpec(dt, {})[O]);
  for (auto &p : conv2d_detail::out_params(epi, anchor, dt)) params.push_back(p);
  const std::vector<std::string> symbols = conv2d_detail::kernel_symbols(s, epi);
  push_symbol_params(params, symbols);
  mod.kernel(name, params, [&](const std::vector<ParamHandle> &p) {
    lang::Tensor ws = p[0], bias = p[has_bias ? 1 : 0];
    std::size_t yi = has_bias ? 2 : 1;
    std::vector<ir::Var> extras;
    for (std::size_t i = yi + 1; i + symbols.size() < p.size(); ++i) extras.push_back(p[i].v);
    ops::detail::EpilogueEmitter out(epi, anchor, p[yi].v, extras);
    if (sym) attrs.cuda.grid_dim = max(ceil_div(total, threads), 1);
    else attrs.cuda.grid_dim = int(ceil_div(s.gemm_m() * O, std::int64_t(threads)));
    attrs.cuda.block_dim = threads;
    Var i = blockIdx.x * threads + threadIdx.x;
    if_(i < total, [&] {
      Var m = i / O, o = i % O;
      Var sum = var(f32, has_bias ? cast(bias[o], f32) : Expr(0.0f), "sum");
      for_(range(split).unroll(), [&](Var z) { sum += ws[z][m][o]; });
      out.store(conv2d_detail::gemm_out_index(s, out_layout, m, o), sum);
    });
  });
}

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
