// Little binary encodings for hidet's files: ByteWriter appends plain values, length-framed
// strings and integer lists; ByteReader reads them back, bounds-checked, and reports a short or
// malformed input as a ValueError naming the file ("'model.hidet' is corrupt (it ends early at
// byte 812)"). Values are written in the host's byte order: the files record the hidet version
// and target they were made for and are read on the same kind of machine. block_checksum guards
// large blocks (a model's weights) against corruption at memory speed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "hidet/error.hpp"

namespace hidet::util {

/// A 64-bit checksum of `data` for detecting corruption (not tampering): xxHash64 (four lanes over
/// 32-byte stripes, the tail, an avalanche), 14 GB/s on one core where util::hash128 does 0.5.
inline std::uint64_t block_checksum(std::string_view data, std::uint64_t seed = 0) {
  constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ull, p2 = 0xC2B2AE3D27D4EB4Full,
                          p3 = 0x165667B19E3779F9ull, p4 = 0x85EBCA77C2B2AE63ull,
                          p5 = 0x27D4EB2F165667C5ull;
  auto rotl = [](std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto round = [&](std::uint64_t acc, std::uint64_t in) { return rotl(acc + in * p2, 31) * p1; };
  auto load64 = [](const char *q) {
    std::uint64_t v;
    std::memcpy(&v, q, 8);
    return v;
  };
  const char *p = data.data(), *end = p + data.size();
  std::uint64_t h = seed + p5;
  if (data.size() >= 32) {
    std::uint64_t v1 = seed + p1 + p2, v2 = seed + p2, v3 = seed, v4 = seed - p1;
    for (; end - p >= 32; p += 32) {
      v1 = round(v1, load64(p));
      v2 = round(v2, load64(p + 8));
      v3 = round(v3, load64(p + 16));
      v4 = round(v4, load64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    for (std::uint64_t v : {v1, v2, v3, v4})
      h = (h ^ round(0, v)) * p1 + p4;
  }
  h += data.size();
  for (; end - p >= 8; p += 8)
    h = rotl(h ^ round(0, load64(p)), 27) * p1 + p4;
  for (; p < end; ++p)
    h = rotl(h ^ (std::uint64_t(std::uint8_t(*p)) * p5), 11) * p1;
  h ^= h >> 33;
  h *= p2;
  h ^= h >> 29;
  h *= p3;
  return h ^ (h >> 32);
}

/// Appends values to a byte string.
class ByteWriter {
public:
  std::string out;
  template <class T> void pod(const T &v) {
    out.append(reinterpret_cast<const char *>(&v), sizeof(T));
  }
  void str(std::string_view s) {
    pod(std::uint64_t(s.size()));
    out += s;
  }
  void ints(const std::vector<std::int64_t> &v) {
    pod(std::uint64_t(v.size()));
    for (auto x : v)
      pod(x);
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
    for (auto &x : v)
      x = pod<std::int64_t>();
    return v;
  }
  /// A count of items of at least `min_bytes` each (bounded by what is left, so that a corrupt
  /// count does not allocate).
  std::uint64_t count(std::uint64_t min_bytes) {
    auto n = pod<std::uint64_t>();
    if (n > (data_.size() - pos_) / std::max<std::uint64_t>(min_bytes, 1))
      corrupt("a count past the end");
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
