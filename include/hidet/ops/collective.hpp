// Collectives as operators (runtime/distributed.hpp): all_reduce, all_gather, reduce_scatter,
// broadcast, send and recv on a Communicator. On tensors with data they run at once (on the
// current stream; on a GPU they return before the data moved, like a kernel launch); on symbolic
// tensors they record a graph node (AllReduce, AllGather, ReduceScatter, Broadcast, Send, Recv:
// ops::OpKind) whose run calls the communicator, so a compiled graph issues them on its stream,
// in node order, and a CUDA graph captures them. Every rank must run its graph's collectives in
// the same order: a graph traced from the same model on every rank does.
//
//   Tensor h = ops::matmul(x, w_rows_of_this_rank);   // a row-parallel product: partial sums
//   Tensor y = ops::all_reduce(h, comm);              // the whole product on every rank
//
// Outputs are fresh tensors on the communicator's device; inputs must be there (a ValueError
// naming the operator otherwise, at trace time for symbolic inputs). all_gather along an axis
// other than 0, and reduce_scatter along one, move that axis with a permute around the
// collective (NCCL gathers and scatters whole blocks, rank after rank).
#pragma once

#include "hidet/ops/transform.hpp"
#include "hidet/runtime/distributed.hpp"

namespace hidet::ops {

/// The reduction over the ranks of x (every rank gets it).
Tensor all_reduce(const Tensor &x, const distributed::Communicator &comm,
                  distributed::ReduceOp op = distributed::ReduceOp::sum);
/// Every rank's x, concatenated along `axis` in rank order (extent world_size times x's).
Tensor all_gather(const Tensor &x, const distributed::Communicator &comm, int axis = 0);
/// Part `rank` of the reduction over the ranks of x, cut along `axis` into world_size equal parts
/// (x's extent there, a constant, must be a multiple of world_size).
Tensor reduce_scatter(const Tensor &x, const distributed::Communicator &comm,
                      distributed::ReduceOp op = distributed::ReduceOp::sum, int axis = 0);
/// Rank `root`'s x on every rank (every rank passes a tensor of the same shape and dtype; only the
/// root's values are read).
Tensor broadcast(const Tensor &x, const distributed::Communicator &comm, int root = 0);
/// Sends x to rank `peer` and returns x (in a graph, read the result to keep the Send node).
Tensor send(const Tensor &x, const distributed::Communicator &comm, int peer);
/// A tensor of like's shape and dtype received from rank `peer` (like's values are not read: in a
/// graph it orders the Recv node after like's producer).
Tensor recv(const Tensor &like, const distributed::Communicator &comm, int peer);

} // namespace hidet::ops

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/collective.ipp"
#endif
