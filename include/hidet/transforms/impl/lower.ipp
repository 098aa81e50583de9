// Definitions for hidet/transforms/lower.hpp.
#pragma once

#include "hidet/transforms/lower.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "hidet/ir/printer.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE std::vector<Pass> lowering_passes() {
  auto check = [](const Module &m) {
    verify(m);
    return m;
  };
  return {
      {"verify", check},
      {"instantiate_symbols", [](const Module &m) { return instantiate_symbols(m); }},
      {"simplify_index", [](const Module &m) { return simplify_index(m); }},
      {"simplify", [](const Module &m) { return simplify(m); }},
      {"verify", check},
  };
}

namespace detail {

/// The dump folder for `m` under HIDET_DUMP_IR, or empty when dumping is off.
HIDET_INLINE std::filesystem::path dump_dir(const Module &m) {
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

HIDET_INLINE void dump_ir(const std::filesystem::path &dir, int index, const std::string &pass,
                          const Module &m) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%02d_", index);
  auto path = dir / (prefix + pass + ".txt");
  std::ofstream out(path);
  if (!out) throw Error(str_cat("HIDET_DUMP_IR: cannot write ", path.string()));
  out << to_string(m);
}

} // namespace detail

HIDET_INLINE Module lower(const Module &m, const std::vector<Pass> &passes) {
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

#include "hidet/util/cold_end.hpp"
