// Definitions for hidet/ir/eval.hpp.
#pragma once
#include "hidet/ir/eval.hpp"

#include <algorithm>
#include <cmath>

#include "hidet/util/cold_begin.hpp"

namespace hidet::ir {

HIDET_INLINE std::optional<double> try_evaluate(const Expr &e, const VarBindings &env) {
  if (auto c = e.as<ConstantNode>()) return c->as_double();
  if (auto v = e.as<VarNode>()) {
    auto it = env.find(v);
    if (it == env.end()) return std::nullopt;
    return it->second;
  }
  auto dt = is_scalar(e->type) ? dtype_of(e->type) : dtypes::i64;
  auto fix = [&](double x) -> double {
    if (dt.is_float()) return dt == dtypes::f32 ? double(float(x)) : x;
    return double(wrap_int(dt, std::int64_t(x)));
  };
  if (auto u = e.as<UnaryNode>()) {
    auto a = try_evaluate(u->a, env);
    if (!a) return std::nullopt;
    switch (u->op) {
    case UnaryOp::Neg: return fix(-*a);
    case UnaryOp::LogicalNot: return *a == 0 ? 1.0 : 0.0;
    case UnaryOp::BitNot: return fix(double(~std::int64_t(*a)));
    }
  }
  if (auto b = e.as<BinaryNode>()) {
    auto x = try_evaluate(b->a, env);
    if (!x) return std::nullopt;
    // short-circuit logical ops
    if (b->op == BinaryOp::LogicalAnd && *x == 0) return 0.0;
    if (b->op == BinaryOp::LogicalOr && *x != 0) return 1.0;
    auto y = try_evaluate(b->b, env);
    if (!y) return std::nullopt;
    bool is_f = is_scalar(b->a->type) && dtype_of(b->a->type).is_float();
    std::int64_t ix = std::int64_t(*x), iy = std::int64_t(*y);
    switch (b->op) {
    case BinaryOp::Add: return fix(*x + *y);
    case BinaryOp::Sub: return fix(*x - *y);
    case BinaryOp::Mul: return is_f ? fix(*x * *y) : fix(double(ix * iy));
    case BinaryOp::Div:
      if (is_f) return fix(*x / *y);
      if (iy == 0) return std::nullopt;
      return fix(double(ix / iy));
    case BinaryOp::Mod:
      if (is_f) return fix(std::fmod(*x, *y));
      if (iy == 0) return std::nullopt;
      return fix(double(ix % iy));
    case BinaryOp::BitAnd: return fix(double(ix & iy));
    case BinaryOp::BitOr: return fix(double(ix | iy));
    case BinaryOp::BitXor: return fix(double(ix ^ iy));
    case BinaryOp::Shl: return fix(double(ix << iy));
    case BinaryOp::Shr: return fix(double(ix >> iy));
    case BinaryOp::Lt: return *x < *y;
    case BinaryOp::Le: return *x <= *y;
    case BinaryOp::Gt: return *x > *y;
    case BinaryOp::Ge: return *x >= *y;
    case BinaryOp::Eq: return *x == *y;
    case BinaryOp::Ne: return *x != *y;
    case BinaryOp::LogicalAnd: return (*x != 0 && *y != 0) ? 1.0 : 0.0;
    case BinaryOp::LogicalOr: return (*x != 0 || *y != 0) ? 1.0 : 0.0;
    }
  }
  if (auto c = e.as<CastNode>()) {
    auto a = try_evaluate(c->a, env);
    if (!a || !is_scalar(c->type)) return std::nullopt;
    return fix(dt.is_float() ? *a : double(std::int64_t(*a)));
  }
  if (auto s = e.as<SelectNode>()) {
    auto c = try_evaluate(s->cond, env);
    if (!c) return std::nullopt;
    return try_evaluate(*c != 0 ? s->t : s->f, env);
  }
  if (auto c = e.as<CallNode>(); c && (c->op == Intrinsic::Min || c->op == Intrinsic::Max) && c->args.size() == 2) {
    auto x = try_evaluate(c->args[0], env), y = try_evaluate(c->args[1], env);
    if (!x || !y) return std::nullopt;
    return c->op == Intrinsic::Min ? std::min(*x, *y) : std::max(*x, *y);
  }
  return std::nullopt;
}

} // namespace hidet::ir

#include "hidet/util/cold_end.hpp"
