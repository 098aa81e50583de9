// The direct conv2d kernel of the conv2d templates (conv2d.hpp), for depthwise convolutions
// (groups == C == O) and grouped ones of few channels per group (ResNeXt's first stage, 4: a GEMM
// per group would fill a tensor-core tile's columns 4 at a time): a few outputs of one row per
// thread sharing their loads, the KH x KW window unrolled, f32 accumulation; not a GEMM. NCHW and
// NHWC, a bias and an epilogue; the batch may be symbolic (Conv2dShape::batch).
#pragma once

#include <functional>
#include <string>

#include "hidet/ops/templates/conv2d_kernels.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// The default output pixels per thread of the direct kernel: 4 along a row (8 for a grouped
/// convolution, whose inputs serve several input channels' taps), fewer while the threads would not
/// fill `num_sms` multiprocessors with 4 warps each (7 x 7 maps of few channels). H200, f16 NHWC,
/// ResNeXt-50's 3x3 over 4 channels per group at 56 x 56 (bench_conv2d --grouped): 8 pixels and 512
/// threads won search space 1 at batch 1 and 16 (4.9 and 33 us against 6.4 and 71 at 4 and 256).
inline int depthwise_default_pixels(const Conv2dShape &s, int num_sms = 132) {
  const std::int64_t rows = std::int64_t(s.n) * s.oh(), lanes = (s.o + 31) / 32 * 32;
  int p = s.depthwise() ? 4 : 8;
  while (p > 1 && rows * lang::ceil_div(std::int64_t(s.ow()), std::int64_t(p)) * lanes < std::int64_t(num_sms) * 128)
    p /= 2;
  return p;
}

/// The most weights per output channel (KH * KW * C / groups) the direct kernel takes for a
/// grouped convolution: its NHWC form stages 32 channels' weights in shared memory as f32.
inline constexpr int kDirectMaxWeights = 384;

/// True when the direct kernel serves the problem: depthwise, or grouped with at most
/// kDirectMaxWeights weights per output channel.
inline bool conv2d_direct_serves(const Conv2dShape &s) {
  return s.depthwise() || (s.groups > 1 && std::int64_t(s.kh) * s.kw * s.cg() <= kDirectMaxWeights);
}

/// Adds kernel `name` (conv2d_direct_serves(s)): parameters x: dt, layout's order, w:
/// dt[O][KH * KW * C / groups] (the weight's own order: [O][C/g][KH][KW] for NCHW,
/// [O][KH][KW][C/g] for NHWC), [bias: dt[O]], y: dt, layout's order ([N][O][OH][OW] or
/// [N][OH][OW][O]). Each thread computes `pixels` consecutive outputs of one row and output
/// channel: per window row and input channel of its group it loads the (pixels - 1) * sw + (KW -
/// 1) * dw + 1 inputs they share once (a 7 x 7 window at 4 pixels: 70 loads for 196 taps), from
/// clamped positions with a select for the padding (the loads issue together), and accumulates
/// in f32.
///  * NHWC: a block is 32 output channels (one warp: coalesced loads along C where a group has
///    one channel, a broadcast per group otherwise) by `threads` / 32 pixel groups; its 32
///    channels' weights, a contiguous piece of w, are staged in shared memory as [tap][channel]
///    (conflict-free reads), up to kDirectMaxWeights per channel (48 KB of f32); past that (a
///    depthwise window larger than 19 x 19, RepLKNet's 31 x 31) each thread reads its weights
///    from global memory.
///  * NCHW: consecutive threads take consecutive pixel groups of one (image, channel) plane; the
///    weights are read from global memory (one channel per warp, mostly: broadcasts).
inline void add_conv2d_depthwise_kernel(lang::ScriptModule &mod, const std::string &name,
                                        const Conv2dShape &s, DataType dt, Conv2dLayout layout,
                                        bool has_bias, int threads = 256, int pixels = 0,
                                        const Epilogue *epi = nullptr) {
  using namespace hidet::lang;
  const bool nchw = layout == Conv2dLayout::NCHW;
  const int C = s.c, O = s.o, OH = s.oh(), OW = s.ow(), taps = s.kh * s.kw, cg = s.cg(), og = s.og();
  const int per = taps * cg; // weights per output channel
  const int P = pixels > 0 ? std::min(pixels, OW) : std::min(depthwise_default_pixels(s), OW);
  const int groups_w = ceil_div(OW, P);                  // pixel groups per output row
  const int span = (P - 1) * s.sw + (s.kw - 1) * s.dw + 1; // inputs of one row of a group
  const bool sym = s.symbolic_batch();
  const std::int64_t tiles_c = std::int64_t(s.n) * OH * groups_w; // (a symbolic batch: at its hint)
  const Expr N = s.n_expr(), tiles = sym ? Expr(N * (OH * groups_w)) : Expr(int(tiles_c));
  const int c_blocks = ceil_div(O, 32), rows = threads / 32;
  const bool col_guard = s.pw > 0 || OW % P != 0;
  auto T = [&](std::vector<ir::Expr> shape) { return TensorSpec(dt, std::move(shape)); };
  std::vector<ParamSpec> params{nchw ? T({})[N][C][s.h][s.w] : T({})[N][s.h][s.w][C], T({})[O][per]};
  if (has_bias) params.push_back(T({})[O]);
  const Dim nd = s.batch_dim();
  const SymShape anchor = nchw ? SymShape{nd, O, OH, OW} : SymShape{nd, OH, OW, O};
  for (auto &p : conv2d_detail::out_params(epi, anchor, dt)) params.push_back(p);
  conv2d_detail::define_kernel(
      mod, name, params, has_bias, conv2d_detail::kernel_symbols(s, epi),
      [&](lang::Tensor x, lang::Tensor w, const lang::Tensor *bias, lang::Tensor y,
          const std::vector<ir::Var> &extras) {
        ops::detail::EpilogueEmitter out(epi, anchor, y.var(), extras);
        attrs.cuda.block_dim = threads;
        // The outputs of pixel group `t` (image, row, first column) and output channel `c`, with
        // the weight of tap `k` and input channel `i` of the group from `weight(k, i)`.
        auto compute = [&](Expr t, Expr c, const std::function<Expr(int, Expr)> &weight) {
          Var img = t / (OH * groups_w), oh = t / groups_w % OH, ow0 = t % groups_w * P;
          std::vector<Var> acc;
          for (int p = 0; p < P; ++p)
            acc.push_back(var(f32, has_bias ? cast((*bias)[c], f32) : Expr(0.0f), "acc"));
          // The group's first input channel (c itself when depthwise).
          const Expr c0 = cg == 1 && og == 1 ? c : Expr(var(i32, c / og * cg, "c0"));
          for (int a = 0; a < s.kh; ++a) {
            Expr ih = oh * s.sh - s.ph + a * s.dh;
            Expr row_in = true;
            if (s.ph > 0) row_in = ih >= 0 && ih < s.h, ih = min(max(ih, 0), s.h - 1);
            std::vector<Expr> iws, insides;
            for (int j = 0; j < span; ++j) {
              Expr iw = ow0 * s.sw - s.pw + j;
              Expr inside = row_in;
              // Columns outside the input occur with padding, and for the last group's pixels
              // past the row.
              if (col_guard) inside = inside && iw >= 0 && iw < s.w, iw = min(max(iw, 0), s.w - 1);
              iws.push_back(iw), insides.push_back(inside);
            }
            // One input channel of the group: the row's span of inputs, then its KW taps.
            auto channel = [&](Expr i) {
              Expr ch = cg == 1 ? c0 : Expr(c0 + i);
              std::vector<Var> xv;
              for (int j = 0; j < span; ++j) {
                Expr v = cast(nchw ? x[img][ch][ih][iws[j]] : x[img][ih][iws[j]][ch], f32);
                if (s.ph > 0 || col_guard) v = select(insides[j], v, Expr(0.0f));
                xv.push_back(var(f32, v, "xv"));
              }
              for (int b = 0; b < s.kw; ++b) {
                Var wv = var(f32, weight(a * s.kw + b, i), "wv");
                for (int p = 0; p < P; ++p) acc[p] += xv[p * s.sw + b * s.dw] * wv;
              }
            };
            if (cg == 1) channel(Expr(0));
            else for_(range(cg).unroll(cg <= 8 ? -1 : 4), [&](Var i) { channel(i); });
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
          const Expr total = sym ? Expr(tiles * O) : Expr(int(std::int64_t(O) * tiles_c));
          if (sym) attrs.cuda.grid_dim = max(ceil_div(total, threads), 1);
          else attrs.cuda.grid_dim = int(ceil_div(std::int64_t(O) * tiles_c, std::int64_t(threads)));
          Var i = blockIdx.x * threads + threadIdx.x; // ((img O + c) OH + oh) groups_w + g
          if_(i < total, [&] {
            Var c = i / (OH * groups_w) % O;
            Expr t = i / (O * OH * groups_w) * (OH * groups_w) + i % (OH * groups_w);
            // [O][C/g][KH][KW]: input channel i's taps together
            compute(t, c, [&](int k, Expr ci) { return cast(w[c][ci * taps + k], f32); });
          });
          return;
        }
        if (sym) attrs.cuda.grid_dim = max(ceil_div(tiles, rows), 1) * c_blocks;
        else attrs.cuda.grid_dim = int(c_blocks * ceil_div(tiles_c, std::int64_t(rows)));
        Var cb = blockIdx.x % c_blocks, lane = threadIdx.x % 32;
        Var t = blockIdx.x / c_blocks * rows + threadIdx.x / 32, c = cb * 32 + lane;
        if (per > kDirectMaxWeights) { // a depthwise window past 19 x 19: too many weights to stage
          if_(t < tiles && c < O, [&] { compute(t, c, [&](int k, Expr ci) { return cast(w[c][k * cg + ci], f32); }); });
          return;
        }
        auto ws = shared_tensor(f32[per][32], "w_tile"); // this block's 32 channels
        // The block's weights are w's elements [cb 32 per, (cb + 1) 32 per): coalesced reads.
        for_(range(ceil_div(32 * per, threads)).unroll(), [&](Var r) {
          Var e = r * threads + threadIdx.x;
          Var ch = cb * 32 + e / per;
          if_(e < 32 * per, [&] {
            ws[e % per][e / per] = 0.0f;
            if_(ch < O, [&] { ws[e % per][e / per] = cast(w[ch][e % per], f32); });
          });
        });
        syncthreads();
        // [O][KH][KW][C/g]: tap k's input channels together
        if_(t < tiles && c < O, [&] { compute(t, c, [&](int k, Expr ci) { return ws[k * cg + ci][lane]; }); });
      });
}

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
