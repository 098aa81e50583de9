// hidet._C.ArgsRecord: which objects a compiled graph was last called with, checked in C++ loops.
// The torch backend (hidet/torch/backend.py) is called with a model's parameters, which must be
// the very objects its compiled graphs hold as constants, and with its inputs, whose hidet views
// it keeps while they come back as the same tensors at the same addresses. A decoding step of an
// 8B Llama passes about 290 parameters and 66 tensors (its cache): the same checks in Python cost
// about 0.1 ms a call on the CI machine's host and three times that on the GPU machine's.
#include <nanobind/nanobind.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace {

class ArgsRecord {
public:
  ArgsRecord(std::vector<std::size_t> positions, bool addresses)
      : positions_(std::move(positions)), addresses_(addresses), objects_(positions_.size()),
        ptrs_(positions_.size(), 0), data_ptr_(nb::str("data_ptr")) {}

  /// Whether `args` holds the recorded objects at the positions (and, with addresses, each at its
  /// recorded data_ptr()). False before the first record.
  bool same(nb::handle args) const {
    if (!recorded_) return false;
    Items items(args, max_position());
    for (std::size_t k = 0; k < positions_.size(); ++k) {
      PyObject *o = items[positions_[k]];
      if (o != objects_[k].ptr() || (addresses_ && data_ptr(o) != ptrs_[k])) return false;
    }
    return true;
  }

  /// The indices k into the positions whose argument is not the recorded object (or, with
  /// addresses, not at its recorded data_ptr()), all of them before the first record; records
  /// `args` (keeping its objects alive, so that their ids stay theirs).
  std::vector<std::size_t> update(nb::handle args) {
    Items items(args, max_position());
    std::vector<std::size_t> changed;
    for (std::size_t k = 0; k < positions_.size(); ++k) {
      PyObject *o = items[positions_[k]];
      const std::uintptr_t ptr = addresses_ ? data_ptr(o) : 0;
      if (recorded_ && o == objects_[k].ptr() && ptr == ptrs_[k]) continue;
      changed.push_back(k);
      objects_[k] = nb::borrow(o);
      ptrs_[k] = ptr;
    }
    recorded_ = true;
    return changed;
  }

  std::size_t size() const { return positions_.size(); }

private:
  /// The items of a tuple or list of arguments, checked to reach `needed` (the largest position).
  struct Items {
    Items(nb::handle args, std::size_t needed) {
      PyObject *a = args.ptr();
      if (PyTuple_Check(a)) {
        items = &PyTuple_GET_ITEM(a, 0);
        n = std::size_t(PyTuple_GET_SIZE(a));
      } else if (PyList_Check(a)) {
        items = &PyList_GET_ITEM(a, 0);
        n = std::size_t(PyList_GET_SIZE(a));
      } else {
        throw nb::type_error("ArgsRecord: the arguments must be a tuple or a list");
      }
      if (needed != SIZE_MAX && needed >= n)
        throw nb::value_error(("ArgsRecord: " + std::to_string(n) + " arguments, but position " +
                               std::to_string(needed) + " is recorded")
                                  .c_str());
    }
    PyObject *operator[](std::size_t i) const { return items[i]; }
    PyObject **items = nullptr;
    std::size_t n = 0;
  };

  std::size_t max_position() const {
    std::size_t m = SIZE_MAX; // none
    for (std::size_t p : positions_)
      if (m == SIZE_MAX || p > m) m = p;
    return m;
  }

  /// o.data_ptr(), or 0 for an object without one (its conversion says what is wrong).
  std::uintptr_t data_ptr(PyObject *o) const {
    PyObject *r = PyObject_CallMethodNoArgs(o, data_ptr_.ptr());
    if (!r) {
      PyErr_Clear();
      return 0;
    }
    const std::uintptr_t v = std::uintptr_t(PyLong_AsUnsignedLongLong(r));
    Py_DECREF(r);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return 0;
    }
    return v;
  }

  std::vector<std::size_t> positions_;
  bool addresses_;
  bool recorded_ = false;
  std::vector<nb::object> objects_;
  std::vector<std::uintptr_t> ptrs_;
  nb::str data_ptr_;
};

} // namespace

void bind_args(nb::module_ &m) {
  nb::class_<ArgsRecord>(m, "ArgsRecord",
                         "The objects a compiled graph was last called with at some argument positions, "
                         "checked by identity (and by data_ptr() with addresses=True) in C++ loops.")
      .def(nb::init<std::vector<std::size_t>, bool>(), "positions"_a, "addresses"_a = false)
      .def("same", &ArgsRecord::same, "args"_a,
           "Whether args holds the recorded objects at the positions (each at its recorded address "
           "with addresses=True); False before the first update.")
      .def("update", &ArgsRecord::update, "args"_a,
           "The indices into the positions whose object (or address) is not the recorded one, all of "
           "them the first time; records args.")
      .def("__len__", &ArgsRecord::size);
}
