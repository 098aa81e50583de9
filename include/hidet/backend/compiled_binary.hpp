// What an NVRTC compile takes and gives: CompileOptions and CompiledBinary. A header of its own so
// that code holding a binary (the runtime's compiled modules) does not parse NVRTC or the caches.
#pragma once

#include <string>
#include <vector>

namespace hidet::backend {

/// How to compile one source.
struct CompileOptions {
  std::string arch;               ///< "sm_90a", "sm_80", ...; empty = default_cuda_arch()
  bool lineinfo = true;           ///< -lineinfo (source lines for profilers and debuggers)
  bool fast_math = false;         ///< --use_fast_math
  std::vector<std::string> extra; ///< passed to NVRTC as is
};

/// The result of a compile.
struct CompiledBinary {
  std::vector<char> cubin;
  std::string ptx;
  std::string log;         ///< NVRTC's program log (warnings)
  std::string arch;        ///< the arch compiled for ("sm_90a")
  double compile_ms = 0;   ///< time NVRTC took when this binary was compiled
  bool from_cache = false; ///< true when served by the in-process or disk cache
};

} // namespace hidet::backend
