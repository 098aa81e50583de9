// Errors: two channels.
//  * hidet::Error (and subclasses): the user did something wrong (bad shapes, DSL misuse, a failing
//    compile, a CUDA fault). The message names the object, the values that broke the rule, the
//    user's own file:line where known, and what to do instead.
//  * hidet::InternalError: a broken invariant inside hidet; carries hidet's file:line and the
//    condition. HIDET_ASSERT raises it, building the message only when the check fails.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "hidet/config.hpp"

namespace hidet {

/// A position in the user's C++ source, recorded by every front-end call.
struct SourceLoc {
  const char *file = nullptr;
  std::uint32_t line = 0;

  SourceLoc() = default;
  SourceLoc(const char *file_, std::uint32_t line_) : file(file_), line(line_) {}
  /* implicit */ SourceLoc(const std::source_location &loc) : file(loc.file_name()), line(loc.line()) {}

  bool valid() const { return file != nullptr && line != 0; }
  /// "file.cpp:12", or "<unknown location>".
  std::string str() const;
  bool operator==(const SourceLoc &o) const = default;
};

namespace detail {
/// One argument of str_cat: its address and the function that writes it. str_cat's work is then
/// one out-of-line function (str_cat_args) and one small writer per argument type, instead of an
/// instantiation per list of argument types (hundreds in a header-only program).
struct StrCatArg {
  const void *value = nullptr;
  void (*write)(std::ostream &, const void *) = nullptr;
  std::ios_base &(*manip)(std::ios_base &) = nullptr; ///< std::hex, std::dec, ...
};
template <class T> void str_cat_write(std::ostream &os, const void *v) {
  os << *static_cast<const T *>(v);
}
inline void str_cat_write_chars(std::ostream &os, const void *v) {
  os << static_cast<const char *>(v);
}
template <class T> StrCatArg str_cat_arg(const T &v) { return {&v, &str_cat_write<T>}; }
template <std::size_t N> StrCatArg str_cat_arg(const char (&s)[N]) {
  return {s, &str_cat_write_chars};
}
inline StrCatArg str_cat_arg(std::ios_base &(&m)(std::ios_base &)) {
  return {nullptr, nullptr, &m};
}

/// Writes the arguments in order with operator<< into a string.
std::string str_cat_args(std::initializer_list<StrCatArg> args);
} // namespace detail

/// Concatenates the arguments with operator<< into a string.
template <class... Args> [[gnu::always_inline]] inline std::string str_cat(const Args &...args) {
  return detail::str_cat_args({detail::str_cat_arg(args)...});
}

/// A user error. what() is "file:line: message" when a location is known.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message, SourceLoc loc = {});
  /// The user's source position the error refers to (may be invalid).
  const SourceLoc &loc() const { return loc_; }
  /// The message without the location prefix.
  const std::string &message() const { return message_; }

private:
  SourceLoc loc_;
  std::string message_;
};

/// Misuse of the Hidet Script DSL (reported at the user's line).
class DSLError : public Error {
  using Error::Error;
};
/// Bad arguments to an operator or a compiled kernel (shape, dtype, device).
class ValueError : public Error {
  using Error::Error;
};
/// A CUDA / NVRTC / driver problem: no GPU, a failed compile, a fault during a kernel.
class CudaError : public Error {
  using Error::Error;
};
/// A check that failed while a kernel ran on the emulator (out of bounds, divergent barrier, race).
class EmulatorError : public Error {
  using Error::Error;
};

/// A broken invariant inside hidet itself.
class InternalError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

namespace detail {
[[noreturn]] void internal_fail(const char *cond, const std::string &msg,
                                std::source_location loc = std::source_location::current());
} // namespace detail

} // namespace hidet

/// Internal invariant check; the message arguments are only evaluated when the check fails.
#define HIDET_ASSERT(cond, ...)                                                                    \
  do {                                                                                             \
    if (!(cond)) [[unlikely]]                                                                      \
      ::hidet::detail::internal_fail(#cond, ::hidet::str_cat("" __VA_OPT__(, ) __VA_ARGS__));      \
  } while (0)

#if HIDET_HEADER_ONLY
#include "hidet/impl/error.ipp"
#endif
