// Definitions for hidet/runtime/stream.hpp.
#pragma once

#include "hidet/runtime/stream.hpp"

#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/device_errors.hpp"

namespace hidet {

HIDET_INLINE Stream Stream::default_stream(Device device) {
  check_device(device);
  Stream s;
  s.device_ = device;
  return s;
}

HIDET_INLINE Stream Stream::create(Device device, bool non_blocking) {
  check_device(device);
  Stream s;
  s.device_ = device;
  if (device.is_cpu() || cuda_emulated()) {
    s.owner_ = std::make_shared<int>(0); // distinct identity; no driver object
    return s;
  }
  ensure_context(device.index);
  CUstream h = nullptr;
  cuda::check(cuda::driver().cuStreamCreate(&h, non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT),
              str_cat("creating a stream on ", device));
  s.handle_ = h;
  s.owner_ = std::shared_ptr<void>(h, [](void *p) {
    const auto &d = cuda::driver_table();
    if (d.usable) d.cuStreamDestroy_v2(static_cast<CUstream>(p));
  });
  return s;
}

HIDET_INLINE Stream Stream::from_handle(void *handle, Device device) {
  Stream s;
  s.handle_ = static_cast<CUstream>(handle);
  s.device_ = device;
  return s;
}

HIDET_INLINE void Stream::synchronize() const {
  if (!device_.is_cpu() && !cuda_emulated()) {
    ensure_context(device_.index);
    cuda::check(cuda::driver().cuStreamSynchronize(handle_), str_cat("synchronizing a stream of ", device_));
  }
  runtime::check_device_errors(); // what the kernels before the synchronization found
}

namespace runtime::detail {
HIDET_INLINE Stream &current_stream_slot() {
  thread_local Stream s;
  return s;
}
} // namespace runtime::detail

HIDET_INLINE Stream current_stream() { return runtime::detail::current_stream_slot(); }

HIDET_INLINE StreamGuard::StreamGuard(const Stream &s)
    : saved_(runtime::detail::current_stream_slot()) {
  runtime::detail::current_stream_slot() = s;
}
HIDET_INLINE StreamGuard::~StreamGuard() { runtime::detail::current_stream_slot() = saved_; }

HIDET_INLINE CUstream stream_for(Device device) {
  Stream s = current_stream();
  return s.device() == device ? s.handle() : nullptr;
}

HIDET_INLINE void synchronize(int index) {
  if (!cuda_emulated()) {
    ensure_context(index);
    cuda::check(cuda::driver().cuCtxSynchronize(), str_cat("synchronizing cuda:", index));
  }
  runtime::check_device_errors();
}

HIDET_INLINE Event::~Event() {
  const auto &d = cuda::driver_table();
  if (event_ && d.usable) d.cuEventDestroy_v2(event_);
}

HIDET_INLINE void Event::record(const Stream &stream) {
  if (stream.device().is_cpu() || cuda_emulated()) {
    host_time_ = std::chrono::steady_clock::now();
    return;
  }
  ensure_context(stream.device().index);
  if (!event_)
    cuda::check(cuda::driver().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate");
  cuda::check(cuda::driver().cuEventRecord(event_, stream.handle()), "cuEventRecord");
}

HIDET_INLINE void Event::synchronize() const {
  if (event_) cuda::check(cuda::driver().cuEventSynchronize(event_), "cuEventSynchronize");
}

HIDET_INLINE float Event::elapsed_ms_since(const Event &start) const {
  if (!event_ || !start.event_)
    return std::chrono::duration<float, std::milli>(host_time_ - start.host_time_).count();
  synchronize();
  float ms = 0;
  cuda::check(cuda::driver().cuEventElapsedTime_v2(&ms, start.event_, event_),
              "cuEventElapsedTime");
  return ms;
}

} // namespace hidet
