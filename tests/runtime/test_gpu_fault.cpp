// A kernel that writes through a null pointer: the fault surfaces at the next synchronizing call
// as a CudaError that names the illegal address and says the context is lost and the process
// must be restarted. Own process, because the context really is lost afterwards. Exits with 77
// (SKIP) without a GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>

#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/tensor.hpp"

using namespace hidet;

static const char *null_store_ptx = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry hidet_null_store(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

TEST_CASE("gpu: an illegal address is reported as a lost context") {
  ensure_context(0);
  Tensor t = zeros({4}, dtypes::i32, "cuda");
  std::vector<char> image(null_store_ptx, null_store_ptx + std::strlen(null_store_ptx) + 1);
  CUmodule m = cuda::load_module(image);
  CUfunction f = cuda::get_function(m, "hidet_null_store");
  void *null_ptr = nullptr;
  void *params[] = {&null_ptr};
  cuda::launch(f, {1, 1, 1}, {1, 1, 1}, 0, nullptr, params, "hidet_null_store");
  try {
    (void)t.to_vector<std::int32_t>();
    FAIL("the fault went unnoticed");
  } catch (const CudaError &e) {
    std::string m = e.what();
    CAPTURE(m);
    CHECK(m.find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
    CHECK(m.find("the CUDA context is lost") != std::string::npos);
    CHECK(m.find("restart the process") != std::string::npos);
  }
  // Later calls keep failing with the same advice rather than crashing.
  CHECK_THROWS_WITH_AS(synchronize(), doctest::Contains("context is lost"), CudaError);
}

int main(int argc, char **argv) {
  if (!gpu_present() || cuda_emulated()) {
    std::printf("SKIP: no CUDA GPU, or the emulator is forced\n");
    return 77;
  }
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
