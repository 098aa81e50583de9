// Matrix products whose row count is symbolic (include/hidet/ops/templates/matmul_rows.hpp,
// ops::matmul_rows), on the GPU when present, else on the emulator: the templates built once for
// rows n*s serve every value of n and s that picks the same tiling, with epilogues over the same
// symbols (a bias, a residual, the heads split and permuted), against the unfused eager operators
// on fresh random inputs of odd sizes; reshape_index over symbolic extents; errors.
#include "ops_test_util.hpp"

#include <set>

#include "hidet/ir/eval.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/matmul_templates.hpp"

using namespace ops_test;
using o::Expr;
using o::Idx;
using o::Task;

namespace {
const Dim n_sym = Dim::symbol("n"), s_sym = Dim::symbol("s");

/// out = x + bias[j] over extents that may be symbolic.
Task add_bias_task(const SymShape &shape, DataType dt) {
  auto x = o::input("x", shape, dt);
  auto b = o::input("bias", {shape.back()}, dt);
  auto y = o::compute("add", shape, [&](const Idx &i) { return x.at(i) + b.at({i.back()}); });
  return Task{"add", {x, b}, {y}, ""};
}
/// out = r + x with the residual r as input 0.
Task residual_task(const SymShape &shape, DataType dt) {
  auto r = o::input("r", shape, dt);
  auto x = o::input("x", shape, dt);
  auto y = o::compute("add", shape, [&](const Idx &i) { return r.at(i) + x.at(i); });
  return Task{"add", {r, x}, {y}, ""};
}
/// out[a][c][b][d] = x[a][b][c][d] (the heads moved before the sequence).
Task heads_first_task(const SymShape &shape, DataType dt) {
  auto x = o::input("x", shape, dt);
  SymShape out{shape[0], shape[2], shape[1], shape[3]};
  auto y = o::compute("permute", out, [&](const Idx &i) { return x.at({i[0], i[2], i[1], i[3]}); });
  return Task{"permute", {x}, {y}, ""};
}
std::shared_ptr<const o::Epilogue> then(const o::Epilogue &e, const Task &t, std::size_t j) {
  auto next = e.then(t, j, t.str(), t.name);
  REQUIRE(next.has_value());
  return std::make_shared<const o::Epilogue>(*next);
}
/// The label search space 0 picks for m rows (the configuration a symbolic build is made for).
std::string label_for(int m, int n, int k, DataType dt) {
  auto c = o::matmul_candidates(m, n, k, dt, 0);
  REQUIRE(!c.empty());
  return c[0].label;
}
} // namespace

TEST_CASE("matmul over symbolic rows: one build per tiling serves every n and s, with symbolic epilogues") {
  const std::int64_t H = 3, D = 24, N = H * D;
  const Dim rows = n_sym * s_sym;
  // K = 40: partial k tiles, the mma.sync template. K = 1030: k past 1024, so that Hopper takes
  // the wgmma template (split-k for these few rows: the slices' sum kernel over symbolic rows),
  // and not a multiple of 8 (a is copied to a padded workspace per value of the rows). f32: the
  // FMA template (split-k at K = 1030).
  struct Case {
    DataType dt;
    std::int64_t K;
  };
  for (auto [dt, K] : {Case{dtypes::f16, 40}, Case{dtypes::bf16, 40}, Case{dtypes::f16, 1030}, Case{dtypes::f32, 40},
                       Case{dtypes::f32, 1030}}) {
    INFO("dtype " << dt << ", K = " << K);
    Tensor w = make({K, N}, dt), bias = make({N}, dt);
    // plain; + bias; + bias + residual; + bias, heads split and moved first ([n, H, s, D])
    auto plain = o::Epilogue::identity({rows, Dim(N)}, dt);
    auto with_bias = then(plain, add_bias_task({rows, Dim(N)}, dt), 0);
    auto with_residual = then(*with_bias, residual_task({rows, Dim(N)}, dt), 1);
    auto split = with_bias->reshape({n_sym, s_sym, Dim(H), Dim(D)});
    auto heads = then(split, heads_first_task({n_sym, s_sym, Dim(H), Dim(D)}, dt), 0);
    CHECK(heads->symbols() == std::vector<std::string>{"n", "s"});
    CHECK_FALSE(heads->linear);
    std::set<std::string> labels;
    const std::size_t builds_before = o::matmul_rows_builds();
    // On the emulator the long K runs three of the six (n, s) pairs (the GPU suite runs them all).
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs{{1, 1}, {1, 37}, {2, 50}, {3, 77}, {1, 45}, {2, 19}};
    if (K > 1000 && hidet::cuda_emulated() && !hidet::util::env_bool("HIDET_TEST_ALL_CONFIGS"))
      pairs = {{1, 1}, {1, 45}, {2, 19}};
    for (auto [bn, bs] : pairs) {
      INFO("n = " << bn << ", s = " << bs);
      const SymbolValues values{{"n", bn}, {"s", bs}};
      const std::int64_t m = bn * bs;
      labels.insert(label_for(int(m), int(N), int(K), dt));
      Tensor x = make({bn, bs, K}, dt), r = make({m, N}, dt);
      Tensor want = o::matmul(x, w); // [n, s, N]
      auto got = o::matmul_rows(x, w, nullptr, {}, rows, values);
      REQUIRE(got.has_value());
      expect_close(*got, want.shape(), want.to_double_vector());

      Tensor biased = o::add(want, bias);
      got = o::matmul_rows(x, w, with_bias, {bias}, rows, values);
      REQUIRE(got.has_value());
      expect_close(*got, {m, N}, biased.to_double_vector());

      Tensor res = o::add(r, biased.reshape({m, N}));
      got = o::matmul_rows(x, w, with_residual, {bias, r}, rows, values);
      REQUIRE(got.has_value());
      expect_close(*got, {m, N}, res.to_double_vector());

      Tensor moved = o::permute(biased.reshape({bn, bs, H, D}), {0, 2, 1, 3});
      got = o::matmul_rows(x, w, heads, {bias}, rows, values);
      REQUIRE(got.has_value());
      expect_close(*got, {bn, H, bs, D}, moved.to_double_vector());
    }
    // Four epilogues, each built once per tiling that the row counts picked, whatever the count
    // of (n, s) pairs (the process-wide cache may already hold some from an earlier dtype: none here).
    INFO("tilings: " << labels.size());
    CHECK(o::matmul_rows_builds() - builds_before == 4 * labels.size());
    CHECK(labels.size() < pairs.size()); // some sizes shared a build
  }
}

TEST_CASE("matmul over symbolic rows: what it does not serve, and bad input") {
  const Dim rows = n_sym * s_sym;
  Tensor x = make({2, 5, 16}, dtypes::f16), w = make({16, 24}, dtypes::f16);
  const SymbolValues values{{"n", 2}, {"s", 5}};
  // mixed or integer dtypes, a batched b, constant rows
  CHECK_FALSE(o::matmul_rows(x, make({16, 24}, dtypes::bf16), nullptr, {}, rows, values));
  CHECK_FALSE(o::matmul_rows(make({2, 5, 16}, dtypes::i32), make({16, 24}, dtypes::i32), nullptr, {}, rows, values));
  CHECK_FALSE(o::matmul_rows(x, make({2, 16, 24}, dtypes::f16), nullptr, {}, rows, values));
  CHECK_FALSE(o::matmul_rows(x, w, nullptr, {}, Dim(10), values));
  // rows that disagree with a's, and an epilogue's extra input of the wrong shape
  expect_error([&] { (void)o::matmul_rows(x, w, nullptr, {}, rows, {{"n", 3}, {"s", 5}}); },
               {"row count", "n*s", "15", "(2, 5, 16)", "10 rows"});
  auto bias_e = o::Epilogue::identity({rows, Dim(24)}, dtypes::f16);
  auto x_in = o::input("x", SymShape{rows, Dim(24)}, dtypes::f16);
  auto r_in = o::input("r", SymShape{rows, Dim(24)}, dtypes::f16);
  auto y = o::compute("add", SymShape{rows, Dim(24)}, [&](const Idx &i) { return x_in.at(i) + r_in.at(i); });
  auto e = std::make_shared<const o::Epilogue>(*bias_e.then(Task{"add", {x_in, r_in}, {y}, ""}, 0, "add", "Add"));
  expect_error([&] { (void)o::matmul_rows(x, w, e, {make({9, 24}, dtypes::f16)}, rows, values); },
               {"extra input 0", "(9, 24)", "[n*s, 24]"});
}

TEST_CASE("reshape_index over symbolic extents: the law at several values of the symbols") {
  // [n*s, 12] -> [n, s, 3, 4] and back; [n, s*6] -> [n*s, 2, 3]; extents that cannot be compared
  struct Case {
    SymShape from, to;
  };
  const Dim n = n_sym, s = s_sym;
  for (const Case &c : {Case{{n * s, Dim(12)}, {n, s, Dim(3), Dim(4)}}, Case{{n, s, Dim(3), Dim(4)}, {n * s, Dim(12)}},
                        Case{{n, s * Dim(6)}, {n * s, Dim(2), Dim(3)}}, Case{{Dim(1), n, Dim(4)}, {n * Dim(2), Dim(2)}},
                        Case{{s, n}, {n, s}}}) {
    INFO(sym_shape_str(c.from) << " -> " << sym_shape_str(c.to));
    Idx vars;
    std::vector<ir::Var> idx_vars;
    for (std::size_t d = 0; d < c.from.size(); ++d) {
      idx_vars.push_back(ir::make_var(ir::scalar_type(dtypes::i32), "i"));
      vars.push_back(Expr(ir::Expr(idx_vars.back())));
    }
    Idx out = o::reshape_index(vars, c.from, c.to);
    REQUIRE(out.size() == c.to.size());
    for (auto [nv, sv] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 3}, {3, 5}}) {
      const SymbolValues values{{"n", nv}, {"s", sv}};
      const o::Shape from = evaluate_shape(c.from, values), to = evaluate_shape(c.to, values);
      for (std::int64_t f = 0; f < o::shape_numel(from); ++f) {
        auto src = unravel(f, from);
        ir::VarBindings env{{o::symbol_var("n").get(), double(nv)}, {o::symbol_var("s").get(), double(sv)}};
        for (std::size_t d = 0; d < src.size(); ++d) env[idx_vars[d].get()] = double(src[d]);
        std::vector<std::int64_t> got;
        for (const auto &e : out) {
          auto v = ir::try_evaluate(e.ir(), env);
          REQUIRE(v.has_value());
          got.push_back(std::int64_t(*v));
        }
        REQUIRE(ravel(got, to) == f); // the same element in row-major order
      }
    }
  }
}
