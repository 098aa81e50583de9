// Runs with HIDET_LIBCUDA_PATH pointing at a missing library or at the toolkit's stub libcuda:
// the driver is unavailable with a reason, the 'cuda' device falls back to the emulator, and the
// notice saying so is printed on stderr exactly once.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/tensor.hpp"
#include "hidet/util/env.hpp"

TEST_CASE("driver: unavailable driver falls back to the emulator with one notice") {
  std::string path = hidet::util::env_string_or("HIDET_LIBCUDA_PATH", "");
  REQUIRE_MESSAGE(!path.empty(), "run through meson test (sets HIDET_LIBCUDA_PATH)");
  bool stub = path.find("stubs") != std::string::npos;

  // Capture fd 2 in a file while the runtime first decides about the device.
  char tmpl[] = "/tmp/hidet_notice_XXXXXX";
  int fd = ::mkstemp(tmpl);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  int saved = ::dup(2);
  ::dup2(fd, 2);
  bool emulated1 = hidet::cuda_emulated();
  bool emulated2 = hidet::cuda_emulated();
  hidet::Tensor t = hidet::ones({2, 2}, hidet::dtypes::f32, "cuda");
  std::string printed = t.str();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(fd);
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string err = ss.str();
  std::remove(tmpl);

  CHECK(emulated1);
  CHECK(emulated2);
  CHECK_FALSE(hidet::gpu_present());
  std::string why;
  CHECK_FALSE(hidet::cuda::driver_available(&why));
  CAPTURE(why);
  if (stub) {
    CHECK(why.find("stub library") != std::string::npos);
  } else {
    CHECK(why.find("cannot load the CUDA driver library '" + path + "'") != std::string::npos);
  }
  CAPTURE(err);
  std::string notice = "hidet: no CUDA GPU available (" + why +
                       "); the 'cuda' device is served by the CPU emulator (HIDET_EMULATE=1 "
                       "forces this)\n";
  CHECK(err == notice);

  CHECK(t.is_emulated());
  CHECK(printed == "Tensor(shape=(2, 2), dtype='float32', device='cuda:0 (emulator)')\n"
                   "[[1. 1.]\n [1. 1.]]");
  try {
    (void)hidet::cuda::driver();
    FAIL("driver() succeeded without a driver");
  } catch (const hidet::CudaError &e) {
    CHECK(std::string(e.what()).find("the CUDA driver is not available") != std::string::npos);
  }
}
