// The schedules of the memory-bound operators against each other (docs/notes/ops_bandwidth.md):
// the tiled transpose with 32 x 32 and 64 x 64 tiles; softmax, log_softmax and layer_norm on
// 8192 x 8192 f32 under the materialized schedule and the row-resident one with T threads per
// row (auto: the scheduler's choice); softmax over short, long and f16 rows. Prints time (us),
// GB/s (read + write), the ratio to copy and the largest difference from the reference plan
// (sampled). HIDET_BENCH_SMALL=1 runs small shapes (a smoke run on the emulator).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "hidet/hidet.hpp"
#include "hidet/ops.hpp"
#include "hidet/ops/schedule_row.hpp"
#include "hidet/ops/schedule_transpose.hpp"

using namespace hidet;
using namespace hidet::ops;
namespace od = hidet::ops::detail;

static double time_us(const std::function<void()> &f, int iters) {
  f();
  synchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i)
    f();
  synchronize();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
}

static Task softmax_task(const Shape &s, DataType dt, bool log) {
  auto a = input("x", s, dt);
  std::vector<int> axes{int(s.size()) - 1};
  auto ld = [&](const Idx &i) { return lang::cast(a.at(i), dtypes::f32); };
  auto mm = od::reduce_over(a, axes, true, ReduceKind::Max, ld, "row_max", dtypes::f32);
  auto e = compute("e", s,
                   [&](const Idx &i) { return lang::exp(ld(i) - mm.at(od::at_axis0(i, axes))); });
  auto sm = od::reduce_over(
      e, axes, true, ReduceKind::Sum, [&](const Idx &i) { return e.at(i); }, "row_sum",
      dtypes::f32);
  auto y = compute(
      "y", s,
      [&](const Idx &i) {
        Idx k = od::at_axis0(i, axes);
        return log ? Expr(ld(i) - mm.at(k) - lang::log(sm.at(k))) : Expr(e.at(i) / sm.at(k));
      },
      dt);
  return Task{"softmax", {a}, {y}, "", {}};
}
static Task layer_norm_task(const Shape &s, DataType dt) {
  auto a = input("x", s, dt);
  Shape ns{s.back()};
  auto w = input("weight", ns, dt);
  std::vector<int> axes{int(s.size()) - 1};
  auto ld = [&](const Idx &i) { return lang::cast(a.at(i), dtypes::f32); };
  auto mu = od::reduce_over(a, axes, true, ReduceKind::Mean, ld, "mean", dtypes::f32);
  auto v = od::reduce_over(
      a, axes, true, ReduceKind::Mean,
      [&](const Idx &i) {
        Expr c = ld(i) - mu.at(od::at_axis0(i, axes));
        return c * c;
      },
      "var", dtypes::f32);
  auto y = compute(
      "y", s,
      [&](const Idx &i) {
        Expr r = (ld(i) - mu.at(od::at_axis0(i, axes))) *
                 lang::rsqrt(v.at(od::at_axis0(i, axes)) + 1e-5f);
        return r * lang::cast(w.at({i.back()}), dtypes::f32);
      },
      dt);
  return Task{"layer_norm", {a, w}, {y}, "", {}};
}

static double maxdiff(const Tensor &a, const Tensor &b) {
  auto x = a.to_double_vector(), y = b.to_double_vector();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); i += 97)
    m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

int main() {
  bool small = std::getenv("HIDET_BENCH_SMALL") != nullptr;
  int iters = small ? 1 : 20;
  auto line = [&](const std::string &op, double moved, double us, double copy_gbs, double err) {
    double gbs = moved / us / 1e3;
    std::printf("%-40s %10.1f %10.1f %8.2f  err %.2e\n", op.c_str(), us, gbs, gbs / copy_gbs, err);
  };
  std::int64_t n = small ? 256 : 8192;
  Tensor x = randn({n, n}, f32), w = ones({n}, f32), dst = empty({n, n}, f32);
  double bytes = double(n) * n * 4;
  double copy_us = time_us(
      [&] {
        runtime::detail::copy_bytes(dst.data_ptr(), dst.device(), dst.is_host_memory(),
                                    x.data_ptr(), x.device(), x.is_host_memory(),
                                    std::size_t(bytes));
      },
      iters);
  double copy_gbs = 2 * bytes / copy_us / 1e3;
  line("copy", 2 * bytes, copy_us, copy_gbs, 0);
  // Transpose tiles.
  for (std::int64_t te : {1024, 4096}) {
    auto make = [&] {
      auto a = input("x", {n, n}, f32);
      auto y = compute("t", {n, n}, [&](const Idx &i) { return a.at({i[1], i[0]}); });
      Plan p;
      p.module = lang::script_module("tsweep");
      p.buffers.push_back({PlanBuffer::Role::Input, 0, "x", {n, n}, f32});
      p.buffers.push_back({PlanBuffer::Role::Output, 0, "t", {n, n}, f32});
      const TensorNode &node = y.node();
      od::define_kernel(p.module, "k",
                        {od::param_spec("x", f32, {n, n}), od::param_spec("out", f32, {n, n})},
                        [&](const std::vector<ir::Var> &ps) {
                          std::map<const ir::VarNode *, ir::Var> pmap{{a.node().buf.get(), ps[0]}};
                          ir::Expr value = od::Inliner(pmap, {}, {}).mutate(node.value);
                          auto t = od::find_transpose(value, node.axes, constant_shape(node.shape), te);
                          od::emit_transpose_tiled(node, value, *t, ps[1]);
                        });
      p.steps.push_back({"k", {0, 1}, n * n});
      return p;
    };
    Tensor ref = ops::transpose(x);
    Tensor got = run_plan(str_cat("tsweep", te), make, {x})[0];
    double us = time_us([&] { (void)run_plan(str_cat("tsweep", te), make, {x}); }, iters);
    line(str_cat("transpose tile ", te), 2 * bytes, us, copy_gbs, maxdiff(ref, got));
  }
  // Row-resident threads per row.
  for (int which = 0; which < 3; ++which) {
    Shape s{n, n};
    std::vector<Tensor> ins{x};
    if (which == 2) ins.push_back(w);
    auto task = [&] {
      return which == 2 ? layer_norm_task(s, f32) : softmax_task(s, f32, which == 1);
    };
    const char *name = which == 0 ? "softmax" : which == 1 ? "log_softmax" : "layer_norm";
    Tensor ref = run_plan(
        str_cat(name, "mat"), [&] { return schedule_materialized(task()); }, ins)[0];
    double mus = time_us(
        [&] {
          (void)run_plan(
              str_cat(name, "mat"), [&] { return schedule_materialized(task()); }, ins);
        },
        iters);
    line(str_cat(name, " materialized"), 2 * bytes, mus, copy_gbs, 0);
    for (int T : {0, 128, 256, 512, 1024}) {
      auto make = [&] { return *od::schedule_row_resident(task(), T); };
      std::string key = str_cat(name, "T", T);
      Tensor got = run_plan(key, make, ins)[0];
      double us = time_us([&] { (void)run_plan(key, make, ins); }, iters);
      line(str_cat(name, " rows T=", T == 0 ? std::string("auto") : std::to_string(T)), 2 * bytes,
           us, copy_gbs, maxdiff(ref, got));
    }
  }
  // Other shapes (auto T): short rows, long rows, f16.
  if (small) return 0;
  struct S {
    Shape s;
    DataType d;
  };
  for (auto c : {S{{65536, 1024}, f32}, S{{4096, 16384}, f32}, S{{262144, 256}, f32},
                 S{{8192, 8192}, f16}, S{{8192, 16384}, f16}}) {
    Tensor xx = randn(c.s, c.d);
    double b = double(shape_numel(c.s)) * c.d.nbytes();
    auto task = [&] { return softmax_task(c.s, c.d, false); };
    std::string key = str_cat("sm", shape_str(c.s), c.d);
    Tensor ref = run_plan(key + "mat", [&] { return schedule_materialized(task()); }, {xx})[0];
    double mus = time_us(
        [&] { (void)run_plan(key + "mat", [&] { return schedule_materialized(task()); }, {xx}); },
        iters);
    Tensor got = run_plan(key, [&] { return schedule(task()); }, {xx})[0];
    double us =
        time_us([&] { (void)run_plan(key, [&] { return schedule(task()); }, {xx}); }, iters);
    line(str_cat("softmax ", shape_str(c.s), " ", c.d, " materialized"), 2 * b, mus, copy_gbs, 0);
    line(str_cat("softmax ", shape_str(c.s), " ", c.d, " rows"), 2 * b, us, copy_gbs,
         maxdiff(ref, got));
  }
  return 0;
}
