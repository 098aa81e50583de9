// NVRTC, loaded with dlopen at first use: CUDA C++ source -> CUBIN (and PTX) for one arch.
// Library search: $HIDET_NVRTC_PATH, libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so, then
// <cuda>/lib64/libnvrtc.so* where <cuda> is $CUDA_HOME, else the build-time
// HIDET_DEFAULT_CUDA_HOME, else /usr/local/cuda. Headers: -I<cuda>/include (cuda_fp16.h).
// Default arch: $HIDET_CUDA_ARCH, else sm_90a. A failed compile throws CudaError with the kernel
// name, the options, the NVRTC log and the path of the dumped source.
#pragma once

#include <string>
#include <vector>

#include "hidet/backend/compiled_binary.hpp"
#include "hidet/config.hpp"

namespace hidet::backend {

/// The CUDA toolkit root: $CUDA_HOME, else the build-time HIDET_DEFAULT_CUDA_HOME, else
/// /usr/local/cuda.
std::string cuda_home();

/// The arch used when CompileOptions::arch is empty: $HIDET_CUDA_ARCH, else "sm_90a".
std::string default_cuda_arch();

namespace detail {

/// The candidate paths for libnvrtc, in search order.
std::vector<std::string> nvrtc_search_paths();

} // namespace detail

/// NVRTC's version as major * 1000 + minor * 10 (13.0 -> 13000, like CUDA_VERSION).
int nvrtc_version();

/// The SM numbers NVRTC can compile for (75, 80, ..., 121).
std::vector<int> nvrtc_supported_archs();

/// Parses "sm_90a" / "sm_80" / "sm_100f" into its number; -1 when not of that form.
int parse_sm_arch(const std::string &arch);

/// The full NVRTC option list for `opts` (the arch resolved, -I<cuda>/include added).
std::vector<std::string> nvrtc_options(const CompileOptions &opts);

/// Compiles `source` to CUBIN for opts.arch. `name` names the module in messages and dumps.
/// Throws CudaError when NVRTC cannot be loaded, the arch is unsupported, or the compile fails
/// (the source is then always dumped to $HIDET_DUMP_DIR, else a temp dir). With HIDET_DUMP_DIR
/// set, every compile also leaves <name>_<hash>.cu, .ptx, .cubin (for cuobjdump -sass) and .log there.
CompiledBinary nvrtc_compile(const std::string &source, const std::string &name,
                             const CompileOptions &opts);

/// Seconds spent in NVRTC's compile by this process, summed over threads (failed compiles too):
/// the difference across a build says how much of it was NVRTC (graph::BuildStats).
double nvrtc_seconds_total();

} // namespace hidet::backend

#if HIDET_HEADER_ONLY
#include "hidet/backend/impl/nvrtc.ipp"
#endif
