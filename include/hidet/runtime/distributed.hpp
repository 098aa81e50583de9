// Several GPUs: communicators and their collectives, for tensor-parallel inference
// (docs/distributed.md).
//
//   using namespace hidet::distributed;
//   UniqueId id = get_unique_id();                 // on rank 0; hand id.hex() to the other ranks
//   Communicator comm(id, rank, world_size, hidet::Device::cuda(local_rank));
//   comm.all_reduce(x, y);                         // y = the sum of every rank's x
//
// A Communicator joins `world_size` ranks, one per device, that made it from the same UniqueId.
// On a GPU each rank is a process (torchrun, MPI, or your own launcher) and the communicator is
// NCCL's (runtime/nccl.hpp, loaded with dlopen): NCCL moves the data. A collective is enqueued on
// the calling thread's current stream when it belongs to the communicator's device (else on that
// device's default stream), so it is ordered with hidet's kernels and a CUDA-graph capture records
// it; it returns before the data has moved.
//
// On the emulator (HIDET_EMULATE=1, or no GPU) the ranks are threads of one process, rank r on
// the emulated device cuda:r (set_emulated_device_count; run_emulated does both): a collective is
// a rendezvous in host memory, complete when it returns, with NCCL's results. It checks what NCCL
// cannot: every rank's arguments are compared (the collective, dtype, shape, reduction, root), and
// when they differ every rank throws a DistributedError listing each rank's arguments; a rank that
// does not arrive within the timeout makes the ranks that did throw a DistributedError naming the
// collective and the ranks missing. An error aborts the communicator: every later call on any rank
// throws at once, naming the first error (an NCCL communicator is unusable after an error too).
//
// On a GPU the same comparison runs when checking is on (CommunicatorOptions::check,
// $HIDET_DISTRIBUTED_CHECK=1, or a CheckGuard on the calling thread; a compiled graph checks its
// first run on scratch inputs this way): each collective first gathers every rank's arguments
// with a small all_gather and waits for it, up to the timeout, which synchronizes the stream. A
// timeout aborts the NCCL communicator (NCCL cannot say which ranks are missing). Collectives
// captured into a CUDA graph are not checked; unchecked, a rank that never arrives makes NCCL wait.
//
// Element types: all_gather, broadcast, send and recv move any dtype; the reductions take the
// integers, f16, bf16, f32 and f64 (and the 8-bit floats with NCCL 2.24 or later, and on the
// emulator). avg divides the sum by the world size (integers: toward zero).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hidet/runtime/tensor.hpp"

namespace hidet::distributed {

/// A collective that could not complete: ranks that disagree on its arguments, a rank that did not
/// arrive in time, an aborted communicator, NCCL's own errors, a missing libnccl.
class DistributedError : public Error {
  using Error::Error;
};

/// The reductions of all_reduce and reduce_scatter.
enum class ReduceOp : std::uint8_t { sum, prod, max, min, avg };

/// "sum", "prod", "max", "min", "avg".
std::string_view reduce_op_name(ReduceOp op);
/// The reduction named `name` ("sum", "prod" or "product", "max", "min", "avg"); a ValueError
/// listing the names otherwise.
ReduceOp parse_reduce_op(std::string_view name);

/// Identifies one communicator: made by one rank with get_unique_id() and handed to the others
/// (as hex() text, or the bytes).
struct UniqueId {
  std::array<std::uint8_t, 128> bytes{};
  /// The bytes as 256 hexadecimal digits.
  std::string hex() const;
  /// The id of hex() text; a ValueError for anything else.
  static UniqueId from_hex(std::string_view text);
  /// True for an id of the emulator's (get_unique_id() without a GPU).
  bool emulated() const;
  bool operator==(const UniqueId &) const = default;
};

/// A new id: NCCL's ncclGetUniqueId on a GPU, a random id of the emulator's otherwise. On a GPU
/// this loads NCCL (a DistributedError when it is missing).
UniqueId get_unique_id();

/// How a communicator waits and checks.
struct CommunicatorOptions {
  /// How long a rank waits for the others: in a collective on the emulator, when joining on the
  /// emulator, and in a checked collective on a GPU.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  /// On a GPU: compare every collective's arguments across the ranks first (see the top of the
  /// file). The emulator always compares.
  bool check = false;
  /// The defaults, with $HIDET_DISTRIBUTED_TIMEOUT (seconds, a decimal number) and
  /// $HIDET_DISTRIBUTED_CHECK (1/0) applied.
  static CommunicatorOptions from_env();
};

/// One rank's collective as a host function sees it (Communicator::from_host_function).
struct HostCollective {
  std::string kind; ///< "all_reduce", "all_gather", "reduce_scatter", "broadcast",
                    ///< "send" or "recv"
  DataType dtype;
  std::vector<std::int64_t> shape; ///< the input's (broadcast and recv: the output's)
  ReduceOp op = ReduceOp::sum;     ///< all_reduce, reduce_scatter
  int root = -1;                   ///< broadcast's root; the peer of send and recv
  const void *input = nullptr;     ///< host memory (null for recv, and broadcast off the root)
  void *output = nullptr;          ///< host memory (null for send)
  std::size_t input_count = 0;     ///< elements at input
  std::size_t output_count = 0;    ///< elements at output
};

namespace detail {
struct CommunicatorState;
} // namespace detail

/// One rank's handle on a group of ranks (see the top of the file). Copies share the
/// communicator; it is destroyed with its last copy. Calls on one communicator must come from
/// one thread at a time, in the same order on every rank.
class Communicator {
public:
  /// An undefined communicator (defined() is false; every collective throws).
  Communicator() = default;
  /// Joins the communicator of `id` as rank `rank` of `world_size` (0 <= rank < world_size), with
  /// its data on `device` (a 'cuda' device; each rank its own). Every rank must call it with the
  /// same id and world size; on a GPU this is NCCL's ncclCommInitRank, which waits for all of
  /// them; on the emulator the ranks wait for each other up to the timeout, and a rank given
  /// another world size or the device of another rank makes every rank throw.
  Communicator(const UniqueId &id, int rank, int world_size, Device device,
               CommunicatorOptions options = CommunicatorOptions::from_env());

  /// A communicator whose collectives another library carries out in host memory: `fn` is
  /// called with each of this rank's collectives, in order, and must complete it before it
  /// returns. For ranks in several processes on the emulator (hidet.distributed hands them to
  /// torch.distributed's gloo backend); a ValueError on a GPU, where data is in device memory.
  /// The function checks nothing hidet does not: the other library's checks apply.
  static Communicator
  from_host_function(int rank, int world_size, Device device,
                     std::function<void(const HostCollective &)> fn,
                     CommunicatorOptions options = CommunicatorOptions::from_env());

  bool defined() const { return state_ != nullptr; }
  int rank() const;
  int world_size() const;
  Device device() const;
  /// True when the ranks are threads of this process on the emulator.
  bool emulated() const;
  const CommunicatorOptions &options() const;
  /// How many collectives this rank has issued.
  std::uint64_t collectives_issued() const;
  /// "Communicator(rank=0, world_size=2, device=cuda:0, NCCL 2.27.3 <path>)", or "emulator".
  std::string str() const;

  /// output = the reduction of every rank's input (same dtype and element count; output may be
  /// input: in place).
  void all_reduce(const Tensor &input, const Tensor &output, ReduceOp op = ReduceOp::sum) const;
  /// output = every rank's input, rank after rank (output has world_size times input's elements).
  void all_gather(const Tensor &input, const Tensor &output) const;
  /// output = part `rank` of the reduction of every rank's input, cut in world_size equal parts
  /// (input has world_size times output's elements).
  void reduce_scatter(const Tensor &input, const Tensor &output, ReduceOp op = ReduceOp::sum) const;
  /// output = rank `root`'s input, on every rank (input is read on the root only; other ranks
  /// may pass an undefined input).
  void broadcast(const Tensor &input, const Tensor &output, int root) const;
  /// Sends input to rank `peer`, whose recv() of a tensor of the same shape and dtype takes it.
  void send(const Tensor &input, int peer) const;
  /// Receives into output what rank `peer` send()s.
  void recv(const Tensor &output, int peer) const;

  /// Aborts the communicator on every rank (on the emulator, ranks waiting in a collective throw
  /// at once, naming `reason`); later calls throw. For a rank that failed on its own.
  void abort(const std::string &reason) const;
  /// True after abort() or an error.
  bool aborted() const;

  /// The same communicator (copies of one handle).
  bool operator==(const Communicator &o) const { return state_ == o.state_; }

private:
  std::shared_ptr<detail::CommunicatorState> state_;
};

/// Prints c.str().
std::ostream &operator<<(std::ostream &os, const Communicator &c);

/// Checks every collective issued on this thread while it lives (see the top of the file), on a
/// GPU as on the emulator.
class CheckGuard {
public:
  CheckGuard();
  ~CheckGuard();
  CheckGuard(const CheckGuard &) = delete;
  CheckGuard &operator=(const CheckGuard &) = delete;
  /// True while a CheckGuard lives on this thread.
  static bool active();

private:
  bool saved_;
};

/// Runs fn(comm) on `world_size` threads, rank r's communicator on the emulated device cuda:r (the
/// emulator gets at least world_size devices), and waits for them. When a rank throws, its
/// communicator is aborted, so the other ranks stop too; the exception of the rank that failed
/// first is rethrown. Needs the emulator (HIDET_EMULATE=1, set_cuda_emulation(true), or no GPU): a
/// ValueError otherwise (hidet runs one GPU per process; launch one process per GPU there).
void run_emulated(int world_size, const std::function<void(Communicator &)> &fn,
                  CommunicatorOptions options = CommunicatorOptions::from_env());

} // namespace hidet::distributed

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/distributed.ipp"
#endif
