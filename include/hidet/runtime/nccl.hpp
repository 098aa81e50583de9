// NCCL, loaded at run time with dlopen like the CUDA driver (runtime/cuda_driver.hpp): hidet needs
// neither NCCL's header nor its library to build, and programs that never make a communicator on
// a GPU never load it. The few types and entry points hidet uses are declared here with NCCL's
// ABI (stable since NCCL 2.x: enums of int, a 128-byte unique id, opaque communicators).
//
// Search order: $HIDET_NCCL_LIBRARY alone when set; else a libnccl.so.2 already loaded in the
// process (torch's); else the nvidia/nccl/lib/libnccl.so.2 of an nvidia-nccl-cu12/-cu13 wheel in
// the Python site-packages folders hidet knows of ($HIDET_NCCL_SEARCH_PATH, a ':'-separated list
// of site-packages folders, first; then $VIRTUAL_ENV's, $CONDA_PREFIX's, those beside each python3
// on $PATH, ~/.local's and the system's); then "libnccl.so.2" from the loader's own path. When
// none loads, the DistributedError lists every path tried and what dlopen said.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hidet/error.hpp"

namespace hidet::nccl {

/// ncclResult_t.
enum Result : int {
  Success = 0,
  UnhandledCudaError = 1,
  SystemError = 2,
  InternalError = 3,
  InvalidArgument = 4,
  InvalidUsage = 5,
  RemoteError = 6,
  InProgress = 7,
};

/// ncclDataType_t.
enum DataType : int {
  Int8 = 0,
  Uint8 = 1,
  Int32 = 2,
  Uint32 = 3,
  Int64 = 4,
  Uint64 = 5,
  Float16 = 6,
  Float32 = 7,
  Float64 = 8,
  Bfloat16 = 9,
  Float8e4m3 = 10, ///< NCCL 2.24 and later
  Float8e5m2 = 11, ///< NCCL 2.24 and later
};

/// ncclRedOp_t (the built-in operations).
enum RedOp : int { Sum = 0, Prod = 1, Max = 2, Min = 3, Avg = 4 };

/// ncclUniqueId: 128 opaque bytes.
struct UniqueId {
  char internal[128];
};

/// ncclComm_t (opaque).
using Comm = struct ncclComm *;
/// cudaStream_t, the same object as the driver's CUstream.
using Stream = struct CUstream_st *;

/// ncclConfig_t as NCCL 2.14 declared it. NCCL reads a config by its `size` and `version`, so a
/// newer library accepts this prefix; fields left at `undefined` take NCCL's defaults.
struct Config {
  static constexpr int undefined = int(0x80000000); ///< NCCL_CONFIG_UNDEF_INT
  std::size_t size = sizeof(Config);
  unsigned int magic = 0xcafebeef;
  unsigned int version = 21400;
  int blocking = undefined;
  int cga_cluster_size = undefined;
  int min_ctas = undefined;
  int max_ctas = undefined;
  const char *net_name = nullptr;
};

/// The entry points hidet uses: X(name, return type, parameter list).
#define HIDET_NCCL_FUNCTIONS(X)                                                                    \
  X(ncclGetVersion, Result, (int *))                                                               \
  X(ncclGetUniqueId, Result, (UniqueId *))                                                         \
  X(ncclCommInitRankConfig, Result, (Comm *, int, UniqueId, int, Config *))                        \
  X(ncclCommDestroy, Result, (Comm))                                                               \
  X(ncclCommAbort, Result, (Comm))                                                                 \
  X(ncclCommGetAsyncError, Result, (Comm, Result *))                                               \
  X(ncclGetErrorString, const char *, (Result))                                                    \
  X(ncclGetLastError, const char *, (Comm))                                                        \
  X(ncclAllReduce, Result, (const void *, void *, std::size_t, DataType, RedOp, Comm, Stream))     \
  X(ncclAllGather, Result, (const void *, void *, std::size_t, DataType, Comm, Stream))            \
  X(ncclReduceScatter, Result, (const void *, void *, std::size_t, DataType, RedOp, Comm, Stream)) \
  X(ncclBroadcast, Result, (const void *, void *, std::size_t, DataType, int, Comm, Stream))       \
  X(ncclSend, Result, (const void *, std::size_t, DataType, int, Comm, Stream))                    \
  X(ncclRecv, Result, (void *, std::size_t, DataType, int, Comm, Stream))                          \
  X(ncclGroupStart, Result, ())                                                                    \
  X(ncclGroupEnd, Result, ())

/// The loaded library: one function pointer per entry point.
struct Library {
#define HIDET_X(name, ret, params) ret(*name) params = nullptr;
  HIDET_NCCL_FUNCTIONS(HIDET_X)
#undef HIDET_X
  std::string path; ///< the file that was loaded
  int version = 0;  ///< ncclGetVersion: 22703 for 2.27.3
  /// "2.27.3".
  std::string version_str() const;
};

/// The paths tried, in order (see the top of the file).
std::vector<std::string> library_candidates();

/// The process-wide library, loaded on first use (thread-safe; never unloaded). Throws
/// DistributedError (runtime/distributed.hpp) listing every path tried when none loads, or the
/// entry points a library lacks.
const Library &library();

/// True when library() loads; otherwise false and, when `why` is given, the reason.
bool available(std::string *why = nullptr);

/// "ncclInvalidUsage (invalid usage)"-style text for a result, with the communicator's last error
/// when `comm` is given.
std::string error_text(Result r, Comm comm = nullptr);

} // namespace hidet::nccl

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/nccl.ipp"
#endif
