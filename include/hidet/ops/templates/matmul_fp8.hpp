// FP8 matrix multiplication on Hopper with per-tensor scales: c = scale_a * scale_b * (a @ b^T)
// for a: [m, k] and b: [n, k] in f8e4m3 or f8e5m2 (k innermost for both: wgmma reads 8-bit
// operands K-major only, the layout torch._scaled_mm also asks of its b), f32 accumulation and
// f16, bf16 or f32 output.
//
// It is the Hopper matmul of matmul_wgmma.hpp (TMA ring, producer and consumer warpgroups,
// persistent tiles, split-k, the staged epilogue for 16-bit outputs) with 8-bit stages: a stage
// row is still 128 bytes, now 128 values of k, consumed by four m64n{block_n}k32 wgmma, and b's
// stage is one K-major box of block_n x 128 (no transposed mode). The consumers multiply their
// accumulators by scale_a * scale_b (f32 scalars read from device memory, as cuBLASLt's scale
// pointers) before the epilogue. Limits: k a multiple of 16 (TMA's 16-byte row strides), no
// batch, no clusters.
#pragma once

#include <memory>
#include <string>

#include "hidet/ops/templates/matmul_wgmma.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// A script module for an 8-bit product: kernel "matmul_fp8" (add_matmul_wgmma_kernel with
/// MatmulScaling{in}: parameters map_a, map_b, scale_a, scale_b, c) and, with split-k, "sum_splits".
inline lang::ScriptModule matmul_fp8_module(int m, int n, int k, DataType in, DataType out,
                                            const MatmulWgmmaConfig &cfg, int num_sms = 132) {
  auto mod = lang::script_module(str_cat("matmul_fp8_", in, "_", out, "_", m, "x", n, "x", k));
  const MatmulScaling scaling{in};
  add_matmul_wgmma_kernel(mod, "matmul_fp8", m, n, k, out, cfg, num_sms, {}, nullptr, &scaling);
  if (int splits = matmul_wgmma_splits(k, cfg, MatmulWgmmaConfig::block_k_of(in)); splits > 1)
    add_sum_splits_kernel(mod, "sum_splits", splits, m, n, out);
  return mod;
}

/// The tiling for an 8-bit m x n x k product: the f16 cost model at half the k (a 128-deep fp8
/// stage moves the bytes of a 64-deep f16 one and its products run at twice the rate), without
/// the in-kernel split-k sum and clusters.
inline MatmulWgmmaConfig matmul_fp8_heuristic_config(int m, int n, int k, int num_sms) {
  MatmulWgmmaConfig c = matmul_wgmma_heuristic_config(m, n, lang::ceil_div(k, 2), num_sms);
  c.split_fixup = false;
  c.cluster_m = c.cluster_n = 1; // the 8-bit kernel has no clusters
  return c;
}

/// A built FP8 matmul for fixed sizes and dtypes: f(a, b, scale_a, scale_b, c) computes
/// c = scale_a * scale_b * (a @ b^T) with a: in[m, k], b: in[n, k], the scales f32 tensors of one
/// element and c: out[m, n], all on a Hopper GPU, on the current stream. The TMA maps are cached
/// per address.
class MatmulFp8 {
public:
  MatmulFp8(int m, int n, int k, DataType in, DataType out, const MatmulWgmmaConfig &cfg)
      : m_(m), n_(n), k_(k), in_(in), out_(out), cfg_(cfg),
        cm_(matmul_fp8_module(m, n, k, in, out, cfg, runtime::device_info(0).sm_count)
                .build(matmul_wgmma_build_options())) {
    if (int splits = matmul_wgmma_splits(k, cfg, MatmulWgmmaConfig::block_k_of(in)); splits > 1)
      ws_ = hidet::empty({splits, m, n}, f32, "cuda");
  }
  MatmulFp8(int m, int n, int k, DataType in, DataType out)
      : MatmulFp8(m, n, k, in, out, matmul_fp8_heuristic_config(m, n, k, runtime::device_info(0).sm_count)) {}

  void operator()(const Tensor &a, const Tensor &b, const Tensor &scale_a, const Tensor &scale_b, const Tensor &c) {
    check(a, {m_, k_}, in_, "a");
    check(b, {n_, k_}, in_, "b");
    check(scale_a, {1}, f32, "scale_a");
    check(scale_b, {1}, f32, "scale_b");
    check(c, {m_, n_}, out_, "c");
    const std::int64_t bk = MatmulWgmmaConfig::block_k_of(in_);
    map_a_.update(a, {cfg_.block_m(), bk});
    map_b_.update(b, {cfg_.block_n, bk});
    if (!ws_.defined()) return cm_["matmul_fp8"](*map_a_.map, *map_b_.map, scale_a, scale_b, c);
    cm_["matmul_fp8"](*map_a_.map, *map_b_.map, scale_a, scale_b, ws_);
    cm_["sum_splits"](ws_, c);
  }
  const MatmulWgmmaConfig &config() const { return cfg_; }
  const CompiledModule &module() const { return cm_; }

private:
  void check(const Tensor &t, std::vector<std::int64_t> want, DataType dt, const char *what) const {
    if (t.shape() != want || t.dtype() != dt)
      throw ValueError(str_cat("matmul_fp8: ", what, " is ", t.dtype(), hidet::detail::shape_str(t.shape()), ", expected ",
                               dt, hidet::detail::shape_str(want)));
  }
  int m_, n_, k_;
  DataType in_, out_;
  MatmulWgmmaConfig cfg_;
  CompiledModule cm_;
  Tensor ws_;
  CachedMap map_a_, map_b_;
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
