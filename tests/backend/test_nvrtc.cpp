// NVRTC tests: generated code compiles to CUBIN for sm_90a and sm_80 (no GPU needed), compile
// errors carry the kernel name, the options, the log (pointing at the user's file via #line) and
// the dumped source, unsupported archs list the supported ones, and the library search reports
// every path it tried.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "codegen_test_kernels.hpp"
#include "hidet/backend/codegen.hpp"
#include "hidet/backend/nvrtc.hpp"
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
