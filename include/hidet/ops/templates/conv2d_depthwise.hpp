// The direct conv2d kernel of the conv2d templates (conv2d.hpp), for depthwise convolutions
// (groups == C == O) and grouped ones of few channels per group (ResNeXt's first stage, 4: a GEMM
// per group would fill a tensor-core tile's columns 4 at a time): a few outputs of one row per
// thread sharing their loads, the KH x KW window unrolled, f32 accumulation; not a GEMM. NCHW and
// NHWC, a bias and an epilogue; the batch may be symbolic (Conv2dShape::batch).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "hidet/ops/templates/conv2d_kernels.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Channels per thread of the direct kernel for `requested` (Conv2dConfig::dw_vector: 0 the
/// default, 1 one channel per thread, 2, 4 or 8): the NHWC form of a depthwise convolution reads
/// and writes that many neighbouring channels as one vector when O is a multiple of it and the
/// vector is at most 16 bytes; the default is 4 (f16/bf16: 8-byte vectors; f32: 16), or 2 where O
/// is not a multiple of 4. Everything else (NCHW, grouped convolutions, other O) takes one channel
/// per thread.
inline int depthwise_vector(const Conv2dShape &s, DataType dt, bool nhwc, int requested = 0) {
  if (!nhwc || !s.depthwise() || requested == 1) return 1;
  for (int v : requested > 1 ? std::vector<int>{requested} : std::vector<int>{4, 2})
    if (s.o % v == 0 && v * int(dt.nbytes()) <= 16) return v;
  return 1;
}

/// The default output pixels per thread of the direct kernel: 4 along a row (8 for a grouped
/// convolution, whose inputs serve several input channels' taps), fewer while the threads would not
/// fill `num_sms` multiprocessors with 4 warps each (7 x 7 maps of few channels); `vector`: the
/// channels per thread (depthwise_vector). H200, f16 NHWC, ResNeXt-50's 3x3 over 4 channels per
/// group at 56 x 56 (bench_conv2d --grouped): 8 pixels and 512 threads won search space 1 at batch
/// 1 and 16 (4.9 and 33 us against 6.4 and 71 at 4 and 256). ConvNeXt's 7x7 layers at batch 16
/// (bench_conv2d --depthwise) tuned to 8 pixels and 512 threads too (26.3 against 34.3 us at 56 x
/// 56), but 8 pixels at 256 threads made no difference in ConvNeXt's compiled blocks (31.6 and
/// 31.9 us; 15.3 and 15.3 at 14 x 14): not a default.
inline int depthwise_default_pixels(const Conv2dShape &s, int num_sms = 132, int vector = 1) {
  const std::int64_t rows = std::int64_t(s.n) * s.oh(), lanes = vector > 1 ? s.o / vector : (s.o + 31) / 32 * 32;
  int p = s.depthwise() ? 4 : 8;
  while (p > 1 && rows * lang::ceil_div(std::int64_t(s.ow()), std::int64_t(p)) * lanes < std::int64_t(num_sms) * 128)
    p /= 2;
  return p;
}

/// The most weights per output channel (KH * KW * C / groups) the direct kernel takes for a
/// grouped convolution: its NHWC form stages 32 channels' weights in shared memory as f32.
inline constexpr int kDirectMaxWeights = 384;

/// True when the direct kernel serves the problem: depthwise, or grouped (or a dense convolution of
/// at most 4 input channels: an image's stem) with at most kDirectMaxWeights weights per output
/// channel.
inline bool conv2d_direct_serves(const Conv2dShape &s) {
  return s.depthwise() ||
         ((s.groups > 1 || s.c <= 4) && std::int64_t(s.kh) * s.kw * s.cg() <= kDirectMaxWeights);
}

/// Channel vectors per block of the vector form (see add_conv2d_depthwise_kernel): all of them
/// when at most 32, else the largest divisor from 8 to 32 (no idle threads), else 32.
inline int depthwise_block_vectors(int vectors) {
  if (vectors <= 32) return vectors;
  for (int d = 32; d >= 8; --d)
    if (vectors % d == 0) return d;
  return 32;
}

/// Rounds of pixel groups per block of the vector form: doubled (up to 8) while the blocks stay
/// at least 4 per multiprocessor, so that a block's staged weights serve several rounds.
inline int depthwise_vector_rounds(std::int64_t groups, int rows, int cblocks, int num_sms = 132) {
  int r = 1;
  while (r < 8 && groups * cblocks / (std::int64_t(rows) * r * 2) >= std::int64_t(num_sms) * 4) r *= 2;
  return r;
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
///  * NHWC depthwise with V = depthwise_vector(s, dt, true, vector) > 1 channels per thread: each
///    thread reads V neighbouring channels of each input pixel as one vector (8 or 16 bytes) and
///    computes its pixels for all V, so a warp's loads are whole lines and there are V times
///    fewer of them. A block is CVB channel vectors (the channels' vectors when at most 32, else
///    a divisor of them up to 32) by threads / CVB pixel groups, and takes several rounds of
///    pixel groups (depthwise_vector_rounds) so that the weights it stages in shared memory, as
///    f32 [tap][channel], serve more than one round; the stores are vectors too where the
///    epilogue keeps the layout. (The scalar form above read each input as 2 bytes per thread:
///    ConvNeXt-S's 7x7 over 96 channels at 56 x 56, batch 16, took 82 us on an H200 for 19 MB.)
inline void add_conv2d_depthwise_kernel(lang::ScriptModule &mod, const std::string &name,
                                        const Conv2dShape &s, DataType dt, Conv2dLayout layout,
                                        bool has_bias, int threads = 256, int pixels = 0,
                                        const Epilogue *epi = nullptr, int vector = 0, int num_sms = 132) {
  using namespace hidet::lang;
  const bool nchw = layout == Conv2dLayout::NCHW;
  const int C = s.c, O = s.o, OH = s.oh(), OW = s.ow(), taps = s.kh * s.kw, cg = s.cg(), og = s.og();
  const int per = taps * cg; // weights per output channel
  const int V = depthwise_vector(s, dt, !nchw, vector);
  const int P = std::min(pixels > 0 ? pixels : depthwise_default_pixels(s, num_sms, V), OW);
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
        if (V > 1) {
          const int CV = O / V, CVB = depthwise_block_vectors(CV), CB = CVB * V;
          const int cblocks = ceil_div(CV, CVB), R = std::max(1, threads / CVB);
          const int rounds = depthwise_vector_rounds(tiles_c, R, cblocks, num_sms);
          const int vbytes = V * int(dt.nbytes());
          attrs.cuda.block_dim = CVB * R;
          if (sym) attrs.cuda.grid_dim = max(ceil_div(tiles, R * rounds), 1) * cblocks;
          else attrs.cuda.grid_dim = int(cblocks * ceil_div(tiles_c, std::int64_t(R) * rounds));
          Var cb = blockIdx.x % cblocks, tb = blockIdx.x / cblocks;
          Var cv = threadIdx.x % CVB, r = threadIdx.x / CVB, c = (cb * CVB + cv) * V;
          // The block's CB channels' weights as f32 [tap][channel] when they fit 48 KB (a window of
          // up to 96 taps at 128 channels): written along the channels (no bank conflicts), read
          // as one vector of V per tap.
          const bool stage = std::int64_t(taps) * CB * 4 <= 48 * 1024;
          std::optional<lang::Tensor> ws;
          if (stage) {
            ws = shared_tensor(f32[taps][CB], "w_tile");
            const int block = CVB * R, count = taps * CB;
            for_(range(ceil_div(count, block)), [&](Var q) {
              Var e = q * block + threadIdx.x;
              if_(e < count, [&] {
                Var ch = cb * CB + e % CB;
                (*ws)[e / CB][e % CB] = select(ch < O, cast(w[min(ch, O - 1)][e / CB], f32), Expr(0.0f));
              });
            });
            syncthreads();
          }
          auto xh = register_tensor(TensorSpec(dt, {ir::int32(span), ir::int32(V)}), "x_vec");
          auto wr = register_tensor(TensorSpec(f32, {ir::int32(V)}), "w_vec");
          auto ov = register_tensor(TensorSpec(dt, {ir::int32(V)}), "y_vec");
          const bool vec_store = out.vector_width() >= V;
          auto group = [&](Expr t) {
            Var img = t / (OH * groups_w), oh = t / groups_w % OH, ow0 = t % groups_w * P;
            std::vector<std::vector<Var>> acc(P);
            for (int v = 0; v < V; ++v) {
              Var b0 = var(f32, has_bias ? cast((*bias)[c + v], f32) : Expr(0.0f), "b0");
              for (int p = 0; p < P; ++p) acc[p].push_back(var(f32, b0, "acc"));
            }
            std::vector<Expr> iws, col_in;
            for (int j = 0; j < span; ++j) {
              Expr iw = ow0 * s.sw - s.pw + j, inside = true;
              if (col_guard) inside = iw >= 0 && iw < s.w, iw = min(max(iw, 0), s.w - 1);
              iws.push_back(var(i32, iw, "iw")), col_in.push_back(inside);
            }
            for (int a = 0; a < s.kh; ++a) {
              Expr ih = oh * s.sh - s.ph + a * s.dh, row_in = true;
              if (s.ph > 0) row_in = ih >= 0 && ih < s.h, ih = min(max(ih, 0), s.h - 1);
              Var ihv = var(i32, ih, "ih");
              for (int j = 0; j < span; ++j) load_vector(xh[j][0], x[img][ihv][iws[j]][c], vbytes);
              std::vector<std::vector<Var>> xf(span);
              for (int j = 0; j < span; ++j)
                for (int v = 0; v < V; ++v) {
                  Expr xv = cast(xh[j][v], f32);
                  if (s.ph > 0 || col_guard) xv = select(row_in && col_in[j], xv, Expr(0.0f));
                  xf[j].push_back(var(f32, xv, "xf"));
                }
              for (int b = 0; b < s.kw; ++b) {
                const int k = a * s.kw + b;
                if (stage) {
                  for (int v0 = 0; v0 < V; v0 += 4) load_vector(wr[v0], (*ws)[k][cv * V + v0], std::min(V - v0, 4) * 4);
                } else {
                  for (int v = 0; v < V; ++v) wr[v] = cast(w[c + v][k], f32);
                }
                for (int p = 0; p < P; ++p)
                  for (int v = 0; v < V; ++v) acc[p][v] += xf[p * s.sw + b * s.dw][v] * wr[v];
              }
            }
            for (int p = 0; p < P; ++p) {
              auto store = [&] {
                Expr ow = ow0 + p;
                if (vec_store) {
                  for (int v = 0; v < V; ++v) ov[v] = out.value(Idx{img, oh, ow, c + v}, acc[p][v]);
                  store_vector(out.at(Idx{img, oh, ow, c}), ov, vbytes);
                } else {
                  for (int v = 0; v < V; ++v) out.store(Idx{img, oh, ow, c + v}, acc[p][v]);
                }
              };
              if (OW % P != 0 && p >= OW % P) if_(ow0 + p < OW, store); // past the row in the last group
              else store();
            }
          };
          for_(range(rounds), [&](Var i) {
            Var t = (tb * rounds + i) * R + r;
            if_(t < tiles && (CV % CVB == 0 ? Expr(true) : Expr(c < O)), [&] { group(t); });
          });
          return;
        }
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
