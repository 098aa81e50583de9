// Law tests for the task mappings of hidet/lang/mapping.hpp (over every worker and task), their
// printing, their errors, and the IR that for_(mapping.on(w), ...) emits, checked by running the
// emitted loops with a small interpreter and comparing with tasks_of.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "hidet/lang/mapping.hpp"

using namespace hidet;
using namespace hidet::lang;
using Task = std::vector<std::int64_t>;
using TaskList = std::vector<Task>;

namespace {

std::int64_t numel(const Task &s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
/// Reference unravel of a linear index (row-major: last dim fastest; col: first dim fastest).
Task unravel(std::int64_t i, const Task &shape, bool col) {
  Task t(shape.size());
  if (col)
    for (std::size_t k = 0; k < shape.size(); ++k) t[k] = i % shape[k], i /= shape[k];
  else
    for (std::size_t k = shape.size(); k-- > 0;) t[k] = i % shape[k], i /= shape[k];
  return t;
}
/// Every task of the task grid is owned by exactly one worker.
void check_partition(const TaskMapping &m) {
  std::map<Task, int> owners;
  for (std::int64_t w = 0; w < m.num_workers(); ++w)
    for (auto &t : m.tasks_of(w)) {
      REQUIRE(t.size() == m.rank());
      for (std::size_t k = 0; k < t.size(); ++k) {
        CHECK(t[k] >= 0);
        CHECK(t[k] < m.task_shape()[k]);
      }
      owners[t]++;
    }
  CHECK(std::int64_t(owners.size()) == numel(m.task_shape()));
  for (auto &[t, n] : owners) CHECK(n == 1);
}

} // namespace

TEST_CASE("spatial: a bijection between workers and tasks, row-major or column-major") {
  for (Task s : {Task{5}, Task{4, 8}, Task{3, 5}, Task{1, 6}, Task{2, 3, 4}}) {
    for (bool col : {false, true}) {
      auto m = col ? col_spatial(s) : spatial(s);
      CHECK(m.num_workers() == numel(s));
      CHECK(m.task_shape() == s);
      std::set<Task> seen;
      for (std::int64_t w = 0; w < m.num_workers(); ++w) {
        auto ts = m.tasks_of(w);
        REQUIRE(ts.size() == 1);
        CHECK(ts[0] == unravel(w, s, col));
        seen.insert(ts[0]);
      }
      CHECK(std::int64_t(seen.size()) == numel(s));
    }
  }
  CHECK(col_spatial(2, 3).tasks_of(1) == TaskList{{1, 0}});
  CHECK(spatial(2, 3).tasks_of(1) == TaskList{{0, 1}});
}

TEST_CASE("repeat: one worker runs every task in order") {
  for (Task s : {Task{5}, Task{2, 3}, Task{2, 1, 3}}) {
    auto r = repeat(s);
    auto c = col_repeat(s);
    CHECK(r.num_workers() == 1);
    CHECK(c.num_workers() == 1);
    auto tr = r.tasks_of(0), tc = c.tasks_of(0);
    REQUIRE(std::int64_t(tr.size()) == numel(s));
    REQUIRE(std::int64_t(tc.size()) == numel(s));
    for (std::int64_t i = 0; i < numel(s); ++i) {
      CHECK(tr[std::size_t(i)] == unravel(i, s, false));
      CHECK(tc[std::size_t(i)] == unravel(i, s, true));
    }
  }
  CHECK(col_repeat(2, 2).tasks_of(0) == TaskList{{0, 0}, {1, 0}, {0, 1}, {1, 1}});
}

TEST_CASE("composition: tasks_of(w) = [ta * inner_shape + tb for ta in outer(w / W_b) for tb in inner(w % W_b)]") {
  std::vector<std::pair<TaskMapping, TaskMapping>> cases = {
      {spatial(2, 4), repeat(1, 2)}, {repeat(2, 2), spatial(4, 8)}, {spatial(4, 8), repeat(2, 2)},
      {col_spatial(2, 3), spatial(3, 2)}, {col_repeat(2, 3), col_spatial(2, 2)}, {spatial(2, 2, 2), repeat(1, 2, 3)},
  };
  for (auto &[a, b] : cases) {
    CAPTURE(a.str());
    CAPTURE(b.str());
    auto m = a * b;
    CHECK(m.num_workers() == a.num_workers() * b.num_workers());
    for (std::size_t k = 0; k < m.rank(); ++k) CHECK(m.task_shape()[k] == a.task_shape()[k] * b.task_shape()[k]);
    for (std::int64_t w = 0; w < m.num_workers(); ++w) {
      TaskList expect;
      for (auto &ta : a.tasks_of(w / b.num_workers()))
        for (auto &tb : b.tasks_of(w % b.num_workers())) {
          Task t;
          for (std::size_t k = 0; k < ta.size(); ++k) t.push_back(ta[k] * b.task_shape()[k] + tb[k]);
          expect.push_back(t);
        }
      CHECK(m.tasks_of(w) == expect);
    }
    check_partition(m);
  }
}

TEST_CASE("composition is associative") {
  std::vector<std::array<TaskMapping, 3>> cases = {
      {spatial(2, 2), repeat(2, 1), spatial(2, 4)},
      {repeat(2, 3), col_spatial(2, 2), col_repeat(1, 2)},
      {spatial(4, 2), spatial(2, 2), repeat(2, 2)},
  };
  for (auto &[a, b, c] : cases) {
    auto l = (a * b) * c, r = a * (b * c);
    CHECK(l.num_workers() == r.num_workers());
    CHECK(l.task_shape() == r.task_shape());
    CHECK(l.str() == r.str());
    for (std::int64_t w = 0; w < l.num_workers(); ++w) CHECK(l.tasks_of(w) == r.tasks_of(w));
    check_partition(l);
  }
}

TEST_CASE("chain API and auto_map follow Hidet") {
  auto chain = spatial(4, 2).repeat(2, 2).spatial(2, 16).repeat(4, 4);
  CHECK(chain.str() == "spatial(4, 2) * repeat(2, 2) * spatial(2, 16) * repeat(4, 4)");
  CHECK(chain.num_workers() == 256);
  CHECK(chain.task_shape() == Task{64, 256});
  CHECK(auto_map({8, 32}, 64).str() == "repeat(4, 1) * spatial(2, 32)");
  CHECK(auto_map({8, 64}, 64).str() == "repeat(8, 1) * spatial(1, 64)");
  CHECK(auto_map({8, 96}, 64).str() == "repeat(4, 3) * spatial(2, 32)");
  CHECK(auto_map({8, 128}, 64).str() == "repeat(8, 2) * spatial(1, 64)");
  CHECK(auto_map({8, 16, 24}, 32).str() == "repeat(8, 4, 3) * spatial(1, 4, 8)");
  for (auto [shape, w] : std::vector<std::pair<Task, std::int64_t>>{{{8, 32}, 64}, {{6, 10}, 4}, {{12, 6}, 8}, {{3, 4}, 12}}) {
    auto m = auto_map(shape, w);
    CHECK(m.num_workers() == w);
    CHECK(m.task_shape() == shape);
    check_partition(m);
  }
  int line = 0;
  try {
    line = __LINE__, (void)auto_map({8, 41}, 64);
    FAIL("expected a DSLError");
  } catch (const DSLError &e) {
    CHECK(std::string(e.what()).find("328 tasks") != std::string::npos);
    CHECK(std::string(e.what()).find("64 workers") != std::string::npos);
    CHECK(e.loc().line == unsigned(line));
  }
}

TEST_CASE("printing: str() and the ASCII grid of worker ids") {
  auto m = spatial(2, 4) * repeat(1, 2);
  CHECK(m.str() == "spatial(2, 4) * repeat(1, 2)");
  CHECK(m.grid_str() == "0 0 1 1 2 2 3 3\n"
                        "4 4 5 5 6 6 7 7\n");
  CHECK(spatial(4, 4).grid_str() == " 0  1  2  3\n"
                                    " 4  5  6  7\n"
                                    " 8  9 10 11\n"
                                    "12 13 14 15\n");
  CHECK((repeat(2, 1) * col_spatial(2, 2)).grid_str() == "0 2\n"
                                                         "1 3\n"
                                                         "0 2\n"
                                                         "1 3\n");
  CHECK(col_repeat(3).str() == "col_repeat(3)");
  CHECK_THROWS_WITH_AS(spatial(2, 2, 2).grid_str(), doctest::Contains("only rank-2 mappings"), DSLError);
}

TEST_CASE("bad mappings are user errors") {
  CHECK_THROWS_WITH_AS(spatial(2, 4) * repeat(2), doctest::Contains("ranks differ (2 vs 1)"), DSLError);
  int line = 0;
  try {
    line = __LINE__, (void)spatial(Task{4, 0});
    FAIL("expected a DSLError");
  } catch (const DSLError &e) {
    CHECK(std::string(e.what()).find("spatial(4, 0): dimension 0 is not positive") != std::string::npos);
    CHECK(e.loc().line == unsigned(line));
  }
  CHECK_THROWS_WITH_AS(spatial(4, 8).tasks_of(32), doctest::Contains("worker 32 is out of range"), ValueError);
}

// ---- kernels ---------------------------------------------------------------------------------

namespace {

/// A tiny interpreter for the statements for_(mapping.on(w)) emits: runs `body` for every worker
/// value and records the index lists of the stores to `out`, in order.
struct StoreRecorder {
  const ir::VarNode *worker = nullptr;
  std::int64_t worker_value = 0;
  ir::VarBindings env;
  std::vector<Task> stores;
  int fors = 0, unrolled_fors = 0;

  void run(const ir::Stmt &s) {
    if (auto q = s.as<ir::SeqStmtNode>()) {
      for (auto &x : q->seq) run(x);
    } else if (auto d = s.as<ir::DeclareStmtNode>()) {
      if (d->var.get() == worker) env[d->var.get()] = double(worker_value);
    } else if (auto f = s.as<ir::ForStmtNode>()) {
      fors++;
      if (f->unroll == -1) unrolled_fors++;
      auto lo = ir::try_evaluate(f->start, env), hi = ir::try_evaluate(f->stop, env);
      REQUIRE(lo);
      REQUIRE(hi);
      for (auto i = std::int64_t(*lo); i < std::int64_t(*hi); ++i) {
        env[f->var.get()] = double(i);
        run(f->body);
      }
    } else if (auto st = s.as<ir::BufferStoreStmtNode>()) {
      Task t;
      for (auto &i : st->indices) {
        auto v = ir::try_evaluate(i, env);
        REQUIRE(v);
        t.push_back(std::int64_t(*v));
      }
      stores.push_back(t);
    } else {
      FAIL("unexpected statement");
    }
  }
};

/// Builds a kernel whose threads store through `m` and checks each worker's stores equal tasks_of.
void check_kernel_matches_tasks(const TaskMapping &m, int expect_fors) {
  const ir::VarNode *worker = nullptr;
  auto mod = script_module("mapping_test");
  mod.kernel("k", {f32[m.task_shape()[0]][m.task_shape()[1]]}, [&](Tensor out) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = int(m.num_workers());
    Var w = threadIdx.x;
    worker = w.var().get();
    for_(m.on(w), [&](Expr i, Expr j) { out[i][j] = 1.0f; });
  });
  auto f = mod.ir()->lookup("k");
  for (std::int64_t w = 0; w < m.num_workers(); ++w) {
    StoreRecorder rec;
    rec.worker = worker;
    rec.worker_value = w;
    rec.run(f->body);
    CHECK(rec.stores == m.tasks_of(w));
    CHECK(rec.fors == expect_fors);
    CHECK(rec.unrolled_fors == rec.fors);
  }
}

} // namespace

TEST_CASE("for_(mapping.on(w)): the emitted IR runs exactly tasks_of(w) for every worker") {
  // one store per worker; repeat dims of extent > 1 become unrolled loops, extent 1 none
  check_kernel_matches_tasks(spatial(4, 8), 0);
  check_kernel_matches_tasks(spatial(4, 8) * repeat(2, 2), 3);            // 1 + 2 (loop of rj per ri)
  check_kernel_matches_tasks(repeat(2, 1) * spatial(2, 16) * repeat(1, 4), 1 + 2);
  check_kernel_matches_tasks(col_repeat(2, 3) * col_spatial(4, 2), 1 + 3); // col: j outer, i inner
  check_kernel_matches_tasks(auto_map({8, 96}, 64), 1 + 4);
}

TEST_CASE("for_(mapping.on(threadIdx.x)): IR structure") {
  auto mod = script_module("mapping_ir");
  mod.kernel("k", {f32[8][16]}, [&](Tensor out) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 32;
    for_((spatial(4, 8) * repeat(2, 2)).on(threadIdx.x), [&](Expr i, Expr j) { out[i][j] = threadIdx.x; });
  });
  auto body = mod.ir()->lookup("k")->body;
  auto outer = body.as<ir::ForStmtNode>();
  REQUIRE(outer);
  CHECK(outer->unroll == -1);
  auto inner = outer->body.as<ir::ForStmtNode>();
  REQUIRE(inner);
  CHECK(inner->unroll == -1);
  auto store = inner->body.as<ir::BufferStoreStmtNode>();
  REQUIRE(store);
  // i = threadIdx.x / 8 % 4 * 2 + ri: uses threadIdx.x, no loop variables of its own
  auto i0 = store->indices[0].as<ir::BinaryNode>();
  REQUIRE(i0);
  CHECK(i0->op == ir::BinaryOp::Add);
  CHECK(i0->b.same_as(ir::Expr(outer->var)));
  CHECK(store->indices[1].as<ir::BinaryNode>()->b.same_as(ir::Expr(inner->var)));
}

TEST_CASE("for_(mapping.on(...)): worker count, arity and misuse are reported at the user's line") {
  // explicit check
  auto mod = script_module("mapping_err");
  int line = 0;
  try {
    mod.kernel("k1", {f32[8][16]}, [&](Tensor out) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 64;
      line = __LINE__, for_((spatial(4, 8) * repeat(2, 2)).on(threadIdx.x, 64), [&](Expr i, Expr j) { out[i][j] = 0; });
    });
    FAIL("expected a DSLError");
  } catch (const DSLError &e) {
    std::string m = e.what();
    CHECK(m.find("task mapping spatial(4, 8) * repeat(2, 2) has 32 workers but the block has 64 threads") != std::string::npos);
    CHECK(e.loc().line == unsigned(line));
  }
  // automatic check against attrs.cuda.block_dim when the worker is threadIdx.x
  try {
    mod.kernel("k2", {f32[8][16]}, [&](Tensor out) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 128;
      line = __LINE__, for_((spatial(4, 8) * repeat(2, 2)).on(threadIdx.x), [&](Expr i, Expr j) { out[i][j] = 0; });
    });
    FAIL("expected a DSLError");
  } catch (const DSLError &e) {
    std::string m = e.what();
    CHECK(m.find("has 32 workers but the block has 128 threads (attrs.cuda.block_dim.x = 128)") != std::string::npos);
    CHECK(e.loc().line == unsigned(line));
  }
  // a sub-block worker expression and an opt-out are fine
  CHECK_NOTHROW(mod.kernel("k3", {f32[8][16]}, [&](Tensor out) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 128;
    for_((spatial(4, 8) * repeat(2, 2)).on(threadIdx.x % 32), [&](Expr i, Expr j) { out[i][j] = 0; });
    if_(threadIdx.x < 32, [&] {
      for_((spatial(4, 8) * repeat(2, 2)).on(threadIdx.x, -1), [&](Expr i, Expr j) { out[i][j] = 1; });
    });
  }));
  // lambda arity must equal the rank of the task shape
  try {
    mod.kernel("k4", {f32[8][16]}, [&](Tensor out) {
      attrs.cuda.grid_dim = 1;
      attrs.cuda.block_dim = 32;
      line = __LINE__, for_(spatial(4, 8).on(threadIdx.x), [&](Expr i) { out[i][0] = 0; });
    });
    FAIL("expected a DSLError");
  } catch (const DSLError &e) {
    CHECK(std::string(e.what()).find("have 2 coordinates but the body lambda takes 1") != std::string::npos);
    CHECK(e.loc().line == unsigned(line));
  }
  // break_ directly in a mapping body would leave an unrolled repeat loop
  CHECK_THROWS_WITH_AS(mod.kernel("k5", {f32[8][16]}, [&](Tensor out) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 32;
    for_(range(4), [&](Var) {
      for_(repeat(8, 16).on(0), [&](Expr i, Expr j) {
        out[i][j] = 0;
        break_();
      });
    });
  }),
                       doctest::Contains("break_ used outside a loop"), DSLError);
  // outside a kernel
  CHECK_THROWS_AS(spatial(4).on(threadIdx.x), DSLError);
  // a float worker
  CHECK_THROWS_WITH_AS(mod.kernel("k6", {f32[8][16]}, [&](Tensor) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 32;
    (void)spatial(32).on(1.5f);
  }),
                       doctest::Contains("must be an integer expression"), DSLError);
}
