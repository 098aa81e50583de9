// Little binary encodings for hidet's files: ByteWriter appends plain values, length-framed
// strings and integer lists; ByteReader reads them back, bounds-checked, and reports a short or
// malformed input as a ValueError naming the file ("'model.hidet' is corrupt (it ends early at
// byte 812)"). Values are written in the host's byte order: the files record the hidet version
// and target they were made for and are read on the same kind of machine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "hidet/error.hpp"

namespace hidet::util {

/// Appends values to a byte string.
class ByteWriter {
public:
  std::string out;
  template <class T> void pod(const T &v) { out.append(reinterpret_cast<const char *>(&v), sizeof(T)); }
  void str(std::string_view s) {
    pod(std::uint64_t(s.size()));
    out += s;
  }
  void ints(const std::vector<std::int64_t> &v) {
    pod(std::uint64_t(v.size()));
    for (auto x : v) pod(x);
  }
};

/// Reads what a ByteWriter wrote; every read checks the bounds (see the top of the file).
class ByteReader {
public:
  /// `where` names the input in errors ("'model.hidet'").
  ByteReader(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}
  template <class T> T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  /// A length-framed string, as a view into the input (valid while the input is).
  std::string_view view() {
    auto n = pod<std::uint64_t>();
    need(n);
    std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string str() { return std::string(view()); }
  std::vector<std::int64_t> ints() {
    auto n = count(sizeof(std::int64_t));
    std::vector<std::int64_t> v(n);
    for (auto &x : v) x = pod<std::int64_t>();
    return v;
  }
  /// A count of items of at least `min_bytes` each (bounded by what is left, so that a corrupt
  /// count does not allocate).
  std::uint64_t count(std::uint64_t min_bytes) {
    auto n = pod<std::uint64_t>();
    if (n > (data_.size() - pos_) / std::max<std::uint64_t>(min_bytes, 1)) corrupt("a count past the end");
    return n;
  }
  /// An enumerator of E whose value is at most `last`.
  template <class E> E enumerator(E last, const char *what) {
    auto v = pod<std::underlying_type_t<E>>();
    if (v > static_cast<std::underlying_type_t<E>>(last)) corrupt(str_cat("an unknown ", what));
    return E(v);
  }
  std::size_t pos() const { return pos_; }
  bool done() const { return pos_ == data_.size(); }
  const std::string &where() const { return where_; }
  [[noreturn]] void corrupt(const std::string &what) const {
    throw ValueError(str_cat(where_, " is corrupt (", what, " at byte ", pos_, ")"));
  }

private:
  void need(std::uint64_t n) const {
    if (n > data_.size() - pos_) corrupt("it ends early");
  }
  std::string_view data_;
  std::size_t pos_ = 0;
  std::string where_;
};

} // namespace hidet::util
