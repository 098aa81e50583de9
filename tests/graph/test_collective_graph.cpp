// Collectives as operators and graph nodes (ops/collective.hpp), on 2 and 4 emulated ranks
// (threads): eager calls, traced graphs (printed), compiled graphs and CUDA graphs against host
// references; a hand-sharded two-layer MLP (column- then row-parallel) against the unsharded
// product; send and recv between two graphs; and the errors: ranks that compile different
// graphs, a graph with collectives saved to a file, bad arguments at trace time.
#include "../ops/ops_test_util.hpp"

#include <filesystem>

#include "hidet/distributed.hpp"
#include "hidet/graph.hpp"

using namespace ops_test;
using distributed::Communicator;
using distributed::ReduceOp;

namespace {
const bool force_emulation = (hidet::set_cuda_emulation(true), true);

/// Rank r's copy of a tensor made by every rank alike (same seed): small integers, exact in f16.
Tensor shared_ints(const o::Shape &shape, DataType dt, std::uint64_t salt, Device dev, int lo = -3,
                   int hi = 3) {
  std::mt19937_64 g(g_seed + salt);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<double> v(std::size_t(o::shape_numel(shape)));
  for (auto &x : v)
    x = u(g);
  return asarray(v, shape, dt, dev);
}

/// Rank r's own values.
Tensor rank_ints(const o::Shape &shape, DataType dt, int rank, std::uint64_t salt, Device dev) {
  return shared_ints(shape, dt, salt * 1000 + std::uint64_t(rank), dev);
}

void check_values(const Tensor &got, const std::vector<double> &want, double tol,
                  const std::string &what) {
  auto v = got.to_double_vector();
  REQUIRE(v.size() == want.size());
  bool nonzero = false;
  for (std::size_t i = 0; i < v.size(); ++i) {
    nonzero = nonzero || v[i] != 0;
    if (std::abs(v[i] - want[i]) > tol * (1 + std::abs(want[i]))) {
      FAIL(what, ": index ", i, " got ", v[i], " want ", want[i], " (seed ", g_seed, ")");
      return;
    }
  }
  CHECK_MESSAGE(nonzero, what, ": all zero (seed ", g_seed, ")");
}
} // namespace

TEST_CASE(
    "collective operators: eager, traced, compiled and captured, f16 bf16 f32, 2 and 4 ranks") {
  for (int world : {2, 4})
    for (DataType dt : {dtypes::f16, dtypes::bf16, dtypes::f32}) {
      CAPTURE(world);
      CAPTURE(dt.name());
      distributed::run_emulated(world, [&](const Communicator &comm) {
        const int r = comm.rank();
        const Device dev = comm.device();
        // y = all_reduce(2x), g = all_gather(x, axis 1), s = reduce_scatter(x, axis 1)
        auto net = [&](const Tensor &x) {
          return std::vector<Tensor>{o::all_reduce(x * 2.0, comm), o::all_gather(x, comm, 1),
                                     o::reduce_scatter(x, comm, ReduceOp::max, 1)};
        };
        const o::Shape shape{3, 4 * world, 5};
        std::vector<std::vector<double>> xs;
        for (int k = 0; k < world; ++k)
          xs.push_back(rank_ints(shape, dt, k, 1, dev).to_double_vector());
        std::vector<double> want_sum(xs[0].size()), want_gather, want_scatter;
        for (std::size_t i = 0; i < want_sum.size(); ++i)
          for (int k = 0; k < world; ++k)
            want_sum[i] += 2 * xs[std::size_t(k)][i];
        for (std::int64_t a = 0; a < 3; ++a)
          for (int k = 0; k < world; ++k)
            for (std::int64_t b = 0; b < 4 * world * 5; ++b)
              want_gather.push_back(xs[std::size_t(k)][std::size_t(a * 4 * world * 5 + b)]);
        for (std::int64_t a = 0; a < 3; ++a)
          for (std::int64_t b = 0; b < 4; ++b)
            for (std::int64_t c = 0; c < 5; ++c) {
              std::size_t i = std::size_t((a * 4 * world + r * 4 + b) * 5 + c);
              double m = xs[0][i];
              for (int k = 1; k < world; ++k)
                m = std::max(m, xs[std::size_t(k)][i]);
              want_scatter.push_back(m);
            }
        auto check_all = [&](const std::vector<Tensor> &ys, const std::string &how) {
          REQUIRE(ys.size() == 3);
          CHECK(ys[1].shape() == std::vector<std::int64_t>{3, 4 * world * world, 5});
          CHECK(ys[2].shape() == std::vector<std::int64_t>{3, 4, 5});
          check_values(ys[0], want_sum, 0, how + " all_reduce");
          check_values(ys[1], want_gather, 0, how + " all_gather");
          check_values(ys[2], want_scatter, 0, how + " reduce_scatter");
        };
        Tensor x = rank_ints(shape, dt, r, 1, dev);
        check_all(net(x), "eager");
        Tensor sx = symbol_like(x);
        FlowGraph g = trace_from(net(sx));
        std::string printed = g.str();
        CHECK(printed.find(str_cat("AllReduce(x_1, op=sum, rank=", r, ", world_size=", world,
                                   ")")) != std::string::npos);
        CHECK(printed.find("AllGather(x, rank=") != std::string::npos);
        CHECK(printed.find("ReduceScatter(") != std::string::npos);
        check_all(g.run({x}), "graph");
        FlowGraph opt = graph::optimize(g);
        graph::CompiledGraph cg(opt);
        check_all(cg.run({x}), "compiled");
        graph::CudaGraph cuda(cg);
        check_all(cuda.run({x}), "cuda graph");
      });
    }
}

TEST_CASE("a two-layer MLP sharded by hand (column- then row-parallel) matches the whole product") {
  for (int world : {2, 4}) {
    CAPTURE(world);
    const std::int64_t m = 5, d = 24, f = 32;
    distributed::run_emulated(world, [&](const Communicator &comm) {
      const int r = comm.rank();
      const Device dev = comm.device();
      Tensor w1 = shared_ints({d, f}, dtypes::f32, 10, dev),
             w2 = shared_ints({f, d}, dtypes::f32, 11, dev);
      Tensor b2 = shared_ints({d}, dtypes::f32, 12, dev);
      Tensor x = shared_ints({m, d}, dtypes::f32, 13, dev);
      const std::int64_t part = f / world;
      Tensor w1_r = o::slice(w1, {1}, {r * part}, {(r + 1) * part});
      Tensor w2_r = o::slice(w2, {0}, {r * part}, {(r + 1) * part});
      auto shard = [&](const Tensor &in) {
        return o::all_reduce(o::matmul(o::relu(o::matmul(in, w1_r)), w2_r), comm) + b2;
      };
      auto whole = [&](const Tensor &in) { return o::matmul(o::relu(o::matmul(in, w1)), w2) + b2; };
      std::vector<double> want = whole(x).to_double_vector();
      FlowGraph g = trace_from(shard(symbol_like(x)));
      graph::CompiledGraph cg(graph::optimize(g));
      check_values(cg(x), want, 1e-5, "sharded MLP");
    });
  }
}

TEST_CASE("fold_residual_into_all_reduce: the residual add joins rank 0's product, the sum is the result") {
  // y = all_reduce(x @ w_r) + r (a row-parallel projection and the block's residual): rank 0 adds
  // r in its product's epilogue before the collective, the others add nothing, and the reduced
  // value is the graph's output (no kernel after the collective).
  for (int world : {2, 4})
    for (DataType dt : {DataType(dtypes::f16), DataType(dtypes::f32)}) {
      CAPTURE(world);
      CAPTURE(dt.name());
      const std::int64_t m = 3, d = 16, f = 8 * world;
      distributed::run_emulated(world, [&](const Communicator &comm) {
        const int rank = comm.rank();
        const Device dev = comm.device();
        Tensor w = shared_ints({f, d}, dt, 20, dev), x = shared_ints({m, f}, dt, 21, dev),
               res = shared_ints({m, d}, dt, 22, dev);
        const std::int64_t part = f / world;
        Tensor w_r = o::slice(w, {0}, {rank * part}, {(rank + 1) * part});
        Tensor x_r = o::slice(x, {1}, {rank * part}, {(rank + 1) * part});
        Tensor sx = symbol_like(x_r), sres = symbol_like(res);
        FlowGraph g = trace_from(o::all_reduce(o::matmul(sx, w_r), comm) + sres, {sx, sres});
        FlowGraph folded = graph::fold_residual_into_all_reduce(g);
        auto out = folded.outputs()[0].trace();
        REQUIRE(out);
        CHECK(o::kind_of(*out.op) == o::OpKind::AllReduce);
        auto below = out.op->inputs()[0].trace();
        REQUIRE(below);
        CHECK(o::kind_of(*below.op) == (rank == 0 ? o::OpKind::Add : o::OpKind::Matmul));
        std::vector<double> want = (o::matmul(x, w) + res).to_double_vector();
        graph::CompiledGraph cg(graph::optimize(g));
        check_values(cg(x_r, res), want, dt == dtypes::f16 ? 2e-3 : 1e-6, "folded residual");
        if (rank == 0) { // the add is the product's epilogue: one kernel before the collective
          auto opt = graph::optimize(g);
          auto t = opt.outputs()[0].trace();
          REQUIRE(t);
          auto p = t.op->inputs()[0].trace();
          REQUIRE(p);
          CHECK(p.op->name() == "FusedMatmul");
        }
        // Not folded: a max all-reduce; a sum read twice (the add is not its one reader).
        Tensor mx = o::all_reduce(o::matmul(sx, w_r), comm, ReduceOp::max);
        FlowGraph g_max = trace_from(mx + sres, {sx, sres});
        CHECK(graph::fold_residual_into_all_reduce(g_max).nodes().size() == g_max.nodes().size());
        Tensor s2 = o::all_reduce(o::matmul(sx, w_r), comm);
        FlowGraph g_twice = trace_from(std::vector<Tensor>{s2 + sres, o::relu(s2)}, {sx, sres});
        CHECK(graph::fold_residual_into_all_reduce(g_twice).nodes().size() == g_twice.nodes().size());
      });
    }
}

TEST_CASE("send and recv between two graphs, broadcast in a graph") {
  distributed::run_emulated(2, [&](const Communicator &comm) {
    const Device dev = comm.device();
    Tensor x = rank_ints({7, 3}, dtypes::f16, comm.rank(), 20, dev);
    Tensor sx = symbol_like(x);
    // rank 0: relu(x) to rank 1; rank 1: what rank 0 sent, + 1; both: rank 1's x broadcast.
    Tensor y = comm.rank() == 0 ? o::send(o::relu(sx), comm, 1) : o::recv(sx, comm, 0) + 1.0;
    graph::CompiledGraph cg(trace_from({y, o::broadcast(sx, comm, 1)}));
    auto ys = cg.run({x});
    auto x0 = rank_ints({7, 3}, dtypes::f16, 0, 20, dev).to_double_vector();
    std::vector<double> want(x0.size());
    for (std::size_t i = 0; i < x0.size(); ++i)
      want[i] = std::max(x0[i], 0.0) + (comm.rank() == 1 ? 1 : 0);
    check_values(ys[0], want, 0, "send/recv");
    check_values(ys[1], rank_ints({7, 3}, dtypes::f16, 1, 20, dev).to_double_vector(), 0,
                 "broadcast");
  });
}

TEST_CASE("collective graphs: ranks that compile different graphs, saving, bad arguments") {
  distributed::CommunicatorOptions opts;
  opts.timeout = std::chrono::seconds(2);
  std::atomic<int> errors{0};
  distributed::run_emulated(
      2,
      [&](const Communicator &comm) {
        // rank 1 traces a graph of another shape: compiling compares the ranks' collectives.
        Tensor x = symbol({comm.rank() == 0 ? 4 : 6, 8}, dtypes::f32, comm.device());
        try {
          graph::CompiledGraph cg(trace_from(o::all_reduce(x, comm)));
        } catch (const distributed::DistributedError &e) {
          std::string msg = e.what();
          CHECK(msg.find("rank 0: all_reduce(float32[4, 8], op=sum)") != std::string::npos);
          CHECK(msg.find("rank 1: all_reduce(float32[6, 8], op=sum)") != std::string::npos);
          ++errors;
        }
      },
      opts);
  CHECK(errors == 2);
  distributed::run_emulated(2, [&](const Communicator &comm) {
    Tensor x = symbol({4, 8}, dtypes::f32, comm.device());
    graph::CompiledGraph cg(trace_from(o::all_reduce(x, comm)));
    auto path = std::filesystem::temp_directory_path() /
                str_cat("hidet_collective_", comm.rank(), ".hidet");
    CHECK_THROWS_WITH_AS(cg.save(path.string()), doctest::Contains("cannot be saved"), ValueError);
    CHECK_FALSE(std::filesystem::exists(path));
    CHECK_THROWS_WITH_AS(o::reduce_scatter(symbol({3, 8}, dtypes::f32, comm.device()), comm),
                         doctest::Contains("multiple of the world size 2"), ValueError);
    CHECK_THROWS_WITH_AS(o::all_reduce(symbol({3}, dtypes::boolean, comm.device()), comm),
                         doctest::Contains("bool tensors cannot be reduced"), ValueError);
    CHECK_THROWS_WITH_AS(
        o::all_reduce(symbol({3}, dtypes::f32, Device::cuda(1 - comm.rank())), comm),
        doctest::Contains("but the communicator (rank"), ValueError);
    CHECK_THROWS_WITH_AS(o::send(x, comm, comm.rank()), doctest::Contains("is not another rank"),
                         ValueError);
    CHECK_THROWS_WITH_AS(o::all_reduce(x, Communicator()), doctest::Contains("undefined"),
                         ValueError);
  });
}
