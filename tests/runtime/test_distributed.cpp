// Communicators on the emulator (runtime/distributed.hpp): 2 and 4 ranks as threads, each
// collective and reduction on odd sizes in f16, bf16, f32 and integers against a host reference in
// double precision; in place; a world of one; and the errors: ranks that disagree, a rank that does
// not arrive, a wrong world size, two ranks on one device, bad tensors, an aborted communicator.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <random>
#include <thread>

#include "hidet/runtime/distributed.hpp"

using namespace hidet;
using namespace hidet::distributed;
using namespace std::chrono_literals;

namespace {
const bool force_emulation = (hidet::set_cuda_emulation(true), true);
const std::uint64_t seed = std::random_device{}();

/// Rank r's input of element count n: small integers for exact sums (floats: in [-8, 8]; the
/// product: in {1, 2}, so that it stays exact in f16 for 4 ranks).
std::vector<double> input_of(int r, std::size_t n, std::uint64_t salt, ReduceOp op) {
  std::mt19937_64 g(seed * 131 + salt * 7 + std::uint64_t(r));
  std::uniform_int_distribution<int> u(-8, 8), p(1, 2);
  std::vector<double> v(n);
  for (auto &x : v)
    x = op == ReduceOp::prod ? p(g) : u(g);
  return v;
}

/// The reduction over the ranks of element i, in double precision.
double reference(const std::vector<std::vector<double>> &xs, std::size_t i, ReduceOp op,
                 bool ints) {
  double acc = xs[0][i];
  for (std::size_t k = 1; k < xs.size(); ++k) {
    double v = xs[k][i];
    acc = op == ReduceOp::prod  ? acc * v
          : op == ReduceOp::max ? std::max(acc, v)
          : op == ReduceOp::min ? std::min(acc, v)
                                : acc + v;
  }
  if (op == ReduceOp::avg)
    acc = ints ? std::trunc(acc / double(xs.size())) : acc / double(xs.size());
  return acc;
}

/// Compares `got` with `want`: exact for integers, within the dtype's rounding for floats; an
/// all-zero result fails. Prints the first bad index and the seed.
void check_close(const std::vector<double> &got, const std::vector<double> &want, DataType dt,
                 const std::string &what) {
  REQUIRE(got.size() == want.size());
  double tol = dt == dtypes::f16 ? 1e-3 : dt == dtypes::bf16 ? 8e-3 : dt == dtypes::f32 ? 1e-6 : 0;
  bool nonzero = false;
  for (std::size_t i = 0; i < got.size(); ++i) {
    nonzero = nonzero || got[i] != 0;
    if (std::abs(got[i] - want[i]) > tol * (1 + std::abs(want[i]))) {
      FAIL(what, ": index ", i, ": got ", got[i], ", want ", want[i], " (seed ", seed, ")");
      return;
    }
  }
  if (!got.empty()) CHECK_MESSAGE(nonzero, what, ": an all-zero result (seed ", seed, ")");
}

/// Runs fn on every rank and expects each to throw a DistributedError whose message has `part`.
void expect_error_on_every_rank(int world, const std::function<void(Communicator &)> &fn,
                                const std::vector<std::string> &parts,
                                std::chrono::milliseconds timeout = 500ms) {
  CommunicatorOptions o;
  o.timeout = timeout;
  std::atomic<int> errors{0};
  std::vector<std::string> messages(static_cast<std::size_t>(world));
  run_emulated(
      world,
      [&](Communicator &c) {
        try {
          fn(c);
        } catch (const DistributedError &e) {
          messages[std::size_t(c.rank())] = e.what();
          ++errors;
        }
      },
      o);
  CHECK(errors == world);
  for (int r = 0; r < world; ++r)
    for (const auto &p : parts) {
      CAPTURE(r);
      CAPTURE(messages[std::size_t(r)]);
      CHECK(messages[std::size_t(r)].find(p) != std::string::npos);
    }
}
} // namespace

TEST_CASE("distributed: unique ids, reduction names, emulated devices") {
  UniqueId id = get_unique_id();
  CHECK(id.emulated());
  CHECK(UniqueId::from_hex(id.hex()) == id);
  CHECK(id.hex().size() == 256);
  CHECK_FALSE(get_unique_id() == id);
  CHECK_THROWS_WITH_AS(UniqueId::from_hex("12zz"), doctest::Contains("256 hexadecimal digits"),
                       ValueError);
  CHECK(parse_reduce_op("product") == ReduceOp::prod);
  CHECK(parse_reduce_op("avg") == ReduceOp::avg);
  CHECK(reduce_op_name(ReduceOp::max) == "max");
  CHECK_THROWS_WITH_AS(parse_reduce_op("bxor"), doctest::Contains("sum, prod"), ValueError);
  set_emulated_device_count(4);
  CHECK(cuda_device_count() == 4);
  check_device(Device::cuda(3));
  CHECK_THROWS_AS(set_emulated_device_count(0), ValueError);
  CHECK_THROWS_AS(set_emulated_device_count(65), ValueError);
}

TEST_CASE("distributed: every collective on 2 and 4 ranks, odd sizes, f16 bf16 f32 and ints") {
  for (int world : {2, 4})
    for (DataType dt : {dtypes::f16, dtypes::bf16, dtypes::f32, dtypes::i32, dtypes::i8}) {
      CAPTURE(world);
      CAPTURE(dt.name());
      const std::size_t n = 333;
      run_emulated(world, [&](Communicator &c) {
        const int r = c.rank();
        const Device dev = c.device();
        CHECK(dev == Device::cuda(r));
        const bool ints = dt.is_integer();
        for (ReduceOp op :
             {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg, ReduceOp::prod}) {
          std::vector<std::vector<double>> xs;
          for (int k = 0; k < world; ++k)
            xs.push_back(input_of(k, n, std::uint64_t(op), op));
          Tensor x = asarray(xs[std::size_t(r)], {std::int64_t(n)}, dt, dev);
          Tensor y = empty({std::int64_t(n)}, dt, dev);
          c.all_reduce(x, y, op);
          std::vector<double> want(n);
          for (std::size_t i = 0; i < n; ++i)
            want[i] = reference(xs, i, op, ints);
          check_close(y.to_double_vector(), want, dt,
                      str_cat("all_reduce ", reduce_op_name(op), " rank ", r));
        }
        // all_gather: [3, 37] per rank -> [world * 3, 37]
        auto xg = input_of(r, 3 * 37, 100, ReduceOp::sum);
        Tensor g = empty({world * 3, 37}, dt, dev);
        c.all_gather(asarray(xg, {3, 37}, dt, dev), g);
        std::vector<double> want_g;
        for (int k = 0; k < world; ++k) {
          auto v = input_of(k, 3 * 37, 100, ReduceOp::sum);
          want_g.insert(want_g.end(), v.begin(), v.end());
        }
        check_close(g.to_double_vector(), want_g, dt, str_cat("all_gather rank ", r));
        // reduce_scatter: [world * 5, 7] -> rank r's [5, 7] slice of the sum
        std::vector<std::vector<double>> xs;
        for (int k = 0; k < world; ++k)
          xs.push_back(input_of(k, std::size_t(world) * 35, 200, ReduceOp::sum));
        Tensor rs = empty({5, 7}, dt, dev);
        c.reduce_scatter(asarray(xs[std::size_t(r)], {world * 5, 7}, dt, dev), rs, ReduceOp::sum);
        std::vector<double> want_rs(35);
        for (std::size_t i = 0; i < 35; ++i)
          want_rs[i] = reference(xs, std::size_t(r) * 35 + i, ReduceOp::sum, ints);
        check_close(rs.to_double_vector(), want_rs, dt, str_cat("reduce_scatter rank ", r));
        // broadcast from the last rank; the others pass no input
        Tensor b = empty({11}, dt, dev);
        auto xb = input_of(world - 1, 11, 300, ReduceOp::sum);
        c.broadcast(r == world - 1 ? asarray(xb, {11}, dt, dev) : Tensor(), b, world - 1);
        check_close(b.to_double_vector(), xb, dt, str_cat("broadcast rank ", r));
        // a ring of send and recv
        Tensor got = empty({2, 9}, dt, dev);
        c.send(asarray(input_of(r, 18, 400, ReduceOp::sum), {2, 9}, dt, dev), (r + 1) % world);
        c.recv(got, (r + world - 1) % world);
        check_close(got.to_double_vector(),
                    input_of((r + world - 1) % world, 18, 400, ReduceOp::sum), dt,
                    str_cat("recv rank ", r));
        CHECK(c.collectives_issued() == 8);
      });
    }
}

TEST_CASE("distributed: in place, a world of one, bool data movement") {
  run_emulated(3, [&](Communicator &c) {
    Tensor x = full({5, 3}, double(c.rank() + 1), dtypes::f32, c.device());
    c.all_reduce(x, x);
    for (double v : x.to_double_vector())
      CHECK(v == 6);
    Tensor flags = asarray(std::vector<bool>{c.rank() == 1, true}, {}, c.device());
    Tensor all = empty({6}, dtypes::boolean, c.device());
    c.all_gather(flags, all);
    CHECK(all.to_vector<bool>() == std::vector<bool>{false, true, true, true, false, true});
  });
  run_emulated(1, [&](Communicator &c) {
    CHECK(c.world_size() == 1);
    Tensor x = asarray({1.5f, -2.f, 3.f}, {}, c.device()), y = empty({3}, dtypes::f32, c.device());
    c.all_reduce(x, y, ReduceOp::avg);
    CHECK(y.to_vector<float>() == std::vector<float>{1.5f, -2.f, 3.f});
    c.all_gather(x, y);
    CHECK(y.to_vector<float>() == std::vector<float>{1.5f, -2.f, 3.f});
    CHECK(c.str().find("emulator") != std::string::npos);
  });
}

TEST_CASE(
    "distributed: ranks that disagree on dtype, shape or the collective: an error on every rank") {
  expect_error_on_every_rank(2,
                             [](Communicator &c) {
                               DataType dt = c.rank() == 0 ? dtypes::f32 : dtypes::f16;
                               Tensor x = zeros({4, 5}, dt, c.device());
                               c.all_reduce(x, x);
                             },
                             {"collective #0: the ranks' calls differ",
                              "rank 0: all_reduce(float32[4, 5], op=sum)",
                              "rank 1: all_reduce(float16[4, 5], op=sum)"});
  expect_error_on_every_rank(
      4,
      [](Communicator &c) {
        Tensor x = zeros({c.rank() == 2 ? 6 : 4, 5}, dtypes::f32, c.device());
        Tensor y = zeros({x.shape()[0] * 4, 5}, dtypes::f32, c.device());
        c.all_gather(x, y);
      },
      {"rank 2: all_gather(float32[6, 5])", "rank 3: all_gather(float32[4, 5])"});
  expect_error_on_every_rank(2,
                             [](Communicator &c) {
                               Tensor x = zeros({8}, dtypes::f32, c.device());
                               if (c.rank() == 0)
                                 c.all_reduce(x, x, ReduceOp::max);
                               else
                                 c.all_reduce(x, x, ReduceOp::sum);
                             },
                             {"op=max", "op=sum"});
}

TEST_CASE("distributed: a rank that does not arrive: the others time out naming it, it fails too") {
  expect_error_on_every_rank(
      3,
      [](Communicator &c) {
        Tensor x = zeros({8}, dtypes::f32, c.device());
        if (c.rank() == 2) std::this_thread::sleep_for(800ms); // late: the others gave up
        c.all_reduce(x, x);
      },
      {"all_reduce(float32[8], op=sum) (collective #0) timed out",
       "rank(s) 2 did not arrive (arrived: 0, 1)"},
      300ms);
  expect_error_on_every_rank(
      2,
      [](Communicator &c) {
        Tensor x = zeros({8}, dtypes::f32, c.device());
        if (c.rank() == 0)
          c.recv(x, 1);
        else
          std::this_thread::sleep_for(600ms), c.send(x, 0);
      },
      {"rank 1 sent nothing to rank 0"}, 200ms);
}

TEST_CASE("distributed: joining: a wrong world size or two ranks on one device fail every rank") {
  set_emulated_device_count(4);
  CommunicatorOptions o;
  o.timeout = 2s;
  for (int variant : {0, 1}) {
    UniqueId id = get_unique_id();
    std::vector<std::string> msgs(2);
    std::vector<std::thread> ts;
    for (int r = 0; r < 2; ++r)
      ts.emplace_back([&, r] {
        try {
          int world = variant == 0 && r == 1 ? 3 : 2;
          Device dev = variant == 1 ? Device::cuda(0) : Device::cuda(r);
          Communicator c(id, r, world, dev, o);
          msgs[std::size_t(r)] = "no error";
        } catch (const DistributedError &e) {
          msgs[std::size_t(r)] = e.what();
        }
      });
    for (auto &t : ts)
      t.join();
    for (const auto &m : msgs) {
      CAPTURE(m);
      CHECK(m.find(variant == 0 ? "every rank must give the same world size"
                                : "are both on cuda:0") != std::string::npos);
    }
  }
  o.timeout = 200ms;
  UniqueId id = get_unique_id();
  CHECK_THROWS_WITH_AS(Communicator(id, 0, 2, Device::cuda(0), o),
                       doctest::Contains("rank(s) 1 did not join"), DistributedError);
  set_emulated_device_count(1);
  CHECK_THROWS_WITH_AS(Communicator(get_unique_id(), 1, 2, Device::cuda(1), o),
                       doctest::Contains("set_emulated_device_count(2)"), ValueError);
  CHECK_THROWS_WITH_AS(Communicator(get_unique_id(), 2, 2, Device::cuda(0), o),
                       doctest::Contains("rank must be in [0, 2)"), ValueError);
  CHECK_THROWS_AS(Communicator(get_unique_id(), 0, 1, Device::cpu(), o), ValueError);
  UniqueId gpu_id = id;
  gpu_id.bytes[0] = 0;
  CHECK_THROWS_WITH_AS(Communicator(gpu_id, 0, 1, Device::cuda(0), o),
                       doctest::Contains("made by NCCL"), ValueError);
}

TEST_CASE("distributed: bad tensors are ValueErrors naming them; an aborted communicator refuses") {
  run_emulated(2, [&](Communicator &c) {
    Tensor x = zeros({6}, dtypes::f32, c.device());
    Tensor other = zeros({6}, dtypes::f32, Device::cuda(1 - c.rank()));
    CHECK_THROWS_WITH_AS(c.all_reduce(other, x),
                         doctest::Contains("but the communicator's device is"), ValueError);
    CHECK_THROWS_WITH_AS(c.all_gather(x, x), doctest::Contains("world_size (2) times its elements"),
                         ValueError);
    CHECK_THROWS_WITH_AS(c.reduce_scatter(x, zeros({4}, dtypes::f32, c.device())),
                         doctest::Contains("world_size (2) times its elements"), ValueError);
    Tensor b = zeros({6}, dtypes::boolean, c.device());
    CHECK_THROWS_WITH_AS(c.all_reduce(b, b), doctest::Contains("bool tensors cannot be reduced"),
                         ValueError);
    CHECK_THROWS_WITH_AS(c.all_reduce(x, zeros({6}, dtypes::f16, c.device())),
                         doctest::Contains("the input's dtype and element count"), ValueError);
    CHECK_THROWS_WITH_AS(c.broadcast(x, x, 5), doctest::Contains("root 5 is not a rank"),
                         ValueError);
    CHECK_THROWS_WITH_AS(c.send(x, c.rank()), doctest::Contains("the peer is this rank itself"),
                         ValueError);
    CHECK_THROWS_WITH_AS(c.all_reduce(symbol({6}, dtypes::f32, c.device()), x),
                         doctest::Contains("symbolic"), ValueError);
    CHECK(c.collectives_issued() == 0); // nothing was issued: the ranks are still in step
    c.all_reduce(x, x);
    if (c.rank() == 1) c.abort("rank 1 gave up");
    CHECK_THROWS_WITH_AS(c.all_reduce(x, x), doctest::Contains("aborted: rank 1 gave up"),
                         DistributedError);
    CHECK(c.aborted());
  });
  CHECK_THROWS_WITH_AS(Communicator().rank(), doctest::Contains("undefined"), ValueError);
}

TEST_CASE("distributed: run_emulated rethrows the first failure and stops the other ranks") {
  CommunicatorOptions o;
  o.timeout = 60s; // the others are stopped by the abort, not by the timeout
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(run_emulated(
                           3,
                           [](Communicator &c) {
                             Tensor x = zeros({4}, dtypes::f32, c.device());
                             if (c.rank() == 1) throw ValueError("rank 1's own mistake");
                             c.all_reduce(x, x);
                           },
                           o),
                       "rank 1's own mistake", ValueError);
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
}

TEST_CASE("distributed: from_host_function hands every call to the function, in order") {
  std::vector<std::string> seen;
  auto fn = [&](const HostCollective &h) {
    seen.push_back(
        str_cat(h.kind, " ", h.dtype.name(), " in ", h.input_count, " out ", h.output_count));
    // This "other library" pretends rank 1 holds the same values: a sum doubles, a gather repeats.
    auto *in = static_cast<const float *>(h.input);
    auto *out = static_cast<float *>(h.output);
    for (std::size_t i = 0; out && i < h.output_count; ++i)
      out[i] = h.kind == "all_reduce" ? 2 * in[i] : in ? in[i % h.input_count] : 7.f;
  };
  Communicator c = Communicator::from_host_function(0, 2, Device::cuda(0), fn);
  CHECK(c.str().find("host function") != std::string::npos);
  Tensor x = asarray({1.f, 2.f, 3.f}), y = empty({3}), g = empty({6});
  c.all_reduce(x, y);
  CHECK(y.to_vector<float>() == std::vector<float>{2, 4, 6});
  c.all_gather(x, g);
  CHECK(g.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  c.recv(y, 1);
  CHECK(y.to_vector<float>() == std::vector<float>{7, 7, 7});
  CHECK(seen == std::vector<std::string>{"all_reduce float32 in 3 out 3",
                                         "all_gather float32 in 3 out 6",
                                         "recv float32 in 0 out 3"});
  CHECK(c.collectives_issued() == 2);
  CHECK_THROWS_WITH_AS(Communicator::from_host_function(2, 2, Device::cuda(0), fn),
                       doctest::Contains("rank must be in [0, world_size)"), ValueError);
  CHECK_THROWS_AS(Communicator::from_host_function(0, 2, Device::cuda(0), nullptr), ValueError);
}
