// Definitions for hidet/ops/tuning.hpp.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <condition_variable>
#include <string>
#include <thread>
#include <vector>

#include "hidet/ops/tuning.hpp"

#include "hidet/backend/compile_cache.hpp"
#include "hidet/error.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/runtime/stream.hpp"
#include "hidet/runtime/tensor.hpp"
#include "hidet/runtime/timing.hpp"
#include "hidet/util/env.hpp"
#include "hidet/util/hash.hpp"
#include "hidet/util/progress.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet {

namespace ops::tuning::detail {
inline void start_budget();
} // namespace ops::tuning::detail

namespace option {
namespace detail {
inline int &search_space_setting() {
  static int v = -1; // -1: not set by the program, read HIDET_SEARCH_SPACE
  return v;
}
} // namespace detail
namespace detail {
/// The tuning budget in seconds; NaN: not set by the program (read HIDET_TUNING_BUDGET).
inline double &tuning_budget_setting() {
  static double v = std::numeric_limits<double>::quiet_NaN();
  return v;
}
} // namespace detail
HIDET_INLINE void tuning_budget(double seconds) {
  if (!(seconds >= 0)) throw ValueError(str_cat("tuning_budget(", seconds, "): use a number of seconds >= 0 (infinity: no limit)"));
  ops::tuning::detail::start_budget();
  detail::tuning_budget_setting() = seconds;
}
HIDET_INLINE double tuning_budget() {
  double v = detail::tuning_budget_setting();
  if (!std::isnan(v)) return v;
  static const double env = [] {
    const char *e = std::getenv("HIDET_TUNING_BUDGET");
    if (!e || !*e) return std::numeric_limits<double>::infinity();
    char *end = nullptr;
    double d = std::strtod(e, &end);
    if (end == e || *end || !(d >= 0))
      throw ValueError(str_cat("HIDET_TUNING_BUDGET=", e, ": use a number of seconds >= 0"));
    return d;
  }();
  return env;
}
HIDET_INLINE void search_space(int space) {
  if (space < 0 || space > 2) throw ValueError(str_cat("search_space(", space, "): use 0, 1 or 2"));
  detail::search_space_setting() = space;
}
HIDET_INLINE int search_space() {
  if (detail::search_space_setting() >= 0) return detail::search_space_setting();
  auto v = util::env_int("HIDET_SEARCH_SPACE", 0);
  if (v < 0 || v > 2) throw ValueError(str_cat("HIDET_SEARCH_SPACE=", v, ": use 0, 1 or 2"));
  return int(v);
}
namespace detail {
HIDET_INLINE KernelOptions &kernel_options_setting() {
  thread_local KernelOptions o;
  return o;
}
} // namespace detail
HIDET_INLINE std::string KernelOptions::str() const {
  std::string s;
  if (!tensor_cores) s += "tensor_cores=false";
  if (parallel_k != 0) s += str_cat(s.empty() ? "" : ", ", "parallel_k=", parallel_k);
  if (f16_accumulation) s += str_cat(s.empty() ? "" : ", ", "reduce_precision=f16");
  return s;
}
HIDET_INLINE const KernelOptions &kernel_options() { return detail::kernel_options_setting(); }
HIDET_INLINE KernelOptionsScope::KernelOptionsScope(const KernelOptions &o) : saved_(kernel_options()) {
  if (o.parallel_k < 0) throw ValueError(str_cat("parallel_k=", o.parallel_k, ": use 0 (heuristics), 1 (never split) or k > 1"));
  detail::kernel_options_setting() = o;
}
HIDET_INLINE KernelOptionsScope::~KernelOptionsScope() { detail::kernel_options_setting() = saved_; }
} // namespace option

namespace ops::tuning {

namespace detail {
struct State {
  std::mutex mu;
  Timer timer;
  Stats stats;
  std::vector<std::pair<std::string, std::string>> memory; ///< key -> label, this process
  /// Keys whose candidates a prebuild compiled: timed even when the budget is spent (their
  /// compiles, the cost the budget bounds, are paid).
  std::set<std::string> prebuilt_keys;
  bool budget_told = false; ///< the budget's end was logged in this window
};
inline State &state() {
  static State s;
  return s;
}
/// Starts a new budget window: the time spent so far no longer counts.
inline void start_budget() {
  auto &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.stats.budget_spent = 0;
  st.budget_told = false;
}

/// The tuner's timer: cold_l2_ms on a GPU (HIDET_TUNING_COLD_L2=0: back-to-back batches, the
/// operands warm in the L2), median_ms's batches on the emulator.
inline double event_timer(const Launch &launch) {
  static const bool cold = util::env_bool("HIDET_TUNING_COLD_L2", true);
  if (cold && !runtime::cuda_emulated())
    if (auto ms = cold_l2_ms(launch)) return *ms;
  return median_ms(launch, 7, 1.0);
}

/// The file holding the choice for `key` (under the compile cache's directory).
inline std::filesystem::path record_path(const std::string &key) {
  return backend::cache_root_dir() / "tuning" / (util::hash128(key).hex() + ".txt");
}
/// The stored label for `key`, when the record exists and names this key.
inline std::optional<std::string> read_record(const std::string &key) {
  if (util::env_bool("HIDET_DISABLE_CACHE", false)) return std::nullopt;
  std::ifstream f(record_path(key));
  std::string stored_key, label;
  if (!f || !std::getline(f, stored_key) || !std::getline(f, label) || stored_key != key) return std::nullopt;
  return label;
}
inline void write_record(const std::string &key, const std::string &label) {
  if (util::env_bool("HIDET_DISABLE_CACHE", false)) return;
  auto path = record_path(key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  auto tmp = path;
  tmp += str_cat(".tmp", ::getpid(), "_", std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream f(tmp);
    if (!f) return;
    f << key << "\n" << label << "\n";
    if (!f) return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

/// The start (steady_seconds) of this thread's prebuild phase; NaN: not prebuilding.
inline double &prebuild_started() {
  thread_local double v = std::numeric_limits<double>::quiet_NaN();
  return v;
}
/// Candidate builds in flight across every prebuilding thread: at most the number of cores (each
/// graph thread prebuilds one node's candidates on threads of its own), served in the order of
/// their tickets. A key reserves one ticket per candidate at once, so the keys finish one after
/// another (a key whose builds are done can be timed; half-built keys when the budget runs out
/// would be wasted).
class BuildSlots {
public:
  /// The first of `n` consecutive tickets.
  std::uint64_t reserve(std::size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    std::uint64_t first = next_;
    next_ += n;
    return first;
  }
  /// Waits until `ticket` is among the first `capacity` tickets not yet released.
  void acquire(std::uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ticket < released_ + capacity_; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++released_;
    }
    cv_.notify_all();
  }

private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t next_ = 0, released_ = 0;
  const std::uint64_t capacity_ = std::max(1u, std::thread::hardware_concurrency());
};
inline BuildSlots &build_slots() {
  static BuildSlots slots;
  return slots;
}
/// Runs `work` (which takes candidates off a shared counter) on one thread per core, at most
/// `count`, this thread among them, and joins them.
inline void on_workers(std::size_t count, const std::function<void()> &work) {
  const unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), unsigned(count)));
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto &t : pool) t.join();
}

} // namespace detail

HIDET_INLINE double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
HIDET_INLINE PrebuildScope::PrebuildScope(double started_seconds) : saved_(detail::prebuild_started()) {
  detail::prebuild_started() = started_seconds;
}
HIDET_INLINE PrebuildScope::~PrebuildScope() { detail::prebuild_started() = saved_; }
HIDET_INLINE void end_prebuild(double started_seconds) {
  std::lock_guard<std::mutex> lock(detail::state().mu);
  detail::state().stats.budget_spent += steady_seconds() - started_seconds;
}
HIDET_INLINE bool times_candidates() {
  std::lock_guard<std::mutex> lock(detail::state().mu);
  return bool(detail::state().timer) || !runtime::cuda_emulated();
}

HIDET_INLINE void set_timer(Timer t) {
  std::lock_guard<std::mutex> lock(detail::state().mu);
  detail::state().timer = std::move(t);
}

HIDET_INLINE std::optional<double> cold_l2_ms(const Launch &launch) {
  if (runtime::cuda_emulated()) return std::nullopt;
  const Device dev = current_stream().device(); // where the candidates run
  static std::mutex mu;
  // Per device, made once and never destroyed: device memory outlives the allocator's teardown.
  static auto *scratch_of = new std::map<int, Tensor>;
  Tensor scratch;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = scratch_of->find(dev.index);
    if (it == scratch_of->end()) {
      const std::size_t total = runtime::device_info(dev.index).total_memory;
      const std::int64_t bytes = std::int64_t(std::min<std::size_t>(std::size_t(256) << 20, total / 16)) / 4 * 4;
      it = scratch_of->emplace(dev.index, bytes > 0 ? empty({bytes / 4}, dtypes::i32, dev) : Tensor()).first;
    }
    scratch = it->second;
  }
  if (!scratch.defined()) return std::nullopt;
  const std::int32_t zero = 0;
  launch(); // warm-up: module loads, first-touch allocations
  constexpr int kRuns = 9;
  std::vector<Event> starts(kRuns), ends(kRuns);
  for (int r = 0; r < kRuns; ++r) {
    if (!runtime::detail::fill_without_kernel(scratch, &zero)) return std::nullopt;
    starts[std::size_t(r)].record();
    launch();
    ends[std::size_t(r)].record();
  }
  std::vector<double> t;
  for (int r = 0; r < kRuns; ++r) t.push_back(double(ends[std::size_t(r)].elapsed_ms_since(starts[std::size_t(r)])));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

HIDET_INLINE Stats stats() {
  std::lock_guard<std::mutex> lock(detail::state().mu);
  return detail::state().stats;
}
HIDET_INLINE void clear_memory() {
  std::lock_guard<std::mutex> lock(detail::state().mu);
  detail::state().memory.clear();
  detail::state().prebuilt_keys.clear();
}

HIDET_INLINE std::string make_key(const std::string &op, const std::string &signature) {
  const auto &dev = runtime::device_info(0);
  return str_cat("tuning v1|", op, "|", signature, "|", dev.emulated ? std::string("emulator") : dev.arch(), "|",
                 dev.name);
}

HIDET_INLINE std::optional<std::string> stored_label(const std::string &key) { return detail::read_record(key); }

HIDET_INLINE std::size_t pick(const std::string &what, const std::string &key, const std::vector<Candidate> &cands) {
  if (cands.empty()) throw ValueError(str_cat("tuning ", what, ": no candidates"));
  if (cands.size() == 1) return 0;
  auto find = [&](const std::string &label) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < cands.size(); ++i)
      if (cands[i].label == label) return i;
    return std::nullopt;
  };
  auto &st = detail::state();
  {
    std::lock_guard<std::mutex> lock(st.mu);
    for (auto &[k, label] : st.memory)
      if (k == key)
        if (auto i = find(label)) {
          ++st.stats.reused;
          return *i;
        }
  }
  if (auto label = detail::read_record(key))
    if (auto i = find(*label)) {
      std::lock_guard<std::mutex> lock(st.mu);
      ++st.stats.reused;
      st.memory.emplace_back(key, *label);
      return *i;
    }

  Timer timer;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    timer = st.timer;
  }
  if (!timer && runtime::cuda_emulated()) {
    // The emulator's speed says nothing about a GPU's: keep the default, record nothing.
    static std::once_flag once;
    std::call_once(once, [] {
      std::fprintf(stderr, "hidet: tuning needs a GPU; on the CPU emulator every template uses its default "
                           "configuration (search space 0)\n");
    });
    return 0;
  }

  // The budget (option::tuning_budget): once spent, keys without a record keep the default. A
  // prebuild's phase counts its elapsed time; keys it prebuilt are timed all the same.
  const double prebuild_started = detail::prebuild_started();
  const bool prebuilding = !std::isnan(prebuild_started);
  auto spent = [&] { // under st.mu
    return st.stats.budget_spent + (prebuilding ? steady_seconds() - prebuild_started : 0.0);
  };
  auto keep_default = [&] { // under st.mu
    ++st.stats.over_budget;
    if (!st.budget_told)
      std::fprintf(stderr, "hidet: tuning budget of %g s spent (%.1f s); %s and the operators after it keep their "
                           "default configuration (untuned, not recorded)\n",
                   option::tuning_budget(), spent(), what.c_str());
    st.budget_told = true;
    return std::size_t(0);
  };
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (spent() >= option::tuning_budget() && !st.prebuilt_keys.count(key)) return keep_default();
  }

  if (prebuilding) {
    // Prebuilding (graph::build's phase): compile every candidate into the caches, then stop the
    // operator. Failures are left to the tuning run, which logs them. A key whose turn comes after
    // the budget ran out keeps its default, built now with the rest of the graph.
    std::atomic<std::size_t> next{0}, built{0};
    std::once_flag decided;
    bool abandoned = false; // the budget ran out before this key's turn: nothing built
    const std::uint64_t first_ticket = detail::build_slots().reserve(cands.size());
    const bool gpu = !runtime::cuda_emulated();
    auto work = [&] {
      if (gpu) ensure_context(0);
      for (std::size_t i; (i = next++) < cands.size();) {
        detail::build_slots().acquire(first_ticket + i);
        std::call_once(decided, [&] {
          std::lock_guard<std::mutex> lock(st.mu);
          abandoned = spent() >= option::tuning_budget();
        });
        if (!abandoned) {
          try {
            (void)cands[i].build();
            ++built;
          } catch (...) {
          }
        }
        detail::build_slots().release();
      }
    };
    detail::on_workers(cands.size(), work);
    std::lock_guard<std::mutex> lock(st.mu);
    if (abandoned) return keep_default();
    st.stats.prebuilt += built;
    st.prebuilt_keys.insert(key);
    throw Prebuilt{};
  }

  // Build on a thread pool: NVRTC compiles run in parallel; module loads need the context.
  util::Progress progress("tuning " + what, cands.size(), "candidates");
  std::vector<Launch> launches(cands.size());
  std::vector<std::string> errors(cands.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex progress_mu;
  bool gpu = !runtime::cuda_emulated();
  auto work = [&] {
    if (gpu) ensure_context(0);
    for (std::size_t i; (i = next++) < cands.size();) {
      try {
        launches[i] = cands[i].build();
      } catch (const std::exception &e) {
        errors[i] = e.what();
      }
      std::lock_guard<std::mutex> lock(progress_mu);
      progress.update("built", ++done);
    }
  };
  detail::on_workers(cands.size(), work);
  std::size_t built = 0;
  for (auto &l : launches) built += l ? 1 : 0;
  progress.phase_done("built", built);

  if (!timer) timer = detail::event_timer;
  std::size_t best = cands.size(), timed = 0, failed = 0;
  double best_ms = 0;
  std::vector<double> first(cands.size(), -1); // the first round's time of each candidate
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (launches[i]) {
      try {
        double ms = timer(launches[i]);
        first[i] = ms;
        if (best == cands.size() || ms < best_ms) best = i, best_ms = ms;
      } catch (const std::exception &e) {
        errors[i] = e.what();
      }
    }
    if (!errors[i].empty()) {
      ++failed;
      std::fprintf(stderr, "%shidet: tuning %s: candidate %s skipped: %s\n", ::isatty(2) ? "\n" : "", what.c_str(),
                   cands[i].label.c_str(), errors[i].c_str());
    }
    progress.update("timed", ++timed);
  }
  progress.phase_done("timed", timed - failed);
  // A second look at the finalists: the fastest few and the default (candidate 0) are timed
  // again, and each keeps its faster time; the default stays unless another candidate beats it
  // by 2%. Short kernels (microseconds) are timed with noise; this keeps a noisy winner from
  // replacing a default that is as fast.
  if (best != cands.size()) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < cands.size(); ++i)
      if (first[i] >= 0) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return first[a] < first[b]; });
    if (order.size() > 4) order.resize(4);
    if (first[0] >= 0 && std::find(order.begin(), order.end(), std::size_t(0)) == order.end()) order.push_back(0);
    for (std::size_t i : order) {
      try {
        first[i] = std::min(first[i], timer(launches[i]));
      } catch (const std::exception &) {
      }
    }
    best = order[0], best_ms = first[best];
    for (std::size_t i : order)
      if (first[i] < best_ms) best = i, best_ms = first[i];
    if (best != 0 && first[0] >= 0 && first[0] <= best_ms * 1.02) best = 0, best_ms = first[0];
  }
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.stats.built += built;
    st.stats.failed += failed;
    st.stats.last_seconds = progress.elapsed();
    st.stats.budget_spent += progress.elapsed();
    if (best != cands.size()) {
      ++st.stats.tuned;
      st.memory.emplace_back(key, cands[best].label);
      st.prebuilt_keys.erase(key);
    }
  }
  if (best == cands.size())
    throw ValueError(str_cat("tuning ", what, ": every candidate failed; the first error: ", errors[0]));
  // The default's time beside the pick says what tuning gained (and which heuristic to revisit).
  std::string against = best != 0 && first[0] >= 0 ? str_cat("; default ", cands[0].label, " ", first[0], " ms") : "";
  std::fprintf(stderr, "hidet: tuning %s: picked %s (%.4f ms%s) in %.1f s\n", what.c_str(), cands[best].label.c_str(),
               best_ms, against.c_str(), progress.elapsed());
  detail::write_record(key, cands[best].label);
  return best;
}

} // namespace ops::tuning
} // namespace hidet

#include "hidet/util/cold_end.hpp"
