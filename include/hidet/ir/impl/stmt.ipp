// Definitions for hidet/ir/stmt.hpp.
#pragma once
#include "hidet/ir/stmt.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE Stmt seq(std::vector<Stmt> stmts, SourceLoc l) {
  std::vector<Stmt> flat;
  for (auto &s : stmts) {
    if (!s) continue;
    if (auto q = s.as<SeqStmtNode>()) flat.insert(flat.end(), q->seq.begin(), q->seq.end());
    else flat.push_back(s);
  }
  if (flat.size() == 1) return flat[0];
  return SeqStmtNode::make(std::move(flat), l);
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
