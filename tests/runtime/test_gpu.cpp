// The runtime's real GPU paths: device description, device memory and its cache, copies in every
// direction, streams and events, contexts on new threads, module loading and launch. Exits with
// 77 (meson's SKIP) when no GPU is usable or the emulator is forced.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/tensor.hpp"

using namespace hidet;

TEST_CASE("gpu: the driver and the device description") {
  std::string why;
  REQUIRE(cuda::driver_available(&why));
  CHECK(cuda::driver_table().version >= 11000);
  const DeviceInfo &info = device_info(0);
  CHECK_FALSE(info.emulated);
  CHECK_FALSE(info.name.empty());
  CHECK(info.cc_major >= 7);
  CHECK(info.sm_count > 0);
  CHECK(info.max_threads_per_block == 1024);
  CHECK(info.max_shared_per_block == 48 * 1024);
  CHECK(info.max_shared_per_block_optin >= info.max_shared_per_block);
  CHECK(info.warp_size == 32);
  CHECK(info.total_memory > (std::size_t(1) << 30));
  if (info.cc_major == 9 && info.cc_minor == 0) CHECK(info.arch() == "sm_90a");
  MESSAGE(info.name, " ", info.arch(), " ", info.sm_count, " SMs");
  CHECK(cuda::error_name(CUDA_ERROR_OUT_OF_MEMORY) == "CUDA_ERROR_OUT_OF_MEMORY");
  CHECK(cuda::error_message(CUDA_ERROR_ILLEGAL_ADDRESS, "k").find("CUDA_ERROR_ILLEGAL_ADDRESS") !=
        std::string::npos);
}

TEST_CASE("gpu: host <-> device copies round-trip every dtype") {
  Tensor f = asarray({1.5f, -2.f, 3.25f, 1e30f}, {2, 2}, "cuda");
  CHECK_FALSE(f.is_emulated());
  CHECK_FALSE(f.is_host_memory());
  CHECK(f.str().find("device='cuda:0')") != std::string::npos);
  CHECK(f.to_vector<float>() == std::vector<float>{1.5f, -2.f, 3.25f, 1e30f});
  CHECK(f.cpu().to_vector<float>() == f.to_vector<float>());
  CHECK(asarray({1.0, 0.5, -3.0}, {3}, dtypes::f16).to_double_vector() ==
        std::vector<double>{1.0, 0.5, -3.0});
  CHECK(asarray({1.0, -0.375}, {2}, dtypes::bf16).to_double_vector() ==
        std::vector<double>{1.0, -0.375});
  CHECK(asarray({true, false, true}).to_vector<bool>() == std::vector<bool>{true, false, true});
  CHECK(asarray(std::vector<std::int64_t>{-5, 1ll << 40}).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{-5, 1ll << 40});
  CHECK(zeros({1000}, dtypes::i32).to_vector<std::int32_t>() == std::vector<std::int32_t>(1000, 0));
  CHECK(ones({3}, dtypes::f64).to_vector<double>() == std::vector<double>{1, 1, 1});
  // A large copy (several MB) through cpu and back.
  manual_seed(5);
  Tensor big = randn({1 << 20}, dtypes::f32, "cuda");
  manual_seed(5);
  Tensor host = randn({1 << 20}, dtypes::f32, "cpu");
  CHECK(big.to_vector<float>() == host.to_vector<float>());
  Tensor again = host.cuda().cpu().cuda();
  CHECK(again.to_vector<float>() == host.to_vector<float>());
}

TEST_CASE("gpu: device-to-device copies and views") {
  Tensor a = asarray({1, 2, 3, 4, 5, 6}, {2, 3}, "cuda");
  Tensor b = empty({2, 3}, dtypes::i32, "cuda");
  runtime::detail::copy_bytes(b.data_ptr(), b.device(), false, a.data_ptr(), a.device(), false,
                              a.nbytes());
  CHECK(b.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, 2, 3, 4, 5, 6});
  CHECK(b.reshape({3, 2}).str() ==
        "Tensor(shape=(3, 2), dtype='int32', device='cuda:0')\n[[1 2]\n [3 4]\n [5 6]]");
  if (cuda_device_count() > 1) {
    Tensor c = a.to("cuda:1");
    CHECK(c.device() == Device::cuda(1));
    CHECK(c.to("cuda:0").to_vector<std::int32_t>() == a.to_vector<std::int32_t>());
  }
}

TEST_CASE("gpu: the caching allocator reuses device blocks and reports out of memory") {
  void *first;
  {
    Tensor t = empty({1000}, dtypes::f32, "cuda");
    first = t.data_ptr();
    CHECK(reinterpret_cast<std::uintptr_t>(first) % 256 == 0);
  }
  auto before = memory_stats("cuda");
  Tensor u = empty({1000}, dtypes::f32, "cuda");
  CHECK(u.data_ptr() == first);
  CHECK(memory_stats("cuda").reuses == before.reuses + 1);
  CHECK(memory_stats("cuda").raw_allocations == before.raw_allocations);
  try {
    Tensor huge = empty({std::int64_t(1) << 50}, dtypes::u8, "cuda"); // 1 PiB
    FAIL("a 1 PiB allocation succeeded");
  } catch (const CudaError &e) {
    std::string m = e.what();
    CHECK(m.find("out of memory allocating 1125899906842624 bytes on cuda:0") != std::string::npos);
    CHECK(m.find("device free/total") != std::string::npos);
  }
  CHECK(ones({4}, dtypes::f32, "cuda").to_vector<float>() == std::vector<float>{1, 1, 1, 1});
  empty_cache();
  CHECK(memory_stats("cuda").cached_bytes == 0);
}

TEST_CASE("gpu: a freed block is reused only on the stream it was allocated on") {
  Stream a = Stream::create(), b = Stream::create();
  void *p;
  {
    StreamGuard on_a(a);
    Tensor t = empty({3000}, dtypes::f32, "cuda");
    p = t.data_ptr();
  } // freed while a's work on it may still run
  void *q;
  {
    StreamGuard on_b(b);
    Tensor u = empty({3000}, dtypes::f32, "cuda");
    q = u.data_ptr();
    CHECK(q != p); // b's work would race with a's on the block
  }
  {
    StreamGuard on_a(a);
    Tensor v = empty({3000}, dtypes::f32, "cuda");
    CHECK(v.data_ptr() == p); // a's later work is ordered after its earlier work
  }
  {
    StreamGuard on_b(b);
    CHECK(empty({3000}, dtypes::f32, "cuda").data_ptr() == q);
  }
  a.synchronize(), b.synchronize();
}

TEST_CASE("gpu: streams, guards, external handles and events") {
  Stream s = Stream::create();
  REQUIRE(s.handle() != nullptr);
  Event start, stop;
  {
    StreamGuard g(s);
    CHECK(current_stream() == s);
    start.record();
    Tensor a = randn({1 << 16}, dtypes::f32, "cuda");
    Tensor z = zeros({1 << 16}, dtypes::f32, "cuda"); // memset queued on s
    stop.record();
    CHECK(z.to_vector<float>() == std::vector<float>(1 << 16, 0.0f));
    CHECK(a.cpu().to_vector<float>() == a.to_vector<float>());
  }
  CHECK(stop.elapsed_ms_since(start) >= 0.0f);
  CHECK(current_stream().is_default());
  Stream ext = Stream::from_handle(s.handle());
  CHECK(ext.handle() == s.handle());
  CHECK_NOTHROW(ext.synchronize());
  CHECK_NOTHROW(synchronize());
}

TEST_CASE("gpu: a fresh thread gets the context on first use") {
  std::vector<float> got;
  std::string err;
  std::thread th([&] {
    try {
      got = asarray({7.f, 8.f}).to_vector<float>();
    } catch (const std::exception &e) {
      err = e.what();
    }
  });
  th.join();
  CHECK(err == "");
  CHECK(got == std::vector<float>{7.f, 8.f});
}

// A hand-written PTX kernel: out[i] = i * scale for i < n.
static const char *iota_ptx = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry hidet_iota(.param .u64 out, .param .u32 n, .param .u32 scale)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r6, [scale];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mad.lo.s32 %r5, %r3, %r4, %r2;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  mul.lo.s32 %r7, %r5, %r6;
  st.global.u32 [%rd4], %r7;
DONE:
  ret;
}
)";

TEST_CASE("gpu: load_module, get_function and launch") {
  ensure_context(0);
  std::vector<char> image(iota_ptx, iota_ptx + std::strlen(iota_ptx) + 1);
  CUmodule m = cuda::load_module(image);
  CUfunction f = cuda::get_function(m, "hidet_iota");
  const std::uint32_t n = 1000, scale = 3;
  Tensor out = zeros({n}, dtypes::i32, "cuda");
  void *ptr = out.data_ptr();
  void *params[] = {&ptr, const_cast<std::uint32_t *>(&n), const_cast<std::uint32_t *>(&scale)};
  cuda::launch(f, {(n + 127) / 128, 1, 1}, {128, 1, 1}, 0, stream_for(out.device()), params,
               "hidet_iota");
  std::vector<std::int32_t> v = out.to_vector<std::int32_t>();
  for (std::uint32_t i = 0; i < n; ++i)
    REQUIRE(v[i] == std::int32_t(i * scale));
  CHECK_THROWS_WITH_AS(cuda::get_function(m, "no_such_kernel"),
                       doctest::Contains("kernel 'no_such_kernel' not found"), CudaError);
  CHECK_THROWS_WITH_AS(cuda::launch(f, {1, 1, 1}, {4096, 1, 1}, 0, nullptr, params, "hidet_iota"),
                       doctest::Contains("launching kernel 'hidet_iota' with grid (1, 1, 1), "
                                         "block (4096, 1, 1)"),
                       CudaError);
  // The same kernel through launch_with_args and backend::KernelArg.
  Tensor out2 = zeros({n}, dtypes::i32, "cuda");
  runtime::launch_with_args(
      f, "hidet_iota", {(n + 63) / 64, 1, 1}, {64, 1, 1}, 0, runtime::current_stream().handle(),
      {backend::KernelArg::pointer(out2.data_ptr()), backend::KernelArg::integer(dtypes::u32, n),
       backend::KernelArg::integer(dtypes::u32, 5)});
  std::vector<std::int32_t> v2 = out2.to_vector<std::int32_t>();
  for (std::uint32_t i = 0; i < n; ++i)
    REQUIRE(v2[i] == std::int32_t(i * 5));
  CHECK_NOTHROW(runtime::set_max_dynamic_smem(f, 64 * 1024, "hidet_iota"));
  cuda::launch(f, {1, 1, 1}, {32, 1, 1}, 64 * 1024, nullptr, params, "hidet_iota");
  CHECK_NOTHROW(synchronize());
  cuda::unload_module(m);
  std::vector<char> junk = {'n', 'o', 't', ' ', 'a', ' ', 'c', 'u', 'b', 'i', 'n', 0};
  CHECK_THROWS_WITH_AS(cuda::load_module(junk), doctest::Contains("cuModuleLoadData"), CudaError);
  // The context survived the (non-sticky) errors.
  CHECK(ones({2}, dtypes::f32, "cuda").to_vector<float>() == std::vector<float>{1, 1});
}

int main(int argc, char **argv) {
  std::string why;
  if (!gpu_present()) {
    cuda::driver_available(&why);
    std::printf("SKIP: no CUDA GPU (%s)\n", why.c_str());
    return 77;
  }
  if (cuda_emulated()) {
    std::printf("SKIP: the emulator is forced (HIDET_EMULATE=1)\n");
    return 77;
  }
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  return ctx.run();
}
