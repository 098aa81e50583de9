// libhidet: the runtime layer's definitions (compiled mode): CompiledModule, the launcher. Its
// own file, because it is the one runtime unit that includes the compiler (lowering, codegen,
// NVRTC, the emulator).
#include "hidet/runtime/impl/compiled_module.ipp"
