// Tuning (ops/tuning.hpp) and the matmul templates behind ops::matmul (ops/matmul_templates.hpp):
// the search-space option, pick() with an injected timer (fastest wins, failures skipped, the
// choice reused from memory and from its disk record), the emulator's default choice, every
// space-1 candidate against a double-precision reference, ops::matmul through a tuned choice, and
// the GPU timer's emptied L2.
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <filesystem>

#include "ops_test_util.hpp"

#include "hidet/ops/matmul_templates.hpp"
#include "hidet/ops/templates/matmul_wgmma.hpp"
#include "hidet/backend/nvrtc.hpp" // CompiledModule::binary(), nvrtc_available()
#include "hidet/runtime/timing.hpp"

using namespace ops_test;
namespace tuning = hidet::ops::tuning;

namespace {
/// A private cache directory for one test case (the tuning records live under it).
struct TempCache {
  std::filesystem::path dir;
  std::string old;
  TempCache() {
    dir = std::filesystem::temp_directory_path() / str_cat("hidet-tuning-test-", std::random_device{}());
    if (const char *o = std::getenv("HIDET_CACHE_DIR")) old = o;
    ::setenv("HIDET_CACHE_DIR", dir.c_str(), 1);
    tuning::clear_memory();
  }
  ~TempCache() {
    if (old.empty()) ::unsetenv("HIDET_CACHE_DIR");
    else ::setenv("HIDET_CACHE_DIR", old.c_str(), 1);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    tuning::set_timer(nullptr);
    tuning::clear_memory();
  }
};

/// A timer that reports `ms[i]` for the i-th launch it measures (launches are told apart by the
/// value they write into `tag`).
struct TagTimer {
  std::shared_ptr<int> tag = std::make_shared<int>(-1);
  std::vector<double> ms;
  tuning::Timer timer() const {
    return [tag = tag, ms = ms](const tuning::Launch &launch) {
      launch();
      return ms.at(std::size_t(*tag));
    };
  }
};

std::vector<double> ref_matmul(const std::vector<double> &a, const std::vector<double> &b, int m, int n, int k) {
  std::vector<double> c(std::size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) c[std::size_t(i) * n + j] += a[std::size_t(i) * k + p] * b[std::size_t(p) * n + j];
  return c;
}
} // namespace

TEST_CASE("search space: option, environment and bad values") {
  int before = hidet::option::search_space();
  hidet::option::search_space(2);
  CHECK(hidet::option::search_space() == 2);
  hidet::option::search_space(0);
  CHECK(hidet::option::search_space() == 0);
  expect_error([] { hidet::option::search_space(3); }, {"search_space(3): use 0, 1 or 2"});
  hidet::option::search_space(before);
}

TEST_CASE("pick: the fastest candidate wins, failures are skipped, the choice is recorded and reused") {
  TempCache cache;
  TagTimer t;
  t.ms = {5.0, 2.0, 9.0, 1.0};
  tuning::set_timer(t.timer());
  std::vector<tuning::Candidate> cands;
  std::atomic<int> builds{0};
  for (int i = 0; i < 4; ++i)
    cands.push_back({str_cat("config ", i), [&, i, tag = t.tag]() -> tuning::Launch {
                       ++builds; // the builds run on a thread pool: count after the pool joins
                       if (i == 3) throw ValueError("candidate 3 does not compile");
                       return [tag, i] { *tag = i; };
                     }});
  auto before = tuning::stats();
  std::string key = tuning::make_key("test_op", str_cat("case ", std::random_device{}()));
  CHECK(tuning::pick("test op", key, cands) == 1); // 3 would be faster but fails to build
  auto after = tuning::stats();
  CHECK(builds == 4);
  CHECK(after.tuned == before.tuned + 1);
  CHECK(after.failed == before.failed + 1);
  CHECK(after.built == before.built + 3);
  // Reused from this process's memory: nothing is built again.
  CHECK(tuning::pick("test op", key, cands) == 1);
  CHECK(builds == 4);
  // Reused from the disk record (a new process would see only that).
  tuning::clear_memory();
  CHECK(tuning::pick("test op", key, cands) == 1);
  CHECK(builds == 4);
  CHECK(tuning::stats().reused == after.reused + 2);
  // A record that names no current candidate is ignored: tuning runs again.
  cands[1].label = "config 1 (renamed)";
  tuning::clear_memory();
  CHECK(tuning::pick("test op", key, cands) == 1);
  CHECK(builds == 8);
  // Every candidate failing is an error naming the first failure.
  std::vector<tuning::Candidate> bad{{"a", []() -> tuning::Launch { throw ValueError("no A"); }},
                                     {"b", []() -> tuning::Launch { throw ValueError("no B"); }}};
  expect_error([&] { tuning::pick("bad op", tuning::make_key("bad_op", "x"), bad); },
               {"tuning bad op: every candidate failed", "no A"});
}

TEST_CASE("tuning budget: once spent, keys without a record keep their default and are not recorded") {
  TempCache cache;
  CHECK(std::isinf(hidet::option::tuning_budget())); // the default (HIDET_TUNING_BUDGET unset)
  expect_error([] { hidet::option::tuning_budget(-1); }, {"tuning_budget(-1)", ">= 0"});
  TagTimer t;
  t.ms = {5.0, 2.0};
  tuning::set_timer(t.timer());
  std::atomic<int> builds{0};
  std::vector<tuning::Candidate> cands;
  for (int i = 0; i < 2; ++i)
    cands.push_back({str_cat("config ", i), [&, i, tag = t.tag]() -> tuning::Launch {
                       ++builds;
                       std::this_thread::sleep_for(std::chrono::milliseconds(30)); // a compile
                       return [tag, i] { *tag = i; };
                     }});
  const std::string tag = str_cat(std::random_device{}());
  auto key = [&](int i) { return tuning::make_key("budget_op", str_cat(tag, " ", i)); };
  hidet::option::tuning_budget(0.01); // a new window: the first key tunes and spends it
  CHECK(tuning::pick("op 1", key(1), cands) == 1);
  CHECK(builds == 2);
  auto spent = tuning::stats();
  CHECK(spent.budget_spent >= 0.03);
  // Spent: the next keys keep candidate 0, build nothing, record nothing.
  CHECK(tuning::pick("op 2", key(2), cands) == 0);
  CHECK(tuning::pick("op 3", key(3), cands) == 0);
  CHECK(builds == 2);
  CHECK(tuning::stats().over_budget == spent.over_budget + 2);
  CHECK_FALSE(tuning::stored_label(key(2)).has_value());
  // A recorded key is still answered from its record.
  CHECK(tuning::pick("op 1", key(1), cands) == 1);
  // A new budget (a later compile) tunes what was left.
  hidet::option::tuning_budget(std::numeric_limits<double>::infinity());
  CHECK(tuning::stats().budget_spent == 0);
  CHECK(tuning::pick("op 2", key(2), cands) == 1);
  CHECK(builds == 4);
  CHECK(tuning::stored_label(key(2)) == std::optional<std::string>("config 1"));
}

TEST_CASE("pick: finalists are timed twice and the default stays unless beaten by 2%") {
  TempCache cache;
  // Candidate 1 is 1% faster than the default in both rounds: within the noise, the default
  // stays. Candidate 2 looks fastest in the first round only (noise): its second time is slow.
  auto calls = std::make_shared<std::vector<int>>(4, 0);
  auto tag = std::make_shared<int>(-1);
  tuning::set_timer([calls, tag](const tuning::Launch &launch) {
    launch();
    int i = *tag, n = (*calls)[std::size_t(i)]++;
    const double first[] = {1.00, 0.99, 0.50, 1.50}, second[] = {1.00, 0.99, 1.20, 1.50};
    return n == 0 ? first[i] : second[i];
  });
  std::vector<tuning::Candidate> cands;
  for (int i = 0; i < 4; ++i)
    cands.push_back({str_cat("config ", i), [i, tag]() -> tuning::Launch { return [tag, i] { *tag = i; }; }});
  // The second round keeps each finalist's better time: candidate 2 keeps 0.50 and wins. With
  // its first time 1.20 as well, the default (1.00, within 2% of 0.99) would stay.
  CHECK(tuning::pick("test op", tuning::make_key("finalists", str_cat(std::random_device{}())), cands) == 2);
  CHECK((*calls)[0] == 2); // the default is always a finalist
  CHECK((*calls)[3] == 2); // four finalists of four
  for (auto &c : *calls) c = 0;
  cands.pop_back(), cands.pop_back(); // candidates 0 and 1 only
  CHECK(tuning::pick("test op", tuning::make_key("finalists", str_cat(std::random_device{}())), cands) == 0);
  CHECK((*calls)[0] == 2);
  CHECK((*calls)[1] == 2);
}

TEST_CASE("the tuner times each launch with the L2 emptied of its operands (GPU)") {
  if (hidet::runtime::cuda_emulated()) {
    MESSAGE("SKIP: needs a GPU (on the emulator the tuner keeps the default candidate untimed)");
    return;
  }
  // A one-row product by a 32 MB weight (within the H100's 50 MB L2): timed back to back it
  // reads the weight from the L2, timed cold from memory, which takes longer.
  const int n = 4096, k = 4096;
  Tensor x = make({1, k}, dtypes::bf16), w = make({k, n}, dtypes::bf16), y = hidet::empty({1, n}, dtypes::bf16, "cuda");
  auto run = hidet::ops::matmul_candidates(1, n, k, dtypes::bf16, 0)[0].build();
  const tuning::Launch launch = [&] { run(x, w, y, {}); };
  const double warm = hidet::median_ms(launch, 7, 1.0);
  const std::optional<double> cold = tuning::cold_l2_ms(launch);
  REQUIRE(cold.has_value());
  INFO("warm " << warm << " ms, cold " << *cold << " ms");
  CHECK(*cold > 1.2 * warm);
  CHECK(*cold < 1.0); // (32 MB at a few TB/s: tens of microseconds)
}

TEST_CASE("pick on the CPU emulator without a timer keeps the default candidate") {
  if (!hidet::runtime::cuda_emulated()) {
    MESSAGE("SKIP: a GPU is present (this case checks the emulator's behaviour)");
    return;
  }
  TempCache cache;
  int builds = 0;
  std::vector<tuning::Candidate> cands;
  for (int i = 0; i < 3; ++i) cands.push_back({str_cat("c", i), [&]() -> tuning::Launch { return [&] { ++builds; }; }});
  CHECK(tuning::pick("emulated op", tuning::make_key("emulated_op", "x"), cands) == 0);
  CHECK(builds == 0);
}

TEST_CASE("matmul templates: every space-1 candidate is correct on a shape with partial tiles") {
  // f32: FMA tilings with split-k; f16/bf16: mma.sync tilings (and wgmma ones on a Hopper GPU).
  const int m = 37, n = 45, k = 70;
  for (DataType dt : {DataType(dtypes::f32), DataType(dtypes::f16), DataType(dtypes::bf16)}) {
    auto cands = hidet::ops::matmul_candidates(m, n, k, dt, 1);
    REQUIRE(cands.size() > 1);
    CHECK(cands.size() <= 30);
    CHECK(hidet::ops::matmul_candidates(m, n, k, dt, 0).size() == 1);
    CHECK(hidet::ops::matmul_candidates(m, n, k, dt, 2).size() >= cands.size());
    Tensor a = make({m, k}, dt), b = make({k, n}, dt);
    auto want = ref_matmul(a.to_double_vector(), b.to_double_vector(), m, n, k);
    for (auto &cand : configs_to_run(cands, 3)) {
      INFO(dt << " candidate " << cand.label);
      Tensor c = hidet::full({m, n}, std::nan(""), dt);
      cand.build()(a, b, c, {});
      expect_close(c, {m, n}, want);
    }
  }
}

TEST_CASE("matmul heuristic: few rows and a short k take small mma.sync tiles on Hopper, within one wave") {
  // Space 0's single candidate for a transformer's projections at batch 1, and its result.
  struct Case {
    int m, n, k;
    const char *hopper_label;
  };
  for (Case c : {Case{128, 768, 768, "mma.sync 32x64x64"}, Case{128, 3072, 768, "mma.sync 64x64x64"},
                 Case{128, 768, 3072, "wgmma 64x128x64 (1 consumer warpgroup, 6 stages, persistent, split-k 4)"},
                 Case{512, 768, 768, "wgmma"},
                 // past one wave of 64 x 64 tiles (Qwen2-0.5B's MLP at 128 tokens): wgmma
                 Case{128, 4864, 896, "wgmma 64x128x64"}}) {
    auto cands = hidet::ops::matmul_candidates(c.m, c.n, c.k, dtypes::f16, 0);
    REQUIRE(cands.size() == 1);
    INFO(c.m << "x" << c.n << "x" << c.k << ": " << cands[0].label);
    if (hidet::ops::matmul_wgmma_available()) CHECK(cands[0].label.rfind(c.hopper_label, 0) == 0);
    else CHECK(cands[0].label.rfind("mma.sync", 0) == 0); // off Hopper: the mma.sync heuristic
  }
  const int m = 96, n = 200, k = 136; // partial tiles
  Tensor a = make({m, k}, dtypes::f16), b = make({k, n}, dtypes::f16);
  auto want = ref_matmul(a.to_double_vector(), b.to_double_vector(), m, n, k);
  Tensor c = hidet::full({m, n}, std::nan(""), dtypes::f16);
  hidet::ops::matmul_candidates(m, n, k, dtypes::f16, 0)[0].build()(a, b, c, {});
  expect_close(c, {m, n}, want);
}

TEST_CASE("Hopper matmul heuristic: the tile shape that fills whole waves; config checks") {
  using hidet::ops::templates::MatmulWgmmaConfig;
  using hidet::ops::templates::check_matmul_wgmma_config;
  using hidet::ops::templates::matmul_wgmma_heuristic_config;
  struct Case {
    int m, n, k, block_m, block_n, split_k;
  };
  // BERT-base at batch 16: the merged QKV product has 132 tiles of 192 x 192 (one wave on 132
  // multiprocessors) against 144 of 128 x 256; the FFN up projection takes 256 tiles of
  // 128 x 192 (two waves), the FFN down projection (k = 3072) and the attention output 96 tiles
  // of 64 x 256; large squares keep 128 x 256 (in clusters of two blocks from two waves on),
  // 1024^3 takes 128 tiles of 64 x 128; a batch-1
  // projection splits k when each split keeps 8 k tiles (k = 3072), not at k = 768.
  for (Case c : {Case{2048, 2304, 768, 192, 192, 1}, Case{2048, 3072, 768, 128, 192, 1}, Case{2048, 768, 3072, 64, 256, 1},
                 Case{2048, 768, 768, 64, 256, 1}, Case{4096, 4096, 4096, 128, 256, 1}, Case{8192, 8192, 8192, 128, 256, 1},
                 Case{2048, 2048, 2048, 128, 256, 1}, Case{1024, 1024, 1024, 64, 128, 1}, Case{128, 768, 3072, 64, 128, 4},
                 Case{128, 2304, 768, 64, 128, 1}, Case{1, 768, 768, 64, 128, 1}}) {
    CAPTURE(c.m);
    CAPTURE(c.n);
    CAPTURE(c.k);
    MatmulWgmmaConfig cfg = matmul_wgmma_heuristic_config(c.m, c.n, c.k, 132);
    CHECK(cfg.block_m() == c.block_m);
    CHECK(cfg.block_n == c.block_n);
    CHECK(cfg.split_k == c.split_k);
    CHECK(cfg.cluster_m == (c.m >= 4096 ? 2 : 1)); // two waves or more of 128 x 256: clusters of two
    CHECK(cfg.cluster_n == 1);
    CHECK_NOTHROW(check_matmul_wgmma_config(cfg));
  }
  // Every heuristic choice is a valid config, on odd shapes and other multiprocessor counts.
  for (int sms : {78, 114, 132})
    for (int m : {1, 37, 333, 1000, 4095})
      for (int n : {8, 444, 2304, 4097})
        CHECK_NOTHROW(check_matmul_wgmma_config(matmul_wgmma_heuristic_config(m, n, 555, sms)));
  auto rejects = [](MatmulWgmmaConfig c, const char *why) {
    CAPTURE(why);
    try {
      check_matmul_wgmma_config(c);
      FAIL("accepted ", c.str());
    } catch (const hidet::ValueError &e) {
      CHECK(std::string(e.what()).find(why) != std::string::npos);
    }
  };
  rejects(MatmulWgmmaConfig{4, 128, 4}, "consumers must be 1, 2 or 3 warpgroups");
  MatmulWgmmaConfig atoms{2, 128, 4};
  atoms.atoms = 3;
  rejects(atoms, "atoms (m64 wgmma atoms per consumer) must be 1 or 2");
  rejects(MatmulWgmmaConfig{3, 256, 3}, "128 f32 accumulators per consumer thread do not fit its budget of 152");
  MatmulWgmmaConfig cluster{2, 128, 6};
  cluster.cluster_m = 3;
  rejects(cluster, "cluster_m and cluster_n must be 1, 2 or 4");
  // The consumer register budget follows the warpgroup count.
  CHECK(MatmulWgmmaConfig{2, 256, 4}.consumer_budget() == 232);
  CHECK(MatmulWgmmaConfig{3, 192, 4}.consumer_budget() == 152);
  CHECK(MatmulWgmmaConfig{3, 192, 4}.str() == "192x192x64 (3 consumer warpgroups, 4 stages, persistent)");
  MatmulWgmmaConfig tall{2, 128, 4};
  tall.atoms = 2, tall.cluster_m = 2;
  CHECK(tall.str() == "256x128x64 (2 consumer warpgroups of 2 m64 atoms, 4 stages, persistent, cluster 2x1)");
  // Ping-pong: a tile is one consumer's rows; persistent, 2-3 consumers, no split-k, no clusters.
  MatmulWgmmaConfig ping{2, 192, 4};
  ping.atoms = 2, ping.pingpong = true;
  CHECK(ping.block_m() == 128);
  CHECK(ping.str() == "128x192x64 (2 consumer warpgroups of 2 m64 atoms, ping-pong, 4 stages, persistent)");
  CHECK(ping.smem_bytes() == 4 * (128 + 192) * 64 * 2 + 2 * 4 * 16 * 64 * 2 + 4 * 16 + 2 * 8);
  CHECK_NOTHROW(check_matmul_wgmma_config(ping));
  const char *ping_rule = "ping-pong needs 2 or 3 consumers, a persistent kernel, no split-k and no clusters";
  for (auto edit : std::vector<std::function<void(MatmulWgmmaConfig &)>>{
           [](MatmulWgmmaConfig &c) { c.consumers = 1; }, [](MatmulWgmmaConfig &c) { c.persistent = false; },
           [](MatmulWgmmaConfig &c) { c.split_k = 2; }, [](MatmulWgmmaConfig &c) { c.cluster_m = 2; }}) {
    MatmulWgmmaConfig bad = ping;
    edit(bad);
    rejects(bad, ping_rule);
  }
}

TEST_CASE("Hopper matmul: the heuristic's clustered 128 x 256 tiling at 4096^3 against the unclustered kernel") {
  using namespace hidet::ops::templates;
  const int s = 4096;
  if (!hidet::ops::matmul_wgmma_available()) { // too large for the emulator: NVRTC builds the kernel for sm_90a
    if (!hidet::detail::nvrtc_available()) {
      MESSAGE("skipped: no Hopper GPU and no NVRTC");
      return;
    }
    MatmulWgmmaConfig clustered = matmul_wgmma_heuristic_config(s, s, s, 132);
    REQUIRE(clustered.cluster_m == 2);
    hidet::BuildOptions o = matmul_wgmma_build_options();
    o.emulator_nvrtc = true; // the compile is this test's check
    auto cm = matmul_wgmma_module(s, s, s, dtypes::f16, clustered).build(o);
    CHECK(cm.source().find("multicast::cluster") != std::string::npos); // b's tile multicast to the pair
    CHECK(!cm.binary().cubin.empty());
    return;
  }
  MatmulWgmmaConfig clustered = matmul_wgmma_heuristic_config(s, s, s, hidet::runtime::device_info(0).sm_count);
  REQUIRE(clustered.cluster_m == 2);
  MatmulWgmmaConfig plain = clustered;
  plain.cluster_m = 1;
  // Entries in {-1, 0}: each c counts the k where both are -1 (about 1024, exact in f16 below 2048),
  // so both kernels must agree exactly.
  Tensor a = make({s, s}, dtypes::f16, -1, 1, true), b = make({s, s}, dtypes::f16, -1, 1, true);
  Tensor c1 = hidet::full({s, s}, std::nan(""), dtypes::f16, "cuda"), c2 = hidet::full({s, s}, 0.0, dtypes::f16, "cuda");
  MatmulWgmma(s, s, s, dtypes::f16, clustered)(a, b, c1);
  MatmulWgmma(s, s, s, dtypes::f16, plain)(a, b, c2);
  auto v1 = c1.to_double_vector(), v2 = c2.to_double_vector(), av = a.to_double_vector(), bv = b.to_double_vector();
  CHECK(v1 == v2);
  for (int i : {0, 1, 2047, 4095}) // and a few rows against the host
    for (int j : {0, 255, 4095}) {
      double want = 0;
      for (int p = 0; p < s; ++p) want += av[std::size_t(i) * s + p] * bv[std::size_t(p) * s + j];
      CHECK(v1[std::size_t(i) * s + j] == want);
    }
}

TEST_CASE("matmul search space 2 tries ping-pong only where the blocks get several tiles") {
  auto has_ping = [](int m, int n, int k) {
    for (const auto &c : hidet::ops::matmul_candidates(m, n, k, dtypes::f16, 2))
      if (c.label.find("ping-pong") != std::string::npos) return true;
    return false;
  };
  if (!hidet::ops::matmul_wgmma_available()) {
    CHECK_FALSE(has_ping(8192, 8192, 8192)); // the mma.sync candidates of other GPUs and the emulator
    return;
  }
  CHECK(has_ping(8192, 8192, 8192));
  CHECK(has_ping(2048, 3072, 768));
  CHECK_FALSE(has_ping(512, 512, 512)); // 64 tiles of 64x256 on 132 SMs
}

TEST_CASE("ops::matmul runs the tuned template and reuses its choice") {
  TempCache cache;
  const int m = 50, n = 40, k = 96;
  auto cands = hidet::ops::matmul_candidates(m, n, k, dtypes::f32, 1);
  REQUIRE(cands.size() >= 3);
  // The timer favours the third candidate: it is timed third (builds run in parallel, timing
  // goes in candidate order).
  auto calls = std::make_shared<int>(0);
  tuning::set_timer([calls](const tuning::Launch &launch) {
    launch();
    return (*calls)++ == 2 ? 1.0 : 10.0;
  });
  int before = hidet::option::search_space();
  hidet::option::search_space(1);
  Tensor a = make({m, k}, dtypes::f32), b = make({k, n}, dtypes::f32);
  auto want = ref_matmul(a.to_double_vector(), b.to_double_vector(), m, n, k);
  auto tuned = tuning::stats().tuned;
  expect_close(o::matmul(a, b), {m, n}, want);
  CHECK(tuning::stats().tuned == tuned + 1);
  std::string key = tuning::make_key("matmul", str_cat(dtypes::f32, " ", m, "x", n, "x", k, " space 1"));
  auto record = tuning::stored_label(key);
  REQUIRE(record);
  CHECK(*record == cands[2].label);
  // The problem key that benchmarks read the choice back with (bench_decode) is the same.
  CHECK(tuning::make_key("matmul", hidet::ops::matmul_tuning_problem(m, n, k, dtypes::f32)) == key);
  // The same problem again: the kernel is kept, nothing is tuned or timed.
  int timed = *calls;
  expect_close(o::matmul(a, b), {m, n}, want);
  CHECK(*calls == timed);
  CHECK(tuning::stats().tuned == tuned + 1);
  // Batched a with a matrix b folds into rows and uses the templates too; a view at an odd
  // offset is realigned.
  Tensor a3 = make({2, 3, k}, dtypes::f32);
  auto want3 = ref_matmul(a3.to_double_vector(), b.to_double_vector(), 6, n, k);
  expect_close(o::matmul(a3, b), {2, 3, n}, want3);
  hidet::option::search_space(before);
}

TEST_CASE("matmul templates with a batch: both operands batched, one shared, split-k candidates") {
  const int m = 21, n = 19, k = 70, count = 3;
  auto ref = [&](const Tensor &a, const Tensor &b, bool a_has, bool b_has) {
    auto ha = a.to_double_vector(), hb = b.to_double_vector();
    std::vector<double> c;
    for (int z = 0; z < count; ++z) {
      std::vector<double> az(ha.begin() + (a_has ? z * m * k : 0), ha.begin() + (a_has ? z * m * k : 0) + m * k);
      std::vector<double> bz(hb.begin() + (b_has ? z * k * n : 0), hb.begin() + (b_has ? z * k * n : 0) + k * n);
      auto cz = ref_matmul(az, bz, m, n, k);
      c.insert(c.end(), cz.begin(), cz.end());
    }
    return c;
  };
  for (DataType dt : {DataType(dtypes::f32), DataType(dtypes::f16), DataType(dtypes::bf16)}) {
    INFO(dt);
    // Through the operator: [3, m, k] @ [3, k, n], [m, k] @ [3, k, n], [3, m, k] @ [1, k, n].
    Tensor a3 = make({count, m, k}, dt), b3 = make({count, k, n}, dt), a2 = make({m, k}, dt), b1 = make({1, k, n}, dt);
    expect_close(o::matmul(a3, b3), {count, m, n}, ref(a3, b3, true, true));
    expect_close(o::matmul(a2, b3), {count, m, n}, ref(a2, b3, false, true));
    expect_close(o::matmul(a3, b1), {count, m, n}, ref(a3, b1, true, false));
    // Every space-1 candidate of the batched problem (split-k ones included for f32).
    hidet::ops::templates::MatmulBatch batch{count, true, false};
    Tensor b2 = b1.reshape({k, n});
    auto want = ref(a3, b2, true, false);
    for (auto &cand : configs_to_run(hidet::ops::matmul_candidates(m, n, k, dt, 1, batch), 3)) {
      INFO("candidate " << cand.label);
      Tensor c = hidet::full({count, m, n}, std::nan(""), dt);
      cand.build()(a3, b2, c, {});
      expect_close(c, {count, m, n}, want);
    }
  }
}

TEST_CASE("prebuild: under a PrebuildScope pick compiles every candidate, times and records nothing") {
  TempCache cache;
  TagTimer t;
  t.ms = {5.0, 2.0, 9.0};
  tuning::set_timer(t.timer());
  CHECK(tuning::times_candidates());
  std::atomic<int> builds{0};
  std::vector<tuning::Candidate> cands;
  for (int i = 0; i < 3; ++i)
    cands.push_back({str_cat("config ", i), [&, i, tag = t.tag]() -> tuning::Launch {
                       ++builds;
                       if (i == 2) throw ValueError("candidate 2 does not compile");
                       return [tag, i] { *tag = i; };
                     }});
  std::string key = tuning::make_key("prebuild_op", str_cat("case ", std::random_device{}()));
  auto before = tuning::stats();
  {
    tuning::PrebuildScope scope(tuning::steady_seconds());
    bool stopped = false;
    try {
      (void)tuning::pick("prebuild op", key, cands);
    } catch (const tuning::Prebuilt &) {
      stopped = true;
    }
    CHECK(stopped);
  }
  auto after = tuning::stats();
  CHECK(builds == 3);
  CHECK(after.prebuilt == before.prebuilt + 2); // the failed build is left to the tuning run
  CHECK(after.tuned == before.tuned);
  CHECK(*t.tag == -1); // nothing launched
  CHECK_FALSE(tuning::stored_label(key).has_value());
  // Out of the scope the key tunes as usual (the builds hit the compile caches in real templates),
  // even with the budget spent: its compiles are paid, its timing is short.
  hidet::option::tuning_budget(0);
  CHECK(tuning::pick("prebuild op", key, cands) == 1);
  CHECK(tuning::stats().tuned == after.tuned + 1);
  CHECK(tuning::stored_label(key) == std::optional<std::string>("config 1"));
  // A key that was not prebuilt keeps its default then.
  std::string unbuilt = tuning::make_key("prebuild_op", str_cat("unbuilt ", std::random_device{}()));
  CHECK(tuning::pick("prebuild op", unbuilt, cands) == 0);
  hidet::option::tuning_budget(std::numeric_limits<double>::infinity());
  CHECK(builds == 6);
  {
    // A key with a record is answered under the scope too: nothing to prebuild.
    tuning::PrebuildScope scope(tuning::steady_seconds());
    CHECK(tuning::pick("prebuild op", key, cands) == 1);
    CHECK(builds == 6);
    // The budget counts the phase's elapsed time: in a phase that began past the budget a key
    // keeps its default (built by the operator then, with the rest of the graph).
    hidet::option::tuning_budget(5);
    std::string other = tuning::make_key("prebuild_op", str_cat("other ", std::random_device{}()));
    tuning::PrebuildScope late(tuning::steady_seconds() - 6);
    const auto over = tuning::stats().over_budget;
    CHECK(tuning::pick("prebuild op", other, cands) == 0);
    CHECK(tuning::stats().over_budget == over + 1);
    CHECK(builds == 6);
    CHECK_FALSE(tuning::stored_label(other).has_value());
  }
  // end_prebuild charges the phase's wall time to the budget.
  hidet::option::tuning_budget(std::numeric_limits<double>::infinity());
  tuning::end_prebuild(tuning::steady_seconds() - 2);
  CHECK(tuning::stats().budget_spent >= 2);
  hidet::option::tuning_budget(std::numeric_limits<double>::infinity());
}
