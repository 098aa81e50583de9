// Definitions for hidet/runtime/device_errors.hpp.
#pragma once

#include "hidet/runtime/device_errors.hpp"

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/device.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::runtime {

namespace detail {
struct DeviceErrorRecords {
  static constexpr int kMaxDevices = 64;
  std::mutex mu;
  std::array<std::atomic<std::int64_t *>, kMaxDevices> records{}; ///< host addresses, null until made
  std::array<Tensor, kMaxDevices> tensors;
  std::atomic<int> devices{0}; ///< one past the highest device index with a record: what checks scan
  std::map<std::int64_t, std::string> what; ///< device_error_code's registry
};
HIDET_INLINE DeviceErrorRecords &device_error_records() {
  static auto *r = new DeviceErrorRecords(); // never destroyed: kernels may write until the process ends
  return *r;
}
} // namespace detail

HIDET_INLINE Tensor device_error_record(const Device &device) {
  if (!device.is_cuda()) throw ValueError(str_cat("device_error_record: ", device.str(), " is not a cuda device"));
  check_device(device);
  auto &r = detail::device_error_records();
  if (device.index >= detail::DeviceErrorRecords::kMaxDevices)
    throw ValueError(str_cat("device_error_record: at most ", detail::DeviceErrorRecords::kMaxDevices, " devices"));
  std::lock_guard<std::mutex> lock(r.mu);
  Tensor &t = r.tensors[std::size_t(device.index)];
  if (t.defined()) return t;
  constexpr std::size_t nbytes = kDeviceErrorFields * sizeof(std::int64_t);
  std::int64_t *host = nullptr;
  void *dev_ptr = nullptr;
  bool emulated = cuda_emulated();
  if (emulated) {
    host = static_cast<std::int64_t *>(std::calloc(kDeviceErrorFields, sizeof(std::int64_t)));
    if (!host) throw Error("device_error_record: out of host memory");
    dev_ptr = host;
  } else {
    ensure_context(device.index);
    const auto &d = cuda::driver();
    void *p = nullptr;
    // Portable (every context may use it) and mapped into the device's address space.
    cuda::check(d.cuMemHostAlloc(&p, nbytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                "cuMemHostAlloc (the device error record)");
    host = static_cast<std::int64_t *>(p);
    for (int i = 0; i < kDeviceErrorFields; ++i) host[i] = 0;
    CUdeviceptr dp = 0;
    cuda::check(d.cuMemHostGetDevicePointer_v2(&dp, p, 0), "cuMemHostGetDevicePointer (the device error record)");
    dev_ptr = reinterpret_cast<void *>(dp);
  }
  t = Tensor(external_storage(dev_ptr, nbytes, device, emulated, nullptr), {kDeviceErrorFields}, dtypes::i64);
  r.records[std::size_t(device.index)].store(host);
  if (r.devices.load() < device.index + 1) r.devices.store(device.index + 1); // under r.mu
  return t;
}

HIDET_INLINE std::int64_t device_error_code(const std::string &what) {
  std::uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : what) h = (h ^ c) * 1099511628211ull;
  auto code = std::int64_t(h >> 12) | 1; // positive, never 0
  auto &r = detail::device_error_records();
  std::lock_guard<std::mutex> lock(r.mu);
  r.what.emplace(code, what);
  return code;
}

namespace detail {
HIDET_INLINE bool &scratch_runs_flag() {
  thread_local bool active = false;
  return active;
}
} // namespace detail

HIDET_INLINE void check_device_errors() {
  if (detail::scratch_runs_flag()) return; // made-up inputs: cleared when the ScratchRuns ends
  auto &r = detail::device_error_records();
  for (int i = 0, n = r.devices.load(std::memory_order_acquire); i < n; ++i) { // every launch calls this: short
    std::int64_t *rec = r.records[std::size_t(i)].load(std::memory_order_acquire);
    if (!rec) continue;
    volatile std::int64_t *v = rec;
    if (v[kDeviceErrorState] == 0) continue;
    std::int64_t code = v[kDeviceErrorCode], value = v[kDeviceErrorValue], extent = v[kDeviceErrorExtent];
    for (int f = 0; f < kDeviceErrorFields; ++f) v[f] = 0;
    std::string what;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.what.find(code);
      what = it != r.what.end() ? it->second : str_cat("a kernel (error code ", code, ")");
    }
    throw ValueError(str_cat(what, ": index ", value, " is out of range for an axis of size ", extent,
                             " (found on cuda:", i,
                             " by a kernel launched before this call, which skipped the element: nothing was written "
                             "for it; indices count from -", extent, " to ", extent - 1, ")"));
  }
}

HIDET_INLINE ScratchRuns::ScratchRuns(std::vector<Device> devices)
    : devices_(std::move(devices)), saved_(detail::scratch_runs_flag()) {
  check_device_errors(); // the caller's own, found before (none inside an enclosing ScratchRuns)
  detail::scratch_runs_flag() = true;
}

HIDET_INLINE ScratchRuns::~ScratchRuns() {
  detail::scratch_runs_flag() = saved_;
  auto &r = detail::device_error_records();
  for (const Device &d : devices_) {
    if (!d.is_cuda() || d.index < 0 || d.index >= r.devices.load(std::memory_order_acquire)) continue;
    std::int64_t *rec = r.records[std::size_t(d.index)].load(std::memory_order_acquire);
    if (!rec) continue;
    if (!cuda_emulated()) { // the kernels may still run: wait for them (a failure here is CUDA's to report later)
      const auto &drv = cuda::driver_table();
      CUcontext saved_ctx = nullptr;
      if (drv.usable && drv.cuCtxGetCurrent(&saved_ctx) == CUDA_SUCCESS) {
        try {
          ensure_context(d.index);
          drv.cuCtxSynchronize();
        } catch (const std::exception &) {
        }
        drv.cuCtxSetCurrent(saved_ctx);
      }
    }
    volatile std::int64_t *v = rec;
    for (int f = 0; f < kDeviceErrorFields; ++f) v[f] = 0;
  }
}

HIDET_INLINE bool ScratchRuns::active() { return detail::scratch_runs_flag(); }

} // namespace hidet::runtime

#include "hidet/util/cold_end.hpp"
