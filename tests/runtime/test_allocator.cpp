// The caching allocator on the host path (the cpu device and the emulated cuda device).
#include <doctest/doctest.h>

#include <cstdint>

#include "hidet/runtime/tensor.hpp"

using hidet::CachingAllocator;

TEST_CASE("allocator: size rounding") {
  CHECK(CachingAllocator::round_size(0) == 512);
  CHECK(CachingAllocator::round_size(1) == 512);
  CHECK(CachingAllocator::round_size(512) == 512);
  CHECK(CachingAllocator::round_size(513) == 1024);
  CHECK(CachingAllocator::round_size(1 << 20) == (1 << 20));
  CHECK(CachingAllocator::round_size((1 << 20) + 1) == (2u << 20));
  CHECK(CachingAllocator::round_size((2 << 20) + 1) == (4u << 20));
  CHECK(CachingAllocator::round_size(5'000'000) == (6u << 20));
}

TEST_CASE("allocator: freed blocks are reused, aligned, and counted") {
  CachingAllocator a(hidet::Device::cpu(), true);
  void *p = a.allocate(1000);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
  auto s = a.stats();
  CHECK(s.in_use_bytes == 1024);
  CHECK(s.raw_allocations == 1);
  a.deallocate(p);
  s = a.stats();
  CHECK(s.in_use_bytes == 0);
  CHECK(s.cached_bytes == 1024);
  void *q = a.allocate(1020); // same rounded size: same block
  CHECK(q == p);
  s = a.stats();
  CHECK(s.reuses == 1);
  CHECK(s.raw_allocations == 1);
  CHECK(s.cached_bytes == 0);
  void *r = a.allocate(3000); // other size: fresh block
  CHECK(r != q);
  CHECK(reinterpret_cast<std::uintptr_t>(r) % 256 == 0);
  CHECK(a.stats().peak_in_use_bytes == 1024 + 3072);
  a.deallocate(q);
  a.deallocate(r);
  a.empty_cache();
  s = a.stats();
  CHECK(s.cached_bytes == 0);
  CHECK(s.raw_frees == 2);
  CHECK(s.in_use_bytes == 0);
}

TEST_CASE("allocator: tensors return their storage to the cache") {
  for (const char *dev : {"cpu", "cuda"}) {
    CAPTURE(dev);
    hidet::Device d(dev);
    void *first;
    {
      hidet::Tensor t = hidet::empty({33, 7}, hidet::dtypes::f32, d);
      first = t.data_ptr();
      CHECK(reinterpret_cast<std::uintptr_t>(first) % 256 == 0);
      hidet::Tensor view = t.reshape({7, 33}); // shares the storage
      t = hidet::Tensor();
      CHECK(hidet::memory_stats(d).in_use_bytes >= 1024);
      CHECK(view.data_ptr() == first);
    }
    auto before = hidet::memory_stats(d);
    hidet::Tensor u = hidet::zeros({7, 33}, hidet::dtypes::i32, d);
    CHECK(u.data_ptr() == first);
    CHECK(hidet::memory_stats(d).reuses == before.reuses + 1);
  }
  hidet::empty_cache();
  CHECK(hidet::memory_stats("cpu").cached_bytes == 0);
}

TEST_CASE("allocator: out of memory is an error naming the sizes") {
  std::int64_t huge = std::int64_t(1) << 40;
  try {
    hidet::Tensor t = hidet::empty({huge, 1 << 20}, hidet::dtypes::f32, "cuda");
    FAIL("a 4 EiB allocation succeeded");
  } catch (const hidet::CudaError &e) {
    std::string m = e.what();
    CHECK(m.find("out of memory allocating 4611686018427387904 bytes on cuda:0") !=
          std::string::npos);
    CHECK(m.find("bytes in use by hidet") != std::string::npos);
    CHECK(m.find("cached") != std::string::npos);
  }
  try {
    hidet::Tensor t = hidet::empty({huge, 1 << 20}, hidet::dtypes::u8, "cpu");
    FAIL("a 1 EiB allocation succeeded");
  } catch (const hidet::CudaError &) {
    FAIL("cpu out-of-memory reported as a CUDA error");
  } catch (const hidet::Error &e) {
    CHECK(std::string(e.what()).find("out of memory allocating 1152921504606846976 bytes on cpu") !=
          std::string::npos);
  }
  // Everything stays usable afterwards.
  CHECK(hidet::ones({4}, hidet::dtypes::f32, "cuda").to_vector<float>() ==
        std::vector<float>{1, 1, 1, 1});
}
