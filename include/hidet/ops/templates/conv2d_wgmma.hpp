// The Hopper (sm_90a) conv2d kernel: implicit GEMM (see conv2d_kernels.hpp for the GEMM view) on
// wgmma with warp specialization, the structure of matmul_wgmma.hpp with one difference: the A
// tiles (rows = output pixels, k = one window tap's 64 channels) are gathered by threads.
//
//  * Serves f16/bf16 with groups == 1 and C % 64 == 0 (every ResNet layer but the RGB stem): a
//    k tile of 64 is then 64 consecutive channels of one tap (kh, kw), i.e. one 128-byte row of
//    x per output pixel, and K = KH * KW * C needs no padding. x is NHWC (the runner repacks NCHW
//    input first, as for the mma.sync kernel), the weight [O][K] with k = (kh, kw, c).
//  * Producer warpgroup (setmaxnreg.dec): for each k tile, thread 0 loads the weight tile
//    (block_n rows of 64 k, 128-byte swizzle, K-major) with one TMA box, and all 128 threads
//    gather the block_m x 64 A tile with 16-byte cp.async (8 per thread for block_m = 128),
//    zero-filled in the padding and past the last pixel, written to the 128-byte swizzled
//    positions TMA would use (chunk c of row r at chunk c ^ (r % 8)). Each thread then arrives on
//    the stage's `full` barrier with cp.async.mbarrier.arrive.noinc, which fires when its copies
//    land; `full` expects 128 such arrivals plus thread 0's arrive.expect_tx of the TMA bytes.
//  * Consumers (setmaxnreg.inc): matmul_wgmma's k loop (wgmma_detail::consume_k_tiles) with a
//    fence.proxy.async after the wait (the A tile was written by the generic proxy) and B
//    K-major (wgmma without transpose). The epilogue adds the bias and stores y NHWC (packed
//    pairs, or through shared memory as 16-byte row segments: MatmulWgmmaConfig::smem_epilogue)
//    or NCHW; with split-k, f32 partial sums for conv2d_kernels' sum kernel.
//  * Persistent blocks with grouped rasterization, the stage ring running on across tiles.
#pragma once

#include <string>

#include "hidet/ops/templates/conv2d_kernels.hpp"
#include "hidet/ops/templates/matmul_wgmma.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// True when the Hopper kernel serves the problem (see the top of the file).
inline bool conv2d_wgmma_supports(const Conv2dShape &s, DataType dt) {
  return dt.is_half() && s.groups == 1 && s.c % 64 == 0;
}

/// Adds kernel `name`: parameters x: dt[N * H * W * C] (NHWC, flattened), the TMA map of the
/// weight dt[O][K] (boxes of block_n x 64, 128-byte swizzle), [bias: dt[O]], y: dt[N * OH * OW][O]
/// (NHWC) or dt[N][O][OH * OW] (NCHW), or under split-k (S = matmul_wgmma_splits(K, cfg) > 1)
/// an f32[S][M][O] workspace (add_split_k_sum_kernel adds the slices and the bias).
inline void add_conv2d_wgmma_kernel(lang::ScriptModule &mod, const std::string &name, const Conv2dShape &s,
                                    DataType dt, Conv2dLayout out_layout, bool has_bias,
                                    const MatmulWgmmaConfig &cfg, int num_sms, const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  check_matmul_wgmma_config(cfg);
  if (cfg.atoms != 1 || cfg.cluster_size() != 1)
    throw ValueError(str_cat("conv2d '", name, "': the Hopper kernel takes one m64 atom per consumer and no clusters; got ",
                             cfg.str()));
  if (!conv2d_wgmma_supports(s, dt))
    throw ValueError(str_cat("conv2d '", name, "': the Hopper kernel needs f16/bf16, groups == 1 and C % 64 == 0; got ",
                             s.str(), ", ", dt));
  const int bm = cfg.block_m(), bn = cfg.block_n, bk = MatmulWgmmaConfig::block_k, stages = cfg.stages;
  const int O = s.o, C = s.c, K = s.kh * s.kw * C;
  const bool sym = s.symbolic_batch();
  const Expr M = s.m_expr();
  const int k_tiles = K / bk, c_tiles = C / bk;
  const int splits = matmul_wgmma_splits(K, cfg), split_tiles = ceil_div(k_tiles, splits);
  const int tiles_m = int(ceil_div(s.gemm_m(), std::int64_t(bm))), tiles_n = ceil_div(O, bn);
  wgmma_detail::Tiles tiles{tiles_m,     tiles_n, 1,  splits, split_tiles, k_tiles, std::min(cfg.group_m, tiles_m),
                            bm,          bn,      cfg.persistent};
  if (sym) { // the tile rows over the batch's symbols (min(group, rows) happens per group)
    tiles.rows = ceil_div(M, bm);
    tiles.group = cfg.group_m;
  }
  const bool guard_m = sym || s.gemm_m() % bm != 0, guard_n = O % bn != 0;
  if (splits > 1 && has_bias)
    throw ValueError(str_cat("conv2d '", name, "': split-k adds the bias in the sum kernel"));
  auto T = [&](std::vector<ir::Expr> shape) { return TensorSpec(dt, std::move(shape)); };
  const Expr x_len = sym ? Expr(s.n_expr() * (s.h * s.w * C)) : Expr(int(std::int64_t(s.n) * s.h * s.w * C));
  std::vector<ParamSpec> params{T({})[x_len], tensor_map_param()};
  if (has_bias) params.push_back(T({})[O]);
  const SymShape anchor = conv2d_detail::gemm_out_extents(s, out_layout);
  if (splits > 1) params.push_back(f32[splits][M][O]);
  else
    for (auto &p : conv2d_detail::out_params(epi, anchor, dt)) params.push_back(p);

  conv2d_detail::define_kernel(mod, name, params, has_bias, conv2d_detail::kernel_symbols(s, splits > 1 ? nullptr : epi),
                               [&](lang::Tensor x, lang::Tensor tmap_w,
                                                                const lang::Tensor *bias, lang::Tensor y,
                                                                const std::vector<ir::Var> &extras) {
    ops::detail::EpilogueEmitter out(splits > 1 ? nullptr : epi, anchor, y.var(), extras);
    auto y_idx = [&](Expr row, Expr ch) { return conv2d_detail::gemm_out_index(s, out_layout, row, ch); };
    if (sym) attrs.cuda.grid_dim = tiles.grid_expr(num_sms);
    else attrs.cuda.grid_dim = cfg.persistent ? std::min(tiles.total(), num_sms) : tiles.total();
    attrs.cuda.block_dim = cfg.threads();
    // The staged epilogue (MatmulWgmmaConfig::smem_epilogue) where its 16-byte row segments fit
    // y: NHWC, no split-k, O a multiple of 8 and an epilogue that keeps runs of 8; else pairs
    // straight from the registers.
    const bool staged = cfg.smem_epilogue && splits == 1 && out_layout == Conv2dLayout::NHWC && O % 8 == 0 &&
                        out.vector_width() == 8;
    const int epi_bytes = staged ? cfg.epilogue_bytes() : 0;
    attrs.cuda.dynamic_smem_bytes = cfg.smem_bytes() - cfg.epilogue_bytes() + epi_bytes;
    attrs.cuda.min_blocks = 1; // a register cap at entry, so that setmaxnreg takes effect

    auto sa = dynamic_shared_tensor(T({})[stages][bm][bk], 0, "smem_a");
    auto sb = dynamic_shared_tensor(T({})[stages][bn][bk], stages * cfg.a_stage_bytes(), "smem_b");
    const int stage_bytes = cfg.a_stage_bytes() + cfg.b_stage_bytes();
    auto se = dynamic_shared_tensor(T({})[cfg.consumers * 4][16][64], stages * stage_bytes, "smem_epi");
    auto full = dynamic_shared_tensor(u64[stages], stages * stage_bytes + epi_bytes, "full");
    auto empty = dynamic_shared_tensor(u64[stages], stages * stage_bytes + epi_bytes + stages * 8, "empty");
    Var wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if_(threadIdx.x == 0, [&] {
      for (int st = 0; st < stages; ++st) {
        mbarrier_init(full[st], 128 + 1); // the producers' copies and the TMA thread's expect_tx
        mbarrier_init(empty[st], cfg.consumers);
      }
      fence_mbarrier_init();
    });
    syncthreads();

    if_(wg == 0, [&] { // the producer warpgroup
      setmaxnreg(cfg.producer_regs, false);
      // Thread tid copies 16-byte chunk tid % 8 of rows tid / 8 + 16 i.
      Var chunk = tid % 8, r0 = tid / 8;
      Var dst_chunk = (chunk ^ (r0 % 8)) * 8; // 128-byte swizzle: rows r0 + 16 i share r0 % 8
      Var it = var(i32, 0, "it");
      wgmma_detail::for_each_tile(tiles, [&](Expr m0, Expr n0, Expr, Expr, Expr kt0, Expr kts) {
        for_(range(kt0, kt0 + kts), [&](Var kt) {
          Var st = it % stages;
          mbarrier_wait(empty[st], 1 - it / stages % 2); // the stage's previous round was consumed
          if_(tid == 0, [&] {
            mbarrier_arrive_expect_tx(full[st], cfg.b_stage_bytes());
            tma_load(sb[st][0][0], tmap_w, full[st], {kt * bk, n0});
          });
          Var tap = kt / c_tiles, c0 = kt % c_tiles * bk + chunk * 8;
          Var kh = tap / s.kw, kw = tap % s.kw;
          for_(range(bm / 16).unroll(), [&](Var i) {
            Var r = r0 + i * 16;
            Expr row = m0 + r;
            auto px = conv2d_detail::pixel_of(s, row);
            auto t = conv2d_detail::tap_of(s, px, kh, kw);
            Expr ok = t.inside;
            if (guard_m) ok = ok && row < M;
            Expr off = ((px.img * s.h + t.ih) * s.w + t.iw) * C + c0;
            cp_async(sa[st][r][dst_chunk], x[select(ok, off, 0)], 16, select(ok, 16, 0));
          });
          cp_async_mbarrier_arrive(full[st]);
          it = it + 1;
        });
      });
    }).else_([&] { // the consumer warpgroups
      setmaxnreg(cfg.consumer_budget(), true);
      auto acc = register_tensor(f32[bn / 2], "acc");
      auto pair = register_tensor(u32[1], "pair");
      Var row0 = (wg - 1) * 64;
      Var w = tid / 32, g = tid % 32 / 4, q = tid % 4;
      Var it = var(i32, 0, "it");
      wgmma_detail::for_each_tile(tiles, [&](Expr m0, Expr n0, Expr, Expr split, Expr kt0, Expr kts) {
        wgmma_detail::consume_k_tiles(acc, full, empty, it, kt0, kts, stages, bn, dt, false, true, 1, 1, 0,
                                      [&](Expr st, int kk) {
                                        return std::pair{
                                            make_wgmma_desc(sa[st][row0][kk * 16], 16, 1024, Swizzle::B128),
                                            make_wgmma_desc(sb[st][0][kk * 16], 16, 1024, Swizzle::B128)};
                                      });
        // Epilogue: lane (g, q) of warp w holds rows 16 w + g (+ 8), columns 8 j + 2 q (+ 1).
        if (staged) {
          if (has_bias)
            for_(repeat(bn / 8, 2).on(0), [&](Expr j, Expr x) {
              Expr col = n0 + j * 8 + q * 2 + x;
              for (int h = 0; h < 2; ++h)
                acc[j * 4 + h * 2 + x] = acc[j * 4 + h * 2 + x] + cast((*bias)[guard_n ? select(col < O, col, 0) : col], f32);
            });
          return wgmma_detail::store_staged(out, y_idx, acc, se, (wg - 1) * 4 + w, m0 + row0 + w * 16, n0, M, O, bn, 1,
                                            guard_m, guard_n, dt, epi && !epi->is_identity());
        }
        for_(repeat(bn / 8, 2).on(0), [&](Expr j, Expr h) {
          Expr row = m0 + row0 + w * 16 + h * 8 + g, col = n0 + j * 8 + q * 2;
          Expr e = j * 4 + h * 2;
          auto value = [&](int x) -> Expr {
            if (!has_bias) return acc[e + x];
            return acc[e + x] + cast((*bias)[guard_n ? select(col + x < O, col + x, 0) : col + x], f32);
          };
          if (splits == 1 && out_layout == Conv2dLayout::NHWC) {
            return matmul_f16_detail::store_pair(out, y_idx, row, col, value(0), value(1), M, O, guard_m, guard_n, dt,
                                                 pair);
          }
          for (int x = 0; x < 2; ++x) {
            Expr ok = true;
            if (guard_m) ok = ok && row < M;
            if (guard_n || O % 2) ok = ok && col + x < O;
            if_(ok, [&] {
              if (splits > 1) { // f32 partial sums of this k slice
                y[split][row][col + x] = acc[e + x];
              } else {
                out.store(y_idx(row, col + x), value(x));
              }
            });
          }
        });
      });
    });
  });
}

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
