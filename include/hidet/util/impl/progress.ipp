// Definitions for hidet/util/progress.hpp.
#pragma once

#include "hidet/util/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace hidet::util {

HIDET_INLINE Progress::Progress(std::string title, std::size_t total, std::string unit)
    : title_(std::move(title)), unit_(std::move(unit)), total_(total), tty_(::isatty(2)),
      start_(std::chrono::steady_clock::now()) {
  if (!tty_) std::fprintf(stderr, "hidet: %s: %zu %s\n", title_.c_str(), total_, unit_.c_str());
}

HIDET_INLINE void Progress::update(const char *phase, std::size_t done) {
  if (!tty_) return;
  double el = elapsed();
  double rem = done ? el / double(done) * double(total_ - done) : 0;
  int width = 24, fill = total_ ? int(width * done / total_) : width;
  std::fprintf(stderr, "\rhidet: %s [%s%s] %s %zu/%zu, %.1f s elapsed, ~%.1f s left   ", title_.c_str(),
               std::string(std::size_t(fill), '#').c_str(), std::string(std::size_t(width - fill), '.').c_str(), phase,
               done, total_, el, rem);
  std::fflush(stderr);
}

HIDET_INLINE void Progress::phase_done(const char *phase, std::size_t ok, const std::string &detail) {
  if (tty_) {
    std::fprintf(stderr, "\n");
    if (!detail.empty())
      std::fprintf(stderr, "hidet: %s: %s\n", title_.c_str(), detail.c_str());
  } else {
    std::fprintf(stderr, "hidet: %s: %s %zu of %zu %s in %.1f s%s%s\n", title_.c_str(), phase, ok, total_,
                 unit_.c_str(), elapsed(), detail.empty() ? "" : "; ", detail.c_str());
  }
}

HIDET_INLINE double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

} // namespace hidet::util
