// Python objects that C++ owners (a hidet storage viewing a torch tensor, a communicator calling
// back into Python) release from whatever thread drops the last reference.
#pragma once

#include <nanobind/nanobind.h>

namespace hidet_python {

/// Whether Python objects can be released now: the interpreter is up and not finalizing. At exit,
/// an owner destroyed by a C++ static destructor (after Py_Finalize) or by another thread while
/// the interpreter finalizes must not take the GIL: PyGILState_Ensure then ends the calling thread
/// (pthread_exit), whose forced unwinding through a noexcept destructor calls std::terminate
/// ("terminate called without an active exception", seen once under torchrun in CI).
inline bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

/// Deletes `p` (a holder of Python references) with the GIL held, or leaks it when Python is gone
/// or going: the process is exiting and the memory goes with it.
template <class T> void delete_with_gil(T *p) noexcept {
  if (!python_alive()) return;
  nanobind::gil_scoped_acquire gil;
  delete p;
}

} // namespace hidet_python
