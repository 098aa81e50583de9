// What the Hopper templates (wgmma, TMA; sm_90a: matmul_wgmma.hpp, conv2d_wgmma.hpp,
// attention_wgmma.hpp) share on the host: whether they can run in this process, and the TMA map
// cache of their runners.
#pragma once

#include <optional>

#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/runtime/tensor.hpp"
#include "hidet/runtime/tensor_map.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops::templates {

/// True when the Hopper kernels (wgmma, TMA; sm_90a) can run here: a real Hopper GPU, not the
/// emulator.
inline bool wgmma_available() {
  if (runtime::cuda_emulated()) return false;
  return runtime::device_info(0).arch() == "sm_90a";
}

/// A runner's TMA map of one operand, encoded again only when the operand's address changes
/// (repeated calls on the same tensors encode nothing).
struct CachedMap {
  const void *ptr = nullptr;
  std::optional<TensorMap> map;
  /// The map for address `p`: made by `make()` unless `p` is the address of the cached one.
  template <class Make> const TensorMap &get(const void *p, Make &&make) {
    if (p != ptr || !map) map = make(), ptr = p;
    return *map;
  }
  /// The map of `t` in boxes of `box` with the 128-byte swizzle.
  const TensorMap &update(const Tensor &t, const std::vector<std::int64_t> &box) {
    return get(t.data_ptr(), [&] { return TensorMap::tiled(t, box, TensorMap::Swizzle::B128); });
  }
};

} // namespace hidet::ops::templates

#include "hidet/util/cold_end.hpp"
