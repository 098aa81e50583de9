// Devices: "cpu" and "cuda:N". A 'cuda' device is either a real GPU (through the driver API) or,
// when no GPU is usable or HIDET_EMULATE=1, the CPU SIMT emulator; its tensors then live in host
// memory. Every runtime entry point that touches a GPU calls ensure_context() first, because the
// calling thread may be one the runtime has never seen.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

#include "hidet/error.hpp"

namespace hidet {

/// A device: the host CPU or the CUDA device with a given index.
struct Device {
  enum class Kind : std::uint8_t { CPU, CUDA };
  Kind kind = Kind::CUDA;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(Kind k, int i = 0) : kind(k), index(i) {}
  /// Parses "cpu", "cuda" or "cuda:N"; anything else throws ValueError.
  /* implicit */ Device(std::string_view s) : Device(parse(s)) {}
  /* implicit */ Device(const char *s) : Device(parse(s)) {}
  /* implicit */ Device(const std::string &s) : Device(parse(s)) {}

  static constexpr Device cpu() { return Device(Kind::CPU, 0); }
  static constexpr Device cuda(int index = 0) { return Device(Kind::CUDA, index); }

  /// Parses "cpu", "cuda" or "cuda:N".
  static Device parse(std::string_view s);

  constexpr bool is_cpu() const { return kind == Kind::CPU; }
  constexpr bool is_cuda() const { return kind == Kind::CUDA; }
  /// "cpu" or "cuda:N".
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
  constexpr bool operator==(const Device &) const = default;
};

/// Prints d.str().
std::ostream &operator<<(std::ostream &os, const Device &d);

/// What a CUDA device offers (real, or the emulator's description of itself).
struct DeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_shared_per_block = 0;       ///< bytes, without opt-in (48 KB)
  int max_shared_per_block_optin = 0; ///< bytes, with the dynamic shared memory opt-in
  int warp_size = 32;
  std::size_t total_memory = 0; ///< bytes
  bool emulated = false;        ///< served by the CPU emulator

  /// The NVRTC target: "sm_90a" for CC 9.0 (the arch-specific features wgmma/TMA need), else
  /// "sm_<major><minor>".
  std::string arch() const;
};

namespace runtime::detail {

/// Parses $HIDET_CUDA_ARCH ("sm_80", "sm_90a", "8.6", "86"); false when unset or malformed.
bool parse_arch(const std::string &s, int &major, int &minor);

} // namespace runtime::detail

/// A real GPU is usable (driver loaded, a device present), whether or not emulation is forced.
bool gpu_present();

/// Forces (or stops forcing) the emulator for the 'cuda' device. Without a GPU the emulator is
/// used regardless. Tensors keep the memory they were created with.
void set_cuda_emulation(bool on);

/// True when the 'cuda' device is served by the CPU emulator: HIDET_EMULATE=1,
/// set_cuda_emulation(true), or no usable GPU (then a notice is printed once on stderr).
bool cuda_emulated();

/// Number of 'cuda' devices: the GPUs, or emulated_device_count() on the emulator.
int cuda_device_count();

/// Sets how many 'cuda' devices the emulator serves (cuda:0 .. cuda:n-1, each a device of its own
/// whose tensors live in host memory): several emulated GPUs in one process, one thread per rank
/// of an emulated communicator (runtime/distributed.hpp). 1 to 64; else a ValueError. Tensors
/// already made keep their devices.
void set_emulated_device_count(int n);

/// The number of emulated 'cuda' devices: 1, $HIDET_EMULATED_DEVICES, or the last
/// set_emulated_device_count().
int emulated_device_count();

/// Throws ValueError unless `d` is the cpu or an existing cuda device.
void check_device(const Device &d);

/// What a kernel launch with a tensor on a GPU other than cuda:0 says: on a GPU, hidet's kernels,
/// their scratch memory and the modules they load belong to cuda:0 (one GPU per process, as
/// torchrun's ranks run); the emulator's several devices are exempt.
inline constexpr const char *kOneGpuPerProcess =
    "hidet runs its kernels on cuda:0, one GPU per process: make that GPU the only one this "
    "process sees (CUDA_VISIBLE_DEVICES; under torchrun, hidet.distributed.use_local_gpu() "
    "before CUDA starts), where it is cuda:0, or move the tensor to cuda:0";

/// Makes the primary context of GPU `index` current on the calling thread (a no-op when it
/// already is). Call before any driver call; throws when the device does not exist.
void ensure_context(int index);

/// Makes cuda:0's primary context current on the calling thread when no context is (a thread the
/// user started, building or launching kernels): module loads and launches need one. A context
/// already current is kept; after the first call on a thread, this is a thread-local check.
void ensure_some_context();

/// The description of cuda:`index` (the emulator's when cuda_emulated()). Cached; thread-safe.
const DeviceInfo &device_info(int index = 0);

} // namespace hidet

namespace hidet::runtime {
// Also reachable as hidet::runtime::X, the spelling the launcher uses.
using ::hidet::cuda_emulated;
using ::hidet::Device;
using ::hidet::device_info;
using ::hidet::DeviceInfo;
using ::hidet::ensure_context;
using ::hidet::gpu_present;
using ::hidet::kOneGpuPerProcess;
using ::hidet::set_cuda_emulation;
} // namespace hidet::runtime

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/device.ipp"
#endif
