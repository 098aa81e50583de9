// Debug log lines: choices hidet makes quietly otherwise (an operator falling back from its
// template to a portable kernel), printed to stderr when HIDET_DEBUG=1.
#pragma once

#include <cstdio>
#include <string>

#include "hidet/util/env.hpp"

namespace hidet::util {

/// Whether HIDET_DEBUG is set (read once).
inline bool debug_enabled() {
  static const bool on = env_bool("HIDET_DEBUG");
  return on;
}

/// Prints "hidet: <line>" to stderr when debug logging is on.
inline void debug_log(const std::string &line) {
  if (debug_enabled()) std::fprintf(stderr, "hidet: %s\n", line.c_str());
}

} // namespace hidet::util
