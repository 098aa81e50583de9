// A caching allocator per device. Sizes are rounded (to 512 B up to 1 MiB, to 2 MiB above) and
// freed blocks go to a free list per rounded size, from which later requests of the same size are
// served without a driver call. When the driver (or malloc) runs out of memory, the cache is
// released and the request retried once before an error is thrown.
//
// GPU memory comes from cuMemAlloc; host memory (the 'cpu' device, and the emulated 'cuda' device
// whose tensors live in host memory) is 256-byte aligned.
//
// Reuse is not stream-aware: a block freed while a kernel on another stream still uses it may be
// handed out again. Work that shares memory across streams must synchronize them (as with Hidet's
// own memory pool).
#pragma once

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hidet/runtime/device.hpp"

namespace hidet {

/// Counters of one allocator.
struct MemoryStats {
  std::size_t in_use_bytes = 0;      ///< rounded bytes held by live allocations
  std::size_t peak_in_use_bytes = 0; ///< maximum of in_use_bytes so far
  std::size_t cached_bytes = 0;      ///< bytes in the free lists
  std::uint64_t allocations = 0;     ///< allocate() calls
  std::uint64_t reuses = 0;          ///< allocate() calls served from the cache
  std::uint64_t raw_allocations = 0; ///< cuMemAlloc / aligned_alloc calls that succeeded
  std::uint64_t raw_frees = 0;       ///< cuMemFree / free calls
};

/// A caching allocator for one device, either of host memory or of GPU memory. Thread-safe.
class CachingAllocator {
public:
  /// Alignment of host allocations, in bytes.
  static constexpr std::size_t host_alignment = 256;
  static constexpr std::size_t small_limit = std::size_t(1) << 20;
  static constexpr std::size_t small_granularity = 512;
  static constexpr std::size_t large_granularity = std::size_t(2) << 20;

  /// An allocator for `device`; `host` selects host memory (cpu, or the emulated cuda device).
  CachingAllocator(Device device, bool host) : device_(device), host_(host) {}
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;

  /// The size a request of n bytes occupies (at least 512 bytes).
  static constexpr std::size_t round_size(std::size_t n) {
    if (n == 0) n = 1;
    std::size_t g = n <= small_limit ? small_granularity : large_granularity;
    return (n + g - 1) / g * g;
  }

  /// Allocates n bytes (a device address cast to void*, or a host pointer). Throws CudaError for
  /// 'cuda' devices (hidet::Error for 'cpu') when memory is exhausted even after emptying the
  /// cache.
  void *allocate(std::size_t n) {
    std::size_t size = round_size(n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.allocations;
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void *p = it->second.back();
        it->second.pop_back();
        stats_.cached_bytes -= size;
        ++stats_.reuses;
        note_live(p, size);
        return p;
      }
      void *p = raw_alloc(size);
      if (!p) {
        release_cache_locked();
        p = raw_alloc(size);
      }
      if (p) {
        ++stats_.raw_allocations;
        note_live(p, size);
        return p;
      }
    }
    std::string msg = oom_message(n);
    if (host_ && device_.is_cpu()) throw Error(msg);
    throw CudaError(msg);
  }

  /// Returns a block from allocate() to the cache. Unknown pointers are an internal error.
  void deallocate(void *p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    HIDET_ASSERT(it != live_.end(), "deallocate of a pointer this allocator does not own");
    std::size_t size = it->second;
    live_.erase(it);
    stats_.in_use_bytes -= size;
    free_[size].push_back(p);
    stats_.cached_bytes += size;
  }

  /// Gives every cached (free) block back to the driver or the C library.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cache_locked();
  }

  /// A snapshot of the counters.
  MemoryStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  Device device() const { return device_; }
  /// True for host memory.
  bool host() const { return host_; }

private:
  void note_live(void *p, std::size_t size) {
    live_[p] = size;
    stats_.in_use_bytes += size;
    if (stats_.in_use_bytes > stats_.peak_in_use_bytes)
      stats_.peak_in_use_bytes = stats_.in_use_bytes;
  }

  /// nullptr when out of memory; other driver errors throw.
  void *raw_alloc(std::size_t size) {
    if (host_) return std::aligned_alloc(host_alignment, size);
    ensure_context(device_.index);
    CUdeviceptr p = 0;
    CUresult r = cuda::driver().cuMemAlloc_v2(&p, size);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    cuda::check(r, str_cat("allocating ", size, " bytes on ", device_));
    return reinterpret_cast<void *>(p);
  }

  void raw_free(void *p) noexcept {
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

  void release_cache_locked() {
    for (auto &[size, blocks] : free_)
      for (void *p : blocks)
        raw_free(p);
    free_.clear();
    stats_.cached_bytes = 0;
  }

  std::string oom_message(std::size_t n) {
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

  Device device_;
  bool host_;
  mutable std::mutex mu_;
  std::unordered_map<std::size_t, std::vector<void *>> free_;
  std::unordered_map<void *, std::size_t> live_;
  MemoryStats stats_;
};

namespace runtime::detail {
struct AllocatorRegistry {
  std::mutex mu;
  std::map<std::pair<int, bool>, CachingAllocator *> by_key; // (cuda index or -1, host)
};
inline AllocatorRegistry &allocator_registry() {
  static auto *r = new AllocatorRegistry(); // never destroyed: tensors may outlive statics
  return *r;
}
} // namespace runtime::detail

/// The allocator for `device` with the given memory kind. Allocators live for the whole process.
inline CachingAllocator &allocator_for(Device device, bool host) {
  check_device(device);
  auto &reg = runtime::detail::allocator_registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  std::pair<int, bool> key{device.is_cpu() ? -1 : device.index, host || device.is_cpu()};
  auto &slot = reg.by_key[key];
  if (!slot) slot = new CachingAllocator(device, key.second);
  return *slot;
}

/// True when memory for `device` lives on the host (cpu, or the emulated cuda device).
inline bool uses_host_memory(Device device) { return device.is_cpu() || cuda_emulated(); }

/// The allocator new tensors on `device` use now.
inline CachingAllocator &allocator(Device device) {
  return allocator_for(device, uses_host_memory(device));
}

/// Counters of the allocator new tensors on `device` use.
inline MemoryStats memory_stats(Device device = Device::cuda()) {
  return allocator(device).stats();
}

/// Releases the cached blocks of every allocator.
inline void empty_cache() {
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
