// Per-shape tuning of operator templates over a search space.
//
// A template offers candidates (configurations) for a concrete problem: space 0 is its default
// configuration for the shape (no benchmarking at all), space 1 a small space (up to about 30
// candidates), space 2 a large one. hidet::option::search_space(n) or HIDET_SEARCH_SPACE sets the
// space. tuning::pick() then
//  1. returns the choice stored on disk for this key (operator, attributes, shapes, dtypes,
//     architecture), when there is one: a second process tunes nothing;
//  2. otherwise builds every candidate on a thread pool (each build compiles its kernels with
//     NVRTC; a candidate whose build throws is logged and skipped), times each built candidate on
//     the device with CUDA events (median of batches), times the four fastest and the default
//     once more (each keeps its better time; the default stays unless beaten by 2%: timings of
//     microsecond kernels are noisy), and stores the fastest one's label.
// On the CPU emulator (without an injected timer) it keeps the first candidate: emulated timings
// say nothing about a GPU.
// option::tuning_budget bounds the time spent tuning (a whole model's compile).
// While tuning it draws a progress bar on stderr when stderr is a terminal (built, timed,
// elapsed, remaining), plain log lines otherwise. The timer can be replaced (tests inject one).
// A graph's candidates are compiled ahead of its first run, all nodes' together (PrebuildScope,
// used by graph::build): the tuning of each node then only times what the compile caches hold.
//
//   std::vector<tuning::Candidate> cands;
//   for (auto &cfg : matmul_candidates(m, n, k, space))
//     cands.push_back({cfg.str(), [=] { auto mm = std::make_shared<Matmul>(m, n, k, cfg);
//                                         return [=] { (*mm)(a, b, c); }; }});
//   auto best = tuning::pick("matmul", key, cands);   // index into cands
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hidet/config.hpp"

namespace hidet {

namespace option {
/// Sets the search space of template tuning: 0 (default configuration, no benchmarking), 1
/// (small space) or 2 (large space). Throws ValueError for other values.
void search_space(int space);
/// The search space in force: search_space(n) if called, else $HIDET_SEARCH_SPACE, else 0.
int search_space();
/// A limit on the wall time this process spends tuning, in seconds (building and timing the
/// candidates of keys that have no record), counted from this call: once it is spent, tuning::pick
/// answers keys without a record with their default configuration (candidate 0), records nothing
/// for them (a later process with time left tunes them) and says so once on stderr. It is checked
/// before each key: the key being tuned when it runs out finishes (one key takes 1-8 s). Infinity
/// (the default, or $HIDET_TUNING_BUDGET seconds) is no limit; 0 keeps the records only. The
/// torch backend starts a budget per compiled graph (hidet.torch.dynamo_config.tuning_budget: 30 s
/// at search space 1). Throws ValueError for a negative or NaN value.
void tuning_budget(double seconds);
/// The budget in force, in seconds (infinity: none).
double tuning_budget();

/// How matmul kernels are chosen, beyond the search space (PassContext binds these to a graph's
/// matmul nodes; graph/passes.hpp). The defaults leave every choice to the templates.
struct KernelOptions {
  /// f16/bf16 matmuls on the tensor cores (the mma.sync and wgmma templates); false: the
  /// auto-scheduled kernel on the CUDA cores (f32 accumulation all the same).
  bool tensor_cores = true;
  /// Split-k of matmuls: 0 the templates' heuristics (and tuning); 1 never split; k > 1 split the
  /// reduction in k slices where a template can (the f32 FMA and Hopper wgmma templates; shapes
  /// too short for k slices of two tiles each keep the heuristic).
  int parallel_k = 0;
  /// Reduce precision f16: f16 matmuls on the tensor cores accumulate in f16 (the mma.sync
  /// template with f16 accumulators, also on Hopper in place of the wgmma kernel, which
  /// accumulates in f32). bf16 has no bf16 accumulators and keeps f32; so do f32 matmuls.
  bool f16_accumulation = false;
  bool operator==(const KernelOptions &) const = default;
  /// "" for the defaults, else "tensor_cores=false, parallel_k=4, reduce_precision=f16" (what
  /// differs).
  std::string str() const;
};
/// The options in force on this thread (the defaults unless a KernelOptionsScope is alive).
const KernelOptions &kernel_options();
/// Sets kernel_options() on this thread for its lifetime.
class KernelOptionsScope {
public:
  explicit KernelOptionsScope(const KernelOptions &o);
  ~KernelOptionsScope();
  KernelOptionsScope(const KernelOptionsScope &) = delete;
  KernelOptionsScope &operator=(const KernelOptionsScope &) = delete;

private:
  KernelOptions saved_;
};
} // namespace option

namespace ops::tuning {

/// A launch of a built candidate on its benchmark inputs.
using Launch = std::function<void()>;

/// One candidate: a label (its configuration, as printed) and a function that builds it (compiles
/// its kernels; it may run on a worker thread) and returns its launch.
struct Candidate {
  std::string label;
  std::function<Launch()> build;
};

/// Measures a launch: milliseconds per call.
using Timer = std::function<double(const Launch &)>;

/// Counters of this process's tuning (for tests and logs).
struct Stats {
  std::size_t tuned = 0;       ///< keys benchmarked
  std::size_t reused = 0;      ///< keys answered from the disk or in-process record
  std::size_t built = 0;       ///< candidates built
  std::size_t failed = 0;      ///< candidates whose build or launch threw
  double last_seconds = 0;     ///< wall time of the last tuning
  double budget_spent = 0;     ///< seconds of tuning since the budget was last set
  std::size_t over_budget = 0; ///< keys left at their default because the budget was spent
  std::size_t prebuilt = 0;    ///< candidates compiled ahead of their tuning (PrebuildScope)
};

/// Replaces the benchmark timer (null restores CUDA-event timing). For tests.
void set_timer(Timer t);
/// Milliseconds of one launch with the L2 cache emptied of its operands, the tuner's timer on a
/// GPU (HIDET_TUNING_COLD_L2=0 turns it off): before each of 9 timed launches a scratch buffer of
/// 256 MB (at most a sixteenth of the device's memory) is written with the driver's memset on the
/// current stream, CUDA events time the launch alone, and the median is returned. Back-to-back
/// launches would read weights of up to the L2's size from the L2, where a model's kernels read
/// each weight once from memory. Empty on the emulator, or when the scratch cannot be made.
std::optional<double> cold_l2_ms(const Launch &launch);
/// This process's tuning counters.
Stats stats();
/// Forgets the choices made in this process (the disk records stay).
void clear_memory();
/// The key of a tuning record: operator, its attributes and argument signature, and the target.
std::string make_key(const std::string &op, const std::string &signature);
/// The label recorded on disk for `key`, when there is one (and the cache is enabled).
std::optional<std::string> stored_label(const std::string &key);
/// The index of the fastest candidate for `key` (see the top of the file). One candidate is
/// returned without building anything. Throws ValueError when every candidate fails; under a
/// PrebuildScope, Prebuilt.
std::size_t pick(const std::string &what, const std::string &key, const std::vector<Candidate> &cands);

/// Whether pick() times candidates here: on a GPU, or with a timer set (set_timer); else it keeps
/// each key's default.
bool times_candidates();

/// Thrown by pick() under a PrebuildScope once it has compiled a key's candidates, so that the
/// operator stops before it remembers a choice or launches anything. Not a std::exception: only
/// the owner of the scope (graph::build) catches it.
struct Prebuilt {};

/// While alive on this thread, pick() prebuilds: for a key it would tune (no record, more than
/// one candidate, times_candidates(), budget left) it builds every candidate (their kernels go to
/// the in-process and disk compile caches), times and records nothing, and throws Prebuilt.
/// graph::build runs every template node of a graph this way on its thread pool before the first
/// run, so that the candidates of all nodes compile side by side (the builds of all threads share
/// one limit, the number of cores); the first run then tunes node by node, and each build is a
/// cache hit. The builds of every thread share one limit (the number of cores) and go key by key
/// in the order the keys came, so keys finish one after another. `started_seconds`: the phase's
/// start; its elapsed time counts against the tuning budget (option::tuning_budget): a key whose
/// turn comes after the budget ran out keeps its default (pick returns 0, and the operator builds
/// that one with the rest of the graph), while a key whose
/// candidates were prebuilt is timed even after (its compiles, what the budget bounds, are paid).
/// end_prebuild charges the phase to the budget.
class PrebuildScope {
public:
  explicit PrebuildScope(double started_seconds);
  ~PrebuildScope();
  PrebuildScope(const PrebuildScope &) = delete;
  PrebuildScope &operator=(const PrebuildScope &) = delete;

private:
  double saved_;
};
/// Seconds on the steady clock (the value PrebuildScope takes as the phase's start).
double steady_seconds();
/// Ends a prebuild phase begun at `started_seconds`: its wall time counts as tuning time against
/// the budget (the later per-node tuning adds its own).
void end_prebuild(double started_seconds);

} // namespace ops::tuning
} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/ops/impl/tuning.ipp"
#endif
