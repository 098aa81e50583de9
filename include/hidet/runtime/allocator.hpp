// A caching allocator per device. Sizes are rounded (to 512 B up to 1 MiB, to 2 MiB above) and
// freed blocks go to a free list per rounded size, from which later requests of the same size are
// served without a driver call. When the driver (or malloc) runs out of memory, the cache is
// released and the request retried once before an error is thrown.
//
// GPU memory comes from cuMemAlloc; host memory (the 'cpu' device, and the emulated 'cuda' device
// whose tensors live in host memory) is 256-byte aligned.
//
// Reuse is stream-ordered, as in PyTorch: a GPU block belongs to the stream that was current
// (hidet::current_stream(), per thread) when it was allocated, and once freed it serves only later
// allocations on that stream, whose work runs after everything enqueued on the block before. So a
// thread that frees its outputs while its stream still writes them cannot hand them to another
// thread's stream. A tensor used on another stream than its own must be kept alive until that work
// ends (or the streams synchronized) before it is freed.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hidet/runtime/device.hpp"
#include "hidet/runtime/stream.hpp"

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
  void *allocate(std::size_t n);

  /// Returns a block from allocate() to the cache. Unknown pointers are an internal error.
  void deallocate(void *p);

  /// Gives every cached (free) block back to the driver or the C library.
  void empty_cache();

  /// A snapshot of the counters.
  MemoryStats stats() const;
  /// The live block containing address p: its start and its (rounded) size; {nullptr, 0} when
  /// p lies in no block this allocator handed out. A linear search (for tools, not hot paths).
  std::pair<void *, std::size_t> find_live(const void *p) const;

  Device device() const { return device_; }
  /// True for host memory.
  bool host() const { return host_; }

private:
  void note_live(void *p, std::size_t size, CUstream stream);

  /// nullptr when out of memory; other driver errors throw.
  void *raw_alloc(std::size_t size);

  void raw_free(void *p) noexcept;

  void release_cache_locked();

  std::string oom_message(std::size_t n);

  Device device_;
  bool host_;
  mutable std::mutex mu_;
  struct FreeKey { // a rounded size and the stream its blocks belong to (null on the host)
    std::size_t size;
    CUstream stream;
    bool operator==(const FreeKey &o) const { return size == o.size && stream == o.stream; }
  };
  struct FreeKeyHash {
    std::size_t operator()(const FreeKey &k) const {
      return std::hash<std::size_t>()(k.size) ^ (std::hash<const void *>()(k.stream) << 1);
    }
  };
  struct Live {
    std::size_t size;
    CUstream stream;
  };
  std::unordered_map<FreeKey, std::vector<void *>, FreeKeyHash> free_;
  std::unordered_map<void *, Live> live_;
  MemoryStats stats_;
};

/// The allocator for `device` with the given memory kind. Allocators live for the whole process.
CachingAllocator &allocator_for(Device device, bool host);

/// True when memory for `device` lives on the host (cpu, or the emulated cuda device).
bool uses_host_memory(Device device);

/// The allocator new tensors on `device` use now.
CachingAllocator &allocator(Device device);

/// Counters of the allocator new tensors on `device` use.
MemoryStats memory_stats(Device device = Device::cuda());

/// Releases the cached blocks of every allocator.
void empty_cache();

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/allocator.ipp"
#endif
