// The depthwise conv2d kernel (groups == C == O) of the conv2d templates (conv2d.hpp): a few
// outputs of one row per thread sharing their loads, the KH x KW window unrolled, f32
// accumulation; memory-bound, not a GEMM. NCHW and NHWC, a bias and an epilogue; the batch may be
// symbolic (Conv2dShape::batch).
#pragma once

#include <functional>
#include <string>

#include "hidet/ops/templates/conv2d_kernels.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// The default output pixels per thread of the depthwise kernel: 4 along a row, fewer while the
/// threads would not fill `num_sms` multiprocessors with 4 warps each (7 x 7 maps of few channels).
inline int depthwise_default_pixels(const Conv2dShape &s, int num_sms = 132) {
  const std::int64_t rows = std::int64_t(s.n) * s.oh(), lanes = (s.c + 31) / 32 * 32;
  int p = 4;
  while (p > 1 && rows * lang::ceil_div(std::int64_t(s.ow()), std::int64_t(p)) * lanes < std::int64_t(num_sms) * 128)
    p /= 2;
  return p;
}

/// Adds kernel `name` (depthwise: groups == C == O): parameters x: dt, layout's order, w:
/// dt[C][KH * KW], [bias: dt[C]], y: dt, layout's order ([N][C][OH][OW] or [N][OH][OW][C]).
/// Each thread computes `pixels` consecutive outputs of one row and channel: per window row it
/// loads the (pixels - 1) * sw + (KW - 1) * dw + 1 inputs they share once (a 7 x 7 window at 4
/// pixels: 70 loads for 196 taps), from clamped positions with a select for the padding (the
/// loads issue together), and accumulates in f32.
///  * NHWC: a block is 32 channels (one warp: coalesced loads along C) by `threads` / 32 pixel
///    groups; its 32 channels' weights, a contiguous piece of w, are staged in shared memory as
///    [tap][channel] (conflict-free reads).
///  * NCHW: consecutive threads take consecutive pixel groups of one (image, channel) plane; the
///    weights are read from global memory (one channel per warp, mostly: broadcasts).
inline void add_conv2d_depthwise_kernel(lang::ScriptModule &mod, const std::string &name,
                                        const Conv2dShape &s, DataType dt, Conv2dLayout layout,
                                        bool has_bias, int threads = 256, int pixels = 0,
                                        const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  const bool nchw = layout == Conv2dLayout::NCHW;
  const int C = s.c, OH = s.oh(), OW = s.ow(), taps = s.kh * s.kw;
  const int P = pixels > 0 ? std::min(pixels, OW) : std::min(depthwise_default_pixels(s), OW);
  const int groups_w = ceil_div(OW, P);                  // pixel groups per output row
  const int span = (P - 1) * s.sw + (s.kw - 1) * s.dw + 1; // inputs of one row of a group
  const bool sym = s.symbolic_batch();
  const std::int64_t tiles_c = std::int64_t(s.n) * OH * groups_w; // (a symbolic batch: at its hint)
  const Expr N = s.n_expr(), tiles = sym ? Expr(N * (OH * groups_w)) : Expr(int(tiles_c));
  const int c_blocks = ceil_div(C, 32), rows = threads / 32;
  const bool col_guard = s.pw > 0 || OW % P != 0;
  auto T = [&](std::vector<ir::Expr> shape) { return TensorSpec(dt, std::move(shape)); };
  std::vector<ParamSpec> params{nchw ? T({})[N][C][s.h][s.w] : T({})[N][s.h][s.w][C], T({})[C][taps]};
  if (has_bias) params.push_back(T({})[C]);
  const Dim nd = s.batch_dim();
  const SymShape anchor = nchw ? SymShape{nd, C, OH, OW} : SymShape{nd, OH, OW, C};
  for (auto &p : conv2d_detail::out_params(epi, anchor, dt)) params.push_back(p);
  conv2d_detail::define_kernel(
      mod, name, params, has_bias, conv2d_detail::kernel_symbols(s, epi),
      [&](lang::Tensor x, lang::Tensor w, const lang::Tensor *bias, lang::Tensor y,
          const std::vector<ir::Var> &extras) {
        ops::detail::EpilogueEmitter out(epi, anchor, y.var(), extras);
        attrs.cuda.block_dim = threads;
        // The outputs of pixel group `t` (image, row, first column) and channel `c`, with the
        // weight of tap `k` from `weight(k)`.
        auto compute = [&](Expr t, Expr c, const std::function<Expr(int)> &weight) {
          Var img = t / (OH * groups_w), oh = t / groups_w % OH, ow0 = t % groups_w * P;
          std::vector<Var> acc;
          for (int p = 0; p < P; ++p)
            acc.push_back(var(f32, has_bias ? cast((*bias)[c], f32) : Expr(0.0f), "acc"));
          for (int a = 0; a < s.kh; ++a) {
            Expr ih = oh * s.sh - s.ph + a * s.dh;
            Expr row_in = true;
            if (s.ph > 0) row_in = ih >= 0 && ih < s.h, ih = min(max(ih, 0), s.h - 1);
            std::vector<Var> xv;
            for (int j = 0; j < span; ++j) {
              Expr iw = ow0 * s.sw - s.pw + j;
              Expr inside = row_in;
              // Columns outside the input occur with padding, and for the last group's pixels
              // past the row.
              if (col_guard) inside = inside && iw >= 0 && iw < s.w, iw = min(max(iw, 0), s.w - 1);
              Expr v = cast(nchw ? x[img][c][ih][iw] : x[img][ih][iw][c], f32);
              if (s.ph > 0 || col_guard) v = select(inside, v, Expr(0.0f));
              xv.push_back(var(f32, v, "xv"));
            }
            for (int b = 0; b < s.kw; ++b) {
              Var wv = var(f32, weight(a * s.kw + b), "wv");
              for (int p = 0; p < P; ++p) acc[p] += xv[p * s.sw + b * s.dw] * wv;
            }
          }
          for (int p = 0; p < P; ++p) {
            auto store = [&] {
              Expr ow = ow0 + p;
              out.store(nchw ? Idx{img, c, oh, ow} : Idx{img, oh, ow, c}, acc[p]);
            };
            if (OW % P != 0 && p >= OW % P) { // past the row in the last group
              if_(ow0 + p < OW, store);
            } else {
              store();
            }
          }
        };
        if (nchw) {
          const Expr total = sym ? Expr(tiles * C) : Expr(int(std::int64_t(C) * tiles_c));
          if (sym) attrs.cuda.grid_dim = max(ceil_div(total, threads), 1);
          else attrs.cuda.grid_dim = int(ceil_div(std::int64_t(C) * tiles_c, std::int64_t(threads)));
          Var i = blockIdx.x * threads + threadIdx.x; // ((img C + c) OH + oh) groups_w + g
          if_(i < total, [&] {
            Var c = i / (OH * groups_w) % C;
            Expr t = i / (C * OH * groups_w) * (OH * groups_w) + i % (OH * groups_w);
            compute(t, c, [&](int k) { return cast(w[c][k], f32); });
          });
          return;
        }
        if (sym) attrs.cuda.grid_dim = max(ceil_div(tiles, rows), 1) * c_blocks;
        else attrs.cuda.grid_dim = int(c_blocks * ceil_div(tiles_c, std::int64_t(rows)));
        auto ws = shared_tensor(f32[taps][32], "w_tile"); // this block's 32 channels
        Var cb = blockIdx.x % c_blocks, lane = threadIdx.x % 32;
        Var t = blockIdx.x / c_blocks * rows + threadIdx.x / 32, c = cb * 32 + lane;
        // The block's weights are w's elements [cb 32 taps, (cb + 1) 32 taps): coalesced reads.
        for_(range(ceil_div(32 * taps, threads)).unroll(), [&](Var r) {
          Var e = r * threads + threadIdx.x;
          Var ch = cb * 32 + e / taps;
          if_(e < 32 * taps, [&] {
            ws[e % taps][e / taps] = 0.0f;
            if_(ch < C, [&] { ws[e % taps][e / taps] = cast(w[ch][e % taps], f32); });
          });
        });
        syncthreads();
        if_(t < tiles && c < C, [&] { compute(t, c, [&](int k) { return ws[k][lane]; }); });
      });
}

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
