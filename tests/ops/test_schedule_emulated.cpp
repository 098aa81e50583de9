// The auto-scheduler's kernels run on the CPU emulator directly (no runtime layer): f32 buffers
// on the host, plans executed step by step, results against double-precision references. Covers
// inlining, the row schedule (warp and block per row, split rows), the column schedule (split
// slices), arg-reductions, the row-resident normalization schedule and the tiled transpose.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "hidet/backend/emulator/program.hpp"
#include "hidet/ir/eval.hpp"
#include "hidet/ir/printer.hpp"
#include "hidet/ops/schedule.hpp"
#include "hidet/ops/schedule_row.hpp"
#include "hidet/runtime/compiled_module.hpp" // CompiledModule (build() checks shared memory)
#include "hidet/transforms/lower.hpp"

using namespace hidet;
using namespace hidet::ops;

namespace {
std::uint64_t g_seed = std::random_device{}();

/// Runs `plan` on the emulator; buffers are byte vectors sized for their dtype.
void run_plan(Plan &plan, std::vector<std::vector<char>> &bufs) {
  auto lowered = ir::lower(plan.module.ir());
  backend::emu::Program prog(lowered);
  for (auto &step : plan.steps) {
    if (step.work == 0) continue;
    ir::Function f;
    for (auto &fn : lowered->functions)
      if (fn->name == step.kernel) f = fn;
    REQUIRE(f);
    std::vector<backend::KernelArg> args;
    for (int a : step.args) args.push_back(backend::KernelArg::pointer(bufs[a].data()));
    auto dim = [&](const std::array<ir::Expr, 3> &d) {
      backend::Dim3 r;
      std::uint32_t *o[3] = {&r.x, &r.y, &r.z};
      for (int i = 0; i < 3; ++i)
        if (d[i]) *o[i] = std::uint32_t(*ir::try_evaluate(d[i]));
      return r;
    };
    prog.launch(step.kernel, args, dim(f->attrs.grid_dim), dim(f->attrs.block_dim), 0);
  }
}

std::vector<std::vector<char>> alloc(const Plan &p) {
  std::vector<std::vector<char>> b;
  for (auto &pb : p.buffers) b.emplace_back(std::size_t(shape_numel(constant_shape(pb.shape))) * pb.dtype.nbytes());
  return b;
}

std::vector<float> randf(std::size_t n, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(n);
  for (auto &x : v) x = u(rng);
  return v;
}

template <class T> const T *as(const std::vector<char> &b) { return reinterpret_cast<const T *>(b.data()); }

void check(double got, double want, std::size_t i) {
  INFO("seed " << g_seed << ", index " << i << ": got " << got << ", want " << want);
  CHECK(std::abs(got - want) <= 1e-4 * (1 + std::abs(want)));
}
/// Checks y against a host layer norm of each row of x [rows, n] (eps 1e-5), times g, plus h
/// when given.
void check_layer_norm(const float *y, const std::vector<float> &x, const std::vector<float> &g,
                      const std::vector<float> *h, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0, ss = 0;
    for (std::int64_t k = 0; k < n; ++k) s += x[std::size_t(r * n + k)];
    s /= double(n);
    for (std::int64_t k = 0; k < n; ++k) ss += std::pow(x[std::size_t(r * n + k)] - s, 2);
    ss /= double(n);
    for (std::int64_t k = 0; k < n; ++k) {
      std::size_t f = std::size_t(r * n + k);
      double want = (x[f] - s) / std::sqrt(ss + 1e-5) * g[std::size_t(k)] + (h ? (*h)[std::size_t(k)] : 0.0);
      check(y[f], want, f);
    }
  }
}

} // namespace

TEST_CASE("softmax plan on the emulator: row-resident and materialized schedules") {
  std::mt19937_64 rng(g_seed);
  // Row-resident: warp per row (45: scalar loads), 64 threads per row (1500: vector loads);
  // materialized: warp per row, block per row.
  for (bool rows : {true, false})
  for (std::int64_t n : {45, 1500}) {
    INFO("row-resident " << rows << ", n " << n);
    std::int64_t m = 3;
    auto x = input("x", {m, n}, dtypes::f32);
    auto mx = reduce({m}, {n}, [&](const Idx &i, const Idx &r) { return x.at({i[0], r[0]}); }, ReduceKind::Max);
    auto e = compute("e", {m, n}, [&](lang::Expr i, lang::Expr j) { return lang::exp(x[i][j] - mx[i]); });
    auto s = reduce({m}, {n}, [&](const Idx &i, const Idx &r) { return e.at({i[0], r[0]}); }, ReduceKind::Sum);
    auto y = compute("y", {m, n}, [&](lang::Expr i, lang::Expr j) { return e[i][j] / s[i]; });
    Task task{"softmax", {x}, {y}, "", {}};
    Plan p = rows ? schedule(task) : schedule_materialized(task);
    CHECK(p.steps.size() == (rows ? 1u : 3u));
    auto bufs = alloc(p);
    auto xv = randf(m * n, rng);
    std::memcpy(bufs[0].data(), xv.data(), bufs[0].size());
    run_plan(p, bufs);
    const float *yv = as<float>(bufs[1]);
    for (std::int64_t i = 0; i < m; ++i) {
      double mm = -1e30, z = 0;
      for (std::int64_t j = 0; j < n; ++j) mm = std::max(mm, double(xv[i * n + j]));
      for (std::int64_t j = 0; j < n; ++j) z += std::exp(xv[i * n + j] - mm);
      for (std::int64_t j = 0; j < n; j += 7) check(yv[i * n + j], std::exp(xv[i * n + j] - mm) / z, i * n + j);
    }
  }
}

TEST_CASE("split row, split column and arg reductions on the emulator") {
  std::mt19937_64 rng(g_seed + 1);
  // Long rows, few of them: split over blocks.
  {
    auto x = input("x", {2, 20000}, dtypes::f32);
    auto s = reduce({2}, {20000}, [&](const Idx &i, const Idx &r) { return x.at({i[0], r[0]}); }, ReduceKind::Sum);
    Plan p = schedule(Task{"rowsum", {x}, {s}, "", {}});
    CHECK(p.steps.size() == 2);
    auto bufs = alloc(p);
    auto xv = randf(40000, rng);
    std::memcpy(bufs[0].data(), xv.data(), bufs[0].size());
    run_plan(p, bufs);
    for (int i = 0; i < 2; ++i) {
      double want = 0;
      for (int j = 0; j < 20000; ++j) want += xv[i * 20000 + j];
      check(as<float>(bufs[1])[i], want, i);
    }
  }
  // Leading-axis reduction: column schedule with slices; and argmax along the leading axis.
  {
    auto x = input("x", {1000, 5}, dtypes::f32);
    auto s = reduce({5}, {1000}, [&](const Idx &i, const Idx &r) { return x.at({r[0], i[0]}); }, ReduceKind::Mean);
    auto a = reduce({5}, {1000}, [&](const Idx &i, const Idx &r) { return x.at({r[0], i[0]}); }, ReduceKind::ArgMax);
    Plan p = schedule(Task{"colred", {x}, {s, a}, "", {}});
    auto bufs = alloc(p);
    auto xv = randf(5000, rng);
    std::memcpy(bufs[0].data(), xv.data(), bufs[0].size());
    run_plan(p, bufs);
    for (int k = 0; k < 5; ++k) {
      double want = 0, best = -1e30;
      std::int64_t bi = 0;
      for (int r = 0; r < 1000; ++r) {
        want += xv[r * 5 + k] / 1000.0;
        if (xv[r * 5 + k] > best) best = xv[r * 5 + k], bi = r;
      }
      check(as<float>(bufs[1])[k], want, k);
      CHECK(as<std::int64_t>(bufs[2])[k] == bi);
    }
  }
}

TEST_CASE("tiled transpose schedule on the emulator: a transposed read fused with a contiguous one") {
  std::mt19937_64 rng(g_seed + 2);
  std::int64_t m = 45, n = 70; // partial 64 x 64 tiles along both axes
  auto x = input("x", {n, m}, dtypes::f32);
  auto y = input("y", {m, n}, dtypes::f32);
  auto z = compute("z", {m, n}, [&](lang::Expr i, lang::Expr j) { return x[j][i] * 2.0f + y[i][j]; });
  Plan p = schedule(Task{"fused_transpose", {x, y}, {z}, "", {}});
  REQUIRE(p.steps.size() == 1);
  CHECK(ir::to_string(p.module.ir()).find("tile0") != std::string::npos);
  auto bufs = alloc(p);
  auto xv = randf(std::size_t(m * n), rng), yv = randf(std::size_t(m * n), rng);
  std::memcpy(bufs[0].data(), xv.data(), bufs[0].size());
  std::memcpy(bufs[1].data(), yv.data(), bufs[1].size());
  run_plan(p, bufs);
  const float *zv = as<float>(bufs[2]);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) check(zv[i * n + j], 2.0 * xv[j * m + i] + yv[i * n + j], std::size_t(i * n + j));
  // A broadcast along the last axis is not a transpose: the plain element-wise schedule.
  auto b = input("b", {m}, dtypes::f32);
  auto w = compute("w", {m, n}, [&](lang::Expr i, lang::Expr j) { return b[i] + y[i][j]; });
  CHECK(ir::to_string(schedule(Task{"bcast", {b, y}, {w}, "", {}}).module.ir()).find("tile0") == std::string::npos);
}

TEST_CASE("tiled transpose schedule on the emulator: four transposed f32 reads fit 48 KB of shared memory") {
  // Four 64 x 64 f32 tiles would take 65 KB (SqueezeBERT's f32 layer norm over a permute failed to
  // build so): the tiles shrink.
  std::mt19937_64 rng(g_seed + 5);
  std::int64_t m = 70, n = 90;
  std::vector<TensorDef> xs;
  for (int r = 0; r < 4; ++r) xs.push_back(input("x" + std::to_string(r), {n, m}, dtypes::f32));
  auto z = compute("z", {m, n}, [&](lang::Expr i, lang::Expr j) {
    return xs[0][j][i] + xs[1][j][i] * 2.0f + xs[2][j][i] * 3.0f - xs[3][j][i];
  });
  Plan p = schedule(Task{"four_transposes", xs, {z}, "", {}});
  REQUIRE(p.steps.size() == 1);
  CHECK(ir::to_string(p.module.ir()).find("tile3") != std::string::npos);
  CHECK_NOTHROW(p.module.build()); // checks the static shared memory, as on a GPU
  auto bufs = alloc(p);
  std::vector<std::vector<float>> v;
  for (int r = 0; r < 4; ++r) {
    v.push_back(randf(std::size_t(m * n), rng));
    std::memcpy(bufs[std::size_t(r)].data(), v.back().data(), bufs[std::size_t(r)].size());
  }
  run_plan(p, bufs);
  const float *zv = as<float>(bufs[4]);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::size_t t = std::size_t(j * m + i);
      check(zv[i * n + j], double(v[0][t]) + 2.0 * v[1][t] + 3.0 * v[2][t] - v[3][t], std::size_t(i * n + j));
    }
}

TEST_CASE("row-resident schedule on the emulator: layer_norm with weight and bias, 3-D rows") {
  std::mt19937_64 rng(g_seed + 3);
  std::int64_t b = 2, m = 3, n = 300; // 300 = 75 chunks of 4: a warp per row, partial last chunks
  auto x = input("x", {b, m, n}, dtypes::f32);
  auto g = input("g", {n}, dtypes::f32);
  auto h = input("h", {n}, dtypes::f32);
  auto mu = reduce({b, m, 1}, {n}, [&](const Idx &i, const Idx &r) { return x.at({i[0], i[1], r[0]}); }, ReduceKind::Mean);
  auto var = reduce({b, m, 1}, {n}, [&](const Idx &i, const Idx &r) {
    lang::Expr c = x.at({i[0], i[1], r[0]}) - mu.at({i[0], i[1], lang::Expr(0)});
    return c * c;
  }, ReduceKind::Mean);
  auto y = compute("y", {b, m, n}, [&](lang::Expr i, lang::Expr j, lang::Expr k) {
    return (x[i][j][k] - mu[i][j][0]) * lang::rsqrt(var[i][j][0] + 1e-5f) * g[k] + h[k];
  });
  Plan p = schedule(Task{"layer_norm", {x, g, h}, {y}, "", {}});
  REQUIRE(p.steps.size() == 1);
  auto bufs = alloc(p);
  auto xv = randf(std::size_t(b * m * n), rng), gv = randf(std::size_t(n), rng), hv = randf(std::size_t(n), rng);
  std::memcpy(bufs[0].data(), xv.data(), bufs[0].size());
  std::memcpy(bufs[1].data(), gv.data(), bufs[1].size());
  std::memcpy(bufs[2].data(), hv.data(), bufs[2].size());
  run_plan(p, bufs);
  check_layer_norm(as<float>(bufs[3]), xv, gv, &hv, b * m, n);
}

TEST_CASE("row-resident schedule on the emulator: short rows, several to a warp") {
  // Rows of fewer than 32 vectors take the power of two threads that gives each one vector: 40
  // f32 (10 vectors of 4) on 16 threads, 20 (5, the last threads idle) on 8, 4 (one) on 1; 74
  // rows, not a multiple of the rows per block.
  std::mt19937_64 rng(g_seed + 4);
  for (auto [n, T] : {std::pair<std::int64_t, int>{40, 16}, {20, 8}, {4, 1}, {96, 32}}) {
    CAPTURE(n);
    const std::int64_t rows = 74;
    auto x = input("x", {rows, n}, dtypes::f32);
    auto g = input("g", {n}, dtypes::f32);
    auto mu = reduce({rows, 1}, {n}, [&](const Idx &i, const Idx &r) { return x.at({i[0], r[0]}); }, ReduceKind::Mean);
    auto var = reduce({rows, 1}, {n}, [&](const Idx &i, const Idx &r) {
      lang::Expr c = x.at({i[0], r[0]}) - mu.at({i[0], lang::Expr(0)});
      return c * c;
    }, ReduceKind::Mean);
    auto y = compute("y", {rows, n}, [&](lang::Expr i, lang::Expr k) {
      return (x[i][k] - mu[i][0]) * lang::rsqrt(var[i][0] + 1e-5f) * g[k];
    });
    Task t{"layer_norm", {x, g}, {y}, "", {}};
    auto rr = ops::detail::analyze_row_resident(t);
    REQUIRE(rr.has_value());
    CHECK(rr->T == T);
    CHECK(rr->rows_per_block == 256 / T);
    Plan p = schedule(t);
    REQUIRE(p.steps.size() == 1);
    auto bufs = alloc(p);
    auto xv = randf(std::size_t(rows * n), rng), gv = randf(std::size_t(n), rng);
    std::memcpy(bufs[0].data(), xv.data(), bufs[0].size());
    std::memcpy(bufs[1].data(), gv.data(), bufs[1].size());
    run_plan(p, bufs);
    check_layer_norm(as<float>(bufs[2]), xv, gv, nullptr, rows, n);
  }
}

TEST_CASE("a reduction's element-wise finish runs in the reduction's kernel (row, split column, not fused)") {
  std::mt19937_64 rng(g_seed + 3);
  // For each schedule: y = tanh(sum + bias) * 2, the sum read at y's own index.
  struct Case {
    const char *name;
    std::int64_t outs, len;
    bool column; // reduce over the leading axis of x [len, outs], else the last axis of x [outs, len]
    std::size_t kernels;
  };
  for (Case c : {Case{"row", 37, 300, false, 1}, Case{"split column", 23, 5000, true, 2},
                 Case{"column", 3000, 40, true, 1}}) {
    INFO(c.name);
    auto x = input("x", c.column ? Shape{c.len, c.outs} : Shape{c.outs, c.len}, dtypes::f32);
    auto bias = input("bias", {c.outs}, dtypes::f32);
    auto s = reduce({c.outs}, {c.len}, [&](const Idx &i, const Idx &r) {
      return c.column ? x.at({r[0], i[0]}) : x.at({i[0], r[0]});
    }, ReduceKind::Sum);
    auto y = compute("y", {c.outs}, [&](lang::Expr i) { return lang::tanh((s[i] + bias[i]) * 0.01f) * 2.0f; });
    Plan p = schedule(Task{"sum_finish", {x, bias}, {y}, "", {}});
    CHECK(p.steps.size() == c.kernels);
    for (auto &b : p.buffers) CHECK(b.name != s.node().name); // the sum is never stored
    auto bufs = alloc(p);
    auto xv = randf(std::size_t(c.outs * c.len), rng), bv = randf(std::size_t(c.outs), rng);
    std::memcpy(bufs[0].data(), xv.data(), bufs[0].size());
    std::memcpy(bufs[1].data(), bv.data(), bufs[1].size());
    run_plan(p, bufs);
    for (std::int64_t i = 0; i < c.outs; ++i) {
      double sum = 0;
      for (std::int64_t r = 0; r < c.len; ++r) sum += xv[std::size_t(c.column ? r * c.outs + i : i * c.len + r)];
      check(as<float>(bufs[2])[i], std::tanh((sum + bv[std::size_t(i)]) * 0.01) * 2, std::size_t(i));
    }
  }
  // Read at another index (reversed), or by two outputs: the sum is stored, the finish is a kernel.
  {
    const std::int64_t n = 29, len = 64;
    auto x = input("x", {n, len}, dtypes::f32);
    auto s = reduce({n}, {len}, [&](const Idx &i, const Idx &r) { return x.at({i[0], r[0]}); }, ReduceKind::Sum);
    auto rev = compute("rev", {n}, [&](lang::Expr i) { return s[lang::Expr(int(n - 1)) - i] * 2.0f; });
    Plan p = schedule(Task{"reversed", {x}, {rev}, "", {}});
    CHECK(p.steps.size() == 2);
    auto bufs = alloc(p);
    auto xv = randf(std::size_t(n * len), rng);
    std::memcpy(bufs[0].data(), xv.data(), bufs[0].size());
    run_plan(p, bufs);
    for (std::int64_t i = 0; i < n; ++i) {
      double sum = 0;
      for (std::int64_t r = 0; r < len; ++r) sum += xv[std::size_t((n - 1 - i) * len + r)];
      check(as<float>(bufs[1])[i], 2 * sum, std::size_t(i));
    }
    auto a = compute("a", {n}, [&](lang::Expr i) { return s[i] + 1.0f; });
    auto b = compute("b", {n}, [&](lang::Expr i) { return s[i] * 3.0f; });
    CHECK(schedule(Task{"two_finishes", {x}, {a, b}, "", {}}).steps.size() == 3);
  }
}
