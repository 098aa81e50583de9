// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that hidet programs start
// (and fall back to the CPU emulator) on machines without a GPU. <cuda.h> is included for its
// types only; libcuda is never linked. $HIDET_LIBCUDA_PATH overrides the library path.
//
// Everything here is thin: a table of entry points resolved by their real (versioned) symbol
// names, an error check that turns a CUresult into hidet::CudaError, and typed helpers for
// module loading and kernel launch used by the launcher.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hidet/backend/kernel_arg.hpp"
#include "hidet/error.hpp"

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
  X(cuMemHostAlloc)                                                                                \
  X(cuMemHostGetDevicePointer_v2)                                                                  \
  X(cuPointerGetAttribute)                                                                         \
  X(cuMemcpyHtoD_v2)                                                                               \
  X(cuMemcpyDtoH_v2)                                                                               \
  X(cuMemcpyDtoD_v2)                                                                               \
  X(cuMemcpyHtoDAsync_v2)                                                                          \
  X(cuMemcpyDtoHAsync_v2)                                                                          \
  X(cuMemcpyDtoDAsync_v2)                                                                          \
  X(cuMemsetD8_v2)                                                                                 \
  X(cuMemsetD8Async)                                                                               \
  X(cuMemsetD16Async)                                                                              \
  X(cuMemsetD32Async)                                                                              \
  X(cuModuleLoadData)                                                                              \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuLaunchKernel)                                                                                \
  X(cuLaunchKernelEx)                                                                              \
  X(cuFuncSetAttribute)                                                                            \
  X(cuFuncGetAttribute)                                                                            \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy_v2)                                                                            \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamQuery)                                                                                 \
  X(cuStreamWaitEvent)                                                                             \
  X(cuEventCreate)                                                                                 \
  X(cuEventRecord)                                                                                 \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime_v2)                                                                         \
  X(cuEventDestroy_v2)                                                                             \
  X(cuStreamBeginCapture_v2)                                                                       \
  X(cuStreamEndCapture)                                                                            \
  X(cuStreamIsCapturing)                                                                           \
  X(cuGraphInstantiateWithFlags)                                                                   \
  X(cuGraphLaunch)                                                                                 \
  X(cuGraphExecDestroy)                                                                            \
  X(cuGraphDestroy)                                                                                \
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

/// The process-wide driver table, loaded on first use (thread-safe; never unloaded).
const Driver &driver_table();

/// True when libcuda.so.1 loads, cuInit succeeds and a device exists; otherwise false and, when
/// `why` is given, the reason.
bool driver_available(std::string *why = nullptr);

/// The usable driver, or a CudaError saying why there is none.
const Driver &driver();

/// "CUDA_ERROR_OUT_OF_MEMORY" for a result code (numeric when the driver cannot name it).
std::string error_name(CUresult r);

/// The driver's description of a result code.
std::string error_string(CUresult r);

/// Errors after which the CUDA context is unusable for the rest of the process.
bool is_sticky_error(CUresult r);

/// The message check() throws: "<what>: CUDA_ERROR_X (description)" plus advice.
std::string error_message(CUresult r, const std::string &what);

/// Throws CudaError naming `what` unless r is CUDA_SUCCESS.
void check(CUresult r, const char *what);
/// As above, for a computed description.
void check(CUresult r, const std::string &what);

/// Loads a CUBIN (or PTX, NUL-terminated) image into the current context.
CUmodule load_module(const std::vector<char> &image);

/// Unloads a module (errors ignored: used on teardown paths).
void unload_module(CUmodule m) noexcept;

/// Looks up a kernel by its (lowered) name.
CUfunction get_function(CUmodule m, const char *name);

/// Grid or block extents of a launch.
struct LaunchDims {
  unsigned x = 1, y = 1, z = 1;
};

/// Allows `kernel_name` to use up to `bytes` of dynamic shared memory (needed above 48 KB).
void set_max_dynamic_smem(CUfunction f, int bytes, const std::string &kernel_name);

/// Launches a kernel; `kernel_name` is used in error messages. Requests the dynamic shared memory
/// opt-in when smem_bytes exceeds 48 KB.
void launch(CUfunction f, LaunchDims grid, LaunchDims block, unsigned smem_bytes, CUstream stream,
            void **params, const char *kernel_name = "<kernel>");

/// Whether kernels compiled for `arch` ("sm_90a") are launched as programmatic dependents of the
/// kernel before them in the stream (Hopper's programmatic dependent launch): true from sm_90 on,
/// unless $HIDET_PDL=0. hidet's code generator starts every kernel with HIDET_GRID_DEPENDENCY_SYNC
/// (griddepcontrol.wait; see backend/cuda_prelude.hpp): such a kernel is launched while the one
/// before it completes, and reads or writes nothing until that kernel's writes are visible. Only
/// code that starts with that wait may be launched this way.
bool programmatic_launch_for(const std::string &arch);

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
PackedArgs pack_kernel_args(const std::vector<backend::KernelArg> &args);

/// Launches a kernel with backend::KernelArg arguments (dynamic shared memory above 48 KB must
/// have been allowed with set_max_dynamic_smem). `programmatic`: a programmatic dependent launch
/// (see programmatic_launch_for).
void launch_with_args(CUfunction f, const std::string &kernel_name, backend::Dim3 grid,
                      backend::Dim3 block, std::size_t smem_bytes, CUstream stream,
                      const std::vector<backend::KernelArg> &args, bool programmatic = false);

} // namespace hidet::cuda

namespace hidet::runtime {
// The driver wrappers are also reachable as hidet::runtime::X, the spelling the launcher uses.
using cuda::check;
using cuda::get_function;
using cuda::launch;
using cuda::launch_with_args;
using cuda::load_module;
using cuda::programmatic_launch_for;
using cuda::set_max_dynamic_smem;
using cuda::unload_module;
} // namespace hidet::runtime

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/cuda_driver.ipp"
#endif
