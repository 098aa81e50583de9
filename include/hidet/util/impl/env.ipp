// Definitions for hidet/util/env.hpp.
#pragma once
#include "hidet/util/env.hpp"

#include <cctype>
#include <cstdlib>

namespace hidet::util {

HIDET_INLINE std::optional<std::string> env_string(const char *name) {
  const char *v = std::getenv(name);
  if (!v)
    return std::nullopt;
  return std::string(v);
}

HIDET_INLINE std::string env_string_or(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

HIDET_INLINE bool env_bool(const char *name, bool fallback) {
  const char *v = std::getenv(name);
  if (!v)
    return fallback;
  std::string s(v);
  for (auto &c : s)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "true" || s == "yes" || s == "on")
    return true;
  if (s.empty() || s == "0" || s == "false" || s == "no" || s == "off")
    return false;
  return fallback;
}

HIDET_INLINE long long env_int(const char *name, long long fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return (end && *end == '\0') ? x : fallback;
}

} // namespace hidet::util
