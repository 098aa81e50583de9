// The base of every IR node: an intrusive reference count, a kind tag and the user's source
// position. Node kinds are listed once here; the kind enum, the functors (visitor, mutator,
// printer, equality) are all derived from these lists.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "hidet/error.hpp"

namespace hidet::ir {

#define HIDET_TYPE_NODES(X) X(ScalarType) X(PointerType) X(TensorType) X(VoidType)

#define HIDET_EXPR_NODES(X)                                                                        \
  X(Constant) X(Var) X(Builtin) X(Unary) X(Binary) X(Cast) X(Select) X(Call) X(TensorElement)      \
      X(Address) X(Deref)

#define HIDET_STMT_NODES(X)                                                                        \
  X(DeclareStmt) X(AssignStmt) X(BufferStoreStmt) X(SeqStmt) X(ForStmt) X(WhileStmt) X(IfStmt)    \
      X(BreakStmt) X(ContinueStmt) X(ReturnStmt) X(EvaluateStmt) X(AssertStmt) X(AsmStmt)

/// Kind tag of every node; used by `as<T>()` instead of RTTI.
enum class NodeKind : std::uint8_t {
#define HIDET_X(name) name,
  HIDET_TYPE_NODES(HIDET_X) HIDET_EXPR_NODES(HIDET_X) HIDET_STMT_NODES(HIDET_X)
#undef HIDET_X
      Function,
  Module,
  Layout,
};

/// Base of every reference-counted IR object. Nodes are immutable after make().
struct Object {
  mutable std::atomic<std::int32_t> ref_count{0};
  NodeKind kind;
  explicit Object(NodeKind k) : kind(k) {}
  virtual ~Object();
  Object(const Object &) = delete;
  Object &operator=(const Object &) = delete;
};

/// An intrusive shared pointer to a node of type T (or a subclass of it).
template <class T> class Ref {
public:
  Ref() = default;
  Ref(std::nullptr_t) {}
  explicit Ref(const T *p) : ptr_(p) { inc(); }
  Ref(const Ref &o) : ptr_(o.ptr_) { inc(); }
  Ref(Ref &&o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)) {}
  template <class U>
    requires std::is_base_of_v<T, U>
  Ref(const Ref<U> &o) : ptr_(o.get()) {
    inc();
  }
  ~Ref() { dec(); }
  Ref &operator=(Ref o) noexcept {
    std::swap(ptr_, o.ptr_);
    return *this;
  }

  const T *get() const { return ptr_; }
  const T *operator->() const { return ptr_; }
  const T &operator*() const { return *ptr_; }
  bool defined() const { return ptr_ != nullptr; }
  explicit operator bool() const { return ptr_ != nullptr; }
  /// Identity comparison (structural equality is ir::structural_equal).
  bool same_as(const Ref &o) const { return ptr_ == o.ptr_; }
  NodeKind kind() const { return ptr_->kind; }

  /// Downcast: the node as `const U*` when its kind is U's, else nullptr.
  template <class U> const U *as() const {
    return (ptr_ && U::is_kind(ptr_->kind)) ? static_cast<const U *>(ptr_) : nullptr;
  }
  template <class U> bool is() const { return ptr_ && U::is_kind(ptr_->kind); }

private:
  void inc() const {
    if (ptr_) ptr_->ref_count.fetch_add(1, std::memory_order_relaxed);
  }
  void dec() {
    if (ptr_ && ptr_->ref_count.fetch_sub(1, std::memory_order_acq_rel) == 1) delete ptr_;
    ptr_ = nullptr;
  }
  const T *ptr_ = nullptr;
};

/// Hash of a handle by identity (for maps keyed by variables): the node's address, as
/// std::hash of a pointer gives it.
struct RefHash {
  template <class T> std::size_t operator()(const Ref<T> &r) const {
    return reinterpret_cast<std::size_t>(static_cast<const void *>(r.get()));
  }
};
struct RefEq {
  template <class T> bool operator()(const Ref<T> &a, const Ref<T> &b) const {
    return a.get() == b.get();
  }
};

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/node.ipp"
#endif
