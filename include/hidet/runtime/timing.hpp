// Timing device work: CUDA events around batches of calls after a warm-up, the median batch.
// Used by the tuner and the benchmarks. On the CPU emulator the events fall back to the host
// clock (see Event in stream.hpp).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "hidet/runtime/stream.hpp"

namespace hidet {

/// Milliseconds per call of `fn` on the current stream: 3 warm-up calls, then `batches` batches
/// of about `batch_ms` each (at least 1 and at most 200 calls), timed with CUDA events; the
/// median batch divided by its calls.
inline double median_ms(const std::function<void()> &fn, int batches = 15, double batch_ms = 2.0) {
  for (int i = 0; i < 3; ++i) fn();
  synchronize();
  Event s, e;
  s.record();
  fn();
  e.record();
  double one = std::max(1e-3, double(e.elapsed_ms_since(s)));
  int per_batch = std::clamp(int(batch_ms / one), 1, 200);
  std::vector<double> t;
  for (int r = 0; r < std::max(1, batches); ++r) {
    s.record();
    for (int i = 0; i < per_batch; ++i) fn();
    e.record();
    t.push_back(double(e.elapsed_ms_since(s)) / per_batch);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace hidet
