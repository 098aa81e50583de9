// Constants derived from constants, computed once and shared: a linear layer's weight transposed
// while a graph is traced, sibling products' weights side by side. Every compiled graph of a model
// (one per input shape, prefill and decode, each batch size) used to hold its own copy: an 8B
// Llama's graphs for three batch sizes held 122 GB on an H200 and the fourth ran out of memory.
//
//   Tensor wt = shared_constant("linear_weight_t", {w}, [&] { return transpose(w); });
//
// A call with the key of a result still alive (held by any compiled graph, or anyone else) gets
// that result without computing it. The key is `what` and each source's address, shape, dtype
// and device. The result keeps its sources' memory alive, so while it can be found no other
// tensor can take their addresses. What is not seen: a source changed in place after the result
// was computed: compiled graphs hold constants, and a graph traced later from the same weights
// gets the earlier results while they live, unless forget_shared_constants() was called in
// between (the torch front end calls it when a parameter's version changed since the last
// trace: load_state_dict, an in-place update under no_grad). Use it only for graph constants.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hidet/runtime/tensor.hpp"

namespace hidet {

/// `compute()` (a tensor with data, computed from `sources`: tensors with data), or the result of
/// an earlier call with the same `what` and sources that is still alive (see the top of the file).
Tensor shared_constant(const std::string &what, const std::vector<Tensor> &sources,
                       const std::function<Tensor()> &compute);

/// Results shared_constant holds in its memo and that are alive (for tests).
std::size_t shared_constants_alive();

/// Empties the memo: later calls compute again (for sources changed in place; the results
/// already given stay valid for whoever holds them).
void forget_shared_constants();

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/shared_constants.ipp"
#endif
