// CommandHook: sees the device work issued on one thread (kernel launches, device copies, fills,
// collectives), before it is issued. A compiled graph records one run this way to save it to a
// file (graph/compiled_graph.hpp); nothing else installs one, and without one the cost is a load of
// a thread-local pointer per command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hidet/backend/kernel_arg.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/runtime/tensor.hpp" // defines command_hook() (runtime/impl/tensor.ipp)

namespace hidet {
class KernelHandle;
class TensorMap;
} // namespace hidet

namespace hidet::runtime::detail {

/// Sees the device work issued on the thread where it is installed (command_hook()).
class CommandHook {
public:
  virtual ~CommandHook() = default;
  /// A launch of `kernel` with the launcher's final arguments (lowered order: the parameters,
  /// then the symbolic dimensions); maps[i] is the tensor map passed as args[i] (Bytes), else null.
  virtual void kernel(const KernelHandle &kernel, backend::Dim3 grid, backend::Dim3 block,
                      std::size_t smem, const std::vector<backend::KernelArg> &args,
                      const std::vector<const TensorMap *> &maps) = 0;
  /// A copy of n bytes from src (on src_dev) to dst (on dst_dev); host memory of the 'cpu' device
  /// is the host's.
  virtual void copy(void *dst, Device dst_dev, const void *src, Device src_dev, std::size_t n) = 0;
  /// dst[0, n) = value on `device`.
  virtual void fill(void *dst, Device device, std::uint8_t value, std::size_t n) = 0;
  /// A collective of a communicator (runtime/distributed.hpp): `name` ("all_reduce") moving data
  /// between the ranks' memories, which no single-process recording can replay (nothing by
  /// default).
  virtual void collective(const std::string &name) { (void)name; }
};

/// The hook installed on this thread (null when none).
CommandHook *&command_hook();

} // namespace hidet::runtime::detail
