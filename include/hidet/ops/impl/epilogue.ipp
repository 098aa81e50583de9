// Definitions for hidet/ops/epilogue.hpp.
#pragma once

#include "hidet/ops/epilogue.hpp"

#include <map>
#include <set>

#include "hidet/ir/equal.hpp"
#include "hidet/ir/functor.hpp"
#include "hidet/ir/layout.hpp"
#include "hidet/lang/primitives/memory.hpp"
#include "hidet/transforms/simplify.hpp"
#include "hidet/transforms/simplify_index.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/fuse.hpp"
#include "hidet/ops/schedule_common.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::ops {

namespace detail {
/// reshape_index for constant shapes.
HIDET_INLINE Idx reshape_index_constant(const Idx &idx, const Shape &from, const Shape &to) {
  HIDET_ASSERT(idx.size() == from.size(), "reshape_index: ", idx.size(), " indices for shape ", shape_str(from));
  HIDET_ASSERT(shape_numel(from) == shape_numel(to), "reshape_index: ", shape_str(from), " and ", shape_str(to),
               " differ in size");
  // Split both shapes into the smallest groups of consecutive dimensions with equal products
  // (where the prefix products meet: [2048, 2304] -> [16, 128 | 3, 12, 64] has two groups).
  // Within a group, the flat index over from's dimensions is unravelled over to's; a group of
  // one dimension on each side keeps its index, extent-1 dimensions get index 0 and take no
  // part, so common reshapes cost no division, and the others divide only within a group.
  Idx out(to.size());
  std::size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    std::size_t i0 = i, j0 = j;
    std::int64_t pf = 1, pt = 1;
    if (i < from.size()) pf *= from[i++];
    if (j < to.size()) pt *= to[j++];
    while (pf != pt) {
      if (pf < pt && i < from.size()) pf *= from[i++];
      else if (pt < pf && j < to.size()) pt *= to[j++];
      else break; // sizes that cannot meet (an empty tensor): no element is ever indexed
    }
    Expr flat;
    bool any = false;
    for (std::size_t a = i0; a < i; ++a) {
      if (from[a] == 1) continue;
      flat = any ? flat * int(from[a]) + idx[a] : idx[a];
      any = true;
    }
    if (!any) flat = Expr(0);
    std::int64_t stride = 1;
    std::size_t first = j0; // the outermost non-1 dimension of the group takes no modulo
    while (first < j && to[first] == 1) ++first;
    for (std::size_t b = j; b-- > j0;) {
      if (to[b] == 1) {
        out[b] = Expr(0);
        continue;
      }
      Expr q = stride == 1 ? flat : flat / int(stride);
      out[b] = b == first ? q : q % int(to[b]);
      stride *= to[b];
    }
  }
  return out;
}

} // namespace detail

HIDET_INLINE Idx reshape_index(const Idx &idx, const Extents &from_extents, const Extents &to_extents) {
  const SymShape &from = from_extents.dims, &to = to_extents.dims;
  if (is_constant_shape(from) && is_constant_shape(to))
    return detail::reshape_index_constant(idx, constant_shape(from), constant_shape(to));
  HIDET_ASSERT(idx.size() == from.size(), "reshape_index: ", idx.size(), " indices for shape ", sym_shape_str(from));
  HIDET_ASSERT(sym_numel(from) == sym_numel(to), "reshape_index: ", sym_shape_str(from), " and ", sym_shape_str(to),
               " differ in size");
  // p divides q exactly for every value of the symbols
  auto divides = [](const Dim &p, const Dim &q) { return p != 0 && q % p == 0; };
  Idx out(to.size());
  std::size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    std::size_t i0 = i, j0 = j;
    Dim pf = 1, pt = 1;
    if (i < from.size()) pf = pf * from[i++];
    if (j < to.size()) pt = pt * to[j++];
    while (pf != pt) {
      if (i < from.size() && divides(pf, pt)) pf = pf * from[i++];
      else if (j < to.size() && divides(pt, pf)) pt = pt * to[j++];
      else { // products that cannot be compared: the rest is one group
        while (i < from.size()) pf = pf * from[i++];
        while (j < to.size()) pt = pt * to[j++];
        break;
      }
    }
    Expr flat;
    bool any = false;
    for (std::size_t a = i0; a < i; ++a) {
      if (from[a] == 1) continue;
      flat = any ? flat * dim_expr(from[a]) + idx[a] : idx[a];
      any = true;
    }
    if (!any) flat = Expr(0);
    Dim stride = 1;
    std::size_t first = j0; // the outermost non-1 dimension of the group takes no modulo
    while (first < j && to[first] == 1) ++first;
    for (std::size_t b = j; b-- > j0;) {
      if (to[b] == 1) {
        out[b] = Expr(0);
        continue;
      }
      Expr q = stride == 1 ? flat : flat / dim_expr(stride);
      out[b] = b == first ? q : q % dim_expr(to[b]);
      stride = stride * to[b];
    }
  }
  return out;
}

namespace detail {

/// Inlines every Compute read into one expression over the Input nodes (reads of inputs stay).
inline ir::Expr inline_inputs(const TensorDef &d) {
  std::map<const ir::VarNode *, ir::Var> inputs;
  std::map<const ir::VarNode *, const TensorNode *> computes;
  for (const TensorNode *t : topo_order({d})) {
    if (t->kind == TensorNode::Kind::Input) inputs[t->buf.get()] = t->buf;
    else computes[t->buf.get()] = t;
  }
  return Inliner(inputs, computes, {}).mutate(d.node().value);
}

/// The index lists at which `e` reads the tensor `buf`.
inline std::vector<std::vector<ir::Expr>> reads_of(const ir::Expr &e, const ir::VarNode *buf) {
  struct Find : ir::IRVisitor {
    const ir::VarNode *buf;
    std::vector<std::vector<ir::Expr>> found;
    void visit_TensorElement(const ir::TensorElementNode *n) override {
      if (n->base.get() == buf) found.push_back(n->indices);
      ir::IRVisitor::visit_TensorElement(n);
    }
  } f;
  f.buf = buf;
  f.visit(e);
  return std::move(f.found);
}

/// Inlines an epilogue's definitions at output index `out_idx`: reads of x become `xv`, reads of
/// the extra inputs become reads of their kernel parameters.
class EpilogueInliner : public ReadRewriter {
public:
  /// `on_read(param, read)`, when given, replaces each read of an extra input's parameter (a
  /// register read at the store).
  using OnRead = std::function<ir::Expr(const ir::Var &, const ir::Expr &)>;
  EpilogueInliner(const std::map<const ir::VarNode *, ir::Var> &params,
                  const std::map<const ir::VarNode *, const TensorNode *> &computes, const ir::VarNode *x,
                  const ir::Expr &xv, std::map<const ir::VarNode *, ir::Expr> subst, const OnRead *on_read = nullptr)
      : ReadRewriter(std::move(subst), [&params, &computes, x, xv, on_read](const ir::Expr &e,
                                                                            const std::vector<ir::Expr> &idx) {
          const auto *n = e.as<ir::TensorElementNode>();
          if (n->base.get() == x) return xv;
          if (auto p = params.find(n->base.get()); p != params.end()) {
            ir::Expr read = ir::TensorElementNode::make(p->second, idx, e->loc);
            return on_read ? (*on_read)(p->second, read) : read;
          }
          auto c = computes.find(n->base.get());
          HIDET_ASSERT(c != computes.end(), "epilogue: a read of '", n->base->hint, "', which is not an input");
          std::map<const ir::VarNode *, ir::Expr> s;
          for (std::size_t i = 0; i < c->second->axes.size(); ++i) s[c->second->axes[i].get()] = idx[i];
          return EpilogueInliner(params, computes, x, xv, std::move(s), on_read).mutate(c->second->value);
        }) {}
};

} // namespace detail

namespace detail {
/// The largest of 8, 4, 2, 1 that divides the last extent of `shape` (1 for a scalar or a
/// symbolic last extent).
HIDET_INLINE int run_of(const SymShape &shape) {
  if (shape.empty() || !shape.back().is_constant()) return 1;
  int r = 8;
  while (r > 1 && shape.back().value() % r) r /= 2;
  return r;
}
/// The shape as users read it: (2, 3) when constant, [n, 3] with symbols.
HIDET_INLINE std::string extents_str(const SymShape &shape) {
  return is_constant_shape(shape) ? shape_str(constant_shape(shape)) : sym_shape_str(shape);
}
} // namespace detail

HIDET_INLINE Epilogue Epilogue::identity(const Extents &shape, DataType dtype) {
  Epilogue e;
  e.x = input("x", shape, dtype);
  e.out = e.x;
  e.to_out = [](const Idx &i) { return i; };
  e.run = detail::run_of(shape.dims);
  e.key = str_cat("x: ", dtype, detail::extents_str(shape.dims));
  return e;
}

HIDET_INLINE std::vector<std::string> Epilogue::symbols() const {
  std::set<std::string> names;
  auto add = [&](const TensorDef &t) {
    for (const auto &d : t.sym_shape())
      for (const auto &n : d.symbols()) names.insert(n);
  };
  add(x), add(out);
  for (const auto &t : inputs) add(t);
  return {names.begin(), names.end()};
}

HIDET_INLINE std::optional<Epilogue> Epilogue::then(const Task &t, std::size_t j, const std::string &key,
                                                    const std::string &member) const {
  if (t.outputs.size() != 1 || j >= t.inputs.size() || !t.injective()) return std::nullopt;
  const TensorNode &in = t.inputs[j].node(), &o = t.outputs[0].node();
  if (in.shape != out.sym_shape() || in.dtype != out.dtype()) return std::nullopt;
  // Input j must be read at one index (however often), each of its dimensions by a distinct
  // output axis of the same extent (or at 0 where its extent is 1), covering every output axis
  // of extent > 1: then the output index is a function of the input index.
  auto reads = detail::reads_of(detail::inline_inputs(t.outputs[0]), in.buf.get());
  if (reads.empty()) return std::nullopt;
  for (const auto &r : reads) {
    if (r.size() != reads[0].size()) return std::nullopt;
    for (std::size_t k = 0; k < r.size(); ++k)
      if (!ir::structural_equal(r[k], reads[0][k])) return std::nullopt;
  }
  const auto &idx = reads[0];
  std::vector<int> axis_of(in.shape.size(), -1); // input dim -> output axis (-1: index 0 of extent 1)
  std::vector<bool> covered(o.shape.size(), false);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    int p = -1;
    for (std::size_t a = 0; a < o.axes.size(); ++a)
      if (detail::is_var(idx[k], o.axes[a].get())) p = int(a);
    if (p < 0) {
      const auto *c = idx[k].as<ir::ConstantNode>();
      if (in.shape[k] != 1 || !c || c->as_int() != 0) return std::nullopt;
      continue;
    }
    if (covered[std::size_t(p)] || o.shape[std::size_t(p)] != in.shape[k]) return std::nullopt;
    covered[std::size_t(p)] = true, axis_of[k] = p;
  }
  for (std::size_t a = 0; a < o.shape.size(); ++a)
    if (!covered[a] && o.shape[a] != 1) return std::nullopt;

  Task fused = fuse_prologue(t, j, task());
  Epilogue e;
  e.x = x;
  e.out = fused.outputs[0];
  e.inputs = inputs;
  for (std::size_t i = 0; i < t.inputs.size(); ++i)
    if (i != j) e.inputs.push_back(t.inputs[i]);
  std::size_t rank = o.shape.size();
  IndexMap prev = to_out;
  e.to_out = [prev, axis_of, rank](const Idx &a) {
    Idx b = prev(a);
    Idx r(rank, Expr(0));
    for (std::size_t k = 0; k < axis_of.size(); ++k)
      if (axis_of[k] >= 0) r[std::size_t(axis_of[k])] = b[k];
    return r;
  };
  // The flat index is kept when the dimensions of extent > 1 keep their order.
  e.linear = linear;
  int last = -1;
  for (std::size_t k = 0; k < axis_of.size(); ++k)
    if (axis_of[k] >= 0 && in.shape[k] != 1) { // (a symbolic extent counts as more than 1)
      if (axis_of[k] < last) e.linear = false;
      last = axis_of[k];
    }
  e.run = !axis_of.empty() && axis_of.back() == int(rank) - 1 ? run : 1;
  // A step may undo the permutes before it (ConvNeXt's block: its product's output permuted to
  // NCHW for the layer scale, then back to NHWC for the residual). The flat index is then kept
  // again: the composed map sends x's index variables of extent > 1 to out's axes in their order.
  if (!e.linear) {
    const SymShape xs = x.sym_shape(), os = e.out.sym_shape();
    std::vector<ir::Var> vars;
    for (std::size_t k = 0; k < xs.size(); ++k) vars.push_back(ir::make_var(ir::scalar_type(dtypes::i32), str_cat("e", k)));
    Idx probe = e.to_out(detail::to_idx(vars));
    std::size_t next = 0; // the next x dimension of extent > 1 expected
    bool keeps = probe.size() == os.size();
    for (std::size_t a = 0; keeps && a < os.size(); ++a) {
      if (os[a] == 1) continue;
      while (next < xs.size() && xs[next] == 1) ++next;
      keeps = next < xs.size() && detail::is_var(probe[a].ir(), vars[next].get());
      ++next;
    }
    while (keeps && next < xs.size() && xs[next] == 1) ++next;
    if (keeps && next == xs.size()) e.linear = true;
  }
  // Or the composed map raveled over out's shape simplifies to the flat index itself
  // (simplify_index, the flat index non-negative and below its count when that is constant): a
  // patch embedding's product [N*P, C] viewed as an image [N, H, W, C], turned to NCHW, flattened
  // to [N, C, P] and transposed to tokens [N, P, C], N constant or symbolic.
  if (!e.linear) {
    const SymShape xs = x.sym_shape(), os = e.out.sym_shape();
    const bool known = is_constant_shape(xs);
    const std::int64_t n = known ? shape_numel(constant_shape(xs)) : std::numeric_limits<std::int32_t>::max();
    if (n > 0 && n <= std::numeric_limits<std::int32_t>::max()) {
      ir::Var flat = ir::make_var(ir::scalar_type(dtypes::i32), "flat");
      Idx xi;
      for (const ir::Expr &v : detail::unravel(flat, Extents(xs))) xi.push_back(Expr(v));
      Idx oi = e.to_out(xi);
      Expr raveled(0);
      for (std::size_t a = 0; a < os.size() && a < oi.size(); ++a) raveled = raveled * dim_expr(os[a]) + oi[a];
      if (oi.size() == os.size() &&
          detail::is_var(ir::simplify_index(raveled.ir(), {{flat.get(), ir::IndexRange{0, known ? n - 1 : n}}}),
                         flat.get()))
        e.linear = true;
    }
  }
  e.key = str_cat(this->key, " -> ", j, ":", key);
  e.members = members;
  e.members.push_back(member);
  return e;
}

HIDET_INLINE Epilogue Epilogue::reshape(const Extents &to) const {
  const SymShape from = out.sym_shape(), shape = to.dims;
  if (sym_numel(shape) != sym_numel(from))
    throw ValueError(str_cat("Epilogue::reshape: cannot reshape ", detail::extents_str(from), " to ",
                             detail::extents_str(shape)));
  Epilogue e = *this;
  TensorDef prev = out;
  e.out = compute("reshape", shape, [&](const Idx &i) { return prev.at(reshape_index(i, shape, from)); });
  IndexMap before = to_out;
  e.to_out = [before, from, shape](const Idx &a) { return reshape_index(before(a), from, shape); };
  e.run = std::min(run, detail::run_of(shape));
  e.key = str_cat(key, " -> reshape", detail::extents_str(shape));
  e.members.push_back("Reshape");
  return e;
}

HIDET_INLINE Task Epilogue::task() const {
  Task t;
  t.name = "epilogue";
  t.inputs.push_back(x);
  t.inputs.insert(t.inputs.end(), inputs.begin(), inputs.end());
  t.outputs.push_back(out.ptr() == x.ptr() ? compute("copy", x.sym_shape(), [&](const Idx &i) { return x.at(i); })
                                           : out);
  t.attrs = key;
  return t;
}

HIDET_INLINE void check_epilogue(const char *op, const Epilogue &e, const Shape &shape, DataType dtype,
                                 const std::vector<Tensor> &extras) {
  if (e.x.shape() != shape || e.x.dtype() != dtype)
    throw ValueError(str_cat(op, ": the epilogue takes ", e.x.dtype(), shape_str(e.x.shape()), " but the output is ",
                             dtype, shape_str(shape)));
  if (extras.size() != e.inputs.size())
    throw ValueError(str_cat(op, ": the epilogue reads ", e.inputs.size(), " extra inputs, ", extras.size(),
                             " were given"));
  for (std::size_t i = 0; i < extras.size(); ++i)
    if (extras[i].dtype() != e.inputs[i].dtype() || extras[i].sym_shape() != to_sym_shape(e.inputs[i].shape()))
      throw ValueError(str_cat(op, ": extra input ", i, " of the epilogue is ", extras[i].dtype(),
                               sym_shape_str(extras[i].sym_shape()), ", expected ", e.inputs[i].dtype(),
                               shape_str(e.inputs[i].shape())));
}

HIDET_INLINE void check_epilogue(const char *op, const Epilogue &e, const Shape &shape, DataType dtype,
                                 const std::vector<Tensor> &extras, const SymbolValues &values) {
  if (evaluate_shape(e.x.sym_shape(), values) != shape || e.x.dtype() != dtype)
    throw ValueError(str_cat(op, ": the epilogue takes ", e.x.dtype(), sym_shape_str(e.x.sym_shape()),
                             " but the output is ", dtype, shape_str(shape)));
  if (extras.size() != e.inputs.size())
    throw ValueError(str_cat(op, ": the epilogue reads ", e.inputs.size(), " extra inputs, ", extras.size(),
                             " were given"));
  for (std::size_t i = 0; i < extras.size(); ++i)
    if (extras[i].dtype() != e.inputs[i].dtype() || extras[i].shape() != evaluate_shape(e.inputs[i].sym_shape(), values))
      throw ValueError(str_cat(op, ": extra input ", i, " of the epilogue is ", extras[i].dtype(),
                               shape_str(extras[i].shape()), ", expected ", e.inputs[i].dtype(),
                               sym_shape_str(e.inputs[i].sym_shape())));
}

HIDET_INLINE Tensor apply_epilogue(const Epilogue &e, const Tensor &x, const std::vector<Tensor> &extras) {
  std::vector<Tensor> ins{x};
  ins.insert(ins.end(), extras.begin(), extras.end());
  return run_task(str_cat("epilogue{", e.key, "}"), [&] { return e.task(); }, ins)[0];
}

HIDET_INLINE std::string fused_attrs(const std::string &anchor, const Epilogue &e) {
  std::string list = anchor;
  for (const auto &m : e.members) list += ", " + m;
  return str_cat("fused_graph=FlowGraph(", list, "), anchor=0");
}

HIDET_INLINE Tensor epilogue_out_arg(const Epilogue *e, const Tensor &out, const Shape &anchor_shape) {
  if (e && !e->linear) return out;
  return out.shape() == anchor_shape ? out : out.reshape(anchor_shape);
}

namespace detail {

HIDET_INLINE EpilogueEmitter::EpilogueEmitter(const Epilogue *e, const Extents &anchor_shape, ir::Var out,
                                              std::vector<ir::Var> inputs)
    : e_(e), anchor_shape_(anchor_shape.dims), out_(std::move(out)), inputs_(std::move(inputs)) {
  HIDET_ASSERT(!e_ || inputs_.size() == e_->inputs.size(), "epilogue: ", inputs_.size(), " parameters for ",
               e_->inputs.size(), " inputs");
}

HIDET_INLINE ir::Expr EpilogueEmitter::inline_value(const Idx &idx, const ir::Expr &xv,
                                                     const ReadHook *on_read) const {
  Idx oi = e_->to_out(reshape_index(idx, anchor_shape_, e_->x.sym_shape()));
  std::map<const ir::VarNode *, ir::Var> params;
  for (std::size_t i = 0; i < inputs_.size(); ++i) params[e_->inputs[i].node().buf.get()] = inputs_[i];
  std::map<const ir::VarNode *, const TensorNode *> computes;
  for (const TensorNode *t : topo_order({e_->out}))
    if (t->kind == TensorNode::Kind::Compute) computes[t->buf.get()] = t;
  std::map<const ir::VarNode *, ir::Expr> subst;
  const TensorNode &o = e_->out.node();
  for (std::size_t i = 0; i < o.axes.size(); ++i) subst[o.axes[i].get()] = oi[i].ir();
  return EpilogueInliner(params, computes, e_->x.node().buf.get(), xv, std::move(subst), on_read).mutate(o.value);
}

HIDET_INLINE lang::Expr EpilogueEmitter::value(const Idx &idx, const lang::Expr &v) const {
  if (!e_ || e_->is_identity()) return e_ ? lang::cast(v, e_->x.dtype()) : v;
  lang::Var xv = let(e_->x.dtype(), lang::cast(v, e_->x.dtype()).ir(), "xv");
  return lang::Expr(inline_value(idx, ir::Expr(xv.ir())));
}

namespace {
/// Whether integer expression `e` is a multiple of r by its form (constants, sums, products with
/// a factor that is): false when that does not show.
bool shows_multiple_of(const ir::Expr &e, std::int64_t r) {
  if (const auto *c = e.as<ir::ConstantNode>()) return c->dtype.is_integer() && c->ivalue % r == 0;
  if (const auto *b = e.as<ir::BinaryNode>()) {
    if (b->op == ir::BinaryOp::Add || b->op == ir::BinaryOp::Sub)
      return shows_multiple_of(b->a, r) && shows_multiple_of(b->b, r);
    if (b->op == ir::BinaryOp::Mul) return shows_multiple_of(b->a, r) || shows_multiple_of(b->b, r);
  }
  return false;
}
} // namespace

HIDET_INLINE std::vector<lang::Expr> EpilogueEmitter::value_run(const std::vector<Idx> &idxs,
                                                                 const std::vector<lang::Expr> &vs) const {
  HIDET_ASSERT(idxs.size() == vs.size(), "epilogue: ", idxs.size(), " indices for ", vs.size(), " values");
  std::vector<lang::Expr> out;
  if (!e_ || e_->is_identity()) {
    for (std::size_t x = 0; x < idxs.size(); ++x) out.push_back(value(idxs[x], vs[x]));
    return out;
  }
  std::map<const ir::VarNode *, DataType> dtypes;
  for (std::size_t i = 0; i < inputs_.size(); ++i) dtypes.emplace(inputs_[i].get(), e_->inputs[i].dtype());
  // Every element's reads of extra inputs become registers, declared here and written below: by
  // one vector read for a run of consecutive elements, else one by one.
  struct Read {
    ir::Var param;
    ir::Expr read, offset;
    lang::Var reg;
    bool done = false;
  };
  const std::size_t r = idxs.size();
  std::vector<std::vector<Read>> reads(r);
  for (std::size_t x = 0; x < r; ++x) {
    ReadHook hook = [&](const ir::Var &param, const ir::Expr &read) -> ir::Expr {
      for (const auto &rd : reads[x])
        if (ir::structural_equal(rd.read, read)) return rd.reg.ir();
      const auto *tt = param->type.as<ir::TensorTypeNode>();
      HIDET_ASSERT(tt, "epilogue: extra input '", param->hint, "' is not a tensor");
      reads[x].push_back({param, read, ir::tensor_offset(*tt, read.as<ir::TensorElementNode>()->indices),
                          lang::var(dtypes.at(param.get()), std::string("extra")), false});
      return reads[x].back().reg.ir();
    };
    lang::Var xv = let(e_->x.dtype(), lang::cast(vs[x], e_->x.dtype()).ir(), "xv");
    out.push_back(lang::Expr(inline_value(idxs[x], ir::Expr(xv.ir()), &hook)));
  }
  // Vector reads: a read of element 0 whose offset shows a multiple of r, with a read of the same
  // input at offset + x in each element x.
  const bool pow2 = r == 2 || r == 4 || r == 8;
  for (auto &first : reads[0]) {
    const DataType dt = dtypes.at(first.param.get());
    if (!pow2 || dt.nbytes() * r > 16 || dt.nbytes() * r < 4 || !shows_multiple_of(first.offset, std::int64_t(r)))
      continue;
    std::vector<Read *> run{&first};
    for (std::size_t x = 1; x < r && run.size() == x; ++x)
      for (auto &rd : reads[x]) {
        if (rd.done || rd.param.get() != first.param.get()) continue;
        ir::Expr diff = ir::simplify(ir::simplify_index(ir::BinaryNode::make(ir::BinaryOp::Sub, rd.offset, first.offset), {}));
        const auto *c = diff.as<ir::ConstantNode>();
        if (c && c->dtype.is_integer() && c->ivalue == std::int64_t(x)) {
          run.push_back(&rd);
          break;
        }
      }
    if (run.size() != r) continue;
    lang::Tensor regs = lang::register_tensor(lang::TensorSpec(dt, {ir::int32(int(r))}), "extra_run");
    lang::load_vector(regs, lang::Element(first.param, first.read.as<ir::TensorElementNode>()->indices, {}),
                      int(dt.nbytes() * r));
    for (std::size_t x = 0; x < r; ++x) {
      lang::Var reg = run[x]->reg;
      reg = regs[int(x)];
      run[x]->done = true;
    }
  }
  for (auto &per : reads)
    for (auto &rd : per)
      if (!rd.done) {
        lang::Var reg = rd.reg;
        reg = lang::Expr(rd.read);
      }
  return out;
}

HIDET_INLINE int EpilogueEmitter::vector_width() const {
  if (!e_) return 8;
  if (e_->out.dtype() != e_->x.dtype()) return 1;
  return e_->linear ? 8 : e_->run;
}

HIDET_INLINE lang::Element EpilogueEmitter::at(const Idx &idx) const {
  Idx oi = !e_ || e_->linear ? idx : e_->to_out(reshape_index(idx, anchor_shape_, e_->x.sym_shape()));
  std::vector<ir::Expr> is;
  for (const auto &i : oi) is.push_back(i.ir());
  return lang::Element(out_, std::move(is), {});
}

HIDET_INLINE void EpilogueEmitter::store(const Idx &idx, const lang::Expr &v) const { at(idx) = value(idx, v); }

HIDET_INLINE std::vector<lang::ParamSpec> EpilogueEmitter::param_specs(const Epilogue *e, const Extents &anchor_shape,
                                                                       DataType anchor_dtype) {
  std::vector<lang::ParamSpec> specs;
  if (!e) {
    specs.push_back(param_spec("c", anchor_dtype, anchor_shape));
    return specs;
  }
  specs.push_back(param_spec("out", e->out.dtype(), e->linear ? anchor_shape : Extents(e->out.sym_shape())));
  for (std::size_t i = 0; i < e->inputs.size(); ++i)
    specs.push_back(param_spec(str_cat("epi", i), e->inputs[i].dtype(), e->inputs[i].sym_shape()));
  return specs;
}

} // namespace detail

HIDET_INLINE int epilogue_math_calls(const Epilogue &e) {
  struct Count : ir::IRVisitor {
    int calls = 0;
    void visit_Call(const ir::CallNode *c) override {
      using I = ir::Intrinsic;
      switch (c->op) {
      case I::Abs: case I::Min: case I::Max: case I::Fma: case I::Floor: case I::Ceil: case I::Round:
      case I::Trunc: case I::IsNan:
        break;
      default:
        calls += ir::is_math_intrinsic(c->op);
      }
      ir::IRVisitor::visit_Call(c);
    }
  } count;
  std::set<const TensorNode *> seen;
  std::vector<const TensorNode *> pending{&e.out.node()};
  while (!pending.empty()) {
    const TensorNode *n = pending.back();
    pending.pop_back();
    if (!seen.insert(n).second || n->kind == TensorNode::Kind::Input) continue;
    if (n->value) count.visit(n->value);
    for (const auto &d : n->deps) pending.push_back(d.get());
  }
  return count.calls;
}

} // namespace hidet::ops

#include "hidet/util/cold_end.hpp"
