// Definitions for hidet/runtime/cuda_driver.hpp.
#pragma once

#include "hidet/runtime/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "hidet/backend/nvrtc.hpp"
#include "hidet/util/env.hpp"
#include "hidet/util/float16.hpp"

namespace hidet::cuda {

namespace detail {

/// dlsym of the driver entry point `name` (cuEventElapsedTime_v2 falls back to the older
/// cuEventElapsedTime); a missing one is appended to `missing`.
HIDET_INLINE void *driver_symbol(void *handle, const char *name, std::string &missing) {
  void *p = ::dlsym(handle, name);
  if (!p && std::strcmp(name, "cuEventElapsedTime_v2") == 0)
    p = ::dlsym(handle, "cuEventElapsedTime");
  if (!p) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return p;
}

HIDET_INLINE Driver load_driver() {
  Driver d;
  std::string path = util::env_string_or("HIDET_LIBCUDA_PATH", "libcuda.so.1");
  d.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!d.handle) {
    const char *e = ::dlerror();
    d.why = str_cat("cannot load the CUDA driver library '", path, "': ", e ? e : "unknown error");
    return d;
  }
  std::string missing;
#define HIDET_X(name)                                                                              \
  d.name = reinterpret_cast<decltype(d.name)>(driver_symbol(d.handle, #name, missing));
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

HIDET_INLINE const Driver &driver_table() {
  static const Driver *d = new Driver(detail::load_driver());
  return *d;
}

HIDET_INLINE bool driver_available(std::string *why) {
  const Driver &d = driver_table();
  if (!d.usable && why) *why = d.why;
  return d.usable;
}

HIDET_INLINE const Driver &driver() {
  const Driver &d = driver_table();
  if (!d.usable)
    throw CudaError(
        str_cat("the CUDA driver is not available: ", d.why,
                "; use the emulated 'cuda' device (HIDET_EMULATE=1) or the 'cpu' device"));
  return d;
}

HIDET_INLINE std::string error_name(CUresult r) {
  const Driver &d = driver_table();
  const char *s = nullptr;
  if (d.cuGetErrorName && d.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA error " + std::to_string(int(r));
}

HIDET_INLINE std::string error_string(CUresult r) {
  const Driver &d = driver_table();
  const char *s = nullptr;
  if (d.cuGetErrorString && d.cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown error";
}

HIDET_INLINE bool is_sticky_error(CUresult r) {
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

HIDET_INLINE std::string error_message(CUresult r, const std::string &what) {
  std::string msg = str_cat(what, ": ", error_name(r), " (", error_string(r), ")");
  if (is_sticky_error(r))
    msg += "; the CUDA context is lost: every later CUDA call in this process fails, so restart "
           "the process to use the GPU again (run the kernel on the emulator with HIDET_EMULATE=1 "
           "to find the faulting access)";
  return msg;
}

HIDET_INLINE void check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) [[unlikely]]
    throw CudaError(error_message(r, what));
}
HIDET_INLINE void check(CUresult r, const std::string &what) {
  if (r != CUDA_SUCCESS) [[unlikely]]
    throw CudaError(error_message(r, what));
}

HIDET_INLINE CUmodule load_module(const std::vector<char> &image) {
  if (image.empty()) throw CudaError("load_module: the module image is empty");
  CUmodule m = nullptr;
  check(driver().cuModuleLoadData(&m, image.data()),
        str_cat("cuModuleLoadData (", image.size(), "-byte image)"));
  return m;
}

HIDET_INLINE void unload_module(CUmodule m) noexcept {
  const Driver &d = driver_table();
  if (m && d.usable) d.cuModuleUnload(m);
}

HIDET_INLINE CUfunction get_function(CUmodule m, const char *name) {
  CUfunction f = nullptr;
  check(driver().cuModuleGetFunction(&f, m, name),
        str_cat("cuModuleGetFunction: kernel '", name, "' not found in the module"));
  return f;
}

namespace detail {
HIDET_INLINE void launch_kernel(CUfunction f, LaunchDims grid, LaunchDims block,
                                unsigned smem_bytes, CUstream stream, void **params,
                                const char *kernel_name, bool programmatic = false) {
  CUresult r;
  if (programmatic) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = grid.x, config.gridDimY = grid.y, config.gridDimZ = grid.z;
    config.blockDimX = block.x, config.blockDimY = block.y, config.blockDimZ = block.z;
    config.sharedMemBytes = smem_bytes;
    config.hStream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    r = driver().cuLaunchKernelEx(&config, f, params, nullptr);
  } else {
    r = driver().cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem_bytes,
                                stream, params, nullptr);
  }
  if (r != CUDA_SUCCESS)
    throw CudaError(
        error_message(r, str_cat("launching kernel '", kernel_name, "' with grid (", grid.x, ", ",
                                 grid.y, ", ", grid.z, "), block (", block.x, ", ", block.y, ", ",
                                 block.z, "), ", smem_bytes, " bytes of dynamic shared memory")));
}
} // namespace detail

HIDET_INLINE bool programmatic_launch_for(const std::string &arch) {
  static const bool enabled = util::env_bool("HIDET_PDL", true);
  return enabled && backend::parse_sm_arch(arch) >= 90;
}

HIDET_INLINE void set_max_dynamic_smem(CUfunction f, int bytes, const std::string &kernel_name) {
  check(driver().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
        str_cat("allowing ", bytes, " bytes of dynamic shared memory for kernel '", kernel_name,
                "'"));
}

HIDET_INLINE void launch(CUfunction f, LaunchDims grid, LaunchDims block, unsigned smem_bytes,
                         CUstream stream, void **params, const char *kernel_name) {
  if (smem_bytes > 48 * 1024) set_max_dynamic_smem(f, int(smem_bytes), kernel_name);
  detail::launch_kernel(f, grid, block, smem_bytes, stream, params, kernel_name);
}

HIDET_INLINE PackedArgs pack_kernel_args(const std::vector<backend::KernelArg> &args) {
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

HIDET_INLINE void launch_with_args(CUfunction f, const std::string &kernel_name, backend::Dim3 grid,
                                   backend::Dim3 block, std::size_t smem_bytes, CUstream stream,
                                   const std::vector<backend::KernelArg> &args, bool programmatic) {
  PackedArgs p = pack_kernel_args(args);
  detail::launch_kernel(f, {grid.x, grid.y, grid.z}, {block.x, block.y, block.z},
                        unsigned(smem_bytes), stream, p.params.data(), kernel_name.c_str(), programmatic);
}

} // namespace hidet::cuda
