// CUDA streams: the default (legacy null) stream, streams hidet creates, and external streams
// (a framework's own) wrapped without ownership. Each thread has a current stream, the default
// one unless a StreamGuard is active. On the emulator work runs synchronously, so streams are
// trivial there, but the API behaves the same.
#pragma once

#include <chrono>
#include <memory>

#include "hidet/runtime/cuda_types.hpp"
#include "hidet/runtime/device.hpp"

namespace hidet {

/// A CUDA stream on one device. Copies share the underlying stream; a stream created by
/// Stream::create is destroyed when its last copy goes away.
class Stream {
public:
  /// The default (legacy null) stream of cuda:0.
  Stream() = default;

  /// The default (legacy null) stream of `device`.
  static Stream default_stream(Device device = Device::cuda());

  /// A new stream owned by hidet: blocking with respect to the legacy default stream, or not
  /// (`non_blocking`: work on the legacy stream neither waits for it nor is waited for; hidet's
  /// CUDA-graph captures use such a stream, so that another thread's work on blocking streams
  /// meanwhile is legal).
  static Stream create(Device device = Device::cuda(), bool non_blocking = false);

  /// Wraps a stream created elsewhere (e.g. torch.cuda.current_stream().cuda_stream); hidet
  /// never destroys it.
  static Stream from_handle(void *handle, Device device = Device::cuda());

  /// The driver handle (nullptr for the default stream and on the emulator).
  CUstream handle() const { return handle_; }
  /// The device the stream belongs to.
  Device device() const { return device_; }
  /// True for the legacy default stream.
  bool is_default() const { return handle_ == nullptr; }

  /// Waits until all work queued on this stream has finished.
  void synchronize() const;

  bool operator==(const Stream &o) const {
    return handle_ == o.handle_ && device_ == o.device_ && owner_ == o.owner_;
  }

private:
  CUstream handle_ = nullptr;
  Device device_ = Device::cuda();
  std::shared_ptr<void> owner_;
};

namespace runtime::detail {
/// The calling thread's current stream (thread_local).
Stream &current_stream_slot();
} // namespace runtime::detail

/// The calling thread's current stream: the default stream unless a StreamGuard is active.
Stream current_stream();

/// Makes a stream current on this thread for the guard's lifetime.
class StreamGuard {
public:
  explicit StreamGuard(const Stream &s);
  ~StreamGuard();
  StreamGuard(const StreamGuard &) = delete;
  StreamGuard &operator=(const StreamGuard &) = delete;

private:
  Stream saved_;
};

/// The stream to use for work on `device`: the current stream when it belongs to that device,
/// else that device's default stream.
CUstream stream_for(Device device);

/// Waits for all work on cuda:`index` (a no-op on the emulator).
void synchronize(int index = 0);

/// A CUDA event for timing work on a stream (on the emulator it records host time).
class Event {
public:
  Event() = default;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event();

  /// Records the event on `stream` (the current stream by default).
  void record(const Stream &stream = current_stream());
  /// Waits until the recorded work has finished.
  void synchronize() const;
  /// Milliseconds from `start` to this event (both recorded; synchronizes on this event).
  float elapsed_ms_since(const Event &start) const;

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

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/stream.ipp"
#endif
