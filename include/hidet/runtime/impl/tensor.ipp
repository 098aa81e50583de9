// Definitions for hidet/runtime/tensor.hpp.
#pragma once

#include "hidet/runtime/tensor.hpp"

#include <cmath>
#include <cstring>

#include "hidet/runtime/command_hook.hpp"
#include "hidet/runtime/cuda_driver.hpp"

namespace hidet {

HIDET_INLINE Storage::~Storage() {
  if (alloc) alloc->deallocate(ptr);
}

HIDET_INLINE std::shared_ptr<Storage> allocate_storage(std::size_t nbytes, Device device) {
  check_device(device);
  auto *hook = runtime::detail::allocation_hook();
  std::shared_ptr<Storage> s = hook ? hook->serve(nbytes, device) : nullptr;
  if (!s) {
    s = std::make_shared<Storage>();
    s->alloc = &allocator(device);
    s->host = s->alloc->host();
    s->device = device;
    s->nbytes = nbytes;
    s->ptr = s->alloc->allocate(nbytes);
  }
  if (hook) hook->allocated(s);
  if (auto *keep = runtime::detail::capture_keep_list()) keep->push_back(s);
  return s;
}

HIDET_INLINE std::shared_ptr<Storage> sub_storage(const std::shared_ptr<Storage> &base, std::size_t offset,
                                                  std::size_t nbytes) {
  HIDET_ASSERT(base && offset + nbytes <= base->nbytes, "sub_storage: [", offset, ", ", offset + nbytes,
               ") is outside a block of ", base ? base->nbytes : 0, " bytes");
  auto s = std::make_shared<Storage>();
  s->ptr = static_cast<char *>(base->ptr) + offset;
  s->nbytes = nbytes;
  s->device = base->device;
  s->host = base->host;
  s->owner = base;
  return s;
}

HIDET_INLINE std::shared_ptr<Storage> external_storage(void *ptr, std::size_t nbytes, Device device, bool host,
                                                       std::shared_ptr<const void> owner) {
  auto s = std::make_shared<Storage>();
  s->ptr = ptr;
  s->nbytes = nbytes;
  s->device = device;
  s->host = host;
  s->owner = std::move(owner);
  return s;
}

HIDET_INLINE std::vector<std::shared_ptr<Storage>> *&runtime::detail::capture_keep_list() {
  thread_local std::vector<std::shared_ptr<Storage>> *list = nullptr;
  return list;
}

HIDET_INLINE runtime::detail::CommandHook *&runtime::detail::command_hook() {
  thread_local CommandHook *hook = nullptr;
  return hook;
}

HIDET_INLINE runtime::detail::AllocationHook *&runtime::detail::allocation_hook() {
  thread_local AllocationHook *hook = nullptr;
  return hook;
}

namespace runtime::detail {

HIDET_INLINE void copy_bytes(void *dst, Device dst_dev, bool dst_host, const void *src,
                             Device src_dev, bool src_host, std::size_t n) {
  if (n == 0) return;
  if (auto *hook = command_hook()) hook->copy(dst, dst_dev, src, src_dev, n);
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

HIDET_INLINE void store_as(void *dst, DataType dt, double v) {
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
  case DTypeCode::F8E4M3:
    return put(float_to_f8e4m3_bits(float(v)));
  case DTypeCode::F8E5M2:
    return put(float_to_f8e5m2_bits(float(v)));
  case DTypeCode::F32:
    return put(float(v));
  case DTypeCode::F64:
    return put(v);
  }
}

HIDET_INLINE std::string shape_str(const std::vector<std::int64_t> &shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

HIDET_INLINE std::int64_t checked_numel(const std::vector<std::int64_t> &shape, const char *what) {
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

HIDET_INLINE Tensor::Tensor(std::shared_ptr<Storage> storage, std::vector<std::int64_t> shape,
                            DataType dtype, std::size_t offset)
    : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype), offset_(offset) {
  HIDET_ASSERT(storage_, "a tensor needs a storage");
  HIDET_ASSERT(offset_ + nbytes() <= storage_->nbytes, "tensor of ", nbytes(),
               " bytes at offset ", offset_, " exceeds its storage of ", storage_->nbytes,
               " bytes");
}

HIDET_INLINE Tensor Tensor::symbolic(SymShape shape, DataType dtype, Device device, std::string name,
                                    std::shared_ptr<const Operator> op, int index) {
  auto info = std::make_shared<runtime::detail::SymbolicInfo>();
  info->constant_shape = is_constant_shape(shape);
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i].is_constant() && shape[i].value() < 0)
      throw ValueError(str_cat("symbolic tensor ", name.empty() ? "" : "'" + name + "' ",
                               "of shape ", sym_shape_str(shape), ": extents must be >= 0"));
  Tensor t;
  if (info->constant_shape) t.shape_ = constant_shape(shape);
  info->shape = std::move(shape);
  info->device = device;
  info->name = std::move(name);
  info->op = std::move(op);
  info->index = index;
  t.dtype_ = dtype;
  t.sym_ = std::move(info);
  return t;
}

HIDET_INLINE const std::string &Tensor::name() const {
  static const std::string none;
  return sym_ ? sym_->name : none;
}

HIDET_INLINE void Tensor::throw_symbolic_shape() const {
  throw ValueError(str_cat(
      "the tensor ", sym_->name.empty() ? "" : "'" + sym_->name + "' ", "of shape ",
      sym_shape_str(sym_->shape),
      sym_->op ? str_cat(" (output ", sym_->index, " of ", runtime::detail::operator_name(*sym_->op), ")") : std::string(),
      " has symbolic extents, so it has no concrete shape(); use sym_shape(), or give the "
      "operator constant extents (this operator does not trace symbolic dimensions)"));
}

HIDET_INLINE void Tensor::copy_to_host(void *dst) const {
  require_defined("copy_to_host");
  runtime::detail::copy_bytes(dst, Device::cpu(), true, data_ptr(), device(), storage_->host,
                              nbytes());
}

HIDET_INLINE void Tensor::copy_from_host(const void *src) const {
  require_defined("copy_from_host");
  runtime::detail::copy_bytes(data_ptr(), device(), storage_->host, src, Device::cpu(), true,
                              nbytes());
}

HIDET_INLINE Tensor Tensor::to(Device target) const {
  if (sym_ && target == device()) return *this;
  require_defined("to");
  if (target == device()) return *this;
  Tensor out(allocate_storage(nbytes(), target), shape_, dtype_);
  runtime::detail::copy_bytes(out.data_ptr(), target, out.storage_->host, data_ptr(), device(),
                              storage_->host, nbytes());
  return out;
}

HIDET_INLINE Tensor Tensor::clone() const {
  require_defined("clone");
  Tensor out(allocate_storage(nbytes(), device()), shape_, dtype_);
  runtime::detail::copy_bytes(out.data_ptr(), device(), out.storage_->host, data_ptr(), device(), storage_->host,
                              nbytes());
  return out;
}

HIDET_INLINE std::vector<double> Tensor::to_double_vector() const {
  require_defined("to_double_vector");
  std::vector<char> raw(nbytes());
  copy_to_host(raw.data());
  std::vector<double> out(static_cast<std::size_t>(numel()));
  auto convert = [&](auto tag, auto f) { // one typed loop per dtype (weights of whole models pass here)
    using T = decltype(tag);
    const T *src = reinterpret_cast<const T *>(raw.data());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = f(src[i]);
  };
  switch (dtype_.code) {
  case DTypeCode::F16: convert(std::uint16_t{}, [](std::uint16_t h) { return double(half_bits_to_float(h)); }); break;
  case DTypeCode::BF16: convert(std::uint16_t{}, [](std::uint16_t h) { return double(bf16_bits_to_float(h)); }); break;
  case DTypeCode::F32: convert(float{}, [](float v) { return double(v); }); break;
  default:
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = runtime::detail::element_as_double(raw.data(), dtype_, std::int64_t(i));
  }
  return out;
}

HIDET_INLINE Tensor Tensor::reshape(std::vector<std::int64_t> new_shape) const {
  if (!sym_) require_defined("reshape");
  if (sym_ && !sym_->constant_shape) return runtime::detail::trace_sym_reshape(*this, to_sym_shape(new_shape));
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
  if (sym_) return runtime::detail::trace_reshape(*this, std::move(new_shape));
  return Tensor(storage_, std::move(new_shape), dtype_, offset_);
}

HIDET_INLINE Tensor Tensor::reshape_dims(SymShape new_shape) const {
  if (is_constant_shape(new_shape) && (!sym_ || sym_->constant_shape)) return reshape(constant_shape(new_shape));
  if (sym_) return runtime::detail::trace_sym_reshape(*this, std::move(new_shape));
  require_defined("reshape");
  if (!is_constant_shape(new_shape))
    throw ValueError(str_cat("reshape: the target shape ", sym_shape_str(new_shape), " of a tensor with data (shape ",
                             runtime::detail::shape_str(shape_), ") has symbols; only symbolic tensors take symbolic extents"));
  return reshape(constant_shape(new_shape));
}

HIDET_INLINE Tensor Tensor::narrow(std::int64_t start, std::int64_t length) const {
  if (!sym_) require_defined("narrow");
  const auto &full = shape(); // a symbolic tensor's extents must be constant
  if (full.empty() || start < 0 || length < 0 || start + length > full[0])
    throw ValueError(str_cat("narrow: entries [", start, ", ", start + length, ") of the first axis of a tensor of shape ",
                             runtime::detail::shape_str(full), " are out of range"));
  std::vector<std::int64_t> out = full;
  out[0] = length;
  if (sym_) return runtime::detail::trace_narrow(*this, start, length);
  std::size_t row = std::size_t(numel() / std::max<std::int64_t>(full[0], 1)) * dtype_.nbytes();
  return Tensor(storage_, std::move(out), dtype_, offset_ + std::size_t(start) * row);
}

HIDET_INLINE std::string Tensor::device_str() const {
  bool emulated = is_emulated() || (sym_ && sym_->device.is_cuda() && runtime::cuda_emulated());
  return emulated ? device().str() + " (emulator)" : device().str();
}

HIDET_INLINE std::string Tensor::signature() const {
  if (!defined()) return "Tensor(undefined)";
  std::string shape = runtime::detail::shape_str(shape_);
  if (sym_ && !sym_->constant_shape) {
    shape = sym_shape_str(sym_->shape);
    shape = "(" + shape.substr(1, shape.size() - 2) + (sym_->shape.size() == 1 ? ",)" : ")");
  }
  return str_cat("Tensor(shape=", shape, ", dtype='", dtype_.name(), "', device='", device_str(),
                 "')");
}

HIDET_INLINE std::string Tensor::str() const {
  if (!defined()) return signature();
  if (sym_)
    return sym_->op ? str_cat(signature(), "\nfrom (", runtime::detail::operator_name(*sym_->op), ", ", sym_->index, ")")
                    : signature();
  std::vector<char> raw(nbytes());
  copy_to_host(raw.data());
  return signature() + "\n" + format_array(raw.data(), dtype_, shape_);
}

HIDET_INLINE void Tensor::require_defined(const char *what) const {
  if (sym_)
    throw ValueError(str_cat("Tensor::", what, ": the tensor is symbolic (", signature(),
                             sym_->op ? str_cat(", output ", sym_->index, " of ", runtime::detail::operator_name(*sym_->op))
                                      : std::string(),
                             "): it holds no data; trace a graph from it and run the graph"));
  if (!storage_)
    throw ValueError(
        str_cat("Tensor::", what, ": the tensor is undefined (default-constructed)"));
}

HIDET_INLINE void Tensor::check_element_type(DataType want, const char *what) const {
  require_defined(what);
  if (want != dtype_)
    throw ValueError(str_cat("Tensor::", what, "<", want.c_name(), ">: the tensor's dtype is '",
                             dtype_.name(), "' but the element type requested is '", want.name(),
                             "'; request the matching type or use to_double_vector()"));
}

template <> HIDET_INLINE std::vector<bool> Tensor::to_vector<bool>() const {
  check_element_type(dtypes::boolean, "to_vector");
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(numel()));
  copy_to_host(raw.data());
  return std::vector<bool>(raw.begin(), raw.end());
}

HIDET_INLINE std::ostream &operator<<(std::ostream &os, const Tensor &t) { return os << t.str(); }

HIDET_INLINE Tensor symbol(SymShape shape, DataType dtype, Device device, std::string name) {
  return Tensor::symbolic(std::move(shape), dtype, device, std::move(name));
}

HIDET_INLINE Tensor symbol_like(const Tensor &t, std::string name) {
  if (!t.defined()) throw ValueError("symbol_like: the tensor is undefined (default-constructed)");
  return Tensor::symbolic(t.sym_shape(), t.dtype(), t.device(), std::move(name));
}

HIDET_INLINE Tensor empty(std::vector<std::int64_t> shape, DataType dtype, Device device) {
  std::int64_t n = runtime::detail::checked_numel(shape, "empty");
  return Tensor(allocate_storage(std::size_t(n) * dtype.nbytes(), device), std::move(shape), dtype);
}

HIDET_INLINE bool runtime::detail::fill_without_kernel(const Tensor &t, const void *elem) {
  const std::size_t es = t.dtype().nbytes(), nbytes = t.nbytes();
  if (nbytes == 0) return true;
  if (command_hook()) return false; // (it is told of byte fills and copies only)
  if (t.is_host_memory()) {
    auto *p = static_cast<unsigned char *>(t.data_ptr());
    for (std::size_t i = 0; i < nbytes; i += es) std::memcpy(p + i, elem, es);
    return true;
  }
  std::uint8_t u8 = 0;
  std::uint16_t u16 = 0;
  std::uint32_t u32 = 0, hi = 0;
  std::memcpy(&u8, elem, 1);
  if (es >= 2) std::memcpy(&u16, elem, 2);
  if (es >= 4) std::memcpy(&u32, elem, 4);
  if (es == 8) std::memcpy(&hi, static_cast<const char *>(elem) + 4, 4);
  if (es == 8 && u32 != hi) return false;
  const Device device = t.device();
  ensure_context(device.index);
  const auto &d = cuda::driver();
  const auto ptr = reinterpret_cast<CUdeviceptr>(t.data_ptr());
  const std::size_t n = nbytes / es;
  CUstream s = stream_for(device);
  const std::string what = str_cat("filling ", nbytes, " bytes on ", device);
  if (es == 1) cuda::check(d.cuMemsetD8Async(ptr, u8, n, s), what);
  else if (es == 2) cuda::check(d.cuMemsetD16Async(ptr, u16, n, s), what);
  else if (es == 4) cuda::check(d.cuMemsetD32Async(ptr, u32, n, s), what);
  else cuda::check(d.cuMemsetD32Async(ptr, u32, 2 * n, s), what);
  return true;
}

HIDET_INLINE Tensor full(std::vector<std::int64_t> shape, double value, DataType dtype,
                         Device device) {
  Tensor t = empty(std::move(shape), dtype, device);
  std::size_t es = dtype.nbytes();
  char elem[8];
  runtime::detail::store_as(elem, dtype, value);
  if (runtime::detail::fill_without_kernel(t, elem)) return t;
  std::vector<char> host(t.nbytes());
  for (std::size_t i = 0; i < host.size(); i += es)
    std::memcpy(host.data() + i, elem, es);
  t.copy_from_host(host.data());
  return t;
}

HIDET_INLINE Tensor zeros(std::vector<std::int64_t> shape, DataType dtype, Device device) {
  Tensor t = empty(std::move(shape), dtype, device);
  if (t.nbytes() == 0) return t;
  if (auto *hook = runtime::detail::command_hook()) hook->fill(t.data_ptr(), device, 0, t.nbytes());
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

HIDET_INLINE Tensor ones(std::vector<std::int64_t> shape, DataType dtype, Device device) {
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

HIDET_INLINE Tensor randn(std::vector<std::int64_t> shape, DataType dtype, Device device) {
  return runtime::detail::random_tensor(std::move(shape), dtype, device, "randn",
                                        [](Generator &g) { return g.normal(); });
}

HIDET_INLINE Tensor rand(std::vector<std::int64_t> shape, DataType dtype, Device device) {
  return runtime::detail::random_tensor(std::move(shape), dtype, device, "rand",
                                        [](Generator &g) { return g.uniform(); });
}

namespace runtime::detail {
HIDET_INLINE std::vector<std::int64_t> asarray_shape(std::size_t count,
                                                     std::vector<std::int64_t> shape) {
  if (shape.empty()) return {std::int64_t(count)};
  std::int64_t n = checked_numel(shape, "asarray");
  if (n != std::int64_t(count))
    throw ValueError(str_cat("asarray: ", count, " values do not fill shape ", shape_str(shape),
                             " (", n, " elements)"));
  return shape;
}
} // namespace runtime::detail

HIDET_INLINE Tensor asarray(const std::vector<bool> &data, std::vector<std::int64_t> shape,
                            Device device) {
  std::vector<std::uint8_t> bytes(data.begin(), data.end());
  Tensor t =
      empty(runtime::detail::asarray_shape(data.size(), std::move(shape)), dtypes::boolean, device);
  t.copy_from_host(bytes.data());
  return t;
}

HIDET_INLINE Tensor asarray(const std::vector<double> &data, std::vector<std::int64_t> shape,
                            DataType dtype, Device device) {
  Tensor t = empty(runtime::detail::asarray_shape(data.size(), std::move(shape)), dtype, device);
  std::vector<char> host(t.nbytes());
  auto convert = [&](auto tag, auto f) { // one typed loop per dtype
    using T = decltype(tag);
    T *dst = reinterpret_cast<T *>(host.data());
    for (std::size_t i = 0; i < data.size(); ++i) dst[i] = f(data[i]);
  };
  switch (dtype.code) {
  case DTypeCode::F16: convert(std::uint16_t{}, [](double v) { return float_to_half_bits(float(v)); }); break;
  case DTypeCode::BF16: convert(std::uint16_t{}, [](double v) { return float_to_bf16_bits(float(v)); }); break;
  case DTypeCode::F32: convert(float{}, [](double v) { return float(v); }); break;
  default:
    for (std::size_t i = 0; i < data.size(); ++i)
      runtime::detail::store_as(host.data() + i * dtype.nbytes(), dtype, data[i]);
  }
  t.copy_from_host(host.data());
  return t;
}

} // namespace hidet

// Operator-dependent definitions (operator_name, trace_reshape) are in operator.ipp; included
// last, so that either header may come first.
#include "hidet/runtime/operator.hpp"
