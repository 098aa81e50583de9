// NCCL communicators on real GPUs (runtime/distributed.hpp): the test starts one process of
// itself per GPU (2, and 4 when there are 4), each seeing only its GPU as cuda:0, with the ids its
// communicators are made from; each rank runs the collectives on odd sizes in f16, bf16 and f32
// against host references, a compiled graph and its CUDA graph (NCCL captured), and the checks:
// ranks that disagree on a shape throw on every rank, a rank that never arrives times out, a rank
// that joins late makes the others' communicator time out. SKIP
// (77) without two GPUs or without NCCL.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hidet/distributed.hpp"
#include "hidet/graph.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/nccl.hpp"
#include "hidet/util/env.hpp"

extern char **environ;

using namespace hidet;
using namespace hidet::distributed;
using namespace std::chrono_literals;

namespace {

int g_rank = 0, g_world = 0;
std::vector<UniqueId> g_ids; // one per communicator the checks make

/// Rank r's values: small integers (exact in f16).
std::vector<double> values(int r, std::size_t n, int salt) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = double(int((i * 7 + std::size_t(r) * 13 + std::size_t(salt)) % 9) - 4);
  return v;
}

void check_equal(const Tensor &got, const std::vector<double> &want, const std::string &what) {
  auto v = got.to_double_vector();
  REQUIRE(v.size() == want.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != want[i]) {
      FAIL(what, " on rank ", g_rank, ": index ", i, " got ", v[i], " want ", want[i]);
      return;
    }
}

} // namespace

TEST_CASE("NCCL: every collective, f16 bf16 f32, odd sizes") {
  Communicator comm(g_ids[0], g_rank, g_world, Device::cuda(0));
  MESSAGE(comm.str());
  for (DataType dt : {dtypes::f16, dtypes::bf16, dtypes::f32}) {
    CAPTURE(dt.name());
    const std::size_t n = 1001;
    Tensor x = asarray(values(g_rank, n, 1), {std::int64_t(n)}, dt),
           y = empty({std::int64_t(n)}, dt);
    comm.all_reduce(x, y);
    std::vector<double> sum(n), mx(n, -1e9);
    for (int k = 0; k < g_world; ++k) {
      auto v = values(k, n, 1);
      for (std::size_t i = 0; i < n; ++i)
        sum[i] += v[i], mx[i] = std::max(mx[i], v[i]);
    }
    check_equal(y, sum, "all_reduce sum");
    comm.all_reduce(x, y, ReduceOp::max);
    check_equal(y, mx, "all_reduce max");
    Tensor g = empty({g_world * 333}, dt);
    comm.all_gather(asarray(values(g_rank, 333, 2), {333}, dt), g);
    std::vector<double> want_g;
    for (int k = 0; k < g_world; ++k) {
      auto v = values(k, 333, 2);
      want_g.insert(want_g.end(), v.begin(), v.end());
    }
    check_equal(g, want_g, "all_gather");
    Tensor part = empty({7}, dt);
    comm.reduce_scatter(asarray(values(g_rank, std::size_t(7 * g_world), 3), {7 * g_world}, dt),
                        part);
    std::vector<double> want_p(7);
    for (int k = 0; k < g_world; ++k) {
      auto v = values(k, std::size_t(7 * g_world), 3);
      for (std::size_t i = 0; i < 7; ++i)
        want_p[i] += v[std::size_t(g_rank) * 7 + i];
    }
    check_equal(part, want_p, "reduce_scatter");
    Tensor b = empty({5}, dt);
    comm.broadcast(g_rank == 1 ? asarray(values(1, 5, 4), {5}, dt) : Tensor(), b, 1);
    check_equal(b, values(1, 5, 4), "broadcast");
    // A ring, even ranks sending first: an NCCL send waits for its recv to be posted.
    Tensor got = empty({9}, dt), mine = asarray(values(g_rank, 9, 5), {9}, dt);
    if (g_rank % 2 == 0) comm.send(mine, (g_rank + 1) % g_world);
    comm.recv(got, (g_rank + g_world - 1) % g_world);
    if (g_rank % 2 == 1) comm.send(mine, (g_rank + 1) % g_world);
    synchronize();
    check_equal(got, values((g_rank + g_world - 1) % g_world, 9, 5), "send/recv");
  }
}

TEST_CASE("NCCL: a compiled graph and its CUDA graph issue the collectives on their stream") {
  Communicator comm(g_ids[1], g_rank, g_world, Device::cuda(0));
  Tensor x = asarray(values(g_rank, 4 * 37, 6), {4, 37}, dtypes::f16);
  Tensor sx = symbol_like(x);
  graph::CompiledGraph cg(
      trace_from({ops::all_reduce(sx * 2.0, comm), ops::all_gather(sx, comm, 1)}));
  std::vector<double> sum(4 * 37);
  for (int k = 0; k < g_world; ++k) {
    auto v = values(k, 4 * 37, 6);
    for (std::size_t i = 0; i < sum.size(); ++i)
      sum[i] += 2 * v[i];
  }
  Stream stream = Stream::create();
  auto ys = cg.run({x}, stream);
  stream.synchronize();
  check_equal(ys[0], sum, "compiled graph all_reduce");
  CHECK(ys[1].shape() == std::vector<std::int64_t>{4, 37 * g_world});
  graph::CudaGraph replay(cg);
  CHECK(replay.captured());
  for (int i = 0; i < 3; ++i) {
    auto rs = replay.run({x});
    synchronize();
    check_equal(rs[0], sum, "CUDA graph all_reduce");
  }
}

TEST_CASE(
    "NCCL, checked: ranks that disagree throw on every rank; a rank that never arrives times out") {
  CommunicatorOptions o;
  o.timeout = 5s;
  o.check = true;
  auto say = [](const char *what) { // where a rank is, should it hang
    std::fprintf(stderr, "rank %d: %s\n", g_rank, what);
    std::fflush(stderr);
  };
  say("checked: ranks that disagree");
  {
    Communicator comm(g_ids[2], g_rank, g_world, Device::cuda(0), o);
    Tensor x = zeros({g_rank == 1 ? 6 : 4, 8}, dtypes::f32);
    CHECK_THROWS_WITH_AS(comm.all_reduce(x, x), doctest::Contains("the ranks' calls differ"),
                         DistributedError);
    CHECK(comm.aborted());
  }
  say("checked: a rank that never arrives");
  {
    Communicator comm(g_ids[3], g_rank, g_world, Device::cuda(0), o);
    say("checked: communicator made");
    Tensor x = zeros({8}, dtypes::f32);
    if (g_rank == 0)
      CHECK_THROWS_WITH_AS(comm.all_reduce(x, x),
                           doctest::Contains("timed out on rank 0 after 5 s"), DistributedError);
    else
      std::this_thread::sleep_for(7s), comm.abort("this rank never arrived, on purpose");
  }
  say("checked: done");
}

TEST_CASE("NCCL: a rank that does not join in time makes the others' communicator time out") {
  // Rank 0 waits 3 s for the others; they join after 6 s (so NCCL's initialization, left to its
  // thread on rank 0, completes and nothing hangs at exit) and drop their communicator.
  CommunicatorOptions o;
  o.timeout = 3s;
  if (g_rank == 0) {
    CHECK_THROWS_WITH_AS(Communicator(g_ids[4], g_rank, g_world, Device::cuda(0), o),
                         doctest::Contains("initialization did not complete within 3 s"),
                         DistributedError);
    std::this_thread::sleep_for(8s); // the others join meanwhile: NCCL's thread ends before exit
  } else {
    std::this_thread::sleep_for(6s);
    Communicator comm(g_ids[4], g_rank, g_world, Device::cuda(0));
    comm.abort("joined late on purpose");
  }
}

int main(int argc, char **argv) {
  if (const char *r = std::getenv("HIDET_TEST_RANK")) { // a rank
    g_rank = std::atoi(r);
    g_world = std::atoi(std::getenv("HIDET_TEST_WORLD"));
    std::string ids = std::getenv("HIDET_TEST_IDS");
    for (std::size_t p = 0; p + 256 <= ids.size(); p += 257)
      g_ids.push_back(UniqueId::from_hex(ids.substr(p, 256)));
    doctest::Context ctx;
    ctx.applyCommandLine(argc, argv);
    return ctx.run();
  }
  std::string why;
  if (!gpu_present() || cuda::driver_table().device_count < 2) {
    std::puts("SKIP: needs two GPUs");
    return 77;
  }
  if (!nccl::available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  const int gpus = cuda::driver_table().device_count;
  int failed = 0;
  for (int world : {2, 4}) {
    if (world > gpus) break;
    std::string ids;
    for (int i = 0; i < 5; ++i)
      ids += get_unique_id().hex() + ",";
    std::vector<pid_t> pids;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> env_strings;
      for (char **e = environ; *e; ++e)
        if (std::string(*e).rfind("CUDA_VISIBLE_DEVICES=", 0) != 0) env_strings.push_back(*e);
      env_strings.push_back("HIDET_TEST_RANK=" + std::to_string(r));
      env_strings.push_back("HIDET_TEST_WORLD=" + std::to_string(world));
      env_strings.push_back("HIDET_TEST_IDS=" + ids);
      env_strings.push_back("CUDA_VISIBLE_DEVICES=" + std::to_string(r));
      std::vector<char *> envp;
      for (auto &s : env_strings)
        envp.push_back(s.data());
      envp.push_back(nullptr);
      pid_t pid = 0;
      if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) != 0) {
        std::perror("posix_spawn");
        return 1;
      }
      pids.push_back(pid);
    }
    // Every rank gets 180 s; one that hangs is killed and named (a hang is this test's failure).
    auto deadline = std::chrono::steady_clock::now() + 180s;
    for (int r = 0; r < world; ++r) {
      int status = 0;
      while (waitpid(pids[std::size_t(r)], &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          std::printf("world %d: rank %d hung (killed after 180 s)\n", world, r);
          kill(pids[std::size_t(r)], SIGKILL);
          waitpid(pids[std::size_t(r)], &status, 0);
          break;
        }
        std::this_thread::sleep_for(100ms);
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
    std::printf("world %d: %s\n", world, failed ? "FAILED" : "passed");
  }
  return failed ? 1 : 0;
}
