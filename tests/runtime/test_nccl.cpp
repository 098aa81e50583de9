// NCCL's loader (runtime/nccl.hpp). Run twice by meson: as is (NCCL found where a wheel or the
// system has it, else the error), and with HIDET_NCCL_LIBRARY naming a file that does not exist.
#include <doctest/doctest.h>

#include "hidet/runtime/distributed.hpp"
#include "hidet/runtime/nccl.hpp"
#include "hidet/util/env.hpp"

using namespace hidet;

TEST_CASE("nccl: the library loads with its version, or the error lists every path tried") {
  auto forced = util::env_string("HIDET_NCCL_LIBRARY");
  auto candidates = nccl::library_candidates();
  REQUIRE(!candidates.empty());
  CHECK(candidates.back() == "libnccl.so.2");
  std::string why;
  bool ok = nccl::available(&why);
  if (forced && forced->find("/nonexistent/") != std::string::npos) {
    CHECK_FALSE(ok);
    CHECK(why.find("could not load NCCL") != std::string::npos);
    CHECK(why.find(*forced) != std::string::npos);
    CHECK(why.find("HIDET_NCCL_LIBRARY") != std::string::npos);
    CHECK_THROWS_WITH_AS(nccl::library(), doctest::Contains(forced->c_str()),
                         distributed::DistributedError);
    CHECK_THROWS_AS(nccl::library(), distributed::DistributedError); // the same error every time
  } else if (ok) {
    const auto &lib = nccl::library();
    MESSAGE("NCCL ", lib.version_str(), " from ", lib.path);
    CHECK(lib.version >= 21400);
    CHECK(lib.path.find("libnccl") != std::string::npos);
    CHECK(nccl::error_text(nccl::InvalidUsage).find("ncclInvalidUsage") == 0);
  } else {
    MESSAGE("no NCCL here: ", why);
    CHECK(why.find("libnccl.so.2") != std::string::npos);
  }
  // The emulator's ids need no NCCL.
  set_cuda_emulation(true);
  CHECK(distributed::get_unique_id().emulated());
}
