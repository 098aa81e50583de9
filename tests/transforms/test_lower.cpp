// Tests of the lowering pipeline: the passes run in order, and HIDET_DUMP_IR dumps each step.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <algorithm>

#include "hidet/ir/equal.hpp"
#include "hidet/ir/printer.hpp"
#include "hidet/transforms/lower.hpp"

using namespace hidet;
using namespace hidet::ir;

namespace {

Type i32t() { return scalar_type(dtypes::i32); }

/// kernel scale(a: f32[n]): if (true) a[threadIdx.x + 0] = a[threadIdx.x * 1] * 2.0f
Module build() {
  Var n = make_var(i32t(), "n");
  Var a = make_var(TensorTypeNode::make(dtypes::f32, {n}), "a");
  Expr tid = BuiltinNode::make(BuiltinKind::ThreadIdxX);
  Stmt store = BufferStoreStmtNode::make(
      a, {BinaryNode::make(BinaryOp::Add, tid, int32(0))},
      BinaryNode::make(BinaryOp::Mul,
                       TensorElementNode::make(a, {BinaryNode::make(BinaryOp::Mul, tid, int32(1))}),
                       ConstantNode::make_float(dtypes::f32, 2)));
  FuncAttrs attrs;
  attrs.grid_dim = {BinaryNode::make(BinaryOp::Add, n, int32(0)), {}, {}};
  attrs.block_dim = {int32(32), {}, {}};
  attrs.has_grid = attrs.has_block = true;
  return make_module({make_function("scale", {a}, IfStmtNode::make(boolean(true), store), void_type(),
                                    FuncKind::Kernel, attrs)});
}

std::string read(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("lower: the default pipeline closes and simplifies the kernel") {
  unsetenv("HIDET_DUMP_IR");
  Module in = build();
  Module out = lower(in);
  Function f = out->functions[0];
  CHECK(to_string(f) == "kernel scale(a: f32[n] global, n: i32)\n"
                        "    grid_dim=(n, 1, 1) block_dim=(32, 1, 1) {\n"
                        "  a[threadIdx.x] = a[threadIdx.x] * 2.0f\n"
                        "}\n");
  std::vector<std::string> names;
  for (auto &p : lowering_passes()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"verify", "instantiate_symbols", "simplify_index", "simplify", "verify"});
}

TEST_CASE("lower: HIDET_DUMP_IR writes the IR after each pass, in order") {
  auto root = std::filesystem::temp_directory_path() / ("hidet_dump_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  setenv("HIDET_DUMP_IR", root.c_str(), 1);
  Module out = lower(build());
  unsetenv("HIDET_DUMP_IR");
  auto dir = root / "scale";
  std::vector<std::string> files;
  for (auto &e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"00_input.txt", "01_verify.txt", "02_instantiate_symbols.txt",
                                          "03_simplify_index.txt", "04_simplify.txt", "05_verify.txt"});
  CHECK(read(dir / "00_input.txt") == to_string(build()));
  CHECK(read(dir / "02_instantiate_symbols.txt").find("n: i32)") != std::string::npos);
  CHECK(read(dir / "00_input.txt").find("n: i32)") == std::string::npos);
  CHECK(read(dir / "05_verify.txt") == to_string(out));
  std::filesystem::remove_all(root);
}

TEST_CASE("lower: custom pass lists run in order and user errors propagate") {
  std::vector<std::string> order;
  std::vector<Pass> passes = {
      {"first", [&](const Module &m) { order.push_back("first"); return m; }},
      {"second", [&](const Module &m) { order.push_back("second"); return simplify(m); }},
  };
  unsetenv("HIDET_DUMP_IR");
  lower(build(), passes);
  CHECK(order == std::vector<std::string>{"first", "second"});
  // verify runs first: a kernel without block dims fails before any other pass
  Module m = build();
  Function f = m->functions[0];
  FuncAttrs attrs = f->attrs;
  attrs.has_block = false;
  Module bad = make_module({make_function(f->name, f->params, f->body, f->ret_type, f->func_kind, attrs)});
  CHECK_THROWS_AS(lower(bad), DSLError);
}
