// Definitions for hidet/runtime/distributed.hpp: the options, ids and the Communicator's checks
// (here), the emulated backend (distributed_emulated.ipp) and NCCL's (distributed_nccl.ipp).
#pragma once

#include "hidet/runtime/distributed.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <ostream>
#include <random>
#include <thread>
#include <vector>

#include "hidet/runtime/command_hook.hpp"
#include "hidet/runtime/impl/distributed_backend.ipp"
#include "hidet/runtime/nccl.hpp"
#include "hidet/util/env.hpp"

namespace hidet::distributed {

HIDET_INLINE std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
  case ReduceOp::sum:
    return "sum";
  case ReduceOp::prod:
    return "prod";
  case ReduceOp::max:
    return "max";
  case ReduceOp::min:
    return "min";
  case ReduceOp::avg:
    return "avg";
  }
  return "?";
}

HIDET_INLINE ReduceOp parse_reduce_op(std::string_view name) {
  if (name == "sum") return ReduceOp::sum;
  if (name == "prod" || name == "product") return ReduceOp::prod;
  if (name == "max") return ReduceOp::max;
  if (name == "min") return ReduceOp::min;
  if (name == "avg") return ReduceOp::avg;
  throw ValueError(str_cat("unknown reduction '", name,
                           "': expected one of sum, prod (or product), max, min, avg"));
}

namespace detail {
/// The first bytes of an emulated id.
inline constexpr char emulated_id_magic[9] = "hidetemu";
} // namespace detail

HIDET_INLINE std::string UniqueId::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

HIDET_INLINE UniqueId UniqueId::from_hex(std::string_view text) {
  UniqueId id;
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  bool ok = text.size() == id.bytes.size() * 2;
  for (std::size_t i = 0; ok && i < id.bytes.size(); ++i) {
    int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
    ok = hi >= 0 && lo >= 0;
    id.bytes[i] = std::uint8_t(hi * 16 + lo);
  }
  if (!ok)
    throw ValueError(
        str_cat("UniqueId::from_hex: expected 256 hexadecimal digits (UniqueId::hex()), "
                "got ",
                text.size(), " characters"));
  return id;
}

HIDET_INLINE bool UniqueId::emulated() const {
  return std::memcmp(bytes.data(), detail::emulated_id_magic, 8) == 0;
}

HIDET_INLINE UniqueId get_unique_id() {
  UniqueId id;
  if (cuda_emulated()) {
    std::memcpy(id.bytes.data(), detail::emulated_id_magic, 8);
    std::random_device rd;
    for (std::size_t i = 8; i < 24; ++i)
      id.bytes[i] = std::uint8_t(rd());
    return id;
  }
  const auto &lib = nccl::library();
  nccl::UniqueId raw{};
  nccl::Result r = lib.ncclGetUniqueId(&raw);
  if (r != nccl::Success)
    throw DistributedError(str_cat("get_unique_id: ncclGetUniqueId failed: ", nccl::error_text(r)));
  std::memcpy(id.bytes.data(), raw.internal, id.bytes.size());
  return id;
}

HIDET_INLINE CommunicatorOptions CommunicatorOptions::from_env() {
  CommunicatorOptions o;
  if (auto t = util::env_string("HIDET_DISTRIBUTED_TIMEOUT"); t && !t->empty()) {
    char *end = nullptr;
    double seconds = std::strtod(t->c_str(), &end);
    if (end && *end == '\0' && seconds > 0)
      o.timeout = std::chrono::milliseconds(std::int64_t(seconds * 1000));
  }
  o.check = util::env_bool("HIDET_DISTRIBUTED_CHECK");
  return o;
}

namespace detail {
HIDET_INLINE bool &check_flag() {
  thread_local bool on = false;
  return on;
}
} // namespace detail

HIDET_INLINE CheckGuard::CheckGuard() : saved_(detail::check_flag()) {
  detail::check_flag() = true;
}
HIDET_INLINE CheckGuard::~CheckGuard() { detail::check_flag() = saved_; }
HIDET_INLINE bool CheckGuard::active() { return detail::check_flag(); }

HIDET_INLINE Communicator::Communicator(const UniqueId &id, int rank, int world_size, Device device,
                                        CommunicatorOptions options) {
  auto what = [&] { return str_cat("Communicator(rank=", rank, ", world_size=", world_size, ")"); };
  if (world_size < 1) throw ValueError(str_cat(what(), ": world_size must be at least 1"));
  if (rank < 0 || rank >= world_size)
    throw ValueError(str_cat(what(), ": rank must be in [0, ", world_size, ")"));
  if (!device.is_cuda())
    throw ValueError(str_cat(what(), ": the device is ", device,
                             "; a communicator's data lives on a 'cuda' device"));
  const bool emulated = cuda_emulated();
  if (emulated && device.index >= emulated_device_count())
    throw ValueError(str_cat(what(), ": the emulator serves ", emulated_device_count(),
                             " device(s), so ", device,
                             " does not exist; call "
                             "hidet::set_emulated_device_count(",
                             world_size,
                             ") (or set HIDET_EMULATED_DEVICES) to emulate one device per rank, "
                             "or use distributed::run_emulated"));
  check_device(device);
  if (!emulated && device.index != 0)
    throw ValueError(str_cat(what(), ": the device is ", device,
                             "; hidet runs one GPU per process, as cuda:0 (its operators keep "
                             "their scratch memory there): make this rank's GPU the only one its "
                             "process sees (CUDA_VISIBLE_DEVICES=<local rank>; hidet.distributed "
                             "does so under torchrun) and pass cuda:0"));
  if (id.emulated() != emulated)
    throw ValueError(str_cat(what(), ": the unique id was made ",
                             id.emulated() ? "on the emulator" : "by NCCL (on a GPU)",
                             " but this process runs ", emulated ? "on the emulator" : "on a GPU",
                             "; every rank must run where the id was made"));
  auto st = std::make_shared<detail::CommunicatorState>();
  st->rank = rank;
  st->world_size = world_size;
  st->device = device;
  st->options = options;
  st->backend = emulated ? detail::make_emulated_backend(id, rank, world_size, device, options)
                         : detail::make_nccl_backend(id, rank, world_size, device, options);
  state_ = std::move(st);
}

namespace detail {

/// Hands each call to a user's function (Communicator::from_host_function).
class HostFunctionBackend : public Backend {
public:
  HostFunctionBackend(int world, std::function<void(const HostCollective &)> fn)
      : world_(world), fn_(std::move(fn)) {}
  bool emulated() const override { return true; }
  std::string describe() const override { return "host function"; }
  bool aborted() const override { return aborted_; }
  void abort(const std::string &reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    reason_ = reason;
    aborted_ = true;
  }
  void run(const Call &c, std::uint64_t seq, bool) override {
    if (aborted_)
      throw DistributedError(str_cat(c.describe(), " (collective #", seq,
                                     "): the communicator was aborted: ", reason_));
    HostCollective h;
    h.kind = kind_name(c.kind);
    h.dtype = c.dtype;
    h.shape = c.shape;
    h.op = c.op;
    h.root = c.root;
    h.input = c.input;
    h.output = c.output;
    h.input_count = c.input ? c.count : 0;
    const auto w = std::size_t(world_);
    h.output_count = !c.output                        ? 0
                     : c.kind == Kind::all_gather     ? c.count * w
                     : c.kind == Kind::reduce_scatter ? c.count / w
                                                      : c.count;
    fn_(h);
  }

private:
  int world_;
  std::function<void(const HostCollective &)> fn_;
  std::mutex mu_;
  std::atomic<bool> aborted_{false};
  std::string reason_;
};

} // namespace detail

HIDET_INLINE Communicator Communicator::from_host_function(
    int rank, int world_size, Device device, std::function<void(const HostCollective &)> fn,
    CommunicatorOptions options) {
  auto what = [&] {
    return str_cat("Communicator::from_host_function(rank=", rank, ", world_size=", world_size,
                   ")");
  };
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw ValueError(
        str_cat(what(), ": rank must be in [0, world_size) and world_size at least 1"));
  if (!fn) throw ValueError(str_cat(what(), ": the function is empty"));
  if (!device.is_cuda() || !cuda_emulated())
    throw ValueError(str_cat(what(),
                             ": host functions serve the emulated 'cuda' device, whose "
                             "data is in host memory; on a GPU, make an NCCL communicator from a "
                             "UniqueId"));
  check_device(device);
  auto st = std::make_shared<detail::CommunicatorState>();
  st->rank = rank;
  st->world_size = world_size;
  st->device = device;
  st->options = options;
  st->backend = std::make_unique<detail::HostFunctionBackend>(world_size, std::move(fn));
  Communicator c;
  c.state_ = std::move(st);
  return c;
}

namespace detail {
HIDET_INLINE const CommunicatorState &require_state(const std::shared_ptr<CommunicatorState> &s,
                                                    const char *what) {
  if (!s)
    throw ValueError(str_cat(what, ": the communicator is undefined (default-constructed); make "
                                   "one from a UniqueId, a rank, a world size and a device"));
  return *s;
}
} // namespace detail

HIDET_INLINE int Communicator::rank() const { return detail::require_state(state_, "rank").rank; }
HIDET_INLINE int Communicator::world_size() const {
  return detail::require_state(state_, "world_size").world_size;
}
HIDET_INLINE Device Communicator::device() const {
  return detail::require_state(state_, "device").device;
}
HIDET_INLINE bool Communicator::emulated() const {
  return detail::require_state(state_, "emulated").backend->emulated();
}
HIDET_INLINE const CommunicatorOptions &Communicator::options() const {
  return detail::require_state(state_, "options").options;
}
HIDET_INLINE std::uint64_t Communicator::collectives_issued() const {
  return detail::require_state(state_, "collectives_issued").seq.load();
}
HIDET_INLINE std::string Communicator::str() const {
  if (!state_) return "Communicator(undefined)";
  return str_cat("Communicator(rank=", state_->rank, ", world_size=", state_->world_size,
                 ", device=", state_->device, ", ", state_->backend->describe(), ")");
}
HIDET_INLINE std::ostream &operator<<(std::ostream &os, const Communicator &c) {
  return os << c.str();
}

HIDET_INLINE void Communicator::abort(const std::string &reason) const {
  detail::require_state(state_, "abort").backend->abort(reason);
}
HIDET_INLINE bool Communicator::aborted() const {
  return detail::require_state(state_, "aborted").backend->aborted();
}

namespace detail {

/// Checks one tensor argument of a collective; `role` names it ("input").
HIDET_INLINE void check_tensor(const CommunicatorState &s, const Call &c, const Tensor &t,
                               const char *role) {
  auto what = [&] { return str_cat(kind_name(c.kind), " on rank ", s.rank, ": the ", role); };
  if (!t.defined()) throw ValueError(str_cat(what(), " is undefined"));
  if (t.is_symbolic())
    throw ValueError(str_cat(what(),
                             " is symbolic (it holds no data); communicators move data: "
                             "trace hidet::ops::",
                             kind_name(c.kind), " instead"));
  if (t.device() != s.device)
    throw ValueError(str_cat(what(), " ", t.signature(), " is on ", t.device_str(),
                             ", but the communicator's device is ", s.device,
                             "; move it there with .to(\"", s.device.str(), "\")"));
}

/// Checks that the reduction `op` applies to `dtype`.
HIDET_INLINE void check_reducible(const CommunicatorState &s, const Call &c) {
  DataType dt = c.dtype;
  bool ok = dt.is_float() || dt == dtypes::i8 || dt == dtypes::u8 || dt == dtypes::i32 ||
            dt == dtypes::u32 || dt == dtypes::i64 || dt == dtypes::u64;
  if (!ok)
    throw ValueError(str_cat(kind_name(c.kind), " on rank ", s.rank, ": ", dt.name(),
                             " tensors cannot be reduced (NCCL reduces 8-, 32- and 64-bit integers "
                             "and floating-point types); cast to int32 or float32 first"));
}

/// Issues `c` as this rank's next collective.
HIDET_INLINE void issue(CommunicatorState &s, const Call &c) {
  if (auto *hook = runtime::detail::command_hook()) hook->collective(kind_name(c.kind));
  bool p2p = c.kind == Kind::send || c.kind == Kind::recv;
  std::uint64_t seq = p2p ? 0 : s.seq++;
  s.backend->run(c, seq, s.options.check || CheckGuard::active());
}

HIDET_INLINE void check_rank(const CommunicatorState &s, const Call &c, int r, const char *role) {
  if (r < 0 || r >= s.world_size)
    throw ValueError(str_cat(kind_name(c.kind), " on rank ", s.rank, ": ", role, " ", r,
                             " is not a rank of this communicator (world_size ", s.world_size,
                             ")"));
  if ((c.kind == Kind::send || c.kind == Kind::recv) && r == s.rank)
    throw ValueError(str_cat(kind_name(c.kind), " on rank ", s.rank,
                             ": the peer is this rank itself; copy the tensor instead"));
}

} // namespace detail

HIDET_INLINE void Communicator::all_reduce(const Tensor &input, const Tensor &output,
                                           ReduceOp op) const {
  auto &s = const_cast<detail::CommunicatorState &>(detail::require_state(state_, "all_reduce"));
  detail::Call c{detail::Kind::all_reduce, input.dtype(), {}, op};
  detail::check_tensor(s, c, input, "input");
  detail::check_tensor(s, c, output, "output");
  if (output.dtype() != input.dtype() || output.numel() != input.numel())
    throw ValueError(str_cat("all_reduce on rank ", s.rank, ": the output ", output.signature(),
                             " must have the input's dtype and element count (input ",
                             input.signature(), ")"));
  detail::check_reducible(s, c);
  c.shape = input.shape();
  c.input = input.data_ptr();
  c.output = output.data_ptr();
  c.count = std::size_t(input.numel());
  detail::issue(s, c);
}

HIDET_INLINE void Communicator::all_gather(const Tensor &input, const Tensor &output) const {
  auto &s = const_cast<detail::CommunicatorState &>(detail::require_state(state_, "all_gather"));
  detail::Call c{detail::Kind::all_gather, input.dtype(), {}};
  detail::check_tensor(s, c, input, "input");
  detail::check_tensor(s, c, output, "output");
  if (output.dtype() != input.dtype() || output.numel() != input.numel() * s.world_size)
    throw ValueError(str_cat("all_gather on rank ", s.rank, ": the output ", output.signature(),
                             " must have the input's dtype and world_size (", s.world_size,
                             ") times its elements (input ", input.signature(), ")"));
  c.shape = input.shape();
  c.input = input.data_ptr();
  c.output = output.data_ptr();
  c.count = std::size_t(input.numel());
  detail::issue(s, c);
}

HIDET_INLINE void Communicator::reduce_scatter(const Tensor &input, const Tensor &output,
                                               ReduceOp op) const {
  auto &s =
      const_cast<detail::CommunicatorState &>(detail::require_state(state_, "reduce_scatter"));
  detail::Call c{detail::Kind::reduce_scatter, input.dtype(), {}, op};
  detail::check_tensor(s, c, input, "input");
  detail::check_tensor(s, c, output, "output");
  if (output.dtype() != input.dtype() || output.numel() * s.world_size != input.numel())
    throw ValueError(str_cat("reduce_scatter on rank ", s.rank, ": the input ", input.signature(),
                             " must have the output's dtype and world_size (", s.world_size,
                             ") times its elements (output ", output.signature(), ")"));
  detail::check_reducible(s, c);
  c.shape = input.shape();
  c.input = input.data_ptr();
  c.output = output.data_ptr();
  c.count = std::size_t(input.numel());
  detail::issue(s, c);
}

HIDET_INLINE void Communicator::broadcast(const Tensor &input, const Tensor &output,
                                          int root) const {
  auto &s = const_cast<detail::CommunicatorState &>(detail::require_state(state_, "broadcast"));
  detail::Call c{detail::Kind::broadcast, output.dtype(), {}};
  detail::check_rank(s, c, root, "the root");
  detail::check_tensor(s, c, output, "output");
  if (s.rank == root || input.defined()) {
    detail::check_tensor(s, c, input, "input");
    if (output.dtype() != input.dtype() || output.numel() != input.numel())
      throw ValueError(str_cat("broadcast on rank ", s.rank, ": the output ", output.signature(),
                               " must have the input's dtype and element count (input ",
                               input.signature(), ")"));
    c.input = input.data_ptr();
  }
  c.root = root;
  c.shape = output.shape();
  c.output = output.data_ptr();
  c.count = std::size_t(output.numel());
  detail::issue(s, c);
}

HIDET_INLINE void Communicator::send(const Tensor &input, int peer) const {
  auto &s = const_cast<detail::CommunicatorState &>(detail::require_state(state_, "send"));
  detail::Call c{detail::Kind::send, input.dtype(), {}};
  detail::check_rank(s, c, peer, "the peer");
  detail::check_tensor(s, c, input, "input");
  c.root = peer;
  c.shape = input.shape();
  c.input = input.data_ptr();
  c.count = std::size_t(input.numel());
  detail::issue(s, c);
}

HIDET_INLINE void Communicator::recv(const Tensor &output, int peer) const {
  auto &s = const_cast<detail::CommunicatorState &>(detail::require_state(state_, "recv"));
  detail::Call c{detail::Kind::recv, output.dtype(), {}};
  detail::check_rank(s, c, peer, "the peer");
  detail::check_tensor(s, c, output, "output");
  c.root = peer;
  c.shape = output.shape();
  c.output = output.data_ptr();
  c.count = std::size_t(output.numel());
  detail::issue(s, c);
}

HIDET_INLINE void run_emulated(int world_size, const std::function<void(Communicator &)> &fn,
                               CommunicatorOptions options) {
  if (world_size < 1 || world_size > 64)
    throw ValueError(str_cat("run_emulated(", world_size, "): the emulator runs 1 to 64 ranks"));
  if (!cuda_emulated())
    throw ValueError(str_cat("run_emulated(", world_size,
                             "): the 'cuda' device is a GPU in this "
                             "process, and hidet runs one GPU per process: launch one process per "
                             "GPU (torchrun), or emulate (HIDET_EMULATE=1, "
                             "hidet::set_cuda_emulation(true))"));
  if (emulated_device_count() < world_size) set_emulated_device_count(world_size);
  UniqueId id = get_unique_id();
  std::mutex mu;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world_size));
  std::vector<int> order; // the ranks that failed, first failure first
  std::vector<std::thread> threads;
  for (int r = 0; r < world_size; ++r)
    threads.emplace_back([&, r] {
      Communicator comm;
      try {
        comm = Communicator(id, r, world_size, Device::cuda(r), options);
        fn(comm);
      } catch (...) {
        std::string msg = "an exception";
        try {
          throw;
        } catch (const std::exception &e) {
          msg = e.what();
        } catch (...) {
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          errors[std::size_t(r)] = std::current_exception();
          order.push_back(r);
        }
        if (comm.defined()) comm.abort(str_cat("rank ", r, " failed: ", msg));
      }
    });
  for (auto &t : threads)
    t.join();
  if (!order.empty()) std::rethrow_exception(errors[std::size_t(order[0])]);
}

} // namespace hidet::distributed

#include "hidet/runtime/impl/distributed_emulated.ipp"
#include "hidet/runtime/impl/distributed_nccl.ipp"
