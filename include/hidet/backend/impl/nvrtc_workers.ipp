// Definitions for hidet/backend/nvrtc_workers.hpp (nvrtc_run_here is in nvrtc.ipp, beside the
// NVRTC entry points).
#pragma once

#include "hidet/backend/nvrtc_workers.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hidet/util/bytes.hpp"
#include "hidet/util/env.hpp"

extern char **environ;

#include "hidet/util/cold_begin.hpp"

namespace hidet::backend {

namespace detail {

// The wire format, both ways: a 4-byte tag, a u64 length, then util::ByteWriter fields.
// Request: "HNR1", u64 count of options, file name, source, each option.
// Answer:  "HNA1", i32 result, f64 milliseconds, log, cubin, ptx.

/// Writes all of `data`; false when the peer is gone (no SIGPIPE: MSG_NOSIGNAL on a socket).
HIDET_INLINE bool worker_send(int fd, const void *data, std::size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno == ENOTSOCK)
      w = ::write(fd, p, n);
    if (w <= 0)
      return false;
    p += w;
    n -= std::size_t(w);
  }
  return true;
}

/// Reads exactly `n` bytes; false at end of input or on an error.
HIDET_INLINE bool worker_recv(int fd, void *data, std::size_t n) {
  char *p = static_cast<char *>(data);
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    p += r;
    n -= std::size_t(r);
  }
  return true;
}

/// Sends a message: its tag, its length, its bytes (util::ByteWriter's fields).
HIDET_INLINE bool worker_send_message(int fd, const char tag[4], const std::string &bytes) {
  std::uint64_t n = bytes.size();
  return worker_send(fd, tag, 4) && worker_send(fd, &n, sizeof n) && worker_send(fd, bytes.data(), n);
}

/// Receives a message with the given tag (at most 4 GiB); false at end of input or on a mismatch.
HIDET_INLINE bool worker_recv_message(int fd, const char tag[4], std::string &bytes) {
  char t[4];
  std::uint64_t n = 0;
  if (!worker_recv(fd, t, 4) || std::memcmp(t, tag, 4) != 0 || !worker_recv(fd, &n, sizeof n) ||
      n > (std::uint64_t(1) << 32))
    return false;
  bytes.resize(n);
  return worker_recv(fd, bytes.data(), n);
}

/// This code's own file (libhidet.so, the Python extension, or the program in header-only use).
HIDET_INLINE std::filesystem::path worker_host_file() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&worker_host_file), &info) == 0 || !info.dli_fname)
    return {};
  std::error_code ec;
  auto p = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path(info.dli_fname) : p;
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;
};

/// The workers of this process (never destroyed: at exit the sockets close and each worker ends
/// at the end of its input).
class WorkerPool {
public:
  static WorkerPool &get() {
    static WorkerPool *pool = new WorkerPool();
    return *pool;
  }

  std::string exe() const { return exe_; }
  int limit() const { return limit_; }

  /// Either the compile runs here (`here` set) or on the returned worker.
  std::optional<Worker> acquire(bool &here) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!local_busy_) {
        local_busy_ = true;
        here = true;
        return std::nullopt;
      }
      if (!idle_.empty()) {
        Worker w = idle_.back();
        idle_.pop_back();
        here = false;
        return w;
      }
      if (!broken_ && int(live_) < limit_) {
        ++live_;
        lock.unlock();
        std::optional<Worker> w = spawn();
        lock.lock();
        if (w) {
          ++spawned_;
          pids_.push_back(w->pid);
          here = false;
          return w;
        }
        --live_;
        broken_ = true; // no more spawns: every compile waits for this process's NVRTC
        continue;
      }
      cv_.wait(lock);
    }
  }

  void release_here() {
    std::lock_guard<std::mutex> lock(mu_);
    local_busy_ = false;
    cv_.notify_one();
  }

  void release(const Worker &w) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(w);
    ++compiles_;
    cv_.notify_one();
  }

  /// A worker that failed: killed, reaped and forgotten; three failures stop the spawning.
  void discard(const Worker &w) {
    ::close(w.fd);
    ::kill(w.pid, SIGKILL);
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    --live_;
    ++fallbacks_;
    pids_.erase(std::remove(pids_.begin(), pids_.end(), long(w.pid)), pids_.end());
    if (++failures_ >= 3)
      broken_ = true;
    cv_.notify_all();
  }

  NvrtcWorkerStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    NvrtcWorkerStats s;
    s.spawned = spawned_;
    s.running = live_;
    s.compiles = compiles_;
    s.fallbacks = fallbacks_;
    s.pids = pids_;
    return s;
  }

private:
  WorkerPool() {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (auto e = util::env_string("HIDET_NVRTC_WORKER"); e && !e->empty()) {
      if (fs::is_regular_file(*e, ec))
        exe_ = *e;
    } else {
      std::vector<fs::path> places;
      if (fs::path host = worker_host_file(); !host.empty())
        places.push_back(host.parent_path() / "hidet-nvrtc-worker");
#ifdef HIDET_NVRTC_WORKER_INSTALLED
      places.push_back(HIDET_NVRTC_WORKER_INSTALLED);
#endif
      for (const fs::path &p : places)
        if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) {
          exe_ = p.string();
          break;
        }
    }
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    limit_ = int(util::env_int("HIDET_NVRTC_WORKERS", std::clamp(cores - 1, 1, 15)));
    limit_ = std::clamp(limit_, 0, 256);
    if (exe_.empty())
      limit_ = 0;
  }

  std::optional<Worker> spawn() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      return std::nullopt;
    if (sv[1] == 3) { // dup2 onto itself would keep close-on-exec: move it out of the way first
      int moved = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
      ::close(sv[1]);
      if (moved < 0) {
        ::close(sv[0]);
        return std::nullopt;
      }
      sv[1] = moved;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    // The worker talks on fd 3 (dup2 clears close-on-exec there); its stdin and stdout are
    // /dev/null, its stderr this process's.
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    std::string arg0 = exe_, arg1 = "3";
    char *argv[] = {arg0.data(), arg1.data(), nullptr};
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, exe_.c_str(), &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(sv[1]);
    if (rc != 0) {
      ::close(sv[0]);
      return std::nullopt;
    }
    return Worker{pid, sv[0]};
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Worker> idle_;
  std::vector<long> pids_;
  std::string exe_;
  int limit_ = 0;
  std::size_t live_ = 0, spawned_ = 0, compiles_ = 0, fallbacks_ = 0, failures_ = 0;
  bool local_busy_ = false, broken_ = false;
};

/// One compile on worker `w`; false when it did not answer or answered garbage (the caller
/// discards it).
HIDET_INLINE bool run_on_worker(const Worker &w, const std::string &source, const std::string &file_name,
                                const std::vector<std::string> &options, NvrtcRun &out) {
  util::ByteWriter req;
  req.pod(std::uint64_t(options.size()));
  req.str(file_name);
  req.str(source);
  for (const auto &o : options)
    req.str(o);
  std::string answer;
  if (!worker_send_message(w.fd, "HNR1", req.out) || !worker_recv_message(w.fd, "HNA1", answer))
    return false;
  try {
    util::ByteReader r(answer, "hidet-nvrtc-worker's answer");
    out.result = r.pod<std::int32_t>();
    out.ms = r.pod<double>();
    out.log = r.str();
    std::string_view cubin = r.view();
    out.cubin.assign(cubin.begin(), cubin.end());
    out.ptx = r.str();
    return r.done();
  } catch (const ValueError &) {
    return false;
  }
}

} // namespace detail

HIDET_INLINE NvrtcRun nvrtc_run(const std::string &source, const std::string &file_name,
                                const std::vector<std::string> &options) {
  auto &pool = detail::WorkerPool::get();
  if (pool.limit() == 0)
    return nvrtc_run_here(source, file_name, options);
  bool here = false;
  std::optional<detail::Worker> w = pool.acquire(here);
  if (here) {
    struct Release {
      detail::WorkerPool &p;
      ~Release() { p.release_here(); }
    } release{pool};
    return nvrtc_run_here(source, file_name, options);
  }
  NvrtcRun out;
  if (detail::run_on_worker(*w, source, file_name, options, out) && out.result != -1) {
    pool.release(*w);
    return out;
  }
  // No answer (the worker died), or NVRTC did not load there: here instead, where a failure to
  // load NVRTC is reported as usual.
  pool.discard(*w);
  return nvrtc_run_here(source, file_name, options);
}

HIDET_INLINE std::string nvrtc_worker_path() { return detail::WorkerPool::get().exe(); }

HIDET_INLINE int nvrtc_worker_limit() { return detail::WorkerPool::get().limit(); }

HIDET_INLINE NvrtcWorkerStats nvrtc_worker_stats() { return detail::WorkerPool::get().stats(); }

HIDET_INLINE int nvrtc_worker_main(int fd) {
  ::signal(SIGPIPE, SIG_DFL); // a parent gone mid-answer ends the worker
  for (;;) {
    std::string request;
    if (!detail::worker_recv_message(fd, "HNR1", request))
      return 0;
    std::string file_name, source;
    std::vector<std::string> options;
    try {
      util::ByteReader req(request, "hidet-nvrtc-worker's request");
      std::uint64_t count = req.count(sizeof(std::uint64_t));
      file_name = req.str();
      source = req.str();
      for (std::uint64_t i = 0; i < count; ++i)
        options.push_back(req.str());
    } catch (const ValueError &) {
      return 2;
    }
    NvrtcRun r;
    try {
      r = nvrtc_run_here(source, file_name, options);
    } catch (const std::exception &e) {
      r = NvrtcRun{};
      r.result = -1;
      r.log = e.what();
    }
    util::ByteWriter ans;
    ans.pod(std::int32_t(r.result));
    ans.pod(r.ms);
    ans.str(r.log);
    ans.str(std::string_view(r.cubin.data(), r.cubin.size()));
    ans.str(r.ptx);
    if (!detail::worker_send_message(fd, "HNA1", ans.out))
      return 0;
  }
}

} // namespace hidet::backend

#include "hidet/util/cold_end.hpp"
