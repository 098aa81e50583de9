// hidet::Tensor: a dense row-major array with a shape, a dtype and a device, holding a shared,
// reference-counted storage (freed through the caching allocator) and a byte offset into it.
// Views (reshape) share the storage. Tensors on the emulated 'cuda' device live in host memory
// and print their device as 'cuda:0 (emulator)'.
//
// Copies between host and GPU go through the driver on the calling thread's current stream and
// wait for it, so values read back include all work queued on that stream before.
#pragma once

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "hidet/ir/dtype.hpp"
#include "hidet/runtime/allocator.hpp"
#include "hidet/runtime/random.hpp"
#include "hidet/runtime/stream.hpp"
#include "hidet/runtime/tensor_print.hpp"
#include "hidet/util/float16.hpp"

namespace hidet {

/// The dtype whose elements have host type T (bool, the fixed-width integers, float16, bfloat16,
/// float, double).
template <class T> constexpr DataType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return dtypes::boolean;
  else if constexpr (std::is_same_v<T, std::int8_t>)
    return dtypes::i8;
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return dtypes::i16;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return dtypes::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return dtypes::i64;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return dtypes::u8;
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return dtypes::u16;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return dtypes::u32;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return dtypes::u64;
  else if constexpr (std::is_same_v<T, float16>)
    return dtypes::f16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return dtypes::bf16;
  else if constexpr (std::is_same_v<T, float>)
    return dtypes::f32;
  else if constexpr (std::is_same_v<T, double>)
    return dtypes::f64;
  else
    static_assert(sizeof(T) == 0, "no hidet dtype for this host type");
}

/// A block of memory on one device, returned to its allocator when the last tensor using it dies.
struct Storage {
  void *ptr = nullptr;
  std::size_t nbytes = 0;
  Device device;
  bool host = true; ///< host memory (cpu, or the emulated cuda device)
  CachingAllocator *alloc = nullptr;

  Storage() = default;
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;
  ~Storage() {
    if (alloc) alloc->deallocate(ptr);
  }
};

/// Allocates `nbytes` for `device` from its caching allocator.
inline std::shared_ptr<Storage> allocate_storage(std::size_t nbytes, Device device) {
  check_device(device);
  auto s = std::make_shared<Storage>();
  s->alloc = &allocator(device);
  s->host = s->alloc->host();
  s->device = device;
  s->nbytes = nbytes;
  s->ptr = s->alloc->allocate(nbytes);
  return s;
}

namespace runtime::detail {

/// Copies n bytes between any two memories (host, or GPU `index`), stream-ordered on the current
/// stream and waiting for it when the host is involved.
inline void copy_bytes(void *dst, Device dst_dev, bool dst_host, const void *src, Device src_dev,
                       bool src_host, std::size_t n) {
  if (n == 0) return;
  if (dst_host && src_host) {
    std::memcpy(dst, src, n);
    return;
  }
  if (!dst_host && !src_host && dst_dev != src_dev) { // between GPUs: stage through the host
    std::vector<char> tmp(n);
    copy_bytes(tmp.data(), Device::cpu(), true, src, src_dev, false, n);
    copy_bytes(dst, dst_dev, false, tmp.data(), Device::cpu(), true, n);
    return;
  }
  const auto &d = cuda::driver();
  Device gpu = dst_host ? src_dev : dst_dev;
  ensure_context(gpu.index);
  CUstream stream = stream_for(gpu);
  if (!dst_host && src_host) {
    cuda::check(d.cuMemcpyHtoDAsync_v2(reinterpret_cast<CUdeviceptr>(dst), src, n, stream),
                str_cat("copying ", n, " bytes from the host to ", gpu));
  } else if (dst_host && !src_host) {
    cuda::check(d.cuMemcpyDtoHAsync_v2(dst, reinterpret_cast<CUdeviceptr>(src), n, stream),
                str_cat("copying ", n, " bytes from ", gpu, " to the host"));
  } else {
    cuda::check(d.cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(dst),
                                       reinterpret_cast<CUdeviceptr>(src), n, stream),
                str_cat("copying ", n, " bytes within ", gpu));
    return; // stream-ordered; no host wait needed
  }
  cuda::check(d.cuStreamSynchronize(stream), str_cat("waiting for a copy on ", gpu));
}

/// Writes v converted to dt at dst (ints truncate toward zero; bool is v != 0).
inline void store_as(void *dst, DataType dt, double v) {
  auto put = [&](auto x) { std::memcpy(dst, &x, sizeof(x)); };
  if (dt.is_integer() && !std::isfinite(v)) v = 0;
  switch (dt.code) {
  case DTypeCode::Bool:
    return put(std::uint8_t(v != 0));
  case DTypeCode::I8:
    return put(std::int8_t(std::int64_t(v)));
  case DTypeCode::I16:
    return put(std::int16_t(std::int64_t(v)));
  case DTypeCode::I32:
    return put(std::int32_t(std::int64_t(v)));
  case DTypeCode::I64:
    return put(std::int64_t(v));
  case DTypeCode::U8:
    return put(std::uint8_t(std::int64_t(v)));
  case DTypeCode::U16:
    return put(std::uint16_t(std::int64_t(v)));
  case DTypeCode::U32:
    return put(std::uint32_t(std::int64_t(v)));
  case DTypeCode::U64:
    return put(v < 0 ? std::uint64_t(std::int64_t(v)) : std::uint64_t(v));
  case DTypeCode::F16:
    return put(float_to_half_bits(float(v)));
  case DTypeCode::BF16:
    return put(float_to_bf16_bits(float(v)));
  case DTypeCode::F32:
    return put(float(v));
  case DTypeCode::F64:
    return put(v);
  }
}

/// "(2, 3)", "(6,)", "()": a shape as a Python tuple, the way Hidet prints it.
inline std::string shape_str(const std::vector<std::int64_t> &shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// The element count; throws ValueError for a negative extent.
inline std::int64_t checked_numel(const std::vector<std::int64_t> &shape, const char *what) {
  std::int64_t n = 1;
  for (auto s : shape) {
    if (s < 0)
      throw ValueError(
          str_cat(what, ": invalid shape ", shape_str(shape), ": extents must be >= 0"));
    n *= s;
  }
  return n;
}

} // namespace runtime::detail

/// A dense, contiguous, row-major tensor.
class Tensor {
public:
  /// An undefined tensor (no storage).
  Tensor() = default;
  /// A tensor viewing `storage` from byte `offset`.
  Tensor(std::shared_ptr<Storage> storage, std::vector<std::int64_t> shape, DataType dtype,
         std::size_t offset = 0)
      : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype), offset_(offset) {
    HIDET_ASSERT(storage_, "a tensor needs a storage");
    HIDET_ASSERT(offset_ + nbytes() <= storage_->nbytes, "tensor of ", nbytes(),
                 " bytes at offset ", offset_, " exceeds its storage of ", storage_->nbytes,
                 " bytes");
  }

  /// False for a default-constructed tensor.
  bool defined() const { return storage_ != nullptr; }
  const std::vector<std::int64_t> &shape() const { return shape_; }
  DataType dtype() const { return dtype_; }
  /// The device; cpu for an undefined tensor.
  Device device() const { return storage_ ? storage_->device : Device::cpu(); }
  int ndim() const { return int(shape_.size()); }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto s : shape_)
      n *= s;
    return n;
  }
  std::size_t nbytes() const { return std::size_t(numel()) * dtype_.nbytes(); }
  /// The first element's address: a device address (cast to void*) on a GPU, else a host pointer.
  void *data_ptr() const {
    return storage_ ? static_cast<char *>(storage_->ptr) + offset_ : nullptr;
  }
  /// True when the data is in host memory (the cpu device or the emulated cuda device).
  bool is_host_memory() const { return !storage_ || storage_->host; }
  /// True for a cuda tensor served by the emulator.
  bool is_emulated() const { return storage_ && storage_->host && storage_->device.is_cuda(); }
  /// The shared storage (for views and interop).
  const std::shared_ptr<Storage> &storage() const { return storage_; }
  /// Byte offset of the first element in the storage.
  std::size_t offset() const { return offset_; }

  /// Copies the elements to host memory at dst (nbytes() bytes).
  void copy_to_host(void *dst) const {
    require_defined("copy_to_host");
    runtime::detail::copy_bytes(dst, Device::cpu(), true, data_ptr(), device(), storage_->host,
                                nbytes());
  }
  /// Overwrites the elements from host memory at src (nbytes() bytes).
  void copy_from_host(const void *src) const {
    require_defined("copy_from_host");
    runtime::detail::copy_bytes(data_ptr(), device(), storage_->host, src, Device::cpu(), true,
                                nbytes());
  }

  /// This tensor on `target` (itself when already there; else a copy).
  Tensor to(Device target) const {
    require_defined("to");
    if (target == device()) return *this;
    Tensor out(allocate_storage(nbytes(), target), shape_, dtype_);
    runtime::detail::copy_bytes(out.data_ptr(), target, out.storage_->host, data_ptr(), device(),
                                storage_->host, nbytes());
    return out;
  }
  /// A copy in fresh storage on the same device (allocations are at least 256-byte aligned, so
  /// this also realigns a view at an odd offset).
  Tensor clone() const {
    require_defined("clone");
    Tensor out(allocate_storage(nbytes(), device()), shape_, dtype_);
    runtime::detail::copy_bytes(out.data_ptr(), device(), out.storage_->host, data_ptr(), device(), storage_->host,
                                nbytes());
    return out;
  }
  Tensor cpu() const { return to(Device::cpu()); }
  Tensor cuda(int index = 0) const { return to(Device::cuda(index)); }

  /// A host copy of the elements; T must match the dtype (see dtype_of).
  template <class T> std::vector<T> to_vector() const {
    check_element_type(dtype_of<T>(), "to_vector");
    std::vector<T> out(static_cast<std::size_t>(numel()));
    copy_to_host(out.data());
    return out;
  }

  /// A host copy of the elements of any dtype, converted to double.
  std::vector<double> to_double_vector() const {
    require_defined("to_double_vector");
    std::vector<char> raw(nbytes());
    copy_to_host(raw.data());
    std::vector<double> out(static_cast<std::size_t>(numel()));
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = runtime::detail::element_as_double(raw.data(), dtype_, std::int64_t(i));
    return out;
  }

  /// A view with another shape and the same elements; one extent may be -1 (inferred).
  Tensor reshape(std::vector<std::int64_t> new_shape) const {
    require_defined("reshape");
    using runtime::detail::shape_str;
    int infer = -1;
    std::int64_t known = 1;
    for (int i = 0; i < int(new_shape.size()); ++i) {
      if (new_shape[i] == -1) {
        if (infer >= 0)
          throw ValueError(str_cat("reshape: cannot reshape tensor of shape ", shape_str(shape_),
                                   " into shape ", shape_str(new_shape),
                                   ": only one extent may be -1"));
        infer = i;
      } else if (new_shape[i] < 0) {
        throw ValueError(str_cat("reshape: invalid target shape ", shape_str(new_shape),
                                 " for tensor of shape ", shape_str(shape_),
                                 ": extents must be >= 0, or -1 for one inferred extent"));
      } else {
        known *= new_shape[i];
      }
    }
    std::int64_t n = numel();
    if (infer >= 0) {
      if (known == 0 || n % known != 0)
        throw ValueError(str_cat("reshape: cannot reshape tensor of shape ", shape_str(shape_),
                                 " (", n, " elements) into shape ", shape_str(new_shape), ": ", n,
                                 " is not divisible by ", known));
      new_shape[infer] = n / known;
      known = n;
    }
    if (known != n)
      throw ValueError(str_cat("reshape: cannot reshape tensor of shape ", shape_str(shape_), " (",
                               n, " elements) into shape ", shape_str(new_shape), " (", known,
                               " elements)"));
    return Tensor(storage_, std::move(new_shape), dtype_, offset_);
  }

  /// "cuda:0", or "cuda:0 (emulator)" when served by the emulator.
  std::string device_str() const {
    return is_emulated() ? device().str() + " (emulator)" : device().str();
  }

  /// Hidet's first line: Tensor(shape=(2, 3), dtype='float32', device='cuda:0').
  std::string signature() const {
    if (!defined()) return "Tensor(undefined)";
    return str_cat("Tensor(shape=", runtime::detail::shape_str(shape_), ", dtype='", dtype_.name(),
                   "', device='", device_str(), "')");
  }

  /// The signature, a newline and the values (see tensor_print.hpp).
  std::string str() const {
    if (!defined()) return signature();
    std::vector<char> raw(nbytes());
    copy_to_host(raw.data());
    return signature() + "\n" + format_array(raw.data(), dtype_, shape_);
  }

  // Operator methods forwarding to hidet::ops (defined in hidet/ops/tensor_methods.hpp, included
  // by hidet/ops.hpp; the runtime layer does not depend on ops). Axes lists: empty means all.
  Tensor sum(std::vector<int> axes = {}, bool keepdims = false) const;
  Tensor mean(std::vector<int> axes = {}, bool keepdims = false) const;
  Tensor max(std::vector<int> axes = {}, bool keepdims = false) const;
  Tensor min(std::vector<int> axes = {}, bool keepdims = false) const;
  Tensor prod(std::vector<int> axes = {}, bool keepdims = false) const;
  Tensor var(std::vector<int> axes = {}, bool keepdims = false, int correction = 1) const;
  Tensor std(std::vector<int> axes = {}, bool keepdims = false, int correction = 1) const;
  Tensor argmax(int axis, bool keepdims = false) const;
  Tensor argmin(int axis, bool keepdims = false) const;
  Tensor transpose(int a = -2, int b = -1) const;
  Tensor permute(std::vector<int> perm) const;
  Tensor flatten(int start = 0, int end = -1) const;
  Tensor squeeze(std::vector<int> axes = {}) const;
  Tensor unsqueeze(int axis) const;
  Tensor broadcast_to(std::vector<std::int64_t> shape) const;
  Tensor flip(std::vector<int> axes) const;
  Tensor astype(DataType dtype) const;
  Tensor matmul(const Tensor &other) const;
  Tensor abs() const;
  Tensor exp() const;
  Tensor relu() const;

private:
  void require_defined(const char *what) const {
    if (!storage_)
      throw ValueError(
          str_cat("Tensor::", what, ": the tensor is undefined (default-constructed)"));
  }
  void check_element_type(DataType want, const char *what) const {
    require_defined(what);
    if (want != dtype_)
      throw ValueError(str_cat("Tensor::", what, "<", want.c_name(), ">: the tensor's dtype is '",
                               dtype_.name(), "' but the element type requested is '", want.name(),
                               "'; request the matching type or use to_double_vector()"));
  }

  std::shared_ptr<Storage> storage_;
  std::vector<std::int64_t> shape_;
  DataType dtype_ = dtypes::f32;
  std::size_t offset_ = 0;
};

/// vector<bool> is packed, so bool tensors are copied through bytes.
template <> inline std::vector<bool> Tensor::to_vector<bool>() const {
  check_element_type(dtypes::boolean, "to_vector");
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(numel()));
  copy_to_host(raw.data());
  return std::vector<bool>(raw.begin(), raw.end());
}

inline std::ostream &operator<<(std::ostream &os, const Tensor &t) { return os << t.str(); }

/// An uninitialized tensor.
inline Tensor empty(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
                    Device device = Device::cuda()) {
  std::int64_t n = runtime::detail::checked_numel(shape, "empty");
  return Tensor(allocate_storage(std::size_t(n) * dtype.nbytes(), device), std::move(shape), dtype);
}

/// A tensor with every element equal to value (converted to dtype).
inline Tensor full(std::vector<std::int64_t> shape, double value, DataType dtype = dtypes::f32,
                   Device device = Device::cuda()) {
  Tensor t = empty(std::move(shape), dtype, device);
  std::size_t es = dtype.nbytes();
  char elem[8];
  runtime::detail::store_as(elem, dtype, value);
  std::vector<char> host(t.nbytes());
  for (std::size_t i = 0; i < host.size(); i += es)
    std::memcpy(host.data() + i, elem, es);
  t.copy_from_host(host.data());
  return t;
}

/// A tensor of zeros (a memset on the GPU).
inline Tensor zeros(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
                    Device device = Device::cuda()) {
  Tensor t = empty(std::move(shape), dtype, device);
  if (t.nbytes() == 0) return t;
  if (t.is_host_memory()) {
    std::memset(t.data_ptr(), 0, t.nbytes());
  } else {
    ensure_context(device.index);
    CUstream s = stream_for(device);
    cuda::check(cuda::driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(t.data_ptr()), 0,
                                               t.nbytes(), s),
                str_cat("zero-filling ", t.nbytes(), " bytes on ", device));
  }
  return t;
}

/// A tensor of ones.
inline Tensor ones(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
                   Device device = Device::cuda()) {
  return full(std::move(shape), 1.0, dtype, device);
}

namespace runtime::detail {
template <class Sample>
Tensor random_tensor(std::vector<std::int64_t> shape, DataType dtype, Device device,
                     const char *what, Sample sample) {
  if (!dtype.is_float())
    throw ValueError(str_cat(what, ": dtype '", dtype.name(),
                             "' is not a floating-point type; use float16, bfloat16, float32 or "
                             "float64 (and convert afterwards)"));
  Tensor t = empty(std::move(shape), dtype, device);
  std::vector<char> host(t.nbytes());
  std::size_t es = dtype.nbytes();
  with_global_generator([&](Generator &g) {
    for (std::size_t i = 0; i < host.size(); i += es)
      store_as(host.data() + i, dtype, sample(g));
  });
  t.copy_from_host(host.data());
  return t;
}
} // namespace runtime::detail

/// Samples of the standard normal distribution (host generator; see manual_seed).
inline Tensor randn(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
                    Device device = Device::cuda()) {
  return runtime::detail::random_tensor(std::move(shape), dtype, device, "randn",
                                        [](Generator &g) { return g.normal(); });
}

/// Samples of the uniform distribution on [0, 1) (host generator; see manual_seed). For f16/bf16,
/// values just below 1 may round to 1.
inline Tensor rand(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
                   Device device = Device::cuda()) {
  return runtime::detail::random_tensor(std::move(shape), dtype, device, "rand",
                                        [](Generator &g) { return g.uniform(); });
}

namespace runtime::detail {
inline std::vector<std::int64_t> asarray_shape(std::size_t count, std::vector<std::int64_t> shape) {
  if (shape.empty()) return {std::int64_t(count)};
  std::int64_t n = checked_numel(shape, "asarray");
  if (n != std::int64_t(count))
    throw ValueError(str_cat("asarray: ", count, " values do not fill shape ", shape_str(shape),
                             " (", n, " elements)"));
  return shape;
}
} // namespace runtime::detail

/// A tensor holding a copy of `data` (dtype from T), of the given shape (default: 1-D).
template <class T>
Tensor asarray(const std::vector<T> &data, std::vector<std::int64_t> shape = {},
               Device device = Device::cuda()) {
  Tensor t =
      empty(runtime::detail::asarray_shape(data.size(), std::move(shape)), dtype_of<T>(), device);
  t.copy_from_host(data.data());
  return t;
}

/// A bool tensor holding a copy of `data`.
inline Tensor asarray(const std::vector<bool> &data, std::vector<std::int64_t> shape = {},
                      Device device = Device::cuda()) {
  std::vector<std::uint8_t> bytes(data.begin(), data.end());
  Tensor t =
      empty(runtime::detail::asarray_shape(data.size(), std::move(shape)), dtypes::boolean, device);
  t.copy_from_host(bytes.data());
  return t;
}

/// A tensor from a braced list: asarray({1.f, 2.f, 3.f, 4.f}, {2, 2}, "cpu").
template <class T>
Tensor asarray(std::initializer_list<T> data, std::vector<std::int64_t> shape = {},
               Device device = Device::cuda()) {
  return asarray(std::vector<T>(data), std::move(shape), device);
}

/// A tensor of `dtype` from doubles (converted like full()).
inline Tensor asarray(const std::vector<double> &data, std::vector<std::int64_t> shape,
                      DataType dtype, Device device = Device::cuda()) {
  Tensor t = empty(runtime::detail::asarray_shape(data.size(), std::move(shape)), dtype, device);
  std::vector<char> host(t.nbytes());
  for (std::size_t i = 0; i < data.size(); ++i)
    runtime::detail::store_as(host.data() + i * dtype.nbytes(), dtype, data[i]);
  t.copy_from_host(host.data());
  return t;
}

} // namespace hidet
