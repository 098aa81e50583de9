// CUDA streams: the default (legacy null) stream, streams hidet creates, and external streams
// (a framework's own) wrapped without ownership. Each thread has a current stream, the default
// one unless a StreamGuard is active. On the emulator work runs synchronously, so streams are
// trivial there, but the API behaves the same.
#pragma once

#include <chrono>
#include <memory>

#include "hidet/runtime/device.hpp"

namespace hidet {

/// A CUDA stream on one device. Copies share the underlying stream; a stream created by
/// Stream::create is destroyed when its last copy goes away.
class Stream {
public:
  /// The default (legacy null) stream of cuda:0.
  Stream() = default;

  /// The default (legacy null) stream of `device`.
  static Stream default_stream(Device device = Device::cuda()) {
    check_device(device);
    Stream s;
    s.device_ = device;
    return s;
  }

  /// A new stream owned by hidet (blocking with respect to the default stream).
  static Stream create(Device device = Device::cuda()) {
    check_device(device);
    Stream s;
    s.device_ = device;
    if (device.is_cpu() || cuda_emulated()) {
      s.owner_ = std::make_shared<int>(0); // distinct identity; no driver object
      return s;
    }
    ensure_context(device.index);
    CUstream h = nullptr;
    cuda::check(cuda::driver().cuStreamCreate(&h, CU_STREAM_DEFAULT),
                str_cat("creating a stream on ", device));
    s.handle_ = h;
    s.owner_ = std::shared_ptr<void>(h, [](void *p) {
      const auto &d = cuda::driver_table();
      if (d.usable) d.cuStreamDestroy_v2(static_cast<CUstream>(p));
    });
    return s;
  }

  /// Wraps a stream created elsewhere (e.g. torch.cuda.current_stream().cuda_stream); hidet
  /// never destroys it.
  static Stream from_handle(void *handle, Device device = Device::cuda()) {
    Stream s;
    s.handle_ = static_cast<CUstream>(handle);
    s.device_ = device;
    return s;
  }

  /// The driver handle (nullptr for the default stream and on the emulator).
  CUstream handle() const { return handle_; }
  /// The device the stream belongs to.
  Device device() const { return device_; }
  /// True for the legacy default stream.
  bool is_default() const { return handle_ == nullptr; }

  /// Waits until all work queued on this stream has finished.
  void synchronize() const {
    if (device_.is_cpu() || cuda_emulated()) return;
    ensure_context(device_.index);
    cuda::check(cuda::driver().cuStreamSynchronize(handle_),
                str_cat("synchronizing a stream of ", device_));
  }

  bool operator==(const Stream &o) const {
    return handle_ == o.handle_ && device_ == o.device_ && owner_ == o.owner_;
  }

private:
  CUstream handle_ = nullptr;
  Device device_ = Device::cuda();
  std::shared_ptr<void> owner_;
};

namespace runtime::detail {
inline Stream &current_stream_slot() {
  thread_local Stream s;
  return s;
}
} // namespace runtime::detail

/// The calling thread's current stream: the default stream unless a StreamGuard is active.
inline Stream current_stream() { return runtime::detail::current_stream_slot(); }

/// Makes a stream current on this thread for the guard's lifetime.
class StreamGuard {
public:
  explicit StreamGuard(const Stream &s) : saved_(runtime::detail::current_stream_slot()) {
    runtime::detail::current_stream_slot() = s;
  }
  ~StreamGuard() { runtime::detail::current_stream_slot() = saved_; }
  StreamGuard(const StreamGuard &) = delete;
  StreamGuard &operator=(const StreamGuard &) = delete;

private:
  Stream saved_;
};

/// The stream to use for work on `device`: the current stream when it belongs to that device,
/// else that device's default stream.
inline CUstream stream_for(Device device) {
  Stream s = current_stream();
  return s.device() == device ? s.handle() : nullptr;
}

/// Waits for all work on cuda:`index` (a no-op on the emulator).
inline void synchronize(int index = 0) {
  if (cuda_emulated()) return;
  ensure_context(index);
  cuda::check(cuda::driver().cuCtxSynchronize(), str_cat("synchronizing cuda:", index));
}

/// A CUDA event for timing work on a stream (on the emulator it records host time).
class Event {
public:
  Event() = default;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event() {
    const auto &d = cuda::driver_table();
    if (event_ && d.usable) d.cuEventDestroy_v2(event_);
  }

  /// Records the event on `stream` (the current stream by default).
  void record(const Stream &stream = current_stream()) {
    if (stream.device().is_cpu() || cuda_emulated()) {
      host_time_ = std::chrono::steady_clock::now();
      return;
    }
    ensure_context(stream.device().index);
    if (!event_)
      cuda::check(cuda::driver().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate");
    cuda::check(cuda::driver().cuEventRecord(event_, stream.handle()), "cuEventRecord");
  }
  /// Waits until the recorded work has finished.
  void synchronize() const {
    if (event_) cuda::check(cuda::driver().cuEventSynchronize(event_), "cuEventSynchronize");
  }
  /// Milliseconds from `start` to this event (both recorded; synchronizes on this event).
  float elapsed_ms_since(const Event &start) const {
    if (!event_ || !start.event_)
      return std::chrono::duration<float, std::milli>(host_time_ - start.host_time_).count();
    synchronize();
    float ms = 0;
    cuda::check(cuda::driver().cuEventElapsedTime_v2(&ms, start.event_, event_),
                "cuEventElapsedTime");
    return ms;
  }

private:
  CUevent event_ = nullptr;
  std::chrono::steady_clock::time_point host_time_{};
};

} // namespace hidet

namespace hidet::runtime {
// Also reachable as hidet::runtime::X, the spelling the launcher uses.
using ::hidet::current_stream;
using ::hidet::Stream;
using ::hidet::StreamGuard;
using ::hidet::stream_for;
using ::hidet::synchronize;
} // namespace hidet::runtime
