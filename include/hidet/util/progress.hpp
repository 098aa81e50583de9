// Progress of long work on stderr: a bar redrawn in place when stderr is a terminal (done/total,
// elapsed, an estimate of what is left), one log line per phase otherwise.
//
//   util::Progress p("tuning matmul", cands.size(), "candidates");
//   p.update("built", n);          // terminal: [#####.....] built 12/36, 3.1 s elapsed, ~6.2 s left
//   p.phase_done("built", ok);     // log: hidet: tuning matmul: built 36 of 36 candidates in 9.3 s
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "hidet/config.hpp"

namespace hidet::util {

/// Progress on stderr (see the top of the file). Not thread-safe: callers serialize updates.
class Progress {
public:
  /// Starts the clock; without a terminal, logs "hidet: <title>: <total> <unit>".
  Progress(std::string title, std::size_t total, std::string unit);
  /// Redraws the bar (terminal only): `done` of the total are through `phase`.
  void update(const char *phase, std::size_t done);
  /// Ends the bar (terminal), or logs "hidet: <title>: <phase> <ok> of <total> <unit> in <t> s"
  /// followed by `detail` (both: "hidet: <title>: <detail>" after the bar when not empty).
  void phase_done(const char *phase, std::size_t ok, const std::string &detail = "");
  /// Seconds since construction.
  double elapsed() const;

private:
  std::string title_, unit_;
  std::size_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace hidet::util

#if HIDET_HEADER_ONLY
#include "hidet/util/impl/progress.ipp"
#endif
