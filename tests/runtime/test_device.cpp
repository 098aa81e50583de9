// Devices: parsing and printing, the emulated device description, streams on the emulator.
#include <doctest/doctest.h>

#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/stream.hpp"
#include "hidet/util/env.hpp"

using hidet::Device;

namespace {
// The unit suite runs on the emulated 'cuda' device whether or not a GPU is present.
const bool force_emulation = (hidet::set_cuda_emulation(true), true);
} // namespace

TEST_CASE("device: parse and print") {
  CHECK(Device("cpu") == Device::cpu());
  CHECK(Device("cuda") == Device::cuda(0));
  CHECK(Device("cuda:1") == Device::cuda(1));
  CHECK(Device("cuda:12").index == 12);
  CHECK(Device("cpu").str() == "cpu");
  CHECK(Device("cuda").str() == "cuda:0");
  CHECK(Device::cuda(3).str() == "cuda:3");
  CHECK(Device("cpu").is_cpu());
  CHECK(Device("cuda:2").is_cuda());
}

TEST_CASE("device: bad strings throw ValueError listing the accepted forms") {
  for (const char *bad :
       {"gpu", "cuda:", "cuda:x", "CUDA", "cuda:-1", "cpu:0", "", "cuda:1a", "cuda0", " cuda"}) {
    CAPTURE(bad);
    try {
      Device d(bad);
      FAIL("no exception for ", bad, " -> ", d.str());
    } catch (const hidet::ValueError &e) {
      std::string msg = e.what();
      CHECK(msg.find(std::string("'") + bad + "'") != std::string::npos);
      CHECK(msg.find("\"cpu\", \"cuda\" or \"cuda:N\"") != std::string::npos);
    }
  }
}

TEST_CASE("device: a nonexistent cuda index is a ValueError") {
  REQUIRE(hidet::cuda_emulated());
  CHECK(hidet::cuda_device_count() == 1);
  CHECK_NOTHROW(hidet::check_device(Device::cuda(0)));
  CHECK_NOTHROW(hidet::check_device(Device::cpu()));
  try {
    hidet::check_device(Device::cuda(5));
    FAIL("cuda:5 accepted");
  } catch (const hidet::ValueError &e) {
    CHECK(std::string(e.what()).find("cuda:5 does not exist") != std::string::npos);
    CHECK(std::string(e.what()).find("1 emulated CUDA device(s)") != std::string::npos);
  }
  CHECK_THROWS_AS(hidet::device_info(2), hidet::ValueError);
}

TEST_CASE("device: emulated description looks like an H100") {
  const hidet::DeviceInfo &info = hidet::device_info(0);
  CHECK(info.emulated);
  CHECK(info.name == "hidet CPU emulator");
  CHECK(info.max_threads_per_block == 1024);
  CHECK(info.max_shared_per_block == 48 * 1024);
  CHECK(info.max_shared_per_block_optin == 227 * 1024);
  CHECK(info.warp_size == 32);
  CHECK(info.sm_count > 0);
  CHECK(info.total_memory > 0);
  if (hidet::util::env_string_or("HIDET_CUDA_ARCH", "").empty()) {
    CHECK(info.cc_major == 9);
    CHECK(info.cc_minor == 0);
    CHECK(info.arch() == "sm_90a");
  }
}

TEST_CASE("device: arch strings") {
  hidet::DeviceInfo i;
  i.cc_major = 8, i.cc_minor = 0;
  CHECK(i.arch() == "sm_80");
  i.cc_major = 8, i.cc_minor = 6;
  CHECK(i.arch() == "sm_86");
  i.cc_major = 9, i.cc_minor = 0;
  CHECK(i.arch() == "sm_90a");
  int ma = 0, mi = 0;
  using hidet::runtime::detail::parse_arch;
  CHECK(parse_arch("sm_80", ma, mi));
  CHECK((ma == 8 && mi == 0));
  CHECK(parse_arch("sm_90a", ma, mi));
  CHECK((ma == 9 && mi == 0));
  CHECK(parse_arch("8.6", ma, mi));
  CHECK((ma == 8 && mi == 6));
  CHECK(parse_arch("120", ma, mi));
  CHECK((ma == 12 && mi == 0));
  CHECK_FALSE(parse_arch("", ma, mi));
  CHECK_FALSE(parse_arch("sm_x0", ma, mi));
}

TEST_CASE("stream: emulator streams are trivial but behave") {
  hidet::Stream def = hidet::current_stream();
  CHECK(def.is_default());
  CHECK(def.handle() == nullptr);
  hidet::Stream s = hidet::Stream::create();
  CHECK_FALSE(s == def);
  {
    hidet::StreamGuard g(s);
    CHECK(hidet::current_stream() == s);
    hidet::Stream inner = hidet::Stream::create();
    {
      hidet::StreamGuard g2(inner);
      CHECK(hidet::current_stream() == inner);
    }
    CHECK(hidet::current_stream() == s);
  }
  CHECK(hidet::current_stream() == def);
  CHECK_NOTHROW(s.synchronize());
  CHECK_NOTHROW(hidet::synchronize());
  int dummy = 0;
  hidet::Stream ext = hidet::Stream::from_handle(&dummy);
  CHECK(ext.handle() == reinterpret_cast<CUstream>(&dummy));
  CHECK_FALSE(ext.is_default());
  hidet::Event a, b;
  a.record();
  b.record();
  CHECK(b.elapsed_ms_since(a) >= 0.0f);
}

TEST_CASE("driver: error messages name the result and flag sticky errors") {
  // Without a driver the names come out numeric; with one they are the driver's names. Either
  // way the context-lost advice is attached to sticky errors only.
  std::string sticky = hidet::cuda::error_message(CUDA_ERROR_ILLEGAL_ADDRESS, "running k");
  CHECK(sticky.find("running k: ") == 0);
  CHECK(sticky.find("the CUDA context is lost") != std::string::npos);
  CHECK(sticky.find("restart the process") != std::string::npos);
  std::string plain = hidet::cuda::error_message(CUDA_ERROR_INVALID_VALUE, "cuMemcpy");
  CHECK(plain.find("context is lost") == std::string::npos);
  CHECK(hidet::cuda::is_sticky_error(CUDA_ERROR_LAUNCH_FAILED));
  CHECK(hidet::cuda::is_sticky_error(CUDA_ERROR_MISALIGNED_ADDRESS));
  CHECK_FALSE(hidet::cuda::is_sticky_error(CUDA_ERROR_OUT_OF_MEMORY));
  CHECK_THROWS_AS(hidet::cuda::check(CUDA_ERROR_INVALID_VALUE, "x"), hidet::CudaError);
  CHECK_NOTHROW(hidet::cuda::check(CUDA_SUCCESS, "x"));
}

TEST_CASE("driver: kernels compiled for sm_90 on launch as programmatic dependents") {
  // $HIDET_PDL=0 turns it off; the tests run with it unset.
  CHECK(hidet::cuda::programmatic_launch_for("sm_90a"));
  CHECK(hidet::cuda::programmatic_launch_for("sm_90"));
  CHECK(hidet::cuda::programmatic_launch_for("sm_100f"));
  CHECK_FALSE(hidet::cuda::programmatic_launch_for("sm_89"));
  CHECK_FALSE(hidet::cuda::programmatic_launch_for("sm_80"));
  CHECK_FALSE(hidet::cuda::programmatic_launch_for("emulator"));
  CHECK_FALSE(hidet::cuda::programmatic_launch_for(""));
}

TEST_CASE("driver: kernel arguments are packed in their parameter types") {
  using hidet::backend::KernelArg;
  namespace dt = hidet::dtypes;
  int x = 0;
  std::vector<KernelArg> args = {KernelArg::pointer(&x),
                                 KernelArg::integer(dt::i32, -5),
                                 KernelArg::integer(dt::u8, 300),
                                 KernelArg::integer(dt::i64, -(1ll << 40)),
                                 KernelArg::integer(dt::boolean, 7),
                                 KernelArg::floating(dt::f32, 0.1),
                                 KernelArg::floating(dt::f64, 0.1),
                                 KernelArg::floating(dt::f16, 1.0),
                                 KernelArg::floating(dt::bf16, -2.0)};
  hidet::cuda::PackedArgs p = hidet::cuda::pack_kernel_args(args);
  REQUIRE(p.params.size() == args.size());
  CHECK(*static_cast<int **>(p.params[0]) == &x);
  CHECK(*static_cast<std::int32_t *>(p.params[1]) == -5);
  CHECK(p.slots[1] == 0xfffffffbull); // only 4 bytes written
  CHECK(p.slots[2] == 300 % 256);
  CHECK(*static_cast<std::int64_t *>(p.params[3]) == -(1ll << 40));
  CHECK(p.slots[4] == 1);
  CHECK(*static_cast<float *>(p.params[5]) == 0.1f);
  CHECK(*static_cast<double *>(p.params[6]) == 0.1);
  CHECK(p.slots[7] == 0x3c00);
  CHECK(p.slots[8] == 0xc000);
  CHECK_THROWS_WITH_AS(hidet::cuda::pack_kernel_args({KernelArg::floating(dt::i32, 1.5)}),
                       doctest::Contains("kernel argument 0: a floating-point value was given for "
                                         "a int32 parameter"),
                       hidet::ValueError);
}
