// NVRTC in worker processes. One process's NVRTC compiles one program at a time: on the H200
// machine (NVRTC 13.0, 16 cores), 135 kernels of DenseNet-121 took 4.2 s on 16 threads and 4.7 s
// on one (the threads' CPU time summed to one core's), and 1.2 s in 8 processes. So a compile
// that starts while another runs in this process goes to a worker process
// (`hidet-nvrtc-worker`, spawned on demand and kept for the life of the process), and the
// compiles of a graph build or a tuning run (their threads) run side by side. A compile with no
// other running stays in this process: serial work never spawns a worker.
//
// The worker executable is $HIDET_NVRTC_WORKER, else found beside the file that holds this code
// (libhidet.so, the Python package's extension), else where libhidet installed it (libexecdir).
// A program that uses hidet header-only has none beside it unless it puts one there.
// HIDET_NVRTC_WORKERS=<n> sets how many workers at most (default: the cores less one, at most
// 15), 0 keeps every compile in this process. A worker that dies or answers garbage is replaced,
// and its compile runs here; the results are the same either way (bytes of the CUBIN included).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hidet/config.hpp"

namespace hidet::backend {

/// What one NVRTC compile gave: `result` is the nvrtcResult (0 = success; -1: NVRTC could not
/// be loaded in a worker, `log` says why).
struct NvrtcRun {
  int result = 0;
  double ms = 0; ///< NVRTC's compile time
  std::string log;
  std::vector<char> cubin;
  std::string ptx;
};

/// Compiles `source` (named `file_name` in messages) with `options` in this process.
NvrtcRun nvrtc_run_here(const std::string &source, const std::string &file_name,
                        const std::vector<std::string> &options);

/// Compiles here when no other compile runs in this process, else in an idle or new worker
/// process (at most nvrtc_worker_limit()), else waits for the first of them to be free.
NvrtcRun nvrtc_run(const std::string &source, const std::string &file_name,
                   const std::vector<std::string> &options);

/// The worker executable found (see the top of the file); empty when none.
std::string nvrtc_worker_path();

/// The most worker processes (HIDET_NVRTC_WORKERS, default the cores less one, 1 to 15; 0 when
/// no worker executable is found or workers are off).
int nvrtc_worker_limit();

/// Counters since the process started.
struct NvrtcWorkerStats {
  std::size_t spawned = 0;    ///< worker processes started
  std::size_t running = 0;    ///< of them, alive now
  std::size_t compiles = 0;   ///< compiles done by workers
  std::size_t fallbacks = 0;  ///< compiles a worker failed to answer, run here instead
  std::vector<long> pids;     ///< the live workers' process ids
};
NvrtcWorkerStats nvrtc_worker_stats();

/// The worker's main loop (`hidet-nvrtc-worker <fd>`): reads requests on `fd`, answers each on
/// `fd`, returns 0 at end of input.
int nvrtc_worker_main(int fd);

} // namespace hidet::backend

#if HIDET_HEADER_ONLY
#include "hidet/backend/impl/nvrtc_workers.ipp"
#endif
