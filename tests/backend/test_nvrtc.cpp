// NVRTC tests: generated code compiles to CUBIN for sm_90a and sm_80 (no GPU needed), compile
// errors carry the kernel name, the options, the log (pointing at the user's file via #line) and
// the dumped source, unsupported archs list the supported ones, and the library search reports
// every path it tried.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <thread>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "codegen_test_kernels.hpp"
#include "hidet/backend/codegen.hpp"
#include "hidet/backend/nvrtc.hpp"
#include "hidet/backend/nvrtc_workers.hpp"
#include "hidet/util/dynlib.hpp"

using namespace hidet;
using namespace hidet::backend;

namespace {
bool has(const std::string &s, const std::string &sub) { return s.find(sub) != std::string::npos; }

/// A fresh empty temp directory for this test binary.
std::filesystem::path temp_dir(const std::string &tag) {
  auto d = std::filesystem::temp_directory_path() /
           ("hidet-test-nvrtc-" + std::to_string(::getpid()) + "-" + tag);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

/// ELF magic at the start of a CUBIN.
bool is_elf(const std::vector<char> &b) {
  return b.size() > 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}
} // namespace

TEST_CASE("nvrtc version and supported archs") {
  int v = nvrtc_version();
  CHECK(v >= 12000);
  auto archs = nvrtc_supported_archs();
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  CHECK(std::find(archs.begin(), archs.end(), 80) != archs.end());
  CHECK(parse_sm_arch("sm_90a") == 90);
  CHECK(parse_sm_arch("sm_100f") == 100);
  CHECK(parse_sm_arch("compute_90") == -1);
  CHECK(parse_sm_arch("sm_") == -1);
  CHECK(parse_sm_arch("sm_90x") == -1);
}

TEST_CASE("naive matmul compiles to CUBIN for sm_90a and sm_80") {
  auto src = generate_cuda(test_kernels::naive_matmul());
  for (const char *arch : {"sm_90a", "sm_80"}) {
    CompileOptions o;
    o.arch = arch;
    auto bin = nvrtc_compile(src.code, "matmul", o);
    MESSAGE("naive matmul, ", std::string(arch), ": NVRTC compile ", bin.compile_ms, " ms, CUBIN ",
            bin.cubin.size(), " bytes");
    CHECK(is_elf(bin.cubin));
    CHECK(bin.arch == arch);
    CHECK_FALSE(bin.from_cache);
    CHECK(bin.compile_ms > 0);
    CHECK(has(bin.ptx, ".entry matmul("));
    CHECK(has(bin.ptx, "matmul.cpp")); // -lineinfo records the user's file from #line
    // The programmatic-dependent-launch wait exists from sm_90 on only.
    CHECK(has(bin.ptx, "griddepcontrol.wait") == (std::string(arch) == "sm_90a"));
    // and the early trigger of a grid of few blocks (backend/cuda_prelude.hpp)
    CHECK(has(bin.ptx, "griddepcontrol.launch_dependents") == (std::string(arch) == "sm_90a"));
  }
}

TEST_CASE("default arch comes from HIDET_CUDA_ARCH, else sm_90a") {
  ::unsetenv("HIDET_CUDA_ARCH");
  CHECK(default_cuda_arch() == "sm_90a");
  ::setenv("HIDET_CUDA_ARCH", "sm_80", 1);
  auto bin = nvrtc_compile(generate_cuda(test_kernels::shared_transpose()).code, "transpose", {});
  CHECK(bin.arch == "sm_80");
  CHECK(has(bin.ptx, ".target sm_80"));
  ::unsetenv("HIDET_CUDA_ARCH");
}

TEST_CASE("a kernel using every intrinsic and dtype compiles (sm_90a, sm_80)") {
  auto src = generate_cuda(test_kernels::every_intrinsic());
  for (const char *arch : {"sm_90a", "sm_80"}) {
    CompileOptions o;
    o.arch = arch;
    o.fast_math = std::string(arch) == "sm_80";
    auto bin = nvrtc_compile(src.code, "every_intrinsic", o);
    CHECK(is_elf(bin.cubin));
    CHECK(has(bin.ptx, ".entry every_intrinsic("));
  }
}

TEST_CASE("compile errors name the kernel, the options, the log and the dumped source") {
  auto dump = temp_dir("fail");
  ::setenv("HIDET_DUMP_DIR", dump.c_str(), 1);
  // A store of a pointer into a float makes NVRTC fail at the statement's user line.
  using namespace hidet::ir;
  Var out = make_var(TensorTypeNode::make(dtypes::f32, {int32(4)}), "out");
  Var p = make_var(pointer_type(scalar_type(dtypes::f32)), "p");
  Stmt bad = BufferStoreStmtNode::make(out, {int32(0)}, p, SourceLoc("my_kernel.cpp", 42));
  auto src = generate_cuda(
      make_module({make_function("broken", {out, p}, bad, void_type(), FuncKind::Kernel)}));
  CompileOptions o;
  o.arch = "sm_80";
  o.extra = {"-DHIDET_TEST_FLAG=1"};
  try {
    nvrtc_compile(src.code, "broken", o);
    FAIL("expected a CudaError");
  } catch (const CudaError &e) {
    std::string m = e.what();
    CHECK(has(m, "NVRTC failed to compile 'broken'"));
    CHECK(has(m, "-arch=sm_80"));
    CHECK(has(m, "-DHIDET_TEST_FLAG=1"));
    CHECK(has(m, "-lineinfo"));
    CHECK(has(m, "my_kernel.cpp(42): error")); // the log points at the user's line
    auto pos = m.find("source: ");
    REQUIRE(pos != std::string::npos);
    std::string path = m.substr(pos + 8, m.find('\n', pos) - pos - 8);
    CHECK(path.rfind(dump.string(), 0) == 0);
    std::ifstream f(path);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(text == src.code);
  }
  ::unsetenv("HIDET_DUMP_DIR");
  // Without HIDET_DUMP_DIR the source still goes to a temp dir.
  try {
    nvrtc_compile("extern \"C\" __global__ void k() { undefined_thing(); }", "k_tmp", o);
    FAIL("expected a CudaError");
  } catch (const CudaError &e) {
    std::string m = e.what();
    auto pos = m.find("source: ");
    REQUIRE(pos != std::string::npos);
    std::string path = m.substr(pos + 8, m.find('\n', pos) - pos - 8);
    CHECK(std::filesystem::exists(path));
    CHECK(has(m, "undefined_thing"));
    std::filesystem::remove(path);
  }
  std::filesystem::remove_all(dump);
}

TEST_CASE("an unsupported arch lists the supported ones") {
  CompileOptions o;
  o.arch = "sm_20";
  CHECK_THROWS_WITH_AS(nvrtc_compile("extern \"C\" __global__ void k() {}", "k", o),
                       doctest::Contains("cannot compile 'k' for arch 'sm_20'"), CudaError);
  o.arch = "compute_90";
  CHECK_THROWS_WITH_AS(nvrtc_compile("extern \"C\" __global__ void k() {}", "k", o),
                       doctest::Contains("supports sm_75, sm_80"), CudaError);
}

TEST_CASE("HIDET_DUMP_DIR keeps .cu, .ptx and .log of each compile") {
  auto dump = temp_dir("dump");
  ::setenv("HIDET_DUMP_DIR", dump.c_str(), 1);
  CompileOptions o;
  o.arch = "sm_80";
  nvrtc_compile(generate_cuda(test_kernels::shared_transpose()).code, "transpose", o);
  ::unsetenv("HIDET_DUMP_DIR");
  std::set<std::string> exts;
  for (auto &e : std::filesystem::directory_iterator(dump)) {
    CHECK(e.path().filename().string().rfind("transpose_", 0) == 0);
    exts.insert(e.path().extension().string());
  }
  CHECK(exts == std::set<std::string>{".cu", ".ptx", ".cubin", ".log"});
  std::filesystem::remove_all(dump);
}

TEST_CASE("library search: HIDET_NVRTC_PATH first, toolkit last; failures list every path") {
  ::setenv("HIDET_NVRTC_PATH", "/nonexistent/libnvrtc.so", 1);
  auto paths = backend::detail::nvrtc_search_paths();
  ::unsetenv("HIDET_NVRTC_PATH");
  REQUIRE(paths.size() >= 5);
  CHECK(paths[0] == "/nonexistent/libnvrtc.so");
  CHECK(paths[1] == "libnvrtc.so.13");
  CHECK(paths[2] == "libnvrtc.so.12");
  CHECK(paths[3] == "libnvrtc.so");
  CHECK(has(paths.back(), cuda_home() + "/lib64/libnvrtc.so"));
  try {
    util::DynamicLibrary::open_or_throw<CudaError>({"/nope/a.so", "libdefinitely_missing.so.7"},
                                                   "test library", "Set HIDET_TEST_LIB.");
    FAIL("expected a CudaError");
  } catch (const CudaError &e) {
    std::string m = e.what();
    CHECK(has(m, "could not load test library"));
    CHECK(has(m, "/nope/a.so: "));
    CHECK(has(m, "libdefinitely_missing.so.7: "));
    CHECK(has(m, "Set HIDET_TEST_LIB."));
  }
}

namespace {
/// Kernels that differ in a constant: `n` sources, each a few tens of ms of NVRTC.
std::vector<std::string> worker_test_sources(int n, int salt) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("extern \"C\" __global__ void k(float *a, const float *b) {\n"
                  "  float s = 0;\n"
                  "  #pragma unroll\n"
                  "  for (int j = 0; j < 64; ++j) s += b[threadIdx.x * 64 + j] * " +
                  std::to_string(i + 1) + ".5f;\n  a[threadIdx.x] = s + " + std::to_string(salt) + ";\n}\n");
  return out;
}

/// Compiles every source at once, one thread each (all start together); the binaries or, for a
/// failed compile, the error's message.
std::vector<std::string> compile_side_by_side(const std::vector<std::string> &sources, std::vector<CompiledBinary> &bins) {
  std::vector<std::string> errors(sources.size());
  bins.assign(sources.size(), {});
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < sources.size(); ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < int(sources.size())) std::this_thread::yield();
      CompileOptions o;
      o.arch = "sm_80";
      try {
        bins[i] = nvrtc_compile(sources[i], "worker_test_" + std::to_string(i), o);
      } catch (const CudaError &e) {
        errors[i] = e.what();
      }
    });
  for (auto &t : threads) t.join();
  return errors;
}
} // namespace

TEST_CASE("compiles that overlap run in NVRTC worker processes, with the same binaries") {
  // The worker is built beside libhidet (src/meson.build), which this test links.
  REQUIRE_MESSAGE(!nvrtc_worker_path().empty(), "hidet-nvrtc-worker not found beside libhidet");
  REQUIRE(nvrtc_worker_limit() >= 1);
  const auto before = nvrtc_worker_stats();
  // Up to five rounds of six compiles at once, until one has gone to a worker (a compile stays in
  // this process when no other runs here, which threads started together make unlikely).
  std::vector<CompiledBinary> bins;
  for (int round = 0; round < 5 && nvrtc_worker_stats().compiles == before.compiles; ++round) {
    auto sources = worker_test_sources(6, round);
    auto errors = compile_side_by_side(sources, bins);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      INFO("source ", i, " of round ", round);
      REQUIRE(errors[i].empty());
      // The same bytes as NVRTC in this process gives.
      NvrtcRun here = nvrtc_run_here(sources[i], "worker_test_" + std::to_string(i) + ".cu",
                                     nvrtc_options(CompileOptions{"sm_80"}));
      REQUIRE(here.result == 0);
      CHECK(bins[i].cubin == here.cubin);
      CHECK(bins[i].ptx == here.ptx);
      CHECK(bins[i].compile_ms > 0);
    }
  }
  auto after = nvrtc_worker_stats();
  CHECK(after.compiles > before.compiles);
  CHECK(after.spawned >= 1);
  CHECK(after.spawned <= std::size_t(nvrtc_worker_limit()));
  CHECK(after.running == after.pids.size());

  SUBCASE("a compile error in a worker reads as one here") {
    std::vector<std::string> bad(4, "extern \"C\" __global__ void k() { undefined_in_worker(); }\n");
    auto errors = compile_side_by_side(bad, bins);
    for (const auto &e : errors) {
      CHECK(has(e, "NVRTC failed to compile 'worker_test_"));
      CHECK(has(e, "undefined_in_worker"));
      CHECK(has(e, "-arch=sm_80"));
    }
  }

  SUBCASE("a worker that dies is replaced, and its compile runs here") {
    for (long pid : nvrtc_worker_stats().pids)
      ::kill(pid_t(pid), SIGKILL);
    const auto killed = nvrtc_worker_stats();
    REQUIRE(killed.running >= 1);
    auto sources = worker_test_sources(6, 100);
    auto errors = compile_side_by_side(sources, bins);
    for (std::size_t i = 0; i < sources.size(); ++i) {
      CHECK(errors[i].empty());
      CHECK(is_elf(bins[i].cubin));
    }
    const auto later = nvrtc_worker_stats();
    CHECK(later.fallbacks > killed.fallbacks); // at least one idle worker was found dead
    CHECK(later.running == later.pids.size());
  }
}
