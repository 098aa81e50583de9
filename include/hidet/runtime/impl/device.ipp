// Definitions for hidet/runtime/device.hpp.
#pragma once

#include "hidet/runtime/device.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <ostream>
#include <vector>

#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/util/env.hpp"

namespace hidet {

HIDET_INLINE Device Device::parse(std::string_view s) {
  auto fail = [&]() -> Device {
    throw ValueError(str_cat("invalid device '", s,
                             "': expected \"cpu\", \"cuda\" or \"cuda:N\" with N a device index, "
                             "e.g. \"cuda:0\""));
  };
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  if (s.substr(0, 5) != "cuda:" || s.size() == 5 || s.size() > 9) return fail();
  int idx = 0;
  for (char c : s.substr(5)) {
    if (c < '0' || c > '9') return fail();
    idx = idx * 10 + (c - '0');
  }
  return cuda(idx);
}

HIDET_INLINE std::ostream &operator<<(std::ostream &os, const Device &d) { return os << d.str(); }

HIDET_INLINE std::string DeviceInfo::arch() const {
  std::string a = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  if (cc_major == 9 && cc_minor == 0) a += "a";
  return a;
}

namespace runtime::detail {

struct EmulationState {
  std::atomic<bool> forced{false};
  std::once_flag notice_once;
  bool env_forced = util::env_bool("HIDET_EMULATE");
  std::atomic<int> device_count{int(util::env_int("HIDET_EMULATED_DEVICES", 1))};
};
HIDET_INLINE EmulationState &emulation_state() {
  static EmulationState *s = new EmulationState();
  return *s;
}

HIDET_INLINE bool parse_arch(const std::string &s, int &major, int &minor) {
  std::string t = s;
  if (t.rfind("sm_", 0) == 0 || t.rfind("compute_", 0) == 0) t = t.substr(t.find('_') + 1);
  if (!t.empty() && (t.back() == 'a' || t.back() == 'f')) t.pop_back();
  std::string digits;
  for (char c : t)
    if (c != '.') digits += c;
  if (digits.size() < 2 || digits.size() > 3) return false;
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  if (t.find('.') != std::string::npos) {
    major = std::stoi(t.substr(0, t.find('.')));
    minor = std::stoi(t.substr(t.find('.') + 1));
  } else {
    major = std::stoi(digits.substr(0, digits.size() - 1));
    minor = digits.back() - '0';
  }
  return true;
}

} // namespace runtime::detail

HIDET_INLINE bool gpu_present() { return cuda::driver_available(); }

HIDET_INLINE void set_cuda_emulation(bool on) { runtime::detail::emulation_state().forced = on; }

HIDET_INLINE bool cuda_emulated() {
  auto &st = runtime::detail::emulation_state();
  if (st.forced.load(std::memory_order_relaxed) || st.env_forced) return true;
  std::string why;
  if (cuda::driver_available(&why)) return false;
  std::call_once(st.notice_once, [&] {
    std::fprintf(stderr,
                 "hidet: no CUDA GPU available (%s); the 'cuda' device is served by the CPU "
                 "emulator (HIDET_EMULATE=1 forces this)\n",
                 why.c_str());
  });
  return true;
}

HIDET_INLINE int cuda_device_count() {
  return cuda_emulated() ? emulated_device_count() : cuda::driver_table().device_count;
}

HIDET_INLINE void set_emulated_device_count(int n) {
  if (n < 1 || n > 64)
    throw ValueError(str_cat("set_emulated_device_count(", n,
                             "): the emulator serves 1 to 64 'cuda' devices"));
  runtime::detail::emulation_state().device_count = n;
}

HIDET_INLINE int emulated_device_count() {
  int n = runtime::detail::emulation_state().device_count.load(std::memory_order_relaxed);
  return n < 1 ? 1 : n > 64 ? 64 : n;
}

HIDET_INLINE void check_device(const Device &d) {
  if (d.is_cpu()) return;
  int n = cuda_device_count();
  if (d.index < 0 || d.index >= n)
    throw ValueError(str_cat("device ", d, " does not exist: this process has ", n,
                             cuda_emulated() ? " emulated" : "", " CUDA device(s), cuda:0",
                             n > 1 ? str_cat("..cuda:", n - 1) : std::string()));
}

namespace runtime::detail {

/// The retained primary contexts, one per GPU, created on first use.
HIDET_INLINE CUcontext primary_context(int index) {
  static std::mutex mu;
  static std::vector<CUcontext> *ctxs = new std::vector<CUcontext>();
  std::lock_guard<std::mutex> lock(mu);
  if (ctxs->empty()) ctxs->resize(cuda::driver().device_count, nullptr);
  HIDET_ASSERT(index >= 0 && index < int(ctxs->size()), "device index ", index);
  if (!(*ctxs)[index]) {
    const auto &d = cuda::driver();
    CUdevice dev;
    cuda::check(d.cuDeviceGet(&dev, index), str_cat("cuDeviceGet(", index, ")"));
    CUcontext c = nullptr;
    cuda::check(d.cuDevicePrimaryCtxRetain(&c, dev),
                str_cat("retaining the primary context of cuda:", index));
    (*ctxs)[index] = c;
  }
  return (*ctxs)[index];
}

} // namespace runtime::detail

HIDET_INLINE void ensure_context(int index) {
  check_device(Device::cuda(index));
  CUcontext want = runtime::detail::primary_context(index);
  const auto &d = cuda::driver();
  CUcontext cur = nullptr;
  cuda::check(d.cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
  if (cur != want)
    cuda::check(d.cuCtxSetCurrent(want), str_cat("making the context of cuda:", index, " current"));
}

HIDET_INLINE void ensure_some_context() {
  thread_local bool has_context = false; // once a context is current here, launches skip the check
  if (has_context) return;
  CUcontext cur = nullptr;
  cuda::check(cuda::driver().cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
  if (!cur) ensure_context(0);
  has_context = true;
}

namespace runtime::detail {

HIDET_INLINE DeviceInfo emulated_device_info() {
  DeviceInfo info;
  info.name = "hidet CPU emulator";
  info.emulated = true;
  info.cc_major = 9;
  info.cc_minor = 0;
  int ma = 0, mi = 0;
  if (parse_arch(util::env_string_or("HIDET_CUDA_ARCH", ""), ma, mi))
    info.cc_major = ma, info.cc_minor = mi;
  info.sm_count = 132;
  info.max_threads_per_block = 1024;
  info.max_shared_per_block = 48 * 1024;
  info.max_shared_per_block_optin = 227 * 1024;
  info.warp_size = 32;
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  info.total_memory = (pages > 0 && page > 0) ? std::size_t(pages) * std::size_t(page) : 0;
  return info;
}

HIDET_INLINE DeviceInfo query_device_info(int index) {
  ensure_context(index);
  const auto &d = cuda::driver();
  CUdevice dev;
  cuda::check(d.cuDeviceGet(&dev, index), "cuDeviceGet");
  DeviceInfo info;
  char name[256] = {};
  cuda::check(d.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  info.name = name;
  auto attr = [&](CUdevice_attribute a, const char *what) {
    int v = 0;
    cuda::check(d.cuDeviceGetAttribute(&v, a, dev), str_cat("querying ", what, " of cuda:", index));
    return v;
  };
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "the compute capability");
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "the compute capability");
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "the SM count");
  info.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads/block");
  info.max_shared_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "smem/block");
  info.max_shared_per_block_optin =
      attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in smem/block");
  info.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "the warp size");
  std::size_t total = 0;
  cuda::check(d.cuDeviceTotalMem_v2(&total, dev), "cuDeviceTotalMem");
  info.total_memory = total;
  return info;
}

} // namespace runtime::detail

HIDET_INLINE const DeviceInfo &device_info(int index) {
  check_device(Device::cuda(index));
  static std::mutex mu;
  static auto *real = new std::deque<std::unique_ptr<DeviceInfo>>();
  static const DeviceInfo *emu = new DeviceInfo(runtime::detail::emulated_device_info());
  if (cuda_emulated()) return *emu;
  std::lock_guard<std::mutex> lock(mu);
  if (real->size() <= std::size_t(index)) real->resize(index + 1);
  auto &slot = (*real)[index];
  if (!slot) slot = std::make_unique<DeviceInfo>(runtime::detail::query_device_info(index));
  return *slot;
}

} // namespace hidet
