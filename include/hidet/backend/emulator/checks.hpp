// Memory checks of the SIMT emulator: the registry of live allocations every access is checked
// against (global arguments, shared buffers, dynamic shared memory, per-thread register arrays),
// and the shadow state of shared memory used by the race check (HIDET_EMULATOR_RACECHECK=1).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <algorithm>
#include <string>
#include <vector>

#include "hidet/error.hpp"

namespace hidet::backend::emu {

/// Where an allocation lives.
enum class MemKind : std::uint8_t { Global, Shared, Register };

inline const char *mem_kind_name(MemKind k) {
  switch (k) {
  case MemKind::Global: return "global";
  case MemKind::Shared: return "shared";
  case MemKind::Register: return "register";
  }
  return "?";
}

/// Race-check state of one shared buffer, one entry per byte. `writer`/`reader` record the
/// thread that wrote/read the byte since the last barrier (-1: none, -2: several readers);
/// `written` says whether anything wrote the byte since the block started.
struct SharedShadow {
  std::vector<std::int16_t> writer, reader;
  std::vector<std::uint8_t> written;
  explicit SharedShadow(std::size_t n) : writer(n, -1), reader(n, -1), written(n, 0) {}
  /// A barrier: accesses before it no longer race with accesses after it.
  void new_epoch() {
    std::fill(writer.begin(), writer.end(), std::int16_t(-1));
    std::fill(reader.begin(), reader.end(), std::int16_t(-1));
  }
};

/// One live allocation. Register arrays are one allocation of `end - begin` bytes split into
/// per-thread slices of `slice_bytes` every `slice_stride` bytes (thread t owns slice t).
struct Alloc {
  std::uintptr_t begin = 0, end = 0;
  MemKind kind = MemKind::Global;
  std::string name;
  std::size_t slice_stride = 0, slice_bytes = 0;
  bool unbounded = false;                ///< a pointer argument of unknown extent
  SharedShadow *shadow = nullptr;        ///< race-check state (shared, racecheck on)
};

/// Why an address failed the registry check.
enum class AccessFault : std::uint8_t { None, NoAllocation, OutOfAllocation, OtherThreadRegister };

/// A one-entry cache of the last allocation an access node hit.
struct AllocCache {
  std::uint64_t gen = 0;
  const Alloc *alloc = nullptr;
};

/// The live allocations of one launch, ordered by address.
class Registry {
public:
  /// Adds an allocation. Global allocations that overlap are merged (aliasing arguments).
  void add(Alloc a) {
    bump();
    if (a.kind == MemKind::Global) {
      auto it = map_.upper_bound(a.begin);
      if (it != map_.begin()) --it;
      while (it != map_.end() && it->second.begin <= a.end) {
        Alloc &o = it->second;
        bool overlap = o.kind == MemKind::Global && o.begin < a.end && a.begin < o.end;
        if (overlap) {
          a.begin = std::min(a.begin, o.begin);
          a.end = std::max(a.end, o.end);
          a.unbounded |= o.unbounded;
          if (o.name != a.name) a.name = o.name + "|" + a.name;
          it = map_.erase(it);
        } else {
          ++it;
        }
      }
    }
    map_[a.begin] = std::move(a);
  }
  /// Removes the allocation starting at `begin`.
  void remove(std::uintptr_t begin) {
    bump();
    map_.erase(begin);
  }

  /// The allocation containing [addr, addr + n) (for thread `t`), or a fault.
  AccessFault check(std::uintptr_t addr, std::size_t n, int t, AllocCache &cache,
                    const Alloc *&out) const {
    const Alloc *a = nullptr;
    if (cache.gen == gen_ && cache.alloc && addr >= cache.alloc->begin && addr < cache.alloc->end)
      a = cache.alloc;
    else {
      a = containing(addr);
      if (!a) {
        out = nullptr;
        return AccessFault::NoAllocation;
      }
      cache.gen = gen_;
      cache.alloc = a;
    }
    out = a;
    if (a->unbounded) return AccessFault::None;
    if (addr + n > a->end) return AccessFault::OutOfAllocation;
    if (a->slice_stride) {
      // Thread t's slice is [t * stride, t * stride + slice_bytes) (no division on the hot path).
      std::size_t rel = addr - a->begin, own = std::size_t(t) * a->slice_stride;
      if (rel < own || rel - own + n > a->slice_bytes) [[unlikely]] {
        if (rel % a->slice_stride + n > a->slice_bytes) return AccessFault::OutOfAllocation;
        return AccessFault::OtherThreadRegister;
      }
    }
    return AccessFault::None;
  }

  /// The allocation whose range holds `addr` (unbounded ones hold everything above them).
  const Alloc *containing(std::uintptr_t addr) const {
    auto it = map_.upper_bound(addr);
    if (it == map_.begin()) return nullptr;
    --it;
    const Alloc &a = it->second;
    if (addr < a.end || a.unbounded) return &a;
    return nullptr;
  }

private:
  void bump() { gen_ = next_generation().fetch_add(1) + 1; }
  static std::atomic<std::uint64_t> &next_generation() {
    static std::atomic<std::uint64_t> g{1};
    return g;
  }
  std::map<std::uintptr_t, Alloc> map_;
  std::uint64_t gen_ = 0;
};

/// A memory access kind, for the race check.
enum class Access : std::uint8_t { Read, Write, Atomic };

/// Describes a registry fault in words ("... is outside allocation 'A' of 64 bytes").
inline std::string describe_fault(AccessFault f, std::uintptr_t addr, std::size_t n,
                                  const Alloc *a) {
  std::ostringstream os;
  os << "the " << n << "-byte access at address 0x" << std::hex << addr << std::dec;
  switch (f) {
  case AccessFault::NoAllocation: os << " is not inside any live allocation"; break;
  case AccessFault::OutOfAllocation:
    os << " is outside " << mem_kind_name(a->kind) << " allocation '" << a->name << "' of "
       << (a->slice_stride ? a->slice_bytes : a->end - a->begin) << " bytes"
       << (a->slice_stride ? " per thread" : "") << " (byte offset "
       << std::int64_t(addr - a->begin) << ")";
    break;
  case AccessFault::OtherThreadRegister:
    os << " is in register array '" << a->name << "' of another thread";
    break;
  case AccessFault::None: break;
  }
  return os.str();
}

} // namespace hidet::backend::emu
