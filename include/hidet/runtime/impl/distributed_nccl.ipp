// NCCL's communicators (runtime/distributed.hpp): each collective is one NCCL call on the calling
// thread's stream for the communicator's device. A checked collective (CommunicatorOptions::check,
// CheckGuard) first all-gathers every rank's call, encoded as a record of integers, waits for it
// up to the timeout by polling the stream (so that a rank that never arrives gives an error, not a
// hang), and compares the records on every rank. NCCL connects the ranks on the first collective
// of a kind (NCCL_RUNTIME_CONNECT, on by default), inside the host call, which then blocks until
// every rank arrives: a checked communicator makes the records' all-gather once when it is made
// (every rank is there then), so that the check itself waits on the GPU, where polling sees it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "hidet/runtime/allocator.hpp"
#include "hidet/runtime/cuda_driver.hpp"
#include "hidet/runtime/impl/distributed_backend.ipp"
#include "hidet/runtime/nccl.hpp"

namespace hidet::distributed::detail {

/// NCCL's type for `dt`; -1 for a dtype NCCL does not know (moved as bytes when nothing reduces
/// it).
HIDET_INLINE int nccl_dtype(DataType dt) {
  switch (dt.code) {
  case DTypeCode::I8:
    return nccl::Int8;
  case DTypeCode::U8:
    return nccl::Uint8;
  case DTypeCode::I32:
    return nccl::Int32;
  case DTypeCode::U32:
    return nccl::Uint32;
  case DTypeCode::I64:
    return nccl::Int64;
  case DTypeCode::U64:
    return nccl::Uint64;
  case DTypeCode::F16:
    return nccl::Float16;
  case DTypeCode::BF16:
    return nccl::Bfloat16;
  case DTypeCode::F32:
    return nccl::Float32;
  case DTypeCode::F64:
    return nccl::Float64;
  case DTypeCode::F8E4M3:
    return nccl::Float8e4m3;
  case DTypeCode::F8E5M2:
    return nccl::Float8e5m2;
  default:
    return -1;
  }
}

HIDET_INLINE nccl::RedOp nccl_op(ReduceOp op) {
  switch (op) {
  case ReduceOp::sum:
    return nccl::Sum;
  case ReduceOp::prod:
    return nccl::Prod;
  case ReduceOp::max:
    return nccl::Max;
  case ReduceOp::min:
    return nccl::Min;
  case ReduceOp::avg:
    return nccl::Avg;
  }
  return nccl::Sum;
}

/// A call as the record a checked collective exchanges: [magic, seq, kind, dtype, op, root, ndim,
/// extents...] (shapes of more than record_dims extents compare their element count instead).
inline constexpr int record_words = 24, record_dims = 16;
inline constexpr std::int64_t record_magic = 0x68696465744e4343; // "hidetNCC"

HIDET_INLINE std::array<std::int64_t, record_words> encode(const Call &c, std::uint64_t seq) {
  std::array<std::int64_t, record_words> r{};
  r[0] = record_magic;
  r[1] = std::int64_t(seq);
  r[2] = std::int64_t(c.kind);
  r[3] = std::int64_t(c.dtype.code);
  r[4] = c.reduces() ? std::int64_t(c.op) : 0;
  r[5] = c.kind == Kind::broadcast ? c.root : 0;
  if (c.shape.size() <= std::size_t(record_dims)) {
    r[6] = std::int64_t(c.shape.size());
    for (std::size_t i = 0; i < c.shape.size(); ++i)
      r[7 + i] = c.shape[i];
  } else {
    r[6] = -1;
    r[7] = std::int64_t(c.count);
  }
  return r;
}

HIDET_INLINE std::string describe_record(const std::int64_t *r) {
  if (r[0] != record_magic) return "(no record: a rank that is not running hidet's check)";
  Call c;
  c.kind = Kind(r[2]);
  c.dtype = DataType(DTypeCode(r[3]));
  c.op = ReduceOp(r[4]);
  c.root = int(r[5]);
  if (r[6] >= 0)
    c.shape.assign(r + 7, r + 7 + r[6]);
  else
    c.shape = {r[7]};
  return str_cat(c.describe(), " as collective #", r[1]);
}

/// Device memory for the checks' records, from the device's caching allocator, for one scope.
struct Scratch {
  CachingAllocator &alloc;
  void *p;
  Scratch(Device device, std::size_t bytes)
      : alloc(allocator_for(device, false)), p(alloc.allocate(bytes)) {}
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch() { alloc.deallocate(p); }
};

class NcclBackend : public Backend {
public:
  NcclBackend(const UniqueId &id, int rank, int world_size, Device device, CommunicatorOptions o)
      : lib_(nccl::library()), rank_(rank), size_(world_size), device_(device), options_(o) {
    ensure_context(device.index);
    nccl::Result r = init_within_timeout(id);
    if (r != nccl::Success)
      throw DistributedError(
          str_cat("Communicator(rank=", rank, ", world_size=", world_size, ", device=", device,
                  "): ncclCommInitRankConfig failed: ", nccl::error_text(r), " (NCCL ",
                  lib_.version_str(), ", ", lib_.path, "; NCCL_DEBUG=INFO says more)"));
    if (o.check) {
      try {
        connect_checks();
      } catch (...) {
        lib_.ncclCommAbort(comm_);
        comm_ = nullptr;
        throw;
      }
    }
  }
  ~NcclBackend() override {
    if (comm_ && !aborted_ && cuda::driver_table().usable) lib_.ncclCommDestroy(comm_);
  }

  bool emulated() const override { return false; }
  std::string describe() const override {
    return str_cat("NCCL ", lib_.version_str(), " ", lib_.path);
  }
  bool aborted() const override { return aborted_; }
  void abort(const std::string &reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;
    reason_ = reason;
    aborted_ = true;
    lib_.ncclCommAbort(comm_);
  }

  void run(const Call &c, std::uint64_t seq, bool check) override {
    if (aborted_)
      throw DistributedError(
          str_cat(c.describe(), " on rank ", rank_, ": the communicator was aborted: ", reason_));
    ensure_context(device_.index);
    CUstream stream = stream_for(device_);
    if (check && !c.reduces() && c.kind != Kind::all_gather && c.kind != Kind::broadcast)
      check = false; // send and recv: only the two ranks meet
    if (check && !capturing(stream)) check_calls(c, seq, stream);
    auto s = reinterpret_cast<nccl::Stream>(stream);
    int dt = nccl_dtype(c.dtype);
    std::size_t count = c.count;
    if (dt < 0) { // moved as bytes (the reductions refused these dtypes already)
      dt = nccl::Uint8;
      count *= c.dtype.nbytes();
    }
    if (c.reduces() && (dt == nccl::Float8e4m3 || dt == nccl::Float8e5m2) && lib_.version < 22400)
      throw ValueError(str_cat(c.describe(), " on rank ", rank_, ": NCCL ", lib_.version_str(),
                               " cannot reduce 8-bit floats (NCCL 2.24 or later can)"));
    auto type = nccl::DataType(dt);
    nccl::Result r = nccl::Success;
    switch (c.kind) {
    case Kind::all_reduce:
      r = lib_.ncclAllReduce(c.input, c.output, count, type, nccl_op(c.op), comm_, s);
      break;
    case Kind::all_gather:
      r = lib_.ncclAllGather(c.input, c.output, count, type, comm_, s);
      break;
    case Kind::reduce_scatter:
      r = lib_.ncclReduceScatter(c.input, c.output, count / std::size_t(size_), type, nccl_op(c.op),
                                 comm_, s);
      break;
    case Kind::broadcast:
      r = lib_.ncclBroadcast(c.input ? c.input : c.output, c.output, count, type, c.root, comm_, s);
      break;
    case Kind::send:
      r = lib_.ncclSend(c.input, count, type, c.root, comm_, s);
      break;
    case Kind::recv:
      r = lib_.ncclRecv(c.output, count, type, c.root, comm_, s);
      break;
    }
    if (r != nccl::Success)
      throw DistributedError(str_cat(c.describe(), " (collective #", seq, ") on rank ", rank_, ": ",
                                     nccl::error_text(r, comm_)));
  }

private:
  /// ncclCommInitRankConfig on a thread of its own, waited for up to the timeout: NCCL's init
  /// blocks until every rank of the world joins, and a rank that never does (a world size larger
  /// than the ranks started, a rank that failed before joining) must give this one an error, not
  /// a hang. On a timeout the thread is left to NCCL (detached; its communicator, should the rank
  /// come after all, is never used) and a DistributedError says what is missing.
  nccl::Result init_within_timeout(const UniqueId &id) {
    struct State {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      nccl::Result result = nccl::Success;
      nccl::Comm comm = nullptr;
    };
    auto st = std::make_shared<State>();
    nccl::UniqueId raw;
    std::memcpy(raw.internal, id.bytes.data(), sizeof(raw.internal));
    const nccl::Library *lib = &lib_;
    std::thread worker([st, lib, raw, world = size_, rank = rank_, dev = device_.index]() mutable {
      nccl::Comm comm = nullptr;
      nccl::Result r = nccl::InternalError;
      try {
        ensure_context(dev);
        nccl::Config config;
        config.blocking = 1;
        r = lib->ncclCommInitRankConfig(&comm, world, raw, rank, &config);
      } catch (...) {
      }
      std::lock_guard<std::mutex> lock(st->mu);
      st->done = true, st->result = r, st->comm = comm;
      st->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(st->mu);
    if (!st->cv.wait_for(lock, options_.timeout, [&] { return st->done; })) {
      lock.unlock();
      worker.detach();
      throw DistributedError(str_cat(
          "Communicator(rank=", rank_, ", world_size=", size_, ", device=", device_,
          "): NCCL's initialization did not complete within ", seconds_str(options_.timeout),
          ": not every rank joined (every rank 0 to ", size_ - 1,
          " must make this communicator with the same id and world size; NCCL does not say which "
          "are missing)"));
    }
    lock.unlock();
    worker.join();
    comm_ = st->comm;
    return st->result;
  }

  static bool capturing(CUstream s) {
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    return cuda::driver().cuStreamIsCapturing(s, &st) == CUDA_SUCCESS &&
           st != CU_STREAM_CAPTURE_STATUS_NONE;
  }

  /// The checks' all-gather once, waited for: NCCL connects the ranks for it now.
  void connect_checks() {
    const auto &d = cuda::driver();
    CUstream stream = stream_for(device_);
    const std::size_t bytes = sizeof(std::int64_t) * std::size_t(record_words) * std::size_t(size_ + 1);
    Scratch scratch(device_, bytes);
    void *buf = scratch.p;
    cuda::check(d.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(buf), 0, bytes, stream),
                "a checked communicator: clearing its first record");
    nccl::Result r = lib_.ncclAllGather(
        buf, static_cast<char *>(buf) + sizeof(std::int64_t) * record_words, record_words,
        nccl::Int64, comm_, reinterpret_cast<nccl::Stream>(stream));
    if (r != nccl::Success)
      throw DistributedError(str_cat("Communicator(rank=", rank_, ", world_size=", size_,
                                     "): connecting the ranks for the checks: ",
                                     nccl::error_text(r, comm_)));
    cuda::check(d.cuStreamSynchronize(stream), "a checked communicator: connecting the ranks");
  }

  /// Gathers every rank's record of its call and compares them (see the top of the file).
  void check_calls(const Call &c, std::uint64_t seq, CUstream stream) {
    const auto &d = cuda::driver();
    auto mine = encode(c, seq);
    const std::size_t rec_bytes = sizeof(mine), all_bytes = rec_bytes * std::size_t(size_);
    Scratch scratch(device_, rec_bytes + all_bytes);
    void *buf = scratch.p;
    auto dev = reinterpret_cast<CUdeviceptr>(buf);
    cuda::check(d.cuMemcpyHtoDAsync_v2(dev, mine.data(), rec_bytes, stream),
                "checking a collective: copying its record");
    nccl::Result r = lib_.ncclAllGather(buf, static_cast<char *>(buf) + rec_bytes, record_words,
                                        nccl::Int64, comm_, reinterpret_cast<nccl::Stream>(stream));
    if (r != nccl::Success)
      throw DistributedError(str_cat(c.describe(), " (collective #", seq, ") on rank ", rank_,
                                     ": checking the ranks' calls: ", nccl::error_text(r, comm_)));
    // Poll instead of synchronizing: a rank that never arrives must not hang this one.
    auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    for (;;) {
      CUresult q = d.cuStreamQuery(stream);
      if (q == CUDA_SUCCESS) break;
      if (q != CUDA_ERROR_NOT_READY) cuda::check(q, "checking a collective: waiting for the ranks");
      nccl::Result async = nccl::Success;
      lib_.ncclCommGetAsyncError(comm_, &async);
      if (async != nccl::Success && async != nccl::InProgress) {
        std::string msg = str_cat(c.describe(), " (collective #", seq, ") on rank ", rank_, ": ",
                                  nccl::error_text(async, comm_));
        abort(msg);
        throw DistributedError(msg);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        std::string msg = str_cat(
            c.describe(), " (collective #", seq, ") timed out on rank ", rank_, " after ",
            seconds_str(options_.timeout),
            ": not every rank arrived (NCCL does not say which; the emulator does); every rank "
            "must issue the same collectives in the same order; the communicator is aborted");
        abort(msg);
        throw DistributedError(msg);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    std::vector<std::int64_t> all(std::size_t(record_words) * std::size_t(size_));
    cuda::check(d.cuMemcpyDtoH_v2(all.data(), dev + rec_bytes, all_bytes),
                "checking a collective: reading the ranks' records");
    bool same = true;
    for (int k = 0; k < size_; ++k)
      same = same && std::memcmp(&all[std::size_t(k) * record_words], mine.data(), rec_bytes) == 0;
    if (same) return;
    std::string msg = str_cat("collective #", seq, ": the ranks' calls differ:\n");
    for (int k = 0; k < size_; ++k)
      msg +=
          str_cat("  rank ", k, ": ", describe_record(&all[std::size_t(k) * record_words]), "\n");
    msg += "every rank must issue the same collectives in the same order, on tensors of the same "
           "shape and dtype";
    abort(msg);
    throw DistributedError(msg);
  }

  const nccl::Library &lib_;
  nccl::Comm comm_ = nullptr;
  int rank_, size_;
  Device device_;
  CommunicatorOptions options_;
  std::mutex mu_;
  std::atomic<bool> aborted_{false};
  std::string reason_;
};

HIDET_INLINE std::unique_ptr<Backend> make_nccl_backend(const UniqueId &id, int rank,
                                                        int world_size, Device device,
                                                        const CommunicatorOptions &options) {
  return std::make_unique<NcclBackend>(id, rank, world_size, device, options);
}

} // namespace hidet::distributed::detail
