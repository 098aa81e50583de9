// hidet::Tensor: a dense row-major array with a shape, a dtype and a device, holding a shared,
// reference-counted storage (freed through the caching allocator) and a byte offset into it.
// Views (reshape) share the storage. Tensors on the emulated 'cuda' device live in host memory
// and print their device as 'cuda:0 (emulator)'.
//
// Copies between host and GPU go through the driver on the calling thread's current stream and
// wait for it, so values read back include all work queued on that stream before.
//
// A symbolic tensor (symbol(), symbol_like(), or the result of an operator applied to one) has a
// shape, a dtype and a device but no storage: operators given one record themselves (an Operator,
// see runtime/operator.hpp) instead of running, and trace() says which operator made it. Its
// extents may be named symbols (Dim, runtime/dim.hpp); shape() then throws and sym_shape() answers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "hidet/ir/dtype.hpp"
#include "hidet/runtime/dim.hpp"
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
  CachingAllocator *alloc = nullptr; ///< null for memory hidet does not own (see `owner`)
  /// What keeps memory hidet does not own alive: the block this one lies in (a planned
  /// workspace), or another framework's tensor (external_storage).
  std::shared_ptr<const void> owner;

  Storage() = default;
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;
  ~Storage();
};

/// Allocates `nbytes` for `device` from its caching allocator.
std::shared_ptr<Storage> allocate_storage(std::size_t nbytes, Device device);

/// Memory of another framework (a torch tensor's data): `ptr` on `device` (`host` memory or not),
/// kept alive by `owner` as long as a tensor uses it. Nothing is copied.
std::shared_ptr<Storage> external_storage(void *ptr, std::size_t nbytes, Device device, bool host,
                                          std::shared_ptr<const void> owner);

/// A block of `nbytes` at byte `offset` inside `base` (no allocation; keeps `base` alive).
std::shared_ptr<Storage> sub_storage(const std::shared_ptr<Storage> &base, std::size_t offset, std::size_t nbytes);

namespace runtime::detail {
/// While set (on this thread), every storage allocated is also appended here: a CUDA graph being
/// captured keeps the memory its kernels write alive for as long as it can replay them.
std::vector<std::shared_ptr<Storage>> *&capture_keep_list();

/// Sees every allocate_storage() call on the thread where it is installed (allocation_hook()):
/// it may serve the request itself (a block of a planned workspace, graph/compiled_graph.hpp) or
/// return null to let the caching allocator serve it; `allocated` is told of every storage made.
class AllocationHook {
public:
  virtual ~AllocationHook() = default;
  virtual std::shared_ptr<Storage> serve(std::size_t nbytes, Device device) = 0;
  virtual void allocated(const std::shared_ptr<Storage> &) {}
};
/// The hook installed on this thread (null when none).
AllocationHook *&allocation_hook();
} // namespace runtime::detail

namespace runtime::detail {

/// Copies n bytes between any two memories (host, or GPU `index`), stream-ordered on the current
/// stream and waiting for it when the host is involved.
void copy_bytes(void *dst, Device dst_dev, bool dst_host, const void *src, Device src_dev,
                bool src_host, std::size_t n);

/// Writes v converted to dt at dst (ints truncate toward zero; bool is v != 0).
void store_as(void *dst, DataType dt, double v);


/// "(2, 3)", "(6,)", "()": a shape as a Python tuple, the way Hidet prints it.
std::string shape_str(const std::vector<std::int64_t> &shape);

/// The element count; throws ValueError for a negative extent.
std::int64_t checked_numel(const std::vector<std::int64_t> &shape, const char *what);

} // namespace runtime::detail

class Operator;
class Tensor;

namespace runtime::detail {
/// Writes `elem` (t's dtype's bytes) into every element of t with no kernel and no copy from the
/// host: a loop in host memory, else the driver's memset on t's device where the bytes are a
/// 1-, 2- or 4-byte pattern (or 8 bytes of equal halves). False, with nothing written, for other
/// patterns and while a command hook records the device work.
bool fill_without_kernel(const Tensor &t, const void *elem);

/// The state of a symbolic tensor.
struct SymbolicInfo {
  SymShape shape;
  Device device;
  std::string name;                   ///< a graph input's name ("x"); empty for operator outputs
  std::shared_ptr<const Operator> op; ///< the operator that made it (null for a graph input)
  int index = 0;                      ///< which of op's outputs
  bool constant_shape = true;         ///< no extent is a symbol
};
} // namespace runtime::detail

namespace runtime::detail {
/// The name of a traced operator (defined with Operator, in runtime/operator.hpp).
const std::string &operator_name(const Operator &op);
/// x.reshape(shape) for a symbolic x: records a Reshape.
Tensor trace_reshape(const Tensor &x, std::vector<std::int64_t> shape);
/// x.reshape(shape) where x's extents or the target's are symbols: records a Reshape whose node
/// evaluates the target with the run's symbol values (SymbolBinding); -1 infers one extent.
Tensor trace_sym_reshape(const Tensor &x, SymShape shape);
Tensor trace_narrow(const Tensor &x, std::int64_t start, std::int64_t length);
} // namespace runtime::detail

/// Where a symbolic tensor comes from: output `index` of `op` (null op: a graph input).
struct Trace {
  std::shared_ptr<const Operator> op;
  int index = 0;
  explicit operator bool() const { return op != nullptr; }
};

/// A dense, contiguous, row-major tensor.
class Tensor {
public:
  /// An undefined tensor (no storage).
  Tensor() = default;
  /// A tensor viewing `storage` from byte `offset`.
  Tensor(std::shared_ptr<Storage> storage, std::vector<std::int64_t> shape, DataType dtype,
         std::size_t offset = 0);

  /// A symbolic tensor (see the top of the file): `name` names a graph input; `op` and `index`
  /// say which operator output it is (set by the operators, null for an input).
  static Tensor symbolic(SymShape shape, DataType dtype, Device device, std::string name = "",
                         std::shared_ptr<const Operator> op = nullptr, int index = 0);

  /// False for a default-constructed tensor.
  bool defined() const { return storage_ != nullptr || sym_ != nullptr; }
  /// True for a symbolic tensor (no storage; see the top of the file).
  bool is_symbolic() const { return sym_ != nullptr; }
  /// The extents; throws ValueError for a symbolic tensor whose extents are not all constant.
  const std::vector<std::int64_t> &shape() const {
    if (sym_ && !sym_->constant_shape) throw_symbolic_shape();
    return shape_;
  }
  /// The extents as Dims (symbols included).
  SymShape sym_shape() const { return sym_ ? sym_->shape : to_sym_shape(shape_); }
  DataType dtype() const { return dtype_; }
  /// The device; cpu for an undefined tensor.
  Device device() const {
    return storage_ ? storage_->device : sym_ ? sym_->device : Device::cpu();
  }
  int ndim() const { return sym_ ? int(sym_->shape.size()) : int(shape_.size()); }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto s : shape())
      n *= s;
    return n;
  }
  /// The operator output a symbolic tensor is (empty for graph inputs and tensors with data).
  Trace trace() const { return sym_ ? Trace{sym_->op, sym_->index} : Trace{}; }
  /// A symbolic graph input's name ("" otherwise).
  const std::string &name() const;
  /// The symbolic state shared by copies of this tensor (its identity in a graph), or null.
  const runtime::detail::SymbolicInfo *symbolic_info() const { return sym_.get(); }
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
  void copy_to_host(void *dst) const;
  /// Overwrites the elements from host memory at src (nbytes() bytes).
  void copy_from_host(const void *src) const;

  /// This tensor on `target` (itself when already there; else a copy).
  Tensor to(Device target) const;
  /// A copy in fresh storage on the same device (allocations are at least 256-byte aligned, so
  /// this also realigns a view at an odd offset).
  Tensor clone() const;
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
  std::vector<double> to_double_vector() const;

  /// A view with another shape and the same elements; one extent may be -1 (inferred).
  Tensor reshape(std::vector<std::int64_t> new_shape) const;
  /// reshape() to extents that may be symbols, x.reshape({n, s, 12, 64}) (a symbolic x only,
  /// unless every extent is constant); one extent may be -1 (inferred).
  template <class D = Dim> Tensor reshape(const std::vector<D> &new_shape) const {
    return reshape_dims(SymShape(new_shape.begin(), new_shape.end()));
  }
  /// A view of `length` entries of the first axis from `start` (PyTorch's narrow(0, start,
  /// length)): the same memory, no copy; recorded as a Narrow node when symbolic.
  Tensor narrow(std::int64_t start, std::int64_t length) const;

  /// "cuda:0", or "cuda:0 (emulator)" when served by the emulator.
  std::string device_str() const;

  /// Hidet's first line: Tensor(shape=(2, 3), dtype='float32', device='cuda:0').
  std::string signature() const;

  /// The signature, a newline and the values (see tensor_print.hpp); for a symbolic tensor the
  /// signature and "from (Matmul, 0)".
  std::string str() const;

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
  void require_defined(const char *what) const;
  void check_element_type(DataType want, const char *what) const;
  [[noreturn]] void throw_symbolic_shape() const;
  Tensor reshape_dims(SymShape new_shape) const;

  std::shared_ptr<Storage> storage_;
  std::shared_ptr<const runtime::detail::SymbolicInfo> sym_;
  std::vector<std::int64_t> shape_;
  DataType dtype_ = dtypes::f32;
  std::size_t offset_ = 0;
};

/// vector<bool> is packed, so bool tensors are copied through bytes.
template <> std::vector<bool> Tensor::to_vector<bool>() const;

/// Prints t.str().
std::ostream &operator<<(std::ostream &os, const Tensor &t);

/// An uninitialized tensor.
Tensor empty(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
             Device device = Device::cuda());

/// A tensor with every element equal to value (converted to dtype).
Tensor full(std::vector<std::int64_t> shape, double value, DataType dtype = dtypes::f32,
            Device device = Device::cuda());

/// A tensor of zeros (a memset on the GPU).
Tensor zeros(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
             Device device = Device::cuda());

/// A tensor of ones.
Tensor ones(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
            Device device = Device::cuda());

/// Samples of the standard normal distribution (host generator; see manual_seed).
Tensor randn(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
             Device device = Device::cuda());

/// Samples of the uniform distribution on [0, 1) (host generator; see manual_seed). For f16/bf16,
/// values just below 1 may round to 1.
Tensor rand(std::vector<std::int64_t> shape, DataType dtype = dtypes::f32,
            Device device = Device::cuda());

namespace runtime::detail {
/// `shape`, or {count} when empty; throws ValueError unless count values fill it.
std::vector<std::int64_t> asarray_shape(std::size_t count, std::vector<std::int64_t> shape);
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
Tensor asarray(const std::vector<bool> &data, std::vector<std::int64_t> shape = {},
               Device device = Device::cuda());

/// A tensor from a braced list: asarray({1.f, 2.f, 3.f, 4.f}, {2, 2}, "cpu").
template <class T>
Tensor asarray(std::initializer_list<T> data, std::vector<std::int64_t> shape = {},
               Device device = Device::cuda()) {
  return asarray(std::vector<T>(data), std::move(shape), device);
}

/// A symbolic tensor named `name` (a graph input): extents are integers or named symbols,
/// symbol({"n", 3}, dtypes::f32, "cuda").
Tensor symbol(SymShape shape, DataType dtype = dtypes::f32, Device device = Device::cuda(),
              std::string name = "x");
/// A symbolic tensor with t's shape, dtype and device.
Tensor symbol_like(const Tensor &t, std::string name = "x");

/// A tensor of `dtype` from doubles (converted like full()).
Tensor asarray(const std::vector<double> &data, std::vector<std::int64_t> shape, DataType dtype,
               Device device = Device::cuda());

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/tensor.ipp"
#endif
