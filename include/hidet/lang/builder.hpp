// The statement builder behind Hidet Script: while a kernel or device function body runs, a
// thread-local FunctionBuilder collects the statements it emits into nested scopes.
#pragma once

#include <string>
#include <vector>

#include "hidet/ir/func.hpp"

namespace hidet::lang {

/// Collects the body of one function being defined.
class FunctionBuilder {
public:
  FunctionBuilder(std::string name, ir::FuncKind kind, SourceLoc loc)
      : name_(std::move(name)), kind_(kind), loc_(loc) {
    scopes_.emplace_back();
  }

  const std::string &name() const { return name_; }
  ir::FuncKind kind() const { return kind_; }
  SourceLoc loc() const { return loc_; }
  ir::FuncAttrs &attrs() { return attrs_; }

  /// Appends a statement to the innermost open scope.
  void emit(ir::Stmt s) { scopes_.back().push_back(std::move(s)); }
  /// Opens a nested scope (a loop or branch body).
  void push_scope() { scopes_.emplace_back(); }
  /// Closes the innermost scope and returns its statements as one statement.
  ir::Stmt pop_scope();
  /// The statements of the innermost scope (for if/else chaining).
  std::vector<ir::Stmt> &current_scope() { return scopes_.back(); }
  std::size_t scope_depth() const { return scopes_.size(); }

  int loop_depth = 0;       ///< nesting of for_/while_ (break_/continue_ need > 0)
  ir::Type ret_type;        ///< device functions: the declared return type

  /// Finishes the body.
  ir::Stmt finish();

private:
  std::string name_;
  ir::FuncKind kind_;
  SourceLoc loc_;
  ir::FuncAttrs attrs_;
  std::vector<std::vector<ir::Stmt>> scopes_;
};

namespace detail {
/// The calling thread's current builder (one per thread).
FunctionBuilder *&current_builder_slot();
} // namespace detail

/// The builder of the function whose body is being defined, or null outside any definition.
inline FunctionBuilder *current_builder() { return detail::current_builder_slot(); }

/// The active builder; `what` must be used inside a kernel or device function body.
FunctionBuilder &require_builder(const char *what, SourceLoc loc);

/// The active builder, which must be building a kernel.
FunctionBuilder &require_kernel(const char *what, SourceLoc loc);

/// Makes `b` the current builder for the lifetime of the guard (nests).
class BuilderGuard {
public:
  explicit BuilderGuard(FunctionBuilder &b) : prev_(detail::current_builder_slot()) {
    detail::current_builder_slot() = &b;
  }
  ~BuilderGuard() { detail::current_builder_slot() = prev_; }
  BuilderGuard(const BuilderGuard &) = delete;
  BuilderGuard &operator=(const BuilderGuard &) = delete;

private:
  FunctionBuilder *prev_;
};

/// Emits a statement into the current function; throws a DSLError outside a function body.
inline void emit(ir::Stmt s, const char *what) { require_builder(what, s->loc).emit(std::move(s)); }

} // namespace hidet::lang

#if HIDET_HEADER_ONLY
#include "hidet/lang/impl/builder.ipp"
#endif
