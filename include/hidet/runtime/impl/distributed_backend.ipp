// A Communicator's internals (runtime/distributed.hpp): one rank's call of a collective, the
// backend that carries it out (the emulator's rendezvous, or NCCL), and the state copies of a
// Communicator share. Internal: included by runtime/impl/distributed*.ipp only (not a header of
// its own: it needs distributed.hpp, whose .ipp includes it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hidet/runtime/distributed.hpp"

namespace hidet::distributed::detail {

/// The collectives, and the two halves of a point-to-point transfer.
enum class Kind : std::uint8_t { all_reduce, all_gather, reduce_scatter, broadcast, send, recv };

inline const char *kind_name(Kind k) {
  switch (k) {
  case Kind::all_reduce:
    return "all_reduce";
  case Kind::all_gather:
    return "all_gather";
  case Kind::reduce_scatter:
    return "reduce_scatter";
  case Kind::broadcast:
    return "broadcast";
  case Kind::send:
    return "send";
  case Kind::recv:
    return "recv";
  }
  return "?";
}

/// One rank's call: what the ranks compare (kind, dtype, shape, op, root), and its buffers.
struct Call {
  Kind kind = Kind::all_reduce;
  DataType dtype;
  std::vector<std::int64_t> shape; ///< the input's (broadcast and recv: the output's)
  ReduceOp op = ReduceOp::sum;
  int root = -1; ///< broadcast's root; the peer of send and recv
  const void *input = nullptr;
  void *output = nullptr;
  std::size_t count = 0; ///< elements of `shape`

  bool reduces() const { return kind == Kind::all_reduce || kind == Kind::reduce_scatter; }
  /// "all_reduce(float16[4, 8], op=sum)", as error messages show a rank's call.
  std::string describe() const {
    std::string dims;
    for (std::size_t i = 0; i < shape.size(); ++i)
      dims += str_cat(i ? ", " : "", shape[i]);
    std::string s = str_cat(kind_name(kind), "(", dtype.name(), "[", dims, "]");
    if (reduces()) s += str_cat(", op=", reduce_op_name(op));
    if (kind == Kind::broadcast) s += str_cat(", root=", root);
    if (kind == Kind::send || kind == Kind::recv) s += str_cat(", peer=", root);
    return s + ")";
  }
  /// True when the ranks' calls agree (what a collective needs of every rank).
  bool agrees_with(const Call &o) const {
    return kind == o.kind && dtype == o.dtype && shape == o.shape && (!reduces() || op == o.op) &&
           (kind != Kind::broadcast || root == o.root);
  }
};

/// Carries out one rank's calls.
class Backend {
public:
  virtual ~Backend() = default;
  /// Runs `c`, the rank's collective number `seq` (0 for send and recv); `check`: compare the
  /// ranks' arguments first (the emulator always does).
  virtual void run(const Call &c, std::uint64_t seq, bool check) = 0;
  /// Aborts the communicator (every rank's; see Communicator::abort).
  virtual void abort(const std::string &reason) = 0;
  virtual bool aborted() const = 0;
  virtual bool emulated() const = 0;
  /// "NCCL 2.27.3 (/path/libnccl.so.2)" or "emulator".
  virtual std::string describe() const = 0;
};

/// What copies of a Communicator share.
struct CommunicatorState {
  int rank = 0;
  int world_size = 1;
  Device device;
  CommunicatorOptions options;
  std::atomic<std::uint64_t> seq{0}; ///< collectives issued
  std::unique_ptr<Backend> backend;
};

/// The emulator's backend: joins the world of `id` (a rendezvous of threads; see
/// runtime/distributed.hpp).
std::unique_ptr<Backend> make_emulated_backend(const UniqueId &id, int rank, int world_size,
                                               Device device, const CommunicatorOptions &options);
/// NCCL's backend: ncclCommInitRankConfig on `device`.
std::unique_ptr<Backend> make_nccl_backend(const UniqueId &id, int rank, int world_size,
                                           Device device, const CommunicatorOptions &options);

/// "2.5 s".
inline std::string seconds_str(std::chrono::milliseconds t) {
  return str_cat(double(t.count()) / 1000.0, " s");
}

/// "1, 3" for {1, 3}.
inline std::string ranks_str(const std::vector<int> &ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s += str_cat(i ? ", " : "", ranks[i]);
  return s.empty() ? "none" : s;
}

} // namespace hidet::distributed::detail
