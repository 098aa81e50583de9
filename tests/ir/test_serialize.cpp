// ir::serialize_module / deserialize_module (include/hidet/ir/serialize.hpp): lowered modules of
// the library's own templates (shared, register and swizzled layouts, symbolic row counts, mma
// and cp.async primitives, device functions) read back structurally equal, printed the same,
// with shared nodes and variable identity kept, encoded again to the same bytes; the emulator runs
// a module read back with the original's results; malformed bytes give ValueErrors.
#include <doctest/doctest.h>

#include <random>

#include "hidet/backend/emulator/program.hpp"
#include "hidet/hidet.hpp"
#include "hidet/ir/equal.hpp"
#include "hidet/ir/eval.hpp"
#include "hidet/ir/functor.hpp"
#include "hidet/ir/printer.hpp"
#include "hidet/ir/serialize.hpp"
#include "hidet/ops/templates/matmul_f16.hpp"
#include "hidet/ops/templates/matmul_f32.hpp"
#include "hidet/transforms/lower.hpp"

using namespace hidet;
namespace tpl = hidet::ops::templates;

namespace {

/// The distinct variables of a module, counted by identity.
std::size_t distinct_vars(const ir::Module &m) {
  struct V : ir::IRVisitor {
    std::set<const ir::VarNode *> seen;
    void visit_Var(const ir::VarNode *v) override {
      seen.insert(v);
      ir::IRVisitor::visit_Var(v);
    }
  } v;
  v.visit(m);
  return v.seen.size();
}

void expect_round_trip(const ir::Module &m) {
  std::string bytes = ir::serialize_module(m);
  ir::Module back = ir::deserialize_module(bytes);
  CHECK(ir::structural_equal(m, back));
  CHECK(ir::to_string(back) == ir::to_string(m));
  CHECK(distinct_vars(back) == distinct_vars(m));
  CHECK(ir::serialize_module(back) == bytes);
}

} // namespace

TEST_CASE("lowered template modules round-trip: equal, printed the same, variables kept") {
  // f32 SIMT matmul over a symbolic row count (register tiles, shared tiles, vector stores).
  expect_round_trip(ir::lower(tpl::matmul_f32_module(tpl::MatmulRows(Dim("m")), 64, 40).ir()));
  // f16 tensor-core matmul (mma.sync, ldmatrix, cp.async, swizzled shared layouts).
  expect_round_trip(
      ir::lower(tpl::matmul_f16_module(tpl::MatmulRows(96), 128, 64, dtypes::f16).ir()));
}

TEST_CASE("a hand-built module with a device function, loops, asserts and asm round-trips") {
  using namespace lang;
  auto mod = script_module("misc");
  auto square = mod.device_function("square", f32, {f32}, [&](Var x) { return_(x * x); });
  mod.kernel("misc", {f32[symbol("n")], i32[4]}, [&](lang::Tensor a, lang::Tensor hist) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 32;
    auto smem = shared_tensor(f32[32]);
    smem[threadIdx.x] = 0.0f;
    syncthreads();
    for_(range(threadIdx.x, a.shape(0), 32), [&](Var i) {
      if_(a[i] > 0.0f, [&] { a[i] = square(a[i]); }).else_([&] { continue_(); });
      atomic_add(hist[i % 4], 1);
    });
    while_(smem[0] > 1.0f, [&] { break_(); });
  });
  ir::Module lowered = ir::lower(mod.ir());
  expect_round_trip(lowered);
  expect_round_trip(mod.ir()); // before lowering too
}

TEST_CASE("the emulator runs a module read back with the original's results") {
  const int m = 37, n = 64, k = 24;
  ir::Module lowered = ir::lower(tpl::matmul_f32_module(tpl::MatmulRows(m), n, k).ir());
  ir::Module back = ir::deserialize_module(ir::serialize_module(lowered));
  ir::Function kernel = lowered->lookup("matmul_f32");
  REQUIRE(kernel);
  backend::Dim3 grid{1, 1, 1}, block{1, 1, 1};
  auto dim = [](const ir::Expr &e) { return e ? std::uint32_t(*ir::try_evaluate(e)) : 1u; };
  grid = {dim(kernel->attrs.grid_dim[0]), dim(kernel->attrs.grid_dim[1]),
          dim(kernel->attrs.grid_dim[2])};
  block = {dim(kernel->attrs.block_dim[0]), dim(kernel->attrs.block_dim[1]),
           dim(kernel->attrs.block_dim[2])};
  std::size_t smem = kernel->attrs.dynamic_smem_bytes
                         ? std::size_t(*ir::try_evaluate(kernel->attrs.dynamic_smem_bytes))
                         : 0;

  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> small(-3, 3); // small integers: exact sums
  std::vector<float> a(std::size_t(m) * k), b(std::size_t(k) * n);
  for (auto &x : a)
    x = float(small(rng));
  for (auto &x : b)
    x = float(small(rng));
  auto run = [&](const ir::Module &mod) {
    std::vector<float> c(std::size_t(m) * n, -1.0f);
    backend::emu::Program p(mod);
    p.launch("matmul_f32",
             {backend::KernelArg::pointer(a.data()), backend::KernelArg::pointer(b.data()),
              backend::KernelArg::pointer(c.data())},
             grid, block, smem);
    return c;
  };
  std::vector<float> want = run(lowered), got = run(back);
  CHECK(got == want);
  double sum = 0;
  for (float x : want)
    sum += std::abs(x);
  CHECK(sum > 0);               // not all zero
  for (int j = 0; j < n; ++j) { // against a host reference, one row
    double ref = 0;
    for (int kk = 0; kk < k; ++kk)
      ref += double(a[std::size_t(kk)]) * b[std::size_t(kk) * n + j];
    REQUIRE(got[std::size_t(j)] == doctest::Approx(ref));
  }
}

TEST_CASE("malformed bytes give a ValueError naming the input") {
  ir::Module lowered = ir::lower(tpl::matmul_f32_module(tpl::MatmulRows(8), 16, 8).ir());
  std::string bytes = ir::serialize_module(lowered);
  for (std::size_t cut : {std::size_t(0), std::size_t(3), bytes.size() / 2, bytes.size() - 1}) {
    try {
      ir::deserialize_module(std::string_view(bytes).substr(0, cut), "'kernels.bin'");
      FAIL("no error for ", cut, " of ", bytes.size(), " bytes");
    } catch (const ValueError &e) {
      CHECK(std::string(e.what()).find("'kernels.bin' is corrupt") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(ir::deserialize_module(bytes + "x"), ValueError); // bytes after the module
  std::string bad = bytes;
  bad[8] = char(0x7f); // the first function's name length: far past the end
  CHECK_THROWS_AS(ir::deserialize_module(bad), ValueError);
}
