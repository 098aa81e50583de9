// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that hidet programs start
// (and fall back to the CPU emulator) on machines without a GPU. <cuda.h> is included for its
// types only; libcuda is never linked. $HIDET_LIBCUDA_PATH overrides the library path.
//
// Everything here is thin: a table of entry points resolved by their real (versioned) symbol
// names, an error check that turns a CUresult into hidet::CudaError, and typed helpers for
// module loading and kernel launch used by the launcher.
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "hidet/backend/kernel_arg.hpp"
#include "hidet/error.hpp"
#include "hidet/util/env.hpp"
#include "hidet/util/float16.hpp"

namespace hidet::cuda {

/// The driver entry points hidet uses, by their real exported (versioned) names.
#define HIDET_CUDA_DRIVER_FUNCTIONS(X)                                                             \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceTotalMem_v2)                                                                           \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxGetCurrent)                                                                               \
  X(cuCtxSynchronize)                                                                              \
  X(cuMemAlloc_v2)                                                                                 \
  X(cuMemFree_v2)                                                                                  \
  X(cuMemGetInfo_v2)                                                                               \
  X(cuMemcpyHtoD_v2)                                                                               \
  X(cuMemcpyDtoH_v2)                                                                               \
  X(cuMemcpyDtoD_v2)                                                                               \
  X(cuMemcpyHtoDAsync_v2)                                                                          \
  X(cuMemcpyDtoHAsync_v2)                                                                          \
  X(cuMemcpyDtoDAsync_v2)                                                                          \
  X(cuMemsetD8_v2)                                                                                 \
  X(cuMemsetD8Async)                                                                               \
  X(cuMemsetD32Async)                                                                              \
  X(cuModuleLoadData)                                                                              \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuLaunchKernel)                                                                                \
  X(cuFuncSetAttribute)                                                                            \
  X(cuFuncGetAttribute)                                                                            \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy_v2)                                                                            \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamWaitEvent)                                                                             \
  X(cuEventCreate)                                                                                 \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime_v2)                                                                         \
  X(cuEventDestroy_v2)                                                                             \
  X(cuTensorMapEncodeTiled)

/// The loaded driver: one function pointer per entry point (null until loaded).
struct Driver {
#define HIDET_X(name) decltype(&::name) name = nullptr;
  HIDET_CUDA_DRIVER_FUNCTIONS(HIDET_X)
#undef HIDET_X
  void *handle = nullptr; ///< the dlopen handle
  bool usable = false;    ///< library loaded, cuInit succeeded and at least one device exists
  std::string why;        ///< when !usable: the reason, for messages
  int version = 0;        ///< cuDriverGetVersion, e.g. 13000
  int device_count = 0;
};

namespace detail {

inline Driver load_driver() {
  Driver d;
  std::string path = util::env_string_or("HIDET_LIBCUDA_PATH", "libcuda.so.1");
  d.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!d.handle) {
    const char *e = ::dlerror();
    d.why = str_cat("cannot load the CUDA driver library '", path, "': ", e ? e : "unknown error");
    return d;
  }
  auto sym = [&](const char *name) -> void * { return ::dlsym(d.handle, name); };
  std::string missing;
#define HIDET_X(name)                                                                              \
  d.name = reinterpret_cast<decltype(d.name)>(sym(#name));                                         \
  if (!d.name && std::string(#name) == "cuEventElapsedTime_v2")                                    \
    d.name = reinterpret_cast<decltype(d.name)>(sym("cuEventElapsedTime"));                        \
  if (!d.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  HIDET_CUDA_DRIVER_FUNCTIONS(HIDET_X)
#undef HIDET_X
  if (!missing.empty()) {
    d.why = str_cat("the CUDA driver '", path, "' lacks the entry points ", missing,
                    " (driver too old? update the NVIDIA driver)");
    return d;
  }
  CUresult r = d.cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    d.why = str_cat("'", path, "' is the CUDA toolkit's stub library, not a real driver");
    return d;
  }
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr;
    d.cuGetErrorName(r, &name);
    d.why = str_cat("cuInit failed with ", name ? name : "error ", name ? "" : std::to_string(r));
    return d;
  }
  d.cuDriverGetVersion(&d.version);
  if (d.cuDeviceGetCount(&d.device_count) != CUDA_SUCCESS || d.device_count == 0) {
    d.why = "the CUDA driver reports no devices";
    d.device_count = 0;
    return d;
  }
  d.usable = true;
  return d;
}

} // namespace detail

/// The process-wide driver table, loaded on first use (thread-safe; never unloaded).
inline const Driver &driver_table() {
  static const Driver *d = new Driver(detail::load_driver());
  return *d;
}

/// True when libcuda.so.1 loads, cuInit succeeds and a device exists; otherwise false and, when
/// `why` is given, the reason.
inline bool driver_available(std::string *why = nullptr) {
  const Driver &d = driver_table();
  if (!d.usable && why) *why = d.why;
  return d.usable;
}

/// The usable driver, or a CudaError saying why there is none.
inline const Driver &driver() {
  const Driver &d = driver_table();
  if (!d.usable)
    throw CudaError(
        str_cat("the CUDA driver is not available: ", d.why,
                "; use the emulated 'cuda' device (HIDET_EMULATE=1) or the 'cpu' device"));
  return d;
}

/// "CUDA_ERROR_OUT_OF_MEMORY" for a result code (numeric when the driver cannot name it).
inline std::string error_name(CUresult r) {
  const Driver &d = driver_table();
  const char *s = nullptr;
  if (d.cuGetErrorName && d.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA error " + std::to_string(int(r));
}

/// The driver's description of a result code.
inline std::string error_string(CUresult r) {
  const Driver &d = driver_table();
  const char *s = nullptr;
  if (d.cuGetErrorString && d.cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown error";
}

/// Errors after which the CUDA context is unusable for the rest of the process.
inline bool is_sticky_error(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
    return true;
  default:
    return false;
  }
}

/// The message check() throws: "<what>: CUDA_ERROR_X (description)" plus advice.
inline std::string error_message(CUresult r, const std::string &what) {
  std::string msg = str_cat(what, ": ", error_name(r), " (", error_string(r), ")");
  if (is_sticky_error(r))
    msg += "; the CUDA context is lost: every later CUDA call in this process fails, so restart "
           "the process to use the GPU again (run the kernel on the emulator with HIDET_EMULATE=1 "
           "to find the faulting access)";
  return msg;
}

/// Throws CudaError naming `what` unless r is CUDA_SUCCESS.
inline void check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) [[unlikely]]
    throw CudaError(error_message(r, what));
}
/// As above, for a computed description.
inline void check(CUresult r, const std::string &what) {
  if (r != CUDA_SUCCESS) [[unlikely]]
    throw CudaError(error_message(r, what));
}

/// Loads a CUBIN (or PTX, NUL-terminated) image into the current context.
inline CUmodule load_module(const std::vector<char> &image) {
  if (image.empty()) throw CudaError("load_module: the module image is empty");
  CUmodule m = nullptr;
  check(driver().cuModuleLoadData(&m, image.data()),
        str_cat("cuModuleLoadData (", image.size(), "-byte image)"));
  return m;
}

/// Unloads a module (errors ignored: used on teardown paths).
inline void unload_module(CUmodule m) noexcept {
  const Driver &d = driver_table();
  if (m && d.usable) d.cuModuleUnload(m);
}

/// Looks up a kernel by its (lowered) name.
inline CUfunction get_function(CUmodule m, const char *name) {
  CUfunction f = nullptr;
  check(driver().cuModuleGetFunction(&f, m, name),
        str_cat("cuModuleGetFunction: kernel '", name, "' not found in the module"));
  return f;
}

/// Grid or block extents of a launch.
struct LaunchDims {
  unsigned x = 1, y = 1, z = 1;
};

namespace detail {
inline void launch_kernel(CUfunction f, LaunchDims grid, LaunchDims block, unsigned smem_bytes,
                          CUstream stream, void **params, const char *kernel_name) {
  CUresult r = driver().cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                       smem_bytes, stream, params, nullptr);
  if (r != CUDA_SUCCESS)
    throw CudaError(
        error_message(r, str_cat("launching kernel '", kernel_name, "' with grid (", grid.x, ", ",
                                 grid.y, ", ", grid.z, "), block (", block.x, ", ", block.y, ", ",
                                 block.z, "), ", smem_bytes, " bytes of dynamic shared memory")));
}
} // namespace detail

/// Allows `kernel_name` to use up to `bytes` of dynamic shared memory (needed above 48 KB).
inline void set_max_dynamic_smem(CUfunction f, int bytes, const std::string &kernel_name) {
  check(driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
        str_cat("allowing ", bytes, " bytes of dynamic shared memory for kernel '", kernel_name,
                "'"));
}

/// Launches a kernel; `kernel_name` is used in error messages. Requests the dynamic shared memory
/// opt-in when smem_bytes exceeds 48 KB.
inline void launch(CUfunction f, LaunchDims grid, LaunchDims block, unsigned smem_bytes,
                   CUstream stream, void **params, const char *kernel_name = "<kernel>") {
  if (smem_bytes > 48 * 1024) set_max_dynamic_smem(f, int(smem_bytes), kernel_name);
  detail::launch_kernel(f, grid, block, smem_bytes, stream, params, kernel_name);
}

/// Kernel arguments laid out for cuLaunchKernel: one 8-byte slot per argument holding the value
/// in the parameter's own type (pointers, integers truncated to their dtype, f16/bf16 as bits),
/// and the array of slot addresses.
struct PackedArgs {
  std::vector<std::uint64_t> slots;
  /// By-value blobs (tensor maps), 64-byte aligned as CUtensorMap requires.
  struct alignas(64) Blob {
    unsigned char bytes[128];
  };
  std::vector<Blob> blobs;
  std::vector<void *> params;
};

/// Packs backend::KernelArg values (see backend/kernel_arg.hpp) for cuLaunchKernel.
inline PackedArgs pack_kernel_args(const std::vector<backend::KernelArg> &args) {
  using K = backend::KernelArg::Kind;
  PackedArgs p;
  p.slots.assign(args.size(), 0);
  std::size_t nblobs = 0;
  for (const auto &a : args) nblobs += a.kind == K::Bytes;
  p.blobs.resize(nblobs);
  std::vector<void *> blob_of(args.size(), nullptr);
  for (std::size_t i = 0, b = 0; i < args.size(); ++i) {
    const auto &a = args[i];
    void *slot = &p.slots[i];
    if (a.kind == K::Bytes) {
      if (a.i < 0 || a.i > std::int64_t(sizeof(PackedArgs::Blob)))
        throw ValueError(str_cat("kernel argument ", i, ": a by-value argument of ", a.i, " bytes (at most 128)"));
      std::memcpy(p.blobs[b].bytes, a.ptr, std::size_t(a.i));
      blob_of[i] = &p.blobs[b++];
    } else if (a.kind == K::Pointer) {
      std::memcpy(slot, &a.ptr, sizeof(void *));
    } else if (a.kind == K::Int) {
      std::int64_t v = a.dtype.is_bool() ? std::int64_t(a.i != 0) : a.i;
      std::memcpy(slot, &v, a.dtype.nbytes()); // little-endian: the low bytes are the value
    } else if (a.dtype == dtypes::f64) {
      std::memcpy(slot, &a.f, 8);
    } else if (a.dtype == dtypes::f32) {
      float v = float(a.f);
      std::memcpy(slot, &v, 4);
    } else if (a.dtype == dtypes::f16 || a.dtype == dtypes::bf16) {
      std::uint16_t v =
          a.dtype == dtypes::f16 ? float_to_half_bits(float(a.f)) : float_to_bf16_bits(float(a.f));
      std::memcpy(slot, &v, 2);
    } else {
      throw ValueError(str_cat("kernel argument ", i, ": a floating-point value was given for a ",
                               a.dtype.name(), " parameter"));
    }
  }
  for (std::size_t i = 0; i < args.size(); ++i)
    p.params.push_back(blob_of[i] ? blob_of[i] : static_cast<void *>(&p.slots[i]));
  return p;
}

/// Launches a kernel with backend::KernelArg arguments (dynamic shared memory above 48 KB must
/// have been allowed with set_max_dynamic_smem).
inline void launch_with_args(CUfunction f, const std::string &kernel_name, backend::Dim3 grid,
                             backend::Dim3 block, std::size_t smem_bytes, CUstream stream,
                             const std::vector<backend::KernelArg> &args) {
  PackedArgs p = pack_kernel_args(args);
  detail::launch_kernel(f, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z},
                        unsigned(smem_bytes), stream, p.params.data(), kernel_name.c_str());
}

} // namespace hidet::cuda

namespace hidet::runtime {
// The driver wrappers are also reachable as hidet::runtime::X, the spelling the launcher uses.
using cuda::check;
using cuda::get_function;
using cuda::launch;
using cuda::launch_with_args;
using cuda::load_module;
using cuda::set_max_dynamic_smem;
using cuda::unload_module;
} // namespace hidet::runtime
