// Definitions for hidet/graph/build.hpp.
#pragma once

#include "hidet/graph/build.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "hidet/ops/cache.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/util/progress.hpp"

namespace hidet::graph {

HIDET_INLINE BuildStats build(const FlowGraph &graph, unsigned threads) {
  BuildStats stats;
  auto start = std::chrono::steady_clock::now();
  struct Job {
    std::size_t node;
    std::shared_ptr<const ops::TaskOperator> op;
    std::string full_key;
  };
  std::vector<Job> jobs;
  std::set<std::string> keys;
  for (std::size_t k = 0; k < graph.nodes().size(); ++k) {
    auto op = std::dynamic_pointer_cast<const ops::TaskOperator>(graph.nodes()[k]);
    if (!op) continue;
    ++stats.nodes;
    std::string full_key = str_cat(op->key(), "|", ops::detail::signature_of(op->inputs()));
    if (ops::detail::find_compiled(full_key) || !keys.insert(full_key).second) continue;
    jobs.push_back({k, op, full_key});
  }
  if (!jobs.empty()) {
    util::Progress progress("building graph kernels", jobs.size(), "kernels");
    std::atomic<std::size_t> next{0}, done{0};
    std::mutex mu;
    std::vector<std::string> errors(jobs.size());
    std::vector<bool> cuda_error(jobs.size(), false);
    bool gpu = !runtime::cuda_emulated();
    auto work = [&] {
      if (gpu) ensure_context(0);
      for (std::size_t i; (i = next++) < jobs.size();) {
        try {
          ops::detail::add_compiled(jobs[i].full_key, ops::schedule(jobs[i].op->task()));
        } catch (const CudaError &e) {
          errors[i] = e.what(), cuda_error[i] = true;
        } catch (const std::exception &e) {
          errors[i] = e.what();
        }
        std::lock_guard<std::mutex> lock(mu);
        progress.update("built", ++done);
      }
    };
    unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
    n = std::min<unsigned>(n, unsigned(jobs.size()));
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < n; ++w) pool.emplace_back(work);
    work();
    for (auto &t : pool) t.join();
    std::size_t ok = 0;
    for (auto &e : errors) ok += e.empty();
    progress.phase_done("built", ok);
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
