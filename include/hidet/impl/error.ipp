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
// Out of line in header-only mode too: one copy serves every str_cat of the translation unit.
[[gnu::noinline]] HIDET_INLINE std::string str_cat_args(std::initializer_list<StrCatArg> args) {
  std::ostringstream os;
  for (const StrCatArg &a : args) {
    if (a.manip) os << a.manip;
    else a.write(os, a.value);
  }
  return os.str();
}

HIDET_INLINE void internal_fail(const char *cond, const std::string &msg,
                                std::source_location loc) {
  throw InternalError(str_cat("hidet internal error at ", loc.file_name(), ":", loc.line(),
                              ": check `", cond, "` failed", msg.empty() ? "" : ": ", msg));
}
} // namespace detail

} // namespace hidet
