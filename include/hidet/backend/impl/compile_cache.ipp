// Definitions for hidet/backend/compile_cache.hpp.
#pragma once

#include "hidet/backend/compile_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_map>

#include "hidet/error.hpp"
#include "hidet/util/env.hpp"
#include "hidet/util/hash.hpp"
#include "hidet/version.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet::backend {

namespace detail {

struct CompileCacheState {
  std::mutex mu;
  std::unordered_map<std::string, CompiledBinary> entries;
  CompileCacheStats stats;
};
HIDET_INLINE CompileCacheState &compile_cache_state() {
  static CompileCacheState s;
  return s;
}

inline constexpr char kCacheMagic[8] = {'H', 'I', 'D', 'E', 'T', 'K', 'C', '\n'};
inline constexpr std::uint32_t kCacheFormat = 1;
inline constexpr std::size_t kCacheHeaderSize = 8 + 4 + 4 + 8 + 16;

HIDET_INLINE void put_u64(std::string &out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out += char((v >> (8 * i)) & 0xff);
}
HIDET_INLINE std::uint64_t get_u64(const char *p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
HIDET_INLINE void put_field(std::string &out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s.data(), s.size());
}

HIDET_INLINE std::string encode_cache_entry(const std::string &key, const CompiledBinary &b) {
  std::string payload;
  put_field(payload, key);
  put_field(payload, b.arch);
  put_field(payload, std::string_view(b.cubin.data(), b.cubin.size()));
  put_field(payload, b.ptx);
  put_field(payload, b.log);
  put_field(payload, std::to_string(b.compile_ms));
  util::Hash128 sum = util::hash128(payload);
  std::string out(kCacheMagic, 8);
  for (int i = 0; i < 4; ++i)
    out += char((kCacheFormat >> (8 * i)) & 0xff);
  out.append(4, '\0');
  put_u64(out, payload.size());
  put_u64(out, sum.hi);
  put_u64(out, sum.lo);
  return out + payload;
}

HIDET_INLINE std::optional<CompiledBinary> decode_cache_entry(const std::string &data,
                                                              const std::string &key) {
  if (data.size() < kCacheHeaderSize || std::memcmp(data.data(), kCacheMagic, 8) != 0)
    return std::nullopt;
  std::uint32_t format = std::uint32_t(get_u64(data.data() + 8) & 0xffffffffu);
  std::uint64_t len = get_u64(data.data() + 16);
  if (format != kCacheFormat || len != data.size() - kCacheHeaderSize)
    return std::nullopt;
  std::string_view payload(data.data() + kCacheHeaderSize, len);
  util::Hash128 sum = util::hash128(payload);
  if (sum.hi != get_u64(data.data() + 24) || sum.lo != get_u64(data.data() + 32))
    return std::nullopt;
  std::size_t pos = 0;
  auto field = [&](std::string &out) {
    if (payload.size() - pos < 8)
      return false;
    std::uint64_t n = get_u64(payload.data() + pos);
    pos += 8;
    if (payload.size() - pos < n)
      return false;
    out.assign(payload.data() + pos, n);
    pos += n;
    return true;
  };
  std::string k, cubin, ms;
  CompiledBinary b;
  if (!field(k) || k != key || !field(b.arch) || !field(cubin) || !field(b.ptx) || !field(b.log) ||
      !field(ms) || pos != payload.size() || cubin.empty())
    return std::nullopt;
  b.cubin.assign(cubin.begin(), cubin.end());
  b.compile_ms = std::atof(ms.c_str());
  return b;
}

HIDET_INLINE std::optional<std::string> read_file_bytes(const std::filesystem::path &p) {
  std::ifstream f(p, std::ios::binary);
  if (!f)
    return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

HIDET_INLINE bool write_file_atomic(const std::filesystem::path &path, const std::string &data) {
  static std::atomic<std::uint64_t> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::filesystem::path tmp =
      path.string() + str_cat(".tmp.", ::getpid(), ".", counter.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      return false;
    f.write(data.data(), std::streamsize(data.size()));
    if (!f) {
      f.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    std::filesystem::remove(tmp, ec);
  return !ec;
}

} // namespace detail

HIDET_INLINE std::filesystem::path cache_root_dir() {
  if (auto d = util::env_string_or("HIDET_CACHE_DIR", ""); !d.empty())
    return d;
  if (auto x = util::env_string_or("XDG_CACHE_HOME", ""); !x.empty())
    return std::filesystem::path(x) / "hidet";
  std::string home = util::env_string_or("HOME", "");
  if (home.empty())
    return std::filesystem::temp_directory_path() / "hidet-cache";
  return std::filesystem::path(home) / ".cache" / "hidet";
}

HIDET_INLINE std::filesystem::path kernel_cache_dir() { return cache_root_dir() / "kernels"; }

HIDET_INLINE std::string compile_cache_key(const std::string &source, const CompileOptions &opts) {
  std::vector<std::string> options = nvrtc_options(opts);
  std::sort(options.begin(), options.end());
  util::Hasher128 h;
  h.add(std::string_view(HIDET_VERSION_STRING)).add(source).add(std::uint64_t(options.size()));
  for (auto &o : options)
    h.add(o);
  h.add(std::uint64_t(nvrtc_version()));
  h.add(opts.arch.empty() ? default_cuda_arch() : opts.arch);
  return h.finish().hex();
}

HIDET_INLINE std::filesystem::path compile_cache_entry_path(const std::string &key) {
  return kernel_cache_dir() / (key + ".hkc");
}

HIDET_INLINE CompileCacheStats compile_cache_stats() {
  auto &st = detail::compile_cache_state();
  std::lock_guard<std::mutex> lock(st.mu);
  return st.stats;
}
HIDET_INLINE void reset_compile_cache_stats() {
  auto &st = detail::compile_cache_state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.stats = {};
}
HIDET_INLINE void clear_memory_compile_cache() {
  auto &st = detail::compile_cache_state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.entries.clear();
}

HIDET_INLINE CompiledBinary compile_cuda_cached(const std::string &source, const std::string &name,
                                                const CompileOptions &opts) {
  auto &st = detail::compile_cache_state();
  std::string key = compile_cache_key(source, opts);
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (auto it = st.entries.find(key); it != st.entries.end()) {
      ++st.stats.memory_hits;
      CompiledBinary b = it->second;
      b.from_cache = true;
      return b;
    }
  }
  bool use_disk = !util::env_bool("HIDET_DISABLE_CACHE", false);
  std::filesystem::path path = compile_cache_entry_path(key);
  if (use_disk) {
    if (auto data = detail::read_file_bytes(path)) {
      if (auto b = detail::decode_cache_entry(*data, key)) {
        std::lock_guard<std::mutex> lock(st.mu);
        ++st.stats.disk_hits;
        st.entries.emplace(key, *b);
        b->from_cache = true;
        return *b;
      }
      std::lock_guard<std::mutex> lock(st.mu);
      ++st.stats.corrupt_entries;
    }
  }
  CompiledBinary b = nvrtc_compile(source, name, opts);
  bool wrote = use_disk && detail::write_file_atomic(path, detail::encode_cache_entry(key, b));
  std::lock_guard<std::mutex> lock(st.mu);
  ++st.stats.compiles;
  if (wrote)
    ++st.stats.disk_writes;
  st.entries.emplace(key, b);
  return b;
}

} // namespace hidet::backend

#include "hidet/util/cold_end.hpp"
