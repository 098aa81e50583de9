// IR types: scalars, pointers, tensors (dtype, shape of constant or symbolic dims, layout, memory
// scope) and void. A tensor type's shape entries are expressions, so a dimension can be a
// symbolic variable that the launcher fills in from the argument tensors.
#pragma once

#include <string>
#include <vector>

#include "hidet/ir/dtype.hpp"
#include "hidet/ir/node.hpp"

namespace hidet::ir {

struct ExprNode;
using Expr = Ref<ExprNode>;
struct LayoutNode;
using Layout = Ref<LayoutNode>;

/// Where a tensor lives. Param: a read-only kernel parameter passed by value (a 128-byte TMA
/// tensor map, declared `const __grid_constant__`); its address is a generic address.
enum class Scope : std::uint8_t { Global, Shared, Register, Param };

/// "global", "shared", "register", "param".
const char *scope_name(Scope s);

struct TypeNode : Object {
  using Object::Object;
  static bool is_kind(NodeKind k) { return k <= NodeKind::VoidType; }
};
using Type = Ref<TypeNode>;

struct ScalarTypeNode : TypeNode {
  DataType dtype;
  static constexpr NodeKind kKind = NodeKind::ScalarType;
  static bool is_kind(NodeKind k) { return k == kKind; }
  explicit ScalarTypeNode(DataType d) : TypeNode(kKind), dtype(d) {}
  /// Interned: one node per dtype.
  static Type make(DataType d);
};

struct PointerTypeNode : TypeNode {
  Type base; ///< pointee type (scalar, pointer or void)
  static constexpr NodeKind kKind = NodeKind::PointerType;
  static bool is_kind(NodeKind k) { return k == kKind; }
  explicit PointerTypeNode(Type b) : TypeNode(kKind), base(std::move(b)) {}
  static Type make(Type base) { return Type(new PointerTypeNode(std::move(base))); }
};

struct TensorTypeNode : TypeNode {
  DataType dtype;
  std::vector<Expr> shape; ///< integer expressions; constants or symbolic variables
  Layout layout;           ///< null means row-major over `shape`
  Scope scope;
  static constexpr NodeKind kKind = NodeKind::TensorType;
  static bool is_kind(NodeKind k) { return k == kKind; }
  // The constructor and make() are defined in ir/impl/layout.ipp, where LayoutNode is complete
  // (this header only declares it), so that this header compiles on its own.
  TensorTypeNode(DataType d, std::vector<Expr> s, Layout l, Scope sc);
  static Type make(DataType d, std::vector<Expr> shape, Scope scope = Scope::Global,
                   Layout layout = {});
  std::size_t rank() const { return shape.size(); }
};

struct VoidTypeNode : TypeNode {
  static constexpr NodeKind kKind = NodeKind::VoidType;
  static bool is_kind(NodeKind k) { return k == kKind; }
  VoidTypeNode() : TypeNode(kKind) {}
  /// Interned: one node.
  static Type make();
};

inline Type scalar_type(DataType d) { return ScalarTypeNode::make(d); }
inline Type pointer_type(Type base) { return PointerTypeNode::make(std::move(base)); }
inline Type void_type() { return VoidTypeNode::make(); }

/// The dtype of a scalar type; throws InternalError otherwise.
DataType dtype_of(const Type &t);
inline bool is_scalar(const Type &t) { return t.is<ScalarTypeNode>(); }
inline bool is_pointer(const Type &t) { return t.is<PointerTypeNode>(); }
inline bool is_tensor(const Type &t) { return t.is<TensorTypeNode>(); }
inline bool is_void(const Type &t) { return t.is<VoidTypeNode>(); }

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/type.ipp"
#endif
