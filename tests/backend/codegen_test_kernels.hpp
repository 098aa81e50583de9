// Lowered IR built by hand (as the lowering leaves it) for the codegen, NVRTC and cache tests.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "hidet/ir/functor.hpp"

namespace hidet::test_kernels {

using namespace hidet::ir;

inline Expr c32(std::int64_t v) { return int32(v); }
inline Expr add(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Add, a, b); }
inline Expr mul(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Mul, a, b); }
inline Expr lt(Expr a, Expr b) { return BinaryNode::make(BinaryOp::Lt, a, b); }
inline Expr land(Expr a, Expr b) { return BinaryNode::make(BinaryOp::LogicalAnd, a, b); }
inline Expr tid(BuiltinKind k) { return BuiltinNode::make(k); }
inline Expr call(Intrinsic op, std::vector<Expr> args, DataType ret) {
  return CallNode::make_intrinsic(op, std::move(args), scalar_type(ret));
}
inline Stmt eval(Expr e) { return EvaluateStmtNode::make(std::move(e)); }

/// C[i, j] = sum_k A[i, k] * B[k, j] with 16x16 blocks; M, N, K are scalar parameters.
/// Every statement carries a location in "matmul.cpp" (line 10 + statement index).
inline Module naive_matmul(const char *file = "matmul.cpp") {
  auto loc = [&](std::uint32_t l) { return SourceLoc(file, l); };
  Var M = make_var(scalar_type(dtypes::i32), "M"), N = make_var(scalar_type(dtypes::i32), "N"),
      K = make_var(scalar_type(dtypes::i32), "K");
  Var A = make_var(TensorTypeNode::make(dtypes::f32, {M, K}), "A");
  Var B = make_var(TensorTypeNode::make(dtypes::f32, {K, N}), "B");
  Var C = make_var(TensorTypeNode::make(dtypes::f32, {M, N}), "C");
  Var i = make_var(scalar_type(dtypes::i32), "i"), j = make_var(scalar_type(dtypes::i32), "j");
  Var k = make_var(scalar_type(dtypes::i32), "k");
  Var acc = make_var(scalar_type(dtypes::f32), "acc");
  Stmt body = seq({
      DeclareStmtNode::make(
          i, add(mul(tid(BuiltinKind::BlockIdxY), c32(16)), tid(BuiltinKind::ThreadIdxY)), loc(11)),
      DeclareStmtNode::make(
          j, add(mul(tid(BuiltinKind::BlockIdxX), c32(16)), tid(BuiltinKind::ThreadIdxX)), loc(12)),
      IfStmtNode::make(
          land(lt(i, M), lt(j, N)),
          seq({DeclareStmtNode::make(acc, ConstantNode::make_float(dtypes::f32, 0.0), loc(14)),
               ForStmtNode::make(
                   k, c32(0), K, c32(1), 0,
                   AssignStmtNode::make(acc,
                                        add(acc, mul(TensorElementNode::make(A, {i, k}),
                                                     TensorElementNode::make(B, {k, j}))),
                                        loc(16)),
                   loc(15)),
               BufferStoreStmtNode::make(C, {i, j}, acc, loc(17))}),
          {}, loc(13)),
  });
  FuncAttrs attrs;
  attrs.has_grid = attrs.has_block = true;
  attrs.grid_dim = {BinaryNode::make(BinaryOp::Div, add(N, c32(15)), c32(16)),
                    BinaryNode::make(BinaryOp::Div, add(M, c32(15)), c32(16)), Expr()};
  attrs.block_dim = {c32(16), c32(16), Expr()};
  return make_module({make_function("matmul", {A, B, C, M, N, K}, body, void_type(),
                                    FuncKind::Kernel, attrs, loc(10))});
}

/// out[j, i] = in[i, j] for a 16x16 tile through shared memory with __syncthreads.
inline Module shared_transpose() {
  Var in = make_var(TensorTypeNode::make(dtypes::f32, {c32(16), c32(16)}), "in");
  Var out = make_var(TensorTypeNode::make(dtypes::f32, {c32(16), c32(16)}), "out");
  Var tile = make_var(TensorTypeNode::make(dtypes::f32, {c32(16), c32(17)}, Scope::Shared), "tile");
  Expr tx = tid(BuiltinKind::ThreadIdxX), ty = tid(BuiltinKind::ThreadIdxY);
  Stmt body =
      seq({DeclareStmtNode::make(tile),
           BufferStoreStmtNode::make(tile, {ty, tx}, TensorElementNode::make(in, {ty, tx})),
           eval(CallNode::make_intrinsic(Intrinsic::SyncThreads, {}, void_type())),
           BufferStoreStmtNode::make(out, {tx, ty}, TensorElementNode::make(tile, {ty, tx}))});
  FuncAttrs attrs;
  attrs.has_grid = attrs.has_block = true;
  attrs.block_dim = {c32(16), c32(16), Expr()};
  attrs.min_blocks = 2;
  return make_module(
      {make_function("transpose", {in, out}, body, void_type(), FuncKind::Kernel, attrs)});
}

inline const std::vector<DataType> &all_dtypes() {
  static const std::vector<DataType> v = {
      dtypes::boolean, dtypes::i8,  dtypes::i16, dtypes::i32,  dtypes::i64, dtypes::u8, dtypes::u16,
      dtypes::u32,     dtypes::u64, dtypes::f16, dtypes::bf16, dtypes::f32, dtypes::f64};
  return v;
}

/// One kernel that uses every intrinsic on every dtype it accepts, casts between every pair of
/// dtypes, constants of every dtype (inf, nan, extremes), printf, asm, assert, dynamic shared
/// memory and a device function. Parameter `buf_<dtype>` is a 64-element buffer per dtype.
inline Module every_intrinsic() {
  std::vector<Var> params;
  std::map<DTypeCode, Var> buf;
  for (DataType d : all_dtypes()) {
    Var v = make_var(TensorTypeNode::make(d, {c32(64)}), "buf_" + std::string(d.short_name()));
    buf[d.code] = v;
    params.push_back(v);
  }
  auto at = [&](DataType d, int i) { return TensorElementNode::make(buf[d.code], {c32(i)}); };
  auto store = [&](DataType d, int i, Expr v) {
    return BufferStoreStmtNode::make(buf[d.code], {c32(i)}, v);
  };
  std::vector<Stmt> body;
  using I = Intrinsic;
  // math on floats
  for (DataType d : {dtypes::f16, dtypes::bf16, dtypes::f32, dtypes::f64}) {
    int k = 10;
    for (I op : {I::Exp,   I::Exp2,  I::Log,   I::Log2,  I::Sqrt,  I::Rsqrt, I::Sin,
                 I::Cos,   I::Tanh,  I::Erf,   I::Abs,   I::Floor, I::Ceil,  I::Round,
                 I::Trunc, I::Tan,   I::Asin,  I::Acos,  I::Atan,  I::Sinh,  I::Cosh,
                 I::Asinh, I::Acosh, I::Atanh, I::Log1p, I::Expm1, I::Log10, I::Erfinv})
      body.push_back(store(d, k++, call(op, {at(d, 0)}, d)));
    for (I op : {I::Pow, I::Min, I::Max, I::Atan2, I::Fmod})
      body.push_back(store(d, k++, call(op, {at(d, 0), at(d, 1)}, d)));
    body.push_back(store(d, k++, call(I::Fma, {at(d, 0), at(d, 1), at(d, 2)}, d)));
    body.push_back(store(dtypes::boolean, k++, call(I::IsNan, {at(d, 0)}, dtypes::boolean)));
    for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod})
      body.push_back(store(d, k++, BinaryNode::make(op, at(d, 0), at(d, 1))));
    body.push_back(store(d, k++, UnaryNode::make(UnaryOp::Neg, at(d, 3))));
    body.push_back(store(dtypes::boolean, k++, BinaryNode::make(BinaryOp::Lt, at(d, 0), at(d, 1))));
  }
  // integer math and arithmetic
  for (DataType d : all_dtypes()) {
    if (!d.is_integer())
      continue;
    int k = 10;
    body.push_back(store(d, k++, call(I::Abs, {at(d, 0)}, d)));
    body.push_back(store(d, k++, call(I::Min, {at(d, 0), at(d, 1)}, d)));
    body.push_back(store(d, k++, call(I::Max, {at(d, 0), at(d, 1)}, d)));
    body.push_back(store(dtypes::boolean, 40, call(I::IsNan, {at(d, 0)}, dtypes::boolean)));
    for (BinaryOp op :
         {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Mod,
          BinaryOp::BitAnd, BinaryOp::BitOr, BinaryOp::BitXor, BinaryOp::Shl, BinaryOp::Shr})
      body.push_back(store(d, k++, BinaryNode::make(op, at(d, 0), at(d, 1))));
    body.push_back(store(d, k++, UnaryNode::make(UnaryOp::BitNot, at(d, 0))));
  }
  // casts between every pair, constants of every dtype
  for (DataType s : all_dtypes()) {
    int k = 50;
    for (DataType d : all_dtypes()) {
      if (d == s)
        continue;
      body.push_back(store(d, 50 + int(s.code), CastNode::make(at(s, 2), scalar_type(d))));
      ++k;
    }
    body.push_back(store(s, 63, ConstantNode::make_int(s, -1)));
    if (s.is_float()) {
      body.push_back(store(s, 62, ConstantNode::make_float(s, INFINITY)));
      body.push_back(store(s, 61, ConstantNode::make_float(s, -INFINITY)));
      body.push_back(store(s, 60, ConstantNode::make_float(s, NAN)));
      body.push_back(store(s, 59, ConstantNode::make_float(s, 0.1)));
    } else {
      body.push_back(
          store(s, 62, ConstantNode::make_int(s, std::numeric_limits<std::int64_t>::min())));
      body.push_back(
          store(s, 61, ConstantNode::make_int(s, std::numeric_limits<std::int64_t>::max())));
    }
  }
  // atomics
  for (DataType d : {dtypes::i16, dtypes::u16, dtypes::i32, dtypes::u32, dtypes::i64, dtypes::u64,
                     dtypes::f16, dtypes::bf16, dtypes::f32, dtypes::f64}) {
    Expr addr = AddressNode::make(at(d, 4));
    int k = 20;
    for (I op : {I::AtomicAdd, I::AtomicMin, I::AtomicMax, I::AtomicExch})
      body.push_back(store(d, k++, call(op, {addr, at(d, 5)}, d)));
    body.push_back(store(d, k++, call(I::AtomicCas, {addr, at(d, 5), at(d, 6)}, d)));
    body.push_back(eval(call(I::AtomicAdd, {addr, at(d, 7)}, d)));
  }
  // warp shuffles and votes
  Expr mask = ConstantNode::make_int(dtypes::u32, 0xffffffffu);
  for (DataType d : all_dtypes()) {
    int k = 30;
    for (I op : {I::ShflSync, I::ShflUpSync, I::ShflDownSync, I::ShflXorSync})
      body.push_back(store(d, k++, call(op, {mask, at(d, 8), c32(1), c32(32)}, d)));
    body.push_back(store(d, k++, call(I::ShflXorSync, {mask, at(d, 8), c32(2)}, d)));
  }
  Expr pred = at(dtypes::boolean, 0);
  body.push_back(store(dtypes::boolean, 1, call(I::AnySync, {mask, pred}, dtypes::boolean)));
  body.push_back(store(dtypes::boolean, 2, call(I::AllSync, {mask, pred}, dtypes::boolean)));
  body.push_back(store(dtypes::u32, 9, call(I::BallotSync, {mask, pred}, dtypes::u32)));
  body.push_back(eval(CallNode::make_intrinsic(I::SyncWarp, {mask}, void_type())));
  body.push_back(eval(CallNode::make_intrinsic(I::SyncThreads, {}, void_type())));
  // printf with tricky text and every kind of argument
  body.push_back(eval(CallNode::make_intrinsic(
      I::Printf, {at(dtypes::f16, 0), at(dtypes::bf16, 0), at(dtypes::f32, 0), at(dtypes::i64, 0)},
      scalar_type(dtypes::i32), {}, "h=%f b=%f f=%f i=%lld \"100%%\"\\ \t\n")));
  // dynamic shared memory viewed as a float tensor
  Var smem = make_var(TensorTypeNode::make(dtypes::f32, {c32(32)}, Scope::Shared), "smem");
  body.push_back(
      DeclareStmtNode::make(smem, CallNode::make_intrinsic(I::DynamicSharedMemory, {},
                                                           pointer_type(scalar_type(dtypes::u8)))));
  body.push_back(
      BufferStoreStmtNode::make(smem, {tid(BuiltinKind::ThreadIdxX)}, at(dtypes::f32, 0)));
  // inline PTX and an assertion
  Var r = make_var(scalar_type(dtypes::u32), "r");
  body.push_back(DeclareStmtNode::make(r, ConstantNode::make_int(dtypes::u32, 0)));
  body.push_back(AsmStmtNode::make("mov.u32 %0, %1;", {{"=r", r}}, {{"r", at(dtypes::u32, 0)}}));
  body.push_back(AssertStmtNode::make(lt(at(dtypes::i32, 0), c32(100)), "value \"too\" large: 100%",
                                      SourceLoc("user.cpp", 77)));
  // a device function
  Var a = make_var(scalar_type(dtypes::f32), "a");
  Function sq =
      make_function("square", {a}, ReturnStmtNode::make(BinaryNode::make(BinaryOp::Mul, a, a)),
                    scalar_type(dtypes::f32), FuncKind::Device);
  body.push_back(
      store(dtypes::f32, 0,
            CallNode::make_func("square", {at(dtypes::f32, 1)}, scalar_type(dtypes::f32))));
  FuncAttrs attrs;
  attrs.has_grid = attrs.has_block = true;
  attrs.block_dim = {c32(32), Expr(), Expr()};
  return make_module(
      {make_function("every_intrinsic", params, seq(body), void_type(), FuncKind::Kernel, attrs),
       sq});
}

} // namespace hidet::test_kernels
