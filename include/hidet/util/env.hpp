// Environment variables as string / bool / int, with defaults.
#pragma once

#include <optional>
#include <string>

#include "hidet/config.hpp"

namespace hidet::util {

/// The variable's value, or nullopt when unset.
std::optional<std::string> env_string(const char *name);

/// The variable's value, or `fallback` when unset or empty.
std::string env_string_or(const char *name, const std::string &fallback);

/// True for 1/true/yes/on (any case), false for 0/false/no/off/empty; `fallback` when unset or
/// anything else.
bool env_bool(const char *name, bool fallback = false);

/// The variable parsed as a decimal integer; `fallback` when unset or not a whole number.
long long env_int(const char *name, long long fallback = 0);

} // namespace hidet::util

#if HIDET_HEADER_ONLY
#include "hidet/util/impl/env.ipp"
#endif
