// Definitions for hidet/error.hpp.
#pragma once
#include "hidet/error.hpp"

namespace hidet {

HIDET_INLINE std::string SourceLoc::str() const {
  if (!valid()) return "<unknown location>";
  return std::string(file) + ":" + std::to_string(line);
}

HIDET_INLINE Error::Error(const std::string &message, SourceLoc loc)
    : std::runtime_error(loc.valid() ? loc.str() + ": " + message : message), loc_(loc),
      message_(message) {}

namespace detail {
HIDET_INLINE void internal_fail(const char *cond, const std::string &msg,
                                std::source_location loc) {
  throw InternalError(str_cat("hidet internal error at ", loc.file_name(), ":", loc.line(),
                              ": check `", cond, "` failed", msg.empty() ? "" : ": ", msg));
}
} // namespace detail

} // namespace hidet
