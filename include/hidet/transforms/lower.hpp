// The lowering pipeline: one list of passes, run in order. To add a pass, add an entry to
// lowering_passes() (or pass your own list to lower()).
//
// With the environment variable HIDET_DUMP_IR=<dir>, the IR is written after every pass to
// <dir>/<name of the module's first kernel>/<NN>_<pass>.txt, with 00_input.txt holding the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "hidet/ir/printer.hpp"
#include "hidet/transforms/instantiate_symbols.hpp"
#include "hidet/transforms/simplify.hpp"
#include "hidet/transforms/verify.hpp"

namespace hidet::ir {

/// One step of lowering: a name (used in dumps) and a module-to-module function.
struct Pass {
  std::string name;
  std::function<Module(const Module &)> run;
};

/// The default pipeline, in order.
inline std::vector<Pass> lowering_passes() {
  auto check = [](const Module &m) {
    verify(m);
    return m;
  };
  return {
      {"verify", check},
      {"instantiate_symbols", [](const Module &m) { return instantiate_symbols(m); }},
      {"simplify", [](const Module &m) { return simplify(m); }},
      {"verify", check},
  };
}

namespace detail {

/// The dump folder for `m` under HIDET_DUMP_IR, or empty when dumping is off.
inline std::filesystem::path dump_dir(const Module &m) {
  const char *root = std::getenv("HIDET_DUMP_IR");
  if (!root || !*root) return {};
  std::string name = "module";
  for (auto &f : m->functions)
    if (f->func_kind == FuncKind::Kernel) {
      name = f->name;
      break;
    }
  if (name == "module" && !m->functions.empty()) name = m->functions[0]->name;
  return std::filesystem::path(root) / name;
}

inline void dump_ir(const std::filesystem::path &dir, int index, const std::string &pass,
                    const Module &m) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%02d_", index);
  auto path = dir / (prefix + pass + ".txt");
  std::ofstream out(path);
  if (!out) throw Error(str_cat("HIDET_DUMP_IR: cannot write ", path.string()));
  out << to_string(m);
}

} // namespace detail

/// Runs `passes` (the default pipeline unless given) over `m` and returns the lowered module.
inline Module lower(const Module &m, const std::vector<Pass> &passes = lowering_passes()) {
  auto dir = detail::dump_dir(m);
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(str_cat("HIDET_DUMP_IR: cannot create ", dir.string(), ": ", ec.message()));
    detail::dump_ir(dir, 0, "input", m);
  }
  Module cur = m;
  for (std::size_t i = 0; i < passes.size(); ++i) {
    cur = passes[i].run(cur);
    if (!dir.empty()) detail::dump_ir(dir, int(i + 1), passes[i].name, cur);
  }
  return cur;
}

} // namespace hidet::ir
