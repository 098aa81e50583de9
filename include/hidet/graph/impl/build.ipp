// Definitions for hidet/graph/build.hpp.
#pragma once

#include "hidet/graph/build.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "hidet/backend/nvrtc.hpp"
#include "hidet/ops/cache.hpp"
#include "hidet/ops/tuning.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/util/progress.hpp"

#include <optional>

#include "hidet/util/cold_begin.hpp"

namespace hidet::graph {

HIDET_INLINE BuildStats build(const FlowGraph &graph, unsigned threads, const SymbolValues &values) {
  BuildStats stats;
  auto start = std::chrono::steady_clock::now();
  struct Job {
    std::size_t node;
    std::shared_ptr<const Operator> op;
    std::shared_ptr<const ops::TaskOperator> task_op; ///< null: a template node, built by a scratch run
    std::string full_key;
    std::vector<std::vector<std::int64_t>> shapes; ///< a template node's input shapes (at `values` when symbolic)
  };
  std::vector<Job> jobs;
  std::set<std::string> keys;
  // Template nodes are built by a run on zeros: at search space 0 on a GPU (the emulator gains
  // nothing); at spaces 1 and 2 wherever candidates are timed, as a prebuild (ops/tuning.hpp):
  // each tuned node compiles its candidates and stops, all nodes side by side, and its first run
  // times them alone (from the compile caches).
  const bool prebuild = option::search_space() > 0 && ops::tuning::times_candidates();
  const bool scratch_runs = (!runtime::cuda_emulated() && option::search_space() == 0) || prebuild;
  const double prebuild_started = ops::tuning::steady_seconds();
  for (std::size_t k = 0; k < graph.nodes().size(); ++k) {
    const auto &node = graph.nodes()[k];
    auto op = std::dynamic_pointer_cast<const ops::TaskOperator>(node);
    if (!op) {
      if (!node->scratch_build() || !scratch_runs) continue;
      std::vector<std::vector<std::int64_t>> shapes;
      std::string sig;
      try {
        for (const auto &t : node->inputs()) {
          if (is_constant_shape(t.sym_shape())) shapes.push_back(constant_shape(t.sym_shape()));
          else if (!values.empty()) shapes.push_back(evaluate_shape(t.sym_shape(), values));
          else throw ValueError("symbolic");
          sig += str_cat(t.dtype(), ops::shape_str(shapes.back()), ";");
        }
      } catch (const ValueError &) {
        continue; // symbolic extents without values: built on its first run
      }
      ++stats.nodes;
      std::string key = str_cat(node->name(), "{", node->attrs(), "}|", sig);
      if (keys.insert(key).second) jobs.push_back({k, node, nullptr, key, std::move(shapes)});
      continue;
    }
    ++stats.nodes;
    // A shape-generic task is cached under its symbolic signature (ops::detail::run_symbolic_task).
    std::string full_key = str_cat(op->key(), "|", ops::task_symbols(op->task()).empty()
                                                        ? ops::detail::signature_of(op->inputs())
                                                        : ops::detail::task_signature(op->task()));
    if (ops::detail::find_compiled(full_key) || !keys.insert(full_key).second) continue;
    jobs.push_back({k, op, op, full_key, {}});
  }
  if (!jobs.empty()) {
    // A bar or log lines for more than one kernel (profiles build node by node: no line each).
    std::optional<util::Progress> progress;
    if (jobs.size() > 1)
      progress.emplace(prebuild ? "building graph kernels and compiling the candidates to tune" : "building graph kernels",
                       jobs.size(), "kernels");
    std::atomic<std::size_t> next{0}, done{0};
    std::mutex mu;
    std::vector<std::string> errors(jobs.size());
    std::vector<bool> cuda_error(jobs.size(), false);
    std::vector<double> job_seconds(jobs.size(), 0.0);
    bool gpu = !runtime::cuda_emulated();
    const double nvrtc_before = backend::nvrtc_seconds_total();
    auto work = [&] {
      if (gpu) ensure_context(0);
      for (std::size_t i; (i = next++) < jobs.size();) {
        const auto job_start = std::chrono::steady_clock::now();
        try {
          if (jobs[i].task_op) {
            ops::detail::add_compiled(jobs[i].full_key, ops::schedule(jobs[i].task_op->task()));
          } else { // a template node: one run on zeros builds (or finds) its kernels
            std::vector<Tensor> scratch;
            const auto &ins = jobs[i].op->inputs();
            for (std::size_t j = 0; j < ins.size(); ++j)
              scratch.push_back(ins[j].is_symbolic() ? zeros(jobs[i].shapes[j], ins[j].dtype(), ins[j].device()) : ins[j]);
            std::optional<SymbolBinding> binding;
            if (!values.empty()) binding.emplace(values);
            std::optional<ops::tuning::PrebuildScope> pre;
            if (prebuild) pre.emplace(prebuild_started);
            try {
              jobs[i].op->run(scratch);
            } catch (const ops::tuning::Prebuilt &) {
              // Its candidates are compiled; its first run tunes them.
            }
            current_stream().synchronize();
          }
        } catch (const CudaError &e) {
          errors[i] = e.what(), cuda_error[i] = true;
        } catch (const std::exception &e) {
          errors[i] = e.what();
        }
        job_seconds[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - job_start).count();
        std::lock_guard<std::mutex> lock(mu);
        ++done;
        if (progress) progress->update("built", done);
      }
    };
    unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
    n = std::min<unsigned>(n, unsigned(jobs.size()));
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < n; ++w) pool.emplace_back(work);
    work();
    for (auto &t : pool) t.join();
    if (prebuild) ops::tuning::end_prebuild(prebuild_started);
    std::size_t ok = 0;
    for (auto &e : errors) ok += e.empty();
    stats.nvrtc_seconds = backend::nvrtc_seconds_total() - nvrtc_before;
    const auto slowest = std::max_element(job_seconds.begin(), job_seconds.end()) - job_seconds.begin();
    stats.slowest_seconds = job_seconds[slowest];
    stats.slowest = str_cat(jobs[slowest].op->name(), " (node ", jobs[slowest].node, ")");
    // Where a build's time went (when NVRTC ran): NVRTC's share of the threads' time, and the
    // longest node (the build cannot end before it).
    if (progress) {
      char detail[256] = "";
      if (stats.nvrtc_seconds > 0)
        std::snprintf(detail, sizeof detail, "%.1f s of NVRTC over %u threads; the slowest node %.2f s: %s",
                      stats.nvrtc_seconds, n, stats.slowest_seconds, stats.slowest.c_str());
      progress->phase_done("built", ok, detail);
    }
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (errors[i].empty()) continue;
      std::string msg = str_cat("graph node ", jobs[i].node, " (", jobs[i].op->name(), "): building its kernels failed: ",
                                errors[i]);
      if (cuda_error[i]) throw CudaError(msg);
      throw ValueError(msg);
    }
    stats.compiled = ok;
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

} // namespace hidet::graph

#include "hidet/util/cold_end.hpp"
