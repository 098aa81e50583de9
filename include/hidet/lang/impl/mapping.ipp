// Definitions for hidet/lang/mapping.hpp.
#pragma once
#include "hidet/lang/mapping.hpp"

#include <functional>
#include <numeric>

#include "hidet/util/cold_begin.hpp"

namespace hidet::lang {

HIDET_INLINE TaskMapping TaskMapping::leaf(Kind kind, std::vector<std::int64_t> shape, bool col,
                                           SourceLoc loc) {
  const char *name = leaf_name(kind, col);
  if (shape.empty()) throw DSLError(str_cat(name, "() needs at least one dimension"), loc);
  for (auto d : shape)
    if (d <= 0) throw DSLError(str_cat(name, "(", join(shape), "): dimension ", d, " is not positive"), loc);
  auto n = std::make_shared<Node>();
  n->kind = kind, n->col = col, n->shape = shape, n->task_shape = shape, n->loc = loc;
  n->workers = kind == Kind::Spatial ? numel(shape) : 1;
  return TaskMapping(std::move(n));
}

HIDET_INLINE TaskMapping TaskMapping::compose(const TaskMapping &outer, const TaskMapping &inner,
                                              SourceLoc loc) {
  if (outer.rank() != inner.rank())
    throw DSLError(str_cat("task mapping composition ", outer.str(), " * ", inner.str(), ": ranks differ (",
                           outer.rank(), " vs ", inner.rank(), "); compose mappings of the same rank"),
                   loc.valid() ? loc : inner.n_->loc);
  auto n = std::make_shared<Node>();
  n->kind = Kind::Composed, n->outer = outer.n_, n->inner = inner.n_;
  n->loc = loc.valid() ? loc : outer.n_->loc;
  n->workers = outer.num_workers() * inner.num_workers();
  for (std::size_t k = 0; k < outer.rank(); ++k) n->task_shape.push_back(outer.task_shape()[k] * inner.task_shape()[k]);
  return TaskMapping(std::move(n));
}

HIDET_INLINE std::vector<std::vector<std::int64_t>> TaskMapping::tasks_of(std::int64_t w) const {
  if (w < 0 || w >= num_workers())
    throw ValueError(str_cat("task mapping ", str(), " has ", num_workers(), " workers; worker ", w,
                             " is out of range"));
  std::vector<std::vector<std::int64_t>> out;
  host_tasks(*n_, w, out);
  return out;
}

HIDET_INLINE std::string TaskMapping::grid_str() const {
  if (rank() != 2)
    throw DSLError(str_cat("grid_str(): task mapping ", str(), " has rank ", rank(), "; only rank-2 mappings print as a grid"));
  std::int64_t rows = task_shape()[0], cols = task_shape()[1];
  if (rows * cols > 64 * 64)
    throw DSLError(str_cat("grid_str(): task mapping ", str(), " has ", rows * cols, " tasks; at most 4096 print"));
  std::vector<std::int64_t> owner(std::size_t(rows * cols), -1);
  for (std::int64_t w = 0; w < num_workers(); ++w)
    for (auto &t : tasks_of(w)) owner[std::size_t(t[0] * cols + t[1])] = w;
  std::size_t width = std::to_string(num_workers() - 1).size();
  std::string out;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      auto s = std::to_string(owner[std::size_t(i * cols + j)]);
      out += std::string(j ? 1 : 0, ' ') + std::string(width - std::min(width, s.size()), ' ') + s;
    }
    out += '\n';
  }
  return out;
}

HIDET_INLINE std::int64_t TaskMapping::numel(const std::vector<std::int64_t> &s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t(1), std::multiplies<>());
}

HIDET_INLINE std::string TaskMapping::join(const std::vector<std::int64_t> &s) {
  std::string r;
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r;
}

HIDET_INLINE const char *TaskMapping::leaf_name(Kind k, bool col) {
  if (k == Kind::Spatial) return col ? "col_spatial" : "spatial";
  return col ? "col_repeat" : "repeat";
}

HIDET_INLINE std::string TaskMapping::node_str(const Node &n) {
  if (n.kind != Kind::Composed) return str_cat(leaf_name(n.kind, n.col), "(", join(n.shape), ")");
  return node_str(*n.outer) + " * " + node_str(*n.inner);
}

HIDET_INLINE std::vector<std::int64_t> TaskMapping::strides(const std::vector<std::int64_t> &shape,
                                                            bool col) {
  std::vector<std::int64_t> st(shape.size());
  std::int64_t acc = 1;
  if (col)
    for (std::size_t k = 0; k < shape.size(); ++k) st[k] = acc, acc *= shape[k];
  else
    for (std::size_t k = shape.size(); k-- > 0;) st[k] = acc, acc *= shape[k];
  return st;
}

HIDET_INLINE void TaskMapping::host_tasks(const Node &n, std::int64_t w,
                                          std::vector<std::vector<std::int64_t>> &out) {
  if (n.kind == Kind::Spatial) {
    auto st = strides(n.shape, n.col);
    std::vector<std::int64_t> t;
    for (std::size_t k = 0; k < n.shape.size(); ++k) t.push_back(w / st[k] % n.shape[k]);
    out.push_back(t);
  } else if (n.kind == Kind::Repeat) {
    auto st = strides(n.shape, n.col);
    for (std::int64_t i = 0; i < numel(n.shape); ++i) {
      std::vector<std::int64_t> t;
      for (std::size_t k = 0; k < n.shape.size(); ++k) t.push_back(i / st[k] % n.shape[k]);
      out.push_back(t);
    }
  } else {
    std::vector<std::vector<std::int64_t>> a, b;
    host_tasks(*n.outer, w / n.inner->workers, a);
    host_tasks(*n.inner, w % n.inner->workers, b);
    for (auto &ta : a)
      for (auto &tb : b) {
        std::vector<std::int64_t> t;
        for (std::size_t k = 0; k < ta.size(); ++k) t.push_back(ta[k] * n.inner->task_shape[k] + tb[k]);
        out.push_back(t);
      }
  }
}

HIDET_INLINE void TaskMapping::emit_node(FunctionBuilder &b, const Node &n, const ir::Expr &w,
                                         SourceLoc loc, const TaskFn &k) {
  using ir::int32;
  if (n.kind == Kind::Spatial) {
    auto st = strides(n.shape, n.col);
    std::vector<ir::Expr> t;
    for (std::size_t d = 0; d < n.shape.size(); ++d)
      t.push_back(ir::fold_mod(ir::fold_div(w, int32(st[d])), int32(n.shape[d])));
    k(t);
  } else if (n.kind == Kind::Repeat) {
    std::vector<ir::Expr> t(n.shape.size());
    // Loop order: row-major iterates dimension 0 outermost; column-major the last dimension.
    std::vector<std::size_t> order;
    for (std::size_t d = 0; d < n.shape.size(); ++d) order.push_back(n.col ? n.shape.size() - 1 - d : d);
    emit_repeat(b, n, order, 0, t, loc, k);
  } else {
    ir::Expr wo = ir::fold_div(w, int32(n.inner->workers)), wi = ir::fold_mod(w, int32(n.inner->workers));
    emit_node(b, *n.outer, wo, loc, [&](const std::vector<ir::Expr> &to) {
      emit_node(b, *n.inner, wi, loc, [&](const std::vector<ir::Expr> &ti) {
        std::vector<ir::Expr> t;
        for (std::size_t d = 0; d < to.size(); ++d)
          t.push_back(ir::fold_add_any(ir::fold_mul_any(to[d], int32(n.inner->task_shape[d])), ti[d]));
        k(t);
      });
    });
  }
}

HIDET_INLINE void TaskMapping::emit_repeat(FunctionBuilder &b, const Node &n,
                                           const std::vector<std::size_t> &order, std::size_t level,
                                           std::vector<ir::Expr> &t, SourceLoc loc,
                                           const TaskFn &k) {
  if (level == order.size()) return k(t);
  std::size_t d = order[level];
  if (n.shape[d] == 1) {
    t[d] = ir::int32(0);
    return emit_repeat(b, n, order, level + 1, t, loc, k);
  }
  static const char *hints[] = {"ri", "rj", "rk", "rl", "rm", "rn"};
  auto v = ir::make_var(ir::scalar_type(dtypes::i32), hints[d % 6], loc);
  t[d] = v;
  b.push_scope();
  emit_repeat(b, n, order, level + 1, t, loc, k);
  auto body = b.pop_scope();
  b.emit(ir::ForStmtNode::make(v, ir::int32(0), ir::int32(n.shape[d]), ir::int32(1), -1, body, loc));
}

HIDET_INLINE MappingOn TaskMapping::on(const Operand &worker, std::int64_t block_threads) const {
  detail::require_scalar(worker, "mapping.on");
  DataType d = ir::dtype_of(worker.node->type);
  if (!d.is_integer())
    throw DSLError(str_cat("task mapping ", str(), ": the worker must be an integer expression, got ", d), worker.loc);
  if (block_threads > 0 && block_threads != num_workers())
    throw DSLError(str_cat("task mapping ", str(), " has ", num_workers(), " workers but the block has ",
                           block_threads, " threads; use a mapping with ", block_threads,
                           " workers, or pass -1 to skip the check"),
                   worker.loc);
  return MappingOn(*this, detail::convert(worker.node, dtypes::i32, worker.loc), block_threads, worker.loc);
}

HIDET_INLINE TaskMapping auto_map(const std::vector<std::int64_t> &shape, std::int64_t workers,
                                  std::source_location loc_) {
  std::int64_t n = 1;
  for (auto d : shape) {
    if (d <= 0) throw DSLError(str_cat("auto_map: task dimension ", d, " is not positive"), loc_);
    n *= d;
  }
  if (shape.empty()) throw DSLError("auto_map: the task shape is empty", loc_);
  if (workers <= 0 || n % workers != 0)
    throw DSLError(str_cat("auto_map: the ", n, " tasks of the task shape cannot be split evenly over ", workers,
                           " workers; the number of tasks must be a multiple of the number of workers"),
                   loc_);
  std::vector<std::int64_t> sp(shape.size()), rp(shape.size());
  std::int64_t remain = workers;
  for (std::size_t k = shape.size(); k-- > 0;) {
    sp[k] = std::gcd(remain, shape[k]);
    rp[k] = shape[k] / sp[k];
    remain /= sp[k];
  }
  HIDET_ASSERT(remain == 1, "auto_map left ", remain, " workers unused");
  return TaskMapping::compose(TaskMapping::leaf(TaskMapping::Kind::Repeat, rp, false, loc_),
                              TaskMapping::leaf(TaskMapping::Kind::Spatial, sp, false, loc_), loc_);
}

namespace detail {
HIDET_INLINE FunctionBuilder &check_mapping_for(const MappingOn &m, std::size_t arity,
                                                SourceLoc loc) {
  auto &b = require_kernel("for_(mapping.on(...))", loc);
  const TaskMapping &tm = m.mapping;
  if (m.block_threads == 0) {
    auto bi = m.worker.as<ir::BuiltinNode>();
    std::int64_t bx;
    if (bi && bi->which == ir::BuiltinKind::ThreadIdxX && b.attrs().has_block && b.attrs().block_dim[0] &&
        ir::as_const_int(b.attrs().block_dim[0], bx) && bx != tm.num_workers())
      throw DSLError(str_cat("task mapping ", tm.str(), " has ", tm.num_workers(),
                             " workers but the block has ", bx, " threads (attrs.cuda.block_dim.x = ", bx,
                             ") and the worker is threadIdx.x; use a mapping with ", bx,
                             " workers, or pass -1 as on()'s second argument inside a guard"),
                     m.loc);
  }
  if (arity != tm.rank())
    throw DSLError(str_cat("for_ over task mapping ", tm.str(), ": its tasks have ", tm.rank(),
                           " coordinates but the body lambda takes ", arity, " parameters"),
                   loc);
  return b;
}
} // namespace detail

} // namespace hidet::lang

#include "hidet/util/cold_end.hpp"
