// Functions (kernel, device, host kinds) and modules.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "hidet/ir/stmt.hpp"

namespace hidet::ir {

enum class FuncKind : std::uint8_t {
  Kernel, ///< __global__, launched from the host with grid and block dims
  Device, ///< __device__, called from kernels or other device functions
  Host,   ///< runs on the host (reserved for generated launchers)
};
/// "kernel", "device", "host".
const char *func_kind_name(FuncKind k);

/// Launch attributes of a kernel. Dims are expressions over the kernel's parameters (scalar
/// parameters and symbolic dimensions), evaluated by the launcher.
struct FuncAttrs {
  std::array<Expr, 3> grid_dim;  ///< null entries mean 1
  std::array<Expr, 3> block_dim; ///< null entries mean 1
  Expr dynamic_smem_bytes;       ///< null means 0
  int min_blocks = 0;            ///< __launch_bounds__ second argument; 0 = none
  std::array<int, 3> cluster_dim{1, 1, 1}; ///< thread-block cluster (__cluster_dims__; sm_90)
  bool has_grid = false, has_block = false;
  /// Blocks per cluster (1: no cluster).
  int cluster_size() const { return cluster_dim[0] * cluster_dim[1] * cluster_dim[2]; }
};

struct FunctionNode : Object {
  static constexpr NodeKind kKind = NodeKind::Function;
  static bool is_kind(NodeKind k) { return k == kKind; }
  std::string name;
  std::vector<Var> params;
  Stmt body;
  Type ret_type;
  FuncKind func_kind;
  FuncAttrs attrs;
  SourceLoc loc;
  FunctionNode(std::string n, std::vector<Var> p, Stmt b, Type r, FuncKind k, FuncAttrs a, SourceLoc l)
      : Object(kKind), name(std::move(n)), params(std::move(p)), body(std::move(b)), ret_type(std::move(r)),
        func_kind(k), attrs(std::move(a)), loc(l) {}
};
using Function = Ref<FunctionNode>;

inline Function make_function(std::string name, std::vector<Var> params, Stmt body, Type ret,
                              FuncKind kind, FuncAttrs attrs = {}, SourceLoc loc = {}) {
  return Function(new FunctionNode(std::move(name), std::move(params), std::move(body), std::move(ret),
                                   kind, std::move(attrs), loc));
}

/// A function with a new body (same name, params, attributes).
inline Function with_body(const Function &f, Stmt body) {
  return make_function(f->name, f->params, std::move(body), f->ret_type, f->func_kind, f->attrs, f->loc);
}

struct ModuleNode : Object {
  static constexpr NodeKind kKind = NodeKind::Module;
  static bool is_kind(NodeKind k) { return k == kKind; }
  std::vector<Function> functions;
  explicit ModuleNode(std::vector<Function> f) : Object(kKind), functions(std::move(f)) {}
  /// The function with this name, or null.
  Function lookup(const std::string &name) const;
};
using Module = Ref<ModuleNode>;

inline Module make_module(std::vector<Function> functions) {
  return Module(new ModuleNode(std::move(functions)));
}

} // namespace hidet::ir

#if HIDET_HEADER_ONLY
#include "hidet/ir/impl/func.ipp"
#endif
