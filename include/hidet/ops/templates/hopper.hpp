// Whether the Hopper templates (wgmma, TMA; sm_90a: matmul_wgmma.hpp, conv2d_wgmma.hpp,
// attention_wgmma.hpp) can run in this process.
#pragma once

#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/device.hpp"

namespace hidet::ops::templates {

/// True when the Hopper kernels (wgmma, TMA; sm_90a) can run here: a real Hopper GPU, not the
/// emulator.
inline bool wgmma_available() {
  if (runtime::cuda_emulated()) return false;
  return runtime::device_info(0).arch() == "sm_90a";
}

} // namespace hidet::ops::templates
