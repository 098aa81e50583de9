// Errors that kernels find on the GPU, where they cannot throw: an index out of range in an
// update of a tensor (index_put, scatter, index_add) whose indices are computed on the device.
//
// Each device has one record in pinned host memory mapped into the device (zero-copy: a kernel
// writes it over the bus, the host reads it without synchronizing). A kernel that finds bad input
// skips the element (nothing outside the tensor is written) and fills the record: what it found
// (a code naming the operator and argument, registered by device_error_code), the value and the
// extent it violated. check_device_errors() turns a filled record into a ValueError and clears it.
// hidet calls it before every kernel launch of an eager operator, before every run of a compiled
// graph or CUDA graph and after every stream synchronization, so the error surfaces at the next
// hidet call after the kernel ran, as CUDA reports its own asynchronous errors. On the emulator
// the record is plain host memory and the same kernels fill it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hidet/runtime/tensor.hpp"

namespace hidet::runtime {

/// The fields of a device's record (int64 each).
enum DeviceErrorField : int {
  kDeviceErrorState = 0,  ///< 0 empty, 1 filled
  kDeviceErrorCode = 1,   ///< device_error_code() of what was found
  kDeviceErrorValue = 2,  ///< the offending value (an index)
  kDeviceErrorExtent = 3, ///< the extent it had to lie within, as [-extent, extent)
  kDeviceErrorFields = 8
};

/// The record of `device` (a cuda device) as an int64 tensor of kDeviceErrorFields elements on
/// that device, for a kernel to take as a parameter. One per device for the life of the process.
Tensor device_error_record(const Device &device);

/// A stable code (the same in every process, so generated kernels stay cacheable) for `what`: the
/// operator and argument a kernel reports, such as "index_put: indices[2]". Registers `what` as
/// the code's description.
std::int64_t device_error_code(const std::string &what);

/// Throws ValueError for the first error any kernel recorded on any device since the last check,
/// and clears it; does nothing when none was (one load from host memory per device used), and
/// nothing inside a ScratchRuns on this thread.
void check_device_errors();

/// Runs on made-up inputs (a compiled graph's runs while it is built, on scratch inputs whose
/// indices, computed on the device, can be anything; a CUDA graph's warm-up run) find errors that
/// stand for nothing the caller did. While a ScratchRuns lives, this thread's index checks on the
/// host are off and check_device_errors() does nothing (the kernels still skip such elements, so
/// nothing outside a tensor is written); when it ends it waits for the kernels on `devices` and
/// clears their records. It raises what kernels found before it began, first. (A genuine error
/// that another thread's kernels record on those devices meanwhile is cleared too.)
class ScratchRuns {
public:
  explicit ScratchRuns(std::vector<Device> devices);
  ~ScratchRuns();
  ScratchRuns(const ScratchRuns &) = delete;
  ScratchRuns &operator=(const ScratchRuns &) = delete;
  /// Whether a ScratchRuns lives on this thread.
  static bool active();

private:
  std::vector<Device> devices_;
  bool saved_;
};

} // namespace hidet::runtime

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/device_errors.ipp"
#endif
