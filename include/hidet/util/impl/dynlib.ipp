// Definitions for hidet/util/dynlib.hpp.
#pragma once
#include "hidet/util/dynlib.hpp"

namespace hidet::util {

HIDET_INLINE DynamicLibrary DynamicLibrary::open_first(const std::vector<std::string> &paths,
                                                       std::string *tried) {
  DynamicLibrary lib;
  for (auto &p : paths) {
    if (p.empty())
      continue;
    void *h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      lib.handle_ = h;
      lib.path_ = p;
      return lib;
    }
    if (tried) {
      const char *err = ::dlerror();
      *tried += str_cat("  ", p, ": ", err ? err : "unknown dlopen error", "\n");
    }
  }
  return lib;
}

} // namespace hidet::util
