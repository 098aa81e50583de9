// What a launcher hands to a backend: launch dimensions and the flat list of kernel arguments
// (device pointers for tensors, scalars for scalar and symbolic-dimension parameters), in the
// order of the lowered kernel's parameters.
#pragma once

#include <cstdint>

#include "hidet/ir/dtype.hpp"

namespace hidet::backend {

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t count() const { return std::uint64_t(x) * y * z; }
  bool operator==(const Dim3 &) const = default;
};

/// One kernel argument. For pointers `ptr` is a device address (a host address on the emulator);
/// for Bytes (a by-value parameter such as a TMA tensor map) `ptr` points to `i` bytes on the host,
/// valid until the launch returns.
struct KernelArg {
  enum class Kind : std::uint8_t { Pointer, Int, Float, Bytes };
  Kind kind = Kind::Int;
  DataType dtype = dtypes::i32; ///< for scalars: the parameter's dtype
  void *ptr = nullptr;
  std::int64_t i = 0;
  double f = 0;

  static KernelArg pointer(void *p) { return {Kind::Pointer, dtypes::u64, p, 0, 0}; }
  static KernelArg integer(DataType d, std::int64_t v) { return {Kind::Int, d, nullptr, v, 0}; }
  static KernelArg floating(DataType d, double v) { return {Kind::Float, d, nullptr, 0, v}; }
  static KernelArg bytes(const void *p, std::int64_t n) { return {Kind::Bytes, dtypes::u8, const_cast<void *>(p), n, 0}; }
};

} // namespace hidet::backend
