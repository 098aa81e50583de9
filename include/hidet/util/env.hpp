// Environment variables as string / bool / int, with defaults.
#pragma once

#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>

namespace hidet::util {

/// The variable's value, or nullopt when unset.
inline std::optional<std::string> env_string(const char *name) {
  const char *v = std::getenv(name);
  if (!v)
    return std::nullopt;
  return std::string(v);
}

/// The variable's value, or `fallback` when unset or empty.
inline std::string env_string_or(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return (v && *v) ? std::string(v) : fallback;
}

/// True for 1/true/yes/on (any case), false for 0/false/no/off/empty; `fallback` when unset or
/// anything else.
inline bool env_bool(const char *name, bool fallback = false) {
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

/// The variable parsed as a decimal integer; `fallback` when unset or not a whole number.
inline long long env_int(const char *name, long long fallback = 0) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return (end && *end == '\0') ? x : fallback;
}

} // namespace hidet::util
