// Definitions for hidet/transforms/instantiate_symbols.hpp.
#pragma once

#include "hidet/transforms/instantiate_symbols.hpp"

#include <unordered_set>

#include "hidet/ir/functor.hpp"
#include "hidet/ir/printer.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE std::vector<Var> symbolic_dims(const Function &f) {
  struct Collector : IRVisitor {
    std::unordered_set<const VarNode *> seen;
    std::vector<Var> out;
    void visit_Var(const VarNode *v) override {
      if (seen.insert(v).second) out.push_back(Var(v));
    }
  } c;
  for (auto &p : f->params) c.seen.insert(p.get());
  for (auto &p : f->params) c.visit_type(p->type);
  return std::move(c.out);
}

HIDET_INLINE bool type_mentions(const Type &t, const VarNode *v) {
  struct Finder : IRVisitor {
    const VarNode *target;
    bool found = false;
    void visit_Var(const VarNode *x) override { found |= x == target; }
  } f;
  f.target = v;
  f.visit_type(t);
  return f.found;
}

HIDET_INLINE std::vector<std::pair<Var, SymbolSource>> symbol_sources(const Function &kernel) {
  std::vector<std::pair<Var, SymbolSource>> out;
  for (auto &sym : symbolic_dims(kernel)) {
    bool found = false;
    SourceLoc where = kernel->loc;
    bool where_set = false;
    for (std::size_t p = 0; p < kernel->params.size() && !found; ++p) {
      auto tt = kernel->params[p]->type.as<TensorTypeNode>();
      if (!tt) continue;
      for (std::size_t d = 0; d < tt->shape.size(); ++d) {
        if (tt->shape[d].same_as(Expr(sym))) {
          out.push_back({sym, SymbolSource{p, d}});
          found = true;
          break;
        }
      }
      if (!where_set && type_mentions(kernel->params[p]->type, sym.get())) {
        if (kernel->params[p]->loc.valid()) where = kernel->params[p]->loc;
        where_set = true;
      }
    }
    if (!found) {
      throw DSLError(str_cat("symbolic dim ", sym->hint, " must appear alone as a dimension of some ",
                             "tensor parameter of kernel '", kernel->name,
                             "' (its value is read from that argument's shape); add a parameter ",
                             "with it as a dimension or pass it as a scalar parameter"),
                     where);
    }
  }
  return out;
}

HIDET_INLINE Function instantiate_symbols(const Function &f) {
  if (f->func_kind != FuncKind::Kernel) return f;
  auto sources = symbol_sources(f); // validates that every symbol can be filled in
  if (sources.empty()) return f;
  std::vector<Var> params = f->params;
  for (auto &[sym, src] : sources) {
    auto st = sym->type.as<ScalarTypeNode>();
    if (!st || !st->dtype.is_integer())
      throw DSLError(str_cat("symbolic dim ", sym->hint, " of kernel '", f->name,
                             "' has type ", to_string(sym->type), "; it must be an integer"),
                     sym->loc.valid() ? sym->loc : f->loc);
    params.push_back(sym);
  }
  return make_function(f->name, std::move(params), f->body, f->ret_type, f->func_kind, f->attrs,
                       f->loc);
}

HIDET_INLINE Module instantiate_symbols(const Module &m) {
  std::vector<Function> fs;
  bool changed = false;
  for (auto &f : m->functions) {
    fs.push_back(instantiate_symbols(f));
    changed |= !fs.back().same_as(f);
  }
  return changed ? make_module(std::move(fs)) : m;
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
