// Definitions for hidet/backend/codegen.hpp.
#pragma once

#include "hidet/backend/codegen.hpp"

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hidet/backend/detail/cuda_emitter.hpp"
#include "hidet/ir/functor.hpp"
#include "hidet/transforms/verify.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::backend {

HIDET_INLINE std::string c_string_escape(std::string_view s) {
  std::string o;
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      o += "\\\"";
      break;
    case '\\':
      o += "\\\\";
      break;
    case '\n':
      o += "\\n";
      break;
    case '\t':
      o += "\\t";
      break;
    case '\r':
      o += "\\r";
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\%03o", c);
        o += buf;
      } else {
        o += char(c);
      }
    }
  }
  return o;
}

HIDET_INLINE std::string cuda_f32_literal(float v) {
  if (std::isnan(v))
    return "__int_as_float(0x7fffffff)";
  if (std::isinf(v))
    return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  s += "f";
  return std::signbit(v) ? "(" + s + ")" : s;
}

HIDET_INLINE std::string cuda_f64_literal(double v) {
  if (std::isnan(v))
    return "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v))
    return v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                 : "__longlong_as_double(0xfff0000000000000LL)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return std::signbit(v) ? "(" + s + ")" : s;
}

namespace detail {

HIDET_INLINE void CudaEmitter::mark(SourceLoc loc) {
  if (!loc.valid())
    return;
  std::uint32_t current = line_base_ + std::uint32_t(lines_ - lines_at_mark_);
  if (have_mark_ && current == loc.line && mark_file_ == loc.file)
    return;
  raw_line(str_cat("#line ", loc.line, " \"", c_string_escape(loc.file), "\""));
  have_mark_ = true;
  mark_file_ = loc.file;
  line_base_ = loc.line;
  lines_at_mark_ = lines_;
}

HIDET_INLINE std::string CudaEmitter::constant(const ir::ConstantNode *c) {
  std::int64_t v = c->ivalue;
  auto dec = [](std::int64_t x) { return std::to_string(x); };
  switch (c->dtype.code) {
  case DTypeCode::Bool:
    return v ? "true" : "false";
  case DTypeCode::I8:
    return "((int8_t)" + dec(v) + ")";
  case DTypeCode::I16:
    return "((int16_t)" + dec(v) + ")";
  case DTypeCode::I32:
    if (v == INT32_MIN)
      return "(-2147483647 - 1)";
    return v < 0 ? "(" + dec(v) + ")" : dec(v);
  case DTypeCode::I64:
    if (v == INT64_MIN)
      return "(-9223372036854775807LL - 1)";
    return v < 0 ? "(" + dec(v) + "LL)" : dec(v) + "LL";
  case DTypeCode::U8:
    return "((uint8_t)" + dec(v) + "u)";
  case DTypeCode::U16:
    return "((uint16_t)" + dec(v) + "u)";
  case DTypeCode::U32:
    return std::to_string(std::uint32_t(v)) + "u";
  case DTypeCode::U64:
    return std::to_string(std::uint64_t(v)) + "ULL";
  case DTypeCode::F16:
    dtype(dtypes::f16);
    return from_float(cuda_f32_literal(float(c->fvalue)), c->dtype);
  case DTypeCode::BF16:
  case DTypeCode::F8E4M3:
  case DTypeCode::F8E5M2:
    dtype(c->dtype);
    return from_float(cuda_f32_literal(float(c->fvalue)), c->dtype);
  case DTypeCode::F32:
    return cuda_f32_literal(float(c->fvalue));
  case DTypeCode::F64:
    return cuda_f64_literal(c->fvalue);
  }
  return "0";
}

HIDET_INLINE std::string CudaEmitter::cast(const std::string &x, const ir::Type &from,
                                           const ir::Type &to) {
  if (ir::is_pointer(to) || ir::is_tensor(to))
    return "((" + type(to) + ")(" + x + "))";
  HIDET_ASSERT(ir::is_scalar(to) && ir::is_scalar(from), "cast between non-scalar types");
  DataType s = ir::dtype_of(from), d = ir::dtype_of(to);
  if (s == d)
    return x;
  dtype(s), dtype(d);
  if (d.is_narrow_float()) {
    if (s == dtypes::f32)
      return from_float(x, d);
    if (s.is_narrow_float())
      return from_float(to_float(x, s), d);
    return from_float("(float)(" + x + ")", d);
  }
  if (s.is_narrow_float()) {
    std::string f = to_float(x, s);
    if (d == dtypes::f32)
      return f;
    if (d.is_bool())
      return "(" + f + " != 0.0f)";
    return "((" + dtype(d) + ")" + f + ")";
  }
  return "((" + dtype(d) + ")(" + x + "))";
}

HIDET_INLINE std::string CudaEmitter::expr(const ir::Expr &e) {
  using namespace ir;
  HIDET_ASSERT(e, "null expression in function ", func_ ? func_->name : "?");
  switch (e->kind) {
  case NodeKind::Constant:
    return constant(e.as<ConstantNode>());
  case NodeKind::Var:
    return var_name(e.as<VarNode>());
  case NodeKind::Builtin:
    return str_cat("(int)", builtin_name(e.as<BuiltinNode>()->which));
  case NodeKind::Unary: {
    auto u = e.as<UnaryNode>();
    return str_cat("(", unary_op_symbol(u->op), expr(u->a), ")");
  }
  case NodeKind::Binary: {
    auto b = e.as<BinaryNode>();
    std::string x = expr(b->a), y = expr(b->b);
    if (is_pointer(b->a->type))
      return str_cat("(", x, " ", binary_op_symbol(b->op), " ", y, ")");
    DataType d = dtype_of(b->a->type);
    if (b->op == BinaryOp::Mod && d.is_float()) {
      if (d == dtypes::f64)
        return "fmod(" + x + ", " + y + ")";
      return from_float("fmodf(" + to_float(x, d) + ", " + to_float(y, d) + ")", d);
    }
    // f16/bf16 division in f32 with the fast reciprocal (2 ulp of f32 before the rounding to 16
    // bits): cuda_fp16/bf16's operator/ checks and refines for f32 accuracy, twice the
    // instructions, which fused epilogues pay per element (docs/notes/matmul_wgmma.md).
    if (b->op == BinaryOp::Div && d.is_half())
      return from_float("__fdividef(" + to_float(x, d) + ", " + to_float(y, d) + ")", d);
    std::string r = str_cat("(", x, " ", binary_op_symbol(b->op), " ", y, ")");
    // C++ promotes 8/16-bit integers to int; the IR computes on the operand type.
    DataType rd = dtype_of(e->type);
    if (rd.is_integer() && rd.nbytes() < 4)
      return "((" + dtype(rd) + ")" + r + ")";
    return r;
  }
  case NodeKind::Cast: {
    auto c = e.as<CastNode>();
    return cast(expr(c->a), c->a->type, c->type);
  }
  case NodeKind::Select: {
    auto s = e.as<SelectNode>();
    return str_cat("(", expr(s->cond), " ? ", expr(s->t), " : ", expr(s->f), ")");
  }
  case NodeKind::Call:
    return call(e.as<CallNode>());
  case NodeKind::TensorElement: {
    auto t = e.as<TensorElementNode>();
    return element(t->base, t->indices);
  }
  case NodeKind::Address: {
    auto a = e.as<AddressNode>();
    if (auto v = a->a.as<VarNode>(); v && is_tensor(v->type))
      return var_name(v);
    return "(&" + expr(a->a) + ")";
  }
  case NodeKind::Deref:
    return "(*" + expr(e.as<DerefNode>()->a) + ")";
  default:
    HIDET_ASSERT(false, "not an expression");
  }
  return {};
}

HIDET_INLINE void CudaEmitter::declare(const ir::DeclareStmtNode *d) {
  using namespace ir;
  const VarNode *v = d->var.get();
  std::string name = var_name(v);
  if (auto tt = v->type.as<TensorTypeNode>()) {
    std::string t = dtype(tt->dtype);
    if (d->init && is_pointer(d->init->type)) {
      line(str_cat(t, " *", name, " = (", t, " *)(", expr(d->init), ");"));
      return;
    }
    std::int64_t size = 0;
    if (tt->scope == Scope::Global || !as_const_int(tensor_storage_size(*tt), size))
      unsupported(str_cat(scope_name(tt->scope), " tensor '", v->hint,
                          "' without a constant size or a pointer to view (give it a "
                          "compile-time shape, or declare it as a view of a pointer)"),
                  d->loc);
    // Register arrays are 16-byte aligned too: vector loads and stores (load_vector, 16-byte
    // ldmatrix fragments) into them stay valid if the compiler ever places one in local memory.
    if (tt->scope == Scope::Shared)
      line(str_cat("__shared__ __align__(16) ", t, " ", name, "[", size, "];"));
    else
      line(str_cat("__align__(16) ", t, " ", name, "[", size, "];"));
    return;
  }
  std::string decl = type(v->type);
  decl += decl.back() == '*' ? name : " " + name;
  if (d->init)
    decl += " = " + expr(d->init);
  line(decl + ";");
}

HIDET_INLINE void CudaEmitter::stmt(const ir::Stmt &s) {
  using namespace ir;
  if (!s)
    return;
  if (!s.is<SeqStmtNode>() && !s.is<ForStmtNode>())
    mark(s->loc);
  switch (s->kind) {
  case NodeKind::DeclareStmt:
    return declare(s.as<DeclareStmtNode>());
  case NodeKind::AssignStmt: {
    auto a = s.as<AssignStmtNode>();
    return line(var_name(a->var.get()) + " = " + expr(a->value) + ";");
  }
  case NodeKind::BufferStoreStmt: {
    auto b = s.as<BufferStoreStmtNode>();
    return line(element(b->base, b->indices) + " = " + expr(b->value) + ";");
  }
  case NodeKind::SeqStmt:
    for (auto &x : s.as<SeqStmtNode>()->seq)
      stmt(x);
    return;
  case NodeKind::ForStmt: {
    auto f = s.as<ForStmtNode>();
    if (f->unroll == -1)
      line("#pragma unroll");
    else if (f->unroll > 0)
      line(str_cat("#pragma unroll ", f->unroll));
    mark(s->loc); // after the pragma, which must stay next to its loop
    std::string i = var_name(f->var.get());
    line(str_cat("for (", type(f->var->type), " ", i, " = ", expr(f->start), "; ", i, " < ",
                 expr(f->stop), "; ", i, " += ", expr(f->step), ") {"));
    block(f->body);
    return line("}");
  }
  case NodeKind::WhileStmt: {
    auto w = s.as<WhileStmtNode>();
    line("while (" + expr(w->cond) + ") {");
    block(w->body);
    return line("}");
  }
  case NodeKind::IfStmt: {
    auto i = s.as<IfStmtNode>();
    line("if (" + expr(i->cond) + ") {");
    block(i->then_body);
    if (i->else_body) {
      line("} else {");
      block(i->else_body);
    }
    return line("}");
  }
  case NodeKind::BreakStmt:
    return line("break;");
  case NodeKind::ContinueStmt:
    return line("continue;");
  case NodeKind::ReturnStmt: {
    auto r = s.as<ReturnStmtNode>();
    return line(r->value ? "return " + expr(r->value) + ";" : "return;");
  }
  case NodeKind::EvaluateStmt:
    return line(expr(s.as<EvaluateStmtNode>()->expr) + ";");
  case NodeKind::AssertStmt: {
    auto a = s.as<AssertStmtNode>();
    std::string where = s->loc.valid() ? s->loc.str() : func_->loc.str();
    line("if (!(" + expr(a->cond) + ")) {");
    ++indent_;
    line(str_cat("printf(\"%s: assertion failed in '%s' (block (%d, %d, %d), thread (%d, %d, "
                 "%d)): %s\\n\", \"",
                 c_string_escape(where), "\", \"", c_string_escape(func_->name),
                 "\", (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x, "
                 "(int)threadIdx.y, (int)threadIdx.z, \"",
                 c_string_escape(a->message), "\");"));
    line("__trap();");
    --indent_;
    return line("}");
  }
  case NodeKind::AsmStmt: {
    auto a = s.as<AsmStmtNode>();
    auto operands = [&](const std::vector<AsmOperand> &ops) {
      std::string r;
      for (std::size_t k = 0; k < ops.size(); ++k)
        r += str_cat(k ? ", " : "", "\"", c_string_escape(ops[k].constraint), "\"(",
                     expr(ops[k].expr), ")");
      return r;
    };
    std::string text =
        str_cat(a->is_volatile ? "asm volatile(\"" : "asm(\"", c_string_escape(a->templ), "\"");
    if (!a->outputs.empty() || !a->inputs.empty() || a->memory_clobber) {
      text += " : " + operands(a->outputs) + " : " + operands(a->inputs);
      if (a->memory_clobber)
        text += " : \"memory\"";
    }
    return line(text + ");");
  }
  default:
    HIDET_ASSERT(false, "not a statement");
  }
}

HIDET_INLINE std::string CudaEmitter::signature(const ir::Function &f) {
  using namespace ir;
  std::string params;
  bool kernel = f->func_kind == FuncKind::Kernel;
  for (std::size_t i = 0; i < f->params.size(); ++i) {
    const Var &p = f->params[i];
    std::string t = type(p->type), n = var_name(p.get());
    auto tt = p->type.as<TensorTypeNode>();
    if (tt && tt->scope == Scope::Param) { // a tensor map by value; the body sees its address
      if (!kernel)
        unsupported(str_cat("by-value tensor parameter '", p->hint, "' of a device function (kernels only)"), f->loc);
      features_.tensor_map = true;
      params += str_cat(i ? ", " : "", "const __grid_constant__ hidet_tensor_map ", n, "_by_value");
      continue;
    }
    if (is_tensor(p->type))
      t += kernel ? " __restrict__ " : "";
    params += str_cat(i ? ", " : "", t, t.back() == '*' || t.back() == ' ' ? "" : " ", n);
  }
  if (kernel) {
    std::string bounds;
    std::int64_t threads = 1;
    bool constant = f->attrs.has_block;
    for (auto &d : f->attrs.block_dim) {
      std::int64_t x = 1;
      if (d && !as_const_int(d, x))
        constant = false;
      threads *= x;
    }
    if (constant) {
      bounds = str_cat("__launch_bounds__(", threads);
      if (f->attrs.min_blocks > 0)
        bounds += str_cat(", ", f->attrs.min_blocks);
      bounds += ") ";
    }
    if (f->attrs.cluster_size() > 1)
      bounds += str_cat("__cluster_dims__(", f->attrs.cluster_dim[0], ", ", f->attrs.cluster_dim[1], ", ",
                        f->attrs.cluster_dim[2], ") ");
    return str_cat("extern \"C\" __global__ void ", bounds, func_names_.at(f->name), "(", params,
                   ")");
  }
  return str_cat("static __device__ __forceinline__ ", type(f->ret_type), " ",
                 func_names_.at(f->name), "(", params, ")");
}

HIDET_INLINE void CudaEmitter::function(const ir::Function &f) {
  func_ = f.get();
  table_ = module_names_;
  names_.clear();
  mark(f->loc);
  std::string sig = signature(f);
  // A kernel first waits for the kernel before it in the stream (a no-op unless it was launched
  // as a programmatic dependent: runtime/cuda_driver.hpp), on the signature's line so that the
  // #line directives of the body stay as they are; unless its body waits itself
  // (grid_dependency_wait(), lang/cuda.hpp: prefetches before it).
  const bool waits = f->func_kind == ir::FuncKind::Kernel && !ir::calls_grid_dependency_wait(f);
  line(sig + (waits ? " { HIDET_GRID_DEPENDENCY_SYNC();" : " {"));
  for (auto &p : f->params)
    if (auto tt = p->type.as<ir::TensorTypeNode>(); tt && tt->scope == ir::Scope::Param)
      line(str_cat("  const ", dtype(tt->dtype), " *", var_name(p.get()), " = (const ", dtype(tt->dtype), " *)&",
                   var_name(p.get()), "_by_value;"));
  block(f->body);
  line("}");
  raw_line("");
}

HIDET_INLINE CudaSource CudaEmitter::run() {
  using namespace ir;
  CudaSource src;
  // Function names are module-wide; kernel names are the launcher's handles and must be kept.
  for (auto &f : mod_->functions) {
    if (f->func_kind == FuncKind::Kernel) {
      if (!is_c_identifier(f->name) || is_reserved_cuda_name(f->name))
        throw ValueError(str_cat("kernel name '", f->name,
                                 "' is not a valid CUDA identifier or is reserved; use letters, "
                                 "digits and '_' (not starting with a digit or '__')"),
                         f->loc);
      if (module_names_.taken(f->name))
        throw ValueError(str_cat("two functions named '", f->name, "' in one module"), f->loc);
      module_names_.reserve(f->name);
      func_names_[f->name] = f->name;
      src.kernels.push_back(f->name);
    }
  }
  std::vector<Function> devices;
  for (auto &f : mod_->functions) {
    if (f->func_kind != FuncKind::Device)
      continue;
    if (func_names_.count(f->name))
      throw ValueError(str_cat("two functions named '", f->name, "' in one module"), f->loc);
    func_names_[f->name] = module_names_.fresh(f->name);
    devices.push_back(f);
  }
  // Device functions in dependency order (callees first); a cycle also gets prototypes.
  struct CallCollector : IRVisitor {
    std::vector<std::string> callees;
    void visit_Call(const CallNode *c) override {
      if (c->op == Intrinsic::None)
        callees.push_back(c->func_name);
      IRVisitor::visit_Call(c);
    }
  };
  std::unordered_map<std::string, int> state; // 0 new, 1 visiting, 2 done
  std::vector<Function> order;
  bool cycle = false;
  std::function<void(const Function &)> dfs = [&](const Function &f) {
    int &st = state[f->name];
    if (st == 2)
      return;
    if (st == 1) {
      cycle = true;
      return;
    }
    st = 1;
    CallCollector cc;
    cc.visit(f->body);
    for (auto &n : cc.callees) {
      Function g = mod_->lookup(n);
      if (!g)
        continue; // reported when the call is emitted
      if (g->func_kind == FuncKind::Device)
        dfs(g);
    }
    state[f->name] = 2;
    if (f->func_kind == FuncKind::Device)
      order.push_back(f);
  };
  for (auto &f : devices)
    dfs(f);
  if (cycle) {
    for (auto &f : order) {
      func_ = f.get();
      table_ = module_names_;
      names_.clear();
      line(signature(f) + ";");
    }
    raw_line("");
  }
  for (auto &f : order)
    function(f);
  for (auto &f : mod_->functions)
    if (f->func_kind == FuncKind::Kernel)
      function(f);
  src.code = cuda_prelude(features_) + "\n" + out_.str();
  return src;
}

} // namespace detail

HIDET_INLINE CudaSource generate_cuda(const ir::Module &lowered) {
  return detail::CudaEmitter(lowered).run();
}

} // namespace hidet::backend

#include "hidet/util/cold_end.hpp"
