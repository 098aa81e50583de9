// Compiled-kernel cache tests (memory, then disk; corrupt entries; HIDET_DISABLE_CACHE; key
// ingredients), plus the helpers the cache is built on: util/hash.hpp and util/env.hpp.
// Every test uses a temp HIDET_CACHE_DIR, never the user's home cache.
#include <doctest/doctest.h>

#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>

#include "codegen_test_kernels.hpp"
#include "hidet/backend/codegen.hpp"
#include "hidet/backend/compile_cache.hpp"
#include "hidet/util/env.hpp"
#include "hidet/util/hash.hpp"

using namespace hidet;
using namespace hidet::backend;
namespace fs = std::filesystem;

namespace {

/// Points HIDET_CACHE_DIR at a fresh temp dir for the life of the object; clears the in-process
/// cache and the counters.
struct TempCache {
  fs::path dir;
  explicit TempCache(const std::string &tag) {
    dir =
        fs::temp_directory_path() / ("hidet-test-cache-" + std::to_string(::getpid()) + "-" + tag);
    fs::remove_all(dir);
    ::setenv("HIDET_CACHE_DIR", dir.c_str(), 1);
    ::unsetenv("HIDET_DISABLE_CACHE");
    ::unsetenv("HIDET_DUMP_DIR");
    clear_memory_compile_cache();
    reset_compile_cache_stats();
  }
  ~TempCache() {
    fs::remove_all(dir);
    ::unsetenv("HIDET_CACHE_DIR");
  }
};

std::string matmul_source() { return generate_cuda(test_kernels::naive_matmul()).code; }
CompileOptions sm80() {
  CompileOptions o;
  o.arch = "sm_80";
  return o;
}
std::size_t count_files(const fs::path &d) {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(d, ec); !ec && it != fs::directory_iterator(); ++it)
    ++n;
  return n;
}

} // namespace

TEST_CASE("hash128: deterministic, 32 hex digits, sensitive to every byte and to framing") {
  using util::hash128;
  CHECK(hash128("hello").hex() == hash128("hello").hex());
  CHECK(hash128("hello").hex().size() == 32);
  CHECK(hash128("").hex() != hash128(std::string(1, '\0')).hex());
  CHECK(hash128("hello") != hash128("hellp"));
  CHECK(hash128("abc", 1) != hash128("abc", 2));
  // Split updates equal one update.
  util::Hasher128 a, b;
  a.update("hello world", 11);
  b.update("hello", 5).update(" world", 6);
  CHECK(a.finish() == b.finish());
  // Framed fields do not run together.
  CHECK(util::Hasher128().add("ab").add("c").finish() !=
        util::Hasher128().add("a").add("bc").finish());
  // Avalanche: flipping one input bit flips about half of the 128 output bits, in both halves.
  std::mt19937_64 rng(12345);
  double total = 0;
  int trials = 0, worst_lo = 128, worst_hi = 128;
  std::set<std::string> seen;
  for (int t = 0; t < 200; ++t) {
    std::string s(1 + rng() % 40, '\0');
    for (auto &c : s)
      c = char(rng());
    auto h0 = hash128(s);
    seen.insert(h0.hex());
    std::string s2 = s;
    s2[rng() % s2.size()] ^= char(1u << (rng() % 8));
    auto h1 = hash128(s2);
    int lo = std::popcount(h0.lo ^ h1.lo), hi = std::popcount(h0.hi ^ h1.hi);
    worst_lo = std::min(worst_lo, lo);
    worst_hi = std::min(worst_hi, hi);
    total += lo + hi;
    ++trials;
  }
  CHECK(total / trials > 56);
  CHECK(total / trials < 72);
  CHECK(worst_lo > 10);
  CHECK(worst_hi > 10);
  CHECK(seen.size() >= 195); // random strings (lengths may collide, content will not)
}

TEST_CASE("env helpers") {
  ::setenv("HIDET_TEST_ENV", "YES", 1);
  CHECK(util::env_bool("HIDET_TEST_ENV"));
  ::setenv("HIDET_TEST_ENV", "0", 1);
  CHECK_FALSE(util::env_bool("HIDET_TEST_ENV", true));
  ::setenv("HIDET_TEST_ENV", "maybe", 1);
  CHECK(util::env_bool("HIDET_TEST_ENV", true));
  ::setenv("HIDET_TEST_ENV", "-42", 1);
  CHECK(util::env_int("HIDET_TEST_ENV", 7) == -42);
  ::setenv("HIDET_TEST_ENV", "12abc", 1);
  CHECK(util::env_int("HIDET_TEST_ENV", 7) == 7);
  CHECK(util::env_string_or("HIDET_TEST_ENV", "x") == "12abc");
  ::unsetenv("HIDET_TEST_ENV");
  CHECK_FALSE(util::env_string("HIDET_TEST_ENV").has_value());
  CHECK(util::env_string_or("HIDET_TEST_ENV", "x") == "x");
  CHECK_FALSE(util::env_bool("HIDET_TEST_ENV"));
}

TEST_CASE("cache dir: HIDET_CACHE_DIR, else XDG_CACHE_HOME/hidet, else ~/.cache/hidet") {
  ::unsetenv("HIDET_CACHE_DIR");
  std::string old_xdg = util::env_string_or("XDG_CACHE_HOME", "");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg-test", 1);
  CHECK(kernel_cache_dir() == fs::path("/tmp/xdg-test/hidet/kernels"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(cache_root_dir() == fs::path(util::env_string_or("HOME", "")) / ".cache" / "hidet");
  ::setenv("HIDET_CACHE_DIR", "/tmp/hc", 1);
  CHECK(kernel_cache_dir() == fs::path("/tmp/hc/kernels"));
  ::unsetenv("HIDET_CACHE_DIR");
  if (!old_xdg.empty())
    ::setenv("XDG_CACHE_HOME", old_xdg.c_str(), 1);
}

TEST_CASE("cache key: source, options (order-insensitive), arch") {
  std::string src = matmul_source();
  CompileOptions a = sm80(), b = sm80();
  a.extra = {"-DA=1", "-DB=2"};
  b.extra = {"-DB=2", "-DA=1"};
  CHECK(compile_cache_key(src, a) == compile_cache_key(src, b));
  CHECK(compile_cache_key(src, a) != compile_cache_key(src + " ", a));
  CompileOptions c = a;
  c.arch = "sm_90a";
  CHECK(compile_cache_key(src, a) != compile_cache_key(src, c));
  CompileOptions d = a;
  d.fast_math = true;
  CHECK(compile_cache_key(src, a) != compile_cache_key(src, d));
  CHECK(compile_cache_key(src, a).size() == 32);
}

TEST_CASE("second compile hits memory, then disk after clearing memory") {
  TempCache tc("hits");
  std::string src = matmul_source();
  auto first = compile_cuda_cached(src, "matmul", sm80());
  CHECK_FALSE(first.from_cache);
  MESSAGE("naive matmul cold NVRTC compile (sm_80): ", first.compile_ms, " ms");
  auto s = compile_cache_stats();
  CHECK(s.compiles == 1);
  CHECK(s.disk_writes == 1);
  CHECK(fs::exists(compile_cache_entry_path(compile_cache_key(src, sm80()))));

  auto second = compile_cuda_cached(src, "matmul", sm80());
  CHECK(second.from_cache);
  CHECK(second.cubin == first.cubin);
  CHECK(compile_cache_stats().memory_hits == 1);

  clear_memory_compile_cache();
  auto third = compile_cuda_cached(src, "matmul", sm80());
  CHECK(third.from_cache);
  CHECK(third.cubin == first.cubin);
  CHECK(third.ptx == first.ptx);
  CHECK(third.arch == "sm_80");
  s = compile_cache_stats();
  CHECK(s.disk_hits == 1);
  CHECK(s.compiles == 1);
  // No temp files are left behind.
  CHECK(count_files(kernel_cache_dir()) == 1);
}

TEST_CASE("a corrupt or truncated entry is recompiled and replaced") {
  TempCache tc("corrupt");
  std::string src = matmul_source();
  auto good = compile_cuda_cached(src, "matmul", sm80());
  fs::path entry = compile_cache_entry_path(compile_cache_key(src, sm80()));
  auto damage = [&](auto fn) {
    std::string data;
    {
      std::ifstream f(entry, std::ios::binary);
      data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    fn(data);
    std::ofstream(entry, std::ios::binary | std::ios::trunc)
        .write(data.data(), std::streamsize(data.size()));
    clear_memory_compile_cache();
  };
  std::uint64_t compiles = compile_cache_stats().compiles;
  int n = 0;
  for (auto fn : std::vector<std::function<void(std::string &)>>{
           [](std::string &d) { d[d.size() / 2] ^= 0x40; },  // payload bit flip
           [](std::string &d) { d.resize(d.size() - 100); }, // truncated
           [](std::string &d) { d[0] = 'X'; },               // bad magic
           [](std::string &d) { d.clear(); }}) {             // empty
    damage(fn);
    auto again = compile_cuda_cached(src, "matmul", sm80());
    ++n;
    CHECK_FALSE(again.from_cache);
    CHECK(again.cubin == good.cubin);
    CHECK(compile_cache_stats().compiles == compiles + n);
    CHECK(compile_cache_stats().corrupt_entries == std::uint64_t(n));
    // Replaced by a good entry.
    auto bytes = backend::detail::read_file_bytes(entry);
    REQUIRE(bytes.has_value());
    CHECK(backend::detail::decode_cache_entry(*bytes, compile_cache_key(src, sm80())).has_value());
  }
  clear_memory_compile_cache();
  CHECK(compile_cuda_cached(src, "matmul", sm80()).from_cache);
  // An entry renamed to another key's file name is rejected (the key is stored inside).
  CompileOptions other = sm80();
  other.extra = {"-DOTHER"};
  fs::copy_file(entry, compile_cache_entry_path(compile_cache_key(src, other)));
  clear_memory_compile_cache();
  CHECK_FALSE(compile_cuda_cached(src, "matmul", other).from_cache);
}

TEST_CASE("HIDET_DISABLE_CACHE=1 skips the disk cache") {
  TempCache tc("disabled");
  ::setenv("HIDET_DISABLE_CACHE", "1", 1);
  std::string src = matmul_source();
  compile_cuda_cached(src, "matmul", sm80());
  CHECK_FALSE(fs::exists(kernel_cache_dir()));
  clear_memory_compile_cache();
  CHECK_FALSE(compile_cuda_cached(src, "matmul", sm80()).from_cache);
  CHECK(compile_cache_stats().compiles == 2);
  CHECK(compile_cache_stats().disk_writes == 0);
  // The in-process cache still works.
  CHECK(compile_cuda_cached(src, "matmul", sm80()).from_cache);
  ::unsetenv("HIDET_DISABLE_CACHE");
}

TEST_CASE("HIDET_DUMP_DIR keeps <name>_<hash>.cu, .ptx and .log for each compiled kernel") {
  TempCache tc("dump");
  fs::path dump = tc.dir / "dump";
  ::setenv("HIDET_DUMP_DIR", dump.c_str(), 1);
  compile_cuda_cached(matmul_source(), "matmul", sm80());
  ::unsetenv("HIDET_DUMP_DIR");
  std::set<std::string> exts;
  std::string stem;
  for (auto &e : fs::directory_iterator(dump)) {
    exts.insert(e.path().extension().string());
    stem = e.path().stem().string();
  }
  CHECK(exts == std::set<std::string>{".cu", ".ptx", ".cubin", ".log"});
  CHECK(stem.rfind("matmul_", 0) == 0);
  CHECK(stem.size() == 7 + 16);
}

TEST_CASE("compile errors pass through the cache and are not cached") {
  TempCache tc("error");
  ::setenv("HIDET_DUMP_DIR", (tc.dir / "dump").c_str(), 1);
  CHECK_THROWS_AS(compile_cuda_cached("this is not CUDA", "junk", sm80()), CudaError);
  CHECK_THROWS_AS(compile_cuda_cached("this is not CUDA", "junk", sm80()), CudaError);
  ::unsetenv("HIDET_DUMP_DIR");
  CHECK(compile_cache_stats().compiles == 0);
  CHECK(count_files(kernel_cache_dir()) == 0);
}
