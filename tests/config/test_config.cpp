// Build modes (include/hidet/config.hpp): this executable is linked against the static libhidet
// in compiled mode and runs a kernel through it; a program that mixes header-only and compiled
// translation units stops at start-up with a message naming the fix.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <doctest/doctest.h>

#include "hidet/hidet.hpp"

using namespace hidet::lang;

TEST_CASE("compiled mode: this unit is compiled against libhidet") {
  CHECK(HIDET_HEADER_ONLY == 0);
}

TEST_CASE("compiled mode, static libhidet: build and run a kernel") {
  auto mod = script_module("config_axpy");
  mod.kernel("axpy", {f32[37], f32[37]}, [&](Tensor x, Tensor y) {
    attrs.cuda.grid_dim = 1;
    attrs.cuda.block_dim = 64;
    Expr i = threadIdx.x;
    if_(i < 37, [&] { y[i] = 2.0f * x[i] + y[i]; });
  });
  auto cm = mod.build();
  auto x = hidet::randn({37}, hidet::f32, "cuda");
  auto y = hidet::randn({37}, hidet::f32, "cuda");
  auto xv = x.to_double_vector(), yv = y.to_double_vector();
  cm(x, y);
  auto out = y.to_double_vector();
  for (std::size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == doctest::Approx(2 * xv[i] + yv[i]).epsilon(1e-6));
}

TEST_CASE("a program mixing header-only and compiled units stops with an explanation") {
  const char *exe = std::getenv("HIDET_MIXED_MODES_EXE");
  REQUIRE_MESSAGE(exe != nullptr, "HIDET_MIXED_MODES_EXE must name the mixed-modes program (set by meson)");
  std::string cmd = std::string(exe) + " 2>&1";
  FILE *p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), int(buf.size()), p)) out += buf.data();
  int status = pclose(p);
  INFO("output: " << out);
  CHECK(status != 0);
  CHECK(out.find("mixes header-only translation units with libhidet") != std::string::npos);
  CHECK(out.find("HIDET_SEPARATE_COMPILATION") != std::string::npos);
  CHECK(out.find("main ran") == std::string::npos);
}
