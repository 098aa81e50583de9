// Compiled-kernel caches: an in-process map on top of a disk cache.
//  * Key: 128-bit hash of the hidet version, the source, the sorted NVRTC options (arch and
//    include path resolved), the NVRTC version and the arch.
//  * Disk dir: $HIDET_CACHE_DIR, else $XDG_CACHE_HOME/hidet, else ~/.cache/hidet; entries live in
//    its "kernels" subdirectory as <key>.hkc. HIDET_DISABLE_CACHE=1 turns the disk cache off.
//  * Entry: a header (magic, format version, payload length, 128-bit payload checksum) and a
//    payload of length-framed fields. A corrupt or truncated entry is detected, recompiled and
//    replaced. Writes go to a temporary file in the same dir, then rename(), so concurrent
//    processes never see half-written entries.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "hidet/backend/nvrtc.hpp"
#include "hidet/config.hpp"

namespace hidet::backend {

/// Counters of what the caches did since the process started (or the last reset).
struct CompileCacheStats {
  std::uint64_t memory_hits = 0;     ///< served from the in-process cache
  std::uint64_t disk_hits = 0;       ///< served from a valid disk entry
  std::uint64_t compiles = 0;        ///< NVRTC compiles run
  std::uint64_t disk_writes = 0;     ///< entries written to disk
  std::uint64_t corrupt_entries = 0; ///< disk entries rejected (bad header, size or checksum)
};

namespace detail {

/// Serializes an entry (header + payload).
std::string encode_cache_entry(const std::string &key, const CompiledBinary &b);
/// Parses an entry; nullopt when anything is wrong (magic, format, length, checksum, key).
std::optional<CompiledBinary> decode_cache_entry(const std::string &data, const std::string &key);
/// The bytes of file `p`, or nullopt when it cannot be read.
std::optional<std::string> read_file_bytes(const std::filesystem::path &p);
/// Writes `data` to `path` atomically (temp file in the same dir + rename); false on failure.
bool write_file_atomic(const std::filesystem::path &path, const std::string &data);

} // namespace detail

/// The disk cache root: $HIDET_CACHE_DIR, else $XDG_CACHE_HOME/hidet, else ~/.cache/hidet.
std::filesystem::path cache_root_dir();

/// The directory of compiled-kernel entries (<root>/kernels).
std::filesystem::path kernel_cache_dir();

/// The cache key (32 hex digits) of compiling `source` with `opts`.
std::string compile_cache_key(const std::string &source, const CompileOptions &opts);

/// The disk entry path for a key.
std::filesystem::path compile_cache_entry_path(const std::string &key);

/// A snapshot of the counters.
CompileCacheStats compile_cache_stats();
/// Sets every counter to zero.
void reset_compile_cache_stats();
/// Drops every in-process entry (the disk cache is untouched).
void clear_memory_compile_cache();

/// nvrtc_compile() through the caches: the in-process map, then the disk entry (unless
/// HIDET_DISABLE_CACHE=1), then NVRTC, whose result is stored in both. A hit has from_cache set
/// and compile_ms of the original compile. Errors are those of nvrtc_compile(); a disk cache
/// that cannot be written is skipped silently.
CompiledBinary compile_cuda_cached(const std::string &source, const std::string &name,
                                   const CompileOptions &opts);

} // namespace hidet::backend

#if HIDET_HEADER_ONLY
#include "hidet/backend/impl/compile_cache.ipp"
#endif
