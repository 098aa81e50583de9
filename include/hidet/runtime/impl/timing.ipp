// Definitions for hidet/runtime/timing.hpp.
#pragma once

#include "hidet/runtime/timing.hpp"

#include <algorithm>
#include <vector>

namespace hidet {

HIDET_INLINE double median_ms(const std::function<void()> &fn, int batches, double batch_ms) {
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
