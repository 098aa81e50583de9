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
#include <memory>
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
  static TaskMapping leaf(Kind kind, std::vector<std::int64_t> shape, bool col, SourceLoc loc);
  /// outer * inner; the ranks must agree.
  static TaskMapping compose(const TaskMapping &outer, const TaskMapping &inner,
                             SourceLoc loc = {});

  /// The number of workers the mapping distributes tasks over.
  std::int64_t num_workers() const { return n_->workers; }
  /// The shape of the task grid.
  const std::vector<std::int64_t> &task_shape() const { return n_->task_shape; }
  std::size_t rank() const { return n_->task_shape.size(); }
  Kind kind() const { return n_->kind; }

  /// The tasks of worker `w` in execution order (host side; w in [0, num_workers)).
  std::vector<std::vector<std::int64_t>> tasks_of(std::int64_t w) const;

  /// "spatial(4, 8) * repeat(2, 2)".
  std::string str() const { return node_str(*n_); }

  /// For a rank-2 mapping: the task grid with the id of the worker that runs each task, e.g.
  /// for spatial(2, 4) * repeat(1, 2): "0 0 1 1 2 2 3 3\n4 4 5 5 6 6 7 7\n".
  std::string grid_str() const;

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

  static std::int64_t numel(const std::vector<std::int64_t> &s);
  static std::string join(const std::vector<std::int64_t> &s);
  static const char *leaf_name(Kind k, bool col);
  static std::string node_str(const Node &n);
  /// Strides of a row-major (or column-major) unravel of `shape`.
  static std::vector<std::int64_t> strides(const std::vector<std::int64_t> &shape, bool col);
  static void host_tasks(const Node &n, std::int64_t w,
                         std::vector<std::vector<std::int64_t>> &out);

  /// The continuation receiving one task's coordinates (type-erased: emit_node recurses): a
  /// reference to a callable that outlives the call it is passed to.
  class TaskFn {
  public:
    template <class F>
    TaskFn(const F &f)
        : fn_(&f), call_([](const void *fn, const std::vector<ir::Expr> &t) {
            (*static_cast<const F *>(fn))(t);
          }) {}
    void operator()(const std::vector<ir::Expr> &t) const { call_(fn_, t); }

  private:
    const void *fn_;
    void (*call_)(const void *, const std::vector<ir::Expr> &);
  };
  static void emit_node(FunctionBuilder &b, const Node &n, const ir::Expr &w, SourceLoc loc,
                        const TaskFn &k);
  static void emit_repeat(FunctionBuilder &b, const Node &n, const std::vector<std::size_t> &order, std::size_t level,
                          std::vector<ir::Expr> &t, SourceLoc loc, const TaskFn &k);

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
TaskMapping auto_map(const std::vector<std::int64_t> &shape, std::int64_t workers, HIDET_LOC_PARAM);

/// for each task of the worker: for_(m.on(threadIdx.x), [&](Expr i, Expr j) { ... }). The lambda
/// takes one Expr per dimension of the task shape.
namespace detail {
/// The checks of a for_ over a task mapping (device code, block size, the body's arity);
/// returns the active builder.
FunctionBuilder &check_mapping_for(const MappingOn &m, std::size_t arity, SourceLoc loc);
} // namespace detail

template <class F> void for_(const MappingOn &m, F &&body, HIDET_LOC_PARAM) {
  constexpr std::size_t arity = detail::lambda_arity<std::decay_t<F>>::value;
  auto &b = detail::check_mapping_for(m, arity, loc_);
  const TaskMapping &tm = m.mapping;
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

#if HIDET_HEADER_ONLY
#include "hidet/lang/impl/mapping.ipp"
#endif
