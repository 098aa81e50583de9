// Definitions for hidet/lang/builder.hpp.
#pragma once
#include "hidet/lang/builder.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

HIDET_INLINE ir::Stmt FunctionBuilder::pop_scope() {
  HIDET_ASSERT(scopes_.size() > 1, "scope underflow");
  auto body = ir::seq(std::move(scopes_.back()));
  scopes_.pop_back();
  if (!body) body = ir::SeqStmtNode::make({});
  return body;
}

HIDET_INLINE ir::Stmt FunctionBuilder::finish() {
  HIDET_ASSERT(scopes_.size() == 1, "unbalanced scopes");
  auto body = ir::seq(std::move(scopes_.back()));
  scopes_.back().clear();
  if (!body) body = ir::SeqStmtNode::make({});
  return body;
}

namespace detail {
HIDET_INLINE FunctionBuilder *&current_builder_slot() {
  thread_local FunctionBuilder *b = nullptr;
  return b;
}
} // namespace detail

HIDET_INLINE FunctionBuilder &require_builder(const char *what, SourceLoc loc) {
  auto *b = current_builder();
  if (!b)
    throw DSLError(str_cat(what, " can only be used inside the body of a kernel or device function "
                                 "(inside the lambda passed to mod.kernel(...) or mod.device_function(...))"),
                   loc);
  return *b;
}

HIDET_INLINE FunctionBuilder &require_kernel(const char *what, SourceLoc loc) {
  auto &b = require_builder(what, loc);
  if (b.kind() != ir::FuncKind::Kernel && b.kind() != ir::FuncKind::Device)
    throw DSLError(str_cat(what, " can only be used in device code"), loc);
  return b;
}

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
