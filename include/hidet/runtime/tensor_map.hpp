// TMA tensor maps: the 128-byte CUtensorMap that describes a global tensor and the box a
// cp.async.bulk.tensor moves, encoded on the host with cuTensorMapEncodeTiled (dlopen'ed driver).
// Kernels take the map as a u8[128] tensor in global memory (to_device()) and pass it to
// tma_load / tma_store (lang/primitives/hopper.hpp).
//
//   auto tmap = hidet::TensorMap::tiled(a, {64, 64});        // a: f16 [m][k] on cuda
//   cm(tmap.to_device(), a, ...);
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "hidet/runtime/tensor.hpp"

namespace hidet {

/// A TMA tensor map over a row-major tensor on the GPU.
class TensorMap {
public:
  /// Shared-memory swizzle of the box (128B needs box rows of 128 bytes, ...).
  enum class Swizzle : std::uint8_t { None, B32, B64, B128 };

  /// Encodes a tiled map over `t` (row-major, 1 to 5 dims) moving boxes of `box` elements
  /// (outermost first, like t's shape). Throws ValueError for shapes the hardware rejects and
  /// CudaError when the driver refuses the map.
  static TensorMap tiled(const Tensor &t, const std::vector<std::int64_t> &box,
                         Swizzle swizzle = Swizzle::None);

  /// What a tiled map is encoded from: a row-major tensor at `address` and the box.
  struct Spec {
    void *address = nullptr;
    DataType dtype;
    std::vector<std::int64_t> shape, box;
    Swizzle swizzle = Swizzle::None;
  };
  /// Encodes a tiled map from a spec (tiled() checks the tensor, then calls this; a saved
  /// compiled graph re-encodes its maps over the memory it runs on).
  static TensorMap tiled(const Spec &spec);
  /// The spec this map was encoded from.
  const Spec &spec() const { return spec_; }

  /// The 128 bytes of the map.
  const CUtensorMap &map() const { return map_; }
  /// A u8[128] tensor on the GPU holding the map, for a kernel parameter of type u8[128].
  Tensor to_device() const;

private:
  alignas(64) CUtensorMap map_{};
  Spec spec_;
};

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/tensor_map.ipp"
#endif
