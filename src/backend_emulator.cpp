// libhidet: the backend layer's definitions (compiled mode): the SIMT emulator.
#include "hidet/backend/emulator/impl/program.ipp"
