// Task mappings: which worker (thread, lane, warp) does which task, as a small algebra.
//
// Laws (tested over the whole domain in tests/lang/test_mapping.cpp). A mapping has a task shape
// T and a number of workers W; tasks_of(w) lists the tasks of worker w in execution order.
//  * spatial(d0..dn):     W = prod d, one task per worker: tasks_of(w) = [unravel_row_major(w, d)]
//                         (a bijection between [0, W) and the tasks).
//  * col_spatial(d0..dn): the same with a column-major unravel (dimension 0 varies fastest).
//  * repeat(d0..dn):      W = 1, tasks_of(0) = every task in row-major order.
//  * col_repeat(d0..dn):  W = 1, every task in column-major order.
//  * a * b (same rank):   T = T_a .* T_b, W = W_a * W_b, and for w in [0, W):
//                         tasks_of(w) = [ta * T_b + tb for ta in a.tasks_of(w / W_b)
//                                                     for tb in b.tasks_of(w mod W_b)].
//                         Composition is associative. Every task of a composition of spatial and
//                         repeat mappings belongs to exactly one worker.
//  * auto_map(T, W):      Hidet's heuristic: from the last dimension to the first, spatial over
//                         gcd(remaining workers, T_k) workers and repeat the rest:
//                         repeat(T / S) * spatial(S). Needs prod T to be a multiple of W.
//
// In a kernel, for_(m.on(worker), [&](Expr i, Expr j) { ... }) runs the body once per task of
// `worker` (any integer expression): spatial parts become index arithmetic on the worker, repeat
// parts fully unrolled for-loops (ForStmt with unroll = -1; extent-1 dims become the constant 0).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "hidet/ir/layouts.hpp"
#include "hidet/lang/control.hpp"
#include "hidet/lang/module.hpp"

namespace hidet::lang {

class MappingOn;

/// A task mapping (an immutable value; copies share the tree).
class TaskMapping {
public:
  enum class Kind : std::uint8_t { Spatial, Repeat, Composed };

  /// spatial/repeat over `shape`; col = column-major order.
  static TaskMapping leaf(Kind kind, std::vector<std::int64_t> shape, bool col, SourceLoc loc) {
    const char *name = leaf_name(kind, col);
    if (shape.empty()) throw DSLError(str_cat(name, "() needs at least one dimension"), loc);
    for (auto d : shape)
      if (d <= 0) throw DSLError(str_cat(name, "(", join(shape), "): dimension ", d, " is not positive"), loc);
    auto n = std::make_shared<Node>();
    n->kind = kind, n->col = col, n->shape = shape, n->task_shape = shape, n->loc = loc;
    n->workers = kind == Kind::Spatial ? numel(shape) : 1;
    return TaskMapping(std::move(n));
  }
  /// outer * inner; the ranks must agree.
  static TaskMapping compose(const TaskMapping &outer, const TaskMapping &inner, SourceLoc loc = {}) {
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

  /// The number of workers the mapping distributes tasks over.
  std::int64_t num_workers() const { return n_->workers; }
  /// The shape of the task grid.
  const std::vector<std::int64_t> &task_shape() const { return n_->task_shape; }
  std::size_t rank() const { return n_->task_shape.size(); }
  Kind kind() const { return n_->kind; }

  /// The tasks of worker `w` in execution order (host side; w in [0, num_workers)).
  std::vector<std::vector<std::int64_t>> tasks_of(std::int64_t w) const {
    if (w < 0 || w >= num_workers())
      throw ValueError(str_cat("task mapping ", str(), " has ", num_workers(), " workers; worker ", w,
                               " is out of range"));
    std::vector<std::vector<std::int64_t>> out;
    host_tasks(*n_, w, out);
    return out;
  }

  /// "spatial(4, 8) * repeat(2, 2)".
  std::string str() const { return node_str(*n_); }

  /// For a rank-2 mapping: the task grid with the id of the worker that runs each task, e.g.
  /// for spatial(2, 4) * repeat(1, 2): "0 0 1 1 2 2 3 3\n4 4 5 5 6 6 7 7\n".
  std::string grid_str() const {
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

  /// Iterates the tasks of `worker` in a kernel: for_(m.on(threadIdx.x), [&](Expr i, Expr j) {...}).
  /// `block_threads`: > 0 checks that the mapping has exactly that many workers; 0 (default)
  /// checks against attrs.cuda.block_dim.x when the worker is threadIdx.x and the block size is a
  /// constant; -1 disables the check (e.g. inside an if_ that keeps only some threads).
  MappingOn on(const Operand &worker, std::int64_t block_threads = 0) const;

  /// Chain API: m.spatial(2, 16) == m * spatial(2, 16); m.repeat(...) likewise.
  template <std::integral... D> TaskMapping spatial(D... d) const {
    return compose(*this, leaf(Kind::Spatial, {std::int64_t(d)...}, false, {}));
  }
  template <std::integral... D> TaskMapping repeat(D... d) const {
    return compose(*this, leaf(Kind::Repeat, {std::int64_t(d)...}, false, {}));
  }

  /// Emits the iteration of this mapping for worker `w` (an i32 IR expression), calling
  /// `body(task)` once per task with the task coordinates (used by for_; public for reuse).
  template <class F> void emit(FunctionBuilder &b, const ir::Expr &w, SourceLoc loc, F &&body) const {
    emit_node(b, *n_, w, loc, [&](const std::vector<ir::Expr> &t) { body(t); });
  }

private:
  struct Node {
    Kind kind = Kind::Spatial;
    bool col = false;
    std::vector<std::int64_t> shape;      ///< leaves: the dims
    std::shared_ptr<const Node> outer, inner;
    std::int64_t workers = 1;
    std::vector<std::int64_t> task_shape;
    SourceLoc loc;
  };
  explicit TaskMapping(std::shared_ptr<const Node> n) : n_(std::move(n)) {}

  static std::int64_t numel(const std::vector<std::int64_t> &s) {
    return std::accumulate(s.begin(), s.end(), std::int64_t(1), std::multiplies<>());
  }
  static std::string join(const std::vector<std::int64_t> &s) {
    std::string r;
    for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r;
  }
  static const char *leaf_name(Kind k, bool col) {
    if (k == Kind::Spatial) return col ? "col_spatial" : "spatial";
    return col ? "col_repeat" : "repeat";
  }
  static std::string node_str(const Node &n) {
    if (n.kind != Kind::Composed) return str_cat(leaf_name(n.kind, n.col), "(", join(n.shape), ")");
    return node_str(*n.outer) + " * " + node_str(*n.inner);
  }
  /// Strides of a row-major (or column-major) unravel of `shape`.
  static std::vector<std::int64_t> strides(const std::vector<std::int64_t> &shape, bool col) {
    std::vector<std::int64_t> st(shape.size());
    std::int64_t acc = 1;
    if (col)
      for (std::size_t k = 0; k < shape.size(); ++k) st[k] = acc, acc *= shape[k];
    else
      for (std::size_t k = shape.size(); k-- > 0;) st[k] = acc, acc *= shape[k];
    return st;
  }
  static void host_tasks(const Node &n, std::int64_t w, std::vector<std::vector<std::int64_t>> &out) {
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

  /// The continuation receiving one task's coordinates (type-erased: emit_node recurses).
  using TaskFn = std::function<void(const std::vector<ir::Expr> &)>;
  static void emit_node(FunctionBuilder &b, const Node &n, const ir::Expr &w, SourceLoc loc, const TaskFn &k) {
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
  static void emit_repeat(FunctionBuilder &b, const Node &n, const std::vector<std::size_t> &order, std::size_t level,
                          std::vector<ir::Expr> &t, SourceLoc loc, const TaskFn &k) {
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

  std::shared_ptr<const Node> n_;
};

/// A mapping bound to a worker expression, consumed by for_.
class MappingOn {
public:
  MappingOn(TaskMapping m, ir::Expr worker, std::int64_t block_threads, SourceLoc loc)
      : mapping(std::move(m)), worker(std::move(worker)), block_threads(block_threads), loc(loc) {}
  TaskMapping mapping;
  ir::Expr worker;            ///< i32
  std::int64_t block_threads; ///< see TaskMapping::on
  SourceLoc loc;              ///< where on() was called
};

inline MappingOn TaskMapping::on(const Operand &worker, std::int64_t block_threads) const {
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

/// spatial(d0, d1, ...): one task per worker, workers numbered row-major over the tasks.
template <std::integral... D> TaskMapping spatial(D... d) {
  return TaskMapping::leaf(TaskMapping::Kind::Spatial, {std::int64_t(d)...}, false, {});
}
/// col_spatial(d0, d1, ...): one task per worker, workers numbered column-major.
template <std::integral... D> TaskMapping col_spatial(D... d) {
  return TaskMapping::leaf(TaskMapping::Kind::Spatial, {std::int64_t(d)...}, true, {});
}
/// repeat(d0, d1, ...): one worker runs every task, in row-major order.
template <std::integral... D> TaskMapping repeat(D... d) {
  return TaskMapping::leaf(TaskMapping::Kind::Repeat, {std::int64_t(d)...}, false, {});
}
/// col_repeat(d0, d1, ...): one worker runs every task, in column-major order.
template <std::integral... D> TaskMapping col_repeat(D... d) {
  return TaskMapping::leaf(TaskMapping::Kind::Repeat, {std::int64_t(d)...}, true, {});
}
/// Vector forms, with the caller's location for errors.
inline TaskMapping spatial(const std::vector<std::int64_t> &shape, HIDET_LOC_PARAM) {
  return TaskMapping::leaf(TaskMapping::Kind::Spatial, shape, false, loc_);
}
inline TaskMapping repeat(const std::vector<std::int64_t> &shape, HIDET_LOC_PARAM) {
  return TaskMapping::leaf(TaskMapping::Kind::Repeat, shape, false, loc_);
}
inline TaskMapping col_spatial(const std::vector<std::int64_t> &shape, HIDET_LOC_PARAM) {
  return TaskMapping::leaf(TaskMapping::Kind::Spatial, shape, true, loc_);
}
inline TaskMapping col_repeat(const std::vector<std::int64_t> &shape, HIDET_LOC_PARAM) {
  return TaskMapping::leaf(TaskMapping::Kind::Repeat, shape, true, loc_);
}

/// outer * inner; see the composition law at the top of this file.
inline TaskMapping operator*(const TaskMapping &outer, const TaskMapping &inner) {
  return TaskMapping::compose(outer, inner);
}

/// Hidet's auto_map: repeat(T / S) * spatial(S) with S chosen from the last dimension backwards
/// as gcd(remaining workers, T_k). prod(shape) must be a multiple of `workers`.
inline TaskMapping auto_map(const std::vector<std::int64_t> &shape, std::int64_t workers, HIDET_LOC_PARAM) {
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

/// for each task of the worker: for_(m.on(threadIdx.x), [&](Expr i, Expr j) { ... }). The lambda
/// takes one Expr per dimension of the task shape.
template <class F> void for_(const MappingOn &m, F &&body, HIDET_LOC_PARAM) {
  auto &b = require_kernel("for_(mapping.on(...))", loc_);
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
  constexpr std::size_t arity = detail::lambda_arity<std::decay_t<F>>::value;
  if (arity != tm.rank())
    throw DSLError(str_cat("for_ over task mapping ", tm.str(), ": its tasks have ", tm.rank(),
                           " coordinates but the body lambda takes ", arity, " parameters"),
                   loc_);
  // break_/continue_ directly in the body would leave an unrolled repeat loop: forbid them.
  int saved_depth = b.loop_depth;
  b.loop_depth = 0;
  try {
    tm.emit(b, m.worker, loc_, [&](const std::vector<ir::Expr> &t) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        body(Expr(t[I])...);
      }(std::make_index_sequence<arity>{});
    });
  } catch (...) {
    b.loop_depth = saved_depth;
    throw;
  }
  b.loop_depth = saved_depth;
}

// Layouts are part of the Hidet Script vocabulary.
using ir::column_major;
using ir::local;
using ir::row_major;
using ir::strided;
using ir::swizzle;

} // namespace hidet::lang
