// Definitions for hidet/ops/collective.hpp. Each collective is one node whose run calls the
// communicator on concrete tensors; all_gather and reduce_scatter along an inner axis add the
// permutes (ordinary operators) around their node.
#pragma once

#include "hidet/ops/collective.hpp"

#include "hidet/runtime/operator.hpp"

namespace hidet::ops {

namespace detail {

/// Checks that `comm` is defined and x lives on its device; `op` names the operator.
HIDET_INLINE void check_collective(const char *op, const Tensor &x,
                                   const distributed::Communicator &comm) {
  if (!comm.defined())
    throw ValueError(str_cat(op, ": the communicator is undefined (default-constructed)"));
  if (!x.defined()) throw ValueError(str_cat(op, ": the input is undefined"));
  if (x.device() != comm.device())
    throw ValueError(str_cat(op, ": the input ", x.is_symbolic() ? "(symbolic) " : "",
                             x.signature(), " is on ", x.device(), ", but the communicator (rank ",
                             comm.rank(), " of ", comm.world_size(), ") is on ", comm.device(),
                             "; move the tensor with .to(\"", comm.device().str(), "\")"));
}

/// Checks that x's dtype can be reduced (as Communicator does, but at trace time).
HIDET_INLINE void check_reducible(const char *op, const Tensor &x) {
  DataType dt = x.dtype();
  if (!(dt.is_float() || dt == dtypes::i8 || dt == dtypes::u8 || dt == dtypes::i32 ||
        dt == dtypes::u32 || dt == dtypes::i64 || dt == dtypes::u64))
    throw ValueError(str_cat(op, ": ", dt.name(),
                             " tensors cannot be reduced (NCCL reduces 8-, "
                             "32- and 64-bit integers and floating-point types); cast first"));
}

HIDET_INLINE std::string comm_attrs(const distributed::Communicator &comm) {
  return str_cat("rank=", comm.rank(), ", world_size=", comm.world_size());
}

/// x gathered rank after rank: [world_size, x's extents...].
HIDET_INLINE Tensor all_gather_stacked(const Tensor &x, const distributed::Communicator &comm) {
  SymShape shape = x.sym_shape();
  shape.insert(shape.begin(), Dim(comm.world_size()));
  if (x.is_symbolic())
    return trace_operator("AllGather", {x}, comm_attrs(comm), {{shape, x.dtype(), x.device()}},
                          [comm](const std::vector<Tensor> &in) {
                            return std::vector<Tensor>{all_gather_stacked(in[0], comm)};
                          })[0];
  std::vector<std::int64_t> s = x.shape();
  s.insert(s.begin(), comm.world_size());
  Tensor y = empty(s, x.dtype(), x.device());
  comm.all_gather(x, y);
  return y;
}

/// Part `rank` of the reduction of x cut along axis 0, of shape `out` (x's with axis 0 divided by
/// world_size, or without it when that extent is world_size and `drop` is set).
HIDET_INLINE Tensor reduce_scatter_rows(const Tensor &x, const distributed::Communicator &comm,
                                        distributed::ReduceOp op, const SymShape &out) {
  if (x.is_symbolic())
    return trace_operator("ReduceScatter", {x},
                          str_cat("op=", distributed::reduce_op_name(op), ", ", comm_attrs(comm)),
                          {{out, x.dtype(), x.device()}},
                          [comm, op, out](const std::vector<Tensor> &in) {
                            return std::vector<Tensor>{reduce_scatter_rows(in[0], comm, op, out)};
                          })[0];
  Tensor y = empty(evaluate_bound("ReduceScatter", out), x.dtype(), x.device());
  comm.reduce_scatter(x, y, op);
  return y;
}

} // namespace detail

HIDET_INLINE Tensor all_reduce(const Tensor &x, const distributed::Communicator &comm,
                               distributed::ReduceOp op) {
  detail::check_collective("all_reduce", x, comm);
  detail::check_reducible("all_reduce", x);
  if (x.is_symbolic())
    return trace_operator(
        "AllReduce", {x},
        str_cat("op=", distributed::reduce_op_name(op), ", ", detail::comm_attrs(comm)),
        {{x.sym_shape(), x.dtype(), x.device()}}, [comm, op](const std::vector<Tensor> &in) {
          return std::vector<Tensor>{all_reduce(in[0], comm, op)};
        })[0];
  Tensor y = empty(x.shape(), x.dtype(), x.device());
  comm.all_reduce(x, y, op);
  return y;
}

HIDET_INLINE Tensor all_gather(const Tensor &x, const distributed::Communicator &comm, int axis) {
  detail::check_collective("all_gather", x, comm);
  if (x.ndim() == 0) throw ValueError("all_gather: the input is 0-d; reshape it to [1] first");
  const SymShape s = x.sym_shape();
  axis = detail::normalize_axis("all_gather", axis, s.size(), s);
  const Dim w(comm.world_size());
  Tensor g = detail::all_gather_stacked(x, comm); // [w, s...]
  SymShape out = s;
  out[std::size_t(axis)] = w * s[std::size_t(axis)];
  if (axis == 0) return g.reshape(out);
  std::vector<int> perm; // [s0..s(axis-1), w, s(axis)...]
  for (int d = 1; d <= axis; ++d)
    perm.push_back(d);
  perm.push_back(0);
  for (int d = axis + 1; d <= int(s.size()); ++d)
    perm.push_back(d);
  return permute(g, perm).reshape(out);
}

HIDET_INLINE Tensor reduce_scatter(const Tensor &x, const distributed::Communicator &comm,
                                   distributed::ReduceOp op, int axis) {
  detail::check_collective("reduce_scatter", x, comm);
  detail::check_reducible("reduce_scatter", x);
  if (x.ndim() == 0) throw ValueError("reduce_scatter: the input is 0-d");
  const SymShape s = x.sym_shape();
  axis = detail::normalize_axis("reduce_scatter", axis, s.size(), s);
  const Dim &e = s[std::size_t(axis)];
  const int w = comm.world_size();
  if (!e.is_constant() || e.value() % w != 0)
    throw ValueError(str_cat("reduce_scatter: axis ", axis, " of the input ", sym_shape_str(s),
                             " must have a constant extent that is a multiple of the world size ",
                             w, " (each rank gets one part of it)"));
  SymShape out = s;
  out[std::size_t(axis)] = Dim(e.value() / w);
  if (axis == 0) return detail::reduce_scatter_rows(x, comm, op, out);
  SymShape split; // [s0..s(axis-1), w, e / w, s(axis+1)...]
  for (int d = 0; d < axis; ++d)
    split.push_back(s[std::size_t(d)]);
  split.push_back(Dim(w));
  split.push_back(Dim(e.value() / w));
  for (std::size_t d = std::size_t(axis) + 1; d < s.size(); ++d)
    split.push_back(s[d]);
  std::vector<int> perm{axis}; // the rank axis first
  for (int d = 0; d < int(split.size()); ++d)
    if (d != axis) perm.push_back(d);
  Tensor rows = permute(x.reshape(split), perm); // [w, s0.., e / w, ...]
  const SymShape rows_shape = rows.sym_shape();
  SymShape rows_out(rows_shape.begin() + 1, rows_shape.end());
  return detail::reduce_scatter_rows(rows, comm, op, rows_out).reshape(out);
}

HIDET_INLINE Tensor broadcast(const Tensor &x, const distributed::Communicator &comm, int root) {
  detail::check_collective("broadcast", x, comm);
  if (root < 0 || root >= comm.world_size())
    throw ValueError(str_cat("broadcast: the root ", root, " is not a rank (world_size ",
                             comm.world_size(), ")"));
  if (x.is_symbolic())
    return trace_operator("Broadcast", {x}, str_cat("root=", root, ", ", detail::comm_attrs(comm)),
                          {{x.sym_shape(), x.dtype(), x.device()}},
                          [comm, root](const std::vector<Tensor> &in) {
                            return std::vector<Tensor>{broadcast(in[0], comm, root)};
                          })[0];
  Tensor y = empty(x.shape(), x.dtype(), x.device());
  comm.broadcast(x, y, root);
  return y;
}

HIDET_INLINE Tensor send(const Tensor &x, const distributed::Communicator &comm, int peer) {
  detail::check_collective("send", x, comm);
  if (peer < 0 || peer >= comm.world_size() || peer == comm.rank())
    throw ValueError(str_cat("send: the peer ", peer, " is not another rank (rank ", comm.rank(),
                             " of ", comm.world_size(), ")"));
  if (x.is_symbolic())
    return trace_operator("Send", {x}, str_cat("peer=", peer, ", ", detail::comm_attrs(comm)),
                          {{x.sym_shape(), x.dtype(), x.device()}},
                          [comm, peer](const std::vector<Tensor> &in) {
                            return std::vector<Tensor>{send(in[0], comm, peer)};
                          })[0];
  comm.send(x, peer);
  return x;
}

HIDET_INLINE Tensor recv(const Tensor &like, const distributed::Communicator &comm, int peer) {
  detail::check_collective("recv", like, comm);
  if (peer < 0 || peer >= comm.world_size() || peer == comm.rank())
    throw ValueError(str_cat("recv: the peer ", peer, " is not another rank (rank ", comm.rank(),
                             " of ", comm.world_size(), ")"));
  if (like.is_symbolic())
    return trace_operator("Recv", {like}, str_cat("peer=", peer, ", ", detail::comm_attrs(comm)),
                          {{like.sym_shape(), like.dtype(), like.device()}},
                          [comm, peer](const std::vector<Tensor> &in) {
                            return std::vector<Tensor>{recv(in[0], comm, peer)};
                          })[0];
  Tensor y = empty(like.shape(), like.dtype(), like.device());
  comm.recv(y, peer);
  return y;
}

} // namespace hidet::ops
