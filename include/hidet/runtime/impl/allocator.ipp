// Definitions for hidet/runtime/allocator.hpp.
#pragma once

#include "hidet/runtime/allocator.hpp"

#include <cstdlib>
#include <map>

#include "hidet/runtime/cuda_driver.hpp"

namespace hidet {

HIDET_INLINE void *CachingAllocator::allocate(std::size_t n) {
  std::size_t size = round_size(n);
  // GPU blocks are reused only on the stream they belong to (see the top of allocator.hpp).
  CUstream stream = host_ ? nullptr : current_stream().handle();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.allocations;
    auto it = free_.find(FreeKey{size, stream});
    if (it != free_.end() && !it->second.empty()) {
      void *p = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= size;
      ++stats_.reuses;
      note_live(p, size, stream);
      return p;
    }
    void *p = raw_alloc(size);
    if (!p) {
      release_cache_locked();
      p = raw_alloc(size);
    }
    if (p) {
      ++stats_.raw_allocations;
      note_live(p, size, stream);
      return p;
    }
  }
  std::string msg = oom_message(n);
  if (host_ && device_.is_cpu()) throw Error(msg);
  throw CudaError(msg);
}

HIDET_INLINE void CachingAllocator::deallocate(void *p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  HIDET_ASSERT(it != live_.end(), "deallocate of a pointer this allocator does not own");
  auto [size, stream] = it->second;
  live_.erase(it);
  stats_.in_use_bytes -= size;
  free_[FreeKey{size, stream}].push_back(p);
  stats_.cached_bytes += size;
}

HIDET_INLINE void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cache_locked();
}

HIDET_INLINE std::pair<void *, std::size_t> CachingAllocator::find_live(const void *p) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto a = reinterpret_cast<std::uintptr_t>(p);
  for (const auto &[q, live] : live_) {
    auto b = reinterpret_cast<std::uintptr_t>(q);
    if (a >= b && a < b + live.size) return {q, live.size};
  }
  return {nullptr, 0};
}

HIDET_INLINE MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

HIDET_INLINE void CachingAllocator::note_live(void *p, std::size_t size, CUstream stream) {
  live_[p] = Live{size, stream};
  stats_.in_use_bytes += size;
  if (stats_.in_use_bytes > stats_.peak_in_use_bytes)
    stats_.peak_in_use_bytes = stats_.in_use_bytes;
}

HIDET_INLINE void *CachingAllocator::raw_alloc(std::size_t size) {
  if (host_) return std::aligned_alloc(host_alignment, size);
  ensure_context(device_.index);
  CUdeviceptr p = 0;
  CUresult r = cuda::driver().cuMemAlloc_v2(&p, size);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
  cuda::check(r, str_cat("allocating ", size, " bytes on ", device_));
  return reinterpret_cast<void *>(p);
}

HIDET_INLINE void CachingAllocator::raw_free(void *p) noexcept {
  ++stats_.raw_frees;
  if (host_) return std::free(p);
  const auto &d = cuda::driver_table();
  if (!d.usable) return;
  try {
    ensure_context(device_.index);
  } catch (...) {
    return; // the context is gone (process teardown or a sticky error): nothing to free into
  }
  d.cuMemFree_v2(reinterpret_cast<CUdeviceptr>(p));
}

HIDET_INLINE void CachingAllocator::release_cache_locked() {
  for (auto &[key, blocks] : free_)
    for (void *p : blocks)
      raw_free(p);
  free_.clear();
  stats_.cached_bytes = 0;
}

HIDET_INLINE std::string CachingAllocator::oom_message(std::size_t n) {
  MemoryStats s = stats();
  std::string where =
      host_ && device_.is_cuda() ? device_.str() + " (emulator, host memory)" : device_.str();
  std::string msg =
      str_cat("out of memory allocating ", n, " bytes on ", where, " (", s.in_use_bytes,
              " bytes in use by hidet, ", s.cached_bytes, " cached");
  if (!host_) {
    std::size_t fr = 0, total = 0;
    if (cuda::driver().cuMemGetInfo_v2(&fr, &total) == CUDA_SUCCESS)
      msg += str_cat(", device free/total ", fr, "/", total);
  }
  return msg + "); free tensors you no longer need, or use smaller shapes";
}

namespace runtime::detail {
struct AllocatorRegistry {
  std::mutex mu;
  std::map<std::pair<int, bool>, CachingAllocator *> by_key; // (cuda index or -1, host)
};
HIDET_INLINE AllocatorRegistry &allocator_registry() {
  static auto *r = new AllocatorRegistry(); // never destroyed: tensors may outlive statics
  return *r;
}
} // namespace runtime::detail

HIDET_INLINE CachingAllocator &allocator_for(Device device, bool host) {
  check_device(device);
  auto &reg = runtime::detail::allocator_registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  std::pair<int, bool> key{device.is_cpu() ? -1 : device.index, host || device.is_cpu()};
  auto &slot = reg.by_key[key];
  if (!slot) slot = new CachingAllocator(device, key.second);
  return *slot;
}

HIDET_INLINE bool uses_host_memory(Device device) { return device.is_cpu() || cuda_emulated(); }

HIDET_INLINE CachingAllocator &allocator(Device device) {
  return allocator_for(device, uses_host_memory(device));
}

HIDET_INLINE MemoryStats memory_stats(Device device) { return allocator(device).stats(); }

HIDET_INLINE void empty_cache() {
  auto &reg = runtime::detail::allocator_registry();
  std::vector<CachingAllocator *> all;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    for (auto &[k, a] : reg.by_key)
      all.push_back(a);
  }
  for (auto *a : all)
    a->empty_cache();
}

} // namespace hidet
