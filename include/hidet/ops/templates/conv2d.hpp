// conv2d templates: implicit GEMM on tensor cores (f16/bf16) and on the FMA units (f32), and a
// direct kernel (depthwise, and grouped with few channels per group); NCHW and NHWC. The kernels
// are in conv2d_kernels.hpp (see its top for the GEMM view), conv2d_wgmma.hpp (Hopper),
// conv2d_depthwise.hpp (the direct kernel) and conv2d_pack.hpp (the repacks). This header
// chooses among them:
//  * Conv2dConfig: which kernel and its tiling; conv2d_heuristic_config() is the default per
//    shape, conv2d_candidates(shape, dtype, layout, space, sms) the search space of tuning
//    (space 0: the default only; 1: up to about 30; 2: more).
//  * Conv2d: a built runner for one problem; f(x, w, bias, y) launches its kernels. The
//    tensor-core path first repacks what its 16-byte copies cannot read directly: NCHW x into
//    NHWC with channels padded per group to a multiple of 8 or 4 (one transpose kernel), and the
//    weight into [O][KH][KW][cgp] (rows padded to 8); NHWC inputs with C / groups % 4 == 0 are
//    read in place. The
//    FMA and direct kernels read both layouts in place. y is written in the caller's layout
//    by the epilogue (bias fused). With split-k (few output tiles, long k: small batches and the
//    last stages) the slices' f32 partial sums go to a workspace and a second kernel adds them,
//    the bias, and stores y.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hidet/ops/templates/conv2d_depthwise.hpp"
#include "hidet/ops/templates/conv2d_kernels.hpp"
#include "hidet/ops/templates/conv2d_pack.hpp"
#include "hidet/ops/templates/conv2d_wgmma.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/tensor.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// A kernel choice and its tiling.
struct Conv2dConfig {
  enum class Kind { Mma, Fma, Depthwise, Wgmma };
  Kind kind = Kind::Mma;
  Conv2dMmaConfig mma;  ///< for Kind::Mma
  MatmulWgmmaConfig wgmma; ///< for Kind::Wgmma (Hopper: conv2d_wgmma.hpp)
  Conv2dFmaConfig fma;  ///< for Kind::Fma
  int dw_threads = 256; ///< for Kind::Depthwise (the direct kernel): threads per block
  int dw_pixels = 0;    ///< for Kind::Depthwise: outputs of a row per thread (0: depthwise_default_pixels)
  /// For Kind::Depthwise: channels per thread where the NHWC depthwise kernel reads them as one
  /// vector (depthwise_vector: 0 the default, 1 one channel, 2, 4 or 8 where O and the dtype allow)
  int dw_vector = 0;

  /// "mma 128x128x32 (warps 2x2 of 64x64, 3 stages)", "fma ...", "direct 256 threads, 4 pixels"
  /// ("..., 8 channels" with dw_vector)
  std::string str() const {
    if (kind == Kind::Mma) return mma.str();
    if (kind == Kind::Fma) return fma.str();
    if (kind == Kind::Wgmma) return "wgmma " + wgmma.str();
    return str_cat("direct ", dw_threads, " threads", dw_pixels ? str_cat(", ", dw_pixels, " pixels") : "",
                   dw_vector ? str_cat(", ", dw_vector, dw_vector == 1 ? " channel" : " channels") : "");
  }
};

/// Throws ValueError (naming the problem) when no template serves it: dtype not f32/f16/bf16,
/// sizes past 32-bit indexing, or more than 65535 groups.
inline void check_conv2d_problem(const Conv2dShape &s, DataType dt) {
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("conv2d template (", s.str(), ", ", dt, "): ", why));
  };
  if (!(dt == hidet::f32 || dt.is_half())) bad("takes f32, f16 or bf16");
  if (s.groups <= 0 || s.c % s.groups || s.o % s.groups) bad("C and O must be divisible by groups");
  if (s.oh() <= 0 || s.ow() <= 0) bad("empty output");
  std::int64_t lim = std::int64_t(1) << 31;
  std::int64_t xs = std::int64_t(s.n) * s.h * s.w * s.groups * s.cgp(), ys = s.gemm_m() * s.o;
  if (xs >= lim || ys >= lim || std::int64_t(s.o) * s.k_pack() >= lim)
    bad("tensors past 2^31 elements");
  if (s.groups > 65535) bad("more than 65535 groups");
}

/// Throws ValueError when `cfg` cannot serve the problem (kind, dtype, grid limits).
inline void check_conv2d_config(const Conv2dShape &s, DataType dt, const Conv2dConfig &cfg) {
  check_conv2d_problem(s, dt);
  auto bad = [&](const std::string &why) {
    throw ValueError(str_cat("conv2d config ", cfg.str(), " for ", s.str(), " (", dt, "): ", why));
  };
  if (cfg.kind == Conv2dConfig::Kind::Depthwise) {
    if (!conv2d_direct_serves(s))
      bad(str_cat("the direct kernel needs groups == C == O, or groups > 1 (or C <= 4) with at most ",
                  kDirectMaxWeights, " weights per output channel (KH * KW * C / groups)"));
    if (cfg.dw_threads <= 0 || cfg.dw_threads > 1024 || cfg.dw_threads % 32)
      bad("threads must be 32..1024, whole warps");
    if (cfg.dw_pixels < 0 || cfg.dw_pixels > 16) bad("pixels per thread must be 0 (the default) to 16");
    if (!(cfg.dw_vector == 0 || cfg.dw_vector == 1 || cfg.dw_vector == 2 || cfg.dw_vector == 4 || cfg.dw_vector == 8))
      bad("channels per thread must be 0 (the default), 1, 2, 4 or 8");
    return;
  }
  int bm = 0;
  int split = 1;
  if (cfg.kind == Conv2dConfig::Kind::Wgmma) {
    if (!conv2d_wgmma_supports(s, dt)) bad("the Hopper kernel needs f16/bf16, groups == 1 and C % 64 == 0");
    check_matmul_wgmma_config(cfg.wgmma);
    split = matmul_wgmma_splits(int(s.gemm_k()), cfg.wgmma);
    if (split > 1 && s.gemm_m() * s.o * split >= (std::int64_t(1) << 31)) bad("the split-k workspace is too large");
    return;
  }
  if (cfg.kind == Conv2dConfig::Kind::Mma) {
    if (!dt.is_half()) bad("the tensor-core kernel takes f16 or bf16");
    check_conv2d_mma_config(cfg.mma);
    bm = cfg.mma.block_m(), split = cfg.mma.split_k;
  } else {
    if (dt != hidet::f32) bad("the FMA kernel takes f32");
    check_conv2d_fma_config(cfg.fma);
    bm = cfg.fma.block_m(), split = cfg.fma.split_k;
  }
  if (lang::ceil_div(s.gemm_m(), std::int64_t(bm)) > 65535)
    bad("more than 65535 row tiles (grid.y)");
  if (std::int64_t(s.groups) * split > 65535) bad("more than 65535 groups times k slices (grid.z)");
  if (split > 1 && s.gemm_m() * s.o * split >= (std::int64_t(1) << 31))
    bad("the split-k workspace is too large");
}

/// The default configuration for a problem on a GPU with `num_sms` multiprocessors: depthwise
/// when groups == C == O; f16/bf16: 64 x 64 x 64 tiles of 4 warps (32 x 32 each), 3 stages (the
/// most frequent winner of space-1 tuning over ResNet-50's layers on an H100), split-k when k is
/// at least 1024 or the tiles fill under a quarter of the GPU (powers of 2 up to 16, while the
/// blocks stay within one per multiprocessor and every slice keeps 128 of k); f32: the FMA
/// kernel's tiling by the rules in conv2d_heuristic_config, split-k while the blocks do not fill
/// the GPU and every slice keeps 64 of k.
inline int conv2d_split_k(std::int64_t tiles, std::int64_t k, std::int64_t min_slice, int num_sms) {
  int split = 1;
  while (tiles * split * 2 <= num_sms && k / (split * 2) >= min_slice && split < 16)
    split *= 2;
  return split;
}
/// The Hopper kernel's default tiling. The largest tiles that still make at least 0.7 of a wave:
/// 128 x 256 (two consumer warpgroups, 4 stages) where the output channels are a multiple of
/// 256, else 128 x 128 (two consumers; 6 stages for k of 8 tiles or more) or 64 x 256 (one
/// consumer; first for windows larger than 1x1, whose rows cost more to gather): a tile's
/// gathered rows of x then serve more output channels, and the gather is what costs. H200, f16
/// NHWC, batch 16, the 23 dense layers of ResNeXt-50 32x4d and Wide ResNet-50-2
/// (`bench_conv2d --wide`): 1.057 ms weighted by occurrence with 64 x 128 tiles everywhere, 0.856
/// with these, 0.837 with each layer's best of search space 1 (8 of 23 picks 128 x 256),
/// cuDNN 1.331. Below that (small batches, the last stages): from space-1 tuning over ResNet-50's
/// layers on an H100, 64 x 128 tiles, one consumer warpgroup, 4 stages (6 for k of 64 tiles or
/// more); 64 x 64 when there are at most 64 output channels or the 64 x 128 tiles fill less than
/// half the GPU; split-k while the blocks stay within the multiprocessors and every slice keeps 8 k
/// tiles. The staged epilogue where the kernel can use it (NHWC output without split-k).
inline MatmulWgmmaConfig conv2d_wgmma_heuristic_config(const Conv2dShape &s, int num_sms) {
  MatmulWgmmaConfig c;
  const std::int64_t M = s.gemm_m();
  const int k_tiles = int(s.gemm_k() / MatmulWgmmaConfig::block_k);
  auto count = [&](int bm, int bn) {
    return lang::ceil_div(M, std::int64_t(bm)) * lang::ceil_div(s.o, bn);
  };
  const std::int64_t wave = std::int64_t(num_sms) * 7 / 10;
  if (s.o % 256 == 0 && count(128, 256) >= wave) {
    c.consumers = 2, c.block_n = 256, c.stages = 4;
    return c;
  }
  const bool wide_first = s.kh * s.kw > 1; // a window: 64 x 256 before 128 x 128
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == int(wide_first) && s.o >= 128 && count(128, 128) >= wave) {
      c.consumers = 2, c.block_n = 128, c.stages = k_tiles >= 8 ? 6 : 4;
      return c;
    }
    if (pass != int(wide_first) && s.o % 256 == 0 && count(64, 256) >= wave) {
      c.consumers = 1, c.block_n = 256, c.stages = 4;
      return c;
    }
  }
  c.consumers = 1, c.block_n = 128, c.stages = k_tiles >= 64 ? 6 : 4;
  auto tiles = [&] { return lang::ceil_div(M, std::int64_t(c.block_m())) * lang::ceil_div(s.o, c.block_n); };
  if (s.o <= 64 || tiles() * 2 < num_sms) c.block_n = 64;
  while (tiles() * c.split_k * 2 <= num_sms && k_tiles / (c.split_k * 2) >= 8) c.split_k *= 2;
  return c;
}
/// True when the default configuration is the Hopper kernel: a Hopper GPU (`hopper`), a problem
/// it serves with at least 256 input channels, or at least 8192 output pixels with a 1x1 window
/// or at least 64 output channels, and at least 24 output tiles of 64 x 64 (with fewer, mma.sync
/// with a deep split-k wins). Fewer channels over fewer pixels: mma.sync (each 64-channel k tile
/// re-gathers the window's pixels; at batch 1 the two are within noise). H200, f16 NHWC,
/// ResNet-50's layers at batch 16 (bench_conv2d), the Hopper kernel with its staged epilogue
/// against mma.sync: 1x1 64 -> 256 12.9 against 24.7 us, 128 -> 512 9.3 against 15.4, 3x3
/// 64 -> 64 16.5 against 18.7, 3x3 128 -> 128 12.2 against 16.1.
inline bool conv2d_prefers_wgmma(const Conv2dShape &s, DataType dt, bool hopper) {
  const bool many_pixels = s.gemm_m() >= 8192 && (s.kh * s.kw == 1 || s.o >= 64);
  return hopper && conv2d_wgmma_supports(s, dt) && (s.c >= 256 || many_pixels) &&
         lang::ceil_div(s.gemm_m(), std::int64_t(64)) * lang::ceil_div(s.o, 64) >= 24;
}
/// True when the direct kernel is the default: depthwise, or grouped with at most 4 input
/// channels per group (a GEMM per group fills a tensor-core tile's 64 columns 4 at a time). H200,
/// f16 NHWC, ResNeXt-50 32x4d's grouped 3x3 layers (bench_conv2d --grouped, search space 1): at 4
/// channels per group the direct kernel won (33 us against 199 for the default GEMM at batch 16);
/// at 8 the GEMM with 128 x 64 x 32 tiles did (36 against 58).
inline bool conv2d_prefers_direct(const Conv2dShape &s) {
  return conv2d_direct_serves(s) && (s.depthwise() || (s.groups > 1 && s.cg() <= 4));
}
inline Conv2dConfig conv2d_heuristic_config(const Conv2dShape &s, DataType dt, int num_sms, bool hopper = false) {
  Conv2dConfig c;
  if (conv2d_prefers_direct(s)) {
    c.kind = Conv2dConfig::Kind::Depthwise;
    // Depthwise: the pixels follow the layout's channels per thread (the kernel's default).
    if (!s.depthwise()) c.dw_pixels = depthwise_default_pixels(s, num_sms), c.dw_threads = 512;
    return c;
  }
  if (conv2d_prefers_wgmma(s, dt, hopper)) {
    c.kind = Conv2dConfig::Kind::Wgmma;
    c.wgmma = conv2d_wgmma_heuristic_config(s, num_sms);
    return c;
  }
  std::int64_t M = s.gemm_m();
  auto tiles = [&](int bm, int bn) {
    return lang::ceil_div(M, std::int64_t(bm)) *
           lang::ceil_div(std::int64_t(s.og()), std::int64_t(bn)) * s.groups;
  };
  if (dt.is_half()) {
    c.kind = Conv2dConfig::Kind::Mma;
    c.mma = Conv2dMmaConfig{2, 2, 32, 32, 64, 3};
    // Grouped: 128 x 64 x 32 tiles for at most 8 output channels per group, else 64 x 64 x 32 with
    // 4 stages (H200, f16 NHWC, ResNeXt-50 32x4d's grouped layers at batch 16, search space 1:
    // 36 against 58 us at 8 channels per group, 13.1 against 15.1 at 16, 7.1 against 8.4 at 32).
    if (s.groups > 1) c.mma = s.og() <= 8 ? Conv2dMmaConfig{2, 2, 64, 32, 32, 3} : Conv2dMmaConfig{2, 2, 32, 32, 32, 4};
    // Split-k for long k, and for any k when the tiles fill under a quarter of the GPU (batch 1's
    // 7x7 and 14x14 layers: 3 to 8 tiles of 64 x 64 with k of 576 to 960 otherwise run 3 to 8
    // blocks on 132 multiprocessors).
    if (s.gemm_k() >= 1024 || tiles(64, 64) * 4 <= num_sms)
      c.mma.split_k = conv2d_split_k(tiles(64, 64), s.gemm_k(), 128, num_sms);
    return c;
  }
  c.kind = Conv2dConfig::Kind::Fma;
  // From space-2 tuning over ResNet-50's layers at batch 16 on an H200 (bench_conv2d with
  // HIDET_BENCH_TUNE_F32=2; the tuned layers summed 2.48 ms against 3.17 ms for the former
  // 128 x 128 x 8 default and 2.69 ms for cuDNN): 64 x 64 x 16 tiles; 64 x 32 x 8 for a k of at
  // most 64 (1x1 convolutions of 64 channels); 128 x 64 x 8 (lanes 8 x 4) for at most 64 output
  // channels and a k of at most 256 (the stem, 1x1 256 -> 64); 32 x 64 x 16 when the 64 x 64 tiles
  // make between one and two waves (the second one mostly idle otherwise).
  const std::int64_t K = s.gemm_k(), tiles64 = tiles(64, 64);
  c.fma = Conv2dFmaConfig{2, 2, 2, 1, 4, 8, 4, 4, 16};
  if (K <= 64) c.fma = Conv2dFmaConfig{2, 2, 1, 1, 8, 4, 4, 4, 8};
  else if (s.og() <= 64 && K <= 256) c.fma = Conv2dFmaConfig{2, 2, 2, 2, 8, 4, 4, 4, 8};
  else if (tiles64 >= num_sms && tiles64 < 2 * num_sms) c.fma = Conv2dFmaConfig{2, 2, 1, 1, 4, 8, 4, 4, 16};
  c.fma.split_k = conv2d_split_k(tiles(c.fma.block_m(), c.fma.block_n()), s.gemm_k(), 64, num_sms);
  return c;
}

/// The search space (see the top of the file): the default first, then alternatives that pass
/// check_conv2d_config, without duplicates.
inline std::vector<Conv2dConfig> conv2d_candidates(const Conv2dShape &s, DataType dt, int space,
                                                   int num_sms, bool hopper = false) {
  std::vector<Conv2dConfig> out;
  auto add = [&](const Conv2dConfig &c) {
    try {
      check_conv2d_config(s, dt, c);
    } catch (const ValueError &) {
      return;
    }
    for (auto &o : out)
      if (o.str() == c.str()) return;
    out.push_back(c);
  };
  add(conv2d_heuristic_config(s, dt, num_sms, hopper));
  if (space <= 0) return out;
  Conv2dConfig c;
  if (conv2d_direct_serves(s)) { // depthwise: the direct kernel only; grouped or a stem: it and the GEMMs
    c.kind = Conv2dConfig::Kind::Depthwise;
    const bool stem = s.groups == 1 && !s.depthwise(); // a few tilings beside the GEMMs
    for (int t : stem ? std::vector<int>{256, 512} : std::vector<int>{128, 256, 512})
      for (int p : stem ? std::vector<int>{4, 8} : std::vector<int>{1, 2, 4, 8})
        if (p <= s.ow()) c.dw_threads = t, c.dw_pixels = p, add(c);
    if (s.depthwise()) {
      // NHWC: one channel per thread, and 8 (space 2: 2 and 8 at every tiling); the NCHW kernel
      // ignores the request, so those candidates repeat the default's kernel there.
      std::vector<int> vectors = space >= 2 ? std::vector<int>{1, 2, 8} : std::vector<int>{1, 8};
      for (int v : vectors)
        for (int t : space >= 2 ? std::vector<int>{128, 256, 512} : std::vector<int>{256})
          for (int p : {2, 4, 8})
            if (p <= s.ow() && (v == 1 || s.o % v == 0)) c.dw_vector = v, c.dw_threads = t, c.dw_pixels = p, add(c);
      return out;
    }
  }
  if (hopper && conv2d_wgmma_supports(s, dt)) {
    // The Hopper kernel: block_n up to the channels rounded to 64, 1 or 2 consumers, stages;
    // split-k for the default tiling.
    c.kind = Conv2dConfig::Kind::Wgmma;
    const int max_n = std::min(256, (s.o + 63) / 64 * 64);
    for (int consumers : {1, 2})
      for (int bn : {64, 128, 192, 256}) {
        if (bn > max_n || (space < 2 && bn == 192)) continue;
        for (int stages : space >= 2 ? std::vector<int>{3, 4, 5, 6} : std::vector<int>{4, 6}) {
          c.wgmma = MatmulWgmmaConfig{};
          c.wgmma.consumers = consumers, c.wgmma.block_n = bn, c.wgmma.stages = stages;
          add(c);
          if (space >= 2) c.wgmma.persistent = false, add(c);
        }
      }
    MatmulWgmmaConfig h = conv2d_wgmma_heuristic_config(s, num_sms);
    for (int split : {2, 4, 8})
      if (split != h.split_k) c.wgmma = h, c.wgmma.split_k = split, add(c);
    c.wgmma = h, c.wgmma.smem_epilogue = false, add(c); // the pairs stored from the registers
  }
  if (dt.is_half()) {
    c.kind = Conv2dConfig::Kind::Mma;
    // warps_m, warps_n, warp_m, warp_n
    std::vector<std::array<int, 4>> tiles{{2, 2, 64, 64}, {4, 1, 32, 64}, {2, 2, 32, 32},
                                          {2, 2, 64, 32}, {2, 2, 32, 64}, {4, 2, 32, 32},
                                          {4, 2, 64, 32}};
    // Outputs of at most 32 channels per group (EfficientNet's first stages: 24): tiles 32 wide and
    // 128 or 256 tall, so that each block reads a weight tile for more rows (a 64-wide tile reads
    // and multiplies zeros past the 24th column).
    if (space >= 2 || s.og() <= 32)
      for (std::array<int, 4> t : {std::array<int, 4>{4, 1, 32, 32}, {4, 1, 64, 32}})
        tiles.push_back(t);
    if (space >= 2)
      for (std::array<int, 4> t : {std::array<int, 4>{4, 2, 64, 64},
                                   {2, 4, 32, 64},
                                   {4, 2, 32, 64},
                                   {1, 2, 64, 32},
                                   {1, 1, 64, 64},
                                   {2, 1, 64, 64},
                                   {2, 1, 32, 32}})
        tiles.push_back(t);
    std::vector<std::array<int, 2>> pipes{{32, 3}, {32, 4}, {64, 3}};
    if (hopper && conv2d_wgmma_supports(s, dt)) pipes = {{64, 3}}; // room for the wgmma tilings
    if (space >= 2)
      pipes = {{16, 3}, {16, 4}, {32, 2}, {32, 3}, {32, 4}, {64, 2}, {64, 3}, {64, 4}};
    for (auto &t : tiles)
      for (auto &p : pipes)
        c.mma = Conv2dMmaConfig{t[0], t[1], t[2], t[3], p[0], p[1]}, add(c);
    // split-k for problems with few tiles (each slice at least 64 of k)
    std::vector<std::array<int, 5>> small{{2, 2, 32, 32, 64}, {4, 1, 32, 64, 32}};
    if (space >= 2) small.push_back({2, 2, 64, 64, 32});
    for (auto &t : small) {
      Conv2dMmaConfig m{t[0], t[1], t[2], t[3], t[4], 3};
      std::int64_t n_tiles = lang::ceil_div(s.gemm_m(), std::int64_t(m.block_m())) *
                             lang::ceil_div(std::int64_t(s.og()), std::int64_t(m.block_n())) *
                             s.groups;
      for (int split = 2; split <= 16; split *= 2)
        if (n_tiles * split <= 3 * num_sms && s.gemm_k() / split >= 64)
          m.split_k = split, c.mma = m, add(c);
    }
    return out;
  }
  c.kind = Conv2dConfig::Kind::Fma;
  // warps, repeat, lanes, thread (m x n each)
  std::vector<Conv2dFmaConfig> tiles{{4, 2, 2, 2, 4, 8, 4, 4, 8},  {2, 2, 2, 1, 4, 8, 4, 4, 8},
                                     {2, 2, 2, 2, 4, 8, 4, 4, 8},  {4, 2, 2, 1, 4, 8, 4, 4, 8},
                                     {2, 4, 2, 1, 8, 4, 4, 4, 8},  {2, 2, 1, 1, 8, 4, 4, 4, 8},
                                     {4, 2, 2, 2, 4, 8, 4, 4, 16}, {2, 2, 2, 1, 4, 8, 4, 4, 16}};
  if (space >= 2)
    for (Conv2dFmaConfig t : {Conv2dFmaConfig{4, 4, 2, 2, 4, 8, 4, 4, 8},
                              {2, 2, 2, 2, 8, 4, 4, 4, 8},
                              {2, 2, 1, 1, 4, 8, 4, 4, 16},
                              {4, 2, 1, 2, 8, 4, 4, 4, 8},
                              {2, 2, 2, 2, 4, 8, 4, 4, 16}})
      tiles.push_back(t);
  for (auto &t : tiles)
    c.fma = t, add(c);
  Conv2dFmaConfig m{2, 2, 2, 1, 4, 8, 4, 4, 8};
  std::int64_t n_tiles = lang::ceil_div(s.gemm_m(), std::int64_t(m.block_m())) *
                         lang::ceil_div(std::int64_t(s.og()), std::int64_t(m.block_n())) * s.groups;
  for (int split = 2; split <= 16; split *= 2)
    if (n_tiles * split <= 2 * num_sms && s.gemm_k() / split >= 32)
      m.split_k = split, c.fma = m, add(c);
  return out;
}

/// A script module with the kernels of a problem: "conv2d" and, on the tensor-core path,
/// "pack" when x or w needs repacking (conv2d_needs_pack_x/_w; add_pack_kernel), "sum_slices"
/// under split-k. Conv2d runs it.
inline bool conv2d_tensor_core(const Conv2dConfig &cfg) {
  return cfg.kind == Conv2dConfig::Kind::Mma || cfg.kind == Conv2dConfig::Kind::Wgmma;
}
inline bool conv2d_needs_pack_x(const Conv2dShape &s, Conv2dLayout layout,
                                const Conv2dConfig &cfg) {
  return conv2d_tensor_core(cfg) && (layout == Conv2dLayout::NCHW || s.cgp() != s.cg());
}
inline bool conv2d_needs_pack_w(const Conv2dShape &s, Conv2dLayout layout,
                                const Conv2dConfig &cfg) {
  if (!conv2d_tensor_core(cfg)) return false;
  return s.cgp() != s.cg() || s.k_pack() != s.gemm_k() ||
         (layout == Conv2dLayout::NCHW && s.kh * s.kw > 1);
}
/// The k slices of a config (1: no split-k).
inline int conv2d_split_k_of(const Conv2dShape &s, const Conv2dConfig &cfg) {
  if (cfg.kind == Conv2dConfig::Kind::Mma) return cfg.mma.split_k;
  if (cfg.kind == Conv2dConfig::Kind::Fma) return cfg.fma.split_k;
  if (cfg.kind == Conv2dConfig::Kind::Wgmma) return matmul_wgmma_splits(int(s.gemm_k()), cfg.wgmma);
  return 1;
}
inline lang::ScriptModule conv2d_module(const Conv2dShape &s, DataType dt, Conv2dLayout layout,
                                        bool has_bias, const Conv2dConfig &cfg, int num_sms = 132,
                                        const Epilogue *epi = nullptr) {
  check_conv2d_config(s, dt, cfg);
  auto mod = lang::script_module(
      str_cat("conv2d_", dt, "_", layout == Conv2dLayout::NCHW ? "nchw" : "nhwc", "_",
              s.symbolic_batch() ? std::string("batch") : std::to_string(s.n), "x",
              s.c, "x", s.h, "x", s.w, "_", s.o, "x", s.kh, "x", s.kw, epi ? "_epilogue" : ""));
  int split = conv2d_split_k_of(s, cfg);
  if (split > 1) add_split_k_sum_kernel(mod, "sum_slices", s, dt, layout, has_bias, split, epi);
  if (cfg.kind == Conv2dConfig::Kind::Depthwise) {
    add_conv2d_depthwise_kernel(mod, "conv2d", s, dt, layout, has_bias, cfg.dw_threads, cfg.dw_pixels, epi,
                                cfg.dw_vector, num_sms);
  } else if (cfg.kind == Conv2dConfig::Kind::Fma) {
    add_conv2d_fma_kernel(mod, "conv2d", s, layout, has_bias && split == 1, cfg.fma, epi);
  } else {
    if (cfg.kind == Conv2dConfig::Kind::Wgmma)
      add_conv2d_wgmma_kernel(mod, "conv2d", s, dt, layout, has_bias && split == 1, cfg.wgmma, num_sms, epi);
    else
      add_conv2d_mma_kernel(mod, "conv2d", s, dt, layout, has_bias && split == 1, cfg.mma, epi);
    bool px = conv2d_needs_pack_x(s, layout, cfg), pw = conv2d_needs_pack_w(s, layout, cfg);
    if (px || pw) add_pack_kernel(mod, "pack", s, dt, layout, px, pw);
  }
  return mod;
}

/// A built conv2d for one problem, dtype, layout and config. f(x, w, bias, y) launches on the
/// current stream: x [N, C, H, W] / [N, H, W, C], w [O, C/groups, KH, KW] / [O, KH, KW, C/groups],
/// bias [O] or nullptr, y [N, O, OH, OW] / [N, OH, OW, O] (all of dtype dt, contiguous, on cuda;
/// on the tensor-core path x and w 16-byte aligned when read in place). With a symbolic batch
/// (Conv2dShape::batch) one build serves every value of its symbols: each call passes their
/// values, and x's first extent must be the batch's value there; the repacked x and the split-k
/// workspace are kept per value (RowBuffers).
class Conv2d {
public:
  Conv2d(const Conv2dShape &s, DataType dt, Conv2dLayout layout, bool has_bias,
         const Conv2dConfig &cfg, std::shared_ptr<const Epilogue> epi = nullptr)
      : s_(s), dt_(dt), layout_(layout), bias_(has_bias), cfg_(cfg), epi_(epi),
        cm_(conv2d_module(s, dt, layout, has_bias, cfg, runtime::device_info(0).sm_count, epi.get())
                .build(cfg.kind == Conv2dConfig::Kind::Wgmma ? matmul_wgmma_build_options() : BuildOptions{})) {
    const int split = conv2d_split_k_of(s, cfg);
    main_symbols_ = conv2d_detail::kernel_symbols(s, split > 1 ? nullptr : epi.get());
    sum_symbols_ = conv2d_detail::kernel_symbols(s, epi.get());
    if (conv2d_needs_pack_x(s, layout, cfg)) pack_symbols_ = s.symbols();
    if (conv2d_needs_pack_w(s, layout, cfg)) w_pack_ = hidet::empty({s.o, s.k_pack()}, dt, "cuda");
  }
  /// With an epilogue, y is its output and `extras` its other inputs. `values`: the symbols'
  /// values (a symbolic batch, or an epilogue over symbols).
  void operator()(const Tensor &x, const Tensor &w, const Tensor *bias, const Tensor &y,
                  const std::vector<Tensor> &extras = {}, const SymbolValues &values = {}) const {
    if (bias_ != (bias != nullptr))
      throw ValueError(str_cat("conv2d runner for ", s_.str(), ": built ",
                               bias_ ? "with" : "without", " a bias"));
    const std::int64_t n = x.ndim() == 4 ? x.shape()[0] : -1;
    const std::int64_t want = s_.symbolic_batch() ? s_.batch.evaluate(values) : s_.n;
    if (n != want)
      throw ValueError(str_cat("conv2d runner for ", s_.str(), ": x of shape ", shape_str(x.shape()),
                               " does not have the batch ", want, s_.symbolic_batch() ? " of the symbols' values" : ""));
    const std::int64_t R = std::int64_t(s_.kh) * s_.kw;
    const bool nchw = layout_ == Conv2dLayout::NCHW;
    const int split = conv2d_split_k_of(s_, cfg_);
    Tensor workspace;
    if (split > 1)
      workspace = buffers_.get("workspace", n, [&] {
        return hidet::empty({split, n * s_.oh() * s_.ow(), s_.o}, hidet::f32, "cuda");
      });
    auto launch = [&](const Tensor &xk, const auto &wk, const Tensor &yk) {
      std::vector<LaunchArg> args{xk, wk};
      if (workspace.defined()) {
        args.emplace_back(workspace);
        push_symbol_args(args, main_symbols_, values);
        cm_["conv2d"].launch(args);
        args = {workspace};
      }
      if (bias) args.emplace_back(*bias);
      args.emplace_back(yk);
      for (const auto &t : extras) args.emplace_back(t);
      push_symbol_args(args, workspace.defined() ? sum_symbols_ : main_symbols_, values);
      cm_[workspace.defined() ? "sum_slices" : "conv2d"].launch(args);
    };
    if (cfg_.kind == Conv2dConfig::Kind::Depthwise) {
      // The vector form reads x and writes y V channels at a time.
      const std::size_t vbytes = std::size_t(depthwise_vector(s_, dt_, !nchw, cfg_.dw_vector)) * dt_.nbytes();
      for (const Tensor *t : {&x, &y})
        if (vbytes > dt_.nbytes() && reinterpret_cast<std::uintptr_t>(t->data_ptr()) % vbytes != 0)
          throw ValueError(str_cat("conv2d runner for ", s_.str(), " (", cfg_.str(), "): ", t == &x ? "x" : "y",
                                   " is not aligned to the ", vbytes, "-byte vectors it is read and written in"));
      return launch(x, w.reshape({s_.o, R * s_.cg()}),
                    epilogue_out_arg(epi_.get(), y, nchw ? Shape{n, s_.o, s_.oh(), s_.ow()} : Shape{n, s_.oh(), s_.ow(), s_.o}));
    }
    Tensor ya = epilogue_out_arg(epi_.get(), y, conv2d_detail::gemm_out_shape(s_, layout_, n));
    if (cfg_.kind == Conv2dConfig::Kind::Fma) return launch(x, w.reshape({s_.o, s_.gemm_k()}), ya);
    const std::int64_t HW = std::int64_t(s_.h) * s_.w;
    Tensor x_pack;
    if (conv2d_needs_pack_x(s_, layout_, cfg_))
      x_pack = buffers_.get("x_pack", n, [&] { return hidet::empty({n, s_.h, s_.w, s_.groups * s_.cgp()}, dt_, "cuda"); });
    Tensor xv = nchw ? x.reshape({n, s_.c, HW}) : x.reshape({n * HW, s_.c});
    Tensor xpv = x_pack.defined() ? (nchw ? x_pack.reshape({n, HW, -1}) : x_pack.reshape({n * HW, -1})) : Tensor();
    Tensor wv = w.reshape({s_.o, s_.gemm_k()});
    std::vector<LaunchArg> pack;
    if (x_pack.defined() && w_pack_.defined()) pack = {xv, wv, xpv, w_pack_};
    else if (x_pack.defined()) pack = {xv, xpv};
    else if (w_pack_.defined()) pack = {wv, w_pack_};
    if (!pack.empty()) {
      if (x_pack.defined()) push_symbol_args(pack, pack_symbols_, values);
      cm_["pack"].launch(pack);
    }
    Tensor xa = x_pack.defined() ? x_pack : x;
    Tensor wa = w_pack_.defined() ? w_pack_ : wv;
    if (cfg_.kind == Conv2dConfig::Kind::Wgmma) {
      // The weight's TMA map ([O][K], boxes of block_n x 64), encoded once per address.
      if (w_map_ptr_ != wa.data_ptr() || !w_map_) {
        w_map_ = TensorMap::tiled(wa, {cfg_.wgmma.block_n, MatmulWgmmaConfig::block_k}, TensorMap::Swizzle::B128);
        w_map_ptr_ = wa.data_ptr();
      }
      return launch(xa.reshape({-1}), *w_map_, ya);
    }
    launch(xa.reshape({-1}), wa, ya);
  }
  const Conv2dConfig &config() const { return cfg_; }
  const CompiledModule &module() const { return cm_; }

private:
  Conv2dShape s_;
  DataType dt_;
  Conv2dLayout layout_;
  bool bias_;
  Conv2dConfig cfg_;
  std::shared_ptr<const Epilogue> epi_;
  CompiledModule cm_;
  Tensor w_pack_;
  mutable RowBuffers buffers_; ///< the repacked x and the split-k workspace, per batch value
  std::vector<std::string> main_symbols_, sum_symbols_, pack_symbols_; // each kernel's symbol parameters
  mutable std::optional<TensorMap> w_map_; ///< Kind::Wgmma: the weight's TMA map
  mutable const void *w_map_ptr_ = nullptr;
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
