// Compiled statement nodes of the SIMT emulator. Control flow follows CUDA with masks: an if runs
// its then-branch for the threads whose condition holds, then its else-branch for the others; a
// loop iterates while any thread is still in it; break, continue and return take threads out of
// the active set (break and return set per-thread flags the enclosing loop / function reads).
#pragma once

#include "hidet/backend/emulator/call_nodes.hpp"

namespace hidet::backend::emu {

/// var = value (also scalar / pointer / view declarations with an initial value).
struct AssignS : SNode {
  int var = -1;
  ENode *value = nullptr; ///< null: zero
  ActiveSet exec(Context &c, ActiveSet in) override {
    c.count(in.n, loc);
    Slot *d = c.reg(var);
    if (!value) {
      for (int k = 0; k < in.n; ++k) d[in.idx[k]].i = 0;
      return in;
    }
    eval(value, c, in);
    const Slot *v = c.reg(value->dst);
    for (int k = 0; k < in.n; ++k) d[in.idx[k]] = v[in.idx[k]];
    return in;
  }
};

/// tensor[indices...] = value. All reads of the statement happen before its writes.
struct StoreS : SNode {
  TensorAccess acc;
  ENode *value = nullptr;
  ActiveSet exec(Context &c, ActiveSet in) override {
    c.count(in.n, loc);
    acc.eval_parts(c, in);
    eval(value, c, in);
    acc.bind(c);
    const Slot *v = c.reg(value->dst);
    const DataType dt = acc.dtype;
    for (int k = 0; k < in.n; ++k) {
      int t = in.idx[k];
      store_value(dt, reinterpret_cast<void *>(acc.address(c, t, Access::Write, "write")), v[t]);
    }
    return in;
  }
};

/// A shared tensor declaration: one buffer per block, allocated when first reached.
struct SharedDeclS : SNode {
  int var = -1;
  ENode *elems = nullptr; ///< storage size in elements
  std::size_t esize = 1;
  std::string name;
  ActiveSet exec(Context &c, ActiveSet in) override {
    c.count(in.n, loc);
    if (in.n == 0) return in;
    auto it = c.shared.find(this);
    if (it == c.shared.end()) {
      eval(elems, c, in);
      std::int64_t n = c.reg(elems->dst)[in.idx[0]].i;
      if (n < 0) c.fail(loc, in.idx[0], str_cat("shared tensor '", name, "' has negative size ", n));
      SharedBuffer b;
      b.bytes = std::size_t(n) * esize;
      b.mem.reset(new std::byte[b.bytes + 16]());
      b.begin = (std::uintptr_t(b.mem.get()) + 15) & ~std::uintptr_t(15);
      if (c.racecheck) b.shadow = std::make_unique<SharedShadow>(b.bytes);
      Alloc a;
      a.begin = b.begin, a.end = b.begin + b.bytes, a.kind = MemKind::Shared, a.name = name;
      a.shadow = b.shadow.get();
      c.mem.add(std::move(a));
      it = c.shared.emplace(this, std::move(b)).first;
    }
    Slot *d = c.reg(var);
    for (int k = 0; k < in.n; ++k) d[in.idx[k]].i = std::int64_t(it->second.begin);
    return in;
  }
};

/// A register tensor declaration: a per-thread array, allocated when first reached in a frame.
struct RegisterDeclS : SNode {
  int var = -1;
  ENode *elems = nullptr;
  std::size_t esize = 1;
  std::string name;
  ActiveSet exec(Context &c, ActiveSet in) override {
    c.count(in.n, loc);
    if (in.n == 0) return in;
    auto &arrays = c.frames[c.depth].arrays;
    RegArray *arr = nullptr;
    for (auto &a : arrays)
      if (a.key == this) arr = &a;
    std::size_t stride = 0;
    if (!arr) {
      eval(elems, c, in);
      std::int64_t n = c.reg(elems->dst)[in.idx[0]].i;
      if (n < 0) c.fail(loc, in.idx[0], str_cat("register tensor '", name, "' has negative size ", n));
      std::size_t bytes = std::size_t(n) * esize;
      stride = std::max<std::size_t>(16, (bytes + 15) & ~std::size_t(15));
      RegArray r;
      r.key = this;
      r.mem.reset(new std::byte[stride * c.T + 16]());
      r.begin = (std::uintptr_t(r.mem.get()) + 15) & ~std::uintptr_t(15);
      Alloc a;
      a.begin = r.begin, a.end = r.begin + stride * c.T, a.kind = MemKind::Register, a.name = name;
      a.slice_stride = stride, a.slice_bytes = bytes;
      c.mem.add(std::move(a));
      arrays.push_back(std::move(r));
      arr = &arrays.back();
    } else {
      stride = c.mem.containing(arr->begin)->slice_stride;
    }
    Slot *d = c.reg(var);
    for (int k = 0; k < in.n; ++k) {
      int t = in.idx[k];
      d[t].i = std::int64_t(arr->begin + stride * std::size_t(t));
    }
    return in;
  }
};

/// A sequence of statements.
struct SeqS : SNode {
  std::vector<SNode *> body;
  ActiveSet exec(Context &c, ActiveSet in) override {
    for (auto *s : body) {
      if (in.n == 0) break;
      in = s->exec(c, in);
    }
    return in;
  }
};

/// for (var = start; var < stop; var += step) and while (cond): `init` may be null (while),
/// `cond` is evaluated before every iteration, `step` runs after the body for the threads that
/// neither broke nor returned (continue keeps a thread in the loop).
struct LoopS : SNode {
  SNode *init = nullptr, *step = nullptr, *body = nullptr;
  ENode *cond = nullptr;
  int brk = -1; ///< register of the per-thread "broke out" flag
  ThreadBuf cur_buf, go_buf, out_buf;
  ActiveSet exec(Context &c, ActiveSet in) override {
    if (init) init->exec(c, in);
    ActiveSet cur = in;
    Slot *b = c.reg(brk);
    const Slot *ret = c.reg(kReturnedReg);
    while (cur.n > 0) {
      eval(cond, c, cur);
      const Slot *cv = c.reg(cond->dst);
      ActiveSet go = filter(cur, go_buf.data(), [&](int t) { return cv[t].i != 0; });
      if (go.n == 0) break;
      c.count(go.n, loc);
      body->exec(c, go);
      cur = filter(go, cur_buf.data(), [&](int t) { return b[t].i == 0 && ret[t].i == 0; });
      if (step && cur.n) step->exec(c, cur);
    }
    for (int k = 0; k < in.n; ++k) b[in.idx[k]].i = 0;
    return filter(in, out_buf.data(), [&](int t) { return ret[t].i == 0; });
  }
};

/// if (cond) then_body else else_body.
struct IfS : SNode {
  ENode *cond = nullptr;
  SNode *then_body = nullptr, *else_body = nullptr;
  ThreadBuf tbuf, ebuf, out_buf;
  ActiveSet exec(Context &c, ActiveSet in) override {
    c.count(in.n, loc);
    eval(cond, c, in);
    const Slot *cv = c.reg(cond->dst);
    ActiveSet ts = filter(in, tbuf.data(), [&](int t) { return cv[t].i != 0; });
    ActiveSet es = filter(in, ebuf.data(), [&](int t) { return cv[t].i == 0; });
    if (ts.n) ts = then_body->exec(c, ts);
    if (es.n && else_body) es = else_body->exec(c, es);
    return merge(ts, es, out_buf.data());
  }
};

/// break: flags the threads for the innermost loop.
struct BreakS : SNode {
  int brk = -1;
  ActiveSet exec(Context &c, ActiveSet in) override {
    Slot *b = c.reg(brk);
    for (int k = 0; k < in.n; ++k) b[in.idx[k]].i = 1;
    return {};
  }
};

/// continue: the threads skip the rest of the body.
struct ContinueS : SNode {
  ActiveSet exec(Context &, ActiveSet) override { return {}; }
};

/// return [value]: flags the threads as returned from the current function.
struct ReturnS : SNode {
  ENode *value = nullptr;
  ActiveSet exec(Context &c, ActiveSet in) override {
    c.count(in.n, loc);
    Slot *r = c.reg(kReturnedReg);
    if (value) {
      eval(value, c, in);
      const Slot *v = c.reg(value->dst);
      Slot *d = c.reg(kReturnValueReg);
      for (int k = 0; k < in.n; ++k) d[in.idx[k]] = v[in.idx[k]];
    }
    for (int k = 0; k < in.n; ++k) r[in.idx[k]].i = 1;
    return {};
  }
};

/// An expression evaluated for its effect.
struct EvaluateS : SNode {
  ENode *expr = nullptr;
  ActiveSet exec(Context &c, ActiveSet in) override {
    c.count(in.n, loc);
    eval(expr, c, in);
    return in;
  }
};

/// Device assertion.
struct AssertS : SNode {
  ENode *cond = nullptr;
  std::string message;
  ActiveSet exec(Context &c, ActiveSet in) override {
    c.count(in.n, loc);
    eval(cond, c, in);
    const Slot *v = c.reg(cond->dst);
    for (int k = 0; k < in.n; ++k)
      if (!v[in.idx[k]].i) c.fail(loc, in.idx[k], "device assertion failed: " + message);
    return in;
  }
};

/// A statement the emulator cannot run (inline PTX): fails when a thread reaches it.
struct UnsupportedS : SNode {
  std::string what;
  ActiveSet exec(Context &c, ActiveSet in) override {
    if (in.n) c.fail(loc, in.idx[0], what);
    return in;
  }
};

} // namespace hidet::backend::emu
