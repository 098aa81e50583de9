// Timing device work: CUDA events around batches of calls after a warm-up, the median batch.
// Used by the tuner and the benchmarks. On the CPU emulator the events fall back to the host
// clock (see Event in stream.hpp).
#pragma once

#include <functional>

#include "hidet/runtime/stream.hpp"

namespace hidet {

/// Milliseconds per call of `fn` on the current stream: 3 warm-up calls, then `batches` batches
/// of about `batch_ms` each (at least 1 and at most 200 calls), timed with CUDA events; the
/// median batch divided by its calls.
double median_ms(const std::function<void()> &fn, int batches = 15, double batch_ms = 2.0);

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/timing.ipp"
#endif
