// The repack kernel of the conv2d templates' tensor-core path (conv2d.hpp): x from NCHW (or
// unpadded NHWC) into NHWC with channels padded per group, and the weight into [O][k_pack] rows
// of k = (kh, kw, c), in one launch; the batch may be symbolic (Conv2dShape::batch).
#pragma once

#include <string>

#include "hidet/ops/templates/conv2d_kernels.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// Adds kernel `name`, the repacks of the tensor-core path in one launch (a 1-D grid: the first
/// blocks repack x, the rest w; either part may be absent). Parameters: (x, w, xp, wp), (x, xp)
/// or (w, wp).
///  * x: NCHW [N][C][H * W] -> xp [N][H * W][groups * cgp] by 32 x 32 (channel x pixel) tiles
///    through shared memory (coalesced reads along pixels, writes along channels); NHWC
///    [N * H * W][C] -> [N * H * W][groups * cgp] one element per thread. Channel c of group g
///    goes to g * cgp + c % CG, zeros in the padding.
///  * w: the weight in `layout`'s order ([O][CG][KH][KW] or [O][KH][KW][CG]) -> wp [O][k_pack]
///    (k = (kh, kw, c), channels zero-padded to cgp, rows to k_pack), one element per thread.
inline void add_pack_kernel(lang::ScriptModule &mod, const std::string &name, const Conv2dShape &s,
                            DataType dt, Conv2dLayout layout, bool pack_x, bool pack_w) {
  using namespace hidet::lang;
  const bool nchw = layout == Conv2dLayout::NCHW;
  const int HW = s.h * s.w, CG = s.cg(), cgp = s.cgp(), Cp = s.groups * cgp, R = s.kh * s.kw,
            kl = s.k_pack();
  // With a symbolic batch the x part's extents are expressions of its symbols (the kernel takes
  // them after its tensors); the w part's are constants.
  const bool sym = pack_x && s.symbolic_batch();
  const Expr N = s.n_expr(), pixels = sym ? Expr(N * HW) : Expr(int(std::int64_t(s.n) * HW));
  const int tiles_p = ceil_div(HW, 32), tiles_c = ceil_div(Cp, 32);
  const std::int64_t x_blocks_c = !pack_x ? 0
                                  : nchw  ? std::int64_t(tiles_p) * tiles_c * s.n
                                          : ceil_div(std::int64_t(s.n) * HW * Cp, std::int64_t(256));
  const Expr x_blocks = !sym ? Expr(int(x_blocks_c))
                        : nchw ? Expr(N * (tiles_p * tiles_c)) : Expr(ceil_div(pixels * Cp, 256));
  const std::int64_t w_total = std::int64_t(s.o) * kl,
                     w_blocks = pack_w ? ceil_div(w_total, std::int64_t(256)) : 0;
  auto T = [&](std::vector<ir::Expr> shape) { return TensorSpec(dt, std::move(shape)); };
  TensorSpec xs = nchw ? T({})[N][s.c][HW] : T({})[pixels][s.c],
             xps = nchw ? T({})[N][HW][Cp] : T({})[pixels][Cp];
  TensorSpec ws = T({})[s.o][CG * R], wps = T({})[s.o][kl];
  auto body = [&](const lang::Tensor *x, const lang::Tensor *w, const lang::Tensor *xp,
                  const lang::Tensor *wp) {
    if (sym) attrs.cuda.grid_dim = max(x_blocks, 1) + int(w_blocks);
    else attrs.cuda.grid_dim = int(x_blocks_c + w_blocks);
    attrs.cuda.block_dim = 256;
    auto x_part = [&] {
      if (!nchw) {
        Var i = blockIdx.x * 256 + threadIdx.x;
        if_(i < pixels * Cp, [&] {
          Var p = i / Cp, cp = i % Cp, cin = cp % cgp;
          if_(cin < CG, [&] { (*xp)[p][cp] = (*x)[p][cp / cgp * CG + cin]; }).else_([&] {
            (*xp)[p][cp] = 0.0f;
          });
        });
        return;
      }
      auto tile = shared_tensor(f32[32][33], "tile"); // [padded channel][pixel]
      Var img = blockIdx.x / (tiles_p * tiles_c), ct = blockIdx.x / tiles_p % tiles_c,
          pt = blockIdx.x % tiles_p;
      Var p0 = pt * 32, c0 = ct * 32;
      Var tx = threadIdx.x % 32, ty = threadIdx.x / 32;
      for_(range(4).unroll(), [&](Var r) {
        Var cp = c0 + ty + r * 8, p = p0 + tx;
        Var cin = cp % cgp;
        Expr ok = cp < Cp && p < HW && cin < CG;
        tile[ty + r * 8][tx] = 0.0f;
        if_(ok, [&] { tile[ty + r * 8][tx] = cast((*x)[img][cp / cgp * CG + cin][p], f32); });
      });
      syncthreads();
      for_(range(4).unroll(), [&](Var r) {
        Var p = p0 + ty + r * 8, cp = c0 + tx;
        if_(p < HW && cp < Cp, [&] { (*xp)[img][p][cp] = tile[tx][ty + r * 8]; });
      });
    };
    auto w_part = [&] {
      Var i = (blockIdx.x - x_blocks) * 256 + threadIdx.x;
      if_(i < w_total, [&] {
        Var oc = i / kl, k = i % kl, rs = k / cgp, c = k % cgp;
        Expr src = nchw ? c * R + rs : rs * CG + c;
        if_(c < CG && rs < R, [&] { (*wp)[oc][k] = (*w)[oc][select(rs < R, src, 0)]; }).else_([&] {
          (*wp)[oc][k] = 0.0f;
        });
      });
    };
    if (pack_x && pack_w)
      if_(blockIdx.x < x_blocks, x_part).else_(w_part);
    else if (pack_x)
      x_part();
    else
      w_part();
  };
  std::vector<ParamSpec> params = pack_x && pack_w ? std::vector<ParamSpec>{xs, ws, xps, wps}
                                  : pack_x        ? std::vector<ParamSpec>{xs, xps}
                                                  : std::vector<ParamSpec>{ws, wps};
  if (sym) push_symbol_params(params, s.symbols());
  mod.kernel(name, params, [&](const std::vector<ParamHandle> &p) {
    lang::Tensor a = p[0], b = p[1];
    if (pack_x && pack_w) {
      lang::Tensor c = p[2], d = p[3];
      body(&a, &b, &c, &d);
    } else if (pack_x) {
      body(&a, nullptr, &b, nullptr);
    } else {
      body(nullptr, &a, nullptr, &b);
    }
  });
}

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
