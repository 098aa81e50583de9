// The emulator's communicators (runtime/distributed.hpp): the ranks are threads of this process,
// and a collective is a rendezvous in host memory. The ranks of one UniqueId share a World: a
// mutex, a condition variable, the rounds of the collectives in progress (by sequence number: the
// n-th collective of every rank meets in round n) and a mailbox per (sender, receiver) pair for
// send and recv. The last rank to arrive in a round compares the ranks' calls and computes every
// rank's result while the others wait (their buffers stay untouched); each rank then copies its
// result out, so in-place calls are safe. Sends are buffered (a copy in the mailbox): a send never
// waits; a recv waits for its message.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "hidet/runtime/impl/distributed_backend.ipp"
#include "hidet/runtime/tensor_print.hpp"

namespace hidet::distributed::detail {

/// The ranks of one emulated communicator.
struct EmulatedWorld {
  struct Round {
    std::vector<std::optional<Call>> calls; ///< per rank, once it arrived
    int arrived = 0, departed = 0;
    bool computed = false;
    std::vector<char> result;   ///< the reduction, the gathered data, or the root's data
    std::size_t part_bytes = 0; ///< reduce_scatter: each rank's part of `result`
  };
  struct Message {
    Call call; ///< the send (its buffers are not used)
    std::vector<char> bytes;
  };

  std::mutex mu;
  std::condition_variable cv;
  int size = 0;
  std::vector<int> joined_as; ///< per rank: the world size it was given (0: not joined)
  std::vector<Device> devices;
  int joined = 0;
  bool complete = false;
  bool aborted = false;
  std::string reason; ///< why it was aborted
  std::map<std::uint64_t, Round> rounds;
  std::map<std::pair<int, int>, std::deque<Message>> mail; ///< by (sender, receiver)

  void abort_locked(const std::string &why) {
    if (!aborted) {
      aborted = true;
      reason = why;
    }
    cv.notify_all();
  }
};

/// The worlds being joined, by id (a world is complete when every rank joined; an id used again
/// afterwards makes a new world).
struct EmulatedWorlds {
  std::mutex mu;
  std::map<UniqueId, std::weak_ptr<EmulatedWorld>, bool (*)(const UniqueId &, const UniqueId &)>
      by_id{[](const UniqueId &a, const UniqueId &b) { return a.bytes < b.bytes; }};
};
HIDET_INLINE EmulatedWorlds &emulated_worlds() {
  static auto *w = new EmulatedWorlds();
  return *w;
}

/// Integers as their 64-bit two's complement (sums wrap as NCCL's do).
HIDET_INLINE std::uint64_t load_bits(const void *p, DataType dt, std::size_t i) {
  const char *a = static_cast<const char *>(p) + i * dt.nbytes();
  std::uint64_t v = 0;
  std::memcpy(&v, a, dt.nbytes());
  if (dt.is_signed() && dt.nbytes() < 8 && (v >> (8 * dt.nbytes() - 1)) & 1)
    v |= ~std::uint64_t(0) << (8 * dt.nbytes());
  return v;
}

/// dst = op over the ranks of srcs (n elements of dt): floats in double precision, rounded once;
/// integers in 64 bits, truncated to the dtype.
HIDET_INLINE void reduce_into(char *dst, const std::vector<const void *> &srcs, DataType dt,
                              std::size_t n, ReduceOp op) {
  const auto world = std::int64_t(srcs.size());
  const std::size_t nb = dt.nbytes();
  if (dt.is_float()) {
    for (std::size_t i = 0; i < n; ++i) {
      double acc = runtime::detail::element_as_double(srcs[0], dt, std::int64_t(i));
      for (std::size_t k = 1; k < srcs.size(); ++k) {
        double v = runtime::detail::element_as_double(srcs[k], dt, std::int64_t(i));
        switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg:
          acc += v;
          break;
        case ReduceOp::prod:
          acc *= v;
          break;
        case ReduceOp::max:
          acc = v > acc || v != v ? v : acc;
          break;
        case ReduceOp::min:
          acc = v < acc || v != v ? v : acc;
          break;
        }
      }
      if (op == ReduceOp::avg) acc /= double(world);
      runtime::detail::store_as(dst + i * nb, dt, acc);
    }
    return;
  }
  const bool is_signed = dt.is_signed();
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t acc = load_bits(srcs[0], dt, i);
    for (std::size_t k = 1; k < srcs.size(); ++k) {
      std::uint64_t v = load_bits(srcs[k], dt, i);
      switch (op) {
      case ReduceOp::sum:
      case ReduceOp::avg:
        acc += v;
        break;
      case ReduceOp::prod:
        acc *= v;
        break;
      case ReduceOp::max:
        acc = is_signed ? (std::int64_t(v) > std::int64_t(acc) ? v : acc) : std::max(acc, v);
        break;
      case ReduceOp::min:
        acc = is_signed ? (std::int64_t(v) < std::int64_t(acc) ? v : acc) : std::min(acc, v);
        break;
      }
    }
    if (op == ReduceOp::avg)
      acc = is_signed ? std::uint64_t(std::int64_t(acc) / world) : acc / std::uint64_t(world);
    std::memcpy(dst + i * nb, &acc, nb); // little endian: the low bytes
  }
}

/// One rank's handle on its EmulatedWorld.
class EmulatedBackend : public Backend {
public:
  EmulatedBackend(std::shared_ptr<EmulatedWorld> w, int rank, CommunicatorOptions options)
      : w_(std::move(w)), rank_(rank), options_(options) {}

  bool emulated() const override { return true; }
  std::string describe() const override { return "emulator"; }

  void abort(const std::string &reason) override {
    std::lock_guard<std::mutex> lock(w_->mu);
    w_->abort_locked(reason);
  }
  bool aborted() const override {
    std::lock_guard<std::mutex> lock(w_->mu);
    return w_->aborted;
  }

  void run(const Call &c, std::uint64_t seq, bool) override {
    if (c.kind == Kind::send) return send(c);
    if (c.kind == Kind::recv) return recv(c);
    EmulatedWorld &w = *w_;
    std::unique_lock<std::mutex> lock(w.mu);
    auto where = [&] { return str_cat(c.describe(), " (collective #", seq, ") on rank ", rank_); };
    if (w.aborted)
      throw DistributedError(str_cat(where(), ": the communicator was aborted: ", w.reason));
    auto &r = w.rounds[seq];
    if (r.calls.empty()) r.calls.resize(std::size_t(w.size));
    r.calls[std::size_t(rank_)] = c;
    if (++r.arrived == w.size) {
      std::string mismatch = compare(r, seq);
      if (!mismatch.empty()) {
        w.abort_locked(mismatch);
        throw DistributedError(mismatch);
      }
      compute(r);
      r.computed = true;
      w.cv.notify_all();
    } else {
      auto deadline = std::chrono::steady_clock::now() + options_.timeout;
      bool woken = w.cv.wait_until(lock, deadline, [&] { return r.computed || w.aborted; });
      if (!woken) {
        std::vector<int> missing, present;
        for (int k = 0; k < w.size; ++k)
          (r.calls[std::size_t(k)] ? present : missing).push_back(k);
        std::string msg =
            str_cat(c.describe(), " (collective #", seq, ") timed out on rank ", rank_, " after ",
                    seconds_str(options_.timeout), ": rank(s) ", ranks_str(missing),
                    " did not arrive (arrived: ", ranks_str(present),
                    "); every rank must issue the same collectives in the same order "
                    "(CommunicatorOptions::timeout, $HIDET_DISTRIBUTED_TIMEOUT set the wait)");
        w.abort_locked(msg);
        throw DistributedError(msg);
      }
      if (!r.computed)
        throw DistributedError(str_cat(where(), ": the communicator was aborted: ", w.reason));
    }
    const std::size_t nbytes = c.count * c.dtype.nbytes();
    const std::size_t out_bytes = c.kind == Kind::all_gather       ? nbytes * std::size_t(w.size)
                                  : c.kind == Kind::reduce_scatter ? r.part_bytes
                                                                   : nbytes;
    const std::size_t offset =
        c.kind == Kind::reduce_scatter ? r.part_bytes * std::size_t(rank_) : 0;
    if (out_bytes) std::memcpy(c.output, r.result.data() + offset, out_bytes);
    if (++r.departed == w.size) w.rounds.erase(seq);
  }

private:
  /// "" when every rank's call agrees; else the message listing them.
  static std::string compare(const EmulatedWorld::Round &r, std::uint64_t seq) {
    bool same = true;
    for (const auto &c : r.calls)
      same = same && c->agrees_with(*r.calls[0]);
    if (same) return "";
    std::string msg = str_cat("collective #", seq, ": the ranks' calls differ:\n");
    for (std::size_t k = 0; k < r.calls.size(); ++k)
      msg += str_cat("  rank ", k, ": ", r.calls[k]->describe(), "\n");
    return msg + "every rank must issue the same collectives in the same order, on tensors of the "
                 "same shape and dtype";
  }

  void compute(EmulatedWorld::Round &r) {
    const Call &c0 = *r.calls[0];
    const std::size_t nbytes = c0.count * c0.dtype.nbytes();
    std::vector<const void *> inputs;
    for (const auto &c : r.calls)
      inputs.push_back(c->input);
    switch (c0.kind) {
    case Kind::all_reduce:
    case Kind::reduce_scatter:
      r.result.resize(nbytes);
      reduce_into(r.result.data(), inputs, c0.dtype, c0.count, c0.op);
      r.part_bytes = nbytes / r.calls.size();
      break;
    case Kind::all_gather:
      r.result.resize(nbytes * r.calls.size());
      for (std::size_t k = 0; k < inputs.size(); ++k)
        if (nbytes) std::memcpy(r.result.data() + k * nbytes, inputs[k], nbytes);
      break;
    case Kind::broadcast:
      r.result.resize(nbytes);
      if (nbytes) std::memcpy(r.result.data(), inputs[std::size_t(c0.root)], nbytes);
      break;
    default:
      HIDET_ASSERT(false, "not a collective: ", kind_name(c0.kind));
    }
  }

  void send(const Call &c) {
    EmulatedWorld &w = *w_;
    std::lock_guard<std::mutex> lock(w.mu);
    if (w.aborted)
      throw DistributedError(
          str_cat(c.describe(), " on rank ", rank_, ": the communicator was aborted: ", w.reason));
    EmulatedWorld::Message m{c, {}};
    const auto *p = static_cast<const char *>(c.input);
    m.bytes.assign(p, p + c.count * c.dtype.nbytes());
    w.mail[{rank_, c.root}].push_back(std::move(m));
    w.cv.notify_all();
  }

  void recv(const Call &c) {
    EmulatedWorld &w = *w_;
    std::unique_lock<std::mutex> lock(w.mu);
    auto &queue = w.mail[{c.root, rank_}];
    auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    bool woken = w.cv.wait_until(lock, deadline, [&] { return !queue.empty() || w.aborted; });
    if (w.aborted)
      throw DistributedError(
          str_cat(c.describe(), " on rank ", rank_, ": the communicator was aborted: ", w.reason));
    if (!woken) {
      std::string msg = str_cat(c.describe(), " on rank ", rank_, " timed out after ",
                                seconds_str(options_.timeout), ": rank ", c.root,
                                " sent nothing to rank ", rank_);
      w.abort_locked(msg);
      throw DistributedError(msg);
    }
    EmulatedWorld::Message m = std::move(queue.front());
    queue.pop_front();
    if (m.call.dtype != c.dtype || m.call.shape != c.shape) {
      std::string msg =
          str_cat("rank ", rank_, " called ", c.describe(), " but rank ", c.root, " called ",
                  m.call.describe(), ": a recv takes a tensor of the shape and dtype sent");
      w.abort_locked(msg);
      throw DistributedError(msg);
    }
    if (!m.bytes.empty()) std::memcpy(c.output, m.bytes.data(), m.bytes.size());
  }

  std::shared_ptr<EmulatedWorld> w_;
  int rank_;
  CommunicatorOptions options_;
};

HIDET_INLINE std::unique_ptr<Backend> make_emulated_backend(const UniqueId &id, int rank,
                                                            int world_size, Device device,
                                                            const CommunicatorOptions &options) {
  auto what = [&] { return str_cat("Communicator(rank=", rank, ", world_size=", world_size, ")"); };
  std::shared_ptr<EmulatedWorld> w;
  { // Join the world of `id` (made by the first rank to come).
    auto &reg = emulated_worlds();
    std::lock_guard<std::mutex> reg_lock(reg.mu);
    auto &slot = reg.by_id[id];
    w = slot.lock();
    bool fresh = !w;
    if (w) {
      std::lock_guard<std::mutex> lock(w->mu);
      fresh = w->complete; // an id used again: a new communicator
    }
    if (fresh) {
      w = std::make_shared<EmulatedWorld>();
      slot = w;
    }
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->size == 0) {
      w->size = world_size;
      w->joined_as.assign(std::size_t(world_size), 0);
      w->devices.assign(std::size_t(world_size), Device::cpu());
    }
    if (w->aborted) throw DistributedError(str_cat(what(), ": ", w->reason));
    auto fail = [&](const std::string &msg) {
      w->abort_locked(msg);
      throw DistributedError(msg);
    };
    if (world_size != w->size) {
      std::vector<int> others;
      for (int k = 0; k < w->size; ++k)
        if (w->joined_as[std::size_t(k)]) others.push_back(k);
      fail(str_cat(what(), ": the communicator of this unique id has ", w->size, " ranks (rank(s) ",
                   ranks_str(others), " joined with world_size ", w->size,
                   "); every rank must give the same world size"));
    }
    if (w->joined_as[std::size_t(rank)])
      fail(str_cat(what(), ": rank ", rank, " joined twice; each rank joins once"));
    for (int k = 0; k < w->size; ++k)
      if (w->joined_as[std::size_t(k)] && w->devices[std::size_t(k)] == device)
        fail(str_cat(what(), ": ranks ", k, " and ", rank, " are both on ", device,
                     "; each rank needs a device of its own (emulate more devices with "
                     "hidet::set_emulated_device_count)"));
    w->joined_as[std::size_t(rank)] = world_size;
    w->devices[std::size_t(rank)] = device;
    if (++w->joined == w->size) {
      w->complete = true;
      w->cv.notify_all();
    }
  }
  // Wait for the other ranks (as ncclCommInitRank does), up to the timeout.
  std::unique_lock<std::mutex> lock(w->mu);
  bool woken = w->cv.wait_until(lock, std::chrono::steady_clock::now() + options.timeout,
                                [&] { return w->complete || w->aborted; });
  if (w->complete) return std::make_unique<EmulatedBackend>(w, rank, options);
  if (w->aborted) throw DistributedError(str_cat(what(), ": ", w->reason));
  (void)woken;
  std::vector<int> missing, present;
  for (int k = 0; k < w->size; ++k)
    (w->joined_as[std::size_t(k)] ? present : missing).push_back(k);
  std::string msg = str_cat(what(), ": rank(s) ", ranks_str(missing), " did not join within ",
                            seconds_str(options.timeout), " (joined: ", ranks_str(present),
                            "); every rank must make its communicator from the same unique id");
  w->abort_locked(msg);
  throw DistributedError(msg);
}

} // namespace hidet::distributed::detail
